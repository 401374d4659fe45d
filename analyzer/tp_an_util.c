/* tp_an_util: see tp_an_util.h. */
#include "tp_an_util.h"

#include <stdlib.h>

#include "tp_an_ivset.h"
#include "tp_an_stats.h"
#include "tp_an_temporal.h"
#include "tp_mem.h"

int64_t tp_an_util_width(int64_t span_ns) {
    int64_t w = (span_ns + 999) / 1000;
    return w < 1000000 ? 1000000 : w;
}

static int32_t row_device(const tp_an_view *v, size_t i) {
    return tp_ev_device(&v->r->ev, tp_an_view_row(v, i));
}

/* The busy runs of device `dev`: its GPU rows merged as tp_an_gpu_union merges them. */
static void device_busy(const tp_an_view *v, int32_t dev, tp_an_ivset *out) {
    int64_t *ts = tp_an_tmp(v, v->n_gpu, sizeof *ts), *end = tp_an_tmp(v, v->n_gpu, sizeof *end);
    size_t k = 0;
    for (size_t i = 0; i < v->n; i++)
        if (tp_an_view_gpu(v, i) && row_device(v, i) == dev)
            ts[k] = tp_an_view_ts(v, i), end[k] = tp_an_view_end(v, i), k++;
    tp_an_ivset_merge_hta(ts, end, k, out, v->scratch);
    tp_an_tmp_put(v, ts), tp_an_tmp_put(v, end);
}

/* Busy time of runs `s` (sorted, as merged) inside [lo, hi). */
static int64_t busy_in(const tp_an_ivset *s, size_t *from, int64_t lo, int64_t hi) {
    int64_t sum = 0;
    while (*from < s->n && s->b[*from] <= lo)
        (*from)++;
    for (size_t j = *from; j < s->n && s->a[j] < hi; j++) {
        int64_t a = s->a[j] > lo ? s->a[j] : lo, b = s->b[j] < hi ? s->b[j] : hi;
        sum += b > a ? b - a : 0;
    }
    return sum;
}

static void add_point(tp_an_util_point **out, size_t *n, size_t *cap, int32_t dev, int64_t ts,
                      double util) {
    TP_MEM_XGROW(*out, *cap, *n + 1);
    (*out)[(*n)++] = (tp_an_util_point){dev, ts, util};
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

size_t tp_an_util_series(const tp_an_view *v, tp_an_util_point **out) {
    *out = NULL;
    tp_an_temporal t;
    tp_an_temporal_run(v, &t);
    if (!t.has_gpu || t.span <= 0)
        return 0;
    int32_t *devs = tp_an_alloc(v->n_gpu + 1, sizeof *devs);
    size_t nd = 0, n = 0, cap = 0;
    for (size_t i = 0; i < v->n; i++)
        if (tp_an_view_gpu(v, i))
            devs[nd++] = row_device(v, i);
    qsort(devs, nd, sizeof *devs, cmp_i32);
    int64_t w = tp_an_util_width(t.span);
    for (size_t d = 0; d < nd; d++) {
        if (d && devs[d] == devs[d - 1])
            continue;
        tp_an_ivset s = {0};
        device_busy(v, devs[d], &s);
        size_t from = 0;
        for (int64_t lo = t.first_ts; lo < t.last_end; lo += w) {
            int64_t hi = lo + w < t.last_end ? lo + w : t.last_end;
            add_point(out, &n, &cap, devs[d], lo,
                      (double)busy_in(&s, &from, lo, hi) / (double)(hi - lo));
        }
        add_point(out, &n, &cap, devs[d], t.last_end, 0);
        tp_an_ivset_free(&s);
    }
    free(devs);
    return n;
}
