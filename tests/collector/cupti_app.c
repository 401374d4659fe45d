/* cupti_app: the program test_collector_cupti runs under `trainprof record`. It plays the
 * CUDA runtime and driver against the CUPTI and libcuda STAND-INS (cupti_standin/, linked
 * under their sonames), so the collector's CUPTI glue runs its whole life without a GPU:
 * cuInit calls the collector's InitializeInjection as the driver does, then API calls, kernels,
 * copies and buffers go through the stand-in's functions. It checks nothing itself: the test
 * reads the trace. Like the CUDA runtime, it registers its exit teardown before cuInit.
 *
 *   cupti_app basic        the lifecycle: context and stream, 3 steps of one gemm launch in
 *                          NVTX range "step" (one buffer each), an async copy through the
 *                          runtime and the driver, a direct driver launch (Triton), failed
 *                          cudaMalloc / cudaMallocHost / cuMemCreate; buffers completed in
 *                          reverse order; then a kernel without timestamps, an incomplete
 *                          record and a kernel behind it; then a kernel in a held buffer that
 *                          only the forced flush at exit delivers (before the teardown)
 *   cupti_app launch       cuInit, one launch, one NVTX range "after-cuda" (refusal tests);
 *                          prints the stand-in's callback count and enabled kinds
 *   cupti_app capture      launches inside and outside NVTX range "capture-me"
 *   cupti_app fork         a launch, then a fork child that launches and exits normally
 *   cupti_app kineto       a launch, then a second CUPTI client registers its own buffer
 *                          callbacks (as torch.profiler does), then another launch
 *   cupti_app starve       launches into more buffers than the collector's pool holds
 *   cupti_app kinetorefused a launch, then a second client's cuptiSubscribe (refused), a launch
 *   cupti_app kinetofirst  the second client registers its callbacks before cuInit
 *   cupti_app bigbuf N     N runtime calls whose API records fill whole 4 MiB buffers
 *   cupti_app wrap N       N launches whose records never arrive, then the first one's */
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda.h>

#include "tp_cupti_standin.h"

#define STREAM 7

static void runtime_teardown(void) {
    tp_standin_teardown();
}

static void cuda_init(void) {
    atexit(runtime_teardown);
    cuInit(0);
    tp_standin_resource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, 1, 0);
    tp_standin_resource(CUPTI_CBID_RESOURCE_STREAM_CREATED, 1, STREAM);
}

/* A runtime launch as cudart makes it: cudaLaunchKernel around the driver's cuLaunchKernel.
 * Returns the runtime call's correlation id, which the kernel carries. */
static uint32_t launch_calls(const char *kernel) {
    tp_standin_call rt = {CUPTI_CB_DOMAIN_RUNTIME_API,
                          CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                          "cudaLaunchKernel",
                          kernel,
                          NULL,
                          0,
                          0};
    tp_standin_enter(&rt);
    tp_standin_call drv = {CUPTI_CB_DOMAIN_DRIVER_API,
                           CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
                           "cuLaunchKernel",
                           kernel,
                           NULL,
                           0,
                           0};
    tp_standin_enter(&drv);
    tp_standin_exit(&drv, 0);
    tp_standin_exit(&rt, 0);
    return rt.correlation;
}

static void launch(const char *kernel) {
    uint64_t t = tp_standin_now();
    tp_standin_kernel(launch_calls(kernel), kernel, STREAM, t, t + 1000);
}

/* The functions whose names the launch stacks must show (noinline: their own frames). */
__attribute__((noinline)) static void launch_gemm(void) {
    launch("gemm_kernel");
    __asm__ volatile("");
}

__attribute__((noinline)) static void launch_triton(void) {
    tp_standin_call drv = {CUPTI_CB_DOMAIN_DRIVER_API,
                           CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
                           "cuLaunchKernel",
                           "triton_kernel",
                           NULL,
                           0,
                           0};
    tp_standin_enter(&drv);
    uint64_t t = tp_standin_now();
    tp_standin_exit(&drv, 0);
    tp_standin_kernel(drv.correlation, "triton_kernel", STREAM, t, t + 500);
    __asm__ volatile("");
}

/* cudaMemcpyAsync -> cuMemcpyHtoDAsync_v2: the copy carries the driver call's id and the
 * runtime call's as runtimeCorrelationId. */
__attribute__((noinline)) static void copy_h2d(void) {
    tp_standin_call rt = {CUPTI_CB_DOMAIN_RUNTIME_API,
                          CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
                          "cudaMemcpyAsync",
                          NULL,
                          NULL,
                          0,
                          0};
    tp_standin_enter(&rt);
    tp_standin_call drv = {CUPTI_CB_DOMAIN_DRIVER_API,
                           CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2,
                           "cuMemcpyHtoDAsync_v2",
                           NULL,
                           NULL,
                           0,
                           0};
    tp_standin_enter(&drv);
    uint64_t t = tp_standin_now();
    tp_standin_exit(&drv, 0);
    tp_standin_exit(&rt, 0);
    tp_standin_memcpy(drv.correlation, rt.correlation, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 1 << 20, t,
                      t + 2000);
    __asm__ volatile("");
}

/* An allocation that fails with out-of-memory (2 in both APIs). */
static void fail_alloc(CUpti_CallbackDomain dom, uint32_t cbid, const char *name,
                       const void *params) {
    tp_standin_call c = {dom, cbid, name, NULL, params, 0, 0};
    tp_standin_enter(&c);
    tp_standin_exit(&c, 2);
}

__attribute__((noinline)) static void alloc_device(void) {
    void *p;
    cudaMalloc_v3020_params a = {&p, (size_t)1 << 40};
    fail_alloc(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, "cudaMalloc",
               &a);
    __asm__ volatile("");
}

__attribute__((noinline)) static void alloc_pinned(void) {
    void *p;
    cudaMallocHost_v3020_params a = {&p, (size_t)3 << 30};
    fail_alloc(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020,
               "cudaMallocHost", &a);
    __asm__ volatile("");
}

__attribute__((noinline)) static void alloc_physical(void) {
    CUmemGenericAllocationHandle h;
    cuMemCreate_params a = {&h, (size_t)5 << 30, NULL, 0};
    fail_alloc(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemCreate, "cuMemCreate", &a);
    __asm__ volatile("");
}

static int run_basic(void) {
    cuda_init();
    for (int i = 0; i < 3; i++) {
        nvtxRangePushA("step");
        launch_gemm();
        nvtxRangePop();
        tp_standin_close_buffer();
    }
    copy_h2d();
    launch_triton();
    alloc_device();
    alloc_pinned();
    alloc_physical();
    tp_standin_close_buffer();
    tp_standin_complete(1); /* out of order: the last buffer first */
    uint32_t corr = launch_calls("broken_kernel");
    tp_standin_kernel(corr, "broken_kernel", STREAM, 0, 0); /* left without timestamps */
    tp_standin_incomplete();
    launch("lost_kernel"); /* behind the incomplete record: the walk never reaches it */
    tp_standin_close_buffer();
    tp_standin_complete(0);
    launch("late_kernel");
    tp_standin_hold_buffer(); /* only the forced flush at exit delivers it */
    return 0;
}

static int run_launch(void) {
    cuda_init();
    launch("gemm_kernel");
    nvtxRangePushA("after-cuda");
    nvtxRangePop();
    tp_standin_stats st;
    tp_standin_get_stats(&st);
    printf("callbacks=%llu kinds=%llx subscribed=%d\n", (unsigned long long)st.callbacks,
           (unsigned long long)st.kinds, st.subscribed);
    return 0;
}

static int run_capture(void) {
    cuda_init();
    launch("outside_kernel");
    nvtxRangePushA("capture-me");
    launch("inside_kernel");
    launch("inside_kernel");
    nvtxRangePop();
    launch("outside_kernel");
    return 0; /* all delivered by the exit flush, after the range closed */
}

static int run_fork(void) {
    cuda_init();
    launch("parent_kernel");
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        nvtxRangePushA("child");
        launch("child_kernel");
        nvtxRangePop();
        exit(0);
    }
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
        return 6;
    launch("parent_kernel");
    return 0;
}

/* The second client's callbacks (torch.profiler's Kineto): count what reaches them. */
static int g_theirs;
static uint8_t g_their_buf[1 << 16] __attribute__((aligned(8)));

static void CUPTIAPI their_request(uint8_t **buf, size_t *size, size_t *max) {
    *buf = g_their_buf;
    *size = sizeof g_their_buf;
    *max = 0;
}

static void CUPTIAPI their_complete(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
                                    size_t valid) {
    (void)ctx, (void)stream, (void)size;
    CUpti_Activity *rec = NULL;
    while (cuptiActivityGetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS)
        g_theirs += rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
}

static int run_kineto(void) {
    cuda_init();
    launch("before_kernel"); /* still in a buffer of ours when the other client comes */
    if (cuptiActivityRegisterCallbacks(their_request, their_complete) != CUPTI_SUCCESS ||
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS)
        return 7;
    launch("after_kernel");
    cuptiActivityFlushAll(0);
    printf("theirs=%d\n", g_theirs);
    return 0;
}

/* PyTorch 2.11's Kineto on the first GPU run: it subscribes first, is refused (we hold
 * CUPTI's one subscriber) and gives up on CUDA activity; our tracing goes on. */
static void their_callback(void *ud, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *p) {
    (void)ud, (void)d, (void)id, (void)p;
}

static int run_kineto_refused(void) {
    cuda_init();
    launch("before_kernel");
    CUpti_SubscriberHandle sub;
    CUptiResult r = cuptiSubscribe(&sub, (CUpti_CallbackFunc)their_callback, NULL);
    printf("refused=%d\n", r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
    launch("after_kernel");
    return 0;
}

/* Nine buffers filled before any completes: the collector's pool has eight, so the ninth
 * launch finds none (its records dropped by CUPTI, counted); then a launch after completion. */
static int run_starve(void) {
    cuda_init();
    for (int i = 0; i < 9; i++) {
        launch("kept_kernel");
        tp_standin_close_buffer();
    }
    tp_standin_complete(0);
    launch("kept_kernel");
    return 0;
}

/* The other client was there first (torch.profiler started before CUDA): it keeps CUPTI. */
static int run_kineto_first(void) {
    if (cuptiActivityRegisterCallbacks(their_request, their_complete) != CUPTI_SUCCESS ||
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS)
        return 7;
    cuda_init();
    launch("their_kernel");
    cuptiActivityFlushAll(0);
    printf("theirs=%d\n", g_theirs);
    return 0;
}

static int run_bigbuf(long n) {
    cuda_init();
    for (long i = 0; i < n; i++) {
        tp_standin_call c = {CUPTI_CB_DOMAIN_RUNTIME_API,
                             CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020,
                             "cudaGetDevice",
                             NULL,
                             NULL,
                             0,
                             0};
        tp_standin_enter(&c);
        tp_standin_exit(&c, 0);
    }
    tp_standin_close_buffer();
    tp_standin_complete(0);
    return 0;
}

static int run_wrap(long n) {
    cuda_init();
    tp_standin_set_api_records(0);
    uint32_t first = 0;
    for (long i = 0; i < n; i++) {
        tp_standin_call c = {CUPTI_CB_DOMAIN_RUNTIME_API,
                             CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                             "cudaLaunchKernel",
                             "many_kernel",
                             NULL,
                             0,
                             0};
        tp_standin_enter(&c);
        tp_standin_exit(&c, 0);
        first = first ? first : c.correlation;
    }
    uint64_t t = tp_standin_now();
    tp_standin_kernel(first, "many_kernel", STREAM, t, t + 10);
    return 0;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "basic";
    long n = argc > 2 ? atol(argv[2]) : 0;
    if (!strcmp(mode, "basic"))
        return run_basic();
    if (!strcmp(mode, "launch"))
        return run_launch();
    if (!strcmp(mode, "capture"))
        return run_capture();
    if (!strcmp(mode, "fork"))
        return run_fork();
    if (!strcmp(mode, "kineto"))
        return run_kineto();
    if (!strcmp(mode, "starve"))
        return run_starve();
    if (!strcmp(mode, "kinetorefused"))
        return run_kineto_refused();
    if (!strcmp(mode, "kinetofirst"))
        return run_kineto_first();
    if (!strcmp(mode, "bigbuf"))
        return run_bigbuf(n);
    if (!strcmp(mode, "wrap"))
        return run_wrap(n);
    fprintf(stderr, "cupti_app: unknown mode %s\n", mode);
    return 2;
}
