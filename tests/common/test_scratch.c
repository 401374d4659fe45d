/* Tests of tp_scratch: a block given back is handed out again to a request it fits (the
 * point of the cache: no fresh pages), the tightest fit wins and its rest stays kept, a
 * request that nothing fits gets every kept page, the budget and the count bound
 * what is kept (oldest out first), zeroed requests come back zeroed even from a reused
 * block, small blocks and NULL handles fall through to malloc/free, kept blocks move from
 * one cache to another, a block's pages past the last one ever touched are not kept; and the radix
 * sorts give the same result through a scratch as without. */
#include "tp_scratch.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tp_sort.h"
#include "tp_test.h"

#define MB ((size_t)1 << 20)

/* What a block of `bytes` takes in a cache once given back (its pages). */
#define B(bytes) tp_scratch_block_bytes(bytes)

/* A block of n bytes, every byte written (a cache keeps only the pages a block touched). */
static void *got(tp_scratch *s, size_t n) {
    void *p = tp_scratch_get(s, n, 1);
    memset(p, 3, n);
    return p;
}

static void test_reuse_and_fit(void) {
    tp_scratch *s = tp_scratch_open(64 * MB);
    char *a = tp_scratch_get(s, 4 * MB, 1), *b = tp_scratch_get(s, 8 * MB, 1);
    memset(a, 1, 4 * MB), memset(b, 2, 8 * MB);
    tp_scratch_put(s, a);
    tp_scratch_put(s, b);
    CHECK_EQ_U(tp_scratch_kept(s), B(4 * MB) + B(8 * MB));
    char *c = tp_scratch_get(s, 3 * MB, 1); /* both fit: the smaller one's pages come back */
    CHECK(c == a);
    CHECK_EQ_U(tp_scratch_kept(s), B(4 * MB) - B(3 * MB) + B(8 * MB)); /* its rest is kept */
    char *d = tp_scratch_get(s, 5 * MB, 1);
    CHECK(d == b);
    CHECK_EQ_U(tp_scratch_kept(s), B(4 * MB) - B(3 * MB) + B(8 * MB) - B(5 * MB));
    tp_scratch_put(s, c);
    uint64_t *z = tp_scratch_get0(s, MB / 8, 8); /* b's rest, the tightest fit, zeroed */
    CHECK((char *)z == b + B(5 * MB));
    size_t nonzero = 0;
    for (size_t i = 0; i < MB / 8; i++)
        nonzero += z[i] != 0;
    CHECK_EQ_U(nonzero, 0);
    /* nothing kept fits: every kept page moves into the new block, the rest is fresh */
    char *e = tp_scratch_get0(s, 9 * MB, 1);
    CHECK_EQ_U(tp_scratch_kept(s), 0);
    nonzero = 0;
    for (size_t i = 0; i < 9 * MB; i++)
        nonzero += e[i] != 0;
    CHECK_EQ_U(nonzero, 0);
    memset(e, 5, 9 * MB);
    tp_scratch_put(s, z), tp_scratch_put(s, d), tp_scratch_put(s, e);
    CHECK_EQ_U(tp_scratch_kept(s), B(MB) + B(5 * MB) + B(9 * MB));
    tp_scratch_close(s);
}

static void test_bounds(void) {
    tp_scratch *s = tp_scratch_open(10 * MB);
    void *a = got(s, 4 * MB), *b = got(s, 4 * MB);
    void *c = got(s, 4 * MB), *big = got(s, 11 * MB);
    void *small = tp_scratch_get(s, 100, 1);
    tp_scratch_put(s, a), tp_scratch_put(s, b);
    CHECK_EQ_U(tp_scratch_kept(s), 2 * B(4 * MB));
    tp_scratch_put(s, c); /* over the budget: the oldest (a) goes */
    CHECK_EQ_U(tp_scratch_kept(s), 2 * B(4 * MB));
    tp_scratch_put(s, big);   /* larger than the budget: freed, nothing else goes */
    tp_scratch_put(s, small); /* small: freed */
    CHECK_EQ_U(tp_scratch_kept(s), 2 * B(4 * MB));
    void *x = tp_scratch_get(s, 4 * MB, 1), *y = tp_scratch_get(s, 4 * MB, 1);
    CHECK((x == b && y == c) || (x == c && y == b));
    tp_scratch_put(s, x), tp_scratch_put(s, y);
    void *many[TP_SCRATCH_KEEP + 2];
    tp_scratch_trim(s);
    CHECK_EQ_U(tp_scratch_kept(s), 0);
    tp_scratch_close(s);
    s = tp_scratch_open(1000 * MB);
    for (size_t i = 0; i < TP_SCRATCH_KEEP + 2; i++)
        many[i] = got(s, MB);
    for (size_t i = 0; i < TP_SCRATCH_KEEP + 2; i++)
        tp_scratch_put(s, many[i]);
    CHECK_EQ_U(tp_scratch_kept(s), TP_SCRATCH_KEEP * B(MB)); /* the count bounds it too */
    tp_scratch_close(s);
}

/* An array sized by a bound but filled in part: only its pages up to the last touched one
 * are kept (the others would fault like fresh ones, and count in the budget and the count
 * of ranges). With transparent huge pages always on, a touch may bring in up to 2 MiB more. */
static void test_untouched_tail(void) {
    tp_scratch *s = tp_scratch_open(64 * MB);
    char *a = tp_scratch_get(s, 8 * MB, 1), *b = tp_scratch_get(s, 8 * MB, 1);
    memset(a, 1, 3 * MB);
    tp_scratch_put(s, a);
    CHECK(tp_scratch_kept(s) >= B(3 * MB));
    CHECK(tp_scratch_kept(s) <= B(5 * MB));
    size_t k = tp_scratch_kept(s);
    tp_scratch_put(s, b); /* never touched past its header: not kept (or its first huge page) */
    CHECK(tp_scratch_kept(s) - k <= B(2 * MB));
    char *c = tp_scratch_get(s, 3 * MB, 1); /* a's touched pages come back */
    CHECK(c == a);
    tp_scratch_put(s, c);
    tp_scratch_close(s);
}

static void test_null_handle(void) {
    void *p = tp_scratch_get(NULL, 2 * MB, 1), *q = tp_scratch_get0(NULL, 0, 8);
    CHECK(p != NULL && q != NULL);
    memset(p, 3, 2 * MB);
    tp_scratch_put(NULL, p);
    tp_scratch_put(NULL, q);
    tp_scratch_put(NULL, NULL);
    tp_scratch_close(NULL);
    CHECK_EQ_U(tp_scratch_kept(NULL), 0);
}

static uint64_t rnd(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* The sorts through one scratch, many times in a row (reused blocks hold the previous
 * sort's data), against the same sorts without one. */
static void test_sorts_through_scratch(void) {
    tp_scratch *s = tp_scratch_open(256 * MB);
    uint64_t seed = 88172645463325252ull;
    size_t bad = 0;
    for (int round = 0; round < 6; round++) {
        size_t n = (size_t)300000 + (size_t)round * 70001;
        int64_t *col = malloc(n * sizeof *col);
        for (size_t i = 0; i < n; i++)
            col[i] = (int64_t)(rnd(&seed) % (round % 2 ? 1000 : 100000000000ull));
        uint32_t *a = tp_sort_order_i64(col, n), *b = tp_sort_order_i64_s(col, n, s);
        for (size_t i = 0; i < n; i++)
            bad += a[i] != b[i];
        free(a);
        tp_scratch_put(s, b);
        free(col);
    }
    CHECK_EQ_U(bad, 0);
    CHECK(tp_scratch_kept(s) > 0);
    tp_scratch_close(s);
}

/* resize keeps the first bytes asked for, whether the block stays, comes from the cache or
 * is regrown; shrink cuts in place. */
static void test_resize_and_shrink(void) {
    tp_scratch *s = tp_scratch_open(64 * MB);
    tp_scratch_put(s, got(s, 8 * MB)); /* a kept block to be taken */
    int64_t *p = tp_scratch_get(s, 1000, sizeof *p);
    for (int64_t i = 0; i < 1000; i++)
        p[i] = i * 7;
    CHECK(tp_scratch_resize(s, p, 1000 * sizeof *p, 500, sizeof *p) == p); /* fits */
    p = tp_scratch_resize(s, p, 1000 * sizeof *p, MB / 4, sizeof *p);      /* 2 MiB: the kept one */
    CHECK_EQ_U(tp_scratch_kept(s), B(8 * MB) - B(2 * MB));                 /* its rest */
    size_t bad = 0;
    for (int64_t i = 0; i < 1000; i++)
        bad += p[i] != i * 7;
    for (size_t i = 1000; i < MB / 4; i++)
        p[i] = (int64_t)i;
    p = tp_scratch_resize(s, p, MB / 4 * sizeof *p, 3 * MB, sizeof *p); /* 24 MiB: regrown */
    CHECK_EQ_U(tp_scratch_kept(s), 0); /* the kept rest moved in behind p's own pages */
    for (size_t i = MB / 4; i < 3 * MB; i++)
        p[i] = -1;
    for (int64_t i = 0; i < 1000; i++)
        bad += p[i] != i * 7;
    bad += p[MB / 4 - 1] != (int64_t)(MB / 4 - 1);
    p = tp_scratch_shrink(p, 2000, sizeof *p);
    for (int64_t i = 0; i < 1000; i++)
        bad += p[i] != i * 7;
    CHECK_EQ_U(bad, 0);
    tp_scratch_put(s, p); /* now below TP_SCRATCH_MIN: freed, not kept */
    CHECK_EQ_U(tp_scratch_kept(s), 0);
    int64_t *q = tp_scratch_resize(NULL, NULL, 0, 10, sizeof *q); /* NULL handle, new block */
    q[9] = 1;
    tp_scratch_put(NULL, q);
    tp_scratch_close(s);
}

/* tp_scratch_move: the blocks change hands (the next request of `to` gets one, `from` is
 * empty and usable), within `to`'s budget; NULL handles are no-ops. */
static void test_move(void) {
    tp_scratch *from = tp_scratch_open(64 * MB), *to = tp_scratch_open(6 * MB);
    void *a = got(from, 4 * MB), *b = got(from, 3 * MB);
    tp_scratch_put(from, a), tp_scratch_put(from, b);
    tp_scratch_move(to, from);
    CHECK_EQ_U(tp_scratch_kept(from), 0);
    CHECK_EQ_U(tp_scratch_kept(to), B(3 * MB)); /* a, the older, went for the budget */
    CHECK(tp_scratch_get(to, 2 * MB, 1) == b);
    tp_scratch_put(from, b);
    tp_scratch_move(NULL, from), tp_scratch_move(to, NULL), tp_scratch_move(from, from);
    CHECK_EQ_U(tp_scratch_kept(from), B(2 * MB));
    tp_scratch_close(from);
    tp_scratch_close(to);
}

int main(void) {
    TP_RUN(test_reuse_and_fit);
    TP_RUN(test_bounds);
    TP_RUN(test_untouched_tail);
    TP_RUN(test_null_handle);
    TP_RUN(test_sorts_through_scratch);
    TP_RUN(test_resize_and_shrink);
    TP_RUN(test_move);
    return tp_test_summary();
}
