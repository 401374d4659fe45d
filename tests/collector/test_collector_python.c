/* test_collector_python: real CPython programs under `trainprof record`, through the `nvtx`
 * PyPI package (scripts/install-deps.sh puts both into .deps/pyenv). The program must behave
 * exactly as without trainprof and lose nothing:
 *  - signal.getsignal() reports what plain Python reports (KeyboardInterrupt is installed);
 *  - Ctrl-C typed on a real (pseudo-)terminal, and SIGINT sent to the process group with
 *    kill(), run the KeyboardInterrupt handler once, and the trace is complete (index, every
 *    range closed); two quick ones still give an indexed trace;
 *  - started with SIGTERM ignored, the program sees it ignored and survives it;
 *  - multiprocessing.Pool(4) workers, which end through os._exit, keep every range and leave
 *    no empty file;
 *  - os.closerange(3, 1024) then a file of its own: the file is byte-identical to a run
 *    without trainprof, and the trace is intact.
 * Skips (77) without the virtual environment, but fails under CI=true.
 *
 * usage: test_collector_python TRAINPROF PYTHON SCRIPT_DIR */
#include "tc_run.h"
#include "tp_test.h"

static tc_run R;
static char g_python[PATH_MAX], g_scripts[PATH_MAX];

/* Runs PYTHON args... without trainprof in `dir` (SIGTERM ignored when asked); returns its
 * exit status and its stdout in `out`. */
static int run_plain(const char *dir, int ignore_term, const char *const *args, char *out,
                     size_t len) {
    int p[2];
    if (pipe(p) != 0)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(p[1], 1);
        close(p[0]);
        if (chdir(dir) != 0)
            _exit(126);
        if (ignore_term)
            signal(SIGTERM, SIG_IGN);
        const char *argv[16];
        int n = 0;
        argv[n++] = g_python;
        for (int i = 0; args[i] && n < 15; i++)
            argv[n++] = args[i];
        argv[n] = NULL;
        execv(g_python, (char **)argv);
        _exit(127);
    }
    close(p[1]);
    tc_run tmp = {.out_fd = p[0], .pid = pid};
    tc_read_all(&tmp, out, len);
    return tc_wait(&tmp);
}

/* The n-th trace of the run, opened; NULL when missing. */
static tp_reader *open_trace(int n) {
    char path[1024];
    tp_reader *rd = NULL;
    if (tc_trace(&R, n, path, sizeof path) <= n || tp_reader_open(path, &rd) != TP_OK)
        return NULL;
    return rd;
}

static void script(const char *name, char *out, size_t len) {
    snprintf(out, len, "%s/%s", g_scripts, name);
}

static void test_getsignal(void) {
    const char *args[] = {"-c",
                          "import signal\n"
                          "print(signal.getsignal(signal.SIGINT))\n"
                          "print(signal.getsignal(signal.SIGTERM))\n",
                          NULL};
    char plain[512], traced[512];
    CHECK_EQ_I(run_plain("/tmp", 0, args, plain, sizeof plain), 0);
    CHECK(strstr(plain, "default_int_handler") != NULL);
    tc_fresh_dir(&R);
    tc_start(&R, NULL, NULL, args);
    tc_read_all(&R, traced, sizeof traced);
    CHECK_EQ_I(tc_wait(&R), 0);
    CHECK_STR(traced, plain);
    tc_cleanup(&R);
}

/* Starts tp_ctrlc.py as its own process group, waits for "ready", sends SIGINT to the
 * group `times` times (through the terminal's ^C when `tty_master` >= 0, else kill());
 * returns the exit status and the rest of stdout in `out`. */
static int ctrlc_run(int times, int tty_master, char *out, size_t len) {
    char s[PATH_MAX + 32], line[64];
    script("tp_ctrlc.py", s, sizeof s);
    const char *args[] = {s, NULL};
    const char *opts[] = {"-o", "ctrlc.tprof", NULL};
    tc_fresh_dir(&R);
    R.own_group = tty_master < 0;
    tc_start(&R, NULL, opts, args);
    R.own_group = 0;
    R.tty = NULL;
    if (tc_read_line(&R, line, sizeof line) != 0 || strcmp(line, "ready"))
        return -1;
    for (int i = 0; i < times; i++)
        if (tty_master >= 0)
            (void)!write(tty_master, "\003", 1); /* VINTR: the kernel signals the group */
        else
            kill(-R.pid, SIGINT);
    tc_read_all(&R, out, len);
    return tc_wait(&R);
}

/* Every push of the trace has its pop, and the index is there. */
static void check_complete(tp_reader *rd) {
    CHECK(tp_reader_integrity(rd)->index_ok);
    int push = tc_count(rd, TP_REC_NVTX_PUSH, NULL);
    CHECK(push > 0);
    CHECK_EQ_I(tc_count(rd, TP_REC_NVTX_POP, NULL), push);
}

static void test_ctrl_c(void) {
    char out[512];
    CHECK_EQ_I(ctrlc_run(1, -1, out, sizeof out), 0);
    CHECK_STR(out, "caught\ndone 1\n");
    tp_reader *rd = open_trace(0);
    CHECK(rd != NULL);
    check_complete(rd);
    CHECK_EQ_I(tc_count(rd, TP_REC_NVTX_PUSH, "outer"), 1);
    tp_reader_close(rd);
    tc_cleanup(&R);
}

/* The second may arrive inside the except block (a second KeyboardInterrupt, Python then
 * dies of SIGINT) or merge with the first: either way the trace is whole. */
static void test_two_quick_ctrl_c(void) {
    char out[4096];
    int rc = ctrlc_run(2, -1, out, sizeof out);
    CHECK(rc == 0 || rc == 128 + SIGINT);
    CHECK(strstr(out, "caught\n") != NULL);
    tp_reader *rd = open_trace(0);
    CHECK(rd != NULL);
    check_complete(rd);
    tp_reader_close(rd);
    tc_cleanup(&R);
}

/* Ctrl-C typed on a terminal: `record` and the program are its foreground process group. */
static void test_terminal_ctrl_c(void) {
    int master = posix_openpt(O_RDWR | O_NOCTTY);
    const char *slave =
        master >= 0 && grantpt(master) == 0 && unlockpt(master) == 0 ? ptsname(master) : NULL;
    CHECK(slave != NULL);
    char tty[256], out[512];
    snprintf(tty, sizeof tty, "%s", slave);
    R.tty = tty;
    CHECK_EQ_I(ctrlc_run(1, master, out, sizeof out), 0);
    close(master);
    CHECK_STR(out, "caught\ndone 1\n");
    tp_reader *rd = open_trace(0);
    CHECK(rd != NULL);
    check_complete(rd);
    tp_reader_close(rd);
    tc_cleanup(&R);
}

static void test_ignored_term(void) {
    const char *args[] = {"-c",
                          "import os, signal\n"
                          "print(signal.getsignal(signal.SIGTERM))\n"
                          "os.kill(os.getpid(), signal.SIGTERM)\n"
                          "print('alive')\n",
                          NULL};
    char plain[256], traced[256];
    CHECK_EQ_I(run_plain("/tmp", 1, args, plain, sizeof plain), 0);
    CHECK(strstr(plain, "alive") != NULL);
    tc_fresh_dir(&R);
    R.ignore_sig = SIGTERM;
    tc_start(&R, NULL, NULL, args);
    R.ignore_sig = 0;
    tc_read_all(&R, traced, sizeof traced);
    CHECK_EQ_I(tc_wait(&R), 0);
    CHECK_STR(traced, plain);
    tc_cleanup(&R);
}

#define POOL_TASKS 40

static void test_pool_workers(void) {
    char s[PATH_MAX + 32], out[256];
    script("tp_pool.py", s, sizeof s);
    const char *args[] = {s, "40", NULL};
    const char *opts[] = {"-o", "main.tprof", NULL};
    tc_fresh_dir(&R);
    tc_start(&R, NULL, opts, args);
    tc_read_all(&R, out, sizeof out);
    CHECK_EQ_I(tc_wait(&R), 0);
    CHECK_STR(out, "20540\n"); /* sum of i*i, i < 40 */
    int n = tc_trace(&R, 0, NULL, 0), tasks = 0, inner = 0, main_ranges = 0, inits = 0;
    CHECK_EQ_I(n, 5); /* the main process and its 4 workers, nothing else */
    for (int i = 0; i < n; i++) {
        tp_reader *rd = open_trace(i);
        CHECK(rd != NULL);
        check_complete(rd); /* also: no empty, header-only or unindexed file */
        tasks += tc_count(rd, TP_REC_NVTX_PUSH, "task");
        inner += tc_count(rd, TP_REC_NVTX_PUSH, "inner");
        main_ranges += tc_count(rd, TP_REC_NVTX_PUSH, "main");
        inits += tc_count(rd, TP_REC_NVTX_PUSH, "init");
        tp_reader_close(rd);
    }
    CHECK_EQ_I(tasks, POOL_TASKS);
    CHECK_EQ_I(inner, POOL_TASKS);
    CHECK_EQ_I(main_ranges, 1);
    CHECK_EQ_I(inits, 4);
    tc_cleanup(&R);
}

static void read_file(const char *path, char *buf, size_t len, size_t *n) {
    FILE *f = fopen(path, "rb");
    *n = f ? fread(buf, 1, len, f) : 0;
    if (f)
        fclose(f);
}

static void test_closed_fds(void) {
    char s[PATH_MAX + 32], plain_out[64], traced_out[64], p[300];
    static char plain[16384], traced[16384];
    size_t np, nt;
    script("tp_closefds.py", s, sizeof s);
    const char *args[] = {s, "own.dat", NULL};
    tc_fresh_dir(&R);
    CHECK_EQ_I(run_plain(R.dir, 0, args, plain_out, sizeof plain_out), 0);
    snprintf(p, sizeof p, "%s/own.dat", R.dir);
    read_file(p, plain, sizeof plain, &np);
    unlink(p);
    CHECK(np > 1000);
    tc_start(&R, NULL, NULL, args);
    tc_read_all(&R, traced_out, sizeof traced_out);
    CHECK_EQ_I(tc_wait(&R), 0);
    CHECK_STR(traced_out, plain_out); /* the same descriptor number, too */
    read_file(p, traced, sizeof traced, &nt);
    CHECK_EQ_U(nt, np);
    CHECK(memcmp(plain, traced, np) == 0);
    tp_reader *rd = open_trace(0);
    CHECK(rd != NULL);
    check_complete(rd);
    CHECK_EQ_I(tc_count(rd, TP_REC_NVTX_PUSH, "after"), 200);
    tp_reader_close(rd);
    tc_cleanup(&R);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s TRAINPROF PYTHON SCRIPT_DIR\n", argv[0]);
        return 2;
    }
    const char *ci = getenv("CI");
    if (access(argv[2], X_OK) != 0) {
        fprintf(stderr, "no Python environment at %s (run scripts/install-deps.sh)\n", argv[2]);
        if (ci && !strcmp(ci, "true"))
            return 1;
        TP_SKIP("no .deps/pyenv");
    }
    /* Not realpath'd: the venv's python finds its packages through the path it was run by. */
    snprintf(g_python, sizeof g_python, "%s", argv[2]);
    if (!realpath(argv[3], g_scripts) || !realpath(argv[1], R.trainprof)) {
        fprintf(stderr, "cannot find %s or %s\n", argv[1], argv[3]);
        return 2;
    }
    snprintf(R.app, sizeof R.app, "%s", g_python);
    R.out_fd = -1;
    TP_RUN(test_getsignal);
    TP_RUN(test_ctrl_c);
    TP_RUN(test_terminal_ctrl_c);
    TP_RUN(test_two_quick_ctrl_c);
    TP_RUN(test_ignored_term);
    TP_RUN(test_pool_workers);
    TP_RUN(test_closed_fds);
    return tp_test_summary();
}
