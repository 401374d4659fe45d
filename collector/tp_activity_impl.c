/* tp_activity_impl: activity.h calls -> trace records (see tp_activity_impl.h). */
#include "tp_activity_impl.h"

#include <stdatomic.h>
#include <string.h>

#include "tp_collector.h"

static _Atomic uint32_t g_next_corr = TP_ACTIVITY_FIRST_CORRELATION;
static _Atomic uint32_t g_next_device = TP_ACTIVITY_FIRST_DEVICE;

/* Thread state when an event at [start, ...) should be recorded, else NULL: a hot thread
 * (recording, the gate always open) in one compare. always_inline: gcc called it (~12
 * instructions a record). */
__attribute__((always_inline)) static inline tp_tstate *recording(uint64_t start) {
    tp_tstate *t = tp_collector_hot_thread();
    if (t)
        return t;
    t = tp_collector_thread();
    return t && tp_collector_gate(start) ? t : NULL;
}

static uint64_t a_now(void) {
    return tp_collector_now();
}

#if TP_CLOCK_HAVE_TSC
/* a_now once the clock is the TSC, which it stays (the clock is set up once per process): no
 * test at each read (3 of its 12 instructions; a record reads it twice). */
static uint64_t a_now_tsc(void) {
    return tp_clock_now_tsc(&tp_g.clock);
}
#endif

static uint32_t a_next_correlation(void) {
    return atomic_fetch_add_explicit(&g_next_corr, 1, memory_order_relaxed);
}

/* Sets the fields every device interval record has; a macro because they sit at different
 * offsets in each record type. */
#define SET_SPAN(r, start_, end_, corr_, device_, stream_)                                         \
    ((r)->ts = (start_), (r)->end = (end_), (r)->correlation = (corr_), (r)->device = (device_),   \
     (r)->stream = (stream_))

static uint32_t a_device(const char *name, uint64_t memory_bytes) {
    tp_tstate *t = tp_collector_thread();
    uint32_t id = atomic_fetch_add(&g_next_device, 1);
    if (!t)
        return id;
    tp_rec_device r;
    TP_REC_CLEAR(&r, TP_REC_DEVICE);
    r.id = id;
    r.name_sid = tp_collector_intern_stable(t, name);
    r.global_memory_bytes = memory_bytes;
    r.kind = TP_DEVICE_CPU_ACCEL;
    tp_collector_meta(&r);
    return id;
}

/* An API record, through the general path (a cleared copy, then tp_collector_emit). */
__attribute__((noinline)) static void api_emit(tp_tstate *t, uint64_t start, uint64_t end,
                                               uint32_t correlation, uint32_t sid, uint32_t stack,
                                               int32_t result) {
    tp_rec_api r;
    TP_HOT_CLEAR(&r, TP_REC_API);
    r.h.flags |= TP_API_DEVICE;
    r.ts = start;
    r.end = end;
    r.tid = t->tid;
    r.correlation = correlation;
    r.name_sid = sid;
    r.stack_id = stack;
    r.result = result;
    tp_collector_emit(t, &r);
}

/* On a hot thread (nearly every call) API and KERNEL records are written in place in the
 * ring, every field (zeros too) as a store, u32 pairs as one u64 store, as the NVTX fast
 * path does: no cleared copy on the stack to copy again (~40 instructions a record). The
 * rest, and a hot thread whose ring has no room before its next out-of-line work, take the
 * general path, which writes the same bytes. */
/* a_api off a hot thread (or on one, when that is all it is). */
__attribute__((noinline)) static void api_general(const char *name, uint64_t start, uint64_t end,
                                                  uint32_t correlation, int32_t result) {
    tp_tstate *t = recording(start);
    if (!t)
        return;
    uint32_t sid = tp_collector_intern_stable(t, name);
    api_emit(t, start, end, correlation, sid, tp_collector_stack(t, TP_STACKS_API), result);
}

static void a_api(const char *name, uint64_t start, uint64_t end, uint32_t correlation,
                  int32_t result) {
    tp_tstate *t = tp_collector_hot_thread();
    if (!t) {
        api_general(name, start, end, correlation, result);
        return;
    }
    uint32_t sid = tp_collector_intern_stable(t, name);
    uint32_t stack = tp_collector_stack(t, TP_STACKS_API);
    void *p;
    uint64_t e;
    if (!tp_collector_place(t, sizeof(tp_rec_api), &p, &e)) {
        api_emit(t, start, end, correlation, sid, stack, result);
        return;
    }
    tp_stage *stage = t->stage;
    /* the type's header word (tp_g.rec_hdr) with TP_API_DEVICE in the flags' low bits, which
     * are its bits 16..31 on x86-64 (and the other little-endian targets) */
    uint64_t h = tp_g.rec_hdr[TP_REC_API] | (uint64_t)TP_API_DEVICE << 16;
    tp_rec_api *r = p;
    tp_put64(&r->h, h);
    r->ts = start;
    r->end = end;
    tp_put64(&r->tid, t->tid | (uint64_t)correlation << 32);
    tp_put64(&r->cbid, (uint64_t)sid << 32); /* cbid 0, name_sid */
    tp_put64(&r->stack_id, stack | (uint64_t)(uint32_t)result << 32);
    tp_stage_commit_fast(stage, e);
}

/* A KERNEL record, through the general path. */
__attribute__((noinline)) static void kernel_emit(tp_tstate *t, uint32_t sid, uint32_t device,
                                                  uint32_t stream, uint64_t start, uint64_t end,
                                                  uint32_t correlation, const uint32_t grid[3],
                                                  const uint32_t block[3]) {
    tp_rec_kernel r;
    TP_HOT_CLEAR(&r, TP_REC_KERNEL);
    SET_SPAN(&r, start, end, correlation, device, stream);
    r.name_sid = sid;
    if (grid)
        r.grid_x = grid[0], r.grid_y = grid[1], r.grid_z = grid[2];
    if (block)
        r.block_x = (uint16_t)block[0], r.block_y = (uint16_t)block[1],
        r.block_z = (uint16_t)block[2];
    tp_collector_emit(t, &r);
}

static void a_kernel(const char *name, uint32_t device, uint32_t stream, uint64_t start,
                     uint64_t end, uint32_t correlation, const uint32_t grid[3],
                     const uint32_t block[3]) {
    tp_tstate *t = tp_collector_hot_thread();
    if (!t) {
        if ((t = recording(start)))
            kernel_emit(t, tp_collector_intern_stable(t, name), device, stream, start, end,
                        correlation, grid, block);
        return;
    }
    uint32_t sid = tp_collector_intern_stable(t, name);
    void *p;
    uint64_t e;
    if (!tp_collector_place(t, sizeof(tp_rec_kernel), &p, &e)) {
        kernel_emit(t, sid, device, stream, start, end, correlation, grid, block);
        return;
    }
    /* Read before the stores: the ring may alias what grid and block point to, for all the
     * compiler knows. */
    uint64_t g0 = 0, g12 = 0, bw = 0; /* grid_x; grid_y, grid_z; block and registers */
    if (grid)
        g0 = grid[0], g12 = grid[1] | (uint64_t)grid[2] << 32;
    if (block)
        bw = (uint16_t)block[0] | (uint64_t)(uint16_t)block[1] << 16 |
             (uint64_t)(uint16_t)block[2] << 32;
    tp_stage *stage = t->stage;
    uint64_t h = tp_g.rec_hdr[TP_REC_KERNEL];
    tp_rec_kernel *r = p;
    tp_put64(&r->h, h);
    r->ts = start;
    r->end = end;
    tp_put64(&r->correlation, correlation | (uint64_t)sid << 32);
    tp_put64(&r->device, device); /* context 0 */
    tp_put64(&r->stream, stream | g0 << 32);
    tp_put64(&r->grid_y, g12);
    tp_put64(&r->block_x, bw);
    tp_put64(&r->static_shared_bytes, 0); /* and dynamic_shared_bytes */
    tp_put64(&r->graph_id, 0);            /* and reserved */
    r->graph_node_id = 0;
    tp_stage_commit_fast(stage, e);
}

static void a_memcpy(uint32_t copy_kind, uint32_t src_kind, uint32_t dst_kind, uint64_t bytes,
                     uint32_t device, uint32_t stream, uint64_t start, uint64_t end,
                     uint32_t correlation, int async) {
    tp_tstate *t = recording(start);
    if (!t)
        return;
    tp_rec_memcpy r;
    TP_HOT_CLEAR(&r, TP_REC_MEMCPY);
    if (async)
        r.h.flags |= TP_MEMCPY_ASYNC;
    SET_SPAN(&r, start, end, correlation, device, stream);
    r.src_device = r.dst_device = device;
    r.bytes = bytes;
    r.copy_kind = (uint8_t)copy_kind;
    r.src_kind = (uint8_t)src_kind;
    r.dst_kind = (uint8_t)dst_kind;
    tp_collector_emit(t, &r);
}

static void a_memset(uint32_t mem_kind, uint64_t bytes, uint32_t value, uint32_t device,
                     uint32_t stream, uint64_t start, uint64_t end, uint32_t correlation) {
    tp_tstate *t = recording(start);
    if (!t)
        return;
    tp_rec_memset r;
    TP_HOT_CLEAR(&r, TP_REC_MEMSET);
    SET_SPAN(&r, start, end, correlation, device, stream);
    r.bytes = bytes;
    r.value = value;
    r.mem_kind = (uint8_t)mem_kind;
    tp_collector_emit(t, &r);
}

static void a_sync(uint32_t type, uint32_t device, uint32_t stream, uint64_t start, uint64_t end,
                   uint32_t correlation) {
    tp_tstate *t = recording(start);
    if (!t)
        return;
    tp_rec_sync r;
    TP_HOT_CLEAR(&r, TP_REC_SYNC);
    SET_SPAN(&r, start, end, correlation, device, stream);
    r.type = type;
    r.tid = t->tid;
    tp_collector_emit(t, &r);
}

static void a_device_mem(int is_alloc, uint64_t address, uint64_t bytes, uint32_t device) {
    uint64_t now = tp_collector_now();
    tp_tstate *t = recording(now);
    if (!t)
        return;
    tp_rec_device_mem r;
    TP_HOT_CLEAR(&r, TP_REC_DEVICE_MEM);
    r.ts = now;
    r.address = address;
    r.bytes = bytes;
    r.device = device;
    r.op = is_alloc ? TP_MEMOP_ALLOC : TP_MEMOP_FREE;
    r.mem_kind = TP_MEM_DEVICE;
    r.stack_id = tp_collector_stack(t, TP_STACKS_API);
    r.tid = t->tid;
    tp_collector_emit(t, &r);
}

static void a_alloc_fail(uint64_t requested, uint64_t reserved_bytes, uint64_t free_bytes,
                         uint64_t largest_free_block, uint32_t device) {
    uint64_t now = tp_collector_now();
    tp_tstate *t = recording(now);
    if (!t)
        return;
    tp_rec_alloc_fail r;
    TP_HOT_CLEAR(&r, TP_REC_ALLOC_FAIL);
    r.ts = now;
    r.requested = requested;
    r.reserved_bytes = reserved_bytes;
    r.free_bytes = free_bytes;
    r.largest_free_block = largest_free_block;
    r.tid = t->tid;
    r.device = device;
    r.stack_id = tp_collector_stack(t, TP_STACKS_API);
    tp_collector_emit(t, &r);
}

/* The table, with `now_` as its clock read. */
#define ACTIVITY_TABLE(now_)                                                                       \
    {                                                                                              \
        .struct_size = sizeof(tp_activity_table), .version = TP_ACTIVITY_TABLE_VERSION,            \
        .now = (now_), .next_correlation = a_next_correlation, .device = a_device, .api = a_api,   \
        .kernel = a_kernel, .memcpy = a_memcpy, .memset = a_memset, .sync = a_sync,                \
        .device_mem = a_device_mem, .alloc_fail = a_alloc_fail,                                    \
    }
static const tp_activity_table g_table = ACTIVITY_TABLE(a_now);
#if TP_CLOCK_HAVE_TSC
static const tp_activity_table g_table_tsc = ACTIVITY_TABLE(a_now_tsc);
#endif

const tp_activity_table *tp_activity_impl_table(uint32_t version) {
    if (version != TP_ACTIVITY_TABLE_VERSION)
        return NULL;
#if TP_CLOCK_HAVE_TSC
    if (tp_g.clock.use_tsc) /* set before the caller (tp_activity_get_table) asked, for good */
        return &g_table_tsc;
#endif
    return &g_table;
}
