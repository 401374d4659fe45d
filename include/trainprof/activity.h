/* trainprof/activity.h: report device activity from runtimes that are not CUDA.
 *
 * A runtime with its own device (trainprof-trainer's CPU device, an FPGA, a simulator) calls
 * these to put kernels, copies, memsets, syncs and launches into a trainprof trace, as the
 * CUPTI path does for CUDA. Header-only, no link dependency: at the first call it looks for
 * the collector that `trainprof record` loaded (path in $TRAINPROF_COLLECTOR) and takes its
 * function table. Without a collector every call costs one predictable branch on a
 * process-local table pointer (and names are never interned).
 *
 * Timestamps are the collector's trace clock (tp_activity_now()); call it on the device's
 * own threads at kernel start and end. Names must be stable pointers (literals): the
 * collector interns them by address. Include in exactly one .c file with
 * TP_ACTIVITY_IMPLEMENT defined; others see only declarations. */
#ifndef TRAINPROF_ACTIVITY_H
#define TRAINPROF_ACTIVITY_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TP_ACTIVITY_TABLE_VERSION 1

/* Copy and memory kinds take the values of tp_copy_kind / tp_mem_kind (CUPTI's values):
 * copy 1 HtoD, 2 DtoH, 8 DtoD, 9 HtoH; memory 1 pageable, 2 pinned, 3 device. Sync types:
 * 1 event, 2 stream-wait-event, 3 stream, 4 device/context. */
typedef struct {
    uint32_t struct_size;
    uint32_t version;
    uint64_t (*now)(void);
    uint32_t (*next_correlation)(void);
    uint32_t (*device)(const char *name, uint64_t memory_bytes);
    void (*api)(const char *name, uint64_t start, uint64_t end, uint32_t correlation,
                int32_t result);
    void (*kernel)(const char *name, uint32_t device, uint32_t stream, uint64_t start, uint64_t end,
                   uint32_t correlation, const uint32_t grid[3], const uint32_t block[3]);
    void (*memcpy)(uint32_t copy_kind, uint32_t src_kind, uint32_t dst_kind, uint64_t bytes,
                   uint32_t device, uint32_t stream, uint64_t start, uint64_t end,
                   uint32_t correlation, int async);
    void (*memset)(uint32_t mem_kind, uint64_t bytes, uint32_t value, uint32_t device,
                   uint32_t stream, uint64_t start, uint64_t end, uint32_t correlation);
    void (*sync)(uint32_t type, uint32_t device, uint32_t stream, uint64_t start, uint64_t end,
                 uint32_t correlation);
    void (*device_mem)(int is_alloc, uint64_t address, uint64_t bytes, uint32_t device);
    void (*alloc_fail)(uint64_t requested, uint64_t reserved_bytes, uint64_t free_bytes,
                       uint64_t largest_free_block, uint32_t device);
} tp_activity_table;

/* Exported by the collector library. */
typedef const tp_activity_table *(*tp_activity_get_table_fn)(uint32_t version);
#define TP_ACTIVITY_GET_TABLE_SYMBOL "tp_activity_get_table"

/* The table, or NULL without a collector. Resolved once per process. */
const tp_activity_table *tp_activity_table_get(void);
extern const tp_activity_table *tp_activity__table;
extern int tp_activity__resolved;

static inline const tp_activity_table *tp_activity__t(void) {
    if (__builtin_expect(!tp_activity__resolved, 0))
        return tp_activity_table_get();
    return tp_activity__table;
}

/* 1 when a collector records these calls. */
static inline int tp_activity_enabled(void) {
    return tp_activity__t() != 0;
}

/* Trace-clock nanoseconds; 0 without a collector (callers need not time anything then). */
static inline uint64_t tp_activity_now(void) {
    const tp_activity_table *t = tp_activity__t();
    return t ? t->now() : 0;
}

static inline uint32_t tp_activity_next_correlation(void) {
    const tp_activity_table *t = tp_activity__t();
    return t ? t->next_correlation() : 0;
}

/* Declares a device; returns its id (0 without a collector). */
static inline uint32_t tp_activity_device(const char *name, uint64_t memory_bytes) {
    const tp_activity_table *t = tp_activity__t();
    return t ? t->device(name, memory_bytes) : 0;
}

/* A CPU-side call that queued work (launch, copy, sync), timed on the calling thread. */
static inline void tp_activity_api(const char *name, uint64_t start, uint64_t end,
                                   uint32_t correlation, int32_t result) {
    const tp_activity_table *t = tp_activity__t();
    if (t)
        t->api(name, start, end, correlation, result);
}

static inline void tp_activity_kernel(const char *name, uint32_t device, uint32_t stream,
                                      uint64_t start, uint64_t end, uint32_t correlation,
                                      const uint32_t grid[3], const uint32_t block[3]) {
    const tp_activity_table *t = tp_activity__t();
    if (t)
        t->kernel(name, device, stream, start, end, correlation, grid, block);
}

static inline void tp_activity_memcpy(uint32_t copy_kind, uint32_t src_kind, uint32_t dst_kind,
                                      uint64_t bytes, uint32_t device, uint32_t stream,
                                      uint64_t start, uint64_t end, uint32_t correlation,
                                      int async) {
    const tp_activity_table *t = tp_activity__t();
    if (t)
        t->memcpy(copy_kind, src_kind, dst_kind, bytes, device, stream, start, end, correlation,
                  async);
}

static inline void tp_activity_memset(uint32_t mem_kind, uint64_t bytes, uint32_t value,
                                      uint32_t device, uint32_t stream, uint64_t start,
                                      uint64_t end, uint32_t correlation) {
    const tp_activity_table *t = tp_activity__t();
    if (t)
        t->memset(mem_kind, bytes, value, device, stream, start, end, correlation);
}

static inline void tp_activity_sync(uint32_t type, uint32_t device, uint32_t stream, uint64_t start,
                                    uint64_t end, uint32_t correlation) {
    const tp_activity_table *t = tp_activity__t();
    if (t)
        t->sync(type, device, stream, start, end, correlation);
}

static inline void tp_activity_device_mem(int is_alloc, uint64_t address, uint64_t bytes,
                                          uint32_t device) {
    const tp_activity_table *t = tp_activity__t();
    if (t)
        t->device_mem(is_alloc, address, bytes, device);
}

static inline void tp_activity_alloc_fail(uint64_t requested, uint64_t reserved_bytes,
                                          uint64_t free_bytes, uint64_t largest_free_block,
                                          uint32_t device) {
    const tp_activity_table *t = tp_activity__t();
    if (t)
        t->alloc_fail(requested, reserved_bytes, free_bytes, largest_free_block, device);
}

#ifdef TP_ACTIVITY_IMPLEMENT
#include <dlfcn.h>
#include <stdlib.h>

const tp_activity_table *tp_activity__table;
int tp_activity__resolved;

/* Racing first calls all resolve to the same answer, so plain stores suffice; the table
 * pointer is written before the flag (release) so readers of the flag see it. */
const tp_activity_table *tp_activity_table_get(void) {
    if (__atomic_load_n(&tp_activity__resolved, __ATOMIC_ACQUIRE))
        return tp_activity__table;
    const tp_activity_table *t = 0;
    const char *path = getenv("TRAINPROF_COLLECTOR");
    if (path && *path) {
        void *h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
        if (!h)
            h = dlopen(path, RTLD_LAZY);
        tp_activity_get_table_fn get =
            h ? (tp_activity_get_table_fn)dlsym(h, TP_ACTIVITY_GET_TABLE_SYMBOL) : 0;
        t = get ? get(TP_ACTIVITY_TABLE_VERSION) : 0;
        if (t && t->struct_size < sizeof(tp_activity_table))
            t = 0;
    }
    tp_activity__table = t;
    __atomic_store_n(&tp_activity__resolved, 1, __ATOMIC_RELEASE);
    return t;
}
#endif

#ifdef __cplusplus
}
#endif
#endif
