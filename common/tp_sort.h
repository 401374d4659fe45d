/* tp_sort: stable radix sorts on integer keys, for every place that needs time order.
 *
 * The analyzer orders millions of rows by timestamps, ids and durations; a comparison sort
 * (qsort) spends most of its time in the comparison callback. These sorts are LSD radix sorts
 * over 64-bit keys: linear in n, stable (equal keys keep their input order, so sorting by a
 * secondary key first and the primary key second sorts by both), and they skip every byte
 * position in which all keys agree (timestamps of one trace differ in their low 4-5 bytes
 * only). Signed integers and doubles are mapped onto unsigned keys that order the same way
 * (tp_sort_key_i64, tp_sort_key_f64).
 *
 * Scratch memory comes from tp_mem's aborting allocator: for the analyzer, the TUI and the
 * CLI, never for the collector. The `_s` variants take it from a tp_scratch cache instead
 * (NULL: the same as without), so that many sorts in a row reuse the same pages. */
#ifndef TP_SORT_H
#define TP_SORT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tp_scratch.h"

/* The unsigned key that orders like the signed value `v`. */
static inline uint64_t tp_sort_key_i64(int64_t v) {
    return (uint64_t)v ^ (UINT64_C(1) << 63);
}

/* The unsigned key that orders like the double `d` (-0.0 just before +0.0; NaNs with the sign
 * bit set first, the others last). */
static inline uint64_t tp_sort_key_f64(double d) {
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u >> 63 ? ~u : u | (UINT64_C(1) << 63);
}

/* Bisections of an ascending array a[lo..hi): the first k there with a[k] >= x (lower) or
 * a[k] > x (upper), hi when none. One definition for every sorted column the model and the
 * analyses search (rows, ids, times, packed keys). */
#define TP_SORT_BISECT(a, lo, hi, x, op)                                                           \
    do {                                                                                           \
        while ((lo) < (hi)) {                                                                      \
            size_t mid_ = (lo) + ((hi) - (lo)) / 2;                                                \
            if ((a)[mid_] op(x))                                                                   \
                (lo) = mid_ + 1;                                                                   \
            else                                                                                   \
                (hi) = mid_;                                                                       \
        }                                                                                          \
    } while (0)
static inline size_t tp_sort_lower_u32(const uint32_t *a, size_t lo, size_t hi, uint32_t x) {
    TP_SORT_BISECT(a, lo, hi, x, <);
    return lo;
}
static inline size_t tp_sort_lower_u64(const uint64_t *a, size_t lo, size_t hi, uint64_t x) {
    TP_SORT_BISECT(a, lo, hi, x, <);
    return lo;
}
static inline size_t tp_sort_lower_i64(const int64_t *a, size_t lo, size_t hi, int64_t x) {
    TP_SORT_BISECT(a, lo, hi, x, <);
    return lo;
}
static inline size_t tp_sort_upper_i64(const int64_t *a, size_t lo, size_t hi, int64_t x) {
    TP_SORT_BISECT(a, lo, hi, x, <=);
    return lo;
}

/* Sorts key[0..n) ascending, stably, moving row[i] with key[i] (row may be NULL). */
void tp_sort_pairs(uint64_t *key, uint32_t *row, size_t n);
void tp_sort_pairs_s(uint64_t *key, uint32_t *row, size_t n, tp_scratch *s);

/* Reorders rows[0..n) stably by col[rows[i]] ascending (col is indexed by row). */
void tp_sort_rows_i64(const int64_t *col, uint32_t *rows, size_t n);
void tp_sort_rows_i64_s(const int64_t *col, uint32_t *rows, size_t n, tp_scratch *s);

/* Reorders rows[0..n) stably by (group(ctx, row), c[row]) ascending, where group gives a
 * row's group rank (< ngroups; e.g. its thread's rank in (pid, tid) order, so rows come by
 * thread and time): one pass over a packed key (the rank above c's offset from its minimum)
 * when both fit in 64 bits, else a pass by c and one by the rank; a counting sort by the rank
 * alone when the rows come in c order already. */
void tp_sort_rows_grouped_s(uint64_t (*group)(const void *ctx, uint32_t row), const void *ctx,
                            size_t ngroups, const int64_t *c, uint32_t *rows, size_t n,
                            tp_scratch *s);

/* Sorts v[0..n) ascending (as qsort with a < / > comparison does for numbers; -0.0 comes
 * before 0.0). */
void tp_sort_f64(double *v, size_t n);
void tp_sort_f64_s(double *v, size_t n, tp_scratch *s);

/* Sorts v[0..n) ascending. */
void tp_sort_i64(int64_t *v, size_t n);
void tp_sort_i64_s(int64_t *v, size_t n, tp_scratch *s); /* arrays from s (NULL: malloc) */

/* One field a struct sort orders by: its byte offset and whether it is a uint32_t (else an
 * int64_t). */
typedef struct {
    size_t off;
    int u32;
} tp_sort_field;

/* Sorts n structs of `size` bytes at `base` stably by the fields f[0..nf) (f[0] the most
 * significant): a drop-in for a qsort whose comparison looks at those fields alone, where
 * the ties then keep their input order. Scratch: about what qsort's merge sort takes. n <
 * 2^32. */
void tp_sort_structs(void *base, size_t n, size_t size, const tp_sort_field *f, size_t nf);
void tp_sort_structs_s(void *base, size_t n, size_t size, const tp_sort_field *f, size_t nf,
                       tp_scratch *s);

/* The same by one int64_t (tp_sort_structs_i64) or uint32_t (tp_sort_structs_u32) field at
 * byte offset `off`. */
void tp_sort_structs_i64(void *base, size_t n, size_t size, size_t off);
void tp_sort_structs_i64_s(void *base, size_t n, size_t size, size_t off, tp_scratch *s);
void tp_sort_structs_u32(void *base, size_t n, size_t size, size_t off);

/* key[0..m) and key[m..n) each ascending (m <= n): writes into rows[0..n) their stable merged
 * order, the first run's row first on equal keys. For callers that know where the second run
 * starts (tp_sort_order_i64_s finds it by a pass of its own). */
void tp_sort_merge_runs_order(const int64_t *key, size_t m, size_t n, uint32_t *rows);

/* A new array (free() it) of the rows 0..n-1 in stable ascending order of key[row]. */
uint32_t *tp_sort_order_i64(const int64_t *key, size_t n);

/* The same in a block of `s` (give it back with tp_scratch_put, never free()). */
uint32_t *tp_sort_order_i64_s(const int64_t *key, size_t n, tp_scratch *s);

/* tp_sort_order_i64_s, sorting key[] itself as the sort's key column instead of a copy of
 * it, the order written over it: returns (uint32_t *)key, the n rows in its first half (give
 * back key's block only; the keys are gone). Keys whose span leaves room for the index
 * beside them are packed with it and sorted in place (no copy of them either: 8 bytes a key
 * of the LSD sort's second array less). */
uint32_t *tp_sort_order_i64_over_s(int64_t *key, size_t n, tp_scratch *s);

#endif
