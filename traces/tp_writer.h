/* tp_writer: writes a .tprof trace (format v1, docs/trace-format.md).
 *
 * Hot path: each producing thread owns a tp_stage, a lock-free single-producer ring.
 * tp_stage_reserve/commit cost a few loads and stores, never a lock, syscall or malloc while
 * the ring has room. A full ring grows: the producer seals it and goes on in a new one (one
 * lock and one malloc), twice as large while the budget has room, smaller when it is nearly
 * spent; when no ring fits, the record is dropped and counted by type (later written as
 * DROPPED). One drain (the writer's background thread, or tp_writer_flush) moves
 * committed records from all rings into chunks, compresses them (LZ4 or zstd) and appends them
 * to the file, and frees the sealed rings it empties.
 * Memory is bounded by opts.buffer_bytes: rings come out of that budget, one ring is at most
 * half of it, growth leaves 1/16 of it to the first rings of threads still to start, a thread
 * that finds the budget spent gets no ring and its events count as dropped
 * (tp_writer_count_drop).
 *
 * Metadata (strings, stacks, modules, threads, ...) goes through thread-safe, locked calls;
 * it is written in META chunks that always precede the data chunks that refer to it, so a
 * truncated file resolves every id it still holds. */
#ifndef TP_WRITER_H
#define TP_WRITER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tp_record.h"
#include "tp_status.h"

typedef struct tp_writer tp_writer;
typedef struct tp_stage tp_stage;

typedef struct {
    size_t buffer_bytes;  /* all staging rings together; 0 = 64 MiB */
    size_t ring_bytes;    /* a thread's first ring, rounded up to a power of two; 0 = 1/256 of
                             the budget within [4 KiB, 1 MiB]. A full ring is followed by
                             one twice as large while the budget allows (at most half the
                             budget) */
    size_t chunk_bytes;   /* uncompressed bytes per data chunk; 0 = 1 MiB */
    const char *codec;    /* chunk codec by name, tp_codec.h: "lz4", "zstd" or "none"; NULL =
                             TP_CODEC_DEFAULT_NAME (lz4: measured cheapest per record to write
                             and to read, docs/PERFORMANCE.md); an unknown name is TP_ERR_ARG */
    int zstd_level;       /* with codec "zstd": 0 = -1, a zstd fast level: measured best for
                             lane-delta records; any zstd level, negative included */
    int background;       /* 1: a writer thread drains every flush_ms and when rings fill */
    unsigned flush_ms;    /* 0 = 200 */
    int block_when_full;  /* 1: a full ring is drained by its producer instead of dropping
                             (offline tools; never in the collector) */
    const char *producer; /* stored in the file header, e.g. "trainprof-collector 0.1.0" */
    int no_filter;        /* 1: store records without the lane-delta filter (comparisons) */
    int fd_floor;         /* > 0: keep the file's descriptor at or above this number, out of
                             the way of a host program's own descriptors (the collector) */
    int drain_nice;       /* with background, > 0: the drain thread runs this much nicer than
                             the program, so that it takes idle CPU rather than the program's,
                             and a second thread at the program's priority drains whenever a
                             ring passes 3/4 full (the first one is starved); 0: one thread */
} tp_writer_opts;

/* Fills `o` with the defaults above. */
void tp_writer_opts_default(tp_writer_opts *o);

/* Creates `path` (truncating it) and writes the file header. `opts` may be NULL. On
 * TP_ERR_OPEN or TP_ERR_IO errno says why (ENOSPC, EACCES, ...); see tp_status_why. */
tp_status tp_writer_open(const char *path, const tp_writer_opts *opts, tp_writer **out);

/* The same on `fd`, an empty file opened for writing by the caller (who chose how to create
 * it: tp_outfile). The writer owns `fd` from here on, also when this fails. `path` names the
 * same file, so it can be reopened when the program takes the descriptor away (NULL: it
 * cannot be; the trace then stops there). */
tp_status tp_writer_open_fd(int fd, const char *path, const tp_writer_opts *opts, tp_writer **out);

/* Drains every ring, writes the index and trailer, closes the file and frees everything,
 * stages included. Returns the first I/O error met during the writer's life, with errno set
 * to the system's reason for it (even when it happened on the writer thread). NULL: no-op. */
tp_status tp_writer_close(tp_writer *w);

/* Completes the file as tp_writer_close does (drain, index, trailer, descriptor closed,
 * background thread stopped) but frees nothing: threads that still hold a stage may go on
 * writing into it harmlessly (those records are not written). For a process that is about
 * to exit or exec while other threads run. Later calls, flushes and drains do nothing;
 * tp_writer_close then only frees. Returns what tp_writer_close would, errno set alike. */
tp_status tp_writer_seal(tp_writer *w);

/* Drains every ring and writes what it has as complete chunks (a later crash keeps them).
 * Returns the first error so far, errno set as for tp_writer_close. */
tp_status tp_writer_flush(tp_writer *w);

/* Abandons the writer without touching the file (e.g. in a fork child): frees memory only. */
void tp_writer_abandon(tp_writer *w);

/* ---- per-thread staging (hot path) ---- */

/* Gives thread `tid` a ring from the budget. TP_ERR_FULL when the budget is spent. */
tp_status tp_writer_stage_open(tp_writer *w, uint32_t tid, tp_stage **out);

/* Hands the ring back: the writer drains what is left, then frees it. NULL: no-op. */
void tp_stage_close(tp_stage *s);

/* The producer's half of a stage: its first member, public so that reserve and commit inline
 * into the collector's hot paths (a call per record cost more than the work). Only the owning
 * thread touches it; only tp_writer.c moves it to another ring. */
typedef struct {
    _Alignas(64) _Atomic uint64_t head; /* published end of committed records */
    uint64_t pos;                       /* start of the record being reserved */
    uint64_t pending_end;               /* its end */
    uint64_t cached_tail; /* last tail seen, >= the ring's start; refreshed when space seems
                             short */
    uint64_t check_at;    /* position at which to look at the fill level */
    uint8_t *ring;        /* the producer's ring: buffer, size (a power of two), size - 1 */
    uint64_t cap, mask;
} tp_stage_producer;

/* Out-of-line parts of reserve and commit (not for callers). */
void *tp_stage__reserve_slow(tp_stage *s, uint32_t size, uint16_t type);
void tp_stage__check_fill(tp_stage *s);

/* Space for one record of `size` bytes (multiple of 8), or NULL when full (the drop is
 * counted under `type`). Only the owning thread may call this. The common case (the record
 * fits before the ring's end and the last tail seen) is a few loads and compares. */
static inline void *tp_stage_reserve(tp_stage *s, uint32_t size, uint16_t type) {
    tp_stage_producer *p = (tp_stage_producer *)(void *)s;
    uint64_t pos = p->pos, off = pos & p->mask;
    if (__builtin_expect(off + size <= p->cap && pos + size - p->cached_tail <= p->cap &&
                             size - 8u <= p->cap / 2 && !(size & 7u),
                         1)) {
        p->pending_end = pos + size;
        return p->ring + off;
    }
    return tp_stage__reserve_slow(s, size, type);
}

/* Publishes the record last reserved (its header must be filled): one release store. */
static inline void tp_stage_commit(tp_stage *s) {
    tp_stage_producer *p = (tp_stage_producer *)(void *)s;
    uint64_t end = p->pending_end;
    p->pos = end;
    atomic_store_explicit(&p->head, end, memory_order_release);
    if (__builtin_expect(end >= p->check_at, 0))
        tp_stage__check_fill(s);
}

/* For a producer that writes many records of at most `max` bytes in place: the position up
 * to which records may go with tp_stage_place and tp_stage_commit_fast, none of reserve's or
 * commit's out-of-line work falling due before it (the ring's end, the last tail seen, the
 * next fill check). Valid until the next tp_stage_reserve or tp_stage_commit on `s` (they may
 * move the stage to another ring); the current position when there is no room. */
static inline uint64_t tp_stage_fast_limit(const tp_stage *s, uint32_t max) {
    const tp_stage_producer *p = (const tp_stage_producer *)(const void *)s;
    uint64_t lim = (p->pos | p->mask) + 1, tail_lim = p->cached_tail + p->cap;
    lim = tail_lim < lim ? tail_lim : lim;
    lim = p->check_at - 1 < lim ? p->check_at - 1 : lim;
    return max - 8u <= p->cap / 2 && lim > p->pos ? lim : p->pos;
}

/* Space for a record of `size` bytes (a multiple of 8, <= the limit's `max`): 1 and the
 * space in *rec when the record ends by `limit` (from tp_stage_fast_limit), else 0. Publish
 * it with tp_stage_commit_fast(s, *end). */
static inline int tp_stage_place(tp_stage *s, uint32_t size, uint64_t limit, void **rec,
                                 uint64_t *end) {
    tp_stage_producer *p = (tp_stage_producer *)(void *)s;
    uint64_t pos = p->pos;
    *end = pos + size;
    if (__builtin_expect(*end > limit, 0))
        return 0;
    *rec = p->ring + (pos & p->mask);
    return 1;
}

static inline void tp_stage_commit_fast(tp_stage *s, uint64_t end) {
    tp_stage_producer *p = (tp_stage_producer *)(void *)s;
    p->pos = end;
    atomic_store_explicit(&p->head, end, memory_order_release);
}

/* reserve + copy + commit. Returns 1 when written, 0 when dropped. */
static inline int tp_stage_write(tp_stage *s, const void *rec) {
    const tp_rec_hdr *h = rec;
    void *d = tp_stage_reserve(s, h->size, h->type);
    if (!d)
        return 0;
    memcpy(d, rec, h->size);
    tp_stage_commit(s);
    return 1;
}

/* Records dropped by this stage so far (all types). */
uint64_t tp_stage_dropped(const tp_stage *s);

/* ---- thread-safe slow path ---- */

/* Writes one event record through a shared, locked staging area (for producers off the hot
 * path: CUPTI's buffer thread, importers). Never drops when block_when_full is set. */
tp_status tp_writer_write(tp_writer *w, const void *rec);

/* Counts `n` records of `type` lost outside any stage (e.g. a thread without a ring). */
void tp_writer_count_drop(tp_writer *w, uint16_t type, uint32_t reason, uint64_t n);

/* Interns a string (need not be NUL-terminated); the same bytes always get the same id. */
tp_status tp_writer_intern_string(tp_writer *w, const char *s, size_t len, uint32_t *id);

/* Interns a call stack of TP_FRAME_MAKE frames (at most TP_STACK_MAX_FRAMES). */
tp_status tp_writer_intern_stack(tp_writer *w, const uint64_t *frames, uint32_t n, uint32_t *id);

/* Writes a metadata record (PROCESS, THREAD, MODULE, DOMAIN, CATEGORY, DEVICE, STREAM, ...). */
tp_status tp_writer_write_meta(tp_writer *w, const void *rec);

/* ---- the file descriptor, inside a host program ----
 * Before every write the writer checks (fstat: device and inode) that its descriptor still
 * names its file. When the program closed it behind the writer's back (a raw close_range
 * syscall) or reused its number, the writer never touches that descriptor again: it reopens
 * its file by path (same inode, at the same offset) or, when that fails, writes nothing more
 * (stats.fd_lost; tp_writer_close returns TP_ERR_IO). */

/* The descriptor the writer writes to now, -1 when none (sealed, released). */
int tp_writer_fd(tp_writer *w);

/* If `fd` is the writer's descriptor, stops using it (the caller is about to replace it, e.g.
 * dup2 onto it) and returns 1; the writer reopens its file before its next write. Waits for
 * a write in progress, so no write can reach whatever `fd` becomes. Else returns 0. */
int tp_writer_release_fd(tp_writer *w, int fd);

/* Called by the drain for every record it writes to the file (data records as they are
 * drained, the writer's own DROPPED records, metadata as its chunk is written), in file
 * order, under the writer's drain lock: keep it short, never call back into the writer.
 * NULL removes it. */
typedef void (*tp_writer_tap)(void *ctx, const tp_rec_hdr *rec);
void tp_writer_set_tap(tp_writer *w, tp_writer_tap tap, void *ctx);

/* Trace-clock time used for DROPPED/OVERHEAD records the writer makes itself. The caller
 * passes its clock's reader; default: CLOCK_MONOTONIC. */
void tp_writer_set_clock(tp_writer *w, uint64_t (*now)(void *ctx), void *ctx);

typedef struct {
    uint64_t records[TP_REC_TYPE_LIMIT]; /* written, by type */
    uint64_t dropped[TP_REC_TYPE_LIMIT]; /* dropped, by type */
    uint64_t records_total, dropped_total;
    uint64_t chunks, bytes_raw, bytes_file;
    uint64_t overhead_ns; /* time spent draining, compressing, writing */
    uint32_t fd_reopens;  /* times the file was reopened after its descriptor was lost */
    int fd_lost;          /* 1: the descriptor was lost and the file could not be reopened */
    uint64_t chunks_raw;  /* data chunks stored unfiltered and uncompressed because the drain
                             was behind (over 1/4 of the budget waiting) */
} tp_writer_stats;

/* Counts so far (drain first with tp_writer_flush for exact figures). */
void tp_writer_get_stats(tp_writer *w, tp_writer_stats *out);

#endif
