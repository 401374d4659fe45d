/* tp_scratch: a cache of large scratch blocks, so that arrays of one row per event that an
 * analysis allocates, fills once and frees do not cost fresh pages every time.
 *
 * glibc serves blocks over 32 MiB (and, after its threshold adapts, most blocks over a few
 * MiB) with their own mmap and returns them with munmap on free(): every such array costs a
 * page fault per 4 KiB and the kernel's zeroing of it, again for the next analysis. On a
 * 10 M-record report that was ~40 % of the CPU time. Blocks given back here instead stay
 * mapped, and their pages go to the next request: a prefix of the kept range that fits it
 * most tightly (the rest stays kept), or, when none fits, every kept range moved into the new
 * block (mremap: the pages move, nothing is copied) before any fresh page, so later analyses
 * write into pages that are already there whatever the sizes they ask for.
 *
 * What it keeps: at most TP_SCRATCH_KEEP ranges of at least TP_SCRATCH_MIN bytes, together at
 * most the budget given to tp_scratch_open; smaller blocks (and larger than the budget) are
 * freed at once, and when a block given back does not fit, the oldest kept ones go first.
 * Kept blocks count in the process's RSS until tp_scratch_close (or tp_scratch_trim): the
 * budget is what a caller trades of peak memory for fewer page faults.
 *
 * Failure policy: the aborting family of tp_mem (analyzer, TUI, CLI only; never the
 * collector). A handle may be shared by threads (a mutex guards the list: the TUI computes
 * a view's analyses on a worker thread while its UI thread may run one). Every function takes
 * a NULL handle and then behaves as plain malloc/calloc/free, so code can take a scratch
 * optionally. */
#ifndef TP_SCRATCH_H
#define TP_SCRATCH_H

#include <stddef.h>

#define TP_SCRATCH_KEEP 8
#define TP_SCRATCH_MIN (1u << 20)

typedef struct tp_scratch tp_scratch;

/* A new, empty cache that keeps at most `budget` bytes (aborts on out of memory). Close
 * with tp_scratch_close. */
tp_scratch *tp_scratch_open(size_t budget);

/* Frees every kept block and the handle; NULL is a no-op. Blocks still out are not the
 * cache's: give them back first (or free them with tp_scratch_put(NULL, p)). */
void tp_scratch_close(tp_scratch *s);

/* Room for n elements of `size` bytes, uninitialised (aborts on out of memory or when
 * n * size overflows; n == 0 gets a valid block). Give it back with tp_scratch_put on any
 * handle, or NULL, never with free(). */
void *tp_scratch_get(tp_scratch *s, size_t n, size_t size);

/* The same, zero-filled. */
void *tp_scratch_get0(tp_scratch *s, size_t n, size_t size);

/* `p` (from tp_scratch_get*, or NULL: a new block) with room for n elements of `size`
 * bytes, its first `keep` bytes kept: `p` itself when it is large enough, else a kept block
 * that fits (p given back), else `p` regrown by realloc (which moves a mapped block's pages
 * rather than copying them). The caller picks n (say twice what it needs when it grows a
 * list one element at a time). */
void *tp_scratch_resize(tp_scratch *s, void *p, size_t keep, size_t n, size_t size);

/* `p` cut to n elements of `size` bytes (realloc to fewer bytes: in place, the tail's pages
 * given back); p itself when it is not larger. */
void *tp_scratch_shrink(void *p, size_t n, size_t size);

/* Gives `p` (from tp_scratch_get*, or NULL) back: kept for a later request, or freed. */
void tp_scratch_put(tp_scratch *s, void *p);

/* Hands every block `from` keeps over to `to` (oldest first, as tp_scratch_put would keep
 * them within `to`'s budget); either may be NULL (no-op), `from` stays usable. */
void tp_scratch_move(tp_scratch *to, tp_scratch *from);

/* Frees every kept block (the handle stays usable). */
void tp_scratch_trim(tp_scratch *s);

/* Bytes in kept blocks (for tests and measurements). */
size_t tp_scratch_kept(tp_scratch *s);

/* What a block of `bytes` (TP_SCRATCH_MIN or more, from a handle) counts in a cache's kept
 * bytes once given back: its pages, with the header (for tests). */
size_t tp_scratch_block_bytes(size_t bytes);

#endif
