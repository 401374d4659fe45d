/* Tests of tp_export_sqlite_nsys on two crafted traces exported as one recording: what the
 * recorded programs cannot show — a mangled kernel name (demangledName, shortName,
 * mangledName), GPU facts from ENV records in TARGET_INFO_GPU, a start/end range ended on
 * another thread (endGlobalTid), a mark's double payload, domain and category rows, a
 * context sync (streamId -1), driver calls (eventClass 1), the second process's correlation
 * ids offset by 1 << 32 so that a join on correlationId pairs each kernel with its own
 * process's call, one StringIds row per text across processes, the session start, process
 * facts under nsys's names; and an output that cannot be created. */
#include "tp_export_sqlite_nsys.h"

#include <sqlite3.h>

#include "tp_reader.h"
#include "tp_test.h"
#include "tp_writer.h"
#include "trace_testutil.h"

static uint32_t str(tp_writer *w, const char *s) {
    uint32_t id = 0; /* 0 when interning fails: the checks on the export then fail */
    if (tp_writer_intern_string(w, s, strlen(s), &id) != TP_OK)
        printf("  cannot intern %s\n", s);
    return id;
}

static void meta(tp_writer *w, uint32_t pid) {
    tp_rec_process p;
    TP_REC_CLEAR(&p, TP_REC_PROCESS);
    p.pid = pid, p.exe_sid = str(w, "/usr/bin/python3"), p.producer_sid = str(w, "test");
    CHECK_OK(tp_writer_write_meta(w, &p));
    const char *names[] = {"main", "worker"};
    for (uint32_t i = 0; i < 2; i++) {
        tp_rec_thread t;
        TP_REC_CLEAR(&t, TP_REC_THREAD);
        t.tid = pid + 1 + i, t.pid = pid, t.name_sid = str(w, names[i]);
        CHECK_OK(tp_writer_write_meta(w, &t));
    }
    tp_rec_device d;
    TP_REC_CLEAR(&d, TP_REC_DEVICE);
    d.id = 0, d.name_sid = str(w, "NVIDIA H100"), d.kind = TP_DEVICE_GPU;
    d.compute_capability = 90, d.sm_count = 132, d.global_memory_bytes = 80ull << 30;
    CHECK_OK(tp_writer_write_meta(w, &d));
    const char *env[][2] = {{"gpu.pci", "0000:3b:00.0"},
                            {"gpu.clock_mhz", "1980"},
                            {"host", "node7"},
                            {"nccl", "2.21"}};
    for (int i = 0; i < 4; i++) {
        tp_rec_env e;
        TP_REC_CLEAR(&e, TP_REC_ENV);
        e.key_sid = str(w, env[i][0]), e.value_sid = str(w, env[i][1]);
        e.device = i < 2 ? 0 : TP_ENV_PROCESS;
        CHECK_OK(tp_writer_write_meta(w, &e));
    }
    tp_rec_domain dom;
    TP_REC_CLEAR(&dom, TP_REC_DOMAIN);
    dom.id = 1, dom.name_sid = str(w, "app");
    CHECK_OK(tp_writer_write_meta(w, &dom));
    tp_rec_category cat;
    TP_REC_CLEAR(&cat, TP_REC_CATEGORY);
    cat.domain = 1, cat.category = 7, cat.name_sid = str(w, "io");
    CHECK_OK(tp_writer_write_meta(w, &cat));
    tp_rec_clock_sync k;
    TP_REC_CLEAR(&k, TP_REC_CLOCK_SYNC);
    k.ts = 1000, k.realtime_ns = 5000000000ull;
    CHECK_OK(tp_writer_write_meta(w, &k));
}

static void api(tp_stage *s, uint64_t ts, uint32_t tid, uint32_t corr, uint32_t name, int kind) {
    tp_rec_api a;
    TP_REC_CLEAR(&a, TP_REC_API);
    a.h.flags |= (uint16_t)kind;
    a.ts = ts, a.end = ts + 100, a.tid = tid, a.correlation = corr, a.name_sid = name;
    CHECK(tp_stage_write(s, &a));
}

static void kernel(tp_stage *s, uint64_t ts, uint32_t corr, uint32_t name) {
    tp_rec_kernel k;
    TP_REC_CLEAR(&k, TP_REC_KERNEL);
    k.ts = ts, k.end = ts + 300, k.correlation = corr, k.name_sid = name, k.stream = 7;
    k.grid_x = k.grid_y = k.grid_z = 1, k.block_x = 128, k.block_y = k.block_z = 1;
    CHECK(tp_stage_write(s, &k));
}

/* Process A (pid 100): a launch of a mangled kernel, a copy through the driver, a context
 * sync, a start/end range ended by the worker thread, a mark, a range in domain 1. */
static void data_a(tp_writer *w) {
    uint32_t launch = str(w, "cudaLaunchKernel"), copy = str(w, "cuMemcpyHtoDAsync_v2");
    uint32_t gemm = str(w, "_ZN2ns4gemmIfEEvPfi"), load = str(w, "load"), step = str(w, "step");
    uint32_t tick = str(w, "tick");
    tp_stage *s;
    CHECK_OK(tp_writer_stage_open(w, 101, &s));
    tp_rec_nvtx n;
    TP_REC_CLEAR(&n, TP_REC_NVTX_PUSH);
    n.ts = 1000, n.tid = 101, n.domain = 1, n.msg_sid = step, n.category = 7;
    CHECK(tp_stage_write(s, &n));
    tp_rec_nvtx_start st;
    TP_REC_CLEAR(&st, TP_REC_NVTX_START);
    st.ts = 1010, st.range_id = 5, st.tid = 101, st.msg_sid = load;
    CHECK(tp_stage_write(s, &st));
    api(s, 1020, 101, 1, launch, TP_API_RUNTIME);
    kernel(s, 1200, 1, gemm);
    api(s, 1300, 101, 2, copy, TP_API_DRIVER);
    tp_rec_memcpy m;
    TP_REC_CLEAR(&m, TP_REC_MEMCPY);
    m.ts = 1600, m.end = 1700, m.bytes = 4096, m.correlation = 2, m.copy_kind = TP_COPY_HTOD;
    m.src_kind = TP_MEM_PINNED, m.dst_kind = TP_MEM_DEVICE;
    CHECK(tp_stage_write(s, &m));
    tp_rec_sync y;
    TP_REC_CLEAR(&y, TP_REC_SYNC);
    y.ts = 1700, y.end = 1750, y.type = TP_SYNC_CONTEXT, y.stream = 0xffffffffu, y.tid = 101;
    CHECK(tp_stage_write(s, &y));
    TP_REC_CLEAR(&n, TP_REC_NVTX_MARK);
    n.ts = 1760, n.tid = 101, n.domain = 1, n.msg_sid = tick, n.category = 7;
    n.h.flags |= TP_NVTX_HAS_COLOR, n.color = 0xff00ff00u, n.payload_type = TP_PAYLOAD_F64;
    double v = 2.5;
    memcpy(&n.payload, &v, sizeof v);
    CHECK(tp_stage_write(s, &n));
    /* the worker ends "load" (written through this stage, so that it follows the start in
     * file order whatever order the writer drains stages in) */
    tp_rec_nvtx_end e;
    TP_REC_CLEAR(&e, TP_REC_NVTX_END);
    e.ts = 1800, e.range_id = 5, e.tid = 102;
    CHECK(tp_stage_write(s, &e));
    tp_rec_nvtx_pop p;
    TP_REC_CLEAR(&p, TP_REC_NVTX_POP);
    p.ts = 1900, p.tid = 101, p.domain = 1;
    CHECK(tp_stage_write(s, &p));
    tp_stage_close(s);
}

/* Process B (pid 200): its own correlation id 1, a kernel named as A's short name; then a
 * kernel whose name id and a call whose stack id the trace does not hold (as a damaged
 * writer might leave them): exported with "" and no call chain, the export going on. */
static void data_b(tp_writer *w) {
    uint32_t launch = str(w, "cudaLaunchKernel"), gemm = str(w, "gemm");
    tp_stage *s;
    CHECK_OK(tp_writer_stage_open(w, 201, &s));
    api(s, 2000, 201, 1, launch, TP_API_RUNTIME);
    kernel(s, 2200, 1, gemm);
    tp_rec_api a;
    TP_REC_CLEAR(&a, TP_REC_API);
    a.h.flags |= TP_API_RUNTIME;
    a.ts = 2300, a.end = 2310, a.tid = 201, a.name_sid = launch, a.stack_id = 4000000000u;
    CHECK(tp_stage_write(s, &a));
    kernel(s, 2320, 0, 4000000000u);
    tp_stage_close(s);
}

static void write_trace(const char *path, uint32_t pid, void (*data)(tp_writer *)) {
    tp_writer *w;
    CHECK_OK(tp_writer_open(path, NULL, &w));
    meta(w, pid);
    data(w);
    CHECK_OK(tp_writer_close(w));
}

static sqlite3 *db;

/* The first column of the first row of `sql` as an integer (-1: no row, -2: NULL). */
static int64_t q(const char *sql) {
    sqlite3_stmt *st;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        printf("  SQL error: %s\n  in %s\n", sqlite3_errmsg(db), sql);
        return -3;
    }
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_type(st, 0) == SQLITE_NULL ? -2 : sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* The same as text ("" when none). */
static const char *qs(const char *sql) {
    static char buf[256];
    sqlite3_stmt *st;
    buf[0] = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return "SQL error";
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        snprintf(buf, sizeof buf, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return buf;
}

#define GPID(pid) ((int64_t)(pid) << 24)

static void test_export(void) {
    char a[512], b[512], out[512];
    tt_temp_path(a, sizeof a, "nsys_a");
    tt_temp_path(b, sizeof b, "nsys_b");
    tt_temp_path(out, sizeof out, "nsys_out");
    write_trace(a, 100, data_a);
    write_trace(b, 200, data_b);
    tp_reader *r[2] = {NULL, NULL};
    CHECK_OK(tp_reader_open(a, &r[0]));
    CHECK_OK(tp_reader_open(b, &r[1]));
    uint64_t rows = 0;
    char err[256] = "";
    CHECK_OK(tp_export_sqlite_nsys(r, 2, out, NULL, &rows, err, sizeof err));
    CHECK(rows > 20);
    CHECK_EQ_I(sqlite3_open(out, &db), SQLITE_OK);

    /* kernel names: demangled (as nsys and Kineto show them), the short name, and the
     * recorded (mangled) text in mangledName */
    CHECK_STR(qs("SELECT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s "
                 "ON s.id = k.demangledName WHERE k.globalPid = 100 << 24"),
              "void ns::gemm<float>(float*, int)");
    CHECK_STR(qs("SELECT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s "
                 "ON s.id = k.mangledName WHERE k.globalPid = 100 << 24"),
              "_ZN2ns4gemmIfEEvPfi");
    CHECK_STR(qs("SELECT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s "
                 "ON s.id = k.shortName WHERE k.globalPid = 100 << 24"),
              "gemm");
    CHECK_EQ_I(q("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE mangledName = "
                 "demangledName"),
               0);
    CHECK_EQ_I(q("SELECT COUNT(*) FROM StringIds WHERE value = 'gemm'"), 1); /* A's short, B's */
    CHECK_EQ_I(q("SELECT COUNT(*) - COUNT(DISTINCT value) FROM StringIds"), 0);
    CHECK_EQ_I(q("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE shortName = "
                 "(SELECT id FROM StringIds WHERE value = 'gemm')"),
               2);
    CHECK_EQ_I(q("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = "
                 "k.demangledName AND s.id = k.shortName WHERE s.value = '' AND k.start = 2320 "
                 "AND k.correlationId IS NULL"),
               1);
    CHECK_EQ_I(q("SELECT callchainId FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE start = 2300"), -2);

    /* correlation: each kernel joins its own process's launch, B's ids offset by 2^32 */
    CHECK_EQ_I(q("SELECT correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE globalPid = "
                 "200 << 24"),
               (1ll << 32) | 1);
    CHECK_EQ_I(q("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN "
                 "CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId "
                 "WHERE r.globalTid / 0x1000000 = k.globalPid / 0x1000000"),
               2); /* (the third kernel has no correlation) */
    CHECK_EQ_I(q("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN "
                 "CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId"),
               2);
    CHECK_EQ_I(q("SELECT eventClass FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s "
                 "ON s.id = r.nameId WHERE s.value = 'cuMemcpyHtoDAsync_v2'"),
               1);
    CHECK_EQ_I(q("SELECT globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE start = 2000"),
               GPID(200) | 201);

    /* copies, syncs */
    CHECK_STR(qs("SELECT o.label || ' ' || s.label || ' ' || d.label || ' ' || m.bytes FROM "
                 "CUPTI_ACTIVITY_KIND_MEMCPY m JOIN ENUM_CUDA_MEMCPY_OPER o ON o.id = m.copyKind "
                 "JOIN ENUM_CUDA_MEM_KIND s ON s.id = m.srcKind JOIN ENUM_CUDA_MEM_KIND d "
                 "ON d.id = m.dstKind"),
              "Host-to-Device Pinned Device 4096");
    CHECK_STR(qs("SELECT e.label || ' ' || s.streamId FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION s "
                 "JOIN ENUM_CUPTI_SYNC_TYPE e ON e.id = s.syncType"),
              "Context sync -1");

    /* NVTX: the start/end range ended on the worker, the mark's payload, domain, category */
    CHECK_EQ_I(q("SELECT endGlobalTid FROM NVTX_EVENTS WHERE eventType = 60 AND rangeId = 5 "
                 "AND end = 1800"),
               GPID(100) | 102);
    CHECK_EQ_I(q("SELECT globalTid FROM NVTX_EVENTS WHERE eventType = 60"), GPID(100) | 101);
    CHECK_EQ_I(q("SELECT COUNT(*) FROM NVTX_EVENTS e JOIN StringIds s ON s.id = e.textId "
                 "WHERE e.eventType = 34 AND e.text = 'tick' AND s.value = 'tick' AND e.end IS "
                 "NULL AND e.doubleValue = 2.5 AND e.uint64Value IS NULL AND e.category = 7 "
                 "AND e.color = 4278255360 AND e.domainId = 1"),
               1);
    CHECK_EQ_I(q("SELECT end - start FROM NVTX_EVENTS WHERE eventType = 59 AND text = 'step' "
                 "AND domainId = 1 AND category = 7"),
               900);
    CHECK_STR(qs("SELECT text FROM NVTX_EVENTS WHERE eventType = 75 AND domainId = 1 AND "
                 "globalTid = 100 << 24"),
              "app");
    CHECK_STR(qs("SELECT text FROM NVTX_EVENTS WHERE eventType = 33 AND domainId = 1 AND "
                 "category = 7 AND globalTid = 100 << 24"),
              "io");

    /* metadata: GPU facts, threads, processes, session */
    CHECK_STR(qs("SELECT name || ' ' || busLocation || ' ' || clockRate || ' ' || computeMajor "
                 "|| '.' || computeMinor || ' ' || smCount FROM TARGET_INFO_GPU WHERE id = 0"),
              "NVIDIA H100 0000:3b:00.0 1980000000 9.0 132");
    CHECK_EQ_I(q("SELECT COUNT(*) FROM TARGET_INFO_GPU"), 1); /* both traces name device 0 */
    CHECK_STR(qs("SELECT group_concat(name || '=' || value) FROM (SELECT * FROM "
                 "TARGET_INFO_SYSTEM_ENV ORDER BY name)"),
              "Hostname=node7,nccl=2.21"); /* once: the first process's */
    CHECK_EQ_I(q("SELECT COUNT(*) FROM ThreadNames t JOIN StringIds s ON s.id = t.nameId "
                 "WHERE s.value = 'worker'"),
               2);
    CHECK_EQ_I(q("SELECT globalTid FROM ThreadNames t JOIN StringIds s ON s.id = t.nameId "
                 "WHERE s.value = 'worker' ORDER BY globalTid"),
               GPID(100) | 102);
    CHECK_STR(qs("SELECT group_concat(pid || ':' || name || ':' || (globalPid >> 24)) FROM "
                 "(SELECT * FROM PROCESSES ORDER BY pid)"),
              "100:python3:100,200:python3:200");
    CHECK_EQ_I(q("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME"), 5000000000ll - 1000);
    CHECK_EQ_I(q("SELECT startTime FROM ANALYSIS_DETAILS"), 1000);
    CHECK_EQ_I(q("SELECT stopTime FROM ANALYSIS_DETAILS"), 2620);
    CHECK_STR(qs("SELECT value FROM META_DATA_EXPORT WHERE name = 'EXPORT_SCHEMA_VERSION'"),
              TP_NSYS_SCHEMA_VERSION);
    sqlite3_close(db);

    /* an output that cannot be created: TP_ERR_OPEN, one line naming it */
    tp_status st =
        tp_export_sqlite_nsys(r, 2, "/nonexistent-dir/x.sqlite", NULL, NULL, err, sizeof err);
    CHECK_EQ_I(st, TP_ERR_OPEN);
    CHECK(strstr(err, "/nonexistent-dir/x.sqlite") && !strchr(err, '\n'));
    tp_reader_close(r[0]);
    tp_reader_close(r[1]);
    if (!getenv("TP_KEEP"))
        unlink(a), unlink(b), unlink(out);
}

int main(void) {
    TP_RUN(test_export);
    return tp_test_summary();
}
