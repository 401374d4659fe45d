/* tp_an_queue: queue length per stream (HTA's get_queue_length_summary) and time blocked on
 * a full launch queue. Two paths share q_step, the figures of one stream step by step:
 * --compat hta collects the steps, puts them in numpy's order and groups them by stream
 * (run_hta); native needs no order of steps (run_native). */
#include "tp_an_queue.h"

#include <assert.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "tp_an_namememo.h"
#include "tp_mem.h"
#include "tp_sort.h"

static int hta_queue_launch(const char *n) {
    static const char *const names[] = {"cudaLaunchKernel",
                                        "cudaLaunchKernelExC",
                                        "cuLaunchKernel",
                                        "cuLaunchKernelEx",
                                        "cudaMemcpyAsync",
                                        "cudaMemsetAsync",
                                        "runFunction - job_prep_and_submit_for_execution",
                                        "hipLaunchKernel",
                                        "hipExtModuleLaunchKernel",
                                        "hipMemsetAsync",
                                        "hipMemcpyAsync",
                                        "hipMemcpyWithStream"};
    for (size_t k = 0; k < sizeof names / sizeof *names; k++)
        if (strcmp(n, names[k]) == 0)
            return 1;
    return 0;
}

/* hl: hta_queue_launch per name id (its dozen string compares were asked twice per linked
 * row: 1.2 % of `report --compat hta`'s instructions on a trace of 105 k events). */
static int is_launch(const tp_an_view *v, tp_an_namememo *hl, size_t i) {
    if (!tp_an_view_linked(v, i))
        return 0;
    if (v->opts.compat_hta)
        return tp_an_namememo_get(hl, v->r->ev.name[tp_an_view_row(v, i)]);
    return !tp_an_view_gpu(v, i) && (v->r->ev.flags[tp_an_view_row(v, i)] & TP_EVF_LAUNCH);
}

/* A step of a queue: a launch call (+1) or a GPU row (-1). Its time and stream are read
 * through the view (8 bytes a step, not 32 with them copied: millions of steps on a long
 * trace, every one a fresh byte), its +1 or -1 from its place (step_delta: the launch steps
 * come first, 4 bytes a step less than a field of its own). */
typedef struct {
    uint32_t at; /* view row whose start is the step's time: the launch call, or the GPU row */
    uint32_t on; /* view row whose stream it is: the GPU row */
} tp_step;

typedef struct {
    tp_step *s;  /* the view's scratch, sized once to the count of steps */
    int64_t *ts; /* per step: its time (step_ts), written after the steps: the order's keys */
    uint32_t g0; /* the first step's stream index (stream_ids) */
    int multi;   /* some step is on another stream than g0 (else no index per step: launch-bound
                    training, 19 MB less on lb20k) */
    size_t n, cap;
    size_t n_launch; /* the launch steps: s[0..n_launch), then the GPU rows' */
} tp_steps;

/* A step; `g`: its stream's index. The index per step is written after the time order
 * (run_hta), not beside the times that order sorts (4 bytes a step less at its peak). */
static inline void add_step(tp_steps *st, const tp_an_view *v, size_t at, size_t on, uint32_t g) {
    if (st->n == 0)
        st->g0 = g;
    st->multi |= g != st->g0;
    st->s[st->n++] = (tp_step){(uint32_t)at, (uint32_t)on};
}

static int64_t step_ts(const tp_an_view *v, const tp_step *p) {
    return tp_an_view_ts(v, p->at);
}

static int64_t step_stream(const tp_an_view *v, const tp_step *p) {
    return tp_an_view_stream(v, p->on);
}

/* Step k's +1 (a launch step: s[0..n_launch)) or -1 (a GPU row's) */
static inline int32_t step_delta(const tp_steps *st, size_t k) {
    return k < st->n_launch ? 1 : -1;
}

/* The launch call of step k when it is a +1 step (0 for a -1 step, all alike) */
static uint32_t step_launch(const tp_steps *st, size_t k) {
    return k < st->n_launch ? st->s[k].at : 0;
}

static int gpu_row(const tp_an_view *v, size_t i) {
    return v->opts.compat_hta ? tp_an_view_stream(v, i) != -1 : tp_an_view_gpu(v, i);
}

/* The streams of the view's places, by id: ids[0..n) ascending and distinct, of_place[p]
 * the index of place p's stream (a rank has a few places: a step's stream group is one
 * look-up of its GPU row's place). */
typedef struct {
    int64_t *ids;
    uint32_t *of_place;
    size_t n;
} stream_ids;

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void stream_ids_open(const tp_an_view *v, stream_ids *si) {
    const tp_ev_places *pl = &v->r->ev.places;
    si->ids = tp_an_alloc(pl->n + 1, sizeof *si->ids);
    si->of_place = tp_an_alloc(pl->n + 1, sizeof *si->of_place);
    for (size_t p = 0; p < pl->n; p++)
        si->ids[p] = pl->v[p].stream;
    qsort(si->ids, pl->n, sizeof *si->ids, cmp_i64);
    si->n = 0;
    for (size_t p = 0; p < pl->n; p++)
        if (!si->n || si->ids[p] != si->ids[si->n - 1])
            si->ids[si->n++] = si->ids[p];
    for (size_t p = 0; p < pl->n; p++) {
        const int64_t *at = bsearch(&pl->v[p].stream, si->ids, si->n, sizeof *si->ids, cmp_i64);
        si->of_place[p] = (uint32_t)(at - si->ids);
    }
}

/* The stream index of view row i (a GPU row). */
static inline uint32_t row_group(const tp_an_view *v, const stream_ids *si, size_t i) {
    return si->of_place[tp_ev_place_index(&v->r->ev, tp_an_view_row(v, i))];
}

/* The GPU rows in view order (row[o]: the row of ordinal o) and their ordinals sorted by
 * (correlation, ordinal): key[k] of the k-th is its correlation's tp_sort_key_i64 less lo,
 * shifted left by sh with the ordinal in the low sh bits (12 bytes a row, sorted without a
 * column beside the keys: 8 bytes a row in the sort's copy, not 12); where the correlations'
 * span leaves no room for the ordinals, key[k] the key itself (sh 0, lo 0) and ord[k] the
 * ordinal (ord NULL otherwise). */
typedef struct {
    uint32_t *row, *ord;
    uint64_t *key;
    uint64_t lo, span; /* the least correlation key, and the greatest one less lo */
    unsigned sh;
    size_t n;
} corr_sorted;

static inline size_t corr_ord(const corr_sorted *c, size_t k) {
    return c->ord ? c->ord[k] : (size_t)(c->key[k] & ((UINT64_C(1) << c->sh) - 1));
}

/* key[0..n) (tp_sort_key_i64 of the correlations) packed as corr_sorted says, and sorted. */
static void corr_sorted_sort(const tp_an_view *v, corr_sorted *c) {
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t k = 0; k < c->n; k++) {
        lo = c->key[k] < lo ? c->key[k] : lo;
        hi = c->key[k] > hi ? c->key[k] : hi;
    }
    unsigned ib = 0; /* the ordinals' bits */
    while (ib < 32 && c->n && (uint64_t)(c->n - 1) >> ib)
        ib++;
    c->ord = NULL, c->lo = 0, c->sh = 0, c->span = UINT64_MAX;
    if (c->n && ((hi - lo) >> (63 - ib)) >> 1 == 0) {
        c->lo = lo, c->sh = ib, c->span = hi - lo;
        for (size_t k = 0; k < c->n; k++)
            c->key[k] = (c->key[k] - lo) << ib | k;
        tp_sort_pairs_s(c->key, NULL, c->n, v->scratch);
        return;
    }
    c->ord = tp_an_tmp(v, c->n + 1, sizeof *c->ord);
    for (size_t k = 0; k < c->n; k++)
        c->ord[k] = (uint32_t)k;
    tp_sort_pairs_s(c->key, c->ord, c->n, v->scratch);
}

/* Correlation key ck as c's keys hold it (less lo), in *x; 0: outside their range (no row
 * has it). */
static inline int corr_in(const corr_sorted *c, uint64_t ck, uint64_t *x) {
    *x = ck - c->lo;
    return ck >= c->lo && *x <= c->span;
}

/* The first k with key[k] >> sh >= x (x in range), searched from `hint` outwards (a
 * thread's launches come in rising correlations: a step or two each, not a bisection). */
static size_t corr_lower(const corr_sorted *c, uint64_t x, size_t hint) {
    const uint64_t *key = c->key, want = x << c->sh;
    size_t lo = 0, hi = c->n;
    if (hint < c->n && key[hint] < want) { /* after hint */
        size_t step = 1;
        lo = hint + 1;
        while (lo + step - 1 < c->n && key[lo + step - 1] < want) {
            lo += step;
            step *= 2;
        }
        hi = lo + step - 1 < c->n ? lo + step - 1 : c->n;
    } else { /* at hint or before */
        size_t step = 1;
        hi = hint < c->n ? hint : c->n;
        while (hi > 0) {
            size_t p = hi > step ? hi - step : 0;
            if (key[p] < want) {
                lo = p + 1;
                break;
            }
            hi = p;
            step *= 2;
        }
    }
    return tp_sort_lower_u64(key, lo, hi, want);
}

/* --compat hta: launch steps (one per GPU row sharing the call's correlation, as HTA's join
 * makes), then GPU steps (GPU rows whose correlation has a launch call), both in view order,
 * each with its time and stream index. Sets *median to the median duration of the launch
 * calls (every view row is_launch holds for, in view order: the median is of the values in
 * any order). An HTA view has no by_corr (tp_an_view: native only): the GPU rows are sorted
 * here and each launch call finds its correlation among them (the launches themselves are
 * not sorted: 16 bytes a launch and their sort's copy less). The marks are per launch (g_at)
 * and per GPU row (launched), not per view row: 5 bytes a view row were ~0.8 MiB of the
 * analysis's peak on tracelens_xdit_sd35 (200 k rows, 10 k of them GPU rows). */
static void collect_steps(const tp_an_view *v, tp_an_namememo *hl, const stream_ids *si,
                          tp_steps *st, double *median) {
    assert(!v->by_corr);
    corr_sorted g = {0};
    g.row = tp_an_tmp(v, v->n_gpu + 1, sizeof *g.row);
    g.key = tp_an_tmp(v, v->n_gpu + 1, sizeof *g.key);
    uint32_t *l_row = tp_an_tmp(v, v->n + 1, sizeof *l_row); /* the launches in view order */
    size_t nl = 0;
    for (size_t i = 0; i < v->n; i++) {
        if (gpu_row(v, i)) {
            g.key[g.n] = tp_sort_key_i64(tp_an_view_corr(v, i));
            g.row[g.n++] = (uint32_t)i;
        }
        if (is_launch(v, hl, i))
            l_row[nl++] = (uint32_t)i;
    }
    corr_sorted_sort(v, &g);
    /* per launch the first entry of g with its correlation (g.n: none), per GPU row whether
     * a launch has its correlation */
    uint32_t *g_at = tp_an_tmp(v, nl + 1, sizeof *g_at); /* by launch ordinal */
    uint8_t *launched = tp_an_tmp0(v, g.n + 1, 1);       /* by GPU row ordinal */
    size_t steps = 0; /* counted first, so that the steps are one array written once */
    for (size_t o = 0, j = 0; o < nl; o++) {
        uint64_t x;
        g_at[o] = (uint32_t)g.n;
        if (!corr_in(&g, tp_sort_key_i64(tp_an_view_corr(v, l_row[o])), &x))
            continue;
        j = corr_lower(&g, x, j);
        g_at[o] = (uint32_t)j;
        for (size_t e = j; e < g.n && g.key[e] >> g.sh == x; e++) {
            size_t go = corr_ord(&g, e);
            steps += 1 + !launched[go];
            launched[go] = 1;
        }
    }
    /* the launches' durations' array (for the median) given back before the steps' array
     * is taken */
    int64_t *d = tp_an_tmp(v, nl + 1, sizeof *d);
    int64_t dlo = INT64_MAX, dhi = INT64_MIN;
    for (size_t o = 0; o < nl; o++) {
        int64_t dur = tp_an_view_dur(v, l_row[o]);
        d[o] = dur;
        dlo = dur < dlo ? dur : dlo;
        dhi = dur > dhi ? dur : dhi;
    }
    *median = nl ? tp_an_percentile_i64_in(d, nl, 50, dlo, dhi) : 0;
    tp_an_tmp_put(v, d);
    st->s = tp_an_tmp(v, steps + 1, sizeof *st->s);
    st->g0 = UINT32_MAX, st->multi = 0, st->cap = steps + 1;
    for (size_t o = 0; o < nl; o++) { /* launches in view order */
        size_t i = l_row[o], j = g_at[o];
        uint64_t x;
        if (j == g.n || !corr_in(&g, tp_sort_key_i64(tp_an_view_corr(v, i)), &x))
            continue;
        for (; j < g.n && g.key[j] >> g.sh == x; j++) {
            uint32_t on = g.row[corr_ord(&g, j)];
            add_step(st, v, i, on, row_group(v, si, on));
        }
    }
    st->n_launch = st->n;
    for (size_t o = 0; o < g.n; o++) /* GPU rows in view order */
        if (launched[o])             /* a GPU row whose correlation has a launch call */
            add_step(st, v, g.row[o], g.row[o], row_group(v, si, g.row[o]));
    tp_an_tmp_put(v, g.row), tp_an_tmp_put(v, g.key), tp_an_tmp_put(v, g.ord);
    tp_an_tmp_put(v, l_row);
    tp_an_tmp_put(v, g_at);
    tp_an_tmp_put(v, launched);
    /* the times (a step's is its row's) once the pairing's columns are given back: not
     * beside them (8 bytes a step less at collect_steps' peak) */
    st->ts = tp_an_tmp(v, steps + 1, sizeof *st->ts);
    for (size_t k = 0; k < st->n; k++)
        st->ts[k] = tp_an_view_ts(v, st->s[k].at);
}

/* The lengths seen so far, counted per length in a window [base, base + cap) that doubles
 * towards a length that leaves it (lengths move by one a step: a window as wide as the
 * lengths' range, found in the one pass that counts them). */
typedef struct {
    size_t *count;
    int64_t base;
    size_t cap;
} len_counts;

static void len_widen(len_counts *c, int64_t cur) {
    size_t cap = 2 * c->cap;
    int64_t base = cur < c->base ? c->base - (int64_t)c->cap : c->base;
    size_t *count = tp_mem_xcalloc(cap, sizeof *count);
    memcpy(count + (c->base - base), c->count, c->cap * sizeof *count);
    free(c->count);
    c->count = count, c->base = base, c->cap = cap;
}

/* One stream's figures, step by step in its time order (q_step), in one pass. The lengths
 * are whole numbers (a step changes them by one): their distribution is described from a
 * count per length (tp_an_describe_counts) instead of an array of one length per step and
 * its sort. The time at the maximum and the blocked launches are summed at the largest
 * length so far, from zero each time a larger one is reached: at the end, the sums over the
 * steps at the overall maximum, in step order, as a pass that knew the maximum first gave
 * them. A step's time at the maximum is added when the stream's next step comes (nothing
 * after its last step), so no step needs to look ahead. */
typedef struct {
    len_counts c;
    int64_t cur, mx;
    int64_t at_ts; /* time of the last step, when it left the queue at its maximum */
    int at_max;
    size_t n;
    int64_t at_max_ns, blocked_ns;
    size_t n_blocked;
} q_state;

static void q_open(q_state *s) {
    memset(s, 0, sizeof *s);
    s->c = (len_counts){tp_mem_xcalloc(64, sizeof *s->c.count), -32, 64};
    s->mx = INT64_MIN;
}

/* A step of `delta` at time t; `call`: its launch call's view row (delta > 0). */
static inline void q_step(const tp_an_view *v, q_state *s, size_t call, int64_t t, int64_t delta,
                          double median) {
    if (s->at_max)
        s->at_max_ns = tp_an_add(s->at_max_ns, t - s->at_ts);
    int64_t cur = s->cur += delta;
    if ((uint64_t)(cur - s->c.base) >= s->c.cap)
        len_widen(&s->c, cur);
    s->c.count[cur - s->c.base]++;
    s->n++;
    s->at_max = cur >= s->mx;
    if (cur < s->mx)
        return;
    if (cur > s->mx) { /* a new maximum: the sums start again */
        s->mx = cur;
        s->at_max_ns = s->blocked_ns = 0;
        s->n_blocked = 0;
    }
    s->at_ts = t;
    if (delta > 0 && cur >= 2) { /* the call's duration: read only where it counts */
        int64_t dur = tp_an_view_dur(v, call);
        if ((double)dur > 4 * median) {
            s->n_blocked++;
            s->blocked_ns = tp_an_add(s->blocked_ns, dur - (int64_t)median);
        }
    }
}

/* The figures of a stream with s->n >= 1 steps into q (its stream id aside); frees s. */
static void q_close(q_state *s, tp_an_queue_stream *q) {
    q->max_len = s->mx;
    q->at_max_ns = s->at_max_ns, q->blocked_ns = s->blocked_ns, q->n_blocked = s->n_blocked;
    /* the least length: the window's first counted one (n >= 1), not a minimum kept per step */
    int64_t mn = s->c.base;
    while (s->c.count[mn - s->c.base] == 0)
        mn++;
    tp_an_describe_counts(s->c.count + (mn - s->c.base), (size_t)(s->mx - mn) + 1, mn, s->n,
                          &q->len);
    free(s->c.count);
}

/* The steps' time order (or its grouping by stream): indices of 4 bytes below 2^32 steps,
 * as every real trace has (an 8-byte order was 38 MB of fresh pages on lb20k, ~9 k faults),
 * else of 8; one of the two is set. Read through step_at in the functions below, each forced
 * inline into one caller per width with `wide` a constant, so each copy reads one width with
 * no test per step. */
typedef struct {
    uint32_t *u32;
    size_t *wide;
} step_order;

static inline size_t step_at(step_order o, int wide, size_t k) {
    return wide ? o.wide[k] : o.u32[k];
}

/* One stream: its steps in time order (o restricted to the stream: o's [a, a + n)), n >= 1
 * (a stream's group is not empty). */
__attribute__((always_inline)) static inline void
stream_run_in(const tp_an_view *v, const tp_steps *st, step_order o, int wide, size_t a, size_t n,
              double median, tp_an_queue_stream *q) {
    q_state s;
    q_open(&s);
    for (size_t k = a; k < a + n; k++) {
        size_t i = step_at(o, wide, k);
        q_step(v, &s, st->s[i].at, tp_an_view_ts(v, st->s[i].at), step_delta(st, i), median);
    }
    q_close(&s, q);
}

static void stream_run(const tp_an_view *v, const tp_steps *st, step_order o, size_t a, size_t n,
                       double median, tp_an_queue_stream *q) {
    if (o.u32)
        stream_run_in(v, st, o, 0, a, n, median, q);
    else
        stream_run_in(v, st, o, 1, a, n, median, q);
}

/* 1 when the order of steps with equal times can change a result: two steps of one stream at
 * the same time that differ (in delta or launch call). Steps that are alike are
 * interchangeable, so then any time order gives numpy's results. `ord`: the steps in a time
 * order. Long runs of one time are not inspected (numpy's order is taken). */
static int ties_matter(const tp_an_view *v, const tp_steps *st, const uint32_t *ord, size_t n) {
    const tp_step *s = st->s;
    for (size_t a = 0, b; a < n; a = b) {
        for (b = a + 1; b < n && step_ts(v, &s[ord[b]]) == step_ts(v, &s[ord[a]]); b++)
            ;
        if (b - a > 64)
            return 1;
        for (size_t i = a; i < b; i++)
            for (size_t j = i + 1; j < b; j++) {
                const tp_step *x = &s[ord[i]], *y = &s[ord[j]];
                if (step_stream(v, x) == step_stream(v, y) &&
                    (step_delta(st, ord[i]) != step_delta(st, ord[j]) ||
                     step_launch(st, ord[i]) != step_launch(st, ord[j])))
                    return 1;
            }
    }
    return 0;
}

/* The steps' stable time order when the view's rows are the model's at the model's times
 * (tp_an_view: admit_same), which rise (tp_model_finish sorts them by ts): collect_steps
 * writes the launch steps in view order, then the GPU steps in view order, so the times are
 * two rising runs split at n_launch, merged here (the first run's step first on equal times,
 * as a stable sort orders them) without tp_sort_order_i64_s's pass to find where the second
 * run starts. */
static uint32_t *merge_order(const tp_an_view *v, const tp_steps *st) {
    uint32_t *rows = tp_an_tmp(v, st->n + 1, sizeof *rows);
    tp_sort_merge_runs_order(st->ts, st->n_launch, st->n, rows);
    return rows;
}

/* --compat hta: the steps in numpy's argsort order of their times (what HTA's queue length
 * sees): the stable order when ties cannot matter, numpy's quicksort otherwise, from that
 * stable order (4-byte indices, no second order of 8). From `wide_from` steps on (2^32:
 * indices of 4 bytes no longer fit) numpy's port on 8-byte indices. Give the order's array
 * back with tp_an_tmp_put. */
static step_order time_order(const tp_an_view *v, tp_steps *st, size_t wide_from) {
    int64_t *key = st->ts;
    if (st->n >= wide_from) {
        size_t *ord = tp_an_tmp(v, st->n, sizeof *ord);
        tp_an_argsort_np(key, st->n, ord, v->scratch);
        return (step_order){NULL, ord};
    }
    uint32_t *rows;
    if (tp_an_view_ts_model(v)) {
        rows = merge_order(v, st);
    } else { /* the times sorted as their own key column, the order written over them: no
                copy of them beside the steps and no block of its own, 12 bytes a step */
        rows = tp_sort_order_i64_over_s(key, st->n, v->scratch);
        rows = tp_scratch_shrink(rows, st->n + 1, sizeof *rows); /* the keys' half given back */
        st->ts = key = NULL;
    }
    if (ties_matter(v, st, rows, st->n)) { /* numpy's order, from the stable one */
        if (key) {
            rows = tp_an_argsort_np_over(key, st->n, rows, v->scratch);
        } else if (st->n >= 64) { /* from the ties of the times, read through the view: a
                                      byte a step, not the times again (8) */
            uint8_t *same = tp_an_tmp(v, st->n, 1);
            for (size_t p = 0; p + 1 < st->n; p++)
                same[p] = step_ts(v, &st->s[rows[p]]) == step_ts(v, &st->s[rows[p + 1]]);
            rows = tp_an_argsort_np_over_same(same, st->n, rows, v->scratch);
            tp_an_tmp_put(v, same);
        } else { /* numpy's small sort compares the times themselves */
            int64_t *ts = tp_an_tmp(v, st->n, sizeof *ts);
            for (size_t k = 0; k < st->n; k++)
                ts[k] = tp_an_view_ts(v, st->s[k].at);
            rows = tp_an_argsort_np_over(ts, st->n, rows, v->scratch);
            tp_an_tmp_put(v, ts);
        }
    }
    return (step_order){rows, NULL};
}

/* The steps of `o` grouped by stream (stable, so each group stays in time order: a counting
 * sort by the stream's index, row_group of the step's GPU row, found in each of the two
 * passes rather than kept per step: 4 bytes a step less beside the order and the grouping),
 * into `grp` of o's width; at[j + 1] (zeroed by the caller) becomes where group j ends. */
__attribute__((always_inline)) static inline void group_in(const tp_an_view *v,
                                                           const stream_ids *si, const tp_steps *st,
                                                           step_order o, step_order grp, int wide,
                                                           size_t n, size_t *at) {
    for (size_t k = 0; k < n; k++)
        at[row_group(v, si, st->s[step_at(o, wide, k)].on) + 1]++;
    for (size_t j = 0; j < si->n; j++)
        at[j + 1] += at[j];
    /* grp: the steps themselves, by stream then time (each stream's run is what stream_run
     * reads): no copy of each stream's run */
    for (size_t k = 0; k < n; k++) {
        size_t i = step_at(o, wide, k), *to = &at[row_group(v, si, st->s[i].on)];
        if (wide) /* grp's width is o's */
            grp.wide[(*to)++] = i;
        else
            grp.u32[(*to)++] = (uint32_t)i;
    }
}

static step_order group_by_stream(const tp_an_view *v, const stream_ids *si, const tp_steps *st,
                                  step_order o, size_t *at) {
    if (o.u32) {
        step_order grp = {tp_an_tmp(v, st->n, sizeof *grp.u32), NULL};
        group_in(v, si, st, o, grp, 0, st->n, at);
        return grp;
    }
    step_order grp = {NULL, tp_an_tmp(v, st->n, sizeof *grp.wide)};
    group_in(v, si, st, o, grp, 1, st->n, at);
    return grp;
}

static void *order_block(step_order o) {
    return o.u32 ? (void *)o.u32 : (void *)o.wide;
}

/* --compat hta: steps in numpy's time order, then grouped by stream; one stream_run per
 * group, into out->s by stream id. */
static void run_hta(const tp_an_view *v, const stream_ids *si, tp_an_queue *out, size_t wide_from) {
    tp_steps st = {0};
    tp_an_namememo hl;
    tp_an_namememo_open(&hl, v->m, hta_queue_launch);
    collect_steps(v, &hl, si, &st, &out->median_launch_ns);
    tp_an_namememo_close(&hl);
    step_order grp = time_order(v, &st, wide_from);
    /* the times were the order's keys (when time_order has not taken their block over);
     * the stream runs read a step's from the view (its row's), the times given back before
     * the grouping takes its block */
    tp_an_tmp_put(v, st.ts);
    st.ts = NULL;
    size_t *at = tp_an_alloc(si->n + 1, sizeof *at);
    if (!st.multi) { /* every step on one stream: the time order itself */
        for (size_t j = st.n ? st.g0 : si->n; j < si->n; j++)
            at[j] = st.n;
    } else {
        step_order ord = grp;
        grp = group_by_stream(v, si, &st, ord, at);
        tp_an_tmp_put(v, order_block(ord));
    }
    for (size_t j = 0, a = 0; j < si->n; a = at[j++]) { /* at[j]: where group j ends now */
        if (at[j] == a)
            continue;
        tp_an_queue_stream *q = &out->s[out->n++];
        q->stream = si->ids[j];
        stream_run(v, &st, grp, a, at[j] - a, out->median_launch_ns, q);
    }
    free(at);
    tp_an_tmp_put(v, order_block(grp));
    tp_an_tmp_put(v, st.s);
}

/* Native: the steps' order is the stable merge of two rising runs (a native view's times
 * rise: tp_model_finish sorts the rows by time, a window keeps their order), the launch steps
 * in view order and the GPU steps in view order, launch steps first on equal times. Restricted
 * to one stream it is the same merge of that stream's steps, so one pass over the view's rows,
 * each step handed to its stream's q_state, gives every stream's figures: no array of steps,
 * no order of them, no grouping by stream (on the 20,000-step trace those took the queue's
 * 159 MB of fresh pages; 4 bytes a view row and 8 a launch call now, within the view's kept
 * scratch). What the pass needs of the pairing of launch calls with GPU rows is one mark a
 * view row:
 *   Q_NONE: no step;
 *   Q_GPU | g: a GPU row whose correlation has a launch call, on the stream of index g;
 *   g < Q_MULTI: a launch call whose correlation has one GPU row, on the stream of index g;
 *   Q_MULTI: a launch call whose correlation has several: their streams in the spill list. */
#define Q_NONE UINT32_MAX
#define Q_GPU 0x80000000u
#define Q_MULTI 0x7fffffffu

typedef struct {
    uint32_t call; /* view row of a Q_MULTI launch call */
    uint32_t g;    /* the stream index of one of its GPU rows (one entry per GPU row) */
} q_spill;

/* The pairing: launch calls and GPU rows grouped by correlation (HTA's join, each call with
 * every GPU row of its correlation), the marks written a group at a time. */
typedef struct {
    const tp_an_view *v;
    const stream_ids *si;
    uint32_t *mark;
    q_spill *spill;
    size_t n_spill, cap_spill;
    /* the correlation being read: its ng GPU rows and nl launch calls; the first of each in
     * g1, l1, and all of them in the lists gpus, calls only where there are several */
    uint32_t g1, l1, *gpus, *calls;
    size_t ng, nl, cap_g, cap_l;
} q_pairs;

/* pairs_flush's case of several GPU rows or launch calls in one correlation */
static void pairs_flush_any(q_pairs *p) {
    const uint32_t *gl = p->ng == 1 ? &p->g1 : p->gpus, *ll = p->nl == 1 ? &p->l1 : p->calls;
    for (size_t e = 0; e < p->ng; e++)
        p->mark[gl[e]] = Q_GPU | row_group(p->v, p->si, gl[e]);
    for (size_t e = 0; e < p->nl; e++) {
        if (p->ng == 1) {
            p->mark[ll[e]] = p->mark[gl[0]] & ~Q_GPU;
            continue;
        }
        p->mark[ll[e]] = Q_MULTI;
        tp_an_grow((void **)&p->spill, &p->cap_spill, p->n_spill + p->ng, sizeof *p->spill);
        for (size_t j = 0; j < p->ng; j++)
            p->spill[p->n_spill++] = (q_spill){ll[e], p->mark[gl[j]] & ~Q_GPU};
    }
}

/* The correlation read so far is complete: its marks (most hold one call and its GPU row). */
static inline void pairs_flush(q_pairs *p) {
    if (p->ng == 1 && p->nl == 1) {
        uint32_t g = row_group(p->v, p->si, p->g1);
        p->mark[p->g1] = Q_GPU | g;
        p->mark[p->l1] = g;
    } else if (p->ng && p->nl) {
        pairs_flush_any(p);
    }
    p->ng = p->nl = 0;
}

/* Appends row i to a growable list l of n entries (capacity *cap). */
static inline void list_push(uint32_t **l, size_t *n, size_t *cap, size_t i) {
    if (*n == *cap)
        tp_an_grow((void **)l, cap, *n + 1, sizeof **l);
    (*l)[(*n)++] = (uint32_t)i;
}

/* Adds row i to a group's side: *first when it is the first (n == 0), else the list, which
 * then holds the first one too. */
static inline void pairs_add(uint32_t *first, uint32_t **l, size_t *n, size_t *cap, size_t i) {
    if (*n == 0) {
        *first = (uint32_t)i, *n = 1;
        return;
    }
    if (*n == 1) {
        size_t one = 0;
        list_push(l, &one, cap, *first);
    }
    list_push(l, n, cap, i);
}

/* Reads rows[0..nr) (view rows by (correlation, row)): marks the steps' rows, lists the
 * spill, and writes the durations of the launch calls (all of them, with GPU rows or not)
 * into d; returns their count, *lo and *hi their least and largest. */
static inline __attribute__((always_inline)) size_t pairs_read_in(q_pairs *p, const uint32_t *rows,
                                                                  size_t nr, int64_t *d,
                                                                  int64_t *lo, int64_t *hi,
                                                                  int twos) {
    const tp_an_view lv = *p->v, *v = &lv; /* a local copy: its pointers stay in registers */
    const uint8_t *flags = v->r->ev.flags;
    size_t nd = 0;
    int64_t c = 0, dlo = INT64_MAX, dhi = INT64_MIN;
    /* every id its 32-bit code (no wide id, no high half; "none" a code of its own): the
     * codes group the rows as the ids do */
    const tp_events *ev = &v->r->ev;
    const uint32_t *c32 = ev->wide_corr.n == 0 && !ev->corr_hi_any ? ev->corr32 : NULL;
    for (size_t k = 0; k < nr; k++) {
        if (twos && !(k & 1)) /* a run's first row: the last run is complete */
            pairs_flush(p);
        size_t i = rows[k];
        int gpu = tp_an_view_gpu(v, i), launch = !gpu && tp_an_view_linked(v, i) &&
                                                 (flags[tp_an_view_row(v, i)] & TP_EVF_LAUNCH);
        if (!gpu && !launch)
            continue;
        int64_t ci = twos ? c : c32 ? c32[tp_an_view_row(v, i)] : tp_an_view_corr(v, i);
        if (ci != c) { /* (the first row's c: the lists are empty) */
            pairs_flush(p);
            c = ci;
        }
        if (gpu) {
            pairs_add(&p->g1, &p->gpus, &p->ng, &p->cap_g, i);
            continue;
        }
        pairs_add(&p->l1, &p->calls, &p->nl, &p->cap_l, i);
        int64_t dur = tp_an_view_dur(v, i);
        d[nd++] = dur;
        dlo = dur < dlo ? dur : dlo;
        dhi = dur > dhi ? dur : dhi;
    }
    pairs_flush(p);
    *lo = dlo, *hi = dhi;
    return nd;
}

/* pairs_read_in, its runs found by stepping two rows when every run of the view's by_corr is
 * two rows (tp_an_view.by_corr_twos: no correlation read a row; lb2k: the queue 52.9 -> 49.1 M
 * instructions), else by the rows' correlations. A pairs_read of its own for such runs (each
 * read as a pair, no lists) cost more: 49.8 M. */
static size_t pairs_read(q_pairs *p, const uint32_t *rows, size_t nr, int64_t *d, int64_t *lo,
                         int64_t *hi) {
    if (rows == p->v->by_corr && p->v->by_corr_twos)
        return pairs_read_in(p, rows, nr, d, lo, hi, 1);
    return pairs_read_in(p, rows, nr, d, lo, hi, 0);
}

/* The view rows that are GPU rows or launch calls, by (correlation, row): the view's
 * by_corr where it has one (then it is every row with a correlation, which pairs_read
 * filters), else sorted here (a window of the TUI). *n: how many; give back with
 * tp_an_tmp_put unless it is v->by_corr. */
static const uint32_t *pairs_rows(const tp_an_view *v, size_t *n) {
    if (v->by_corr) {
        *n = v->n_by_corr;
        return v->by_corr;
    }
    tp_an_keyrow *kr = tp_an_tmp(v, v->n, sizeof *kr);
    size_t m = 0;
    for (size_t i = 0; i < v->n; i++)
        if (tp_an_view_gpu(v, i) || is_launch(v, NULL, i))
            kr[m++] = (tp_an_keyrow){tp_an_view_corr(v, i), i};
    tp_an_keyrow_sort(kr, m, v->scratch);
    uint32_t *rows = tp_an_tmp(v, m + 1, sizeof *rows);
    for (size_t k = 0; k < m; k++)
        rows[k] = (uint32_t)kr[k].row;
    tp_an_tmp_put(v, kr);
    *n = m;
    return rows;
}

/* native_walk's waiting GPU rows (pg, then more[0..nmore)) take their steps. */
static inline __attribute__((always_inline)) void
flush_waiting(const tp_an_view *v, const int64_t *ts64, const uint32_t *mark, q_state *qs,
              double median, size_t pg, const uint32_t *more, size_t nmore) {
    q_step(v, &qs[mark[pg] & ~Q_GPU], pg, tp_an_view_ts_with(v, ts64, pg), -1, median);
    for (size_t e = 0; e < nmore; e++)
        q_step(v, &qs[mark[more[e]] & ~Q_GPU], more[e], tp_an_view_ts_with(v, ts64, more[e]), -1,
               median);
}

/* The merge pass: every step in the native order, into its stream's state qs[]. The view's
 * rows come in time order, so one pass over them in view order is that order but for the
 * launch calls that start at the time of GPU rows before them: the GPU rows wait (the first
 * in pg, any others at its time in more[]) until a row of a later time comes, or the rows
 * end. Always inline, for its two copies (native_walk). */
static inline __attribute__((always_inline)) void
native_walk_in(const tp_an_view *v, const int64_t *ts64, const uint32_t *mark, const q_spill *spill,
               q_state *qs, double median) {
    size_t pg = SIZE_MAX, nmore = 0, cap = 0, sp = 0, n = v->n;
    uint32_t *more = NULL;
    for (size_t i = 0; i < n; i++) {
        uint32_t m = mark[i];
        if (m == Q_NONE)
            continue;
        int64_t t = tp_an_view_ts_with(v, ts64, i);
        if (pg != SIZE_MAX && t != tp_an_view_ts_with(v, ts64, pg)) {
            assert(t > tp_an_view_ts_with(v, ts64, pg)); /* a native view's rows rise */
            flush_waiting(v, ts64, mark, qs, median, pg, more, nmore);
            pg = SIZE_MAX, nmore = 0;
        }
        if (m >= Q_GPU) {
            if (pg == SIZE_MAX)
                pg = i;
            else
                list_push(&more, &nmore, &cap, i);
        } else if (m != Q_MULTI) {
            q_step(v, &qs[m], i, t, +1, median);
        } else {
            for (; spill[sp].call == i; sp++)
                q_step(v, &qs[spill[sp].g], i, t, +1, median);
        }
    }
    if (pg != SIZE_MAX) /* after the last row: the last ones waiting (no test of i == n a row) */
        flush_waiting(v, ts64, mark, qs, median, pg, more, nmore);
    free(more);
}

/* native_walk_in in two copies (tp_an_view_ts_array): a native view's starts are an array */
static void native_walk(const tp_an_view *v, const uint32_t *mark, const q_spill *spill,
                        q_state *qs, double median) {
    const int64_t *ts64 = tp_an_view_ts_array(v);
    if (ts64)
        native_walk_in(v, ts64, mark, spill, qs, median);
    else
        native_walk_in(v, NULL, mark, spill, qs, median);
}

static void run_native(const tp_an_view *v, const stream_ids *si, tp_an_queue *out) {
    q_pairs p = {.v = v, .si = si};
    p.mark = tp_an_tmp(v, v->n + 1, sizeof *p.mark);
    memset(p.mark, 0xff, v->n * sizeof *p.mark);
    size_t nr;
    const uint32_t *rows = pairs_rows(v, &nr);
    int64_t *d = tp_an_tmp(v, nr + 1, sizeof *d), lo, hi;
    size_t nd = pairs_read(&p, rows, nr, d, &lo, &hi);
    if (rows != v->by_corr)
        tp_an_tmp_put(v, (void *)rows);
    free(p.gpus), free(p.calls);
    out->median_launch_ns = nd ? tp_an_percentile_i64_in(d, nd, 50, lo, hi) : 0;
    tp_an_tmp_put(v, d);
    /* the spill by call, in view order as the pass reads it (stable: a call's GPU rows in
     * row order), and an entry after the last that no call matches */
    tp_an_grow((void **)&p.spill, &p.cap_spill, p.n_spill + 1, sizeof *p.spill);
    tp_sort_structs_u32(p.spill, p.n_spill, sizeof *p.spill, offsetof(q_spill, call));
    p.spill[p.n_spill] = (q_spill){UINT32_MAX, 0};
    q_state *qs = tp_an_alloc(si->n + 1, sizeof *qs);
    for (size_t j = 0; j < si->n; j++)
        q_open(&qs[j]);
    native_walk(v, p.mark, p.spill, qs, out->median_launch_ns);
    for (size_t j = 0; j < si->n; j++) { /* the streams with steps, by id */
        if (qs[j].n) {
            tp_an_queue_stream *q = &out->s[out->n++];
            q->stream = si->ids[j];
            q_close(&qs[j], q);
        } else {
            free(qs[j].c.count);
        }
    }
    free(qs), free(p.spill);
    tp_an_tmp_put(v, p.mark);
}

void tp_an_queue_run_wide_from(const tp_an_view *v, tp_an_queue *out, size_t wide_from) {
    memset(out, 0, sizeof *out);
    stream_ids si;
    stream_ids_open(v, &si);
    out->s = tp_an_alloc(si.n + 1, sizeof *out->s);
    if (v->opts.compat_hta)
        run_hta(v, &si, out, wide_from);
    else
        run_native(v, &si, out);
    free(si.ids), free(si.of_place);
}

void tp_an_queue_run(const tp_an_view *v, tp_an_queue *out) {
    tp_an_queue_run_wide_from(v, out, UINT32_MAX);
}

void tp_an_queue_free(tp_an_queue *out) {
    if (!out)
        return;
    free(out->s);
    memset(out, 0, sizeof *out);
}
