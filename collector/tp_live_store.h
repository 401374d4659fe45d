/* tp_live_store: the recent past of a live job, fed by the drain's tap, and the traces cut
 * out of it (a window for `trainprof top`, a capture for `trainprof capture`).
 *
 * It keeps every metadata record (strings, threads, devices, ...: what any window needs to
 * resolve its ids) and the most recent data records within a byte budget, in arrival order
 * (oldest whole chunks go first; what went is counted and remembered as a time, so a window
 * that reaches further back is known to be incomplete). It follows the step ranges (a range
 * named "step", "ProfilerStep#N", or the name given) as they close, so windows can be cut
 * at step boundaries. A window is written as a complete, indexed .tprof (tp_writer) holding
 * the metadata and the data records that start in [t0, t1], with NVTX ranges kept whole:
 * a pop or end is written exactly when its push or start was, so the trace always nests, and
 * a range the store holds no end of yet (still open at the cut) is left out.
 * The same records make the live view and a capture, so the same analysis of them gives
 * the same figures. Single-threaded: the caller (the live server thread) owns it. */
#ifndef TP_LIVE_STORE_H
#define TP_LIVE_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "tp_record.h"
#include "tp_status.h"

typedef struct tp_live_store tp_live_store;

typedef struct {
    uint64_t start, end; /* trace clock */
} tp_live_step;

typedef struct {
    size_t budget;        /* data bytes kept; 0 = 32 MiB */
    const char *step;     /* the step range's name; NULL or "": "step" and "ProfilerStep#N" */
    const char *domain;   /* its NVTX domain's name; NULL or "": any domain */
    const char *producer; /* written into the header of every trace it writes */
    /* NULL, or called with the time of every step start and end as the store finds them
     * (the live aggregator's segment edges: one step detection for both). */
    void (*edge)(void *ctx, uint64_t ts);
    void *edge_ctx;
} tp_live_store_opts;

typedef struct {
    uint64_t records;   /* data records kept now */
    uint64_t bytes;     /* their bytes */
    uint64_t evicted;   /* data records pushed out by the budget so far */
    uint64_t lost_upto; /* latest start among evicted records (0: none): windows from here on
                           are complete */
    uint64_t steps;     /* steps completed so far */
    uint64_t last_ts;   /* latest start seen in a data record */
} tp_live_store_stats;

/* Opens an empty store. TP_ERR_NOMEM. */
tp_status tp_live_store_open(const tp_live_store_opts *o, tp_live_store **out);

/* Frees everything; NULL is a no-op. */
void tp_live_store_close(tp_live_store *s);

/* Takes one record (copied), metadata or data, in file order. Never fails: a record that
 * cannot be kept (no memory) is counted as evicted. */
void tp_live_store_add(tp_live_store *s, const tp_rec_hdr *r);

void tp_live_store_get_stats(const tp_live_store *s, tp_live_store_stats *out);

/* The last `n` completed steps, oldest first, into out (at most n). Returns how many. */
size_t tp_live_store_last_steps(const tp_live_store *s, size_t n, tp_live_step *out);

/* The window of `n` steps starting with the first step that starts at or after `after`:
 * returns 1 with [*t0, *t1] once all n have completed, else 0. */
int tp_live_store_steps_after(const tp_live_store *s, uint64_t after, size_t n, uint64_t *t0,
                              uint64_t *t1);

/* Writes the trace of [t0, t1] into `fd` (an empty file the writer owns from here on, as
 * tp_writer_open_fd takes it), and returns the data records written in *records. TP_ERR_EMPTY
 * when part of the window was already evicted (nothing useful written). */
tp_status tp_live_store_write(tp_live_store *s, uint64_t t0, uint64_t t1, int fd,
                              uint64_t *records);

#endif
