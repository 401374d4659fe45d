/* test_trainer_run: runs the real trainprof-trainer binary and checks its own numbers.
 *
 * usage: test_trainer_run TRAINER RECORDER.so CASE
 * CASE is one of: learns, input-bound, pageable-copies, sync-every-step, launch-bound,
 * fragmentation-oom, bad-input, cuda, nvtx. Each scenario case also runs `healthy` with
 * the same step count and asserts that the scenario's symptom shows in --json-summary
 * numbers relative to it (ratios, not absolute times). */
#include "tp_test.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *trainer, *recorder;
static char tmpdir[256];

/* Runs the trainer with args (NULL-terminated) plus --json-summary JSON; stderr goes to
 * ERR. extra_env: NULL or "NAME=VALUE" entries (NULL-terminated). Returns the exit code. */
static int run_trainer(const char *const *args, const char *json, const char *const *extra_env) {
    char errpath[300], outpath[300];
    snprintf(errpath, sizeof errpath, "%s/stderr.txt", tmpdir);
    snprintf(outpath, sizeof outpath, "%s/stdout.txt", tmpdir);
    const char *argv[64];
    int n = 0;
    argv[n++] = trainer;
    for (int i = 0; args[i] && n < 60; i++)
        argv[n++] = args[i];
    if (json) {
        argv[n++] = "--json-summary";
        argv[n++] = json;
    }
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid == 0) {
        int fe = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int fo = open(outpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fe, 2);
        dup2(fo, 1);
        for (int i = 0; extra_env && extra_env[i]; i++)
            putenv((char *)extra_env[i]);
        execv(trainer, (char *const *)argv);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f)
        return strdup("");
    char *buf = calloc(1, 1 << 22);
    size_t n = fread(buf, 1, (1 << 22) - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static char *stderr_text(void) {
    char p[300];
    snprintf(p, sizeof p, "%s/stderr.txt", tmpdir);
    return slurp(p);
}

/* The number after "key": in a JSON summary (NAN when absent). */
static double jnum(const char *json_path, const char *key) {
    char *s = slurp(json_path), want[96];
    snprintf(want, sizeof want, "\"%s\": ", key);
    char *p = strstr(s, want);
    double v = p ? strtod(p + strlen(want), NULL) : NAN;
    free(s);
    return v;
}

static int jstr_is(const char *json_path, const char *key, const char *value) {
    char *s = slurp(json_path), want[128];
    snprintf(want, sizeof want, "\"%s\": \"%s\"", key, value);
    int ok = strstr(s, want) != NULL;
    free(s);
    return ok;
}

static void json_path(char *out, size_t n, const char *name) {
    snprintf(out, n, "%s/%s.json", tmpdir, name);
}

/* Runs --scenario NAME --steps STEPS --log-every 0 (plus extra flags); 0 on success. */
static int run_scenario(const char *name, const char *steps, const char *json) {
    const char *args[] = {"--scenario",     name,  "--steps", steps, "--log-every", "0",
                          "--eval-samples", "256", NULL};
    return run_trainer(args, json, NULL);
}

static double share(const char *json, const char *key) {
    return jnum(json, key) / jnum(json, "wall_s");
}

/* ---- cases ---- */

static void test_learns(void) {
    char j1[300], j2[300];
    json_path(j1, sizeof j1, "cnn");
    json_path(j2, sizeof j2, "mlp");
    const char *cnn[] = {"--model", "cnn", "--optimizer", "sgd", "--steps", "150",
                         "--seed",  "3",   "--log-every", "50",  NULL};
    const char *mlp[] = {"--model", "mlp", "--optimizer", "adam", "--lr", "0.002", "--steps", "150",
                         "--seed",  "3",   "--log-every", "50",   NULL};
    CHECK_EQ_I(run_trainer(cnn, j1, NULL), 0);
    CHECK_EQ_I(run_trainer(mlp, j2, NULL), 0);
    const char *js[] = {j1, j2};
    for (int i = 0; i < 2; i++) {
        printf("  %s: loss %.3f -> %.3f, eval accuracy %.3f\n", i ? "mlp/adam" : "cnn/sgd",
               jnum(js[i], "initial_loss"), jnum(js[i], "final_loss"),
               jnum(js[i], "eval_accuracy"));
        CHECK(jstr_is(js[i], "exit_reason", "completed"));
        CHECK_EQ_I(jnum(js[i], "steps_run"), 150);
        CHECK(jnum(js[i], "final_loss") <= 0.5 * jnum(js[i], "initial_loss"));
        CHECK(jnum(js[i], "eval_accuracy") > 0.90);
    }
}

static void test_input_bound(void) {
    char h[300], s[300];
    json_path(h, sizeof h, "healthy");
    json_path(s, sizeof s, "input");
    CHECK_EQ_I(run_scenario("healthy", "30", h), 0);
    CHECK_EQ_I(run_scenario("input-bound", "15", s), 0);
    printf("  data wait share: healthy %.3f, input-bound %.3f\n", share(h, "data_wait_s"),
           share(s, "data_wait_s"));
    CHECK(share(s, "data_wait_s") > 0.3);
    CHECK(share(s, "data_wait_s") > 5 * share(h, "data_wait_s"));
}

static void test_pageable(void) {
    char h[300], s[300];
    json_path(h, sizeof h, "healthy");
    json_path(s, sizeof s, "pageable");
    CHECK_EQ_I(run_scenario("healthy", "30", h), 0);
    CHECK_EQ_I(run_scenario("pageable-copies", "6", s), 0);
    printf("  h2d share: healthy %.3f, pageable %.3f\n", share(h, "h2d_s"), share(s, "h2d_s"));
    CHECK(share(s, "h2d_s") > 0.4);
    CHECK(share(s, "h2d_s") > 4 * share(h, "h2d_s"));
    CHECK_EQ_U(jnum(s, "h2d_bytes"),
               6 * 512 * (784 * 4 + 4) + 20490 * 4); /* batches and parameters (not eval) */
}

static void test_sync_every_step(void) {
    char h[300], s[300];
    json_path(h, sizeof h, "healthy");
    json_path(s, sizeof s, "sync");
    CHECK_EQ_I(run_scenario("healthy", "30", h), 0);
    CHECK_EQ_I(run_scenario("sync-every-step", "30", s), 0);
    printf("  syncs: healthy %.0f, sync-every-step %.0f; sync share %.3f vs %.3f\n",
           jnum(h, "syncs"), jnum(s, "syncs"), share(h, "sync_s"), share(s, "sync_s"));
    CHECK(jnum(s, "syncs") >= 30);
    CHECK(jnum(h, "syncs") <= 4);
    CHECK(share(s, "sync_s") > 0.5);
    CHECK(share(s, "sync_s") > 2 * share(h, "sync_s"));
}

static void test_launch_bound(void) {
    char h[300], s[300];
    json_path(h, sizeof h, "healthy");
    json_path(s, sizeof s, "launch");
    CHECK_EQ_I(run_scenario("healthy", "30", h), 0);
    CHECK_EQ_I(run_scenario("launch-bound", "400", s), 0);
    double lh = jnum(h, "launches") / jnum(h, "samples");
    double ls = jnum(s, "launches") / jnum(s, "samples");
    double kh = jnum(h, "kernel_s") / jnum(h, "launches");
    double ks = jnum(s, "kernel_s") / jnum(s, "launches");
    printf("  launches/sample: healthy %.2f, launch-bound %.2f; mean kernel %.1f us vs %.1f us\n",
           lh, ls, kh * 1e6, ks * 1e6);
    printf("  device time in kernels: healthy %.2f, launch-bound %.2f of wall\n",
           share(h, "kernel_s"), share(s, "kernel_s"));
    CHECK(ls > 10 * lh);
    CHECK(ks < 0.05 * kh);
    CHECK(share(s, "kernel_s") < 0.7 * share(h, "kernel_s")); /* per-launch overhead dominates */
}

static void test_fragmentation_oom(void) {
    char s[300];
    json_path(s, sizeof s, "frag");
    const char *args[] = {"--scenario", "fragmentation-oom", NULL};
    CHECK_EQ_I(run_trainer(args, s, NULL), 3);
    char *err = stderr_text();
    CHECK(strstr(err, "device out of memory: tried to allocate") != NULL);
    CHECK(strstr(err, "fragmentation") != NULL);
    free(err);
    CHECK(jstr_is(s, "exit_reason", "oom"));
    CHECK_EQ_I(jnum(s, "exit_code"), 3);
    double req = jnum(s, "oom_requested_bytes"), fr = jnum(s, "oom_free_bytes");
    printf("  requested %.0f, free %.0f, largest free %.0f, reserved %.0f\n", req, fr,
           jnum(s, "oom_largest_free_bytes"), jnum(s, "oom_reserved_bytes"));
    CHECK(req > 0);
    CHECK(fr > req);
    CHECK(jnum(s, "oom_largest_free_bytes") < req);
    CHECK(jnum(s, "peak_reserved_bytes") <= 160.0 * 1024 * 1024);
    CHECK(jnum(s, "steps_run") >= 1);
}

static void test_bad_input(void) {
    const char *cases[][4] = {{"--no-such-flag", NULL},
                              {"--steps", "-5", NULL},
                              {"--batch", "0", NULL},
                              {"--steps", NULL},
                              {"--scenario", "nope", NULL},
                              {"--device", "tpu", NULL},
                              {"--device-memory-limit", "12Q", NULL},
                              {"--batch-schedule", "4,,x", NULL},
                              {"--lr", "nan", NULL}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = run_trainer(cases[i], NULL, NULL);
        if (rc != 2)
            fprintf(stderr, "case %zu (%s): exit %d\n", i, cases[i][0], rc);
        CHECK_EQ_I(rc, 2);
    }
    /* a limit too small for the parameters: a clean OOM, not a crash */
    char s[300];
    json_path(s, sizeof s, "tiny");
    const char *tiny[] = {"--device-memory-limit", "64K", "--steps", "2", NULL};
    CHECK_EQ_I(run_trainer(tiny, s, NULL), 3);
    CHECK(jstr_is(s, "exit_reason", "oom"));
    const char *unwritable[] = {"--steps", "1", "--eval-samples", "0", NULL};
    CHECK(run_trainer(unwritable, "/nonexistent-dir/x.json", NULL) != 0);
}

static void test_cuda(void) {
    char s[300];
    json_path(s, sizeof s, "cuda");
    const char *args[] = {"--device", "cuda", "--steps", "5", NULL};
    int rc = run_trainer(args, s, NULL);
    if (rc == 0)
        TP_SKIP("a CUDA device is present; the GPU tests cover it");
    CHECK_EQ_I(rc, 4);
    CHECK(jstr_is(s, "exit_reason", "no_device"));
    char *err = stderr_text();
    CHECK(strstr(err, "CUDA") != NULL || strstr(err, "cuda") != NULL);
    free(err);
}

static void test_nvtx(void) {
    char s[300], logp[300], env1[400], env2[400], env3[400];
    json_path(s, sizeof s, "nvtx");
    snprintf(logp, sizeof logp, "%s/rec.log", tmpdir);
    snprintf(env1, sizeof env1, "NVTX_INJECTION64_PATH=%s", recorder);
    snprintf(env2, sizeof env2, "TRAINPROF_COLLECTOR=%s", recorder);
    snprintf(env3, sizeof env3, "TP_REC_OUT=%s", logp);
    const char *env[] = {env1, env2, env3, NULL};
    const char *args[] = {"--steps", "3", "--eval-samples", "64", "--workers", "2", NULL};
    CHECK_EQ_I(run_trainer(args, s, env), 0);
    char *log = slurp(logp);
    const char *want[] = {"domain_create trainprof.trainer",
                          "push trainprof.trainer step",
                          "push trainprof.trainer dataloader wait",
                          "push trainprof.trainer host-to-device copy",
                          "push trainprof.trainer forward conv1",
                          "push trainprof.trainer forward fc",
                          "push trainprof.trainer loss",
                          "push trainprof.trainer backward conv2",
                          "push trainprof.trainer optimizer step",
                          "thread_name loader worker 0",
                          "thread_name loader worker 1",
                          "thread_name cpudev stream 0",
                          "heap_register trainprof.trainer usage=1 type=1",
                          "region_register trainprof.trainer",
                          "region_unregister trainprof.trainer",
                          "heap_unregister trainprof.trainer",
                          "act_device trainprof CPU device",
                          "act_kernel conv3x3_fwd",
                          "act_kernel sgd_momentum_step",
                          "act_memcpy kind=1 src=2 dst=3",
                          "act_memcpy kind=2 src=3 dst=2",
                          "act_sync type=3",
                          "act_device_mem alloc"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        if (!strstr(log, want[i]))
            fprintf(stderr, "missing from the recorded calls: %s\n", want[i]);
        CHECK(strstr(log, want[i]) != NULL);
    }
    free(log);
}

int main(int argc, char **argv) {
    if (argc < 4)
        TP_SKIP("usage: test_trainer_run TRAINER RECORDER CASE");
    trainer = argv[1];
    recorder = argv[2];
    snprintf(tmpdir, sizeof tmpdir, "/tmp/tp_trainer_test_%s_XXXXXX", argv[3]);
    if (!mkdtemp(tmpdir))
        return 1;
    static const struct {
        const char *name;
        void (*fn)(void);
    } cases[] = {{"learns", test_learns},
                 {"input-bound", test_input_bound},
                 {"pageable-copies", test_pageable},
                 {"sync-every-step", test_sync_every_step},
                 {"launch-bound", test_launch_bound},
                 {"fragmentation-oom", test_fragmentation_oom},
                 {"bad-input", test_bad_input},
                 {"cuda", test_cuda},
                 {"nvtx", test_nvtx}};
    int found = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (!strcmp(argv[3], cases[i].name)) {
            TP_RUN(cases[i].fn);
            found = 1;
        }
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    if (!found)
        return 2;
    return tp_test_summary();
}
