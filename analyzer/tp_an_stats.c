/* tp_an_stats: pandas/numpy-compatible statistics and argsort. */
#include "tp_an_stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *tp_an_alloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) {
        fprintf(stderr, "trainprof: out of memory\n");
        abort();
    }
    return p;
}

void tp_an_grow(void **p, size_t *cap, size_t need, size_t size) {
    if (need <= *cap)
        return;
    size_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * size);
    if (!q) {
        fprintf(stderr, "trainprof: out of memory\n");
        abort();
    }
    *p = q;
    *cap = c;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double tp_an_percentile_sorted(const double *v, size_t n, double q) {
    if (n == 0)
        return NAN;
    /* numpy "linear": virtual index (n - 1) * q / 100, interpolate between neighbours. */
    double pos = (double)(n - 1) * (q / 100.0);
    size_t lo = (size_t)floor(pos);
    if (lo >= n - 1)
        return v[n - 1];
    double frac = pos - (double)lo;
    double a = v[lo], b = v[lo + 1];
    /* numpy's _lerp: a + (b - a) * t, computed from the nearer end for t >= 0.5. */
    double d = b - a;
    return frac >= 0.5 ? b - d * (1.0 - frac) : a + d * frac;
}

void tp_an_describe(double *v, size_t n, tp_an_describe_t *out) {
    out->count = n;
    out->sum = 0;
    out->mean = out->std = out->min = out->p25 = out->p50 = out->p75 = out->max = NAN;
    if (n == 0)
        return;
    qsort(v, n, sizeof *v, cmp_double);
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += v[i];
    out->sum = s;
    out->mean = s / (double)n;
    if (n > 1) {
        double ss = 0;
        for (size_t i = 0; i < n; i++)
            ss += (v[i] - out->mean) * (v[i] - out->mean);
        out->std = sqrt(ss / (double)(n - 1));
    }
    out->min = v[0];
    out->max = v[n - 1];
    out->p25 = tp_an_percentile_sorted(v, n, 25);
    out->p50 = tp_an_percentile_sorted(v, n, 50);
    out->p75 = tp_an_percentile_sorted(v, n, 75);
}

/* ---- numpy's aquicksort (numpy/core/src/npysort/quicksort.cpp, v1.24), ported as is. */

#define NP_SMALL_QUICKSORT 15
#define NP_QS_STACK 128
#define IDX_SWAP(a, b)                                                                             \
    do {                                                                                           \
        size_t t_ = (a);                                                                           \
        (a) = (b);                                                                                 \
        (b) = t_;                                                                                  \
    } while (0)

/* Sifts a[i] down the max-heap a[1..n] (numpy's inner loop, shared by both phases). */
static void np_sift_down(const int64_t *v, size_t *a, size_t i, size_t n) {
    size_t tmp = a[i], j;
    for (j = i << 1; j <= n;) {
        if (j < n && v[a[j]] < v[a[j + 1]])
            j += 1;
        if (v[tmp] < v[a[j]]) {
            a[i] = a[j];
            i = j;
            j += j;
        } else
            break;
    }
    a[i] = tmp;
}

static void np_aheapsort(const int64_t *v, size_t *tosort, size_t n) {
    size_t *a = tosort - 1; /* 1-based heap indexing, as in numpy */
    for (size_t l = n >> 1; l > 0; --l)
        np_sift_down(v, a, l, n);
    for (; n > 1;) {
        /* numpy keeps tmp aside and sifts it from the root; storing it there first lets both
         * loops share np_sift_down, with the same comparisons and moves. */
        size_t tmp = a[n];
        a[n] = a[1];
        a[1] = tmp;
        n -= 1;
        np_sift_down(v, a, 1, n);
    }
}

static int np_msb(size_t n) {
    int d = 0;
    while (n >>= 1)
        d++;
    return d;
}

static void np_insertion(const int64_t *v, size_t *pl, size_t *pr) {
    for (size_t *pi = pl + 1; pi <= pr; ++pi) {
        size_t vi = *pi;
        int64_t vp = v[vi];
        size_t *pj = pi, *pk = pi - 1;
        while (pj > pl && vp < v[*pk])
            *pj-- = *pk--;
        *pj = vi;
    }
}

/* One partition step: returns the pivot's final slot. */
static size_t *np_partition(const int64_t *v, size_t *pl, size_t *pr) {
    size_t *pm = pl + ((pr - pl) >> 1);
    if (v[*pm] < v[*pl])
        IDX_SWAP(*pm, *pl);
    if (v[*pr] < v[*pm])
        IDX_SWAP(*pr, *pm);
    if (v[*pm] < v[*pl])
        IDX_SWAP(*pm, *pl);
    int64_t vp = v[*pm];
    size_t *pi = pl, *pj = pr - 1;
    IDX_SWAP(*pm, *pj);
    for (;;) {
        do
            ++pi;
        while (v[*pi] < vp);
        do
            --pj;
        while (vp < v[*pj]);
        if (pi >= pj)
            break;
        IDX_SWAP(*pi, *pj);
    }
    IDX_SWAP(*pi, *(pr - 1));
    return pi;
}

void tp_an_argsort_np(const int64_t *v, size_t num, size_t *tosort) {
    for (size_t i = 0; i < num; i++)
        tosort[i] = i;
    if (num < 2)
        return;
    size_t *pl = tosort, *pr = tosort + num - 1;
    size_t *stack[NP_QS_STACK], **sptr = stack;
    int depth[NP_QS_STACK], *psdepth = depth;
    int cdepth = np_msb(num) * 2;
    for (;;) {
        if (cdepth < 0) {
            np_aheapsort(v, pl, (size_t)(pr - pl + 1));
            goto stack_pop;
        }
        while ((pr - pl) > NP_SMALL_QUICKSORT) {
            size_t *pi = np_partition(v, pl, pr);
            if (pi - pl < pr - pi) {
                *sptr++ = pi + 1;
                *sptr++ = pr;
                pr = pi - 1;
            } else {
                *sptr++ = pl;
                *sptr++ = pi - 1;
                pl = pi + 1;
            }
            *psdepth++ = --cdepth;
        }
        np_insertion(v, pl, pr);
    stack_pop:
        if (sptr == stack)
            break;
        pr = *(--sptr);
        pl = *(--sptr);
        cdepth = *(--psdepth);
    }
}

static int cmp_keyrow(const void *a, const void *b) {
    const tp_an_keyrow *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->row > y->row) - (x->row < y->row);
}

void tp_an_keyrow_sort(tp_an_keyrow *a, size_t n) {
    qsort(a, n, sizeof *a, cmp_keyrow);
}

void tp_an_stable_order(const int64_t *key, size_t n, size_t *idx) {
    tp_an_keyrow *kp = tp_an_alloc(n + 1, sizeof *kp);
    for (size_t i = 0; i < n; i++)
        kp[i] = (tp_an_keyrow){key[i], i};
    tp_an_keyrow_sort(kp, n);
    for (size_t i = 0; i < n; i++)
        idx[i] = kp[i].row;
    free(kp);
}
