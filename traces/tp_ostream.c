/* tp_ostream: plain or parallel-gzip output (see the header).
 *
 * The gzip stream keeps a ring of slots, each an input block and the member deflated from it.
 * The caller fills the slot of sequence number `filled` and submits it; workers take the
 * oldest submitted slot, deflate it and mark it done; the caller writes done slots in
 * sequence order before it reuses one (the ring holds two slots per worker, so workers stay
 * busy while the caller waits for the oldest). One mutex guards the slots' states. */
#include "tp_ostream.h"

#include <errno.h>
#include <libdeflate.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tp_par.h"

#define BLOCK (1u << 20)       /* input bytes per gzip member */
#define PLAIN_BUF (256u << 10) /* the plain stream's buffer */
#define LEVEL 6                /* as the zlib export had; libdeflate's 6 is faster and smaller */
#define MAX_THREADS 16

enum { FREE, FILLED, BUSY, DONE };

typedef struct {
    unsigned char *in, *out;
    size_t n_in, n_out;
    uint64_t seq;
    int state;
} slot;

struct tp_ostream {
    int fd, gzip;
    tp_status st;
    int err_no;
    unsigned char *buf; /* plain: the buffer */
    size_t n;
    /* gzip */
    slot *slots;
    size_t n_slots, out_cap;
    uint64_t filled, written; /* next sequence number to fill / to write */
    int n_threads, n_started, stop;
    pthread_t *th;
    struct libdeflate_compressor *inline_c; /* n_threads == 1: the caller deflates */
    pthread_mutex_t mu;
    pthread_cond_t work, done;
};

static void fail(tp_ostream *s, tp_status st, int err_no) {
    if (s->st == TP_OK)
        s->st = st, s->err_no = err_no;
}

static void write_all(tp_ostream *s, const unsigned char *p, size_t n) {
    while (n && s->st == TP_OK) {
        ssize_t w = write(s->fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            fail(s, TP_ERR_IO, w < 0 ? errno : EIO);
            return;
        }
        p += w, n -= (size_t)w;
    }
}

static void deflate_slot(struct libdeflate_compressor *c, slot *sl, size_t cap) {
    sl->n_out = libdeflate_gzip_compress(c, sl->in, sl->n_in, sl->out, cap);
}

/* The oldest submitted slot, or NULL. Called with the mutex held. */
static slot *oldest_filled(tp_ostream *s) {
    slot *best = NULL;
    for (size_t i = 0; i < s->n_slots; i++)
        if (s->slots[i].state == FILLED && (!best || s->slots[i].seq < best->seq))
            best = &s->slots[i];
    return best;
}

static void *worker(void *arg) {
    tp_ostream *s = arg;
    struct libdeflate_compressor *c = libdeflate_alloc_compressor(LEVEL);
    pthread_mutex_lock(&s->mu);
    for (;;) {
        slot *sl = oldest_filled(s);
        if (!sl && s->stop)
            break;
        if (!sl) {
            pthread_cond_wait(&s->work, &s->mu);
            continue;
        }
        sl->state = BUSY;
        pthread_mutex_unlock(&s->mu);
        if (c)
            deflate_slot(c, sl, s->out_cap);
        else
            sl->n_out = 0; /* no compressor: the caller sees an empty member and fails */
        pthread_mutex_lock(&s->mu);
        sl->state = DONE;
        pthread_cond_broadcast(&s->done);
    }
    pthread_mutex_unlock(&s->mu);
    libdeflate_free_compressor(c);
    return NULL;
}

/* Writes the oldest unwritten slot once it is done (waiting for it) and frees it. */
static void write_oldest(tp_ostream *s) {
    slot *sl = &s->slots[s->written % s->n_slots];
    pthread_mutex_lock(&s->mu);
    while (sl->state != DONE)
        pthread_cond_wait(&s->done, &s->mu);
    pthread_mutex_unlock(&s->mu);
    if (!sl->n_out)
        fail(s, TP_ERR_NOMEM, ENOMEM);
    write_all(s, sl->out, sl->n_out);
    pthread_mutex_lock(&s->mu);
    sl->state = FREE, sl->n_in = 0, s->written++;
    pthread_mutex_unlock(&s->mu);
}

/* Submits the slot being filled, then makes the next one free to fill. */
static void submit(tp_ostream *s) {
    slot *sl = &s->slots[s->filled % s->n_slots];
    sl->seq = s->filled++;
    if (s->inline_c) {
        deflate_slot(s->inline_c, sl, s->out_cap);
        sl->state = DONE;
    } else {
        pthread_mutex_lock(&s->mu);
        sl->state = FILLED;
        pthread_cond_signal(&s->work);
        pthread_mutex_unlock(&s->mu);
    }
    while (s->written + s->n_slots <= s->filled)
        write_oldest(s);
}

static tp_status gzip_write(tp_ostream *s, const unsigned char *p, size_t n) {
    while (n) {
        slot *sl = &s->slots[s->filled % s->n_slots];
        size_t k = BLOCK - sl->n_in < n ? BLOCK - sl->n_in : n;
        memcpy(sl->in + sl->n_in, p, k);
        sl->n_in += k, p += k, n -= k;
        if (sl->n_in == BLOCK)
            submit(s);
    }
    return s->st;
}

static tp_status plain_write(tp_ostream *s, const unsigned char *p, size_t n) {
    if (n > PLAIN_BUF - s->n) {
        write_all(s, s->buf, s->n);
        s->n = 0;
    }
    if (n >= PLAIN_BUF)
        write_all(s, p, n);
    else
        memcpy(s->buf + s->n, p, n), s->n += n;
    return s->st;
}

tp_status tp_ostream_write(tp_ostream *s, const void *p, size_t n) {
    if (s->st != TP_OK)
        return s->st;
    return s->gzip ? gzip_write(s, p, n) : plain_write(s, p, n);
}

/* one deflating thread per CPU this process may use (its affinity: tp_par_cpus) */
static int default_threads(void) {
    long n = tp_par_cpus();
    return n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : (int)n;
}

static tp_status open_gzip(tp_ostream *s, int threads) {
    s->n_threads =
        threads > 0 ? (threads > MAX_THREADS ? MAX_THREADS : threads) : default_threads();
    s->n_slots = s->n_threads == 1 ? 1 : 2 * (size_t)s->n_threads;
    s->slots = calloc(s->n_slots, sizeof *s->slots);
    if (!s->slots)
        return TP_ERR_NOMEM;
    struct libdeflate_compressor *c = libdeflate_alloc_compressor(LEVEL);
    if (!c)
        return TP_ERR_NOMEM;
    s->out_cap = libdeflate_gzip_compress_bound(c, BLOCK);
    if (s->n_threads == 1)
        s->inline_c = c;
    else
        libdeflate_free_compressor(c);
    for (size_t i = 0; i < s->n_slots; i++) {
        s->slots[i].in = malloc(BLOCK);
        s->slots[i].out = malloc(s->out_cap);
        if (!s->slots[i].in || !s->slots[i].out)
            return TP_ERR_NOMEM;
    }
    if (s->n_threads == 1)
        return TP_OK;
    s->th = calloc((size_t)s->n_threads, sizeof *s->th);
    if (!s->th)
        return TP_ERR_NOMEM;
    for (; s->n_started < s->n_threads; s->n_started++)
        if (pthread_create(&s->th[s->n_started], NULL, worker, s))
            return TP_ERR_NOMEM;
    return TP_OK;
}

static void destroy(tp_ostream *s) {
    if (s->n_started) {
        pthread_mutex_lock(&s->mu);
        s->stop = 1;
        pthread_cond_broadcast(&s->work);
        pthread_mutex_unlock(&s->mu);
        for (int i = 0; i < s->n_started; i++)
            pthread_join(s->th[i], NULL);
    }
    for (size_t i = 0; s->slots && i < s->n_slots; i++)
        free(s->slots[i].in), free(s->slots[i].out);
    libdeflate_free_compressor(s->inline_c);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->work);
    pthread_cond_destroy(&s->done);
    free(s->slots), free(s->th), free(s->buf), free(s);
}

tp_status tp_ostream_open(tp_ostream **out, int fd, int gzip, int threads) {
    *out = NULL;
    tp_ostream *s = calloc(1, sizeof *s);
    if (!s) {
        close(fd);
        return TP_ERR_NOMEM;
    }
    s->fd = fd, s->gzip = gzip;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->work, NULL);
    pthread_cond_init(&s->done, NULL);
    tp_status st = TP_OK;
    if (gzip)
        st = open_gzip(s, threads);
    else if (!(s->buf = malloc(PLAIN_BUF)))
        st = TP_ERR_NOMEM;
    if (st != TP_OK) {
        close(fd);
        destroy(s);
        return st;
    }
    *out = s;
    return TP_OK;
}

tp_status tp_ostream_close(tp_ostream *s, int *err_no) {
    if (!s) {
        if (err_no)
            *err_no = 0;
        return TP_OK;
    }
    if (!s->gzip) {
        write_all(s, s->buf, s->n);
    } else {
        /* The last, partial block; an empty stream still gets one (empty) member, since a
         * gzip file of no members is not one gzip -d accepts. */
        if (s->slots[s->filled % s->n_slots].n_in || !s->filled)
            submit(s);
        while (s->written < s->filled)
            write_oldest(s);
    }
    if (close(s->fd) && s->st == TP_OK)
        fail(s, TP_ERR_IO, errno);
    tp_status st = s->st;
    if (err_no)
        *err_no = s->err_no;
    destroy(s);
    return st;
}
