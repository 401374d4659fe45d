/* tp_cpudev: a CPU that behaves like an accelerator.
 *
 * Device memory is one mmap'd arena of fixed capacity, handed out as segments (first fit,
 * coalescing on free), separate from the host heap. Each stream is a bounded queue drained by its
 * own device thread, which runs kernels from tp_kcpu, copies and memsets in order. Copies to or
 * from pageable host memory go through a bounce buffer in 1 MiB chunks and the caller waits for
 * them; pinned copies are queued and return at once. Events mark a position in a stream's queue.
 *
 * The queue holds 64 entries where CUDA's holds about 1024 launches: these kernels run
 * ~50x longer than a GPU's, and a 64-deep queue keeps the host's run-ahead, in time, at
 * the one or two steps a real GPU allows; a full queue blocks the launching thread.
 *
 * Activity: the calling thread reports each launch/copy/memset/sync as an API interval
 * with a fresh correlation id; the device thread reports the matching kernel, copy or
 * memset with the same id, timed with tp_activity_now() around the work, so a trace of
 * this device reads like a GPU's. */
#define TP_ACTIVITY_IMPLEMENT
#include "trainprof/activity.h"

#include "tp_devbackend.h"
#include "tp_kcpu.h"
#include "tp_mem.h"

#include <nvtx3/nvToolsExt.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define QUEUE_DEPTH 64
#define QUEUE_REFILL 16 /* a blocked launcher wakes when this many slots are free */
#define BOUNCE_BYTES (1u << 20)
#define DEFAULT_CAPACITY (4ull << 30)
#define SEG_ALIGN 4096u

typedef enum { OP_KERNEL, OP_COPY, OP_MEMSET, OP_WAIT } op_kind;

typedef struct cstream cstream;

typedef struct {
    op_kind kind;
    uint32_t corr;
    tp_kcall k;
    void *dst;
    const void *src;
    size_t bytes;
    int dir, pinned, value;
    cstream *wait_stream;
    uint64_t wait_seq;
} op;

typedef struct cpudev cpudev;

struct cstream {
    cpudev *dev;
    int id;
    pthread_t thread;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv_work;  /* device thread: work queued or stop */
    pthread_cond_t cv_done;  /* waiters for `completed` to reach wake_at */
    pthread_cond_t cv_space; /* launching thread waiting for queue space */
    op *ring;
    uint64_t head, tail, completed; /* seq of an op = its 1-based position */
    uint64_t wake_at;               /* smallest seq a completion waiter needs */
    int space_waiters;
    int stop;
    double kernel_s;
    char *bounce;
};

typedef struct {
    size_t off, len;
} range;

struct cpudev {
    char *arena;
    size_t capacity;
    pthread_mutex_t mem_mu;
    range *free_ranges;
    size_t nfree, capfree;
    cstream streams[TP_DEVICE_STREAMS];
    double queue_wait_s; /* launching thread's time blocked on full queues */
    int kthreads;
    uint32_t act_id;
};

typedef struct {
    cstream *s;
    uint64_t seq; /* 0: never recorded, complete */
} cevent;

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- kernels ---- */

static tp_conv_shape conv_shape(const cpudev *d, const tp_kcall *k) {
    return (tp_conv_shape){k->i[0], k->i[1], k->i[2], k->i[3], k->i[4], k->i[5], d->kthreads};
}

static void run_kernel(const cpudev *d, const tp_kcall *k) {
    void *const *p = k->p;
    const int *i = k->i;
    const float *f = k->f;
    tp_conv_shape cs = conv_shape(d, k);
    switch (k->op) {
    case TP_K_CONV_FWD:
        tp_conv3x3_fwd(&cs, p[0], p[1], p[2], p[3], p[4]);
        break;
    case TP_K_CONV_BWD_DATA:
        tp_conv3x3_bwd_data(&cs, p[0], p[1], p[2], p[3]);
        break;
    case TP_K_CONV_BWD_FILTER:
        tp_conv3x3_bwd_filter(&cs, p[0], p[1], p[2], p[3], p[4]);
        break;
    case TP_K_RELU_FWD:
        tp_relu_fwd((size_t)i[0], p[0], p[1]);
        break;
    case TP_K_RELU_BWD:
        tp_relu_bwd((size_t)i[0], p[0], p[1], p[2]);
        break;
    case TP_K_POOL_FWD:
        tp_maxpool2_fwd(i[0], i[1], i[2], i[3], p[0], p[1], p[2]);
        break;
    case TP_K_POOL_BWD:
        tp_maxpool2_bwd(i[0], i[1], i[2], i[3], p[0], p[1], p[2]);
        break;
    case TP_K_LINEAR_FWD:
        tp_linear_fwd(i[0], i[1], i[2], p[0], p[1], p[2], p[3], d->kthreads);
        break;
    case TP_K_LINEAR_BWD_DATA:
        tp_linear_bwd_data(i[0], i[1], i[2], p[0], p[1], p[2], d->kthreads);
        break;
    case TP_K_LINEAR_BWD_WEIGHT:
        tp_linear_bwd_weight(i[0], i[1], i[2], p[0], p[1], p[2], p[3], d->kthreads);
        break;
    case TP_K_CE_FWD:
        tp_softmax_ce_fwd(i[0], i[1], p[0], p[1], p[2], p[3]);
        break;
    case TP_K_CE_BWD:
        tp_softmax_ce_bwd(i[0], i[1], p[0], p[1], p[2]);
        break;
    case TP_K_SGD:
        tp_sgd_step((size_t)i[0], p[0], p[1], p[2], f[0], f[1], f[2]);
        break;
    case TP_K_ADAM:
        tp_adam_step((size_t)i[0], p[0], p[1], p[2], p[3], f[0], f[1], f[2], f[3], f[4], f[5]);
        break;
    default:
        break;
    }
}

/* ---- device threads ---- */

static void wait_completed(cstream *s, uint64_t seq) {
    pthread_mutex_lock(&s->mu);
    while (s->completed < seq) {
        if (seq < s->wake_at)
            s->wake_at = seq;
        pthread_cond_wait(&s->cv_done, &s->mu);
    }
    pthread_mutex_unlock(&s->mu);
}

/* Staged copy through the stream's bounce buffer, as a DMA engine does for pageable memory. */
static void copy_staged(cstream *s, char *dst, const char *src, size_t bytes) {
    for (size_t off = 0; off < bytes; off += BOUNCE_BYTES) {
        size_t n = bytes - off < BOUNCE_BYTES ? bytes - off : BOUNCE_BYTES;
        memcpy(s->bounce, src + off, n);
        memcpy(dst + off, s->bounce, n);
    }
}

/* Runs one queued op; returns the seconds spent in a kernel (0 for other ops). */
static double exec_op(cstream *s, const op *o) {
    const uint32_t dev = s->dev->act_id, sid = (uint32_t)s->id;
    uint64_t t0 = tp_activity_now();
    double kernel_s = 0;
    if (o->kind == OP_KERNEL) {
        double k0 = mono_s();
        run_kernel(s->dev, &o->k);
        kernel_s = mono_s() - k0;
        const uint32_t grid[3] = {1, 1, 1}, block[3] = {(uint32_t)s->dev->kthreads, 1, 1};
        tp_activity_kernel(tp_kcall_name(o->k.op), dev, sid, t0, tp_activity_now(), o->corr, grid,
                           block);
    } else if (o->kind == OP_COPY) {
        if (o->pinned || o->dir == TP_COPY_D2D)
            memcpy(o->dst, o->src, o->bytes);
        else
            copy_staged(s, o->dst, o->src, o->bytes);
        uint32_t hk = o->pinned ? 2 : 1;
        uint32_t sk = o->dir == TP_COPY_H2D ? hk : 3, dk = o->dir == TP_COPY_D2H ? hk : 3;
        tp_activity_memcpy((uint32_t)o->dir, sk, dk, o->bytes, dev, sid, t0, tp_activity_now(),
                           o->corr, o->pinned);
    } else if (o->kind == OP_MEMSET) {
        memset(o->dst, o->value, o->bytes);
        tp_activity_memset(3, o->bytes, (uint32_t)o->value, dev, sid, t0, tp_activity_now(),
                           o->corr);
    } else if (o->kind == OP_WAIT) {
        wait_completed(o->wait_stream, o->wait_seq);
    }
    return kernel_s;
}

static void *stream_main(void *arg) {
    cstream *s = arg;
    char name[32];
    snprintf(name, sizeof name, "cpudev stream %d", s->id);
    nvtxNameOsThreadA((uint32_t)gettid(), name);
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (s->head == s->tail && !s->stop)
            pthread_cond_wait(&s->cv_work, &s->mu);
        if (s->head == s->tail)
            break;
        op o = s->ring[s->head % QUEUE_DEPTH];
        pthread_mutex_unlock(&s->mu);
        double ks = exec_op(s, &o);
        pthread_mutex_lock(&s->mu);
        s->kernel_s += ks;
        s->head++;
        s->completed = s->head;
        /* Wake only those who can proceed: one wakeup per sync, and one per QUEUE_REFILL
         * ops for a launcher blocked on a full queue, not one per op. */
        if (s->completed >= s->wake_at) {
            s->wake_at = UINT64_MAX;
            pthread_cond_broadcast(&s->cv_done);
        }
        if (s->space_waiters && s->tail - s->head <= QUEUE_DEPTH - QUEUE_REFILL)
            pthread_cond_broadcast(&s->cv_space);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* Queues o (blocking while the queue is full); returns its sequence number. */
static uint64_t enqueue(cstream *s, const op *o) {
    pthread_mutex_lock(&s->mu);
    if (s->tail - s->head >= QUEUE_DEPTH) {
        double t0 = mono_s();
        s->space_waiters++;
        while (s->tail - s->head > QUEUE_DEPTH - QUEUE_REFILL)
            pthread_cond_wait(&s->cv_space, &s->mu);
        s->space_waiters--;
        s->dev->queue_wait_s += mono_s() - t0;
    }
    s->ring[s->tail % QUEUE_DEPTH] = *o;
    uint64_t seq = ++s->tail;
    pthread_cond_signal(&s->cv_work);
    pthread_mutex_unlock(&s->mu);
    return seq;
}

static cstream *stream_at(cpudev *d, int stream) {
    if (stream < 0 || stream >= TP_DEVICE_STREAMS)
        stream = 0;
    return &d->streams[stream];
}

/* ---- backend functions ---- */

static void cpu_launch(void *impl, int stream, const tp_kcall *k) {
    uint64_t t0 = tp_activity_now();
    op o = {.kind = OP_KERNEL, .corr = tp_activity_next_correlation(), .k = *k};
    enqueue(stream_at(impl, stream), &o);
    tp_activity_api("tpLaunchKernel", t0, tp_activity_now(), o.corr, 0);
}

static void cpu_copy(void *impl, int stream, void *dst, const void *src, size_t bytes,
                     tp_copy_dir dir, int host_pinned) {
    uint64_t t0 = tp_activity_now();
    cstream *s = stream_at(impl, stream);
    op o = {.kind = OP_COPY,
            .corr = tp_activity_next_correlation(),
            .dst = dst,
            .src = src,
            .bytes = bytes,
            .dir = dir,
            .pinned = host_pinned};
    uint64_t seq = enqueue(s, &o);
    if (!host_pinned) /* pageable: the caller waits, as cudaMemcpyAsync from pageable does */
        wait_completed(s, seq);
    tp_activity_api(host_pinned ? "tpMemcpyAsync" : "tpMemcpy", t0, tp_activity_now(), o.corr, 0);
}

static void cpu_memset(void *impl, int stream, void *dst, int value, size_t bytes) {
    uint64_t t0 = tp_activity_now();
    op o = {.kind = OP_MEMSET,
            .corr = tp_activity_next_correlation(),
            .dst = dst,
            .bytes = bytes,
            .value = value};
    enqueue(stream_at(impl, stream), &o);
    tp_activity_api("tpMemsetAsync", t0, tp_activity_now(), o.corr, 0);
}

static void *cpu_event_create(void *impl) {
    return calloc(1, sizeof(cevent));
}

static void cpu_event_destroy(void *impl, void *ev) {
    free(ev);
}

static void cpu_event_record(void *impl, void *ev, int stream) {
    cevent *e = ev;
    cstream *s = stream_at(impl, stream);
    pthread_mutex_lock(&s->mu);
    e->s = s;
    e->seq = s->tail;
    pthread_mutex_unlock(&s->mu);
}

static void cpu_stream_wait_event(void *impl, int stream, void *ev) {
    const cevent *e = ev;
    if (!e->s || !e->seq)
        return;
    op o = {.kind = OP_WAIT, .wait_stream = e->s, .wait_seq = e->seq};
    enqueue(stream_at(impl, stream), &o);
}

static void report_sync(const char *api, uint32_t type, cpudev *d, int stream, uint64_t t0) {
    if (!tp_activity_enabled())
        return;
    uint32_t corr = tp_activity_next_correlation();
    uint64_t t1 = tp_activity_now();
    tp_activity_api(api, t0, t1, corr, 0);
    tp_activity_sync(type, d->act_id, (uint32_t)stream, t0, t1, corr);
}

static void cpu_event_sync(void *impl, void *ev) {
    cevent e = *(cevent *)ev;
    if (!e.s || !e.seq)
        return;
    uint64_t t0 = tp_activity_now();
    wait_completed(e.s, e.seq);
    report_sync("tpEventSynchronize", 1, impl, e.s->id, t0);
}

static void cpu_stream_sync(void *impl, int stream) {
    cstream *s = stream_at(impl, stream);
    uint64_t t0 = tp_activity_now();
    pthread_mutex_lock(&s->mu);
    uint64_t target = s->tail;
    pthread_mutex_unlock(&s->mu);
    wait_completed(s, target);
    report_sync("tpStreamSynchronize", 3, impl, s->id, t0);
}

static size_t cpu_conv_workspace(void *impl, const tp_kcall *k) {
    tp_conv_shape cs = conv_shape(impl, k);
    return tp_conv3x3_workspace(&cs) * sizeof(float);
}

static double cpu_queue_wait_seconds(void *impl) {
    return ((cpudev *)impl)->queue_wait_s;
}

static double cpu_kernel_seconds(void *impl) {
    cpudev *d = impl;
    double total = 0;
    for (int i = 0; i < TP_DEVICE_STREAMS; i++) {
        pthread_mutex_lock(&d->streams[i].mu);
        total += d->streams[i].kernel_s;
        pthread_mutex_unlock(&d->streams[i].mu);
    }
    return total;
}

/* ---- device memory arena: first fit over address-ordered free ranges ---- */

static tp_status cpu_seg_alloc(void *impl, size_t bytes, void **out) {
    cpudev *d = impl;
    size_t len = (bytes + SEG_ALIGN - 1) / SEG_ALIGN * SEG_ALIGN;
    tp_status st = TP_ERR_NOMEM;
    *out = NULL;
    pthread_mutex_lock(&d->mem_mu);
    for (size_t i = 0; i < d->nfree && len; i++) {
        range *r = &d->free_ranges[i];
        if (r->len < len)
            continue;
        *out = d->arena + r->off;
        r->off += len;
        r->len -= len;
        if (!r->len)
            memmove(r, r + 1, (d->nfree - i - 1) * sizeof *r), d->nfree--;
        st = TP_OK;
        break;
    }
    pthread_mutex_unlock(&d->mem_mu);
    return st;
}

static void cpu_seg_free(void *impl, void *ptr, size_t bytes) {
    cpudev *d = impl;
    size_t off = (size_t)((char *)ptr - d->arena);
    size_t len = (bytes + SEG_ALIGN - 1) / SEG_ALIGN * SEG_ALIGN;
    madvise(ptr, len, MADV_DONTNEED); /* give the pages back, as cudaFree would */
    pthread_mutex_lock(&d->mem_mu);
    size_t i = 0;
    while (i < d->nfree && d->free_ranges[i].off < off)
        i++;
    if (!TP_MEM_GROW(d->free_ranges, d->capfree, d->nfree + 1)) {
        pthread_mutex_unlock(&d->mem_mu); /* cannot record it: the range is lost to this run */
        return;
    }
    memmove(&d->free_ranges[i + 1], &d->free_ranges[i], (d->nfree - i) * sizeof(range));
    d->free_ranges[i] = (range){off, len};
    d->nfree++;
    if (i + 1 < d->nfree && off + len == d->free_ranges[i + 1].off) { /* merge with next */
        d->free_ranges[i].len += d->free_ranges[i + 1].len;
        memmove(&d->free_ranges[i + 1], &d->free_ranges[i + 2], (d->nfree - i - 2) * sizeof(range));
        d->nfree--;
    }
    if (i > 0 && d->free_ranges[i - 1].off + d->free_ranges[i - 1].len == off) { /* and prev */
        d->free_ranges[i - 1].len += d->free_ranges[i].len;
        memmove(&d->free_ranges[i], &d->free_ranges[i + 1], (d->nfree - i - 1) * sizeof(range));
        d->nfree--;
    }
    pthread_mutex_unlock(&d->mem_mu);
}

/* Pinned host memory is mapped, pre-faulted and locked when RLIMIT_MEMLOCK allows (if not,
 * it stays pre-faulted, which is what makes copies from it cheap here). */
static void *cpu_host_alloc(void *impl, size_t bytes, int pinned) {
    if (!pinned)
        return malloc(bytes ? bytes : 1);
    void *p =
        mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    memset(p, 0, bytes);
    (void)mlock(p, bytes);
    return p;
}

static void cpu_host_free(void *impl, void *ptr, size_t bytes, int pinned) {
    if (!pinned) {
        free(ptr);
        return;
    }
    munlock(ptr, bytes);
    munmap(ptr, bytes ? bytes : 1);
}

static void cpu_close(void *impl) {
    cpudev *d = impl;
    for (int i = 0; i < TP_DEVICE_STREAMS; i++) {
        cstream *s = &d->streams[i];
        if (!s->started)
            continue;
        pthread_mutex_lock(&s->mu);
        s->stop = 1;
        pthread_cond_signal(&s->cv_work);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->thread, NULL);
    }
    for (int i = 0; i < TP_DEVICE_STREAMS; i++) {
        pthread_mutex_destroy(&d->streams[i].mu);
        pthread_cond_destroy(&d->streams[i].cv_work);
        pthread_cond_destroy(&d->streams[i].cv_done);
        pthread_cond_destroy(&d->streams[i].cv_space);
        free(d->streams[i].ring);
        free(d->streams[i].bounce);
    }
    if (d->arena)
        munmap(d->arena, d->capacity);
    free(d->free_ranges);
    pthread_mutex_destroy(&d->mem_mu);
    free(d);
}

tp_status tp_cpudev_open(const tp_device_opts *opts, tp_devbackend *be, void **impl, char *err,
                         size_t errlen) {
    cpudev *d = calloc(1, sizeof *d);
    if (!d)
        return TP_ERR_NOMEM;
    d->capacity = opts->memory_bytes ? opts->memory_bytes : DEFAULT_CAPACITY;
    d->capacity = (d->capacity + SEG_ALIGN - 1) / SEG_ALIGN * SEG_ALIGN;
    d->kthreads = opts->kernel_threads > 0 ? opts->kernel_threads : 1;
    pthread_mutex_init(&d->mem_mu, NULL);
    for (int i = 0; i < TP_DEVICE_STREAMS; i++) {
        pthread_mutex_init(&d->streams[i].mu, NULL);
        pthread_cond_init(&d->streams[i].cv_work, NULL);
        pthread_cond_init(&d->streams[i].cv_done, NULL);
        pthread_cond_init(&d->streams[i].cv_space, NULL);
        d->streams[i].wake_at = UINT64_MAX;
    }
    void *arena = mmap(NULL, d->capacity, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    d->free_ranges = malloc(16 * sizeof(range));
    if (arena == MAP_FAILED || !d->free_ranges) {
        snprintf(err, errlen, "cannot map a %zu-byte device arena", d->capacity);
        d->arena = arena == MAP_FAILED ? NULL : arena;
        cpu_close(d);
        return TP_ERR_NOMEM;
    }
    d->arena = arena;
    d->capfree = 16;
    d->free_ranges[0] = (range){0, d->capacity};
    d->nfree = 1;
    d->act_id = tp_activity_device("trainprof CPU device", d->capacity);
    for (int i = 0; i < TP_DEVICE_STREAMS; i++) {
        cstream *s = &d->streams[i];
        s->dev = d;
        s->id = i;
        s->ring = malloc(QUEUE_DEPTH * sizeof(op));
        s->bounce = malloc(BOUNCE_BYTES);
        if (!s->ring || !s->bounce || pthread_create(&s->thread, NULL, stream_main, s) != 0) {
            snprintf(err, errlen, "cannot start the device threads");
            cpu_close(d);
            return TP_ERR_NOMEM;
        }
        s->started = 1;
    }
    *be = (tp_devbackend){.name = "cpu",
                          .close = cpu_close,
                          .seg_alloc = cpu_seg_alloc,
                          .seg_free = cpu_seg_free,
                          .host_alloc = cpu_host_alloc,
                          .host_free = cpu_host_free,
                          .launch = cpu_launch,
                          .copy = cpu_copy,
                          .memset = cpu_memset,
                          .event_create = cpu_event_create,
                          .event_destroy = cpu_event_destroy,
                          .event_record = cpu_event_record,
                          .stream_wait_event = cpu_stream_wait_event,
                          .event_sync = cpu_event_sync,
                          .stream_sync = cpu_stream_sync,
                          .kernel_seconds = cpu_kernel_seconds,
                          .conv_workspace = cpu_conv_workspace,
                          .queue_wait_seconds = cpu_queue_wait_seconds,
                          .activity_id = d->act_id};
    *impl = d;
    return TP_OK;
}
