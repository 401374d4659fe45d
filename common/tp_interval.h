/* tp_interval: the union of time intervals, the one definition of "busy" for the offline
 * analyses (analyzer/tp_an_ivset) and the live aggregator (collector/tp_live_agg).
 *
 * The union is normalized: runs sorted, disjoint, non-empty and not touching. The merge rule:
 * a run opens where an interval starts after every end seen so far, else it widens the
 * current run. Plain arrays, no allocation, so the collector can use it. */
#ifndef TP_INTERVAL_H
#define TP_INTERVAL_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int64_t a, b; /* [a, b) in ns */
} tp_interval;

/* Clips p[0..n) to [lo, hi) (INT64_MIN, INT64_MAX: no clipping), drops what is empty, sorts
 * and merges in place. Returns the number of runs, which are left in p[0..]. */
size_t tp_interval_union(tp_interval *p, size_t n, int64_t lo, int64_t hi);

/* Sum of b - a over p[0..n), saturating at INT64_MAX. */
int64_t tp_interval_len(const tp_interval *p, size_t n);

#endif
