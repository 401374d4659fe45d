/* tp_cupti_convert: CUPTI activity -> trace records (see tp_cupti_convert.h). */
#include "tp_cupti_convert.h"

#include <string.h>

static uint32_t conv_intern(const tp_cupti_conv *c, const char *s) {
    return s && c->intern ? c->intern(c->ud, s) : 0;
}

static uint32_t conv_stack(const tp_cupti_conv *c, uint32_t corr) {
    return c->stack_of ? c->stack_of(c->ud, corr) : 0;
}

/* Copies the timing and placement that CUPTI device activities share under the same field
 * names; a macro because each CUPTI struct has them at other offsets. */
#define COPY_SPAN(r, a)                                                                            \
    ((r)->ts = (a)->start, (r)->end = (a)->end, (r)->correlation = (a)->correlationId,             \
     (r)->device = (a)->deviceId, (r)->context = (a)->contextId, (r)->stream = (a)->streamId)

static void kernel(const tp_cupti_conv *c, const CUpti_ActivityKernel10 *k, tp_rec_kernel *r) {
    TP_REC_INIT(r, TP_REC_KERNEL);
    COPY_SPAN(r, k);
    r->name_sid = conv_intern(c, k->name);
    r->grid_x = (uint32_t)k->gridX, r->grid_y = (uint32_t)k->gridY, r->grid_z = (uint32_t)k->gridZ;
    r->block_x = (uint16_t)k->blockX, r->block_y = (uint16_t)k->blockY;
    r->block_z = (uint16_t)k->blockZ;
    r->registers_per_thread = k->registersPerThread;
    r->static_shared_bytes = (uint32_t)k->staticSharedMemory;
    r->dynamic_shared_bytes = (uint32_t)k->dynamicSharedMemory;
    r->graph_id = k->graphId;
    r->graph_node_id = k->graphNodeId;
}

/* The part of a MEMCPY record that CUpti_ActivityMemcpy6 and CUpti_ActivityMemcpyPtoP4 share. */
#define COPY_MEMCPY(r, m)                                                                          \
    do {                                                                                           \
        TP_REC_INIT(r, TP_REC_MEMCPY);                                                             \
        if ((m)->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC)                                         \
            (r)->h.flags |= TP_MEMCPY_ASYNC;                                                       \
        COPY_SPAN(r, m);                                                                           \
        (r)->bytes = (m)->bytes;                                                                   \
        (r)->copy_kind = (m)->copyKind;                                                            \
        (r)->src_kind = (m)->srcKind;                                                              \
        (r)->dst_kind = (m)->dstKind;                                                              \
        (r)->graph_id = (m)->graphId;                                                              \
    } while (0)

static void memcpy6(const CUpti_ActivityMemcpy6 *m, tp_rec_memcpy *r) {
    COPY_MEMCPY(r, m);
    r->runtime_correlation = m->runtimeCorrelationId;
    r->src_device = r->dst_device = m->deviceId;
}

static void memcpy_p2p(const CUpti_ActivityMemcpyPtoP4 *m, tp_rec_memcpy *r) {
    COPY_MEMCPY(r, m);
    r->src_device = m->srcDeviceId;
    r->dst_device = m->dstDeviceId;
}

static void memset4(const CUpti_ActivityMemset4 *m, tp_rec_memset *r) {
    TP_REC_INIT(r, TP_REC_MEMSET);
    COPY_SPAN(r, m);
    r->bytes = m->bytes;
    r->value = m->value;
    r->mem_kind = (uint8_t)m->memoryKind;
}

static void memory4(const tp_cupti_conv *c, const CUpti_ActivityMemory4 *m, tp_rec_device_mem *r) {
    TP_REC_INIT(r, TP_REC_DEVICE_MEM);
    r->ts = m->timestamp;
    r->address = m->address;
    r->bytes = m->bytes;
    r->correlation = m->correlationId;
    r->device = m->deviceId;
    r->context = m->contextId;
    r->stream = m->streamId;
    r->op = m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE ? TP_MEMOP_FREE
                                                                                   : TP_MEMOP_ALLOC;
    r->mem_kind = (uint8_t)m->memoryKind;
    r->stack_id = conv_stack(c, m->correlationId);
}

static void api(const tp_cupti_conv *c, const CUpti_ActivityAPI *a, tp_rec_api *r) {
    int driver = a->kind == CUPTI_ACTIVITY_KIND_DRIVER;
    TP_REC_INIT(r, TP_REC_API);
    r->h.flags |= driver ? TP_API_DRIVER : TP_API_RUNTIME;
    r->ts = a->start;
    r->end = a->end;
    r->tid = a->threadId;
    r->correlation = a->correlationId;
    r->cbid = a->cbid;
    r->name_sid = c->api_name ? c->api_name(c->ud, driver, a->cbid) : 0;
    r->stack_id = conv_stack(c, a->correlationId);
    r->result = (int32_t)a->returnValue;
}

static void sync2(const tp_cupti_conv *c, const CUpti_ActivitySynchronization2 *s, tp_rec_sync *r) {
    TP_REC_INIT(r, TP_REC_SYNC);
    r->ts = s->start;
    r->end = s->end;
    r->correlation = s->correlationId;
    r->type = (uint32_t)s->type;
    r->context = s->contextId;
    r->device = c->device_of_context ? c->device_of_context(c->ud, s->contextId) : 0;
    r->stream = s->streamId;
    r->event = s->cudaEventId;
}

static const char *overhead_name(CUpti_ActivityOverheadKind k) {
    switch (k) {
    case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER:
        return "cupti:driver-compiler";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH:
        return "cupti:buffer-flush";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION:
        return "cupti:instrumentation";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE:
        return "cupti:resource";
    default:
        return "cupti:other";
    }
}

static void overhead3(const tp_cupti_conv *c, const CUpti_ActivityOverhead3 *o,
                      tp_rec_overhead *r) {
    TP_REC_INIT(r, TP_REC_OVERHEAD);
    r->ts = o->start;
    r->end = o->end;
    r->tid = o->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? o->objectId.pt.threadId : 0;
    r->kind = TP_OVERHEAD_CUPTI;
    r->name_sid = conv_intern(c, overhead_name(o->overheadKind));
}

int tp_cupti_convert(const tp_cupti_conv *c, const CUpti_Activity *a, tp_cupti_rec *out) {
    memset(out, 0, sizeof *out);
    switch (a->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        kernel(c, (const CUpti_ActivityKernel10 *)a, &out->kernel);
        return 1;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
        memcpy6((const CUpti_ActivityMemcpy6 *)a, &out->memcpy);
        return 1;
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
        memcpy_p2p((const CUpti_ActivityMemcpyPtoP4 *)a, &out->memcpy);
        return 1;
    case CUPTI_ACTIVITY_KIND_MEMSET:
        memset4((const CUpti_ActivityMemset4 *)a, &out->memset);
        return 1;
    case CUPTI_ACTIVITY_KIND_MEMORY2:
        memory4(c, (const CUpti_ActivityMemory4 *)a, &out->device_mem);
        return 1;
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
        api(c, (const CUpti_ActivityAPI *)a, &out->api);
        return 1;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
        sync2(c, (const CUpti_ActivitySynchronization2 *)a, &out->sync);
        return 1;
    case CUPTI_ACTIVITY_KIND_OVERHEAD:
        overhead3(c, (const CUpti_ActivityOverhead3 *)a, &out->overhead);
        return 1;
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
        const CUpti_ActivityExternalCorrelation *e = (const void *)a;
        TP_REC_INIT(&out->ext, TP_REC_EXT_CORRELATION);
        out->ext.correlation = e->correlationId;
        out->ext.external_kind = (uint32_t)e->externalKind;
        out->ext.external_id = e->externalId;
        return 1;
    }
    case CUPTI_ACTIVITY_KIND_DEVICE: {
        const CUpti_ActivityDevice5 *d = (const void *)a;
        TP_REC_INIT(&out->device, TP_REC_DEVICE);
        out->device.id = d->id;
        out->device.name_sid = conv_intern(c, d->name);
        out->device.global_memory_bytes = d->globalMemorySize;
        out->device.sm_count = d->numMultiprocessors;
        out->device.compute_capability = d->computeCapabilityMajor * 10 + d->computeCapabilityMinor;
        out->device.kind = TP_DEVICE_GPU;
        return 1;
    }
    default:
        return 0;
    }
}

/* Requested bytes of an allocation call, or 0 when `cbid` is not one: device, managed, pinned
 * host (cudaMallocHost: the pinned staging buffers DataLoader's pin_memory asks for) and
 * virtual-memory physical allocations (cuMemCreate: PyTorch's expandable_segments). */
static uint64_t runtime_alloc_size(uint32_t cbid, const void *p) {
    switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020:
        return ((const cudaMalloc_v3020_params *)p)->size;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020:
        return ((const cudaMallocAsync_v11020_params *)p)->size;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000:
        return ((const cudaMallocManaged_v6000_params *)p)->size;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020:
        return ((const cudaMallocHost_v3020_params *)p)->size;
    case CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020:
        return ((const cudaHostAlloc_v3020_params *)p)->size;
    default:
        return 0;
    }
}

static uint64_t driver_alloc_size(uint32_t cbid, const void *p) {
    switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2:
        return ((const cuMemAlloc_v2_params *)p)->bytesize;
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz:
        return ((const cuMemAllocAsync_params *)p)->bytesize;
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged:
        return ((const cuMemAllocManaged_params *)p)->bytesize;
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2:
        return ((const cuMemAllocHost_v2_params *)p)->bytesize;
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc:
        return ((const cuMemHostAlloc_params *)p)->bytesize;
    case CUPTI_DRIVER_TRACE_CBID_cuMemCreate:
        return ((const cuMemCreate_params *)p)->size;
    default:
        return 0;
    }
}

static uint64_t alloc_size(CUpti_CallbackDomain domain, uint32_t cbid, const void *params) {
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
        return runtime_alloc_size(cbid, params);
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API)
        return driver_alloc_size(cbid, params);
    return 0;
}

int tp_cupti_alloc_fail(CUpti_CallbackDomain domain, uint32_t cbid, const void *params,
                        int32_t result, uint64_t ts, uint32_t tid, uint32_t device,
                        uint32_t stack_id, tp_rec_alloc_fail *out) {
    /* cudaErrorMemoryAllocation and CUDA_ERROR_OUT_OF_MEMORY are both 2. */
    if (result != 2 || !params)
        return 0;
    uint64_t size = alloc_size(domain, cbid, params);
    if (!size)
        return 0;
    TP_REC_CLEAR(out, TP_REC_ALLOC_FAIL);
    out->ts = ts;
    out->requested = size;
    out->tid = tid;
    out->device = device;
    out->stack_id = stack_id;
    return 1;
}

static int runtime_wants_stack(uint32_t cbid) {
    switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060:
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000:
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_v13000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_ptsz_v7000:
        return 1;
    default:
        return 0;
    }
}

static int driver_wants_stack(uint32_t cbid) {
    switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc:
    case CUPTI_DRIVER_TRACE_CBID_cuMemCreate:
    case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize:
    case CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize:
        return 1;
    default:
        return 0;
    }
}

int tp_cupti_wants_stack(CUpti_CallbackDomain domain, uint32_t cbid) {
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
        return runtime_wants_stack(cbid);
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API)
        return driver_wants_stack(cbid);
    return 0;
}

int tp_cupti_incomplete(const tp_cupti_rec *r) {
    if (!(r->h.flags & TP_RF_TIMED))
        return 0;
    uint64_t ts = tp_record_ts(&r->h);
    return ts == 0 || tp_record_end(&r->h) < ts;
}

uint32_t tp_cupti_correlation(const tp_cupti_rec *r) {
    switch (r->h.type) {
    case TP_REC_KERNEL:
        return r->kernel.correlation;
    case TP_REC_MEMCPY:
        return r->memcpy.correlation;
    case TP_REC_MEMSET:
        return r->memset.correlation;
    case TP_REC_DEVICE_MEM:
        return r->device_mem.correlation;
    case TP_REC_API:
        return r->api.correlation;
    case TP_REC_SYNC:
        return r->sync.correlation;
    default:
        return 0;
    }
}
