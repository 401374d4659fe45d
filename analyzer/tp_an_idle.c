/* tp_an_idle: idle-time breakdown per stream (HTA's get_idle_time_breakdown, in ns). */
#include "tp_an_idle.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tp_mem.h"
#include "tp_sort.h"

const char *tp_idle_cat_name(tp_idle_cat c) {
    static const char *const names[] = {"host_wait", "kernel_wait", "other"};
    return (unsigned)c < TP_IDLE_COUNT ? names[c] : "other";
}

int64_t tp_an_idle_total(const tp_an_idle_stream *s) {
    return s->idle[0] + s->idle[1] + s->idle[2];
}

/* HTA only looks at these categories (cuda_sync and runtime rows with a stream are out). */
static int idle_row(const tp_an_view *v, size_t i) {
    if (!tp_an_view_gpu(v, i))
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
static inline __attribute__((always_inline)) int
classify_gaps_in(const tp_an_view *view, const int64_t *ts64, const uint32_t *rows,
                 const size_t *ord, size_t n, tp_an_idle_stream *s, uint8_t *cls, size_t *ng) {
    const tp_an_view lv = *view, *v = &lv; /* in registers: see tp_an_view.h */
    memset(s->idle, 0, sizeof s->idle);
    memset(ng, 0, TP_IDLE_COUNT * sizeof *ng);
    for (size_t k = 1; k < n; k++) {
        size_t i = rows[ord ? ord[k] : k], h = rows[ord ? ord[k - 1] : k - 1];
        int64_t a = tp_an_view_ts_with(v, ts64, i);
        if (!ord && a <= tp_an_view_ts_with(v, ts64, h))
            return 0;
        int64_t prev_end = tp_an_view_end_with(v, ts64, h);
        int64_t g = a - prev_end;
        int c = TP_IDLE_OTHER;
        int32_t l = tp_an_view_link(v, i);
        if (l >= 0 && tp_an_view_ts_with(v, ts64, (size_t)l) > prev_end)
            c = TP_IDLE_HOST_WAIT;
        else if (g < v->opts.kernel_wait_ns)
            c = TP_IDLE_KERNEL_WAIT;
        s->idle[c] = tp_an_add(s->idle[c], g);
        cls[k] = (uint8_t)c;
        ng[c]++;
    }
    return 1;
}

/* In two copies (tp_an_view_ts_array) */
static int classify_gaps(const tp_an_view *view, const uint32_t *rows, const size_t *ord, size_t n,
                         tp_an_idle_stream *s, uint8_t *cls, size_t *ng) {
    const int64_t *ts64 = tp_an_view_ts_array(view);
    if (ts64)
        return classify_gaps_in(view, ts64, rows, ord, n, s, cls, ng);
    return classify_gaps_in(view, NULL, rows, ord, n, s, cls, ng);
}

/* The gaps again, each into its class's part of gap[] (in order within a class), with each
 * class's least and greatest (lo[], hi[]: the description then counts them without a test
 * of each value as a double). */
static inline __attribute__((always_inline)) void
fill_gaps_in(const tp_an_view *view, const int64_t *ts64, const uint32_t *rows, const size_t *ord,
             size_t n, const uint8_t *cls, int64_t **gap, int64_t *lo, int64_t *hi) {
    const tp_an_view lv = *view, *v = &lv; /* in registers: see tp_an_view.h */
    size_t at[TP_IDLE_COUNT] = {0};
    for (int c = 0; c < TP_IDLE_COUNT; c++)
        lo[c] = INT64_MAX, hi[c] = INT64_MIN;
    for (size_t k = 1; k < n; k++) {
        size_t i = rows[ord ? ord[k] : k], h = rows[ord ? ord[k - 1] : k - 1];
        int64_t g = tp_an_view_ts_with(v, ts64, i) - tp_an_view_end_with(v, ts64, h);
        int c = cls[k];
        gap[c][at[c]++] = g;
        lo[c] = g < lo[c] ? g : lo[c];
        hi[c] = g > hi[c] ? g : hi[c];
    }
}

/* In two copies (tp_an_view_ts_array) */
static void fill_gaps(const tp_an_view *view, const uint32_t *rows, const size_t *ord, size_t n,
                      const uint8_t *cls, int64_t **gap, int64_t *lo, int64_t *hi) {
    const int64_t *ts64 = tp_an_view_ts_array(view);
    if (ts64)
        fill_gaps_in(view, ts64, rows, ord, n, cls, gap, lo, hi);
    else
        fill_gaps_in(view, NULL, rows, ord, n, cls, gap, lo, hi);
}

/* The gaps are classified first and then written, each class's after the previous one's in
 * one array of a gap per op: three arrays of that size, filled a part each, took three times
 * the scratch (kept pages of the cache that the queue, beside this analysis on the other
 * thread, then took fresh; docs/PERFORMANCE.md, native report, eighteenth round). */
static void stream_run(const tp_an_view *v, const uint32_t *rows, size_t n, tp_an_idle_stream *s) {
    int64_t *gap[TP_IDLE_COUNT], lo[TP_IDLE_COUNT], hi[TP_IDLE_COUNT];
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
            key[k] = tp_an_view_ts(v, rows[k]);
        tp_an_argsort_np(key, n, own, v->scratch);
        tp_an_tmp_put(v, key);
        ord = own;
        classify_gaps(v, rows, ord, n, s, cls, ng);
    }
    int64_t *all = tp_an_tmp(v, n, sizeof *all);
    gap[0] = all;
    for (int c = 1; c < TP_IDLE_COUNT; c++)
        gap[c] = gap[c - 1] + ng[c - 1];
    fill_gaps(v, rows, ord, n, cls, gap, lo, hi);
    tp_an_tmp_put(v, own);
    tp_an_tmp_put(v, cls);
    for (int c = 0; c < TP_IDLE_COUNT; c++)
        tp_an_describe_any_i64_s(gap[c], ng[c], lo[c], hi[c], &s->gaps[c], v->scratch);
    tp_an_tmp_put(v, all);
}

/* Index of stream `id` in ids[0..n) (ascending), or where it would go. */
static size_t stream_at(const int64_t *ids, size_t n, int64_t id) {
    return tp_sort_lower_i64(ids, 0, n, id);
}

/* The streams of ops rows[0..n), ascending, into a new array (*ids, free()); returns their
 * count. Rows of one stream mostly come in runs: the last one is remembered. */
static size_t find_streams(const tp_an_view *v, const uint32_t *rows, size_t n, int64_t **ids) {
    size_t ns = 0, cap = 0;
    *ids = NULL;
    int64_t last = 0;
    for (size_t k = 0; k < n; k++) {
        int64_t id = tp_an_view_stream(v, rows[k]);
        if (k && id == last)
            continue;
        last = id;
        size_t at = stream_at(*ids, ns, id);
        if (at < ns && (*ids)[at] == id)
            continue;
        tp_an_grow((void **)ids, &cap, ns + 1, sizeof **ids);
        memmove(*ids + at + 1, *ids + at, (ns - at) * sizeof **ids);
        (*ids)[at] = id;
        ns++;
    }
    return ns;
}

/* Ops grouped by stream, each group in the view's order, then one stream_run per group;
 * streams come out by id. The ops are GPU rows (idle_row), so the row list is sized by those,
 * in 32 bits (the view's links are), and the groups are a counting sort by stream of that list
 * (none with one stream): a list sized by every view row in size_t, and a stable order of the
 * rows by a key array of their streams, took ~5 times the scratch on a 10 M-record trace
 * (~100 MiB against ~20), beside the queue's on the other thread (docs/PERFORMANCE.md, native
 * report, eighteenth round). */
void tp_an_idle_run(const tp_an_view *v, tp_an_idle *out) {
    memset(out, 0, sizeof *out);
    /* natively the ops are the GPU rows: the view's list of them when it has one (no pass over
     * every view row to find them, no copy); `own` is the list written here, if any */
    const uint32_t *gpu_rows = v->opts.compat_hta ? NULL : tp_an_view_gpu_rows(v);
    uint32_t *own = NULL;
    const uint32_t *rows = gpu_rows;
    size_t nr = v->n_gpu;
    if (!gpu_rows) {
        own = tp_an_tmp(v, v->n_gpu + 1, sizeof *own);
        nr = 0;
        for (size_t i = 0; i < v->n; i++)
            if (idle_row(v, i))
                own[nr++] = (uint32_t)i;
        rows = own;
    }
    int64_t *ids;
    size_t ns = find_streams(v, rows, nr, &ids);
    size_t *at = tp_mem_xcalloc(ns + 1, sizeof *at); /* per stream: where its ops go */
    const uint32_t *grp = rows;
    if (ns > 1) {
        for (size_t k = 0, g = 0; k < nr; k++) { /* counts, then starts */
            int64_t id = tp_an_view_stream(v, rows[k]);
            g = ids[g] == id ? g : stream_at(ids, ns, id);
            at[g + 1]++;
        }
        for (size_t g = 0; g < ns; g++)
            at[g + 1] += at[g];
        uint32_t *by = tp_an_tmp(v, nr, sizeof *by);
        for (size_t k = 0, g = 0; k < nr; k++) {
            int64_t id = tp_an_view_stream(v, rows[k]);
            g = ids[g] == id ? g : stream_at(ids, ns, id);
            by[at[g]++] = rows[k]; /* at[g] ends where group g ends */
        }
        tp_an_tmp_put(v, own);
        grp = own = by;
    } else {
        at[0] = nr;
    }
    out->s = tp_an_alloc(ns + 1, sizeof *out->s);
    for (size_t g = 0, from = 0; g < ns; from = at[g++]) {
        tp_an_idle_stream *s = &out->s[out->n++];
        s->stream = ids[g];
        stream_run(v, grp + from, at[g] - from, s);
    }
    free(at), free(ids);
    tp_an_tmp_put(v, own);
}

void tp_an_idle_free(tp_an_idle *out) {
    if (!out)
        return;
    free(out->s);
    memset(out, 0, sizeof *out);
}
