/* tp_an_marks: NVTX marks per name and domain (see the header). */
#include "tp_an_marks.h"

#include <stdlib.h>
#include <string.h>

#include "tp_mem.h"

static int cmp_key(const void *a, const void *b) {
    const tp_an_mark *x = a, *y = b;
    if (x->name != y->name)
        return x->name < y->name ? -1 : 1;
    if (x->domain != y->domain)
        return x->domain < y->domain ? -1 : 1;
    return (x->first > y->first) - (x->first < y->first);
}

static int cmp_count(const void *a, const void *b) {
    const tp_an_mark *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return (x->first > y->first) - (x->first < y->first);
}

void tp_an_marks_run(const tp_an_view *v, tp_an_marks *out) {
    memset(out, 0, sizeof *out);
    const tp_events *ev = &v->r->ev;
    /* a mark is a row of category OTHER (TP_EVF_MARK): where the view has the rank's category
     * index, only those rows are visited, in view order as the walk of every row found them
     * (lb20k: 6.3 M rows tested, ~43 M instructions) */
    size_t nc;
    const uint32_t *other = tp_an_view_cat_rows(v, TP_CAT_OTHER, &nc);
    if (!other)
        nc = v->n;
    tp_an_mark *a = tp_mem_xalloc(nc + 1, sizeof *a);
    size_t n = 0;
    for (size_t k = 0; k < nc; k++) {
        size_t i = other ? other[k] : k;
        uint32_t row = tp_an_view_row(v, i);
        if (!tp_an_view_gpu(v, i) && (ev->flags[row] & TP_EVF_MARK))
            a[n++] = (tp_an_mark){ev->name[row], tp_ev_domain(ev, row), 1, tp_an_view_ts(v, i),
                                  tp_an_view_ts(v, i)};
    }
    qsort(a, n, sizeof *a, cmp_key);
    for (size_t i = 0; i < n; i++) {
        tp_an_mark *last = out->n ? &a[out->n - 1] : NULL;
        if (last && last->name == a[i].name && last->domain == a[i].domain) {
            last->count++;
            last->last = a[i].last; /* sorted by time within a key */
        } else {
            a[out->n++] = a[i];
        }
    }
    out->m = a;
    qsort(out->m, out->n, sizeof *out->m, cmp_count);
}

void tp_an_marks_free(tp_an_marks *out) {
    if (!out)
        return;
    free(out->m);
    memset(out, 0, sizeof *out);
}
