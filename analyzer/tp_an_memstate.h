/* tp_an_memstate: the device allocator's state at any moment, replayed from a rank's memory
 * events.
 *
 * One replay for every allocator a trace can describe: heaps and regions announced through
 * the NVTX memory extension (a caching allocator's segments and blocks), CUDA-level
 * allocations (cudaMalloc/cudaFree, or the device-activity API), and PyTorch-profiler
 * `[memory]` events (Addr, Bytes, Total Allocated, Total Reserved). Which rows are blocks and
 * which are segments is decided once, at open (tp_an_memstate_source):
 *   - NVTX regions present: blocks are the regions, segments the heaps (or, without heaps,
 *     the device allocations); device allocations beside heaps describe the same segments
 *     and are not counted twice;
 *   - Kineto: blocks are the device's `[memory]` events that carry an address (Addr); no
 *     segment layout is known; allocated and reserved are the allocator's own totals (Total
 *     Allocated/Reserved) where the trace has them, else allocated is the running sum of the
 *     device's Bytes (older traces write Bytes only) and reserved is unknown;
 *   - otherwise: blocks are the device allocations, each its own segment.
 * Every block carries its allocation site (tp_an_msite: the stack and the enclosing range
 * when it was allocated), found once at open, so the replay itself is a hash update per
 * event (bench/bench_memstate.c: >= 20 M events/s).
 *
 * The replay never trusts the trace: an unregister or resize of an address that is not live,
 * a heap reset or unregister while regions are live in it (they are released with it), an
 * unknown heap, a second register of a live address are counted (tp_an_mcounts) and the
 * state stays consistent. The state moves forward with tp_an_memstate_seek (backwards
 * replays from the start). Aborts on out of memory, like the rest of the analyzer. */
#ifndef TP_AN_MEMSTATE_H
#define TP_AN_MEMSTATE_H

#include <stddef.h>
#include <stdint.h>

#include "tp_model.h"

typedef struct tp_an_memstate tp_an_memstate;

typedef enum {
    TP_AN_MSRC_NONE = 0,   /* no memory events */
    TP_AN_MSRC_NVTX = 1,   /* NVTX regions (+ heaps) */
    TP_AN_MSRC_KINETO = 2, /* PyTorch-profiler [memory] events */
    TP_AN_MSRC_DEVICE = 3  /* CUDA-level allocations only */
} tp_an_msource;

/* Where a block was allocated: the call stack (native traces) and the ranges around the call
 * (innermost first; NVTX ranges for native traces, also ops for Kineto). */
typedef struct {
    uint32_t stack;   /* tp_rank_stack id; 0: none */
    uint32_t name[2]; /* string ids of the innermost enclosing range and the one around it; 0 */
} tp_an_msite;

typedef struct {
    uint64_t addr;
    int64_t size;
    int64_t ts;    /* allocated at */
    uint32_t site; /* index into the sites (tp_an_memstate_site) */
    int32_t device;
    size_t ev; /* memory-event row that allocated it */
} tp_an_mblock;

typedef struct {
    uint64_t handle; /* heap handle (0: a device allocation standing for a segment) */
    uint64_t base;
    int64_t size;
    int64_t ts;
    int32_t device;
} tp_an_mseg;

/* Totals at the current moment. allocated/reserved are the allocator's own figures where the
 * trace reports them (Kineto), else the replayed sums; -1: unknown. */
typedef struct {
    int64_t allocated, reserved;
    int64_t in_blocks; /* bytes in the live blocks the replay knows */
    size_t blocks, segments;
} tp_an_mtotals;

/* What the replay found odd and handled (never a crash). */
#define TP_AN_MCOUNT_TABLE(X)                                                                      \
    X(unknown_unregister, "unregister of a region that is not live")                               \
    X(unknown_resize, "resize of a region that is not live")                                       \
    X(double_register, "register of an address that is already live")                              \
    X(reset_live, "regions released by a heap reset or unregister while live")                     \
    X(unknown_heap, "reset or unregister of an unknown heap")

typedef struct {
#define TP_AN_MCOUNT_FIELD(name, text) size_t name;
    TP_AN_MCOUNT_TABLE(TP_AN_MCOUNT_FIELD)
#undef TP_AN_MCOUNT_FIELD
} tp_an_mcounts;

/* One segment's layout: its live blocks and the holes between them, by address. */
typedef struct {
    size_t seg; /* index into tp_an_memstate_segments */
    int64_t live_bytes, free_bytes, largest_hole;
    size_t n_blocks; /* live blocks inside */
    size_t *blocks;  /* their indexes in tp_an_memstate_blocks' array, by address */
    size_t n_holes;  /* free holes (gaps before, between and after the blocks) */
    uint64_t *hole_addr;
    int64_t *hole_size;
} tp_an_mlayout;

/* Opens a replay over rank `r` of `m` (both must outlive it), positioned before the first
 * event. Finds each allocating row's site (stack and enclosing ranges) once. Never NULL. */
tp_an_memstate *tp_an_memstate_open(const tp_model *m, const tp_rank *r);
/* NULL is a no-op. */
void tp_an_memstate_close(tp_an_memstate *s);

tp_an_msource tp_an_memstate_source(const tp_an_memstate *s);
/* The rank it replays. */
const tp_rank *tp_an_memstate_rank(const tp_an_memstate *s);

/* Applies memory events until the state is the one after the first `ev` rows (r->mem order;
 * clamped to r->mem.n). Moving backwards replays from the start. */
void tp_an_memstate_seek(tp_an_memstate *s, size_t ev);
/* The number of rows applied so far. */
size_t tp_an_memstate_pos(const tp_an_memstate *s);
/* Keeps a copy of the current state (one; a later keep replaces it): a seek backwards to it
 * or past it then starts there instead of replaying from the start. */
void tp_an_memstate_keep(tp_an_memstate *s);
/* What a keep copies now (live blocks, segments, hash slots, sites): a caller keeping at many
 * moments keeps when at least this many rows were applied since its last keep, so that the
 * copies cost no more than the replay. */
size_t tp_an_memstate_keep_cost(const tp_an_memstate *s);
/* Seeks to just after the last event at or before time t. */
void tp_an_memstate_seek_time(tp_an_memstate *s, int64_t t);

void tp_an_memstate_totals(const tp_an_memstate *s, tp_an_mtotals *out);
/* tp_an_memstate_seek to `ev`, then the allocated and reserved of tp_an_memstate_totals: the
 * memory analysis's replay asks both at every event (212 k on lb2k), where the two calls and
 * the totals' other fields cost ~16 instructions an event. */
void tp_an_memstate_seek_totals(tp_an_memstate *s, size_t ev, int64_t *allocated,
                                int64_t *reserved);
/* The rows from the current position up to `to` (clamped to r->mem.n) applied one by one,
 * the allocated and reserved of tp_an_memstate_seek_totals after row pos + k into alloc[k]
 * and res[k], stopping after the first row whose allocated exceeds `above` (the replay then
 * stands just after it); returns the rows applied. The memory analysis's replay in batches:
 * a call per row cost ~30 instructions of call, tests and stores of its own (212 k rows on
 * lb2k). */
size_t tp_an_memstate_run_totals(tp_an_memstate *s, size_t to, int64_t above, int64_t *alloc,
                                 int64_t *res);
const tp_an_mcounts *tp_an_memstate_counts(const tp_an_memstate *s);

/* The live blocks (owned by the state; valid until the next seek): sets *n. Unordered. */
const tp_an_mblock *tp_an_memstate_blocks(const tp_an_memstate *s, size_t *n);
/* The live segments, likewise. */
const tp_an_mseg *tp_an_memstate_segments(const tp_an_memstate *s, size_t *n);
/* Site `i` of the rank's allocations; the count from tp_an_memstate_n_sites. */
const tp_an_msite *tp_an_memstate_site(const tp_an_memstate *s, uint32_t i);
size_t tp_an_memstate_n_sites(const tp_an_memstate *s);
/* Blocks of `site` freed so far (an unregister or a free; not those a heap reset or
 * unregister released). */
size_t tp_an_memstate_site_freed(const tp_an_memstate *s, uint32_t site);
/* The site of memory row `row` when it allocates a block, else UINT32_MAX. */
uint32_t tp_an_memstate_row_site(const tp_an_memstate *s, size_t row);

/* The layouts of every live segment, by base address, into *out (n_out of them; free with
 * tp_an_memstate_layouts_free). A block lies in the segment whose range holds its address. */
void tp_an_memstate_layouts(const tp_an_memstate *s, tp_an_mlayout **out, size_t *n_out);
void tp_an_memstate_layouts_free(tp_an_mlayout *l, size_t n);

/* Largest hole over all live segments at the current moment; -1 when no segment is known. */
int64_t tp_an_memstate_largest_hole(const tp_an_memstate *s);

/* "range 'forward conv1' in 'step'" (or "(no range)"), the site's label for people, into buf
 * (always terminated); returns buf. */
char *tp_an_msite_label(const tp_model *m, const tp_an_msite *site, char *buf, size_t cap);

#endif
