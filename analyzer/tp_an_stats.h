/* tp_an_stats: small numeric helpers shared by the analyses.
 *
 * tp_an_describe computes what pandas' Series.describe() reports (count, mean, sample
 * standard deviation, min, linear-interpolated quartiles, max), so numbers can be compared
 * with HTA's one for one. tp_an_argsort_np reproduces numpy's (unstable) quicksort argsort,
 * because HTA's results depend on the order it leaves equal timestamps in (interval merging,
 * which needs it, is in tp_an_ivset). All functions are pure. */
#ifndef TP_AN_STATS_H
#define TP_AN_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "tp_scratch.h"

/* Summary of a sample. Fields that are undefined for the sample (everything when count is 0,
 * std when count < 2) are NaN. */
typedef struct {
    size_t count;
    double sum, mean, std, min, p25, p50, p75, max;
} tp_an_describe_t;

/* Describes the `n` values of `v`; sorts `v` in place (it is the caller's scratch). */
void tp_an_describe(double *v, size_t n, tp_an_describe_t *out);
/* The same, its sort's arrays from `s` (NULL: malloc). */
void tp_an_describe_s(double *v, size_t n, tp_an_describe_t *out, tp_scratch *s);

/* tp_an_describe of n whole numbers given as counts: count[b] of them are lo + b (b < span;
 * every value below 2^53 in magnitude). The same doubles as tp_an_describe of the values
 * (sums over their sorted order), without an array of them nor its sort. */
void tp_an_describe_counts(const size_t *count, size_t span, int64_t lo, size_t n,
                           tp_an_describe_t *out);

/* tp_an_describe_s's figures, leaving v in no particular order: many whole numbers within a
 * span no wider than their count are counted (tp_an_describe_counts), not sorted. */
void tp_an_describe_any_s(double *v, size_t n, tp_an_describe_t *out, tp_scratch *s);

/* tp_an_describe_any_s of integers whose least and greatest are lo and hi (n > 0): the
 * same figures as of the values converted to doubles, counted without that function's
 * whole-number test per value where it would count them; else v is converted in place
 * (its 8 bytes a value hold doubles after) and described by it. */
void tp_an_describe_any_i64_s(int64_t *v, size_t n, int64_t lo, int64_t hi, tp_an_describe_t *out,
                              tp_scratch *s);

/* numpy's linear percentile (q in [0, 100]) of `n` ascending values; NaN when n == 0. */
double tp_an_percentile_sorted(const double *v, size_t n, double q);

/* The same figure for `n` values in any order, by selection instead of a sort (v is the
 * caller's scratch: it comes back reordered, or, for 4096 whole numbers or more, holding
 * other bits): exactly the double tp_an_percentile_sorted returns for the values sorted. */
double tp_an_percentile(double *v, size_t n, double q);

/* tp_an_percentile of values the caller knows to be whole numbers (converted from int64_t:
 * none -0.0) whose least is lo and greatest hi: the selection by digits without a read to
 * find that out. */
double tp_an_percentile_in(double *v, size_t n, double q, int64_t lo, int64_t hi);

/* tp_an_percentile_in of integers (the same double as of the values converted), read as
 * they are; v holds other numbers after. */
double tp_an_percentile_i64_in(int64_t *v, size_t n, double q, int64_t lo, int64_t hi);

/* The percentiles q1 <= q2 of the same values, the second selected among the values above
 * the first only (about half the work of two tp_an_percentile calls); the same doubles. */
void tp_an_percentile2(double *v, size_t n, double q1, double q2, double *p1, double *p2);

/* tp_an_sum_exact's sum, the least and greatest value, and tp_an_percentile2's percentiles
 * q1 <= q2, in one read of v[0..n) before the selection, when every value is a whole number
 * (none -0.0) whose magnitudes sum to at most 2^52 and n is large enough for the selection by
 * digits: returns 1 and reorders v; else 0, v untouched (ask the figures one by one). */
int tp_an_whole_stats2(double *v, size_t n, double q1, double q2, double *sum, double *min,
                       double *max, double *p1, double *p2);

/* tp_an_whole_stats2 of integers: the same answer and the same doubles as tp_an_whole_stats2
 * of the values converted (every int64_t below 2^53 in magnitude is a whole number, none
 * -0.0), without a conversion and a test per value; returns 0 (v untouched) where that
 * returns 0, else 1 with v holding other numbers. */
int tp_an_whole_stats2_i64(int64_t *v, size_t n, double q1, double q2, double *sum, double *min,
                           double *max, double *p1, double *p2);

/* The values' least, greatest and sum (added as uint64_t, wrapping), for
 * tp_an_whole_stats2_i64_of; tp_an_i64_span_open starts one (no value yet). */
typedef struct {
    int64_t min, max;
    uint64_t sum;
} tp_an_i64_span;

static inline void tp_an_i64_span_open(tp_an_i64_span *sp) {
    sp->min = INT64_MAX, sp->max = INT64_MIN, sp->sum = 0;
}
static inline void tp_an_i64_span_add(tp_an_i64_span *sp, int64_t x) {
    sp->min = x < sp->min ? x : sp->min;
    sp->max = x > sp->max ? x : sp->max;
    sp->sum += (uint64_t)x;
}

/* tp_an_whole_stats2_i64 when the caller has sp, the span of v[0..n) (from a pass of its
 * own that read the values anyway): the same answer, without the pass that finds it. */
int tp_an_whole_stats2_i64_of(int64_t *v, size_t n, const tp_an_i64_span *sp, double q1, double q2,
                              double *sum, double *min, double *max, double *p1, double *p2);

/* Sets *sum to v[0] + ... + v[n-1] and returns 1 when that sum is the same in every order
 * (every value a whole number and their magnitudes adding up to at most 2^52, so no
 * addition rounds); returns 0 otherwise. */
int tp_an_sum_exact(const double *v, size_t n, double *sum);

/* Writes into idx[0..n) the permutation numpy.argsort(key, kind="quicksort") returns for
 * key[0..n) (equal keys come out in numpy's order, not in input order). Scratch arrays
 * come from `s` (NULL: malloc), as in the two functions below. */
void tp_an_argsort_np(const int64_t *key, size_t n, size_t *idx, tp_scratch *s);

/* The same where the caller has the stable ascending order of the keys already (rows: the
 * indices 0..n-1 by key, ties in index order, as tp_sort_order_i64 gives; n < 2^32), so it is
 * not sorted again. */
void tp_an_argsort_np_from(const int64_t *key, size_t n, const uint32_t *rows, size_t *idx,
                           tp_scratch *s);

/* The same where `rows` (the stable order, n < 2^32) is a block of `s` (tp_scratch_get; s
 * NULL: malloc) that the call takes over: returns numpy's order in a block of `s`, `rows`
 * itself or another one (rows then given back). No array of 8-byte indices (the queue's steps
 * on a long trace: 38 MB of fresh pages) and no copy back. */
uint32_t *tp_an_argsort_np_over(const int64_t *key, size_t n, uint32_t *rows, tp_scratch *s);

/* The same for n >= 64 from the ties alone: same[p] (p < n - 1) nonzero when the key at place
 * p of the stable order `rows` equals the key at place p + 1 (numpy's order depends on the
 * keys only through those): no array of the keys beside the sort's (the queue's steps, whose
 * times are read through the view: 8 bytes a step less). */
uint32_t *tp_an_argsort_np_over_same(const uint8_t *same, size_t n, uint32_t *rows, tp_scratch *s);

/* Writes into idx[0..n) the stable ascending order of key[0..n): equal keys keep their
 * input order, so groups of equal keys come out contiguous and internally unchanged. */
void tp_an_stable_order(const int64_t *key, size_t n, size_t *idx, tp_scratch *s);

/* A row and the key it is grouped by (e.g. its correlation id). */
typedef struct {
    int64_t key;
    size_t row;
} tp_an_keyrow;

/* Sorts a[0..n) by key, then row: equal keys come out contiguous and in row order, whatever
 * order qsort leaves ties in. */
void tp_an_keyrow_sort(tp_an_keyrow *a, size_t n, tp_scratch *s);

/* qsort(base, n, size, cmp) after one pass that leaves an array already in cmp's order as it
 * is: the steps come in time order on native views, where glibc's merge sort still compared
 * n log n times (~15 M instructions of the host analysis and the diagnosis on lb20k's 20,000
 * steps). Only for comparators whose ties are equal bytes: then every order qsort may leave
 * is this one. */
void tp_an_qsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));

/* a + b, saturating at INT64_MAX / INT64_MIN instead of overflowing: sums of times and sizes
 * stay in range for any real trace, and only crafted input (every time may reach 2^62 ns)
 * gets here, where a pinned figure beats undefined behaviour. */
static inline int64_t tp_an_add(int64_t a, int64_t b) {
    int64_t s;
    return __builtin_add_overflow(a, b, &s) ? (b > 0 ? INT64_MAX : INT64_MIN) : s;
}

/* Growable arrays: *p is reallocated to hold at least `need` elements of `size` bytes;
 * *cap tracks the capacity. Aborts on out of memory (analyzer policy). Both are tp_mem's
 * tp_mem_xgrow and tp_mem_xcalloc (checked n * size, one growth rule). */
void tp_an_grow(void **p, size_t *cap, size_t need, size_t size);

/* malloc/calloc that abort on out of memory. */
void *tp_an_alloc(size_t n, size_t size);

#endif
