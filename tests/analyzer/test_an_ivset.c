/* test_an_ivset: interval sets (union, clipping, intersection, difference) against a
 * nanosecond-by-nanosecond reference on random sets, and HTA's merge rule, including the
 * zero- and negative-length intervals it keeps and the tie order that decides them. */
#include "tp_an_ivset.h"

#include <stdint.h>

#include "tp_test.h"

#define DOM 200 /* random intervals live in [0, DOM) */

static uint64_t g_rng = 0x9e3779b97f4a7c15ull; /* fixed seed: the same sets every run */

static int64_t rnd(int64_t n) {
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (int64_t)((g_rng >> 33) % (uint64_t)n);
}

/* Up to `k` random intervals (some empty or reversed) into `s` and the bitmap `bits`. */
static void random_set(tp_an_ivset *s, uint8_t bits[DOM], size_t k) {
    memset(bits, 0, DOM);
    for (size_t i = 0; i < k; i++) {
        int64_t a = rnd(DOM), b = a + rnd(40) - 5;
        b = b > DOM ? DOM : b;
        tp_an_ivset_add(s, a, b);
        for (int64_t t = a; t < b; t++)
            bits[t] = 1;
    }
}

static int64_t bits_len(const uint8_t bits[DOM]) {
    int64_t n = 0;
    for (int t = 0; t < DOM; t++)
        n += bits[t];
    return n;
}

/* 1 when `s` is normalized and covers exactly the set bits. */
static int same_as(const tp_an_ivset *s, const uint8_t bits[DOM]) {
    uint8_t got[DOM] = {0};
    for (size_t i = 0; i < s->n; i++) {
        if (s->b[i] <= s->a[i] || (i && s->a[i] <= s->b[i - 1]) || s->a[i] < 0 || s->b[i] > DOM)
            return 0;
        for (int64_t t = s->a[i]; t < s->b[i]; t++)
            got[t] = 1;
    }
    return memcmp(got, bits, DOM) == 0;
}

static void test_norm(void) {
    tp_an_ivset s = {0};
    tp_an_ivset_add(&s, 50, 60);
    tp_an_ivset_add(&s, 10, 20);
    tp_an_ivset_add(&s, 20, 30); /* touches [10, 20): one run */
    tp_an_ivset_add(&s, 12, 14); /* nested */
    tp_an_ivset_add(&s, 40, 40); /* empty: dropped */
    tp_an_ivset_add(&s, 45, 41); /* reversed: dropped */
    tp_an_ivset_add(&s, 55, 70);
    CHECK_EQ_U(s.n, 5);
    tp_an_ivset_norm(&s, INT64_MIN, INT64_MAX);
    CHECK_EQ_U(s.n, 2);
    CHECK_EQ_I(s.a[0], 10);
    CHECK_EQ_I(s.b[0], 30);
    CHECK_EQ_I(s.a[1], 50);
    CHECK_EQ_I(s.b[1], 70);
    CHECK_EQ_I(tp_an_ivset_len(&s), 40);
    tp_an_ivset_norm(&s, 25, 55); /* clipped to a window */
    CHECK_EQ_U(s.n, 2);
    CHECK_EQ_I(s.a[0], 25);
    CHECK_EQ_I(s.b[1], 55);
    CHECK_EQ_I(tp_an_ivset_len(&s), 10);
    tp_an_ivset_norm(&s, 31, 49); /* nothing left */
    CHECK_EQ_U(s.n, 0);
    tp_an_ivset_free(&s);
    tp_an_ivset_free(NULL);
}

/* Random sets: norm, and, minus, and_len against the bitmaps. */
static void test_ops_random(void) {
    for (int round = 0; round < 500; round++) {
        tp_an_ivset x = {0}, y = {0}, o = {0};
        uint8_t bx[DOM], by[DOM], want[DOM];
        random_set(&x, bx, (size_t)rnd(12));
        random_set(&y, by, (size_t)rnd(12));
        int64_t lo = rnd(DOM / 2), hi = DOM / 2 + rnd(DOM / 2 + 1);
        for (int t = 0; t < DOM; t++)
            bx[t] &= t >= lo && t < hi;
        tp_an_ivset_norm(&x, lo, hi);
        tp_an_ivset_norm(&y, INT64_MIN, INT64_MAX);
        CHECK(same_as(&x, bx));
        CHECK(same_as(&y, by));
        CHECK_EQ_I(tp_an_ivset_len(&x), bits_len(bx));
        for (int t = 0; t < DOM; t++)
            want[t] = bx[t] & by[t];
        tp_an_ivset_and(&x, &y, &o);
        CHECK(same_as(&o, want));
        CHECK_EQ_I(tp_an_ivset_and_len(&x, &y), bits_len(want));
        for (int t = 0; t < DOM; t++)
            want[t] = bx[t] & !by[t];
        tp_an_ivset_minus(&x, &y, &o); /* reuses o's storage */
        CHECK(same_as(&o, want));
        tp_an_ivset_free(&x), tp_an_ivset_free(&y), tp_an_ivset_free(&o);
    }
}

/* Sets added as stretches in start order (a compat view's GPU rows, then its CPU rows): each
 * stretch merged in place and joined to the runs before it, and from the 32nd on the sort of
 * the rest (tp_an_ivset_norm), against the bitmaps, clipped or not. */
static void test_norm_stretches(void) {
    for (int round = 0; round < 400; round++) {
        tp_an_ivset s = {0};
        uint8_t bits[DOM] = {0};
        size_t stretches = 1 + (size_t)rnd(round % 4 ? 4 : 60);
        for (size_t k = 0; k < stretches; k++) {
            int64_t a = rnd(DOM);
            for (int64_t m = rnd(8); m >= 0 && a < DOM; m--) {
                int64_t b = a + rnd(12) - 2;
                b = b > DOM ? DOM : b;
                tp_an_ivset_add(&s, a, b);
                for (int64_t t = a; t < b; t++)
                    bits[t] = 1;
                a += rnd(10); /* starts ascend within a stretch (ties too) */
            }
        }
        int64_t lo = round % 2 ? rnd(DOM / 2) : INT64_MIN;
        int64_t hi = round % 2 ? DOM / 2 + rnd(DOM / 2 + 1) : INT64_MAX;
        for (int t = 0; t < DOM; t++)
            bits[t] &= t >= lo && t < hi;
        tp_an_ivset_norm(&s, lo, hi);
        CHECK(same_as(&s, bits));
        tp_an_ivset_free(&s);
    }
}

/* tp_an_ivset_add_union (an interval widens the last run it overlaps or touches): the same
 * normalized set as tp_an_ivset_add, on stretches in start order with nesting (the host
 * analysis's CPU ops), on random order, clipped or not; and fewer runs kept before the norm. */
static void test_add_union(void) {
    for (int round = 0; round < 400; round++) {
        tp_an_ivset s = {0}, u = {0};
        uint8_t bits[DOM] = {0};
        size_t stretches = 1 + (size_t)rnd(round % 4 ? 4 : 60);
        for (size_t k = 0; k < stretches; k++) {
            int64_t a = rnd(DOM);
            for (int64_t m = rnd(8); m >= 0 && a < DOM; m--) {
                int64_t b = a + rnd(30) - 5; /* some empty or reversed */
                b = b > DOM ? DOM : b;
                tp_an_ivset_add(&s, a, b);
                tp_an_ivset_add_union(&u, a, b);
                for (int64_t t = a; t < b; t++)
                    bits[t] = 1;
                a += round % 3 ? rnd(10) : rnd(DOM) - DOM / 2; /* ascending, or any order */
                a = a < 0 ? 0 : a;
            }
        }
        CHECK(u.n <= s.n);
        int64_t lo = round % 2 ? rnd(DOM / 2) : INT64_MIN;
        int64_t hi = round % 2 ? DOM / 2 + rnd(DOM / 2 + 1) : INT64_MAX;
        for (int t = 0; t < DOM; t++)
            bits[t] &= t >= lo && t < hi;
        tp_an_ivset_norm(&s, lo, hi);
        tp_an_ivset_norm(&u, lo, hi);
        CHECK(same_as(&u, bits));
        CHECK_EQ_U(u.n, s.n);
        for (size_t i = 0; i < u.n && i < s.n; i++) {
            CHECK_EQ_I(u.a[i], s.a[i]);
            CHECK_EQ_I(u.b[i], s.b[i]);
        }
        tp_an_ivset_free(&s), tp_an_ivset_free(&u);
    }
}

/* HTA's rule (moved here from test_an_stats with its assertions). */
static void test_merge_hta(void) {
    int64_t ts[] = {50, 0, 200, 90, 300};
    int64_t end[] = {150, 100, 260, 95, 290}; /* last one: negative length after rounding */
    tp_an_ivset s = {0};
    tp_an_ivset_merge_hta(ts, end, 5, &s, NULL);
    const int64_t *mts = s.a, *mend = s.b;
    CHECK_EQ_U(s.n, 3);
    CHECK_EQ_I(mts[0], 0);
    CHECK_EQ_I(mend[0], 150);
    CHECK_EQ_I(mts[1], 200);
    CHECK_EQ_I(mend[2], 290);
    CHECK_EQ_I(tp_an_ivset_len(&s), 150 + 60 - 10);
    tp_an_ivset_merge_hta(ts, end, 0, &s, NULL);
    CHECK_EQ_U(s.n, 0);
    tp_an_ivset_free(&s);
}

/* With equal starts, a negative-length interval opens its own run only when it comes first:
 * the order numpy leaves ties in (here the input order, n < 16) decides HTA's total. */
static void test_merge_hta_ties(void) {
    int64_t ts[] = {10, 10}, end_a[] = {5, 20}, end_b[] = {20, 5};
    tp_an_ivset s = {0};
    tp_an_ivset_merge_hta(ts, end_a, 2, &s, NULL);
    CHECK_EQ_U(s.n, 2);
    CHECK_EQ_I(tp_an_ivset_len(&s), -5 + 10);
    tp_an_ivset_merge_hta(ts, end_b, 2, &s, NULL);
    CHECK_EQ_U(s.n, 1);
    CHECK_EQ_I(tp_an_ivset_len(&s), 10);
    tp_an_ivset_free(&s);
}

/* Both merges are one rule: on intervals of positive length they give the same runs. */
static void test_merge_agree(void) {
    for (int round = 0; round < 200; round++) {
        int64_t ts[20], end[20];
        size_t n = (size_t)rnd(20);
        tp_an_ivset u = {0}, h = {0};
        for (size_t i = 0; i < n; i++) {
            ts[i] = rnd(DOM), end[i] = ts[i] + 1 + rnd(30);
            tp_an_ivset_add(&u, ts[i], end[i]);
        }
        tp_an_ivset_norm(&u, INT64_MIN, INT64_MAX);
        tp_an_ivset_merge_hta(ts, end, n, &h, NULL);
        CHECK_EQ_U(u.n, h.n);
        for (size_t i = 0; i < u.n && i < h.n; i++) {
            CHECK_EQ_I(u.a[i], h.a[i]);
            CHECK_EQ_I(u.b[i], h.b[i]);
        }
        tp_an_ivset_free(&u), tp_an_ivset_free(&h);
    }
}

int main(void) {
    TP_RUN(test_norm);
    TP_RUN(test_ops_random);
    TP_RUN(test_norm_stretches);
    TP_RUN(test_add_union);
    TP_RUN(test_merge_hta);
    TP_RUN(test_merge_hta_ties);
    TP_RUN(test_merge_agree);
    return tp_test_summary();
}
