/* bench_collector_nvtx: what one NVTX push+pop pair costs the application, side by side:
 * no tool loaded / the collector without stacks / the collector with stacks (--stacks all,
 * a 20-frame stack at every push). Goals: <= 40 ns and <= 400 ns per pair.
 *
 * Each setup runs in a fresh child process (NVTX binds its tool once per process): the child
 * recurses to a depth of 20 frames and times batches of pairs; batches are small enough for
 * one staging ring and separated by a pause, so the writer drains between them and nothing is
 * dropped (the parent checks the trace: a dropped record is cheaper than a written one and
 * would flatter the figure). Reported: median and best batch, ns per pair, and the median
 * batch in thread CPU time (which a loaded machine inflates less: time spent preempted is not
 * counted; the goal is judged on the wall-clock median).
 *
 * With a second library (e.g. the collector of an older build), its setups run too, in the
 * same invocation: ROUNDS rounds, each running every setup once in turn, so that the load of
 * a shared machine hits all setups alike; a setup's figure is the median of its rounds'
 * medians (and the best batch of all rounds).
 *
 * usage: bench_collector_nvtx [COLLECTOR.so [BASELINE.so]]  (default: ../lib/ next to this
 *        program) */
#include <limits.h>
#include <stdint.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tp_reader.h"

#define BATCH 4000
#define BATCHES 150
#define DEPTH 20
#define ROUNDS 5

static uint64_t clock_ns(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The measured loop, called at the bottom of a DEPTH-frame recursion. */
__attribute__((noinline)) static void measure(void) {
    static double per_pair[BATCHES], cpu_pair[BATCHES];
    for (int i = 0; i < 5000; i++) { /* warm: caches, first-event setup */
        nvtxRangePushA("warm");
        nvtxRangePop();
    }
    usleep(50000);
    for (int b = 0; b < BATCHES; b++) {
        uint64_t t0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
        for (int i = 0; i < BATCH; i++) {
            nvtxRangePushA("bench-range");
            nvtxRangePop();
        }
        cpu_pair[b] = (double)(clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0) / BATCH;
        per_pair[b] = (double)(clock_ns(CLOCK_MONOTONIC) - t0) / BATCH;
        usleep(3000); /* let the drain empty the ring */
    }
    qsort(per_pair, BATCHES, sizeof per_pair[0], cmp_double);
    qsort(cpu_pair, BATCHES, sizeof cpu_pair[0], cmp_double);
    printf("%.2f %.2f %.2f\n", per_pair[BATCHES / 2], per_pair[0], cpu_pair[BATCHES / 2]);
}

__attribute__((noinline)) static int recurse(int depth) {
    if (depth <= 1) {
        measure();
        return 0;
    }
    return recurse(depth - 1) + depth; /* not a tail call: keeps the frames */
}

static int find_collector(int argc, char **argv, char *out) {
    if (argc > 1)
        return realpath(argv[1], out) ? 0 : -1;
    char exe[PATH_MAX], cand[PATH_MAX + 64];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return -1;
    exe[n] = 0;
    *strrchr(exe, '/') = 0;
    snprintf(cand, sizeof cand, "%s/../lib/libtrainprof-collector.so", exe);
    return realpath(cand, out) ? 0 : -1;
}

/* Runs this program as a child in `mode`; reads "median best" from it. */
static int run_child(const char *self, const char *lib, const char *stacks, const char *trace,
                     double *median, double *best, double *cpu) {
    int p[2];
    if (pipe(p) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(p[1], 1);
        close(p[0]);
        if (lib) {
            char buf[32];
            setenv("NVTX_INJECTION64_PATH", lib, 1);
            setenv("TRAINPROF_OUTPUT", trace, 1);
            snprintf(buf, sizeof buf, "%d", (int)getpid());
            setenv("TRAINPROF_TARGET_PID", buf, 1);
            setenv("TRAINPROF_STACKS", stacks, 1);
        }
        execl(self, self, "--child", (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    char line[128] = "";
    ssize_t n = read(p[0], line, sizeof line - 1);
    close(p[0]);
    int st;
    waitpid(pid, &st, 0);
    line[n > 0 ? n : 0] = 0;
    return sscanf(line, "%lf %lf %lf", median, best, cpu) == 3 ? 0 : -1;
}

static void trace_counts(const char *path, uint64_t *pushes, uint64_t *dropped) {
    tp_reader *r;
    *pushes = *dropped = 0;
    if (tp_reader_open(path, &r) != TP_OK)
        return;
    *pushes = tp_reader_info(r)->records[TP_REC_NVTX_PUSH];
    *dropped = tp_reader_info(r)->dropped_total;
    tp_reader_close(r);
}

typedef struct {
    const char *name, *stacks;
    int lib; /* 0: none, 1: the collector, 2: the baseline */
    double goal;
    double med[ROUNDS], cpu[ROUNDS], best;
    uint64_t pushes, dropped;
} setup;

static double median_of(double *v, int n) {
    qsort(v, (size_t)n, sizeof v[0], cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One child for setup `s` in round `r`; keeps the smallest push count and the largest drop
 * count seen (every run must write every push). */
static int run_setup(setup *s, int r, const char *self, const char *const libs[3],
                     const char *trace) {
    double med = 0, best = 0, cpu = 0;
    unlink(trace);
    if (run_child(self, libs[s->lib], s->stacks, trace, &med, &best, &cpu)) {
        fprintf(stderr, "bench_collector_nvtx: %s: child failed\n", s->name);
        return -1;
    }
    s->med[r] = med;
    s->cpu[r] = cpu;
    s->best = r == 0 || best < s->best ? best : s->best;
    if (s->lib) {
        uint64_t pushes, dropped;
        trace_counts(trace, &pushes, &dropped);
        s->pushes = r == 0 || pushes < s->pushes ? pushes : s->pushes;
        s->dropped = dropped > s->dropped ? dropped : s->dropped;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--child"))
        return recurse(DEPTH);
    char lib[PATH_MAX], base[PATH_MAX], self[PATH_MAX], trace[64];
    if (find_collector(argc, argv, lib) != 0 || !realpath("/proc/self/exe", self) ||
        (argc > 2 && !realpath(argv[2], base))) {
        fprintf(stderr, "bench_collector_nvtx: collector library not found\n");
        return 1;
    }
    const char *const libs[3] = {NULL, lib, argc > 2 ? base : NULL};
    snprintf(trace, sizeof trace, "/tmp/bench-collector-nvtx-%d.tprof", (int)getpid());
    setup setups[] = {
        {.name = "no tool loaded", .stacks = "none"},
        {.name = "collector, no stacks", .stacks = "none", .lib = 1, .goal = 40},
        {.name = "collector, stacks (20 frames)", .stacks = "all", .lib = 1, .goal = 400},
        {.name = "baseline, no stacks", .stacks = "none", .lib = 2},
        {.name = "baseline, stacks (20 frames)", .stacks = "all", .lib = 2}};
    int n = argc > 2 ? 5 : 3;
    printf("NVTX push+pop pair, %d batches of %d pairs, %d-frame stack, %d rounds\n", BATCHES,
           BATCH, DEPTH, ROUNDS);
    if (argc > 2)
        printf("collector: %s\nbaseline:  %s\n", lib, base);
    for (int r = 0; r < ROUNDS; r++)
        for (int i = 0; i < n; i++)
            if (run_setup(&setups[i], r, self, libs, trace) != 0)
                return 1;
    unlink(trace);
    printf("%-32s %10s %10s %10s %8s %12s %8s\n", "setup", "median ns", "best ns", "cpu ns", "goal",
           "pushes", "dropped");
    int fail = 0;
    for (int i = 0; i < n; i++) {
        setup *s = &setups[i];
        double med = median_of(s->med, ROUNDS);
        char goal[16] = "-";
        if (s->goal > 0)
            snprintf(goal, sizeof goal, "<= %.0f", s->goal);
        printf("%-32s %10.1f %10.1f %10.1f %8s %12llu %8llu\n", s->name, med, s->best,
               median_of(s->cpu, ROUNDS), goal, (unsigned long long)s->pushes,
               (unsigned long long)s->dropped);
        fail |= s->goal > 0 && med > s->goal;
    }
    return fail;
}
