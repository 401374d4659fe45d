/* test_collector_lifecycle: however nvtx_app ends, its trace is readable and holds what it
 * should: a program that never calls NVTX, fork (one trace per process, or none for the
 * child), SIGTERM (to the program, and forwarded by `trainprof record`), SIGKILL (the
 * periodic drain's chunks survive), _exit/_Exit at once and in fork children (every event,
 * indexed, no empty file), SIGINT that only the program's blocked thread may take, two quick
 * SIGINTs to the process group, ignored SIGTERM, the program's view of its dispositions,
 * descriptors closed or replaced behind the collector's back, buffer exhaustion (read +
 * dropped == written), --capture nvtx:NAME, and bad command lines. */
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
    /* The child's trace is named after the started process's, beside it: sorted,
     * "parent.<childpid>.tprof" < "parent.tprof". */
    CHECK(strstr(a, "/parent.") && !strstr(a, "/parent.tprof") && strstr(b, "/parent.tprof"));
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
    /* One recording: both carry its id and the started process's pid; the fork child is its
     * pid's first image and its trace is named after the started one's, with its pid. */
    const tp_rec_hdr *const *pr;
    tp_rec_process pa, ch;
    CHECK_EQ_U(tp_reader_meta(parent, TP_REC_PROCESS, &pr), 1);
    tp_record_get(pr[0], &pa, sizeof pa);
    CHECK_EQ_U(tp_reader_meta(child, TP_REC_PROCESS, &pr), 1);
    tp_record_get(pr[0], &ch, sizeof ch);
    CHECK(pa.job_id != 0);
    CHECK_EQ_U(ch.job_id, pa.job_id);
    CHECK_EQ_U(pa.root_pid, pp);
    CHECK_EQ_U(ch.root_pid, pp);
    CHECK_EQ_U(pa.exec_gen, 0);
    CHECK_EQ_U(ch.exec_gen, 0);
    char want[64];
    snprintf(want, sizeof want, "/parent.%u.tprof", cp);
    CHECK(strstr(a, want) != NULL);
    tp_reader_close(child);
    tp_reader_close(parent);
    tc_cleanup(&R);
    const char *env[] = {"TRAINPROF_FORK=none", NULL};
    CHECK_EQ_I(tc_record(&R, env, opts, args), 0);
    CHECK_EQ_I(tc_trace(&R, 0, a, sizeof a), 1);
    tc_cleanup(&R);
}

/* Starts nvtx_app `mode` and returns the app's pid once it printed "ready <pid>". */
static pid_t start_mode(const char *mode, const char *const *env) {
    const char *args[] = {mode, NULL};
    tc_fresh_dir(&R);
    tc_start(&R, env, NULL, args);
    char line[128];
    int pid = 0;
    if (tc_read_line(&R, line, sizeof line) != 0 || sscanf(line, "ready %d", &pid) != 1)
        return 0;
    return (pid_t)pid;
}

static pid_t start_waiting(const char *const *env) {
    return start_mode("wait", env);
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

/* _exit skips atexit and destructors: the collector's _exit closes the trace first. */
static void test_underscore_exit(void) {
    const char *env[] = {"TRAINPROF_FLUSH_MS=100", NULL};
    const char *args[] = {"exit", NULL};
    CHECK_EQ_I(tc_record(&R, env, NULL, args), 3);
    tp_reader *rd = open_only_trace(&R, 1);
    CHECK(rd != NULL);
    CHECK_EQ_I(tc_count(rd, TP_REC_NVTX_PUSH, "early"), 10);
    CHECK_EQ_I(tc_count(rd, TP_REC_NVTX_POP, NULL), 10);
    tp_reader_close(rd);
    tc_cleanup(&R);
}

/* _exit/_Exit right after the events, before any drain could run: all kept, indexed. */
static void test_quick_exit(void) {
    static const struct {
        const char *mode;
        int rc;
    } cases[] = {{"quickexit", 3}, {"quick_Exit", 4}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *args[] = {cases[i].mode, NULL};
        CHECK_EQ_I(tc_record(&R, NULL, NULL, args), cases[i].rc);
        tp_reader *rd = open_only_trace(&R, 1);
        CHECK(rd != NULL);
        CHECK_EQ_I(tc_count(rd, TP_REC_NVTX_PUSH, "early"), 10);
        CHECK_EQ_I(tc_count(rd, TP_REC_NVTX_POP, NULL), 10);
        tp_reader_close(rd);
        tc_cleanup(&R);
    }
}

/* Fork children that _exit at once (as multiprocessing workers do): each keeps its ranges
 * in an indexed trace, and no empty or header-only file is left. */
static void test_fork_exit(void) {
    const char *opts[] = {"-o", "parent.tprof", NULL};
    const char *args[] = {"forkexit", "4", NULL};
    CHECK_EQ_I(tc_record(&R, NULL, opts, args), 0);
    CHECK_EQ_I(tc_trace(&R, 0, NULL, 0), 5);
    int children = 0;
    for (int i = 0; i < 5; i++) {
        char path[1024];
        tp_reader *rd;
        tc_trace(&R, i, path, sizeof path);
        CHECK_OK(tp_reader_open(path, &rd));
        int indexed = tp_reader_integrity(rd)->index_ok;
        int parent = strstr(path, "/parent.tprof") != NULL;
        int pushes = tc_count(rd, TP_REC_NVTX_PUSH, parent ? "parent" : "child");
        tp_reader_close(rd);
        CHECK(indexed);
        CHECK_EQ_I(pushes, parent ? 1 : 5);
        children += !parent;
    }
    CHECK_EQ_I(children, 4);
    tc_cleanup(&R);
}

/* The program's only thread blocks SIGINT: no thread of the collector may take it (the
 * writer thread did, and stalled the exit for 3 s waiting for itself). It stays pending
 * until the program unblocks it, then kills the program with an indexed trace. */
static void test_signal_not_on_collector_threads(void) {
    pid_t app = start_mode("blocked", NULL);
    CHECK(app > 0);
    kill(app, SIGINT);
    CHECK_EQ_I(tc_wait(&R), 128 + SIGINT);
    tp_reader *rd = open_only_trace(&R, 1);
    CHECK(rd != NULL);
    CHECK_EQ_I(tc_count(rd, TP_REC_NVTX_PUSH, "early"), 10);
    tp_reader_close(rd);
    tc_cleanup(&R);
}

/* SIGINT twice at once to the whole process group (record forwards a copy of each). */
static void test_two_quick_sigints(void) {
    R.own_group = 1;
    pid_t app = start_waiting(NULL);
    R.own_group = 0;
    CHECK(app > 0);
    kill(-R.pid, SIGINT);
    kill(-R.pid, SIGINT);
    CHECK_EQ_I(tc_wait(&R), 128 + SIGINT);
    tp_reader *rd = open_only_trace(&R, 1);
    CHECK(rd != NULL);
    CHECK_EQ_I(tc_count(rd, TP_REC_NVTX_PUSH, "early"), 10);
    tp_reader_close(rd);
    tc_cleanup(&R);
}

/* Started with SIGTERM ignored (`trap '' TERM`, nohup): the program sees it ignored and
 * survives raising it. */
static void test_ignored_stays_ignored(void) {
    const char *args[] = {"ignterm", NULL};
    R.ignore_sig = SIGTERM;
    int rc = tc_record(&R, NULL, NULL, args);
    R.ignore_sig = 0;
    CHECK_EQ_I(rc, 0);
    tp_reader *rd = open_only_trace(&R, 1);
    CHECK(rd != NULL);
    CHECK_EQ_I(tc_count(rd, TP_REC_NVTX_PUSH, "early"), 1);
    tp_reader_close(rd);
    tc_cleanup(&R);
}

/* sigaction/signal read back what the program set, and the kernel acts on it. */
static void test_signal_view(void) {
    const char *args[] = {"sigview", NULL};
    CHECK_EQ_I(tc_record(&R, NULL, NULL, args), 0);
    tc_cleanup(&R);
}

static int own_file_ok(void) {
    static const char line[] = "the program's own data\n";
    char own[2048] = "", expect[2048] = "", p[300];
    for (int i = 0; i < 50; i++)
        strcat(expect, line);
    snprintf(p, sizeof p, "%s/own.dat", R.dir);
    FILE *f = fopen(p, "rb");
    size_t n = f ? fread(own, 1, sizeof own - 1, f) : 0;
    if (f)
        fclose(f);
    own[n] = 0;
    return !strcmp(own, expect);
}

/* Closing every descriptor (past the wrappers, through them) or dup2 onto the trace's:
 * the program's own file holds exactly its bytes and gets the number it would get without
 * trainprof; the trace keeps every range and its index. */
static void check_close_mode(const char *mode) {
    const char *args[] = {mode, NULL};
    char out[256] = "";
    tc_fresh_dir(&R);
    tc_start(&R, NULL, NULL, args);
    tc_read_all(&R, out, sizeof out);
    CHECK_EQ_I(tc_wait(&R), 0);
    if (strcmp(mode, "dup2"))
        CHECK_STR(out, "fd 3\n");
    CHECK(own_file_ok());
    tp_reader *rd = open_only_trace(&R, 1);
    CHECK(rd != NULL);
    CHECK_EQ_I(tc_count(rd, TP_REC_NVTX_PUSH, "before"), 10);
    CHECK_EQ_I(tc_count(rd, TP_REC_NVTX_PUSH, "after"), 100);
    tp_reader_close(rd);
    tc_cleanup(&R);
}

static void test_closed_descriptors(void) {
    check_close_mode("rawclose");
    check_close_mode("libcclose");
    check_close_mode("dup2");
}

/* The descriptor closed behind our back and the file moved away: the collector stops
 * writing (never into the program's file), says so once, and what it wrote stays readable. */
static void test_lost_descriptor(void) {
    const char *opts[] = {"-o", "lost.tprof", NULL};
    const char *args[] = {"lostfd", NULL};
    CHECK_EQ_I(tc_record(&R, NULL, opts, args), 0);
    CHECK(own_file_ok());
    CHECK_EQ_I(tc_occurrences(tc_stderr(&R), "could not be reopened"), 1);
    char path[600];
    tp_reader *rd;
    snprintf(path, sizeof path, "%s/lost.tprof.moved", R.dir);
    CHECK_OK(tp_reader_open(path, &rd)); /* whatever the drain wrote before */
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

/* The same with push/pop pairs, which take the fast paths while a ring has room: each one
 * the ring refuses is counted, push and pop alike. */
static void test_buffer_exhaustion_pairs(void) {
    const char *env[] = {"TRAINPROF_BUFFER_KB=4", NULL};
    const char *args[] = {"pairs", "100000", NULL};
    CHECK_EQ_I(tc_record(&R, env, NULL, args), 0);
    tp_reader *rd = open_only_trace(&R, 1);
    CHECK(rd != NULL);
    int push = tc_count(rd, TP_REC_NVTX_PUSH, NULL), pop = tc_count(rd, TP_REC_NVTX_POP, NULL);
    uint64_t push_lost = tc_dropped(rd, TP_REC_NVTX_PUSH);
    uint64_t pop_lost = tc_dropped(rd, TP_REC_NVTX_POP);
    printf("pairs: %d + %llu pushes, %d + %llu pops\n", push, (unsigned long long)push_lost, pop,
           (unsigned long long)pop_lost);
    CHECK(push_lost > 0);
    CHECK(push > 0);
    CHECK_EQ_U((uint64_t)push + push_lost, 2 * 100000 + 4 + 100); /* + 100 nested "deep" */
    CHECK_EQ_U((uint64_t)pop + pop_lost, 2 * 100000 + 4 + 100);
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
    tp_reader *rd = open_only_trace(&R, 1);
    CHECK(rd != NULL);
    CHECK_EQ_I(tc_count(rd, TP_REC_NVTX_PUSH, NULL), 0);
    tp_reader_close(rd);
    tc_cleanup(&R);
    const char *early[] = {"--delay", "0", "--duration", "0.3", NULL};
    CHECK_EQ_I(tc_record(&R, env, early, args), 3);
    rd = open_only_trace(&R, 1);
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
    TP_RUN(test_quick_exit);
    TP_RUN(test_fork_exit);
    TP_RUN(test_signal_not_on_collector_threads);
    TP_RUN(test_two_quick_sigints);
    TP_RUN(test_ignored_stays_ignored);
    TP_RUN(test_signal_view);
    TP_RUN(test_closed_descriptors);
    TP_RUN(test_lost_descriptor);
    TP_RUN(test_buffer_exhaustion);
    TP_RUN(test_buffer_exhaustion_pairs);
    TP_RUN(test_buffer_budget);
    TP_RUN(test_capture_nvtx);
    TP_RUN(test_time_window);
    TP_RUN(test_bad_command_lines);
    return tp_test_summary();
}
