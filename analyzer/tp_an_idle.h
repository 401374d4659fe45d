/* tp_an_idle: why each GPU stream sat idle between consecutive operations.
 *
 * Per stream, operations (kernels, copies, memsets) are taken in start order; the gap
 * before each one (start - previous end; the first has none) is
 *   host_wait   when the CPU call that launched it started after the previous op ended
 *               (the GPU waited for the host to submit work),
 *   kernel_wait else when the gap is shorter than opts.kernel_wait_ns (30 µs: launch
 *               overhead between back-to-back kernels),
 *   other       otherwise (e.g. waiting on another stream or an event).
 * Sums per stream may exceed the rank's idle time: streams idle concurrently. */
#ifndef TP_AN_IDLE_H
#define TP_AN_IDLE_H

#include "tp_an_stats.h"
#include "tp_an_view.h"

typedef enum {
    TP_IDLE_HOST_WAIT = 0,
    TP_IDLE_KERNEL_WAIT = 1,
    TP_IDLE_OTHER = 2,
    TP_IDLE_COUNT
} tp_idle_cat;

/* "host_wait", "kernel_wait", "other" */
const char *tp_idle_cat_name(tp_idle_cat c);

typedef struct {
    int64_t stream;
    size_t n_ops;
    int64_t idle[TP_IDLE_COUNT];          /* ns */
    tp_an_describe_t gaps[TP_IDLE_COUNT]; /* gap statistics, ns */
} tp_an_idle_stream;

typedef struct {
    size_t n;
    tp_an_idle_stream *s; /* by stream id */
} tp_an_idle;

/* Runs the analysis over view `v` and fills `out` (overwritten; it owns its arrays until
 * tp_an_idle_free). Aborts on out of memory, like the rest of the analyzer. */
void tp_an_idle_run(const tp_an_view *v, tp_an_idle *out);
/* Frees what `out` owns and zeroes it; NULL is a no-op. */
void tp_an_idle_free(tp_an_idle *out);

/* Sum of one stream's idle time over the categories. */
int64_t tp_an_idle_total(const tp_an_idle_stream *s);

#endif
