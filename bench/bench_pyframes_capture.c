/* bench_pyframes_capture: the collector's stack capture timed inside a CPython process, for
 * bench_collector_pyframes.py. A shared library the benchmark's Python child loads with
 * ctypes and calls at the bottom of its Python frames; it holds the collector's code
 * (tp_collector_core) and times, in a loop, exactly what a hook does:
 *   bench_walk(n)    tp_pyframes_walk alone (the Python frames)
 *   bench_capture(n) tp_stacks_capture: unwind + walk + hash + the thread's stack cache (hit)
 *   bench_frames()   how many Python frames the walk sees here
 * Each returns ns per call (best of 5 rounds of n calls; CLOCK_MONOTONIC). */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "tp_pyframes.h"
#include "tp_stacks.h"

double bench_walk(int n);
double bench_capture(int n);
int bench_frames(void);

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

int bench_frames(void) {
    tp_pyframe fr[TP_PYFRAMES_MAX];
    uint64_t h;
    return (int)tp_pyframes_walk(fr, TP_PYFRAMES_MAX, &h);
}

double bench_walk(int n) {
    tp_pyframe fr[TP_PYFRAMES_MAX];
    uint64_t h, sink = 0;
    double best = 1e18;
    for (int round = 0; round < 5; round++) {
        uint64_t t0 = now_ns();
        for (int i = 0; i < n; i++)
            sink += tp_pyframes_walk(fr, TP_PYFRAMES_MAX, &h) + h;
        double per = (double)(now_ns() - t0) / n;
        best = per < best ? per : best;
    }
    return sink ? best : -1;
}

double bench_capture(int n) {
    static tp_writer *w;
    static tp_stack_cache cache;
    char path[64];
    if (!w) {
        snprintf(path, sizeof path, "/tmp/bench-pyframes-%d.tprof", (int)getpid());
        if (tp_writer_open(path, NULL, &w) != TP_OK)
            return -1;
        unlink(path);
        tp_stacks_init(w, (const void *)bench_capture, NULL, NULL);
    }
    uint64_t sink = 0;
    double best = 1e18;
    for (int round = 0; round < 5; round++) {
        uint64_t t0 = now_ns();
        for (int i = 0; i < n; i++)
            sink += tp_stacks_capture(w, &cache);
        double per = (double)(now_ns() - t0) / n;
        best = per < best ? per : best;
    }
    return sink ? best : -1;
}
