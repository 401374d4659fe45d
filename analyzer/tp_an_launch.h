/* tp_an_launch: how long launching GPU work took on the CPU and how long the work waited.
 *
 * Every (CPU launch call, GPU event) pair sharing a correlation id gives a CPU duration, a
 * GPU duration and a launch delay = max(0, GPU start - CPU call end). Native mode pairs the
 * model's launch rows (TP_EVF_LAUNCH); compat_hta pairs HTA's way: CPU rows (stream -1) and
 * GPU rows (stream != -1) whose correlation belongs to a cudaLaunchKernel,
 * cudaLaunchKernelExC, cudaMemcpyAsync or cudaMemsetAsync call. */
#ifndef TP_AN_LAUNCH_H
#define TP_AN_LAUNCH_H

#include "tp_an_stats.h"
#include "tp_an_view.h"

typedef struct {
    size_t count;
    double sum, mean, min, p50, p95, max; /* ns; NaN when count is 0 */
} tp_an_dist;

typedef struct {
    size_t n_pairs;
    tp_an_dist cpu, gpu, delay;
    size_t n_short_gpu;        /* cpu <= runtime cutoff and gpu < cpu: launch cost dominates */
    size_t n_runtime_outliers; /* cpu > runtime cutoff */
    size_t n_delay_outliers;   /* delay > launch delay cutoff */
} tp_an_launch;

/* Runs the analysis over view `v` and fills `out` (overwritten; plain values, nothing to
 * free). */
void tp_an_launch_run(const tp_an_view *v, tp_an_launch *out);

/* Distribution of n values (v is sorted in place). */
void tp_an_dist_of(double *v, size_t n, tp_an_dist *d);

#endif
