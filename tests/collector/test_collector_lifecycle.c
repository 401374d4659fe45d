/* test_collector_lifecycle: however nvtx_app ends, its trace is readable and holds what it
 * should: a program that never calls NVTX, fork (one trace per process, or none for the
 * child), SIGTERM (to the program, and forwarded by `trainprof record`), SIGKILL and _exit
 * (the periodic drain's chunks survive), buffer exhaustion (read + dropped == written),
 * --capture nvtx:NAME, and bad command lines. */
#include "tc_run.h"
#include "tp_test.h"

static tc_run R;

static tp_reader *open_only_trace(tc_run *r, int expect_index) {
    char path[1024];
    tp_reader *rd = NULL;
    if (tc_trace(r, 0, path, sizeof path) != 1 || tp_reader_open(path, &rd) != TP_OK)
        return NULL;
    if (tp_reader_integrity(rd)->index_ok != expect_index) {
        tp_reader_close(rd);
        return NULL;
    }
    return rd;
}

static void test_plain_program(void) {
    const char *args[] = {"plain", NULL};
    CHECK_EQ_I(tc_record(&R, NULL, NULL, args), 0);
    tp_reader *rd = open_only_trace(&R, 1);
    CHECK(rd != NULL);
    const tp_rec_hdr *const *recs;
    CHECK_EQ_U(tp_reader_meta(rd, TP_REC_PROCESS, &recs), 1);
    CHECK(tp_reader_meta(rd, TP_REC_MODULE, &recs) >= 2);
    CHECK_EQ_I(tc_count(rd, TP_REC_NVTX_PUSH, NULL), 0);
    tp_reader_close(rd);
    tc_cleanup(&R);
}

static uint32_t process_pid(tp_reader *rd, uint32_t *ppid) {
    const tp_rec_hdr *const *recs;
    if (tp_reader_meta(rd, TP_REC_PROCESS, &recs) != 1)
        return 0;
    *ppid = ((const tp_rec_process *)recs[0])->ppid;
    return ((const tp_rec_process *)recs[0])->pid;
}

static void test_fork(void) {
    const char *opts[] = {"-o", "parent.tprof", NULL};
    const char *args[] = {"fork", NULL};
    CHECK_EQ_I(tc_record(&R, NULL, opts, args), 0);
    char a[1024], b[1024];
    CHECK_EQ_I(tc_trace(&R, 0, a, sizeof a), 2);
    tc_trace(&R, 1, b, sizeof b);
    /* Sorted: "nvtx_app-<childpid>.tprof" < "parent.tprof". */
    CHECK(strstr(a, "/nvtx_app-") && strstr(b, "/parent.tprof"));
    tp_reader *child, *parent;
    CHECK_OK(tp_reader_open(a, &child));
    CHECK_OK(tp_reader_open(b, &parent));
    CHECK(tp_reader_integrity(child)->index_ok && tp_reader_integrity(parent)->index_ok);
    CHECK_EQ_I(tc_count(parent, TP_REC_NVTX_PUSH, "before-fork"), 1);
    CHECK_EQ_I(tc_count(parent, TP_REC_NVTX_PUSH, "in-parent"), 1);
    CHECK_EQ_I(tc_count(parent, TP_REC_NVTX_PUSH, "in-child"), 0);
    CHECK_EQ_I(tc_count(child, TP_REC_NVTX_PUSH, "in-child"), 1);
    CHECK_EQ_I(tc_count(child, TP_REC_NVTX_PUSH, "before-fork"), 0);
    CHECK_EQ_I(tc_count(child, TP_REC_NVTX_PUSH, "in-parent"), 0);
    /* The child's trace names the domain created before the fork. */
    const tp_rec_hdr *const *doms;
    size_t nd = tp_reader_meta(child, TP_REC_DOMAIN, &doms);
    uint32_t forkdom = 0;
    for (size_t i = 0; i < nd; i++)
        if (!strcmp(tp_reader_string(child, ((const tp_rec_domain *)doms[i])->name_sid), "forkdom"))
            forkdom = ((const tp_rec_domain *)doms[i])->id;
    CHECK(forkdom != 0);
    tp_query q = {TP_REC_BIT(TP_REC_NVTX_PUSH), 0, 0};
    tp_cursor *cur;
    CHECK_OK(tp_cursor_open(child, &q, &cur));
    int in_dom = 0;
    for (const tp_rec_hdr *h; (h = tp_cursor_next(cur));)
        in_dom +=
            ((const tp_rec_nvtx *)h)->domain == forkdom &&
            !strcmp(tp_reader_string(child, ((const tp_rec_nvtx *)h)->msg_sid), "in-child-domain");
    tp_cursor_close(cur);
    CHECK_EQ_I(in_dom, 1);
    uint32_t pp, cp, ppp, cpp;
    pp = process_pid(parent, &ppp);
    cp = process_pid(child, &cpp);
    CHECK(pp && cp && pp != cp);
    CHECK_EQ_U(cpp, pp);
    tp_reader_close(child);
    tp_reader_close(parent);
    tc_cleanup(&R);
    const char *env[] = {"TRAINPROF_FORK=none", NULL};
    CHECK_EQ_I(tc_record(&R, env, opts, args), 0);
    CHECK_EQ_I(tc_trace(&R, 0, a, sizeof a), 1);
    tc_cleanup(&R);
}

/* Starts nvtx_app `mode` and returns the app's pid once it printed "ready <pid>". */
static pid_t start_waiting(const char *const *env) {
    const char *args[] = {"wait", NULL};
    tc_fresh_dir(&R);
    tc_start(&R, env, NULL, args);
    char line[128];
    int pid = 0;
    if (tc_read_line(&R, line, sizeof line) != 0 || sscanf(line, "ready %d", &pid) != 1)
        return 0;
    return (pid_t)pid;
}

static void test_sigterm(void) {
    const char *env[] = {"TRAINPROF_FLUSH_MS=100", NULL};
    pid_t app = start_waiting(env);
    CHECK(app > 0);
    kill(app, SIGTERM);
    CHECK_EQ_I(tc_wait(&R), 128 + SIGTERM);
    tp_reader *rd = open_only_trace(&R, 1); /* closed cleanly by the helper thread */
    CHECK(rd != NULL);
    CHECK_EQ_I(tc_count(rd, TP_REC_NVTX_PUSH, "early"), 10);
    tp_reader_close(rd);
    tc_cleanup(&R);
    /* Sent to `trainprof record`, forwarded to the program. */
    app = start_waiting(env);
    CHECK(app > 0);
    kill(R.pid, SIGTERM);
    CHECK_EQ_I(tc_wait(&R), 128 + SIGTERM);
    rd = open_only_trace(&R, 1);
    CHECK(rd != NULL);
    tp_reader_close(rd);
    tc_cleanup(&R);
}

static void test_sigkill(void) {
    const char *env[] = {"TRAINPROF_FLUSH_MS=100", NULL};
    pid_t app = start_waiting(env);
    CHECK(app > 0);
    usleep(300 * 1000); /* past a drain after "ready" */
    kill(app, SIGKILL);
    CHECK_EQ_I(tc_wait(&R), 128 + SIGKILL);
    tp_reader *rd = open_only_trace(&R, 0); /* no index: the process never closed it */
    CHECK(rd != NULL);
    CHECK_EQ_I(tc_count(rd, TP_REC_NVTX_PUSH, "early"), 10);
    const tp_rec_hdr *const *recs;
    CHECK_EQ_U(tp_reader_meta(rd, TP_REC_PROCESS, &recs), 1);
    tp_reader_close(rd);
    tc_cleanup(&R);
}

/* _exit skips atexit and destructors: what the periodic drain wrote is what is kept. */
static void test_underscore_exit(void) {
    const char *env[] = {"TRAINPROF_FLUSH_MS=100", NULL};
    const char *args[] = {"exit", NULL};
    CHECK_EQ_I(tc_record(&R, env, NULL, args), 3);
    tp_reader *rd = open_only_trace(&R, 0);
    CHECK(rd != NULL);
    CHECK_EQ_I(tc_count(rd, TP_REC_NVTX_PUSH, "early"), 10);
    CHECK_EQ_I(tc_count(rd, TP_REC_NVTX_POP, NULL), 10);
    tp_reader_close(rd);
    tc_cleanup(&R);
}

static void test_buffer_exhaustion(void) {
    const char *env[] = {"TRAINPROF_BUFFER_KB=4", NULL};
    const char *args[] = {"flood", "200000", NULL};
    CHECK_EQ_I(tc_record(&R, env, NULL, args), 0);
    tp_reader *rd = open_only_trace(&R, 1);
    CHECK(rd != NULL);
    int read = tc_count(rd, TP_REC_NVTX_MARK, "flood");
    uint64_t dropped = tc_dropped(rd, TP_REC_NVTX_MARK);
    printf("flood: %d read + %llu dropped\n", read, (unsigned long long)dropped);
    CHECK(dropped > 0);
    CHECK(read > 0);
    CHECK_EQ_U((uint64_t)read + dropped, 200000);
    CHECK(strstr(tc_stderr(&R), "dropped: ") != NULL);
    tp_reader_close(rd);
    tc_cleanup(&R);
}

/* --buffer-mb decides what a flood keeps. TRAINPROF_DRAIN=exit stops the background drain,
 * so nothing leaves the rings before exit and the outcome depends on the budget alone. */
static void flood_with_budget(const char *mb, int *read, uint64_t *dropped) {
    const char *env[] = {"TRAINPROF_DRAIN=exit", NULL};
    const char *opts[] = {"--buffer-mb", mb, NULL};
    const char *args[] = {"flood", "200000", NULL};
    *read = -1;
    CHECK_EQ_I(tc_record(&R, env, opts, args), 0);
    tp_reader *rd = open_only_trace(&R, 1);
    CHECK(rd != NULL);
    *read = tc_count(rd, TP_REC_NVTX_MARK, "flood");
    *dropped = tc_dropped(rd, TP_REC_NVTX_MARK);
    tp_reader_close(rd);
    tc_cleanup(&R);
}

static void test_buffer_budget(void) {
    int read;
    uint64_t dropped;
    flood_with_budget("64", &read, &dropped); /* 200000 marks of 56 bytes: 11.2 MB */
    CHECK_EQ_I(read, 200000);
    CHECK_EQ_U(dropped, 0);
    flood_with_budget("4", &read, &dropped);
    printf("4 MiB: %d read + %llu dropped\n", read, (unsigned long long)dropped);
    CHECK(dropped > 0);
    CHECK_EQ_U((uint64_t)read + dropped, 200000);
    CHECK((uint64_t)read * sizeof(tp_rec_nvtx) > (2u << 20)); /* more than half the budget */
    CHECK((uint64_t)read * sizeof(tp_rec_nvtx) <= (4u << 20));
}

static void test_capture_nvtx(void) {
    const char *opts[] = {"--capture", "nvtx:capture-me", NULL};
    const char *args[] = {"capture", NULL};
    CHECK_EQ_I(tc_record(&R, NULL, opts, args), 0);
    tp_reader *rd = open_only_trace(&R, 1);
    CHECK(rd != NULL);
    CHECK_EQ_I(tc_count(rd, TP_REC_NVTX_PUSH, "capture-me"), 1);
    CHECK_EQ_I(tc_count(rd, TP_REC_NVTX_PUSH, "inside"), 1);
    CHECK_EQ_I(tc_count(rd, TP_REC_NVTX_PUSH, "before"), 0);
    CHECK_EQ_I(tc_count(rd, TP_REC_NVTX_PUSH, "after"), 0);
    CHECK_EQ_I(tc_count(rd, TP_REC_NVTX_POP, NULL), 2);
    CHECK_EQ_I(tc_count(rd, TP_REC_NVTX_MARK, "inside-mark"), 1);
    CHECK_EQ_I(tc_count(rd, TP_REC_NVTX_MARK, "after-mark"), 0);
    tp_reader_close(rd);
    tc_cleanup(&R);
}

/* --delay/--duration: nvtx_app exit pushes 10 ranges at once, then sleeps 0.6 s. */
static void test_time_window(void) {
    const char *env[] = {"TRAINPROF_FLUSH_MS=100", NULL};
    const char *args[] = {"exit", NULL};
    const char *late[] = {"--delay", "0.3", NULL};
    CHECK_EQ_I(tc_record(&R, env, late, args), 3);
    tp_reader *rd = open_only_trace(&R, 0);
    CHECK(rd != NULL);
    CHECK_EQ_I(tc_count(rd, TP_REC_NVTX_PUSH, NULL), 0);
    tp_reader_close(rd);
    tc_cleanup(&R);
    const char *early[] = {"--delay", "0", "--duration", "0.3", NULL};
    CHECK_EQ_I(tc_record(&R, env, early, args), 3);
    rd = open_only_trace(&R, 0);
    CHECK(rd != NULL);
    CHECK_EQ_I(tc_count(rd, TP_REC_NVTX_PUSH, "early"), 10);
    tp_reader_close(rd);
    tc_cleanup(&R);
}

static void test_bad_command_lines(void) {
    const char *bad_stacks[] = {"--stacks", "bogus", NULL};
    CHECK_EQ_I(tc_record(&R, NULL, bad_stacks, NULL), 2);
    CHECK(strstr(tc_stderr(&R), "--stacks") != NULL);
    tc_cleanup(&R);
    const char *bad_capture[] = {"--capture", "time:3", NULL};
    CHECK_EQ_I(tc_record(&R, NULL, bad_capture, NULL), 2);
    tc_cleanup(&R);
    tc_run missing = R;
    snprintf(missing.app, sizeof missing.app, "/nonexistent/program");
    CHECK_EQ_I(tc_record(&missing, NULL, NULL, NULL), 127);
    CHECK(strstr(tc_stderr(&missing), "cannot run") != NULL);
    tc_cleanup(&missing);
}

int main(int argc, char **argv) {
    tc_init(&R, argc, argv);
    TP_RUN(test_plain_program);
    TP_RUN(test_fork);
    TP_RUN(test_sigterm);
    TP_RUN(test_sigkill);
    TP_RUN(test_underscore_exit);
    TP_RUN(test_buffer_exhaustion);
    TP_RUN(test_buffer_budget);
    TP_RUN(test_capture_nvtx);
    TP_RUN(test_time_window);
    TP_RUN(test_bad_command_lines);
    return tp_test_summary();
}
