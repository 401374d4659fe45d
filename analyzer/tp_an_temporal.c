/* tp_an_temporal: GPU span, idle, compute and non-compute time of one rank (HTA's
 * get_temporal_breakdown, in ns). */
#include "tp_an_temporal.h"

#include <stdlib.h>
#include <string.h>

#include "tp_an_ivset.h"
#include "tp_an_stats.h"

/* The gpu_order walk of tp_an_gpu_runs. Inline, so that a caller passing its own callback
 * (the sums, the kernels' edges) gets it inlined too: a launch-bound trace has nearly a run
 * per GPU row, a call each. */
static inline void runs_in_order(const tp_an_view *v, unsigned kt_mask, tp_an_run_fn fn,
                                 void *ctx) {
    /* HTA's merge (tp_an_ivmerge_add) with only the open run kept: a run is final once
     * an interval starts after every end seen so far, so no set of runs is built (on 10 M
     * records that set was ~1 M runs, fresh pages for each of five unions) */
    int64_t ra = 0, rb = 0, cummax = 0;
    int open = 0;
    const tp_an_view lv = *v; /* fn's stores: the view's pointers in registers (tp_an_view.h) */
    for (size_t k = 0; k < lv.n_gpu; k++) {
        uint32_t i = lv.gpu_order[k];
        if (!(kt_mask & (1u << tp_an_view_ktype(&lv, i))))
            continue;
        int64_t a = tp_an_view_ts(&lv, i), b = tp_an_view_end(&lv, i);
        if (!open || a > cummax) {
            if (open)
                fn(ctx, ra, rb);
            ra = a, rb = b;
        } else { /* (gpu_order's starts rise: a > ra, HTA's min of the starts is ra) */
            rb = b > rb ? b : rb;
        }
        cummax = !open || b > cummax ? b : cummax;
        open = 1;
    }
    if (open)
        fn(ctx, ra, rb);
}

static int no_rows(const tp_an_view *v, unsigned kt_mask) {
    return !(kt_mask & ~v->gpu_kinds_absent & ((1u << TP_KT_COUNT) - 1));
}

void tp_an_gpu_runs(const tp_an_view *v, unsigned kt_mask, tp_an_run_fn fn, void *ctx) {
    if (no_rows(v, kt_mask))
        return;         /* no row of these kinds: no run (kernels asks for each kind) */
    if (v->gpu_order) { /* distinct starts: the subset's sorted order is gpu_order filtered */
        runs_in_order(v, kt_mask, fn, ctx);
        return;
    }
    int64_t *ts = tp_an_tmp(v, v->n_gpu, sizeof *ts), *end = tp_an_tmp(v, v->n_gpu, sizeof *end);
    size_t k = 0;
    for (size_t i = 0; i < v->n; i++) {
        if (!tp_an_view_gpu(v, i) || !(kt_mask & (1u << tp_an_view_ktype(v, i))))
            continue;
        ts[k] = tp_an_view_ts(v, i);
        end[k] = tp_an_view_end(v, i);
        k++;
    }
    tp_an_ivset m = {0};
    tp_an_ivset_merge_hta(ts, end, k, &m, v->scratch);
    tp_an_tmp_put(v, ts);
    tp_an_tmp_put(v, end);
    for (size_t j = 0; j < m.n; j++)
        fn(ctx, m.a[j], m.b[j]);
    tp_an_ivset_free(&m);
}

static void run_to_set(void *ctx, int64_t a, int64_t b) {
    tp_an_ivset_push(ctx, a, b);
}

void tp_an_gpu_merge(const tp_an_view *v, unsigned kt_mask, tp_an_ivset *out) {
    out->n = 0;
    tp_an_gpu_runs(v, kt_mask, run_to_set, out);
}

static void run_to_sum(void *ctx, int64_t a, int64_t b) {
    tp_an_gpu_sum *u = ctx;
    if (u->n++ == 0)
        u->first = a;
    u->last = b;
    u->len = tp_an_add(u->len, b - a); /* in run order, as tp_an_ivset_len sums */
}

typedef struct {
    tp_an_gpu_sum u;
    tp_an_run_fn fn;
    void *ctx;
} sum_and_pass;

static void run_sum_pass(void *ctx, int64_t a, int64_t b) {
    sum_and_pass *p = ctx;
    run_to_sum(&p->u, a, b);
    p->fn(p->ctx, a, b);
}

void tp_an_gpu_runs_kept(const tp_an_view *v, unsigned kt_mask, tp_an_run_fn fn, void *ctx) {
    sum_and_pass p = {{0}, fn, ctx};
    if (v->gpu_order && !no_rows(v, kt_mask))
        runs_in_order(v, kt_mask, run_sum_pass, &p); /* (run_sum_pass inline) */
    else
        tp_an_gpu_runs(v, kt_mask, run_sum_pass, &p);
    tp_an_view_gpu_sum_put(v, kt_mask, &p.u);
}

int tp_an_run_cursor_open(tp_an_run_cursor *c, const tp_an_view *v, unsigned kt_mask) {
    memset(c, 0, sizeof *c);
    c->v = v, c->kt_mask = kt_mask;
    if (no_rows(v, kt_mask))
        c->k = v->n_gpu; /* no run: nothing to walk */
    return v->gpu_order != NULL;
}

void tp_an_run_cursor_keep(const tp_an_run_cursor *c) {
    tp_an_view_gpu_sum_put(c->v, c->kt_mask, &c->u);
}

int64_t tp_an_gpu_union(const tp_an_view *v, unsigned kt_mask, int64_t *first, int64_t *last) {
    tp_an_gpu_sum u = {0};
    if (!tp_an_view_gpu_sum_get(v, kt_mask, &u)) {
        if (v->gpu_order && !no_rows(v, kt_mask))
            runs_in_order(v, kt_mask, run_to_sum, &u); /* (run_to_sum inline) */
        else
            tp_an_gpu_runs(v, kt_mask, run_to_sum, &u);
        tp_an_view_gpu_sum_put(v, kt_mask, &u);
    }
    if (first)
        *first = u.first;
    if (last)
        *last = u.last;
    return u.len;
}

/* One union's merge state in unions_in_order: runs_in_order's locals. */
typedef struct {
    int64_t ra, rb, cummax;
    int open;
    tp_an_gpu_sum u;
} union_walk;

static inline void union_step(union_walk *w, int64_t a, int64_t b) {
    if (!w->open || a > w->cummax) {
        if (w->open) { /* run_to_sum of a run after the first (whose start is u.first) */
            w->u.n++;
            w->u.last = w->rb;
            w->u.len = tp_an_add(w->u.len, w->rb - w->ra);
        } else {
            w->u.first = a;
        }
        w->ra = a, w->rb = b;
    } else { /* (starts rise in gpu_order: the run's least start stays ra) */
        w->rb = b > w->rb ? b : w->rb;
    }
    w->cummax = !w->open || b > w->cummax ? b : w->cummax;
    w->open = 1;
}

/* The unions of every GPU row (*all) and of the kinds in kt_mask (*some) in one walk of
 * gpu_order: each is runs_in_order's merge with run_to_sum, the same runs in the same order,
 * so the same figures; the walk's reads (order, start, end) are shared (a pass each before:
 * 8.9 M instructions each on lb2k). */
static void unions_in_order(const tp_an_view *v, unsigned kt_mask, tp_an_gpu_sum *all,
                            tp_an_gpu_sum *some) {
    union_walk wa = {0}, ws = {0};
    const tp_an_view lv = *v; /* the view's pointers in registers (tp_an_view.h) */
    for (size_t k = 0; k < lv.n_gpu; k++) {
        uint32_t i = lv.gpu_order[k];
        int64_t a = tp_an_view_ts(&lv, i), b = tp_an_view_end(&lv, i);
        union_step(&wa, a, b);
        if (kt_mask & (1u << tp_an_view_ktype(&lv, i)))
            union_step(&ws, a, b);
    }
    if (wa.open) /* (u.first set: n is 0 only for the first run, as run_to_sum tests) */
        wa.u.n++, wa.u.last = wa.rb, wa.u.len = tp_an_add(wa.u.len, wa.rb - wa.ra);
    if (ws.open)
        ws.u.n++, ws.u.last = ws.rb, ws.u.len = tp_an_add(ws.u.len, ws.rb - ws.ra);
    *all = wa.u, *some = ws.u;
}

void tp_an_temporal_run(const tp_an_view *v, tp_an_temporal *out) {
    memset(out, 0, sizeof *out);
    if (v->n_gpu == 0)
        return;
    out->has_gpu = 1;
    const unsigned comp = 1u << TP_KT_COMPUTATION;
    tp_an_gpu_sum all, some;
    if (v->gpu_order && !tp_an_view_gpu_sum_get(v, ~0u, &all) &&
        !tp_an_view_gpu_sum_get(v, comp, &some)) { /* both unions from one walk, kept */
        unions_in_order(v, comp, &all, &some);
        tp_an_view_gpu_sum_put(v, ~0u, &all);
        tp_an_view_gpu_sum_put(v, comp, &some);
    }
    out->busy = tp_an_gpu_union(v, ~0u, &out->first_ts, &out->last_end);
    out->span = out->last_end - out->first_ts;
    out->idle = out->span - out->busy;
    out->compute = tp_an_gpu_union(v, 1u << TP_KT_COMPUTATION, NULL, NULL);
    out->non_compute = out->span - out->compute - out->idle;
}
