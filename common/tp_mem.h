/* tp_mem: array allocation with the size arithmetic checked, and one growth rule.
 *
 * Every array that trainprof allocates or grows goes through here, so `n * size` is computed
 * in one place, where an overflow is refused instead of wrapping into a short buffer, and
 * every growable array grows the same way (tp_mem_next_cap). Zero-sized requests get one
 * byte, so NULL always means failure.
 *
 * Two families let each binary keep its failure policy (STYLE.md rule 5):
 *  - tp_mem_alloc, _calloc, _realloc, _grow return NULL / 0 and leave the caller's memory as
 *    it was: for the collector, the trace library and the trainer, which never abort;
 *  - tp_mem_xalloc, _xcalloc, _xrealloc, _xgrow print one line on stderr and abort(): for the
 *    analyzer, the TUI and the CLI, which may. The collector never calls them. */
#ifndef TP_MEM_H
#define TP_MEM_H

#include <stddef.h>
#include <stdint.h>

/* 1 when malloc is glibc's own, so its tuning calls (mallopt, malloc_trim) mean something.
 * Not under ASan or TSan: their allocator replaces glibc's, whose arenas then stay
 * uninitialized until such a call sets them up behind the sanitizer's back; from two loader
 * threads at once that race ended a `report` of a multi-rank folder in "malloc assertion
 * failure in __malloc_arena_thread_freeres" at a thread's exit. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TP_SANITIZED_MALLOC 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TP_SANITIZED_MALLOC 1
#endif
#if defined(__GLIBC__) && !defined(TP_SANITIZED_MALLOC)
#define TP_GLIBC_MALLOC 1
#else
#define TP_GLIBC_MALLOC 0
#endif

/* n * size into *bytes; returns 0 (and leaves *bytes alone) when the product overflows. */
static inline int tp_mem_mul(size_t n, size_t size, size_t *bytes) {
    if (size && n > SIZE_MAX / size)
        return 0;
    *bytes = n * size;
    return 1;
}

/* The capacity an array of `cap` elements grows to so that it holds `need`: `cap` (16 when
 * empty) doubled until it is at least `need`; exactly `need` where doubling would overflow.
 * Returns `cap` when it already suffices. For callers that grow several arrays together. */
size_t tp_mem_next_cap(size_t cap, size_t need);

/* ---- failure returns NULL / 0 ---- */

/* Uninitialised room for n elements of `size` bytes; NULL when out of memory or n * size
 * overflows. Free with free(). */
void *tp_mem_alloc(size_t n, size_t size);

/* The same, zero-filled. */
void *tp_mem_calloc(size_t n, size_t size);

/* Resizes `p` (NULL: allocates) to n elements of `size` bytes, keeping its contents up to the
 * smaller size. NULL on failure, and then `p` is untouched and still the caller's. */
void *tp_mem_realloc(void *p, size_t n, size_t size);

/* The part of tp_mem_grow that reallocates (called when *cap < need). */
int tp_mem_grow_slow(void **p, size_t *cap, size_t need, size_t size);

/* Makes the array *p of *cap elements of `size` bytes hold at least `need` (capacity from
 * tp_mem_next_cap; new elements uninitialised). Returns 1, or 0 when out of memory or on
 * overflow, and then *p and *cap are unchanged. Inline: it runs once per record in the
 * writer's drain, where a call for the common "already big enough" case shows. */
static inline int tp_mem_grow(void **p, size_t *cap, size_t need, size_t size) {
    return need <= *cap || tp_mem_grow_slow(p, cap, need, size);
}

/* tp_mem_grow for a typed array `arr` with capacity variable `cap` (a size_t lvalue). */
#define TP_MEM_GROW(arr, cap, need) tp_mem_grow((void **)&(arr), &(cap), (need), sizeof *(arr))

/* ---- failure aborts (analyzer, TUI, CLI only) ---- */

void *tp_mem_xalloc(size_t n, size_t size);
void *tp_mem_xcalloc(size_t n, size_t size);
void *tp_mem_xrealloc(void *p, size_t n, size_t size);
void tp_mem_xgrow_slow(void **p, size_t *cap, size_t need, size_t size);

static inline void tp_mem_xgrow(void **p, size_t *cap, size_t need, size_t size) {
    if (need > *cap)
        tp_mem_xgrow_slow(p, cap, need, size);
}

#define TP_MEM_XGROW(arr, cap, need) tp_mem_xgrow((void **)&(arr), &(cap), (need), sizeof *(arr))

/* Blocks of at least this many bytes are mapped on their own in a process that called
 * tp_mem_tune_process (glibc's M_MMAP_THRESHOLD there): freed, their pages go back to the
 * system, realloc grows them by remapping (no copy), and pages never written cost no memory. */
#define TP_MEM_MAPPED_MIN (256 * 1024)

/* Sets glibc malloc's options for a program that loads and analyses traces (the CLI, and the
 * benchmarks that measure its phases, so that they measure the same heap): big blocks mapped
 * on their own, a 1 MiB trim threshold, one arena for every thread (the reasons and figures are
 * in tp_mem.c). Call once at the start of main, before any thread exists; a no-op without
 * glibc's malloc. Never from the collector: it runs inside the user's program, whose heap is
 * not ours to tune. */
void tp_mem_tune_process(void);

#endif
