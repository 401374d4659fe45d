/* tp_scratch: a small best-fit cache of large blocks (see the header). Each block carries
 * its capacity in a header in front of it, so put() needs no size and any handle (or none)
 * can take it back. */
#include "tp_scratch.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_mem.h"

/* The header keeps the block's own alignment that of malloc (16 bytes on x86-64). */
typedef union {
    size_t cap;
    max_align_t align;
} blk_head;

struct tp_scratch {
    void *keep[TP_SCRATCH_KEEP]; /* blocks as seen by callers (after their header), oldest
                                    first */
    size_t n;
    size_t kept, budget; /* bytes in keep[], and the most it may hold */
    pthread_mutex_t mu;  /* the TUI runs analyses of one view on two threads */
};

static blk_head *head(void *p) {
    return (blk_head *)p - 1;
}

static size_t cap_of(void *p) {
    return head(p)->cap;
}

tp_scratch *tp_scratch_open(size_t budget) {
    tp_scratch *s = tp_mem_xcalloc(1, sizeof *s);
    s->budget = budget;
    pthread_mutex_init(&s->mu, NULL);
    return s;
}

void tp_scratch_trim(tp_scratch *s) {
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->n; i++)
        free(head(s->keep[i]));
    s->n = 0;
    s->kept = 0;
    pthread_mutex_unlock(&s->mu);
}

void tp_scratch_close(tp_scratch *s) {
    if (!s)
        return;
    tp_scratch_trim(s);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* The kept block that fits `bytes` most tightly, taken out of the cache; NULL when none. */
static void *take(tp_scratch *s, size_t bytes) {
    size_t best = s->n;
    for (size_t i = 0; i < s->n; i++)
        if (cap_of(s->keep[i]) >= bytes &&
            (best == s->n || cap_of(s->keep[i]) < cap_of(s->keep[best])))
            best = i;
    if (best == s->n)
        return NULL;
    void *p = s->keep[best];
    memmove(s->keep + best, s->keep + best + 1, (--s->n - best) * sizeof *s->keep);
    s->kept -= cap_of(p);
    return p;
}

/* The largest kept block, taken out of the cache; NULL when none. */
static void *take_largest(tp_scratch *s) {
    if (!s->n)
        return NULL;
    size_t best = 0;
    for (size_t i = 1; i < s->n; i++)
        if (cap_of(s->keep[i]) > cap_of(s->keep[best]))
            best = i;
    void *p = s->keep[best];
    memmove(s->keep + best, s->keep + best + 1, (--s->n - best) * sizeof *s->keep);
    s->kept -= cap_of(p);
    return p;
}

/* Kept block `p` (too small) resized to `bytes`: glibc moves a mapped block with mremap,
 * which keeps its pages, so only the part beyond the old size is fresh (a new block would be
 * fresh throughout, and the kept one would stay resident beside it). */
static void *grow(void *p, size_t bytes) {
    blk_head *h = tp_mem_xrealloc(head(p), 1, sizeof *h + bytes);
    h->cap = bytes;
    return h + 1;
}

static void *fresh(size_t bytes, int zero) {
    blk_head *h = zero ? tp_mem_xcalloc(1, sizeof *h + bytes) : tp_mem_xalloc(1, sizeof *h + bytes);
    h->cap = bytes;
    return h + 1;
}

static void *get(tp_scratch *s, size_t n, size_t size, int zero) {
    size_t bytes;
    if (!tp_mem_mul(n, size, &bytes) || bytes > SIZE_MAX - sizeof(blk_head)) {
        fprintf(stderr, "trainprof: out of memory (%zu x %zu bytes)\n", n, size);
        abort(); /* as tp_mem's aborting family does */
    }
    void *p = NULL, *small = NULL;
    if (s && bytes >= TP_SCRATCH_MIN) {
        pthread_mutex_lock(&s->mu);
        p = take(s, bytes);
        if (!p)
            small = take_largest(s);
        pthread_mutex_unlock(&s->mu);
    }
    if (small)
        p = grow(small, bytes);
    if (!p)
        return fresh(bytes, zero); /* calloc: fresh mmapped pages need no memset */
    if (zero)
        memset(p, 0, bytes);
    return p;
}

void *tp_scratch_get(tp_scratch *s, size_t n, size_t size) {
    return get(s, n, size, 0);
}

void *tp_scratch_get0(tp_scratch *s, size_t n, size_t size) {
    return get(s, n, size, 1);
}

void *tp_scratch_resize(tp_scratch *s, void *p, size_t keep, size_t n, size_t size) {
    if (!p)
        return get(s, n, size, 0);
    size_t bytes;
    if (!tp_mem_mul(n, size, &bytes) || bytes > SIZE_MAX - sizeof(blk_head)) {
        fprintf(stderr, "trainprof: out of memory (%zu x %zu bytes)\n", n, size);
        abort();
    }
    if (bytes <= cap_of(p))
        return p;
    void *q = NULL;
    if (s && bytes >= TP_SCRATCH_MIN) {
        pthread_mutex_lock(&s->mu);
        q = take(s, bytes);
        pthread_mutex_unlock(&s->mu);
    }
    if (!q) /* realloc: a mapped block moves with mremap, its pages kept */
        return grow(p, bytes);
    memcpy(q, p, keep < cap_of(p) ? keep : cap_of(p));
    tp_scratch_put(s, p);
    return q;
}

void *tp_scratch_shrink(void *p, size_t n, size_t size) {
    size_t bytes;
    if (!p || !tp_mem_mul(n, size, &bytes) || bytes >= cap_of(p))
        return p;
    blk_head *h = tp_mem_xrealloc(head(p), 1, sizeof *h + bytes); /* in place */
    h->cap = bytes;
    return h + 1;
}

void tp_scratch_put(tp_scratch *s, void *p) {
    if (!p)
        return;
    if (!s || cap_of(p) < TP_SCRATCH_MIN || cap_of(p) > s->budget) {
        free(head(p));
        return;
    }
    /* The oldest kept blocks go first until this one fits in the count and the budget: the
     * blocks of the analysis running now are the likeliest to be asked for again. */
    pthread_mutex_lock(&s->mu);
    while (s->n == TP_SCRATCH_KEEP || s->kept + cap_of(p) > s->budget) {
        s->kept -= cap_of(s->keep[0]);
        free(head(s->keep[0]));
        memmove(s->keep, s->keep + 1, --s->n * sizeof *s->keep);
    }
    s->keep[s->n++] = p;
    s->kept += cap_of(p);
    pthread_mutex_unlock(&s->mu);
}

void tp_scratch_move(tp_scratch *to, tp_scratch *from) {
    if (!to || !from || to == from)
        return;
    void *blk[TP_SCRATCH_KEEP];
    pthread_mutex_lock(&from->mu); /* out of `from` first: never both locks at once */
    size_t n = from->n;
    memcpy(blk, from->keep, n * sizeof *blk);
    from->n = 0;
    from->kept = 0;
    pthread_mutex_unlock(&from->mu);
    for (size_t i = 0; i < n; i++)
        tp_scratch_put(to, blk[i]);
}

size_t tp_scratch_kept(tp_scratch *s) {
    if (!s)
        return 0;
    pthread_mutex_lock(&s->mu);
    size_t k = s->kept;
    pthread_mutex_unlock(&s->mu);
    return k;
}
