/* tp_an_temporal: where a rank's GPU time goes, between its first and last GPU event.
 *
 * span = end of the last merged GPU interval - start of the first; idle = span - union of
 * all GPU events; compute = union of COMPUTATION kernels; non_compute = span - compute -
 * idle (copies, memsets, communication, syncs). All in ns of the view's clock. */
#ifndef TP_AN_TEMPORAL_H
#define TP_AN_TEMPORAL_H

#include "tp_an_ivset.h"
#include "tp_an_view.h"

typedef struct {
    int has_gpu; /* 0: the rank has no GPU event; everything else is 0 */
    int64_t first_ts, last_end;
    int64_t span, busy, idle, compute, non_compute;
} tp_an_temporal;

/* Runs the analysis over view `v` and fills `out` (overwritten; plain values, nothing to
 * free). */
void tp_an_temporal_run(const tp_an_view *v, tp_an_temporal *out);

/* Union length of the view's GPU rows whose ktype bit is set in `kt_mask` (1 << tp_ktype);
 * writes the merged first start / last end when non-NULL. Returns 0 for no rows. Found
 * once per view and mask (tp_an_view_gpu_sum_get). */
int64_t tp_an_gpu_union(const tp_an_view *v, unsigned kt_mask, int64_t *first, int64_t *last);

/* The runs of those rows, merged by HTA's rule (tp_an_ivset_merge_hta) into `out`
 * (overwritten). */
void tp_an_gpu_merge(const tp_an_view *v, unsigned kt_mask, tp_an_ivset *out);

/* The same runs handed to fn(ctx, start, end) in order, without building the set (a caller
 * that only sums or copies them touches no memory of one entry per run). */
typedef void (*tp_an_run_fn)(void *ctx, int64_t a, int64_t b);
void tp_an_gpu_runs(const tp_an_view *v, unsigned kt_mask, tp_an_run_fn fn, void *ctx);

/* tp_an_gpu_runs, and the union's figures kept in the view for tp_an_gpu_union. */
void tp_an_gpu_runs_kept(const tp_an_view *v, unsigned kt_mask, tp_an_run_fn fn, void *ctx);

#endif
