/* tp_an_enclosing: enclosing-range queries over the model's nesting (see the header). */
#include "tp_an_enclosing.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tp_an_stats.h"
#include "tp_mem.h"
#include "tp_stepname.h"

int tp_an_is_step_name(const char *s) {
    return tp_step_name(s); /* common/tp_stepname: the collector and the live store's too */
}

typedef struct {
    int64_t a, b;
} step_span;

static int cmp_nest(const void *x, const void *y) {
    const step_span *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    return (p->b < q->b) - (p->b > q->b); /* the enclosing one first */
}

size_t tp_an_outer_steps(const int64_t *a, const int64_t *b, size_t n, int64_t **start,
                         int64_t **end) {
    step_span *p = tp_mem_xalloc(n + 1, sizeof *p);
    *start = tp_mem_xalloc(n + 1, sizeof **start);
    *end = tp_mem_xalloc(n + 1, sizeof **end);
    for (size_t i = 0; i < n; i++)
        p[i] = (step_span){a[i], b[i]};
    tp_an_qsort(p, n, sizeof *p, cmp_nest); /* equal spans are equal values */
    int64_t last_end = INT64_MIN;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i].b <= last_end)
            continue;
        (*start)[k] = p[i].a, (*end)[k] = p[i].b;
        k++;
        last_end = p[i].b;
    }
    free(p);
    return k;
}

/* The first place in [lo, hi) of bucket rows `rows` (by ts) whose row starts after t. */
static uint32_t first_after(const tp_events *ev, const uint32_t *rows, uint32_t lo, uint32_t hi,
                            int64_t t) {
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (ev->ts[rows[mid]] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The last row of the bucket starting at or before t (the one before place `lo`) either
 * contains t or has an ancestor that does (rows are sorted by ts and nested through
 * parent). Always inlined into its two callers: a call of its own saved six registers and
 * restored them for a walk that mostly stops at its first row (the memory replay's sites:
 * 106 k calls on lb2k, -1.7 M instructions). */
static inline __attribute__((always_inline)) long
enclosing_before(const tp_rank *r, size_t bucket, uint32_t lo, int64_t t, unsigned kinds) {
    const tp_events *ev = &r->ev;
    if (lo == r->threads.off[bucket])
        return -1;
    long p = r->threads.rows[lo - 1];
    while (p >= 0 && !(tp_an_is_range(ev->cat[p], kinds) && ev->ts[p] + tp_ev_dur(ev, p) > t))
        p = tp_ev_parent(ev, (size_t)p);
    return p;
}

long tp_an_enclosing_at(const tp_rank *r, size_t bucket, int64_t t, unsigned kinds) {
    const tp_buckets *b = &r->threads;
    if (bucket >= b->n)
        return -1;
    uint32_t lo = first_after(&r->ev, b->rows, b->off[bucket], b->off[bucket + 1], t);
    return enclosing_before(r, bucket, lo, t, kinds);
}

long tp_an_enclosing_at_from(const tp_rank *r, size_t bucket, int64_t t, unsigned kinds,
                             uint32_t *cursor) {
    const tp_buckets *b = &r->threads;
    const int64_t *ts = r->ev.ts;
    if (bucket >= b->n)
        return -1;
    uint32_t lo = *cursor, hi = b->off[bucket + 1];
    size_t step = 1;
    if (lo < b->off[bucket] || lo > hi || (lo > b->off[bucket] && ts[b->rows[lo - 1]] > t))
        lo = b->off[bucket]; /* not a place at or before t's: from the start */
    /* mostly the answer is the cursor or a row or two past it: those are tested one by one
     * before the gallop (which took two probes and a search for a step of one) */
    for (int k = 0; k < 3; k++, lo++)
        if (lo == hi || ts[b->rows[lo]] > t) {
            *cursor = lo;
            return enclosing_before(r, bucket, lo, t, kinds);
        }
    for (;;) { /* rows before lo start at or before t; probe lo + step - 1 */
        uint32_t probe = hi - lo >= step ? (uint32_t)(lo + step - 1) : hi;
        if (probe == hi || ts[b->rows[probe]] > t) {
            lo = first_after(&r->ev, b->rows, lo, probe, t);
            break;
        }
        lo = probe + 1;
        step *= 2;
    }
    *cursor = lo;
    return enclosing_before(r, bucket, lo, t, kinds);
}
