/* test_collector_job: one recording is one job. A real program that forks workers ending in
 * _exit (as DataLoader workers do), recorded by the real `trainprof record`, leaves its traces
 * side by side (STEM.PID.tprof next to the main one), and `trainprof report` (given the main trace,
 * or the folder) shows one rank with three processes, not three ranks; two recordings with RANK=0
 * and RANK=1 in one folder are two ranks, each with its processes. argv: trainprof, job_app. */
#include <yajl/yajl_tree.h>

#include "tc_run.h"
#include "tp_test.h"

static tc_run R;

/* job_app's fixed counts (job_app.c), and the rows each process adds to them: the collector's
 * own OVERHEAD record ("writer drain"), one per trace. */
#define MAIN_RANGES 4
#define WORKER_RANGES 3
#define OWN_ROWS 1

typedef struct {
    int status;
    char out[1 << 16], err[1 << 14];
} cli_result;

static void slurp(const char *path, char *buf, size_t n) {
    FILE *f = fopen(path, "r");
    size_t k = f ? fread(buf, 1, n - 1, f) : 0;
    buf[k] = 0;
    if (f)
        fclose(f);
}

/* Runs `trainprof ARGS...` (NULL-terminated) in R.dir, stdout and stderr captured. */
static void cli(cli_result *res, const char *const *args) {
    char out[320], err[320];
    snprintf(out, sizeof out, "%s/cli.out", R.dir);
    snprintf(err, sizeof err, "%s/cli.err", R.dir);
    pid_t pid = fork();
    if (pid == 0) {
        int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(o, 1), dup2(e, 2);
        if (chdir(R.dir) != 0)
            _exit(126);
        const char *argv[16];
        int n = 0;
        argv[n++] = R.trainprof;
        for (int i = 0; args[i] && n < 15; i++)
            argv[n++] = args[i];
        argv[n] = NULL;
        execv(R.trainprof, (char **)argv);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    res->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
    slurp(out, res->out, sizeof res->out);
    slurp(err, res->err, sizeof res->err);
    unlink(out), unlink(err);
}

static yajl_val get(yajl_val v, const char *a, const char *b) {
    const char *path[] = {a, b, NULL};
    return yajl_tree_get(v, path, yajl_t_any);
}

static long long num(yajl_val v, const char *key) {
    yajl_val x = get(v, key, NULL);
    return x && YAJL_IS_INTEGER(x) ? YAJL_GET_INTEGER(x) : -999;
}

static const char *str(yajl_val v, const char *key) {
    yajl_val x = get(v, key, NULL);
    return x && YAJL_IS_STRING(x) ? YAJL_GET_STRING(x) : "";
}

/* The traces of the run, sorted by name: [0..n) with the main one (no second dot) in *main. */
static int traces(char names[8][300], int *main) {
    int n = tc_trace(&R, 0, names[0], sizeof names[0]);
    *main = -1;
    for (int i = 0; i < n && i < 8; i++) {
        tc_trace(&R, i, names[i], sizeof names[i]);
        const char *base = strrchr(names[i], '/') + 1;
        if (strchr(base, '.') == strrchr(base, '.'))
            *main = i;
    }
    return n;
}

/* The main process and its workers in the JSON report's one rank. */
static void check_job(yajl_val rank, int workers, int rank_no) {
    CHECK_EQ_I(num(rank, "rank"), rank_no);
    yajl_val procs = get(rank, "processes", NULL);
    CHECK(procs && YAJL_IS_ARRAY(procs));
    CHECK_EQ_U(YAJL_GET_ARRAY(procs)->len, (size_t)workers + 1);
    yajl_val main = YAJL_GET_ARRAY(procs)->values[0];
    CHECK_STR(str(main, "role"), "main");
    CHECK_EQ_I(num(main, "parent"), -1);
    CHECK_EQ_I(num(main, "n_events"), MAIN_RANGES + OWN_ROWS);
    CHECK(strstr(str(main, "command"), "job_app") != NULL);
    for (int w = 1; w <= workers; w++) {
        yajl_val p = YAJL_GET_ARRAY(procs)->values[w];
        CHECK_STR(str(p, "role"), "worker");
        CHECK_EQ_I(num(p, "ppid"), num(main, "pid"));
        CHECK_EQ_I(num(p, "parent"), 0);
        CHECK_EQ_I(num(p, "n_events"), WORKER_RANGES + OWN_ROWS);
        CHECK_EQ_I(num(p, "exec_gen"), 0);
    }
    CHECK_EQ_I(num(rank, "n_events"),
               MAIN_RANGES + workers * WORKER_RANGES + (workers + 1) * OWN_ROWS);
}

/* `report TARGET --format json` (the main trace, or the folder) into *res, its one rank
 * checked to hold the main process and `workers` workers; the parsed report into *out (free
 * it with yajl_tree_free), NULL when it did not parse. */
static void report_one_rank(cli_result *res, const char *target, int workers, yajl_val *out) {
    const char *args[] = {"report", target, "--format", "json", NULL};
    cli(res, args);
    char e[256];
    yajl_val v = *out = yajl_tree_parse(res->out, e, sizeof e);
    CHECK_EQ_I(res->status, 0);
    CHECK(v != NULL);
    CHECK_EQ_I(num(v, "n_ranks"), 1);
    yajl_val ranks = get(v, "ranks", NULL);
    CHECK(ranks && YAJL_IS_ARRAY(ranks) && YAJL_GET_ARRAY(ranks)->len == 1);
    check_job(YAJL_GET_ARRAY(ranks)->values[0], workers, 0);
}

static void test_workers_are_one_rank(void) {
    long long main_pid = -1;
    const char *args[] = {"2", "_exit", NULL}; /* as DataLoader workers end */
    CHECK_EQ_I(tc_record(&R, NULL, NULL, args), 0);
    char names[8][300];
    int main_i;
    CHECK_EQ_I(traces(names, &main_i), 3);
    CHECK(main_i >= 0);
    int listed = 0; /* record's summary names every trace of the recording */
    for (const char *s = tc_stderr(&R); (s = strstr(s, "trainprof: trace ")); s++)
        listed++;
    CHECK_EQ_I(listed, 3);
    /* The workers' traces are named after the main one: STEM.<pid>.tprof beside it. */
    char stem[300];
    snprintf(stem, sizeof stem, "%.*s.", (int)(strlen(names[main_i]) - 6), names[main_i]);
    for (int i = 0; i < 3; i++)
        CHECK(i == main_i || !strncmp(names[i], stem, strlen(stem)));
    /* ... and the summary's one next step is the report of the main trace, which reads them */
    char next[400];
    snprintf(next, sizeof next,
             "  next: trainprof report %s (with the 2 other process traces beside it)\n",
             names[main_i]);
    CHECK(strstr(tc_stderr(&R), next) != NULL);
    CHECK(strstr(strstr(tc_stderr(&R), "next: ") + 1, "next: ") == NULL);
    /* Given the main trace, report finds the others; given the folder, the same. */
    const char *targets[] = {names[main_i], R.dir};
    for (int k = 0; k < 2; k++) {
        cli_result *res = malloc(sizeof *res);
        yajl_val v;
        report_one_rank(res, targets[k], 2, &v);
        CHECK(strstr(res->err, "rank missing") == NULL);
        yajl_val ranks = get(v, "ranks", NULL);
        yajl_val procs = ranks && YAJL_IS_ARRAY(ranks) && YAJL_GET_ARRAY(ranks)->len
                             ? get(YAJL_GET_ARRAY(ranks)->values[0], "processes", NULL)
                             : NULL;
        if (procs && YAJL_IS_ARRAY(procs) && YAJL_GET_ARRAY(procs)->len)
            main_pid = num(YAJL_GET_ARRAY(procs)->values[0], "pid");
        yajl_tree_free(v);
        free(res);
    }
    cli_result *res = malloc(sizeof *res);
    const char *text[] = {"report", names[main_i], NULL};
    cli(res, text);
    CHECK(strstr(res->out, "trainprof report: 1 rank(s)") != NULL);
    CHECK(strstr(res->out, "Processes (3)") != NULL);
    /* The TUI's timeline: the workers' thread lanes, marked, under the main one's. */
    const char *tui[] = {"tui",     R.dir, "--snapshot", "--view", "timeline",
                         "--width", "120", "--height",   "30",     NULL};
    cli(res, tui);
    CHECK_EQ_I(res->status, 0);
    int marked = 0;
    for (const char *s = res->out; (s = strstr(s, "\n w job_app ")); s++)
        marked++;
    CHECK_EQ_I(marked, 2);
    CHECK(strstr(res->out, "\n>job_app ") != NULL); /* the main thread's lane first */
    /* Exported, the recording is one Chrome trace: each process under its pid, named with its
     * role, and `report` on it counts the same events as on the traces. */
    const char *chrome[] = {"export", names[main_i], "--format", "chrome", "-o", "job.json", NULL};
    cli(res, chrome);
    CHECK_EQ_I(res->status, 0);
    char json_path[400], want[80];
    snprintf(json_path, sizeof json_path, "%s/job.json", R.dir);
    FILE *jf = fopen(json_path, "r");
    CHECK(jf != NULL);
    size_t jn = fread(res->out, 1, sizeof res->out - 1, jf);
    res->out[jn] = 0;
    fclose(jf);
    CHECK(strstr(res->out, "\"name\": \"job_app (main)\"") != NULL);
    snprintf(want, sizeof want, "\"name\": \"job_app (worker of %lld)\"", main_pid);
    int workers_named = 0;
    for (const char *s = res->out; (s = strstr(s, want)); s++)
        workers_named++;
    CHECK_EQ_I(workers_named, 2);
    const char *reimport[] = {"report", "job.json", "--format", "json", NULL};
    cli(res, reimport);
    CHECK_EQ_I(res->status, 0);
    CHECK(strstr(res->out, "\"n_events\": 13,") != NULL); /* 4 + 2 x 3 ranges, 3 OVERHEAD */
    const char *sqlite[] = {"export", names[main_i], "--format", "sqlite", "-o", "job.db", NULL};
    cli(res, sqlite);
    CHECK_EQ_I(res->status, 0);
    /* one database for the recording: the main process and its two workers */
    CHECK(strstr(res->err, " rows, 3 processes)") != NULL);
    CHECK(strstr(res->err, "note:") == NULL);
    free(res);
    tc_cleanup(&R);
}

/* Processes that record nothing leave no trace, --sample or not: forks made before the
 * sampler knew the program has no Python (a shell's, a pyenv shim's) once opened theirs from
 * the sampler thread and, ending in _exit, left it header-only or, cut short, empty (which the
 * report refused to read). */
static void test_quiet_forks_leave_no_trace(void) {
    static const char *const how[] = {"quiet", "killed"};
    for (size_t k = 0; k < 2; k++) {
        const char *opts[] = {"--sample-hz", "1000", NULL};
        const char *args[] = {"3", how[k], NULL};
        CHECK_EQ_I(tc_record(&R, NULL, opts, args), 0);
        char names[8][300];
        int main_i;
        CHECK_EQ_I(traces(names, &main_i), 1);
        CHECK_EQ_I(main_i, 0);
        tc_cleanup(&R);
    }
}

/* A process of the recording killed right after it created its trace leaves it empty, or
 * with its header alone: the report of the main trace, or of the folder, leaves such a trace
 * out with a note and shows the rest of the job. */
static void test_empty_member_left_out(void) {
    const char *args[] = {"1", "_exit", NULL};
    CHECK_EQ_I(tc_record(&R, NULL, NULL, args), 0);
    char names[8][300], path[400];
    int main_i;
    CHECK_EQ_I(traces(names, &main_i), 2);
    size_t stem = strlen(names[main_i]) - 6; /* without ".tprof" */
    snprintf(path, sizeof path, "%.*s.999998.tprof", (int)stem, names[main_i]);
    FILE *f = fopen(path, "w"); /* empty */
    CHECK(f != NULL);
    if (f)
        fclose(f);
    char head[64];
    FILE *in = fopen(names[main_i], "rb");
    size_t got = in ? fread(head, 1, sizeof head, in) : 0;
    if (in)
        fclose(in);
    CHECK_EQ_U(got, sizeof head);
    snprintf(path, sizeof path, "%.*s.999999.tprof", (int)stem, names[main_i]);
    f = fopen(path, "wb"); /* the header alone */
    CHECK(f && fwrite(head, 1, got, f) == got);
    if (f)
        fclose(f);
    const char *targets[] = {names[main_i], R.dir};
    for (int k = 0; k < 2; k++) {
        cli_result *res = malloc(sizeof *res);
        yajl_val v;
        report_one_rank(res, targets[k], 1, &v);
        yajl_tree_free(v);
        CHECK(strstr(res->err, ".999998.tprof: left out: empty (its process ended before it "
                               "wrote anything)") != NULL);
        CHECK(strstr(res->err, ".999999.tprof: left out: holds nothing") != NULL);
        free(res);
    }
    /* named on the command line, an empty trace is an error still */
    cli_result *res = malloc(sizeof *res);
    snprintf(path, sizeof path, "%.*s.999998.tprof", (int)stem, names[main_i]);
    const char *named[] = {"report", path, NULL};
    cli(res, named);
    CHECK_EQ_I(res->status, 1);
    CHECK(strstr(res->err, "empty file") != NULL);
    free(res);
    tc_cleanup(&R);
}

/* A recording of more than 4 processes is summarized as its main trace, then the others
 * together (a launcher's ranks and their workers are dozens): their counts added up. */
static void test_many_summarized(void) {
    const char *args[] = {"5", "_exit", NULL};
    CHECK_EQ_I(tc_record(&R, NULL, NULL, args), 0);
    char names[8][300];
    int main_i;
    CHECK_EQ_I(traces(names, &main_i), 6);
    const char *err = tc_stderr(&R);
    CHECK_EQ_I(tc_occurrences(err, "trainprof: trace "), 1);
    const char *rest = strstr(err, "trainprof: 5 other process traces (");
    CHECK(rest != NULL);
    char want[64];
    snprintf(want, sizeof want, "NVTX_PUSH %d,", 5 * WORKER_RANGES);
    CHECK(rest && strstr(rest, want) != NULL);
    CHECK(rest && strstr(rest, "PROCESS 5,") != NULL);
    CHECK(strstr(err, "(with the 5 other process traces beside it)") != NULL);
    tc_cleanup(&R);
}

/* Records `job_app 1` with RANK=rank in R.dir (already made). */
static int record_rank(const char *rank_env) {
    const char *env[] = {rank_env, NULL};
    const char *args[] = {"1", "_exit", NULL};
    tc_start(&R, env, NULL, args);
    char buf[4096];
    while (read(R.out_fd, buf, sizeof buf) > 0)
        ;
    return tc_wait(&R);
}

static void test_two_recordings_two_ranks(void) {
    tc_fresh_dir(&R);
    CHECK_EQ_I(record_rank("RANK=0"), 0);
    CHECK_EQ_I(record_rank("RANK=1"), 0);
    char names[8][300];
    int main_i;
    CHECK_EQ_I(traces(names, &main_i), 4);
    cli_result *res = malloc(sizeof *res);
    const char *args[] = {"report", R.dir, "--format", "json", NULL};
    cli(res, args);
    CHECK_EQ_I(res->status, 0);
    CHECK(strstr(res->err, "rank missing") == NULL);
    char e[256];
    yajl_val v = yajl_tree_parse(res->out, e, sizeof e);
    CHECK(v != NULL);
    CHECK_EQ_I(num(v, "n_ranks"), 2);
    yajl_val ranks = get(v, "ranks", NULL);
    CHECK(ranks && YAJL_IS_ARRAY(ranks) && YAJL_GET_ARRAY(ranks)->len == 2);
    for (int k = 0; k < 2; k++)
        check_job(YAJL_GET_ARRAY(ranks)->values[k], 1, k);
    yajl_tree_free(v);
    free(res);
    tc_cleanup(&R);
}

int main(int argc, char **argv) {
    tc_init(&R, argc, argv);
    TP_RUN(test_workers_are_one_rank);
    TP_RUN(test_two_recordings_two_ranks);
    TP_RUN(test_quiet_forks_leave_no_trace);
    TP_RUN(test_empty_member_left_out);
    TP_RUN(test_many_summarized);
    return tp_test_summary();
}
