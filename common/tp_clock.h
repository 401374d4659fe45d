/* tp_clock: the trace clock, nanoseconds on one clock per process.
 *
 * Reading CLOCK_MONOTONIC costs ~49 ns under KVM (shared/notes/measurements.md), more than the
 * whole budget of an NVTX push+pop. Where the TSC is invariant (constant_tsc + nonstop_tsc) we
 * read it (~11 ns) and convert with a multiply and shift calibrated against CLOCK_MONOTONIC,
 * so trace nanoseconds stay close to CLOCK_MONOTONIC and processes on one host line up.
 * Elsewhere we fall back to CLOCK_MONOTONIC itself. The struct is plain so that
 * tp_clock_now() inlines into hot paths; it holds no global state. */
#ifndef TP_CLOCK_H
#define TP_CLOCK_H

#include <stdint.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define TP_CLOCK_HAVE_TSC 1
#else
#define TP_CLOCK_HAVE_TSC 0
#endif

typedef struct {
    int use_tsc;       /* 1: TSC path; 0: CLOCK_MONOTONIC */
    uint64_t base_tsc; /* TSC at calibration */
    uint64_t base_ns;  /* CLOCK_MONOTONIC ns at calibration */
    uint64_t mult;     /* ns per tick, 32.32 fixed point */
    uint64_t tsc_hz;   /* measured TSC frequency (0 on the fallback path) */
} tp_clock;

/* A pairing of the trace clock with the system clocks, taken as close together as the
 * machine allows; written into traces so several processes or ranks can be aligned. */
typedef struct {
    uint64_t trace_ns;
    uint64_t monotonic_ns;
    uint64_t realtime_ns;
    uint64_t uncertainty_ns; /* width of the bracketing window */
} tp_clock_sample;

/* Calibrates `clk` (about `calib_ms` milliseconds of spinning; 0 picks 2 ms).
 * Uses the TSC only when /proc/cpuinfo says it is invariant, unless force_monotonic. */
void tp_clock_init(tp_clock *clk, unsigned calib_ms, int force_monotonic);

/* Nanoseconds of CLOCK_MONOTONIC (the slow, exact path). */
static inline uint64_t tp_clock_monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#if TP_CLOCK_HAVE_TSC
/* Current trace time from the TSC: only when clk->use_tsc (for callers that checked it once
 * for many calls). */
static inline uint64_t tp_clock_now_tsc(const tp_clock *clk) {
    uint64_t d = __rdtsc() - clk->base_tsc;
    return clk->base_ns + (uint64_t)(((unsigned __int128)d * clk->mult) >> 32);
}
#endif

/* Current trace time in nanoseconds. */
static inline uint64_t tp_clock_now(const tp_clock *clk) {
#if TP_CLOCK_HAVE_TSC
    if (clk->use_tsc)
        return tp_clock_now_tsc(clk);
#endif
    return tp_clock_monotonic_ns();
}

/* Pairs the trace clock with CLOCK_MONOTONIC and CLOCK_REALTIME (best of a few tries). */
void tp_clock_sample_now(const tp_clock *clk, tp_clock_sample *out);

/* 1 when /proc/cpuinfo lists constant_tsc and nonstop_tsc. */
int tp_clock_tsc_invariant(void);

#endif
