/* test_an_stacks: GPU time by launching stack (tp_an_stacks), the frames it reads
 * (tp_an_frames) and the folded export (tp_folded), on a hand-made model whose stacks mix
 * Python frames, the interpreter's frames, the collector's and native ones. No module file is
 * opened (no_symbols): frames are module+offset, Python frames file:line in function. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_an_fixture.h"
#include "tp_an_samples.h"
#include "tp_an_stacks.h"
#include "tp_libpath.h"
#include "tp_folded.h"
#include "tp_test.h"

enum { M_COLLECTOR = 1, M_CUDART = 2, M_PYTHON = 3, M_EXE = 4 };

#define PYF(code, line) (((uint64_t)(code) << 24) | (line))

/* A Python program's stack launching from f1 (line l1) < f2:30 < <module>:5, `inner`: the
 * native frame of the call (libcudart.so offset). Innermost first, as the collector writes. */
static void py_stack(fx_model *f, uint32_t id, uint64_t inner, uint32_t l1) {
    const uint32_t mods[] = {M_COLLECTOR,     M_CUDART,        TP_STACK_PYTHON,
                             M_PYTHON,        TP_STACK_PYTHON, M_PYTHON,
                             TP_STACK_PYTHON, M_PYTHON,        M_EXE};
    const uint64_t addrs[] = {0x10,  inner,     PYF(1, l1), 0x100, PYF(2, 30),
                              0x100, PYF(3, 5), 0x200,      0x50};
    tp_rank_add_stack(f->r, id, mods, addrs, 9);
}

/* kernel `k` (dur_us) launched by a call with stack `stack` (0: none), correlation corr */
static void launch(fx_model *f, const char *k, double ts_us, double dur_us, uint32_t stack,
                   int64_t corr) {
    fx_launch(f, k, ts_us, 1, ts_us + 2, dur_us, 7, corr);
    tp_events_stack_col(&f->r->ev)[f->r->ev.n - 2] = stack;
}

static fx_model build(void) {
    fx_model f = fx_new();
    f.r->native = 1;
    tp_rank_add_stack_module(f.m, f.r, M_COLLECTOR, "/opt/lib/libtrainprof-collector.so", NULL, 0);
    tp_rank_add_stack_module(f.m, f.r, M_CUDART, "/usr/lib/libcudart.so", NULL, 0);
    tp_rank_add_stack_module(f.m, f.r, M_PYTHON, "/usr/lib/libpython3.11.so.1.0", NULL, 0);
    tp_rank_add_stack_module(f.m, f.r, M_EXE, "/usr/bin/python3.11", NULL, 0);
    tp_rank_add_stack_pycode(f.m, f.r, 1, "/src/a.py", "f1", 10);
    tp_rank_add_stack_pycode(f.m, f.r, 2, "/src/a.py", "f2", 28);
    tp_rank_add_stack_pycode(f.m, f.r, 3, "/src/a.py", "<module>", 1);
    py_stack(&f, 1, 0x20, 12);
    py_stack(&f, 2, 0x30, 12); /* another native call, the same Python lines: same group */
    py_stack(&f, 3, 0x20, 13); /* another line of f1: another group */
    const uint32_t raw_m[] = {TP_STACK_NO_MODULE, TP_STACK_NO_MODULE};
    const uint64_t raw_a[] = {0x1234, 0x5678};
    tp_rank_add_stack(f.r, 4, raw_m, raw_a, 2); /* a native program's stack, no modules */
    launch(&f, "kA", 0, 10, 1, 1);
    launch(&f, "kA", 100, 20, 1, 2);
    launch(&f, "kB", 200, 5, 2, 3);
    launch(&f, "kC", 300, 7, 3, 4);
    launch(&f, "kD", 400, 3, 0, 5); /* no stack */
    launch(&f, "kE", 500, 4, 4, 6);
    tp_model_finish(f.m);
    return f;
}

static tp_an_view view(const fx_model *f) {
    tp_an_opts o;
    tp_an_opts_init(&o);
    o.no_symbols = 1;
    tp_an_view v;
    tp_an_view_build(&v, f->m, f->r, &o);
    return v;
}

static void test_frames(void) {
    fx_model f = build();
    tp_an_frames *fx = tp_an_frames_open(f.m, f.r, 1, 0);
    const tp_an_frame *fr;
    size_t n = tp_an_frames_get(fx, 1, &fr);
    char b[256];
    /* collector and interpreter frames left out: cudart, 3 Python frames, the executable */
    CHECK_EQ_I(n, 5);
    CHECK_STR(tp_an_frame_label(&fr[0], b, sizeof b), "libcudart.so+0x20");
    CHECK_STR(fr[0].symbols, "off");
    CHECK_STR(tp_an_frame_label(&fr[1], b, sizeof b), "a.py:12 in f1");
    CHECK_STR(tp_an_frame_label(&fr[2], b, sizeof b), "a.py:30 in f2");
    CHECK_STR(tp_an_frame_label(&fr[3], b, sizeof b), "a.py:5 in <module>");
    CHECK_STR(tp_an_frame_label(&fr[4], b, sizeof b), "python3.11+0x50");
    CHECK_EQ_I(tp_an_frames_first_python(fr, n), 1);
    CHECK_EQ_I(tp_an_frames_get(fx, 99, &fr), 0); /* unknown id */
    CHECK_EQ_I(tp_an_frames_get(fx, 4, &fr), 2);
    CHECK_STR(tp_an_frame_label(&fr[0], b, sizeof b), "0x1234");
    tp_an_frames_close(fx);
    /* at most 0 native frames above the Python ones: the diagnosis' trimming */
    fx = tp_an_frames_open(f.m, f.r, 1, 1);
    n = tp_an_frames_get(fx, 1, &fr);
    CHECK_EQ_I(n, 5); /* one raw native frame above is allowed: cudart stays */
    tp_an_frames_close(fx);
    tp_model_close(f.m);
}

static void test_groups(void) {
    fx_model f = build();
    tp_an_view v = view(&f);
    tp_an_stacks s;
    tp_an_stacks_run(&v, 3, &s);
    CHECK_EQ_I(s.depth, 3);
    CHECK_EQ_I(s.n_ops, 6);
    CHECK_EQ_I(s.gpu_ns, 49000);
    CHECK_EQ_I(s.no_stack, 1);
    CHECK_EQ_I(s.no_stack_ns, 3000);
    CHECK_EQ_I(s.n, 3);
    int64_t sum = s.no_stack_ns;
    for (size_t i = 0; i < s.n; i++)
        sum += s.s[i].gpu_ns;
    CHECK_EQ_I(sum, s.gpu_ns); /* every op once */
    char b[256];
    /* stacks 1 and 2 differ only in their native call: one group, Python frames first */
    CHECK_EQ_I(s.s[0].count, 3);
    CHECK_EQ_I(s.s[0].gpu_ns, 35000);
    CHECK_EQ_I(s.s[0].n_frames, 3);
    CHECK_STR(tp_an_frame_label(&s.s[0].frames[0], b, sizeof b), "a.py:12 in f1");
    CHECK_STR(tp_an_frame_label(&s.s[0].frames[2], b, sizeof b), "a.py:5 in <module>");
    CHECK_EQ_I(s.s[0].n_k, 2);
    CHECK_STR(tp_model_str(f.m, s.s[0].k[0].name), "kA");
    CHECK_EQ_I(s.s[0].k[0].count, 2);
    CHECK_EQ_I(s.s[0].k[0].gpu_ns, 30000);
    CHECK_STR(tp_model_str(f.m, s.s[0].k[1].name), "kB");
    CHECK_EQ_I(s.s[1].gpu_ns, 7000);
    CHECK_STR(tp_an_frame_label(&s.s[1].frames[0], b, sizeof b), "a.py:13 in f1");
    CHECK_EQ_I(s.s[2].gpu_ns, 4000);
    CHECK_EQ_I(s.s[2].n_frames, 2); /* a native stack: from its innermost frame */
    CHECK_STR(tp_an_frame_label(&s.s[2].frames[0], b, sizeof b), "0x1234");
    tp_an_stacks_free(&s);
    /* depth 1: lines 12 and 13 of f1 still differ; depth 0 means the default */
    tp_an_stacks_run(&v, 1, &s);
    CHECK_EQ_I(s.n, 3);
    CHECK_EQ_I(s.s[0].n_frames, 1);
    tp_an_stacks_free(&s);
    tp_an_stacks_run(&v, 0, &s);
    CHECK_EQ_I(s.depth, TP_AN_STACK_DEPTH_DEFAULT);
    CHECK_EQ_I(s.s[0].n_frames, 3); /* the Python frames only: not the executable's */
    CHECK(!s.s[0].frames[0].library && !s.s[0].frames[0].skipped);
    tp_an_stacks_free(&s);
    tp_an_view_free(&v);
    tp_model_close(f.m);
}

static char *folded(const fx_model *f, const char *weight, tp_folded_stats *st, tp_status *rc) {
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    tp_folded_opts o = {weight, 1};
    *rc = tp_folded_write(out, f->m, &o, st);
    fclose(out);
    return buf;
}

static void test_folded(void) {
    fx_model f = build();
    tp_folded_stats st;
    tp_status rc;
    char *text = folded(&f, NULL, &st, &rc);
    CHECK_EQ_I(rc, TP_OK);
    /* root first, the kernel as the leaf, weights in ns; stacks 1 and 2 read differently */
    CHECK_STR(text, "0x5678;0x1234;kE 4000\n"
                    "python3.11+0x50;a.py:5 in <module>;a.py:30 in f2;a.py:12 in f1;"
                    "libcudart.so+0x20;kA 30000\n"
                    "python3.11+0x50;a.py:5 in <module>;a.py:30 in f2;a.py:12 in f1;"
                    "libcudart.so+0x30;kB 5000\n"
                    "python3.11+0x50;a.py:5 in <module>;a.py:30 in f2;a.py:13 in f1;"
                    "libcudart.so+0x20;kC 7000\n");
    CHECK_EQ_I(st.lines, 4);
    CHECK_EQ_I(st.samples, 5);
    CHECK_EQ_I(st.total_ns, 46000); /* the GPU time of the ops launched from a stack */
    free(text);
    text = folded(&f, "cpu", &st, &rc); /* the launch calls, 1 us each, by their stacks */
    CHECK_EQ_I(rc, TP_OK);
    CHECK_EQ_I(st.samples, 5);
    CHECK_EQ_I(st.total_ns, 5000);
    CHECK(strstr(text, "a.py:12 in f1;libcudart.so+0x20;cudaLaunchKernel 2000\n") != NULL);
    free(text);
    text = folded(&f, "range", &st, &rc); /* no range has a stack */
    CHECK_EQ_I(rc, TP_OK);
    CHECK_EQ_I(st.lines, 0);
    free(text);
    text = folded(&f, "wall", &st, &rc);
    CHECK_EQ_I(rc, TP_ERR_ARG);
    free(text);
    /* `record --sample`'s samples: on a CPU only, or every one; no leaf */
    tp_samples_push(&f.r->samples, 1000, 1, 7, 1, 1, 9000000, 10000000);
    tp_samples_push(&f.r->samples, 2000, 1, 7, 1, 1, 9000000, 10000000);
    tp_samples_push(&f.r->samples, 3000, 1, 7, 3, 0, 0, 10000000); /* waiting in f1:13 */
    tp_samples_push(&f.r->samples, 4000, 1, 7, 0, 1, 0, 10000000); /* no Python frames */
    text = folded(&f, "samples", &st, &rc);
    CHECK_EQ_I(rc, TP_OK);
    CHECK_STR(text, "python3.11+0x50;a.py:5 in <module>;a.py:30 in f2;a.py:12 in f1;"
                    "libcudart.so+0x20 20000000\n");
    CHECK_EQ_I(st.samples, 2);
    free(text);
    text = folded(&f, "samples-wall", &st, &rc);
    CHECK_EQ_I(rc, TP_OK);
    CHECK_EQ_I(st.lines, 2);
    CHECK_EQ_I(st.total_ns, 30000000);
    CHECK(strstr(text, "a.py:13 in f1;libcudart.so+0x20 10000000\n") != NULL);
    free(text);
    CHECK_STR(tp_folded_weight_name(0), "gpu");
    CHECK_STR(tp_folded_weight_name(3), "samples");
    CHECK_STR(tp_folded_weight_name(4), "samples-wall");
    CHECK(tp_folded_weight_name(5) == NULL);
    tp_model_close(f.m);
}

/* Samples whose periods add up past 2^63 (crafted: the fuzzer found the sums overflowing):
 * every sum saturates, rows and threads alike, and the part of one thread too. */
/* The other processes' lifetimes as their samples show them (tp_an_samples_workers): two
 * DataLoader workers started twice (an iterator per epoch), then one alone, beside a resource
 * tracker alive throughout that is no worker (another name), and then as a launcher (no
 * other process either). */
static void test_samples_workers(void) {
    fx_model f = build();
    static const struct {
        uint32_t pid;
        int64_t t0, t1; /* first and last sample */
    } procs[] = {{10, 1000, 5000},   {11, 2000, 4000},   {12, 10000, 15000},
                 {13, 10000, 14000}, {14, 20000, 20000}, {99, 500, 21000}};
    tp_samples_push(&f.r->samples, 100, 1, 7, 1, 1, 1000, 1000); /* the training process */
    for (size_t k = 0; k < sizeof procs / sizeof procs[0]; k++) {
        const char *name = procs[k].pid == 99 ? "python3" : "pt_data_worker";
        tp_rank_set_thread_name(f.m, f.r, procs[k].pid, procs[k].pid, name, strlen(name));
        tp_samples_push(&f.r->samples, procs[k].t0, procs[k].pid, procs[k].pid, 1, 1, 1000, 1000);
        if (procs[k].t1 != procs[k].t0)
            tp_samples_push(&f.r->samples, procs[k].t1, procs[k].pid, procs[k].pid, 1, 0, 0, 1000);
    }
    tp_an_view v = view(&f);
    tp_an_samples sa;
    tp_an_samples_run(&v, 0, 0, 0, &sa);
    tp_an_sample_workers w;
    tp_an_samples_workers(&v, &sa, 1, "pt_data_worker", &w);
    CHECK_EQ_I(w.procs, 5);
    CHECK_EQ_I(w.at_once, 2);
    CHECK_EQ_I(w.generations, 3);
    CHECK(w.starts[0] == 1000 && w.ends[0] == 5000); /* 10 and 11 */
    CHECK(w.starts[1] == 10000 && w.ends[1] == 15000);
    CHECK(w.starts[2] == 20000 && w.ends[2] == 20000); /* one sample: alive for an instant */
    free(w.starts), free(w.ends);
    tp_an_samples_workers(&v, &sa, 1, NULL, &w); /* every other process: the tracker too */
    CHECK_EQ_I(w.procs, 6);
    CHECK_EQ_I(w.at_once, 3);
    CHECK_EQ_I(w.generations, 1);
    CHECK(w.starts[0] == 500 && w.ends[0] == 21000);
    free(w.starts), free(w.ends);
    tp_an_samples_workers(&v, &sa, 1, "no such name", &w);
    CHECK(w.procs == 0 && w.generations == 0 && w.at_once == 0);
    free(w.starts), free(w.ends);
    /* the tracker a launcher instead (torchrun's agent): never one of the other processes */
    tp_process launcher = {0};
    launcher.pid = 99, launcher.rank = -1, launcher.parent = -1, launcher.role = TP_PROC_LAUNCHER;
    tp_rank_add_process(f.r, &launcher);
    tp_an_samples_workers(&v, &sa, 1, NULL, &w);
    CHECK_EQ_I(w.procs, 5);
    CHECK_EQ_I(w.generations, 3);
    free(w.starts), free(w.ends);
    tp_an_samples_free(&sa);
    tp_an_view_free(&v);
    tp_model_close(f.m);
}

static void test_samples_saturate(void) {
    fx_model f = build();
    const uint64_t big = (uint64_t)INT64_MAX / 4 - 1;
    for (int i = 0; i < 12; i++) /* 6 a stack: each row's sums saturate too */
        tp_samples_push(&f.r->samples, 1000 * (i + 1), 1, 7, i % 2 ? 1 : 3, 1, big, big);
    tp_an_view v;
    tp_an_opts o;
    tp_an_opts_init(&o);
    o.no_symbols = 1;
    tp_an_view_build(&v, f.m, f.r, &o);
    tp_an_samples sa;
    tp_an_samples_run(&v, 0, 0, 0, &sa);
    CHECK_EQ_I(sa.samples, 12);
    CHECK(sa.cpu_ns == INT64_MAX && sa.wall_ns == INT64_MAX && sa.clock_ns == INT64_MAX);
    CHECK(sa.n == 2 && sa.s[0].cpu_ns == INT64_MAX && sa.t[0].wall_ns == INT64_MAX);
    int64_t lo = 0, hi = INT64_MAX;
    tp_an_samples_part p;
    tp_an_samples_in(&v, &sa, 1, 7, &lo, &hi, 1, &p);
    CHECK(p.samples == 12 && p.cpu_ns == INT64_MAX && p.top_cpu >= 0);
    tp_an_samples_free(&sa);
    tp_an_view_free(&v);
    tp_model_close(f.m);
}

/* Stacks stored as a tree (tp_rank_add_frame_on: each stack's own frame on its caller's),
 * after contiguous ones: tp_rank_stack_copy walks both the same, and tp_an_frames reads them. */
static void test_tree(void) {
    fx_model f = fx_new();
    tp_rank_add_stack_pycode(f.m, f.r, 1, "/src/a.py", "f1", 10);
    tp_rank_add_stack_pycode(f.m, f.r, 2, "/src/a.py", "f2", 28);
    tp_rank_add_stack_pycode(f.m, f.r, 3, "/src/a.py", "<module>", 1);
    const uint32_t py2[] = {TP_STACK_PYTHON, TP_STACK_PYTHON};
    const uint64_t pa2[] = {PYF(2, 30), PYF(3, 5)};
    tp_rank_add_stack(f.r, 1, py2, pa2, 2); /* contiguous: f2 < <module> */
    size_t root = tp_rank_add_frame_on(f.r, TP_STACK_PYTHON, PYF(3, 7), SIZE_MAX);
    tp_rank_add_stack_frames(f.r, 2, root, 1);
    size_t mid = tp_rank_add_frame_on(f.r, TP_STACK_PYTHON, PYF(2, 31), root);
    tp_rank_add_stack_frames(f.r, 3, mid, 2);
    tp_rank_add_stack_frames(f.r, 4, tp_rank_add_frame_on(f.r, TP_STACK_PYTHON, PYF(1, 12), mid),
                             3);
    tp_rank_add_stack_frames(f.r, 5, tp_rank_add_frame_on(f.r, TP_STACK_PYTHON, PYF(1, 14), mid),
                             3);
    tp_rank_add_stack_frames(f.r, 6, tp_rank_add_frame_on(f.r, TP_STACK_NO_MODULE, 0xabc, root),
                             2); /* a raw frame: the module column appears under the tree */
    tp_rank_add_stack(f.r, 7, py2, pa2, 2); /* contiguous again, after the tree */
    tp_model_finish(f.m);
    uint32_t mo[4];
    uint64_t ad[4];
    CHECK_EQ_I(tp_rank_stack_copy(f.r, 4, mo, ad, 4), 3);
    CHECK(ad[0] == PYF(1, 12) && ad[1] == PYF(2, 31) && ad[2] == PYF(3, 7));
    CHECK(mo[0] == TP_STACK_PYTHON && mo[1] == TP_STACK_PYTHON && mo[2] == TP_STACK_PYTHON);
    CHECK_EQ_I(tp_rank_stack_copy(f.r, 5, mo, ad, 2), 3); /* the count; 2 copied */
    CHECK(ad[0] == PYF(1, 14) && ad[1] == PYF(2, 31));
    CHECK_EQ_I(tp_rank_stack_copy(f.r, 6, mo, ad, 4), 2);
    CHECK(mo[0] == TP_STACK_NO_MODULE && ad[0] == 0xabc && mo[1] == TP_STACK_PYTHON &&
          ad[1] == PYF(3, 7));
    CHECK_EQ_I(tp_rank_stack_copy(f.r, 1, mo, ad, 4), 2);
    CHECK(ad[0] == PYF(2, 30) && ad[1] == PYF(3, 5) && mo[1] == TP_STACK_PYTHON);
    CHECK_EQ_I(tp_rank_stack_copy(f.r, 7, mo, ad, 4), 2);
    CHECK(ad[0] == PYF(2, 30) && ad[1] == PYF(3, 5));
    CHECK_EQ_I(tp_rank_stack_copy(f.r, 8, mo, ad, 4), 0); /* unknown */
    CHECK_EQ_I(tp_rank_stack_copy(f.r, 0, mo, ad, 4), 0);
    tp_an_frames *fx = tp_an_frames_open(f.m, f.r, 1, 0);
    const tp_an_frame *fr;
    char b[256];
    CHECK_EQ_I(tp_an_frames_get(fx, 4, &fr), 3);
    CHECK_STR(tp_an_frame_label(&fr[0], b, sizeof b), "a.py:12 in f1");
    CHECK_STR(tp_an_frame_label(&fr[2], b, sizeof b), "a.py:7 in <module>");
    CHECK_EQ_I(tp_an_frames_prefix(fx, 5, 2, &fr), 2);
    CHECK_STR(tp_an_frame_label(&fr[1], b, sizeof b), "a.py:31 in f2");
    CHECK_EQ_I(tp_an_frames_get(fx, 9, &fr), 0);
    for (uint32_t id = 1; id <= 7; id++) /* every stack once: the cache grows past none */
        CHECK(tp_an_frames_get(fx, id, &fr) > 0);
    tp_an_frames_close(fx);
    tp_model_close(f.m);
}

/* Which files are the program's own: the folders Python installs into, its standard
 * library, and the PyTorch profiler's sys.path-relative names of both. */
static void test_library_files(void) {
    static const struct {
        const char *file;
        int library;
    } cases[] = {
        {"/usr/lib/python3.11/contextlib.py", 1},
        {"/home/u/.venv/lib/python3.12/site-packages/torch/nn/functional.py", 1},
        {"/usr/lib/python3/dist-packages/numpy/core/numeric.py", 1},
        {"/opt/conda/lib64/python3.10/threading.py", 1},
        {"<frozen importlib._bootstrap>", 1},
        {"/usr/local/lib/trainprof-python/sitecustomize.py", 1}, /* record --pytorch's */
        {"", 1}, /* a C function called from Python, a profiler's module frame */
        {"torch/nn/modules/conv.py", 1},
        {"contextlib.py", 1},
        {"PIL/Image.py", 1},        /* the first of the table */
        {"zoneinfo/_common.py", 1}, /* its last */
        {"json/__init__.py", 1},
        {"train.py", 0},
        {"../run.py", 0},
        {"models/resnet.py", 0},
        {"/home/u/proj/lib/python/model.py", 0}, /* a folder lib/python of the program's */
        {"/home/u/proj/lib/python3.x/model.py", 0},
        {"/app/xDiT/xfuser/runner.py", 0},
        {"<string>", 0},
        {"torchy/x.py", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        if (tp_libpath_python(cases[i].file) != cases[i].library) {
            fprintf(stderr, "library file %s: want %d\n", cases[i].file, cases[i].library);
            CHECK(0);
        }
}

/* A call into a library from the program's line: the prefix keeps the call and the program's
 * frames from its innermost on, the library frames between counted in `skipped`; the
 * finding's text and the groups read the same. */
static void test_own_code(void) {
    fx_model f = fx_new();
    f.r->native = 1;
    tp_rank_add_stack_module(f.m, f.r, M_CUDART, "/usr/lib/libcudart.so", NULL, 0);
    tp_rank_add_stack_module(f.m, f.r, M_PYTHON, "/usr/lib/libpython3.11.so.1.0", NULL, 0);
    tp_rank_add_stack_module(f.m, f.r, M_EXE, "/home/u/app", NULL, 0);
    const char *tl = "/usr/lib/python3/dist-packages/torch/nn/";
    char conv[128], mod[128];
    snprintf(conv, sizeof conv, "%smodules/conv.py", tl);
    snprintf(mod, sizeof mod, "%smodules/module.py", tl);
    tp_rank_add_stack_pycode(f.m, f.r, 1, conv, "_conv_forward", 540);
    tp_rank_add_stack_pycode(f.m, f.r, 2, mod, "_call_impl", 1700);
    tp_rank_add_stack_pycode(f.m, f.r, 3, "/home/u/train.py", "step", 50);
    tp_rank_add_stack_pycode(f.m, f.r, 4, "/home/u/train.py", "<module>", 1);
    const uint32_t mods[] = {
        M_CUDART,        TP_STACK_PYTHON, M_PYTHON,        TP_STACK_PYTHON, M_PYTHON,
        TP_STACK_PYTHON, M_PYTHON,        TP_STACK_PYTHON, M_PYTHON,        M_EXE};
    const uint64_t addrs[] = {0x20,       PYF(1, 548), 0x100,      PYF(2, 1790), 0x100,
                              PYF(3, 59), 0x100,       PYF(4, 90), 0x100,        0x50};
    tp_rank_add_stack(f.r, 1, mods, addrs, 10);
    /* the same without a library frame: the call is the program's line itself */
    const uint32_t own_m[] = {M_CUDART, TP_STACK_PYTHON, M_PYTHON, TP_STACK_PYTHON, M_EXE};
    const uint64_t own_a[] = {0x20, PYF(3, 61), 0x100, PYF(4, 90), 0x50};
    tp_rank_add_stack(f.r, 2, own_m, own_a, 5);
    const uint32_t nat_m[] = {M_CUDART, M_EXE, M_EXE};
    const uint64_t nat_a[] = {0x20, 0x60, 0x70};
    tp_rank_add_stack(f.r, 3, nat_m, nat_a, 3); /* a native program's */
    launch(&f, "conv", 0, 10, 1, 1);
    launch(&f, "conv", 100, 10, 1, 2);
    launch(&f, "add", 200, 5, 2, 3);
    launch(&f, "k", 300, 1, 3, 4);
    tp_model_finish(f.m);
    tp_an_frames *fx = tp_an_frames_open(f.m, f.r, 1, 0);
    const tp_an_frame *fr;
    char b[256];
    size_t n = tp_an_frames_get(fx, 1, &fr); /* every frame, flagged */
    CHECK_EQ_I(n, 6);
    CHECK(fr[0].library && fr[1].library && fr[2].library && !fr[3].library && !fr[4].library &&
          fr[5].library); /* libcudart; conv.py; module.py; train.py x2; the executable */
    CHECK_EQ_I(tp_an_frames_prefix(fx, 1, 5, &fr), 3);
    CHECK_STR(tp_an_frame_label(&fr[0], b, sizeof b), "conv.py:548 in _conv_forward");
    CHECK_STR(tp_an_frame_label(&fr[1], b, sizeof b), "train.py:59 in step");
    CHECK_EQ_I(fr[1].skipped, 1);
    CHECK_EQ_I(fr[2].skipped, 0);
    CHECK_STR(tp_an_frame_gap(&fr[1], b, sizeof b), "... 1 library frame");
    CHECK_STR(tp_an_frame_gap(&fr[2], b, sizeof b), "");
    CHECK_EQ_I(tp_an_frames_prefix(fx, 1, 1, &fr), 1); /* depth 1: the call alone */
    CHECK_STR(tp_an_frame_label(&fr[0], b, sizeof b), "conv.py:548 in _conv_forward");
    CHECK_EQ_I(tp_an_frames_prefix(fx, 2, 5, &fr), 2);
    CHECK_STR(tp_an_frame_label(&fr[0], b, sizeof b), "train.py:61 in step");
    CHECK_EQ_I(fr[1].skipped, 0);
    n = tp_an_frames_get(fx, 3, &fr);
    CHECK(n == 3 && fr[0].library && !fr[1].library); /* /usr/lib's runtime, /home's program */
    tp_an_frames_close(fx);
    /* the same prefix from a fresh handle (its raw path: nothing resolved before) */
    fx = tp_an_frames_open(f.m, f.r, 1, 0);
    CHECK_EQ_I(tp_an_frames_prefix(fx, 1, 5, &fr), 3);
    CHECK(fr[1].skipped == 1 &&
          !strcmp(tp_an_frame_label(&fr[1], b, sizeof b), "train.py:59 in step"));
    tp_an_frames_close(fx);
    tp_an_view v = view(&f);
    tp_an_stacks s;
    tp_an_stacks_run(&v, 5, &s);
    CHECK_EQ_I(s.n, 3);
    CHECK_EQ_I(s.s[0].count, 2);
    CHECK_EQ_I(s.s[0].n_frames, 3);
    CHECK_EQ_I(s.s[0].frames[1].skipped, 1);
    tp_an_stacks_free(&s);
    tp_an_view_free(&v);
    tp_model_close(f.m);
}

int main(void) {
    TP_RUN(test_library_files);
    TP_RUN(test_own_code);
    TP_RUN(test_tree);
    TP_RUN(test_frames);
    TP_RUN(test_groups);
    TP_RUN(test_folded);
    TP_RUN(test_samples_saturate);
    TP_RUN(test_samples_workers);
    return tp_test_summary();
}
