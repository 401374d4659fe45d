/* test_collector_devices: device activity that does not come from NVTX.
 * - activity.h: a CPU device's kernel, copy, memset, sync, launch, memory and a failed
 *   allocation become the same records the CUPTI path writes; without a collector the
 *   client sees none (tp_activity_enabled() == 0).
 * - CUDA injection with the real libcupti: InitializeInjection returns 1 and NVTX keeps
 *   recording. Without a GPU (no /dev/nvidiactl) CUPTI refuses cuptiSubscribe, which is said
 *   once on stderr and kept in the trace; with one CUPTI starts and nothing is said. The
 *   deterministic refusal paths run against the CUPTI stand-in (test_collector_cupti). */
#include "tc_run.h"
#include "tp_test.h"

static tc_run R;

static const tp_rec_hdr *first(tp_reader *rd, uint16_t type, void *out, size_t size) {
    static char buf[256];
    tp_query q = {TP_REC_BIT(type), 0, 0};
    tp_cursor *c;
    const tp_rec_hdr *h = NULL;
    if (tp_cursor_open(rd, &q, &c) != TP_OK)
        return NULL;
    if ((h = tp_cursor_next(c))) {
        memcpy(buf, h, h->size < sizeof buf ? h->size : sizeof buf);
        tp_record_get(h, out, size);
        h = (const tp_rec_hdr *)buf;
    }
    tp_cursor_close(c);
    return h;
}

static void test_activity_api(void) {
    const char *args[] = {"activity", NULL};
    CHECK_EQ_I(tc_record(&R, NULL, NULL, args), 0);
    char path[1024];
    tp_reader *rd;
    CHECK_EQ_I(tc_trace(&R, 0, path, sizeof path), 1);
    CHECK_OK(tp_reader_open(path, &rd));
    const tp_rec_hdr *const *recs;
    CHECK_EQ_U(tp_reader_meta(rd, TP_REC_DEVICE, &recs), 1);
    const tp_rec_device *d = (const tp_rec_device *)recs[0];
    CHECK_STR(tp_reader_string(rd, d->name_sid), "cpu-device");
    CHECK_EQ_U(d->kind, TP_DEVICE_CPU_ACCEL);
    CHECK_EQ_U(d->global_memory_bytes, 1u << 30);
    tp_rec_api api;
    tp_rec_kernel k;
    CHECK(first(rd, TP_REC_API, &api, sizeof api) != NULL);
    CHECK(first(rd, TP_REC_KERNEL, &k, sizeof k) != NULL);
    CHECK_EQ_U(api.h.flags & TP_RF_TYPE_MASK, TP_API_DEVICE);
    CHECK_STR(tp_reader_string(rd, api.name_sid), "launch_gemm");
    CHECK_EQ_U(api.correlation, k.correlation); /* launch joins its kernel */
    CHECK(api.correlation >= 0x80000000u);
    CHECK_STR(tp_reader_string(rd, k.name_sid), "gemm");
    CHECK_EQ_U(k.device, d->id);
    CHECK_EQ_U(k.grid_x * k.grid_y * k.block_x, 512);
    CHECK_EQ_U(k.end - k.ts, 1000);
    tp_rec_memcpy m;
    CHECK(first(rd, TP_REC_MEMCPY, &m, sizeof m) != NULL);
    CHECK_EQ_U(m.copy_kind, TP_COPY_HTOD);
    CHECK_EQ_U(m.src_kind, TP_MEM_PINNED);
    CHECK_EQ_U(m.dst_kind, TP_MEM_DEVICE);
    CHECK(m.h.flags & TP_MEMCPY_ASYNC);
    tp_rec_memset s;
    CHECK(first(rd, TP_REC_MEMSET, &s, sizeof s) != NULL);
    CHECK_EQ_U(s.value, 7);
    tp_rec_sync y;
    CHECK(first(rd, TP_REC_SYNC, &y, sizeof y) != NULL);
    CHECK_EQ_U(y.type, TP_SYNC_STREAM);
    CHECK_EQ_U(y.end - y.ts, 2000);
    CHECK_EQ_I(tc_count(rd, TP_REC_DEVICE_MEM, NULL), 2);
    tp_rec_alloc_fail f;
    CHECK(first(rd, TP_REC_ALLOC_FAIL, &f, sizeof f) != NULL);
    CHECK_EQ_U(f.requested, 1u << 20);
    CHECK_EQ_U(f.free_bytes, 1u << 20);
    CHECK_EQ_U(f.largest_free_block, 1u << 19);
    CHECK(f.stack_id != 0); /* --stacks api (the default) covers allocation failures */
    tp_reader_close(rd);
    tc_cleanup(&R);
}

static void test_activity_without_collector(void) {
    pid_t p = fork();
    if (p == 0) {
        execl(R.app, R.app, "activity", (char *)NULL);
        _exit(127);
    }
    int st;
    waitpid(p, &st, 0);
    CHECK(WIFEXITED(st));
    CHECK_EQ_I(WEXITSTATUS(st), 4);
}

static void check_cuda_off(const char *opt, const char *why) {
    const char *args[] = {"cuda", NULL};
    const char *opts[] = {opt, NULL};
    CHECK_EQ_I(tc_record(&R, NULL, opt ? opts : NULL, args), 0);
    const char *err = tc_stderr(&R);
    const char *said = strstr(err, "CUDA tracing off (");
    CHECK(said != NULL);
    CHECK(strstr(said + 1, "CUDA tracing off (") == NULL); /* once, though init ran twice */
    CHECK(strstr(err, why) != NULL);
    CHECK(strstr(err, "CUDA: not traced") != NULL);
    char path[1024];
    tp_reader *rd;
    CHECK_EQ_I(tc_trace(&R, 0, path, sizeof path), 1);
    CHECK_OK(tp_reader_open(path, &rd));
    CHECK_EQ_I(tc_count(rd, TP_REC_NVTX_PUSH, "after-cuda"), 1);
    tp_rec_counter c;
    CHECK(first(rd, TP_REC_COUNTER, &c, sizeof c) != NULL);
    const char *name = tp_reader_string(rd, c.name_sid);
    CHECK(name && strstr(name, why));
    tp_reader_close(rd);
    tc_cleanup(&R);
}

#if TP_TEST_HAVE_CUDA
/* A GPU host: CUPTI accepted the subscriber, so CUDA tracing stays on and nothing is said. */
static void check_cuda_on(void) {
    const char *args[] = {"cuda", NULL};
    CHECK_EQ_I(tc_record(&R, NULL, NULL, args), 0);
    CHECK(strstr(tc_stderr(&R), "CUDA tracing off") == NULL);
    CHECK(strstr(tc_stderr(&R), "CUDA: not traced") == NULL);
    char path[1024];
    tp_reader *rd;
    CHECK_EQ_I(tc_trace(&R, 0, path, sizeof path), 1);
    CHECK_OK(tp_reader_open(path, &rd));
    CHECK_EQ_I(tc_count(rd, TP_REC_NVTX_PUSH, "after-cuda"), 1);
    tp_reader_close(rd);
    tc_cleanup(&R);
}
#endif

static void test_cuda_refused(void) {
#if TP_TEST_HAVE_CUDA
    if (access("/dev/nvidiactl", F_OK) == 0)
        check_cuda_on();
    else
        check_cuda_off(NULL, "cuptiSubscribe");
#else
    check_cuda_off(NULL, "built without CUDA");
#endif
    check_cuda_off("--no-cuda", "--no-cuda");
}

int main(int argc, char **argv) {
    tc_init(&R, argc, argv);
    TP_RUN(test_activity_api);
    TP_RUN(test_activity_without_collector);
    TP_RUN(test_cuda_refused);
    return tp_test_summary();
}
