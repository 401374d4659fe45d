/* tp_an_ivset: interval sets (see the header). One merge loop serves both the plain union
 * and HTA's rule: only what is fed to it (clipped, non-empty, sorted by start; or every
 * interval in numpy's order) differs. */
#include "tp_an_ivset.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "tp_an_stats.h"
#include "tp_interval.h"
#include "tp_mem.h"
#include "tp_sort.h"

/* The runs' arrays are tp_scratch blocks of s->sc (NULL: plain malloc behind a header): a
 * set of the analyses' view takes blocks another analysis gave back, and gives its own back
 * when freed or regrown, instead of fresh pages each time. */
static void reserve(tp_an_ivset *s, size_t need) {
    if (need <= s->cap)
        return;
    size_t cap = need > 2 * s->cap ? need : 2 * s->cap;
    cap = cap < 16 ? 16 : cap;
    s->a = tp_scratch_resize(s->sc, s->a, s->n * sizeof *s->a, cap, sizeof *s->a);
    s->b = tp_scratch_resize(s->sc, s->b, s->n * sizeof *s->b, cap, sizeof *s->b);
    s->cap = cap;
}

void tp_an_ivset_bound(tp_an_ivset *s, size_t most) {
    s->n = 0;
    if (most <= s->cap)
        return;
    tp_scratch_put(s->sc, s->a), tp_scratch_put(s->sc, s->b); /* the runs are dropped */
    s->a = tp_scratch_get(s->sc, most, sizeof *s->a);
    s->b = tp_scratch_get(s->sc, most, sizeof *s->b);
    s->cap = most;
}

void tp_an_ivset_fit(tp_an_ivset *s) {
    /* A set of a scratch keeps its room, which goes back to the scratch with the set (its
     * pages are resident in the scratch either way); a malloc'ed one shrinks in place. */
    if (s->sc || s->cap <= s->n + TP_AN_IVSET_SLACK)
        return;
    size_t n = s->n ? s->n : 1;
    s->a = tp_scratch_shrink(s->a, n, sizeof *s->a);
    s->b = tp_scratch_shrink(s->b, n, sizeof *s->b);
    s->cap = n;
}

void tp_an_ivset_grow(tp_an_ivset *s) {
    reserve(s, s->n + 1);
}

static void push(tp_an_ivset *s, int64_t a, int64_t b) {
    tp_an_ivset_push(s, a, b);
}

/* Replaces out's runs by the intervals [ts[idx[k]], end[idx[k]]) merged in the order of idx:
 * an interval opens a run when it starts after every end seen so far (HTA's cummax), else
 * it widens the last run. */
static void merge_in_order(tp_an_ivset *out, const int64_t *ts, const int64_t *end,
                           const size_t *idx, size_t n) {
    tp_an_ivmerge m;
    tp_an_ivmerge_start(&m, out);
    for (size_t k = 0; k < n; k++)
        tp_an_ivmerge_add(&m, ts[idx[k]], end[idx[k]]);
}

void tp_an_ivmerge_start(tp_an_ivmerge *m, tp_an_ivset *out) {
    out->n = 0;
    m->out = out;
    m->cummax = 0;
    m->k = 0;
}

void tp_an_ivmerge_add(tp_an_ivmerge *m, int64_t a, int64_t b) {
    tp_an_ivset *out = m->out;
    if (m->k == 0 || a > m->cummax) {
        push(out, a, b);
    } else {
        size_t l = out->n - 1;
        out->a[l] = a < out->a[l] ? a : out->a[l];
        out->b[l] = b > out->b[l] ? b : out->b[l];
    }
    m->cummax = m->k == 0 || b > m->cummax ? b : m->cummax;
    m->k++;
}

/* The intervals of s from `from` on, clipped to [lo, hi), merged in one pass while they come
 * in start order, the runs written over the intervals read from `from` on. Returns how many
 * runs; *stop: the first interval out of order (s->n: none). */
static size_t norm_from(tp_an_ivset *s, size_t from, int64_t lo, int64_t hi, size_t *stop) {
    size_t runs = from, i = from;
    int64_t prev = INT64_MIN;
    for (; i < s->n; i++) { /* runs <= i: each interval read makes at most one run */
        int64_t a = s->a[i] > lo ? s->a[i] : lo, b = s->b[i] < hi ? s->b[i] : hi;
        if (b <= a)
            continue;
        if (a < prev)
            break;
        prev = a;
        if (runs > from && a <= s->b[runs - 1]) {
            if (b > s->b[runs - 1])
                s->b[runs - 1] = b;
        } else {
            s->a[runs] = a, s->b[runs] = b, runs++;
        }
    }
    *stop = i;
    return runs - from;
}

/* The union of s's normalized runs [0, na) and [from, from + nb) (na <= from), as one
 * normalized list at [0, returned count). The first list is copied out and the two merged
 * forward: a run is written only after the intervals it covers are read, and the second
 * list's next one to read is never below the write (from >= na). */
static size_t union_two(tp_an_ivset *s, size_t na, size_t from, size_t nb) {
    if (!na) {
        memmove(s->a, s->a + from, nb * sizeof *s->a);
        memmove(s->b, s->b + from, nb * sizeof *s->b);
        return nb;
    }
    if (!nb)
        return na;
    tp_interval *t = tp_scratch_get(s->sc, na, sizeof *t);
    for (size_t k = 0; k < na; k++)
        t[k] = (tp_interval){s->a[k], s->b[k]};
    size_t ia = 0, ib = from, eb = from + nb, w = 0;
    int64_t ca = 0, cb = 0;
    int open = 0;
    while (ia < na || ib < eb) {
        int64_t a, b;
        if (ib == eb || (ia < na && t[ia].a <= s->a[ib]))
            a = t[ia].a, b = t[ia].b, ia++;
        else
            a = s->a[ib], b = s->b[ib], ib++;
        if (open && a <= cb) {
            cb = b > cb ? b : cb;
        } else {
            if (open)
                s->a[w] = ca, s->b[w] = cb, w++;
            ca = a, cb = b, open = 1;
        }
    }
    s->a[w] = ca, s->b[w] = cb, w++;
    tp_scratch_put(s->sc, t);
    return w;
}

/* How many runs of intervals in start order tp_an_ivset_norm merges one by one into the
 * runs before them (each merge copies those out: at most this many times the set's runs)
 * before it sorts the rest. */
#define NORM_SEGMENTS 32

/* The plain union is common/tp_interval's: the live aggregator computes busy with it too.
 * The analyses mostly add intervals in time order: then the clip and merge run in place on
 * the set's own arrays (the same runs: a normalized set is unique), with no copy of one
 * entry per interval in fresh pages; else the copy goes through tp_interval_union's sort. */
/* Clips and merges in one pass while the intervals come in start order (the diagnosis's
 * mostly do: rows in time order), writing the runs over the intervals read. Where a compat
 * view's rows come in two time orders (its GPU rows, then its CPU rows), each stretch in
 * start order is merged in place the same way and joined to the runs before it by a merge of
 * the two lists: a copy of the runs before it, where a copy of every interval and its sort
 * took ~0.7 MiB of the diagnosis's peak on hta_df_index_resolver (15 k intervals in two
 * stretches). From the NORM_SEGMENTS-th stretch on, the runs so far and the rest are merged
 * by tp_interval_union (a sort). Every way gives the one normalized set of the union (runs
 * that overlap or touch are one). */
void tp_an_ivset_norm(tp_an_ivset *s, int64_t lo, int64_t hi) {
    size_t i, runs = norm_from(s, 0, lo, hi, &i);
    for (int seg = 1; i < s->n && seg < NORM_SEGMENTS; seg++) {
        size_t from = i, nb = norm_from(s, from, lo, hi, &i);
        runs = union_two(s, runs, from, nb); /* runs <= from: the stretch's reads are after */
    }
    if (i < s->n) {
        size_t m = runs + (s->n - i);
        tp_interval *p = tp_scratch_get(s->sc, m + 1, sizeof *p);
        for (size_t k = 0; k < runs; k++)
            p[k] = (tp_interval){s->a[k], s->b[k]};
        for (size_t k = i; k < s->n; k++) /* (clipped by the union) */
            p[runs + k - i] = (tp_interval){s->a[k], s->b[k]};
        runs = tp_interval_union(p, m, lo, hi);
        s->n = 0;
        for (size_t k = 0; k < runs; k++)
            push(s, p[k].a, p[k].b);
        tp_scratch_put(s->sc, p);
        runs = s->n;
    }
    s->n = runs;
    tp_an_ivset_fit(s);
}

size_t tp_an_ivset_first_after(const tp_an_ivset *s, int64_t a) {
    return tp_sort_upper_i64(s->b, 0, s->n, a);
}

int tp_an_ivset_overlaps(const tp_an_ivset *s, int64_t a, int64_t b) {
    size_t lo = tp_an_ivset_first_after(s, a); /* the first run that ends after a decides */
    return lo < s->n && s->a[lo] < b;
}

int64_t tp_an_ivset_len(const tp_an_ivset *s) {
    int64_t t = 0;
    for (size_t i = 0; i < s->n; i++)
        t = tp_an_add(t, s->b[i] - s->a[i]);
    return t;
}

/* out = x AND y (keep = 1) or x AND NOT y (keep = 0): one sweep over both sets. With out
 * NULL (keep = 1 only) the runs are summed in their order instead of written: no set of one
 * entry per run in fresh pages (tp_an_ivset_and_len). */
static int64_t combine(const tp_an_ivset *x, const tp_an_ivset *y, int keep, tp_an_ivset *out) {
    int64_t t = 0;
    if (out)
        tp_an_ivset_bound(out, x->n + y->n); /* each run of y splits at most one of x */
    size_t j = 0;
    for (size_t i = 0; i < x->n; i++) {
        int64_t a = x->a[i], b = x->b[i];
        while (j < y->n && y->b[j] <= a)
            j++;
        for (size_t k = j; k < y->n && y->a[k] < b; k++) {
            int64_t ya = y->a[k] > a ? y->a[k] : a, yb = y->b[k] < b ? y->b[k] : b;
            if (!out) {
                if (yb > ya)
                    t = tp_an_add(t, yb - ya);
            } else if (keep) {
                tp_an_ivset_add(out, ya, yb);
            } else {
                tp_an_ivset_add(out, a, ya);
            }
            a = yb;
        }
        if (out && !keep)
            tp_an_ivset_add(out, a, b);
    }
    if (out)
        tp_an_ivset_fit(out);
    return t;
}

void tp_an_ivset_and(const tp_an_ivset *x, const tp_an_ivset *y, tp_an_ivset *out) {
    combine(x, y, 1, out);
}

void tp_an_ivset_minus(const tp_an_ivset *x, const tp_an_ivset *y, tp_an_ivset *out) {
    combine(x, y, 0, out);
}

int64_t tp_an_ivset_and_len(const tp_an_ivset *x, const tp_an_ivset *y) {
    return combine(x, y, 1, NULL);
}

void tp_an_ivset_merge_hta(const int64_t *ts, const int64_t *end, size_t n, tp_an_ivset *out,
                           tp_scratch *s) {
    size_t *idx = tp_scratch_get(s, n, sizeof *idx);
    tp_an_argsort_np(ts, n, idx, s);
    tp_an_ivset_bound(out, n);
    merge_in_order(out, ts, end, idx, n);
    tp_an_ivset_fit(out);
    tp_scratch_put(s, idx);
}

void tp_an_ivset_free(tp_an_ivset *s) {
    if (!s)
        return;
    tp_scratch *sc = s->sc;
    tp_scratch_put(sc, s->a), tp_scratch_put(sc, s->b);
    memset(s, 0, sizeof *s);
    s->sc = sc;
}
