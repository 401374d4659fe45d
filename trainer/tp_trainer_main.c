/* trainprof-trainer: trains SimpleCNN or an MLP on synthetic digits, on the CPU device or
 * CUDA, with scenarios that reproduce common performance problems (docs/trainer.md).
 *
 * Exit codes: 0 completed, 1 runtime error, 2 usage error, 3 device out of memory,
 * 4 device unavailable (e.g. --device cuda without a GPU or without CUDA support). */
#include "tp_train.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *name;
    const char *flags; /* the plain flags it stands for, documented in docs/trainer.md */
} scenario;

static const scenario scenarios[] = {
    {"healthy", "--workers 2 --prefetch 4 --pin-memory --batch 64 --transform-cost 1"},
    {"input-bound", "--workers 0 --transform-cost 120"},
    {"pageable-copies", "--no-pin-memory --batch 512"},
    {"sync-every-step", "--read-loss-every 1"},
    {"launch-bound", "--model mlp --mlp-depth 16 --mlp-width 32 --batch 4 --transform-cost 0"},
    {"fragmentation-oom",
     "--batch-schedule 40,200,72,264,104,328,136,392,168,456,232,520 --keep-activations 6 "
     "--device-memory-limit 160M --steps 400"},
};

static void usage(FILE *f) {
    fprintf(f, "usage: trainprof-trainer [options]\n"
               "  --device cpu|cuda          where to train (default cpu)\n"
               "  --model cnn|mlp            SimpleCNN (default) or MLP\n"
               "  --mlp-width N --mlp-depth N\n"
               "  --optimizer sgd|adam       SGD with momentum (default) or Adam\n"
               "  --lr F --momentum F --weight-decay F\n"
               "  --steps N --batch N --batch-schedule N,N,...\n"
               "  --workers N --prefetch K --pin-memory | --no-pin-memory\n"
               "  --transform-cost N         resampling passes per sample (0 = no augmentation)\n"
               "  --read-latency MS          each batch waits MS ms for its input (slow storage)\n"
               "  --seed N --log-every N --read-loss-every N --eval-samples N\n"
               "  --device-memory-limit B    cap on the caching allocator (K/M/G suffixes)\n"
               "  --device-memory B          CPU device arena capacity (default 4G)\n"
               "  --kernel-threads N         threads per CPU kernel (default 1)\n"
               "  --keep-activations N       keep conv1/fc1 outputs of the last N steps alive\n"
               "  --scenario NAME            healthy, input-bound, pageable-copies,\n"
               "                             sync-every-step, launch-bound, fragmentation-oom\n"
               "  --json-summary FILE        write the run's numbers as JSON\n"
               "  --slow-rank R              the process whose RANK is R does --slow-factor\n"
               "                             times the transform work and read latency\n"
               "  --slow-factor N            default 3\n"
               "exit codes: 0 ok, 1 error, 2 usage, 3 device out of memory, 4 no device\n");
}

static int parse_u64(const char *s, uint64_t *out) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *s == '-')
        return -1;
    uint64_t mult = 1;
    if (*end == 'K' || *end == 'k')
        mult = 1ull << 10, end++;
    else if (*end == 'M' || *end == 'm')
        mult = 1ull << 20, end++;
    else if (*end == 'G' || *end == 'g')
        mult = 1ull << 30, end++;
    if (*end || v > UINT64_MAX / mult)
        return -1;
    *out = v * mult;
    return 0;
}

static int parse_int(const char *s, int lo, int hi, int *out) {
    uint64_t v;
    if (parse_u64(s, &v) || v < (uint64_t)lo || v > (uint64_t)hi)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_float(const char *s, float *out) {
    char *end;
    errno = 0;
    float v = strtof(s, &end);
    if (errno || end == s || *end || !(v >= 0.0f) || v > 1e6f)
        return -1;
    *out = v;
    return 0;
}

static int parse_schedule(const char *s, tp_train_opts *o) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", s);
    o->schedule_len = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (o->schedule_len == TP_MAX_SCHEDULE ||
            parse_int(tok, 1, 65536, &o->schedule[o->schedule_len]))
            return -1;
        o->schedule_len++;
    }
    return o->schedule_len ? 0 : -1;
}

/* Applies one option; returns the number of arguments consumed (1 or 2), or -1. */
static int apply(tp_train_opts *o, const char *flag, const char *val, const char **json) {
#define NEED_VAL                                                                                   \
    if (!val)                                                                                      \
        return -1;
    if (!strcmp(flag, "--pin-memory"))
        return o->pinned = 1, 1;
    if (!strcmp(flag, "--no-pin-memory"))
        return o->pinned = 0, 1;
    NEED_VAL
    uint64_t u;
    int ok = 0, u32;
    if (!strcmp(flag, "--device")) {
        ok = !strcmp(val, "cpu") || !strcmp(val, "cuda");
        o->device.kind = !strcmp(val, "cuda") ? TP_DEVICE_CUDA : TP_DEVICE_CPU;
    } else if (!strcmp(flag, "--model")) {
        ok = !strcmp(val, "cnn") || !strcmp(val, "mlp");
        o->model.kind = !strcmp(val, "mlp") ? TP_NET_MLP : TP_NET_CNN;
    } else if (!strcmp(flag, "--optimizer")) {
        ok = !strcmp(val, "sgd") || !strcmp(val, "adam");
        o->model.opt = !strcmp(val, "adam") ? TP_OPT_ADAM : TP_OPT_SGD;
    } else if (!strcmp(flag, "--mlp-width"))
        ok = !parse_int(val, 1, 65536, &o->model.mlp_width);
    else if (!strcmp(flag, "--mlp-depth"))
        ok = !parse_int(val, 0, 19, &o->model.mlp_depth);
    else if (!strcmp(flag, "--lr"))
        ok = !parse_float(val, &o->model.lr);
    else if (!strcmp(flag, "--momentum"))
        ok = !parse_float(val, &o->model.momentum);
    else if (!strcmp(flag, "--weight-decay"))
        ok = !parse_float(val, &o->model.weight_decay);
    else if (!strcmp(flag, "--steps"))
        ok = !parse_int(val, 1, 100000000, &o->steps);
    else if (!strcmp(flag, "--batch"))
        ok = !parse_int(val, 1, 65536, &o->batch) && ((o->schedule_len = 0), 1);
    else if (!strcmp(flag, "--batch-schedule"))
        ok = !parse_schedule(val, o);
    else if (!strcmp(flag, "--workers"))
        ok = !parse_int(val, 0, 64, &o->workers);
    else if (!strcmp(flag, "--prefetch"))
        ok = !parse_int(val, 1, 64, &o->prefetch);
    else if (!strcmp(flag, "--transform-cost"))
        ok = !parse_int(val, 0, 100000, &o->transform_cost);
    else if (!strcmp(flag, "--read-latency"))
        ok = !parse_int(val, 0, 60000, &u32) && ((o->read_latency_us = u32 * 1000), 1);
    else if (!strcmp(flag, "--seed"))
        ok = !parse_u64(val, &o->seed) && ((o->model.seed = o->seed), 1);
    else if (!strcmp(flag, "--log-every"))
        ok = !parse_int(val, 0, 100000000, &o->log_every);
    else if (!strcmp(flag, "--read-loss-every"))
        ok = !parse_int(val, 0, 100000000, &o->read_loss_every);
    else if (!strcmp(flag, "--eval-samples"))
        ok = !parse_int(val, 0, 10000000, &o->eval_samples);
    else if (!strcmp(flag, "--device-memory-limit"))
        ok = !parse_u64(val, &o->memory_limit);
    else if (!strcmp(flag, "--device-memory"))
        ok = !parse_u64(val, &u) && u >= (1u << 20) && ((o->device.memory_bytes = u), 1);
    else if (!strcmp(flag, "--kernel-threads"))
        ok = !parse_int(val, 1, 16, &o->device.kernel_threads);
    else if (!strcmp(flag, "--keep-activations"))
        ok = !parse_int(val, 0, 64, &o->model.keep_activations);
    else if (!strcmp(flag, "--json-summary"))
        ok = (*json = val) != NULL;
    else if (!strcmp(flag, "--scenario"))
        ok = 1; /* applied first, in apply_scenario */
    return ok ? 2 : -1;
#undef NEED_VAL
}

/* Applies a scenario's flags (a fixed string of "--flag value" pairs and switches). */
static int apply_scenario(tp_train_opts *o, const char *name) {
    for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++) {
        if (strcmp(name, scenarios[i].name))
            continue;
        char buf[512], *argv[32], *save = NULL;
        int argc = 0;
        const char *json = NULL;
        snprintf(buf, sizeof buf, "%s", scenarios[i].flags);
        for (char *t = strtok_r(buf, " ", &save); t && argc < 32; t = strtok_r(NULL, " ", &save))
            argv[argc++] = t;
        for (int a = 0; a < argc;) {
            int used = apply(o, argv[a], a + 1 < argc ? argv[a + 1] : NULL, &json);
            if (used < 0)
                return -1;
            a += used;
        }
        return 0;
    }
    return -1;
}

/* A straggler for multi-rank runs: every rank runs the same command line, as under torchrun,
 * and the one whose RANK (the environment variable launchers set) is `rank` does `factor`
 * times the data work of the others. */
typedef struct {
    int rank; /* -1: none */
    int factor;
} slow_rank;

/* Takes --slow-rank/--slow-factor at argv[i]; returns the arguments used (0: not one). */
static int parse_slow(int argc, char **argv, int i, slow_rank *s) {
    int is_rank = !strcmp(argv[i], "--slow-rank"), is_factor = !strcmp(argv[i], "--slow-factor");
    if (!is_rank && !is_factor)
        return 0;
    if (i + 1 >= argc || parse_int(argv[i + 1], is_rank ? 0 : 1, is_rank ? 1 << 24 : 1000,
                                   is_rank ? &s->rank : &s->factor))
        return -1;
    return 2;
}

static void apply_slow(tp_train_opts *o, const slow_rank *s) {
    const char *env = getenv("RANK");
    if (s->rank < 0 || !env || !*env || atoi(env) != s->rank)
        return;
    if (o->transform_cost > 0)
        o->transform_cost =
            o->transform_cost > 100000 / s->factor ? 100000 : o->transform_cost * s->factor;
    o->read_latency_us =
        o->read_latency_us > 60000000 / s->factor ? 60000000 : o->read_latency_us * s->factor;
}

static int parse_args(int argc, char **argv, tp_train_opts *o, const char **json) {
    slow_rank slow = {-1, 3};
    for (int i = 1; i < argc; i++) /* the scenario first, so that flags override it */
        if (!strcmp(argv[i], "--scenario")) {
            if (i + 1 >= argc || apply_scenario(o, argv[i + 1])) {
                fprintf(stderr, "trainprof-trainer: unknown scenario '%s'\n",
                        i + 1 < argc ? argv[i + 1] : "");
                return -1;
            }
        }
    for (int i = 1; i < argc;) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            exit(TP_EXIT_OK);
        }
        int used = parse_slow(argc, argv, i, &slow);
        if (!used)
            used = apply(o, argv[i], i + 1 < argc ? argv[i + 1] : NULL, json);
        if (used < 0) {
            fprintf(stderr, "trainprof-trainer: bad option or value: %s%s%s\n", argv[i],
                    i + 1 < argc ? " " : "", i + 1 < argc ? argv[i + 1] : "");
            return -1;
        }
        i += used;
    }
    if (o->log_every < 0 || o->read_loss_every < 0)
        return -1;
    apply_slow(o, &slow);
    return 0;
}

static void on_log(void *ctx, int step, double loss, double acc, double sps) {
    printf("step %6d  loss %.4f  acc %.3f  %.1f steps/s\n", step, loss, acc, sps);
    fflush(stdout);
}

static const char *scenario_of(int argc, char **argv) {
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--scenario"))
            return argv[i + 1];
    return "custom";
}

static int write_json(const char *path, const tp_train_opts *o, const tp_train_result *r,
                      const char *scen) {
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f,
            "{\n  \"exit_reason\": \"%s\",\n  \"exit_code\": %d,\n  \"scenario\": \"%s\",\n"
            "  \"device\": \"%s\",\n  \"model\": \"%s\",\n  \"params\": %zu,\n"
            "  \"steps\": %d,\n  \"steps_run\": %d,\n  \"samples\": %" PRIu64 ",\n",
            r->exit_reason, r->exit_code, scen, o->device.kind == TP_DEVICE_CUDA ? "cuda" : "cpu",
            o->model.kind == TP_NET_MLP ? "mlp" : "cnn", r->params, o->steps, r->steps_run,
            r->samples);
    fprintf(f,
            "  \"initial_loss\": %.6f,\n  \"final_loss\": %.6f,\n  \"train_accuracy\": %.6f,\n"
            "  \"eval_accuracy\": %.6f,\n  \"wall_s\": %.6f,\n  \"mean_step_ms\": %.6f,\n"
            "  \"steps_per_s\": %.6f,\n  \"samples_per_s\": %.3f,\n",
            r->initial_loss, r->final_loss, r->train_accuracy, r->eval_accuracy, r->wall_s,
            r->mean_step_ms, r->steps_per_s, r->samples_per_s);
    fprintf(f,
            "  \"data_wait_s\": %.6f,\n  \"h2d_s\": %.6f,\n  \"h2d_bytes\": %" PRIu64 ",\n"
            "  \"sync_s\": %.6f,\n  \"syncs\": %" PRIu64 ",\n  \"launch_s\": %.6f,\n"
            "  \"launches\": %" PRIu64 ",\n  \"kernel_s\": %.6f,\n  \"queue_full_s\": %.6f,\n",
            r->data_wait_s, r->h2d_s, r->h2d_bytes, r->sync_s, r->syncs, r->launch_s, r->launches,
            r->kernel_s, r->queue_full_s);
    fprintf(f,
            "  \"peak_allocated_bytes\": %" PRIu64 ",\n  \"peak_reserved_bytes\": %" PRIu64
            ",\n  \"alloc_failures\": %" PRIu64 ",\n  \"oom_requested_bytes\": %" PRIu64
            ",\n  \"oom_reserved_bytes\": %" PRIu64 ",\n  \"oom_free_bytes\": %" PRIu64
            ",\n  \"oom_largest_free_bytes\": %" PRIu64 "\n}\n",
            r->peak_allocated, r->peak_reserved, r->alloc_failures, r->oom_requested,
            r->oom_reserved, r->oom_free, r->oom_largest_free);
    return fclose(f) == 0 ? 0 : -1;
}

int main(int argc, char **argv) {
    tp_train_opts o;
    const char *json = NULL;
    tp_train_defaults(&o);
    if (parse_args(argc, argv, &o, &json)) {
        usage(stderr);
        return TP_EXIT_USAGE;
    }
    tp_train_result r;
    tp_train_run(&o, &r, on_log, NULL);
    if (r.exit_code == TP_EXIT_NO_DEVICE || r.exit_code == TP_EXIT_ERROR)
        fprintf(stderr, "trainprof-trainer: %s\n", r.message);
    printf("summary: exit=%s steps=%d loss %.4f -> %.4f train_acc=%.3f eval_acc=%.3f "
           "step=%.2fms %.1f steps/s data_wait=%.3fs h2d=%.3fs sync=%.3fs peak_mem=%.1fMiB\n",
           r.exit_reason, r.steps_run, r.initial_loss, r.final_loss, r.train_accuracy,
           r.eval_accuracy, r.mean_step_ms, r.steps_per_s, r.data_wait_s, r.h2d_s, r.sync_s,
           r.peak_reserved / 1048576.0);
    if (json && write_json(json, &o, &r, scenario_of(argc, argv))) {
        fprintf(stderr, "trainprof-trainer: cannot write %s\n", json);
        return r.exit_code ? r.exit_code : TP_EXIT_ERROR;
    }
    return r.exit_code;
}
