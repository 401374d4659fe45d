/* tp_an_kernels: kernel-type overlap breakdown and per-kernel statistics (HTA's
 * get_gpu_kernel_breakdown with memory kernels, un-folded). */
#include "tp_an_kernels.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_an_ivset.h"
#include "tp_an_stats.h"
#include "tp_an_temporal.h"
#include "tp_mem.h"
#include "tp_sort.h"

const char *tp_an_kernel_class_label(unsigned mask, char *buf, size_t size) {
    buf[0] = 0;
    size_t off = 0;
    for (int t = 0; t < 3; t++) {
        if (!(mask & (1u << t)))
            continue;
        int w = snprintf(buf + off, size - off, "%s%s", off ? " overlapping " : "",
                         tp_ktype_name((tp_ktype)t));
        if (w < 0 || (size_t)w >= size - off)
            break;
        off += (size_t)w;
    }
    return buf;
}

typedef struct {
    int64_t t;
    int delta; /* +mask at a start, -mask at an end */
} tp_edge;

/* The sweep over the edges in time order, fed one edge at a time: the running mask says
 * which types are active from the previous edge to this one. The sums are the sweep's own
 * (copied out at its end by sweep_done): kept in the output, each one's store could be to
 * any int64 the sweep reads (the view's times), so every edge reloaded them. */
typedef struct {
    int running, compat;
    size_t n; /* edges seen */
    tp_edge last;
    int64_t class_ns[TP_KT_CLASSES];
} sweep;

static inline void sweep_edge(sweep *w, tp_edge e) {
    if (w->n++) {
        w->running += w->last.delta;
        int64_t d = e.t - w->last.t;
        if (w->compat)
            d = d / 1000 * 1000; /* HTA: astype(int) on µs per segment */
        if (w->running > 0 && w->running < TP_KT_CLASSES)
            w->class_ns[w->running] = tp_an_add(w->class_ns[w->running], d);
    }
    w->last = e;
}

/* The sweep's sums into out, and their total. */
static void sweep_done(const sweep *w, tp_an_kernels *out) {
    memcpy(out->class_ns, w->class_ns, sizeof out->class_ns);
    for (int c = 1; c < TP_KT_CLASSES; c++)
        out->class_total = tp_an_add(out->class_total, out->class_ns[c]);
}

/* Sweeps the edges of the three types in time order, ties by type: what a stable sort of
 * the concatenation gives. Each type's run is ascending when its merged intervals are
 * disjoint and none ends before it starts (HTA's rounding can make one); then the three
 * runs are merged as they are swept (no ordered copy), else the runs are sorted in place. */
static void sweep_edges(tp_edge *e, const size_t *off, sweep *w, tp_scratch *s) {
    size_t at[3] = {off[0], off[1], off[2]};
    for (int t = 0; t < 3; t++)
        for (size_t j = off[t] + 1; j < off[t + 1]; j++)
            if (e[j].t < e[j - 1].t) {
                tp_sort_structs_i64_s(e, off[3], sizeof *e, offsetof(tp_edge, t), s);
                for (size_t k = 0; k < off[3]; k++)
                    sweep_edge(w, e[k]);
                return;
            }
    int live[3], nl = 0; /* the types with edges left, in type order (ties: the first) */
    for (int t = 0; t < 3; t++)
        if (at[t] < off[t + 1])
            live[nl++] = t;
    while (nl > 1) {
        int best = live[0];
        for (int k = 1; k < nl; k++)
            if (e[at[live[k]]].t < e[at[best]].t)
                best = live[k];
        sweep_edge(w, e[at[best]++]);
        if (at[best] == off[best + 1]) { /* its run is done: the others stay in order */
            int k = 0;
            while (live[k] != best)
                k++;
            for (; k + 1 < nl; k++)
                live[k] = live[k + 1];
            nl--;
        }
    }
    for (size_t j = nl ? at[live[0]] : 0; nl && j < off[live[0] + 1]; j++)
        sweep_edge(w, e[j]);
}

typedef struct {
    tp_edge *e;
    size_t n;
    int bit;
} edge_sink;

/* A merged run of one type, as its two edges. */
static void run_edges(void *ctx, int64_t a, int64_t b) {
    edge_sink *k = ctx;
    k->e[k->n++] = (tp_edge){a, k->bit};
    k->e[k->n++] = (tp_edge){b, -k->bit};
}

/* One type's edges as its runs come (tp_an_run_cursor): the current run [a, b] and which of
 * its edges is next. */
typedef struct {
    tp_an_run_cursor c;
    int64_t a, b;
    int half; /* 0: a (the start) is next, 1: b */
    int live; /* a run is there */
} edge_stream;

static inline int64_t edge_at(const edge_stream *s) {
    return s->half ? s->b : s->a;
}

/* Steps s past its next edge; 0 when the one after it is earlier (HTA's rounding can make a
 * run end before it starts; a run starts after every end before it), which sweep_edges would
 * sort. */
static inline __attribute__((always_inline)) int edge_next(edge_stream *s) {
    if (!s->half) {
        s->half = 1;
        return 1;
    }
    s->half = 0;
    s->live = tp_an_run_cursor_next(&s->c, &s->a, &s->b);
    return !s->live || s->b >= s->a;
}

/* sweep_edges over the three types' edges as their runs are merged, when the view has
 * gpu_order: the same edges in the same order (the earliest, ties by type), with no array of
 * them (32 bytes a run: 73 MiB of scratch on a 10 M-record trace, written once and read
 * once). The type with the next edge keeps it while its edges come before the others' next
 * ones (most runs are of one type). Returns 0, having swept part of them, when a type's edges
 * do not ascend (then sweep_edges sorts them all). */
static int sweep_streamed(const tp_an_view *v, sweep *out) {
    /* the sweep's state in a local: through `out` each edge's stores could be to the runs'
     * int64 times (s[]), which the loop then read again */
    sweep lw = *out, *w = &lw;
    edge_stream s[3];
    for (int t = 0; t < 3; t++) {
        if (!tp_an_run_cursor_open(&s[t].c, v, 1u << t))
            return 0;
        s[t].half = 1;
        if (!edge_next(&s[t]))
            return 0;
    }
    for (;;) {
        int t = -1;
        for (int u = 0; u < 3; u++)
            if (s[u].live && (t < 0 || edge_at(&s[u]) < edge_at(&s[t])))
                t = u;
        if (t < 0)
            break;
        /* t's edges come next while before the next edge of each type below t, and not
         * after that of each above it (ties go to the lower type) */
        int64_t lo = INT64_MAX, hi = INT64_MAX;
        int has_lo = 0, has_hi = 0;
        for (int u = 0; u < 3; u++) {
            if (u == t || !s[u].live)
                continue;
            int64_t x = edge_at(&s[u]);
            if (u < t)
                lo = x < lo ? x : lo, has_lo = 1;
            else
                hi = x < hi ? x : hi, has_hi = 1;
        }
        int bit = 1 << t;
        /* (x < lo, x <= hi) as one test, x <= lim: lo - 1 cannot wrap but at INT64_MIN,
         * where no x is below lo (t then keeps one edge, as before) */
        int one = has_lo && lo == INT64_MIN;
        int64_t lim = has_hi ? hi : INT64_MAX;
        if (has_lo && !one)
            lim = lo - 1 < lim ? lo - 1 : lim;
        /* t's stream in a local while it keeps the edges: indexed by t, its fields went
         * through memory at each edge */
        edge_stream st = s[t];
        do {
            sweep_edge(w, (tp_edge){edge_at(&st), st.half ? -bit : bit});
            if (!edge_next(&st))
                return 0;
        } while (st.live && !one && edge_at(&st) <= lim);
        s[t] = st;
    }
    for (int t = 0; t < 3; t++)
        tp_an_run_cursor_keep(&s[t].c); /* temporal and overlap reuse two */
    *out = lw;
    return 1;
}

/* Merges each type's intervals, then sweeps all edges. Ties do not matter: equal-time
 * edges bound empty spans. With gpu_order the runs are merged as they come (sweep_streamed),
 * else they go to edges in the view's scratch: nothing of one entry per run or row is
 * allocated fresh. */
static void type_breakdown(const tp_an_view *v, tp_an_kernels *out) {
    sweep w = {.compat = v->opts.compat_hta != 0};
    if (sweep_streamed(v, &w)) {
        sweep_done(&w, out);
        return;
    }
    w = (sweep){.compat = v->opts.compat_hta != 0}; /* what the streamed sweep began */
    edge_sink k = {tp_an_tmp(v, 2 * v->n_gpu + 2, sizeof *k.e), 0, 0};
    size_t off[4] = {0};
    for (int t = 0; t < 3; t++) {
        off[t] = k.n;
        k.bit = 1 << t;
        tp_an_gpu_runs_kept(v, 1u << t, run_edges, &k); /* temporal and overlap reuse two */
    }
    off[3] = k.n;
    sweep_edges(k.e, off, &w, v->scratch);
    tp_an_tmp_put(v, k.e);
    sweep_done(&w, out);
}

typedef struct {
    uint32_t name;
    int64_t dur;
} tp_named;

static int cmp_row_sum(const void *a, const void *b) {
    const tp_an_kernel_row *x = a, *y = b;
    if (x->sum != y->sum)
        return x->sum > y->sum ? -1 : 1;
    return (x->name > y->name) - (x->name < y->name);
}

/* One name's row from its durations in ascending order, as the distinct values val[0..nd) with
 * their counts cnt[] (NULL: one each): the sum and the squares summed in that order, a value
 * added as many times as it occurs, so the figures are those of the sorted durations one by
 * one. */
static void fill_row(tp_an_kernel_row *k, uint32_t name, uint8_t kt, const int64_t *val,
                     const uint32_t *cnt, size_t nd) {
    size_t n = 0;
    k->name = name;
    k->ktype = kt;
    k->min = val[0];
    k->max = val[nd - 1];
    for (size_t j = 0; j < nd; j++)
        for (uint32_t c = cnt ? cnt[j] : 1; c; c--, n++)
            k->sum = tp_an_add(k->sum, val[j]);
    k->count = n;
    k->mean = (double)k->sum / (double)n;
    double ss = 0;
    for (size_t j = 0; j < nd; j++) /* (the expression as per value: the same rounding) */
        for (uint32_t c = cnt ? cnt[j] : 1; c; c--)
            ss += ((double)val[j] - k->mean) * ((double)val[j] - k->mean);
    k->std = n > 1 ? sqrt(ss / (double)(n - 1)) : 0;
}

/* A kernel's durations repeat (lb2k: 34,068 calls of one kernel take 2,093 distinct values,
 * spread over 2^20 ns: too wide to sort by counting), so a name's values are counted per
 * distinct value in an open-addressing table and only the distinct ones sorted, instead of a
 * radix sort of them all (29 % of the kernel statistics' instructions). The table grows by
 * doubling (kept under half full) and is kept across names, its used slots cleared. */
typedef struct {
    int64_t *key;
    uint32_t *count; /* per slot; 0: empty */
    uint32_t *slot;  /* the slots in use, in first-seen order */
    size_t cap, n, cap_slot;
    unsigned bits; /* cap == 1 << bits */
} dur_table;

static inline size_t dur_hash(const dur_table *t, int64_t x) {
    return (size_t)(((uint64_t)x * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - t->bits));
}

/* The slot holding x, or the empty one where it would go. */
static inline size_t dur_find(const dur_table *t, int64_t x) {
    size_t h = dur_hash(t, x), mask = t->cap - 1;
    while (t->count[h] && t->key[h] != x)
        h = (h + 1) & mask;
    return h;
}

static void dur_grow(dur_table *t) {
    dur_table g = *t;
    g.bits = t->cap ? t->bits + 1 : 10;
    g.cap = (size_t)1 << g.bits;
    g.key = tp_mem_xalloc(g.cap, sizeof *g.key);
    g.count = tp_mem_xcalloc(g.cap, sizeof *g.count);
    for (size_t j = 0; j < t->n; j++) {
        size_t h = dur_find(&g, t->key[t->slot[j]]);
        g.key[h] = t->key[t->slot[j]];
        g.count[h] = t->count[t->slot[j]];
        g.slot[j] = (uint32_t)h;
    }
    free(t->key), free(t->count);
    *t = g;
}

/* Counts v[0..n) by value; 0 as soon as more than `limit` values are distinct (then sorting
 * them all costs less). */
static int dur_count(dur_table *t, const int64_t *v, size_t n, size_t limit) {
    if (!t->cap)
        dur_grow(t);
    for (size_t i = 0; i < n; i++) {
        size_t h = dur_find(t, v[i]);
        if (!t->count[h]) { /* a new value */
            if (t->n == limit)
                return 0;
            if (2 * (t->n + 1) > t->cap) {
                dur_grow(t);
                h = dur_find(t, v[i]);
            }
            tp_an_grow((void **)&t->slot, &t->cap_slot, t->n + 1, sizeof *t->slot);
            t->key[h] = v[i];
            t->slot[t->n++] = (uint32_t)h;
        }
        t->count[h]++;
    }
    return 1;
}

static void dur_clear(dur_table *t) {
    for (size_t j = 0; j < t->n; j++)
        t->count[t->slot[j]] = 0;
    t->n = 0;
}

/* The row of one name from its n durations v[] (reordered: v holds other values after), by
 * the table when few of them are distinct, else sorted. */
static void name_row(const tp_an_view *v, dur_table *t, tp_an_kernel_row *k, uint32_t name,
                     int64_t *d, size_t n) {
    uint8_t kt = (uint8_t)tp_ktype_of(tp_model_str(v->m, name));
    if (n >= 256 && n < UINT32_MAX && dur_count(t, d, n, n / 4)) { /* (32-bit counts) */
        size_t nd = t->n;
        uint32_t *cnt = tp_an_tmp(v, nd, sizeof *cnt);
        for (size_t j = 0; j < nd; j++) /* the distinct values, over the durations read */
            d[j] = t->key[t->slot[j]];
        tp_sort_i64_s(d, nd, v->scratch);
        for (size_t j = 0; j < nd; j++)
            cnt[j] = t->count[dur_find(t, d[j])];
        dur_clear(t);
        fill_row(k, name, kt, d, cnt, nd);
        tp_an_tmp_put(v, cnt);
        return;
    }
    dur_clear(t);
    if (n > 1)
        tp_sort_i64_s(d, n, v->scratch);
    fill_row(k, name, kt, d, NULL, n);
}

/* A new row at the end of out's rows, zeroed: one per name. */
static tp_an_kernel_row *new_row(tp_an_kernels *out, size_t *cap) {
    tp_an_grow((void **)&out->k, cap, out->n + 1, sizeof *out->k);
    memset(&out->k[out->n], 0, sizeof *out->k);
    return &out->k[out->n++];
}

/* The rows by name of a[0..n), ascending by name, each from name_row: the durations bucketed
 * by name by counting (a trace's names are numbered densely), or, over a wide name range,
 * grouped by a sort of the structs by name. */

/* hi: the largest name in a; at: NULL, or each name's count at at[name + 1] (zero elsewhere,
 * room for every name id + 2), counted by per_name as it wrote a; freed here. */
static void rows_by_name(const tp_an_view *v, tp_named *a, size_t n, uint32_t hi, size_t *at,
                         tp_an_kernels *out) {
    size_t cap = 0;
    int64_t *d = tp_an_tmp(v, n, sizeof *d);
    dur_table t = {0};
    if (n < 2 || (size_t)hi > 4 * n + 4096) {
        /* grouped by name by a sort of the structs (name_row orders each name's durations) */
        const tp_sort_field by[] = {{offsetof(tp_named, name), 1}};
        tp_sort_structs_s(a, n, sizeof *a, by, 1, v->scratch);
        for (size_t i = 0; i < n; i++)
            d[i] = a[i].dur;
        for (size_t i = 0, j; i < n; i = j) {
            for (j = i; j < n && a[j].name == a[i].name; j++)
                ;
            name_row(v, &t, new_row(out, &cap), a[i].name, d + i, j - i);
        }
    } else {
        if (!at) {
            at = tp_mem_xcalloc((size_t)hi + 2, sizeof *at);
            for (size_t i = 0; i < n; i++)
                at[a[i].name + 1]++;
        }
        for (size_t k = 0; k <= hi; k++)
            at[k + 1] += at[k];
        for (size_t i = 0; i < n; i++)
            d[at[a[i].name]++] = a[i].dur; /* at[k] ends where bucket k ends */
        for (size_t k = 0, from = 0; k <= hi; from = at[k++])
            if (at[k] > from)
                name_row(v, &t, new_row(out, &cap), (uint32_t)k, d + from, at[k] - from);
    }
    free(at);
    free(t.key), free(t.count), free(t.slot);
    tp_an_tmp_put(v, d);
}

static void per_name(const tp_an_view *v, tp_an_kernels *out) {
    tp_named *a = tp_an_tmp(v, v->n_gpu + 1, sizeof *a);
    size_t n = 0, *at = NULL;
    uint32_t hi = 0;
    /* names are below the pool's count: where a count per name costs no more than
     * rows_by_name's own (its bound, 4 a row), the names are counted and their largest found
     * as the rows are listed, not by two more passes over them */
    size_t n_names = (size_t)tp_model_n_strings(v->m) + 1;
    if (v->gpu_order && n_names <= 4 * v->n_gpu + 4096) {
        at = tp_mem_xcalloc(n_names + 1, sizeof *at);
        /* the view in a local: the counts' stores (size_t, as the view's) would make each
         * accessor read its column's pointer again */
        const tp_an_view lv = *v;
        for (size_t k = 0; k < lv.n_gpu; k++) {
            uint32_t i = lv.gpu_order[k];
            if (tp_an_view_ktype(&lv, i) != TP_KT_OTHER) {
                uint32_t nm = lv.r->ev.name[tp_an_view_row(&lv, i)];
                hi = nm > hi ? nm : hi;
                at[nm + 1]++;
                a[n++] = (tp_named){nm, tp_an_view_dur(&lv, i)};
            }
        }
    } else if (v->gpu_order) { /* the GPU rows alone (in time order: the rows' order does not
                                  matter, each name's durations are counted or sorted) */
        for (size_t k = 0; k < v->n_gpu; k++) {
            uint32_t i = v->gpu_order[k];
            if (tp_an_view_ktype(v, i) != TP_KT_OTHER)
                a[n++] = (tp_named){v->r->ev.name[tp_an_view_row(v, i)], tp_an_view_dur(v, i)};
        }
    } else {
        for (size_t i = 0; i < v->n; i++)
            if (tp_an_view_gpu(v, i) && tp_an_view_ktype(v, i) != TP_KT_OTHER)
                a[n++] = (tp_named){v->r->ev.name[tp_an_view_row(v, i)], tp_an_view_dur(v, i)};
    }
    if (!at)
        for (size_t i = 0; i < n; i++)
            hi = a[i].name > hi ? a[i].name : hi;
    rows_by_name(v, a, n, hi, at, out);
    if (out->n)
        qsort(out->k, out->n, sizeof *out->k, cmp_row_sum);
    tp_an_tmp_put(v, a);
}

void tp_an_kernels_run(const tp_an_view *v, tp_an_kernels *out) {
    memset(out, 0, sizeof *out);
    type_breakdown(v, out);
    per_name(v, out);
}

void tp_an_kernels_free(tp_an_kernels *out) {
    if (!out)
        return;
    free(out->k);
    memset(out, 0, sizeof *out);
}
