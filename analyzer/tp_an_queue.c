/* tp_an_queue: queue length per stream (HTA's get_queue_length_summary) and time blocked on
 * a full launch queue. */
#include "tp_an_queue.h"

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
        return tp_an_namememo_get(hl, v->r->ev.name[v->row[i]]);
    return !v->gpu[i] && (v->r->ev.flags[v->row[i]] & TP_EVF_LAUNCH);
}

/* A step of a queue: a launch call (+1) or a GPU row (-1). Its time and stream are read
 * through the view (12 bytes a step, not 32 with them copied: millions of steps on a long
 * trace, every one a fresh byte). */
typedef struct {
    uint32_t at;   /* view row whose start is the step's time: the launch call, or the GPU row */
    uint32_t on;   /* view row whose stream it is: the GPU row */
    int32_t delta; /* +1: launch, -1: GPU row */
} tp_step;

typedef struct {
    tp_step *s;  /* the view's scratch, sized once to the count of steps */
    int64_t *ts; /* per step: its time (step_ts), written with it */
    uint32_t *g; /* per step: its stream's index (stream_ids); NULL while every step so far is
                    on stream g0 (launch-bound training: all of them, 19 MB less on lb20k) */
    uint32_t g0;
    size_t n, cap;
    size_t n_launch; /* the launch steps: s[0..n_launch), then the GPU rows' */
} tp_steps;

/* A step on another stream than g0 while st->g is NULL: the first step (its stream becomes
 * g0), or the first on a second stream (the index per step from here on). */
static void other_stream(tp_steps *st, const tp_an_view *v, uint32_t g) {
    if (st->n == 0) {
        st->g0 = g;
        return;
    }
    st->g = tp_an_tmp(v, st->cap, sizeof *st->g);
    for (size_t k = 0; k < st->n; k++)
        st->g[k] = st->g0;
}

static inline void add_step(tp_steps *st, const tp_an_view *v, size_t at, size_t on, int32_t delta,
                            uint32_t g) {
    if (g != st->g0 && !st->g)
        other_stream(st, v, g);
    if (st->g)
        st->g[st->n] = g;
    st->ts[st->n] = v->ts[at];
    st->s[st->n++] = (tp_step){(uint32_t)at, (uint32_t)on, delta};
}

static int64_t step_ts(const tp_an_view *v, const tp_step *p) {
    return v->ts[p->at];
}

static int64_t step_stream(const tp_an_view *v, const tp_step *p) {
    return tp_an_view_stream(v, p->on);
}

/* The launch call of a +1 step (0 for a -1 step, all alike) */
static uint32_t step_launch(const tp_step *p) {
    return p->delta > 0 ? p->at : 0;
}

static int gpu_row(const tp_an_view *v, size_t i) {
    return v->opts.compat_hta ? tp_an_view_stream(v, i) != -1 : v->gpu[i];
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
static uint32_t row_group(const tp_an_view *v, const stream_ids *si, size_t i) {
    return si->of_place[tp_ev_place_index(&v->r->ev, v->row[i])];
}

/* Launch steps (one per GPU row sharing the call's correlation, as HTA's join makes), then
 * GPU steps (GPU rows whose correlation has a launch call), both in view order, each with
 * its time and stream index. Sets *median to the median duration of the launch calls (every
 * view row is_launch holds for: all are found here, a launch call being linked, so it has a
 * correlation and is in by_corr; their durations in view order, as the median is of the
 * values in any order). */
static void collect_steps(const tp_an_view *v, tp_an_namememo *hl, const stream_ids *si,
                          tp_steps *st, double *median) {
    /* Sized by the rows they can hold, not by every view row (two blocks of 16 bytes a view
     * row, ~40 % filled on a launch-bound trace, took the scratch's kept pages from the
     * arrays after them, which then faulted fresh ones). */
    tp_an_keyrow *g, *l, *both = NULL;
    size_t ng = 0, nl = 0;
    if (v->by_corr && !v->opts.compat_hta) { /* native: gpu_row and is_launch read inline */
        /* a row is a GPU row or a launch, never both: one block of the correlated rows, the
         * GPU rows from its front, the launches from its back (so l is read backwards below) */
        both = tp_an_tmp(v, v->n_by_corr + 1, sizeof *both);
        g = both;
        const uint8_t *flags = v->r->ev.flags;
        const int32_t *link = v->link;
        size_t back = v->n_by_corr;
        /* by_corr is set where every model row is a view row, once (not HTA's): every partner
         * is in the view, so tp_an_view_linked is link >= 0, read without its test of the
         * `linked` column */
        for (size_t k = 0; k < v->n_by_corr; k++) {
            size_t i = v->by_corr[k];
            int gpu = v->gpu[i],
                launch = !gpu && link[i] >= 0 && (flags[v->row[i]] & TP_EVF_LAUNCH);
            if (!gpu && !launch)
                continue;
            int64_t c = tp_an_view_corr(v, i);
            if (gpu)
                g[ng++] = (tp_an_keyrow){c, i};
            else
                both[--back] = (tp_an_keyrow){c, i};
        }
        nl = v->n_by_corr - back;
        l = both + back;
    } else if (v->by_corr) {
        g = tp_an_tmp(v, v->n_gpu < v->n_by_corr ? v->n_gpu : v->n_by_corr, sizeof *g);
        l = tp_an_tmp(v, v->n_by_corr,
                      sizeof *l); /* rows by (correlation, row) already; a launch has a correlation,
               and a GPU row without one (-1) pairs with no launch */
        for (size_t k = 0; k < v->n_by_corr; k++) {
            size_t i = v->by_corr[k];
            int64_t c = tp_an_view_corr(v, i);
            if (gpu_row(v, i))
                g[ng++] = (tp_an_keyrow){c, i};
            if (is_launch(v, hl, i))
                l[nl++] = (tp_an_keyrow){c, i};
        }
    } else {
        g = tp_an_tmp(v, v->n_gpu, sizeof *g), l = tp_an_tmp(v, v->n, sizeof *l);
        for (size_t i = 0; i < v->n; i++) {
            if (gpu_row(v, i))
                g[ng++] = (tp_an_keyrow){tp_an_view_corr(v, i), i};
            if (is_launch(v, hl, i))
                l[nl++] = (tp_an_keyrow){tp_an_view_corr(v, i), i};
        }
        tp_an_keyrow_sort(g, ng, v->scratch);
        tp_an_keyrow_sort(l, nl, v->scratch);
    }
    /* Both by (correlation, row), one merge pass pairs them: per launch (by its view row) the
     * first entry of g with its correlation, per GPU row whether a launch has its correlation. */
    uint32_t *g_at = tp_an_tmp(v, v->n, sizeof *g_at); /* UINT32_MAX: not a launch */
    memset(g_at, 0xff, v->n * sizeof *g_at);
    uint8_t *launched = tp_an_tmp0(v, v->n, 1);
    size_t steps = 0; /* counted first, so that the steps are one array written once (grown
                         step by step, each regrowth copied ~200 MB into fresh pages) */
    /* l ascending: from its back when it was written backwards */
    size_t li = both ? nl - 1 : 0, l_step = both ? SIZE_MAX : 1; /* (unsigned: wraps) */
    for (size_t k = 0, j = 0; k < nl; k++, li += l_step) {
        const tp_an_keyrow *l_at = &l[li];
        while (j < ng && g[j].key < l_at->key)
            j++;
        for (size_t e = j; e < ng && g[e].key == l_at->key; e++) {
            steps += 1 + !launched[g[e].row];
            launched[g[e].row] = 1;
        }
        g_at[l_at->row] = (uint32_t)j;
    }
    st->s = tp_an_tmp(v, steps + 1, sizeof *st->s);
    st->ts = tp_an_tmp(v, steps + 1, sizeof *st->ts);
    st->g = NULL, st->g0 = UINT32_MAX, st->cap = steps + 1;
    int64_t *d = tp_an_tmp(v, nl + 1, sizeof *d);
    size_t nd = 0;
    int64_t dlo = INT64_MAX, dhi = INT64_MIN;
    for (size_t i = 0; i < v->n; i++) { /* launches in view order */
        if (g_at[i] == UINT32_MAX)
            continue;
        int64_t dur = v->end[i] - v->ts[i];
        d[nd++] = dur;
        dlo = dur < dlo ? dur : dlo;
        dhi = dur > dhi ? dur : dhi;
        int64_t c = tp_an_view_corr(v, i);
        for (size_t j = g_at[i]; j < ng && g[j].key == c; j++)
            add_step(st, v, i, g[j].row, +1, row_group(v, si, g[j].row));
    }
    *median = nd ? tp_an_percentile_i64_in(d, nd, 50, dlo, dhi) : 0;
    tp_an_tmp_put(v, d);
    st->n_launch = st->n;
    /* natively a launched row is one of the view's GPU rows (gpu[]): their list, where the
     * view has one, is the rows to test, in view order (a third of lb2k's rows) */
    const uint32_t *gpu_rows = both ? tp_an_view_gpu_rows(v) : NULL;
    if (gpu_rows) {
        for (size_t k = 0; k < v->n_gpu; k++) {
            uint32_t i = gpu_rows[k];
            if (launched[i])
                add_step(st, v, i, i, -1, row_group(v, si, i));
        }
    } else {
        for (size_t i = 0; i < v->n; i++)
            if (launched[i]) /* a GPU row whose correlation has a launch call */
                add_step(st, v, i, i, -1, row_group(v, si, i));
    }
    if (both)
        tp_an_tmp_put(v, both);
    else
        tp_an_tmp_put(v, g), tp_an_tmp_put(v, l);
    tp_an_tmp_put(v, g_at);
    tp_an_tmp_put(v, launched);
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

/* One stream: steps in time order (o restricted to the stream: o's [a, a + n)), in one pass.
 * The lengths are whole numbers (a step changes them by one): their distribution is
 * described from a count per length (tp_an_describe_counts) instead of an array of one length
 * per step and its sort. The time at the maximum and the blocked launches are summed at the
 * largest length so far, from zero each time a larger one is reached: at the end, the sums
 * over the steps at the overall maximum, in step order, as a pass that knew the maximum first
 * gave them. n >= 1 (a stream's group is not empty). */
__attribute__((always_inline)) static inline void
stream_run_in(const tp_an_view *v, const tp_steps *st, step_order o, int wide, size_t a, size_t n,
              double median, tp_an_queue_stream *q) {
    const tp_step *s = st->s;
    len_counts c = {tp_mem_xcalloc(64, sizeof *c.count), -32, 64};
    int64_t cur = 0, mx = INT64_MIN;
    for (size_t k = a; k < a + n; k++) {
        const tp_step *p = &s[step_at(o, wide, k)];
        cur += p->delta;
        if ((uint64_t)(cur - c.base) >= c.cap)
            len_widen(&c, cur);
        c.count[cur - c.base]++;
        if (cur < mx)
            continue;
        if (cur > mx) { /* a new maximum: the sums start again */
            mx = cur;
            q->at_max_ns = q->blocked_ns = 0;
            q->n_blocked = 0;
        }
        if (k + 1 < a + n)
            q->at_max_ns = tp_an_add(q->at_max_ns,
                                     st->ts[step_at(o, wide, k + 1)] - st->ts[step_at(o, wide, k)]);
        if (p->delta > 0 && mx >= 2) { /* the call's duration: read only where it counts */
            int64_t dur = v->end[p->at] - v->ts[p->at];
            if ((double)dur > 4 * median) {
                q->n_blocked++;
                q->blocked_ns = tp_an_add(q->blocked_ns, dur - (int64_t)median);
            }
        }
    }
    q->max_len = mx;
    /* the least length: the window's first counted one (n >= 1), not a minimum kept per step */
    int64_t mn = c.base;
    while (c.count[mn - c.base] == 0)
        mn++;
    tp_an_describe_counts(c.count + (mn - c.base), (size_t)(mx - mn) + 1, mn, n, &q->len);
    free(c.count);
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
static int ties_matter(const tp_an_view *v, const tp_step *s, const uint32_t *ord, size_t n) {
    for (size_t a = 0, b; a < n; a = b) {
        for (b = a + 1; b < n && step_ts(v, &s[ord[b]]) == step_ts(v, &s[ord[a]]); b++)
            ;
        if (b - a > 64)
            return 1;
        for (size_t i = a; i < b; i++)
            for (size_t j = i + 1; j < b; j++) {
                const tp_step *x = &s[ord[i]], *y = &s[ord[j]];
                if (step_stream(v, x) == step_stream(v, y) &&
                    (x->delta != y->delta || step_launch(x) != step_launch(y)))
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

/* merge_order on 8-byte indices (the native order past 2^32 steps): a native view's times
 * rise, so the launch steps and the GPU steps are two rising runs split at n_launch. */
static void merge_order_wide(const int64_t *key, size_t m, size_t n, size_t *ord) {
    size_t a = 0, b = m, k = 0;
    while (a < m && b < n)
        ord[k++] = key[b] < key[a] ? b++ : a++;
    while (a < m)
        ord[k++] = a++;
    while (b < n)
        ord[k++] = b++;
}

/* The steps' time order. Native: the stable one (at equal times launch steps first, then
 * view order), a deterministic order of exact times. --compat hta: numpy's argsort order of
 * the times (what HTA's queue length sees): the stable order when ties cannot matter, numpy's
 * quicksort otherwise, from that stable order (4-byte indices, no second order of 8). From
 * `wide_from` steps on (2^32: indices of 4 bytes no longer fit) 8-byte indices: numpy's port
 * (HTA) or the merge (native). Give the order's array back with tp_an_tmp_put. */
static step_order time_order(const tp_an_view *v, const tp_steps *st, size_t wide_from) {
    const int64_t *key = st->ts;
    if (st->n >= wide_from) {
        size_t *ord = tp_an_tmp(v, st->n, sizeof *ord);
        if (v->opts.compat_hta)
            tp_an_argsort_np(key, st->n, ord, v->scratch);
        else
            merge_order_wide(key, st->n_launch, st->n, ord);
        return (step_order){NULL, ord};
    }
    uint32_t *rows =
        v->ts == v->r->ev.ts ? merge_order(v, st) : tp_sort_order_i64_s(key, st->n, v->scratch);
    if (v->opts.compat_hta && ties_matter(v, st->s, rows, st->n)) /* numpy's, from the stable */
        rows = tp_an_argsort_np_over(key, st->n, rows, v->scratch);
    return (step_order){rows, NULL};
}

/* The steps of `o` grouped by stream (stable, so each group stays in time order: a counting
 * sort by the stream's index g), into `grp` of o's width; at[j + 1] (zeroed by the caller)
 * becomes where group j ends. */
__attribute__((always_inline)) static inline void group_in(step_order o, step_order grp, int wide,
                                                           const uint32_t *g, size_t n, size_t nsi,
                                                           size_t *at) {
    for (size_t k = 0; k < n; k++)
        at[g[step_at(o, wide, k)] + 1]++;
    for (size_t j = 0; j < nsi; j++)
        at[j + 1] += at[j];
    /* grp: the steps themselves, by stream then time (each stream's run is what stream_run
     * reads): no copy of each stream's run */
    for (size_t k = 0; k < n; k++) {
        size_t i = step_at(o, wide, k), *to = &at[g[i]];
        if (wide) /* grp's width is o's */
            grp.wide[(*to)++] = i;
        else
            grp.u32[(*to)++] = (uint32_t)i;
    }
}

static step_order group_by_stream(const tp_an_view *v, step_order o, const uint32_t *g, size_t n,
                                  size_t nsi, size_t *at) {
    if (o.u32) {
        step_order grp = {tp_an_tmp(v, n, sizeof *grp.u32), NULL};
        group_in(o, grp, 0, g, n, nsi, at);
        return grp;
    }
    step_order grp = {NULL, tp_an_tmp(v, n, sizeof *grp.wide)};
    group_in(o, grp, 1, g, n, nsi, at);
    return grp;
}

static void *order_block(step_order o) {
    return o.u32 ? (void *)o.u32 : (void *)o.wide;
}

/* Steps in their time order (time_order), then grouped by stream; one stream_run per group, streams
 * by id. */
void tp_an_queue_run_wide_from(const tp_an_view *v, tp_an_queue *out, size_t wide_from) {
    memset(out, 0, sizeof *out);
    tp_steps st = {0};
    tp_an_namememo hl;
    tp_an_namememo_open(&hl, v->m, hta_queue_launch);
    stream_ids si;
    stream_ids_open(v, &si);
    collect_steps(v, &hl, &si, &st, &out->median_launch_ns);
    tp_an_namememo_close(&hl);
    step_order grp = time_order(v, &st, wide_from);
    const uint32_t *g = st.g; /* each step's stream index, in step order; NULL: all on g0 */
    size_t *at = tp_an_alloc(si.n + 1, sizeof *at);
    if (!g) { /* every step on one stream (launch-bound training): the time order itself */
        for (size_t j = st.n ? st.g0 : si.n; j < si.n; j++)
            at[j] = st.n;
    } else {
        step_order ord = grp;
        grp = group_by_stream(v, ord, g, st.n, si.n, at);
        tp_an_tmp_put(v, order_block(ord));
        tp_an_tmp_put(v, st.g);
    }
    out->s = tp_an_alloc(si.n + 1, sizeof *out->s);
    for (size_t j = 0, a = 0; j < si.n; a = at[j++]) { /* at[j]: where group j ends now */
        if (at[j] == a)
            continue;
        tp_an_queue_stream *q = &out->s[out->n++];
        q->stream = si.ids[j];
        stream_run(v, &st, grp, a, at[j] - a, out->median_launch_ns, q);
    }
    free(at), free(si.ids), free(si.of_place);
    tp_an_tmp_put(v, order_block(grp));
    tp_an_tmp_put(v, st.ts);
    tp_an_tmp_put(v, st.s);
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
