/* tp_an_enclosing: enclosing-range queries over the model's nesting (see the header). */
#include "tp_an_enclosing.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tp_mem.h"

int tp_an_is_step_name(const char *s) {
    return strncmp(s, "ProfilerStep#", 13) == 0 || strcasecmp(s, "step") == 0 ||
           strcasecmp(s, "train_step") == 0 || strcasecmp(s, "training_step") == 0 ||
           strcasecmp(s, "train step") == 0;
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
    qsort(p, n, sizeof *p, cmp_nest);
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

int tp_an_is_range(uint8_t cat, unsigned kinds) {
    return cat < TP_CAT_COUNT && (kinds & (1u << cat)) != 0;
}

long tp_an_enclosing_row(const tp_events *ev, long row, unsigned kinds) {
    if (row < 0)
        return -1;
    long p = (kinds & TP_AN_ENCLOSING_SELF) ? row : ev->parent[row];
    while (p >= 0 && !tp_an_is_range(ev->cat[p], kinds))
        p = ev->parent[p];
    return p;
}

/* The last row of the bucket starting at or before t either contains t or has an ancestor
 * that does (rows are sorted by ts and nested through parent). */
long tp_an_enclosing_at(const tp_rank *r, size_t bucket, int64_t t, unsigned kinds) {
    const tp_buckets *b = &r->threads;
    const tp_events *ev = &r->ev;
    if (bucket >= b->n)
        return -1;
    uint32_t lo = b->off[bucket], hi = b->off[bucket + 1];
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (ev->ts[b->rows[mid]] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == b->off[bucket])
        return -1;
    long p = b->rows[lo - 1];
    while (p >= 0 && !(tp_an_is_range(ev->cat[p], kinds) && ev->ts[p] + tp_ev_dur(ev, p) > t))
        p = ev->parent[p];
    return p;
}
