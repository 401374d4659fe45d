/* test_report_cli: what `trainprof report`, `info` and `tui --snapshot` print, as real
 * processes on traces written here with the writer API, so every number is known:
 *   - drops: a trace that lost 800 KERNEL and 300 API records (DROPPED records) says so in
 *     the report's text and JSON, the diagnosis (a dropped-records finding, and "lower bound"
 *     on a finding that reads those kinds), the TUI's title and `info`, with exact counts;
 *     a trace that lost every KERNEL record no longer reads "no device activity";
 *   - terminal safety: names with ESC sequences, CR, LF and bytes that are not UTF-8 reach
 *     the terminal escaped (`\x1b`, `\x0d`, `\xff`) from report and info; the JSON report
 *     and info --json keep them exact (bytes that are not UTF-8 as U+FFFD);
 *   - -o never writes over a trace being read (given, or in a folder given) or merge's
 *     input, nor over another trace without --force; an earlier report is replaced.
 * argv[1] is the trainprof binary. */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include "tp_record.h"
#include "tp_test.h"
#include "tp_writer.h"

static const char *prog;
static char dir[256];

typedef struct {
    int status;
    char out[1 << 17], err[1 << 14];
} run_result;

static run_result R;

static void slurp(const char *path, char *buf, size_t n) {
    FILE *f = fopen(path, "r");
    size_t k = f ? fread(buf, 1, n - 1, f) : 0;
    buf[k] = 0;
    if (f)
        fclose(f);
}

/* Runs trainprof with `args` (NULL-terminated), stdout and stderr captured into R. */
static void run(const char *const *args) {
    char out[300], err[300];
    snprintf(out, sizeof out, "%s/out.txt", dir);
    snprintf(err, sizeof err, "%s/err.txt", dir);
    pid_t pid = fork();
    if (pid == 0) {
        int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(o, 1), dup2(e, 2);
        const char *argv[16] = {prog};
        for (int i = 0; args[i] && i < 14; i++)
            argv[i + 1] = args[i];
        execv(prog, (char **)argv);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    R.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
    slurp(out, R.out, sizeof R.out);
    slurp(err, R.err, sizeof R.err);
}

static uint32_t intern(tp_writer *w, const char *s) {
    uint32_t id = 0;
    tp_writer_intern_string(w, s, strlen(s), &id);
    return id;
}

static uint64_t fixed_clock(void *ctx) {
    return *(const uint64_t *)ctx;
}

/* A trace of one process (pid 100, thread `thread`), one GPU: `kernels` launches, each a
 * cudaLaunchKernel call (1 µs) then its kernel (`kernel`, 2 µs, on stream 7) every 20 µs,
 * inside an NVTX range `range` per launch; then the drops. */
static void write_trace(const char *path, int kernels, int with_kernels, const char *kernel,
                        const char *range, const char *thread, uint64_t lost_kernels,
                        uint64_t lost_api) {
    tp_writer_opts o;
    tp_writer_opts_default(&o);
    tp_writer *w;
    CHECK_OK(tp_writer_open(path, &o, &w));
    static const uint64_t drop_time = 1000000000u;
    tp_writer_set_clock(w, fixed_clock, (void *)&drop_time);
    tp_rec_process p = {0};
    TP_REC_INIT(&p, TP_REC_PROCESS);
    p.pid = 100, p.rank = -1, p.world_size = -1, p.local_rank = -1;
    p.cmdline_sid = intern(w, "python train.py \x1b]0;title\x07");
    CHECK_OK(tp_writer_write_meta(w, &p));
    tp_rec_thread t = {0};
    TP_REC_INIT(&t, TP_REC_THREAD);
    t.pid = 100, t.tid = 100, t.name_sid = intern(w, thread);
    CHECK_OK(tp_writer_write_meta(w, &t));
    tp_rec_device d = {0};
    TP_REC_INIT(&d, TP_REC_DEVICE);
    d.name_sid = intern(w, "GPU 0"), d.kind = TP_DEVICE_GPU, d.compute_capability = 90;
    CHECK_OK(tp_writer_write_meta(w, &d));
    uint32_t kname = intern(w, kernel), aname = intern(w, "cudaLaunchKernel");
    uint32_t rname = intern(w, range);
    for (int i = 0; i < kernels; i++) {
        uint64_t t0 = 1000000000u + (uint64_t)i * 20000u;
        tp_rec_nvtx push = {0};
        TP_REC_INIT(&push, TP_REC_NVTX_PUSH);
        push.ts = t0, push.tid = 100, push.msg_sid = rname;
        CHECK_OK(tp_writer_write(w, &push));
        tp_rec_api a = {0};
        TP_REC_INIT(&a, TP_REC_API);
        a.h.flags |= TP_API_RUNTIME;
        a.ts = t0 + 100, a.end = t0 + 1100, a.tid = 100, a.correlation = (uint32_t)i + 1;
        a.name_sid = aname;
        CHECK_OK(tp_writer_write(w, &a));
        tp_rec_nvtx_pop pop = {0};
        TP_REC_INIT(&pop, TP_REC_NVTX_POP);
        pop.ts = t0 + 1200, pop.tid = 100;
        CHECK_OK(tp_writer_write(w, &pop));
        if (!with_kernels)
            continue;
        tp_rec_kernel k = {0};
        TP_REC_INIT(&k, TP_REC_KERNEL);
        k.ts = t0 + 3000, k.end = t0 + 5000, k.correlation = (uint32_t)i + 1;
        k.name_sid = kname, k.stream = 7;
        CHECK_OK(tp_writer_write(w, &k));
    }
    if (lost_kernels)
        tp_writer_count_drop(w, TP_REC_KERNEL, TP_DROP_RING_FULL, lost_kernels);
    if (lost_api)
        tp_writer_count_drop(w, TP_REC_API, TP_DROP_RING_FULL, lost_api);
    CHECK_OK(tp_writer_close(w));
}

static yajl_val jget(yajl_val v, const char *a, const char *b, const char *c) {
    const char *path[] = {a, b, c, NULL};
    return yajl_tree_get(v, path, yajl_t_any);
}

/* The string at v, "" when v is not one. */
static const char *str_of(yajl_val v) {
    const char *s = v && YAJL_IS_STRING(v) ? YAJL_GET_STRING(v) : NULL;
    return s ? s : "";
}

static yajl_val first_rank(yajl_val v) {
    yajl_val ranks = jget(v, "ranks", NULL, NULL);
    return ranks && YAJL_IS_ARRAY(ranks) && YAJL_GET_ARRAY(ranks)->len
               ? YAJL_GET_ARRAY(ranks)->values[0]
               : NULL;
}

/* The finding with `id` in a JSON rank, or NULL. */
static yajl_val finding(yajl_val rank, const char *id) {
    yajl_val fs = jget(rank, "findings", NULL, NULL);
    for (size_t i = 0; fs && YAJL_IS_ARRAY(fs) && i < YAJL_GET_ARRAY(fs)->len; i++) {
        yajl_val f = YAJL_GET_ARRAY(fs)->values[i];
        yajl_val x = jget(f, "id", NULL, NULL);
        if (!strcmp(str_of(x), id))
            return f;
    }
    return NULL;
}

static void test_drops_everywhere(void) {
    char path[300];
    snprintf(path, sizeof path, "%s/drops.tprof", dir);
    /* kept: 200 KERNEL + 200 API + 200 NVTX_PUSH + 200 NVTX_POP = 800 event records */
    write_trace(path, 200, 1, "gemm", "step", "python", 800, 300);
    const char *text[] = {"report", path, NULL};
    run(text);
    CHECK_EQ_I(R.status, 0);
    /* 1,100 lost of 800 kept + 1,100 lost event records; KERNEL lost 800 of 1,000 */
    CHECK(strstr(R.out,
                 "Dropped: 1,100 of 1,900 event records (57.89 %) lost while recording "
                 "(800 KERNEL and 300 API records); every figure is a lower bound\n") != NULL);
    CHECK(strstr(R.out, "dropped records: 80.0% of the KERNEL records were lost while "
                        "recording; every figure is a lower bound") != NULL);
    const char *json[] = {"report", path, "--format", "json", NULL};
    run(json);
    char e[256];
    yajl_val v = yajl_tree_parse(R.out, e, sizeof e);
    CHECK(v != NULL);
    yajl_val rank = first_rank(v);
    CHECK(rank != NULL);
    yajl_val total = jget(rank, "dropped_records", "total", NULL);
    yajl_val of = jget(rank, "dropped_records", "of", NULL);
    yajl_val k = jget(rank, "dropped_records", "by_kind", "KERNEL");
    yajl_val a = jget(rank, "dropped_records", "by_kind", "API");
    yajl_val lb = jget(rank, "dropped_records", "lower_bounds", NULL);
    CHECK(total && of && k && a && lb);
    CHECK_EQ_I(YAJL_GET_INTEGER(total), 1100);
    CHECK_EQ_I(YAJL_GET_INTEGER(of), 1900);
    CHECK_EQ_I(YAJL_GET_INTEGER(k), 800);
    CHECK_EQ_I(YAJL_GET_INTEGER(a), 300);
    CHECK(YAJL_IS_TRUE(lb));
    yajl_val f = finding(rank, "dropped-records");
    CHECK(f != NULL);
    CHECK_NEAR(YAJL_GET_DOUBLE(jget(f, "severity", NULL, NULL)), 0.8, 1e-9);
    CHECK_EQ_I(YAJL_GET_INTEGER(jget(f, "metrics", "dropped_records", NULL)), 1100);
    /* Every other finding here reads kernels or launches, which lost records: it says so. */
    yajl_val fs = jget(rank, "findings", NULL, NULL);
    size_t qualified = 0;
    for (size_t i = 0; i < YAJL_GET_ARRAY(fs)->len; i++) {
        yajl_val x = YAJL_GET_ARRAY(fs)->values[i];
        const char *ev = str_of(jget(x, "evidence", NULL, NULL));
        if (x == f)
            continue;
        CHECK(strstr(ev, "; lower bound: 800 KERNEL and 300 API records this finding reads were "
                         "dropped while recording") != NULL);
        qualified++;
    }
    CHECK(qualified > 0);
    yajl_tree_free(v);
    const char *info[] = {"info", path, NULL};
    run(info);
    CHECK(strstr(R.out, "dropped:      1100\n") != NULL);
    CHECK(strstr(R.out, "  1,100 of 1,900 event records (57.89 %) lost while recording") != NULL);
    const char *tui[] = {"tui", path, "--snapshot", "--width", "160", "--height", "30", NULL};
    run(tui);
    CHECK_EQ_I(R.status, 0);
    CHECK(strstr(R.out, "57.89 % dropped: lower bounds") != NULL);
}

static void test_every_kernel_dropped(void) {
    char path[300];
    snprintf(path, sizeof path, "%s/nokernels.tprof", dir);
    write_trace(path, 100, 0, "gemm", "step", "python", 100, 0);
    const char *text[] = {"report", path, NULL};
    run(text);
    CHECK_EQ_I(R.status, 0);
    CHECK(strstr(R.out, "no device activity") == NULL);
    CHECK(strstr(R.out, "dropped records: 100.0% of the KERNEL records were lost") != NULL);
    CHECK(strstr(R.out, "no GPU activity recorded in this rank (200 CPU-side events; 100 KERNEL "
                        "records were dropped)") != NULL);
}

/* 1 when `s` holds a byte a terminal acts on (a control other than the newlines that end
 * lines) or a byte that is not part of valid UTF-8. */
static int unsafe(const char *s) {
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; u[i];) {
        if ((u[i] < 0x20 && u[i] != '\n') || u[i] == 0x7f)
            return 1;
        size_t len = u[i] < 0x80         ? 1
                     : (u[i] >> 5) == 6  ? 2
                     : (u[i] >> 4) == 14 ? 3
                     : (u[i] >> 3) == 30 ? 4
                                         : 0;
        if (!len)
            return 1;
        for (size_t k = 1; k < len; k++)
            if ((u[i + k] & 0xC0) != 0x80)
                return 1;
        if (len == 2 && u[i] == 0xC2 && u[i + 1] < 0xA0) /* C1 */
            return 1;
        i += len;
    }
    return 0;
}

#define EVIL_KERNEL "\x1b[2J\x1b]0;pwned\x07gemm"
#define EVIL_RANGE "step\rforged\n== rank 9: fake =="
#define EVIL_THREAD "thr\x1b[31mred"
#define BAD_UTF8 "bad\xff\xfename"

static void test_names_are_terminal_safe(void) {
    char path[300], bad[300];
    snprintf(path, sizeof path, "%s/evil.tprof", dir);
    snprintf(bad, sizeof bad, "%s/bad.tprof", dir);
    write_trace(path, 50, 1, EVIL_KERNEL, EVIL_RANGE, EVIL_THREAD, 0, 0);
    write_trace(bad, 50, 1, BAD_UTF8, "step", "t", 0, 0);
    const char *text[] = {"report", path, NULL};
    run(text);
    CHECK_EQ_I(R.status, 0);
    CHECK(!unsafe(R.out));
    CHECK(strstr(R.out, "\\x1b[2J\\x1b]0;pwned\\x07gemm") != NULL);
    CHECK(strstr(R.out, "step\\x0dforged\\x0a== rank 9: fake ==") != NULL);
    CHECK(strstr(R.out, "\n== rank 9") == NULL); /* no forged line */
    const char *text_bad[] = {"report", bad, NULL};
    run(text_bad);
    CHECK(!unsafe(R.out));
    CHECK(strstr(R.out, "bad\\xff\\xfename") != NULL);
    const char *info[] = {"info", path, NULL};
    run(info);
    CHECK(!unsafe(R.out));
    CHECK(strstr(R.out, "thr\\x1b[31mred") != NULL);
    CHECK(strstr(R.out, "python train.py \\x1b]0;title\\x07") != NULL);
    /* JSON: the exact names (only bytes that are not UTF-8 become U+FFFD). */
    const char *json[] = {"report", path, "--format", "json", NULL};
    run(json);
    char e[256];
    yajl_val v = yajl_tree_parse(R.out, e, sizeof e);
    CHECK(v != NULL);
    yajl_val rank = first_rank(v);
    yajl_val kn = jget(rank, "kernels", NULL, NULL);
    CHECK(kn && YAJL_IS_ARRAY(kn) && YAJL_GET_ARRAY(kn)->len == 1);
    CHECK_STR(str_of(jget(YAJL_GET_ARRAY(kn)->values[0], "name", NULL, NULL)), EVIL_KERNEL);
    yajl_val rg = jget(rank, "ranges", NULL, NULL);
    CHECK(rg && YAJL_IS_ARRAY(rg) && YAJL_GET_ARRAY(rg)->len == 1);
    CHECK_STR(str_of(jget(YAJL_GET_ARRAY(rg)->values[0], "name", NULL, NULL)), EVIL_RANGE);
    yajl_tree_free(v);
    const char *json_bad[] = {"report", bad, "--format", "json", NULL};
    run(json_bad);
    v = yajl_tree_parse(R.out, e, sizeof e);
    CHECK(v != NULL); /* valid JSON although the name is not UTF-8 */
    kn = jget(first_rank(v), "kernels", NULL, NULL);
    CHECK(kn && YAJL_GET_ARRAY(kn)->len == 1);
    CHECK_STR(str_of(jget(YAJL_GET_ARRAY(kn)->values[0], "name", NULL, NULL)),
              "bad\xef\xbf\xbd\xef\xbf\xbdname");
    yajl_tree_free(v);
    const char *info_json[] = {"info", path, "--json", NULL};
    run(info_json);
    v = yajl_tree_parse(R.out, e, sizeof e);
    CHECK(v != NULL);
    yajl_val th = jget(v, "threads", NULL, NULL);
    CHECK(th && YAJL_IS_ARRAY(th) && YAJL_GET_ARRAY(th)->len == 1);
    CHECK_STR(str_of(jget(YAJL_GET_ARRAY(th)->values[0], "name", NULL, NULL)), EVIL_THREAD);
    yajl_tree_free(v);
}

/* The size of file `path`, -1 when missing. */
static long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* -o never writes over what is being read (a trace given, one in a folder given, merge's
 * reports), nor over another trace unless --force; an earlier report is replaced as always;
 * each refusal is one line and exit 1, the trace intact. */
static void test_output_guard(void) {
    char a[300], b[300], sub[300], in_sub[300], rep[300], js[300];
    snprintf(a, sizeof a, "%s/a.tprof", dir);
    snprintf(b, sizeof b, "%s/b.tprof", dir);
    snprintf(sub, sizeof sub, "%s/job", dir);
    snprintf(in_sub, sizeof in_sub, "%s/job/rank0.tprof", dir);
    snprintf(rep, sizeof rep, "%s/report.txt", dir);
    snprintf(js, sizeof js, "%s/report.json", dir);
    write_trace(a, 10, 1, "k", "step", "main", 0, 0);
    write_trace(b, 10, 1, "k", "step", "main", 0, 0);
    mkdir(sub, 0755);
    write_trace(in_sub, 10, 1, "k", "step", "main", 0, 0);
    long size_a = file_size(a), size_b = file_size(b), size_in = file_size(in_sub);
    const char *self[] = {"report", a, "-o", a, NULL};
    run(self);
    CHECK_EQ_I(R.status, 1);
    CHECK(strstr(R.err, "which it reads; choose another -o") &&
          !strchr(strchr(R.err, '\n') + 1, '\n'));
    const char *self_forced[] = {"report", a, "-o", a, "--force", NULL};
    run(self_forced);
    CHECK_EQ_I(R.status, 1);
    const char *in_folder[] = {"report", sub, "-o", in_sub, "--force", NULL};
    run(in_folder);
    CHECK(R.status == 1 && strstr(R.err, "which it reads"));
    const char *other[] = {"report", a, "-o", b, NULL};
    run(other);
    CHECK(R.status == 1 && strstr(R.err, "is a trainprof trace; use --force to replace it"));
    const char *diff_self[] = {"diff", a, b, "-o", b, "--force", NULL};
    run(diff_self);
    CHECK(R.status == 1 && strstr(R.err, "trainprof diff: -o"));
    CHECK(file_size(a) == size_a && file_size(b) == size_b && file_size(in_sub) == size_in);
    const char *to_dir[] = {"report", a, "-o", dir, NULL};
    run(to_dir);
    CHECK(R.status == 1 && strstr(R.err, "is a folder"));
    const char *twice[] = {"report", a, "-o", rep, NULL};
    run(twice);
    CHECK_EQ_I(R.status, 0);
    run(twice); /* an earlier report: replaced */
    CHECK(R.status == 0 && file_size(rep) > 0);
    const char *forced[] = {"report", a, "-o", b, "--force", NULL};
    run(forced);
    CHECK(R.status == 0 && file_size(b) == file_size(rep)); /* the same text report */
    const char *to_json[] = {"report", a, "--format", "json", "-o", js, NULL};
    run(to_json);
    const char *merge_self[] = {"merge", js, "-o", js, NULL};
    run(merge_self);
    CHECK(R.status == 1 && strstr(R.err, "trainprof merge: -o"));
    /* -o -: standard output, as for export (never a file named "-") */
    const char *dash[] = {"report", a, "-o", "-", NULL};
    run(dash);
    CHECK(R.status == 0 && strstr(R.out, "== rank") && access("-", F_OK) != 0);
    const char *merge_dash[] = {"merge", js, "-o", "-", NULL};
    run(merge_dash);
    CHECK(R.status == 0 && R.out[0] && access("-", F_OK) != 0);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s TRAINPROF\n", argv[0]);
        return 2;
    }
    prog = argv[1];
    snprintf(dir, sizeof dir, "/tmp/tp-report-cli-XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    TP_RUN(test_drops_everywhere);
    TP_RUN(test_every_kernel_dropped);
    TP_RUN(test_names_are_terminal_safe);
    TP_RUN(test_output_guard);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        return 1;
    return tp_test_summary();
}
