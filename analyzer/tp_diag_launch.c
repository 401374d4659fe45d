/* tp_diag_launch: the host-side rules, launch-bound and low-utilization.
 *
 * Both explain the idle that neither a sync nor a data-loading range explains. Launch-bound
 * owns it when kernels are tiny (median under 10 us) and the device finishes them faster
 * than the host issues them: the median kernel is shorter than the host time per launch
 * (the window less the time in syncs and data loading, over the training threads' launch
 * calls), which is itself at most opts.launch_delay_cutoff_ns (over that it is not launch
 * overhead but other host work). Severity: short-gap plus other-host idle. Otherwise
 * low-utilization reports the other-host idle when the device is busy under 60 % and that
 * idle is at least 10 % of the window; its source is the range open on the main training
 * thread in the middle of each such idle interval. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_an_stats.h"
#include "tp_diag_ctx.h"
#include "tp_an_env.h"
#include "tp_diag_rules.h"
#include "tp_diag_samples.h"
#include "tp_diag_source.h"
#include "tp_units.h"

/* What launch-bound judges. */
typedef struct {
    size_t nk, n_short, nl;   /* kernels in the window, shorter than their call, launch calls */
    double median_ns, gap_ns; /* median kernel, host time per launch */
    int64_t cost;             /* short-gap + other-host idle */
    double sev;
} launch_stats;

/* One GPU row (view row i, model row `row`) for launch_bound: a kernel that starts in the
 * window counts, with its duration in gd[] and its range [*lo, *hi]. */
__attribute__((always_inline)) static inline void kernel_in_window(tp_diag_ctx *d, launch_stats *st,
                                                                   tp_diag_blame *bl, int64_t *gd,
                                                                   int64_t *lo, int64_t *hi,
                                                                   size_t i, size_t row) {
    if (d->ev->cat[row] != TP_CAT_KERNEL || tp_an_view_ts(d->v, i) < d->w0 ||
        tp_an_view_ts(d->v, i) >= d->w1)
        return;
    int64_t dur = tp_diag_vdur(d->v, i);
    double k = (double)dur;
    gd[st->nk++] = dur;
    *lo = dur < *lo ? dur : *lo;
    *hi = dur > *hi ? dur : *hi;
    long c = tp_diag_cpu_call(d, row);
    if (c < 0)
        return;
    if (bl)
        tp_diag_blame_add(d, bl, tp_diag_enclosing(d, c), 1);
    st->n_short +=
        tp_ev_dur(d->ev, c) <= d->v->opts.runtime_cutoff_ns && k < (double)tp_ev_dur(d->ev, c);
}

/* kernel_in_window over the GPU rows by start (d->gpu_by_time), with what it reads and sums in
 * locals: through d, st and bl, each store of a duration or a blame (int64, size_t) could
 * change a field the next row reads, so the compiler read them all again per kernel. A
 * blame's count grows by one per kernel (tp_an_add of 1 below INT64_MAX: a plain add). */
static void kernels_by_time(tp_diag_ctx *d, launch_stats *st, tp_diag_blame *bl, int64_t *gd,
                            int64_t *plo, int64_t *phi) {
    const tp_an_view lv = *d->v, *v = &lv; /* a local copy: its pointers stay in registers */
    const tp_events *ev = d->ev;
    const uint32_t *go = v->gpu_order, *name = ev->name;
    const uint8_t *cat = ev->cat;
    const int64_t w0 = d->w0, w1 = d->w1, cutoff = v->opts.runtime_cutoff_ns;
    uint32_t *slot = bl ? bl->slot : NULL;
    int64_t *bns = bl ? bl->ns : NULL, lo = *plo, hi = *phi;
    size_t nk = 0, n_short = 0;
    for (size_t k = 0, n = v->n_gpu; k < n; k++) {
        size_t i = go[k], row = tp_an_view_row(v, i);
        int64_t a = tp_an_view_ts(v, i);
        if (cat[row] != TP_CAT_KERNEL || a < w0 || a >= w1)
            continue;
        int64_t dur = tp_diag_vdur(v, i);
        gd[nk++] = dur;
        lo = dur < lo ? dur : lo;
        hi = dur > hi ? dur : hi;
        long c = tp_diag_cpu_call(d, row);
        if (c < 0)
            continue;
        long p = bl ? tp_diag_enclosing(d, c) : -1;
        if (p >= 0) {
            uint32_t at = slot ? slot[name[p]] : 0;
            if (at) {
                bns[at - 1]++;
            } else {
                tp_diag_blame_new(d, bl, p, 1);
                slot = bl->slot, bns = bl->ns;
            }
        }
        int64_t cd = tp_ev_dur(ev, c);
        n_short += cd <= cutoff && (double)dur < (double)cd;
    }
    st->nk = nk, st->n_short = n_short;
    *plo = lo, *phi = hi;
}

/* Fills `st` (and `bl`, when not NULL: one per kernel, by the range of its launch call);
 * returns 1 when launch-bound fires, and keeps that verdict in d->launch_verdict. */
static int launch_bound(tp_diag_ctx *d, launch_stats *st, tp_diag_blame *bl) {
    /* the durations as integers: their median through the integer selection (the same value
     * as over the doubles, without a conversion per value in its passes) */
    int64_t *gd = tp_an_tmp(d->v, d->v->n_gpu + 1, sizeof *gd); /* pages another gave back */
    memset(st, 0, sizeof *st);
    int64_t lo = INT64_MAX, hi = INT64_MIN; /* the durations' range, for their median */
    if (d->gpu_by_time) { /* the GPU rows alone, in the order the rows' pass visits them */
        kernels_by_time(d, st, bl, gd, &lo, &hi);
    } else {
        tp_diag_clear_seen(d);
        TP_DIAG_FOR_ROWS(d, i, row) {
            if (tp_an_view_gpu(d->v, i))
                kernel_in_window(d, st, bl, gd, &lo, &hi, i, row);
        }
    }
    tp_an_ivset sync_only = {0};
    tp_an_ivset_minus(&d->sync, &d->data, &sync_only);
    int64_t host_free = d->win - tp_an_ivset_len(&sync_only) - tp_an_ivset_len(&d->data);
    tp_an_ivset_free(&sync_only);
    st->nl = d->n_launch_win; /* counted with the context's sets */
    st->median_ns = st->nk ? tp_an_percentile_i64_in(gd, st->nk, 50, lo, hi) : NAN; /* median */
    st->gap_ns = st->nl ? (double)host_free / (double)st->nl : NAN;
    tp_an_tmp_put(d->v, gd);
    st->cost = d->split.shortg + d->split.other;
    st->sev = tp_diag_share(st->cost, d->win);
    d->launch_verdict =
        d->win > 0 && st->nk && st->median_ns < 10000.0 && st->median_ns < st->gap_ns &&
        st->gap_ns <= (double)d->v->opts.launch_delay_cutoff_ns && st->sev >= TP_DIAG_MIN_SEVERITY;
    return d->launch_verdict;
}

/* Whether launch-bound fires, judged once per rank whichever rule asks first. */
static int launch_bound_fires(tp_diag_ctx *d) {
    launch_stats st;
    return d->launch_verdict >= 0 ? d->launch_verdict : launch_bound(d, &st, NULL);
}

void tp_diag_launch_bound(tp_diag_ctx *d, const tp_diag_rule *self) {
    launch_stats st;
    tp_diag_blame bl = {0};
    if (d->win <= 0 || !launch_bound(d, &st, &bl)) {
        tp_diag_blame_free(&bl);
        return;
    }
    tp_finding *f = tp_diag_add(d, self, st.sev);
    char b1[32], b2[32];
    tp_diag_cat(&f->title,
                "launch-bound: many tiny kernels; the device waits on per-launch host overhead");
    char per[48] = "";
    if (d->out->n_steps)
        snprintf(per, sizeof per, " (%.0f per step)", (double)st.nk / (double)d->out->n_steps);
    tp_diag_cat(&f->evidence,
                "%zu kernels%s; median kernel %s while the host spends %s per launch (time "
                "outside syncs and data loading over %zu launches); %zu (%.0f%%) kernels are "
                "shorter than their launch call; the device is busy %.1f%% %s and idles %.1f%% "
                "between launches with the host neither syncing nor loading data",
                st.nk, per, tp_units_dur(b1, 32, st.median_ns), tp_units_dur(b2, 32, st.gap_ns),
                st.nl, st.n_short, 100 * tp_diag_share((int64_t)st.n_short, (int64_t)st.nk),
                100 - 100 * tp_diag_share(d->split.idle, d->win), tp_diag_window_words(d),
                100 * st.sev);
    if (tp_an_env_launch_blocking(d->v->m, d->r)) {
        tp_diag_cat(&f->evidence, "; %s", TP_DIAG_LAUNCH_BLOCKING_NOTE);
        tp_diag_cat(&f->advice, "%s; then: ", TP_DIAG_LAUNCH_BLOCKING_FIX);
        tp_diag_put_metric(f, "launch_blocking", 1);
    }
    tp_diag_cat(&f->advice,
                "fuse small kernels (torch.compile, fused/foreach optimizers), capture the step in "
                "a CUDA graph, use larger batches or fewer, wider layers; cut per-op Python "
                "overhead");
    tp_diag_blame_source(d, &bl, tp_diag_blame_sum(&bl), "of the launches", &f->source);
    tp_diag_put_metric(f, "kernels", (double)st.nk);
    tp_diag_put_metric(f, "short_kernels", (double)st.n_short);
    tp_diag_put_metric(f, "median_kernel_ns", st.median_ns);
    tp_diag_put_metric(f, "host_ns_per_launch", st.gap_ns);
    tp_diag_put_metric(f, "launch_idle_ns", (double)st.cost);
    tp_diag_put_metric(f, "window_ns", (double)d->win);
    tp_diag_blame_free(&bl);
}

void tp_diag_low_utilization(tp_diag_ctx *d, const tp_diag_rule *self) {
    const tp_diag_idle *s = &d->split;
    double util = 1.0 - tp_diag_share(s->idle, d->win), sev = tp_diag_share(s->other, d->win);
    if (d->win <= 0 || util >= 0.6 || sev < 0.10 || launch_bound_fires(d))
        return; /* launch-bound owns the unexplained idle when it fires */
    tp_diag_blame bl = {0};
    for (size_t i = 0; i < s->other_set.n; i++) {
        int64_t mid = s->other_set.a[i] + (s->other_set.b[i] - s->other_set.a[i]) / 2;
        tp_diag_blame_add(d, &bl, tp_diag_range_at(d, mid), s->other_set.b[i] - s->other_set.a[i]);
    }
    tp_finding *f = tp_diag_add(d, self, sev);
    tp_diag_cat(&f->title,
                "low-utilization: the device is busy only %.0f%% %s, waiting on host work",
                100 * util, tp_diag_window_words(d));
    tp_diag_cat(&f->evidence,
                "device idle %.1f%% %s: %.1f%% of it while the host was blocked in sync calls, "
                "%.1f%% in data-loading ranges, %.1f%% in gaps under %lld \u00b5s between ops, "
                "%.1f%% while the host did other work (CPU busy between launches)",
                100 * tp_diag_share(s->idle, d->win), tp_diag_window_words(d),
                100 * tp_diag_share(s->sync, s->idle), 100 * tp_diag_share(s->data, s->idle),
                100 * tp_diag_share(s->shortg, s->idle),
                (long long)(d->v->opts.kernel_wait_ns / 1000),
                100 * tp_diag_share(s->other, s->idle));
    int64_t pid, tid;
    if (tp_diag_samples_main_thread(d, &pid, &tid))
        tp_diag_samples_in(d, f, pid, tid, s->other_set.a, s->other_set.b, s->other_set.n,
                           ". Sampled while the device idled on host work", "training thread");
    tp_diag_cat(&f->advice,
                "profile the host side of the step (CPU ops, Python) between launches; move work "
                "off the training thread, batch small operations, or capture the step with CUDA "
                "graphs / torch.compile");
    tp_diag_blame_source(d, &bl, s->other, "of it", &f->source);
    tp_diag_put_metric(f, "idle_ns", (double)s->idle);
    tp_diag_put_metric(f, "host_other_idle_ns", (double)s->other);
    tp_diag_put_metric(f, "window_ns", (double)d->win);
    tp_diag_blame_free(&bl);
}
