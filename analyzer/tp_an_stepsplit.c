/* tp_an_stepsplit: per-step device time split and busy share over time (see the header). */
#include "tp_an_stepsplit.h"

#include <stdlib.h>
#include <string.h>

#include "tp_an_ivset.h"
#include "tp_an_stats.h"

static const char *const part_label[TP_SS_COUNT] = {"compute", "communication", "copies/memsets",
                                                    "other device", "idle"};
static const char *const part_key[TP_SS_COUNT] = {"compute", "comm", "memory", "other", "idle"};

const char *tp_ss_part_label(tp_ss_part p) {
    return (unsigned)p < TP_SS_COUNT ? part_label[p] : "?";
}

const char *tp_ss_part_key(tp_ss_part p) {
    return (unsigned)p < TP_SS_COUNT ? part_key[p] : "?";
}

/* Length of normalized set `s` inside [a, b): binary search for the first run ending after
 * a, then the runs up to b, so that many steps over a long trace cost O(log n) each plus
 * their own runs. */
static int64_t len_in(const tp_an_ivset *s, int64_t a, int64_t b) {
    int64_t len = 0;
    for (size_t i = tp_an_ivset_first_after(s, a); i < s->n && s->a[i] < b; i++) {
        int64_t x = s->a[i] > a ? s->a[i] : a, y = s->b[i] < b ? s->b[i] : b;
        len += y > x ? y - x : 0;
    }
    return len;
}

/* The union of the view's GPU rows whose ktype bit is in `mask`, normalized. */
static void gpu_set(const tp_an_view *v, unsigned mask, tp_an_ivset *out) {
    for (size_t i = 0; i < v->n; i++)
        if (tp_an_view_gpu(v, i) && (mask & (1u << tp_an_view_ktype(v, i))))
            tp_an_ivset_add(out, tp_an_view_ts(v, i), tp_an_view_end(v, i));
    tp_an_ivset_norm(out, INT64_MIN, INT64_MAX);
}

/* The disjoint parts: each kind's union minus the unions of the kinds before it. */
static void part_sets(const tp_an_view *v, tp_an_ivset part[TP_SS_COUNT - 1]) {
    static const unsigned kinds[TP_SS_COUNT - 1] = {
        1u << TP_KT_COMPUTATION, 1u << TP_KT_COMMUNICATION, 1u << TP_KT_MEMORY, ~0u};
    tp_an_ivset before = {0}, all = {0};
    for (int p = 0; p < TP_SS_COUNT - 1; p++) {
        unsigned upto = 0;
        for (int q = 0; q <= p; q++)
            upto |= kinds[q];
        tp_an_ivset_free(&all);
        gpu_set(v, upto, &all);
        tp_an_ivset_minus(&all, &before, &part[p]);
        tp_an_ivset_free(&before);
        before = all;
        memset(&all, 0, sizeof all);
    }
    tp_an_ivset_free(&before);
}

void tp_an_stepsplit_run(const tp_an_view *v, const int64_t *start, const int64_t *end, size_t n,
                         tp_an_stepsplit *out) {
    memset(out, 0, sizeof *out);
    if (!n)
        return;
    tp_an_ivset part[TP_SS_COUNT - 1];
    memset(part, 0, sizeof part);
    part_sets(v, part);
    out->s = tp_an_alloc(n, sizeof *out->s);
    out->n = n;
    for (size_t i = 0; i < n; i++) {
        tp_an_stepsplit_row *r = &out->s[i];
        r->start = start[i], r->end = end[i] > start[i] ? end[i] : start[i];
        int64_t busy = 0;
        for (int p = 0; p < TP_SS_COUNT - 1; p++)
            busy += r->part[p] = len_in(&part[p], r->start, r->end);
        r->part[TP_SS_IDLE] = r->end - r->start - busy;
    }
    for (int p = 0; p < TP_SS_COUNT - 1; p++)
        tp_an_ivset_free(&part[p]);
}

void tp_an_stepsplit_free(tp_an_stepsplit *out) {
    if (!out)
        return;
    free(out->s);
    memset(out, 0, sizeof *out);
}

void tp_an_busy_series(const tp_an_view *v, int64_t lo, int64_t hi, size_t n, double *out) {
    for (size_t k = 0; k < n; k++)
        out[k] = 0;
    if (hi <= lo || !n)
        return;
    tp_an_ivset busy = {0};
    gpu_set(v, ~0u, &busy);
    for (size_t k = 0; k < n; k++) {
        /* integer bucket edges, so the buckets tile [lo, hi) exactly */
        int64_t a = lo + (int64_t)((double)(hi - lo) * (double)k / (double)n);
        int64_t b =
            k + 1 == n ? hi : lo + (int64_t)((double)(hi - lo) * (double)(k + 1) / (double)n);
        out[k] = b > a ? (double)len_in(&busy, a, b) / (double)(b - a) : 0;
    }
    tp_an_ivset_free(&busy);
}
