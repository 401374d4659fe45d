/* `trainprof info` as a real process on real files: a trace with known contents (text and
 * --json, values checked; the JSON parsed with yajl), a cut-off copy (exit 0 with a warning),
 * and files that are not traces (exit 1, clear message), plus usage errors (exit 2).
 * argv[1] is the trainprof binary. */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <yajl/yajl_tree.h>

#include "tp_test.h"
#include "tp_writer.h"
#include "trace_testutil.h"

static const char *prog;
static char dir[200];

typedef struct {
    int status;
    char out[65536], err[4096];
} run_result;

static void slurp(const char *path, char *buf, size_t n) {
    FILE *f = fopen(path, "r");
    size_t k = f ? fread(buf, 1, n - 1, f) : 0;
    buf[k] = '\0';
    if (f)
        fclose(f);
}

/* Runs `trainprof info <a1> [a2]` with stdout and stderr captured. */
static void run_info(run_result *res, const char *a1, const char *a2) {
    char out[256], err[256];
    snprintf(out, sizeof out, "%s/out.txt", dir);
    snprintf(err, sizeof err, "%s/err.txt", dir);
    pid_t pid = fork();
    if (pid == 0) {
        int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(o, 1);
        dup2(e, 2);
        execl(prog, prog, "info", a1, a2, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    res->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
    slurp(out, res->out, sizeof res->out);
    slurp(err, res->err, sizeof res->err);
}

/* The writer stamps DROPPED records with this clock: inside the trace's fake time range. */
static uint64_t fixed_clock(void *ctx) {
    return *(const uint64_t *)ctx;
}

static uint32_t intern(tp_writer *w, const char *s) {
    uint32_t id = 0;
    tp_writer_intern_string(w, s, strlen(s), &id);
    return id;
}

/* 1 process, 2 threads (one renamed), 1 device, 1000 kernels, 500 API calls from
 * t = 1e9 to 1e9 + 2.5 ms, and 7 dropped kernels. */
static void write_known(const char *path) {
    tp_writer_opts o;
    tp_writer_opts_default(&o);
    o.producer = "info-test 1.0";
    o.chunk_bytes = 8192;
    tp_writer *w;
    CHECK_OK(tp_writer_open(path, &o, &w));
    static const uint64_t drop_time = 1002000000u;
    tp_writer_set_clock(w, fixed_clock, (void *)&drop_time);
    tp_rec_process p = {0};
    TP_REC_INIT(&p, TP_REC_PROCESS);
    p.pid = 31337;
    p.rank = 3;
    p.world_size = 8;
    p.local_rank = 1;
    p.host_sid = intern(w, "gpu-node-04");
    p.cmdline_sid = intern(w, "python train.py --model \"gpt\"");
    CHECK_OK(tp_writer_write_meta(w, &p));
    tp_rec_thread t = {0};
    TP_REC_INIT(&t, TP_REC_THREAD);
    t.pid = 31337;
    t.tid = 31337;
    t.name_sid = intern(w, "python");
    CHECK_OK(tp_writer_write_meta(w, &t));
    t.tid = 31340;
    t.name_sid = intern(w, "pt_worker");
    CHECK_OK(tp_writer_write_meta(w, &t));
    t.name_sid = intern(w, "dataloader");
    CHECK_OK(tp_writer_write_meta(w, &t));
    tp_rec_device d = {0};
    TP_REC_INIT(&d, TP_REC_DEVICE);
    d.id = 0;
    d.name_sid = intern(w, "NVIDIA H100 80GB HBM3");
    d.global_memory_bytes = 80ull << 30;
    d.sm_count = 132;
    d.compute_capability = 90;
    d.kind = TP_DEVICE_GPU;
    CHECK_OK(tp_writer_write_meta(w, &d));
    tp_stage *s;
    CHECK_OK(tp_writer_stage_open(w, 31337, &s));
    uint32_t kname = intern(w, "void gemm<float>(int)");
    for (uint32_t i = 0; i < 1000; i++) {
        tp_rec_kernel k = {0};
        TP_REC_INIT(&k, TP_REC_KERNEL);
        k.ts = 1000000000u + i * 2500u;
        k.end = k.ts + 2000;
        k.correlation = i;
        k.name_sid = kname;
        CHECK(tp_stage_write(s, &k));
        if (i % 2)
            continue;
        tp_rec_api a = {0};
        TP_REC_INIT(&a, TP_REC_API);
        a.ts = k.ts;
        a.end = k.ts + 1000;
        a.tid = 31337;
        a.correlation = i;
        CHECK(tp_stage_write(s, &a));
    }
    tp_writer_count_drop(w, TP_REC_KERNEL, TP_DROP_CUPTI, 7);
    CHECK_OK(tp_writer_close(w));
}

static void test_text(void) {
    char path[256];
    snprintf(path, sizeof path, "%s/known.tprof", dir);
    write_known(path);
    run_result r;
    run_info(&r, path, NULL);
    CHECK_EQ_I(r.status, 0);
    CHECK_STR(r.err, "");
    CHECK(strstr(r.out, "format:       v1.9\n"));
    CHECK(strstr(r.out, "producer:     info-test 1.0\n"));
    CHECK(strstr(r.out, "pid 31337    rank 3/8 (local 1)  host gpu-node-04\n"));
    CHECK(strstr(r.out, "command:     python train.py --model \"gpt\"\n"));
    CHECK(strstr(r.out, "threads:      2\n"));
    CHECK(strstr(r.out, "tid 31337      python\n"));
    CHECK(strstr(r.out, "tid 31340      dataloader\n"));
    CHECK(!strstr(r.out, "pt_worker"));
    CHECK(strstr(r.out, "device 0    NVIDIA H100 80GB HBM3  80.0 GiB  132 SMs  cc 9.0\n"));
    CHECK(strstr(r.out, "  KERNEL                   1000\n"));
    CHECK(strstr(r.out, "  API                       500\n"));
    CHECK(strstr(r.out, "dropped:      7\n"));
    CHECK(strstr(r.out, "  KERNEL                      7  (cupti)\n"));
    CHECK(strstr(r.out, "time span:    2499500 ns (2.5 ms), from 1000000000 to 1002499500\n"));
    CHECK(strstr(r.out, "index:        present\n"));
    CHECK(strstr(r.out, "integrity:    ok\n"));
    if (tp_test_failures)
        fprintf(stderr, "--- output:\n%s", r.out);
}

static yajl_val get(yajl_val v, const char *a, const char *b) {
    const char *p[] = {a, b, NULL};
    return yajl_tree_get(v, p, yajl_t_any);
}

static void test_json(void) {
    char path[256];
    snprintf(path, sizeof path, "%s/known.tprof", dir);
    run_result r;
    run_info(&r, path, "--json");
    CHECK_EQ_I(r.status, 0);
    char err[256];
    yajl_val v = yajl_tree_parse(r.out, err, sizeof err);
    CHECK(v != NULL);
    if (!v)
        return;
    CHECK_STR(YAJL_GET_STRING(get(v, "version", NULL)), "1.9");
    CHECK_STR(YAJL_GET_STRING(get(v, "producer", NULL)), "info-test 1.0");
    CHECK_EQ_I(YAJL_GET_INTEGER(get(v, "records", "KERNEL")), 1000);
    CHECK_EQ_I(YAJL_GET_INTEGER(get(v, "records", "API")), 500);
    CHECK_EQ_I(YAJL_GET_INTEGER(get(v, "dropped_total", NULL)), 7);
    CHECK_EQ_I(YAJL_GET_INTEGER(get(v, "t_min", NULL)), 1000000000);
    CHECK_EQ_I(YAJL_GET_INTEGER(get(v, "span_ns", NULL)), 2499500);
    yajl_val procs = get(v, "processes", NULL);
    CHECK(YAJL_IS_ARRAY(procs) && procs->u.array.len == 1);
    if (YAJL_IS_ARRAY(procs) && procs->u.array.len == 1) {
        yajl_val p0 = procs->u.array.values[0];
        CHECK_EQ_I(YAJL_GET_INTEGER(get(p0, "pid", NULL)), 31337);
        CHECK_EQ_I(YAJL_GET_INTEGER(get(p0, "rank", NULL)), 3);
        CHECK_STR(YAJL_GET_STRING(get(p0, "host", NULL)), "gpu-node-04");
        CHECK_STR(YAJL_GET_STRING(get(p0, "command", NULL)), "python train.py --model \"gpt\"");
    }
    yajl_val th = get(v, "threads", NULL);
    CHECK(YAJL_IS_ARRAY(th) && th->u.array.len == 2);
    if (YAJL_IS_ARRAY(th) && th->u.array.len == 2)
        CHECK_STR(YAJL_GET_STRING(get(th->u.array.values[1], "name", NULL)), "dataloader");
    yajl_val dev = get(v, "devices", NULL);
    CHECK(YAJL_IS_ARRAY(dev) && dev->u.array.len == 1);
    CHECK(YAJL_IS_TRUE(get(v, "integrity", "index_present")));
    CHECK_EQ_I(YAJL_GET_INTEGER(get(v, "integrity", "chunks_bad")), 0);
    yajl_tree_free(v);
}

/* A copy cut in the middle: still readable (exit 0), damage named on stderr and in JSON. */
static void test_cut(void) {
    char path[256], cut[256];
    snprintf(path, sizeof path, "%s/known.tprof", dir);
    snprintf(cut, sizeof cut, "%s/cut.tprof", dir);
    size_t n;
    uint8_t *buf = tt_read_file(path, &n);
    CHECK(buf != NULL);
    if (!buf)
        return;
    FILE *f = fopen(cut, "wb");
    fwrite(buf, 1, n * 2 / 3, f);
    fclose(f);
    free(buf);
    run_result r;
    run_info(&r, cut, NULL);
    CHECK_EQ_I(r.status, 0);
    CHECK(strstr(r.err, "warning") && strstr(r.err, "file cut off"));
    CHECK(strstr(r.out, "index:        missing\n"));
    run_info(&r, cut, "--json");
    CHECK_EQ_I(r.status, 0);
    yajl_val v = yajl_tree_parse(r.out, NULL, 0);
    CHECK(v && YAJL_IS_TRUE(get(v, "integrity", "truncated")));
    CHECK(v && YAJL_GET_INTEGER(get(v, "records", "KERNEL")) < 1000);
    yajl_tree_free(v);
}

static void test_not_traces(void) {
    char garbage[256], empty[256];
    snprintf(garbage, sizeof garbage, "%s/garbage.bin", dir);
    snprintf(empty, sizeof empty, "%s/empty.tprof", dir);
    FILE *f = fopen(garbage, "wb");
    for (int i = 0; i < 4096; i++)
        fputc((i * 7919) & 0xff, f);
    fclose(f);
    fclose(fopen(empty, "wb"));
    run_result r;
    run_info(&r, garbage, NULL);
    CHECK_EQ_I(r.status, 1);
    CHECK(strstr(r.err, "not a trainprof trace"));
    CHECK_STR(r.out, "");
    run_info(&r, empty, NULL);
    CHECK_EQ_I(r.status, 1);
    CHECK(strstr(r.err, "is empty"));
    /* the folder: its .tprof files by name (cut, empty, known), the unreadable one named */
    run_info(&r, dir, NULL);
    CHECK_EQ_I(r.status, 1);
    CHECK(strstr(r.err, "empty.tprof' is empty"));
    const char *cut = strstr(r.out, "/cut.tprof ("), *known = strstr(r.out, "/known.tprof (");
    CHECK(cut && known && cut < known);
    run_info(&r, "/nonexistent/file.tprof", "--json");
    CHECK_EQ_I(r.status, 1);
    CHECK(strstr(r.err, "No such file"));
    run_info(&r, "--bogus", NULL);
    CHECK_EQ_I(r.status, 2);
    run_info(&r, garbage, empty); /* both named, neither shown */
    CHECK_EQ_I(r.status, 1);
    CHECK(strstr(r.err, "not a trainprof trace") && strstr(r.err, "is empty"));
    CHECK_STR(r.out, "");
}

/* Several traces: a folder of two (a recording's), then --json an array of their objects;
 * one file stays one object (test_json). */
static void test_several(void) {
    char sub[256], a[300], b[300];
    snprintf(sub, sizeof sub, "%s/job", dir);
    mkdir(sub, 0755);
    snprintf(a, sizeof a, "%s/a.tprof", sub);
    snprintf(b, sizeof b, "%s/b.tprof", sub);
    write_known(a);
    write_known(b);
    run_result r;
    run_info(&r, sub, NULL);
    CHECK_EQ_I(r.status, 0);
    const char *pa = strstr(r.out, "/a.tprof ("), *pb = strstr(r.out, "/b.tprof (");
    CHECK(pa && pb && pa < pb && strstr(pa, "integrity:    ok\n") && strstr(pa, "\n\nfile:"));
    run_info(&r, sub, "--json");
    CHECK_EQ_I(r.status, 0);
    char e[256];
    yajl_val v = yajl_tree_parse(r.out, e, sizeof e);
    CHECK(v && YAJL_IS_ARRAY(v) && YAJL_GET_ARRAY(v)->len == 2);
    if (v && YAJL_IS_ARRAY(v) && YAJL_GET_ARRAY(v)->len == 2)
        CHECK_STR(YAJL_GET_STRING(get(YAJL_GET_ARRAY(v)->values[1], "producer", NULL)),
                  "info-test 1.0");
    yajl_tree_free(v);
    unlink(a), unlink(b), rmdir(sub);
}

int main(int argc, char **argv) {
    if (argc < 2)
        TP_SKIP("usage: test_trace_info_cli TRAINPROF");
    prog = argv[1];
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/tp_info_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return 1;
    TP_RUN(test_text);
    TP_RUN(test_json);
    TP_RUN(test_cut);
    TP_RUN(test_not_traces);
    TP_RUN(test_several);
    const char *files[] = {"known.tprof", "cut.tprof", "garbage.bin",
                           "empty.tprof", "out.txt",   "err.txt"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char p[300];
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        unlink(p);
    }
    rmdir(dir);
    return tp_test_summary();
}
