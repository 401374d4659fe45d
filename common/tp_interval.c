/* tp_interval: interval unions (see the header). */
#include "tp_interval.h"

#include <stddef.h>

#include "tp_sort.h"

/* Ties in the sort do not matter: intervals are non-empty, so equal starts merge either way. */
size_t tp_interval_union(tp_interval *p, size_t n, int64_t lo, int64_t hi) {
    size_t k = 0;
    int sorted = 1; /* the analyses mostly pass rows in time order: no sort needed then */
    for (size_t i = 0; i < n; i++) {
        tp_interval c = {p[i].a > lo ? p[i].a : lo, p[i].b < hi ? p[i].b : hi};
        if (c.b > c.a) {
            sorted &= k == 0 || c.a >= p[k - 1].a;
            p[k++] = c;
        }
    }
    if (!sorted)
        tp_sort_structs_i64(p, k, sizeof *p, offsetof(tp_interval, a));
    size_t runs = 0;
    for (size_t i = 0; i < k; i++) {
        if (runs && p[i].a <= p[runs - 1].b) {
            if (p[i].b > p[runs - 1].b)
                p[runs - 1].b = p[i].b;
        } else {
            p[runs++] = p[i];
        }
    }
    return runs;
}

int64_t tp_interval_len(const tp_interval *p, size_t n) {
    int64_t t = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t d = p[i].b - p[i].a;
        t = t > INT64_MAX - d ? INT64_MAX : t + d;
    }
    return t;
}
