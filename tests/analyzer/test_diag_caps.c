/* test_diag_caps: the diagnosis has no silent limit.
 *
 * Each test builds a rank past a limit the diagnosis once had and checks the finding is
 * right: more than 64 training threads (the 70th's sync used to be ignored), more than 32
 * range names behind a finding (the limit is kept and now said), more than 16 stack frames
 * (read from the model's stacks, every one kept), and texts longer than the old fixed
 * buffers. */
#include "tp_diagnose.h"

#include <stdio.h>
#include <stdlib.h>

#include "tp_an_fixture.h"
#include "tp_test.h"

static void run(fx_model *f, int no_symbols, tp_diagnosis *d) {
    tp_an_opts o;
    tp_an_opts_init(&o);
    o.no_symbols = no_symbols;
    tp_an_view v;
    tp_an_view_build(&v, f->m, &f->m->ranks[0], &o);
    tp_diagnose_run(&v, d);
    tp_an_view_free(&v);
}

#define METRIC(d, id, key) tp_finding_metric(tp_diagnosis_find((d), (id)), (key))

/* 70 threads launch one 1 µs kernel each (thread k at k µs); then the last of them blocks
 * 400 µs in cudaStreamSynchronize and launches a 100 µs kernel: the device idles 400.5 µs
 * while a training thread is blocked. With a 64-thread list, thread 70 was no training
 * thread, its sync was ignored and the idle reported as low-utilization. */
static void test_many_threads(void) {
    fx_model f = fx_new();
    tp_events *ev = &f.r->ev;
    const int n = 70;
    for (int k = 0; k < n; k++) {
        fx_launch(&f, "tiny", k, 0.2, k + 0.5, 1, 1, k + 1);
        tp_events_set_thread(ev, ev->n - 2, tp_ev_pid(ev, ev->n - 2), 1000 + k);
    }
    fx_ev(&f, "cudaStreamSynchronize", TP_CAT_CUDA_RUNTIME, n + 0.5, 400, -1, -1);
    tp_events_set_thread(ev, ev->n - 1, tp_ev_pid(ev, ev->n - 1), 1000 + n - 1);
    fx_launch(&f, "big", n + 400.5, 0.2, n + 401, 100, 1, n + 1);
    tp_events_set_thread(ev, ev->n - 2, tp_ev_pid(ev, ev->n - 2), 1000 + n - 1);
    tp_model_finish(f.m);
    tp_diagnosis d;
    run(&f, 1, &d);
    CHECK_EQ_U(d.n, 1);
    CHECK_STR(d.f[0].id, "sync-stall");
    CHECK_EQ_I(d.window_ns, 570500);
    CHECK_NEAR(d.f[0].severity, 400.0 / 570.5, 1e-12);
    CHECK_NEAR(METRIC(&d, "sync-stall", "syncs"), 1, 0);
    CHECK_NEAR(METRIC(&d, "sync-stall", "host_blocked_ns"), 400000, 0);
    CHECK_NEAR(METRIC(&d, "sync-stall", "drain_idle_ns"), 400000, 0);
    CHECK(tp_diagnosis_find(&d, "low-utilization") == NULL);
    tp_diagnose_free(&d);
    tp_model_close(f.m);
}

/* 40 iterations, each a kernel and a 20 µs sync inside its own range "range NN": the sync
 * time is spread over 40 names, and every one is weighed (there was a limit of 32). */
static void test_many_ranges(void) {
    fx_model f = fx_new();
    for (int i = 0; i < 40; i++) {
        char name[32];
        snprintf(name, sizeof name, "range %02d", i);
        double t = 100.0 * i;
        fx_ev(&f, name, TP_CAT_USER_ANNOTATION, t, 90, -1, -1);
        fx_launch(&f, "k", t + 1, 1, t + 2, 10, 1, i + 1);
        fx_ev(&f, "cudaStreamSynchronize", TP_CAT_CUDA_RUNTIME, t + 3, 20, -1, -1);
    }
    tp_model_finish(f.m);
    tp_diagnosis d;
    run(&f, 1, &d);
    const tp_finding *s = tp_diagnosis_find(&d, "sync-stall");
    CHECK(s != NULL);
    CHECK_NEAR(tp_finding_metric(s, "syncs"), 40, 0);
    CHECK_STR(s->source, "spread over 40 ranges; most in range 'range 00' (2% of it)");
    tp_diagnose_free(&d);
    tp_model_close(f.m);
}

/* An allocation failure whose stack (in the model, as the native loader puts it) has 20
 * frames: a raw address, one in a module whose file does not exist, the collector's own
 * frame (left out), and 17 more raw addresses. Every frame reaches the finding (there were
 * at most 16); the text shows the first 6. */
static void test_deep_stack(void) {
    fx_model f = fx_new();
    uint32_t mods[20];
    uint64_t addrs[20];
    for (int i = 0; i < 20; i++)
        mods[i] = TP_STACK_NO_MODULE, addrs[i] = 0x1000u + (uint64_t)i;
    mods[1] = 3, addrs[1] = 0x42;
    mods[2] = 4;
    static const uint8_t bid[4] = {1, 2, 3, 4};
    tp_rank_add_stack(f.r, 5, mods, addrs, 20);
    tp_rank_add_stack_module(f.m, f.r, 4, "/opt/x/libtrainprof-collector.so", NULL, 0);
    tp_rank_add_stack_module(f.m, f.r, 3, "/nonexistent/libfoo.so", bid, sizeof bid);
    tp_memev_row row = {0};
    row.ts = 5000;
    row.kind = TP_MEMEV_ALLOC_FAIL;
    row.bytes = 4 << 20;
    row.device = 0;
    row.stack = 5;
    tp_memev_push(&f.r->mem, &row);
    tp_model_finish(f.m);
    for (int no_symbols = 0; no_symbols < 2; no_symbols++) {
        tp_diagnosis d;
        run(&f, no_symbols, &d);
        CHECK_EQ_U(d.n, 1);
        const tp_finding *x = &d.f[0];
        CHECK_STR(x->id, "oom");
        CHECK_EQ_U(x->n_frames, 19);
        CHECK_STR(x->frames[0].module, "");
        CHECK_STR(x->frames[0].symbols, "no module");
        CHECK_EQ_U(x->frames[0].offset, 0x1000);
        CHECK_STR(x->frames[1].module, "libfoo.so");
        CHECK_EQ_U(x->frames[1].offset, 0x42);
        CHECK_STR(x->frames[1].func, "");
        CHECK_STR(x->frames[1].symbols, no_symbols ? "off" : "module file not found");
        CHECK_EQ_U(x->frames[2].offset, 0x1003); /* the collector's frame is left out */
        CHECK_EQ_U(x->frames[18].offset, 0x1000 + 19);
        CHECK_STR(x->source, "stack: 0x1000 < libfoo.so+0x42 < 0x1003 < 0x1004 < 0x1005 < "
                             "0x1006");
        tp_diagnose_free(&d);
    }
    tp_model_close(f.m);
}

/* A data-loading range with a 1000-character name: the source names all of it (the old
 * fixed buffers cut it at 255 characters). */
static void test_long_texts(void) {
    char name[1100] = "dataloader ";
    memset(name + 11, 'x', 1000);
    name[1011] = 0;
    fx_model f = fx_new();
    for (int s = 0; s < 3; s++) {
        double t = 1000.0 * s;
        fx_ev(&f, "step", TP_CAT_USER_ANNOTATION, t, 1000, -1, -1);
        fx_ev(&f, name, TP_CAT_USER_ANNOTATION, t, 600, -1, -1);
        fx_launch(&f, "conv_fwd", t + 600, 10, t + 610, 390, 1, s + 1);
    }
    tp_model_finish(f.m);
    tp_diagnosis d;
    run(&f, 1, &d);
    CHECK_EQ_U(d.n, 1);
    char want[1200];
    snprintf(want, sizeof want, "range '%s' in 'step'", name);
    CHECK_STR(d.f[0].source, want);
    CHECK(strstr(d.f[0].evidence, name) != NULL);
    tp_diagnose_free(&d);
    tp_model_close(f.m);
}

int main(void) {
    TP_RUN(test_many_threads);
    TP_RUN(test_many_ranges);
    TP_RUN(test_deep_stack);
    TP_RUN(test_long_texts);
    return tp_test_summary();
}
