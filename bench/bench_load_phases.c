/* bench_load_phases: loads one .tprof trace into a model as `trainprof report` does (the
 * native loader, then tp_model_finish, with the CLI's malloc settings) and prints, per phase,
 * the page faults (minor), wall, user and system time and the peak RSS so far, from
 * getrusage, and the calling thread's own CPU time ("main": with both cores busy, the phase's
 * critical path on an idle machine, since the other thread's pieces take less), and its own
 * page faults. Page faults
 * are the stable figure on a loaded machine (docs/PERFORMANCE.md, "Native report", sixth
 * round). Usage: bench_load_phases TRACE.tprof [ROUNDS] */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "tp_load_native.h"
#include "tp_mem.h"
#include "tp_model.h"

typedef struct {
    long minflt, maxrss_kb, main_flt;
    double wall, user, sys, main;
} phase_at;

static phase_at now(void) {
    struct rusage u, t;
    struct timespec ts, th;
    getrusage(RUSAGE_SELF, &u);
    getrusage(RUSAGE_THREAD, &t);
    clock_gettime(CLOCK_MONOTONIC, &ts);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &th);
    return (phase_at){u.ru_minflt,
                      u.ru_maxrss,
                      t.ru_minflt,
                      (double)ts.tv_sec + (double)ts.tv_nsec / 1e9,
                      (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec / 1e6,
                      (double)u.ru_stime.tv_sec + (double)u.ru_stime.tv_usec / 1e6,
                      (double)th.tv_sec + (double)th.tv_nsec / 1e9};
}

static void print_phase(const char *what, phase_at a, phase_at b) {
    printf("%-7s minflt %7ld (main %6ld)  wall %.3f s  user %.3f s  sys %.3f s  main %.3f s  peak "
           "RSS %ld MB\n",
           what, b.minflt - a.minflt, b.main_flt - a.main_flt, b.wall - a.wall, b.user - a.user,
           b.sys - a.sys, b.main - a.main, b.maxrss_kb / 1024);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_load_phases TRACE.tprof [ROUNDS]\n");
        return 2;
    }
    tp_mem_tune_process(); /* the heap the CLI has */
    int rounds = argc > 2 ? atoi(argv[2]) : 1;
    for (int i = 0; i < rounds; i++) {
        phase_at t0 = now();
        tp_model *m = tp_model_new();
        char err[512];
        if (tp_load_native_file(m, argv[1], err, sizeof err) != TP_OK) {
            fprintf(stderr, "bench_load_phases: %s\n", err);
            tp_model_close(m);
            return 1;
        }
        phase_at t1 = now();
        tp_model_finish(m);
        phase_at t2 = now();
        print_phase("load", t0, t1);
        print_phase("finish", t1, t2);
        tp_model_close(m);
    }
    return 0;
}
