/* tp_cupti_convert: CUPTI activity records (CUDA 13) -> trace records.
 *
 * Pure conversion: no CUPTI calls, no global state, so it is tested without a GPU on buffers
 * filled with real CUDA 13 structs. What conversion cannot know by itself (interned string
 * ids, the launch-site stack of a correlation id, the device of a context) it asks the
 * caller through tp_cupti_conv. Timestamps are copied: the collector registers its trace
 * clock with cuptiActivityRegisterTimestampCallback, so CUPTI's are already trace time.
 * Enumerations (copy and memory kinds, sync types, memory operations) keep CUPTI's values. */
#ifndef TP_CUPTI_CONVERT_H
#define TP_CUPTI_CONVERT_H

#include <stdint.h>

#include <cupti.h>

#include "tp_record.h"

typedef struct {
    void *ud;
    uint32_t (*intern)(void *ud, const char *s);               /* string id; s is never NULL */
    uint32_t (*api_name)(void *ud, int driver, uint32_t cbid); /* string id of an API */
    uint32_t (*stack_of)(void *ud, uint32_t correlation);      /* 0 when none */
    uint32_t (*device_of_context)(void *ud, uint32_t context); /* for SYNC records */
} tp_cupti_conv;

/* Room for any record conversion produces. */
typedef union {
    tp_rec_hdr h;
    tp_rec_kernel kernel;
    tp_rec_memcpy memcpy;
    tp_rec_memset memset;
    tp_rec_device_mem device_mem;
    tp_rec_api api;
    tp_rec_sync sync;
    tp_rec_overhead overhead;
    tp_rec_ext_correlation ext;
    tp_rec_device device;
} tp_cupti_rec;

/* Converts `a` into `out`. Returns 1 when converted, 0 for kinds the trace does not keep.
 * EXT_CORRELATION and DEVICE results are metadata records (tp_writer_write_meta). */
int tp_cupti_convert(const tp_cupti_conv *c, const CUpti_Activity *a, tp_cupti_rec *out);

/* 1 when `r` (converted) lacks its timing: CUPTI leaves timestamps 0 in records it could not
 * complete (a forced flush, no device memory for timestamps); such a record would drag the
 * trace's start to 0, so the caller drops and counts it. */
int tp_cupti_incomplete(const tp_cupti_rec *r);

/* The correlation id of converted record `r` (the API call that made it), 0 when none. */
uint32_t tp_cupti_correlation(const tp_cupti_rec *r);

/* From an API EXIT callback: when `cbid` of `domain` is an allocation (cudaMalloc,
 * cudaMallocAsync, cudaMallocManaged, cudaMallocHost, cudaHostAlloc, cuMemAlloc,
 * cuMemAllocAsync, cuMemAllocManaged, cuMemAllocHost, cuMemHostAlloc, cuMemCreate) that
 * failed for lack of memory, fills
 * `out` with the requested size from `params` and returns 1; else returns 0. */
int tp_cupti_alloc_fail(CUpti_CallbackDomain domain, uint32_t cbid, const void *params,
                        int32_t result, uint64_t ts, uint32_t tid, uint32_t device,
                        uint32_t stack_id, tp_rec_alloc_fail *out);

/* 1 for runtime API callbacks whose launch site is worth a stack (launches, copies, memsets,
 * allocations, synchronisation), else 0. Same for driver calls made directly (Triton). */
int tp_cupti_wants_stack(CUpti_CallbackDomain domain, uint32_t cbid);

#endif
