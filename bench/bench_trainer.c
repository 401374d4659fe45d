/* bench_trainer: SimpleCNN training on the CPU device, healthy vs each scenario.
 *
 * Runs the real trainprof-trainer binary once per scenario with --json-summary and prints
 * its step time, throughput and the share of wall time in the place each scenario's
 * problem shows up (data wait, host-to-device copies, syncs, tiny kernels), side by side
 * with healthy. usage: bench_trainer [TRAINER] [--steps N] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef TP_TRAINER_PATH
#define TP_TRAINER_PATH "trainprof-trainer"
#endif

static double jnum(const char *path, const char *key) {
    FILE *f = fopen(path, "r");
    if (!f)
        return NAN;
    static char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    char want[96];
    snprintf(want, sizeof want, "\"%s\": ", key);
    char *p = strstr(buf, want);
    return p ? strtod(p + strlen(want), NULL) : NAN;
}

typedef struct {
    const char *scenario;
    int steps_div; /* fewer steps where each one is long */
    int steps_mul; /* more where each one is tiny */
} run_spec;

int main(int argc, char **argv) {
    const char *trainer = TP_TRAINER_PATH;
    int steps = 100;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--steps") && i + 1 < argc)
            steps = atoi(argv[++i]);
        else
            trainer = argv[i];
    }
    if (steps < 10) {
        fprintf(stderr, "usage: bench_trainer [TRAINER] [--steps N>=10]\n");
        return 2;
    }
    static const run_spec specs[] = {{"healthy", 1, 1},         {"input-bound", 4, 1},
                                     {"pageable-copies", 8, 1}, {"sync-every-step", 1, 1},
                                     {"launch-bound", 1, 10},   {"fragmentation-oom", 1, 1}};
    double healthy_ms = NAN;
    printf("%-18s %6s %9s %9s %10s | %-6s %-6s %-6s %-6s %-10s %s\n", "scenario", "steps",
           "step ms", "x healthy", "samples/s", "wait", "h2d", "sync", "queue", "kernel us",
           "exit");
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        const run_spec *s = &specs[i];
        int n = steps / s->steps_div * s->steps_mul;
        char json[128], cmd[1024];
        snprintf(json, sizeof json, "/tmp/bench_trainer_%s.json", s->scenario);
        /* fragmentation-oom keeps its own step count: it runs until the allocator fails */
        int own_steps = !strcmp(s->scenario, "fragmentation-oom");
        char steps_arg[32] = "";
        if (!own_steps)
            snprintf(steps_arg, sizeof steps_arg, "--steps %d", n);
        snprintf(cmd, sizeof cmd,
                 "'%s' --scenario %s --log-every 0 --eval-samples 0 %s --json-summary %s "
                 ">/dev/null 2>&1",
                 trainer, s->scenario, steps_arg, json);
        int rc = system(cmd);
        double wall = jnum(json, "wall_s"), ms = jnum(json, "mean_step_ms");
        if (i == 0)
            healthy_ms = ms;
        double launches = jnum(json, "launches");
        printf(
            "%-18s %6.0f %9.2f %9.2f %10.0f | %5.1f%% %5.1f%% %5.1f%% %5.1f%% %10.1f %s(rc %d)\n",
            s->scenario, jnum(json, "steps_run"), ms, ms / healthy_ms, jnum(json, "samples_per_s"),
            100 * jnum(json, "data_wait_s") / wall, 100 * jnum(json, "h2d_s") / wall,
            100 * jnum(json, "sync_s") / wall, 100 * jnum(json, "queue_full_s") / wall,
            1e6 * jnum(json, "kernel_s") / launches, jnum(json, "exit_code") == 3 ? "oom " : "",
            rc == -1 ? -1 : (rc >> 8) & 0xff);
    }
    printf("wait/h2d/sync/queue: share of wall time the training thread spent waiting for data, "
           "in host-to-device copies, in syncs, blocked on a full device queue; kernel us: mean "
           "device time per launch\n");
    return 0;
}
