/* tp_decimal_ns_to_us against the text it replaces (snprintf of the exact decimal, strtod),
 * bit for bit: every value near 0 and near the powers of two where doubles change their ulp,
 * exact ties between two doubles (ns = 1000 * an odd multiple of half an ulp), the extremes,
 * and 2 M random values spread over every magnitude. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tp_decimal.h"
#include "tp_test.h"

static double by_text(int64_t ns) {
    char buf[48];
    uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    snprintf(buf, sizeof buf, "%s%" PRIu64 ".%03u", ns < 0 ? "-" : "", a / 1000,
             (unsigned)(a % 1000));
    return strtod(buf, NULL);
}

static uint64_t g_checked, g_bad;

static void check(int64_t ns) {
    double a = tp_decimal_ns_to_us(ns), b = by_text(ns);
    g_checked++;
    if (memcmp(&a, &b, sizeof a) != 0 && g_bad++ < 10)
        printf("  ns %" PRId64 ": %.17g, the text gives %.17g\n", ns, a, b);
}

static void check_around(int64_t center, int64_t radius) {
    for (int64_t d = -radius; d <= radius; d++) {
        if ((d > 0 && center > INT64_MAX - d) || (d < 0 && center < INT64_MIN - d))
            continue;
        check(center + d);
    }
}

static uint64_t xorshift(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void test_matches_text(void) {
    check_around(0, 100000);
    for (int p = 20; p < 63; p++) {
        check_around((int64_t)1 << p, 3000);
        check_around(-((int64_t)1 << p), 3000);
        check_around((int64_t)1000 << (p < 53 ? p : 53), 3000); /* values near 2^p µs */
    }
    /* ties: v = ns/1000 exactly halfway between two doubles: odd halves in [2^52, 2^53)
     * (ulp 1), odd integers in [2^53, 2^54) (ulp 2), both in int64 range */
    for (int64_t k = 0; k < 2000; k++) {
        int64_t v52 = ((int64_t)1 << 52) + 2 * k + 1, v53 = ((int64_t)1 << 53) + 2 * k + 1;
        check(v52 * 1000 + 500);
        check(-(v52 * 1000 + 500));
        check(v53 * 1000);
        check(-(v53 * 1000));
    }
    check(INT64_MAX);
    check(INT64_MIN + 1);
    check(INT64_MIN);
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 2000000; i++) {
        uint64_t r = xorshift(&s);
        int shift = (int)(r & 63); /* every magnitude */
        check((int64_t)(xorshift(&s) >> shift) * ((r >> 6) & 1 ? -1 : 1));
    }
    printf("  %" PRIu64 " values, %" PRIu64 " differ\n", g_checked, g_bad);
    CHECK_EQ_U(g_bad, 0);
}

int main(void) {
    TP_RUN(test_matches_text);
    return tp_test_summary();
}
