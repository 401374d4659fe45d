/* tp_diag_copies: the copy rules, pageable-h2d, sync-h2d and copy-not-overlapped.
 *
 * Host-to-device copies in the window are grouped by what they cost: from pageable memory
 * (the driver stages them through a pinned buffer, synchronously), and from non-pageable
 * memory but issued synchronously (native: no TP_EVF_ASYNC; Kineto: the runtime call's name
 * has no "Async"). A group's severity is the larger of its device copy time and the host
 * time blocked in its calls, in the window; pageable copies are compared with the pinned
 * ones of the same trace. copy-not-overlapped is the copy time while no kernel ran on any
 * stream. Sources: the range of the copy calls, and the stack of the longest call. */
#include <math.h>
#include <string.h>

#include "tp_an_stats.h"
#include "tp_diag_ctx.h"
#include "tp_diag_rules.h"
#include "tp_diag_source.h"
#include "tp_diag_stack.h"
#include "tp_record.h"
#include "tp_units.h"

typedef struct {
    size_t n;
    int64_t bytes, dev_ns;
    tp_an_ivset dev, host; /* device copy time, host time in the calls */
    tp_diag_blame bl;
    long worst; /* CPU call with the longest host time */
    uint32_t api_name;
} copy_group;

enum { PAGEABLE, PINNED, SYNC_H2D, N_GROUPS };

static void group_add(tp_diag_ctx *d, copy_group *g, size_t i, const tp_ev_copy *c, long call) {
    g->n++;
    g->bytes = tp_an_add(g->bytes, c->bytes > 0 ? c->bytes : 0);
    g->dev_ns = tp_an_add(g->dev_ns, tp_diag_vdur(d->v, i));
    tp_an_ivset_add(&g->dev, tp_an_view_ts(d->v, i), tp_diag_vend(d->v, i));
    if (call < 0)
        return;
    tp_an_ivset_add(&g->host, d->ev->ts[call], d->ev->ts[call] + tp_ev_dur(d->ev, call));
    tp_diag_blame_add(d, &g->bl, tp_diag_enclosing(d, call), tp_ev_dur(d->ev, call));
    if (g->worst < 0 || tp_ev_dur(d->ev, call) > tp_ev_dur(d->ev, g->worst))
        g->worst = call, g->api_name = d->ev->name[call];
}

static int copy_is_async(const tp_diag_ctx *d, size_t row, long call) {
    if (d->ev->flags[row] & TP_EVF_ASYNC)
        return 1;
    if (d->r->native)
        return 0;
    return call < 0 || strstr(tp_model_str(d->v->m, d->ev->name[call]), "Async") != NULL;
}

/* View row i (model row `row`) into the groups when it is an H2D copy in the window. c: the
 * row's entry in the model's copy table when the caller has it, else NULL (found here, for
 * a GPU copy row only): its facts are read there, not searched for once each. */
static void h2d_row(tp_diag_ctx *d, copy_group g[N_GROUPS], size_t i, size_t row,
                    const tp_ev_copy *c) {
    if (!tp_an_view_gpu(d->v, i) || d->ev->cat[row] != TP_CAT_MEMCPY)
        return;
    if (!c)
        c = tp_ev_copy_of(d->ev, row);
    if (!c || c->copy_kind != TP_COPY_HTOD || tp_an_view_ts(d->v, i) >= d->w1 ||
        tp_diag_vend(d->v, i) <= d->w0)
        return;
    long call = tp_diag_cpu_call(d, row);
    if (c->src_kind == TP_MEM_PAGEABLE)
        group_add(d, &g[PAGEABLE], i, c, call);
    else if (c->src_kind == TP_MEM_PINNED)
        group_add(d, &g[PINNED], i, c, call);
    if (c->src_kind != TP_MEM_PAGEABLE && !copy_is_async(d, row, call))
        group_add(d, &g[SYNC_H2D], i, c, call);
}

/* The H2D copies in the window into g[PAGEABLE], g[PINNED] and g[SYNC_H2D]. A copy has an
 * entry in the model's copy table (rows ascending): with the view the model's rows, that
 * table is the pass, in the same order, instead of every row. */
static void collect_h2d(tp_diag_ctx *d, copy_group g[N_GROUPS]) {
    memset(g, 0, N_GROUPS * sizeof *g);
    for (int k = 0; k < N_GROUPS; k++)
        g[k].worst = -1;
    if (d->identity) {
        for (size_t k = 0; k < d->ev->n_copies; k++)
            h2d_row(d, g, d->ev->copies[k].row, d->ev->copies[k].row, &d->ev->copies[k]);
        return;
    }
    /* TP_DIAG_FOR_ROWS with h2d_row's row tests first: a model row's copies in the view are
     * all GPU rows or none, so only its seen mark is skipped for a row h2d_row would leave
     * (a call and the mark per row of a --compat hta view: 14.5 M instructions on xdit, of
     * whose 200 k rows 23 are copies) */
    const tp_an_view *v = d->v;
    tp_diag_clear_seen(d);
    for (size_t i = 0; i < v->n; i++) {
        size_t row = tp_an_view_row(v, i);
        if (!tp_an_view_gpu(v, i) || d->ev->cat[row] != TP_CAT_MEMCPY)
            continue;
        if (!d->rows_once) {
            if (d->seen[row])
                continue;
            d->seen[row] = 1;
        }
        h2d_row(d, g, i, row, NULL);
    }
}

static void free_groups(copy_group g[N_GROUPS]) {
    for (int k = 0; k < N_GROUPS; k++) {
        tp_an_ivset_free(&g[k].dev), tp_an_ivset_free(&g[k].host);
        tp_diag_blame_free(&g[k].bl);
    }
}

/* Time the group explains: device copy time or host time blocked in its calls (the larger),
 * inside the window. */
static int64_t group_cost(tp_diag_ctx *d, copy_group *g) {
    tp_an_ivset_norm(&g->dev, d->w0, d->w1);
    tp_an_ivset_norm(&g->host, d->w0, d->w1);
    int64_t a = tp_an_ivset_len(&g->dev), b = tp_an_ivset_len(&g->host);
    return a > b ? a : b;
}

/* Source, stack, evidence op (the slowest call) and the metrics both H2D findings have. */
static void group_source(tp_diag_ctx *d, copy_group *g, tp_finding *f) {
    tp_diag_blame_source(d, &g->bl, tp_diag_blame_sum(&g->bl), "of it", &f->source);
    if (g->worst >= 0)
        tp_diag_stack_append(d, tp_ev_stack(d->ev, g->worst), f);
    f->op_row = g->worst;
    tp_diag_put_metric(f, "copies", (double)g->n);
    tp_diag_put_metric(f, "bytes", (double)g->bytes);
}

void tp_diag_pageable_h2d(tp_diag_ctx *d, const tp_diag_rule *self) {
    if (d->win <= 0)
        return;
    copy_group g[N_GROUPS];
    collect_h2d(d, g);
    copy_group *pg = &g[PAGEABLE], *pin = &g[PINNED];
    double sev = tp_diag_share(group_cost(d, pg), d->win);
    if (!pg->n || sev < TP_DIAG_MIN_SEVERITY) {
        free_groups(g);
        return;
    }
    tp_finding *f = tp_diag_add(d, self, sev);
    char b1[32], b2[32], b3[32], b4[32];
    int64_t host = tp_an_ivset_len(&pg->host);
    double gbps = pg->dev_ns ? (double)pg->bytes / (double)pg->dev_ns : NAN;
    double pin_gbps = pin->dev_ns && pin->bytes ? (double)pin->bytes / (double)pin->dev_ns : NAN;
    tp_diag_cat(&f->title,
                "pageable-h2d: host-to-device copies from pageable memory stall the step");
    tp_diag_cat(&f->evidence,
                "%zu H2D copies from pageable memory (%s), device copy time %s at %.2f GB/s; the "
                "host was blocked %s (%.1f%% %s) in the copy calls",
                pg->n, tp_units_bytes(b1, 32, (double)pg->bytes),
                tp_units_dur(b2, 32, (double)pg->dev_ns), gbps, tp_units_dur(b3, 32, (double)host),
                100 * tp_diag_share(host, d->win), tp_diag_window_words(d));
    if (pg->api_name)
        tp_diag_cat(&f->evidence, " (%s)", tp_model_str(d->v->m, pg->api_name));
    if (!isnan(pin_gbps) && pin_gbps > gbps)
        tp_diag_cat(&f->evidence,
                    "; pinned H2D copies in this trace reach %.2f GB/s: the same bytes would take "
                    "%s on the device",
                    pin_gbps, tp_units_dur(b4, 32, (double)pg->bytes / pin_gbps));
    tp_diag_cat(&f->advice,
                "page-lock the host buffers (DataLoader(pin_memory=True), cudaHostAlloc / "
                "cudaHostRegister) and copy with non_blocking=True so the copy is asynchronous "
                "and can overlap compute");
    group_source(d, pg, f);
    tp_diag_put_metric(f, "device_ns", (double)pg->dev_ns);
    tp_diag_put_metric(f, "host_blocked_ns", (double)host);
    tp_diag_put_metric(f, "gbps", gbps);
    tp_diag_put_metric(f, "pinned_gbps", pin_gbps);
    tp_diag_put_metric(f, "window_ns", (double)d->win);
    free_groups(g);
}

void tp_diag_sync_h2d(tp_diag_ctx *d, const tp_diag_rule *self) {
    if (d->win <= 0)
        return;
    copy_group g[N_GROUPS];
    collect_h2d(d, g);
    copy_group *sg = &g[SYNC_H2D];
    double sev = tp_diag_share(group_cost(d, sg), d->win);
    if (!sg->n || sev < TP_DIAG_MIN_SEVERITY) {
        free_groups(g);
        return;
    }
    tp_finding *f = tp_diag_add(d, self, sev);
    char b1[32], b2[32];
    int64_t host = tp_an_ivset_len(&sg->host);
    tp_diag_cat(&f->title, "sync-h2d: synchronous host-to-device copies block the host");
    tp_diag_cat(&f->evidence,
                "%zu synchronous H2D copies (%s) from non-pageable memory; the host was blocked "
                "%s (%.1f%% %s) in %s",
                sg->n, tp_units_bytes(b1, 32, (double)sg->bytes),
                tp_units_dur(b2, 32, (double)host), 100 * tp_diag_share(host, d->win),
                tp_diag_window_words(d),
                sg->api_name ? tp_model_str(d->v->m, sg->api_name) : "the copy calls");
    tp_diag_cat(&f->advice,
                "use cudaMemcpyAsync / tensor.to(device, non_blocking=True) from pinned memory "
                "on a side stream, and synchronize with events only where the data is needed");
    group_source(d, sg, f);
    tp_diag_put_metric(f, "host_blocked_ns", (double)host);
    tp_diag_put_metric(f, "window_ns", (double)d->win);
    free_groups(g);
}

void tp_diag_copy_not_overlapped(tp_diag_ctx *d, const tp_diag_rule *self) {
    if (d->win <= 0)
        return;
    tp_an_ivset alone = {0};
    tp_an_ivset_minus(&d->copies, &d->kernels, &alone);
    int64_t total = tp_an_ivset_len(&d->copies), solo = tp_an_ivset_len(&alone);
    double sev = tp_diag_share(solo, d->win);
    tp_an_ivset_free(&alone);
    if (sev < TP_DIAG_MIN_SEVERITY)
        return;
    tp_diag_blame bl = {0};
    tp_diag_clear_seen(d);
    TP_DIAG_FOR_ROWS(d, i, row) {
        if (!tp_an_view_gpu(d->v, i) || d->ev->cat[row] != TP_CAT_MEMCPY ||
            tp_an_view_ts(d->v, i) >= d->w1 || tp_diag_vend(d->v, i) <= d->w0)
            continue;
        long c = tp_diag_cpu_call(d, row);
        if (c >= 0)
            tp_diag_blame_add(d, &bl, tp_diag_enclosing(d, c), tp_diag_vdur(d->v, i));
    }
    tp_finding *f = tp_diag_add(d, self, sev);
    char b1[32], b2[32];
    tp_diag_cat(&f->title, "copy-not-overlapped: copies run while no kernel runs on any stream");
    tp_diag_cat(&f->evidence,
                "copies occupy %s (%.1f%% %s); during %s of it (%.1f%% of the copy time) no "
                "kernel ran on any stream",
                tp_units_dur(b1, 32, (double)total), 100 * tp_diag_share(total, d->win),
                tp_diag_window_words(d), tp_units_dur(b2, 32, (double)solo),
                100 * tp_diag_share(solo, total));
    tp_diag_cat(&f->advice, "prefetch the next batch: issue its copy on a separate stream from "
                            "pinned memory (non_blocking=True) while the current step computes");
    tp_diag_blame_source(d, &bl, tp_diag_blame_sum(&bl), "of it", &f->source);
    tp_diag_put_metric(f, "copy_ns", (double)total);
    tp_diag_put_metric(f, "not_overlapped_ns", (double)solo);
    tp_diag_put_metric(f, "window_ns", (double)d->win);
    tp_diag_blame_free(&bl);
}
