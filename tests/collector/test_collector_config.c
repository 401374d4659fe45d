/* test_collector_config: TRAINPROF_* parsing, rank detection and trace naming. */
#include "tp_collector_config.h"
#include "tp_nvtx_hooks.h"
#include "tp_test.h"

static const char *const *g_env;

static const char *fake_getenv(const char *name) {
    size_t n = strlen(name);
    for (int i = 0; g_env && g_env[i]; i++)
        if (!strncmp(g_env[i], name, n) && g_env[i][n] == '=')
            return g_env[i] + n + 1;
    return NULL;
}

static void load(tp_collector_config *c, const char *const *env) {
    g_env = env;
    tp_collector_config_load(c, fake_getenv);
}

static void test_defaults(void) {
    tp_collector_config c;
    load(&c, NULL);
    CHECK_EQ_I(c.stacks, TP_STACKS_API);
    CHECK_EQ_I(c.capture, TP_CAPTURE_ALWAYS);
    CHECK_EQ_U(c.buffer_bytes, 64u << 20);
    CHECK_EQ_I(c.rank, -1);
    CHECK_EQ_I(c.fork_trace, 1);
    CHECK_STR(c.codec, ""); /* the writer's default */
    CHECK_STR(c.error, "");
    char p[256];
    CHECK_EQ_I(tp_collector_config_path(&c, 42, "/usr/bin/python3", p, sizeof p), 0);
    CHECK_STR(p, "./python3-42.tprof");
}

static void test_options(void) {
    const char *env[] = {"TRAINPROF_STACKS=all",    "TRAINPROF_CAPTURE=nvtx:train_step@torch",
                         "TRAINPROF_BUFFER_MB=8",   "TRAINPROF_FORK=none",
                         "TRAINPROF_NO_CUDA=1",     "OMPI_COMM_WORLD_RANK=5",
                         "OMPI_COMM_WORLD_SIZE=16", NULL};
    tp_collector_config c;
    load(&c, env);
    CHECK_EQ_I(c.stacks, TP_STACKS_ALL);
    CHECK_EQ_I(c.capture, TP_CAPTURE_NVTX);
    CHECK_STR(c.capture_range, "train_step");
    CHECK_STR(c.capture_domain, "torch");
    CHECK_EQ_U(c.buffer_bytes, 8u << 20);
    CHECK_EQ_I(c.fork_trace, 0);
    CHECK_EQ_I(c.no_cuda, 1);
    CHECK_EQ_I(c.rank, 5);
    CHECK_EQ_I(c.world_size, 16);
    char p[256];
    CHECK_EQ_I(tp_collector_config_path(&c, 7, "train", p, sizeof p), 0);
    CHECK_STR(p, "./train-rank5-7.tprof");
}

static void test_time_window_and_errors(void) {
    const char *env[] = {"TRAINPROF_DELAY_S=1.5", "TRAINPROF_DURATION_S=2", "TRAINPROF_STACKS=x",
                         NULL};
    tp_collector_config c;
    load(&c, env);
    CHECK_EQ_I(c.capture, TP_CAPTURE_TIME);
    CHECK_EQ_U(c.delay_ns, 1500000000u);
    CHECK_EQ_U(c.duration_ns, 2000000000u);
    CHECK_EQ_I(c.stacks, TP_STACKS_API); /* a bad value keeps the default */
    CHECK(strstr(c.error, "TRAINPROF_STACKS=x") != NULL);
    const char *bad[] = {"TRAINPROF_CAPTURE=cuda:x", "TRAINPROF_BUFFER_MB=-3", NULL};
    load(&c, bad);
    CHECK_EQ_I(c.capture, TP_CAPTURE_ALWAYS);
    CHECK_EQ_U(c.buffer_bytes, 64u << 20);
    CHECK(c.error[0] != 0);
}

/* TRAINPROF_CODEC picks the chunk codec by the writer's names; an unknown one is said once
 * and the writer's default is kept. */
static void test_codec(void) {
    const char *zstd[] = {"TRAINPROF_CODEC=zstd", NULL};
    tp_collector_config c;
    load(&c, zstd);
    CHECK_STR(c.codec, "zstd");
    CHECK_STR(c.error, "");
    const char *bad[] = {"TRAINPROF_CODEC=brotli", NULL};
    load(&c, bad);
    CHECK_STR(c.codec, "");
    CHECK(strstr(c.error, "TRAINPROF_CODEC=brotli") != NULL);
}

/* TRAINPROF_DRAIN_NICE: 0 (one drain at the program's priority) unless set to 0-19; any
 * other value is said and the default kept. */
static void test_drain_nice(void) {
    tp_collector_config c;
    load(&c, NULL);
    CHECK_EQ_I(c.drain_nice, 0);
    const char *seven[] = {"TRAINPROF_DRAIN_NICE=7", NULL};
    load(&c, seven);
    CHECK_EQ_I(c.drain_nice, 7);
    CHECK_STR(c.error, "");
    const char *bad[] = {"TRAINPROF_DRAIN_NICE=20", NULL};
    load(&c, bad);
    CHECK_EQ_I(c.drain_nice, 0);
    CHECK(strstr(c.error, "TRAINPROF_DRAIN_NICE=20") != NULL);
}

/* -o applies to the target process only; its children go next to it under their own name. */
static void test_output_for_children(void) {
    const char *env[] = {"TRAINPROF_OUTPUT=/data/run/out.tprof", "TRAINPROF_TARGET_PID=100",
                         "SLURM_PROCID=2", NULL};
    tp_collector_config c;
    load(&c, env);
    char p[256];
    CHECK_EQ_I(tp_collector_config_path(&c, 100, "app", p, sizeof p), 0);
    CHECK_STR(p, "/data/run/out.tprof");
    CHECK_EQ_I(tp_collector_config_path(&c, 101, "app", p, sizeof p), 0);
    CHECK_STR(p, "/data/run/app-rank2-101.tprof");
    CHECK_EQ_I(tp_collector_config_path(&c, 101, "app", p, 8), -1);
}

/* One recording: once the started process named its trace, every other process of the
 * recording writes "<main stem>.<pid>.tprof" beside it; the id and the exec generation come
 * from the environment, the generation only for the pid it names. */
static void test_recording_layout(void) {
    const char *env[] = {"TRAINPROF_TARGET_PID=100", "TRAINPROF_MAIN_TRACE=/data/run/app-100.tprof",
                         "TRAINPROF_JOB_ID=00c0ffee12345678", "TRAINPROF_EXEC_GEN=100:2", NULL};
    tp_collector_config c;
    load(&c, env);
    CHECK_EQ_U(c.job_id, 0x00c0ffee12345678ull);
    CHECK_EQ_U(tp_collector_config_exec_gen(&c, 100), 2);
    CHECK_EQ_U(tp_collector_config_exec_gen(&c, 101), 0); /* a fork child: generation 0 */
    char p[256];
    CHECK_EQ_I(tp_collector_config_path(&c, 100, "app", p, sizeof p), 0);
    CHECK_STR(p, "./app-100.tprof");
    CHECK_EQ_I(tp_collector_config_path(&c, 4242, "python3", p, sizeof p), 0);
    CHECK_STR(p, "/data/run/app-100.4242.tprof");
    CHECK_EQ_I(tp_collector_config_next_gen(100, 2, p, sizeof p), 0);
    CHECK_STR(p, "100:3");
    CHECK_EQ_I(tp_collector_config_next_gen(100, 2, p, 5), -1);
    const char *bad[] = {"TRAINPROF_JOB_ID=xyz", "TRAINPROF_EXEC_GEN=:3", NULL};
    load(&c, bad);
    CHECK_EQ_U(c.job_id, 0);
    CHECK_EQ_U(tp_collector_config_exec_gen(&c, 0), 0);
}

/* The reservation `record` made at -o, --force, the test drain hook, names taken by others. */
static void test_output_reservation(void) {
    const char *env[] = {"TRAINPROF_OUTPUT_ID=2049:123456", "TRAINPROF_FORCE=1",
                         "TRAINPROF_DRAIN=exit", NULL};
    tp_collector_config c;
    load(&c, env);
    CHECK_EQ_U(c.output_dev, 2049);
    CHECK_EQ_U(c.output_ino, 123456);
    CHECK_EQ_I(c.force, 1);
    CHECK_EQ_I(c.drain_at_exit, 1);
    CHECK_STR(c.error, "");
    load(&c, NULL);
    CHECK_EQ_U(c.output_ino, 0);
    CHECK_EQ_I(c.force + c.drain_at_exit, 0);
    const char *bad[] = {"TRAINPROF_OUTPUT_ID=12:x", NULL};
    load(&c, bad);
    CHECK_EQ_U(c.output_ino, 0);
    CHECK(strstr(c.error, "TRAINPROF_OUTPUT_ID=12:x") != NULL);
    char p[64];
    CHECK_EQ_I(tp_collector_config_alt_path("/d/app-7.tprof", 2, p, sizeof p), 0);
    CHECK_STR(p, "/d/app-7.2.tprof");
    CHECK_EQ_I(tp_collector_config_alt_path("/d/app-7.tprof", 12, p, 8), -1);
}

static void test_wide_to_utf8(void) {
    char buf[16];
    CHECK_EQ_U(tp_nvtx_wide_to_utf8(L"a\u00fc\u20ac\U0001F600", buf, sizeof buf), 10);
    CHECK_STR(buf, "a\xc3\xbc\xe2\x82\xac\xf0\x9f\x98\x80");
    CHECK_EQ_U(tp_nvtx_wide_to_utf8(L"\u20ac\u20ac", buf, 5), 3); /* cut at a boundary */
    CHECK_STR(buf, "\xe2\x82\xac");
}

int main(void) {
    TP_RUN(test_defaults);
    TP_RUN(test_options);
    TP_RUN(test_time_window_and_errors);
    TP_RUN(test_codec);
    TP_RUN(test_drain_nice);
    TP_RUN(test_output_for_children);
    TP_RUN(test_recording_layout);
    TP_RUN(test_output_reservation);
    TP_RUN(test_wide_to_utf8);
    return tp_test_summary();
}
