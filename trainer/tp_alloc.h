/* tp_alloc: a caching device allocator shared by the CPU and CUDA devices.
 *
 * Modelled on PyTorch's CUDACachingAllocator: memory comes from the device in segments,
 * segments are split into blocks, freed blocks stay cached (merged with free neighbours)
 * and are reused best-fit. Requests are rounded up to 512 bytes. Requests of at most 1 MiB
 * come from the small pool (2 MiB segments), larger ones from the large pool (20 MiB
 * segments for requests under 10 MiB, otherwise the request rounded up to 2 MiB); a block
 * is split only when the remainder is at least 512 bytes (small) or over 1 MiB (large).
 * A limit caps the bytes reserved in segments; when a new segment would pass it (or the
 * device refuses one), fully free cached segments are released and the request retried
 * once. If that fails, the failure is reported (tp_activity_alloc_fail with the
 * requested, reserved, free and largest-free-block bytes, and one message on stderr) and
 * the call returns TP_ERR_NOMEM.
 *
 * Every segment and block is announced through the NVTX memory extension in the given
 * domain: nvtxMemHeapRegister per new segment (SUB_ALLOCATOR heap, virtual address),
 * nvtxMemRegionsRegister per block handed out, nvtxMemRegionsResize when a live block is
 * resized in place, nvtxMemRegionsUnregister when a block is freed, and, when a segment is
 * returned to the device, nvtxMemHeapReset (only if blocks were still live in it) then
 * nvtxMemHeapUnregister. Segments are also reported with tp_activity_device_mem.
 *
 * Not thread-safe: one allocator belongs to one host thread (the training loop), as
 * PyTorch's allocator is used under its own lock. */
#ifndef TP_ALLOC_H
#define TP_ALLOC_H

#include "tp_status.h"

#include <stddef.h>
#include <stdint.h>

typedef struct tp_alloc tp_alloc;

/* Where segments come from. seg_alloc returns TP_OK and a pointer, or an error when the
 * device has no room; seg_free gives a segment back. */
typedef struct {
    tp_status (*seg_alloc)(void *ctx, size_t bytes, void **out);
    void (*seg_free)(void *ctx, void *ptr, size_t bytes);
    void *ctx;
    uint64_t limit;     /* max reserved bytes; 0 = no limit beyond the device's */
    uint32_t device_id; /* for tp_activity_* reports */
    const char *domain; /* NVTX domain name; NULL = "trainprof.trainer" */
    int quiet;          /* 1: do not print the failure message on stderr */
} tp_alloc_opts;

typedef struct {
    uint64_t allocated; /* bytes in live blocks (rounded sizes) */
    uint64_t reserved;  /* bytes in segments */
    uint64_t peak_allocated;
    uint64_t peak_reserved;
    uint64_t free_cached;  /* bytes in free blocks inside segments */
    uint64_t largest_free; /* largest free block */
    uint64_t segments;
    uint64_t live_blocks;
    uint64_t allocs;     /* successful tp_alloc_malloc calls */
    uint64_t cache_hits; /* ... served without a new segment */
    uint64_t failures;
} tp_alloc_stats;

/* The last failure, as reported. */
typedef struct {
    uint64_t requested; /* rounded request */
    uint64_t reserved, free_cached, largest_free, limit;
    char message[448];
} tp_alloc_failure;

/* Opens an allocator; *out is NULL on failure. */
tp_status tp_alloc_open(const tp_alloc_opts *opts, tp_alloc **out);

/* Releases every segment (live blocks included: their regions are reset) and the
 * allocator. NULL is a no-op. */
void tp_alloc_close(tp_alloc *a);

/* Returns a block of at least `bytes` (0 is treated as 1) in *out. TP_ERR_NOMEM when the
 * limit or the device refuses (failure reported as described above), TP_ERR_ARG for a
 * size that cannot be rounded. */
tp_status tp_alloc_malloc(tp_alloc *a, size_t bytes, void **out);

/* Returns a block to the cache. NULL is a no-op; a pointer this allocator did not hand
 * out is ignored (and counted nowhere). */
void tp_alloc_free(tp_alloc *a, void *ptr);

/* Resizes a live block in place: shrinking splits the tail off as a free block, growing
 * absorbs the free block that follows. TP_ERR_FULL when it cannot grow in place,
 * TP_ERR_NOT_FOUND for an unknown pointer. */
tp_status tp_alloc_resize(tp_alloc *a, void *ptr, size_t bytes);

/* Size of the live block at ptr (rounded), or 0 if unknown. */
size_t tp_alloc_block_size(const tp_alloc *a, const void *ptr);

/* Returns fully free segments to the device (like torch.cuda.empty_cache()). */
void tp_alloc_empty_cache(tp_alloc *a);

/* Copies the counters into `out`, with free_cached and largest_free computed now. */
void tp_alloc_get_stats(const tp_alloc *a, tp_alloc_stats *out);

/* The last failure; returns 0 when there has been none. */
int tp_alloc_last_failure(const tp_alloc *a, tp_alloc_failure *out);

/* The rounding rule, exposed for tests: bytes rounded up to 512 (0 -> 512). */
size_t tp_alloc_round(size_t bytes);

/* The segment size a request of `rounded` bytes would get. */
size_t tp_alloc_segment_size(size_t rounded);

#endif
