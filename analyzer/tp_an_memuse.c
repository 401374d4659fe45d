/* tp_an_memuse: the memory analysis over the allocator replay (see the header).
 *
 * One pass replays every event to draw the timeline, find the peak and the first failure;
 * the moments (peak, failure) seek the replay back there and read its live set; growth
 * samples each site's live bytes at every step end. */
#include "tp_an_memuse.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_an_enclosing.h"
#include "tp_an_namememo.h"
#include "tp_an_stats.h"
#include "tp_mem.h"

static const struct {
    const char *key, *text;
} oom_names[] = {
#define TP_AN_OOM_ROW(name, key, text) {key, text},
    TP_AN_OOM_TABLE(TP_AN_OOM_ROW)
#undef TP_AN_OOM_ROW
};

const char *tp_an_oom_key(tp_an_oom_kind k) {
    return (size_t)k < sizeof oom_names / sizeof oom_names[0] ? oom_names[k].key : "?";
}

const char *tp_an_oom_text(tp_an_oom_kind k) {
    return (size_t)k < sizeof oom_names / sizeof oom_names[0] ? oom_names[k].text : "?";
}

/* ---------------------------------------------------------------- steps */

typedef struct {
    int64_t a, b;
} span;

static int cmp_span(const void *x, const void *y) {
    const span *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    return (p->b < q->b) - (p->b > q->b); /* the enclosing one first */
}

/* View row i when it is a step range: its span appended to p. */
static inline void step_row(const tp_an_view *v, tp_an_namememo *step, size_t i, span *p,
                            size_t *n) {
    uint32_t row = tp_an_view_row(v, i);
    if (!tp_an_view_gpu(v, i) && tp_an_is_range(v->r->ev.cat[row], TP_AN_RANGES_ALL) &&
        tp_an_namememo_get(step, v->r->ev.name[row]))
        p[(*n)++] = (span){tp_an_view_ts(v, i), tp_an_view_end(v, i) > tp_an_view_ts(v, i)
                                                    ? tp_an_view_end(v, i)
                                                    : tp_an_view_ts(v, i)};
}

/* The outermost step ranges of the view, by start. The range categories' rows come from the
 * rank's category index when the view has it (tp_an_view_cat_rows: view row = model row),
 * not from a test of every row: the spans are sorted below (equal spans are the same
 * values), so the order they are found in does not matter. */
static void find_steps(const tp_an_view *v, tp_an_memuse *u) {
    static const tp_cat range_cats[] = {TP_CAT_USER_ANNOTATION, TP_CAT_CPU_OP,
                                        TP_CAT_PYTHON_FUNCTION}; /* TP_AN_RANGES_ALL's */
    span *p = tp_an_alloc(v->n + 1, sizeof *p);
    size_t n = 0, nc;
    tp_an_namememo step;
    tp_an_namememo_open(&step, v->m, tp_an_is_step_name);
    if (tp_an_view_cat_rows(v, range_cats[0], &nc)) {
        for (size_t c = 0; c < sizeof range_cats / sizeof *range_cats; c++) {
            const uint32_t *rows = tp_an_view_cat_rows(v, range_cats[c], &nc);
            for (size_t k = 0; k < nc; k++)
                step_row(v, &step, rows[k], p, &n);
        }
    } else {
        for (size_t i = 0; i < v->n; i++)
            step_row(v, &step, i, p, &n);
    }
    tp_an_namememo_close(&step);
    tp_an_qsort(p, n, sizeof *p, cmp_span);
    u->steps = tp_an_alloc(n + 1, sizeof *u->steps);
    int64_t last_end = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        if (p[i].b <= last_end && u->n_steps)
            continue;
        u->steps[u->n_steps++] = (tp_an_memstep){p[i].a, p[i].b, -1, -1, -1, -1};
        last_end = p[i].b;
    }
    free(p);
}

/* Steps begun in (from, to]: how many step boundaries a block allocated at `from` lived
 * through by `to`. */
static int64_t steps_between(const tp_an_memuse *u, int64_t from, int64_t to) {
    int64_t k = 0;
    for (size_t i = 0; i < u->n_steps; i++) /* steps are few; a scan keeps it obvious */
        k += u->steps[i].start > from && u->steps[i].start <= to;
    return k;
}

static long step_of(const tp_an_memuse *u, int64_t t) {
    for (size_t i = 0; i < u->n_steps; i++)
        if (u->steps[i].start <= t && t < u->steps[i].end)
            return (long)i;
    return -1;
}

/* ---------------------------------------------------------------- holder groups */

/* A site by the names that group it (sorted without a context pointer: qsort has none). */
typedef struct {
    uint32_t name[2], site;
} site_key;

static int cmp_site_key(const void *x, const void *y) {
    const site_key *a = x, *b = y;
    for (int k = 0; k < 2; k++)
        if (a->name[k] != b->name[k])
            return a->name[k] < b->name[k] ? -1 : 1;
    return (a->site > b->site) - (a->site < b->site);
}

/* Holder groups: sites with the same ranges, the lowest site of each naming it. */
static void make_groups(tp_an_memuse *u) {
    size_t ns = tp_an_memstate_n_sites(u->state);
    site_key *k = tp_an_alloc(ns + 1, sizeof *k);
    for (size_t i = 0; i < ns; i++) {
        const tp_an_msite *x = tp_an_memstate_site(u->state, (uint32_t)i);
        k[i] = (site_key){{x->name[0], x->name[1]}, (uint32_t)i};
    }
    qsort(k, ns, sizeof *k, cmp_site_key);
    u->group = tp_an_alloc(ns + 1, sizeof *u->group);
    u->group_site = tp_an_alloc(ns + 1, sizeof *u->group_site);
    for (size_t i = 0; i < ns; i++) {
        if (!i || memcmp(k[i].name, k[i - 1].name, sizeof k[i].name))
            u->group_site[u->n_groups++] = k[i].site;
        u->group[k[i].site] = (uint32_t)(u->n_groups - 1);
    }
    free(k);
}

/* ---------------------------------------------------------------- timeline */

/* Appends the state after memory row `row` (at time t), unless it repeats the last point's
 * values; a point at the same instant as the last replaces it (the later state stands). The
 * arrays have room for a point per row (replay_all). */
typedef struct {
    int64_t last_t; /* the last point's time (as tp_an_memuse_pt_ts reads it) */
} point_sink;

static void push_point(tp_an_memuse *u, point_sink *k, size_t row, int64_t t, int64_t alloc,
                       int64_t res) {
    size_t n = u->n_points;
    if (n && u->pt_alloc[n - 1] == alloc && u->res_val[u->n_res - 1] == res)
        return;
    if (n && k->last_t == t) {
        n = --u->n_points;
        u->n_res -= u->res_at[u->n_res - 1] == n; /* a run begun by the replaced point */
    }
    u->pt_row[n] = (uint32_t)row, u->pt_alloc[n] = alloc, k->last_t = t;
    if (!u->n_res || u->res_val[u->n_res - 1] != res) {
        TP_MEM_XGROW(u->res_at, u->res_cap, u->n_res + 1);
        u->res_val = tp_mem_xrealloc(u->res_val, u->res_cap, sizeof *u->res_val);
        u->res_at[u->n_res] = (uint32_t)n, u->res_val[u->n_res++] = res;
    }
    u->n_points = n + 1;
}

/* How many reserved runs start at or before point i (the run holding i is the one before). */
static size_t res_runs_to(const tp_an_memuse *u, size_t i) {
    size_t lo = 0, hi = u->n_res;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (u->res_at[mid] <= i)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int64_t tp_an_memuse_pt_res(const tp_an_memuse *u, size_t i) {
    size_t k = res_runs_to(u, i);
    return k ? u->res_val[k - 1] : -1;
}

/* ---------------------------------------------------------------- growth samples */

/* Each site's live bytes at every step end, taken while the replay passes those points (the
 * replay's state at an event is the same however it got there), instead of a second replay
 * from the start; and of them only what find_growth reads, per site, updated step by step:
 * the first and last values, the step-to-step rises and the sums of the slope's regression.
 * The whole matrix (steps x sites of int64, 22 MiB on a 10 M-record trace, all of it zeroed
 * and written) was scratch held beside the other analysis thread's at the report's peak
 * (docs/PERFORMANCE.md, native report, eighteenth round). */
typedef struct {
    size_t *at;            /* per step: the replay position of its end (events at or before it) */
    size_t next, n;        /* the next step to sample; steps sampled in all (0: none wanted) */
    size_t ns;             /* sites */
    int64_t *cur;          /* per site: live bytes at the step end being sampled */
    int64_t *first, *last; /* per site: live bytes at the first step end, at the latest */
    size_t *rises;         /* per site: steps whose value rose over the previous step's */
    double *sy, *sxy;      /* per site: slope_of's sums of y and x * y so far (x: the step) */
    size_t *last_live;     /* per site: blocks live at the last step end */
} growth_samples;

static void samples_open(growth_samples *g, const tp_an_memuse *u, const tp_an_view *v) {
    const tp_rank *r = v->r;
    memset(g, 0, sizeof *g);
    if (u->n_steps < 4) /* find_growth's own bound: no growth judged */
        return;
    const tp_memevents *e = &r->mem;
    g->n = u->n_steps;
    g->ns = tp_an_memstate_n_sites(u->state);
    g->at = tp_an_alloc(g->n + 1, sizeof *g->at);
    for (size_t s = 0; s < g->n; s++) { /* as tp_an_memstate_seek_time finds it */
        size_t lo = 0, hi = e->n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (e->ts[mid] <= u->steps[s].end)
                lo = mid + 1;
            else
                hi = mid;
        }
        g->at[s] = lo;
    }
    size_t ns = g->ns + 1;
    g->cur = tp_mem_xcalloc(ns, sizeof *g->cur);
    g->first = tp_mem_xcalloc(ns, sizeof *g->first);
    g->last = tp_mem_xcalloc(ns, sizeof *g->last);
    g->rises = tp_mem_xcalloc(ns, sizeof *g->rises);
    g->sy = tp_mem_xcalloc(ns, sizeof *g->sy);
    g->sxy = tp_mem_xcalloc(ns, sizeof *g->sxy);
    g->last_live = tp_mem_xcalloc(ns, sizeof *g->last_live);
}

/* Step s's values (g->cur) into the running figures, as slope_of and find_growth would
 * read them from the whole matrix (the same operations in the same order); g->cur zeroed. */
static void samples_fold(growth_samples *g, size_t s) {
    double x = (double)s;
    for (size_t c = 0; c < g->ns; c++) {
        int64_t v = g->cur[c];
        if (s == 0)
            g->first[c] = v;
        else
            g->rises[c] += v > g->last[c];
        double y = (double)v;
        g->sy[c] += y, g->sxy[c] += x * y;
        g->last[c] = v;
        g->cur[c] = 0;
    }
}

/* Samples every step whose end position is at most `limit` (positions ascend with the
 * steps: their ends do). */
static void samples_until(growth_samples *g, tp_an_memstate *st, size_t limit) {
    for (; g->next < g->n && g->at[g->next] <= limit; g->next++) {
        size_t s = g->next, nb;
        tp_an_memstate_seek(st, g->at[s]);
        const tp_an_mblock *b = tp_an_memstate_blocks(st, &nb);
        for (size_t i = 0; i < nb; i++)
            g->cur[b[i].site] += b[i].size;
        for (size_t i = 0; i < nb && s + 1 == g->n; i++)
            g->last_live[b[i].site]++;
        samples_fold(g, s);
    }
}

/* The replay position at which the next step end is due (SIZE_MAX: none): the replay
 * compares its position with this, not the samples' state, at every event (212 k on lb2k;
 * the call to samples_until, then the test of g->next and g->at, cost 25, then 7
 * instructions an event). */
static inline size_t samples_next(const growth_samples *g) {
    return g->next < g->n ? g->at[g->next] : SIZE_MAX;
}

static void samples_free(growth_samples *g) {
    free(g->at), free(g->cur), free(g->first), free(g->last), free(g->rises);
    free(g->sy), free(g->sxy), free(g->last_live);
    memset(g, 0, sizeof *g);
}

/* Replays everything once: the timeline, the peak's row, the first failure, the growth
 * samples. */
static size_t replay_all(tp_an_memuse *u, const tp_rank *r, size_t *peak_ev, growth_samples *g) {
    const tp_memevents *e = &r->mem;
    size_t first_fail = e->n, kept = 0, due = samples_next(g);
    point_sink sink = {0};
    /* room for a point per row, so the replay never tests for growth: untouched pages of an
     * allocation this size cost nothing, and the fit below gives them back */
    u->pt_row = tp_mem_xalloc(e->n + 1, sizeof *u->pt_row);
    u->pt_alloc = tp_mem_xalloc(e->n + 1, sizeof *u->pt_alloc);
    u->peak_allocated = u->peak_reserved = -1;
    *peak_ev = 0;
    tp_an_memstate_seek(u->state, 0);
    /* the totals a batch of rows at a time (tp_an_memstate_run_totals), each batch ending at
     * the next step end (the samples seek there) and after a row over the peak so far (the
     * peak's state may be kept just after it); a failed allocation's totals are not read */
    enum { BATCH = 256 };
    int64_t ba[BATCH], br[BATCH];
    for (size_t i = 0; i < e->n;) {
        if (i >= due) {
            samples_until(g, u->state, i);
            due = samples_next(g);
        }
        assert(tp_an_memstate_pos(u->state) == i);
        size_t to = due < e->n ? due : e->n;
        to = to - i > BATCH ? i + BATCH : to;
        size_t nb = tp_an_memstate_run_totals(u->state, to, u->peak_allocated, ba, br);
        for (size_t k = 0; k < nb; k++, i++) {
            if (e->kind[i] == TP_MEMEV_ALLOC_FAIL) {
                first_fail = u->oom.failures++ ? first_fail : i;
                continue;
            }
            int64_t alloc = ba[k], res = br[k];
            if (alloc > u->peak_allocated) {
                assert(k + 1 == nb); /* the batch stopped here: the replay is just after i */
                u->peak_allocated = alloc, *peak_ev = i + 1;
                /* the peak's moment seeks back here: a kept state spares it the replay from
                 * the start (kept no more often than the rows replayed pay for) */
                if (i + 1 - kept >= tp_an_memstate_keep_cost(u->state)) {
                    tp_an_memstate_keep(u->state);
                    kept = i + 1;
                }
            }
            u->peak_reserved = res > u->peak_reserved ? res : u->peak_reserved;
            push_point(u, &sink, i, e->ts[i], alloc, res);
        }
    }
    samples_until(g, u->state, e->n);
    u->pt_row = tp_mem_xrealloc(u->pt_row, u->n_points + 1, sizeof *u->pt_row);
    u->pt_alloc = tp_mem_xrealloc(u->pt_alloc, u->n_points + 1, sizeof *u->pt_alloc);
    tp_an_memstate_seek(u->state, e->n);
    u->counts = *tp_an_memstate_counts(u->state);
    return first_fail;
}

/* Value of the timeline at t (after the last point at or before t); -1 before any. */
static size_t point_at(const tp_an_memuse *u, int64_t t) {
    size_t lo = 0, hi = u->n_points;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (tp_an_memuse_pt_ts(u, mid) <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo; /* points [0, lo) are at or before t */
}

/* The most reserved over points [from, to) (from < to): over the runs that cover them. */
static int64_t res_max(const tp_an_memuse *u, size_t from, size_t to) {
    size_t lo = res_runs_to(u, from); /* the run holding `from`: lo - 1 */
    int64_t best = -1;
    for (size_t k = lo ? lo - 1 : 0; k < u->n_res && u->res_at[k] < to; k++)
        best = u->res_val[k] > best ? u->res_val[k] : best;
    return best;
}

static void step_figures(tp_an_memuse *u) {
    for (size_t s = 0; s < u->n_steps; s++) {
        tp_an_memstep *st = &u->steps[s];
        size_t a = point_at(u, st->start), b = point_at(u, st->end);
        if (!b)
            continue;
        st->alloc_end = u->pt_alloc[b - 1], st->res_end = tp_an_memuse_pt_res(u, b - 1);
        size_t from = a ? a - 1 : 0;
        for (size_t i = from; i < b; i++)
            st->alloc_max = u->pt_alloc[i] > st->alloc_max ? u->pt_alloc[i] : st->alloc_max;
        st->res_max = res_max(u, from, b);
    }
}

/* ---------------------------------------------------------------- moments */

static int cmp_holder(const void *x, const void *y) {
    const tp_an_holder *p = x, *q = y;
    if (p->bytes != q->bytes)
        return p->bytes > q->bytes ? -1 : 1;
    return (p->site > q->site) - (p->site < q->site);
}

static int cmp_seg(const void *x, const void *y) {
    const tp_an_segstate *p = x, *q = y;
    if (p->free != q->free)
        return p->free > q->free ? -1 : 1;
    return (p->base > q->base) - (p->base < q->base);
}

static void moment_holders(const tp_an_memuse *u, tp_an_memmoment *mo) {
    size_t nb, ns = u->n_groups;
    const tp_an_mblock *b = tp_an_memstate_blocks(u->state, &nb);
    tp_an_holder *h = tp_mem_xcalloc(ns + 1, sizeof *h);
    int64_t *oldest = tp_an_alloc(ns + 1, sizeof *oldest);
    for (size_t i = 0; i < ns; i++)
        h[i].site = u->group_site[i], oldest[i] = INT64_MAX;
    for (size_t i = 0; i < nb; i++) {
        uint32_t g = u->group[b[i].site];
        tp_an_holder *x = &h[g];
        x->bytes += b[i].size, x->blocks++;
        x->largest = b[i].size > x->largest ? b[i].size : x->largest;
        oldest[g] = b[i].ts < oldest[g] ? b[i].ts : oldest[g];
    }
    size_t k = 0;
    for (size_t i = 0; i < ns; i++)
        if (h[i].blocks) {
            h[i].steps_alive = steps_between(u, oldest[i], mo->ts);
            h[i].share = mo->in_blocks > 0 ? (double)h[i].bytes / (double)mo->in_blocks : 0;
            h[k++] = h[i];
        }
    qsort(h, k, sizeof *h, cmp_holder);
    mo->holders = h, mo->n_holders = k;
    free(oldest);
}

/* Blocks allocated before the moment's step began pin their segment: a hole beside them
 * cannot merge into a larger one until they go. */
static void seg_pins(const tp_an_memuse *u, const tp_an_mlayout *l, const tp_an_mblock *b,
                     int64_t step_start, tp_an_segstate *g) {
    size_t ns = u->n_groups, best = 0;
    int64_t *by_group = tp_mem_xcalloc(ns + 1, sizeof *by_group);
    for (size_t j = 0; j < l->n_blocks; j++) {
        const tp_an_mblock *x = &b[l->blocks[j]];
        if (x->ts < step_start)
            g->pinned_bytes += x->size, by_group[u->group[x->site]] += x->size;
    }
    for (size_t i = 0; i < ns; i++)
        best = by_group[i] > by_group[best] ? i : best;
    g->pin_site = by_group[best] > 0 ? u->group_site[best] : 0;
    free(by_group);
}

static void moment_segments(const tp_an_memuse *u, int64_t request, tp_an_memmoment *mo) {
    tp_an_mlayout *l;
    size_t n, nb, nseg;
    tp_an_memstate_layouts(u->state, &l, &n);
    const tp_an_mblock *b = tp_an_memstate_blocks(u->state, &nb);
    const tp_an_mseg *sg = tp_an_memstate_segments(u->state, &nseg);
    int64_t step_start = mo->step >= 0 ? u->steps[mo->step].start : mo->ts;
    mo->segs = tp_mem_xcalloc(n + 1, sizeof *mo->segs);
    mo->largest_hole = n ? 0 : -1;
    for (size_t i = 0; i < n; i++) {
        tp_an_segstate *g = &mo->segs[i];
        const tp_an_mseg *s = &sg[l[i].seg];
        *g = (tp_an_segstate){
            s->base, s->size, l[i].live_bytes, l[i].free_bytes, l[i].largest_hole, l[i].n_blocks, 0,
            0,       1};
        g->fits = request <= 0 || l[i].largest_hole >= request;
        seg_pins(u, &l[i], b, step_start, g);
        mo->largest_hole = g->largest_hole > mo->largest_hole ? g->largest_hole : mo->largest_hole;
    }
    qsort(mo->segs, n, sizeof *mo->segs, cmp_seg);
    mo->n_segs = n;
    tp_an_memstate_layouts_free(l, n);
}

void tp_an_memuse_moment(const tp_an_memuse *u, size_t ev, int64_t request, tp_an_memmoment *out) {
    const tp_rank *r = tp_an_memstate_rank(u->state);
    memset(out, 0, sizeof *out);
    tp_an_memstate_seek(u->state, ev);
    out->valid = 1;
    out->ev = tp_an_memstate_pos(u->state);
    out->ts = out->ev ? r->mem.ts[out->ev - 1] : (r->mem.n ? r->mem.ts[0] : 0);
    out->step = step_of(u, out->ts);
    tp_an_mtotals x;
    tp_an_memstate_totals(u->state, &x);
    out->allocated = x.allocated, out->reserved = x.reserved, out->in_blocks = x.in_blocks;
    moment_holders(u, out);
    moment_segments(u, request, out);
}

void tp_an_memmoment_free(tp_an_memmoment *mo) {
    if (!mo)
        return;
    free(mo->holders), free(mo->segs);
    memset(mo, 0, sizeof *mo);
}

/* ---------------------------------------------------------------- the failure */

static int64_t device_capacity(const tp_rank *r, int32_t dev) {
    for (size_t i = 0; i < r->n_devices; i++)
        if (r->devices[i].id == dev && r->devices[i].total_global_mem > 0)
            return r->devices[i].total_global_mem;
    return -1;
}

/* The most reserved up to time t (the allocator's ceiling so far). */
static int64_t reserved_before(const tp_an_memuse *u, int64_t t) {
    size_t n = point_at(u, t);
    return n ? res_max(u, 0, n) : -1;
}

static void judge_failure(tp_an_memuse *u, const tp_rank *r, size_t row) {
    const tp_memevents *e = &r->mem;
    tp_an_oomfail *f = &u->oom;
    tp_an_memuse_moment(u, row, tp_memev_bytes(e, row), &u->at_oom);
    f->row = row, f->ts = e->ts[row], f->request = tp_memev_bytes(e, row), f->stack = e->stack[row];
    f->device = tp_memev_device(e, row);
    /* the allocator's own words when it gave them (a failed cudaMalloc says nothing) */
    int own = tp_memev_total_reserved(e, row) > 0;
    f->reserved = own ? tp_memev_total_reserved(e, row) : u->at_oom.reserved;
    f->live = own && tp_memev_total_allocated(e, row) >= 0 ? tp_memev_total_allocated(e, row)
                                                           : u->at_oom.allocated;
    f->free = f->reserved >= 0 && f->live >= 0 ? f->reserved - f->live : -1;
    f->largest_free = own ? tp_memev_largest_free(e, row) : u->at_oom.largest_hole;
    int64_t seen = reserved_before(u, f->ts);
    f->budget = seen > f->reserved ? seen : f->reserved;
    f->device_capacity = device_capacity(r, f->device);
    f->outside = f->device_capacity > 0 && f->reserved >= 0 ? f->device_capacity - f->reserved : -1;
    /* free enough, and no block known to fit (an allocator that does not say its largest
     * block is taken at its word that it could not serve the request from what was free) */
    if (f->free >= f->request && f->request > 0 && f->largest_free < f->request)
        f->kind = TP_AN_OOM_FRAGMENTATION;
    else if (f->budget >= 0 && f->request > f->budget && (f->live < 0 || f->live < f->request))
        f->kind = TP_AN_OOM_REQUEST;
    else
        f->kind = TP_AN_OOM_CAPACITY;
    u->has_oom = 1;
}

/* ---------------------------------------------------------------- growth */

/* The least-squares slope of y over x = 0, 1, ..., n - 1, from the sums of y and x * y
 * (accumulated in x order). */
static double slope_of(double sy, double sxy, size_t n) {
    double sx = 0, sxx = 0;
    for (size_t i = 0; i < n; i++) {
        double x = (double)i;
        sx += x, sxx += x * x;
    }
    double den = (double)n * sxx - sx * sx;
    return den > 0 ? ((double)n * sxy - sx * sy) / den : 0;
}

/* The site whose live bytes grew most from the first to the last step end, rising in at
 * least half the intervals. Sites here are exact (stack and ranges), not holder groups: a
 * range that allocates a kept output and a freed temporary is two sites, and the kept one is
 * what grows. */
static void find_growth(tp_an_memuse *u, const tp_rank *r, const growth_samples *gs) {
    size_t ns = gs->ns, n = u->n_steps;
    if (n < 4)
        return;
    int64_t best = 0;
    for (size_t c = 0; c < ns; c++) {
        int64_t g = gs->last[c] - gs->first[c];
        if (g > best && 2 * gs->rises[c] >= n - 1) {
            best = g;
            u->growth = (tp_an_memgrowth){
                1, (uint32_t)c, 0, gs->first[c], gs->last[c], gs->rises[c], n - 1, 0, 0};
        }
    }
    if (!u->growth.found)
        return;
    u->growth.slope = slope_of(gs->sy[u->growth.site], gs->sxy[u->growth.site], n);
    /* within the steps: a program frees everything at exit, which says nothing */
    uint32_t site = u->growth.site;
    int64_t end = u->steps[n - 1].end;
    for (size_t i = 0; i < r->mem.n && r->mem.ts[i] <= end; i++)
        u->growth.allocs += tp_an_memstate_row_site(u->state, i) == site;
    u->growth.frees = u->growth.allocs - gs->last_live[site];
}

/* ---------------------------------------------------------------- run */

void tp_an_memuse_run(const tp_an_view *v, tp_an_memuse *out) {
    memset(out, 0, sizeof *out);
    out->state = tp_an_memstate_open(v->m, v->r);
    out->source = tp_an_memstate_source(out->state);
    out->n_events = v->r->mem.n;
    out->mem_ts = v->r->mem.ts;
    make_groups(out);
    find_steps(v, out);
    growth_samples g;
    samples_open(&g, out, v);
    size_t peak_ev, fail = replay_all(out, v->r, &peak_ev, &g);
    step_figures(out);
    if (out->source != TP_AN_MSRC_NONE)
        tp_an_memuse_moment(out, peak_ev, 0, &out->peak);
    if (fail < v->r->mem.n)
        judge_failure(out, v->r, fail);
    find_growth(out, v->r, &g);
    samples_free(&g);
}

void tp_an_memuse_free(tp_an_memuse *out) {
    if (!out)
        return;
    tp_an_memstate_close(out->state);
    free(out->pt_row), free(out->pt_alloc), free(out->res_at), free(out->res_val);
    free(out->steps);
    free(out->group), free(out->group_site);
    tp_an_memmoment_free(&out->peak), tp_an_memmoment_free(&out->at_oom);
    memset(out, 0, sizeof *out);
}

char *tp_an_memuse_site_label(const tp_an_memuse *u, const tp_model *m, uint32_t site, char *buf,
                              size_t cap) {
    return tp_an_msite_label(m, tp_an_memstate_site(u->state, site), buf, cap);
}
