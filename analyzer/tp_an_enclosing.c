/* tp_an_enclosing: enclosing-range queries over the model's nesting (see the header). */
#include "tp_an_enclosing.h"

#include <string.h>
#include <strings.h>

int tp_an_is_step_name(const char *s) {
    return strncmp(s, "ProfilerStep#", 13) == 0 || strcasecmp(s, "step") == 0 ||
           strcasecmp(s, "train_step") == 0 || strcasecmp(s, "training_step") == 0 ||
           strcasecmp(s, "train step") == 0;
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
    while (p >= 0 && !(tp_an_is_range(ev->cat[p], kinds) && ev->ts[p] + ev->dur[p] > t))
        p = ev->parent[p];
    return p;
}
