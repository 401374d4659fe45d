/* tp_an_queue: how many launched-but-unfinished GPU operations each stream had queued.
 *
 * The queue length of a stream steps +1 when a CPU call launches an operation onto it and
 * -1 when that operation starts on the GPU (HTA's definition); the summary describes the
 * value after every step. Steps at equal times come, natively, launch steps first, then in
 * view order (stable and documented: the order HTA's unstable pandas sort leaves ties in is
 * an artifact of its input order, not a property of the trace); --compat hta keeps numpy's
 * quicksort order, as HTA. Launch calls are HTA's list (cudaLaunchKernel, cuLaunchKernel,
 * cudaMemcpyAsync, hipLaunchKernel, ...; native: rows flagged TP_EVF_LAUNCH).
 *
 * Blocked on a full queue (trainprof's definition, docs/analyzer.md): a launch call is
 * "blocked" when it brought the stream's queue to its maximum length (>= 2) and took more
 * than 4x the median launch-call duration of the rank: the launch had to wait for room in
 * the queue. Blocked time is what such calls took beyond that median. at_max_ns is the time
 * the queue spent at its maximum. */
#ifndef TP_AN_QUEUE_H
#define TP_AN_QUEUE_H

#include "tp_an_stats.h"
#include "tp_an_view.h"

typedef struct {
    int64_t stream;
    tp_an_describe_t len; /* queue length after every step */
    int64_t max_len;
    int64_t at_max_ns;  /* time spent at max_len (until the next step) */
    size_t n_blocked;   /* launch calls blocked on the full queue */
    int64_t blocked_ns; /* their duration beyond the median launch duration */
} tp_an_queue_stream;

typedef struct {
    size_t n;
    tp_an_queue_stream *s; /* by stream id */
    double median_launch_ns;
} tp_an_queue;

/* Runs the analysis over view `v` and fills `out` (overwritten; it owns its arrays until
 * tp_an_queue_free). Aborts on out of memory, like the rest of the analyzer. */
void tp_an_queue_run(const tp_an_view *v, tp_an_queue *out);
/* The same, where runs of `wide_from` steps or more take the path of traces with 2^32 steps
 * or more (tp_an_queue_run's wide_from: UINT32_MAX): for tests, which cover that path with a
 * low wide_from (the same results) instead of 2^32 steps. Only --compat hta orders the
 * steps in an array (of 4-byte indices below 2^32 steps); native ignores wide_from. */
void tp_an_queue_run_wide_from(const tp_an_view *v, tp_an_queue *out, size_t wide_from);
/* Frees what `out` owns and zeroes it; NULL is a no-op. */
void tp_an_queue_free(tp_an_queue *out);

#endif
