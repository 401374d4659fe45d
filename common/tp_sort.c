/* tp_sort: LSD radix sort, 8 bits per pass, passes where every key has the same byte skipped.
 * A first read of the keys finds the bits that vary (and whether they are sorted already);
 * only those byte positions get a histogram and a pass, which scatters keys (and rows) into
 * a scratch buffer before the buffers swap. Small inputs take an insertion sort, input of a
 * few ascending runs a merge; both are stable too. */
#include "tp_sort.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "tp_mem.h"
#include "tp_scratch.h"

#define RADIX_BITS 8
#define RADIX 256
#define PASSES 8
#define SMALL 48 /* below this an insertion sort beats clearing 8 histograms */

static void insertion(uint64_t *key, uint32_t *row, size_t n) {
    for (size_t i = 1; i < n; i++) {
        uint64_t k = key[i];
        uint32_t r = row ? row[i] : 0;
        size_t j = i;
        for (; j > 0 && key[j - 1] > k; j--) {
            key[j] = key[j - 1];
            if (row)
                row[j] = row[j - 1];
        }
        key[j] = k;
        if (row)
            row[j] = r;
    }
}

/* The bits in which some key differs from the first; 0 when all are equal. Sets *descents
 * to the number of places where a key is less than the one before (0: already ascending). */
static uint64_t varying_bits(const uint64_t *key, size_t n, size_t *descents) {
    uint64_t diff = 0;
    size_t d = 0;
    for (size_t i = 1; i < n; i++) {
        diff |= key[i] ^ key[0];
        d += key[i - 1] > key[i];
    }
    *descents = d;
    return diff;
}

/* Input of at most this many ascending runs is merged (at most 3 passes, no histogram)
 * instead of radix-sorted (4-6 passes of timestamps): the queue's steps are the launches in
 * time order followed by the GPU rows in time order, two runs of 2.4 M each on a 20,000-step
 * trace (one merge pass: 48-64 ms against 143-148 ms for the radix passes). */
#define MERGE_RUNS 8

/* The end of a sort that ping-pongs between (key, row) and the scratch pair (k2, r2): the
 * sorted pairs are in (k, r); copied back when they ended in the scratch, which goes back. */
static void pairs_done(tp_scratch *s, uint64_t *key, uint32_t *row, size_t n, uint64_t *k,
                       uint32_t *r, uint64_t *k2, uint32_t *r2) {
    if (k != key) {
        memcpy(key, k, n * sizeof *key);
        if (row)
            memcpy(row, r, n * sizeof *row);
        k2 = k, r2 = r;
    }
    tp_scratch_put(s, k2);
    tp_scratch_put(s, r2);
}

/* Stable merge of the adjacent ascending runs [a, m) and [m, b) of (k, r) into (k2, r2). */
static void merge2(const uint64_t *k, const uint32_t *r, uint64_t *k2, uint32_t *r2, size_t a,
                   size_t m, size_t b) {
    size_t i = a, j = m, o = a;
    while (i < m && j < b) {
        int t = k[j] < k[i]; /* ties from the left run: stable */
        size_t s = t ? j : i;
        k2[o] = k[s];
        if (r)
            r2[o] = r[s];
        o++;
        i += !t;
        j += t;
    }
    for (; i < m; i++, o++) {
        k2[o] = k[i];
        if (r)
            r2[o] = r[i];
    }
    for (; j < b; j++, o++) {
        k2[o] = k[j];
        if (r)
            r2[o] = r[j];
    }
}

/* Sorts (key, row), made of at most MERGE_RUNS ascending runs, by merging neighbouring runs
 * pairwise (stable: a tie takes the left run's first). */
static void merge_runs(uint64_t *key, uint32_t *row, size_t n, tp_scratch *s) {
    size_t bound[MERGE_RUNS + 1], m = 0;
    bound[m++] = 0;
    for (size_t i = 1; i < n; i++)
        if (key[i - 1] > key[i])
            bound[m++] = i;
    bound[m] = n;
    uint64_t *k = key, *k2 = tp_scratch_get(s, n, sizeof *k2);
    uint32_t *r = row, *r2 = row ? tp_scratch_get(s, n, sizeof *r2) : NULL;
    while (m > 1) {
        size_t w = 0;
        for (size_t x = 0; x < m; x += 2) {
            if (x + 1 < m)
                merge2(k, r, k2, r2, bound[x], bound[x + 1], bound[x + 2]);
            else {
                memcpy(k2 + bound[x], k + bound[x], (bound[x + 1] - bound[x]) * sizeof *k);
                if (r)
                    memcpy(r2 + bound[x], r + bound[x], (bound[x + 1] - bound[x]) * sizeof *r);
            }
            bound[w++] = bound[x];
        }
        bound[w] = n;
        m = w;
        uint64_t *tk = k;
        k = k2, k2 = tk;
        uint32_t *tr = r;
        r = r2, r2 = tr;
    }
    pairs_done(s, key, row, n, k, r, k2, r2);
}

/* Counts of every byte value at the byte positions whose bit is set in `passes`. */
static void histogram(const uint64_t *key, size_t n, unsigned passes, size_t (*count)[RADIX]) {
    for (int p = 0; p < PASSES; p++)
        if (passes >> p & 1)
            memset(count[p], 0, sizeof count[p]);
    for (int p = 0; p < PASSES; p++) {
        if (!(passes >> p & 1))
            continue;
        size_t *c = count[p];
        int shift = p * RADIX_BITS;
        for (size_t i = 0; i < n; i++)
            c[(key[i] >> shift) & (RADIX - 1)]++;
    }
}

/* One stable scatter pass by the byte at `shift`, from (k, r) into (k2, r2). */
static void scatter(const uint64_t *k, const uint32_t *r, uint64_t *k2, uint32_t *r2, size_t n,
                    int shift, const size_t *count) {
    size_t at[RADIX], sum = 0;
    for (int b = 0; b < RADIX; b++) {
        at[b] = sum;
        sum += count[b];
    }
    if (r) {
        for (size_t i = 0; i < n; i++) {
            size_t d = at[(k[i] >> shift) & (RADIX - 1)]++;
            k2[d] = k[i];
            r2[d] = r[i];
        }
    } else {
        for (size_t i = 0; i < n; i++)
            k2[at[(k[i] >> shift) & (RADIX - 1)]++] = k[i];
    }
}

void tp_sort_pairs(uint64_t *key, uint32_t *row, size_t n) {
    tp_sort_pairs_s(key, row, n, NULL);
}

void tp_sort_pairs_s(uint64_t *key, uint32_t *row, size_t n, tp_scratch *s) {
    if (n < SMALL) {
        insertion(key, row, n);
        return;
    }
    size_t descents;
    uint64_t diff = varying_bits(key, n, &descents);
    if (!descents)
        return;
    if (descents < MERGE_RUNS) {
        merge_runs(key, row, n, s);
        return;
    }
    unsigned passes = 0; /* the byte positions in which keys differ: the only passes needed */
    for (int p = 0; p < PASSES; p++)
        if ((diff >> (p * RADIX_BITS)) & (RADIX - 1))
            passes |= 1u << p;
    size_t count[PASSES][RADIX]; /* 16 KiB */
    histogram(key, n, passes, count);
    uint64_t *k = key, *k2 = tp_scratch_get(s, n, sizeof *k2);
    uint32_t *r = row, *r2 = row ? tp_scratch_get(s, n, sizeof *r2) : NULL;
    for (int p = 0; p < PASSES; p++) {
        if (!(passes >> p & 1))
            continue; /* every key has the same byte here: the pass would not move anything */
        scatter(k, r, k2, r2, n, p * RADIX_BITS, count[p]);
        uint64_t *tk = k;
        k = k2, k2 = tk;
        uint32_t *tr = r;
        r = r2, r2 = tr;
    }
    pairs_done(s, key, row, n, k, r, k2, r2);
}

void tp_sort_rows_i64(const int64_t *col, uint32_t *rows, size_t n) {
    tp_sort_rows_i64_s(col, rows, n, NULL);
}

void tp_sort_rows_i64_s(const int64_t *col, uint32_t *rows, size_t n, tp_scratch *s) {
    uint64_t *key = tp_scratch_get(s, n, sizeof *key);
    for (size_t i = 0; i < n; i++)
        key[i] = tp_sort_key_i64(col[rows[i]]);
    tp_sort_pairs_s(key, rows, n, s);
    tp_scratch_put(s, key);
}

/* Bits needed for values 0..v. */
static unsigned bits_for(uint64_t v) {
    unsigned k = 0;
    for (; v; v >>= 1)
        k++;
    return k;
}

void tp_sort_rows_grouped_s(uint64_t (*group)(const void *ctx, uint32_t row), const void *ctx,
                            size_t ngroups, const int64_t *c, uint32_t *rows, size_t n,
                            tp_scratch *s) {
    uint64_t *key = tp_scratch_get(s, n ? n : 1, sizeof *key);
    uint64_t lo = UINT64_MAX, hi = 0;
    int ascending = 1;
    for (size_t i = 0; i < n; i++) {
        uint64_t k = tp_sort_key_i64(c[rows[i]]);
        ascending &= k >= hi || i == 0;
        lo = k < lo ? k : lo;
        hi = k > hi ? k : hi;
    }
    if (ascending && ngroups <= n && ngroups < (UINT64_C(1) << 24)) {
        /* rows in c order already (a model's rows in time order): a stable sort by the group
         * alone gives the same order, and a counting sort does it in two passes */
        size_t *at = tp_mem_xcalloc(ngroups + 1, sizeof *at);
        uint32_t *out = tp_scratch_get(s, n, sizeof *out);
        for (size_t i = 0; i < n; i++) {
            key[i] = group(ctx, rows[i]);
            at[key[i] + 1]++;
        }
        for (size_t g = 0; g < ngroups; g++)
            at[g + 1] += at[g];
        for (size_t i = 0; i < n; i++)
            out[at[key[i]]++] = rows[i];
        memcpy(rows, out, n * sizeof *rows);
        tp_scratch_put(s, out);
        free(at);
        tp_scratch_put(s, key);
        return;
    }
    unsigned cb = n ? bits_for(hi - lo) : 0, gb = bits_for(ngroups ? ngroups - 1 : 0);
    if (cb + gb <= 64) { /* one pass: the group above c's offset from its minimum */
        for (size_t i = 0; i < n; i++)
            key[i] =
                (gb ? group(ctx, rows[i]) << (cb & 63) : 0) | (tp_sort_key_i64(c[rows[i]]) - lo);
    } else { /* two stable passes: c, then the group */
        tp_sort_rows_i64_s(c, rows, n, s);
        for (size_t i = 0; i < n; i++)
            key[i] = group(ctx, rows[i]);
    }
    tp_sort_pairs_s(key, rows, n, s);
    tp_scratch_put(s, key);
}

void tp_sort_f64_s(double *v, size_t n, tp_scratch *s) {
    uint64_t *key = tp_scratch_get(s, n ? n : 1, sizeof *key);
    for (size_t i = 0; i < n; i++)
        key[i] = tp_sort_key_f64(v[i]);
    tp_sort_pairs_s(key, NULL, n, s);
    for (size_t i = 0; i < n; i++) { /* back from the key: the exact bits, -0.0 included */
        uint64_t u = key[i] >> 63 ? key[i] & ~(UINT64_C(1) << 63) : ~key[i];
        memcpy(&v[i], &u, sizeof u);
    }
    tp_scratch_put(s, key);
}

void tp_sort_f64(double *v, size_t n) {
    tp_sort_f64_s(v, n, NULL);
}

/* Sorts v[0..n) by counting when its values span fewer than n (and 2^24) integers: a read
 * for the least and greatest, one for the counts, one write, instead of a key conversion and
 * radix passes (a kernel's durations: many calls, a narrow spread). Returns 0 (v untouched)
 * otherwise. Plain values: any sort writes the same array. */
#define COUNT_SORT_MIN 256
static int sort_i64_counting(int64_t *v, size_t n, tp_scratch *s) {
    if (n < COUNT_SORT_MIN || n >= UINT32_MAX)
        return 0;
    int64_t lo = v[0], hi = v[0];
    for (size_t i = 1; i < n; i++) {
        lo = v[i] < lo ? v[i] : lo;
        hi = v[i] > hi ? v[i] : hi;
    }
    uint64_t span = (uint64_t)hi - (uint64_t)lo; /* (two's complement: no overflow) */
    if (span >= n || span >= (UINT64_C(1) << 24))
        return 0;
    uint32_t *count = tp_scratch_get0(s, (size_t)span + 1, sizeof *count);
    for (size_t i = 0; i < n; i++)
        count[(uint64_t)v[i] - (uint64_t)lo]++;
    size_t at = 0;
    for (uint64_t b = 0; b <= span; b++)
        for (uint32_t c = count[b]; c; c--)
            v[at++] = (int64_t)((uint64_t)lo + b);
    tp_scratch_put(s, count);
    return 1;
}

void tp_sort_i64_s(int64_t *v, size_t n, tp_scratch *s) {
    if (sort_i64_counting(v, n, s))
        return;
    uint64_t *key = tp_scratch_get(s, n ? n : 1, sizeof *key);
    for (size_t i = 0; i < n; i++)
        key[i] = tp_sort_key_i64(v[i]);
    tp_sort_pairs_s(key, NULL, n, s);
    for (size_t i = 0; i < n; i++)
        v[i] = (int64_t)(key[i] ^ (UINT64_C(1) << 63));
    tp_scratch_put(s, key);
}

void tp_sort_i64(int64_t *v, size_t n) {
    tp_sort_i64_s(v, n, NULL);
}

void tp_sort_merge_runs_order(const int64_t *key, size_t m, size_t n, uint32_t *rows) {
    size_t a = 0, b = m, k = 0;
    while (a < m && b < n)
        rows[k++] = key[b] < key[a] ? (uint32_t)b++ : (uint32_t)a++;
    while (a < m)
        rows[k++] = (uint32_t)a++;
    while (b < n)
        rows[k++] = (uint32_t)b++;
}

/* When key[0..n) is one or two ascending runs (the analyses' keys often are: rows in time
 * order, or launches then GPU rows, each in time order), writes the stable order into rows
 * by a merge that takes the first run's row on equal keys (its rows are the smaller) and
 * returns 1; else 0. One read pass and one merge pass instead of the radix sort's. */
static int order_two_runs(const int64_t *key, size_t n, uint32_t *rows) {
    size_t m = 0; /* where the second run starts; 0: one run */
    for (size_t i = 1; i < n; i++)
        if (key[i] < key[i - 1]) {
            if (m)
                return 0;
            m = i;
        }
    tp_sort_merge_runs_order(key, m, n, rows); /* (m = 0: the identity) */
    return 1;
}

uint32_t *tp_sort_order_i64(const int64_t *key, size_t n) {
    uint32_t *rows = tp_mem_xalloc(n ? n : 1, sizeof *rows);
    if (order_two_runs(key, n, rows))
        return rows;
    for (size_t i = 0; i < n; i++)
        rows[i] = (uint32_t)i;
    tp_sort_rows_i64(key, rows, n);
    return rows;
}

uint32_t *tp_sort_order_i64_s(const int64_t *key, size_t n, tp_scratch *s) {
    uint32_t *rows = tp_scratch_get(s, n, sizeof *rows);
    if (order_two_runs(key, n, rows))
        return rows;
    for (size_t i = 0; i < n; i++)
        rows[i] = (uint32_t)i;
    tp_sort_rows_i64_s(key, rows, n, s);
    return rows;
}

/* Where the keys' span and the indices fit 64 bits together, each key becomes its offset
 * from the least above its index (unique, so the order of equal keys is the indices'), and
 * the keys alone are sorted: the sort's copy is 8 bytes a key, not 12 with a row column
 * beside them (the queue's time order: 35 k steps spanning ~2^31 ns on
 * hta_df_index_resolver), and the rows are read out of the keys after it. */
/* Sorts k[0..n) ascending in place, the keys distinct (so a stable order and any order are
 * the same), from byte position `shift` down: an MSD radix sort that moves keys within the
 * array (American flag sort), with no second array of the keys as the LSD passes need (8
 * bytes a key less at the caller's peak: the queue analysis's steps). */
static void flag_sort(uint64_t *k, size_t n, int shift) {
    if (n < SMALL) {
        insertion(k, NULL, n);
        return;
    }
    size_t count[RADIX] = {0}, head[RADIX], end[RADIX];
    for (size_t i = 0; i < n; i++)
        count[(k[i] >> shift) & (RADIX - 1)]++;
    size_t at = 0;
    for (int b = 0; b < RADIX; b++) {
        head[b] = at;
        at += count[b];
        end[b] = at;
    }
    for (int b = 0; b < RADIX; b++) /* each key swapped into its bucket's next free place */
        while (head[b] < end[b]) {
            uint64_t x = k[head[b]];
            size_t d = (x >> shift) & (RADIX - 1);
            while (d != (size_t)b) {
                uint64_t y = k[head[d]];
                k[head[d]++] = x;
                x = y;
                d = (x >> shift) & (RADIX - 1);
            }
            k[head[b]++] = x;
        }
    if (shift == 0)
        return;
    for (int b = 0; b < RADIX; b++)
        if (count[b] > 1)
            flag_sort(k + end[b] - count[b], count[b], shift - RADIX_BITS);
}

uint32_t *tp_sort_order_i64_over_s(int64_t *key, size_t n, tp_scratch *s) {
    uint32_t *rows = tp_scratch_get(s, n, sizeof *rows);
    if (order_two_runs(key, n, rows))
        goto done;
    int64_t lo = INT64_MAX, hi = INT64_MIN, span;
    for (size_t i = 0; i < n; i++) {
        lo = key[i] < lo ? key[i] : lo;
        hi = key[i] > hi ? key[i] : hi;
    }
    unsigned ib = 0; /* the indices' bits */
    while (ib < 32 && (uint64_t)(n - 1) >> ib)
        ib++;
    if (!__builtin_sub_overflow(hi, lo, &span) && ((uint64_t)span >> (63 - ib)) == 0) {
        /* each key packed with its index: distinct keys, sorted in place */
        tp_scratch_put(s, rows);       /* not beside the keys: the order is written over them */
        uint64_t *k = (uint64_t *)key; /* the same 8 bytes a key, each read before written */
        uint64_t diff = 0;
        for (size_t i = 0; i < n; i++)
            diff |= k[i] = (uint64_t)(key[i] - lo) << ib | i;
        if (diff >> 8)
            flag_sort(k, n, (63 - __builtin_clzll(diff)) / RADIX_BITS * RADIX_BITS);
        else
            insertion(k, NULL, n);
        for (size_t i = 0; i < n; i++) { /* row i's 4 bytes lie in keys already read */
            uint32_t r = (uint32_t)(k[i] & ((UINT64_C(1) << ib) - 1));
            memcpy((char *)key + i * sizeof r, &r, sizeof r);
        }
        return (uint32_t *)key;
    }
    uint64_t *k = (uint64_t *)key;
    for (size_t i = 0; i < n; i++) {
        rows[i] = (uint32_t)i;
        k[i] = tp_sort_key_i64(key[i]);
    }
    tp_sort_pairs_s(k, rows, n, s);
done:
    if (n)
        memcpy(key, rows, n * sizeof *rows);
    tp_scratch_put(s, rows);
    return (uint32_t *)key;
}

/* memcpy of one struct, with the common sizes spelled out so that they compile to moves
 * instead of a library call per struct. */
static inline void copy_struct(char *d, const char *s, size_t size) {
    switch (size) {
    case 8:
        memcpy(d, s, 8);
        break;
    case 16:
        memcpy(d, s, 16);
        break;
    case 24:
        memcpy(d, s, 24);
        break;
    case 32:
        memcpy(d, s, 32);
        break;
    default:
        memcpy(d, s, size);
    }
}

static uint64_t field_key(const char *p, const tp_sort_field *f) {
    if (f->u32) {
        uint32_t v;
        memcpy(&v, p + f->off, sizeof v);
        return v;
    }
    int64_t v;
    memcpy(&v, p + f->off, sizeof v);
    return tp_sort_key_i64(v);
}

/* The order of the structs is found on (key, struct number) pairs, one stable pass per
 * field from the least significant; the structs move once, gathered into a copy (sequential
 * writes: a cycle-following permutation in place measured slower). */
void tp_sort_structs(void *base, size_t n, size_t size, const tp_sort_field *f, size_t nf) {
    tp_sort_structs_s(base, n, size, f, nf, NULL);
}

void tp_sort_structs_s(void *base, size_t n, size_t size, const tp_sort_field *f, size_t nf,
                       tp_scratch *s) {
    if (n < 2 || nf == 0)
        return;
    assert(n < UINT32_MAX);
    const char *b = base;
    uint64_t *key = tp_scratch_get(s, n, sizeof *key);
    uint32_t *at = tp_scratch_get(s, n, sizeof *at);
    for (size_t i = 0; i < n; i++)
        at[i] = (uint32_t)i;
    for (size_t k = nf; k-- > 0;) {
        for (size_t i = 0; i < n; i++)
            key[i] = field_key(b + (size_t)at[i] * size, &f[k]);
        tp_sort_pairs_s(key, at, n, s);
    }
    tp_scratch_put(s, key);
    int moved = 0;
    for (size_t i = 0; i < n && !moved; i++)
        moved = at[i] != i;
    if (moved) {
        char *tmp = tp_scratch_get(s, n, size);
        for (size_t i = 0; i < n; i++)
            copy_struct(tmp + i * size, b + (size_t)at[i] * size, size);
        memcpy(base, tmp, n * size);
        tp_scratch_put(s, tmp);
    }
    tp_scratch_put(s, at);
}

void tp_sort_structs_i64(void *base, size_t n, size_t size, size_t off) {
    tp_sort_structs_i64_s(base, n, size, off, NULL);
}

void tp_sort_structs_i64_s(void *base, size_t n, size_t size, size_t off, tp_scratch *s) {
    tp_sort_field f = {off, 0};
    tp_sort_structs_s(base, n, size, &f, 1, s);
}

void tp_sort_structs_u32(void *base, size_t n, size_t size, size_t off) {
    tp_sort_field f = {off, 1};
    tp_sort_structs(base, n, size, &f, 1);
}
