/* test_collector_output: where `trainprof record` writes, decided before the program starts.
 * An existing -o is refused (the program never runs, the file is untouched) unless --force,
 * which replaces a symbolic link itself and never the file it points to; a dangling link is
 * not followed; two recordings onto one -o never share the file (the second is refused
 * while the first runs, and the first trace holds only its own process); a missing folder
 * is created, an impossible one refused with one line; an unused reservation is removed;
 * and a run that recorded no event says what produces events. nvtx_app `touch FILE` creates
 * FILE, which proves that the program ran. */
#include "tc_run.h"
#include "tp_test.h"

static tc_run R;

/* `name` inside the run's folder. */
static const char *in_dir(const char *name) {
    static char p[4][600];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", R.dir, name);
    return p[k];
}

static void write_text(const char *name, const char *text) {
    FILE *f = fopen(in_dir(name), "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* The file's text ("" when absent or empty). */
static const char *read_text(const char *name) {
    static char buf[256];
    FILE *f = fopen(in_dir(name), "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    buf[n] = 0;
    if (f)
        fclose(f);
    return buf;
}

static int exists(const char *name) {
    struct stat sb;
    return lstat(in_dir(name), &sb) == 0;
}

/* `trainprof record OPTS -- nvtx_app touch started` in a folder prepared by `setup`. */
static int record_touch(void (*setup)(void), const char *const *opts) {
    const char *args[] = {"touch", "started", NULL};
    tc_fresh_dir(&R);
    if (setup)
        setup();
    tc_start(&R, NULL, opts, args);
    char buf[4096];
    while (read(R.out_fd, buf, sizeof buf) > 0)
        ;
    return tc_wait(&R);
}

/* Opens `name` as a trace and counts the "touched" ranges (-1: not a readable trace). */
static int touched_in(const char *name) {
    tp_reader *rd;
    if (tp_reader_open(in_dir(name), &rd) != TP_OK)
        return -1;
    int n = tc_count(rd, TP_REC_NVTX_PUSH, "touched");
    tp_reader_close(rd);
    return n;
}

static void make_existing(void) {
    write_text("x.tprof", "keep me\n");
}

static void test_existing_refused(void) {
    const char *opts[] = {"-o", "x.tprof", NULL};
    CHECK_EQ_I(record_touch(make_existing, opts), 1);
    CHECK(!exists("started")); /* refused before the program started */
    CHECK(!strcmp(read_text("x.tprof"), "keep me\n"));
    CHECK(strstr(tc_stderr(&R), "x.tprof already exists; use --force") != NULL);
    tc_cleanup(&R);
}

static void test_force_replaces(void) {
    const char *opts[] = {"-o", "x.tprof", "--force", NULL};
    CHECK_EQ_I(record_touch(make_existing, opts), 0);
    CHECK(exists("started"));
    CHECK_EQ_I(touched_in("x.tprof"), 1);
    tc_cleanup(&R);
}

static void make_link(void) {
    write_text("other.txt", "secret\n");
    if (symlink("other.txt", in_dir("x.tprof")) != 0)
        perror("symlink");
}

static void make_dangling_link(void) {
    if (symlink("nowhere.txt", in_dir("x.tprof")) != 0)
        perror("symlink");
}

/* A link at -o is refused, dangling or not, and nothing is created through it. */
static void test_link_not_followed(void) {
    const char *opts[] = {"-o", "x.tprof", NULL};
    CHECK_EQ_I(record_touch(make_link, opts), 1);
    CHECK(!exists("started"));
    CHECK(!strcmp(read_text("other.txt"), "secret\n"));
    tc_cleanup(&R);
    CHECK_EQ_I(record_touch(make_dangling_link, opts), 1);
    CHECK(!exists("started"));
    CHECK(!exists("nowhere.txt"));
    tc_cleanup(&R);
}

/* --force replaces the link itself: the file it pointed to keeps its bytes. */
static void test_force_replaces_link_not_target(void) {
    const char *opts[] = {"--force", "-o", "x.tprof", NULL};
    CHECK_EQ_I(record_touch(make_link, opts), 0);
    struct stat sb;
    CHECK(lstat(in_dir("x.tprof"), &sb) == 0 && S_ISREG(sb.st_mode));
    CHECK_EQ_I(touched_in("x.tprof"), 1);
    CHECK(!strcmp(read_text("other.txt"), "secret\n"));
    tc_cleanup(&R);
}

/* While one recording runs (its program waits), a second one onto the same -o is refused
 * before its program starts; the first trace holds exactly its own process. */
static void test_concurrent_same_output(void) {
    const char *opts[] = {"-o", "same.tprof", NULL};
    const char *wait_args[] = {"wait", NULL};
    tc_fresh_dir(&R);
    tc_start(&R, NULL, opts, wait_args);
    char line[128];
    int app = 0;
    CHECK(tc_read_line(&R, line, sizeof line) == 0 && sscanf(line, "ready %d", &app) == 1);
    tc_run first = R;
    const char *args[] = {"touch", "started", NULL};
    tc_start(&R, NULL, opts, args); /* the same folder, the same -o */
    CHECK_EQ_I(tc_wait(&R), 1);
    CHECK(!exists("started"));
    CHECK(strstr(tc_stderr(&R), "same.tprof already exists") != NULL);
    R = first;
    kill(app, SIGTERM);
    CHECK_EQ_I(tc_wait(&R), 128 + SIGTERM);
    tp_reader *rd;
    CHECK_OK(tp_reader_open(in_dir("same.tprof"), &rd));
    const tp_rec_hdr *const *recs;
    CHECK_EQ_U(tp_reader_meta(rd, TP_REC_PROCESS, &recs), 1);
    CHECK_EQ_U(((const tp_rec_process *)recs[0])->pid, app);
    CHECK_EQ_I(tc_count(rd, TP_REC_NVTX_PUSH, "early"), 10);
    CHECK_EQ_I(tc_count(rd, TP_REC_NVTX_PUSH, "touched"), 0);
    CHECK_EQ_U(tp_reader_integrity(rd)->chunks_bad, 0);
    tp_reader_close(rd);
    tc_cleanup(&R);
}

static void remove_tree(const char *const *names) {
    for (; *names; names++)
        remove(in_dir(*names));
}

/* A missing folder is made before the start; the trace lands there. */
static void test_missing_folder_created(void) {
    const char *opts[] = {"-o", "a/b/c/x.tprof", NULL};
    CHECK_EQ_I(record_touch(NULL, opts), 0);
    CHECK_EQ_I(touched_in("a/b/c/x.tprof"), 1);
    CHECK(strstr(tc_stderr(&R), "untraced") == NULL);
    static const char *const tree[] = {"a/b/c/x.tprof", "a/b/c", "a/b", "a", NULL};
    remove_tree(tree);
    tc_cleanup(&R);
}

static void make_plain_file(void) {
    write_text("f", "a file, not a folder\n");
}

/* A folder that cannot be made: one line, non-zero, and the program never ran. */
static void test_impossible_folder_refused(void) {
    const char *opts[] = {"-o", "f/sub/x.tprof", NULL};
    CHECK_EQ_I(record_touch(make_plain_file, opts), 1);
    CHECK(!exists("started"));
    const char *err = tc_stderr(&R);
    CHECK(strstr(err, "cannot create folder") != NULL);
    CHECK(strchr(err, '\n') == err + strlen(err) - 1); /* exactly one line */
    tc_cleanup(&R);
}

/* The program cannot be started: the reserved, never written file is removed. */
static void test_unused_reservation_removed(void) {
    const char *opts[] = {"-o", "x.tprof", NULL};
    char app[PATH_MAX];
    memcpy(app, R.app, sizeof app);
    snprintf(R.app, sizeof R.app, "/nonexistent/program");
    CHECK_EQ_I(record_touch(NULL, opts), 127);
    memcpy(R.app, app, sizeof app);
    CHECK(!exists("x.tprof"));
    tc_cleanup(&R);
}

/* No event recorded: say what produces events; a run with events says nothing of it. */
static void test_hint_when_empty(void) {
    const char *plain[] = {"plain", NULL};
    CHECK_EQ_I(tc_record(&R, NULL, NULL, plain), 0);
    const char *err = tc_stderr(&R);
    CHECK(strstr(err, "no events were recorded") != NULL);
    CHECK(strstr(err, "torch.cuda.nvtx") != NULL && strstr(err, "emit_nvtx") != NULL);
    tc_cleanup(&R);
    const char *opts[] = {"-o", "x.tprof", NULL};
    CHECK_EQ_I(record_touch(NULL, opts), 0);
    CHECK(strstr(tc_stderr(&R), "no events were recorded") == NULL);
    tc_cleanup(&R);
}

int main(int argc, char **argv) {
    tc_init(&R, argc, argv);
    TP_RUN(test_existing_refused);
    TP_RUN(test_force_replaces);
    TP_RUN(test_link_not_followed);
    TP_RUN(test_force_replaces_link_not_target);
    TP_RUN(test_concurrent_same_output);
    TP_RUN(test_missing_folder_created);
    TP_RUN(test_impossible_folder_refused);
    TP_RUN(test_unused_reservation_removed);
    TP_RUN(test_hint_when_empty);
    return tp_test_summary();
}
