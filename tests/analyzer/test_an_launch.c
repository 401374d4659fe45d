/* test_an_launch: kernel launch statistics, launch-queue length and per-kernel statistics on
 * hand-built ranks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_an_kernels.h"
#include "tp_an_launch.h"
#include "tp_an_queue.h"
#include "tp_an_fixture.h"
#include "tp_test.h"

/* Three launches: a quick one whose kernel starts 7 µs after the call ends, a 60 µs call
 * (runtime outlier) whose kernel started before the call returned (delay clipped to 0), and
 * a 10 µs call for a 2 µs kernel 150 µs later (short kernel, delay outlier). */
static void test_launch_stats(void) {
    fx_model f = fx_new();
    fx_launch(&f, "k1", 0, 5, 12, 100, 7, 1);
    fx_launch(&f, "k2", 200, 60, 230, 40, 7, 2);
    fx_launch(&f, "k3", 400, 10, 560, 2, 7, 3);
    fx_ev(&f, "aten::mm", TP_CAT_CPU_OP, 0, 500, -1, -1); /* no correlation: ignored */
    tp_model_finish(f.m);
    for (int compat = 0; compat < 2; compat++) {
        tp_an_view v;
        tp_an_launch l;
        fx_view(&v, &f, compat);
        tp_an_launch_run(&v, &l);
        CHECK_EQ_U(l.n_pairs, 3);
        CHECK_NEAR(l.cpu.sum, 75000, 0);
        CHECK_NEAR(l.cpu.max, 60000, 0);
        CHECK_NEAR(l.cpu.p50, 10000, 0);
        CHECK_NEAR(l.gpu.sum, 142000, 0);
        CHECK_NEAR(l.delay.min, 0, 0);    /* k2 started before its call returned */
        CHECK_NEAR(l.delay.p50, 7000, 0); /* k1 */
        CHECK_NEAR(l.delay.max, 150000, 0);
        CHECK_NEAR(l.delay.p95, 7000 + 0.9 * 143000, 1e-6); /* numpy linear percentile */
        CHECK_EQ_U(l.n_short_gpu, 1);
        CHECK_EQ_U(l.n_runtime_outliers, 1);
        CHECK_EQ_U(l.n_delay_outliers, 1);
        tp_an_view_free(&v);
    }
    tp_model_close(f.m);
}

static void test_launch_none(void) {
    fx_model f = fx_new();
    fx_ev(&f, "aten::mm", TP_CAT_CPU_OP, 0, 10, -1, -1);
    tp_model_finish(f.m);
    tp_an_view v;
    tp_an_launch l;
    tp_an_view_build(&v, f.m, &f.m->ranks[0], NULL);
    tp_an_launch_run(&v, &l);
    CHECK_EQ_U(l.n_pairs, 0);
    CHECK(isnan(l.cpu.mean));
    tp_an_view_free(&v);
    tp_model_close(f.m);
}

/* Stream 7: launches at 0, 1, 2 µs (1 µs each) and at 3 µs taking 50 µs; kernels start at
 * 10, 20, 30 and 60 µs. Queue: 1 2 3 4 (at 3) 3 (10) 2 (20) 1 (30) 0 (60). The last call
 * brought the queue to its maximum and took 50x the median call: blocked for 49 µs. */
static void test_queue(void) {
    fx_model f = fx_new();
    fx_launch(&f, "k1", 0, 1, 10, 5, 7, 1);
    fx_launch(&f, "k2", 1, 1, 20, 5, 7, 2);
    fx_launch(&f, "k3", 2, 1, 30, 5, 7, 3);
    fx_launch(&f, "k4", 3, 50, 60, 5, 7, 4);
    fx_launch(&f, "other_stream", 100, 1, 110, 5, 9, 5);
    tp_model_finish(f.m);
    tp_an_view v;
    tp_an_queue q;
    tp_an_view_build(&v, f.m, &f.m->ranks[0], NULL);
    tp_an_queue_run(&v, &q);
    CHECK_EQ_U(q.n, 2);
    CHECK_EQ_I(q.s[0].stream, 7);
    CHECK_EQ_U(q.s[0].len.count, 8);
    CHECK_NEAR(q.s[0].len.mean, 16.0 / 8, 1e-12);
    CHECK_NEAR(q.s[0].len.max, 4, 0);
    CHECK_NEAR(q.s[0].len.min, 0, 0);
    CHECK_NEAR(q.s[0].len.p50, 2, 0);
    CHECK_EQ_I(q.s[0].max_len, 4);
    CHECK_EQ_I(q.s[0].at_max_ns, FX_US(7)); /* 4 from 3 µs to 10 µs */
    CHECK_NEAR(q.median_launch_ns, 1000, 0);
    CHECK_EQ_U(q.s[0].n_blocked, 1);
    CHECK_EQ_I(q.s[0].blocked_ns, FX_US(49));
    CHECK_EQ_I(q.s[1].stream, 9);
    CHECK_EQ_U(q.s[1].len.count, 2);
    CHECK_EQ_U(q.s[1].n_blocked, 0); /* a queue of 1 is never "full" */
    tp_an_queue_free(&q);
    tp_an_view_free(&v);
    tp_model_close(f.m);
}

/* Correlation ids past 32 bits (kept in a side table or as a place's high bits): each call
 * pairs with its own kernel only, as with small ids (the groups are then found by the ids,
 * not by their low 32 bits; the last set has ids 26 and 2^32 + 26 next to each other). */
static void test_launch_wide_corr(void) {
    const int64_t base[] = {0, INT64_C(1) << 40, INT64_C(0xFFFFFFF0), -1};
    for (size_t b = 0; b < sizeof base / sizeof *base; b++) {
        fx_model f = fx_new();
        for (int k = 0; k < 40; k++) {
            int64_t id = base[b] >= 0 ? base[b] + k * 3 + 1
                         : k < 20     ? 7 + k
                                      : (INT64_C(1) << 32) + 6 + k;
            fx_launch(&f, "k", k * 100, 5, k * 100 + 10, 2 + k, 7, id);
        }
        tp_model_finish(f.m);
        tp_an_view v;
        tp_an_launch l;
        tp_an_view_build(&v, f.m, &f.m->ranks[0], NULL);
        tp_an_launch_run(&v, &l);
        CHECK_EQ_U(l.n_pairs, 40);
        CHECK_NEAR(l.gpu.sum, 1000.0 * (40 * 2 + 39 * 40 / 2), 0);
        CHECK_NEAR(l.delay.max, 5000, 0);
        tp_an_view_free(&v);
        tp_model_close(f.m);
    }
}

/* Native order and pairing: call A (0 µs) has kernels on streams 7 (5 µs) and 9 (6 µs), call
 * B (2 µs) two kernels on stream 7 (3, 4 µs), call C starts at 5 µs with A's first kernel,
 * which comes first in view order (longer first) but after C in the queue's order (launch
 * steps first at equal times). Stream 7: 1 | 2 3 | 2 | 1 | 2 1 | 0 (view order at 5 µs would
 * give 0 1: mean 1.25); stream 9: 1 0. The same through a window that holds every row (the
 * pairing then sorts the rows by correlation itself). */
static void test_queue_native_order(void) {
    fx_model f = fx_new();
    fx_ev(&f, "cudaLaunchKernel", TP_CAT_CUDA_RUNTIME, 0, 1, -1, 1);
    fx_ev(&f, "kA1", TP_CAT_KERNEL, 5, 1, 7, 1);
    fx_ev(&f, "kA2", TP_CAT_KERNEL, 6, 1, 9, 1);
    fx_ev(&f, "cudaLaunchKernel", TP_CAT_CUDA_RUNTIME, 2, 1, -1, 2);
    fx_ev(&f, "kB1", TP_CAT_KERNEL, 3, 1, 7, 2);
    fx_ev(&f, "kB2", TP_CAT_KERNEL, 4, 1, 7, 2);
    fx_launch(&f, "kC", 5, 0.5, 8, 1, 7, 3);
    tp_model_finish(f.m);
    for (int window = 0; window < 2; window++) {
        tp_an_opts o;
        tp_an_opts_init(&o);
        if (window)
            o.window_lo = FX_US(-1), o.window_hi = FX_US(100);
        tp_an_view v;
        tp_an_view_build(&v, f.m, &f.m->ranks[0], &o);
        tp_an_queue q;
        tp_an_queue_run(&v, &q);
        CHECK_EQ_U(q.n, 2);
        CHECK_NEAR(q.median_launch_ns, 1000, 0);
        CHECK_EQ_I(q.s[0].stream, 7);
        CHECK_EQ_U(q.s[0].len.count, 8);
        CHECK_NEAR(q.s[0].len.mean, 1.5, 1e-12);
        CHECK_NEAR(q.s[0].len.min, 0, 0);
        CHECK_EQ_I(q.s[0].max_len, 3);
        CHECK_EQ_I(q.s[0].at_max_ns, FX_US(1)); /* 3 from 2 µs to 3 µs */
        CHECK_EQ_U(q.s[0].n_blocked, 0);
        CHECK_EQ_I(q.s[1].stream, 9);
        CHECK_EQ_U(q.s[1].len.count, 2);
        CHECK_NEAR(q.s[1].len.mean, 0.5, 1e-12);
        CHECK_EQ_I(q.s[1].at_max_ns, FX_US(6)); /* 1 from 0 to 6 µs */
        tp_an_queue_free(&q);
        tp_an_view_free(&v);
    }
    tp_model_close(f.m);
}

/* The same results whichever width the steps' time order has: runs of steps from wide_from
 * on take the path of 2^32 steps or more (8-byte indices, numpy's port throughout), lowered
 * here to 0 and 1 so that it runs on a small trace (--compat hta: the native pass has no
 * order of steps, and must give the same at any wide_from). Launches 40 µs apart over `streams`
 * streams (1: every step on one, no grouping), each kernel 7 µs after its call or (1 in 5)
 * at the start of the third next launch, on the same stream: ties whose order matters, so
 * the 4-byte path rewrites its stable order into numpy's. Native and HTA views. */
static void test_queue_wide(void) {
    for (int streams = 1; streams <= 3; streams += 2) {
        fx_model f = fx_new();
        uint64_t s = 12345;
        for (int i = 0; i < 300; i++) {
            s = s * 6364136223846793005u + 1442695040888963407u;
            double at = 40.0 * i, kt = (s >> 33) % 5 ? at + 7 : 40.0 * (i + 3);
            fx_launch(&f, "k", at, 1 + (double)((s >> 40) % 9), kt, 3, 7 + i % streams, i + 1);
        }
        tp_model_finish(f.m);
        for (int compat = 0; compat < 2; compat++) {
            tp_an_view v;
            fx_view(&v, &f, compat);
            tp_an_queue q4, q8, q8all;
            tp_an_queue_run(&v, &q4);
            tp_an_queue_run_wide_from(&v, &q8, 1);
            tp_an_queue_run_wide_from(&v, &q8all, 0);
            CHECK_EQ_U(q4.n, (size_t)streams);
            CHECK_EQ_U(q8.n, q4.n);
            CHECK_EQ_U(q8all.n, q4.n);
            CHECK(memcmp(&q4.median_launch_ns, &q8.median_launch_ns, sizeof(double)) == 0);
            for (size_t j = 0; j < q4.n && q8.n == q4.n && q8all.n == q4.n; j++) {
                CHECK(memcmp(&q4.s[j], &q8.s[j], sizeof q4.s[j]) == 0);
                CHECK(memcmp(&q4.s[j], &q8all.s[j], sizeof q4.s[j]) == 0);
                CHECK_EQ_U(q4.s[j].len.count, 600 / (size_t)streams);
            }
            tp_an_queue_free(&q4), tp_an_queue_free(&q8), tp_an_queue_free(&q8all);
            tp_an_view_free(&v);
        }
        tp_model_close(f.m);
    }
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Per-kernel statistics against the definition (the durations sorted, summed one by one in
 * that order) for names whose durations take few values (counted per distinct value), all
 * different ones (sorted), many values turning distinct only late (the count declines
 * midway: the table must come back empty for the next name) and a small name. `filler`
 * CPU ops of as many names come first, so that the kernels' names are numbered above them:
 * 0 gives the dense names' buckets, 40,000 the wide name range's sort by name. */
static void kernel_stats(size_t filler) {
    enum { NAMES = 5 };
    const char *names[NAMES] = {"kFew", "kDistinct", "kLate", "kFew2", "kSmall"};
    const size_t counts[NAMES] = {3000, 1000, 2000, 1500, 40};
    int64_t *durs[NAMES];
    fx_model f = fx_new();
    for (size_t i = 0; i < filler; i++) {
        char name[32];
        snprintf(name, sizeof name, "op%zu", i);
        fx_ev(&f, name, TP_CAT_CPU_OP, (double)i, 0.5, -1, -1);
    }
    uint64_t s = 88172645463325252u;
    double t = 0;
    for (int k = 0; k < NAMES; k++) {
        durs[k] = malloc(counts[k] * sizeof *durs[k]);
        for (size_t i = 0; i < counts[k]; i++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            int64_t d = k == 1   ? (int64_t)(i * 7 + s % 5) + 100
                        : k == 2 ? (i < 1500 ? (int64_t)(s % 3) + 500 : (int64_t)i * 11)
                        : k == 4 ? (int64_t)(s % 1000)
                                 : 1000 + (int64_t)(s % 7) * 1000003;
            durs[k][i] = d;
            fx_ev(&f, names[k], TP_CAT_KERNEL, t, (double)d / 1000.0, 7, -1);
            t += 3000;
        }
    }
    tp_model_finish(f.m);
    tp_an_view v;
    tp_an_view_build(&v, f.m, &f.m->ranks[0], NULL);
    tp_an_kernels out;
    tp_an_kernels_run(&v, &out);
    CHECK_EQ_U(out.n, NAMES);
    for (int k = 0; k < NAMES; k++) {
        size_t n = counts[k];
        qsort(durs[k], n, sizeof *durs[k], cmp_i64);
        int64_t sum = 0;
        for (size_t i = 0; i < n; i++)
            sum += durs[k][i];
        double mean = (double)sum / (double)n, ss = 0;
        for (size_t i = 0; i < n; i++)
            ss += ((double)durs[k][i] - mean) * ((double)durs[k][i] - mean);
        double sd = sqrt(ss / (double)(n - 1));
        const tp_an_kernel_row *row = NULL;
        for (size_t j = 0; j < out.n; j++)
            if (strcmp(tp_model_str(f.m, out.k[j].name), names[k]) == 0)
                row = &out.k[j];
        CHECK(row != NULL);
        if (!row)
            continue;
        CHECK_EQ_U(row->count, n);
        CHECK(row->sum == sum && row->min == durs[k][0] && row->max == durs[k][n - 1]);
        CHECK(memcmp(&row->mean, &mean, sizeof mean) == 0);
        CHECK(memcmp(&row->std, &sd, sizeof sd) == 0);
        free(durs[k]);
    }
    tp_an_kernels_free(&out);
    tp_an_view_free(&v);
    tp_model_close(f.m);
}

static void test_kernel_stats(void) {
    kernel_stats(0);
}

static void test_kernel_stats_wide_names(void) {
    kernel_stats(40000);
}

int main(void) {
    TP_RUN(test_launch_stats);
    TP_RUN(test_launch_none);
    TP_RUN(test_queue);
    TP_RUN(test_queue_native_order);
    TP_RUN(test_kernel_stats);
    TP_RUN(test_kernel_stats_wide_names);
    TP_RUN(test_launch_wide_corr);
    TP_RUN(test_queue_wide);
    return tp_test_summary();
}
