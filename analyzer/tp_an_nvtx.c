/* tp_an_nvtx: annotation range summary and GPU time per range. */
#include "tp_an_nvtx.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_an_enclosing.h"
#include "tp_an_stats.h"
#include "tp_sort.h"

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

static tp_an_range *find(tp_an_nvtx *out, uint32_t name, uint32_t domain) {
    tp_an_range key = {.name = name, .domain = domain};
    if (!out->n)
        return NULL;
    return bsearch(&key, out->r, out->n, sizeof *out->r, cmp_name);
}

typedef struct {
    uint32_t name, domain; /* sorted as range_key: by name, then domain */
    int64_t dur;
} tp_named_dur;

/* One tp_an_range per annotation name and domain, sorted by (name id, domain) (for find). */
static void summarize_ranges(const tp_an_view *v, tp_an_nvtx *out) {
    const tp_events *ev = &v->r->ev;
    tp_named_dur *a = tp_an_tmp(v, v->n + 1, sizeof *a);
    size_t n = 0;
    for (size_t i = 0; i < v->n; i++)
        if (!v->gpu[i] && ev->cat[v->row[i]] == TP_CAT_USER_ANNOTATION)
            a[n++] = (tp_named_dur){ev->name[v->row[i]], tp_ev_domain(ev, v->row[i]),
                                    v->end[i] - v->ts[i]};
    const tp_sort_field by[] = {{offsetof(tp_named_dur, name), 1},
                                {offsetof(tp_named_dur, domain), 1}};
    tp_sort_structs_s(a, n, sizeof *a, by, 2, v->scratch);
    out->r = tp_an_alloc(n + 1, sizeof *out->r);
    for (size_t i = 0; i < n; i++) {
        int fresh = i == 0 || a[i].name != a[i - 1].name || a[i].domain != a[i - 1].domain;
        tp_an_range *r = fresh ? &out->r[out->n++] : &out->r[out->n - 1];
        if (fresh) {
            r->name = a[i].name;
            r->domain = a[i].domain;
            r->min = r->max = a[i].dur;
        }
        r->count++;
        r->total = tp_an_add(r->total, a[i].dur);
        r->min = a[i].dur < r->min ? a[i].dur : r->min;
        r->max = a[i].dur > r->max ? a[i].dur : r->max;
    }
    for (size_t k = 0; k < out->n; k++) {
        out->r[k].mean = (double)out->r[k].total / (double)out->r[k].count;
        /* sorted by (name, domain): a name in two domains is two neighbours */
        if (k && out->r[k].name == out->r[k - 1].name)
            out->r[k].shared_name = out->r[k - 1].shared_name = 1;
    }
    tp_an_tmp_put(v, a);
}

static void attribute_gpu(const tp_an_view *v, tp_an_nvtx *out) {
    const tp_events *ev = &v->r->ev;
    long last_a = -1; /* the range found last and its entry: ops come in runs of one range */
    tp_an_range *last_r = NULL;
    for (size_t i = 0; i < v->n; i++) {
        uint8_t c = ev->cat[v->row[i]];
        if (!v->gpu[i] || (c != TP_CAT_KERNEL && c != TP_CAT_MEMCPY && c != TP_CAT_MEMSET))
            continue;
        int64_t d = v->end[i] - v->ts[i];
        long a = v->link[i] >= 0
                     ? tp_an_enclosing_row(ev, (long)v->row[v->link[i]], TP_AN_RANGES_ANNOTATIONS)
                     : -1;
        if (a >= 0 && a != last_a)
            last_a = a, last_r = find(out, ev->name[a], tp_ev_domain(ev, a));
        tp_an_range *r = a >= 0 ? last_r : NULL;
        if (!r) {
            out->unattributed_ops++;
            out->unattributed_ns = tp_an_add(out->unattributed_ns, d);
            continue;
        }
        r->n_gpu_ops++;
        r->gpu_ns = tp_an_add(r->gpu_ns, d);
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
    summarize_ranges(v, out);
    attribute_gpu(v, out);
    if (out->n)
        qsort(out->r, out->n, sizeof *out->r, cmp_total);
}

void tp_an_nvtx_free(tp_an_nvtx *out) {
    if (!out)
        return;
    free(out->r);
    memset(out, 0, sizeof *out);
}
