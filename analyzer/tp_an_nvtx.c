/* tp_an_nvtx: annotation range summary and GPU time per range. */
#include "tp_an_nvtx.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_an_enclosing.h"
#include "tp_an_stats.h"

/* Ranges are keyed by (name, domain): one name in two NVTX domains is two ranges. */
static uint64_t range_key(uint32_t name, uint32_t domain) {
    return (uint64_t)name << 32 | domain;
}

static int cmp_name(const void *a, const void *b) {
    const tp_an_range *p = a, *q = b;
    uint64_t x = range_key(p->name, p->domain), y = range_key(q->name, q->domain);
    return (x > y) - (x < y);
}

static int cmp_total(const void *a, const void *b) {
    const tp_an_range *x = a, *y = b;
    if (x->total != y->total)
        return x->total > y->total ? -1 : 1;
    return cmp_name(x, y);
}

/* The ranges by (name, domain): per name id, the first of its ranges (index + 1 into out->r;
 * 0: none), and per range the next one of its name (a name in two domains: a chain of two).
 * A dense index, as the name ids are below the pool's count: a load where a hash of the key
 * and a probe were asked per annotation row. */
typedef struct {
    uint32_t *first; /* per name id */
    uint32_t *next;  /* per range */
    size_t cap;      /* of out->r and next */
} range_table;

static void table_link(range_table *t, const tp_an_nvtx *out, size_t k) {
    t->next[k] = t->first[out->r[k].name];
    t->first[out->r[k].name] = (uint32_t)(k + 1);
}

static tp_an_range *find(const range_table *t, tp_an_nvtx *out, uint32_t name, uint32_t domain) {
    for (uint32_t k = t->first[name]; k; k = t->next[k - 1])
        if (out->r[k - 1].domain == domain)
            return &out->r[k - 1];
    return NULL;
}

/* Adds view row i (an annotation row) to its range. */
static void add_range_row(const tp_an_view *v, tp_an_nvtx *out, range_table *t, size_t i) {
    const tp_events *ev = &v->r->ev;
    uint32_t name = ev->name[tp_an_view_row(v, i)], domain = tp_ev_domain(ev, tp_an_view_row(v, i));
    int64_t dur = tp_an_view_dur(v, i);
    tp_an_range *r = find(t, out, name, domain);
    if (!r) {
        size_t cap = t->cap;
        tp_an_grow((void **)&out->r, &t->cap, out->n + 1, sizeof *out->r);
        tp_an_grow((void **)&t->next, &cap, out->n + 1, sizeof *t->next);
        r = &out->r[out->n++];
        *r = (tp_an_range){.name = name, .domain = domain, .min = dur, .max = dur};
        table_link(t, out, out->n - 1);
    }
    r->count++;
    r->total = tp_an_add(r->total, dur);
    r->min = dur < r->min ? dur : r->min;
    r->max = dur > r->max ? dur : r->max;
}

/* One tp_an_range per annotation name and domain, sorted by (name id, domain), found through
 * `t`. The rows are added in view order, one at a time, to their range: each range's count,
 * sum (in row order), min and max are what a stable sort of all of them by (name, domain)
 * gave, without the per-row array and its sort. */
static void summarize_ranges(const tp_an_view *v, tp_an_nvtx *out, range_table *t) {
    const tp_events *ev = &v->r->ev;
    t->first = tp_an_alloc((size_t)tp_model_n_strings(v->m) + 1, sizeof *t->first);
    size_t na;
    const uint32_t *ann =
        tp_an_view_cat_rows(v, TP_CAT_USER_ANNOTATION, &na); /* the same rows, in order */
    for (size_t k = 0, n = ann ? na : v->n; k < n; k++) {    /* one call site: inlined */
        size_t i = ann ? ann[k] : k;
        if (!tp_an_view_gpu(v, i) &&
            (ann || ev->cat[tp_an_view_row(v, i)] == TP_CAT_USER_ANNOTATION))
            add_range_row(v, out, t, i);
    }
    if (!out->r) /* (an array even without ranges, as before) */
        out->r = tp_an_alloc(1, sizeof *out->r);
    qsort(out->r, out->n, sizeof *out->r, cmp_name); /* distinct keys */
    for (size_t k = 0; k < out->n; k++)              /* the index to the sorted order */
        t->first[out->r[k].name] = 0;
    for (size_t k = 0; k < out->n; k++)
        table_link(t, out, k);
    for (size_t k = 0; k < out->n; k++) {
        out->r[k].mean = (double)out->r[k].total / (double)out->r[k].count;
        /* sorted by (name, domain): a name in two domains is two neighbours */
        if (k && out->r[k].name == out->r[k - 1].name)
            out->r[k].shared_name = out->r[k - 1].shared_name = 1;
    }
}

typedef struct {
    long last_a; /* the range found last and its entry: ops come in runs of one range */
    tp_an_range *last_r;
} gpu_walk;

/* Adds GPU row i (a kernel, copy or memset) to the range around its launch. */
static void add_gpu_row(const tp_an_view *v, tp_an_nvtx *out, const range_table *t, gpu_walk *w,
                        size_t i) {
    const tp_events *ev = &v->r->ev;
    int64_t d = tp_an_view_dur(v, i);
    long a = tp_an_view_link(v, i) >= 0
                 ? tp_an_enclosing_row(ev, (long)tp_an_view_row(v, tp_an_view_link(v, i)),
                                       TP_AN_RANGES_ANNOTATIONS)
                 : -1;
    if (a >= 0 && a != w->last_a)
        w->last_a = a, w->last_r = find(t, out, ev->name[a], tp_ev_domain(ev, a));
    tp_an_range *r = a >= 0 ? w->last_r : NULL;
    if (!r) {
        out->unattributed_ops++;
        out->unattributed_ns = tp_an_add(out->unattributed_ns, d);
        return;
    }
    r->n_gpu_ops++;
    r->gpu_ns = tp_an_add(r->gpu_ns, d);
}

static int gpu_cat(uint8_t c) {
    return c == TP_CAT_KERNEL || c == TP_CAT_MEMCPY || c == TP_CAT_MEMSET;
}

static void attribute_gpu(const tp_an_view *view, tp_an_nvtx *out, const range_table *t) {
    /* the sums' stores: the view's pointers in registers through a copy (tp_an_view.h) */
    const tp_an_view lv = *view, *v = &lv;
    const tp_events *ev = &v->r->ev;
    gpu_walk w = {-1, NULL};
    static const tp_cat kinds[] = {TP_CAT_KERNEL, TP_CAT_MEMCPY, TP_CAT_MEMSET};
    size_t n;
    /* kind by kind when the index has them: each sum is of durations >= 0 (the model's own
     * times), which tp_an_add sums to the same figure in any order; else one pass */
    int by_kind = tp_an_view_cat_rows(view, kinds[0], &n) != NULL;
    for (size_t c = 0; c < (by_kind ? sizeof kinds / sizeof kinds[0] : 1); c++) {
        const uint32_t *rows = by_kind ? tp_an_view_cat_rows(view, kinds[c], &n) : NULL;
        for (size_t k = 0, nk = rows ? n : v->n; k < nk; k++) { /* one call site: inlined */
            size_t i = rows ? rows[k] : k;
            if (tp_an_view_gpu(v, i) && (rows || gpu_cat(ev->cat[tp_an_view_row(v, i)])))
                add_gpu_row(v, out, t, &w, i);
        }
    }
}

const char *tp_an_range_label(const tp_model *m, const tp_an_range *r, char *buf, size_t n) {
    if (r->shared_name && r->domain)
        snprintf(buf, n, "[%s] %s", tp_model_str(m, r->domain), tp_model_str(m, r->name));
    else
        snprintf(buf, n, "%s", tp_model_str(m, r->name));
    return buf;
}

void tp_an_nvtx_run(const tp_an_view *v, tp_an_nvtx *out) {
    memset(out, 0, sizeof *out);
    range_table t = {0};
    summarize_ranges(v, out, &t);
    attribute_gpu(v, out, &t);
    free(t.first), free(t.next);
    if (out->n)
        qsort(out->r, out->n, sizeof *out->r, cmp_total);
}

void tp_an_nvtx_free(tp_an_nvtx *out) {
    if (!out)
        return;
    free(out->r);
    memset(out, 0, sizeof *out);
}
