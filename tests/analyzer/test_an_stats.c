/* test_an_stats: pandas-compatible describe, numpy percentiles and argsort. The argsort
 * reference permutations come from numpy 1.24.2's np.argsort(kind="quicksort"), the version
 * HTA's expected answers were computed with. HTA's interval merge, which uses the argsort, is
 * tested with the interval sets (test_an_ivset). */
#include "tp_an_stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_an_launch.h"
#include "tp_sort.h"
#include "tp_test.h"

static uint64_t rnd(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int same_bits(double a, double b) {
    return memcmp(&a, &b, sizeof a) == 0;
}

/* n values of shape `shape`: few distinct whole numbers, wide whole numbers, fractions. */
static void fill(double *v, size_t n, int shape, uint64_t *s) {
    for (size_t i = 0; i < n; i++) {
        uint64_t r = rnd(s);
        v[i] = shape == 0   ? (double)(r % 5)
               : shape == 1 ? (double)(r % 1000000007)
                            : (double)(r % 100000) / 7.0;
    }
}

static void test_describe(void) {
    double v[] = {4, 1, 3, 2};
    tp_an_describe_t d;
    tp_an_describe(v, 4, &d);
    CHECK_EQ_U(d.count, 4);
    CHECK_NEAR(d.mean, 2.5, 1e-12);
    CHECK_NEAR(d.std, 1.2909944487358056, 1e-12);
    CHECK_NEAR(d.p25, 1.75, 1e-12);
    CHECK_NEAR(d.p50, 2.5, 1e-12);
    CHECK_NEAR(d.p75, 3.25, 1e-12);
    CHECK_NEAR(d.min, 1, 0);
    CHECK_NEAR(d.max, 4, 0);
    double one[] = {7};
    tp_an_describe(one, 1, &d);
    CHECK(isnan(d.std)); /* pandas: sample std of one value is NaN */
    tp_an_describe(one, 0, &d);
    CHECK(isnan(d.mean));
}

static void test_percentile(void) {
    double v[] = {0, 7, 150};
    CHECK_NEAR(tp_an_percentile_sorted(v, 3, 95), 7 + 0.9 * 143, 1e-9);
    CHECK_NEAR(tp_an_percentile_sorted(v, 3, 50), 7, 0);
    CHECK(isnan(tp_an_percentile_sorted(v, 0, 50)));
}

static void test_argsort_numpy(void) {
    /* 17 elements: numpy quicksorts (insertion sort only below 16), so ties are unstable. */
    int64_t a[] = {3, 3, 1, 3, 4, 2, 4, 0, 4, 3, 3, 0, 2, 3, 1, 0, 4};
    size_t ref[] = {7, 15, 11, 2, 14, 5, 12, 0, 1, 3, 13, 9, 10, 8, 4, 6, 16};
    size_t idx[17];
    tp_an_argsort_np(a, 17, idx, NULL);
    for (size_t i = 0; i < 17; i++)
        CHECK_EQ_U(idx[i], ref[i]);
    int64_t b[] = {3, 1, 2, 1, 3, 2, 1, 0, 0, 2, 1, 3};
    size_t refb[] = {7, 8, 1, 3, 6, 10, 2, 5, 9, 0, 4, 11}; /* small: stable insertion */
    tp_an_argsort_np(b, 12, idx, NULL);
    for (size_t i = 0; i < 12; i++)
        CHECK_EQ_U(idx[i], refb[i]);
}

/* Selection gives the very double the sorted definition gives, for every size, shape and q. */
static void test_percentile_by_selection(void) {
    const size_t sizes[] = {1, 2, 3, 16, 17, 18, 100, 1001, 20000};
    const double qs[] = {0, 25, 50, 75, 90, 95, 99, 100};
    uint64_t s = 12345;
    for (int shape = 0; shape < 3; shape++)
        for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++) {
            size_t n = sizes[z];
            double *v = malloc(n * sizeof *v), *sorted = malloc(n * sizeof *v);
            double *work = malloc(n * sizeof *v);
            fill(v, n, shape, &s);
            memcpy(sorted, v, n * sizeof *v);
            qsort(sorted, n, sizeof *v, cmp_dbl);
            for (size_t k = 0; k < sizeof qs / sizeof *qs; k++) {
                memcpy(work, v, n * sizeof *v);
                double got = tp_an_percentile(work, n, qs[k]);
                double want = tp_an_percentile_sorted(sorted, n, qs[k]);
                if (!same_bits(got, want))
                    fprintf(stderr, "n %zu shape %d q %g: %.17g vs %.17g\n", n, shape, qs[k], got,
                            want);
                CHECK(same_bits(got, want));
            }
            free(v), free(sorted), free(work);
        }
    CHECK(isnan(tp_an_percentile(NULL, 0, 50)));
}

/* tp_an_dist_of skips the sort only where the sum cannot change: every figure bit for bit as
 * describe's, for whole numbers (the fast path) and fractions (the sorted path). */
static void test_dist_matches_describe(void) {
    uint64_t s = 99;
    for (int shape = 0; shape < 3; shape++) {
        enum { N = 5001 };
        double *v = malloc(N * sizeof *v), *w = malloc(N * sizeof *v);
        fill(v, N, shape, &s);
        memcpy(w, v, N * sizeof *v);
        tp_an_dist d;
        tp_an_dist_of(v, N, &d);
        tp_an_describe_t ds;
        tp_an_describe(w, N, &ds);
        CHECK(same_bits(d.sum, ds.sum) && same_bits(d.mean, ds.mean));
        CHECK(same_bits(d.min, ds.min) && same_bits(d.max, ds.max));
        CHECK(same_bits(d.p50, tp_an_percentile_sorted(w, N, 50)));
        CHECK(same_bits(d.p95, tp_an_percentile_sorted(w, N, 95)));
        free(v), free(w);
    }
    double sum;
    double frac[] = {1, 2.5};
    CHECK(!tp_an_sum_exact(frac, 2, &sum));
    double big[] = {4503599627370496.0, 1};
    CHECK(!tp_an_sum_exact(big, 2, &sum));
    double ok[] = {3, -4, 5};
    CHECK(tp_an_sum_exact(ok, 3, &sum) && sum == 4);
}

static int cmp_keyrow(const void *a, const void *b) {
    const tp_an_keyrow *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->row > y->row) - (x->row < y->row);
}

/* Key then row, rows given in any order, as the qsort it replaced; keys of a narrow range
 * and of the full 64 bits. */
static void test_keyrow_sort(void) {
    enum { N = 3000 };
    tp_an_keyrow *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    uint64_t s = 5;
    for (int mode = 0; mode < 4; mode++) {
        int ascending = mode & 1, wide = mode >> 1;
        for (size_t i = 0; i < N; i++) {
            int64_t k = wide ? (int64_t)rnd(&s) : (int64_t)(rnd(&s) % 40) - 20;
            if (wide && i % 3 == 0 && i)
                k = a[i - 1].key; /* ties among wide keys too */
            a[i] = b[i] = (tp_an_keyrow){k, ascending ? i : (size_t)(rnd(&s) % 1000)};
        }
        tp_an_keyrow_sort(a, N, NULL);
        qsort(b, N, sizeof *b, cmp_keyrow);
        size_t bad = N;
        for (size_t i = 0; i < N && bad == N; i++)
            if (a[i].key != b[i].key || a[i].row != b[i].row)
                bad = i;
        CHECK_EQ_U(bad, N);
    }
    free(a), free(b);
}

/* Distinct keys: numpy's order is the ascending one (the radix path); with ties the numpy
 * port still sorts (its tie order is pinned by test_argsort_numpy). */
static void test_argsort_large(void) {
    enum { N = 5000 };
    int64_t *k = malloc(N * sizeof *k);
    size_t *idx = malloc(N * sizeof *idx);
    for (int ties = 0; ties < 2; ties++) {
        for (size_t i = 0; i < N; i++)
            k[i] = ties ? (int64_t)((i * 7919) % 1000) : (int64_t)((i * 7919) % N) - 100;
        tp_an_argsort_np(k, N, idx, NULL);
        size_t bad = N;
        for (size_t i = 1; i < N && bad == N; i++)
            if (k[idx[i - 1]] > k[idx[i]])
                bad = i;
        CHECK_EQ_U(bad, N);
        char *seen = calloc(N, 1);
        for (size_t i = 0; i < N; i++)
            seen[idx[i]]++;
        for (size_t i = 0; i < N; i++)
            CHECK_EQ_U(seen[i], 1);
        free(seen);
    }
    free(k), free(idx);
}

/* ---- the numpy port as it was before its shortcut (numpy 1.24's aquicksort, plain): the
 * reference that tp_an_argsort_np's shortcut for distinct parts must match exactly. */
static void ref_sift(const int64_t *v, size_t *a, size_t i, size_t n) {
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

static void ref_heapsort(const int64_t *v, size_t *tosort, size_t n) {
    size_t *a = tosort - 1;
    for (size_t l = n >> 1; l > 0; --l)
        ref_sift(v, a, l, n);
    for (; n > 1;) {
        size_t tmp = a[n];
        a[n] = a[1];
        a[1] = tmp;
        n -= 1;
        ref_sift(v, a, 1, n);
    }
}

#define REF_SWAP(a, b)                                                                             \
    do {                                                                                           \
        size_t t_ = (a);                                                                           \
        (a) = (b);                                                                                 \
        (b) = t_;                                                                                  \
    } while (0)

static void ref_argsort(const int64_t *v, size_t num, size_t *tosort) {
    for (size_t i = 0; i < num; i++)
        tosort[i] = i;
    if (num < 2)
        return;
    size_t *pl = tosort, *pr = tosort + num - 1, *stack[128], **sptr = stack;
    int depth[128], *psdepth = depth, cdepth = 0;
    for (size_t m = num; m >>= 1;)
        cdepth++;
    cdepth *= 2;
    for (;;) {
        if (cdepth < 0) {
            ref_heapsort(v, pl, (size_t)(pr - pl + 1));
            goto pop;
        }
        while ((pr - pl) > 15) {
            size_t *pm = pl + ((pr - pl) >> 1);
            if (v[*pm] < v[*pl])
                REF_SWAP(*pm, *pl);
            if (v[*pr] < v[*pm])
                REF_SWAP(*pr, *pm);
            if (v[*pm] < v[*pl])
                REF_SWAP(*pm, *pl);
            int64_t vp = v[*pm];
            size_t *pi = pl, *pj = pr - 1;
            REF_SWAP(*pm, *pj);
            for (;;) {
                do
                    ++pi;
                while (v[*pi] < vp);
                do
                    --pj;
                while (vp < v[*pj]);
                if (pi >= pj)
                    break;
                REF_SWAP(*pi, *pj);
            }
            REF_SWAP(*pi, *(pr - 1));
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
        for (size_t *pi = pl + 1; pi <= pr; ++pi) {
            size_t vi = *pi, *pj = pi, *pk = pi - 1;
            int64_t x = v[vi];
            while (pj > pl && x < v[*pk])
                *pj-- = *pk--;
            *pj = vi;
        }
    pop:
        if (sptr == stack)
            break;
        pr = *(--sptr);
        pl = *(--sptr);
        cdepth = *(--psdepth);
    }
}

/* The shortcut (radix sorts of the parts whose keys are distinct) leaves every permutation
 * as the plain port makes it: few ties, many ties, two sorted runs (the queue analysis's
 * input, which drives numpy into its heapsort), a run with a tie pair across the runs. Up to
 * 200 k keys: the partitions' long scans (AVX2 where the CPU has it) and the heapsorts that
 * stop at their lowest tie (shape 7: the queue's steps, a tie pair now and then across the
 * runs, as lb2k's). */
static void test_argsort_shortcut(void) {
    enum { N = 250000 };
    int64_t *k = malloc(N * sizeof *k);
    size_t *got = malloc(N * sizeof *got), *want = malloc(N * sizeof *want);
    uint64_t s = 777;
    for (int shape = 0; shape < 8; shape++)
        for (size_t n = 64; n <= N; n = n * 5 + 3) {
            for (size_t i = 0; i < n; i++) {
                if (shape == 0) /* distinct but a few repeated */
                    k[i] = (int64_t)(rnd(&s) % 1000000000) * (i % 97 ? 1 : 0);
                else if (shape == 1) /* many ties */
                    k[i] = (int64_t)(rnd(&s) % 50);
                else if (shape == 2) /* two ascending runs, overlapping times, one tie */
                    k[i] = i < n / 2 ? (int64_t)i * 10 : (int64_t)(i - n / 2) * 10 + 3;
                else if (shape == 3)
                    k[i] = i < n / 2 ? (int64_t)i * 10
                                     : (int64_t)(i - n / 2) * 10 + 3 * (int64_t)(i % 3);
                else if (shape == 4) /* descending with a few equal neighbours */
                    k[i] = (int64_t)(n - i) / (i % 11 ? 1 : 2);
                else if (shape == 5) /* launches, then their GPU rows a jitter later (ties) */
                    k[i] = i < n / 2 ? (int64_t)i * 40
                                     : (int64_t)(i - n / 2) * 40 + 5 + (int64_t)(rnd(&s) % 60);
                else if (shape == 6) /* long runs of one key between distinct ones */
                    k[i] = (int64_t)(rnd(&s) % 4 ? i : (i / 300) * 300);
                else /* launches 40 apart, each GPU row 7 later, or (1 in 400) at the next launch */
                    k[i] = i < n / 2 ? (int64_t)i * 40
                                     : (int64_t)(i - n / 2) * 40 + (rnd(&s) % 400 ? 7 : 40);
            }
            tp_an_argsort_np(k, n, got, NULL);
            ref_argsort(k, n, want);
            size_t bad = n;
            for (size_t i = 0; i < n && bad == n; i++)
                if (got[i] != want[i])
                    bad = i;
            if (bad != n)
                fprintf(stderr, "shape %d n %zu: first difference at %zu\n", shape, n, bad);
            CHECK_EQ_U(bad, n);
            /* the same order from the stable one's block (the queue's steps) */
            uint32_t *rows = tp_sort_order_i64_s(k, n, NULL);
            rows = tp_an_argsort_np_over(k, n, rows, NULL);
            for (bad = 0; bad < n && rows[bad] == want[bad]; bad++)
                ;
            CHECK_EQ_U(bad, n);
            tp_scratch_put(NULL, rows);
        }
    free(k), free(got), free(want);
}

/* tp_an_argsort_np_over below 64 keys (numpy's plain port, its indices narrowed) and on
 * distinct keys (the stable order unchanged). */
static void test_argsort_over_small(void) {
    int64_t k[200];
    size_t want[200];
    uint64_t s = 99;
    static const size_t ns[] = {1, 2, 5, 17, 40, 63, 64, 65, 200};
    for (int ties = 0; ties < 2; ties++)
        for (size_t t = 0; t < sizeof ns / sizeof *ns; t++) {
            size_t n = ns[t];
            for (size_t i = 0; i < n; i++)
                k[i] = ties ? (int64_t)(rnd(&s) % 7) : (int64_t)(n - i) * 3;
            ref_argsort(k, n, want);
            uint32_t *rows = tp_sort_order_i64_s(k, n, NULL);
            rows = tp_an_argsort_np_over(k, n, rows, NULL);
            size_t bad = 0;
            while (bad < n && rows[bad] == want[bad])
                bad++;
            CHECK_EQ_U(bad, n);
            tp_scratch_put(NULL, rows);
        }
}

/* Whole numbers in a narrow span are sorted by counting: the same array (bit for bit) and
 * figures as the radix sort; -0.0, fractions and wide spans take the radix sort. */
static void test_describe_counting(void) {
    enum { N = 20000 };
    double *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    uint64_t s = 11;
    for (int mode = 0; mode < 5; mode++) {
        for (size_t i = 0; i < N; i++)
            a[i] = mode == 3 ? (double)(rnd(&s) % 9000) : (double)(rnd(&s) % 300) - 150;
        if (mode == 1)
            a[N / 2] = -0.0;
        if (mode == 2)
            a[7] = 0.5;
        if (mode == 4)
            a[3] = 1e300; /* wide */
        memcpy(b, a, N * sizeof *a);
        tp_an_describe_t x, y;
        tp_an_describe(a, N, &x);
        tp_sort_f64(b, N);
        CHECK(memcmp(a, b, N * sizeof *a) == 0);
        double sum = 0;
        for (size_t i = 0; i < N; i++)
            sum += b[i];
        y.sum = sum;
        CHECK(x.sum == y.sum);
        CHECK(x.min == b[0] && x.max == b[N - 1]);
        CHECK(x.p50 == tp_an_percentile_sorted(b, N, 50));
    }
    free(a), free(b);
}

/* Two percentiles at once: the same doubles as tp_an_percentile_sorted on the sorted
 * values, for pairs of equal, near and far ranks, with ties, and tiny n. */
static void test_percentile2(void) {
    const double qs[][2] = {{50, 95}, {50, 90}, {50, 50}, {0, 100}, {95, 100}, {10, 11}};
    const size_t ns[] = {1, 2, 3, 17, 1000, 4099};
    uint64_t s = 3;
    for (size_t a = 0; a < sizeof ns / sizeof *ns; a++)
        for (size_t b = 0; b < sizeof qs / sizeof *qs; b++) {
            size_t n = ns[a];
            double *v = malloc(n * sizeof *v), *w = malloc(n * sizeof *w);
            for (size_t i = 0; i < n; i++)
                v[i] = w[i] = (double)(rnd(&s) % (b % 2 ? 7 : 100000)) / 4;
            tp_sort_f64(w, n);
            double p1, p2;
            tp_an_percentile2(v, n, qs[b][0], qs[b][1], &p1, &p2);
            CHECK(p1 == tp_an_percentile_sorted(w, n, qs[b][0]));
            CHECK(p2 == tp_an_percentile_sorted(w, n, qs[b][1]));
            free(v), free(w);
        }
}

/* Whole numbers (the selection by digits): every range of values, negative ones, many
 * equal, one value only, and a -0.0 or a fraction among them (the quickselect then): the
 * same doubles as the sorted definition, one percentile or two at once. */
static void test_percentile_whole(void) {
    const size_t ns[] = {4096, 4097, 30001, 300000}; /* the last: a wide top digit */
    const uint64_t spans[] = {1, 3, 1000, 1u << 20, UINT64_C(1) << 40, UINT64_C(1) << 52};
    const double qs[][2] = {{0, 100}, {50, 95}, {50, 90}, {25, 75}, {99.9, 100}, {50, 50}};
    uint64_t s = 77;
    for (size_t a = 0; a < sizeof ns / sizeof *ns; a++)
        for (size_t z = 0; z < sizeof spans / sizeof *spans; z++)
            for (int odd = 0; odd < 4; odd++) {
                size_t n = ns[a];
                double *v = malloc(n * sizeof *v), *w = malloc(n * sizeof *w);
                double *x = malloc(n * sizeof *x);
                for (size_t i = 0; i < n; i++) {
                    uint64_t r = rnd(&s) % spans[z];
                    if (odd == 1) /* clustered: most values in a few low ones */
                        r = i % 10 ? r % 5 : r;
                    v[i] = (double)(int64_t)r - (odd == 2 ? (double)(spans[z] / 2) : 0);
                }
                if (odd == 3) /* a value that is not a whole number, or -0.0 */
                    v[n / 2] = spans[z] % 2 ? -0.0 : 0.5;
                memcpy(w, v, n * sizeof *v);
                qsort(w, n, sizeof *w, cmp_dbl);
                for (size_t b = 0; b < sizeof qs / sizeof *qs; b++) {
                    double p1, p2;
                    memcpy(x, v, n * sizeof *v);
                    tp_an_percentile2(x, n, qs[b][0], qs[b][1], &p1, &p2);
                    CHECK(same_bits(p1, tp_an_percentile_sorted(w, n, qs[b][0])));
                    CHECK(same_bits(p2, tp_an_percentile_sorted(w, n, qs[b][1])));
                    memcpy(x, v, n * sizeof *v);
                    CHECK(same_bits(tp_an_percentile(x, n, qs[b][1]),
                                    tp_an_percentile_sorted(w, n, qs[b][1])));
                }
                free(v), free(w), free(x);
            }
}

/* tp_an_whole_stats2 gives what tp_an_sum_exact, a min/max scan and tp_an_percentile2 give,
 * and declines (v untouched) where one of them would not take the whole-number path. */
static void test_whole_stats2(void) {
    const size_t ns[] = {100, 4096, 30001};
    const uint64_t spans[] = {1, 1000, 1u << 20, UINT64_C(1) << 40};
    uint64_t s = 99;
    for (size_t a = 0; a < sizeof ns / sizeof *ns; a++)
        for (size_t z = 0; z < sizeof spans / sizeof *spans; z++)
            for (int odd = 0; odd < 5; odd++) {
                size_t n = ns[a];
                double *v = malloc(n * sizeof *v), *w = malloc(n * sizeof *w);
                for (size_t i = 0; i < n; i++)
                    v[i] = (double)(int64_t)(rnd(&s) % spans[z]) -
                           (odd == 1 ? (double)(spans[z] / 2) : 0);
                if (odd == 2)
                    v[n / 3] = -0.0;
                if (odd == 3)
                    v[n / 3] = 0.5;
                if (odd == 4)
                    v[n / 3] = 4503599627370496.0; /* magnitudes over 2^52 in all */
                memcpy(w, v, n * sizeof *v);
                double sum, mn, mx, p1, p2, wsum = 0, wp1, wp2;
                int got = tp_an_whole_stats2(v, n, 50, 95, &sum, &mn, &mx, &p1, &p2);
                int want = n >= 4096 && odd != 2 && odd != 3 && tp_an_sum_exact(w, n, &wsum);
                CHECK(got == want);
                if (odd < 2) { /* from int64_t: tp_an_percentile_in with the range */
                    double *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), lo = w[0],
                           hi = w[0];
                    for (size_t i = 0; i < n; i++) {
                        lo = w[i] < lo ? w[i] : lo;
                        hi = w[i] > hi ? w[i] : hi;
                    }
                    for (int q = 0; q <= 100; q += 25) {
                        memcpy(x, w, n * sizeof *x), memcpy(y, w, n * sizeof *y);
                        CHECK(same_bits(tp_an_percentile_in(x, n, q, (int64_t)lo, (int64_t)hi),
                                        tp_an_percentile(y, n, q)));
                    }
                    free(x), free(y);
                }
                if (!got) {
                    CHECK(memcmp(v, w, n * sizeof *v) == 0);
                } else {
                    double wmn = w[0], wmx = w[0];
                    for (size_t i = 1; i < n; i++) {
                        wmn = w[i] < wmn ? w[i] : wmn;
                        wmx = w[i] > wmx ? w[i] : wmx;
                    }
                    tp_an_percentile2(w, n, 50, 95, &wp1, &wp2);
                    CHECK(same_bits(sum, wsum) && same_bits(mn, wmn) && same_bits(mx, wmx));
                    CHECK(same_bits(p1, wp1) && same_bits(p2, wp2));
                }
                free(v), free(w);
            }
}

/* tp_an_describe_counts gives tp_an_describe's doubles for the values the counts stand for
 * (queue lengths: small, negative too; large ones, whose sum is added value by value). */
static void test_describe_counts(void) {
    const int64_t los[] = {0, -7, 3, INT64_C(1) << 50};
    const size_t spans[] = {1, 2, 9, 300};
    uint64_t s = 5;
    for (size_t a = 0; a < sizeof los / sizeof *los; a++)
        for (size_t z = 0; z < sizeof spans / sizeof *spans; z++)
            for (size_t n = 1; n < 6000; n = n * 3 + 1) {
                size_t *count = calloc(spans[z], sizeof *count);
                double *v = malloc(n * sizeof *v);
                for (size_t i = 0; i < n; i++) {
                    size_t b = (size_t)(rnd(&s) % spans[z]);
                    count[b]++;
                    v[i] = (double)(los[a] + (int64_t)b);
                }
                tp_an_describe_t x, y;
                tp_an_describe_counts(count, spans[z], los[a], n, &x);
                tp_an_describe(v, n, &y);
                CHECK(x.count == y.count && same_bits(x.sum, y.sum) && same_bits(x.mean, y.mean));
                CHECK(same_bits(x.std, y.std) && same_bits(x.min, y.min) &&
                      same_bits(x.max, y.max));
                CHECK(same_bits(x.p25, y.p25) && same_bits(x.p50, y.p50) &&
                      same_bits(x.p75, y.p75));
                for (int odd = 0; odd < 3; odd++) { /* counted, sorted (wide, a fraction) */
                    for (size_t i = 0; i < n; i++)
                        v[i] = (double)(los[a] + (int64_t)(rnd(&s) % spans[z]));
                    v[n / 2] += odd == 1 ? (double)(4 * n) : odd == 2 ? 0.5 : 0;
                    double *w = malloc(n * sizeof *w);
                    memcpy(w, v, n * sizeof *v);
                    tp_an_describe_any_s(v, n, &x, NULL);
                    tp_an_describe(w, n, &y);
                    CHECK(same_bits(x.sum, y.sum) && same_bits(x.std, y.std) &&
                          same_bits(x.p50, y.p50) && same_bits(x.p75, y.p75) &&
                          same_bits(x.min, y.min) && same_bits(x.max, y.max));
                    free(w);
                }
                free(count), free(v);
            }
}

/* tp_an_whole_stats2_i64 answers as tp_an_whole_stats2 of the values converted, with the same
 * doubles, and declines (v untouched) where that declines: spans, signs, magnitudes at and
 * past 2^52 in sum and 2^53 each, few values. */
static void test_whole_stats2_i64(void) {
    const size_t ns[] = {100, 4095, 4096, 30001, 200000};
    const uint64_t spans[] = {1, 1000, 1u << 20, UINT64_C(1) << 40};
    uint64_t s = 7;
    for (size_t a = 0; a < sizeof ns / sizeof *ns; a++)
        for (size_t z = 0; z < sizeof spans / sizeof *spans; z++)
            for (int odd = 0; odd < 6; odd++) {
                size_t n = ns[a];
                int64_t *v = malloc(n * sizeof *v), *v0 = malloc(n * sizeof *v0);
                double *w = malloc(n * sizeof *w);
                for (size_t i = 0; i < n; i++)
                    v[i] = (int64_t)(rnd(&s) % spans[z]) - (odd == 1 ? (int64_t)(spans[z] / 2) : 0);
                if (odd == 2) /* the magnitudes' sum just past 2^52, then at it */
                    v[n / 3] = INT64_C(4503599627370496);
                if (odd == 3) {
                    for (size_t i = 0; i < n; i++)
                        v[i] = 0;
                    v[n / 2] = INT64_C(4503599627370496);
                }
                if (odd == 4)
                    v[n - 1] = -INT64_C(9007199254740992); /* 2^53: refused */
                if (odd == 5)
                    v[0] = INT64_MAX;
                for (size_t i = 0; i < n; i++)
                    w[i] = (double)v[i];
                memcpy(v0, v, n * sizeof *v);
                double sum, mn, mx, p1, p2, ws, wmn, wmx, wp1, wp2;
                int got = tp_an_whole_stats2_i64(v, n, 50, 95, &sum, &mn, &mx, &p1, &p2);
                int want = tp_an_whole_stats2(w, n, 50, 95, &ws, &wmn, &wmx, &wp1, &wp2);
                CHECK(got == want);
                if (odd == 3 && n >= 4096)
                    CHECK(got == 1);
                if (!got) {
                    CHECK(memcmp(v, v0, n * sizeof *v) == 0);
                } else {
                    CHECK(same_bits(sum, ws) && same_bits(mn, wmn) && same_bits(mx, wmx));
                    CHECK(same_bits(p1, wp1) && same_bits(p2, wp2));
                }
                free(v), free(v0), free(w);
            }
}

/* The selection's ranks read from the small offsets' counts (below 4096 above the least
 * value), by digits, or one each way: durations with a long tail (most values small, the
 * top digit's buckets wide), values on both sides of the bound, shifted lows, a sample that
 * misleads the counts-only pass (its fallback); against the
 * sorted values, through the integer and the double entries. */
static void test_select_fine(void) {
    const size_t ns[] = {4096, 50001, 200000}; /* the last: a 16-bit top digit */
    const double qs[][2] = {{50, 95}, {0, 100}, {49, 51}, {90, 99.9}};
    uint64_t s = 4242;
    for (size_t a = 0; a < sizeof ns / sizeof *ns; a++)
        for (int shape = 0; shape < 6; shape++) {
            size_t n = ns[a];
            int64_t *v = malloc(n * sizeof *v), lo = shape == 3 ? -70000 : 13;
            double *w = malloc(n * sizeof *w), *x = malloc(n * sizeof *x);
            for (size_t i = 0; i < n; i++) {
                uint64_t r = rnd(&s);
                int64_t y = shape == 0   ? (int64_t)(r % (UINT64_C(1) << (r >> 58) % 30))
                            : shape == 1 ? 4094 + (int64_t)(r % 4) /* around the bound */
                            : shape == 2 ? (int64_t)(i % 2 ? r % 4096 : 4096 + r % 9000)
                            : shape == 3 ? (int64_t)(r % 3000)
                            /* small only where the sample looks (every n / 4096-th value): the
                             * fine counts' pass is tried and does not answer */
                            : shape == 5 ? (int64_t)(i % (n / 4096) == 0 ? r % 100 : 5000 + r % 100)
                                         : (int64_t)(r % 100000);
                v[i] = lo + y;
            }
            v[n / 2] = lo + (INT64_C(1) << 30); /* a far outlier: wide top-digit buckets */
            for (size_t i = 0; i < n; i++)
                w[i] = (double)v[i];
            qsort(w, n, sizeof *w, cmp_dbl);
            for (size_t b = 0; b < sizeof qs / sizeof *qs; b++) {
                double sum, mn, mx, p1, p2;
                int64_t *u = malloc(n * sizeof *u);
                memcpy(u, v, n * sizeof *v);
                CHECK(tp_an_whole_stats2_i64(u, n, qs[b][0], qs[b][1], &sum, &mn, &mx, &p1, &p2));
                CHECK(same_bits(p1, tp_an_percentile_sorted(w, n, qs[b][0])));
                CHECK(same_bits(p2, tp_an_percentile_sorted(w, n, qs[b][1])));
                for (size_t i = 0; i < n; i++)
                    x[i] = (double)v[i];
                CHECK(
                    same_bits(tp_an_percentile_in(x, n, qs[b][0], (int64_t)w[0], (int64_t)w[n - 1]),
                              tp_an_percentile_sorted(w, n, qs[b][0])));
                memcpy(u, v, n * sizeof *v);
                CHECK(same_bits(
                    tp_an_percentile_i64_in(u, n, qs[b][0], (int64_t)w[0], (int64_t)w[n - 1]),
                    tp_an_percentile_sorted(w, n, qs[b][0])));
                memcpy(u, v, n * sizeof *v); /* few values: converted, tp_an_percentile_in */
                int64_t lo100 = INT64_MAX, hi100 = INT64_MIN;
                for (size_t i = 0; i < 100; i++) {
                    x[i] = (double)v[i];
                    lo100 = v[i] < lo100 ? v[i] : lo100;
                    hi100 = v[i] > hi100 ? v[i] : hi100;
                }
                qsort(x, 100, sizeof *x, cmp_dbl);
                CHECK(same_bits(tp_an_percentile_i64_in(u, 100, qs[b][0], lo100, hi100),
                                tp_an_percentile_sorted(x, 100, qs[b][0])));
                for (size_t i = 0; i < n; i++)
                    x[i] = (double)v[i];
                tp_an_percentile2(x, n, qs[b][0], qs[b][1], &p1, &p2);
                CHECK(same_bits(p1, tp_an_percentile_sorted(w, n, qs[b][0])));
                CHECK(same_bits(p2, tp_an_percentile_sorted(w, n, qs[b][1])));
                free(u);
            }
            free(v), free(w), free(x);
        }
}

static int same_describe(const tp_an_describe_t *a, const tp_an_describe_t *b) {
    return a->count == b->count && same_bits(a->sum, b->sum) && same_bits(a->mean, b->mean) &&
           same_bits(a->std, b->std) && same_bits(a->min, b->min) && same_bits(a->p25, b->p25) &&
           same_bits(a->p50, b->p50) && same_bits(a->p75, b->p75) && same_bits(a->max, b->max);
}

/* tp_an_describe_any_i64_s gives tp_an_describe_any_s's figures of the values converted: the
 * counted path (span below the count), the sorted one (wider), few values, none, values at
 * and past 2^53 (not counted), negative ones. */
static void test_describe_any_i64(void) {
    const size_t ns[] = {0, 1, 4095, 4096, 30000};
    const uint64_t spans[] = {1, 3000, 100000};
    uint64_t s = 99;
    tp_scratch *sc = tp_scratch_open(1 << 20);
    for (size_t a = 0; a < sizeof ns / sizeof *ns; a++)
        for (size_t z = 0; z < sizeof spans / sizeof *spans; z++)
            for (int mode = 0; mode < 3; mode++) {
                size_t n = ns[a];
                int64_t *v = malloc((n + 1) * sizeof *v), lo = INT64_MAX, hi = INT64_MIN;
                double *w = malloc((n + 1) * sizeof *w);
                for (size_t i = 0; i < n; i++) {
                    v[i] = (int64_t)(rnd(&s) % spans[z]) - (mode == 1 ? 2000 : 0);
                    if (mode == 2)
                        v[i] += INT64_C(9007199254740992) - 1000; /* at and past 2^53 */
                }
                for (size_t i = 0; i < n; i++) {
                    w[i] = (double)v[i];
                    lo = v[i] < lo ? v[i] : lo;
                    hi = v[i] > hi ? v[i] : hi;
                }
                tp_an_describe_t x, y;
                tp_an_describe_any_i64_s(v, n, lo, hi, &x, sc);
                tp_an_describe_any_s(w, n, &y, sc);
                CHECK(same_describe(&x, &y));
                free(v), free(w);
            }
    tp_scratch_close(sc);
}

int main(void) {
    TP_RUN(test_describe);
    TP_RUN(test_percentile);
    TP_RUN(test_argsort_numpy);
    TP_RUN(test_percentile_by_selection);
    TP_RUN(test_dist_matches_describe);
    TP_RUN(test_keyrow_sort);
    TP_RUN(test_describe_counting);
    TP_RUN(test_percentile2);
    TP_RUN(test_percentile_whole);
    TP_RUN(test_whole_stats2);
    TP_RUN(test_whole_stats2_i64);
    TP_RUN(test_select_fine);
    TP_RUN(test_describe_counts);
    TP_RUN(test_describe_any_i64);
    TP_RUN(test_argsort_large);
    TP_RUN(test_argsort_shortcut);
    TP_RUN(test_argsort_over_small);
    return tp_test_summary();
}
