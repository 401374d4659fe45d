/* tp_decimal: see tp_decimal.h. */
#include "tp_decimal.h"

#include <math.h>
#include <string.h>

/* |1000 x - a| scaled by 2^19, exactly: x is a double >= 2^53 / 1000 > 2^42 here, whose ulp
 * is at least 2^-10, so x * 2^19 is an integer; with a < 2^64 every term fits 128 bits. */
static unsigned __int128 scaled_error(double x, uint64_t a) {
    unsigned __int128 xs = (unsigned __int128)(x * 524288.0); /* x * 2^19, exact */
    unsigned __int128 lhs = xs * 1000u, rhs = (unsigned __int128)a << 19;
    return lhs > rhs ? lhs - rhs : rhs - lhs;
}

/* 1 when x's significand is even: its lowest bit is the lowest bit of the IEEE encoding. */
static int mantissa_even(double x) {
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return (b & 1u) == 0;
}

double tp_decimal_ns_to_us(int64_t ns) {
    uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    double r;
    if (a < (1ull << 53)) {
        /* a and 1000 are exact doubles and IEEE division rounds the exact quotient to
         * nearest, ties to even: the same double. */
        r = (double)a / 1000.0;
    } else {
        /* a is not exact in a double. A candidate within one ulp (a rounded to 64 bits is
         * exact in long double, one rounding of the quotient there, one more to double),
         * then the nearest of it and its neighbours by the exact error, ties to even. */
        double c = (double)((long double)a / 1000.0L);
        double cand[3] = {nextafter(c, 0.0), c, nextafter(c, INFINITY)};
        r = cand[0];
        unsigned __int128 best = scaled_error(r, a);
        for (int i = 1; i < 3; i++) {
            unsigned __int128 e = scaled_error(cand[i], a);
            if (e < best || (e == best && mantissa_even(cand[i]) && !mantissa_even(r))) {
                best = e;
                r = cand[i];
            }
        }
    }
    return ns < 0 ? -r : r;
}
