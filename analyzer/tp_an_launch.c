/* tp_an_launch: kernel launch statistics (HTA's get_cuda_kernel_launch_stats, in ns). */
#include "tp_an_launch.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The figures tp_an_describe gives, without its sort where the sum cannot depend on the order
 * (tp_an_sum_exact: durations in ns): min and max by a scan, percentiles by selection. */
void tp_an_dist_of(double *v, size_t n, tp_an_dist *d) {
    d->count = n;
    double sum;
    if (n > 0 && tp_an_sum_exact(v, n, &sum)) {
        d->sum = sum;
        d->mean = sum / (double)n;
        d->min = d->max = v[0];
        for (size_t i = 1; i < n; i++) {
            d->min = v[i] < d->min ? v[i] : d->min;
            d->max = v[i] > d->max ? v[i] : d->max;
        }
        d->p50 = tp_an_percentile(v, n, 50);
        d->p95 = tp_an_percentile(v, n, 95);
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

static int hta_launch_name(const char *n) {
    return strcmp(n, "cudaLaunchKernel") == 0 || strcmp(n, "cudaLaunchKernelExC") == 0 ||
           strcmp(n, "cudaMemcpyAsync") == 0 || strcmp(n, "cudaMemsetAsync") == 0 ||
           strcmp(n, "runFunction - job_prep_and_submit_for_execution") == 0;
}

/* Does this correlation group (keyed by correlation) hold a launch call? */
static int group_launches(const tp_an_view *v, const tp_an_keyrow *g, size_t n) {
    for (size_t k = 0; k < n; k++) {
        size_t i = g[k].row;
        if (v->opts.compat_hta ? hta_launch_name(tp_an_view_name(v, i))
                               : (v->r->ev.flags[v->row[i]] & TP_EVF_LAUNCH) != 0)
            return 1;
    }
    return 0;
}

static int cpu_side(const tp_an_view *v, size_t i) {
    if (v->opts.compat_hta)
        return tp_an_view_stream(v, i) == -1;
    return !v->gpu[i] && (v->r->ev.flags[v->row[i]] & TP_EVF_LAUNCH);
}

typedef struct {
    double *cpu, *gpu, *delay;
    size_t n, cap;
} tp_pairs;

static void add_pair(tp_pairs *p, const tp_an_view *v, size_t c, size_t g) {
    size_t cap = p->cap;
    tp_an_grow((void **)&p->cpu, &cap, p->n + 1, sizeof(double));
    cap = p->cap;
    tp_an_grow((void **)&p->gpu, &cap, p->n + 1, sizeof(double));
    cap = p->cap;
    tp_an_grow((void **)&p->delay, &cap, p->n + 1, sizeof(double));
    p->cap = cap;
    int64_t cd = v->end[c] - v->ts[c], gd = v->end[g] - v->ts[g];
    int64_t delay = v->ts[g] - v->ts[c] - cd;
    p->cpu[p->n] = (double)cd;
    p->gpu[p->n] = (double)gd;
    p->delay[p->n] = delay < 0 ? 0 : (double)delay;
    p->n++;
}

static void collect_pairs(const tp_an_view *v, tp_pairs *p) {
    tp_an_keyrow *a = tp_an_tmp(v, v->n, sizeof *a);
    size_t n = 0;
    for (size_t i = 0; i < v->n; i++)
        if (tp_an_view_corr(v, i) != -1 || v->opts.compat_hta)
            a[n++] = (tp_an_keyrow){tp_an_view_corr(v, i), i};
    tp_an_keyrow_sort(a, n, v->scratch);
    for (size_t s = 0, e; s < n; s = e) {
        for (e = s; e < n && a[e].key == a[s].key; e++)
            ;
        if (!group_launches(v, a + s, e - s))
            continue;
        for (size_t x = s; x < e; x++) {
            if (!cpu_side(v, a[x].row))
                continue;
            for (size_t y = s; y < e; y++)
                if (v->opts.compat_hta ? tp_an_view_stream(v, a[y].row) != -1 : v->gpu[a[y].row])
                    add_pair(p, v, a[x].row, a[y].row);
        }
    }
    tp_an_tmp_put(v, a);
}

void tp_an_launch_run(const tp_an_view *v, tp_an_launch *out) {
    memset(out, 0, sizeof *out);
    tp_pairs p = {0};
    collect_pairs(v, &p);
    out->n_pairs = p.n;
    double rc = (double)v->opts.runtime_cutoff_ns, dc = (double)v->opts.launch_delay_cutoff_ns;
    for (size_t k = 0; k < p.n; k++) {
        out->n_short_gpu += p.cpu[k] <= rc && p.gpu[k] < p.cpu[k];
        out->n_runtime_outliers += p.cpu[k] > rc;
        out->n_delay_outliers += p.delay[k] > dc;
    }
    tp_an_dist_of(p.cpu, p.n, &out->cpu);
    tp_an_dist_of(p.gpu, p.n, &out->gpu);
    tp_an_dist_of(p.delay, p.n, &out->delay);
    free(p.cpu);
    free(p.gpu);
    free(p.delay);
}
