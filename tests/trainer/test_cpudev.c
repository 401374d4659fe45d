/* test_cpudev: the CPU device behaves like an accelerator and reports like one.
 *
 * Memory: a capacity-limited arena that coalesces freed segments. Work: kernels and copies
 * run in stream order on device threads; events order two streams; pageable copies block
 * the caller until done; results are right. Activity (through the recording collector
 * stand-in, argv[1]): every launch's API record and kernel record share a correlation id,
 * copies carry pinned/pageable kinds and the async flag, syncs are reported. */
#include "tp_device.h"
#include "tp_test.h"

#include <dlfcn.h>

#define MiB (1024u * 1024u)

static const char *(*rec_log)(void);
static void (*rec_clear)(void);

static tp_device *open_dev(uint64_t bytes) {
    tp_device_opts o = {TP_DEVICE_CPU, bytes, 1};
    tp_device *d = NULL;
    char err[128];
    return tp_device_open(&o, &d, err, sizeof err) == TP_OK ? d : NULL;
}

static void test_arena_capacity_and_coalescing(void) {
    tp_device *d = open_dev(64 * MiB);
    CHECK(d != NULL);
    void *a, *b, *c, *e;
    CHECK_OK(tp_device_seg_alloc(d, 16 * MiB, &a));
    CHECK_OK(tp_device_seg_alloc(d, 16 * MiB, &b));
    CHECK_OK(tp_device_seg_alloc(d, 16 * MiB, &c));
    CHECK_EQ_I(tp_device_seg_alloc(d, 17 * MiB, &e), TP_ERR_NOMEM); /* 16 MiB left */
    tp_device_seg_free(d, b, 16 * MiB);
    CHECK_EQ_I(tp_device_seg_alloc(d, 20 * MiB, &e), TP_ERR_NOMEM); /* two 16 MiB holes */
    tp_device_seg_free(d, a, 16 * MiB);
    tp_device_seg_free(d, c, 16 * MiB);
    CHECK_OK(tp_device_seg_alloc(d, 64 * MiB, &e)); /* all coalesced again */
    CHECK(e == a);
    tp_device_seg_free(d, e, 64 * MiB);
    tp_device_close(d);
}

static void test_stream_order_and_events(void) {
    tp_device *d = open_dev(64 * MiB);
    enum { N = 100000 };
    float *host = tp_device_host_alloc(d, N * sizeof(float), 1);
    float *back = tp_device_host_alloc(d, N * sizeof(float), 1);
    void *x, *y;
    CHECK_OK(tp_device_seg_alloc(d, N * sizeof(float), &x));
    CHECK_OK(tp_device_seg_alloc(d, N * sizeof(float), &y));
    for (int i = 0; i < N; i++)
        host[i] = (float)(i % 7) - 3.0f;
    /* copy on the copy stream; the compute stream waits for it through an event */
    tp_device_memcpy(d, TP_STREAM_COPY, x, host, N * sizeof(float), TP_COPY_H2D);
    tp_event *ev = tp_device_event_create(d);
    tp_device_event_record(d, ev, TP_STREAM_COPY);
    tp_device_stream_wait_event(d, TP_STREAM_COMPUTE, ev);
    tp_kcall k = {.op = TP_K_RELU_FWD, .i = {N}};
    k.p[0] = x, k.p[1] = y;
    tp_device_launch(d, TP_STREAM_COMPUTE, &k);
    tp_device_memcpy(d, TP_STREAM_COMPUTE, back, y, N * sizeof(float), TP_COPY_D2H);
    tp_device_stream_sync(d, TP_STREAM_COMPUTE);
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += back[i] != (host[i] > 0 ? host[i] : 0.0f);
    CHECK_EQ_I(bad, 0);
    tp_device_stats st;
    tp_device_get_stats(d, &st);
    CHECK_EQ_U(st.launches, 1);
    CHECK_EQ_U(st.copies_h2d, 1);
    CHECK_EQ_U(st.copies_d2h, 1);
    CHECK_EQ_U(st.h2d_bytes, N * sizeof(float));
    CHECK_EQ_U(st.syncs, 1);
    tp_device_event_destroy(d, ev);
    tp_device_seg_free(d, x, N * sizeof(float));
    tp_device_seg_free(d, y, N * sizeof(float));
    tp_device_host_free(d, host);
    tp_device_host_free(d, back);
    tp_device_close(d);
}

/* A pageable copy queued behind a long kernel returns only after both have run. */
static void test_pageable_copy_blocks(void) {
    tp_device *d = open_dev(256 * MiB);
    enum { M = 512, K = 2048, NO = 512 };
    void *x, *w, *y, *dst;
    CHECK_OK(tp_device_seg_alloc(d, (size_t)M * K * 4, &x));
    CHECK_OK(tp_device_seg_alloc(d, (size_t)NO * K * 4, &w));
    CHECK_OK(tp_device_seg_alloc(d, (size_t)M * NO * 4, &y));
    CHECK_OK(tp_device_seg_alloc(d, 4096, &dst));
    for (size_t i = 0; i < (size_t)M * K; i++)
        ((float *)x)[i] = 1.0f;
    for (size_t i = 0; i < (size_t)NO * K; i++)
        ((float *)w)[i] = 0.5f;
    ((float *)y)[(size_t)M * NO - 1] = -1.0f;
    tp_kcall k = {.op = TP_K_LINEAR_FWD, .i = {M, K, NO}};
    k.p[0] = x, k.p[1] = w, k.p[3] = y;
    tp_device_launch(d, TP_STREAM_COMPUTE, &k); /* ~1 GFLOP */
    char *pageable = malloc(4096);
    memset(pageable, 7, 4096);
    tp_device_memcpy(d, TP_STREAM_COMPUTE, dst, pageable, 4096, TP_COPY_H2D);
    /* no sync: the pageable copy itself waited for the kernel and the copy */
    CHECK_NEAR(((float *)y)[(size_t)M * NO - 1], K * 0.5, 0);
    CHECK_EQ_I(((char *)dst)[4095], 7);
    free(pageable);
    tp_device_close(d);
}

/* Parses "act_api NAME corr=C" lines and checks each has a device record with C. */
static void test_activity_correlation(void) {
    rec_clear();
    tp_device *d = open_dev(64 * MiB);
    float *pinned = tp_device_host_alloc(d, 4096, 1);
    char *pageable = malloc(4096);
    void *x;
    CHECK_OK(tp_device_seg_alloc(d, 4096, &x));
    tp_device_memcpy(d, TP_STREAM_COMPUTE, x, pinned, 4096, TP_COPY_H2D);
    tp_device_memcpy(d, TP_STREAM_COMPUTE, x, pageable, 4096, TP_COPY_H2D);
    tp_device_memset(d, TP_STREAM_COMPUTE, x, 0, 4096);
    tp_kcall k = {.op = TP_K_RELU_FWD, .i = {1024}};
    k.p[0] = x, k.p[1] = x;
    for (int i = 0; i < 3; i++)
        tp_device_launch(d, TP_STREAM_COMPUTE, &k);
    tp_device_stream_sync(d, TP_STREAM_COMPUTE);
    char *log = (char *)rec_log();
    int apis = 0, matched = 0;
    for (char *p = log; (p = strstr(p, "act_api ")); p++) {
        char name[64];
        unsigned corr;
        if (sscanf(p, "act_api %63s corr=%u", name, &corr) != 2)
            continue;
        apis++;
        char want[64];
        snprintf(want, sizeof want, " corr=%u", corr);
        for (char *q = log; (q = strstr(q, want)); q++) { /* another record, same id */
            char *bol = q;
            while (bol > log && bol[-1] != '\n')
                bol--;
            if (strncmp(bol, "act_api", 7) != 0) {
                matched++;
                break;
            }
        }
    }
    CHECK_EQ_I(apis, 7); /* 2 copies, 1 memset, 3 launches, 1 sync */
    CHECK_EQ_I(matched, 7);
    CHECK(strstr(log, "act_device trainprof CPU device 67108864") != NULL);
    CHECK(strstr(log, "act_api tpLaunchKernel") != NULL);
    CHECK(strstr(log, "act_kernel relu_fwd dev=7 stream=0") != NULL);
    CHECK(strstr(log, "act_api tpMemcpyAsync") != NULL);
    CHECK(strstr(log, "act_api tpMemcpy ") != NULL);
    CHECK(strstr(log, "act_memcpy kind=1 src=2 dst=3 bytes=4096 dev=7") != NULL); /* pinned */
    CHECK(strstr(log, "act_memcpy kind=1 src=1 dst=3 bytes=4096 dev=7") != NULL); /* pageable */
    CHECK(strstr(log, "act_memset bytes=4096 value=0 dev=7") != NULL);
    CHECK(strstr(log, "act_sync type=3 dev=7 stream=0") != NULL);
    CHECK(strstr(log, "thread_name cpudev stream 0") != NULL);
    free(log);
    free(pageable);
    tp_device_close(d);
}

static void test_cuda_refused_cleanly(void) {
    tp_device_opts o = {TP_DEVICE_CUDA, 0, 1};
    tp_device *d = (tp_device *)1;
    char err[256] = "";
    tp_status s = tp_device_open(&o, &d, err, sizeof err);
    if (s == TP_OK) { /* a GPU is present: fine, nothing to check here */
        tp_device_close(d);
        return;
    }
    CHECK_EQ_I(s, TP_ERR_UNSUPPORTED);
    CHECK(d == NULL);
    CHECK(strlen(err) > 10);
}

int main(int argc, char **argv) {
    if (argc < 2)
        TP_SKIP("usage: test_cpudev RECORDER.so");
    setenv("NVTX_INJECTION64_PATH", argv[1], 1);
    setenv("TRAINPROF_COLLECTOR", argv[1], 1);
    void *h = dlopen(argv[1], RTLD_NOW);
    if (!h)
        return 1;
    rec_log = (const char *(*)(void))dlsym(h, "tp_rec_log");
    rec_clear = (void (*)(void))dlsym(h, "tp_rec_clear");
    if (!rec_log || !rec_clear)
        return 1;
    TP_RUN(test_arena_capacity_and_coalescing);
    TP_RUN(test_stream_order_and_events);
    TP_RUN(test_pageable_copy_blocks);
    TP_RUN(test_activity_correlation);
    TP_RUN(test_cuda_refused_cleanly);
    return tp_test_summary();
}
