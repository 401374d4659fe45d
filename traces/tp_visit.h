/* tp_visit: the one loop over a trace's records, dispatching each to a table of handlers.
 *
 * perf's `perf_tool` is the model: a consumer (the model's native loader, the Chrome and
 * SQLite exports, `trainprof info`) fills a tp_visitor with a handler per record type it
 * wants (NULL: skipped) and tp_visit_run walks the reader once. Nobody else switches over
 * record types or loops over the metadata.
 *
 * The walk, in this order:
 *  1. metadata (the records of META chunks), type by type in increasing type number
 *     (PROCESS, THREAD, ..., DEVICE, STREAM, ..., CLOCK_SYNC), each type in file order.
 *     Strings and stacks are not visited: look them up by id (tp_reader_string/_stack);
 *  2. data records in file order (by time within a thread), then
 *  3. the NVTX ranges still open at the end (`range` with closed = 0).
 *
 * What handlers may rely on:
 *  - every record passed is at least as long as this build's struct for its type: records
 *    of an older, shorter version come as a zero-extended copy, so a handler casts
 *    (`const tp_rec_kernel *k = (const void *)rec`) and reads any field. The record lives
 *    until the handler returns;
 *  - `thread` gets each THREAD record digested: the thread's latest name over the whole
 *    trace (later THREAD records rename) and whether this is the tid's first / last record,
 *    so a consumer lists each thread once without its own search;
 *  - when `range` is set, NVTX push/pop pairs per (thread, domain) and start/end by range
 *    id, innermost first, and `range` sees each range when it closes. Pops and ends that
 *    close nothing are counted in tp_visit_stats;
 *  - data chunks holding no type the visitor wants are not decompressed at all.
 * A handler returns TP_OK to go on; any other status stops the walk and is returned. */
#ifndef TP_VISIT_H
#define TP_VISIT_H

#include <stdint.h>

#include "tp_pairing.h"
#include "tp_reader.h"
#include "tp_record.h"
#include "tp_status.h"

/* A record handler; `ctx` is the pointer given to tp_visit_run. */
typedef tp_status (*tp_visit_fn)(void *ctx, const tp_rec_hdr *rec);

typedef struct {
    const tp_rec_thread *rec;
    const char *name; /* the tid's latest name (its last THREAD record's); NULL: none */
    int first, last;  /* rec is the tid's first / last THREAD record in file order */
} tp_visit_thread;

typedef struct {
    tp_open_range open; /* what the PUSH / START said: ts, tid, msg_sid, domain, color, ... */
    uint64_t end;       /* time of the POP / END; 0 when !closed */
    uint32_t end_tid;   /* thread of the POP / END (a start/end range may end elsewhere) */
    int closed;         /* 0: still open when the trace ended; the consumer picks the end */
} tp_visit_range;

typedef struct {
    /* metadata records by type */
    tp_visit_fn meta[TP_REC_TYPE_LIMIT];
    /* THREAD metadata, digested (called after meta[TP_REC_THREAD], if both are set) */
    tp_status (*thread)(void *ctx, const tp_visit_thread *t);
    /* every data record, before its type's handler; setting it decodes every chunk */
    tp_visit_fn each;
    /* data records it returns 0 for are skipped (no pairing, no handler); NULL keeps all */
    int (*keep)(void *ctx, const tp_rec_hdr *rec);
    /* data records by type */
    tp_visit_fn data[TP_REC_TYPE_LIMIT];
    /* NVTX ranges, paired: called as the POP / END arrives, before that record's data[];
     * a start/end range whose END came first in file order (ended on a thread whose chunk
     * was written earlier) is called as its START arrives */
    tp_status (*range)(void *ctx, const tp_visit_range *r);
    /* 1: decode chunks ahead on a second thread while the handlers run
     * (tp_cursor_read_ahead); handlers may read the reader's metadata, nothing else of it */
    int read_ahead;
    /* nonzero: data records of a timed type whose ts or end lies past it are skipped before
     * `keep` (tp_cursor_set_late: tested a chunk at a time, on the read-ahead thread when
     * there is one), counted in tp_visit_stats.late */
    uint64_t t_limit;
    /* t_end > t_begin: only data records of a timed type overlapping [t_begin, t_end), chunks
     * outside it skipped unread (tp_query): a window of a trace still being written, as the
     * live client cuts the traces of a job's other processes */
    uint64_t t_begin, t_end;
} tp_visitor;

typedef struct {
    uint64_t records;       /* data records visited (each one the cursor returned) */
    uint64_t nvtx_unpaired; /* pops and ends that closed no open range (with `range`) */
    uint64_t nvtx_unclosed; /* ranges still open at the end (with `range`) */
    uint64_t late;          /* records past t_limit, skipped (not counted in `records`) */
} tp_visit_stats;

/* Walks reader `r` once as described above, calling `v`'s handlers with `ctx`. `stats` may
 * be NULL. Returns TP_OK, the first status a handler returned other than TP_OK, or
 * TP_ERR_NOMEM. */
tp_status tp_visit_run(tp_reader *r, const tp_visitor *v, void *ctx, tp_visit_stats *stats);

#endif
