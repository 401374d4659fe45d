/* test_import_native: a .tprof written with the traces writer, loaded through tp_load, lands
 * in the same model as Kineto traces: GPU rows with streams and Kineto-style copy names, API
 * rows (device-API launches flagged as launches), NVTX push/pop and start/end paired into
 * annotation ranges with nesting, memory events, rank from the PROCESS record. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tp_load.h"
#include "tp_model.h"
#include "tp_record.h"
#include "tp_test.h"
#include "tp_writer.h"

static uint32_t sid(tp_writer *w, const char *s) {
    uint32_t id = 0;
    if (tp_writer_intern_string(w, s, strlen(s), &id) != TP_OK)
        return 0;
    return id;
}

static void write_api(tp_writer *w, unsigned kind, const char *name, uint64_t ts, uint64_t end,
                      uint32_t corr) {
    tp_rec_api a = {0};
    TP_REC_INIT(&a, TP_REC_API);
    a.h.flags |= (uint16_t)kind;
    a.ts = ts, a.end = end, a.tid = 10, a.correlation = corr, a.name_sid = sid(w, name);
    tp_writer_write(w, &a);
}

static void write_gpu(tp_writer *w) {
    tp_rec_kernel k = {0};
    TP_REC_INIT(&k, TP_REC_KERNEL);
    k.ts = 2000, k.end = 3000, k.correlation = 5, k.name_sid = sid(w, "my_kernel");
    k.device = 0, k.stream = 7;
    tp_writer_write(w, &k);
    tp_rec_memcpy c = {0};
    TP_REC_INIT(&c, TP_REC_MEMCPY);
    c.ts = 3100, c.end = 3600, c.bytes = 4096, c.correlation = 6, c.stream = 7;
    c.copy_kind = TP_COPY_HTOD, c.src_kind = TP_MEM_PAGEABLE, c.dst_kind = TP_MEM_DEVICE;
    tp_writer_write(w, &c);
    tp_rec_memset s = {0};
    TP_REC_INIT(&s, TP_REC_MEMSET);
    s.ts = 3700, s.end = 3800, s.bytes = 64, s.stream = 8, s.mem_kind = TP_MEM_DEVICE;
    tp_writer_write(w, &s);
    tp_rec_sync y = {0};
    TP_REC_INIT(&y, TP_REC_SYNC);
    y.ts = 3650, y.end = 3900, y.type = TP_SYNC_CONTEXT, y.stream = 0xffffffffu, y.tid = 10;
    tp_writer_write(w, &y);
}

static void write_nvtx(tp_writer *w) {
    tp_rec_nvtx p = {0};
    TP_REC_INIT(&p, TP_REC_NVTX_PUSH);
    p.ts = 500, p.tid = 10, p.msg_sid = sid(w, "outer");
    tp_writer_write(w, &p);
    p.ts = 900, p.msg_sid = sid(w, "inner");
    tp_writer_write(w, &p);
    tp_rec_nvtx_pop q = {0};
    TP_REC_INIT(&q, TP_REC_NVTX_POP);
    q.ts = 1600, q.tid = 10;
    tp_writer_write(w, &q);
    q.ts = 4000;
    tp_writer_write(w, &q);
    tp_rec_nvtx_start st = {0};
    TP_REC_INIT(&st, TP_REC_NVTX_START);
    st.ts = 1200, st.range_id = 9, st.tid = 11, st.msg_sid = sid(w, "async");
    tp_writer_write(w, &st);
    tp_rec_nvtx_end en = {0};
    TP_REC_INIT(&en, TP_REC_NVTX_END);
    en.ts = 2500, en.range_id = 9, en.tid = 12;
    tp_writer_write(w, &en);
}

static void write_memory(tp_writer *w) {
    tp_rec_device_mem d = {0};
    TP_REC_INIT(&d, TP_REC_DEVICE_MEM);
    d.ts = 100, d.address = 0x7000, d.bytes = 1 << 20, d.op = TP_MEMOP_ALLOC;
    tp_writer_write(w, &d);
    d.ts = 4500, d.op = TP_MEMOP_FREE;
    tp_writer_write(w, &d);
    tp_rec_region g = {0};
    TP_REC_INIT(&g, TP_REC_REGION);
    g.ts = 200, g.address = 0x9000, g.size = 256, g.op = TP_REGION_REGISTER;
    tp_writer_write(w, &g);
    g.ts = 300, g.size = 0, g.op = TP_REGION_UNREGISTER;
    tp_writer_write(w, &g);
    tp_rec_alloc_fail f = {0};
    TP_REC_INIT(&f, TP_REC_ALLOC_FAIL);
    f.ts = 400, f.requested = 1000, f.reserved_bytes = 5000, f.free_bytes = 3000;
    tp_writer_write(w, &f);
}

static int write_trace(const char *path) {
    tp_writer_opts o;
    tp_writer_opts_default(&o);
    o.block_when_full = 1;
    o.producer = "test_import_native";
    tp_writer *w;
    if (tp_writer_open(path, &o, &w) != TP_OK)
        return -1;
    tp_rec_process p = {0};
    TP_REC_INIT(&p, TP_REC_PROCESS);
    p.pid = 4242, p.rank = 2, p.world_size = 4;
    tp_writer_write_meta(w, &p);
    write_api(w, TP_API_RUNTIME, "cudaLaunchKernel", 1000, 1500, 5);
    write_api(w, TP_API_RUNTIME, "cudaMemcpyAsync", 1700, 1800, 6);
    write_api(w, TP_API_DEVICE, "tp_cpu_matmul", 1900, 1950, 0);
    write_api(w, TP_API_DRIVER, "cuCtxSynchronize", 3650, 3950, 0);
    write_gpu(w);
    write_nvtx(w);
    write_memory(w);
    return tp_writer_close(w) == TP_OK ? 0 : -1;
}

static long find_row(const tp_model *m, const tp_rank *r, const char *name) {
    for (size_t i = 0; i < r->ev.n; i++)
        if (!strcmp(tp_model_str(m, r->ev.name[i]), name))
            return (long)i;
    return -1;
}

static void test_native_model(void) {
    char path[256];
    snprintf(path, sizeof path, "/tmp/tp_test_native_%d.tprof", (int)getpid());
    CHECK_OK(write_trace(path));
    const char *paths[] = {path};
    tp_model *m;
    tp_load_result res;
    tp_status st = tp_load_paths(paths, 1, &m, &res);
    if (st != TP_OK)
        fprintf(stderr, "load: %s\n", res.error);
    CHECK_OK(st);
    const tp_rank *r = &m->ranks[0];
    CHECK_EQ_I(r->native, 1);
    CHECK_EQ_I(r->rank, 2);
    CHECK_EQ_I(r->world_size, 4);
    CHECK_EQ_I(r->device_type, TP_DEVTYPE_NVIDIA); /* no DEVICE record: CUDA by default */
    CHECK_STR(tp_devtype_name(r->device_type), "NVIDIA GPU");
    /* 4 API + kernel + memcpy + memset + sync + 3 annotations */
    CHECK_EQ_U(r->ev.n, 11);

    long k = find_row(m, r, "my_kernel");
    CHECK(k >= 0);
    CHECK_EQ_I(r->ev.cat[k], TP_CAT_KERNEL);
    CHECK_EQ_I(r->ev.ts[k], 2000);
    CHECK_EQ_I(tp_ev_dur(&r->ev, k), 1000);
    CHECK_EQ_I(tp_ev_stream(&r->ev, k), 7);
    long l = find_row(m, r, "cudaLaunchKernel");
    CHECK(l >= 0);
    CHECK(r->ev.flags[l] & TP_EVF_LAUNCH);
    CHECK_EQ_I(tp_ev_pid(&r->ev, l), 4242);
    const uint32_t *rows;
    CHECK_EQ_U(tp_rank_corr_rows(r, 5, &rows), 2);
    long dev = find_row(m, r, "tp_cpu_matmul");
    CHECK(dev >= 0);
    CHECK_EQ_I(r->ev.cat[dev], TP_CAT_CUDA_RUNTIME);
    CHECK(r->ev.flags[dev] & TP_EVF_LAUNCH);
    long drv = find_row(m, r, "cuCtxSynchronize");
    CHECK(drv >= 0);
    CHECK_EQ_I(r->ev.cat[drv], TP_CAT_CUDA_DRIVER);
    long c = find_row(m, r, "Memcpy HtoD (Pageable -> Device)");
    CHECK(c >= 0);
    CHECK_EQ_I(r->ev.cat[c], TP_CAT_MEMCPY);
    CHECK_EQ_I(tp_ev_bytes(&r->ev, c), 4096);
    CHECK_EQ_I(tp_ev_src_kind(&r->ev, c), TP_MEM_PAGEABLE);
    long s = find_row(m, r, "Memset (Device)");
    CHECK(s >= 0);
    CHECK_EQ_I(tp_ev_stream(&r->ev, s), 8);
    long y = find_row(m, r, "Context Sync");
    CHECK(y >= 0);
    CHECK_EQ_I(tp_ev_stream(&r->ev, y), -1);
    CHECK_EQ_I(r->streams.n, 2);

    long outer = find_row(m, r, "outer"), inner = find_row(m, r, "inner");
    CHECK(outer >= 0 && inner >= 0);
    CHECK_EQ_I(r->ev.cat[outer], TP_CAT_USER_ANNOTATION);
    CHECK_EQ_I(r->ev.ts[outer], 500);
    CHECK_EQ_I(tp_ev_dur(&r->ev, outer), 3500);
    CHECK_EQ_I(r->ev.ts[inner], 900);
    CHECK_EQ_I(tp_ev_dur(&r->ev, inner), 700);
    CHECK_EQ_I(tp_ev_parent(&r->ev, (size_t)inner), outer);
    CHECK_EQ_I(tp_ev_parent(&r->ev, (size_t)l), inner); /* the launch ran inside "inner" */
    CHECK_EQ_I(tp_ev_depth(&r->ev, l), 2);
    long as = find_row(m, r, "async");
    CHECK(as >= 0);
    CHECK_EQ_I(tp_ev_dur(&r->ev, as), 1300);

    CHECK_EQ_U(r->mem.n, 5);
    CHECK_EQ_I(r->mem.kind[0], TP_MEMEV_ALLOC);
    CHECK_EQ_I(tp_memev_bytes(&r->mem, 0), 1 << 20);
    CHECK_EQ_I(tp_memev_bytes(&r->mem, 1), 256);  /* region registered */
    CHECK_EQ_I(tp_memev_bytes(&r->mem, 2), -256); /* and unregistered: size remembered */
    CHECK_EQ_I(r->mem.kind[3], TP_MEMEV_ALLOC_FAIL);
    CHECK_EQ_I(tp_memev_total_allocated(&r->mem, 3), 2000);
    CHECK_EQ_I(tp_memev_bytes(&r->mem, 4), -(1 << 20));
    tp_model_close(m);

    /* A Kineto file and the .tprof side by side form a two-rank job. */
    const char *src = getenv("TP_SOURCE_DIR");
    char json[1024];
    snprintf(json, sizeof json, "%s/tests/analyzer/data/kineto_current.json", src ? src : ".");
    const char *both[] = {path, json};
    CHECK_OK(tp_load_paths(both, 2, &m, &res));
    CHECK_EQ_U(m->n_ranks, 2);
    CHECK(tp_model_rank(m, 2) && tp_model_rank(m, 3));
    tp_model_close(m);
    unlink(path);
}

/* A trace cut short (a crashed job) still loads what its intact chunks hold, or fails with a
 * message naming the file; every cut length is tried on the way, never a crash. */
static void test_truncated_trace(void) {
    char path[256], cut[300];
    snprintf(path, sizeof path, "/tmp/tp_test_native_full_%d.tprof", (int)getpid());
    snprintf(cut, sizeof cut, "/tmp/tp_test_native_cut_%d.tprof", (int)getpid());
    CHECK_OK(write_trace(path));
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    static unsigned char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    CHECK(n > 64 && n < sizeof buf);
    size_t loaded = 0;
    for (size_t len = 1; len < n; len += 7) {
        FILE *o = fopen(cut, "wb");
        fwrite(buf, 1, len, o);
        fclose(o);
        const char *paths[] = {cut};
        tp_model *m;
        tp_load_result res;
        if (tp_load_paths(paths, 1, &m, &res) == TP_OK) {
            loaded++;
            CHECK(m->ranks[0].ev.n <= 11);
            tp_model_close(m);
        } else {
            CHECK(strstr(res.error, cut) != NULL);
        }
    }
    CHECK(loaded > 0);
    unlink(cut);
    unlink(path);
}

/* Devices written through the device-activity API (the trainer's CPU backend) are named as
 * such, not as a GPU. */
static void test_cpu_device(void) {
    char path[256];
    snprintf(path, sizeof path, "/tmp/tp_test_native_cpudev_%d.tprof", (int)getpid());
    tp_writer *w;
    CHECK_OK(tp_writer_open(path, NULL, &w));
    tp_rec_device d = {0};
    TP_REC_INIT(&d, TP_REC_DEVICE);
    d.id = 0, d.kind = TP_DEVICE_CPU_ACCEL, d.name_sid = sid(w, "trainprof CPU device");
    tp_writer_write_meta(w, &d);
    write_api(w, TP_API_DEVICE, "tp_cpu_matmul", 100, 150, 1);
    tp_rec_kernel k = {0};
    TP_REC_INIT(&k, TP_REC_KERNEL);
    k.ts = 200, k.end = 900, k.correlation = 1, k.name_sid = sid(w, "matmul"), k.stream = 1;
    tp_writer_write(w, &k);
    CHECK_OK(tp_writer_close(w));
    const char *paths[] = {path};
    tp_model *m;
    tp_load_result res;
    CHECK_OK(tp_load_paths(paths, 1, &m, &res));
    const tp_rank *r = &m->ranks[0];
    CHECK_EQ_I(r->device_type, TP_DEVTYPE_CPU_DEVICE);
    CHECK_STR(tp_devtype_name(r->device_type), "CPU device");
    CHECK_EQ_U(r->n_devices, 1);
    CHECK_STR(tp_model_str(m, r->devices[0].name), "trainprof CPU device");
    CHECK_EQ_U(r->streams.n, 1);
    const uint32_t *rows;
    CHECK_EQ_U(tp_rank_corr_rows(r, 1, &rows), 2);
    tp_model_close(m);
    unlink(path);
}

static void test_not_a_trace(void) {
    char path[256];
    snprintf(path, sizeof path, "/tmp/tp_test_native_bad_%d.tprof", (int)getpid());
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    fputs("this is not a trace at all", f);
    fclose(f);
    const char *paths[] = {path};
    tp_model *m;
    tp_load_result res;
    CHECK(tp_load_paths(paths, 1, &m, &res) != TP_OK);
    CHECK(strstr(res.error, path) != NULL);
    CHECK(strstr(res.error, "neither Kineto JSON nor .tprof") != NULL);
    unlink(path);
}

int main(void) {
    TP_RUN(test_native_model);
    TP_RUN(test_truncated_trace);
    TP_RUN(test_cpu_device);
    TP_RUN(test_not_a_trace);
    return tp_test_summary();
}
