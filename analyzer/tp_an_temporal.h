/* tp_an_temporal: where a rank's GPU time goes, between its first and last GPU event.
 *
 * span = end of the last merged GPU interval - start of the first; idle = span - union of
 * all GPU events; compute = union of COMPUTATION kernels; non_compute = span - compute -
 * idle (copies, memsets, communication, syncs). All in ns of the view's clock. */
#ifndef TP_AN_TEMPORAL_H
#define TP_AN_TEMPORAL_H

#include "tp_an_ivset.h"
#include "tp_an_stats.h"
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

/* The same runs one at a time, for a caller that merges the runs of several masks as they
 * come (the kernels' type breakdown: no array of their edges). Only for a view with
 * gpu_order (tp_an_run_cursor_open returns 0 without it: use tp_an_gpu_runs). */
typedef struct {
    const tp_an_view *v;
    unsigned kt_mask;
    size_t k; /* the next entry of v->gpu_order */
    int64_t ra, rb, cummax;
    int open;
    tp_an_gpu_sum u; /* the runs' figures so far */
} tp_an_run_cursor;

int tp_an_run_cursor_open(tp_an_run_cursor *c, const tp_an_view *v, unsigned kt_mask);

/* The next run into *a, *b (1), or 0 when there is none left: tp_an_gpu_runs' walk of
 * gpu_order, stopped at each run it hands over (inline, always: a launch-bound trace has about
 * a run per GPU row). */
static inline __attribute__((always_inline)) int tp_an_run_cursor_next(tp_an_run_cursor *c,
                                                                       int64_t *a, int64_t *b) {
    const tp_an_view *v = c->v;
    int done = 0;
    while (!done && c->k < v->n_gpu) {
        uint32_t i = v->gpu_order[c->k++];
        if (!(c->kt_mask & (1u << tp_an_view_ktype(v, i))))
            continue;
        int64_t x = tp_an_view_ts(v, i), y = tp_an_view_end(v, i);
        done = c->open && x > c->cummax;
        if (done)
            *a = c->ra, *b = c->rb;
        if (!c->open || done) {
            c->ra = x, c->rb = y;
        } else { /* (starts rise in gpu_order: the run's least start stays ra) */
            c->rb = y > c->rb ? y : c->rb;
        }
        c->cummax = !c->open || y > c->cummax ? y : c->cummax;
        c->open = 1;
    }
    if (!done) {
        if (!c->open)
            return 0;
        c->open = 0; /* the last run */
        *a = c->ra, *b = c->rb;
    }
    if (c->u.n++ == 0) /* the union's figures, as tp_an_gpu_union sums them */
        c->u.first = *a;
    c->u.last = *b;
    c->u.len = tp_an_add(c->u.len, *b - *a);
    return 1;
}

/* After the last run: its union's figures kept in the view, as tp_an_gpu_runs_kept keeps
 * them. */
void tp_an_run_cursor_keep(const tp_an_run_cursor *c);

#endif
