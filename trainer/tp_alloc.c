/* tp_alloc: caching device allocator (see tp_alloc.h).
 *
 * Blocks of one segment form an address-ordered doubly linked list, so freeing merges
 * with both neighbours in O(1). Free blocks of a pool sit on one unsorted list searched
 * best-fit (the trainer keeps tens of blocks, not thousands); live blocks are found by
 * pointer through a small chained hash. */
#include "tp_alloc.h"

#include "trainprof/activity.h"

#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtMem.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIN_BLOCK 512u
#define SMALL_SIZE (1u << 20)     /* requests up to this use the small pool */
#define SMALL_SEGMENT (2u << 20)  /* segment size of the small pool */
#define LARGE_SEGMENT (20u << 20) /* segment size for 1 MiB < request < 10 MiB */
#define MIN_LARGE_ALLOC (10u << 20)
#define ROUND_LARGE (2u << 20)
#define HASH_BUCKETS 1024

enum { POOL_SMALL, POOL_LARGE, POOL_COUNT };

typedef struct seg seg;
typedef struct blk blk;

struct blk {
    char *ptr;
    size_t size;
    int allocated;
    seg *segment;
    blk *prev, *next; /* address neighbours in the segment */
    blk *link;        /* free list or hash chain */
};

struct seg {
    char *base;
    size_t size;
    int pool;
    nvtxMemHeapHandle_t heap;
    int live; /* live blocks in this segment */
    seg *next;
};

struct tp_alloc {
    tp_alloc_opts opts;
    nvtxDomainHandle_t domain;
    seg *segments;
    blk *free_list[POOL_COUNT];
    blk *live[HASH_BUCKETS];
    tp_alloc_stats st;
    int have_failure;
    int device_refused; /* the last segment_get failed in the device, not at the limit */
    tp_alloc_failure failure;
};

size_t tp_alloc_round(size_t bytes) {
    if (bytes == 0)
        return MIN_BLOCK;
    if (bytes > SIZE_MAX - MIN_BLOCK)
        return 0;
    return (bytes + MIN_BLOCK - 1) / MIN_BLOCK * MIN_BLOCK;
}

size_t tp_alloc_segment_size(size_t rounded) {
    if (rounded <= SMALL_SIZE)
        return SMALL_SEGMENT;
    if (rounded < MIN_LARGE_ALLOC)
        return LARGE_SEGMENT;
    return (rounded + ROUND_LARGE - 1) / ROUND_LARGE * ROUND_LARGE;
}

static size_t hash_ptr(const void *p) {
    return ((uintptr_t)p >> 9) % HASH_BUCKETS;
}

/* ---- NVTX memory extension calls ---- */

static void nvtx_heap_register(tp_alloc *a, seg *s) {
    nvtxMemVirtualRangeDesc_t range = {.size = s->size, .ptr = s->base};
    nvtxMemHeapDesc_t d;
    memset(&d, 0, sizeof d);
    d.extCompatID = NVTX_EXT_COMPATID_MEM;
    d.structSize = sizeof d;
    d.usage = NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR;
    d.type = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
    d.typeSpecificDescSize = sizeof range;
    d.typeSpecificDesc = &range;
    d.messageType = NVTX_MESSAGE_TYPE_ASCII;
    d.message.ascii = s->pool == POOL_SMALL ? "small pool segment" : "large pool segment";
    s->heap = nvtxMemHeapRegister(a->domain, &d);
}

static void nvtx_region_register(tp_alloc *a, const blk *b) {
    nvtxMemVirtualRangeDesc_t range = {.size = b->size, .ptr = b->ptr};
    nvtxMemRegionsRegisterBatch_t d;
    memset(&d, 0, sizeof d);
    d.extCompatID = NVTX_EXT_COMPATID_MEM;
    d.structSize = sizeof d;
    d.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
    d.heap = b->segment->heap;
    d.regionCount = 1;
    d.regionDescElementSize = sizeof range;
    d.regionDescElements = &range;
    nvtxMemRegionsRegister(a->domain, &d);
}

static void nvtx_region_resize(tp_alloc *a, const blk *b) {
    nvtxMemVirtualRangeDesc_t range = {.size = b->size, .ptr = b->ptr};
    nvtxMemRegionsResizeBatch_t d;
    memset(&d, 0, sizeof d);
    d.extCompatID = NVTX_EXT_COMPATID_MEM;
    d.structSize = sizeof d;
    d.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
    d.regionDescCount = 1;
    d.regionDescElementSize = sizeof range;
    d.regionDescElements = &range;
    nvtxMemRegionsResize(a->domain, &d);
}

static void nvtx_region_unregister(tp_alloc *a, const blk *b) {
    nvtxMemRegionRef_t ref = {.pointer = b->ptr};
    nvtxMemRegionsUnregisterBatch_t d;
    memset(&d, 0, sizeof d);
    d.extCompatID = NVTX_EXT_COMPATID_MEM;
    d.structSize = sizeof d;
    d.refType = NVTX_MEM_REGION_REF_TYPE_POINTER;
    d.refCount = 1;
    d.refElementSize = sizeof ref;
    d.refElements = &ref;
    nvtxMemRegionsUnregister(a->domain, &d);
}

/* ---- lists ---- */

static void free_list_remove(tp_alloc *a, blk *b) {
    blk **pp = &a->free_list[b->segment->pool];
    while (*pp && *pp != b)
        pp = &(*pp)->link;
    if (*pp)
        *pp = b->link;
    b->link = NULL;
}

static void free_list_push(tp_alloc *a, blk *b) {
    b->link = a->free_list[b->segment->pool];
    a->free_list[b->segment->pool] = b;
}

static void live_insert(tp_alloc *a, blk *b) {
    size_t h = hash_ptr(b->ptr);
    b->link = a->live[h];
    a->live[h] = b;
}

/* Finds the live block at ptr; with unlink, also removes it from the hash. */
static blk *live_find(tp_alloc *a, const void *ptr, int unlink) {
    blk **pp = &a->live[hash_ptr(ptr)];
    while (*pp && (*pp)->ptr != ptr)
        pp = &(*pp)->link;
    blk *b = *pp;
    if (b && unlink) {
        *pp = b->link;
        b->link = NULL;
    }
    return b;
}

/* ---- segments ---- */

static int segment_is_free(const tp_alloc *a, const seg *s, blk **only) {
    for (int p = 0; p < POOL_COUNT; p++)
        for (blk *b = a->free_list[p]; b; b = b->link)
            if (b->segment == s && b->size == s->size) {
                *only = b;
                return 1;
            }
    return 0;
}

static void segment_release(tp_alloc *a, seg *s, int live_blocks) {
    if (live_blocks)
        nvtxMemHeapReset(a->domain, s->heap);
    nvtxMemHeapUnregister(a->domain, s->heap);
    tp_activity_device_mem(0, (uint64_t)(uintptr_t)s->base, s->size, a->opts.device_id);
    a->opts.seg_free(a->opts.ctx, s->base, s->size);
    a->st.reserved -= s->size;
    a->st.segments--;
}

/* Releases segments whose single block is free; returns the bytes released. */
static uint64_t release_free_segments(tp_alloc *a) {
    uint64_t released = 0;
    seg **pp = &a->segments;
    while (*pp) {
        seg *s = *pp;
        blk *b = NULL;
        if (!segment_is_free(a, s, &b)) {
            pp = &s->next;
            continue;
        }
        free_list_remove(a, b);
        free(b);
        *pp = s->next;
        released += s->size;
        segment_release(a, s, 0);
        free(s);
    }
    return released;
}

static tp_status segment_new(tp_alloc *a, int pool, size_t size, blk **out) {
    seg *s = calloc(1, sizeof *s);
    blk *b = calloc(1, sizeof *b);
    void *mem = NULL;
    if (!s || !b || a->opts.seg_alloc(a->opts.ctx, size, &mem) != TP_OK) {
        free(s);
        free(b);
        return TP_ERR_NOMEM;
    }
    *s = (seg){.base = mem, .size = size, .pool = pool, .next = a->segments};
    a->segments = s;
    *b = (blk){.ptr = mem, .size = size, .segment = s};
    a->st.reserved += size;
    a->st.segments++;
    if (a->st.reserved > a->st.peak_reserved)
        a->st.peak_reserved = a->st.reserved;
    tp_activity_device_mem(1, (uint64_t)(uintptr_t)mem, size, a->opts.device_id);
    nvtx_heap_register(a, s);
    *out = b;
    return TP_OK;
}

static int fits_limit(const tp_alloc *a, size_t size) {
    return !a->opts.limit || a->st.reserved + size <= a->opts.limit;
}

/* A new segment within the limit; on refusal, empties the cache and tries once more. */
static tp_status segment_get(tp_alloc *a, int pool, size_t size, blk **out) {
    for (int attempt = 0; attempt < 2; attempt++) {
        if (attempt == 1 && !release_free_segments(a))
            break;
        a->device_refused = fits_limit(a, size);
        if (a->device_refused && segment_new(a, pool, size, out) == TP_OK)
            return TP_OK;
    }
    return TP_ERR_NOMEM;
}

/* ---- reporting ---- */

static void free_totals(const tp_alloc *a, uint64_t *total, uint64_t *largest) {
    *total = *largest = 0;
    for (int p = 0; p < POOL_COUNT; p++)
        for (const blk *b = a->free_list[p]; b; b = b->link) {
            *total += b->size;
            if (b->size > *largest)
                *largest = b->size;
        }
}

static double mib(uint64_t b) {
    return (double)b / (1024.0 * 1024.0);
}

/* Appends to the failure message at offset *n, unless it is already full. */
static void msg_append(tp_alloc_failure *f, int *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void msg_append(tp_alloc_failure *f, int *n, const char *fmt, ...) {
    if (*n < 0 || (size_t)*n >= sizeof f->message)
        return;
    va_list ap;
    va_start(ap, fmt);
    *n += vsnprintf(f->message + *n, sizeof f->message - (size_t)*n, fmt, ap);
    va_end(ap);
}

static void report_failure(tp_alloc *a, size_t rounded) {
    tp_alloc_failure *f = &a->failure;
    f->requested = rounded;
    f->reserved = a->st.reserved;
    f->limit = a->opts.limit;
    free_totals(a, &f->free_cached, &f->largest_free);
    a->st.failures++;
    a->have_failure = 1;
    int n = 0;
    msg_append(f, &n,
               "device out of memory: tried to allocate %.2f MiB (%" PRIu64
               " bytes); %.2f MiB reserved",
               mib(rounded), (uint64_t)rounded, mib(f->reserved));
    if (f->limit)
        msg_append(f, &n, " (limit %.2f MiB)", mib(f->limit));
    msg_append(f, &n, ", %.2f MiB free in cached blocks, largest free block %.2f MiB",
               mib(f->free_cached), mib(f->largest_free));
    if (a->device_refused)
        msg_append(f, &n, "; the device has no room for a new %.2f MiB segment",
                   mib(tp_alloc_segment_size(rounded)));
    if (f->free_cached >= rounded)
        msg_append(f, &n,
                   "; fragmentation: free memory exceeds the request but no free block fits");
    tp_activity_alloc_fail(rounded, f->reserved, f->free_cached, f->largest_free,
                           a->opts.device_id);
    if (!a->opts.quiet)
        fprintf(stderr, "trainprof-trainer: %s\n", f->message);
}

/* ---- public API ---- */

tp_status tp_alloc_open(const tp_alloc_opts *opts, tp_alloc **out) {
    *out = NULL;
    if (!opts || !opts->seg_alloc || !opts->seg_free)
        return TP_ERR_ARG;
    tp_alloc *a = calloc(1, sizeof *a);
    if (!a)
        return TP_ERR_NOMEM;
    a->opts = *opts;
    nvtxInitialize(NULL); /* see tp_device_open: initialize before any other thread */
    a->domain = nvtxDomainCreateA(opts->domain ? opts->domain : "trainprof.trainer");
    *out = a;
    return TP_OK;
}

/* Frees the blocks of one free list or hash chain (both linked through `link`). */
static void free_chain(blk *b) {
    for (blk *nx; b; b = nx) {
        nx = b->link;
        free(b);
    }
}

void tp_alloc_close(tp_alloc *a) {
    if (!a)
        return;
    for (int h = 0; h < HASH_BUCKETS; h++)
        free_chain(a->live[h]);
    for (int p = 0; p < POOL_COUNT; p++)
        free_chain(a->free_list[p]);
    for (seg *s = a->segments, *nx; s; s = nx) {
        nx = s->next;
        segment_release(a, s, s->live > 0);
        free(s);
    }
    nvtxDomainDestroy(a->domain);
    free(a);
}

/* Best fit within one pool. */
static blk *best_fit(tp_alloc *a, int pool, size_t size) {
    blk *best = NULL;
    for (blk *b = a->free_list[pool]; b; b = b->link)
        if (b->size >= size && (!best || b->size < best->size))
            best = b;
    return best;
}

/* Absorbs b's free next neighbour into b. */
static void merge_next(tp_alloc *a, blk *b) {
    blk *n = b->next;
    free_list_remove(a, n);
    b->size += n->size;
    b->next = n->next;
    if (n->next)
        n->next->prev = b;
    free(n);
}

/* Splits the tail of b beyond `size` into a new free block (merged with a free next). */
static void split_tail(tp_alloc *a, blk *b, size_t size) {
    blk *t = calloc(1, sizeof *t);
    if (!t)
        return; /* keep the block whole: wasteful but correct */
    *t = (blk){.ptr = b->ptr + size, .size = b->size - size, .segment = b->segment};
    t->prev = b;
    t->next = b->next;
    if (b->next)
        b->next->prev = t;
    b->next = t;
    b->size = size;
    if (t->next && !t->next->allocated)
        merge_next(a, t);
    free_list_push(a, t);
}

static int should_split(const blk *b, size_t size) {
    size_t rest = b->size - size;
    return b->segment->pool == POOL_SMALL ? rest >= MIN_BLOCK : rest > SMALL_SIZE;
}

tp_status tp_alloc_malloc(tp_alloc *a, size_t bytes, void **out) {
    *out = NULL;
    size_t size = tp_alloc_round(bytes);
    if (!size)
        return TP_ERR_ARG;
    int pool = size <= SMALL_SIZE ? POOL_SMALL : POOL_LARGE;
    blk *b = best_fit(a, pool, size);
    if (b) {
        free_list_remove(a, b);
        a->st.cache_hits++;
    } else if (segment_get(a, pool, tp_alloc_segment_size(size), &b) != TP_OK) {
        report_failure(a, size);
        return TP_ERR_NOMEM;
    }
    if (should_split(b, size))
        split_tail(a, b, size);
    b->allocated = 1;
    b->segment->live++;
    live_insert(a, b);
    a->st.allocated += b->size;
    a->st.live_blocks++;
    a->st.allocs++;
    if (a->st.allocated > a->st.peak_allocated)
        a->st.peak_allocated = a->st.allocated;
    nvtx_region_register(a, b);
    *out = b->ptr;
    return TP_OK;
}

void tp_alloc_free(tp_alloc *a, void *ptr) {
    if (!a || !ptr)
        return;
    blk *b = live_find(a, ptr, 1);
    if (!b)
        return;
    nvtx_region_unregister(a, b);
    a->st.allocated -= b->size;
    a->st.live_blocks--;
    b->allocated = 0;
    b->segment->live--;
    if (b->next && !b->next->allocated)
        merge_next(a, b);
    if (b->prev && !b->prev->allocated) {
        blk *p = b->prev;
        free_list_remove(a, p);
        free_list_push(a, b); /* so merge_next can unlink it */
        merge_next(a, p);
        b = p;
    }
    free_list_push(a, b);
}

tp_status tp_alloc_resize(tp_alloc *a, void *ptr, size_t bytes) {
    blk *b = live_find(a, ptr, 0);
    if (!b)
        return TP_ERR_NOT_FOUND;
    size_t size = tp_alloc_round(bytes);
    if (!size)
        return TP_ERR_ARG;
    if (size == b->size)
        return TP_OK;
    size_t old = b->size;
    if (size < b->size) {
        split_tail(a, b, size);
    } else {
        blk *n = b->next;
        if (!n || n->allocated || b->size + n->size < size)
            return TP_ERR_FULL;
        merge_next(a, b);
        if (b->size - size >= MIN_BLOCK)
            split_tail(a, b, size);
    }
    a->st.allocated = a->st.allocated - old + b->size;
    if (a->st.allocated > a->st.peak_allocated)
        a->st.peak_allocated = a->st.allocated;
    nvtx_region_resize(a, b);
    return TP_OK;
}

size_t tp_alloc_block_size(const tp_alloc *a, const void *ptr) {
    const blk *b = a->live[hash_ptr(ptr)];
    while (b && b->ptr != ptr)
        b = b->link;
    return b ? b->size : 0;
}

void tp_alloc_empty_cache(tp_alloc *a) {
    release_free_segments(a);
}

void tp_alloc_get_stats(const tp_alloc *a, tp_alloc_stats *out) {
    *out = a->st;
    free_totals(a, &out->free_cached, &out->largest_free);
}

int tp_alloc_last_failure(const tp_alloc *a, tp_alloc_failure *out) {
    if (a->have_failure && out)
        *out = a->failure;
    return a->have_failure;
}
