/* tp_an_launch: kernel launch statistics (HTA's get_cuda_kernel_launch_stats, in ns). */
#include "tp_an_launch.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tp_an_namememo.h"

/* The figures tp_an_describe gives, without its sort where the sum cannot depend on the order
 * (tp_an_sum_exact: durations in ns): min and max by a scan, percentiles by selection. */
void tp_an_dist_of(double *v, size_t n, tp_an_dist *d) {
    d->count = n;
    double sum;
    if (tp_an_whole_stats2(v, n, 50, 95, &d->sum, &d->min, &d->max, &d->p50, &d->p95)) {
        d->mean = d->sum / (double)n; /* as below, in one read of v */
        return;
    }
    if (n > 0 && tp_an_sum_exact(v, n, &sum)) {
        d->sum = sum;
        d->mean = sum / (double)n;
        d->min = d->max = v[0];
        for (size_t i = 1; i < n; i++) {
            d->min = v[i] < d->min ? v[i] : d->min;
            d->max = v[i] > d->max ? v[i] : d->max;
        }
        tp_an_percentile2(v, n, 50, 95, &d->p50, &d->p95);
        return;
    }
    tp_an_describe_t s;
    tp_an_describe(v, n, &s);
    d->sum = s.sum;
    d->mean = s.mean;
    d->min = s.min;
    d->max = s.max;
    d->p50 = tp_an_percentile_sorted(v, n, 50);
    d->p95 = tp_an_percentile_sorted(v, n, 95);
}

/* tp_an_dist_of of integers: the selection reads them as they are (their whole-number test
 * and first pass were most of the launch analysis's instructions as doubles); where it
 * declines (few values, or huge ones), the values converted in place and tp_an_dist_of. */
static void dist_of_i64(int64_t *v, size_t n, tp_an_dist *d) {
    d->count = n;
    if (tp_an_whole_stats2_i64(v, n, 50, 95, &d->sum, &d->min, &d->max, &d->p50, &d->p95)) {
        d->mean = d->sum / (double)n; /* as tp_an_dist_of */
        return;
    }
    double *dv = (double *)(void *)v; /* the same 8 bytes a value, each written once read */
    for (size_t i = 0; i < n; i++) {
        double x = (double)v[i];
        memcpy(&dv[i], &x, sizeof x);
    }
    tp_an_dist_of(dv, n, d);
}

static int hta_launch_name(const char *n) {
    return strcmp(n, "cudaLaunchKernel") == 0 || strcmp(n, "cudaLaunchKernelExC") == 0 ||
           strcmp(n, "cudaMemcpyAsync") == 0 || strcmp(n, "cudaMemsetAsync") == 0 ||
           strcmp(n, "runFunction - job_prep_and_submit_for_execution") == 0;
}

/* Does view row i launch? HTA's names through a memo (one test per name id, not per row). */
static int row_launches(const tp_an_view *v, tp_an_namememo *hta, size_t i) {
    uint32_t row = v->row[i];
    return v->opts.compat_hta ? tp_an_namememo_get(hta, v->r->ev.name[row])
                              : (v->r->ev.flags[row] & TP_EVF_LAUNCH) != 0;
}

static inline int cpu_side(const tp_an_view *v, size_t i) {
    if (v->opts.compat_hta)
        return tp_an_view_stream(v, i) == -1;
    return !v->gpu[i] && (v->r->ev.flags[v->row[i]] & TP_EVF_LAUNCH);
}

typedef struct {
    int64_t *cpu, *gpu, *delay; /* ns; the view's scratch (grown by tp_scratch_resize) */
    size_t n, cap;
} tp_pairs;

/* Room for more pairs (rarely: the first room is a pair per GPU row, most traces' count). */
static __attribute__((noinline)) void pairs_grow(tp_pairs *p, const tp_an_view *v) {
    size_t first = v->n_gpu > 1024 ? v->n_gpu : 1024;
    size_t cap = p->cap ? 2 * p->cap : first, used = p->n * sizeof(int64_t);
    p->cpu = tp_scratch_resize(v->scratch, p->cpu, used, cap, sizeof(int64_t));
    p->gpu = tp_scratch_resize(v->scratch, p->gpu, used, cap, sizeof(int64_t));
    p->delay = tp_scratch_resize(v->scratch, p->delay, used, cap, sizeof(int64_t));
    p->cap = cap;
}

/* Inline (a call per pair was a fifth of the pairs' collection), its growth out of line. */
static inline __attribute__((always_inline)) void add_pair(tp_pairs *p, const tp_an_view *v,
                                                           size_t c, size_t g) {
    if (p->n == p->cap)
        pairs_grow(p, v);
    int64_t cd = v->end[c] - v->ts[c], gd = v->end[g] - v->ts[g];
    int64_t delay = v->ts[g] - v->ts[c] - cd;
    p->cpu[p->n] = cd;
    p->gpu[p->n] = gd;
    p->delay[p->n] = delay < 0 ? 0 : delay;
    p->n++;
}

/* The pairs of one correlation group (view rows g[0..n), in row order): every CPU-side row
 * with every GPU row, when some row of the group launches. */
static void group_pairs(const tp_an_view *v, tp_an_namememo *hta, const uint32_t *g, size_t n,
                        tp_pairs *p) {
    /* Natively a CPU-side row is a launching row: a group without one has no pairs, so the
     * test whether some row launches is HTA mode's only (lb2k: ~242 k groups). */
    size_t k = 0;
    while (v->opts.compat_hta && k < n && !row_launches(v, hta, g[k]))
        k++;
    if (k == n)
        return;
    for (size_t x = 0; x < n; x++) {
        if (!cpu_side(v, g[x]))
            continue;
        for (size_t y = 0; y < n; y++)
            if (v->opts.compat_hta ? tp_an_view_stream(v, g[y]) != -1 : v->gpu[g[y]])
                add_pair(p, v, g[x], g[y]);
    }
}

/* Groups the view's rows by correlation, in the order of the keys, rows in row order within
 * a group (HTA's merge of the CPU and GPU frames on correlation). HTA mode groups the rows
 * without a correlation (-1, most rows: Python functions, CPU ops) too; they are gathered by
 * a scan instead of being sorted with the others, which took 16 bytes per view row and a sort
 * of all of them. */
static void collect_pairs(const tp_an_view *v, tp_pairs *p) {
    tp_an_namememo hta;
    tp_an_namememo_open(&hta, v->m, hta_launch_name);
    size_t n = 0, none = 0;
    for (size_t i = 0; i < v->n && !v->by_corr; i++) {
        int64_t c = tp_an_view_corr(v, i);
        n += c != -1;
        none += c == -1;
    }
    if (v->by_corr) { /* the rows with a correlation (not -1), in (key, row) order already:
                         its runs of one correlation are the groups, rows in row order (native:
                         no -1 group), read in place */
        n = v->n_by_corr;
        const tp_events *ev = &v->r->ev;
        int narrow = !ev->corr_hi_any && !ev->wide_corr.n; /* the codes are the ids */
        for (size_t s = 0, e; s < n; s = e) {
            if (narrow) { /* the same runs, without tp_ev_corr's tests per row */
                uint32_t code = ev->corr32[v->by_corr[s]];
                for (e = s + 1; e < n && ev->corr32[v->by_corr[e]] == code; e++)
                    ;
            } else {
                int64_t c = tp_an_view_corr(v, v->by_corr[s]);
                for (e = s; e < n && tp_an_view_corr(v, v->by_corr[e]) == c; e++)
                    ;
            }
            if (e - s == 2 && !v->opts.compat_hta) { /* most groups: a call and its kernel */
                size_t a = v->by_corr[s], b = v->by_corr[s + 1];
                if (cpu_side(v, a) && v->gpu[b]) /* group_pairs' pairs: (a, b) only, as a */
                    add_pair(p, v, a, b);        /* row is never both */
                else if (cpu_side(v, b) && v->gpu[a])
                    add_pair(p, v, b, a);
                continue;
            }
            group_pairs(v, &hta, v->by_corr + s, e - s, p);
        }
        tp_an_namememo_close(&hta);
        return;
    }
    tp_an_keyrow *a = tp_an_tmp(v, n, sizeof *a);
    uint32_t *g = tp_an_tmp(v, v->opts.compat_hta ? none : 0, sizeof *g);
    size_t ng = 0;
    n = 0;
    for (size_t i = 0; i < v->n; i++) {
        int64_t c = tp_an_view_corr(v, i);
        if (c != -1)
            a[n++] = (tp_an_keyrow){c, i};
        else if (v->opts.compat_hta)
            g[ng++] = (uint32_t)i;
    }
    tp_an_keyrow_sort(a, n, v->scratch);
    int none_done = !ng;
    for (size_t s = 0, e; s < n; s = e) {
        if (!none_done && a[s].key > -1) { /* the -1 group in its place in key order */
            group_pairs(v, &hta, g, ng, p);
            none_done = 1;
        }
        for (e = s; e < n && a[e].key == a[s].key; e++)
            ;
        /* rows of a group, in row order, in the space of its keyrows (read before written) */
        uint32_t *rows = (uint32_t *)(void *)(a + s);
        for (size_t k = 0; k < e - s; k++)
            rows[k] = (uint32_t)a[s + k].row;
        group_pairs(v, &hta, rows, e - s, p);
    }
    if (!none_done)
        group_pairs(v, &hta, g, ng, p);
    tp_an_tmp_put(v, g);
    tp_an_tmp_put(v, a);
    tp_an_namememo_close(&hta);
}

void tp_an_launch_run(const tp_an_view *v, tp_an_launch *out) {
    memset(out, 0, sizeof *out);
    tp_pairs p = {0};
    collect_pairs(v, &p);
    out->n_pairs = p.n;
    double rc = (double)v->opts.runtime_cutoff_ns, dc = (double)v->opts.launch_delay_cutoff_ns;
    for (size_t k = 0; k < p.n; k++) { /* compared as the doubles they were */
        double cpu = (double)p.cpu[k];
        out->n_short_gpu += cpu <= rc && (double)p.gpu[k] < cpu;
        out->n_runtime_outliers += cpu > rc;
        out->n_delay_outliers += (double)p.delay[k] > dc;
    }
    dist_of_i64(p.cpu, p.n, &out->cpu);
    dist_of_i64(p.gpu, p.n, &out->gpu);
    dist_of_i64(p.delay, p.n, &out->delay);
    tp_an_tmp_put(v, p.cpu);
    tp_an_tmp_put(v, p.gpu);
    tp_an_tmp_put(v, p.delay);
}
