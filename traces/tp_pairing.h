/* tp_pairing: matches the two halves of paired records while a trace is read in order.
 *
 * NVTX push/pop (keyed by thread and domain) and start/end (keyed by range id) become
 * ranges; a region's UNREGISTER learns the size its REGISTER/RESIZE gave. Every reader that
 * turns records into intervals (the analyzer's loader, the exporters) needs exactly this, so
 * it lives next to the records (tp_visit pairs NVTX ranges with it for all of them). Plain
 * structs, zero-initialised to empty; functions that allocate return 0 when out of memory
 * and leave the container as it was. */
#ifndef TP_PAIRING_H
#define TP_PAIRING_H

#include <stddef.h>
#include <stdint.h>

/* An open range waiting for its end. key: TP_PAIR_PUSH_KEY(tid, domain) or the range id.
 * The fields after tid keep the rest of what the opening record said. */
typedef struct {
    uint64_t key;
    uint64_t ts;
    uint32_t msg_sid, tid;
    uint32_t domain, category;
    uint32_t color;     /* ARGB; 0 when the record had none (TP_NVTX_HAS_COLOR unset) */
    uint16_t opened_by; /* TP_REC_NVTX_PUSH or TP_REC_NVTX_START */
    uint16_t reserved;
    uint32_t stack_id; /* the opening record's stack (--stacks all); 0: none */
} tp_open_range;

#define TP_PAIR_PUSH_KEY(tid, domain) (((uint64_t)(tid) << 32) | (uint32_t)(domain))

typedef struct {
    tp_open_range *v;
    size_t n, cap;
} tp_range_stack;

/* Opens a range. Returns 1, or 0 when out of memory. */
int tp_range_stack_push(tp_range_stack *s, const tp_open_range *o);

/* Closes the innermost open range with `key` into *out. Returns 0 when none is open. */
int tp_range_stack_take(tp_range_stack *s, uint64_t key, tp_open_range *out);

void tp_range_stack_free(tp_range_stack *s);

/* Live regions: address -> size (open addressing; address 0 is never stored). */
typedef struct {
    uint64_t *addr, *size;
    size_t cap, n;
} tp_region_map;

/* Records (or updates) the size of the region at `addr`. Returns 1 (also for addr 0, which
 * is ignored), or 0 when out of memory. */
int tp_region_map_put(tp_region_map *m, uint64_t addr, uint64_t size);

/* Forgets the region at `addr` and returns its size; 0 when it was not known. */
uint64_t tp_region_map_take(tp_region_map *m, uint64_t addr);

/* Applies a REGION record: the region at `addr` now holds `size` bytes, or is gone when
 * `unregister`. *delta = the bytes that changed hands (negative: released). Returns 1, or 0
 * when out of memory (*delta is right; the map forgets the region). */
int tp_region_map_apply(tp_region_map *m, uint64_t addr, uint64_t size, int unregister,
                        int64_t *delta);

void tp_region_map_free(tp_region_map *m);

/* What a HEAP record does to the bytes an allocator holds (its reserved total): a register
 * adds the heap's size, an unregister removes it, a reset frees the heap's regions but keeps
 * the heap (0). The exports' memory counters share this one reading. */
int64_t tp_heap_reserved_delta(uint32_t op, uint64_t size);

#endif
