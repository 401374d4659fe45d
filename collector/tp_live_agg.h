/* tp_live_agg: the online aggregator of a live job: the figures of the recent steps, kept up
 * to date record by record, so that `trainprof top` reads them without cutting, writing and
 * reloading a window on every refresh.
 *
 * Fed by the live server thread with every record the drain's tap hands over (never by an
 * application thread), and told where steps start and end (the store's step detection, one
 * definition). Time is cut into segments at those edges: a step, then the gap to the next one.
 * Each record is attributed to the segment its start falls in, as a window's trace holds the
 * records that start in it:
 *   - device operations (kernels, copies, memsets): count, total, min and max per name
 *     (names grouped by traces/tp_kgroup, HTA's rule, as the analyzer's kernels table), and
 *     their intervals per stream, whose union (common/tp_interval, the analyzer's busy) is
 *     the device's busy time;
 *   - NVTX ranges (push/pop and start/end, paired by traces/tp_pairing as the loader pairs
 *     them): count, total, min and max per name and domain, at their start;
 *   - the allocator's memory (NVTX memory extension: regions through tp_region_map, heaps
 *     through tp_heap_reserved_delta, the readings the loader and the exports use): the bytes
 *     allocated and reserved, carried from the start of the job, so a window starts with the
 *     state before it.
 * Device records arrive late (CUPTI's buffers, the drain period). A record waits in a pending
 * list until the watermark (the caller's clock minus the delay it allows) passes its start;
 * only then is it attributed, and a segment is final once the watermark passes its end. A
 * window's figures include what is still pending, and say `agg_final=0` (provisional) while
 * any part of the window is not final. A record older than the watermark when it arrives is
 * attributed at once and counted as late.
 *
 * Bounded: the last TP_LIVE_AGG_STEPS steps' segments (older ones are folded into the memory
 * state and freed), at most TP_LIVE_AGG_PENDING pending records (beyond that the oldest are
 * attributed early, counted), intervals and names per segment as the job makes them.
 * Single-threaded: the live server thread owns it. */
#ifndef TP_LIVE_AGG_H
#define TP_LIVE_AGG_H

#include <stddef.h>
#include <stdint.h>

#include "tp_record.h"
#include "tp_status.h"

#define TP_LIVE_AGG_STEPS 512
#define TP_LIVE_AGG_PENDING (1u << 17)

typedef struct tp_live_agg tp_live_agg;

typedef struct {
    uint64_t pending;  /* records waiting for the watermark */
    uint64_t late;     /* records attributed to a segment already final */
    uint64_t early;    /* records attributed before the watermark (pending list full) */
    uint64_t unplaced; /* operations and ranges older than every segment kept; ranges past
                          65536 open at once */
    uint64_t segments; /* segments kept */
} tp_live_agg_stats;

/* Opens an empty aggregator. TP_ERR_NOMEM. */
tp_status tp_live_agg_open(tp_live_agg **out);

/* Frees everything; NULL is a no-op. */
void tp_live_agg_close(tp_live_agg *a);

/* Takes one record (metadata or data, in the drain's order); nothing is kept of it but what
 * the figures need. */
void tp_live_agg_add(tp_live_agg *a, const tp_rec_hdr *r);

/* A step starts or ends at `ts`: a new segment begins there. Edges come in time order (one
 * thread's steps); an edge before the latest one is ignored. */
void tp_live_agg_edge(tp_live_agg *a, uint64_t ts);

/* Attributes what starts before `watermark` and makes final the segments that end before it. */
void tp_live_agg_advance(tp_live_agg *a, uint64_t watermark);

/* The figures of [t0, t1] (t0 and t1 step edges) as `key=value` lines appended to buf (cap
 * bytes, NUL-terminated, truncated at a line boundary when full); docs/live-protocol.md lists
 * the keys. Returns the length written. */
size_t tp_live_agg_window(tp_live_agg *a, uint64_t t0, uint64_t t1, char *buf, size_t cap);

void tp_live_agg_get_stats(const tp_live_agg *a, tp_live_agg_stats *out);

#endif
