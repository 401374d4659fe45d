/* tp_writer: staging rings, the drain, chunk building and the file's footer.
 *
 * Threads and locks, from the hot path outwards:
 *  - a tp_stage is a single-producer/single-consumer ring: the owner advances `head` with a
 *    release store, the drain advances `tail` the same way; neither ever blocks the other;
 *  - drain_lock serialises drains (background thread, tp_writer_flush, blocked producers)
 *    and guards everything the drain owns: the chunk builder, codec context, file and stats;
 *  - stage_lock guards the stage list and the memory budget;
 *  - meta_lock guards the interning tables and the pending META buffer;
 *  - cv_lock/cv wake the background thread; producers take it only when they set the
 *    wake flag, i.e. at most once per drain cycle.
 * Lock order: drain_lock, then stage_lock or meta_lock (never both). */
#include "tp_writer.h"

#include "tp_chunk.h"
#include "tp_codec.h"
#include "tp_hash.h"
#include "tp_mem.h"
#include "tp_planes.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define RING_MIN ((size_t)4 << 10)
#define RING_FIRST_MAX ((size_t)1 << 20)
#define RING_MAX ((size_t)1 << 30)
#define RESERVE_PART 16 /* 1/16 of the budget is kept for the first rings of threads to come */
#define HURRY_PART 4    /* more than 1/4 of the budget waiting: store data chunks uncompressed */
#define META_REC_MAX (16u << 20)
#define REASON_SLOTS 8

/* One ring of a stage. A stage starts with one ring; when a record does not fit and the
 * budget allows, the producer seals the ring (`end` = the position where it stopped) and goes
 * on in one twice as large. The drain empties a sealed ring, frees it and follows `next`, so
 * a thread's records stay in order across rings. Positions are stage-wide byte counts; a
 * ring holds positions [start, end) at offsets `position % cap`. */
typedef struct tp_ring {
    uint8_t *buf;
    uint64_t cap;
    uint64_t start;       /* position of its first byte */
    _Atomic uint64_t end; /* UINT64_MAX while the producer writes into it */
    struct tp_ring *next; /* the ring after it: set before `end` is published */
    int counted;          /* its bytes came out of the budget */
} tp_ring;

struct tp_stage {
    /* Producer's cache lines: written by the owning thread only. First, so that the inline
     * reserve/commit in tp_writer.h find it at the stage's address. */
    tp_stage_producer p;
    tp_ring *pring;
    _Atomic uint64_t dropped[TP_REC_TYPE_LIMIT];
    /* Drain's cache line. */
    _Alignas(64) _Atomic uint64_t tail;
    tp_ring *dring; /* the oldest ring not yet emptied (pring once the drain caught up) */
    uint64_t dropped_seen[TP_REC_TYPE_LIMIT];
    _Atomic int closed;
    tp_writer *w;
    uint32_t tid;
    tp_stage *next;
};

typedef struct {
    uint64_t hash;
    uint32_t id;
    uint32_t len; /* bytes of data */
    void *data;
} intern_entry;

typedef struct {
    intern_entry *slots;
    size_t cap, used;
} intern_table;

/* Records gathered for one chunk. */
typedef struct {
    uint8_t *buf;
    size_t len, cap;
    uint32_t count;
    uint64_t t_min, t_max, mask;
    /* records by type (0 for the types not in `mask`) and their sizes: filter 3's census,
     * kept while the records are copied in so that its encoder need not walk them first */
    tp_planes_census census;
} chunk_buf;

struct tp_writer {
    tp_writer_opts opts;
    _Atomic int fd; /* -1 when sealed or released; read by other threads (tp_writer_fd) */
    char *path;     /* to reopen the file when the descriptor was taken away */
    dev_t dev;      /* the file's identity: a descriptor is ours only if it names this */
    ino_t ino;
    int fd_lost; /* the descriptor was lost and the file could not be reopened */
    int sealed;  /* tp_writer_seal ran: nothing is drained or written any more */
    tp_writer_tap tap;
    void *tap_ctx;
    pid_t pid;
    tp_status err; /* first I/O error */
    int err_errno; /* errno when it happened (it may happen on the writer thread, whose
                      errno nobody else sees): handed back with the status */
    uint64_t file_off;

    pthread_mutex_t drain_lock;
    chunk_buf data;
    size_t data_room; /* bytes data may reach with no cut and no growth: min(cap, chunk_bytes) */
    uint8_t *filt, *planes, *zbuf;
    size_t filt_cap, planes_cap, zbuf_cap;
    tp_codec_ctx *cx;
    const tp_codec_info *codec; /* opts.codec's */
    uint64_t seq;
    tp_index_entry *index;
    size_t index_len, index_cap;
    tp_writer_stats stats;
    uint64_t (*now)(void *ctx);
    void *now_ctx;
    uint64_t xdrops_seen[REASON_SLOTS][TP_REC_TYPE_LIMIT];
    int hurry; /* this drain cycle found the drain behind: skip filter and codec for data */

    pthread_mutex_t stage_lock;
    tp_stage *stages;
    size_t budget_used;
    size_t ring_max; /* the largest ring a stage may grow to */

    pthread_mutex_t shared_lock;
    tp_stage *shared;

    pthread_mutex_t meta_lock;
    chunk_buf meta, meta_spare;
    intern_table strings, stacks;
    uint32_t next_sid, next_stack;

    _Atomic uint64_t xdrops[REASON_SLOTS][TP_REC_TYPE_LIMIT];

    pthread_mutex_t cv_lock;
    pthread_cond_t cv;
    _Atomic int wake_flag;
    int stop;
    int have_thread;
    int running; /* the background thread has started (cv_lock) */
    pthread_t thread;
    /* opts.drain_nice: the drain at the program's priority, woken when the nice one is
     * starved (cv_lock guards its flag's waits as above) */
    pthread_cond_t cv_urgent;
    _Atomic int urgent_flag;
    uint64_t next_cut; /* when the next periodic cut is due (cv_lock) */
    /* Threads waiting for drain_lock (lock_drain), +1 once stopping. A nice drain is starved
     * whenever the program's threads keep the cores busy, and must not hold up the threads
     * that wait for its lock at the program's priority (the second drain, a close at _exit):
     * it gives way between records while this is not zero. */
    _Atomic int want_lock;
    int giving_way; /* drain_lock is held by the nice drain (then it reads want_lock) */
    int have_urgent;
    int urgent_running;
    pthread_t urgent;
};

static uint64_t mono_now(void *ctx) {
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void tp_writer_opts_default(tp_writer_opts *o) {
    memset(o, 0, sizeof *o);
    o->buffer_bytes = 64u << 20;
    o->ring_bytes = 0; /* from the budget, see opts_resolve */
    /* 1 MiB: per record, the drain's filter, codec and chunk costs fall with the chunk's size
     * (the launch-bound trainer: 183.1 -> 177.6 instructions, 2.97 -> 2.64 B at 256 KiB ->
     * 1 MiB; docs/PERFORMANCE.md, "Collector on the trainer, tenth round"); a slow program's
     * chunks are cut every flush_ms anyway, so a crash loses no more time of it. */
    o->chunk_bytes = 1u << 20;
    o->zstd_level = -1;
    o->background = 0;
    o->flush_ms = 200;
}

/* A thread's first ring when the caller does not choose: 1/256 of the budget, so that 256
 * threads find a ring and a busy one grows its own, within [4 KiB, 1 MiB]. */
static size_t first_ring(size_t budget) {
    size_t r = RING_MIN;
    while (r < RING_FIRST_MAX && r * 2 <= budget / 256)
        r <<= 1;
    return r;
}

/* Fills zeros with defaults and rounds the ring to a power of two. */
static tp_status opts_resolve(const tp_writer_opts *in, tp_writer_opts *o) {
    tp_writer_opts d;
    tp_writer_opts_default(&d);
    *o = in ? *in : d;
    if (!o->buffer_bytes)
        o->buffer_bytes = d.buffer_bytes;
    if (!o->ring_bytes)
        o->ring_bytes = first_ring(o->buffer_bytes);
    if (!o->chunk_bytes)
        o->chunk_bytes = d.chunk_bytes;
    if (!o->zstd_level)
        o->zstd_level = d.zstd_level;
    if (!o->flush_ms)
        o->flush_ms = d.flush_ms;
    if (o->ring_bytes < RING_MIN || o->ring_bytes > RING_MAX ||
        o->chunk_bytes > TP_CHUNK_RAW_MAX / 2 || !tp_codec_by_name(o->codec))
        return TP_ERR_ARG;
    size_t r = RING_MIN;
    while (r < o->ring_bytes)
        r <<= 1;
    o->ring_bytes = r;
    return TP_OK;
}

/* The largest ring one stage may grow to: half the budget, so that a busy thread can never
 * hold all of it (a power of two, at least the first ring). */
static size_t ring_limit(const tp_writer_opts *o) {
    size_t r = o->ring_bytes;
    while (r * 2 <= o->buffer_bytes / 2 && r * 2 <= RING_MAX)
        r <<= 1;
    return r;
}

/* ------------------------------------------------------------------ chunk buffers */

/* Empties `c`. The counts are zeroed here, once per chunk, so that chunk_add only adds. */
static void chunk_reset(chunk_buf *c) {
    c->len = 0;
    c->count = 0;
    c->t_min = UINT64_MAX;
    c->t_max = 0;
    c->mask = 0;
    tp_planes_census_reset(&c->census);
}

/* Appends one record to a buffer with room for it; updates the chunk's time range and census
 * (the type mask is made from the census: chunk_mask). Inline, as is add_data (with the counts
 * zeroed per chunk, the ring to chunk part went from 130 to 90 instructions per record;
 * docs/PERFORMANCE.md, "Writing, second round"). */
static inline void chunk_put(chunk_buf *c, const tp_rec_hdr *r) {
    memcpy(c->buf + c->len, r, r->size);
    c->len += r->size;
    c->count++;
    tp_planes_census_add(&c->census, r->type, r->size);
    if (r->flags & TP_RF_TIMED) {
        uint64_t a = tp_record_ts(r), b = tp_record_end(r);
        if (b < a)
            b = a; /* an interval that ends before it starts still counts at its start */
        if (a < c->t_min)
            c->t_min = a;
        if (b > c->t_max)
            c->t_max = b;
    }
}

/* chunk_put after making room for the record; 0 when out of memory. */
static inline int chunk_add(chunk_buf *c, const tp_rec_hdr *r) {
    if (!TP_MEM_GROW(c->buf, c->cap, c->len + r->size))
        return 0;
    chunk_put(c, r);
    return 1;
}

/* ------------------------------------------------------------------ file output */

static tp_status write_all(int fd, struct iovec *iov, int n) {
    while (n > 0) {
        ssize_t k = writev(fd, iov, n);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return TP_ERR_IO;
        }
        while (n > 0 && (size_t)k >= iov->iov_len) {
            k -= (ssize_t)iov->iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov->iov_base = (char *)iov->iov_base + k;
            iov->iov_len -= (size_t)k;
        }
    }
    return TP_OK;
}

/* Keeps the first error and the errno that came with it (call right after the failure). */
static void set_err(tp_writer *w, tp_status s) {
    if (w->err == TP_OK && s != TP_OK) {
        w->err_errno = errno;
        w->err = s;
    }
}

static int fd_names_file(const tp_writer *w, int fd) {
    struct stat st;
    return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == w->dev && st.st_ino == w->ino;
}

/* Moves `fd` to the lowest free number >= floor (when asked), out of the program's way. */
static int fd_raise(int fd, int floor) {
    if (floor <= 0 || fd >= floor)
        return fd;
    int hi = fcntl(fd, F_DUPFD_CLOEXEC, floor);
    if (hi < 0)
        return fd; /* no room up there: stay where open() put it */
    close(fd);
    return hi;
}

/* 1 when w->fd still names the trace file, after reopening it by path if the program took
 * the descriptor away. A descriptor that is not ours is never closed or written: its number
 * may be one of the program's files now. */
static int fd_verify(tp_writer *w) {
    if (w->fd_lost)
        return 0;
    if (fd_names_file(w, w->fd))
        return 1;
    w->fd = -1;
    int fd = w->path ? open(w->path, O_WRONLY | O_CLOEXEC) : -1;
    if (fd >= 0 && (!fd_names_file(w, fd) || lseek(fd, (off_t)w->file_off, SEEK_SET) < 0)) {
        close(fd);
        fd = -1;
    }
    if (fd < 0) {
        w->fd_lost = 1;
        w->stats.fd_lost = 1;
        return 0;
    }
    w->fd = fd_raise(fd, w->opts.fd_floor);
    w->stats.fd_reopens++;
    return 1;
}

/* Appends to the trace file through a descriptor proven to be ours. */
static tp_status file_write(tp_writer *w, struct iovec *iov, int n) {
    return fd_verify(w) ? write_all(w->fd, iov, n) : TP_ERR_IO;
}

/* Applies the codec's filter to `c` unless told not to: the lane delta into w->filt, or for
 * LANE_PLANES and LANE_COLUMNS the lane delta laid out in byte planes there (w->planes is
 * scratch for it), and for LANE_SPARSE that layout without its zero pieces, in place.
 * Returns the filter used (-1 on out-of-memory) and sets *src and *len to the bytes to
 * compress. */
static int apply_filter(tp_writer *w, const chunk_buf *c, int filter, const uint8_t **src,
                        size_t *len) {
    *src = c->buf;
    *len = c->len;
    if (!filter || w->opts.no_filter)
        return TP_FILTER_NONE;
    int f = w->codec->filter, planes = f != TP_FILTER_LANE_DELTA;
    size_t room = f == TP_FILTER_LANE_SPARSE ? tp_planes_sparse_bound(c->len, c->count) : c->len;
    if (!TP_MEM_GROW(w->filt, w->filt_cap, room) ||
        (planes && !TP_MEM_GROW(w->planes, w->planes_cap, c->len))) {
        set_err(w, TP_ERR_NOMEM);
        return -1;
    }
    *src = w->filt;
    if (f == TP_FILTER_LANE_DELTA)
        tp_filter_encode(c->buf, w->filt, c->len);
    else if (f == TP_FILTER_LANE_PLANES)
        tp_planes_encode(c->buf, w->filt, w->planes, c->len);
    else
        tp_planes_encode_columns_census(c->buf, w->filt, w->planes, c->len, &c->census);
    if (f == TP_FILTER_LANE_SPARSE) /* the bitmap's words in w->planes, free again */
        *len = tp_planes_sparse(w->filt, c->len, c->count, (uint64_t *)w->planes);
    return f;
}

/* Filters (when `filter`) and compresses a chunk's records, appends the chunk to the file
 * and to the index. Stores the bytes as they are when the codec does not make them smaller. */
static void emit_chunk(tp_writer *w, uint16_t kind, const chunk_buf *c, int filter) {
    const uint8_t *src;
    size_t len; /* the filtered bytes: c->len but for filter 4 */
    int raw = w->hurry && kind == TP_CHUNK_DATA;
    int f = apply_filter(w, c, filter && !raw, &src, &len);
    if (f < 0)
        return;
    size_t bound = tp_codec_bound(w->codec, len);
    if (!TP_MEM_GROW(w->zbuf, w->zbuf_cap, bound ? bound : 8)) {
        set_err(w, TP_ERR_NOMEM);
        return;
    }
    tp_chunk_header h = {.magic = TP_CHUNK_MAGIC, .kind = kind, .codec = w->codec->id};
    h.filter = (uint8_t)f;
    size_t n =
        raw ? 0 : tp_codec_compress(w->cx, w->codec, w->zbuf, bound, src, len, w->opts.zstd_level);
    const uint8_t *payload = w->zbuf;
    w->stats.chunks_raw += (uint64_t)raw;
    if (raw || n == 0 || n >= len) {
        h.codec = TP_CODEC_NONE;
        payload = src;
        n = len;
    }
    h.payload_bytes = (uint32_t)n;
    h.raw_bytes = (uint32_t)c->len;
    h.record_count = c->count;
    h.payload_crc = tp_chunk_crc(payload, n);
    h.t_min = c->t_min;
    h.t_max = c->t_max;
    h.type_mask = c->mask;
    h.seq = w->seq++;
    tp_chunk_header_seal(&h);
    static const uint8_t zeros[8];
    struct iovec iov[3] = {
        {&h, sizeof h}, {(void *)payload, n}, {(void *)zeros, TP_REC_ALIGN(n) - n}};
    tp_status s = file_write(w, iov, 3);
    if (s != TP_OK) {
        set_err(w, s);
        return;
    }
    if (kind != TP_CHUNK_INDEX && TP_MEM_GROW(w->index, w->index_cap, w->index_len + 1)) {
        w->index[w->index_len++] =
            (tp_index_entry){w->file_off, kind, 0, c->count, c->t_min, c->t_max, c->mask};
    }
    w->file_off += tp_chunk_span(&h);
    w->stats.chunks++;
    w->stats.bytes_raw += c->len;
    w->stats.bytes_file = w->file_off;
}

/* A chunk's type mask (TP_REC_BIT of the types in it), from its census, which counts every
 * record of a type below TP_REC_TYPE_LIMIT: made once a chunk rather than kept per record. */
static uint64_t chunk_mask(const tp_planes_census *cs) {
    uint64_t m = 0;
    for (unsigned t = 0; t < TP_REC_TYPE_LIMIT; t++)
        m |= (uint64_t)(cs->count[t] != 0) << t;
    return m;
}

/* Sets the type mask of a chunk about to be written (chunk_mask), counts its records into the
 * per-type totals (from the census) and shows each to the tap (so it sees the file's order:
 * metadata before the data that uses it). Only a tap or a DROPPED record makes it walk them. */
static void count_records(tp_writer *w, chunk_buf *c) {
    c->mask = chunk_mask(&c->census);
    for (uint64_t m = c->mask; m; m &= m - 1)
        w->stats.records[__builtin_ctzll(m)] += c->census.count[__builtin_ctzll(m)];
    w->stats.records_total += c->count;
    if (!w->tap && !(c->mask & TP_REC_BIT(TP_REC_DROPPED)))
        return;
    size_t off = 0;
    while (off + sizeof(tp_rec_hdr) <= c->len) {
        const tp_rec_hdr *r = (const tp_rec_hdr *)(c->buf + off);
        if (w->tap)
            w->tap(w->tap_ctx, r);
        if (r->type == TP_REC_DROPPED) {
            const tp_rec_dropped *d = (const tp_rec_dropped *)r;
            w->stats.dropped[d->what < TP_REC_TYPE_LIMIT ? d->what : 0] += d->count;
            w->stats.dropped_total += d->count;
        }
        off += r->size;
    }
}

/* Writes pending metadata as a META chunk (called before each data chunk). */
static void flush_meta(tp_writer *w) {
    pthread_mutex_lock(&w->meta_lock);
    chunk_buf c = w->meta;
    w->meta = w->meta_spare;
    chunk_reset(&w->meta);
    pthread_mutex_unlock(&w->meta_lock);
    if (c.len) {
        count_records(w, &c);
        emit_chunk(w, TP_CHUNK_META, &c, 1);
    }
    chunk_reset(&c);
    w->meta_spare = c;
}

/* Cuts the data chunk being built (metadata first, so every id it uses resolves). */
static void cut_chunk(tp_writer *w) {
    flush_meta(w);
    if (w->data.len) {
        count_records(w, &w->data);
        emit_chunk(w, TP_CHUNK_DATA, &w->data, 1);
    }
    chunk_reset(&w->data);
}

static inline void add_data(tp_writer *w, const tp_rec_hdr *r) {
    /* The usual record fits both the chunk and its buffer: one test for the two (~5
     * instructions a record less), the others take the way that cuts or grows. */
    if (w->data.len + r->size <= w->data_room) {
        chunk_put(&w->data, r);
        return;
    }
    if (w->data.len && w->data.len + r->size > w->opts.chunk_bytes)
        cut_chunk(w);
    if (!chunk_add(&w->data, r))
        set_err(w, TP_ERR_NOMEM);
    w->data_room = w->data.cap < w->opts.chunk_bytes ? w->data.cap : w->opts.chunk_bytes;
}

static void add_dropped(tp_writer *w, uint32_t what, uint32_t reason, uint64_t n) {
    tp_rec_dropped d;
    TP_REC_INIT(&d, TP_REC_DROPPED);
    d.ts = w->now(w->now_ctx);
    d.count = n;
    d.what = what;
    d.reason = reason;
    add_data(w, &d.h);
}

/* ------------------------------------------------------------------ the drain */

/* 1 when the nice drain holding drain_lock should let it go now (see want_lock). */
static int give_way(const tp_writer *w) {
    return w->giving_way && atomic_load_explicit(&w->want_lock, memory_order_relaxed);
}

/* The most bytes of records copied as one run: the walk over their headers has just brought
 * them into the first-level cache, where the copy finds them again (a whole chunk would not
 * stay there); and below glibc's threshold for `rep movsb` (4 KiB with AVX2), whose bytes
 * callgrind counts one by one, so that the instruction counts stay comparable. */
#define RUN_MAX 2048u

/* Where a run starting at `run` in a span ending at `end` must stop: the span's end, the
 * chunk's room or RUN_MAX, whichever comes first. */
static inline const uint8_t *run_limit(const tp_writer *w, const uint8_t *run, const uint8_t *end) {
    /* len passes data_room after a record larger than a chunk went into an empty one */
    size_t room = w->data.len < w->data_room ? w->data_room - w->data.len : 0;
    if (room > RUN_MAX)
        room = RUN_MAX;
    return room < (size_t)(end - run) ? run + room : end;
}

/* Ends a run: the counts the walk kept in registers put back, the run's records copied in one
 * block. Not inline: a call once a run, which also keeps the compiler from packing t_min and
 * t_max into one vector register for the stores (a pack and unpack in every timed record). */
__attribute__((noinline)) static void run_end(tp_writer *w, const uint8_t *run, size_t n,
                                              uint32_t count, uint64_t t_min, uint64_t t_max) {
    chunk_buf *c = &w->data;
    c->count = count;
    c->t_min = t_min;
    c->t_max = t_max;
    if (n) { /* an empty run can end before the chunk has a buffer (memcpy of NULL, 0 is UB) */
        memcpy(c->buf + c->len, run, n);
        c->len += n;
    }
}

_Static_assert(TP_REC_PAD == 0, "drain_span's one test for a pad or a type past the census");

/* Moves the records in [p, end) into the data chunk; returns where it stopped: `end`, earlier
 * when the nice drain gives way (checked every 64 records, only when `nice`: a constant, so
 * the usual drain's loop has no counter), or NULL at a bad header.
 *
 * chunk_put's work a run of records at a time: the walk counts each record in (the census;
 * the count and time range in registers) and the run is copied as one block where it ends
 * (run_limit, a pad, a type past the census, a bad header); a record that ends a run goes
 * through add_data. A memcpy a record, with its call and the reloads after it, cost ~20
 * instructions a record (docs/PERFORMANCE.md, "Writing, sixth round"). The chunk's type mask
 * is made from the census when the chunk is cut (chunk_mask). */
__attribute__((always_inline)) static inline const uint8_t *
drain_span(tp_writer *w, const uint8_t *p, const uint8_t *end, int nice) {
    tp_planes_census *cs = &w->data.census;
    const uint8_t *run = p, *lim = run_limit(w, run, end); /* [run, p): counted, not copied */
    uint32_t count = w->data.count, k = 0;
    uint64_t t_min = w->data.t_min, t_max = w->data.t_max;
    int bad = 0;
    while (p < end) {
        const tp_rec_hdr *h = (const tp_rec_hdr *)p;
        uint32_t size = h->size;
        uint16_t type = h->type, flags = h->flags;
        /* size >= 8 and a multiple of 8 in one test (size - 8 wraps for 0..7); then the pad
         * (type 0) and the types past the census in one (type - 1 wraps for 0), and the span's
         * end and the run's limit in one (lim <= end). */
        if ((size - 8) & (0x80000000u | 7u)) {
            bad = 1;
            break;
        }
        if ((uint16_t)(type - 1) >= TP_REC_TYPE_LIMIT - 1 || size > (size_t)(lim - p)) {
            if (size > (size_t)(end - p)) {
                bad = 1; /* a producer wrote a bad header */
                break;
            }
            run_end(w, run, (size_t)(p - run), count, t_min, t_max);
            if (type != TP_REC_PAD)
                add_data(w, h); /* cuts or grows when the chunk has no room for it */
            p += size;
            run = p;
            lim = run_limit(w, run, end);
            count = w->data.count;
            t_min = w->data.t_min;
            t_max = w->data.t_max;
            continue;
        }
        count++;
        cs->count[type]++;
        cs->any[type] |= size;
        cs->all[type] &= size;
        if (flags & TP_RF_TIMED) { /* tp_record_ts and tp_record_end, TIMED tested once */
            const uint64_t *body = (const uint64_t *)(h + 1);
            uint64_t a = size >= 16 ? body[0] : 0;
            uint64_t b = (flags & TP_RF_INTERVAL) && size >= 24 ? body[1] : a;
            if (b < a)
                b = a; /* an interval that ends before it starts still counts at its start */
            t_min = a < t_min ? a : t_min;
            t_max = b > t_max ? b : t_max;
        }
        p += size;
        if (nice && ++k % 64 == 0 && give_way(w))
            break;
    }
    run_end(w, run, (size_t)(p - run), count, t_min, t_max);
    return bad ? NULL : p;
}

/* Moves ring `r`'s records in [tail, limit) into the data chunk; returns the new tail. */
static uint64_t drain_ring(tp_writer *w, const tp_ring *r, uint64_t tail, uint64_t limit) {
    uint64_t mask = r->cap - 1;
    while (tail < limit) {
        /* The records up to the ring's end or `limit`, whichever comes first (no record runs
         * past the ring's end), walked with a pointer: the bounds once per span, not per record
         * (~6 instructions a record less). */
        uint64_t off = tail & mask, span = r->cap - off;
        if (span > limit - tail)
            span = limit - tail;
        const uint8_t *start = r->buf + off, *end = start + span;
        const uint8_t *stop =
            w->giving_way ? drain_span(w, start, end, 1) : drain_span(w, start, end, 0);
        if (!stop)
            return limit; /* skip what the producer published */
        if (stop < end)
            return tail + (uint64_t)(stop - start);
        tail += span;
    }
    return tail;
}

static void ring_free(tp_writer *w, tp_ring *r);

/* Moves one stage's committed records into the data chunk, ring after ring, freeing the
 * sealed rings it empties; returns 1 when the stage is closed and empty (the caller frees
 * it). `closed` is read before `head`, so a closed stage's head is final. */
static int drain_stage(tp_writer *w, tp_stage *s) {
    int closed = atomic_load_explicit(&s->closed, memory_order_acquire);
    uint64_t head = atomic_load_explicit(&s->p.head, memory_order_acquire);
    uint64_t tail = atomic_load_explicit(&s->tail, memory_order_relaxed);
    for (;;) {
        tp_ring *r = s->dring;
        /* After `head`: a head past a seal point makes that seal (and `next`) visible. */
        uint64_t end = atomic_load_explicit(&r->end, memory_order_acquire);
        tail = drain_ring(w, r, tail, head < end ? head : end);
        if (end == UINT64_MAX || tail < end)
            break;
        s->dring = r->next;
        ring_free(w, r);
    }
    atomic_store_explicit(&s->tail, tail, memory_order_release);
    if (tail < head) /* the nice drain gave way: the rest is for the next drain */
        closed = 0;
    for (uint32_t t = 0; t < TP_REC_TYPE_LIMIT; t++) {
        uint64_t d = atomic_load_explicit(&s->dropped[t], memory_order_relaxed);
        if (d != s->dropped_seen[t]) {
            add_dropped(w, t, TP_DROP_RING_FULL, d - s->dropped_seen[t]);
            s->dropped_seen[t] = d;
        }
    }
    return closed;
}

static void drain_writer_drops(tp_writer *w) {
    for (uint32_t r = 0; r < REASON_SLOTS; r++)
        for (uint32_t t = 0; t < TP_REC_TYPE_LIMIT; t++) {
            uint64_t d = atomic_load_explicit(&w->xdrops[r][t], memory_order_relaxed);
            if (d != w->xdrops_seen[r][t]) {
                add_dropped(w, t, r, d - w->xdrops_seen[r][t]);
                w->xdrops_seen[r][t] = d;
            }
        }
}

/* Frees a stage and its rings without budget bookkeeping (the writer is going away). */
static void stage_free(tp_stage *s) {
    for (tp_ring *r = s->dring, *n; r; r = n) {
        n = r->next;
        free(r->buf);
        free(r);
    }
    free(s);
}

/* Unlinks and frees `s` (closed and drained). */
static void stage_release(tp_writer *w, tp_stage *s) {
    pthread_mutex_lock(&w->stage_lock);
    for (tp_stage **p = &w->stages; *p; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            break;
        }
    pthread_mutex_unlock(&w->stage_lock);
    for (tp_ring *r = s->dring, *n; r; r = n) {
        n = r->next;
        ring_free(w, r);
    }
    s->dring = NULL;
    stage_free(s);
}

/* Bytes the producers have committed and the drain has not taken yet. */
static uint64_t backlog(tp_writer *w, tp_stage *s) {
    uint64_t n = 0;
    for (; s; s = s->next)
        n += atomic_load_explicit(&s->p.head, memory_order_relaxed) -
             atomic_load_explicit(&s->tail, memory_order_relaxed);
    return n;
}

/* The drain; caller holds drain_lock. `cut`: also write what it has as chunks. When more
 * than 1/HURRY_PART of the budget waits (the drain thread is not scheduled enough on a
 * loaded machine, or a burst), this cycle stores its data chunks as they are: compression is
 * most of the drain's CPU time, and a bigger file is better than dropped events. */
static int drain_locked(tp_writer *w, int cut) {
    if (w->sealed)
        return 1;
    uint64_t t0 = mono_now(NULL);
    pthread_mutex_lock(&w->stage_lock);
    tp_stage *s = w->stages;
    pthread_mutex_unlock(&w->stage_lock);
    w->hurry = !w->opts.block_when_full && backlog(w, s) > w->opts.buffer_bytes / HURRY_PART;
    /* Only the drain unlinks stages and new ones go in at the head, so the list from the
     * snapshot on stays valid while we walk it. */
    while (s && !give_way(w)) {
        tp_stage *next = s->next;
        if (drain_stage(w, s))
            stage_release(w, s);
        s = next;
    }
    int done = !give_way(w);
    if (w->shared && done)
        drain_stage(w, w->shared);
    drain_writer_drops(w);
    if (cut && done)
        cut_chunk(w);
    w->stats.overhead_ns += mono_now(NULL) - t0;
    return done;
}

/* drain_lock, for every thread but the nice drain: counted in want_lock while it waits. */
static void lock_drain(tp_writer *w) {
    atomic_fetch_add_explicit(&w->want_lock, 1, memory_order_relaxed);
    pthread_mutex_lock(&w->drain_lock);
    atomic_fetch_sub_explicit(&w->want_lock, 1, memory_order_relaxed);
}

static void drain(tp_writer *w, int cut) {
    lock_drain(w);
    drain_locked(w, cut);
    pthread_mutex_unlock(&w->drain_lock);
}

/* opts.drain_nice: this thread's nice value raised by that much (a thread attribute on
 * Linux). Never lowered again: that needs privileges. */
static void drain_lower_priority(const tp_writer *w) {
    if (w->opts.drain_nice <= 0)
        return;
    id_t tid = (id_t)gettid();
    errno = 0;
    int cur = getpriority(PRIO_PROCESS, tid);
    if (errno == 0)
        (void)setpriority(PRIO_PROCESS, tid, cur + w->opts.drain_nice);
}

/* Whether a cut is due at `now` with `grace` ns of lateness allowed, and if so, the next one
 * scheduled (cv_lock held). */
static int cut_due(tp_writer *w, uint64_t now, uint64_t grace) {
    if (now < w->next_cut + grace)
        return 0;
    w->next_cut = now + (uint64_t)w->opts.flush_ms * 1000000u;
    return 1;
}

static struct timespec abs_time(uint64_t ns) {
    return (struct timespec){(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
}

static void *bg_main(void *arg) {
    tp_writer *w = arg;
    drain_lower_priority(w);
    pthread_mutex_lock(&w->cv_lock);
    w->running = 1;
    pthread_cond_broadcast(&w->cv);
    while (!w->stop) {
        if (!atomic_load(&w->wake_flag)) {
            struct timespec ts = abs_time(w->next_cut);
            pthread_cond_timedwait(&w->cv, &w->cv_lock, &ts);
        }
        atomic_store(&w->wake_flag, 0);
        int cut = cut_due(w, mono_now(NULL), 0);
        pthread_mutex_unlock(&w->cv_lock);
        pthread_mutex_lock(&w->drain_lock);
        w->giving_way = w->opts.drain_nice > 0; /* opts are fixed once open */
        int done = drain_locked(w, cut);
        w->giving_way = 0;
        pthread_mutex_unlock(&w->drain_lock);
        pthread_mutex_lock(&w->cv_lock);
        if (!done) { /* gave way: come back for the rest, and for the cut */
            atomic_store(&w->wake_flag, 1);
            if (cut)
                w->next_cut = 0;
        }
    }
    pthread_mutex_unlock(&w->cv_lock);
    return NULL;
}

/* The drain at the program's priority (opts.drain_nice): sleeps until a ring passes 3/4 full
 * or has to grow, i.e. until the nice drain is behind, and drains once; it also makes a
 * periodic cut that is a period late (the nice drain starved), so that what a kill -9 keeps
 * does not depend on the nice drain getting CPU time. */
static void *urgent_main(void *arg) {
    tp_writer *w = arg;
    uint64_t grace = (uint64_t)w->opts.flush_ms * 1000000u;
    pthread_mutex_lock(&w->cv_lock);
    w->urgent_running = 1;
    pthread_cond_broadcast(&w->cv);
    while (!w->stop) {
        if (!atomic_load(&w->urgent_flag)) {
            struct timespec ts = abs_time(w->next_cut + grace);
            pthread_cond_timedwait(&w->cv_urgent, &w->cv_lock, &ts);
        }
        int woken = atomic_exchange(&w->urgent_flag, 0);
        int cut = cut_due(w, mono_now(NULL), grace);
        if (!woken && !cut)
            continue;
        pthread_mutex_unlock(&w->cv_lock);
        drain(w, cut);
        pthread_mutex_lock(&w->cv_lock);
    }
    pthread_mutex_unlock(&w->cv_lock);
    return NULL;
}

/* Sets `flag` and signals `cv` unless the flag is already set: at most one wake (and one
 * lock) per drain cycle, whatever the number of producers that ask. */
static void wake_once(tp_writer *w, int have, _Atomic int *flag, pthread_cond_t *cv) {
    if (!have || atomic_load_explicit(flag, memory_order_relaxed) || atomic_exchange(flag, 1))
        return;
    pthread_mutex_lock(&w->cv_lock);
    pthread_cond_signal(cv);
    pthread_mutex_unlock(&w->cv_lock);
}

static void writer_wake(tp_writer *w) {
    wake_once(w, w->have_thread, &w->wake_flag, &w->cv);
}

/* A ring is nearly full: the nice drain did not come. */
static void writer_wake_urgent(tp_writer *w) {
    wake_once(w, w->have_urgent, &w->urgent_flag, &w->cv_urgent);
}

/* ------------------------------------------------------------------ open / close */

static tp_status write_file_header(tp_writer *w) {
    tp_file_header fh;
    memset(&fh, 0, sizeof fh);
    memcpy(fh.magic, TP_FILE_MAGIC, 8);
    fh.bom = TP_FILE_BOM;
    fh.version_major = TP_FILE_VERSION_MAJOR;
    fh.version_minor = TP_FILE_VERSION_MINOR;
    fh.header_size = TP_FILE_HEADER_SIZE;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    fh.created_realtime_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    if (w->opts.producer) { /* NUL padded; a 32-byte name fills the field without a NUL */
        size_t n = strlen(w->opts.producer);
        memcpy(fh.producer, w->opts.producer, n < sizeof fh.producer ? n : sizeof fh.producer);
    }
    fh.header_crc = tp_chunk_crc_skip(&fh, sizeof fh, offsetof(tp_file_header, header_crc));
    struct iovec iov = {&fh, sizeof fh};
    w->file_off = sizeof fh;
    return file_write(w, &iov, 1);
}

static void init_locks(tp_writer *w) {
    pthread_mutex_init(&w->drain_lock, NULL);
    pthread_mutex_init(&w->stage_lock, NULL);
    pthread_mutex_init(&w->shared_lock, NULL);
    pthread_mutex_init(&w->meta_lock, NULL);
    pthread_mutex_init(&w->cv_lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &ca);
    pthread_cond_init(&w->cv_urgent, &ca);
    pthread_condattr_destroy(&ca);
}

/* Starts the background drain; last step of open, once everything it touches exists. The
 * thread is born with every signal blocked: a host program's signal handler must never run
 * on it (a handler that waits for the trace to be closed would wait for itself). Returns
 * once it runs: a host program that forks right after open must not copy a thread that is
 * half-way through its start (a runtime lock it holds then stays held in the child). */
static tp_status start_thread(tp_writer *w) {
    if (!w->opts.background)
        return TP_OK;
    w->next_cut = mono_now(NULL) + (uint64_t)w->opts.flush_ms * 1000000u;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&w->thread, NULL, bg_main, w);
    int rc_urgent =
        rc == 0 && w->opts.drain_nice > 0 ? pthread_create(&w->urgent, NULL, urgent_main, w) : -1;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        return TP_ERR_NOMEM;
    pthread_setname_np(w->thread, "trainprof-drain"); /* for top/perf in a profiled job */
    w->have_thread = 1;
    if (rc_urgent == 0) {
        pthread_setname_np(w->urgent, "trainprof-rush"); /* <= 15 characters */
        w->have_urgent = 1;
    }
    pthread_mutex_lock(&w->cv_lock);
    while (!w->running || (w->have_urgent && !w->urgent_running))
        pthread_cond_wait(&w->cv, &w->cv_lock);
    pthread_mutex_unlock(&w->cv_lock);
    return TP_OK;
}

static void stop_thread(tp_writer *w) {
    if (!w->have_thread)
        return;
    atomic_fetch_add(&w->want_lock, 1); /* a nice drain in progress gives way */
    pthread_mutex_lock(&w->cv_lock);
    w->stop = 1;
    pthread_cond_signal(&w->cv);
    pthread_cond_signal(&w->cv_urgent);
    pthread_mutex_unlock(&w->cv_lock);
    pthread_join(w->thread, NULL);
    if (w->have_urgent)
        pthread_join(w->urgent, NULL);
    w->have_thread = w->have_urgent = 0;
}

static void intern_free(intern_table *t) {
    for (size_t i = 0; i < t->cap; i++)
        free(t->slots[i].data);
    free(t->slots);
}

static void writer_free(tp_writer *w) {
    for (tp_stage *s = w->stages, *n; s; s = n) {
        n = s->next;
        stage_free(s);
    }
    if (w->shared)
        stage_free(w->shared);
    int fd = w->fd;
    w->fd = -1;
    if (fd_names_file(w, fd))
        close(fd);
    free(w->path);
    tp_codec_ctx_close(w->cx);
    free(w->data.buf);
    free(w->meta.buf);
    free(w->meta_spare.buf);
    free(w->filt);
    free(w->planes);
    free(w->zbuf);
    free(w->index);
    intern_free(&w->strings);
    intern_free(&w->stacks);
    /* In a fork child these were copied in whatever state the parent's other threads held
     * them (a condvar mid-wait makes pthread_cond_destroy block forever): never destroy them
     * there, only free the memory. */
    if (getpid() != w->pid) {
        free(w);
        return;
    }
    pthread_mutex_destroy(&w->drain_lock);
    pthread_mutex_destroy(&w->stage_lock);
    pthread_mutex_destroy(&w->shared_lock);
    pthread_mutex_destroy(&w->meta_lock);
    pthread_mutex_destroy(&w->cv_lock);
    pthread_cond_destroy(&w->cv);
    pthread_cond_destroy(&w->cv_urgent);
    free(w);
}

tp_status tp_writer_open(const char *path, const tp_writer_opts *opts, tp_writer **out) {
    *out = NULL;
    tp_writer_opts o; /* bad options leave the file alone */
    tp_status s = opts_resolve(opts, &o);
    if (s != TP_OK)
        return s;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return TP_ERR_OPEN;
    return tp_writer_open_fd(fd, path, &o, out);
}

tp_status tp_writer_open_fd(int fd, const char *path, const tp_writer_opts *opts, tp_writer **out) {
    *out = NULL;
    tp_writer *w = calloc(1, sizeof *w);
    if (!w) {
        close(fd);
        return TP_ERR_NOMEM;
    }
    w->fd = fd;
    init_locks(w);
    struct stat st;
    tp_status e = fstat(fd, &st) != 0                 ? TP_ERR_OPEN
                  : path && !(w->path = strdup(path)) ? TP_ERR_NOMEM
                                                      : TP_OK;
    if (e != TP_OK) {
        close(fd);
        w->fd = -1;
        writer_free(w);
        return e;
    }
    w->dev = st.st_dev; /* the file's identity: a descriptor is ours only if it names it */
    w->ino = st.st_ino;
    tp_status s = opts_resolve(opts, &w->opts);
    if (s != TP_OK)
        goto fail;
    w->ring_max = ring_limit(&w->opts);
    w->pid = getpid();
    w->now = mono_now;
    chunk_reset(&w->data);
    chunk_reset(&w->meta);
    chunk_reset(&w->meta_spare);
    w->fd = fd_raise(fd, w->opts.fd_floor);
    w->codec = tp_codec_by_name(w->opts.codec);
    w->opts.codec = w->codec->name; /* the caller's string need not outlive the call */
    w->cx = tp_codec_ctx_open();
    s = TP_ERR_NOMEM;
    if (!w->cx)
        goto fail;
    s = write_file_header(w);
    if (s == TP_OK)
        s = start_thread(w);
    if (s != TP_OK)
        goto fail;
    *out = w;
    return TP_OK;
fail:;
    int err = errno; /* why open or the header write failed, for the caller's message */
    writer_free(w);
    errno = err;
    return s;
}

static void write_index(tp_writer *w) {
    chunk_buf c = {0};
    chunk_reset(&c);
    tp_index_head ih = {(uint32_t)w->index_len, sizeof(tp_index_entry)};
    size_t n = sizeof ih + w->index_len * sizeof(tp_index_entry) + 2 * 8 * TP_REC_TYPE_LIMIT;
    c.buf = malloc(n);
    if (!c.buf) {
        set_err(w, TP_ERR_NOMEM);
        return;
    }
    uint8_t *p = c.buf;
    memcpy(p, &ih, sizeof ih);
    p += sizeof ih;
    if (w->index_len) /* a trace with no chunk has no index array (memcpy from NULL is UB) */
        memcpy(p, w->index, w->index_len * sizeof(tp_index_entry));
    p += w->index_len * sizeof(tp_index_entry);
    memcpy(p, w->stats.records, sizeof w->stats.records);
    memcpy(p + sizeof w->stats.records, w->stats.dropped, sizeof w->stats.dropped);
    c.len = n;
    uint64_t at = w->file_off;
    emit_chunk(w, TP_CHUNK_INDEX, &c, 0);
    free(c.buf);
    if (w->err != TP_OK)
        return;
    tp_trailer tr = {at, (uint32_t)(w->file_off - at), TP_TRAILER_MAGIC};
    struct iovec iov = {&tr, sizeof tr};
    set_err(w, file_write(w, &iov, 1));
    w->file_off += sizeof tr;
    w->stats.bytes_file = w->file_off;
}

tp_status tp_writer_seal(tp_writer *w) {
    if (!w)
        return TP_OK;
    stop_thread(w);
    lock_drain(w);
    if (!w->sealed) {
        drain_locked(w, 1);
        if (w->err == TP_OK)
            write_index(w);
        w->sealed = 1;
        int fd = w->fd;
        w->fd = -1; /* first: close() may be interposed and ask tp_writer_fd */
        if (fd_names_file(w, fd) && close(fd) != 0)
            set_err(w, TP_ERR_IO);
    }
    tp_status s = w->err;
    int e = w->err_errno;
    pthread_mutex_unlock(&w->drain_lock);
    if (s != TP_OK)
        errno = e;
    return s;
}

tp_status tp_writer_close(tp_writer *w) {
    if (!w)
        return TP_OK;
    tp_status s = tp_writer_seal(w);
    int e = errno; /* the reason for s (writer_free may change errno) */
    writer_free(w);
    if (s != TP_OK)
        errno = e;
    return s;
}

int tp_writer_fd(tp_writer *w) {
    return w ? atomic_load(&w->fd) : -1;
}

int tp_writer_release_fd(tp_writer *w, int fd) {
    if (!w || fd < 0 || atomic_load(&w->fd) != fd)
        return 0;
    lock_drain(w); /* a write in progress finishes first */
    int mine = w->fd == fd;
    if (mine)
        w->fd = -1;
    pthread_mutex_unlock(&w->drain_lock);
    return mine;
}

void tp_writer_set_tap(tp_writer *w, tp_writer_tap tap, void *ctx) {
    lock_drain(w);
    w->tap = tap;
    w->tap_ctx = tap ? ctx : NULL;
    pthread_mutex_unlock(&w->drain_lock);
}

tp_status tp_writer_flush(tp_writer *w) {
    lock_drain(w);
    drain_locked(w, 1);
    tp_status s = w->err;
    int e = w->err_errno;
    pthread_mutex_unlock(&w->drain_lock);
    if (s != TP_OK)
        errno = e;
    return s;
}

void tp_writer_abandon(tp_writer *w) {
    if (!w)
        return;
    /* In a fork child the thread does not exist (only the forking thread survives). */
    if (getpid() == w->pid)
        stop_thread(w);
    writer_free(w);
}

void tp_writer_set_clock(tp_writer *w, uint64_t (*now)(void *ctx), void *ctx) {
    lock_drain(w);
    w->now = now ? now : mono_now;
    w->now_ctx = now ? ctx : NULL;
    pthread_mutex_unlock(&w->drain_lock);
}

void tp_writer_get_stats(tp_writer *w, tp_writer_stats *out) {
    lock_drain(w);
    *out = w->stats;
    pthread_mutex_unlock(&w->drain_lock);
}

/* ------------------------------------------------------------------ staging */

/* Takes `bytes` from the budget; 0 when they do not fit. */
static int budget_take(tp_writer *w, size_t bytes) {
    pthread_mutex_lock(&w->stage_lock);
    int fits = w->budget_used + bytes <= w->opts.buffer_bytes;
    if (fits)
        w->budget_used += bytes;
    pthread_mutex_unlock(&w->stage_lock);
    return fits;
}

static void budget_give(tp_writer *w, size_t bytes) {
    pthread_mutex_lock(&w->stage_lock);
    w->budget_used -= bytes;
    pthread_mutex_unlock(&w->stage_lock);
}

/* A ring of `cap` bytes (power of two) whose first byte is stage position `start`. */
static tp_ring *ring_new(uint64_t cap, uint64_t start, int counted) {
    tp_ring *r = malloc(sizeof *r);
    uint8_t *buf = aligned_alloc(64, cap);
    if (!r || !buf) {
        free(r);
        free(buf);
        return NULL;
    }
    *r = (tp_ring){.buf = buf, .cap = cap, .start = start, .counted = counted};
    atomic_init(&r->end, UINT64_MAX);
    return r;
}

static void ring_free(tp_writer *w, tp_ring *r) {
    if (r->counted)
        budget_give(w, r->cap);
    free(r->buf);
    free(r);
}

/* Makes `r` the ring the producer writes into. */
static void stage_use_ring(tp_stage *s, tp_ring *r) {
    s->pring = r;
    s->p.ring = r->buf;
    s->p.cap = r->cap;
    s->p.mask = r->cap - 1;
    s->p.cached_tail = r->start;
    s->p.check_at = r->start + r->cap / 2;
}

static tp_stage *stage_new(tp_writer *w, uint32_t tid, int counted) {
    tp_stage *s = aligned_alloc(64, sizeof *s);
    tp_ring *r = ring_new(w->opts.ring_bytes, 0, counted);
    if (!s || !r) {
        free(s);
        if (r)
            r->counted = 0, ring_free(w, r);
        if (counted)
            budget_give(w, w->opts.ring_bytes);
        return NULL;
    }
    memset(s, 0, sizeof *s);
    memset(r->buf, 0, r->cap); /* fault the pages in now, not on the hot path */
    s->w = w;
    s->tid = tid;
    s->dring = r;
    stage_use_ring(s, r);
    return s;
}

tp_status tp_writer_stage_open(tp_writer *w, uint32_t tid, tp_stage **out) {
    *out = NULL;
    if (!budget_take(w, w->opts.ring_bytes))
        return TP_ERR_FULL;
    tp_stage *s = stage_new(w, tid, 1); /* on failure its ring gave the bytes back */
    pthread_mutex_lock(&w->stage_lock);
    if (s) {
        s->next = w->stages;
        w->stages = s;
    }
    pthread_mutex_unlock(&w->stage_lock);
    *out = s;
    return s ? TP_OK : TP_ERR_NOMEM;
}

void tp_stage_close(tp_stage *s) {
    if (s)
        atomic_store_explicit(&s->closed, 1, memory_order_release);
}

static void count_drop(tp_stage *s, uint16_t type) {
    _Atomic uint64_t *c = &s->dropped[type < TP_REC_TYPE_LIMIT ? type : 0];
    /* Only the owner writes the counter: a plain add, atomic so the drain may read it. */
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

/* Takes the bytes of the ring a full stage goes on in: twice its ring (at most ring_max),
 * halved while it does not fit the budget less the part kept for threads still to start,
 * never below a first ring. Returns the ring's size, 0 when none fits. */
static uint64_t budget_take_ring(tp_writer *w, uint64_t cap) {
    uint64_t want = cap * 2 < w->ring_max ? cap * 2 : w->ring_max;
    uint64_t reserve = w->opts.buffer_bytes / RESERVE_PART;
    pthread_mutex_lock(&w->stage_lock);
    uint64_t used = w->budget_used + reserve,
             room = used < w->opts.buffer_bytes ? w->opts.buffer_bytes - used : 0;
    while (want > w->opts.ring_bytes && want > room)
        want >>= 1;
    if (want <= room)
        w->budget_used += want;
    pthread_mutex_unlock(&w->stage_lock);
    return want <= room ? want : 0;
}

/* The ring is full: seal it and go on in a new one, twice as large while the budget has
 * room (budget_take_ring). A thread's records stay in order: the drain empties the sealed
 * ring first. Runs on the producer's thread: one lock and one malloc per new ring, which
 * doubles until the budget is nearly spent. Returns 0 when no ring fits. */
static int stage_grow(tp_stage *s) {
    tp_writer *w = s->w;
    uint64_t cap = budget_take_ring(w, s->p.cap);
    if (!cap)
        return 0;
    tp_ring *r = ring_new(cap, s->p.pos, 1);
    if (!r) {
        budget_give(w, cap);
        return 0;
    }
    tp_ring *old = s->pring;
    old->next = r;
    atomic_store_explicit(&old->end, s->p.pos, memory_order_release);
    stage_use_ring(s, r);
    writer_wake(w); /* a full ring means the drain is behind */
    writer_wake_urgent(w);
    return 1;
}

/* Slow path of reserve: the ring looked full. Blocks (drains itself) when the writer is in
 * block_when_full mode, else grows the ring or, when the budget is spent, counts the drop. */
static void *stage_full(tp_stage *s, uint32_t size, uint16_t type) {
    int valid = size >= sizeof(tp_rec_hdr) && size % 8 == 0 && size <= s->p.cap / 2;
    if (valid && s->w->opts.block_when_full) {
        drain(s->w, 0);
        return tp_stage_reserve(s, size, type);
    }
    if (valid && stage_grow(s))
        return tp_stage_reserve(s, size, type);
    count_drop(s, type);
    return NULL;
}

/* Loads the drain's tail; the producer's ring is free from max(tail, its start) on (the
 * drain may still be emptying an older ring). Returns the tail as loaded. */
static uint64_t stage_refresh_tail(tp_stage *s) {
    uint64_t tail = atomic_load_explicit(&s->tail, memory_order_acquire);
    s->p.cached_tail = tail > s->pring->start ? tail : s->pring->start;
    return tail;
}

/* reserve's slow path (tp_writer.h): the record needs padding to the ring's end, or the last
 * tail seen leaves no room, or the size is bad. */
void *tp_stage__reserve_slow(tp_stage *s, uint32_t size, uint16_t type) {
    uint64_t pos = s->p.pos, off = pos & s->p.mask;
    uint64_t pad = off + size > s->p.cap ? s->p.cap - off : 0;
    uint64_t end = pos + pad + size;
    if (end - s->p.cached_tail > s->p.cap || size - 8u > s->p.cap / 2 || (size & 7u)) {
        stage_refresh_tail(s);
        if (end - s->p.cached_tail > s->p.cap || size - 8u > s->p.cap / 2 || (size & 7u))
            return stage_full(s, size, type);
    }
    if (pad) {
        tp_rec_hdr *p = (tp_rec_hdr *)(s->p.ring + off);
        p->type = TP_REC_PAD;
        p->flags = 0;
        p->size = (uint32_t)pad;
        pos += pad;
        s->p.pos = pos;
    }
    s->p.pending_end = pos + size;
    return s->p.ring + (pos & s->p.mask);
}

/* Past the check point: refresh the tail and wake the drain when over half full (older
 * rings not yet emptied count as fill). */
void tp_stage__check_fill(tp_stage *s) {
    uint64_t tail = stage_refresh_tail(s);
    if (s->p.pos - tail >= s->p.cap / 2) {
        writer_wake(s->w);
        if (s->p.pos - tail >= s->p.cap / 4 * 3)
            writer_wake_urgent(s->w);
        s->p.check_at = s->p.pos + s->p.cap / 8;
    } else {
        s->p.check_at = tail + s->p.cap / 2;
    }
}

uint64_t tp_stage_dropped(const tp_stage *s) {
    uint64_t n = 0;
    for (int t = 0; t < TP_REC_TYPE_LIMIT; t++)
        n += atomic_load_explicit(&s->dropped[t], memory_order_relaxed);
    return n;
}

/* ------------------------------------------------------------------ slow path */

static int rec_valid(const void *rec, uint32_t max) {
    const tp_rec_hdr *h = rec;
    return h && h->size >= sizeof *h && h->size % 8 == 0 && h->size <= max;
}

tp_status tp_writer_write(tp_writer *w, const void *rec) {
    if (!rec_valid(rec, (uint32_t)(w->opts.ring_bytes / 2)))
        return TP_ERR_ARG;
    pthread_mutex_lock(&w->shared_lock);
    if (!w->shared) {
        tp_stage *s = stage_new(w, 0, 0);
        lock_drain(w); /* the drain reads w->shared under this lock */
        w->shared = s;
        pthread_mutex_unlock(&w->drain_lock);
    }
    int ok = w->shared && tp_stage_write(w->shared, rec);
    pthread_mutex_unlock(&w->shared_lock);
    return ok ? TP_OK : (w->shared ? TP_ERR_FULL : TP_ERR_NOMEM);
}

void tp_writer_count_drop(tp_writer *w, uint16_t type, uint32_t reason, uint64_t n) {
    uint32_t r = reason < REASON_SLOTS ? reason : 0;
    atomic_fetch_add_explicit(&w->xdrops[r][type < TP_REC_TYPE_LIMIT ? type : 0], n,
                              memory_order_relaxed);
}

/* ------------------------------------------------------------------ metadata */

static tp_status meta_append(tp_writer *w, const tp_rec_hdr *r) {
    return chunk_add(&w->meta, r) ? TP_OK : TP_ERR_NOMEM;
}

tp_status tp_writer_write_meta(tp_writer *w, const void *rec) {
    if (!rec_valid(rec, META_REC_MAX))
        return TP_ERR_ARG;
    pthread_mutex_lock(&w->meta_lock);
    tp_status s = meta_append(w, rec);
    pthread_mutex_unlock(&w->meta_lock);
    return s;
}

/* Finds `key` in `t`; returns its slot (empty slot when absent). */
static intern_entry *intern_find(intern_table *t, uint64_t hash, const void *key, size_t len) {
    size_t i = hash & (t->cap - 1);
    for (;; i = (i + 1) & (t->cap - 1)) {
        intern_entry *e = &t->slots[i];
        if (!e->hash || (e->hash == hash && e->len == len && !memcmp(e->data, key, len)))
            return e;
    }
}

static int intern_grow(intern_table *t) {
    if (t->cap && (t->used + 1) * 2 <= t->cap)
        return 1;
    size_t ncap = t->cap ? t->cap * 2 : 256;
    intern_entry *old = t->slots;
    size_t ocap = t->cap;
    t->slots = tp_mem_calloc(ncap, sizeof *t->slots);
    if (!t->slots) {
        t->slots = old;
        return 0;
    }
    t->cap = ncap;
    for (size_t i = 0; i < ocap; i++)
        if (old[i].hash)
            *intern_find(t, old[i].hash, old[i].data, old[i].len) = old[i];
    free(old);
    return 1;
}

/* Looks `key` up; when new, copies it, gives it ++*next_id and reports *is_new. */
static tp_status intern(intern_table *t, const void *key, size_t len, uint32_t *next_id,
                        uint32_t *id, int *is_new) {
    static const uint64_t empty;
    if (!key) /* an empty stack may come as NULL; hash and copy need a real pointer */
        key = &empty;
    uint64_t h = tp_hash_bytes(key, len, 0x7470726f66ull);
    *is_new = 0;
    if (!intern_grow(t))
        return TP_ERR_NOMEM;
    intern_entry *e = intern_find(t, h, key, len);
    if (!e->hash) {
        void *copy = malloc(len ? len : 1);
        if (!copy)
            return TP_ERR_NOMEM;
        memcpy(copy, key, len);
        *e = (intern_entry){h, ++*next_id, (uint32_t)len, copy};
        t->used++;
        *is_new = 1;
    }
    *id = e->id;
    return TP_OK;
}

static tp_status meta_add_string(tp_writer *w, uint32_t id, const char *s, size_t len) {
    uint32_t size = (uint32_t)TP_REC_ALIGN(sizeof(tp_rec_string) + len + 1);
    tp_rec_string *r = calloc(1, size);
    if (!r)
        return TP_ERR_NOMEM;
    tp_record_init_hdr(&r->h, TP_REC_STRING, size);
    r->id = id;
    r->len = (uint32_t)len;
    memcpy(r->text, s, len);
    tp_status st = meta_append(w, &r->h);
    free(r);
    return st;
}

tp_status tp_writer_intern_string(tp_writer *w, const char *s, size_t len, uint32_t *id) {
    if (!s || len > META_REC_MAX / 2)
        return TP_ERR_ARG;
    int is_new;
    pthread_mutex_lock(&w->meta_lock);
    tp_status st = intern(&w->strings, s, len, &w->next_sid, id, &is_new);
    if (st == TP_OK && is_new)
        st = meta_add_string(w, *id, s, len);
    pthread_mutex_unlock(&w->meta_lock);
    return st;
}

static tp_status meta_add_stack(tp_writer *w, uint32_t id, const uint64_t *frames, uint32_t n) {
    uint32_t size = (uint32_t)(sizeof(tp_rec_stack) + n * sizeof(uint64_t));
    tp_rec_stack *r = calloc(1, size);
    if (!r)
        return TP_ERR_NOMEM;
    tp_record_init_hdr(&r->h, TP_REC_STACK, size);
    r->id = id;
    r->nframes = n;
    if (n)
        memcpy(r->frames, frames, n * sizeof(uint64_t));
    tp_status st = meta_append(w, &r->h);
    free(r);
    return st;
}

tp_status tp_writer_intern_stack(tp_writer *w, const uint64_t *frames, uint32_t n, uint32_t *id) {
    if ((!frames && n) || n > TP_STACK_MAX_FRAMES)
        return TP_ERR_ARG;
    int is_new;
    pthread_mutex_lock(&w->meta_lock);
    tp_status st = intern(&w->stacks, frames, n * sizeof(uint64_t), &w->next_stack, id, &is_new);
    if (st == TP_OK && is_new)
        st = meta_add_stack(w, *id, frames, n);
    pthread_mutex_unlock(&w->meta_lock);
    return st;
}
