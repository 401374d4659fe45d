/* tp_an_nvtx: NVTX ranges / user annotations (record_function) and the GPU work under them.
 *
 * Per range name and NVTX domain (ranges of one name in two domains are two rows): count,
 * total, mean, min and max CPU-side duration. GPU time: each GPU op
 * (kernel, copy, memset) is linked to its launching CPU call by correlation, and from that
 * call to the innermost enclosing annotation on its thread (the model's parent chain); the
 * op's duration and count go to that annotation's name. Ops launched outside any range are
 * counted in unattributed_*. */
#ifndef TP_AN_NVTX_H
#define TP_AN_NVTX_H

#include "tp_an_view.h"

typedef struct {
    uint32_t name;   /* string pool id */
    uint32_t domain; /* string pool id of the NVTX domain's name; 0: the default domain */
    int shared_name; /* 1: another row has this name in another domain */
    size_t count;
    int64_t total, min, max; /* ns, CPU-side range durations */
    double mean;
    size_t n_gpu_ops;
    int64_t gpu_ns; /* sum of durations of GPU ops launched inside (innermost range) */
} tp_an_range;

typedef struct {
    size_t n;
    tp_an_range *r; /* by total, descending */
    size_t unattributed_ops;
    int64_t unattributed_ns;
} tp_an_nvtx;

/* How front ends name range `r`: "[domain] name" when its name is shared with a range of
 * another domain and its own is not the default one (so the rows read apart), else its name (a
 * program that keeps all its ranges in one domain reads as before), into buf (n bytes; truncated).
 * Returns buf. */
const char *tp_an_range_label(const tp_model *m, const tp_an_range *r, char *buf, size_t n);

/* Runs the analysis over view `v` and fills `out` (overwritten; it owns its arrays until
 * tp_an_nvtx_free). Aborts on out of memory, like the rest of the analyzer. */
void tp_an_nvtx_run(const tp_an_view *v, tp_an_nvtx *out);
/* Frees what `out` owns and zeroes it; NULL is a no-op. */
void tp_an_nvtx_free(tp_an_nvtx *out);

#endif
