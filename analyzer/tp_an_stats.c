/* tp_an_stats: pandas/numpy-compatible statistics and argsort. */
#include "tp_an_stats.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define NP_SCAN_AVX2 1 /* numpy's partition scans with AVX2 where the CPU has it */
#endif

#include "tp_mem.h"
#include "tp_sort.h"

/* The analyses' names for tp_mem's aborting calls, kept so the analyses read as before. */
void *tp_an_alloc(size_t n, size_t size) {
    return tp_mem_xcalloc(n, size);
}

void tp_an_grow(void **p, size_t *cap, size_t need, size_t size) {
    tp_mem_xgrow(p, cap, need, size);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* numpy's _lerp between v[0] and v[1] at fraction `frac`: a + (b - a) * t, computed from the
 * nearer end for t >= 0.5. */
static double percentile_between(const double *v, double frac) {
    double a = v[0], b = v[1];
    double d = b - a;
    return frac >= 0.5 ? b - d * (1.0 - frac) : a + d * frac;
}

static int any_nan(const double *v, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (isnan(v[i]))
            return 1;
    return 0;
}

/* Ascending, as qsort with cmp_double leaves numbers (the radix sort orders every value the
 * comparison distinguishes the same way). NaNs compare as neither smaller nor larger, so
 * where one is present the order is qsort's own, and qsort keeps it. */
/* Whole numbers within a span of COUNT_SPAN (the queue's lengths, counts): sorted by
 * counting, which writes the same ascending array as the radix sort (each value is lo + its
 * offset, exact below 2^53) in two reads and one write instead of 3-4 passes over 8-byte
 * keys. Returns 0 (v untouched) for anything else; -0.0 too, which the radix sort orders
 * before 0.0 and counting would not tell apart. No NaN in v. */
#define COUNT_SPAN 4096
static int sort_counting(double *v, size_t n) {
    if (n < COUNT_SPAN)
        return 0;
    double lo = v[0], hi = v[0];
    for (size_t i = 1; i < n; i++) {
        lo = v[i] < lo ? v[i] : lo;
        hi = v[i] > hi ? v[i] : hi;
    }
    if (!(lo > -9007199254740992.0 && hi < 9007199254740992.0 && hi - lo < COUNT_SPAN))
        return 0;
    size_t count[COUNT_SPAN] = {0};
    for (size_t i = 0; i < n; i++) {
        double x = v[i];
        if ((double)(int64_t)x != x || (x == 0 && signbit(x)))
            return 0;
        count[(size_t)(x - lo)]++;
    }
    size_t at = 0;
    for (size_t b = 0; b <= (size_t)(hi - lo); b++)
        for (double x = lo + (double)b; count[b]; count[b]--)
            v[at++] = x;
    return 1;
}

static void sort_values(double *v, size_t n, tp_scratch *s) {
    if (any_nan(v, n))
        qsort(v, n, sizeof *v, cmp_double);
    else if (!sort_counting(v, n))
        tp_sort_f64_s(v, n, s);
}

static void swap_dbl(double *a, double *b) {
    double t = *a;
    *a = *b;
    *b = t;
}

static double median3(double a, double b, double c) {
    return a < b ? (b < c ? b : a < c ? c : a) : (a < c ? a : b < c ? c : b);
}

/* Moves the k-th smallest of v[0..n) (no NaN) to v[k], smaller ones before it, larger or
 * equal ones after it: quickselect with a three-way partition (runs of equal values end it
 * early), and a radix sort of what is left when the pivots keep choosing badly. */
static void select_nth(double *v, size_t n, size_t k) {
    size_t lo = 0, hi = n, rounds = 0, limit = 16;
    for (size_t m = n; m > 1; m >>= 1)
        limit += 2;
    while (hi - lo > 16) {
        if (++rounds > limit) {
            tp_sort_f64(v + lo, hi - lo);
            return;
        }
        double p = median3(v[lo], v[lo + (hi - lo) / 2], v[hi - 1]);
        size_t lt = lo, i = lo, gt = hi; /* [lo,lt) < p, [lt,i) == p, [gt,hi) > p */
        while (i < gt) {
            if (v[i] < p)
                swap_dbl(&v[lt++], &v[i++]);
            else if (v[i] > p)
                swap_dbl(&v[i], &v[--gt]);
            else
                i++;
        }
        if (k < lt)
            hi = lt;
        else if (k >= gt)
            lo = gt;
        else
            return;
    }
    for (size_t i = lo + 1; i < hi; i++) /* insertion sort of the last few */
        for (size_t j = i; j > lo && v[j] < v[j - 1]; j--)
            swap_dbl(&v[j], &v[j - 1]);
}

/* The percentile q of v[0..n) (no NaN, n > 0) by selection, where v[0..from) hold the
 * `from` smallest values already (from <= the index selected, or one past it when v[index]
 * is in its place too: after a selection of a lower percentile): only v[from..n) is
 * searched. Sets *at to the index of the lower neighbour. */
static double percentile_from(double *v, size_t n, double q, size_t from, size_t *at) {
    double pos = (double)(n - 1) * (q / 100.0); /* as tp_an_percentile_sorted */
    size_t lo = (size_t)floor(pos);
    if (lo >= n - 1)
        lo = n - 1;
    *at = lo;
    if (lo >= from)
        select_nth(v + from, n - from, lo - from);
    if (lo == n - 1)
        return v[lo];
    double next = v[lo + 1]; /* the sorted neighbour: the smallest value after v[lo] */
    for (size_t i = lo + 2; i < n; i++)
        next = v[i] < next ? v[i] : next;
    double pair[2] = {v[lo], next}; /* the sorted array's v[lo] and v[lo + 1] */
    return percentile_between(pair, pos - (double)lo);
}

/* ---- selection of whole numbers by their digits (durations, counts: most calls)
 *
 * The values of given ranks among whole numbers are found by SEL_BITS-bit digits of their
 * offset from the minimum, top digit first: a count per digit value says which bucket holds
 * each rank, and only that bucket's values go on to the next digit. A few plain passes over
 * the values, where the quickselect swaps them through several partitions; the values found
 * are the same numbers (whole numbers have one value per rank: no -0.0, no NaN). The offsets
 * are kept in the caller's array itself (its scratch: no copy of one entry per value in
 * fresh pages), as 64-bit patterns read and written through memcpy. */
#define SEL_BITS 11
#define SEL_BUCKETS (1u << SEL_BITS)
#define SEL_WIDE_BITS 16 /* the top digit's width from SEL_WIDE_MIN values on */
#define SEL_WIDE_MIN (1u << 17)
#define SEL_MIN 4096 /* fewer values: the quickselect (the counts' clearing would dominate) */
#define SEL_RANKS 4

static inline uint64_t sel_get(const double *u, size_t i) {
    uint64_t x;
    memcpy(&x, &u[i], sizeof x);
    return x;
}

static inline void sel_put(double *u, size_t i, uint64_t x) {
    memcpy(&u[i], &x, sizeof x);
}

/* out[k] = the offset of rank r[k] (ascending, k < m <= SEL_RANKS) among the offsets
 * u[0..n), which agree above bit shift + width; count: how many have each digit at
 * `shift`. Reorders u: a bucket's offsets go to the front, its next digit counted on the
 * way (one pass a digit). */
static void select_digits(double *u, size_t n, unsigned shift, unsigned width,
                          const uint32_t *count, const size_t *r, size_t m, uint64_t *out);

/* select_digits' next level when ranks r[0..split) are in bucket ba and r[split..m) in bucket
 * bb (ba < bb; base: where each rank's bucket starts): a three-way partition moves ba's
 * offsets to the front and bb's to the back in one pass (one pass a bucket before: the
 * percentile pairs p50 / p95 and p50 / p90 are mostly in two), counting each one's next
 * digit on the way. */
static void select_two(double *u, size_t n, unsigned shift, unsigned width, uint64_t ba,
                       uint64_t bb, const size_t *r, const size_t *base, size_t split, size_t m,
                       uint64_t *out) {
    unsigned next = shift > SEL_BITS ? shift - SEL_BITS : 0;
    uint32_t ca[SEL_BUCKETS], cb[SEL_BUCKETS];
    memset(ca, 0, sizeof ca);
    memset(cb, 0, sizeof cb);
    size_t lo = 0, hi = n, rr[SEL_RANKS];
    for (size_t i = 0; i < hi;) { /* [0, lo): ba; [lo, i): neither; [hi, n): bb */
        uint64_t x = sel_get(u, i), d = x >> shift & ((UINT64_C(1) << width) - 1);
        if (d == ba) {
            ca[x >> next & (SEL_BUCKETS - 1)]++;
            sel_put(u, i++, sel_get(u, lo));
            sel_put(u, lo++, x);
        } else if (d == bb) {
            cb[x >> next & (SEL_BUCKETS - 1)]++;
            sel_put(u, i, sel_get(u, --hi));
            sel_put(u, hi, x);
        } else {
            i++;
        }
    }
    for (size_t x = 0; x < m; x++)
        rr[x] = r[x] - base[x];
    select_digits(u, lo, next, SEL_BITS, ca, rr, split, out);
    select_digits(u + hi, n - hi, next, SEL_BITS, cb, rr + split, m - split, out + split);
}

static void select_digits(double *u, size_t n, unsigned shift, unsigned width,
                          const uint32_t *count, const size_t *r, size_t m, uint64_t *out) {
    size_t bucket[SEL_RANKS], base[SEL_RANKS], at = 0, k = 0;
    uint64_t mask = (UINT64_C(1) << width) - 1; /* this digit's: bits [shift, shift + width) */
    for (size_t b = 0; b <= mask && k < m; at += count[b++])
        for (; k < m && r[k] < at + count[b]; k++)
            bucket[k] = b, base[k] = at;
    size_t split = 0; /* the ranks in exactly two buckets: where the second's start */
    for (size_t x = 1; x < m; x++)
        if (bucket[x] != bucket[x - 1])
            split = split ? SIZE_MAX : x;
    if (shift > 0 && split && split != SIZE_MAX) { /* both buckets' values moved in one pass */
        select_two(u, n, shift, width, bucket[0], bucket[split], r, base, split, m, out);
        return;
    }
    for (size_t k0 = 0, k1; k0 < m; k0 = k1) {
        for (k1 = k0; k1 < m && bucket[k1] == bucket[k0]; k1++)
            ;
        uint64_t b = bucket[k0];
        if (shift == 0) { /* the last digit: the bucket is one value */
            for (size_t x = k0; x < k1; x++)
                out[x] = (sel_get(u, 0) & ~mask) | b;
            continue;
        }
        unsigned next = shift > SEL_BITS ? shift - SEL_BITS : 0;
        uint32_t c2[SEL_BUCKETS];
        memset(c2, 0, sizeof c2);
        size_t nb = 0, rr[SEL_RANKS];
        for (size_t i = 0; i < n; i++) {
            uint64_t x = sel_get(u, i);
            if ((x >> shift & mask) == b) {
                c2[x >> next & (SEL_BUCKETS - 1)]++;
                sel_put(u, i, sel_get(u, nb));
                sel_put(u, nb++, x);
            }
        }
        for (size_t x = k0; x < k1; x++)
            rr[x - k0] = r[x] - base[x];
        select_digits(u, nb, next, SEL_BITS, c2, rr, k1 - k0, out + k0);
    }
}

/* The top digit's width and shift for n values spanning [lo, hi]: many values, a wider top
 * digit, so that the ranks' buckets hold few of them (with 11 bits, durations with far
 * outliers put most values in p50's bucket, which the next level reads again); its counts'
 * clearing is small beside them. */
static unsigned span_digit(size_t n, int64_t lo, int64_t hi, unsigned *width) {
    unsigned bits = 0;
    for (uint64_t span = (uint64_t)(hi - lo); span; span >>= 1)
        bits++;
    *width = n >= SEL_WIDE_MIN ? SEL_WIDE_BITS : SEL_BITS;
    return bits > *width ? bits - *width : 0;
}

/* Offsets below SEL_FINE are also counted one by one in the first pass (when its digit is not
 * already the last): the percentiles of durations mostly lie a few hundred ns above the least
 * value, in the top digit's first buckets with most of the values (the digit's 2^shift-wide
 * buckets, 64 ns on the launch stats, hold far more than one value there), and a rank found
 * among these counts needs no further pass over the values (select_digits' next level reads
 * them all again). 16 KiB of counts on the stack, cleared per selection. */
#define SEL_FINE 4096

typedef struct {
    uint32_t n[SEL_FINE + 1]; /* [SEL_FINE]: every offset from SEL_FINE on */
} sel_fine;

/* Counts offset x in f. */
static inline void fine_add(sel_fine *f, uint64_t x) {
    f->n[x < SEL_FINE ? x : SEL_FINE]++;
}

/* select_span's selection once the offsets are in u[0..n) and their top digit counted (and
 * those below SEL_FINE in `fine`, NULL: not counted): the ranks below the number of offsets
 * under SEL_FINE are read from those counts (the r-th smallest offset is the least y with
 * more than r offsets <= y, whichever way it is found), the others selected by digits. */
static void select_counted(double *u, size_t n, unsigned shift, unsigned width, uint32_t *count,
                           const sel_fine *fine, const size_t *r, size_t m, double *out,
                           int64_t lo) {
    uint64_t o[SEL_RANKS];
    size_t k = 0;
    for (size_t y = 0, below = 0; fine && y < SEL_FINE && k < m; y++) {
        below += fine->n[y]; /* offsets <= y */
        for (; k < m && r[k] < below; k++)
            o[k] = y;
    }
    if (k < m)
        select_digits(u, n, shift, width, count, r + k, m - k, o + k);
    free(count);
    for (k = 0; k < m; k++)
        out[k] = (double)(lo + (int64_t)o[k]);
}

/* The values of ranks r[0..m) (ascending) among v[0..n), whole numbers in [lo, hi] (below
 * 2^53 in magnitude, no -0.0), into out[]; v holds other bits after (the caller's scratch). */
static void select_span(double *v, size_t n, const size_t *r, size_t m, double *out, int64_t lo,
                        int64_t hi) {
    unsigned width, shift = span_digit(n, lo, hi, &width);
    uint64_t mask = (UINT64_C(1) << width) - 1;
    uint32_t *count = tp_mem_xcalloc((size_t)mask + 1, sizeof *count);
    sel_fine fine;
    if (shift > 0) { /* the offsets, their top digit and the small ones counted */
        memset(&fine, 0, sizeof fine);
        for (size_t i = 0; i < n; i++) {
            uint64_t x = (uint64_t)((int64_t)v[i] - lo);
            count[x >> shift & mask]++;
            fine_add(&fine, x);
            sel_put(v, i, x);
        }
    } else { /* the top digit is the last: select_digits answers from its counts */
        for (size_t i = 0; i < n; i++) {
            uint64_t x = (uint64_t)((int64_t)v[i] - lo);
            count[x >> shift & mask]++;
            sel_put(v, i, x);
        }
    }
    select_counted(v, n, shift, width, count, shift > 0 ? &fine : NULL, r, m, out, lo);
}

/* SEL_FINE's counts alone, in a pass that only counts (no top digit, no offsets written):
 * returns 1 with out[] set when they answer every rank (more than r[m - 1] offsets below
 * SEL_FINE), else 0 (v untouched). */
static int select_fine_only(const int64_t *v, size_t n, const size_t *r, size_t m, double *out,
                            int64_t lo) {
    sel_fine fine;
    memset(&fine, 0, sizeof fine);
    for (size_t i = 0; i < n; i++)
        fine_add(&fine, (uint64_t)v[i] - (uint64_t)lo);
    if (n - fine.n[SEL_FINE] <= r[m - 1])
        return 0;
    select_counted(NULL, n, 0, 0, NULL, &fine, r, m, out, lo); /* (every rank from `fine`) */
    return 1;
}

/* Which of the SEL_FINE counts to try, from a sample of SEL_SAMPLE values, evenly spaced
 * (n >= SEL_MIN): where more than the ranks' share of them lie below SEL_FINE, the counts
 * alone first (select_fine_only: the launch statistics' call and kernel durations, ~96 %
 * there against the 95 % p95 needs); where fewer than the lowest rank's share do, none (the
 * launch delays: ~0.2 %; every rank by digits). A wrong guess costs a pass or the counting,
 * never the answer: every path selects the same offsets. */
#define SEL_SAMPLE 4096
enum { SEL_FINE_NONE, SEL_FINE_TOO, SEL_FINE_FIRST };

static int sel_fine_guess(const int64_t *v, size_t n, const size_t *r, size_t m, int64_t lo) {
    size_t hit = 0;
    for (size_t k = 0; k < SEL_SAMPLE; k++)
        hit += (uint64_t)v[k * (n / SEL_SAMPLE)] - (uint64_t)lo < SEL_FINE;
    if (hit * n > (r[m - 1] + 1) * (size_t)SEL_SAMPLE) /* (n < 2^32: no overflow) */
        return SEL_FINE_FIRST;
    return hit * n > r[0] * (size_t)SEL_SAMPLE ? SEL_FINE_TOO : SEL_FINE_NONE;
}

/* select_span of integers (|v[i]| < 2^53): the same offsets, so the same values, without a
 * conversion per value; v holds the offsets after (or is untouched). */
static void select_span_i64(int64_t *v, size_t n, const size_t *r, size_t m, double *out,
                            int64_t lo, int64_t hi) {
    unsigned width, shift = span_digit(n, lo, hi, &width);
    int fine_on = shift > 0; /* (shift 0: the top digit is the last, no SEL_FINE counts) */
    if (fine_on) {
        int guess = sel_fine_guess(v, n, r, m, lo);
        if (guess == SEL_FINE_FIRST && select_fine_only(v, n, r, m, out, lo))
            return;
        fine_on = guess != SEL_FINE_NONE;
    }
    uint64_t mask = (UINT64_C(1) << width) - 1;
    uint32_t *count = tp_mem_xcalloc((size_t)mask + 1, sizeof *count);
    sel_fine fine;
    if (fine_on) { /* as select_span */
        memset(&fine, 0, sizeof fine);
        for (size_t i = 0; i < n; i++) {
            uint64_t x = (uint64_t)v[i] - (uint64_t)lo;
            count[x >> shift & mask]++;
            fine_add(&fine, x);
            v[i] = (int64_t)x;
        }
    } else {
        for (size_t i = 0; i < n; i++) {
            uint64_t x = (uint64_t)v[i] - (uint64_t)lo;
            count[x >> shift & mask]++;
            v[i] = (int64_t)x;
        }
    }
    /* select_digits reads and writes its offsets through memcpy only: 64-bit patterns */
    select_counted((double *)(void *)v, n, shift, width, count, fine_on ? &fine : NULL, r, m, out,
                   lo);
}

/* select_span's values; 0 (v untouched) unless every value is a whole number below 2^53 in
 * magnitude and none is -0.0. */
static int select_whole(double *v, size_t n, const size_t *r, size_t m, double *out) {
    int64_t lo = (int64_t)v[0], hi = lo;
    int whole = n < UINT32_MAX;      /* (the digit counts are 32-bit) */
    for (size_t i = 0; i < n; i++) { /* a conversion and back: NaN and fractions fail */
        double x = v[i];
        int64_t k = (int64_t)x;
        uint64_t b;
        memcpy(&b, &x, sizeof b);
        whole &= ((double)k == x) & (b != UINT64_C(1) << 63); /* -0.0 too */
        lo = k < lo ? k : lo;
        hi = k > hi ? k : hi;
    }
    /* |x| < 2^53 (the conversion of larger ones is not trusted, nor exact) */
    if (!whole || !(lo > -9007199254740992 && hi < 9007199254740992))
        return 0;
    select_span(v, n, r, m, out, lo, hi);
    return 1;
}

/* percentile_from's figure for each of q[0..m) (ascending, m <= 2) by select_whole; 0 when
 * that declines. range: the values' least and greatest, known to be whole numbers below
 * 2^53 in magnitude, none -0.0 (then select_span, without select_whole's pass); NULL: not
 * known. */
/* The ranks percentile q[0..m) (m <= 2) reads among n values: r[0..return) ascending and
 * distinct; lo[k] and pos[k] as tp_an_percentile_sorted places q[k]. */
static size_t percentile_ranks(size_t n, const double *q, size_t m, size_t *r, size_t *lo,
                               double *pos) {
    size_t nr = 0;
    for (size_t k = 0; k < m; k++) {
        pos[k] = (double)(n - 1) * (q[k] / 100.0); /* as tp_an_percentile_sorted */
        lo[k] = (size_t)floor(pos[k]);
        if (lo[k] >= n - 1)
            lo[k] = n - 1;
        r[nr++] = lo[k];
        if (lo[k] < n - 1)
            r[nr++] = lo[k] + 1;
    }
    for (size_t k = 1; k < nr; k++) /* ascending (a few: insertion), equal ranks once */
        for (size_t j = k; j > 0 && r[j] < r[j - 1]; j--) {
            size_t t = r[j];
            r[j] = r[j - 1], r[j - 1] = t;
        }
    size_t uniq = 0;
    for (size_t k = 0; k < nr; k++)
        if (!uniq || r[k] != r[uniq - 1])
            r[uniq++] = r[k];
    return uniq;
}

/* The percentiles from the selected values val[] of ranks r[] (percentile_ranks'). */
static void percentiles_of(size_t n, size_t m, const size_t *r, const size_t *lo, const double *pos,
                           const double *val, double *p) {
    for (size_t k = 0; k < m; k++) {
        size_t at = 0;
        while (r[at] != lo[k])
            at++;
        if (lo[k] == n - 1) {
            p[k] = val[at];
            continue;
        }
        double pair[2] = {val[at], val[at + 1]}; /* the sorted array's v[lo] and v[lo + 1] */
        p[k] = percentile_between(pair, pos[k] - (double)lo[k]);
    }
}

static int percentiles_whole(double *v, size_t n, const double *q, size_t m, double *p,
                             const int64_t *range) {
    size_t r[SEL_RANKS], lo[2];
    double pos[2];
    size_t uniq = percentile_ranks(n, q, m, r, lo, pos);
    double val[SEL_RANKS];
    if (range)
        select_span(v, n, r, uniq, val, range[0], range[1]);
    else if (!select_whole(v, n, r, uniq, val))
        return 0;
    percentiles_of(n, m, r, lo, pos, val, p);
    return 1;
}

double tp_an_percentile(double *v, size_t n, double q) {
    if (n == 0)
        return NAN;
    double p;
    if (n >= SEL_MIN && percentiles_whole(v, n, &q, 1, &p, NULL)) /* (no NaN when it answers) */
        return p;
    if (any_nan(v, n)) { /* qsort's order, whatever it is: the definition's own */
        qsort(v, n, sizeof *v, cmp_double);
        return tp_an_percentile_sorted(v, n, q);
    }
    size_t at;
    return percentile_from(v, n, q, 0, &at);
}

double tp_an_percentile_in(double *v, size_t n, double q, int64_t lo, int64_t hi) {
    double p;
    int64_t range[2] = {lo, hi};
    if (n >= SEL_MIN && n < UINT32_MAX && lo > -9007199254740992 && hi < 9007199254740992 &&
        percentiles_whole(v, n, &q, 1, &p, range))
        return p;
    return tp_an_percentile(v, n, q);
}

double tp_an_percentile_i64_in(int64_t *v, size_t n, double q, int64_t lo, int64_t hi) {
    if (n >= SEL_MIN && n < UINT32_MAX && lo > -9007199254740992 && hi < 9007199254740992) {
        /* percentiles_whole's steps with select_span_i64 (the same offsets, so the same
         * values as select_span of the doubles) */
        size_t r[SEL_RANKS], rlo[1];
        double pos[1], val[SEL_RANKS], p;
        size_t uniq = percentile_ranks(n, &q, 1, r, rlo, pos);
        select_span_i64(v, n, r, uniq, val, lo, hi);
        percentiles_of(n, 1, r, rlo, pos, val, &p);
        return p;
    }
    double *dv = (double *)(void *)v; /* each 8 bytes read before written */
    for (size_t i = 0; i < n; i++) {
        double x = (double)v[i];
        memcpy(&dv[i], &x, sizeof x);
    }
    return tp_an_percentile_in(dv, n, q, lo, hi);
}

void tp_an_percentile2(double *v, size_t n, double q1, double q2, double *p1, double *p2) {
    double q[2] = {q1, q2}, p[2];
    if (n >= SEL_MIN && q1 <= q2 && percentiles_whole(v, n, q, 2, p, NULL)) { /* (no NaN then) */
        *p1 = p[0], *p2 = p[1];
        return;
    }
    if (n == 0 || any_nan(v, n)) {
        *p1 = tp_an_percentile(v, n, q1);
        *p2 = tp_an_percentile(v, n, q2);
        return;
    }
    size_t at;
    *p1 = percentile_from(v, n, q1, 0, &at);
    /* v[0..at] are the at + 1 smallest now: the second selection searches above them */
    *p2 = percentile_from(v, n, q2, at + 1, &at);
}

int tp_an_sum_exact(const double *v, size_t n, double *sum) {
    double s = 0, mag = 0;
    for (size_t i = 0; i < n; i++) {
        /* a whole number (NaN fails; so does anything of 2^53 or more, which the bound on
         * mag below refuses anyway): a conversion, not a call of floor per value */
        if (!(fabs(v[i]) < 9007199254740992.0) || v[i] != (double)(int64_t)v[i])
            return 0;
        s += v[i];
        mag += fabs(v[i]);
        if (!(mag <= 4503599627370496.0)) /* 2^52: mag itself stays exact; infinities too */
            return 0;
    }
    *sum = s;
    return 1;
}

int tp_an_whole_stats2(double *v, size_t n, double q1, double q2, double *sum, double *min,
                       double *max, double *p1, double *p2) {
    if (n < SEL_MIN || n >= UINT32_MAX || !(q1 <= q2))
        return 0;
    double s = 0, mag = 0, mn = v[0], mx = v[0];
    int ok = 1;
    for (size_t i = 0; i < n; i++) { /* tp_an_sum_exact's tests, and -0.0 */
        double x = v[i];
        uint64_t b;
        memcpy(&b, &x, sizeof b);
        ok &= (fabs(x) < 9007199254740992.0) & (x == (double)(int64_t)x) & (b != UINT64_C(1) << 63);
        s += x;
        mag += fabs(x);
        mn = x < mn ? x : mn;
        mx = x > mx ? x : mx;
    }
    /* mag only grows, so its bound at the end is its bound at every step, as tested there */
    if (!ok || !(mag <= 4503599627370496.0))
        return 0;
    double q[2] = {q1, q2}, p[2];
    int64_t range[2] = {(int64_t)mn, (int64_t)mx};
    percentiles_whole(v, n, q, 2, p, range);
    *sum = s, *min = mn, *max = mx, *p1 = p[0], *p2 = p[1];
    return 1;
}

int tp_an_whole_stats2_i64(int64_t *v, size_t n, double q1, double q2, double *sum, double *min,
                           double *max, double *p1, double *p2) {
    if (n < SEL_MIN || n >= UINT32_MAX || !(q1 <= q2))
        return 0;
    tp_an_i64_span sp;
    tp_an_i64_span_open(&sp);
    for (size_t i = 0; i < n; i++)
        tp_an_i64_span_add(&sp, v[i]);
    return tp_an_whole_stats2_i64_of(v, n, &sp, q1, q2, sum, min, max, p1, p2);
}

int tp_an_whole_stats2_i64_of(int64_t *v, size_t n, const tp_an_i64_span *sp, double q1, double q2,
                              double *sum, double *min, double *max, double *p1, double *p2) {
    if (n < SEL_MIN || n >= UINT32_MAX || !(q1 <= q2))
        return 0;
    const int64_t big = INT64_C(9007199254740992); /* 2^53 */
    int64_t mn = sp->min, mx = sp->max;
    uint64_t s = sp->sum; /* wraps; exact when the magnitudes' sum is within 2^52 (tested below) */
    if (!(mn > -big && mx < big)) /* tp_an_whole_stats2 refuses |x| >= 2^53 */
        return 0;
    /* the magnitudes' sum within 2^52 (tp_an_whole_stats2's bound, the same answer: their
     * double sum is exact up to there, and rounds to more than 2^52 past it): from the
     * largest magnitude when that shows it, else summed */
    uint64_t amax = (uint64_t)(mx > -mn ? mx : -mn), lim = UINT64_C(4503599627370496);
    if (amax > lim / n) {
        uint64_t mag = 0;
        for (size_t i = 0; i < n && mag <= lim; i++) /* each term < 2^53: no wrap */
            mag += (uint64_t)(v[i] < 0 ? -v[i] : v[i]);
        if (mag > lim)
            return 0;
    }
    double q[2] = {q1, q2}, p[2], val[SEL_RANKS];
    size_t r[SEL_RANKS], lo[2];
    double pos[2];
    size_t uniq = percentile_ranks(n, q, 2, r, lo, pos);
    select_span_i64(v, n, r, uniq, val, mn, mx);
    percentiles_of(n, 2, r, lo, pos, val, p);
    *sum = (double)(int64_t)s, *min = (double)mn, *max = (double)mx, *p1 = p[0], *p2 = p[1];
    return 1;
}

double tp_an_percentile_sorted(const double *v, size_t n, double q) {
    if (n == 0)
        return NAN;
    /* numpy "linear": virtual index (n - 1) * q / 100, interpolate between neighbours. */
    double pos = (double)(n - 1) * (q / 100.0);
    size_t lo = (size_t)floor(pos);
    if (lo >= n - 1)
        return v[n - 1];
    return percentile_between(v + lo, pos - (double)lo);
}

void tp_an_describe(double *v, size_t n, tp_an_describe_t *out) {
    tp_an_describe_s(v, n, out, NULL);
}

void tp_an_describe_s(double *v, size_t n, tp_an_describe_t *out, tp_scratch *sc) {
    out->count = n;
    out->sum = 0;
    out->mean = out->std = out->min = out->p25 = out->p50 = out->p75 = out->max = NAN;
    if (n == 0)
        return;
    sort_values(v, n, sc);
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += v[i];
    out->sum = s;
    out->mean = s / (double)n;
    if (n > 1) {
        double ss = 0;
        for (size_t i = 0; i < n; i++)
            ss += (v[i] - out->mean) * (v[i] - out->mean);
        out->std = sqrt(ss / (double)(n - 1));
    }
    out->min = v[0];
    out->max = v[n - 1];
    out->p25 = tp_an_percentile_sorted(v, n, 25);
    out->p50 = tp_an_percentile_sorted(v, n, 50);
    out->p75 = tp_an_percentile_sorted(v, n, 75);
}

/* The sorted array's value at rank r: lo + the bucket whose counts reach past r. */
static double counted_at(const size_t *count, int64_t lo, size_t r) {
    size_t b = 0;
    for (size_t seen = count[0]; seen <= r; seen += count[++b])
        ;
    return (double)(lo + (int64_t)b);
}

static double counted_percentile(const size_t *count, int64_t lo, size_t n, double q) {
    double pos = (double)(n - 1) * (q / 100.0); /* as tp_an_percentile_sorted */
    size_t at = (size_t)floor(pos);
    if (at >= n - 1)
        return counted_at(count, lo, n - 1);
    double pair[2] = {counted_at(count, lo, at), counted_at(count, lo, at + 1)};
    return percentile_between(pair, pos - (double)at);
}

void tp_an_describe_counts(const size_t *count, size_t span, int64_t lo, size_t n,
                           tp_an_describe_t *out) {
    out->count = n;
    out->sum = 0;
    out->mean = out->std = out->min = out->p25 = out->p50 = out->p75 = out->max = NAN;
    if (n == 0)
        return;
    int64_t hi = lo + (int64_t)span - 1;
    uint64_t most = (uint64_t)(lo < 0 ? -lo : lo) > (uint64_t)(hi < 0 ? -hi : hi)
                        ? (uint64_t)(lo < 0 ? -lo : lo)
                        : (uint64_t)(hi < 0 ? -hi : hi);
    double s = 0;
    if (most == 0 || n <= (UINT64_C(1) << 53) / most) { /* every partial sum exact */
        int64_t t = 0;
        for (size_t b = 0; b < span; b++)
            t += (int64_t)count[b] * (lo + (int64_t)b);
        s = (double)t;
    } else {
        for (size_t b = 0; b < span; b++)
            for (size_t c = 0; c < count[b]; c++)
                s += (double)(lo + (int64_t)b);
    }
    out->sum = s;
    out->mean = s / (double)n;
    if (n > 1) { /* each value's term added once per value, in the sorted order */
        double ss = 0;
        for (size_t b = 0; b < span; b++) {
            double x = (double)(lo + (int64_t)b), d = (x - out->mean) * (x - out->mean);
            /* the same additions in the same order, four a turn: a length's count runs to
             * hundreds of thousands (the queue's), and the loop's own test and step were
             * two of its three instructions an addition */
            size_t c = count[b];
            for (; c >= 4; c -= 4) {
                ss += d;
                ss += d;
                ss += d;
                ss += d;
            }
            for (; c > 0; c--)
                ss += d;
        }
        out->std = sqrt(ss / (double)(n - 1));
    }
    out->min = counted_at(count, lo, 0);
    out->max = counted_at(count, lo, n - 1);
    out->p25 = counted_percentile(count, lo, n, 25);
    out->p50 = counted_percentile(count, lo, n, 50);
    out->p75 = counted_percentile(count, lo, n, 75);
}

void tp_an_describe_any_s(double *v, size_t n, tp_an_describe_t *out, tp_scratch *sc) {
    int whole = n >= COUNT_SPAN && n < UINT32_MAX;
    int64_t lo = n ? (int64_t)v[0] : 0, hi = lo;
    for (size_t i = 0; whole && i < n; i++) { /* as select_whole tests: NaN, fractions fail */
        double x = v[i];
        int64_t k = (int64_t)x;
        uint64_t b;
        memcpy(&b, &x, sizeof b);
        whole &= ((double)k == x) & (b != UINT64_C(1) << 63) & (fabs(x) < 9007199254740992.0);
        lo = k < lo ? k : lo;
        hi = k > hi ? k : hi;
    }
    if (!whole || (uint64_t)(hi - lo) >= n) { /* wider than the values: their sort */
        tp_an_describe_s(v, n, out, sc);
        return;
    }
    size_t span = (size_t)(hi - lo) + 1;
    size_t *count = tp_scratch_get0(sc, span, sizeof *count);
    for (size_t i = 0; i < n; i++)
        count[(int64_t)v[i] - lo]++;
    tp_an_describe_counts(count, span, lo, n, out);
    tp_scratch_put(sc, count);
}

void tp_an_describe_any_i64_s(int64_t *v, size_t n, int64_t lo, int64_t hi, tp_an_describe_t *out,
                              tp_scratch *sc) {
    /* tp_an_describe_any_s counts exactly where n is in range and the converted values are
     * whole, not -0.0, below 2^53 in magnitude (integers there convert exactly: the same lo,
     * hi and offsets) and span fewer integers than their count */
    const int64_t big = INT64_C(9007199254740992); /* 2^53 */
    if (n >= COUNT_SPAN && n < UINT32_MAX && lo > -big && hi < big && (uint64_t)(hi - lo) < n) {
        size_t span = (size_t)(hi - lo) + 1;
        size_t *count = tp_scratch_get0(sc, span, sizeof *count);
        for (size_t i = 0; i < n; i++)
            count[v[i] - lo]++;
        tp_an_describe_counts(count, span, lo, n, out);
        tp_scratch_put(sc, count);
        return;
    }
    double *dv = (double *)(void *)v; /* each 8 bytes read before written */
    for (size_t i = 0; i < n; i++) {
        double x = (double)v[i];
        memcpy(&dv[i], &x, sizeof x);
    }
    tp_an_describe_any_s(dv, n, out, sc);
}

/* ---- numpy's aquicksort (numpy/core/src/npysort/quicksort.cpp, v1.24), ported as is. */

#define NP_SMALL_QUICKSORT 15
#define NP_QS_STACK 128
#define NP_SWAP(T, a, b)                                                                           \
    do {                                                                                           \
        T t_ = (a);                                                                                \
        (a) = (b);                                                                                 \
        (b) = t_;                                                                                  \
    } while (0)

/* Sifts a[i] down the max-heap a[1..n] (numpy's inner loop, shared by both phases). */
static void np_sift_down(const int64_t *v, size_t *a, size_t i, size_t n) {
    size_t tmp = a[i], j;
    for (j = i << 1; j <= n;) {
        if (j < n && v[a[j]] < v[a[j + 1]])
            j += 1;
        if (v[tmp] < v[a[j]]) {
            a[i] = a[j];
            i = j;
            j += j;
        } else
            break;
    }
    a[i] = tmp;
}

static void np_aheapsort(const int64_t *v, size_t *tosort, size_t n) {
    size_t *a = tosort - 1; /* 1-based heap indexing, as in numpy */
    for (size_t l = n >> 1; l > 0; --l)
        np_sift_down(v, a, l, n);
    for (; n > 1;) {
        /* numpy keeps tmp aside and sifts it from the root; storing it there first lets both
         * loops share np_sift_down, with the same comparisons and moves. */
        size_t tmp = a[n];
        a[n] = a[1];
        a[1] = tmp;
        n -= 1;
        np_sift_down(v, a, 1, n);
    }
}

static int np_msb(size_t n) {
    int d = 0;
    while (n >>= 1)
        d++;
    return d;
}

static void np_insertion(const int64_t *v, size_t *pl, size_t *pr) {
    for (size_t *pi = pl + 1; pi <= pr; ++pi) {
        size_t vi = *pi;
        int64_t vp = v[vi];
        size_t *pj = pi, *pk = pi - 1;
        while (pj > pl && vp < v[*pk])
            *pj-- = *pk--;
        *pj = vi;
    }
}

/* One partition step: returns the pivot's final slot. */
static size_t *np_partition(const int64_t *v, size_t *pl, size_t *pr) {
    size_t *pm = pl + ((pr - pl) >> 1);
    if (v[*pm] < v[*pl])
        NP_SWAP(size_t, *pm, *pl);
    if (v[*pr] < v[*pm])
        NP_SWAP(size_t, *pr, *pm);
    if (v[*pm] < v[*pl])
        NP_SWAP(size_t, *pm, *pl);
    int64_t vp = v[*pm];
    size_t *pi = pl, *pj = pr - 1;
    NP_SWAP(size_t, *pm, *pj);
    for (;;) {
        do
            ++pi;
        while (v[*pi] < vp);
        do
            --pj;
        while (vp < v[*pj]);
        if (pi >= pj)
            break;
        NP_SWAP(size_t, *pi, *pj);
    }
    NP_SWAP(size_t, *pi, *(pr - 1));
    return pi;
}

/* numpy's plain introsort on the keys themselves (small arrays, or no stable order). */
static void argsort_np_plain(const int64_t *v, size_t num, size_t *tosort) {
    for (size_t i = 0; i < num; i++)
        tosort[i] = i;
    if (num < 2)
        return;
    size_t *pl = tosort, *pr = tosort + num - 1;
    size_t *stack[NP_QS_STACK], **sptr = stack;
    int depth[NP_QS_STACK], *psdepth = depth;
    int cdepth = np_msb(num) * 2;
    for (;;) {
        if (cdepth < 0) {
            np_aheapsort(v, pl, (size_t)(pr - pl + 1));
            goto stack_pop;
        }
        while ((pr - pl) > NP_SMALL_QUICKSORT) {
            size_t *pi = np_partition(v, pl, pr);
            if (pi - pl < pr - pi) {
                *sptr++ = pi + 1;
                *sptr++ = pr;
                pr = pi - 1;
            } else {
                *sptr++ = pl;
                *sptr++ = pi - 1;
                pl = pi + 1;
            }
            *psdepth++ = --cdepth;
        }
        np_insertion(v, pl, pr);
    stack_pop:
        if (sptr == stack)
            break;
        pr = *(--sptr);
        pl = *(--sptr);
        cdepth = *(--psdepth);
    }
}

/* ---- The same introsort on positions: each index is replaced by its place p in the stable
 * order `rows` (the rows by key, stably), so that the elements are distinct 32-bit numbers
 * in key order, and keys compare by place: with ge[p] the last place of p's key and gs(p)
 * its first, key(a) < key(b) exactly when ge[a] < b, and a pivot P's scans compare each
 * element itself with gs(P) and ge[P]. Every comparison of numpy's has the same outcome, so
 * the moves, and hence the permutation, are numpy's; the scans read one contiguous array
 * instead of an index and then its key (the queue analysis's input makes numpy partition
 * ~30 times over, with heapsorts). */

/* The keys that occur more than once: groups of places [g[2k], g[2k + 1]], ascending. */
typedef struct {
    const uint32_t *ge; /* per place: the last place with its key */
    const uint32_t *g;
    size_t ng;
} np_ties;

/* The first group whose last place is >= p (ng when none). */
static size_t np_group_from(const np_ties *t, uint64_t p) {
    size_t a = 0, b = t->ng;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (t->g[2 * m + 1] < p)
            a = m + 1;
        else
            b = m;
    }
    return a;
}

static uint32_t np_first_place(const np_ties *t, uint32_t p) {
    size_t k = np_group_from(t, p);
    return k < t->ng && t->g[2 * k] <= p ? t->g[2 * k] : p;
}

enum { NP_SIMD_NONE, NP_SIMD_SSE2, NP_SIMD_AVX2 };

#if NP_SCAN_AVX2
/* np_pos_if_distinct's least and greatest of u[0..n) (n >= 16), eight at a time: the
 * distinct-keys test reads ~1 M elements of lb2k's queue, a min and a max each. */
__attribute__((target("avx2"))) static void np_minmax_avx2(const uint32_t *u, size_t n,
                                                           uint32_t *mn_out, uint32_t *mx_out) {
    __m256i mn = _mm256_loadu_si256((const __m256i *)(const void *)u), mx = mn;
    size_t i = 8;
    for (; i + 8 <= n; i += 8) {
        __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(u + i));
        mn = _mm256_min_epu32(mn, x);
        mx = _mm256_max_epu32(mx, x);
    }
    uint32_t a[8], b[8], lo, hi;
    _mm256_storeu_si256((__m256i *)(void *)a, mn);
    _mm256_storeu_si256((__m256i *)(void *)b, mx);
    lo = a[0], hi = b[0];
    for (int k = 1; k < 8; k++) {
        lo = a[k] < lo ? a[k] : lo;
        hi = b[k] > hi ? b[k] : hi;
    }
    for (; i < n; i++) {
        lo = u[i] < lo ? u[i] : lo;
        hi = u[i] > hi ? u[i] : hi;
    }
    *mn_out = lo, *mx_out = hi;
}

/* np_heap_rest's pass eight at a time: u[0..n)'s least and greatest, and how many are <= lo
 * and >= hi (-1 <= lo < hi <= 2^31 - 1: the places fit in 31 bits, so signed compares order
 * them). */
__attribute__((target("avx2"))) static void np_rest_scan_avx2(const uint32_t *u, size_t n,
                                                              int64_t lo, int64_t hi,
                                                              uint32_t *mn_out, uint32_t *mx_out,
                                                              size_t *c_lo, size_t *c_hi) {
    const __m256i l1 = _mm256_set1_epi32((int32_t)(lo + 1)),
                  h1 = _mm256_set1_epi32((int32_t)(hi - 1));
    __m256i mn = _mm256_set1_epi32(-1), mx = _mm256_setzero_si256(), cl = mx, ch = mx;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(u + i));
        mn = _mm256_min_epu32(mn, x);
        mx = _mm256_max_epu32(mx, x);
        cl = _mm256_sub_epi32(cl, _mm256_cmpgt_epi32(l1, x)); /* x < lo + 1 */
        ch = _mm256_sub_epi32(ch, _mm256_cmpgt_epi32(x, h1)); /* x > hi - 1 */
    }
    uint32_t a[8], b[8], c[8], d[8], lo_v = UINT32_MAX, hi_v = 0;
    size_t nl = 0, nh = 0;
    _mm256_storeu_si256((__m256i *)(void *)a, mn);
    _mm256_storeu_si256((__m256i *)(void *)b, mx);
    _mm256_storeu_si256((__m256i *)(void *)c, cl);
    _mm256_storeu_si256((__m256i *)(void *)d, ch);
    for (int k = 0; k < 8; k++) {
        lo_v = a[k] < lo_v ? a[k] : lo_v;
        hi_v = b[k] > hi_v ? b[k] : hi_v;
        nl += c[k], nh += d[k];
    }
    for (; i < n; i++) {
        uint32_t x = u[i];
        lo_v = x < lo_v ? x : lo_v;
        hi_v = x > hi_v ? x : hi_v;
        nl += (int64_t)x <= lo;
        nh += (int64_t)x >= hi;
    }
    *mn_out = lo_v, *mx_out = hi_v, *c_lo = nl, *c_hi = nh;
}

/* u[i] = mn + i for i < n, eight at a time. */
__attribute__((target("avx2"))) static void np_iota_avx2(uint32_t *u, size_t n, uint32_t mn) {
    __m256i x =
        _mm256_add_epi32(_mm256_set1_epi32((int32_t)mn), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256i eight = _mm256_set1_epi32(8);
    size_t i = 0;
    for (; i + 8 <= n; i += 8, x = _mm256_add_epi32(x, eight))
        _mm256_storeu_si256((__m256i *)(void *)(u + i), x);
    for (; i < n; i++)
        u[i] = mn + (uint32_t)i;
}
#endif

/* Sorts u[0..n) itself when its keys are pairwise distinct (then ascending places are the one
 * key order) and returns 1; else 0. Every place strictly between lo and hi is in the part
 * (its key lies strictly between the keys of the pivots that bound the part), so a group of
 * two or more places there is a tie for certain, found without reading the part. */
static int np_pos_if_distinct(const np_ties *t, uint32_t *u, size_t n, int64_t lo, int64_t hi,
                              int simd) {
    (void)simd; /* (read only where AVX2 code is built) */
    size_t k = np_group_from(t, (uint64_t)(lo + 1));
    if (k < t->ng && (int64_t)t->g[2 * k] <= lo)
        k++; /* the group of the lower pivot's key */
    if (k < t->ng && (int64_t)t->g[2 * k + 1] < hi)
        return 0;
    uint32_t mn = u[0], mx = u[0];
#if NP_SCAN_AVX2
    if (simd == NP_SIMD_AVX2)
        np_minmax_avx2(u, n, &mn, &mx);
    else
#endif
        for (size_t i = 1; i < n; i++) {
            mn = u[i] < mn ? u[i] : mn;
            mx = u[i] > mx ? u[i] : mx;
        }
    if ((size_t)(mx - mn) + 1 != n)
        return 0; /* not every place of [mn, mx]: only bounding keys' places are missing */
    /* the part is the places [mn, mx]: distinct keys unless a group has two of them */
    for (k = np_group_from(t, (uint64_t)mn + 1); k < t->ng && t->g[2 * k] < mx; k++) {
        uint32_t a = t->g[2 * k] > mn ? t->g[2 * k] : mn;
        uint32_t b = t->g[2 * k + 1] < mx ? t->g[2 * k + 1] : mx;
        if (b > a)
            return 0;
    }
#if NP_SCAN_AVX2
    if (simd == NP_SIMD_AVX2) {
        np_iota_avx2(u, n, mn);
        return 1;
    }
#endif
    for (size_t i = 0; i < n; i++)
        u[i] = mn + (uint32_t)i;
    return 1;
}

/* numpy's sift-down, found bottom-up (Floyd): numpy moves a[i] down the path of larger
 * children (the left one of equals) while it is below the next one, 2 comparisons a level.
 * The path does not depend on a[i], and along it the keys do not rise (a heap), so the places
 * where a[i] is below the path's element are a prefix of it: moving every element of the path
 * up one level on the way to the leaf (one comparison a level) and then, from the leaf, moving
 * back down those that a[i] is not below (a level or two: a[i] came from the bottom) leaves
 * numpy's arrangement: the elements above a[i]'s place one level up, the rest where they
 * were. The result is numpy's permutation (lb20k's ties: the heap is where ties decide). */
static void np_pos_sift_down(const uint32_t *ge, uint32_t *a, size_t i, size_t n) {
    uint32_t tmp = a[i], ge_tmp = ge[tmp]; /* read once: a's stores may alias ge for all C knows */
    size_t h = i, j;                       /* h: the hole the path's elements move up through */
    for (j = i << 1; j < n; j = h << 1) {  /* two children */
        uint32_t x = a[j], y = a[j + 1];
        int right = ge[x] < y;
        a[h] = right ? y : x;
        h = j + (size_t)right;
    }
    if (j == n) /* an only child */
        a[h] = a[j], h = j;
    while (h > i && !(ge_tmp < a[h >> 1])) { /* a[h >> 1] came up from h: back down */
        a[h] = a[h >> 1];
        h >>= 1;
    }
    a[h] = tmp;
}

/* How many of a heapsorted part's smallest elements numpy's extractions need not place: r
 * when the elements below the lowest key that two of them share are the r places [mn, mn + r)
 * (their keys are then distinct: one order, the ascending one), else 0. The heap extracts
 * the largest key first, so its last r extractions place exactly these. The part holds every
 * place strictly between lo and hi and some of the places of lo's key (at or below lo, its
 * last place) and of hi's (at or above hi, its first): that lowest key is lo's when two of
 * its places are here, else that of the first group of places above lo when it ends below
 * hi (all its places are here), else hi's when two of its places are here. */
static size_t np_heap_rest(const np_ties *t, const uint32_t *u, size_t n, int64_t lo, int64_t hi,
                           uint32_t *mn_out, int simd) {
    uint32_t mn = UINT32_MAX, mx = 0;
    size_t c_lo = 0, c_hi = 0;
    (void)simd; /* (read only where AVX2 code is built) */
#if NP_SCAN_AVX2
    if (simd == NP_SIMD_AVX2)
        np_rest_scan_avx2(u, n, lo, hi, &mn, &mx, &c_lo, &c_hi);
    else
#endif
        for (size_t i = 0; i < n; i++) {
            uint32_t x = u[i];
            mn = x < mn ? x : mn;
            mx = x > mx ? x : mx;
            c_lo += (int64_t)x <= lo;
            c_hi += (int64_t)x >= hi;
        }
    *mn_out = mn;
    if (c_lo >= 2)
        return 0;
    size_t k = np_group_from(t, (uint64_t)(lo + 1)), r;
    uint64_t below;
    if (k < t->ng && (int64_t)t->g[2 * k + 1] < hi) { /* its first place is above lo */
        below = t->g[2 * k];
        r = c_lo + (size_t)((int64_t)below - lo - 1);
    } else if (c_hi >= 2) {
        below = (uint64_t)hi;
        r = n - c_hi;
    } else {
        below = (uint64_t)mx + 1;
        r = n;
    }
    return r == below - mn ? r : 0;
}

/* numpy's heapsort of the part u[0..n) (bounds lo, hi as np_pos_sort's), up to its last
 * extraction that can order a tie; the places below that are written in order (lb2k's
 * queue: 45 k of the 83 k extractions of its largest heap, 29 -> 20 M instructions). */
static void np_pos_heapsort(const np_ties *t, uint32_t *u, size_t n, int64_t lo, int64_t hi,
                            int simd) {
    const uint32_t *ge = t->ge;
    uint32_t *a = u - 1, mn;
    size_t rest = np_heap_rest(t, u, n, lo, hi, &mn, simd);
    if (rest < n) {
        for (size_t l = n >> 1; l > 0; --l)
            np_pos_sift_down(ge, a, l, n);
        for (; n > 1 && n > rest;) {
            uint32_t tmp = a[n];
            a[n] = a[1];
            a[1] = tmp;
            n -= 1;
            np_pos_sift_down(ge, a, 1, n);
        }
    }
#if NP_SCAN_AVX2
    if (simd == NP_SIMD_AVX2) {
        np_iota_avx2(u, rest, mn);
        return;
    }
#endif
    for (size_t i = 0; i < rest; i++)
        u[i] = mn + (uint32_t)i;
}

static void np_pos_insertion(const uint32_t *ge, uint32_t *pl, uint32_t *pr) {
    for (uint32_t *pi = pl + 1; pi <= pr; ++pi) {
        uint32_t vi = *pi, gi = ge[vi];
        uint32_t *pj = pi, *pk = pi - 1;
        while (pj > pl && gi < *pk)
            *pj-- = *pk--;
        *pj = vi;
    }
}

/* The partition's scans: the first place after pi whose element is >= gs, and the last one
 * before pj whose element is <= ge (numpy's `do ++pi while (v[*pi] < vp)` and `do --pj while
 * (vp < v[*pj])`). `stop` holds such an element for certain (the pivot, the part's first
 * element). `simd` (NP_SIMD_*) says how they may be read: when places fit in 31 bits (the
 * signed compares then order them), several at a time while none of them stops the scan, up
 * to `stop`; the element they find is the one numpy's loop finds. */

#if NP_SCAN_AVX2
/* The queue's steps (two ascending runs) make numpy partition parts of ~480 k elements 40
 * times on lb2k: of its 1.1 M scans all but ~1,400 stop at the first element, and those few
 * pass ~15 M elements (44 M instructions eight at a time with SSE2, ~3 an element). Here 32
 * a step, then the stop found from the compare's mask (its lowest / highest lane), not by a
 * loop over the last eight. Called past the first two elements (np_scan_up / np_scan_down
 * read those without a call). */
__attribute__((target("avx2"))) static uint32_t *np_scan_up_avx2(uint32_t *pi, const uint32_t *stop,
                                                                 uint32_t gs) {
    const __m256i g = _mm256_set1_epi32((int32_t)gs);
#define NP_BELOW(k) _mm256_cmpgt_epi32(g, _mm256_loadu_si256((const __m256i *)(const void *)(k)))
    for (; stop - pi >= 32; pi += 32) { /* pi[1..32]: none of them past stop */
        __m256i below = _mm256_and_si256(_mm256_and_si256(NP_BELOW(pi + 1), NP_BELOW(pi + 9)),
                                         _mm256_and_si256(NP_BELOW(pi + 17), NP_BELOW(pi + 25)));
        if (_mm256_movemask_ps(_mm256_castsi256_ps(below)) != 0xff)
            break;
    }
    for (; stop - pi >= 8; pi += 8) {
        unsigned m = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(NP_BELOW(pi + 1)));
        if (m != 0xff) /* the lowest lane not below gs */
            return pi + 1 + __builtin_ctz(~m);
    }
#undef NP_BELOW
    do
        ++pi;
    while (*pi < gs);
    return pi;
}

__attribute__((target("avx2"))) static uint32_t *
np_scan_down_avx2(uint32_t *pj, const uint32_t *stop, uint32_t ge) {
    const __m256i g = _mm256_set1_epi32((int32_t)ge);
#define NP_ABOVE(k) _mm256_cmpgt_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(k)), g)
    for (; pj - stop >= 32; pj -= 32) { /* pj[-32..-1]: none of them before stop */
        __m256i above = _mm256_and_si256(_mm256_and_si256(NP_ABOVE(pj - 8), NP_ABOVE(pj - 16)),
                                         _mm256_and_si256(NP_ABOVE(pj - 24), NP_ABOVE(pj - 32)));
        if (_mm256_movemask_ps(_mm256_castsi256_ps(above)) != 0xff)
            break;
    }
    for (; pj - stop >= 8; pj -= 8) {
        unsigned m = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(NP_ABOVE(pj - 8)));
        if (m != 0xff) /* the highest lane not above ge */
            return pj - 8 + (31 - __builtin_clz(~m & 0xffu));
    }
#undef NP_ABOVE
    do
        --pj;
    while (ge < *pj);
    return pj;
}

/* The partition's swaps eight at a time. Where the pivot is near one end of its part (the
 * queue's two ascending runs: numpy peels a few hundred to thousands of elements off its
 * largest part per level), both scans stop at their first element again and again: lb2k
 * makes 562 k such swaps, 9 in 10 of them in runs of 64 or more. Eight of numpy's steps in a
 * row are such when u[pi + t] >= gs and u[pj - t] <= ge for t = 1..8 and pi + 8 < pj - 8
 * (then each step's scans stop at once and pi < pj, and the 16 slots are distinct, so each
 * holds its value from before the eight): the eight swaps are u[pi + t] <-> u[pj - t], the two
 * blocks exchanged and reversed. Leaves pi and pj where numpy's eight steps leave them, at
 * the first step that is not such (numpy's own loop goes on from there). */
__attribute__((target("avx2"))) static void np_swap_runs_avx2(uint32_t **pi_io, uint32_t **pj_io,
                                                              uint32_t gs, uint32_t ge) {
    uint32_t *pi = *pi_io, *pj = *pj_io;
    const __m256i g_s = _mm256_set1_epi32((int32_t)gs), g_e = _mm256_set1_epi32((int32_t)ge);
    const __m256i rev = _mm256_setr_epi32(7, 6, 5, 4, 3, 2, 1, 0);
    while (pj - pi > 16) {
        __m256i l = _mm256_loadu_si256((const __m256i *)(const void *)(pi + 1));
        __m256i r = _mm256_loadu_si256((const __m256i *)(const void *)(pj - 8));
        __m256i no = _mm256_or_si256(_mm256_cmpgt_epi32(g_s, l), _mm256_cmpgt_epi32(r, g_e));
        if (!_mm256_testz_si256(no, no)) /* a scan would pass an element: numpy's loop */
            break;
        _mm256_storeu_si256((__m256i *)(void *)(pi + 1), _mm256_permutevar8x32_epi32(r, rev));
        _mm256_storeu_si256((__m256i *)(void *)(pj - 8), _mm256_permutevar8x32_epi32(l, rev));
        pi += 8, pj -= 8;
    }
    *pi_io = pi, *pj_io = pj;
}
#endif

static inline uint32_t *np_scan_up(uint32_t *pi, const uint32_t *stop, uint32_t gs, int simd) {
    if (pi[1] >= gs)
        return pi + 1;
    if (pi[2] >= gs) /* pi + 1 was not the stop, so pi + 2 <= stop */
        return pi + 2;
    pi += 2;
#if NP_SCAN_AVX2
    if (simd == NP_SIMD_AVX2)
        return np_scan_up_avx2(pi, stop, gs);
#endif
#if defined(__SSE2__)
    if (simd != NP_SIMD_NONE) {
        __m128i g = _mm_set1_epi32((int32_t)gs);
        for (const uint32_t *lim = stop - 7; pi + 1 <= lim; pi += 8) {
            __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(pi + 1));
            __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(pi + 5));
            __m128i below = _mm_and_si128(_mm_cmplt_epi32(a, g), _mm_cmplt_epi32(b, g));
            if (_mm_movemask_ps(_mm_castsi128_ps(below)) != 0xf)
                break;
        }
    }
#else
    (void)stop, (void)simd;
#endif
    do
        ++pi;
    while (*pi < gs);
    return pi;
}

static inline uint32_t *np_scan_down(uint32_t *pj, const uint32_t *stop, uint32_t ge, int simd) {
    if (pj[-1] <= ge)
        return pj - 1;
    if (pj[-2] <= ge) /* pj - 1 was not the stop, so pj - 2 >= stop */
        return pj - 2;
    pj -= 2;
#if NP_SCAN_AVX2
    if (simd == NP_SIMD_AVX2)
        return np_scan_down_avx2(pj, stop, ge);
#endif
#if defined(__SSE2__)
    if (simd != NP_SIMD_NONE) {
        __m128i g = _mm_set1_epi32((int32_t)ge);
        for (const uint32_t *lim = stop + 8; pj >= lim; pj -= 8) {
            __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(pj - 4));
            __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(pj - 8));
            __m128i above = _mm_and_si128(_mm_cmpgt_epi32(a, g), _mm_cmpgt_epi32(b, g));
            if (_mm_movemask_ps(_mm_castsi128_ps(above)) != 0xf)
                break;
        }
    }
#else
    (void)stop, (void)simd;
#endif
    do
        --pj;
    while (ge < *pj);
    return pj;
}

typedef struct {
    uint32_t *pl, *pr;
    int64_t lo, hi; /* the places strictly between are all in the part */
    int depth;
} np_pos_part;

static void np_pos_sort(const np_ties *t, uint32_t *u, size_t num) {
    const uint32_t *ge = t->ge;
    uint32_t *pl = u, *pr = u + num - 1;
    np_pos_part stack[NP_QS_STACK / 2], *sp = stack;
    int64_t lo = -1, hi = (int64_t)num;
    int cdepth = np_msb(num) * 2, simd = NP_SIMD_NONE;
#if defined(__SSE2__)
    simd = num <= INT32_MAX ? NP_SIMD_SSE2 : NP_SIMD_NONE;
#endif
#if NP_SCAN_AVX2
    simd = simd == NP_SIMD_SSE2 && __builtin_cpu_supports("avx2") ? NP_SIMD_AVX2 : simd;
#endif
    for (;;) {
        if (cdepth < 0) {
            np_pos_heapsort(t, pl, (size_t)(pr - pl + 1), lo, hi, simd);
            goto stack_pop;
        }
        while ((pr - pl) > NP_SMALL_QUICKSORT) {
            if (np_pos_if_distinct(t, pl, (size_t)(pr - pl + 1), lo, hi, simd))
                goto stack_pop;
            uint32_t *pm = pl + ((pr - pl) >> 1);
            if (ge[*pm] < *pl)
                NP_SWAP(uint32_t, *pm, *pl);
            if (ge[*pr] < *pm)
                NP_SWAP(uint32_t, *pr, *pm);
            if (ge[*pm] < *pl)
                NP_SWAP(uint32_t, *pm, *pl);
            uint32_t gs_p = np_first_place(t, *pm), ge_p = ge[*pm];
            uint32_t *pi = pl, *pj = pr - 1;
            NP_SWAP(uint32_t, *pm, *pj);
            for (;;) {
#if NP_SCAN_AVX2
                if (simd == NP_SIMD_AVX2 && pj - pi > 16)
                    np_swap_runs_avx2(&pi, &pj, gs_p, ge_p);
#endif
                pi = np_scan_up(pi, pr - 1, gs_p, simd);
                pj = np_scan_down(pj, pl, ge_p, simd);
                if (pi >= pj)
                    break;
                NP_SWAP(uint32_t, *pi, *pj);
            }
            NP_SWAP(uint32_t, *pi, *(pr - 1));
            /* left of the pivot: keys up to its key, all those below; right: the rest */
            if (pi - pl < pr - pi) {
                *sp++ = (np_pos_part){pi + 1, pr, ge_p, hi, 0};
                pr = pi - 1;
                hi = gs_p;
            } else {
                *sp++ = (np_pos_part){pl, pi - 1, lo, gs_p, 0};
                pl = pi + 1;
                lo = ge_p;
            }
            sp[-1].depth = --cdepth;
        }
        np_pos_insertion(ge, pl, pr);
    stack_pop:
        if (sp == stack)
            break;
        --sp;
        pl = sp->pl, pr = sp->pr, lo = sp->lo, hi = sp->hi, cdepth = sp->depth;
    }
}

/* numpy's argsort of v[0..num) (64 <= num < 2^32) given its stable order `rows`, as places:
 * returns u (scratch of `s`) with u[i] the place in `rows` of numpy's i-th index, or NULL when
 * the keys are distinct (then numpy's order is `rows` itself). */
static inline __attribute__((always_inline)) uint32_t *np_places_in(const int64_t *v,
                                                                    const uint8_t *same, size_t num,
                                                                    const uint32_t *rows,
                                                                    tp_scratch *s) {
/* place p's key is place p + 1's (`same`: told per place, else read from v) */
#define SAME_NEXT(p) (same ? same[p] != 0 : v[rows[p]] == v[rows[(p) + 1]])
    size_t d = 1;
    while (d < num && !SAME_NEXT(d - 1))
        d++;
    if (d == num) /* distinct keys have one ascending order, whatever the algorithm */
        return NULL;
    uint32_t *ge = tp_scratch_get(s, num, sizeof *ge);
    /* from the last place down: each place's key against the next one's; a group of two or
     * more places is written into gb as its key's run ends, from gb's end down (2 per group,
     * at most num), so that they lie ascending from g */
    uint32_t *gb = tp_scratch_get(s, num, sizeof *gb), *g = gb + num;
    uint32_t *u = tp_scratch_get(s, num, sizeof *u);
    /* u: each index's place (numpy starts from the indices in order), in the same pass */
    uint32_t last = (uint32_t)(num - 1);
    ge[num - 1] = last;
    u[rows[num - 1]] = last;
    for (size_t p = num - 1; p-- > 0;) {
        u[rows[p]] = (uint32_t)p;
        if (!SAME_NEXT(p)) {
            if (last > p + 1) /* places p + 1 .. last: one key */
                *--g = last, *--g = (uint32_t)(p + 1);
            last = (uint32_t)p;
        }
        ge[p] = last;
    }
    if (last > 0)
        *--g = last, *--g = 0;
    size_t ng = (size_t)(gb + num - g) / 2;
    np_ties t = {ge, g, ng};
    np_pos_sort(&t, u, num);
    tp_scratch_put(s, gb);
    tp_scratch_put(s, ge);
    return u;
#undef SAME_NEXT
}

static uint32_t *np_places(const int64_t *v, size_t num, const uint32_t *rows, tp_scratch *s) {
    return np_places_in(v, NULL, num, rows, s);
}

static void argsort_np_rows(const int64_t *v, size_t num, const uint32_t *rows, size_t *tosort,
                            tp_scratch *s) {
    uint32_t *u = np_places(v, num, rows, s);
    if (!u) {
        for (size_t i = 0; i < num; i++)
            tosort[i] = rows[i];
        return;
    }
    for (size_t i = 0; i < num; i++)
        tosort[i] = rows[u[i]];
    tp_scratch_put(s, u);
}

void tp_an_argsort_np(const int64_t *v, size_t num, size_t *tosort, tp_scratch *s) {
    if (num < 64 || num >= UINT32_MAX) { /* numpy's own algorithm throughout */
        argsort_np_plain(v, num, tosort);
        return;
    }
    uint32_t *rows = tp_sort_order_i64_s(v, num, s);
    argsort_np_rows(v, num, rows, tosort, s);
    tp_scratch_put(s, rows);
}

void tp_an_argsort_np_from(const int64_t *v, size_t num, const uint32_t *rows, size_t *tosort,
                           tp_scratch *s) {
    if (num < 64)
        argsort_np_plain(v, num, tosort);
    else
        argsort_np_rows(v, num, rows, tosort, s);
}

uint32_t *tp_an_argsort_np_over(const int64_t *v, size_t num, uint32_t *rows, tp_scratch *s) {
    if (num < 64) { /* numpy's own algorithm, on a few indices of its width */
        size_t small[64];
        argsort_np_plain(v, num, small);
        for (size_t i = 0; i < num; i++)
            rows[i] = (uint32_t)small[i];
        return rows;
    }
    uint32_t *u = np_places(v, num, rows, s);
    if (!u)
        return rows;
    /* u's places become rows in u itself (each place read once), and u is the answer: no
     * copy back into `rows`, no 8-byte order in fresh pages */
    for (size_t i = 0; i < num; i++)
        u[i] = rows[u[i]];
    tp_scratch_put(s, rows);
    return u;
}

uint32_t *tp_an_argsort_np_over_same(const uint8_t *same, size_t num, uint32_t *rows,
                                     tp_scratch *s) {
    uint32_t *u = np_places_in(NULL, same, num, rows, s);
    if (!u)
        return rows;
    for (size_t i = 0; i < num; i++)
        u[i] = rows[u[i]];
    tp_scratch_put(s, rows);
    return u;
}

static int cmp_keyrow(const void *a, const void *b) {
    const tp_an_keyrow *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->row > y->row) - (x->row < y->row);
}

/* Rows ascending and below 2^32: the keys and rows sorted as pairs by key (stable, so rows
 * stay ascending within a key) and written back, instead of sorting indices and gathering the
 * 16-byte structs into a copy (10-15 % faster on 4.8 M, and 16 bytes a row less scratch). */
static void keyrow_sort_pairs(tp_an_keyrow *a, size_t n, tp_scratch *s) {
    uint64_t *k = tp_scratch_get(s, n, sizeof *k);
    uint32_t *r = tp_scratch_get(s, n, sizeof *r);
    for (size_t i = 0; i < n; i++)
        k[i] = tp_sort_key_i64(a[i].key), r[i] = (uint32_t)a[i].row;
    tp_sort_pairs_s(k, r, n, s);
    for (size_t i = 0; i < n; i++)
        a[i] = (tp_an_keyrow){(int64_t)(k[i] ^ (UINT64_C(1) << 63)), r[i]};
    tp_scratch_put(s, k);
    tp_scratch_put(s, r);
}

void tp_an_qsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *)) {
    const char *p = base;
    size_t i = 1;
    while (i < n && cmp(p + (i - 1) * size, p + i * size) <= 0)
        i++;
    if (i < n)
        qsort(base, n, size, cmp);
}

void tp_an_keyrow_sort(tp_an_keyrow *a, size_t n, tp_scratch *s) {
    int rows_ascending = 1;
    for (size_t i = 1; i < n && rows_ascending; i++)
        rows_ascending = a[i - 1].row <= a[i].row;
    if (rows_ascending && n && a[n - 1].row <= UINT32_MAX)
        keyrow_sort_pairs(a, n, s); /* the usual case: a stable sort by key gives (key, row) */
    else if (rows_ascending)
        tp_sort_structs_i64_s(a, n, sizeof *a, offsetof(tp_an_keyrow, key), s);
    else
        qsort(a, n, sizeof *a, cmp_keyrow);
}

void tp_an_stable_order(const int64_t *key, size_t n, size_t *idx, tp_scratch *s) {
    uint32_t *rows = tp_sort_order_i64_s(key, n, s);
    for (size_t i = 0; i < n; i++)
        idx[i] = rows[i];
    tp_scratch_put(s, rows);
}
