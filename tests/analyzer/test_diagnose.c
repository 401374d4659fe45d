/* test_diagnose: the findings of tp_diagnose on hand-built ranks, with exact numbers.
 *
 * Each test builds a rank that has one problem (plus the harmless rest of a step), and
 * checks the full list of findings: ids, order, severities and the metrics behind them. */
#include "tp_diagnose.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

#include "tp_an_fixture.h"
#include "tp_an_memuse.h"
#include "tp_load.h"
#include "tp_record.h"
#include "tp_report.h"
#include "tp_test.h"

#define MiB (1024 * 1024)

static void run(fx_model *f, int compat, tp_diagnosis *d) {
    tp_an_view v;
    fx_view(&v, f, compat);
    tp_diagnose_run(&v, d);
    tp_an_view_free(&v);
}

#define METRIC(d, id, key) tp_finding_metric(tp_diagnosis_find((d), (id)), (key))

/* Three 1 ms steps: 600 µs in "dataloader wait", a 10 µs launch, then a 390 µs kernel.
 * Idle 1830 µs of 3000, of which 1800 inside the data range: input-bound at 0.6. */
static void test_input_bound(void) {
    fx_model f = fx_new();
    for (int s = 0; s < 3; s++) {
        double t = 1000.0 * s;
        fx_ev(&f, "step", TP_CAT_USER_ANNOTATION, t, 1000, -1, -1);
        fx_ev(&f, "dataloader wait", TP_CAT_USER_ANNOTATION, t, 600, -1, -1);
        fx_launch(&f, "conv_fwd", t + 600, 10, t + 610, 390, 1, s + 1);
    }
    tp_model_finish(f.m);
    for (int compat = 0; compat < 2; compat++) {
        tp_diagnosis d;
        run(&f, compat, &d);
        CHECK_EQ_U(d.n, 1);
        CHECK_EQ_U(d.n_steps, 3);
        CHECK_EQ_I(d.window_ns, 3000000);
        CHECK_NEAR(d.utilization, 0.39, 1e-12);
        CHECK_STR(d.f[0].id, "input-bound");
        CHECK_NEAR(d.f[0].severity, 0.6, 1e-12);
        CHECK_STR(tp_diag_level(d.f[0].severity), "high");
        CHECK_NEAR(METRIC(&d, "input-bound", "idle_ns"), 1830000, 0);
        CHECK_NEAR(METRIC(&d, "input-bound", "data_wait_idle_ns"), 1800000, 0);
        CHECK_NEAR(METRIC(&d, "input-bound", "range_ns"), 1800000, 0);
        CHECK_STR(d.f[0].source, "range 'dataloader wait' in 'step'");
        CHECK(strstr(d.f[0].evidence, "device idle 61.0% of step time") != NULL);
        CHECK(strstr(d.f[0].evidence, "'dataloader wait' range takes 60.0%") != NULL);
        tp_diagnose_free(&d);
    }
    tp_model_close(f.m);
}

/* A native trace whose only step is the first (an OOM in step 1): warm-up, so the same
 * input-bound step is not judged on time shares; the failure still is. A Kineto profile's
 * single ProfilerStep comes after the profiler's own warm-up and is judged. */
static void test_warmup_only(void) {
    for (int native = 0; native < 2; native++) {
        fx_model f = fx_new();
        f.r->native = native;
        fx_ev(&f, "step", TP_CAT_USER_ANNOTATION, 0, 1000, -1, -1);
        fx_ev(&f, "dataloader wait", TP_CAT_USER_ANNOTATION, 0, 600, -1, -1);
        fx_launch(&f, "conv_fwd", 600, 10, 610, 390, 1, 1);
        tp_memev_row row = {0};
        row.ts = FX_US(700), row.kind = TP_MEMEV_ALLOC_FAIL, row.bytes = 4 << 20;
        row.device = 0, row.total_allocated = row.total_reserved = -1;
        tp_memev_push(&f.r->mem, &row);
        tp_model_finish(f.m);
        tp_diagnosis d;
        run(&f, 0, &d);
        CHECK_EQ_U(d.n_steps, 1);
        CHECK_EQ_I(d.warmup_only, native);
        CHECK(tp_diagnosis_find(&d, "oom") != NULL);
        CHECK((tp_diagnosis_find(&d, "input-bound") != NULL) == !native);
        tp_diagnose_free(&d);
        tp_model_close(f.m);
    }
}

/* Four 1 ms steps; each launches a 690 µs kernel and then waits for it in
 * cudaStreamSynchronize inside "read loss": one sync per step, the host blocked 695 µs per
 * step. */
static void test_sync_stall(void) {
    fx_model f = fx_new();
    for (int s = 0; s < 4; s++) {
        double t = 1000.0 * s;
        fx_ev(&f, "ProfilerStep#1", TP_CAT_USER_ANNOTATION, t, 1000, -1, -1);
        fx_ev(&f, "step", TP_CAT_USER_ANNOTATION, t, 999, -1, -1); /* nested: the same step */
        fx_launch(&f, "gemm", t, 5, t + 10, 690, 1, 10 * s + 1);
        fx_ev(&f, "read loss", TP_CAT_USER_ANNOTATION, t + 4, 697, -1, -1);
        fx_ev(&f, "cudaStreamSynchronize", TP_CAT_CUDA_RUNTIME, t + 5, 695, -1, 10 * s + 2);
    }
    tp_model_finish(f.m);
    tp_diagnosis d;
    run(&f, 0, &d);
    CHECK_EQ_U(d.n, 1);
    CHECK_STR(d.f[0].id, "sync-stall");
    CHECK_NEAR(d.f[0].severity, 2780.0 / 4000.0, 1e-12);
    CHECK_NEAR(METRIC(&d, "sync-stall", "syncs"), 4, 0);
    CHECK_NEAR(METRIC(&d, "sync-stall", "syncs_per_step"), 1.0, 0);
    CHECK_NEAR(METRIC(&d, "sync-stall", "host_blocked_ns"), 2780000, 0);
    /* gaps after each sync: 3 x 310 µs between steps + 300 µs after the last kernel */
    CHECK_NEAR(METRIC(&d, "sync-stall", "drain_idle_ns"), 1230000, 0);
    CHECK(strncmp(d.f[0].source, "range 'read loss' in 'step' (100% of it)", 40) == 0);
    CHECK(strstr(d.f[0].title, "every step") != NULL);
    tp_diagnose_free(&d);
    tp_model_close(f.m);
}

/* test_sync_stall's steps with a 100 µs "dataloader wait" inside each gap after a sync: the
 * drain leaves data loading out (3 x 210 + 200 µs), in the native and the HTA view. */
static void test_sync_drain_data(void) {
    fx_model f = fx_new();
    for (int s = 0; s < 4; s++) {
        double t = 1000.0 * s;
        fx_ev(&f, "ProfilerStep#1", TP_CAT_USER_ANNOTATION, t, 1000, -1, -1);
        fx_launch(&f, "gemm", t, 5, t + 10, 690, 1, 10 * s + 1);
        fx_ev(&f, "read loss", TP_CAT_USER_ANNOTATION, t + 4, 697, -1, -1);
        fx_ev(&f, "cudaStreamSynchronize", TP_CAT_CUDA_RUNTIME, t + 5, 695, -1, 10 * s + 2);
        fx_ev(&f, "dataloader wait", TP_CAT_USER_ANNOTATION, t + 800, 100, -1, -1);
    }
    tp_model_finish(f.m);
    for (int compat = 0; compat < 2; compat++) {
        tp_diagnosis d;
        run(&f, compat, &d);
        CHECK(tp_diagnosis_find(&d, "sync-stall") != NULL);
        CHECK_NEAR(METRIC(&d, "sync-stall", "drain_idle_ns"), 830000, 0);
        tp_diagnose_free(&d);
    }
    tp_model_close(f.m);
}

/* No steps (window = GPU span, 10..2000 µs). A pageable H2D copy of 3 MB (300 µs on the
 * device, 10 GB/s) behind a 400 µs cudaMemcpyAsync call; a pinned one of 1 MB at 20 GB/s. */
static void test_pageable(void) {
    fx_model f = fx_new();
    fx_launch(&f, "k1", 0, 2, 10, 990, 1, 1);
    fx_ev(&f, "host-to-device copy", TP_CAT_USER_ANNOTATION, 999, 403, -1, -1);
    fx_ev(&f, "cudaMemcpyAsync", TP_CAT_CUDA_RUNTIME, 1000, 400, -1, 10);
    fx_copy(&f, "Memcpy HtoD (Pageable -> Device)", 1100, 300, 3000000, TP_COPY_HTOD,
            TP_MEM_PAGEABLE, 10);
    fx_ev(&f, "cudaMemcpyAsync", TP_CAT_CUDA_RUNTIME, 1400, 2, -1, 11);
    fx_copy(&f, "Memcpy HtoD (Pinned -> Device)", 1410, 50, 1000000, TP_COPY_HTOD, TP_MEM_PINNED,
            11);
    fx_launch(&f, "k2", 1402, 2, 1460, 540, 1, 12);
    tp_model_finish(f.m);
    tp_diagnosis d;
    run(&f, 0, &d);
    CHECK_EQ_U(d.n, 2);
    CHECK_EQ_U(d.n_steps, 0);
    CHECK_EQ_I(d.window_ns, 1990000);
    CHECK_STR(d.f[0].id, "pageable-h2d");
    CHECK_NEAR(d.f[0].severity, 400.0 / 1990.0, 1e-12);
    CHECK_NEAR(METRIC(&d, "pageable-h2d", "copies"), 1, 0);
    CHECK_NEAR(METRIC(&d, "pageable-h2d", "bytes"), 3000000, 0);
    CHECK_NEAR(METRIC(&d, "pageable-h2d", "device_ns"), 300000, 0);
    CHECK_NEAR(METRIC(&d, "pageable-h2d", "host_blocked_ns"), 400000, 0);
    CHECK_NEAR(METRIC(&d, "pageable-h2d", "gbps"), 10.0, 1e-12);
    CHECK_NEAR(METRIC(&d, "pageable-h2d", "pinned_gbps"), 20.0, 1e-12);
    CHECK(strstr(d.f[0].evidence, "the same bytes would take 150.00 \u00b5s") != NULL);
    CHECK(strncmp(d.f[0].source, "range 'host-to-device copy' (100% of it)", 40) == 0);
    /* neither copy ran next to a kernel: 350 µs of copies alone */
    CHECK_STR(d.f[1].id, "copy-not-overlapped");
    CHECK_NEAR(d.f[1].severity, 350.0 / 1990.0, 1e-12);
    CHECK_NEAR(METRIC(&d, "copy-not-overlapped", "not_overlapped_ns"), 350000, 0);
    CHECK(tp_diagnosis_find(&d, "sync-h2d") == NULL); /* both were async */
    tp_diagnose_free(&d);
    tp_model_close(f.m);
}

/* A synchronous cudaMemcpy from pinned memory (200 µs call, 190 µs copy) between kernels. */
static void test_sync_h2d(void) {
    fx_model f = fx_new();
    fx_launch(&f, "k1", 0, 5, 5, 1000, 1, 1);
    fx_ev(&f, "cudaMemcpy", TP_CAT_CUDA_RUNTIME, 1005, 200, -1, 2);
    fx_copy(&f, "Memcpy HtoD (Pinned -> Device)", 1010, 190, 1900000, TP_COPY_HTOD, TP_MEM_PINNED,
            2);
    fx_launch(&f, "k2", 1205, 5, 1210, 795, 1, 3);
    tp_model_finish(f.m);
    tp_diagnosis d;
    run(&f, 0, &d);
    CHECK_EQ_U(d.n, 2);
    CHECK_STR(d.f[0].id, "sync-h2d");
    CHECK_NEAR(d.f[0].severity, 0.1, 1e-12);
    CHECK_NEAR(METRIC(&d, "sync-h2d", "bytes"), 1900000, 0);
    CHECK_NEAR(METRIC(&d, "sync-h2d", "host_blocked_ns"), 200000, 0);
    CHECK(strstr(d.f[0].evidence, "in cudaMemcpy") != NULL);
    CHECK_STR(d.f[1].id, "copy-not-overlapped");
    CHECK_NEAR(d.f[1].severity, 0.095, 1e-12);
    tp_diagnose_free(&d);
    tp_model_close(f.m);
}

/* Kernels (stream 1) and copies (stream 7) laid out so that copy-not-overlapped's "copies less
 * kernels" meets every case of the context's kernels set, which keeps only the kernel runs
 * that overlap a copy when the rows come in time order: a copy inside a run of two touching
 * kernels, copies over a run's start or end, one over two runs, one that starts before a run
 * opens and ends inside it, two in one run, a copy touching a run's end, runs that overlap no
 * copy (dropped), a copy after a run closed. Added in time order and in reverse: the HTA
 * view visits the rows in load order, so the reversed rank takes the context's out-of-order
 * path (every kernel merged again). The expected time alone is counted microsecond by
 * microsecond. */
static void test_copy_overlap(void) {
    static const int kern[][2] = {{0, 100},     {100, 150},   {180, 200},   {300, 400},
                                  {600, 700},   {900, 1000},  {1100, 1150}, {1200, 1300},
                                  {1400, 1600}, {1700, 1710}, {1800, 1810}};
    static const int copy[][2] = {{50, 120},    {250, 350},   {420, 580},
                                  {650, 950},   {1000, 1100}, {1420, 1440},
                                  {1500, 1520}, {1720, 1730}, {1750, 1760}};
    size_t nk = sizeof kern / sizeof *kern, nc = sizeof copy / sizeof *copy;
    int64_t alone = 0, total = 0;
    for (int t = 0; t < 1810; t++) {
        int in_k = 0, in_c = 0;
        for (size_t k = 0; k < nk; k++)
            in_k |= kern[k][0] <= t && t < kern[k][1];
        for (size_t c = 0; c < nc; c++)
            in_c |= copy[c][0] <= t && t < copy[c][1];
        total += in_c;
        alone += in_c && !in_k;
    }
    CHECK_EQ_I(alone, 50 + 160 + 200 + 100 + 10 + 10); /* the layout is what it says */
    for (int reversed = 0; reversed < 2; reversed++)
        for (int compat = 0; compat < 2; compat++) {
            fx_model f = fx_new();
            for (size_t x = 0; x < nk + nc; x++) {
                size_t y = reversed ? nk + nc - 1 - x : x;
                if (y < nk)
                    fx_ev(&f, "k", TP_CAT_KERNEL, kern[y][0], kern[y][1] - kern[y][0], 1, -1);
                else
                    fx_copy(&f, "Memcpy HtoD (Pinned -> Device)", copy[y - nk][0],
                            copy[y - nk][1] - copy[y - nk][0], 1000, TP_COPY_HTOD, TP_MEM_PINNED,
                            -1);
            }
            tp_model_finish(f.m);
            tp_diagnosis d;
            run(&f, compat, &d);
            CHECK_EQ_I(d.window_ns, 1810000);
            CHECK_NEAR(METRIC(&d, "copy-not-overlapped", "not_overlapped_ns"), alone * 1000.0, 0);
            CHECK_NEAR(METRIC(&d, "copy-not-overlapped", "copy_ns"), total * 1000.0, 0);
            tp_diagnose_free(&d);
            tp_model_close(f.m);
        }
}

/* Two 100 µs steps of 20 launches each: 1 µs calls every 5 µs for 0.5 µs kernels. */
static void test_launch_bound(void) {
    fx_model f = fx_new();
    int corr = 1;
    for (int s = 0; s < 2; s++) {
        double t = 100.0 * s;
        fx_ev(&f, "step", TP_CAT_USER_ANNOTATION, t, 100, -1, -1);
        for (int k = 0; k < 20; k++, corr++)
            fx_launch(&f, "tiny", t + 5 * k, 1, t + 5 * k + 1.5, 0.5, 1, corr);
    }
    tp_model_finish(f.m);
    tp_diagnosis d;
    run(&f, 0, &d);
    CHECK_EQ_U(d.n, 1); /* low-utilization is not repeated: launch-bound owns that idle */
    CHECK_STR(d.f[0].id, "launch-bound");
    CHECK_NEAR(d.f[0].severity, 0.9, 1e-12);
    CHECK_NEAR(d.utilization, 0.1, 1e-12);
    CHECK_NEAR(METRIC(&d, "launch-bound", "kernels"), 40, 0);
    CHECK_NEAR(METRIC(&d, "launch-bound", "short_kernels"), 40, 0);
    CHECK_NEAR(METRIC(&d, "launch-bound", "median_kernel_ns"), 500, 0);
    CHECK_NEAR(METRIC(&d, "launch-bound", "host_ns_per_launch"), 5000, 0);
    CHECK_NEAR(METRIC(&d, "launch-bound", "launch_idle_ns"), 180000, 0);
    tp_diagnose_free(&d);
    tp_model_close(f.m);
}

/* Back-to-back 998 µs kernels: nothing to report. */
static void test_healthy(void) {
    fx_model f = fx_new();
    for (int s = 0; s < 3; s++) {
        fx_ev(&f, "step", TP_CAT_USER_ANNOTATION, 1000.0 * s, 1000, -1, -1);
        fx_launch(&f, "gemm", 1000.0 * s, 1, 1000.0 * s + 2, 998, 1, s + 1);
    }
    tp_model_finish(f.m);
    tp_diagnosis d;
    run(&f, 0, &d);
    CHECK_EQ_U(d.n, 0);
    CHECK_NEAR(d.utilization, 0.998, 1e-12);
    tp_diagnose_free(&d);
    tp_model_close(f.m);
}

static void alloc_fail(fx_model *f, int64_t req, int64_t reserved, int64_t free_b, int64_t big) {
    tp_memev_row row = {0};
    row.ts = 5000;
    row.kind = TP_MEMEV_ALLOC_FAIL;
    row.bytes = req;
    row.total_reserved = reserved;
    row.total_allocated = reserved - free_b;
    row.largest_free = big;
    row.device = 0;
    tp_memev_push(&f->r->mem, &row);
}

/* The trainer's own numbers: 9.38 MiB requested, 142 MiB reserved, 13.38 MiB free, largest
 * block 5.93 MiB -> fragmentation; 1 MiB free -> a true OOM. */
static void test_oom(void) {
    static const struct {
        int64_t req, res, fr, big;
        const char *id;
    } c[] = {{9834496, 148897792, 14025216, 6219776, "fragmentation-oom"},
             {9834496, 148897792, 1 * MiB, 1 * MiB, "oom"},
             {4 * MiB, 64 * MiB, 8 * MiB, -1, "fragmentation-oom"}, /* largest unknown */
             {4 * MiB, 64 * MiB, 8 * MiB, 4 * MiB, "oom"}, /* a block fits: not fragmentation */
             {4 * MiB, 0, 0, 0, "oom"}}; /* CUPTI's failed cudaMalloc: allocator state unknown */
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        fx_model f = fx_new();
        alloc_fail(&f, c[i].req, c[i].res, c[i].fr, c[i].big);
        tp_model_finish(f.m);
        tp_diagnosis d;
        run(&f, 0, &d);
        CHECK_EQ_U(d.n, 1);
        CHECK_STR(d.f[0].id, c[i].id);
        CHECK_NEAR(d.f[0].severity, 1.0, 0);
        CHECK_NEAR(METRIC(&d, c[i].id, "requested_bytes"), (double)c[i].req, 0);
        int known = c[i].res > 0;
        CHECK_NEAR(METRIC(&d, c[i].id, "reserved_bytes"), known ? (double)c[i].res : -1, 0);
        CHECK_NEAR(METRIC(&d, c[i].id, "free_bytes"), known ? (double)c[i].fr : -1, 0);
        CHECK_NEAR(METRIC(&d, c[i].id, "largest_free_bytes"), known ? (double)c[i].big : -1, 0);
        CHECK_NEAR(METRIC(&d, c[i].id, "failures"), 1, 0);
        if (i == 0)
            CHECK(strstr(d.f[0].evidence, "allocation of 9.38 MiB (9834496 bytes) failed: "
                                          "142.00 MiB reserved, 13.38 MiB free in cached "
                                          "blocks, largest free block 5.93 MiB") != NULL);
        tp_diagnose_free(&d);
        tp_model_close(f.m);
    }
}

/* Kineto-style memory events: allocated rises 10 MiB every step for 5 steps. The steps are
 * ranges of each kind a step can be (annotation, op, Python function), so that the memory
 * analysis finds them from each category's rows (native view) as from every row (HTA's). */
static void memory_growth(int compat);

static void test_memory_growth(void) {
    for (int compat = 0; compat < 2; compat++)
        memory_growth(compat);
}

static void memory_growth(int compat) {
    static const tp_cat step_cat[] = {TP_CAT_USER_ANNOTATION, TP_CAT_CPU_OP,
                                      TP_CAT_PYTHON_FUNCTION};
    fx_model f = fx_new();
    for (int s = 0; s < 5; s++) {
        fx_ev(&f, "ProfilerStep#1", step_cat[s % 3], 100.0 * s, 100, -1, -1);
        fx_launch(&f, "gemm", 100.0 * s, 1, 100.0 * s + 2, 98, 1, s + 1);
        tp_memev_row row = {0};
        row.ts = FX_US(100.0 * s + 50);
        row.kind = TP_MEMEV_ALLOC;
        row.bytes = 10 * MiB;
        row.total_allocated = (int64_t)(s + 1) * 10 * MiB;
        row.total_reserved = (int64_t)(s + 1) * 20 * MiB;
        row.device = 0;
        tp_memev_push(&f.r->mem, &row);
    }
    tp_model_finish(f.m);
    tp_an_view v; /* the memory analysis's own steps: every kind of range */
    tp_an_memuse u;
    fx_view(&v, &f, compat);
    tp_an_memuse_run(&v, &u);
    CHECK_EQ_U(u.n_steps, 5);
    for (size_t s = 0; s < u.n_steps && u.n_steps == 5; s++) {
        CHECK_EQ_I(u.steps[s].start, FX_US(100.0 * (double)s));
        CHECK_EQ_I(u.steps[s].alloc_end, (int64_t)(s + 1) * 10 * MiB);
    }
    tp_an_memuse_free(&u);
    tp_an_view_free(&v);
    tp_diagnosis d;
    run(&f, compat, &d);
    CHECK_EQ_U(d.n, 1);
    CHECK_STR(d.f[0].id, "memory-growth");
    CHECK_NEAR(d.f[0].severity, 0.8, 1e-12);
    CHECK_NEAR(METRIC(&d, "memory-growth", "growth_bytes"), 40.0 * MiB, 0);
    CHECK_NEAR(METRIC(&d, "memory-growth", "peak_allocated_bytes"), 50.0 * MiB, 0);
    CHECK_NEAR(METRIC(&d, "memory-growth", "peak_reserved_bytes"), 100.0 * MiB, 0);
    CHECK(strstr(d.f[0].evidence, "from 10.00 MiB to 50.00 MiB (+10.00 MiB per step)") != NULL);
    tp_diagnose_free(&d);
    tp_model_close(f.m);
}

/* The report puts "Diagnosis" before "Summary" in text and a "findings" array in JSON. */
static void test_report(void) {
    fx_model f = fx_new();
    for (int s = 0; s < 3; s++) {
        double t = 1000.0 * s;
        fx_ev(&f, "step", TP_CAT_USER_ANNOTATION, t, 1000, -1, -1);
        fx_ev(&f, "dataloader wait", TP_CAT_USER_ANNOTATION, t, 600, -1, -1);
        fx_launch(&f, "conv_fwd", t + 600, 10, t + 610, 390, 1, s + 1);
    }
    tp_model_finish(f.m);
    for (int fmt = 0; fmt < 2; fmt++) {
        char *buf = NULL;
        size_t len = 0;
        FILE *out = open_memstream(&buf, &len);
        tp_report_opts o;
        tp_report_opts_init(&o);
        o.format = fmt ? TP_REPORT_JSON : TP_REPORT_TEXT;
        CHECK_OK(tp_report_write(out, f.m, &o));
        fclose(out);
        if (fmt) {
            CHECK(strstr(buf, "\"findings\": [") != NULL);
            CHECK(strstr(buf, "\"id\": \"input-bound\"") != NULL);
            CHECK(strstr(buf, "\"data_wait_idle_ns\": 1800000") != NULL);
        } else {
            const char *dg = strstr(buf, "Diagnosis"), *sm = strstr(buf, "Summary");
            CHECK(dg && sm && dg < sm);
            CHECK(strstr(buf, "1. [high    60%] input-bound:") != NULL);
        }
        free(buf);
    }
    tp_model_close(f.m);
}

/* Steps of 10 ms (a "forward" range and a kernel each) where every 10th also checkpoints for
 * 50 ms: step-spikes, one every 10 steps, the extra time in 'checkpoint', severity the slow
 * steps' time over the median over all the steps' time. The first step, 3x the median (a
 * first batch), is no spike; steps of 0.3 ms with a 1.5 ms hiccup (the system's jitter) are
 * none either. */
static void test_step_spikes(void) {
    for (int jitter = 0; jitter < 2; jitter++) {
        fx_model f = fx_new();
        double t = 0;
        for (int s = 0; s < 41; s++) {
            double len = jitter ? (s == 20 ? 1800 : 300) : s == 0 ? 30000 : s % 10 ? 10000 : 60000;
            fx_ev(&f, "step", TP_CAT_USER_ANNOTATION, t, len, -1, -1);
            fx_ev(&f, "forward", TP_CAT_USER_ANNOTATION, t, len / 5, -1, -1);
            if (!jitter && s && s % 10 == 0)
                fx_ev(&f, "checkpoint", TP_CAT_USER_ANNOTATION, t + 9000, 50000, -1, -1);
            fx_launch(&f, "gemm", t + 10, 5, t + 20, len / 2, 1, s + 1);
            t += len;
        }
        tp_model_finish(f.m);
        tp_diagnosis d;
        run(&f, 0, &d);
        const tp_finding *x = tp_diagnosis_find(&d, "step-spikes");
        CHECK((x != NULL) == !jitter);
        if (x && !jitter) {
            CHECK_STR(x->title, "step-spikes: 4 of 40 steps take 2x the median or more, one every "
                                "10 steps");
            CHECK_NEAR(tp_finding_metric(x, "median_ns"), 10e6, 0);
            CHECK_NEAR(tp_finding_metric(x, "excess_ns"), 4 * 50e6, 0);
            CHECK_NEAR(x->severity, 200.0 / (36 * 10 + 4 * 60), 1e-12);
            CHECK(strstr(x->evidence, "(step 11)") != NULL); /* the slowest: the first of them */
            CHECK(strstr(x->evidence, "every 10 steps (steps 11, 21, ...)") != NULL);
            CHECK(strstr(x->evidence, "Most of the extra time is in range 'checkpoint': 50.00 ms "
                                      "in a slow step against 0 ns in the others") != NULL);
        }
        tp_diagnose_free(&d);
        tp_model_close(f.m);
    }
}

/* The slow steps of test_step_spikes sampled: the step thread in state R all the while but
 * getting a third of a CPU: the advice starts from the CPUs it waited for; the thread found
 * running all the while (its clock as long as its time) is advised as before. */
static void test_step_spikes_cpu(void) {
    for (int starved = 0; starved < 2; starved++) {
        fx_model f = fx_new();
        double t = 0;
        for (int s = 0; s < 41; s++) {
            double len = s == 0 ? 30000 : s % 10 ? 10000 : 60000;
            fx_ev(&f, "step", TP_CAT_USER_ANNOTATION, t, len, -1, -1);
            fx_launch(&f, "gemm", t + 10, 5, t + 20, len / 2, 1, s + 1);
            if (s && s % 10 == 0)
                for (int k = 0; k < 60; k++)
                    tp_samples_push(&f.r->samples, FX_US(t + 1000.0 * k + 500), 100, 1, 0,
                                    TP_SAMPLE_ON_CPU, starved ? 333000 : 1000000, 1000000);
            t += len;
        }
        tp_model_finish(f.m);
        tp_diagnosis d;
        run(&f, 0, &d);
        const tp_finding *x = tp_diagnosis_find(&d, "step-spikes");
        CHECK(x != NULL);
        if (x) {
            const char *lead = "the step thread waited for a CPU in the slow steps";
            CHECK((strncmp(x->advice, lead, strlen(lead)) == 0) == starved);
            CHECK(strstr(x->evidence, "Sampled in the slow steps (240 samples)") != NULL);
            CHECK((strstr(x->evidence, ", but ran 33% (CPU clock 79.92 ms: it waited for a CPU "
                                       "the rest)") != NULL) == starved);
            CHECK_NEAR(tp_finding_metric(x, "sampled_clock_ns"), starved ? 240 * 333000.0 : 240e6,
                       1e-3);
        }
        tp_diagnose_free(&d);
        tp_model_close(f.m);
    }
}

/* 40 CPU steps of 10 ms, the step thread sampled every ms in state R (running or ready) but
 * getting 0.4 ms of CPU a sample: cpu-contention, severity 0.6 (it waited 60 % of its time).
 * Two threads of another process in state R too: the job wants 3 CPUs at a time, which is
 * its own doing on 2 cores, not on 8 (then the rest is what the sampler does not see); with
 * the cores unrecorded it says so. A step thread that got all of its time in state R is no
 * finding. */
static void test_cpu_contention(void) {
    static const struct {
        const char *cores, *allowed;
        uint64_t clock_ns; /* the step thread's CPU clock a 1 ms sample */
        const char *verdict;
        int native; /* the two busy threads are native threads of the step thread's process */
    } cases[] = {
        {"2", NULL, 400000, "against 2 CPUs (cores): the job alone asks for more CPUs", 0},
        {"8", NULL, 400000, "against 8 CPUs (cores): the rest of the demand is what the sampler",
         0},
        {"8", "2", 400000, "against 2 CPUs (allowed to the process): the job alone asks", 0},
        {NULL, NULL, 400000, "(the CPUs it could use are not recorded)", 0},
        {"2", NULL, 1000000, NULL, 0},
        {"2", NULL, 400000,
         "(3 in 1 process, 2 of them native: intra-op and OpenMP pools, libraries' threads) were "
         "ready to run 3.0 at a time on average (2.0 of them native threads), against 2 CPUs "
         "(cores): the job alone asks",
         1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        fx_model f = fx_new();
        for (int s = 0; s < 40; s++)
            fx_ev(&f, "step", TP_CAT_USER_ANNOTATION, s * 10000.0, 10000, -1, -1);
        if (cases[c].cores)
            tp_rank_set_env(f.m, f.r, -1, "cpu.cores", cases[c].cores, 1);
        if (cases[c].allowed)
            tp_rank_set_env(f.m, f.r, -1, "cpu.allowed", cases[c].allowed, 1);
        if (cases[c].native)
            tp_rank_set_env(f.m, f.r, -1, "sample.threads", "python,native", 1);
        tp_model_finish(f.m);
        for (int k = 1; k <= 400; k++) {
            tp_samples_push(&f.r->samples, k * 1000000LL - 500000, 100, 1, 0, TP_SAMPLE_ON_CPU,
                            cases[c].clock_ns, 1000000);
            for (uint32_t t = 200; t < 202; t++)
                tp_samples_push(&f.r->samples, k * 1000000LL - 500000, cases[c].native ? 100 : 200,
                                t, 0,
                                TP_SAMPLE_F_ON_CPU | (cases[c].native ? TP_SAMPLE_F_NATIVE : 0),
                                500000, 1000000);
        }
        tp_diagnosis d;
        run(&f, 0, &d);
        const tp_finding *x = tp_diagnosis_find(&d, "cpu-contention");
        CHECK((x != NULL) == (cases[c].verdict != NULL));
        if (x) {
            CHECK_STR(x->title, "cpu-contention: the step thread waited for a CPU 60% of the step "
                                "time");
            CHECK_NEAR(x->severity, 0.6, 1e-9);
            CHECK_NEAR(tp_finding_metric(x, "cpu_wait_ns"), 240e6, 1e-3);
            CHECK_NEAR(tp_finding_metric(x, "ran_ns"), 160e6, 1e-3);
            CHECK_NEAR(tp_finding_metric(x, "demand_cpus"), 3.0, 0.01);
            CHECK(strstr(x->evidence, "(400 samples)") != NULL);
            CHECK(cases[c].native ||
                  strstr(x->evidence, "(3 in 2 processes) were ready to run 3.0 at a time") !=
                      NULL);
            CHECK(!cases[c].native || (tp_finding_metric(x, "native_demand_cpus") > 1.99 &&
                                       !strncmp(x->advice, "the native threads (PyTorch's", 29)));
            CHECK(strstr(x->evidence, cases[c].verdict) != NULL);
            if (!strstr(x->evidence, cases[c].verdict))
                printf("  evidence: %s\n", x->evidence);
        }
        tp_diagnose_free(&d);
        tp_model_close(f.m);
    }
}

/* Diagnoses one rank of a loaded peer trace; checks the list is well-formed. */
static void peer_rank(const tp_model *m, size_t i, const char *set, tp_diagnosis *d) {
    tp_an_view v;
    tp_an_view_build(&v, m, &m->ranks[i], NULL);
    tp_diagnose_run(&v, d);
    tp_an_view_free(&v);
    for (size_t k = 0; k < d->n; k++) {
        CHECK(d->f[k].severity >= 0 && d->f[k].severity <= 1);
        CHECK(k == 0 || d->f[k].severity <= d->f[k - 1].severity);
        CHECK(strncmp(d->f[k].title, d->f[k].id, strlen(d->f[k].id)) == 0);
    }
    const tp_finding *f;
    if (strcmp(set, "param_resnet") == 0) { /* to(device) from pageable memory */
        CHECK((f = tp_diagnosis_find(d, "pageable-h2d")) != NULL);
        CHECK_NEAR(tp_finding_metric(f, "copies"), 61, 0);
        CHECK_NEAR(tp_finding_metric(f, "bytes"), 2312140804.0, 0);
        CHECK_STR(d->f[0].id, "input-bound"); /* the DataLoader __next__ range */
    }
    if (strcmp(set, "tracelens_h100_qwen") == 0) { /* torch.cuda.synchronize() per step */
        CHECK((f = tp_diagnosis_find(d, "sync-stall")) != NULL);
        CHECK_NEAR(tp_finding_metric(f, "syncs"), 2, 0);
    }
}

/* Every peer trace (Kineto JSON from PyTorch, HTA, PARAM, TraceLens): no crash, sane lists,
 * and the known problems of two of them. Run alone (`test_diagnose peer`, ctest
 * test_diagnose_peer) so that missing peer traces skip it, not the rest. */
static void test_peer_traces(void) {
    const char *root = tp_test_peer_root();
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/traces", root);
    DIR *dp = opendir(dir);
    CHECK(dp != NULL);
    size_t sets = 0;
    for (struct dirent *e; (e = readdir(dp)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        const char *paths[] = {path};
        tp_model *m = NULL;
        tp_load_result res;
        if (tp_load_paths(paths, 1, &m, &res) != TP_OK)
            TP_FAIL_("%s: %s", e->d_name, res.error);
        sets++;
        for (size_t i = 0; i < m->n_ranks; i++) {
            tp_diagnosis d;
            peer_rank(m, i, e->d_name, &d);
            tp_diagnose_free(&d);
        }
        tp_model_close(m);
    }
    closedir(dp);
    CHECK_EQ_U(sets, TP_PEER_SETS);
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "peer")) {
        TP_RUN(test_peer_traces);
        return tp_test_summary();
    }
    TP_RUN(test_input_bound);
    TP_RUN(test_warmup_only);
    TP_RUN(test_sync_stall);
    TP_RUN(test_sync_drain_data);
    TP_RUN(test_pageable);
    TP_RUN(test_sync_h2d);
    TP_RUN(test_copy_overlap);
    TP_RUN(test_launch_bound);
    TP_RUN(test_healthy);
    TP_RUN(test_oom);
    TP_RUN(test_memory_growth);
    TP_RUN(test_report);
    TP_RUN(test_step_spikes);
    TP_RUN(test_step_spikes_cpu);
    TP_RUN(test_cpu_contention);
    return tp_test_summary();
}
