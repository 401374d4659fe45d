/* tp_an_idle: idle-time breakdown per stream (HTA's get_idle_time_breakdown, in ns). */
#include "tp_an_idle.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

const char *tp_idle_cat_name(tp_idle_cat c) {
    static const char *const names[] = {"host_wait", "kernel_wait", "other"};
    return (unsigned)c < TP_IDLE_COUNT ? names[c] : "other";
}

int64_t tp_an_idle_total(const tp_an_idle_stream *s) {
    return s->idle[0] + s->idle[1] + s->idle[2];
}

/* HTA only looks at these categories (cuda_sync and runtime rows with a stream are out). */
static int idle_row(const tp_an_view *v, size_t i) {
    if (!v->gpu[i])
        return 0;
    if (!v->opts.compat_hta)
        return 1;
    static const char *const cats[] = {"kernel",     "Kernel", "gpu_memset",     "Memset",
                                       "gpu_memcpy", "Memcpy", "mtia_ccp_events"};
    const char *c = tp_an_view_cat(v, i);
    for (size_t k = 0; k < sizeof cats / sizeof *cats; k++)
        if (strcmp(c, cats[k]) == 0)
            return 1;
    return 0;
}

/* The classes of the gaps between the ops rows[ord[0..n)] (time order) into cls[1..n), their
 * counts into ng[] and the idle sums into s. With ord NULL, rows' own order, while it is one
 * of distinct rising starts: returns 0 as soon as it is not (then nothing in s counts), else
 * 1. */
static int classify_gaps(const tp_an_view *v, const size_t *rows, const size_t *ord, size_t n,
                         tp_an_idle_stream *s, uint8_t *cls, size_t *ng) {
    memset(s->idle, 0, sizeof s->idle);
    memset(ng, 0, TP_IDLE_COUNT * sizeof *ng);
    for (size_t k = 1; k < n; k++) {
        size_t i = rows[ord ? ord[k] : k], h = rows[ord ? ord[k - 1] : k - 1];
        if (!ord && v->ts[i] <= v->ts[h])
            return 0;
        int64_t prev_end = v->end[h];
        int64_t g = v->ts[i] - prev_end;
        int c = TP_IDLE_OTHER;
        if (v->link[i] >= 0 && v->ts[v->link[i]] > prev_end)
            c = TP_IDLE_HOST_WAIT;
        else if (g < v->opts.kernel_wait_ns)
            c = TP_IDLE_KERNEL_WAIT;
        s->idle[c] = tp_an_add(s->idle[c], g);
        cls[k] = (uint8_t)c;
        ng[c]++;
    }
    return 1;
}

/* The gaps again, each into its class's part of gap[] (in order within a class). */
static void fill_gaps(const tp_an_view *v, const size_t *rows, const size_t *ord, size_t n,
                      const uint8_t *cls, double **gap) {
    size_t at[TP_IDLE_COUNT] = {0};
    for (size_t k = 1; k < n; k++) {
        size_t i = rows[ord ? ord[k] : k], h = rows[ord ? ord[k - 1] : k - 1];
        gap[cls[k]][at[cls[k]]++] = (double)(v->ts[i] - v->end[h]);
    }
}

/* The gaps are classified first and then written, each class's after the previous one's in
 * one array of a gap per op: three arrays of that size, filled a part each, took three times
 * the scratch (kept pages of the cache that the queue, beside this analysis on the other
 * thread, then took fresh; docs/PERFORMANCE.md, native report, eighteenth round). */
static void stream_run(const tp_an_view *v, const size_t *rows, size_t n, tp_an_idle_stream *s) {
    double *gap[TP_IDLE_COUNT];
    size_t ng[TP_IDLE_COUNT] = {0};
    uint8_t *cls = tp_an_tmp(v, n, 1);
    const size_t *ord = NULL;
    size_t *own = NULL;
    int64_t *key = NULL;
    s->n_ops = n;
    /* distinct rising starts in view order (native: the model's time order) are numpy's
     * argsort order already: the gaps are taken in that order unless a start does not rise */
    if (!classify_gaps(v, rows, NULL, n, s, cls, ng)) {
        key = tp_an_tmp(v, n, sizeof *key);
        own = tp_an_tmp(v, n, sizeof *own);
        for (size_t k = 0; k < n; k++)
            key[k] = v->ts[rows[k]];
        tp_an_argsort_np(key, n, own, v->scratch);
        tp_an_tmp_put(v, key);
        ord = own;
        classify_gaps(v, rows, ord, n, s, cls, ng);
    }
    double *all = tp_an_tmp(v, n, sizeof *all);
    gap[0] = all;
    for (int c = 1; c < TP_IDLE_COUNT; c++)
        gap[c] = gap[c - 1] + ng[c - 1];
    fill_gaps(v, rows, ord, n, cls, gap);
    tp_an_tmp_put(v, own);
    tp_an_tmp_put(v, cls);
    for (int c = 0; c < TP_IDLE_COUNT; c++)
        tp_an_describe_any_s(gap[c], ng[c], &s->gaps[c], v->scratch);
    tp_an_tmp_put(v, all);
}

/* Ops grouped by stream (stable: each group keeps the view's order), then one stream_run per
 * group; streams come out by id. */
/* The ops are GPU rows (idle_row), so the row list is sized by those, in 32 bits (the view's
 * links are): sized by every view row, in size_t, it took ~2.6 times the scratch it filled
 * on a 10 M-record trace (47 MiB for 18), kept pages that the sort keys and order after it
 * then found taken (docs/PERFORMANCE.md, native report, eighteenth round). */
void tp_an_idle_run(const tp_an_view *v, tp_an_idle *out) {
    memset(out, 0, sizeof *out);
    uint32_t *rows = tp_an_tmp(v, v->n_gpu + 1, sizeof *rows);
    size_t nr = 0, cap = 0;
    for (size_t i = 0; i < v->n; i++)
        if (idle_row(v, i))
            rows[nr++] = (uint32_t)i;
    int64_t *key = tp_an_tmp(v, nr, sizeof *key);
    size_t *ord = tp_an_tmp(v, nr, sizeof *ord);
    for (size_t k = 0; k < nr; k++)
        key[k] = tp_an_view_stream(v, rows[k]);
    tp_an_stable_order(key, nr, ord, v->scratch);
    for (size_t a = 0, b; a < nr; a = b) {
        int64_t stream = key[ord[a]];
        for (b = a; b < nr && key[ord[b]] == stream; b++)
            ord[b] = rows[ord[b]]; /* the group's view rows, in place (no copy per stream) */
        tp_an_grow((void **)&out->s, &cap, out->n + 1, sizeof *out->s); /* a few streams */
        tp_an_idle_stream *s = &out->s[out->n++];
        memset(s, 0, sizeof *s);
        s->stream = stream;
        stream_run(v, ord + a, b - a, s);
    }
    tp_an_tmp_put(v, key);
    tp_an_tmp_put(v, ord);
    tp_an_tmp_put(v, rows);
}

void tp_an_idle_free(tp_an_idle *out) {
    if (!out)
        return;
    free(out->s);
    memset(out, 0, sizeof *out);
}
