/* Round trip of every record type through tp_writer and tp_reader, field by field, plus
 * format evolution: records from a newer writer (appended tail, unknown type) and from an
 * older one (shorter records) read correctly. */
#include "tp_chunk.h"
#include "tp_reader.h"
#include "tp_test.h"
#include "tp_writer.h"
#include "trace_testutil.h"

#define SLOT 128 /* bytes kept per written record (the largest v1 record is 104) */

static const uint16_t data_types[] = {
    TP_REC_NVTX_PUSH,  TP_REC_NVTX_POP, TP_REC_NVTX_START, TP_REC_NVTX_END,   TP_REC_NVTX_MARK,
    TP_REC_API,        TP_REC_KERNEL,   TP_REC_MEMCPY,     TP_REC_MEMSET,     TP_REC_SYNC,
    TP_REC_DEVICE_MEM, TP_REC_HEAP,     TP_REC_REGION,     TP_REC_ALLOC_FAIL, TP_REC_COUNTER,
    TP_REC_OVERHEAD,   TP_REC_DROPPED,  TP_REC_SAMPLE};
#define NDATA (sizeof data_types / sizeof data_types[0])

static const uint16_t meta_types[] = {
    TP_REC_PROCESS,    TP_REC_THREAD, TP_REC_MODULE, TP_REC_DOMAIN,
    TP_REC_CATEGORY,   TP_REC_DEVICE, TP_REC_STREAM, TP_REC_EXT_CORRELATION,
    TP_REC_CLOCK_SYNC, TP_REC_PYCODE, TP_REC_ENV};
#define NMETA (sizeof meta_types / sizeof meta_types[0])
#define NRECS 3000

/* What the test wrote, to compare against what the reader returns. */
typedef struct {
    uint8_t data[NRECS][SLOT];
    uint8_t meta[NMETA][SLOT];
    tp_rec_thread renamed;
    uint32_t sid_kernel, sid_host, sid_cmd, sid_path, sid_thread, sid_thread2, sid_empty;
    uint32_t stack_id, stack0_id;
    uint64_t frames[5];
    uint64_t count[TP_REC_TYPE_LIMIT];
    uint64_t t_min, t_max, dropped;
} expected;

static expected ex;

static void note_time(const tp_rec_hdr *h) {
    if (!(h->flags & TP_RF_TIMED))
        return;
    uint64_t a = tp_record_ts(h), b = tp_record_end(h);
    ex.t_min = a < ex.t_min ? a : ex.t_min;
    ex.t_max = (b > a ? b : a) > ex.t_max ? (b > a ? b : a) : ex.t_max;
}

static void make_meta(size_t i, uint64_t *seed) {
    tp_rec_hdr *h = (tp_rec_hdr *)ex.meta[i];
    tt_fill(h, meta_types[i], 5000 + i, seed);
    if (h->type == TP_REC_PROCESS) {
        tp_rec_process *p = (tp_rec_process *)h;
        p->host_sid = ex.sid_host;
        p->cmdline_sid = ex.sid_cmd;
    } else if (h->type == TP_REC_THREAD) {
        tp_rec_thread *t = (tp_rec_thread *)h;
        t->tid = 4242;
        t->name_sid = ex.sid_thread;
    } else if (h->type == TP_REC_MODULE) {
        tp_rec_module *m = (tp_rec_module *)h;
        m->id = 7;
        m->path_sid = ex.sid_path;
        m->build_id_len = 20;
    } else if (h->type == TP_REC_PYCODE) {
        tp_rec_pycode *c = (tp_rec_pycode *)h;
        c->id = 3;
        c->file_sid = ex.sid_cmd;
        c->name_sid = ex.sid_thread;
    }
    note_time(h);
}

static void make_data(size_t i, uint64_t *seed) {
    tp_rec_hdr *h = (tp_rec_hdr *)ex.data[i];
    tt_fill(h, data_types[i % NDATA], 10000 + i * 1000 + tt_rand(seed) % 500, seed);
    if (h->type == TP_REC_KERNEL) {
        ((tp_rec_kernel *)h)->name_sid = ex.sid_kernel;
        ((tp_rec_kernel *)h)->correlation = (uint32_t)i;
    } else if (h->type == TP_REC_API) {
        ((tp_rec_api *)h)->stack_id = ex.stack_id;
    } else if (h->type == TP_REC_DROPPED) {
        tp_rec_dropped *d = (tp_rec_dropped *)h;
        d->what = TP_REC_KERNEL;
        d->reason = TP_DROP_CUPTI;
        d->count = 1 + i % 7;
        ex.dropped += d->count;
    }
    ex.count[h->type]++;
    note_time(h);
}

static void intern_all(tp_writer *w) {
    for (int i = 0; i < 5; i++)
        ex.frames[i] = TP_FRAME_MAKE(i == 4 ? TP_FRAME_NO_MODULE : 7, 0x1000u * (i + 1) + i);
    ex.frames[2] = TP_FRAME_PY_MAKE(3, 4242); /* a Python frame: PYCODE 3, line 4242 */
    tp_writer_intern_string(w, "ampere_sgemm_128x64_nn", 22, &ex.sid_kernel);
    tp_writer_intern_string(w, "node-17.cluster", 15, &ex.sid_host);
    tp_writer_intern_string(w, "python train.py --epochs 3", 26, &ex.sid_cmd);
    tp_writer_intern_string(w, "/usr/lib/libcudart.so.13", 24, &ex.sid_path);
    tp_writer_intern_string(w, "main", 4, &ex.sid_thread);
    tp_writer_intern_string(w, "dataloader-0", 12, &ex.sid_thread2);
    tp_writer_intern_string(w, "", 0, &ex.sid_empty);
    tp_writer_intern_stack(w, ex.frames, 5, &ex.stack_id);
    tp_writer_intern_stack(w, NULL, 0, &ex.stack0_id);
    ex.count[TP_REC_STRING] = 7;
    ex.count[TP_REC_STACK] = 2;
}

/* Writes the full trace to `path`; with `finish` 0 it flushes and abandons the writer, so
 * the file has every chunk but no index. */
static void write_trace(const char *path, int finish, int no_filter, const char *codec) {
    memset(&ex, 0, sizeof ex);
    ex.t_min = UINT64_MAX;
    uint64_t seed = 0x1234567;
    tp_writer_opts o;
    tp_writer_opts_default(&o);
    o.chunk_bytes = 4096;
    o.producer = "roundtrip-test";
    o.no_filter = no_filter;
    o.codec = codec;
    tp_writer *w;
    CHECK_OK(tp_writer_open(path, &o, &w));
    intern_all(w);
    for (size_t i = 0; i < NMETA; i++) {
        make_meta(i, &seed);
        CHECK_OK(tp_writer_write_meta(w, ex.meta[i]));
        ex.count[meta_types[i]]++;
    }
    ex.renamed = *(tp_rec_thread *)ex.meta[1];
    ex.renamed.name_sid = ex.sid_thread2;
    CHECK_OK(tp_writer_write_meta(w, &ex.renamed));
    ex.count[TP_REC_THREAD]++;
    tp_stage *s;
    CHECK_OK(tp_writer_stage_open(w, 4242, &s));
    for (size_t i = 0; i < NRECS; i++) {
        make_data(i, &seed);
        CHECK(tp_stage_write(s, ex.data[i]));
        if (i % 700 == 0)
            CHECK_OK(tp_writer_flush(w));
    }
    CHECK_EQ_U(tp_stage_dropped(s), 0);
    tp_stage_close(s);
    if (finish) {
        CHECK_OK(tp_writer_close(w));
    } else {
        CHECK_OK(tp_writer_flush(w));
        tp_writer_abandon(w);
    }
}

static void check_info(tp_reader *r) {
    const tp_trace_info *in = tp_reader_info(r);
    CHECK_EQ_U(in->version_major, 1);
    CHECK_EQ_U(in->version_minor, 9);
    CHECK_STR(in->producer, "roundtrip-test");
    CHECK(in->created_realtime_ns > 1600000000ull * 1000000000ull);
    uint64_t total = 0;
    for (int t = 0; t < TP_REC_TYPE_LIMIT; t++) {
        if (in->records[t] != ex.count[t])
            fprintf(stderr, "type %s\n", tp_record_name((uint16_t)t));
        CHECK_EQ_U(in->records[t], ex.count[t]);
        total += ex.count[t];
    }
    CHECK_EQ_U(in->records_total, total);
    CHECK_EQ_U(in->t_min, ex.t_min);
    CHECK_EQ_U(in->t_max, ex.t_max);
    CHECK_EQ_U(in->dropped_total, ex.dropped);
}

static void check_records(tp_reader *r) {
    tp_cursor *c;
    CHECK_OK(tp_cursor_open(r, NULL, &c));
    size_t i = 0;
    for (const tp_rec_hdr *h; (h = tp_cursor_next(c)); i++) {
        if (i >= NRECS)
            break;
        const tp_rec_hdr *want = (const tp_rec_hdr *)ex.data[i];
        CHECK_EQ_U(h->size, want->size);
        if (memcmp(h, want, want->size) != 0)
            fprintf(stderr, "record %zu (%s) differs\n", i, tp_record_name(want->type));
        CHECK(memcmp(h, want, want->size) == 0);
    }
    CHECK_EQ_U(i, NRECS);
    tp_cursor_close(c);
}

static void check_meta(tp_reader *r) {
    for (size_t i = 0; i < NMETA; i++) {
        const tp_rec_hdr *const *recs;
        size_t n = tp_reader_meta(r, meta_types[i], &recs);
        CHECK_EQ_U(n, meta_types[i] == TP_REC_THREAD ? 2 : 1);
        const tp_rec_hdr *want = (const tp_rec_hdr *)ex.meta[i];
        CHECK(n > 0 && memcmp(recs[0], want, want->size) == 0);
    }
    CHECK_STR(tp_reader_string(r, ex.sid_kernel), "ampere_sgemm_128x64_nn");
    CHECK_STR(tp_reader_string(r, ex.sid_cmd), "python train.py --epochs 3");
    CHECK_STR(tp_reader_string(r, ex.sid_empty), "");
    CHECK(tp_reader_string(r, 0) == NULL);
    CHECK(tp_reader_string(r, 999999) == NULL);
    uint32_t n;
    const uint64_t *f = tp_reader_stack(r, ex.stack_id, &n);
    CHECK_EQ_U(n, 5);
    CHECK(f && memcmp(f, ex.frames, sizeof ex.frames) == 0);
    CHECK_EQ_U(TP_FRAME_MODULE(f[0]), 7);
    CHECK_EQ_U(TP_FRAME_MODULE(f[4]), TP_FRAME_NO_MODULE);
    CHECK(TP_FRAME_IS_PYTHON(f[2]) && !TP_FRAME_IS_PYTHON(f[1]));
    CHECK_EQ_U(TP_FRAME_PY_CODE(f[2]), 3);
    CHECK_EQ_U(TP_FRAME_PY_LINE(f[2]), 4242);
    const tp_rec_pycode *pc = tp_reader_pycode(r, TP_FRAME_PY_CODE(f[2]));
    CHECK(pc && pc->name_sid == ex.sid_thread && pc->file_sid == ex.sid_cmd);
    CHECK(tp_reader_pycode(r, 4) == NULL && tp_reader_pycode(r, 0) == NULL);
    CHECK(tp_reader_stack(r, 12345, &n) == NULL && n == 0);
    tp_reader_stack(r, ex.stack0_id, &n);
    CHECK_EQ_U(n, 0);
    const tp_rec_module *m = tp_reader_module(r, 7);
    CHECK(m && memcmp(m->build_id, ((tp_rec_module *)ex.meta[2])->build_id, 32) == 0);
    CHECK(m && m->build_id_len == 20 && m->path_sid == ex.sid_path);
    CHECK_STR(tp_reader_thread_name(r, 4242), "dataloader-0"); /* the later record renames */
    CHECK(tp_reader_thread_name(r, 1) == NULL);
}

static size_t count_query(tp_reader *r, uint64_t mask, uint64_t b, uint64_t e) {
    tp_query q = {mask, b, e};
    tp_cursor *c;
    if (tp_cursor_open(r, &q, &c) != TP_OK)
        return SIZE_MAX;
    size_t n = 0;
    while (tp_cursor_next(c))
        n++;
    tp_cursor_close(c);
    return n;
}

static void check_queries(tp_reader *r) {
    CHECK_EQ_U(count_query(r, TP_REC_BIT(TP_REC_KERNEL), 0, 0), ex.count[TP_REC_KERNEL]);
    uint64_t mask = TP_REC_BIT(TP_REC_API) | TP_REC_BIT(TP_REC_MEMCPY);
    CHECK_EQ_U(count_query(r, mask, 0, 0), ex.count[TP_REC_API] + ex.count[TP_REC_MEMCPY]);
    /* Window [t0, t1): compute the expected overlap count by hand. */
    uint64_t t0 = 10000 + 1000 * 1000, t1 = 10000 + 2000 * 1000;
    size_t want = 0;
    for (size_t i = 0; i < NRECS; i++) {
        const tp_rec_hdr *h = (const tp_rec_hdr *)ex.data[i];
        uint64_t a = tp_record_ts(h), b = tp_record_end(h);
        want += a < t1 && (b > t0 || a >= t0);
    }
    CHECK_EQ_U(count_query(r, 0, t0, t1), want);
    CHECK(want > 900 && want < 1100);
}

static void test_every_type(void) {
    char path[256];
    tt_temp_path(path, sizeof path, "rt");
    write_trace(path, 1, 0, NULL);
    tp_reader *r;
    CHECK_OK(tp_reader_open(path, &r));
    /* the index's counts at once (before the checks below settle anything): the written ones */
    const uint16_t some[] = {TP_REC_API, TP_REC_KERNEL, TP_REC_MEMCPY};
    CHECK_EQ_U(tp_reader_index_count(r, some, 3),
               ex.count[TP_REC_API] + ex.count[TP_REC_KERNEL] + ex.count[TP_REC_MEMCPY]);
    CHECK_EQ_U(tp_reader_index_count(r, some, 0), 0);
    const tp_integrity *g = tp_reader_integrity(r);
    CHECK_EQ_U(g->index_ok, 1);
    CHECK_EQ_U(g->chunks_bad, 0);
    CHECK_EQ_U(g->bytes_lost, 0);
    CHECK_EQ_U(g->truncated, 0);
    CHECK_STR(g->message, "");
    CHECK(g->chunks_ok > 5);
    check_info(r);
    check_records(r);
    check_meta(r);
    check_queries(r);
    CHECK_EQ_U(g->unknown_records, 0);
    tp_reader_close(r);
    unlink(path);
}

/* Without an index the counts come from a scan and must agree with the written ones. */
static void test_no_index_scan(void) {
    char path[256];
    tt_temp_path(path, sizeof path, "noidx");
    write_trace(path, 0, 0, NULL);
    tp_reader *r;
    CHECK_OK(tp_reader_open(path, &r));
    const uint16_t api[] = {TP_REC_API};
    CHECK_EQ_U(tp_reader_index_count(r, api, 1), 0); /* no index: unknown */
    const tp_integrity *g = tp_reader_integrity(r);
    CHECK_EQ_U(g->index_ok, 0);
    CHECK_EQ_U(g->chunks_bad, 0);
    CHECK_EQ_U(g->truncated, 0);
    CHECK(strstr(g->message, "no index") != NULL);
    check_info(r);
    check_records(r);
    check_meta(r);
    tp_reader_close(r);
    unlink(path);
}

/* A newer writer appends fields and adds types; an older one wrote shorter records. */
static void test_evolution(void) {
    char path[256];
    tt_temp_path(path, sizeof path, "evo");
    tp_writer *w;
    CHECK_OK(tp_writer_open(path, NULL, &w));
    tp_stage *s;
    CHECK_OK(tp_writer_stage_open(w, 1, &s));
    uint64_t seed = 99;
    struct {
        tp_rec_kernel k;
        uint64_t tail[2];
    } longer;
    tt_fill(&longer.k, TP_REC_KERNEL, 100, &seed);
    longer.k.h.size = sizeof longer;
    longer.tail[0] = 0xfeedfacecafebeefull;
    longer.tail[1] = 42;
    uint64_t unknown_small[3] = {0, 7, 8}, unknown_big[4] = {0, 1, 2, 3};
    tp_record_init_hdr((tp_rec_hdr *)unknown_small, 50, sizeof unknown_small);
    tp_record_init_hdr((tp_rec_hdr *)unknown_big, 200, sizeof unknown_big);
    tp_rec_kernel older; /* only the fields up to `context` */
    tt_fill(&older, TP_REC_KERNEL, 200, &seed);
    older.h.size = (uint32_t)offsetof(tp_rec_kernel, stream);
    tp_rec_device dev_old;
    tt_fill(&dev_old, TP_REC_DEVICE, 0, &seed);
    dev_old.h.size = (uint32_t)offsetof(tp_rec_device, sm_count);
    CHECK_OK(tp_writer_write_meta(w, &dev_old));
    CHECK(tp_stage_write(s, unknown_small));
    CHECK(tp_stage_write(s, &longer));
    longer.k.ts += 10;
    CHECK(tp_stage_write(s, &longer)); /* same type and size: goes through the delta filter */
    CHECK(tp_stage_write(s, unknown_big));
    CHECK(tp_stage_write(s, &older));
    CHECK_OK(tp_writer_close(w));

    tp_reader *r;
    CHECK_OK(tp_reader_open(path, &r));
    tp_cursor *c;
    CHECK_OK(tp_cursor_open(r, NULL, &c));
    longer.k.ts -= 10;
    const tp_rec_hdr *h = tp_cursor_next(c);
    CHECK(h && h->type == TP_REC_KERNEL && h->size == sizeof longer);
    CHECK(h && memcmp(h, &longer, sizeof longer) == 0); /* the tail survives */
    tp_rec_kernel k;
    CHECK(h && tp_record_get(h, &k, sizeof k) == sizeof longer);
    CHECK(memcmp(&k, &longer.k, sizeof k) == 0 || !h);
    h = tp_cursor_next(c);
    longer.k.ts += 10;
    CHECK(h && memcmp(h, &longer, sizeof longer) == 0);
    h = tp_cursor_next(c);
    CHECK(h && h->size == offsetof(tp_rec_kernel, stream));
    CHECK(h && tp_record_get(h, &k, sizeof k) == offsetof(tp_rec_kernel, stream));
    CHECK_EQ_U(k.device, older.device);
    CHECK_EQ_U(k.context, older.context);
    CHECK_EQ_U(k.stream, 0); /* missing fields read as zero */
    CHECK_EQ_U(k.graph_node_id, 0);
    CHECK(tp_cursor_next(c) == NULL);
    tp_cursor_close(c);
    CHECK_EQ_U(tp_reader_integrity(r)->unknown_records, 2);
    const tp_rec_hdr *const *devs;
    CHECK_EQ_U(tp_reader_meta(r, TP_REC_DEVICE, &devs), 1);
    const tp_rec_device *d = (const tp_rec_device *)devs[0];
    CHECK_EQ_U(d->global_memory_bytes, dev_old.global_memory_bytes);
    CHECK_EQ_U(d->sm_count, 0);
    CHECK_EQ_U(d->kind, 0);
    CHECK_EQ_U(tp_reader_info(r)->records[50], 1); /* counted under its number, not lost */
    tp_reader_close(r);
    unlink(path);
}

/* The locked slow path and drops counted outside any stage become DROPPED records. */
static void test_slow_path_and_drops(void) {
    char path[256];
    tt_temp_path(path, sizeof path, "slow");
    tp_writer *w;
    CHECK_OK(tp_writer_open(path, NULL, &w));
    uint64_t seed = 5;
    tp_rec_memcpy m;
    for (int i = 0; i < 100; i++) {
        tt_fill(&m, TP_REC_MEMCPY, 1000 + (uint64_t)i, &seed);
        CHECK_OK(tp_writer_write(w, &m));
    }
    uint64_t bad[2] = {0, 0};
    tp_record_init_hdr((tp_rec_hdr *)bad, TP_REC_API, 12); /* size not a multiple of 8 */
    CHECK_EQ_I(tp_writer_write(w, bad), TP_ERR_ARG);
    tp_writer_count_drop(w, TP_REC_NVTX_PUSH, TP_DROP_NO_BUFFER, 5);
    tp_writer_count_drop(w, TP_REC_NVTX_PUSH, TP_DROP_NO_BUFFER, 6);
    tp_writer_count_drop(w, TP_REC_KERNEL, TP_DROP_CUPTI, 3);
    CHECK_OK(tp_writer_flush(w));
    tp_writer_stats st;
    tp_writer_get_stats(w, &st);
    CHECK_EQ_U(st.records[TP_REC_MEMCPY], 100);
    CHECK_EQ_U(st.dropped[TP_REC_NVTX_PUSH], 11);
    CHECK_EQ_U(st.dropped_total, 14);
    CHECK(st.bytes_file > 64 && st.chunks >= 1);
    CHECK_OK(tp_writer_close(w));
    tp_reader *r;
    CHECK_OK(tp_reader_open(path, &r));
    CHECK_EQ_U(tp_reader_info(r)->records[TP_REC_MEMCPY], 100);
    CHECK_EQ_U(tp_reader_info(r)->dropped_total, 14);
    tp_query q = {TP_REC_BIT(TP_REC_DROPPED), 0, 0};
    tp_cursor *c;
    CHECK_OK(tp_cursor_open(r, &q, &c));
    uint64_t push = 0, kern = 0;
    for (const tp_rec_hdr *h; (h = tp_cursor_next(c));) {
        const tp_rec_dropped *d = (const tp_rec_dropped *)h;
        if (d->what == TP_REC_NVTX_PUSH && d->reason == TP_DROP_NO_BUFFER)
            push += d->count;
        if (d->what == TP_REC_KERNEL && d->reason == TP_DROP_CUPTI)
            kern += d->count;
    }
    CHECK_EQ_U(push, 11);
    CHECK_EQ_U(kern, 3);
    tp_cursor_close(c);
    tp_reader_close(r);
    unlink(path);
}

/* A bounded ring drops and counts; block_when_full never drops. */
static void test_ring_full(void) {
    char path[256];
    tt_temp_path(path, sizeof path, "full");
    for (int block = 0; block <= 1; block++) {
        tp_writer_opts o;
        tp_writer_opts_default(&o);
        o.ring_bytes = 4096;
        o.buffer_bytes = 4096;
        o.block_when_full = block;
        tp_writer *w;
        CHECK_OK(tp_writer_open(path, &o, &w));
        tp_stage *s, *s2;
        CHECK_OK(tp_writer_stage_open(w, 1, &s));
        CHECK_EQ_I(tp_writer_stage_open(w, 2, &s2), TP_ERR_FULL);
        tp_rec_api a;
        uint64_t seed = 1, written = 0;
        for (int i = 0; i < 1000; i++) {
            tt_fill(&a, TP_REC_API, (uint64_t)i, &seed);
            written += (uint64_t)tp_stage_write(s, &a);
        }
        CHECK_EQ_U(written + tp_stage_dropped(s), 1000);
        CHECK_EQ_U(tp_stage_dropped(s), block ? 0 : 1000 - 4096 / 48);
        CHECK(tp_stage_reserve(s, 4, TP_REC_API) == NULL); /* bad size: refused, counted */
        CHECK_OK(tp_writer_close(w));
        tp_reader *r;
        CHECK_OK(tp_reader_open(path, &r));
        CHECK_EQ_U(tp_reader_info(r)->records[TP_REC_API], written);
        CHECK_EQ_U(tp_reader_info(r)->dropped_total, 1000 - written + 1);
        tp_reader_close(r);
    }
    unlink(path);
}

/* A producer that writes a bad size into a record it reserved (0, not a multiple of 8, past
 * what it published): the drain keeps the records before it, skips what that producer had
 * published from there on (the next record cannot be found), and drains what comes later as
 * usual. */
static void test_bad_ring_header(void) {
    char path[256];
    tt_temp_path(path, sizeof path, "badhdr");
    static const uint32_t bad[] = {0, 12, 1u << 20};
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
        tp_writer *w;
        CHECK_OK(tp_writer_open(path, NULL, &w));
        tp_stage *s;
        CHECK_OK(tp_writer_stage_open(w, 1, &s));
        tp_rec_api a;
        uint64_t seed = 1;
        for (int i = 0; i < 6; i++) {
            tt_fill(&a, TP_REC_API, (uint64_t)i, &seed);
            if (i == 3) { /* the bad one, between records 2 and 4 */
                tp_rec_hdr *h = tp_stage_reserve(s, sizeof a, TP_REC_API);
                CHECK(h != NULL);
                if (h) {
                    a.h.size = bad[b];
                    memcpy(h, &a, sizeof a);
                    tp_stage_commit(s);
                }
            } else {
                CHECK(tp_stage_write(s, &a));
            }
        }
        CHECK_OK(tp_writer_flush(w));
        for (int i = 0; i < 4; i++) {
            tt_fill(&a, TP_REC_API, (uint64_t)(10 + i), &seed);
            CHECK(tp_stage_write(s, &a));
        }
        CHECK_OK(tp_writer_close(w));
        tp_reader *r;
        CHECK_OK(tp_reader_open(path, &r));
        CHECK_EQ_U(tp_reader_info(r)->records[TP_REC_API], 3 + 4);
        CHECK_EQ_U(tp_reader_integrity(r)->chunks_bad, 0);
        tp_reader_close(r);
    }
    unlink(path);
}

/* Metadata that passes the CRCs but is malformed (a buggy writer): ignored, never read
 * past, and the well-formed records around it still load. */
static void test_malformed_meta(void) {
    char path[256];
    tt_temp_path(path, sizeof path, "badmeta");
    tp_writer *w;
    CHECK_OK(tp_writer_open(path, NULL, &w));
    uint32_t good;
    CHECK_OK(tp_writer_intern_string(w, "good", 4, &good));
    uint64_t rec[8] = {0};
    tp_rec_string *str = (tp_rec_string *)rec;
    tp_record_init_hdr(&str->h, TP_REC_STRING, 16); /* no room for text or NUL */
    str->id = 500;
    str->len = 5;
    CHECK_OK(tp_writer_write_meta(w, str));
    tp_record_init_hdr(&str->h, TP_REC_STRING, 24); /* len runs past the record */
    str->id = 501;
    str->len = 8;
    memcpy(str->text, "12345678", 8);
    CHECK_OK(tp_writer_write_meta(w, str));
    tp_rec_stack *st = (tp_rec_stack *)rec;
    tp_record_init_hdr(&st->h, TP_REC_STACK, 32); /* room for 2 frames, claims 1000 */
    st->id = 502;
    st->nframes = 1000;
    CHECK_OK(tp_writer_write_meta(w, st));
    uint32_t after;
    CHECK_OK(tp_writer_intern_string(w, "after", 5, &after));
    CHECK_OK(tp_writer_close(w));
    tp_reader *r;
    CHECK_OK(tp_reader_open(path, &r));
    CHECK(tp_reader_string(r, 500) == NULL);
    CHECK(tp_reader_string(r, 501) == NULL);
    uint32_t n;
    CHECK(tp_reader_stack(r, 502, &n) == NULL && n == 0);
    CHECK_STR(tp_reader_string(r, good), "good");
    CHECK_STR(tp_reader_string(r, after), "after");
    tp_reader_close(r);
    unlink(path);
}

/* Chunks written without the lane-delta filter (format filter 0) read the same. */
static void test_unfiltered(void) {
    char path[256];
    tt_temp_path(path, sizeof path, "nofilt");
    write_trace(path, 1, 1, NULL);
    tp_reader *r;
    CHECK_OK(tp_reader_open(path, &r));
    CHECK_EQ_U(tp_reader_integrity(r)->chunks_bad, 0);
    check_info(r);
    check_records(r);
    check_meta(r);
    tp_reader_close(r);
    unlink(path);
}

/* A full disk fails the open (the header cannot be written); a bad path fails it too; a
 * closed stage's ring goes back to the budget once drained. */
/* Walks the chunk headers of the file at `path` as they lie in it: counts its DATA chunks
 * (*data), those stored with `filter` (returned) and those stored with `codec` (*coded). */
static int count_chunks(const char *path, int codec, int filter, int *data, int *coded) {
    size_t n;
    uint8_t *b = tt_read_file(path, &n);
    int filtered = 0;
    *data = *coded = 0;
    for (size_t pos = TP_FILE_HEADER_SIZE; b && pos + sizeof(tp_chunk_header) <= n;) {
        tp_chunk_header h;
        memcpy(&h, b + pos, sizeof h);
        if (!tp_chunk_header_ok(&h))
            break; /* the trailer */
        if (h.kind == TP_CHUNK_DATA) {
            (*data)++;
            filtered += h.filter == filter;
            *coded += h.codec == codec;
        }
        pos += tp_chunk_span(&h);
    }
    free(b);
    return filtered;
}

/* Every codec the writer offers round-trips every record type; each stores its data chunks
 * with its own codec and filter (lz4 by default, over columns and byte planes without their
 * zero pieces), and the reader of this build reads them all, old zstd chunks included. */
static void test_codecs(void) {
    static const struct {
        const char *name;
        int codec, filter;
    } cases[] = {{NULL, TP_CODEC_LZ4, TP_FILTER_LANE_SPARSE},
                 {"lz4", TP_CODEC_LZ4, TP_FILTER_LANE_SPARSE},
                 {"lz4-columns", TP_CODEC_LZ4, TP_FILTER_LANE_COLUMNS},
                 {"lz4-planes", TP_CODEC_LZ4, TP_FILTER_LANE_PLANES},
                 {"zstd", TP_CODEC_ZSTD, TP_FILTER_LANE_DELTA},
                 {"none", TP_CODEC_NONE, TP_FILTER_LANE_DELTA}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[256];
        tt_temp_path(path, sizeof path, "codec");
        write_trace(path, 1, 0, cases[i].name);
        int data, coded; /* a chunk the codec cannot shrink is stored as it is (codec 0) */
        CHECK_EQ_I(count_chunks(path, cases[i].codec, cases[i].filter, &data, &coded), data);
        CHECK(data > 5);
        /* the records' fields are random bytes: a few chunks do not shrink */
        CHECK(coded >= data - 2 - data / 8);
        tp_reader *r;
        CHECK_OK(tp_reader_open(path, &r));
        CHECK_EQ_U(tp_reader_integrity(r)->chunks_bad, 0);
        CHECK(tp_reader_integrity(r)->index_ok);
        check_info(r);
        check_records(r);
        check_meta(r);
        tp_reader_close(r);
        unlink(path);
    }
    tp_writer_opts o;
    tp_writer_opts_default(&o);
    o.codec = "brotli";
    tp_writer *w = NULL;
    char path[256];
    tt_temp_path(path, sizeof path, "badcodec");
    CHECK_EQ_I(tp_writer_open(path, &o, &w), TP_ERR_ARG);
    CHECK(w == NULL);
    CHECK(access(path, F_OK) != 0); /* bad options leave no file */
}

static void test_writer_errors_and_budget(void) {
    tp_writer *w;
    CHECK_EQ_I(tp_writer_open("/nonexistent-dir/x.tprof", NULL, &w), TP_ERR_OPEN);
    CHECK(w == NULL);
    CHECK_EQ_I(tp_writer_open("/dev/full", NULL, &w), TP_ERR_IO);
    tp_writer_opts o;
    tp_writer_opts_default(&o);
    o.ring_bytes = 5000; /* not a power of two: rounded up to 8192 */
    o.buffer_bytes = 8192;
    CHECK_OK(tp_writer_open("/dev/null", &o, &w));
    tp_stage *s, *s2;
    CHECK_OK(tp_writer_stage_open(w, 1, &s));
    CHECK_EQ_I(tp_writer_stage_open(w, 2, &s2), TP_ERR_FULL);
    tp_rec_counter c;
    uint64_t seed = 3;
    tt_fill(&c, TP_REC_COUNTER, 1, &seed);
    CHECK(tp_stage_write(s, &c));
    tp_stage_close(s);
    CHECK_EQ_I(tp_writer_stage_open(w, 2, &s2), TP_ERR_FULL); /* not drained yet */
    CHECK_OK(tp_writer_flush(w));
    CHECK_OK(tp_writer_stage_open(w, 2, &s2)); /* the drained ring was handed back */
    tp_writer_stats st;
    tp_writer_get_stats(w, &st);
    CHECK_EQ_U(st.records[TP_REC_COUNTER], 1);
    CHECK_OK(tp_writer_close(w));
    o.ring_bytes = 2048; /* under the 4 KiB minimum */
    CHECK_EQ_I(tp_writer_open("/dev/null", &o, &w), TP_ERR_ARG);
    tp_writer_close(NULL);
    tp_writer_abandon(NULL);
    tp_stage_close(NULL);
}

int main(void) {
    TP_RUN(test_every_type);
    TP_RUN(test_unfiltered);
    TP_RUN(test_codecs);
    TP_RUN(test_no_index_scan);
    TP_RUN(test_evolution);
    TP_RUN(test_slow_path_and_drops);
    TP_RUN(test_ring_full);
    TP_RUN(test_bad_ring_header);
    TP_RUN(test_malformed_meta);
    TP_RUN(test_writer_errors_and_budget);
    return tp_test_summary();
}
