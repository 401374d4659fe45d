/* tp_cut and tp_layout_member_as: a window of a trace as a trace of its own, as `capture`
 * writes a job's other processes beside the main process's capture. Written with the writer
 * (a PROCESS record, names interned as the records go, a stack, several chunks), cut, read
 * back: every metadata record with its ids, exactly the records a time query keeps, an
 * existing file never replaced; and the names a recording's members take in a capture's. */
#include "tp_cut.h"
#include "tp_layout.h"
#include "tp_reader.h"
#include "tp_test.h"
#include "tp_writer.h"
#include "trace_testutil.h"

#define NREC 400

static tp_rec_kernel kernels[NREC];
static uint32_t stack_id;

static void write_trace(const char *path) {
    tp_writer_opts o;
    tp_writer_opts_default(&o);
    o.chunk_bytes = 2048;
    tp_writer *w;
    CHECK_OK(tp_writer_open(path, &o, &w));
    tp_rec_process p;
    TP_REC_CLEAR(&p, TP_REC_PROCESS);
    p.pid = 4242;
    p.job_id = 77;
    CHECK_OK(tp_writer_write_meta(w, &p));
    uint64_t frames[] = {TP_FRAME_MAKE(1, 0x100), TP_FRAME_MAKE(1, 0x200)};
    CHECK_OK(tp_writer_intern_stack(w, frames, 2, &stack_id));
    tp_stage *s;
    CHECK_OK(tp_writer_stage_open(w, 9, &s));
    uint64_t seed = 5;
    for (int i = 0; i < NREC; i++) {
        char name[32];
        int n = snprintf(name, sizeof name, "k_%d", i / 50);
        uint32_t sid;
        CHECK_OK(tp_writer_intern_string(w, name, (size_t)n, &sid));
        tt_fill(&kernels[i], TP_REC_KERNEL, 1000u * (uint64_t)i, &seed);
        kernels[i].name_sid = sid;
        kernels[i].correlation = (uint32_t)i;
        CHECK(tp_stage_write(s, &kernels[i]));
        if (i % 60 == 0)
            CHECK_OK(tp_writer_flush(w));
    }
    CHECK_OK(tp_writer_close(w));
}

static void test_window(const char *src) {
    char dst[256];
    tt_temp_path(dst, sizeof dst, "cut_dst");
    unlink(dst);
    uint64_t t0 = 100500, t1 = 250000, n = 0, want = 0;
    for (int i = 0; i < NREC; i++) {
        uint64_t ts = tp_record_ts(&kernels[i].h), end = tp_record_end(&kernels[i].h);
        want += ts < t1 && (end > t0 || ts >= t0);
    }
    CHECK(want > 0 && want < NREC);
    CHECK_OK(tp_cut_window(src, t0, t1, dst, &n));
    CHECK_EQ_U(n, want);
    tp_reader *r;
    CHECK_OK(tp_reader_open(dst, &r));
    if (!r)
        return;
    CHECK(tp_reader_integrity(r)->index_ok);
    const tp_rec_hdr *const *procs;
    CHECK_EQ_U(tp_reader_meta(r, TP_REC_PROCESS, &procs), 1);
    CHECK_EQ_U(((const tp_rec_process *)procs[0])->job_id, 77);
    uint32_t nf = 0;
    CHECK(tp_reader_stack(r, stack_id, &nf) && nf == 2);
    tp_cursor *c;
    CHECK_OK(tp_cursor_open(r, NULL, &c));
    uint64_t got = 0;
    for (const tp_rec_hdr *h; c && (h = tp_cursor_next(c)); got++) {
        const tp_rec_kernel *k = (const tp_rec_kernel *)h;
        CHECK(h->type == TP_REC_KERNEL && k->correlation < NREC &&
              !memcmp(k, &kernels[k->correlation], sizeof *k));
        char want_name[32];
        snprintf(want_name, sizeof want_name, "k_%u", k->correlation / 50);
        const char *name = tp_reader_string(r, k->name_sid);
        CHECK(name && !strcmp(name, want_name));
    }
    tp_cursor_close(c);
    CHECK_EQ_U(got, want);
    tp_reader_close(r);
    /* never over an existing file; a window with nothing in it, an empty one */
    CHECK_EQ_I(tp_cut_window(src, t0, t1, dst, &n), TP_ERR_EXISTS);
    unlink(dst);
    CHECK_OK(tp_cut_window(src, 1u << 30, (1u << 30) + 10, dst, &n));
    CHECK_EQ_U(n, 0);
    unlink(dst);
    CHECK_EQ_I(tp_cut_window(src, 5, 5, dst, &n), TP_ERR_ARG);
    CHECK_EQ_I(tp_cut_window("/nonexistent/x.tprof", 0, 10, dst, &n), TP_ERR_OPEN);
    CHECK(access(dst, F_OK) != 0);
}

static void test_member_names(void) {
    char b[256];
    CHECK(tp_layout_member_as("/a/run.4242.tprof", "/a/run.tprof", "/b/cap.tprof", b, sizeof b) ==
              0 &&
          !strcmp(b, "/b/cap.4242.tprof"));
    CHECK(tp_layout_member_as("run.4242.exec1.tprof", "run.tprof", "cap-1.tprof", b, sizeof b) ==
              0 &&
          !strcmp(b, "cap-1.4242.exec1.tprof"));
    CHECK(tp_layout_member_as("/a/run.exec2.tprof", "/a/run.tprof", "c.tprof", b, sizeof b) == 0 &&
          !strcmp(b, "c.exec2.tprof"));
    CHECK_EQ_I(tp_layout_member_as("/a/other.4242.tprof", "/a/run.tprof", "c.tprof", b, sizeof b),
               -1);
    CHECK_EQ_I(tp_layout_member_as("/a/run.4242.tprof", "/a/run.tprof", "c.tprof", b, 8), -1);
}

static void test_cut(void) {
    char src[256];
    tt_temp_path(src, sizeof src, "cut_src");
    write_trace(src);
    test_window(src);
    unlink(src);
}

int main(void) {
    TP_RUN(test_cut);
    TP_RUN(test_member_names);
    return tp_test_summary();
}
