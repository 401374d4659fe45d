/* tp_tui_data: analyses of one rank arranged for the views (see the header). */
#include "tp_tui_data.h"
#include "tp_units.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_an_enclosing.h"
#include "tp_mem.h"
#include "tp_tui_layout.h"

#define DUR(buf, x) tp_units_dur(buf, sizeof buf, (double)(x))

static void build_kernels(tp_tui_data *d) {
    /* Columns in order of importance: narrow terminals drop them from the right. */
    static const tp_tui_col cols[] = {{"kernel", 0, 0}, {"count", 8, 1}, {"total", 10, 1},
                                      {"mean", 10, 1},  {"min", 10, 1},  {"max", 10, 1},
                                      {"type", 13, 0}};
    tp_tui_table_init(&d->kernels, cols, 7, 2);
    d->kernels.empty = "(no GPU kernels, copies or memsets in this rank)";
    for (size_t i = 0; i < d->a.k.n; i++) {
        const tp_an_kernel_row *k = &d->a.k.k[i];
        char cnt[24], b[4][32];
        snprintf(cnt, sizeof cnt, "%zu", k->count);
        const char *txt[] = {tp_model_str(d->m, k->name),
                             cnt,
                             DUR(b[0], k->sum),
                             DUR(b[1], k->mean),
                             DUR(b[2], k->min),
                             DUR(b[3], k->max),
                             tp_ktype_name((tp_ktype)k->ktype)};
        double key[] = {
            0, (double)k->count, (double)k->sum, k->mean, (double)k->min, (double)k->max, k->ktype};
        tp_tui_table_add(&d->kernels, txt, key);
    }
    tp_tui_table_refresh(&d->kernels);
}

static void build_ranges(tp_tui_data *d) {
    static const tp_tui_col cols[] = {{"range", 0, 0},     {"count", 7, 1},   {"total", 10, 1},
                                      {"GPU time", 10, 1}, {"GPU ops", 8, 1}, {"mean", 10, 1},
                                      {"min", 10, 1},      {"max", 10, 1}};
    tp_tui_table_init(&d->ranges, cols, 8, 2);
    d->ranges.empty = "(no NVTX ranges or annotations in this rank)";
    for (size_t i = 0; i < d->a.nv.n; i++) {
        const tp_an_range *r = &d->a.nv.r[i];
        char cnt[24], ops[24], b[5][32], lb[512];
        snprintf(cnt, sizeof cnt, "%zu", r->count);
        snprintf(ops, sizeof ops, "%zu", r->n_gpu_ops);
        const char *txt[] = {tp_an_range_label(d->m, r, lb, sizeof lb),
                             cnt,
                             DUR(b[0], r->total),
                             DUR(b[4], r->gpu_ns),
                             ops,
                             DUR(b[1], r->mean),
                             DUR(b[2], r->min),
                             DUR(b[3], r->max)};
        double key[] = {
            0,       (double)r->count, (double)r->total, (double)r->gpu_ns, (double)r->n_gpu_ops,
            r->mean, (double)r->min,   (double)r->max};
        tp_tui_table_add(&d->ranges, txt, key);
    }
    tp_tui_table_refresh(&d->ranges);
}

static void build_copies(tp_tui_data *d) {
    static const tp_tui_col cols[] = {{"copy kind / source", 0, 0},
                                      {"count", 7, 1},
                                      {"bytes", 11, 1},
                                      {"busy", 10, 1},
                                      {"GB/s", 9, 1},
                                      {"max GB/s", 9, 1}};
    tp_tui_table_init(&d->copies, cols, 6, 3);
    d->copies.empty = "(no copies or memsets in this rank)";
    for (size_t i = 0; i < d->a.mem.n_copy; i++) {
        const tp_an_copy *c = &d->a.mem.copy[i];
        char name[64], cnt[24], by[32], busy[32], bw[32], mx[32];
        snprintf(name, sizeof name, c->copy_kind == TP_AN_MEMSET_KIND ? "%s on %s" : "%s from %s",
                 tp_an_copy_kind_name(c->copy_kind), tp_an_mem_kind_name(c->src_kind));
        snprintf(cnt, sizeof cnt, "%zu", c->count);
        snprintf(bw, sizeof bw, "%.2f", c->gbps);
        snprintf(mx, sizeof mx, "%.2f", c->max_gbps);
        const char *txt[] = {
            name, cnt, tp_units_bytes(by, sizeof by, (double)c->bytes), DUR(busy, c->dur_ns),
            bw,   mx};
        double key[] = {0,
                        (double)c->count,
                        (double)c->bytes,
                        (double)c->dur_ns,
                        isnan(c->gbps) ? -1 : c->gbps,
                        isnan(c->max_gbps) ? -1 : c->max_gbps};
        tp_tui_table_add(&d->copies, txt, key);
    }
    if (d->a.mem.n_bw)
        tp_tui_table_note(&d->copies, "Concurrent bandwidth while active, GB/s (mean / median / "
                                      "max over the step function):");
    for (size_t i = 0; i < d->a.mem.n_bw && i < 7; i++) {
        const tp_an_describe_t *b = &d->a.mem.bw[i].bw;
        char line[128];
        snprintf(line, sizeof line, "  %-16s %10.2f %10.2f %10.2f   (%zu points)",
                 d->a.mem.bw[i].type, b->mean, b->p50, b->max, b->count);
        tp_tui_table_note(&d->copies, line);
    }
    tp_tui_table_refresh(&d->copies);
}

static void add_lanes(tp_tui_data *d, const tp_buckets *b, int is_stream) {
    for (size_t i = 0; i < b->n; i++) {
        tp_tui_lane *l = &d->lanes[d->n_lanes++];
        l->is_stream = is_stream;
        l->key = b->key[i];
        l->pid = b->key2[i];
        snprintf(l->label, sizeof l->label, "%s %lld", is_stream ? "stream" : "thread",
                 (long long)b->key[i]);
        l->rows = b->rows + b->off[i];
        l->n = b->off[i + 1] - b->off[i];
    }
}

/* The place of process `pid` in the rank's list (main first, tree order); n_procs: none. */
static size_t proc_index(const tp_rank *r, int64_t pid) {
    size_t i = 0;
    while (i < r->n_procs && r->procs[i].pid != pid)
        i++;
    return i;
}

static int lane_cmp(const void *x, const void *y) {
    const tp_tui_lane *a = x, *b = y;
    if (a->proc != b->proc)
        return a->proc < b->proc ? -1 : 1;
    return (a->key > b->key) - (a->key < b->key);
}

/* A rank of several processes (tp_job): each process's thread lanes together, in the rank's
 * process order, so a worker's come under the process it came from; a worker's lanes are
 * marked "w" and indented by its depth in the tree (tp_tui_lane.prefix). */
static void group_thread_lanes(tp_tui_data *d, size_t first) {
    const tp_rank *r = d->r;
    if (r->n_procs < 2)
        return;
    for (size_t i = first; i < d->n_lanes; i++)
        d->lanes[i].proc = proc_index(r, d->lanes[i].pid);
    qsort(d->lanes + first, d->n_lanes - first, sizeof *d->lanes, lane_cmp);
    for (size_t i = first; i < d->n_lanes; i++) {
        tp_tui_lane *l = &d->lanes[i];
        size_t k = l->proc;
        int depth = 0;
        for (int p = k < r->n_procs ? r->procs[k].parent : -1; p >= 0 && depth < 4;
             p = r->procs[p].parent)
            depth++;
        if (k < r->n_procs && r->procs[k].role == TP_PROC_WORKER)
            snprintf(l->prefix, sizeof l->prefix, "%*sw ", depth > 3 ? 3 : depth - 1, "");
    }
}

/* A sample's order key: its thread, then its time. */
typedef struct {
    uint32_t pid, tid;
    int64_t ts;
    uint32_t i;
} samp_key;

static int samp_cmp(const void *x, const void *y) {
    const samp_key *a = x, *b = y;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    if (a->tid != b->tid)
        return a->tid < b->tid ? -1 : 1;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

/* The samples of each sampled thread onto its lane (from first, the thread lanes), a lane of
 * its own for a thread with samples and no event; lanes grow to hold them. */
static void add_sampled(tp_tui_data *d, size_t first) {
    const tp_samples *sa = &d->r->samples;
    if (!sa->n)
        return;
    samp_key *k = tp_mem_xalloc(sa->n, sizeof *k);
    for (size_t i = 0; i < sa->n; i++)
        k[i] = (samp_key){sa->pid[i], sa->tid[i], sa->ts[i], (uint32_t)i};
    qsort(k, sa->n, sizeof *k, samp_cmp);
    for (size_t i = 0, j; i < sa->n; i = j) {
        for (j = i; j < sa->n && k[j].pid == k[i].pid && k[j].tid == k[i].tid; j++)
            ;
        size_t li = first;
        while (li < d->n_lanes && (d->lanes[li].pid != k[i].pid || d->lanes[li].key != k[i].tid))
            li++;
        if (li == d->n_lanes) {
            d->lanes = tp_mem_xrealloc(d->lanes, d->n_lanes + 2, sizeof *d->lanes);
            tp_tui_lane *l = &d->lanes[d->n_lanes++];
            memset(l, 0, sizeof *l);
            l->key = k[i].tid;
            l->pid = k[i].pid;
            snprintf(l->label, sizeof l->label, "thread %lld", (long long)l->key);
        }
        tp_tui_lane *l = &d->lanes[li];
        l->n_samp = j - i;
        l->samp = tp_mem_xalloc(l->n_samp, sizeof *l->samp);
        l->samp_cum = tp_mem_xalloc(l->n_samp + 1, sizeof *l->samp_cum);
        l->samp_cum[0] = 0;
        for (size_t q = i; q < j; q++) {
            uint32_t s = k[q].i;
            l->samp[q - i] = s;
            l->samp_cum[q - i + 1] = l->samp_cum[q - i] + (int64_t)sa->cpu_ns[s];
            l->native |= (sa->flags[s] & TP_SAMPLE_F_NATIVE) != 0;
        }
    }
    free(k);
}

/* The first of lane `l`'s samples whose period ends after t (l->n_samp: none). */
static size_t samp_after(const tp_samples *sa, const tp_tui_lane *l, int64_t t) {
    size_t lo = 0, hi = l->n_samp;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sa->ts[l->samp[mid]] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The part of sample s's CPU clock that falls before t (its clock spread over its period). */
static int64_t cpu_before(const tp_samples *sa, uint32_t s, int64_t t) {
    int64_t end = sa->ts[s], p = (int64_t)sa->period_ns[s], start = end - p;
    if (p <= 0 || t <= start)
        return 0;
    if (t >= end)
        return (int64_t)sa->cpu_ns[s];
    return (int64_t)((double)sa->cpu_ns[s] * (double)(t - start) / (double)p);
}

int64_t tp_tui_data_lane_cpu(const tp_tui_data *d, const tp_tui_lane *l, int64_t a, int64_t b) {
    const tp_samples *sa = &d->r->samples;
    if (!l->n_samp || b <= a)
        return 0;
    /* the periods ending in (a, b] whole, less the first one's part before a, plus the part
     * before b of the one that ends after b */
    size_t i = samp_after(sa, l, a), j = samp_after(sa, l, b);
    int64_t cpu = l->samp_cum[j] - l->samp_cum[i];
    if (i < j)
        cpu -= cpu_before(sa, l->samp[i], a);
    if (j < l->n_samp)
        cpu += cpu_before(sa, l->samp[j], b) - (i == j ? cpu_before(sa, l->samp[j], a) : 0);
    return cpu;
}

static void build_lanes(tp_tui_data *d) {
    const tp_rank *r = d->r;
    d->lanes = calloc(r->streams.n + r->threads.n + 1, sizeof *d->lanes);
    if (!d->lanes)
        abort();
    add_lanes(d, &r->streams, 1);
    size_t first_thread = d->n_lanes;
    add_lanes(d, &r->threads, 0);
    add_sampled(d, first_thread);
    group_thread_lanes(d, first_thread);
    for (size_t i = 0; i < d->n_lanes; i++) {
        tp_tui_lane *l = &d->lanes[i];
        tp_tui_levels_build(&r->ev, l->rows, l->n, l->is_stream, &l->lv, &l->n_lv);
    }
    for (size_t i = 0; i < r->ev.n; i++)
        d->n_names = r->ev.name[i] >= d->n_names ? r->ev.name[i] + 1 : d->n_names;
}

/* The analyses the views show (launch, queue and overlap have no view yet). */
#define TUI_ANALYSES                                                                               \
    (TP_RA_TEMPORAL | TP_RA_IDLE | TP_RA_KERNELS | TP_RA_MEMORY | TP_RA_NVTX | TP_RA_DIAGNOSIS |   \
     TP_RA_MEMUSE | TP_RA_CPUOPS)

void tp_tui_data_open(tp_tui_data *d, const tp_model *m, const tp_rank *r, const tp_an_opts *o) {
    memset(d, 0, sizeof *d);
    d->m = m;
    d->r = r;
    if (o)
        d->opts = *o;
    else
        tp_an_opts_init(&d->opts);
    tp_an_drops_compute(r, &d->drops); /* the title bar's warning, on every view */
    d->t_first = r->ev.n ? r->ev.ts[0] : 0;
    d->t_last = d->t_first;
    for (size_t i = 0; i < r->ev.n; i++)
        if (r->ev.ts[i] + tp_ev_dur(&r->ev, i) > d->t_last)
            d->t_last = r->ev.ts[i] + tp_ev_dur(&r->ev, i);
}

static void build_idle_split(tp_tui_data *d) {
    for (size_t s = 0; s < d->a.idle.n; s++)
        for (int c = 0; c < TP_IDLE_COUNT; c++)
            d->idle_split[c] += d->a.idle.s[s].idle[c];
}

/* What each analysis brings besides its result: the arrangement the views draw. */
static const struct {
    unsigned bit;
    void (*arrange)(tp_tui_data *d);
} arrangements[] = {
    {TP_RA_IDLE, build_idle_split}, {TP_RA_KERNELS, build_kernels}, {TP_RA_NVTX, build_ranges},
    {TP_RA_MEMORY, build_copies},   {TP_TUI_LANES, build_lanes},
};

void tp_tui_data_need(tp_tui_data *d, unsigned which) {
    which &= ~TP_TUI_RANKS; /* the app's part */
    if (which & TP_RA_ALL)
        which |= TP_TUI_VIEW;
    unsigned fresh = which & ~d->ready;
    if (!fresh)
        return;
    if (fresh & TP_TUI_VIEW) /* the view (and the drops again, the same figures) */
        tp_rank_analysis_run(&d->a, d->m, d->r, &d->opts, 0);
    tp_rank_analysis_more(&d->a, fresh & TP_RA_ALL);
    for (size_t i = 0; i < sizeof arrangements / sizeof *arrangements; i++)
        if (fresh & arrangements[i].bit)
            arrangements[i].arrange(d);
    d->ready |= fresh;
}

void tp_tui_data_build(tp_tui_data *d, const tp_model *m, const tp_rank *r, const tp_an_opts *o) {
    tp_tui_data_open(d, m, r, o);
    tp_tui_data_need(d, TUI_ANALYSES | TP_TUI_VIEW | TP_TUI_LANES);
}

void tp_tui_data_free(tp_tui_data *d) {
    tp_tui_table_free(&d->kernels);
    tp_tui_table_free(&d->ranges);
    tp_tui_table_free(&d->copies);
    for (size_t i = 0; i < d->n_lanes; i++) {
        tp_tui_levels_free(d->lanes[i].lv, d->lanes[i].n_lv);
        free(d->lanes[i].samp), free(d->lanes[i].samp_cum);
    }
    free(d->lanes);
    tp_rank_analysis_free(&d->a);
    memset(d, 0, sizeof *d);
}

long tp_tui_data_range_index(const tp_tui_data *d, long row) {
    const tp_events *ev = &d->r->ev;
    if (row < 0 || (size_t)row >= ev->n || ev->cat[row] != TP_CAT_USER_ANNOTATION)
        return -1;
    for (size_t i = 0; i < d->a.nv.n; i++)
        if (d->a.nv.r[i].name == ev->name[row] && d->a.nv.r[i].domain == tp_ev_domain(ev, row))
            return (long)i;
    return -1;
}

long tp_tui_data_op_at(const tp_tui_data *d, const tp_tui_lane *l, int64_t a, int64_t b) {
    const tp_events *ev = &d->r->ev;
    long best = -1;
    int64_t best_ov = -1;
    for (size_t i = 0; i < l->n && ev->ts[l->rows[i]] < b; i++) {
        uint32_t r = l->rows[i];
        int64_t s = ev->ts[r], e = s + tp_ev_dur(ev, r);
        if (e < a || (e == a && e > s))
            continue;
        int64_t ov = (e < b ? e : b) - (s > a ? s : a);
        if (best < 0 || tp_ev_depth(ev, r) > tp_ev_depth(ev, (size_t)best) ||
            (tp_ev_depth(ev, r) == tp_ev_depth(ev, (size_t)best) && ov > best_ov))
            best = r, best_ov = ov;
    }
    return best;
}

long tp_tui_data_launcher(const tp_tui_data *d, long row) {
    const tp_events *ev = &d->r->ev;
    if (row < 0 || tp_ev_stream(ev, row) == -1 || tp_ev_corr(ev, row) == -1)
        return -1;
    const uint32_t *rows;
    size_t n = tp_rank_corr_rows(d->r, tp_ev_corr(ev, row), &rows);
    long best = -1;
    for (size_t i = 0; i < n; i++) {
        if (tp_ev_stream(ev, rows[i]) != -1)
            continue;
        if (best < 0 ||
            ((ev->flags[rows[i]] & TP_EVF_LAUNCH) && !(ev->flags[best] & TP_EVF_LAUNCH)))
            best = rows[i];
    }
    return best;
}

long tp_tui_data_range_of(const tp_tui_data *d, long row) {
    return tp_an_enclosing_row(&d->r->ev, row, TP_AN_RANGES_ANNOTATIONS | TP_AN_ENCLOSING_SELF);
}

long tp_tui_data_launched(const tp_tui_data *d, long row) {
    const tp_events *ev = &d->r->ev;
    if (row < 0 || tp_ev_stream(ev, row) != -1 || tp_ev_corr(ev, row) == -1)
        return -1;
    const uint32_t *rows;
    size_t n = tp_rank_corr_rows(d->r, tp_ev_corr(ev, row), &rows);
    for (size_t i = 0; i < n; i++)
        if (tp_ev_stream(ev, rows[i]) != -1)
            return rows[i];
    return -1;
}

long tp_tui_data_lane_of(const tp_tui_data *d, long row, int *level) {
    const tp_events *ev = &d->r->ev;
    if (row < 0 || (size_t)row >= ev->n)
        return -1;
    int gpu = tp_ev_stream(ev, row) != -1;
    for (size_t li = 0; li < d->n_lanes; li++) {
        const tp_tui_lane *l = &d->lanes[li];
        if (l->is_stream != gpu || l->key != (gpu ? tp_ev_stream(ev, row) : tp_ev_tid(ev, row)) ||
            (!gpu && l->pid != tp_ev_pid(ev, row)))
            continue;
        for (int k = 0; k < l->n_lv; k++)
            if (tp_tui_level_find(&l->lv[k], ev, (uint32_t)row) >= 0) {
                if (level)
                    *level = k;
                return (long)li;
            }
    }
    return -1;
}

long tp_tui_data_step_of(const tp_tui_data *d, long row) {
    const tp_events *ev = &d->r->ev;
    if (row >= 0 && tp_ev_stream(ev, row) != -1)
        row = tp_tui_data_launcher(d, row);
    long step = -1;
    for (long p = row; p >= 0; p = tp_ev_parent(ev, (size_t)p))
        if (ev->cat[p] == TP_CAT_USER_ANNOTATION)
            step = p;
    return step;
}

long tp_tui_data_step_next(const tp_tui_data *d, long step, int dir) {
    const tp_events *ev = &d->r->ev;
    int k = 0;
    long li = tp_tui_data_lane_of(d, step, &k);
    if (li < 0)
        return -1;
    const tp_tui_level *lv = &d->lanes[li].lv[k];
    long i = tp_tui_level_find(lv, ev, (uint32_t)step);
    for (i += dir > 0 ? 1 : -1; i >= 0 && (size_t)i<lv->n; i += dir> 0 ? 1 : -1)
        if (ev->name[lv->rows[i]] == ev->name[step] && ev->cat[lv->rows[i]] == ev->cat[step])
            return lv->rows[i];
    return -1;
}

typedef struct {
    int64_t dur, ts;
    uint32_t row;
} by_length;

static int longest_first(const void *x, const void *y) {
    const by_length *a = x, *b = y;
    if (a->dur != b->dur)
        return a->dur > b->dur ? -1 : 1;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    return (a->row > b->row) - (a->row < b->row);
}

long tp_tui_data_nth_longest(const tp_tui_data *d, uint32_t name, unsigned cats, size_t k) {
    const tp_events *ev = &d->r->ev;
    const tp_buckets *b = &d->r->cats;
    by_length *v = NULL;
    size_t n = 0, cap = 0;
    for (size_t c = 0; c < b->n; c++) {
        if (b->key[c] < 0 || b->key[c] >= 32 || !(cats & (1u << b->key[c])))
            continue;
        for (uint32_t i = b->off[c]; i < b->off[c + 1]; i++) {
            uint32_t r = b->rows[i];
            if (ev->name[r] != name)
                continue;
            if (n == cap)
                cap = cap ? 2 * cap : 64, v = tp_mem_xrealloc(v, cap, sizeof *v);
            v[n++] = (by_length){tp_ev_dur(ev, r), ev->ts[r], r};
        }
    }
    long row = -1;
    if (n && k % n == 0) { /* the longest: one pass */
        size_t best = 0;
        for (size_t i = 1; i < n; i++)
            best = longest_first(&v[i], &v[best]) < 0 ? i : best;
        row = v[best].row;
    } else if (n) {
        qsort(v, n, sizeof *v, longest_first);
        row = v[k % n].row;
    }
    free(v);
    return row;
}

/* Case-insensitive strstr. */
static int contains(const char *s, const char *q) {
    size_t nq = strlen(q);
    for (; *s; s++) {
        size_t i = 0;
        while (i < nq && s[i] && tolower((unsigned char)s[i]) == tolower((unsigned char)q[i]))
            i++;
        if (i == nq)
            return 1;
    }
    return nq == 0;
}

long tp_tui_data_find(const tp_tui_data *d, const char *q, int64_t t, long after, int dir) {
    const tp_events *ev = &d->r->ev;
    size_t n = ev->n, lb = 0;
    if (!n || !q[0])
        return -1;
    /* Rows are sorted by ts, so their order is time order: walk once around from the row
     * after `after` (or from time t). Each distinct name is matched once (match[id]: 0 not
     * yet, 1 no, 2 yes), so a walk over millions of rows compares a few hundred names. */
    while (after < 0 && lb < n && ev->ts[lb] < t)
        lb++;
    size_t first = after >= 0 ? (size_t)after + (dir > 0 ? 1 : n - 1) : lb + (dir > 0 ? 0 : n - 1);
    uint8_t *match = tp_mem_xcalloc(d->n_names + 1, 1);
    long hit = -1;
    for (size_t k = 0; k < n && hit < 0; k++) {
        size_t i = (dir > 0 ? first + k : first + n - k) % n;
        uint32_t id = ev->name[i] < d->n_names ? ev->name[i] : d->n_names;
        if (!match[id])
            match[id] = contains(tp_model_str(d->m, ev->name[i]), q) ? 2 : 1;
        hit = match[id] == 2 ? (long)i : -1;
    }
    free(match);
    return hit;
}

const char *tp_tui_data_proc_name(const tp_tui_data *d, int64_t pid, char *buf, size_t n,
                                  const char **role) {
    const tp_process *p = tp_rank_process(d->r, pid);
    *role = p ? tp_proc_role_name(p->role) : NULL;
    const char *cmd = p ? tp_model_str(d->m, p->command) : "";
    size_t len = strcspn(cmd, " "); /* the program, without its arguments or folder */
    const char *base = cmd;
    for (size_t i = 0; i < len; i++)
        if (cmd[i] == '/')
            base = cmd + i + 1;
    len -= (size_t)(base - cmd);
    snprintf(buf, n, "%.*s", (int)len, base);
    return buf;
}
