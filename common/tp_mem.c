/* tp_mem: checked array allocation and the one growth rule (see tp_mem.h). */
#include "tp_mem.h"

#include <stdio.h>
#include <stdlib.h>
#if TP_GLIBC_MALLOC
#include <malloc.h>
#endif

#define TP_MEM_MIN_CAP 16

size_t tp_mem_next_cap(size_t cap, size_t need) {
    if (cap >= need)
        return cap;
    size_t n = cap ? cap : TP_MEM_MIN_CAP;
    while (n < need)
        n = n > SIZE_MAX / 2 ? need : n * 2;
    return n;
}

void *tp_mem_alloc(size_t n, size_t size) {
    size_t bytes;
    return tp_mem_mul(n, size, &bytes) ? malloc(bytes ? bytes : 1) : NULL;
}

void *tp_mem_calloc(size_t n, size_t size) {
    size_t bytes; /* calloc checks too; checking here keeps one rule for every call */
    return tp_mem_mul(n, size, &bytes) ? calloc(bytes ? n : 1, bytes ? size : 1) : NULL;
}

void *tp_mem_realloc(void *p, size_t n, size_t size) {
    size_t bytes;
    return tp_mem_mul(n, size, &bytes) ? realloc(p, bytes ? bytes : 1) : NULL;
}

int tp_mem_grow_slow(void **p, size_t *cap, size_t need, size_t size) {
    if (need <= *cap)
        return 1;
    size_t n = tp_mem_next_cap(*cap, need);
    void *q = tp_mem_realloc(*p, n, size);
    if (!q)
        return 0;
    *p = q;
    *cap = n;
    return 1;
}

/* ---------------------------------------------------------------- aborting */

static void *or_abort(void *p, size_t n, size_t size) {
    if (!p) {
        fprintf(stderr, "trainprof: out of memory (%zu x %zu bytes)\n", n, size);
        abort();
    }
    return p;
}

void *tp_mem_xalloc(size_t n, size_t size) {
    return or_abort(tp_mem_alloc(n, size), n, size);
}

void *tp_mem_xcalloc(size_t n, size_t size) {
    return or_abort(tp_mem_calloc(n, size), n, size);
}

void *tp_mem_xrealloc(void *p, size_t n, size_t size) {
    return or_abort(tp_mem_realloc(p, n, size), n, size);
}

void tp_mem_xgrow_slow(void **p, size_t *cap, size_t need, size_t size) {
    if (!tp_mem_grow_slow(p, cap, need, size))
        or_abort(NULL, need, size);
}

void tp_mem_tune_process(void) {
#if TP_GLIBC_MALLOC
    /* Blocks from 256 KiB up are mapped on their own and unmapped when freed. glibc's default
     * raises that threshold to the size of each such block freed (up to 32 MiB), after which
     * the import's and the analyses' arrays of a few MiB came from the heap, whose freed
     * room stayed resident and whose calloc clears every page: `report --compat hta` peaked
     * 2-7 MiB higher on every peer trace of >= 10 MB (43.1 against 37.0 MiB on a 62 MB one),
     * for ~30 % fewer page faults (~2 % of its CPU time). */
    mallopt(M_MMAP_THRESHOLD, TP_MEM_MAPPED_MIN);
    /* Free room at the top of a heap (the main one, and each walking thread's arena) is given
     * back above 1 MiB instead of glibc's 128 KiB: the import's pieces and small arrays are
     * freed and allocated again all along, and each return cost a trim (brk or madvise) and
     * then a page fault per page reused: `report --compat hta` had 6-9 % fewer page faults on
     * the 54-62 MB peer traces, its peak RSS the same within the runs' spread. */
    mallopt(M_TRIM_THRESHOLD, 1024 * 1024);
    /* One arena for every thread: a second analysis thread's own arena kept the free room at
     * its top (up to the trim threshold above) resident for the rest of the report, which
     * malloc_trim does not give back for an arena other than the main one (glibc's mtrim
     * trims only the main arena's top): `report --compat hta`'s later analyses then ran
     * ~0.9 MiB above the view's base, and hta_df_index_resolver peaked 0.74 MiB higher
     * (median of 5, 17.27 against 16.53 MiB; tracelens_xdit_sd35 -0.25, hta_trace_diff_control
     * -0.12). Small blocks come from each thread's tcache without the arena's lock; CPU time
     * and wall time the same within the runs' spread (8 alternating runs, three sets). */
    mallopt(M_ARENA_MAX, 1);
#endif
}
