/* tp_sort: LSD radix sort, 8 bits per pass, passes where every key has the same byte skipped
 * (or, where that takes fewer passes, digits of up to 11 bits over the bits that vary).
 * A first read of the keys finds the bits that vary (and whether they are sorted already);
 * only those byte positions get a histogram and a pass, which scatters keys (and rows) into
 * a scratch buffer before the buffers swap. Small inputs take an insertion sort, which is
 * stable too. */
#include "tp_sort.h"

#include <assert.h>
#include <stdlib.h>

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

/* The bits in which some key differs from the first; 0 when all are equal. Sets *sorted to
 * 1 when the keys are already ascending. */
static uint64_t varying_bits(const uint64_t *key, size_t n, int *sorted) {
    uint64_t diff = 0;
    int asc = 1;
    for (size_t i = 1; i < n; i++) {
        diff |= key[i] ^ key[0];
        asc &= key[i - 1] <= key[i];
    }
    *sorted = asc;
    return diff;
}

/* Digits of up to MAX_BITS bits: a key that varies in 38 bits (nanosecond timestamps of a
 * few minutes) takes 4 passes of 10 bits instead of 5 of 8; the histograms (2048 counts a
 * pass) still fit in L2. */
#define MAX_BITS 11
#define MAX_PASSES 8

/* The passes of one sort: digit p is (key >> shift[p]) & mask[p]. */
typedef struct {
    int n;
    int shift[MAX_PASSES];
    uint64_t mask[MAX_PASSES];
} plan_t;

/* The fewer of: one 8-bit pass per byte in which keys differ (bytes where all agree move
 * nothing), or equal digits of <= MAX_BITS bits over the span from the lowest to the
 * highest varying bit. Every digit covers only bits above the previous one's, so LSD order
 * over them is the order of the keys. */
static void plan_passes(uint64_t diff, plan_t *pl) {
    pl->n = 0;
    for (int p = 0; p < PASSES; p++)
        if ((diff >> (p * RADIX_BITS)) & (RADIX - 1)) {
            pl->shift[pl->n] = p * RADIX_BITS;
            pl->mask[pl->n++] = RADIX - 1;
        }
    int lo = __builtin_ctzll(diff), hi = 63 - __builtin_clzll(diff), span = hi - lo + 1;
    int np = (span + MAX_BITS - 1) / MAX_BITS;
    if (np >= pl->n)
        return;
    int w = (span + np - 1) / np;
    pl->n = np;
    for (int p = 0; p < np; p++) {
        pl->shift[p] = lo + p * w;
        pl->mask[p] = (UINT64_C(1) << w) - 1;
    }
}

/* Counts of every digit value of every pass, in one read of the keys. */
static void histogram(const uint64_t *key, size_t n, const plan_t *pl, size_t *count) {
    memset(count, 0, (size_t)pl->n * ((size_t)1 << MAX_BITS) * sizeof *count);
    for (size_t i = 0; i < n; i++) {
        uint64_t k = key[i];
        for (int p = 0; p < pl->n; p++)
            count[((size_t)p << MAX_BITS) + ((k >> pl->shift[p]) & pl->mask[p])]++;
    }
}

/* One stable scatter pass by the digit (k >> shift) & mask, from (k, r) into (k2, r2). */
static void scatter(const uint64_t *k, const uint32_t *r, uint64_t *k2, uint32_t *r2, size_t n,
                    int shift, uint64_t mask, const size_t *count, size_t *at) {
    size_t sum = 0;
    for (uint64_t b = 0; b <= mask; b++) {
        at[b] = sum;
        sum += count[b];
    }
    if (r) {
        for (size_t i = 0; i < n; i++) {
            size_t d = at[(k[i] >> shift) & mask]++;
            k2[d] = k[i];
            r2[d] = r[i];
        }
    } else {
        for (size_t i = 0; i < n; i++)
            k2[at[(k[i] >> shift) & mask]++] = k[i];
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
    int sorted;
    uint64_t diff = varying_bits(key, n, &sorted);
    if (sorted)
        return;
    plan_t pl;
    plan_passes(diff, &pl);
    /* the histograms and the running offsets: up to 136 KiB, too much for a stack */
    size_t *count = tp_mem_xalloc(((size_t)pl.n + 1) << MAX_BITS, sizeof *count);
    size_t *at = count + ((size_t)pl.n << MAX_BITS);
    histogram(key, n, &pl, count);
    uint64_t *k = key, *k2 = tp_scratch_get(s, n, sizeof *k2);
    uint32_t *r = row, *r2 = row ? tp_scratch_get(s, n, sizeof *r2) : NULL;
    for (int p = 0; p < pl.n; p++) {
        scatter(k, r, k2, r2, n, pl.shift[p], pl.mask[p], count + ((size_t)p << MAX_BITS), at);
        uint64_t *tk = k;
        k = k2, k2 = tk;
        uint32_t *tr = r;
        r = r2, r2 = tr;
    }
    free(count);
    if (k != key) { /* an odd number of passes ran: the result is in the scratch buffers */
        memcpy(key, k, n * sizeof *key);
        if (row)
            memcpy(row, r, n * sizeof *row);
        k2 = k, r2 = r;
    }
    tp_scratch_put(s, k2);
    tp_scratch_put(s, r2);
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
    for (size_t i = 0; i < n; i++) {
        uint64_t k = tp_sort_key_i64(c[rows[i]]);
        lo = k < lo ? k : lo;
        hi = k > hi ? k : hi;
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

void tp_sort_f64(double *v, size_t n) {
    uint64_t *key = tp_mem_xalloc(n ? n : 1, sizeof *key);
    for (size_t i = 0; i < n; i++)
        key[i] = tp_sort_key_f64(v[i]);
    tp_sort_pairs(key, NULL, n);
    for (size_t i = 0; i < n; i++) { /* back from the key: the exact bits, -0.0 included */
        uint64_t u = key[i] >> 63 ? key[i] & ~(UINT64_C(1) << 63) : ~key[i];
        memcpy(&v[i], &u, sizeof u);
    }
    free(key);
}

void tp_sort_i64(int64_t *v, size_t n) {
    uint64_t *key = tp_mem_xalloc(n ? n : 1, sizeof *key);
    for (size_t i = 0; i < n; i++)
        key[i] = tp_sort_key_i64(v[i]);
    tp_sort_pairs(key, NULL, n);
    for (size_t i = 0; i < n; i++)
        v[i] = (int64_t)(key[i] ^ (UINT64_C(1) << 63));
    free(key);
}

uint32_t *tp_sort_order_i64(const int64_t *key, size_t n) {
    uint32_t *rows = tp_mem_xalloc(n ? n : 1, sizeof *rows);
    for (size_t i = 0; i < n; i++)
        rows[i] = (uint32_t)i;
    tp_sort_rows_i64(key, rows, n);
    return rows;
}

uint32_t *tp_sort_order_i64_s(const int64_t *key, size_t n, tp_scratch *s) {
    uint32_t *rows = tp_scratch_get(s, n, sizeof *rows);
    for (size_t i = 0; i < n; i++)
        rows[i] = (uint32_t)i;
    tp_sort_rows_i64_s(key, rows, n, s);
    return rows;
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
