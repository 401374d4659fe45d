/* test_cupti_convert: real CUDA 13 CUPTI activity structs (kernel, pageable and pinned copies,
 * a peer copy, memset, memory alloc/free, runtime and driver API incl. a failed cudaMalloc,
 * sync, overhead, external correlation, device) convert to the expected trace records with
 * correlation ids and memory kinds intact. No GPU needed: conversion makes no CUPTI call. */
#include "tp_cupti_convert.h"
#include "tp_test.h"

static const char *g_strings[16];
static int g_nstrings;

static uint32_t fake_intern(void *ud, const char *s) {
    (void)ud;
    for (int i = 0; i < g_nstrings; i++)
        if (!strcmp(g_strings[i], s))
            return 100 + (uint32_t)i;
    g_strings[g_nstrings] = s;
    return 100 + (uint32_t)g_nstrings++;
}
static uint32_t fake_api_name(void *ud, int driver, uint32_t cbid) {
    (void)ud;
    return (driver ? 2000000u : 1000000u) + cbid;
}
static uint32_t fake_stack(void *ud, uint32_t corr) {
    (void)ud;
    return corr == 11 ? 55 : 0;
}
static uint32_t fake_device(void *ud, uint32_t ctx) {
    (void)ud;
    return ctx == 2 ? 1 : 99;
}
static const tp_cupti_conv CONV = {NULL, fake_intern, fake_api_name, fake_stack, fake_device};

static void test_kernel(void) {
    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof k);
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.start = 1000, k.end = 1500;
    k.deviceId = 1, k.contextId = 2, k.streamId = 7, k.correlationId = 42;
    k.gridX = 80, k.gridY = 2, k.gridZ = 1, k.blockX = 256, k.blockY = 1, k.blockZ = 1;
    k.registersPerThread = 64, k.staticSharedMemory = 1024, k.dynamicSharedMemory = 49152;
    k.graphId = 3, k.graphNodeId = 77;
    k.name = "_Z4gemmPfS_S_";
    tp_cupti_rec r;
    CHECK_EQ_I(tp_cupti_convert(&CONV, (const CUpti_Activity *)&k, &r), 1);
    CHECK_EQ_U(r.h.type, TP_REC_KERNEL);
    CHECK_EQ_U(r.h.size, sizeof(tp_rec_kernel));
    CHECK_EQ_U(tp_record_ts(&r.h), 1000);
    CHECK_EQ_U(tp_record_end(&r.h), 1500);
    CHECK_EQ_U(r.kernel.correlation, 42);
    CHECK_STR(g_strings[r.kernel.name_sid - 100], "_Z4gemmPfS_S_");
    CHECK_EQ_U(r.kernel.device, 1);
    CHECK_EQ_U(r.kernel.context, 2);
    CHECK_EQ_U(r.kernel.stream, 7);
    CHECK_EQ_U(r.kernel.grid_x * r.kernel.grid_y * r.kernel.grid_z, 160);
    CHECK_EQ_U(r.kernel.block_x, 256);
    CHECK_EQ_U(r.kernel.registers_per_thread, 64);
    CHECK_EQ_U(r.kernel.static_shared_bytes, 1024);
    CHECK_EQ_U(r.kernel.dynamic_shared_bytes, 49152);
    CHECK_EQ_U(r.kernel.graph_id, 3);
    CHECK_EQ_U(r.kernel.graph_node_id, 77);
}

static void test_copies(void) {
    CUpti_ActivityMemcpy6 m;
    memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
    m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
    m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m.bytes = 1 << 20, m.start = 10, m.end = 90;
    m.deviceId = 1, m.contextId = 2, m.streamId = 7;
    m.correlationId = 300, m.runtimeCorrelationId = 299;
    tp_cupti_rec r;
    CHECK_EQ_I(tp_cupti_convert(&CONV, (const CUpti_Activity *)&m, &r), 1);
    CHECK_EQ_U(r.h.type, TP_REC_MEMCPY);
    CHECK_EQ_U(r.memcpy.copy_kind, TP_COPY_HTOD);
    CHECK_EQ_U(r.memcpy.src_kind, TP_MEM_PAGEABLE);
    CHECK_EQ_U(r.memcpy.dst_kind, TP_MEM_DEVICE);
    CHECK_EQ_U(r.h.flags & TP_MEMCPY_ASYNC, 0);
    CHECK_EQ_U(r.memcpy.correlation, 300);
    CHECK_EQ_U(r.memcpy.runtime_correlation, 299);
    CHECK_EQ_U(r.memcpy.bytes, 1 << 20);
    /* pinned, async device-to-host */
    m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
    m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
    m.flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
    CHECK_EQ_I(tp_cupti_convert(&CONV, (const CUpti_Activity *)&m, &r), 1);
    CHECK_EQ_U(r.memcpy.copy_kind, TP_COPY_DTOH);
    CHECK_EQ_U(r.memcpy.dst_kind, TP_MEM_PINNED);
    CHECK(r.h.flags & TP_MEMCPY_ASYNC);
    CHECK(r.h.flags & TP_RF_INTERVAL);
    /* peer to peer */
    CUpti_ActivityMemcpyPtoP4 p;
    memset(&p, 0, sizeof p);
    p.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
    p.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
    p.srcKind = p.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    p.bytes = 4096, p.deviceId = 0, p.srcDeviceId = 0, p.dstDeviceId = 3, p.correlationId = 5;
    CHECK_EQ_I(tp_cupti_convert(&CONV, (const CUpti_Activity *)&p, &r), 1);
    CHECK_EQ_U(r.memcpy.copy_kind, TP_COPY_PTOP);
    CHECK_EQ_U(r.memcpy.dst_device, 3);
    CHECK_EQ_U(r.memcpy.correlation, 5);
}

static void test_memset_memory(void) {
    CUpti_ActivityMemset4 s;
    memset(&s, 0, sizeof s);
    s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    s.value = 0xab, s.bytes = 512, s.start = 5, s.end = 6, s.correlationId = 9;
    s.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    tp_cupti_rec r;
    CHECK_EQ_I(tp_cupti_convert(&CONV, (const CUpti_Activity *)&s, &r), 1);
    CHECK_EQ_U(r.h.type, TP_REC_MEMSET);
    CHECK_EQ_U(r.memset.value, 0xab);
    CHECK_EQ_U(r.memset.mem_kind, TP_MEM_DEVICE);
    CHECK_EQ_U(r.memset.correlation, 9);
    CUpti_ActivityMemory4 m;
    memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
    m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
    m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m.correlationId = 11, m.address = 0x7f0000000000ull, m.bytes = 1 << 30, m.timestamp = 77;
    m.deviceId = 1, m.contextId = 2;
    CHECK_EQ_I(tp_cupti_convert(&CONV, (const CUpti_Activity *)&m, &r), 1);
    CHECK_EQ_U(r.h.type, TP_REC_DEVICE_MEM);
    CHECK_EQ_U(r.device_mem.op, TP_MEMOP_ALLOC);
    CHECK_EQ_U(r.device_mem.address, 0x7f0000000000ull);
    CHECK_EQ_U(r.device_mem.bytes, 1u << 30);
    CHECK_EQ_U(r.device_mem.stack_id, 55); /* the launch site of correlation 11 */
    CHECK_EQ_U(tp_record_ts(&r.h), 77);
    m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
    CHECK_EQ_I(tp_cupti_convert(&CONV, (const CUpti_Activity *)&m, &r), 1);
    CHECK_EQ_U(r.device_mem.op, TP_MEMOP_FREE);
}

static void test_api_and_alloc_fail(void) {
    CUpti_ActivityAPI a;
    memset(&a, 0, sizeof a);
    a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
    a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020;
    a.start = 100, a.end = 130, a.threadId = 4321, a.correlationId = 11, a.returnValue = 2;
    tp_cupti_rec r;
    CHECK_EQ_I(tp_cupti_convert(&CONV, (const CUpti_Activity *)&a, &r), 1);
    CHECK_EQ_U(r.h.type, TP_REC_API);
    CHECK_EQ_U(r.h.flags & TP_RF_TYPE_MASK, TP_API_RUNTIME);
    CHECK_EQ_U(r.api.cbid, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020);
    CHECK_EQ_U(r.api.name_sid, 1000000u + CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020);
    CHECK_EQ_I(r.api.result, 2);
    CHECK_EQ_U(r.api.tid, 4321);
    CHECK_EQ_U(r.api.stack_id, 55);
    a.kind = CUPTI_ACTIVITY_KIND_DRIVER;
    a.cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
    a.returnValue = 0;
    CHECK_EQ_I(tp_cupti_convert(&CONV, (const CUpti_Activity *)&a, &r), 1);
    CHECK_EQ_U(r.h.flags & TP_RF_TYPE_MASK, TP_API_DRIVER);
    CHECK_EQ_U(r.api.name_sid, 2000000u + CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
    /* The failed cudaMalloc as the callback API sees it: the requested size is known. */
    cudaMalloc_v3020_params p = {NULL, (size_t)3 << 30};
    tp_rec_alloc_fail f;
    CHECK_EQ_I(tp_cupti_alloc_fail(CUPTI_CB_DOMAIN_RUNTIME_API,
                                   CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, &p, 2, 500, 4321, 1,
                                   55, &f),
               1);
    CHECK_EQ_U(f.h.type, TP_REC_ALLOC_FAIL);
    CHECK_EQ_U(f.requested, (uint64_t)3 << 30);
    CHECK_EQ_U(f.stack_id, 55);
    CHECK_EQ_U(f.tid, 4321);
    CHECK_EQ_I(tp_cupti_alloc_fail(CUPTI_CB_DOMAIN_RUNTIME_API,
                                   CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, &p, 0, 500, 1, 1, 0,
                                   &f),
               0);
    CHECK_EQ_I(tp_cupti_alloc_fail(CUPTI_CB_DOMAIN_RUNTIME_API,
                                   CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, &p, 2, 500, 1, 1, 0,
                                   &f),
               0);
    cuMemAlloc_v2_params d = {NULL, 4096};
    CHECK_EQ_I(tp_cupti_alloc_fail(CUPTI_CB_DOMAIN_DRIVER_API,
                                   CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &d, 2, 1, 1, 1, 0, &f),
               1);
    CHECK_EQ_U(f.requested, 4096);
    CHECK_EQ_I(tp_cupti_wants_stack(CUPTI_CB_DOMAIN_RUNTIME_API,
                                    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000),
               1);
    CHECK_EQ_I(tp_cupti_wants_stack(CUPTI_CB_DOMAIN_RUNTIME_API,
                                    CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020),
               0);
}

/* Host-pinned and virtual-memory allocations (DataLoader's pin_memory, PyTorch's
 * expandable_segments) and the driver's async copies get stacks and allocation failures too. */
static void test_more_allocations(void) {
    tp_rec_alloc_fail f;
    cudaMallocHost_v3020_params h = {NULL, (size_t)1 << 33};
    CHECK_EQ_I(tp_cupti_alloc_fail(CUPTI_CB_DOMAIN_RUNTIME_API,
                                   CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020, &h, 2, 1, 1, 1, 0,
                                   &f),
               1);
    CHECK_EQ_U(f.requested, (uint64_t)1 << 33);
    cuMemCreate_params c = {NULL, (size_t)2 << 20, NULL, 0};
    CHECK_EQ_I(tp_cupti_alloc_fail(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemCreate,
                                   &c, 2, 1, 1, 1, 0, &f),
               1);
    CHECK_EQ_U(f.requested, (uint64_t)2 << 20);
    cuMemAllocAsync_params a = {NULL, 12345, NULL};
    CHECK_EQ_I(tp_cupti_alloc_fail(CUPTI_CB_DOMAIN_DRIVER_API,
                                   CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync, &a, 2, 1, 1, 1, 0, &f),
               1);
    CHECK_EQ_U(f.requested, 12345);
    static const uint32_t driver[] = {
        CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2,
        CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuMemCreate};
    for (size_t i = 0; i < sizeof driver / sizeof driver[0]; i++)
        CHECK_EQ_I(tp_cupti_wants_stack(CUPTI_CB_DOMAIN_DRIVER_API, driver[i]), 1);
    CHECK_EQ_I(tp_cupti_wants_stack(CUPTI_CB_DOMAIN_RUNTIME_API,
                                    CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020),
               1);
}

/* Records CUPTI left without timestamps are flagged, and every data record's correlation id
 * is found where its struct keeps it. */
static void test_incomplete_and_correlation(void) {
    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof k);
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.correlationId = 9;
    k.name = "k";
    tp_cupti_rec r;
    CHECK_EQ_I(tp_cupti_convert(&CONV, (const CUpti_Activity *)&k, &r), 1);
    CHECK_EQ_I(tp_cupti_incomplete(&r), 1); /* start = end = 0 */
    CHECK_EQ_U(tp_cupti_correlation(&r), 9);
    k.start = 10, k.end = 5;
    CHECK_EQ_I(tp_cupti_convert(&CONV, (const CUpti_Activity *)&k, &r), 1);
    CHECK_EQ_I(tp_cupti_incomplete(&r), 1); /* ends before it starts */
    k.end = 20;
    CHECK_EQ_I(tp_cupti_convert(&CONV, (const CUpti_Activity *)&k, &r), 1);
    CHECK_EQ_I(tp_cupti_incomplete(&r), 0);
    CUpti_ActivityExternalCorrelation e;
    memset(&e, 0, sizeof e);
    e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
    e.correlationId = 3;
    CHECK_EQ_I(tp_cupti_convert(&CONV, (const CUpti_Activity *)&e, &r), 1);
    CHECK_EQ_I(tp_cupti_incomplete(&r), 0); /* metadata has no time */
    CHECK_EQ_U(tp_cupti_correlation(&r), 0);
}

static void test_sync_and_others(void) {
    CUpti_ActivitySynchronization2 s;
    memset(&s, 0, sizeof s);
    s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
    s.start = 1, s.end = 900, s.correlationId = 12, s.contextId = 2, s.streamId = 7;
    s.cudaEventId = 4;
    tp_cupti_rec r;
    CHECK_EQ_I(tp_cupti_convert(&CONV, (const CUpti_Activity *)&s, &r), 1);
    CHECK_EQ_U(r.h.type, TP_REC_SYNC);
    CHECK_EQ_U(r.sync.type, TP_SYNC_STREAM);
    CHECK_EQ_U(r.sync.device, 1);
    CHECK_EQ_U(r.sync.stream, 7);
    CHECK_EQ_U(r.sync.correlation, 12);
    CHECK_EQ_U(r.sync.event, 4);
    CUpti_ActivityOverhead3 o;
    memset(&o, 0, sizeof o);
    o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
    o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
    o.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    o.objectId.pt.threadId = 99;
    o.start = 3, o.end = 8;
    CHECK_EQ_I(tp_cupti_convert(&CONV, (const CUpti_Activity *)&o, &r), 1);
    CHECK_EQ_U(r.h.type, TP_REC_OVERHEAD);
    CHECK_EQ_U(r.overhead.kind, TP_OVERHEAD_CUPTI);
    CHECK_EQ_U(r.overhead.tid, 99);
    CHECK_STR(g_strings[r.overhead.name_sid - 100], "cupti:buffer-flush");
    CUpti_ActivityExternalCorrelation e;
    memset(&e, 0, sizeof e);
    e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
    e.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
    e.externalId = 0x123456789ull, e.correlationId = 13;
    CHECK_EQ_I(tp_cupti_convert(&CONV, (const CUpti_Activity *)&e, &r), 1);
    CHECK_EQ_U(r.h.type, TP_REC_EXT_CORRELATION);
    CHECK_EQ_U(r.ext.external_id, 0x123456789ull);
    CHECK_EQ_U(r.ext.correlation, 13);
    CUpti_ActivityDevice5 d;
    memset(&d, 0, sizeof d);
    d.kind = CUPTI_ACTIVITY_KIND_DEVICE;
    d.id = 1, d.name = "NVIDIA H200", d.globalMemorySize = 141ull << 30;
    d.numMultiprocessors = 132, d.computeCapabilityMajor = 9, d.computeCapabilityMinor = 0;
    CHECK_EQ_I(tp_cupti_convert(&CONV, (const CUpti_Activity *)&d, &r), 1);
    CHECK_EQ_U(r.device.compute_capability, 90);
    CHECK_EQ_U(r.device.sm_count, 132);
    CHECK_STR(g_strings[r.device.name_sid - 100], "NVIDIA H200");
    CUpti_Activity unknown = {CUPTI_ACTIVITY_KIND_MARKER};
    CHECK_EQ_I(tp_cupti_convert(&CONV, &unknown, &r), 0);
}

int main(void) {
    TP_RUN(test_kernel);
    TP_RUN(test_copies);
    TP_RUN(test_memset_memory);
    TP_RUN(test_api_and_alloc_fail);
    TP_RUN(test_sync_and_others);
    TP_RUN(test_more_allocations);
    TP_RUN(test_incomplete_and_correlation);
    return tp_test_summary();
}
