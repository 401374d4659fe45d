/* Tests of tp_sort: every sort agrees with a comparison sort (qsort with an explicit tie
 * rule) on random inputs of many sizes, with many ties, negative values, keys that differ
 * only in high bytes or in bit ranges that are not whole bytes, a few ascending runs, already
 * sorted and reversed input; stability is checked by the rows that come out with equal keys. */
#include "tp_sort.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tp_test.h"

static uint64_t rnd(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

typedef struct {
    int64_t k;
    uint32_t row;
} ref_pair;

static int ref_cmp(const void *a, const void *b) {
    const ref_pair *x = a, *y = b;
    if (x->k != y->k)
        return x->k < y->k ? -1 : 1;
    return (x->row > y->row) - (x->row < y->row);
}

/* A key of shape `shape`: few distinct values, full 64-bit range, timestamps, high bytes. */
static int64_t make_key(uint64_t *s, int shape, size_t i, size_t n) {
    switch (shape) {
    case 0:
        return (int64_t)(rnd(s) % 7) - 3;
    case 1:
        return (int64_t)rnd(s);
    case 2:
        return INT64_C(1700000000000000000) + (int64_t)(rnd(s) % 20000000000ull);
    case 3:
        return (int64_t)(rnd(s) % 5) << 56;
    case 4:
        return (int64_t)i; /* already sorted */
    case 5:
        return (int64_t)((rnd(s) % (1u << 23)) << 3); /* 23 bits from bit 3: 11-bit digits */
    case 6:
        return (int64_t)((rnd(s) % 3) << 40 | rnd(s) % 256); /* two bytes far apart */
    case 7: /* two ascending runs with ties within and across them: merged */
        return (int64_t)((i < n / 2 ? i : i - n / 2) / 3);
    case 8: /* five ascending runs */
        return (int64_t)((i % (n / 5 + 1)) / 2);
    default:
        return (int64_t)(n - i); /* reversed */
    }
}

static void check_rows(const int64_t *col, size_t n) {
    uint32_t *rows = tp_sort_order_i64(col, n);
    ref_pair *ref = malloc((n + 1) * sizeof *ref);
    for (size_t i = 0; i < n; i++)
        ref[i] = (ref_pair){col[i], (uint32_t)i};
    qsort(ref, n, sizeof *ref, ref_cmp);
    size_t bad = n;
    for (size_t i = 0; i < n && bad == n; i++)
        if (rows[i] != ref[i].row)
            bad = i;
    /* the same order from the keys sorted in place (packed with the rows where the keys'
     * span allows: every shape but the full 64-bit one) */
    int64_t *over = malloc((n + 1) * sizeof *over);
    if (n)
        memcpy(over, col, n * sizeof *over);
    uint32_t *rows2 = tp_sort_order_i64_over_s(over, n, NULL);
    size_t bad2 = n;
    for (size_t i = 0; i < n && bad2 == n; i++)
        if (rows2[i] != ref[i].row)
            bad2 = i;
    free(over); /* rows2 is its block */
    free(rows);
    free(ref);
    CHECK_EQ_U(bad, n); /* the first row that differs; n: none */
    CHECK_EQ_U(bad2, n);
}

static void test_order_matches_stable_qsort(void) {
    const size_t sizes[] = {0, 1, 2, 5, 47, 48, 49, 200, 1000, 70000};
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (int shape = 0; shape < 10; shape++)
        for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++) {
            size_t n = sizes[z];
            int64_t *col = malloc((n + 1) * sizeof *col);
            for (size_t i = 0; i < n; i++)
                col[i] = make_key(&s, shape, i, n);
            check_rows(col, n);
            free(col);
        }
}

/* Keys in one or two ascending runs (the merge path), with keys shared across the runs and
 * within each: still the stable order, also from tp_sort_merge_runs_order. */
static void test_order_two_runs(void) {
    const size_t sizes[] = {1, 2, 3, 10, 999, 5000};
    for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++)
        for (size_t split = 0; split <= 3; split++) {
            size_t n = sizes[z], m = split * n / 3;
            int64_t *col = malloc((n + 1) * sizeof *col);
            for (size_t i = 0; i < m; i++)
                col[i] = (int64_t)(i / 3) * 2 - 7;
            for (size_t i = m; i < n; i++)
                col[i] = (int64_t)((i - m) / 2) - 5;
            check_rows(col, n);
            /* the merge alone, told where the second run starts: the same order */
            uint32_t *want = tp_sort_order_i64(col, n), *got = malloc((n + 1) * sizeof *got);
            tp_sort_merge_runs_order(col, m, n, got);
            CHECK(memcmp(want, got, n * sizeof *got) == 0);
            free(want), free(got);
            free(col);
        }
}

/* Sorting rows by a secondary then a primary key sorts by both (what tp_model relies on). */
static void test_two_keys(void) {
    enum { N = 5000 };
    int64_t *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    uint32_t rows[N];
    uint64_t s = 42;
    for (size_t i = 0; i < N; i++) {
        a[i] = (int64_t)(rnd(&s) % 50);
        b[i] = (int64_t)(rnd(&s) % 3) - 1;
        rows[i] = (uint32_t)i;
    }
    tp_sort_rows_i64(b, rows, N);
    tp_sort_rows_i64(a, rows, N);
    size_t bad = N;
    for (size_t i = 1; i < N && bad == N; i++) {
        uint32_t p = rows[i - 1], q = rows[i];
        if (a[p] > a[q] || (a[p] == a[q] && (b[p] > b[q] || (b[p] == b[q] && p > q))))
            bad = i;
    }
    free(a), free(b);
    CHECK_EQ_U(bad, N);
}

/* tp_sort_rows_grouped_s gives what a pass by c and a pass by the group give: with few groups
 * and a narrow c (the packed pass), with c spanning all 64 bits and with many groups (the two
 * passes), with one group, on a subset of the rows in scrambled order. */
static uint64_t group_of(const void *ctx, uint32_t row) {
    return ((const uint64_t *)ctx)[row];
}

static void test_grouped(void) {
    enum { N = 6000 };
    int64_t *g = malloc(N * sizeof *g), *c = malloc(N * sizeof *c);
    uint64_t *gu = malloc(N * sizeof *gu);
    uint32_t *r1 = malloc(N * sizeof *r1), *r2 = malloc(N * sizeof *r2);
    static const struct {
        uint64_t groups, span; /* group below groups; c below span (0: any) */
    } cases[] = {{3, 1000}, {1600, 1u << 30}, {2, 0}, {1, 0}, {40000, 5}, {1, 1}, {5000, 0}};
    uint64_t s = 7;
    for (size_t t = 0; t < sizeof cases / sizeof *cases; t++) {
        for (size_t i = 0; i < N; i++) {
            gu[i] = rnd(&s) % cases[t].groups;
            g[i] = (int64_t)gu[i];
            c[i] = cases[t].span ? (int64_t)(rnd(&s) % cases[t].span) - 7 : (int64_t)rnd(&s);
        }
        size_t n = 0;
        for (size_t i = 0; i < N; i++) /* every third row left out, the rest reversed */
            if (i % 3)
                r1[n++] = (uint32_t)(N - 1 - i);
        memcpy(r2, r1, n * sizeof *r1);
        tp_sort_rows_i64(c, r1, n);
        tp_sort_rows_i64(g, r1, n);
        tp_sort_rows_grouped_s(group_of, gu, cases[t].groups, c, r2, n, NULL);
        CHECK(memcmp(r1, r2, n * sizeof *r1) == 0);
    }
    free(g), free(gu), free(c), free(r1), free(r2);
}

static int dbl_cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void test_doubles(void) {
    enum { N = 3000 };
    double *v = malloc(N * sizeof *v), *w = malloc(N * sizeof *w);
    uint64_t s = 7;
    for (size_t i = 0; i < N; i++) {
        double d = (double)(int64_t)(rnd(&s) % 2001 - 1000) / 8.0;
        v[i] = w[i] = i % 97 == 0 ? 1e300 * (i % 2 ? 1 : -1) : d;
    }
    tp_sort_f64(v, N);
    qsort(w, N, sizeof *w, dbl_cmp);
    size_t bad = N;
    for (size_t i = 0; i < N && bad == N; i++)
        if (v[i] != w[i])
            bad = i;
    CHECK_EQ_U(bad, N);
    double z[] = {0.0, -0.0, -1.5, 2.0};
    tp_sort_f64(z, 4);
    CHECK(z[0] == -1.5 && signbit(z[1]) && !signbit(z[2]) && z[3] == 2.0);
    free(v), free(w);
}

static void test_i64_values(void) {
    int64_t v[] = {5, INT64_MIN, -1, INT64_MAX, 0, -1, 3};
    tp_sort_i64(v, 7);
    const int64_t want[] = {INT64_MIN, -1, -1, 0, 3, 5, INT64_MAX};
    for (size_t i = 0; i < 7; i++)
        CHECK_EQ_I(v[i], want[i]);
}

static int cmp_i64v(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Narrow spreads (sorted by counting), wide ones and the extremes: qsort's array each time. */
static void test_i64_counting(void) {
    const size_t ns[] = {255, 256, 1000, 70000};
    const uint64_t spans[] = {1, 7, 255, 999, 1u << 20};
    const int64_t bases[] = {0, -500, INT64_MIN, INT64_MAX - (1 << 20)};
    uint64_t s = 3;
    for (size_t a = 0; a < sizeof ns / sizeof *ns; a++)
        for (size_t z = 0; z < sizeof spans / sizeof *spans; z++)
            for (size_t b = 0; b < sizeof bases / sizeof *bases; b++) {
                size_t n = ns[a], bad = n;
                int64_t *v = malloc(n * sizeof *v), *w = malloc(n * sizeof *w);
                for (size_t i = 0; i < n; i++)
                    v[i] = (int64_t)((uint64_t)bases[b] + rnd(&s) % spans[z]);
                memcpy(w, v, n * sizeof *v);
                tp_sort_i64(v, n);
                qsort(w, n, sizeof *w, cmp_i64v);
                for (size_t i = 0; i < n; i++)
                    if (v[i] != w[i])
                        bad = i;
                CHECK_EQ_U(bad, n);
                free(v), free(w);
            }
}

typedef struct {
    uint32_t name;
    int64_t t;
    uint32_t serial; /* input position: shows stability */
} item;

static int item_cmp(const void *a, const void *b) {
    const item *x = a, *y = b;
    if (x->name != y->name)
        return x->name < y->name ? -1 : 1;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return (x->serial > y->serial) - (x->serial < y->serial);
}

/* Two struct passes (t, then name) give the (name, t, input order) order. */
static void test_structs(void) {
    enum { N = 4000 };
    item *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    uint64_t s = 3;
    for (uint32_t i = 0; i < N; i++)
        a[i] = b[i] = (item){(uint32_t)(rnd(&s) % 30), (int64_t)(rnd(&s) % 9) - 4, i};
    tp_sort_structs_i64(a, N, sizeof *a, offsetof(item, t));
    tp_sort_structs_u32(a, N, sizeof *a, offsetof(item, name));
    qsort(b, N, sizeof *b, item_cmp);
    item *c = malloc(N * sizeof *c); /* the same order in one call, fields listed */
    for (uint32_t i = 0; i < N; i++)
        c[i] = b[(i * 7u) % N]; /* any input order: ties are then ordered by serial below */
    const tp_sort_field by[] = {
        {offsetof(item, name), 1}, {offsetof(item, t), 0}, {offsetof(item, serial), 1}};
    tp_sort_structs(c, N, sizeof *c, by, 3);
    size_t bad3 = N;
    for (size_t i = 0; i < N && bad3 == N; i++)
        if (c[i].serial != b[i].serial)
            bad3 = i;
    free(c);
    CHECK_EQ_U(bad3, N);
    size_t bad = N;
    for (size_t i = 0; i < N && bad == N; i++)
        if (a[i].serial != b[i].serial)
            bad = i;
    free(a), free(b);
    CHECK_EQ_U(bad, N);
}

/* The bisections against a linear scan, with runs of equal values, every x from below the
 * first to past the last, and sub-ranges [lo, hi). */
static void test_bisect(void) {
    const int64_t a[] = {-5, -5, 0, 3, 3, 3, 7, 9};
    const size_t n = sizeof a / sizeof a[0];
    uint32_t u[8];
    uint64_t w[8];
    for (size_t i = 0; i < n; i++)
        u[i] = (uint32_t)(a[i] + 5), w[i] = (uint64_t)(a[i] + 5) << 20;
    for (size_t lo = 0; lo <= n; lo++)
        for (size_t hi = lo; hi <= n; hi++)
            for (int64_t x = -7; x <= 11; x++) {
                size_t lower = lo, upper = lo;
                while (lower < hi && a[lower] < x)
                    lower++;
                while (upper < hi && a[upper] <= x)
                    upper++;
                CHECK(tp_sort_lower_i64(a, lo, hi, x) == lower);
                CHECK(tp_sort_upper_i64(a, lo, hi, x) == upper);
                if (x >= -5) {
                    CHECK(tp_sort_lower_u32(u, lo, hi, (uint32_t)(x + 5)) == lower);
                    CHECK(tp_sort_lower_u64(w, lo, hi, (uint64_t)(x + 5) << 20) == lower);
                }
            }
}

int main(void) {
    TP_RUN(test_order_matches_stable_qsort);
    TP_RUN(test_order_two_runs);
    TP_RUN(test_two_keys);
    TP_RUN(test_grouped);
    TP_RUN(test_doubles);
    TP_RUN(test_i64_values);
    TP_RUN(test_i64_counting);
    TP_RUN(test_structs);
    TP_RUN(test_bisect);
    return tp_test_summary();
}
