/* tp_an_ivset: sets of time intervals [a, b) in ns, the one interval code of the analyses.
 *
 * A set is a plain growable list of runs. It is *normalized* when its runs are sorted,
 * disjoint, non-empty and not touching (every run ends before the next one starts); the set
 * operations (length, intersection, difference) read normalized sets and write normalized
 * sets. There are two ways to get one from raw intervals:
 *   - tp_an_ivset_add, then tp_an_ivset_norm: the plain union, clipped to a window (empty and
 *     negative intervals mean nothing and are dropped). The diagnosis uses it.
 *   - tp_an_ivset_merge_hta: Holistic Trace Analysis' merge_kernel_intervals rule, which the
 *     HTA-compatible analyses (temporal, kernel types) must follow: it keeps zero- and
 *     negative-length intervals (HTA's ns rounding makes them) as runs, and the tie order of
 *     numpy's quicksort decides how such a run merges. Its result is a list of runs, not
 *     normalized when such intervals are present; tp_an_ivset_len still sums it as HTA does.
 * Both merge with the same rule (a run opens where an interval starts after every end seen
 * so far), so they agree on every input whose intervals all have a positive length.
 * Aborts on out of memory, like the rest of the analyzer. */
#ifndef TP_AN_IVSET_H
#define TP_AN_IVSET_H

#include <stddef.h>
#include <stdint.h>

#include "tp_scratch.h"

typedef struct {
    int64_t *a, *b; /* starts and ends of the runs (tp_scratch blocks of sc) */
    size_t n, cap;
    tp_scratch *sc; /* where the runs' arrays come from and go back to (an analysis's view's
                       scratch); NULL: malloc. Set it on a zeroed set before the first use */
} tp_an_ivset;

/* Room for at least one more run (the rare part of an append, out of line). */
void tp_an_ivset_grow(tp_an_ivset *s);

/* Appends [a, b) as it is, whatever its length (a run of an HTA merge). Inline: the
 * analyses append a run per row, millions of calls on a long trace. */
static inline void tp_an_ivset_push(tp_an_ivset *s, int64_t a, int64_t b) {
    if (s->n == s->cap)
        tp_an_ivset_grow(s);
    s->a[s->n] = a, s->b[s->n] = b, s->n++;
}

/* Appends [a, b) to `s` (zero-initialized or used); nothing when b <= a. Leaves `s`
 * unnormalized. */
static inline void tp_an_ivset_add(tp_an_ivset *s, int64_t a, int64_t b) {
    if (b > a)
        tp_an_ivset_push(s, a, b);
}

/* tp_an_ivset_add for a set that is only normalized afterwards: [a, b) widens the last run
 * instead when the two overlap or touch (the union, hence the normalized set, is the same).
 * Rows that come mostly in time order then keep a set of a few runs, not one per interval
 * (the host analysis's CPU ops: +1.2 MiB above the view's base on
 * kineto_resnet50_autograd_oldfmt, an entry per op and norm's sorted copy of them all). */
static inline void tp_an_ivset_add_union(tp_an_ivset *s, int64_t a, int64_t b) {
    if (b <= a)
        return;
    if (s->n && a <= s->b[s->n - 1] && b >= s->a[s->n - 1]) {
        s->a[s->n - 1] = a < s->a[s->n - 1] ? a : s->a[s->n - 1];
        s->b[s->n - 1] = b > s->b[s->n - 1] ? b : s->b[s->n - 1];
    } else {
        tp_an_ivset_push(s, a, b);
    }
}

/* Sorts and merges `s` in place into a normalized set, keeping only the part inside
 * [lo, hi) (INT64_MIN, INT64_MAX: everything). */
void tp_an_ivset_norm(tp_an_ivset *s, int64_t lo, int64_t hi);

/* The index of the first of the n intervals whose end hi[k] is past t (n when none), the ends
 * ascending (a normalized set's runs, steps by start): a binary search. */
static inline size_t tp_an_first_end_after(const int64_t *hi, size_t n, int64_t t) {
    size_t a = 0, b = n;
    while (a < b) {
        size_t mid = a + (b - a) / 2;
        if (hi[mid] <= t)
            a = mid + 1;
        else
            b = mid;
    }
    return a;
}

/* 1 when t lies in one of the n intervals [lo[k], hi[k]) given as two arrays, sorted and
 * disjoint. */
static inline int tp_an_in_sorted(const int64_t *lo, const int64_t *hi, size_t n, int64_t t) {
    size_t a = tp_an_first_end_after(hi, n, t);
    return a < n && lo[a] <= t;
}

/* The first run of the normalized set `s` that ends after `a` (s->n: none), by binary search:
 * where a query of [a, b) starts reading the runs. */
size_t tp_an_ivset_first_after(const tp_an_ivset *s, int64_t a);

/* Whether [a, b) overlaps a run of the normalized set `s` (a binary search). */
int tp_an_ivset_overlaps(const tp_an_ivset *s, int64_t a, int64_t b);

/* Sum of b - a over the runs. */
int64_t tp_an_ivset_len(const tp_an_ivset *s);

/* out = x AND y; x and y normalized; out is overwritten (its storage reused) and must not
 * be x or y. */
void tp_an_ivset_and(const tp_an_ivset *x, const tp_an_ivset *y, tp_an_ivset *out);

/* out = x AND NOT y; same rules as tp_an_ivset_and. */
void tp_an_ivset_minus(const tp_an_ivset *x, const tp_an_ivset *y, tp_an_ivset *out);

/* Length of x AND y without building it; x and y normalized. */
int64_t tp_an_ivset_and_len(const tp_an_ivset *x, const tp_an_ivset *y);

/* HTA's merge of the intervals [ts[i], end[i]) for i < n into `out` (overwritten): visited
 * in numpy.argsort(ts, kind="quicksort") order, an interval opens a new run when it starts
 * after every end seen so far, else it widens the last run. Intervals of any length are
 * kept, as HTA keeps them. Scratch arrays come from `s` (NULL: malloc). */
void tp_an_ivset_merge_hta(const int64_t *ts, const int64_t *end, size_t n, tp_an_ivset *out,
                           tp_scratch *s);

/* The merge of tp_an_ivset_merge_hta fed one interval at a time, for callers that have the
 * intervals in numpy's argsort order already: start (out's runs are replaced), then add each
 * interval in that order. */
typedef struct {
    tp_an_ivset *out;
    int64_t cummax; /* the largest end so far */
    size_t k;       /* intervals added */
} tp_an_ivmerge;
void tp_an_ivmerge_start(tp_an_ivmerge *m, tp_an_ivset *out);
void tp_an_ivmerge_add(tp_an_ivmerge *m, int64_t a, int64_t b);

/* Empties `s` and gives it room for `most` runs at once, where an operation knows how many
 * it can make at most: a large set is then not regrown run by run (each regrowth of a heap
 * block copies it into new pages), and pages past the runs written are never touched.
 * tp_an_ivset_fit gives the room not used back (when more than TP_AN_IVSET_SLACK runs). The
 * set operations and merges here do both themselves. */
#define TP_AN_IVSET_SLACK 4096
void tp_an_ivset_bound(tp_an_ivset *s, size_t most);
void tp_an_ivset_fit(tp_an_ivset *s);

/* Frees the runs and zeroes `s` but for its scratch; NULL: no-op. */
void tp_an_ivset_free(tp_an_ivset *s);

#endif
