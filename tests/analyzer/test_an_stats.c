/* test_an_stats: pandas-compatible describe, numpy percentiles and argsort. The argsort
 * reference permutations come from numpy 1.24.2's np.argsort(kind="quicksort"), the version
 * HTA's expected answers were computed with. HTA's interval merge, which uses the argsort, is
 * tested with the interval sets (test_an_ivset). */
#include "tp_an_stats.h"
#include "tp_test.h"

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
    tp_an_argsort_np(a, 17, idx);
    for (size_t i = 0; i < 17; i++)
        CHECK_EQ_U(idx[i], ref[i]);
    int64_t b[] = {3, 1, 2, 1, 3, 2, 1, 0, 0, 2, 1, 3};
    size_t refb[] = {7, 8, 1, 3, 6, 10, 2, 5, 9, 0, 4, 11}; /* small: stable insertion */
    tp_an_argsort_np(b, 12, idx);
    for (size_t i = 0; i < 12; i++)
        CHECK_EQ_U(idx[i], refb[i]);
}

int main(void) {
    TP_RUN(test_describe);
    TP_RUN(test_percentile);
    TP_RUN(test_argsort_numpy);
    return tp_test_summary();
}
