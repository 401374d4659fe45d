/* test_an_compat: the HTA admission rules of tp_an_view (ns rounding, profiler-step
 * trimming, duplicated GPU rows, rank choice) against the exact native mode. */
#include <string.h>

#include "tp_an_kernels.h"
#include "tp_an_queue.h"
#include "tp_an_view.h"
#include "tp_an_fixture.h"
#include "tp_test.h"

static tp_an_opts hta(int last, int no_round) {
    tp_an_opts o;
    tp_an_opts_init(&o);
    o.compat_hta = 1;
    o.include_last_step = last;
    o.no_ns_rounding = no_round;
    return o;
}

static size_t find(const tp_an_view *v, const char *name) {
    for (size_t i = 0; i < v->n; i++)
        if (strcmp(tp_an_view_name(v, i), name) == 0)
            return i;
    return (size_t)-1;
}

static size_t count(const tp_an_view *v, const char *name) {
    size_t c = 0;
    for (size_t i = 0; i < v->n; i++)
        c += strcmp(tp_an_view_name(v, i), name) == 0;
    return c;
}

/* HTA: ts = ceil(ts), end = floor(ts + dur) in µs when any timestamp has a fraction. */
static void test_ns_rounding(void) {
    fx_model f = fx_new();
    fx_launch(&f, "k", 1000, 1, 1000.5, 2.2, 7, 1);
    fx_launch(&f, "tiny", 1005, 1, 1010.9, 0.05, 7, 2);
    f.r->has_fractional_ts = 1;
    tp_model_finish(f.m);
    tp_an_view v;
    tp_an_opts o = hta(0, 0);
    tp_an_view_build(&v, f.m, &f.m->ranks[0], &o);
    size_t k = find(&v, "k"), t = find(&v, "tiny");
    CHECK_EQ_I(tp_an_view_ts(&v, k), FX_US(1001));
    CHECK_EQ_I(tp_an_view_end(&v, k), FX_US(1002));
    CHECK_EQ_I(tp_an_view_ts(&v, t), FX_US(1011));
    CHECK_EQ_I(tp_an_view_dur(&v, t), FX_US(-1)); /* HTA keeps the negative duration */
    tp_an_view_free(&v);
    o = hta(0, 1);
    tp_an_view_build(&v, f.m, &f.m->ranks[0], &o);
    k = find(&v, "k");
    CHECK_EQ_I(tp_an_view_ts(&v, k), FX_US(1000.5));
    CHECK_EQ_I(tp_an_view_end(&v, k), FX_US(1002.7));
    tp_an_view_free(&v);
    tp_an_view_build(&v, f.m, &f.m->ranks[0], NULL); /* native: exact */
    t = find(&v, "tiny");
    CHECK_EQ_I(tp_an_view_dur(&v, t), 50);
    tp_an_view_free(&v);
    tp_model_close(f.m);
}

/* The view's starts in their three forms (tp_an_view.h), each what row_times gives: HTA's
 * rounded µs in 4 bytes from the least, an int64 column when they span 2^32 µs or more, the
 * model's exact starts through the row map (a window's). */
static void test_start_forms(void) {
    for (int late = 0; late < 2; late++) {
        fx_model f = fx_new();
        fx_launch(&f, "k", 1000, 1, 1000.5, 2.2, 7, 1);
        if (late) /* 4.4e9 µs on: past 2^32 µs (71 min) */
            fx_launch(&f, "late", 4.4e9, 1, 4.4e9 + 0.5, 1, 7, 2);
        f.r->has_fractional_ts = 1;
        tp_model_finish(f.m);
        tp_an_view v;
        tp_an_opts o = hta(0, 0);
        tp_an_view_build(&v, f.m, &f.m->ranks[0], &o);
        CHECK(late ? v.ts64 && v.ts64_own && !v.ts32 : v.ts32 && !v.ts64);
        CHECK_EQ_I(tp_an_view_ts(&v, find(&v, "k")), FX_US(1001));
        if (late)
            CHECK_EQ_I(tp_an_view_ts(&v, find(&v, "late")), FX_US(4.4e9 + 1));
        tp_an_view_free(&v);
        tp_an_opts_init(&o);
        o.window_lo = FX_US(1000.5), o.window_hi = FX_US(5e9);
        tp_an_view_build(&v, f.m, &f.m->ranks[0], &o); /* native window: exact, by row */
        CHECK(v.ts_by_row && !v.ts64 && !v.ts32 && v.n == (late ? 3u : 1u));
        CHECK_EQ_I(tp_an_view_ts(&v, find(&v, "k")), FX_US(1000.5));
        if (late)
            CHECK_EQ_I(tp_an_view_ts(&v, find(&v, "late")), FX_US(4.4e9 + 0.5));
        tp_an_view_free(&v);
        tp_model_close(f.m);
    }
}

/* Two profiler steps; k_a launched in step 1, k_b in step 2 (the last), k_orphan has no CPU
 * launch, k_a's correlation is shared by two CPU rows. */
static fx_model stepped(void) {
    fx_model f = fx_new();
    fx_ev(&f, "ProfilerStep#1", TP_CAT_USER_ANNOTATION, 0, 100, -1, -1);
    fx_ev(&f, "ProfilerStep#2", TP_CAT_USER_ANNOTATION, 100, 100, -1, -1);
    fx_launch(&f, "k_a", 10, 2, 20, 10, 7, 1);
    fx_ev(&f, "cuLaunchKernel", TP_CAT_CUDA_DRIVER, 11, 1, -1, 1);
    fx_launch(&f, "k_b", 110, 2, 120, 10, 7, 2);
    fx_ev(&f, "k_orphan", TP_CAT_KERNEL, 50, 5, 7, 99);
    tp_model_finish(f.m);
    return f;
}

static void test_trim_default(void) {
    fx_model f = stepped();
    tp_an_view v;
    tp_an_opts o = hta(0, 0);
    tp_an_view_build(&v, f.m, &f.m->ranks[0], &o);
    CHECK_EQ_I(v.trimmed, 1);
    CHECK_EQ_U(count(&v, "ProfilerStep#1"), 1);
    CHECK_EQ_U(count(&v, "ProfilerStep#2"), 0); /* starts at the last step's start */
    CHECK_EQ_U(count(&v, "k_a"), 2);            /* once per kept CPU row with its corr */
    CHECK_EQ_U(count(&v, "k_b"), 0);
    CHECK_EQ_U(count(&v, "k_orphan"), 0);
    CHECK_EQ_U(v.n_gpu, 2);
    tp_an_kernels k;
    tp_an_kernels_run(&v, &k);
    CHECK_EQ_U(k.n, 1);
    CHECK_EQ_U(k.k[0].count, 2);
    tp_an_kernels_free(&k);
    tp_an_view_free(&v);
    tp_model_close(f.m);
}

static void test_trim_last_step(void) {
    fx_model f = stepped();
    tp_an_view v;
    tp_an_opts o = hta(1, 0);
    tp_an_view_build(&v, f.m, &f.m->ranks[0], &o);
    CHECK_EQ_U(count(&v, "ProfilerStep#2"), 1);
    CHECK_EQ_U(count(&v, "k_b"), 1);
    CHECK_EQ_U(count(&v, "k_orphan"), 0); /* uncorrelated GPU rows always go */
    tp_an_view_free(&v);
    tp_an_view_build(&v, f.m, &f.m->ranks[0], NULL); /* native: nothing trimmed */
    CHECK_EQ_I(v.trimmed, 0);
    CHECK_EQ_U(count(&v, "k_orphan"), 1);
    CHECK_EQ_U(count(&v, "k_a"), 1);
    CHECK_EQ_U(count(&v, "ProfilerStep#2"), 1);
    tp_an_view_free(&v);
    tp_model_close(f.m);
}

/* A kernel whose correlation 300 kept CPU rows share (one copy per row: more than a byte of
 * the view's per-row counts holds, so the index is asked) and one that 254 share, with and
 * without the correlation index's directory (a report drops it: tp_model_drop_corr_dir). */
static void test_trim_many_partners(void) {
    for (int drop = 0; drop < 2; drop++) {
        fx_model f = fx_new();
        fx_ev(&f, "ProfilerStep#1", TP_CAT_USER_ANNOTATION, 0, 1000, -1, -1);
        fx_ev(&f, "ProfilerStep#2", TP_CAT_USER_ANNOTATION, 1000, 100, -1, -1);
        fx_launch(&f, "k_many", 10, 1, 20, 10, 7, 1);
        fx_launch(&f, "k_254", 30, 1, 40, 10, 7, 2);
        for (int i = 0; i < 299; i++)
            fx_ev(&f, "cuLaunchKernel", TP_CAT_CUDA_DRIVER, 50 + i, 1, -1, 1);
        for (int i = 0; i < 253; i++)
            fx_ev(&f, "cuLaunchKernel", TP_CAT_CUDA_DRIVER, 400 + i, 1, -1, 2);
        tp_model_finish(f.m);
        if (drop)
            tp_model_drop_corr_dir(f.m);
        tp_an_view v;
        tp_an_opts o = hta(0, 0);
        tp_an_view_build(&v, f.m, &f.m->ranks[0], &o);
        CHECK_EQ_I(v.trimmed, 1);
        CHECK_EQ_U(count(&v, "k_many"), 300);
        CHECK_EQ_U(count(&v, "k_254"), 254);
        tp_an_view_free(&v);
        tp_model_close(f.m);
    }
}

static void test_one_step_no_trim(void) {
    fx_model f = fx_new();
    fx_ev(&f, "ProfilerStep#7", TP_CAT_USER_ANNOTATION, 0, 100, -1, -1);
    fx_ev(&f, "k_orphan", TP_CAT_KERNEL, 50, 5, 7, 99);
    tp_model_finish(f.m);
    CHECK_EQ_U(tp_an_profiler_step_names(f.m), 1);
    tp_an_view v;
    tp_an_opts o = hta(0, 0);
    tp_an_view_build(&v, f.m, &f.m->ranks[0], &o);
    CHECK_EQ_I(v.trimmed, 0);
    CHECK_EQ_U(count(&v, "k_orphan"), 1);
    tp_an_view_free(&v);
    tp_model_close(f.m);
}

static void test_rank_choice(void) {
    fx_model f = fx_new();
    fx_ev(&f, "k", TP_CAT_KERNEL, 0, 1, 7, 1);
    f.r->rank = 3;
    f.r->rank_hta = 0; /* HTA found no "rank": <n> text */
    tp_model_finish(f.m);
    tp_an_view v;
    tp_an_opts o = hta(0, 0);
    tp_an_view_build(&v, f.m, &f.m->ranks[0], &o);
    CHECK_EQ_I(v.rank, 0);
    tp_an_view_free(&v);
    tp_an_view_build(&v, f.m, &f.m->ranks[0], NULL);
    CHECK_EQ_I(v.rank, 3);
    tp_an_view_free(&v);
    tp_model_close(f.m);
}

/* Equal timestamps: HTA's unstable numpy sort orders launch (+1) and GPU start (-1) steps
 * that share a µs by the input (file) order, which changes the queue-length values. The
 * launches are written out of time order; the expected numbers are numpy 1.24.2's. */
static void test_file_order_ties(void) {
    static const double L[] = {0, 1, 1, 2, 2, 3, 4, 4, 5, 5}, K[] = {1, 2, 3, 4, 4, 5, 5, 6, 6, 8};
    static const int perm[] = {0, 1, 9, 6, 4, 7, 8, 5, 3, 2};
    fx_model f = fx_new();
    for (int i = 0; i < 10; i++)
        fx_ev(&f, "cudaLaunchKernel", TP_CAT_CUDA_RUNTIME, L[perm[i]], 0.5, -1, perm[i] + 1);
    for (int i = 0; i < 10; i++)
        fx_ev(&f, "k", TP_CAT_KERNEL, K[i], 0.5, 7, i + 1);
    tp_model_finish(f.m);
    tp_an_view v;
    tp_an_queue q;
    tp_an_opts o = hta(0, 0);
    tp_an_view_build(&v, f.m, &f.m->ranks[0], &o);
    tp_an_queue_run(&v, &q);
    CHECK_EQ_U(q.n, 1);
    CHECK_EQ_U(q.s[0].len.count, 20);
    CHECK_NEAR(q.s[0].len.mean, 2.0, 1e-12);
    CHECK_NEAR(q.s[0].len.std, 1.1697953037312037, 1e-12);
    tp_an_queue_free(&q);
    tp_an_view_free(&v);
    /* native: time order, launches first on equal times (then view order), whatever the
     * file order: 1 | 2 3 2 | 3 4 3 | 4 3 | 4 5 4 3 | 4 5 4 3 | 2 1 | 0 at 0, 1, ..., 8 µs */
    tp_an_view_build(&v, f.m, &f.m->ranks[0], NULL);
    tp_an_queue_run(&v, &q);
    CHECK_NEAR(q.s[0].len.mean, 3.0, 1e-12);
    CHECK_NEAR(q.s[0].len.std, 1.3377121081198773, 1e-12); /* sqrt(34 / 19) */
    tp_an_queue_free(&q);
    tp_an_view_free(&v);
    tp_model_close(f.m);
}

/* Native views of the model's rows in order (link_same: classes of the correlation index's
 * rows only; classify_same: kinds and GPU order from the category index) against the same rows
 * through a window that holds them all (link_rows, classify, order_gpu's sort), column by
 * column: kernels, copies, memsets, a kernel-named CPU row and a kernel with no stream, Kineto's
 * sync rows, a duration and correlation ids past 32 bits (side tables, high halves), two GPU
 * rows starting together (no gpu_order) or not. */
static void test_same_rows_paths(void) {
    for (int variant = 0; variant < 8; variant++) {
        int wide_dur = variant & 1, wide_corr = variant >> 1 & 1, tie = variant >> 2 & 1;
        fx_model f = fx_new();
        int64_t cb = wide_corr ? (INT64_C(1) << 33) : 0;
        for (int k = 0; k < 30; k++) {
            double t = k * 50.0;
            int64_t id = k == 7 && wide_corr ? -5 : cb + k + 1;
            fx_launch(&f, k % 3 ? "gemm_kernel" : "ncclKernel_AllReduce", t, 4, t + 10, 3,
                      7 + k % 2, id);
            if (k % 5 == 0)
                fx_copy(&f, "Memcpy HtoD", t + 20, 2, 4096, 1, 1, id);
            if (k % 7 == 0)
                fx_copy(&f, "Memset (Device)", t + 30, 1, 512, 0, 2, cb + 1000 + k);
            if (k % 4 == 0) /* launches sharing an id: a run of four rows */
                fx_ev(&f, "cudaLaunchKernel", TP_CAT_CUDA_RUNTIME, t + 1, 1, -1, id);
        }
        fx_ev(&f, "gemm_kernel", TP_CAT_KERNEL, 5, 1, -1, 3);       /* no stream: not a GPU row */
        fx_ev(&f, "Event Sync", TP_CAT_CUDA_RUNTIME, 12, 1, 7, -1); /* a sync: GPU class */
        fx_ev(&f, "Context Sync", TP_CAT_CUDA_RUNTIME, 62, 1, -1, 2);
        fx_ev(&f, "aten::mm", TP_CAT_CPU_OP, 0, 2000, -1, -1);
        fx_ev(&f, "long_kernel", TP_CAT_KERNEL, 1600, wide_dur ? 5e6 : 5, 7, cb + 500);
        fx_ev(&f, "cudaLaunchKernel", TP_CAT_CUDA_RUNTIME, 1590, 2, -1, cb + 500);
        fx_ev(&f, "cudaLaunchKernel", TP_CAT_CUDA_RUNTIME, 1700, 1, -1, cb + 700); /* two */
        fx_ev(&f, "cudaLaunchKernel", TP_CAT_CUDA_RUNTIME, 1702, 1, -1, cb + 700); /* CPU rows */
        if (tie)
            fx_ev(&f, "gemm_kernel", TP_CAT_KERNEL, 10, 1, 9, cb + 600); /* k0's start */
        tp_model_finish(f.m);
        tp_an_view a, b;
        tp_an_opts o;
        tp_an_opts_init(&o);
        tp_an_view_build(&a, f.m, &f.m->ranks[0], &o);
        o.window_lo = INT64_MIN / 4, o.window_hi = INT64_MAX / 4;
        tp_an_view_build(&b, f.m, &f.m->ranks[0], &o);
        CHECK(tp_an_view_ts_model(&a) && !tp_an_view_ts_model(&b)); /* the two paths */
        CHECK_EQ_U(a.n, b.n);
        CHECK_EQ_U(a.n_gpu, b.n_gpu);
        CHECK_EQ_U(a.gpu_kinds_absent, b.gpu_kinds_absent);
        CHECK_EQ_U(a.gpu_order != NULL, !tie);
        CHECK_EQ_U(b.gpu_order != NULL, !tie);
        CHECK_EQ_U(a.dur_wide.n, (size_t)wide_dur); /* the 5 s kernel's: past 32 bits */
        CHECK_EQ_U(b.dur_wide.n, (size_t)wide_dur);
        size_t bad = 0, linked = 0;
        for (size_t i = 0; i < a.n; i++) {
            bad += tp_an_view_row(&a, i) != tp_an_view_row(&b, i) ||
                   tp_an_view_ts(&a, i) != tp_an_view_ts(&b, i) ||
                   tp_an_view_end(&a, i) != tp_an_view_end(&b, i);
            bad += tp_an_view_gpu(&a, i) != tp_an_view_gpu(&b, i) ||
                   tp_an_view_ktype(&a, i) != tp_an_view_ktype(&b, i) ||
                   tp_an_view_link(&a, i) != tp_an_view_link(&b, i);
            bad += tp_an_view_linked(&a, i) != tp_an_view_linked(&b, i);
            linked += tp_an_view_link(&a, i) >= 0;
        }
        for (size_t k = 0; a.gpu_order && b.gpu_order && k < a.n_gpu; k++)
            bad += a.gpu_order[k] != b.gpu_order[k];
        CHECK_EQ_U(bad, 0);
        CHECK(linked > 60 && a.n_gpu > 40);
        tp_an_view_free(&a);
        tp_an_view_free(&b);
        tp_model_close(f.m);
    }
}

/* A compat view's durations in exact time (a trace in whole µs) through its own columns (a
 * window holding every row): dur8's codes, the long ones and those not whole µs in its side
 * table; with more of those than an eighth of the rows, a dur32 column instead. Every
 * duration is the model's either way. */
static void test_dur_codes(void) {
    for (int many = 0; many < 2; many++) {
        fx_model f = fx_new();
        for (int k = 0; k < 64; k++) {
            double dur = k % 16 == 0 ? 300 : k == 1 ? 5e6 : k % 8 == 2 ? 0 : k % 4;
            if (k == 5 || (many && k % 4 == 3))
                dur = 2.5; /* not whole µs */
            fx_ev(&f, "aten::mm", TP_CAT_CPU_OP, k * 10.0, dur, -1, -1);
        }
        tp_model_finish(f.m);
        tp_an_view v;
        tp_an_opts o = hta(0, 0);
        o.window_lo = INT64_MIN / 4, o.window_hi = INT64_MAX / 4;
        tp_an_view_build(&v, f.m, &f.m->ranks[0], &o);
        CHECK_EQ_U(v.n, 64);
        CHECK_EQ_U(v.dur8 != NULL, !many);
        CHECK_EQ_U(v.dur_wide.n, many ? 1 : 6); /* dur32: the 5 s row only */
        const tp_events *ev = &f.m->ranks[0].ev;
        size_t bad = 0;
        for (size_t i = 0; i < v.n; i++)
            bad += tp_an_view_dur(&v, i) != tp_ev_dur(ev, tp_an_view_row(&v, i));
        CHECK_EQ_U(bad, 0);
        tp_an_view_free(&v);
        tp_model_close(f.m);
    }
}

int main(void) {
    TP_RUN(test_dur_codes);
    TP_RUN(test_same_rows_paths);
    TP_RUN(test_file_order_ties);
    TP_RUN(test_ns_rounding);
    TP_RUN(test_start_forms);
    TP_RUN(test_trim_default);
    TP_RUN(test_trim_last_step);
    TP_RUN(test_trim_many_partners);
    TP_RUN(test_one_step_no_trim);
    TP_RUN(test_rank_choice);
    return tp_test_summary();
}
