/* bench_collector_nvtx: what one NVTX push+pop pair costs the application, side by side:
 * no tool loaded / the collector without stacks / the collector with stacks (--stacks all,
 * a 20-frame stack at every push). Goals: <= 40 ns and <= 400 ns per pair.
 *
 * Each setup runs in a fresh child process (NVTX binds its tool once per process): the child
 * recurses to a depth of 20 frames and times batches of pairs; batches are small enough for
 * one staging ring and separated by a pause, so the writer drains between them and nothing is
 * dropped (the parent checks the trace: a dropped record is cheaper than a written one and
 * would flatter the figure). Reported: median and best batch, ns per pair.
 *
 * usage: bench_collector_nvtx [COLLECTOR.so]   (default: ../lib/ next to this program) */
#include <limits.h>
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

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The measured loop, called at the bottom of a DEPTH-frame recursion. */
__attribute__((noinline)) static void measure(void) {
    static double per_pair[BATCHES];
    for (int i = 0; i < 5000; i++) { /* warm: caches, first-event setup */
        nvtxRangePushA("warm");
        nvtxRangePop();
    }
    usleep(50000);
    for (int b = 0; b < BATCHES; b++) {
        uint64_t t0 = now_ns();
        for (int i = 0; i < BATCH; i++) {
            nvtxRangePushA("bench-range");
            nvtxRangePop();
        }
        per_pair[b] = (double)(now_ns() - t0) / BATCH;
        usleep(3000); /* let the drain empty the ring */
    }
    qsort(per_pair, BATCHES, sizeof per_pair[0], cmp_double);
    printf("%.2f %.2f\n", per_pair[BATCHES / 2], per_pair[0]);
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
static int run_child(const char *self, const char *lib, const char *stacks, const char *live,
                     const char *trace, double *median, double *best) {
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
            if (live)
                setenv("TRAINPROF_LIVE", live, 1);
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
    return sscanf(line, "%lf %lf", median, best) == 2 ? 0 : -1;
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

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--child"))
        return recurse(DEPTH);
    char lib[PATH_MAX], self[PATH_MAX], trace[64];
    if (find_collector(argc, argv, lib) != 0 || !realpath("/proc/self/exe", self)) {
        fprintf(stderr, "bench_collector_nvtx: collector library not found\n");
        return 1;
    }
    snprintf(trace, sizeof trace, "/tmp/bench-collector-nvtx-%d.tprof", (int)getpid());
    static const struct {
        const char *name, *stacks;
        int tool;
        double goal;
        const char *live; /* TRAINPROF_LIVE: `record --idle` records nothing until asked */
    } setups[] = {{"no tool loaded", "none", 0, 0, NULL},
                  {"collector, --idle (unwatched)", "none", 1, 40, "idle"},
                  {"collector, no stacks", "none", 1, 40, NULL},
                  {"collector, stacks (20 frames)", "all", 1, 400, NULL}};
    printf("NVTX push+pop pair, %d batches of %d pairs, %d-frame stack\n", BATCHES, BATCH, DEPTH);
    printf("%-32s %10s %10s %8s %12s %8s\n", "setup", "median ns", "best ns", "goal", "pushes",
           "dropped");
    int fail = 0;
    for (size_t i = 0; i < sizeof setups / sizeof setups[0]; i++) {
        double med = 0, best = 0;
        uint64_t pushes = 0, dropped = 0;
        unlink(trace);
        if (run_child(self, setups[i].tool ? lib : NULL, setups[i].stacks, setups[i].live, trace,
                      &med, &best)) {
            fprintf(stderr, "bench_collector_nvtx: %s: child failed\n", setups[i].name);
            return 1;
        }
        if (setups[i].tool)
            trace_counts(trace, &pushes, &dropped);
        char goal[16] = "-";
        if (setups[i].goal > 0)
            snprintf(goal, sizeof goal, "<= %.0f", setups[i].goal);
        printf("%-32s %10.1f %10.1f %8s %12llu %8llu\n", setups[i].name, med, best, goal,
               (unsigned long long)pushes, (unsigned long long)dropped);
        fail |= setups[i].goal > 0 && med > setups[i].goal;
    }
    unlink(trace);
    return fail;
}
