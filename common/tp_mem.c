/* tp_mem: checked array allocation and the one growth rule (see tp_mem.h). */
#include "tp_mem.h"

#include <stdio.h>
#include <stdlib.h>

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
