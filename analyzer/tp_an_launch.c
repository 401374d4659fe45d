/* tp_an_launch: kernel launch statistics (HTA's get_cuda_kernel_launch_stats, in ns). */
#include "tp_an_launch.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tp_an_namememo.h"
#include "tp_sort.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define LAUNCH_AVX2 1 /* the outliers' pass four pairs at a time where the CPU has AVX2 */
#endif

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
static void dist_of_i64(int64_t *v, size_t n, const tp_an_i64_span *sp, tp_an_dist *d) {
    d->count = n;
    if (tp_an_whole_stats2_i64_of(v, n, sp, 50, 95, &d->sum, &d->min, &d->max, &d->p50, &d->p95)) {
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

/* Does view row i launch? HTA's names through a memo (one test per name id, not per row).
 * Forced inline: collect_pairs' pass tests most rows of a compat view (the -1 group's), and
 * out of line it cost +2.8 M instructions on tracelens_xdit_sd35. */
static inline __attribute__((always_inline)) int row_launches(const tp_an_view *v,
                                                              tp_an_namememo *hta, size_t i) {
    uint32_t row = tp_an_view_row(v, i);
    return v->opts.compat_hta ? tp_an_namememo_get(hta, v->r->ev.name[row])
                              : (v->r->ev.flags[row] & TP_EVF_LAUNCH) != 0;
}

static inline int cpu_side(const tp_an_view *v, size_t i) {
    if (v->opts.compat_hta)
        return tp_an_view_stream(v, i) == -1;
    return !tp_an_view_gpu(v, i) && (v->r->ev.flags[tp_an_view_row(v, i)] & TP_EVF_LAUNCH);
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
static inline __attribute__((always_inline)) void
add_pair_with(tp_pairs *p, const tp_an_view *v, const int64_t *ts64, size_t c, size_t g) {
    if (p->n == p->cap)
        pairs_grow(p, v);
    int64_t cd = tp_an_view_dur(v, c), gd = tp_an_view_dur(v, g);
    int64_t delay = tp_an_view_ts_with(v, ts64, g) - tp_an_view_ts_with(v, ts64, c) - cd;
    p->cpu[p->n] = cd;
    p->gpu[p->n] = gd;
    p->delay[p->n] = delay < 0 ? 0 : delay;
    p->n++;
}
static inline __attribute__((always_inline)) void add_pair(tp_pairs *p, const tp_an_view *v,
                                                           size_t c, size_t g) {
    add_pair_with(p, v, tp_an_view_ts_array(v), c, g);
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
            if (v->opts.compat_hta ? tp_an_view_stream(v, g[y]) != -1 : tp_an_view_gpu(v, g[y]))
                add_pair(p, v, g[x], g[y]);
    }
}

/* group_pairs of HTA mode's -1 group (the view's rows without a correlation, in row order),
 * read from the view in place: an array of its rows was 4 bytes a row of most of the view
 * (Python functions, CPU ops) at the launch analysis's peak, the report's on
 * hta_df_index_resolver. Its pairs come in group_pairs' order: each CPU-side row in row
 * order with each GPU row in row order; those GPU rows (few or none) are gathered first.
 * `launches`: some row of the group launches. */
static void none_group_pairs(const tp_an_view *v, int launches, tp_pairs *p) {
    size_t i, n_gpu = 0;
    if (!launches) /* no row of the group launches (collect_pairs' pass found none) */
        return;
    for (i = 0; i < v->n; i++)
        n_gpu += tp_an_view_corr(v, i) == -1 && tp_an_view_stream(v, i) != -1;
    if (!n_gpu)
        return;
    uint32_t *gpu = tp_an_tmp(v, n_gpu, sizeof *gpu);
    n_gpu = 0;
    for (i = 0; i < v->n; i++)
        if (tp_an_view_corr(v, i) == -1 && tp_an_view_stream(v, i) != -1)
            gpu[n_gpu++] = (uint32_t)i;
    for (i = 0; i < v->n; i++)
        if (tp_an_view_corr(v, i) == -1 && cpu_side(v, i))
            for (size_t y = 0; y < n_gpu; y++)
                add_pair(p, v, i, gpu[y]);
    tp_an_tmp_put(v, gpu);
}

/* collect_pairs' groups where the view has by_corr. Always inline, for its two copies. */
static inline __attribute__((always_inline)) void
by_corr_pairs(const tp_an_view *v, const int64_t *ts64, tp_an_namememo *hta, tp_pairs *p) {
    size_t n = v->n_by_corr;
    /* add_pair's int64 stores could be to the view's size fields: its copy's stay in
     * registers (tp_an_view.h) */
    const tp_an_view lv = *v;
    v = &lv;
    const tp_events *ev = &v->r->ev;
    int narrow = !ev->corr_hi_any && !ev->wide_corr.n; /* the codes are the ids */
    for (size_t s = 0, e; s < n; s = e) {
        if (v->by_corr_twos) { /* every run two rows (the view found it): no compare */
            e = s + 2;
        } else if (narrow) { /* the same runs, without tp_ev_corr's tests per row */
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
            if (cpu_side(v, a) && tp_an_view_gpu(v, b)) /* group_pairs' pairs: (a, b) only, as a */
                add_pair_with(p, v, ts64, a, b);        /* row is never both */
            else if (cpu_side(v, b) && tp_an_view_gpu(v, a))
                add_pair_with(p, v, ts64, b, a);
            continue;
        }
        group_pairs(v, hta, v->by_corr + s, e - s, p);
    }
}

/* Groups the view's rows by correlation, in the order of the keys, rows in row order within
 * a group (HTA's merge of the CPU and GPU frames on correlation). HTA mode groups the rows
 * without a correlation (-1, most rows: Python functions, CPU ops) too; they are read in place
 * (none_group_pairs) instead of being sorted with the others, which took 16 bytes per view row and
 * a sort of all of them. */
static void collect_pairs(const tp_an_view *v, tp_pairs *p) {
    tp_an_namememo hta;
    tp_an_namememo_open(&hta, v->m, hta_launch_name);
    size_t n = 0, none = 0;
    int64_t cmin = INT64_MAX, cmax = INT64_MIN; /* of the rows with a correlation */
    for (size_t i = 0; i < v->n && !v->by_corr; i++) {
        int64_t c = tp_an_view_corr(v, i);
        n += c != -1;
        none += c == -1;
        if (c != -1) {
            cmin = c < cmin ? c : cmin;
            cmax = c > cmax ? c : cmax;
        }
    }
    if (v->by_corr) { /* the rows with a correlation (not -1), in (key, row) order already:
                         its runs of one correlation are the groups, rows in row order (native:
                         no -1 group), read in place; in two copies (tp_an_view_ts_array) */
        if (tp_an_view_ts_array(v))
            by_corr_pairs(v, tp_an_view_ts_array(v), &hta, p);
        else
            by_corr_pairs(v, NULL, &hta, p);
        tp_an_namememo_close(&hta);
        return;
    }
    /* One sort key a row: the correlation's offset from the least above the row, in 64 bits
     * (unique: no stable sort needed, no row column), when they fit (packed: the correlations
     * of a trace span far less than 2^32); else the correlation's key and the row as two
     * columns sorted as pairs (stable: rows stay ascending within a key). Either way not
     * tp_an_keyrow structs copied into the sort's columns and back: 16 bytes a correlated row
     * at the analysis's peak with the sort's own copy (24 unpacked), where they were 40
     * (hta_df_index_resolver: 52 k rows). */
    int64_t span;
    int packed = n && !__builtin_sub_overflow(cmax, cmin, &span) && (uint64_t)span <= UINT32_MAX &&
                 v->n - 1 <= UINT32_MAX;
    uint64_t *key = tp_an_tmp(v, n, sizeof *key);
    uint32_t *rows = packed ? NULL : tp_an_tmp(v, n, sizeof *rows);
    n = 0;
    int none_launches = 0; /* group_pairs' test of the -1 group, in its order, in this pass */
    for (size_t i = 0; i < v->n; i++) {
        int64_t c = tp_an_view_corr(v, i);
        if (c != -1 && packed)
            key[n++] = (uint64_t)(c - cmin) << 32 | i;
        else if (c != -1)
            key[n] = tp_sort_key_i64(c), rows[n++] = (uint32_t)i;
        else if (v->opts.compat_hta && !none_launches)
            none_launches = row_launches(v, &hta, i);
    }
    tp_sort_pairs_s(key, rows, n, v->scratch);
    int none_done = !(v->opts.compat_hta && none);
    const uint64_t none_key = tp_sort_key_i64(-1);
    const int64_t none_off = -1 - cmin; /* packed: the -1 group comes before the offsets above */
    for (size_t s = 0, e; s < n; s = e) {
        uint64_t k = packed ? key[s] >> 32 : key[s];
        if (!none_done && (packed ? (int64_t)k > none_off : k > none_key)) {
            none_group_pairs(v, none_launches, p); /* the -1 group in its place in key order */
            none_done = 1;
        }
        for (e = s + 1; e < n && (packed ? key[e] >> 32 : key[e]) == k; e++)
            ;
        if (packed) { /* the rows out of their keys, in the group's keys' space (read first) */
            uint32_t *r = (uint32_t *)(void *)(key + s);
            for (size_t j = 0; j < e - s; j++)
                r[j] = (uint32_t)key[s + j];
            group_pairs(v, &hta, r, e - s, p);
        } else {
            group_pairs(v, &hta, rows + s, e - s, p); /* the group's rows, in row order */
        }
    }
    if (!none_done)
        none_group_pairs(v, none_launches, p);
    tp_an_tmp_put(v, key);
    tp_an_tmp_put(v, rows);
    tp_an_namememo_close(&hta);
}

/* The outlier counts and the three distributions' spans (tp_an_launch_run's pass). */
typedef struct {
    size_t n_short, n_rt, n_dl;
    tp_an_i64_span cpu, gpu, delay;
} pair_pass;

/* Pairs [from, n) of p into *r, one at a time. */
static void pairs_pass_from(const tp_pairs *p, size_t from, int64_t rc, int64_t dc, pair_pass *r) {
    for (size_t k = from; k < p->n; k++) {
        int64_t cpu = p->cpu[k], gpu = p->gpu[k], delay = p->delay[k];
        r->n_short += cpu <= rc && gpu < cpu;
        r->n_rt += cpu > rc;
        r->n_dl += delay > dc;
        tp_an_i64_span_add(&r->cpu, cpu);
        tp_an_i64_span_add(&r->gpu, gpu);
        tp_an_i64_span_add(&r->delay, delay);
    }
}

#if LAUNCH_AVX2
static inline __attribute__((target("avx2"))) void span4_add(__m256i *mn, __m256i *mx, __m256i *sum,
                                                             __m256i x) {
    *mn = _mm256_blendv_epi8(*mn, x, _mm256_cmpgt_epi64(*mn, x));
    *mx = _mm256_blendv_epi8(*mx, x, _mm256_cmpgt_epi64(x, *mx));
    *sum = _mm256_add_epi64(*sum, x);
}

static inline __attribute__((target("avx2"))) void span4_fold(tp_an_i64_span *sp, __m256i mn,
                                                              __m256i mx, __m256i sum) {
    int64_t a[4], b[4], c[4];
    _mm256_storeu_si256((__m256i *)(void *)a, mn);
    _mm256_storeu_si256((__m256i *)(void *)b, mx);
    _mm256_storeu_si256((__m256i *)(void *)c, sum);
    for (int k = 0; k < 4; k++) {
        sp->min = a[k] < sp->min ? a[k] : sp->min;
        sp->max = b[k] > sp->max ? b[k] : sp->max;
        sp->sum += (uint64_t)c[k];
    }
}

/* pairs_pass_from(p, 0, ...) four pairs a step (~49 instructions a pair one at a time, lb2k:
 * 240 k pairs): the counts add each lane's compare (-1 where it holds), the spans keep a
 * least, greatest and wrapping sum per lane, folded at the end (the same figures in any
 * order). The last n % 4 pairs one at a time. */
static __attribute__((target("avx2"))) void pairs_pass_avx2(const tp_pairs *p, int64_t rc,
                                                            int64_t dc, pair_pass *r) {
    const __m256i vrc = _mm256_set1_epi64x(rc), vdc = _mm256_set1_epi64x(dc);
    __m256i ns = _mm256_setzero_si256(), nr = ns, nd = ns;
    __m256i mn[3], mx[3], sum[3];
    for (int k = 0; k < 3; k++) {
        mn[k] = _mm256_set1_epi64x(INT64_MAX);
        mx[k] = _mm256_set1_epi64x(INT64_MIN);
        sum[k] = _mm256_setzero_si256();
    }
    size_t k = 0;
    for (; k + 4 <= p->n; k += 4) {
        __m256i cpu = _mm256_loadu_si256((const __m256i *)(const void *)(p->cpu + k));
        __m256i gpu = _mm256_loadu_si256((const __m256i *)(const void *)(p->gpu + k));
        __m256i delay = _mm256_loadu_si256((const __m256i *)(const void *)(p->delay + k));
        __m256i over = _mm256_cmpgt_epi64(cpu, vrc); /* cpu > rc */
        ns = _mm256_sub_epi64(ns, _mm256_andnot_si256(over, _mm256_cmpgt_epi64(cpu, gpu)));
        nr = _mm256_sub_epi64(nr, over);
        nd = _mm256_sub_epi64(nd, _mm256_cmpgt_epi64(delay, vdc));
        span4_add(&mn[0], &mx[0], &sum[0], cpu);
        span4_add(&mn[1], &mx[1], &sum[1], gpu);
        span4_add(&mn[2], &mx[2], &sum[2], delay);
    }
    int64_t c[3][4];
    _mm256_storeu_si256((__m256i *)(void *)c[0], ns);
    _mm256_storeu_si256((__m256i *)(void *)c[1], nr);
    _mm256_storeu_si256((__m256i *)(void *)c[2], nd);
    for (int l = 0; l < 4; l++) {
        r->n_short += (size_t)c[0][l];
        r->n_rt += (size_t)c[1][l];
        r->n_dl += (size_t)c[2][l];
    }
    span4_fold(&r->cpu, mn[0], mx[0], sum[0]);
    span4_fold(&r->gpu, mn[1], mx[1], sum[1]);
    span4_fold(&r->delay, mn[2], mx[2], sum[2]);
    pairs_pass_from(p, k, rc, dc, r);
}
#endif

void tp_an_launch_run(const tp_an_view *v, tp_an_launch *out) {
    memset(out, 0, sizeof *out);
    tp_pairs p = {0};
    collect_pairs(v, &p);
    out->n_pairs = p.n;
    /* The outliers, counted in the pass that finds the three distributions' spans (their own
     * pass each before: ~6 M instructions on lb2k). The counts compare the values as the
     * doubles they were; as integers here, the same outcomes while values and cutoffs are
     * below 2^53 in magnitude (exact as doubles), which the spans show after the pass: else
     * counted again as doubles (HTA's nanoseconds: never in practice). */
    int64_t rc = v->opts.runtime_cutoff_ns, dc = v->opts.launch_delay_cutoff_ns;
    pair_pass r = {0};
    tp_an_i64_span_open(&r.cpu), tp_an_i64_span_open(&r.gpu), tp_an_i64_span_open(&r.delay);
#if LAUNCH_AVX2
    if (__builtin_cpu_supports("avx2"))
        pairs_pass_avx2(&p, rc, dc, &r);
    else
#endif
        pairs_pass_from(&p, 0, rc, dc, &r);
    size_t n_short = r.n_short, n_rt = r.n_rt, n_dl = r.n_dl;
    const int64_t big = INT64_C(9007199254740992); /* 2^53 */
    int exact = rc > -big && rc < big && dc > -big && dc < big;
    const tp_an_i64_span *all[3] = {&r.cpu, &r.gpu, &r.delay};
    for (size_t k = 0; k < 3 && p.n; k++)
        exact &= all[k]->min > -big && all[k]->max < big;
    if (!exact) {
        double rcd = (double)rc, dcd = (double)dc;
        n_short = n_rt = n_dl = 0;
        for (size_t k = 0; k < p.n; k++) { /* compared as the doubles they were */
            double cpu = (double)p.cpu[k];
            n_short += cpu <= rcd && (double)p.gpu[k] < cpu;
            n_rt += cpu > rcd;
            n_dl += (double)p.delay[k] > dcd;
        }
    }
    out->n_short_gpu = n_short, out->n_runtime_outliers = n_rt, out->n_delay_outliers = n_dl;
    dist_of_i64(p.cpu, p.n, &r.cpu, &out->cpu);
    dist_of_i64(p.gpu, p.n, &r.gpu, &out->gpu);
    dist_of_i64(p.delay, p.n, &r.delay, &out->delay);
    tp_an_tmp_put(v, p.cpu);
    tp_an_tmp_put(v, p.gpu);
    tp_an_tmp_put(v, p.delay);
}
