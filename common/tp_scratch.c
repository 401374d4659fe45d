/* tp_scratch: a small cache of the pages of large blocks (see the header). Each block carries
 * its capacity in a header in front of it, so put() needs no size and any handle (or none)
 * can take it back.
 *
 * Large blocks (TP_SCRATCH_MIN and up, with a handle) are mappings of their own, so that the
 * cache can keep their pages rather than the blocks: a request takes a prefix of the kept
 * range that fits it most tightly (no system call), or else has the pages of several kept
 * ranges moved into one new mapping by mremap (page-table entries move, no page is copied,
 * zeroed or faulted again) with fresh pages for the rest. With whole blocks only, a request
 * larger than every kept block got fresh pages while smaller kept blocks sat idle until they
 * were unmapped: on a 10 M-record report the analyses' blocks (1 to 95 MiB) left ~40 % of
 * what was freed unused that way. Small blocks, and every block without a handle, are
 * malloc's. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mremap */
#endif
#include "tp_scratch.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tp_mem.h"

/* The header keeps the block's own alignment that of malloc (16 bytes on x86-64). map: the
 * bytes mapped from the header's start (a mapped block), 0: a malloc block. */
typedef union {
    struct {
        size_t cap, map;
    } h;
    max_align_t align;
} blk_head;

/* A kept range of pages (page-aligned, mapped, not handed out). */
typedef struct {
    char *base;
    size_t len;
} piece;

struct tp_scratch {
    piece keep[TP_SCRATCH_KEEP]; /* oldest first */
    size_t n;
    size_t kept, budget; /* bytes in keep[], and the most it may hold */
    pthread_mutex_t mu;  /* the TUI runs analyses of one view on two threads */
};

static blk_head *head(void *p) {
    return (blk_head *)p - 1;
}

static size_t cap_of(void *p) {
    return head(p)->h.cap;
}

static size_t page_size(void) {
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

static void oom(size_t n, size_t size) {
    fprintf(stderr, "trainprof: out of memory (%zu x %zu bytes)\n", n, size);
    abort(); /* as tp_mem's aborting family does */
}

/* Bytes to map for a block of `bytes` (and its header), or 0 when that overflows. */
static size_t map_len(size_t bytes) {
    size_t pg = page_size();
    if (bytes > SIZE_MAX - sizeof(blk_head) - pg)
        return 0;
    return (bytes + sizeof(blk_head) + pg - 1) / pg * pg;
}

static char *map_fresh(size_t len) {
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        oom(len, 1);
    return p;
}

/* Moves the pages of [from, from + len) to [to, to + len), a range of a mapping of ours
 * (what was there goes). Kernels before 6.17 move one mapping (VMA) at a time, and a range
 * that was assembled from several spans several: then in halves, each of which ends up in
 * one. A range that cannot move is unmapped, and `to` gets fresh pages instead. */
static void move_pages(char *from, char *to, size_t len, size_t pg) {
    if (mremap(from, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, to) != MAP_FAILED)
        return;
    int err = errno;
    /* the failed call may have unmapped the target already: map it again */
    if (mmap(to, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
        MAP_FAILED)
        oom(len, 1);
    if (err != EFAULT || len <= pg) {
        munmap(from, len);
        return;
    }
    size_t h = len / pg / 2 * pg;
    move_pages(from, to, h, pg);
    move_pages(from + h, to + h, len - h, pg);
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
    piece out[TP_SCRATCH_KEEP];
    size_t n = s->n;
    memcpy(out, s->keep, n * sizeof *out);
    s->n = 0;
    s->kept = 0;
    pthread_mutex_unlock(&s->mu);
    for (size_t i = 0; i < n; i++)
        munmap(out[i].base, out[i].len);
}

void tp_scratch_close(tp_scratch *s) {
    if (!s)
        return;
    tp_scratch_trim(s);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static void drop(tp_scratch *s, size_t i) {
    s->kept -= s->keep[i].len;
    memmove(s->keep + i, s->keep + i + 1, (--s->n - i) * sizeof *s->keep);
}

/* Takes up to `need` bytes of kept pages out of the cache (under s->mu): a prefix of the
 * range that fits most tightly (one piece), else the largest ranges, the last one's prefix.
 * Returns how many pieces went to got[] (at most TP_SCRATCH_KEEP). A remainder under
 * TP_SCRATCH_MIN is not worth keeping: it goes to *left (to unmap), else it stays. */
static size_t take(tp_scratch *s, size_t need, piece *got, piece *left) {
    left->len = 0;
    size_t best = s->n;
    for (size_t i = 0; i < s->n; i++)
        if (s->keep[i].len >= need && (best == s->n || s->keep[i].len < s->keep[best].len))
            best = i;
    size_t k = 0;
    while (need && s->n) {
        size_t i = best;
        if (i == s->n) { /* none fits: the largest */
            i = 0;
            for (size_t j = 1; j < s->n; j++)
                if (s->keep[j].len > s->keep[i].len)
                    i = j;
        }
        piece *p = &s->keep[i];
        size_t t = p->len < need ? p->len : need;
        got[k++] = (piece){p->base, t};
        need -= t;
        if (t == p->len) {
            drop(s, i);
        } else if (p->len - t < TP_SCRATCH_MIN) {
            *left = (piece){p->base + t, p->len - t};
            drop(s, i);
        } else {
            p->base += t, p->len -= t;
            s->kept -= t;
        }
        best = s->n;
    }
    return k;
}

/* A mapped block of `len` bytes (map_len) with, at its start, the pages of `first` (its
 * contents kept; NULL: none), then kept pages of `s` (their contents undefined), then fresh
 * (zero) pages. *reused: the bytes from the start that are not fresh. */
static char *assemble(tp_scratch *s, size_t len, const piece *first, size_t *reused) {
    piece got[TP_SCRATCH_KEEP], left = {NULL, 0};
    size_t k = 0, have = first ? first->len : 0;
    if (s && len > have) {
        pthread_mutex_lock(&s->mu);
        k = take(s, len - have, got, &left);
        pthread_mutex_unlock(&s->mu);
    }
    if (left.len)
        munmap(left.base, left.len);
    if (!first && k == 1 && got[0].len == len) { /* one kept range: in place */
        *reused = len;
        return got[0].base;
    }
    char *to = map_fresh(len);
    size_t at = 0, pg = page_size();
    if (first)
        move_pages(first->base, to, first->len, pg), at = first->len;
    for (size_t i = 0; i < k; i++)
        move_pages(got[i].base, to + at, got[i].len, pg), at += got[i].len;
    *reused = at;
    return to;
}

static void *as_block(char *base, size_t len) {
    blk_head *h = (blk_head *)base;
    h->h.cap = len - sizeof *h;
    h->h.map = len;
    return h + 1;
}

static void *fresh_small(size_t bytes, int zero) {
    blk_head *h = zero ? tp_mem_xcalloc(1, sizeof *h + bytes) : tp_mem_xalloc(1, sizeof *h + bytes);
    h->h.cap = bytes;
    h->h.map = 0;
    return h + 1;
}

static void *get(tp_scratch *s, size_t n, size_t size, int zero) {
    size_t bytes, len;
    if (!tp_mem_mul(n, size, &bytes) || bytes > SIZE_MAX - sizeof(blk_head))
        oom(n, size);
    if (!s || bytes < TP_SCRATCH_MIN)
        return fresh_small(bytes, zero); /* calloc: fresh mmapped pages need no memset */
    if (!(len = map_len(bytes)))
        oom(n, size);
    size_t reused;
    char *base = assemble(s, len, NULL, &reused);
    if (zero && reused)
        memset(base, 0, reused); /* the fresh pages are zero already */
    return as_block(base, len);
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
    if (!tp_mem_mul(n, size, &bytes) || bytes > SIZE_MAX - sizeof(blk_head))
        oom(n, size);
    if (bytes <= cap_of(p))
        return p;
    blk_head *h = head(p);
    if (h->h.map) { /* its pages move to the front of the new block: nothing is copied */
        size_t len = map_len(bytes), reused;
        if (!len)
            oom(n, size);
        piece first = {(char *)h, h->h.map};
        return as_block(assemble(s, len, &first, &reused), len);
    }
    if (!s || bytes < TP_SCRATCH_MIN) { /* realloc: a mapped block moves with mremap */
        h = tp_mem_xrealloc(h, 1, sizeof *h + bytes);
        h->h.cap = bytes;
        return h + 1;
    }
    void *q = get(s, n, size, 0);
    memcpy(q, p, keep < cap_of(p) ? keep : cap_of(p));
    tp_scratch_put(s, p);
    return q;
}

void *tp_scratch_shrink(void *p, size_t n, size_t size) {
    size_t bytes;
    if (!p || !tp_mem_mul(n, size, &bytes) || bytes >= cap_of(p))
        return p;
    blk_head *h = head(p);
    if (h->h.map) { /* the tail's pages given back */
        size_t len = map_len(bytes);
        if (len < h->h.map) {
            munmap((char *)h + len, h->h.map - len);
            h->h.map = len;
            h->h.cap = len - sizeof *h;
        }
        return p;
    }
    h = tp_mem_xrealloc(h, 1, sizeof *h + bytes); /* in place */
    h->h.cap = bytes;
    return h + 1;
}

/* The bytes of `b` up to its last page in memory (mincore), a multiple of the page size: 0
 * when none is. Pages never touched since they were mapped are not: an array sized by a bound
 * (every row, when it holds one entry per GPU row or step) leaves most of its block so. When
 * mincore fails, all of `b`. */
static size_t resident_len(piece b, size_t pg) {
    unsigned char vec[4096];
    size_t np = b.len / pg;
    while (np) { /* chunks from the end: the last page in memory is what counts */
        size_t k = np < sizeof vec ? np : sizeof vec, from = np - k;
        if (mincore(b.base + from * pg, k * pg, vec) != 0)
            return b.len;
        while (k && !(vec[k - 1] & 1))
            k--;
        if (k)
            return (from + k) * pg;
        np = from;
    }
    return 0;
}

/* Keeps range `b` in `s`, or unmaps it when it alone is over the budget. Only its pages up to
 * the last one in memory are kept (the rest unmapped, which frees nothing): the pages never
 * touched cost a request that takes them a fault each like fresh ones, and kept they counted
 * in the budget and, worse, in the count of ranges, pushing out ranges of pages in memory
 * (on a 10 M-record report ~380 MB of them were unmapped that way, and faulted again;
 * docs/PERFORMANCE.md, native report, eighteenth round). The oldest kept ranges go first
 * until it fits in the count and the budget: the blocks of the analysis running now are the
 * likeliest to be asked for again. */
static void keep_piece(tp_scratch *s, piece b) {
    if (b.len > s->budget) {
        munmap(b.base, b.len);
        return;
    }
    size_t in = resident_len(b, page_size());
    if (in < TP_SCRATCH_MIN) {
        munmap(b.base, b.len);
        return;
    }
    if (in < b.len) {
        munmap(b.base + in, b.len - in);
        b.len = in;
    }
    piece out[TP_SCRATCH_KEEP];
    size_t n_out = 0;
    pthread_mutex_lock(&s->mu);
    while (s->n == TP_SCRATCH_KEEP || s->kept + b.len > s->budget) {
        out[n_out++] = s->keep[0];
        drop(s, 0);
    }
    s->keep[s->n++] = b;
    s->kept += b.len;
    pthread_mutex_unlock(&s->mu);
    for (size_t i = 0; i < n_out; i++) /* outside the lock: the other thread may want it */
        munmap(out[i].base, out[i].len);
}

void tp_scratch_put(tp_scratch *s, void *p) {
    if (!p)
        return;
    blk_head *h = head(p);
    if (!h->h.map) {
        free(h);
        return;
    }
    piece b = {(char *)h, h->h.map};
    if (!s || h->h.cap < TP_SCRATCH_MIN)
        munmap(b.base, b.len);
    else
        keep_piece(s, b);
}

void tp_scratch_move(tp_scratch *to, tp_scratch *from) {
    if (!to || !from || to == from)
        return;
    piece blk[TP_SCRATCH_KEEP];
    pthread_mutex_lock(&from->mu); /* out of `from` first: never both locks at once */
    size_t n = from->n;
    memcpy(blk, from->keep, n * sizeof *blk);
    from->n = 0;
    from->kept = 0;
    pthread_mutex_unlock(&from->mu);
    for (size_t i = 0; i < n; i++)
        keep_piece(to, blk[i]);
}

size_t tp_scratch_kept(tp_scratch *s) {
    if (!s)
        return 0;
    pthread_mutex_lock(&s->mu);
    size_t k = s->kept;
    pthread_mutex_unlock(&s->mu);
    return k;
}

size_t tp_scratch_block_bytes(size_t bytes) {
    return map_len(bytes);
}
