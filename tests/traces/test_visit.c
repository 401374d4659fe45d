/* Tests of tp_visit over a real trace file: metadata order, thread digests (renames), NVTX
 * pairing (nesting per domain, start/end across threads, unpaired and unclosed halves), the
 * zero-extension of an older writer's shorter record, type filtering, and a handler's error
 * ending the walk. */
#include "tp_visit.h"

#include "tp_reader.h"
#include "tp_test.h"
#include "tp_writer.h"
#include "trace_testutil.h"

/* What the handlers saw, in order. */
#define LOG_MAX 256
typedef struct {
    uint16_t meta_type[LOG_MAX];
    uint32_t meta_key[LOG_MAX]; /* pid, tid, device id, ... */
    size_t n_meta;
    tp_visit_thread thr[16];
    const char *thr_name[16];
    size_t n_thr;
    tp_visit_range rng[16];
    size_t n_rng;
    uint16_t data_type[LOG_MAX];
    size_t n_data;
    uint64_t short_kernel_graph_node; /* what the 72-byte KERNEL read as graph_node_id */
    int kernels_before_error;         /* fail on this kernel (0: never) */
    int kernels;
} seen;

static uint32_t sid_a, sid_b, sid_c, sid_r1, sid_r2, sid_r3, sid_r4, sid_r5;

static void meta_thread(tp_writer *w, uint32_t tid, uint32_t name_sid) {
    tp_rec_thread t;
    TP_REC_CLEAR(&t, TP_REC_THREAD);
    t.tid = tid;
    t.pid = 10;
    t.name_sid = name_sid;
    CHECK_OK(tp_writer_write_meta(w, &t));
}

static void write_meta(tp_writer *w) {
    tp_rec_process p;
    TP_REC_CLEAR(&p, TP_REC_PROCESS);
    p.pid = 10;
    CHECK_OK(tp_writer_write_meta(w, &p));
    tp_rec_clock_sync k;
    TP_REC_CLEAR(&k, TP_REC_CLOCK_SYNC);
    k.ts = 5;
    CHECK_OK(tp_writer_write_meta(w, &k)); /* written before the devices, visited after */
    tp_rec_device d;
    TP_REC_CLEAR(&d, TP_REC_DEVICE);
    d.id = 3;
    CHECK_OK(tp_writer_write_meta(w, &d));
    meta_thread(w, 1, 0);     /* seen unnamed first ... */
    meta_thread(w, 2, sid_b); /* never renamed */
    meta_thread(w, 1, sid_a); /* ... then named: tid 1 is "a" */
    meta_thread(w, 3, sid_c); /* named, then the name taken away */
    meta_thread(w, 3, 0);
    p.pid = 11;
    CHECK_OK(tp_writer_write_meta(w, &p));
}

static void push(tp_stage *s, uint64_t ts, uint32_t tid, uint32_t dom, uint32_t msg, int color) {
    tp_rec_nvtx n;
    TP_REC_CLEAR(&n, TP_REC_NVTX_PUSH);
    n.ts = ts, n.tid = tid, n.domain = dom, n.msg_sid = msg, n.color = 0xff00ff00u;
    n.category = 4;
    if (color)
        n.h.flags |= TP_NVTX_HAS_COLOR;
    CHECK(tp_stage_write(s, &n));
}

static void pop(tp_stage *s, uint64_t ts, uint32_t tid, uint32_t dom) {
    tp_rec_nvtx_pop n;
    TP_REC_CLEAR(&n, TP_REC_NVTX_POP);
    n.ts = ts, n.tid = tid, n.domain = dom;
    CHECK(tp_stage_write(s, &n));
}

static void start(tp_stage *s, uint64_t ts, uint64_t id, uint32_t tid, uint32_t msg) {
    tp_rec_nvtx_start n;
    TP_REC_CLEAR(&n, TP_REC_NVTX_START);
    n.ts = ts, n.range_id = id, n.tid = tid, n.msg_sid = msg, n.domain = 2;
    CHECK(tp_stage_write(s, &n));
}

static void end(tp_stage *s, uint64_t ts, uint64_t id, uint32_t tid) {
    tp_rec_nvtx_end n;
    TP_REC_CLEAR(&n, TP_REC_NVTX_END);
    n.ts = ts, n.range_id = id, n.tid = tid;
    CHECK(tp_stage_write(s, &n));
}

static void kernel(tp_stage *s, uint64_t ts, uint32_t size) {
    tp_rec_kernel k;
    TP_REC_CLEAR(&k, TP_REC_KERNEL);
    k.ts = ts, k.end = ts + 5, k.graph_node_id = 0xdeadbeef;
    k.h.size = size; /* < sizeof k: as an older writer wrote it, without the tail */
    CHECK(tp_stage_write(s, &k));
}

static void dropped(tp_stage *s, uint64_t ts) {
    tp_rec_dropped d;
    TP_REC_CLEAR(&d, TP_REC_DROPPED);
    d.ts = ts, d.count = 2;
    CHECK(tp_stage_write(s, &d));
}

/* The data, in file order. Ranges: r1 [100,400) tid 1 dom 0 with r2 [150,200) nested and r3
 * [120,300) on dom 1 around them; r4 start/end [130,500) ending on another thread; a
 * start/end range [140,450) whose END (tid 3) comes before its START in the file, as when
 * the ending thread's chunk is drained first; an END whose START never comes; a pop with
 * nothing open; r5 pushed and never popped; a start never ended. */
static void write_data(tp_writer *w) {
    tp_stage *s;
    CHECK_OK(tp_writer_stage_open(w, 1, &s));
    push(s, 100, 1, 0, sid_r1, 1);
    end(s, 450, 99, 3);  /* before its START */
    end(s, 460, 123, 3); /* never started */
    push(s, 120, 1, 1, sid_r3, 0);
    start(s, 130, 77, 1, sid_r4);
    push(s, 150, 1, 0, sid_r2, 0);
    kernel(s, 160, sizeof(tp_rec_kernel));
    pop(s, 200, 1, 0);            /* closes r2, the innermost on (1, 0) */
    pop(s, 300, 1, 1);            /* closes r3 */
    start(s, 140, 99, 1, sid_r2); /* its END came first: whole now */
    pop(s, 350, 9, 0);            /* nothing open on (9, 0) */
    kernel(s, 380, 72);           /* short record */
    pop(s, 400, 1, 0);            /* closes r1 */
    end(s, 500, 77, 2);           /* r4, ended on tid 2 */
    push(s, 600, 2, 0, sid_r5, 0);
    start(s, 650, 88, 2, sid_r5);
    dropped(s, 700);
    tp_stage_close(s);
}

static void write_trace(const char *path) {
    tp_writer_opts o;
    tp_writer_opts_default(&o);
    o.chunk_bytes = 256; /* several data chunks */
    tp_writer *w;
    CHECK_OK(tp_writer_open(path, &o, &w));
    tp_writer_intern_string(w, "a", 1, &sid_a);
    tp_writer_intern_string(w, "b", 1, &sid_b);
    tp_writer_intern_string(w, "c", 1, &sid_c);
    tp_writer_intern_string(w, "r1", 2, &sid_r1);
    tp_writer_intern_string(w, "r2", 2, &sid_r2);
    tp_writer_intern_string(w, "r3", 2, &sid_r3);
    tp_writer_intern_string(w, "r4", 2, &sid_r4);
    tp_writer_intern_string(w, "r5", 2, &sid_r5);
    write_meta(w);
    write_data(w);
    CHECK_OK(tp_writer_close(w));
}

/* ---------------------------------------------------------------- handlers */

static tp_status on_meta(void *ctx, const tp_rec_hdr *h) {
    seen *s = ctx;
    uint32_t key = ((const uint32_t *)(h + 1))[0]; /* pid / tid / id: the first field */
    if (s->n_meta < LOG_MAX)
        s->meta_type[s->n_meta] = h->type, s->meta_key[s->n_meta++] = key;
    return TP_OK;
}

static tp_status on_thread(void *ctx, const tp_visit_thread *t) {
    seen *s = ctx;
    if (s->n_thr < 16)
        s->thr_name[s->n_thr] = t->name, s->thr[s->n_thr++] = *t;
    return TP_OK;
}

static tp_status on_range(void *ctx, const tp_visit_range *r) {
    seen *s = ctx;
    if (s->n_rng < 16)
        s->rng[s->n_rng++] = *r;
    return TP_OK;
}

static tp_status on_data(void *ctx, const tp_rec_hdr *h) {
    seen *s = ctx;
    if (s->n_data < LOG_MAX)
        s->data_type[s->n_data++] = h->type;
    return TP_OK;
}

static tp_status on_kernel(void *ctx, const tp_rec_hdr *h) {
    seen *s = ctx;
    const tp_rec_kernel *k = (const void *)h;
    if (k->ts == 380)
        s->short_kernel_graph_node = k->graph_node_id;
    if (++s->kernels == s->kernels_before_error)
        return TP_ERR_IO;
    return on_data(ctx, h);
}

static const tp_visitor everything = {
    .meta = {[TP_REC_PROCESS] = on_meta, [TP_REC_DEVICE] = on_meta, [TP_REC_CLOCK_SYNC] = on_meta},
    .thread = on_thread,
    .data = {[TP_REC_KERNEL] = on_kernel, [TP_REC_DROPPED] = on_data},
    .range = on_range,
};

/* ---------------------------------------------------------------- tests */

static char path[512];

static tp_reader *open_trace(void) {
    tp_reader *r = NULL;
    if (tp_reader_open(path, &r) != TP_OK)
        return NULL;
    return r;
}

/* Metadata by type number (PROCESS, DEVICE, CLOCK_SYNC), each type in file order. */
static void test_meta_order(void) {
    tp_reader *r = open_trace();
    CHECK(r != NULL);
    static seen s;
    memset(&s, 0, sizeof s);
    CHECK_OK(tp_visit_run(r, &everything, &s, NULL));
    CHECK_EQ_U(s.n_meta, 4);
    CHECK_EQ_U(s.meta_type[0], TP_REC_PROCESS);
    CHECK_EQ_U(s.meta_key[0], 10);
    CHECK_EQ_U(s.meta_type[1], TP_REC_PROCESS);
    CHECK_EQ_U(s.meta_key[1], 11);
    CHECK_EQ_U(s.meta_type[2], TP_REC_DEVICE);
    CHECK_EQ_U(s.meta_key[2], 3);
    CHECK_EQ_U(s.meta_type[3], TP_REC_CLOCK_SYNC);
    tp_reader_close(r);
}

/* Each THREAD record with its tid's latest name and first/last flags. */
static void test_threads(void) {
    tp_reader *r = open_trace();
    CHECK(r != NULL);
    static seen s;
    memset(&s, 0, sizeof s);
    CHECK_OK(tp_visit_run(r, &everything, &s, NULL));
    static const struct {
        uint32_t tid;
        const char *name;
        int first, last;
    } want[] = {{1, "a", 1, 0}, {2, "b", 1, 1}, {1, "a", 0, 1}, {3, NULL, 1, 0}, {3, NULL, 0, 1}};
    CHECK_EQ_U(s.n_thr, 5);
    for (size_t i = 0; i < 5 && i < s.n_thr; i++) {
        CHECK_EQ_U(s.thr[i].rec->tid, want[i].tid);
        CHECK_EQ_I(s.thr[i].first, want[i].first);
        CHECK_EQ_I(s.thr[i].last, want[i].last);
        if (want[i].name)
            CHECK_STR(s.thr_name[i], want[i].name);
        else
            CHECK(s.thr_name[i] == NULL);
    }
    tp_reader_close(r);
}

/* Ranges as they close, then the open ones innermost first: pushes, then starts. */
static void test_ranges(void) {
    tp_reader *r = open_trace();
    CHECK(r != NULL);
    static seen s;
    memset(&s, 0, sizeof s);
    tp_visit_stats st;
    CHECK_OK(tp_visit_run(r, &everything, &s, &st));
    static const struct {
        uint64_t ts, end;
        int closed;
        uint16_t by;
        uint32_t tid, domain, color, end_tid;
    } want[] = {{150, 200, 1, TP_REC_NVTX_PUSH, 1, 0, 0, 1},
                {120, 300, 1, TP_REC_NVTX_PUSH, 1, 1, 0, 1},
                {140, 450, 1, TP_REC_NVTX_START, 1, 2, 0, 3},
                {100, 400, 1, TP_REC_NVTX_PUSH, 1, 0, 0xff00ff00u, 1},
                {130, 500, 1, TP_REC_NVTX_START, 1, 2, 0, 2},
                {600, 0, 0, TP_REC_NVTX_PUSH, 2, 0, 0, 0},
                {650, 0, 0, TP_REC_NVTX_START, 2, 2, 0, 0}};
    uint32_t msg[] = {sid_r2, sid_r3, sid_r2, sid_r1, sid_r4, sid_r5, sid_r5};
    CHECK_EQ_U(s.n_rng, 7);
    for (size_t i = 0; i < 7 && i < s.n_rng; i++) {
        const tp_visit_range *g = &s.rng[i];
        CHECK_EQ_U(g->open.ts, want[i].ts);
        CHECK_EQ_U(g->end, want[i].end);
        CHECK_EQ_I(g->closed, want[i].closed);
        CHECK_EQ_U(g->open.opened_by, want[i].by);
        CHECK_EQ_U(g->open.tid, want[i].tid);
        CHECK_EQ_U(g->open.domain, want[i].domain);
        CHECK_EQ_U(g->open.color, want[i].color);
        CHECK_EQ_U(g->open.msg_sid, msg[i]);
        CHECK_EQ_U(g->end_tid, want[i].end_tid);
        CHECK_EQ_U(g->open.category, want[i].by == TP_REC_NVTX_PUSH ? 4 : 0);
    }
    CHECK_EQ_U(st.nvtx_unpaired, 2); /* the pop with nothing open, the END never started */
    CHECK_EQ_U(st.nvtx_unclosed, 2);
    CHECK_EQ_U(st.records, 17); /* kernels, drop and the 14 NVTX halves; nothing else asked */
    tp_reader_close(r);
}

/* A record from an older writer reads with its missing tail as zeros. */
static void test_short_record(void) {
    tp_reader *r = open_trace();
    CHECK(r != NULL);
    static seen s;
    memset(&s, 0, sizeof s);
    s.short_kernel_graph_node = 1;
    CHECK_OK(tp_visit_run(r, &everything, &s, NULL));
    CHECK_EQ_U(s.kernels, 2);
    CHECK_EQ_U(s.short_kernel_graph_node, 0);
    tp_reader_close(r);
}

/* Only the types with a handler come through; no handler at all: no data pass. */
static void test_filter(void) {
    tp_reader *r = open_trace();
    CHECK(r != NULL);
    static seen s;
    memset(&s, 0, sizeof s);
    tp_visitor drops_only = {.data = {[TP_REC_DROPPED] = on_data}};
    tp_visit_stats st;
    CHECK_OK(tp_visit_run(r, &drops_only, &s, &st));
    CHECK_EQ_U(st.records, 1);
    CHECK_EQ_U(s.n_data, 1);
    CHECK_EQ_U(s.data_type[0], TP_REC_DROPPED);
    tp_visitor none = {.meta = {[TP_REC_PROCESS] = on_meta}};
    memset(&s, 0, sizeof s);
    CHECK_OK(tp_visit_run(r, &none, &s, &st));
    CHECK_EQ_U(st.records, 0);
    CHECK_EQ_U(s.n_meta, 2);
    tp_visitor each = {.each = on_data};
    memset(&s, 0, sizeof s);
    CHECK_OK(tp_visit_run(r, &each, &s, &st));
    CHECK_EQ_U(s.n_data, 17); /* every data record */
    CHECK_EQ_U(s.data_type[0], TP_REC_NVTX_PUSH);
    CHECK_EQ_U(s.data_type[16], TP_REC_DROPPED);
    tp_reader_close(r);
}

/* A handler's status ends the walk there and comes back from tp_visit_run. */
static void test_handler_error(void) {
    tp_reader *r = open_trace();
    CHECK(r != NULL);
    static seen s;
    memset(&s, 0, sizeof s);
    s.kernels_before_error = 1;
    tp_visit_stats st;
    CHECK_EQ_I(tp_visit_run(r, &everything, &s, &st), TP_ERR_IO);
    CHECK_EQ_U(s.kernels, 1);
    CHECK_EQ_U(s.n_data, 0);   /* the later DROPPED never came */
    CHECK_EQ_U(s.n_rng, 0);    /* nor did any range close */
    CHECK_EQ_U(st.records, 7); /* push, end, end, push, start, push, kernel */
    tp_reader_close(r);
}

/* Two walks saw the same: NVTX pairing counts, data records, ranges and kernels (the records'
 * count is the caller's: a walk may leave some out). */
static void same_walk(const seen *a, const tp_visit_stats *sa, const seen *b,
                      const tp_visit_stats *sb) {
    CHECK_EQ_U(sa->nvtx_unpaired, sb->nvtx_unpaired);
    CHECK_EQ_U(sa->nvtx_unclosed, sb->nvtx_unclosed);
    CHECK_EQ_U(a->n_data, b->n_data);
    CHECK(!memcmp(a->data_type, b->data_type, sizeof a->data_type));
    CHECK_EQ_U(a->n_rng, b->n_rng);
    for (size_t i = 0; i < a->n_rng; i++)
        CHECK(a->rng[i].open.ts == b->rng[i].open.ts && a->rng[i].end == b->rng[i].end);
    CHECK_EQ_U(a->kernels, b->kernels);
}

/* Chunks decoded ahead on a second thread: the same records, ranges and counts in the same
 * order, and a handler's error still ends the walk (the thread is stopped and joined). */
static void test_read_ahead(void) {
    static seen a, b;
    tp_visitor ahead = everything;
    ahead.read_ahead = 1;
    tp_visit_stats sa, sb;
    for (int err = 1; err >= 0; err--) { /* 1: the first kernel fails the walk */
        memset(&a, 0, sizeof a), memset(&b, 0, sizeof b);
        a.kernels_before_error = b.kernels_before_error = err;
        tp_reader *r = open_trace(), *q = open_trace();
        CHECK(r != NULL && q != NULL);
        CHECK_EQ_I(tp_visit_run(r, &everything, &a, &sa), tp_visit_run(q, &ahead, &b, &sb));
        CHECK_EQ_U(sa.records, sb.records);
        same_walk(&a, &sa, &b, &sb);
        CHECK_EQ_U(tp_reader_integrity(r)->chunks_ok, tp_reader_integrity(q)->chunks_ok);
        tp_reader_close(r), tp_reader_close(q);
    }
    CHECK_EQ_U(sa.records, 17);
}

/* What t_limit does, as a `keep` would do it: records of a timed type (by the type's layout)
 * whose ts, or end for an interval type, lies past the limit are left out and counted. */
static uint64_t keep_limit, kept_out;
static int keep_within(void *ctx, const tp_rec_hdr *h) {
    (void)ctx;
    struct {
        tp_rec_hdr h;
        uint64_t ts, end;
    } t;
    uint16_t f = tp_record_info(h->type)->flags;
    if (!(f & TP_RF_TIMED))
        return 1;
    tp_record_get(h, &t, sizeof t);
    if (t.ts <= keep_limit && (!(f & TP_RF_INTERVAL) || t.end <= keep_limit))
        return 1;
    kept_out++;
    return 0;
}

/* t_limit (tp_cursor_set_late, a chunk at a time) leaves out the records the `keep` above
 * does, with and without read-ahead, for limits inside and across the chunks. */
static void test_late(void) {
    static seen a, b;
    uint64_t some = 0, all = 0; /* limits that left some out, and none */
    for (uint64_t limit = 50; limit <= 750; limit += 25) {
        for (int ahead = 0; ahead <= 1; ahead++) {
            tp_visitor ref = everything, late = everything;
            ref.keep = keep_within;
            late.t_limit = limit;
            ref.read_ahead = late.read_ahead = ahead;
            keep_limit = limit, kept_out = 0;
            memset(&a, 0, sizeof a), memset(&b, 0, sizeof b);
            tp_reader *r = open_trace(), *q = open_trace();
            CHECK(r != NULL && q != NULL);
            tp_visit_stats sa, sb;
            CHECK_OK(tp_visit_run(r, &ref, &a, &sa));
            CHECK_OK(tp_visit_run(q, &late, &b, &sb));
            CHECK_EQ_U(sb.late, kept_out);
            CHECK_EQ_U(sa.records, sb.records + sb.late);
            same_walk(&a, &sa, &b, &sb);
            tp_reader_close(r), tp_reader_close(q);
            some += kept_out > 0, all += kept_out == 0;
        }
    }
    CHECK(some > 0 && all > 0); /* both kinds of chunk: with late records, and within */
}

int main(void) {
    tt_temp_path(path, sizeof path, "visit");
    write_trace(path);
    TP_RUN(test_meta_order);
    TP_RUN(test_threads);
    TP_RUN(test_ranges);
    TP_RUN(test_short_record);
    TP_RUN(test_filter);
    TP_RUN(test_handler_error);
    TP_RUN(test_read_ahead);
    TP_RUN(test_late);
    unlink(path);
    return tp_test_summary();
}
