/* tp_clock: TSC calibration against CLOCK_MONOTONIC, and clock pairing samples. */
#include "tp_clock.h"

#include <stdio.h>
#include <string.h>

int tp_clock_tsc_invariant(void) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return 0;
    char line[4096];
    int constant = 0, nonstop = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) != 0)
            continue;
        constant = strstr(line, " constant_tsc") != NULL;
        nonstop = strstr(line, " nonstop_tsc") != NULL;
        break;
    }
    fclose(f);
    return constant && nonstop;
}

#if TP_CLOCK_HAVE_TSC
/* Reads the TSC and CLOCK_MONOTONIC as close together as possible: the TSC read bracketing
 * the clock_gettime with the narrowest window of a few tries wins. */
static void tsc_pair(uint64_t *tsc, uint64_t *ns) {
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 5; i++) {
        uint64_t a = __rdtsc();
        uint64_t n = tp_clock_monotonic_ns();
        uint64_t b = __rdtsc();
        if (b - a < best) {
            best = b - a;
            *tsc = a + (b - a) / 2;
            *ns = n;
        }
    }
}
#endif

void tp_clock_init(tp_clock *clk, unsigned calib_ms, int force_monotonic) {
    memset(clk, 0, sizeof *clk);
    clk->base_ns = tp_clock_monotonic_ns();
#if TP_CLOCK_HAVE_TSC
    if (force_monotonic || !tp_clock_tsc_invariant())
        return;
    if (calib_ms == 0)
        calib_ms = 2;
    uint64_t t0 = 0, n0 = 0, t1 = 0, n1 = 0; /* set by tsc_pair; -O3 cannot tell */
    tsc_pair(&t0, &n0);
    do {
        tsc_pair(&t1, &n1);
    } while (n1 - n0 < (uint64_t)calib_ms * 1000000u);
    if (t1 <= t0)
        return;
    clk->mult = (uint64_t)((((unsigned __int128)(n1 - n0)) << 32) / (t1 - t0));
    clk->tsc_hz = (uint64_t)((unsigned __int128)(t1 - t0) * 1000000000u / (n1 - n0));
    clk->base_tsc = t1;
    clk->base_ns = n1;
    clk->use_tsc = 1;
#else
    (void)calib_ms;
    (void)force_monotonic;
#endif
}

void tp_clock_sample_now(const tp_clock *clk, tp_clock_sample *out) {
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 5; i++) {
        uint64_t a = tp_clock_now(clk);
        struct timespec rt;
        clock_gettime(CLOCK_REALTIME, &rt);
        uint64_t mono = tp_clock_monotonic_ns();
        uint64_t b = tp_clock_now(clk);
        if (b - a < best) {
            best = b - a;
            out->trace_ns = a + (b - a) / 2;
            out->monotonic_ns = mono;
            out->realtime_ns = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
            out->uncertainty_ns = b - a;
        }
    }
}
