/* tp_stacks: call stacks for the collector, captured cheaply and symbolized offline.
 *
 * A capture is one unw_backtrace into a stack buffer (no malloc, no lock), a hash of the raw
 * program counters and a look-up in the calling thread's front cache; only a miss maps the
 * pcs to (module, ELF address) frames and interns them in the writer (locked, once per
 * distinct stack). The module map comes from dl_iterate_phdr (build-id from PT_NOTE, the
 * main program's real path from /proc/self/exe); it is written as MODULE records and
 * refreshed when a pc falls outside every known module (a later dlopen). Frames inside the
 * collector itself are cut off the top, so frame 0 is the caller of the hooked API. Every
 * kept frame is a return address, so each has 1 subtracted (it then symbolizes to the call). */
#ifndef TP_STACKS_H
#define TP_STACKS_H

#include <stdint.h>

#include "tp_writer.h"

#define TP_STACK_CACHE_SLOTS 256

typedef struct tp_stack_walks tp_stack_walks;

/* Per-thread front cache: raw-pc key -> stack id, 2-way set associative (tp_stacks.c), and
 * the thread's verified walks (allocated once the thread captures often). Owned by the
 * thread's state; all zero is empty; tp_stacks_cache_release frees what it holds. */
typedef struct {
    uint64_t hash[TP_STACK_CACHE_SLOTS];
    uint32_t id[TP_STACK_CACHE_SLOTS];
    uint32_t captures;     /* until the walk cache is made */
    tp_stack_walks *walks; /* NULL: not made yet, or the thread's stack is unknown */
} tp_stack_cache;

/* Builds the module map and writes it to `w` as MODULE records. `self_fn` is any function of
 * the collector library (its frames are skipped). A capture calls `busy_enter` before any
 * work that may take a lock (unwinding in full, interning) and `busy_leave` once it is done
 * (each may be NULL); a capture served by a verified walk calls neither. Not thread-safe
 * against captures: call once before any thread captures. */
tp_status tp_stacks_init(tp_writer *w, const void *self_fn, void (*busy_enter)(void),
                         void (*busy_leave)(void));

/* Forgets the module map (fork child with a new writer: call tp_stacks_init again). Only
 * while no thread captures. */
void tp_stacks_reset(void);

/* Captures the calling thread's stack and returns its interned id; 0 when the stack is empty
 * or could not be interned. Thread-safe; `cache` belongs to the calling thread. Busy (see
 * tp_stacks_init) while it may hold a lock. */
uint32_t tp_stacks_capture(tp_writer *w, tp_stack_cache *cache);

/* Frees what `cache` holds (thread exit, a stale state after fork). */
void tp_stacks_cache_release(tp_stack_cache *cache);

/* TRAINPROF_STACKS_VERIFY=1 (tests): every stack taken from a verified walk is also unwound
 * in full and compared; this prints the counts on stderr. No-op otherwise. */
void tp_stacks_report(void);

/* Maps raw return addresses to frames (TP_FRAME_MAKE); refreshes the module map on a miss.
 * Exposed for tests. Returns the number of frames written to `out` (<= n). */
uint32_t tp_stacks_encode(tp_writer *w, void *const *pcs, uint32_t n, uint64_t *out);

/* Number of modules known (tests). */
uint32_t tp_stacks_module_count(void);

#endif
