/* test_an_cpuops: the CPU-operator table (tp_an_cpuops) and what the Kineto importer keeps for
 * it and for stacks: input shapes, autograd sequence numbers, "Call stack" args and
 * python_function events as model stacks (tp_kineto_stacks), on small traces written here
 * with known answers. The same table on real traces is test_cpuops_peer's. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tp_an_cpuops.h"
#include "tp_diagnose.h"
#include "tp_import_kineto.h"
#include "tp_model.h"
#include "tp_rank_analysis.h"
#include "tp_test.h"

/* Thread 1: step [0, 100) holds linear [10, 60) which holds addmm [20, 50) which holds a
 * launch [25, 30); then addmm [60, 80) alone; a backward op (seq 7, forward thread 1) on thread
 * 2. Python: train.py(10): main encloses step, model.py(20): forward encloses linear. */
static const char *trace =
    "{\"traceEvents\": ["
    "{\"ph\":\"X\",\"cat\":\"python_function\",\"name\":\"train.py(10): main\",\"pid\":1,"
    "\"tid\":1,\"ts\":0,\"dur\":100},"
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"step\",\"pid\":1,\"tid\":1,\"ts\":0,"
    "\"dur\":99},"
    "{\"ph\":\"X\",\"cat\":\"python_function\",\"name\":\"model.py(20): forward\",\"pid\":1,"
    "\"tid\":1,\"ts\":9,\"dur\":52},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::linear\",\"pid\":1,\"tid\":1,\"ts\":10,"
    "\"dur\":50,\"args\":{\"Input Dims\":[[4, 8], [16, 8], [16]],\"Sequence number\":7}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::addmm\",\"pid\":1,\"tid\":1,\"ts\":20,"
    "\"dur\":30,\"args\":{\"Input Dims\":[[16], [4, 8], [8, 16]],\"Sequence number\":7}},"
    "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,"
    "\"ts\":25,\"dur\":5,\"args\":{\"correlation\":3}},"
    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm\",\"pid\":0,\"tid\":7,\"ts\":40,\"dur\":10,"
    "\"args\":{\"stream\":7,\"correlation\":3,\"device\":0}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::addmm\",\"pid\":1,\"tid\":1,\"ts\":60,"
    "\"dur\":20,\"args\":{\"Input Dims\":[[2], [2, 2], [2, 2]]}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"AddmmBackward0\",\"pid\":1,\"tid\":2,\"ts\":120,"
    "\"dur\":6,\"args\":{\"Sequence number\":7,\"Fwd thread id\":1}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":1,\"tid\":2,\"ts\":121,"
    "\"dur\":2,\"args\":{\"Call stack\":\"lib/ops.py(5): mm;train.py(12): main\"}}"
    "]}";

static tp_model *load(void) {
    char err[256];
    tp_model *m = tp_model_new();
    if (tp_import_kineto_mem(m, "t.json", trace, strlen(trace), err, sizeof err) != TP_OK) {
        fprintf(stderr, "import: %s\n", err);
        return NULL;
    }
    tp_model_finish(m);
    return m;
}

static long row_of(const tp_model *m, const char *name, int64_t ts_ns) {
    const tp_events *ev = &m->ranks[0].ev;
    for (size_t i = 0; i < ev->n; i++)
        if (!strcmp(tp_model_str(m, ev->name[i]), name) && ev->ts[i] == ts_ns)
            return (long)i;
    return -1;
}

/* "func file:line" of every frame of the stack of `row`, innermost first, "; "-separated;
 * "?" for a frame that is not a known Python frame. */
static const char *stack_text(const tp_model *m, long row, char *buf, size_t n) {
    const tp_rank *r = &m->ranks[0];
    uint32_t mod[64];
    uint64_t addr[64];
    size_t k = tp_rank_stack_copy(r, tp_ev_stack(&r->ev, row), mod, addr, 64), at = 0;
    k = k < 64 ? k : 64;
    buf[0] = 0;
    for (size_t i = 0; i < k && at < n; i++) {
        const tp_stack_pycode *c = tp_rank_stack_pycode(r, TP_STACK_PY_CODE(addr[i]));
        if (!c || mod[i] != TP_STACK_PYTHON) {
            at += (size_t)snprintf(buf + at, n - at, "%s?", i ? "; " : "");
            continue;
        }
        at += (size_t)snprintf(buf + at, n - at, "%s%s %s:%u", i ? "; " : "",
                               tp_model_str(m, c->name), tp_model_str(m, c->file),
                               (unsigned)TP_STACK_PY_LINE(addr[i]));
    }
    return buf;
}

static void test_import_fields(void) {
    tp_model *m = load();
    CHECK(m != NULL);
    const tp_events *ev = &m->ranks[0].ev;
    long lin = row_of(m, "aten::linear", 10000), bw = row_of(m, "AddmmBackward0", 120000);
    CHECK(lin >= 0 && bw >= 0);
    CHECK_STR(tp_model_str(m, tp_ev_shapes(ev, lin)), "[[4, 8], [16, 8], [16]]");
    CHECK_EQ_I(tp_ev_seq(ev, lin), 7);
    CHECK_EQ_I(tp_ev_fwd_tid(ev, lin), -1);
    CHECK_EQ_I(tp_ev_seq(ev, bw), 7);
    CHECK_EQ_I(tp_ev_fwd_tid(ev, bw), 1);
    CHECK_EQ_U(tp_ev_shapes(ev, bw), 0);
    tp_model_close(m);
}

static void test_python_stacks(void) {
    tp_model *m = load();
    CHECK(m != NULL);
    const tp_events *ev = &m->ranks[0].ev;
    char b[512];
    CHECK_STR(stack_text(m, row_of(m, "aten::addmm", 20000), b, sizeof b),
              "forward model.py:20; main train.py:10");
    CHECK_STR(stack_text(m, row_of(m, "cudaLaunchKernel", 25000), b, sizeof b),
              "forward model.py:20; main train.py:10");
    CHECK_STR(stack_text(m, row_of(m, "aten::addmm", 60000), b, sizeof b), "main train.py:10");
    CHECK_STR(stack_text(m, row_of(m, "step", 0), b, sizeof b), "main train.py:10");
    /* "Call stack" args, innermost first, with the calling lines */
    CHECK_STR(stack_text(m, row_of(m, "aten::mm", 121000), b, sizeof b),
              "mm lib/ops.py:5; main train.py:12");
    /* the same stack is one id; a GPU op has none (its launching call has it) */
    CHECK_EQ_U(tp_ev_stack(ev, row_of(m, "aten::addmm", 20000)),
               tp_ev_stack(ev, row_of(m, "cudaLaunchKernel", 25000)));
    CHECK_EQ_U(tp_ev_stack(ev, row_of(m, "gemm", 40000)), 0);
    CHECK_EQ_U(tp_ev_stack(ev, row_of(m, "AddmmBackward0", 120000)), 0);
    /* one code object per function: main appears in both kinds of stacks once */
    CHECK_EQ_U(m->ranks[0].stacks.n_pycodes, 3);
    tp_model_close(m);
}

static const tp_an_cpuop *find_op(const tp_model *m, const tp_an_cpuops *c, const char *name,
                                  const char *shapes) {
    for (size_t i = 0; i < c->n; i++)
        if (!strcmp(tp_model_str(m, c->op[i].name), name) &&
            (!shapes || !strcmp(tp_model_str(m, c->op[i].shapes), shapes)))
            return &c->op[i];
    return NULL;
}

static void test_table(void) {
    tp_model *m = load();
    CHECK(m != NULL);
    tp_rank_analysis a;
    tp_rank_analysis_run(&a, m, &m->ranks[0], NULL, TP_RA_CPUOPS);
    const tp_an_cpuops *c = &a.ops;
    CHECK_EQ_U(c->n, 5); /* step, linear, addmm, AddmmBackward0, mm */
    const tp_an_cpuop *addmm = find_op(m, c, "aten::addmm", NULL);
    CHECK(addmm != NULL);
    CHECK_EQ_U(addmm->count, 2);
    CHECK_EQ_I(addmm->total, 50000);
    CHECK_EQ_I(addmm->self, 45000); /* minus the 5 µs launch call */
    const tp_an_cpuop *lin = find_op(m, c, "aten::linear", NULL);
    CHECK_EQ_I(lin->self, 20000);
    /* step [0, 99): its child is the forward python_function [9, 61) and addmm [60, 80) is a
     * sibling of that (it overlaps its end), so both are direct children */
    const tp_an_cpuop *step = find_op(m, c, "step", NULL);
    CHECK_STR(tp_an_cpuop_kind(step), "range");
    CHECK_EQ_I(step->self, 99000 - 52000 - 20000);
    CHECK_STR(tp_an_cpuop_kind(addmm), "op");
    /* sorted by self, descending */
    for (size_t i = 1; i < c->n; i++)
        CHECK(c->op[i - 1].self >= c->op[i].self);
    CHECK_STR(tp_model_str(m, c->op[0].name), "aten::addmm");
    /* the backward op names the outermost forward op of its sequence number */
    CHECK_STR(tp_model_str(m, find_op(m, c, "AddmmBackward0", NULL)->fwd_name), "aten::linear");
    CHECK_EQ_I(c->span, 126000);
    tp_rank_analysis_free(&a);

    tp_an_opts o;
    tp_an_opts_init(&o);
    o.ops_by_shapes = 1, o.ops_by_total = 1;
    tp_rank_analysis_run(&a, m, &m->ranks[0], &o, TP_RA_CPUOPS);
    c = &a.ops;
    CHECK_EQ_U(c->n, 6); /* the two addmm calls had different shapes */
    CHECK(c->has_shapes);
    const tp_an_cpuop *big = find_op(m, c, "aten::addmm", "[[16], [4, 8], [8, 16]]");
    CHECK(big != NULL);
    CHECK_EQ_U(big->count, 1);
    CHECK_EQ_I(big->self, 25000);
    CHECK_STR(tp_model_str(m, c->op[0].name), "step"); /* by total now */
    tp_rank_analysis_free(&a);
    tp_model_close(m);
}

/* The view of the model's own rows (self times by parent, no per-row sums) and a view through a
 * window that holds every row (the per-row sums' path) give the same table. */
static void test_both_paths(void) {
    tp_model *m = load();
    CHECK(m != NULL);
    for (int shapes = 0; shapes < 2; shapes++) {
        tp_an_opts o;
        tp_an_opts_init(&o);
        o.ops_by_shapes = shapes;
        tp_rank_analysis a, b;
        tp_rank_analysis_run(&a, m, &m->ranks[0], &o, TP_RA_CPUOPS);
        o.window_lo = INT64_MIN / 4, o.window_hi = INT64_MAX / 4;
        tp_rank_analysis_run(&b, m, &m->ranks[0], &o, TP_RA_CPUOPS);
        CHECK(tp_an_view_ts_model(&a.v) && !tp_an_view_ts_model(&b.v));
        CHECK_EQ_U(a.ops.n, b.ops.n);
        CHECK_EQ_I(a.ops.self_sum, b.ops.self_sum);
        CHECK_EQ_I(a.ops.span, b.ops.span);
        for (size_t i = 0; i < a.ops.n && i < b.ops.n; i++) {
            const tp_an_cpuop *x = &a.ops.op[i], *y = &b.ops.op[i];
            CHECK(x->name == y->name && x->shapes == y->shapes && x->cat == y->cat);
            CHECK(x->count == y->count && x->total == y->total && x->self == y->self);
            CHECK(x->fwd_name == y->fwd_name);
        }
        tp_rank_analysis_free(&a), tp_rank_analysis_free(&b);
    }
    tp_model_close(m);
}

/* A CPU-only torch.profiler-like trace: 4 steps of `step_us` (ProfilerStep#N) starting 100 µs
 * apart (nothing recorded between them), each holding a data-loading range of `data_us` and
 * then one aten::mm of `op_us`; with `epoch`, all of them inside a range "epoch" (a range that
 * holds the loop records nothing of what happens between its steps). */
static tp_model *cpu_trace(int step_us, int data_us, int op_us, int epoch) {
    char json[8192];
    size_t at = (size_t)snprintf(json, sizeof json, "{\"traceEvents\": [");
    if (epoch)
        at += (size_t)snprintf(json + at, sizeof json - at,
                               "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"epoch\","
                               "\"pid\":5,\"tid\":5,\"ts\":990,\"dur\":420},");
    for (int k = 0; k < 4; k++) {
        int t = 1000 + 100 * k;
        at += (size_t)snprintf(json + at, sizeof json - at,
                               "%s{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":"
                               "\"ProfilerStep#%d\",\"pid\":5,\"tid\":5,\"ts\":%d,\"dur\":%d},"
                               "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":"
                               "\"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__\","
                               "\"pid\":5,\"tid\":5,\"ts\":%d,\"dur\":%d},"
                               "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":5,"
                               "\"tid\":5,\"ts\":%d,\"dur\":%d}",
                               k ? "," : "", k, t, step_us, t, data_us, t + data_us, op_us);
    }
    snprintf(json + at, sizeof json - at, "]}");
    char err[256];
    tp_model *m = tp_model_new();
    if (tp_import_kineto_mem(m, "cpu.json", json, strlen(json), err, sizeof err) != TP_OK) {
        fprintf(stderr, "import: %s\n", err);
        tp_model_close(m);
        return NULL;
    }
    tp_model_finish(m);
    return m;
}

/* Which host rules fire: bit 0 host-input-bound, bit 1 host-overhead, bit 2 host-step-gaps
 * (*share: the first's); -1 on failure, or when the window or its time with no range open is
 * not what the trace holds (3 gaps of 100 - step_us µs). */
static int host_findings(int step_us, int data_us, int op_us, int epoch, double *share) {
    tp_model *m = cpu_trace(step_us, data_us, op_us, epoch);
    if (!m)
        return -1;
    tp_rank_analysis a;
    tp_rank_analysis_run(&a, m, &m->ranks[0], NULL, TP_RA_ALL);
    const tp_finding *in = tp_diagnosis_find(&a.dg, "host-input-bound");
    const tp_finding *ov = tp_diagnosis_find(&a.dg, "host-overhead");
    const tp_finding *gap = tp_diagnosis_find(&a.dg, "host-step-gaps");
    *share = in    ? tp_finding_metric(in, "share")
             : ov  ? tp_finding_metric(ov, "share")
             : gap ? tp_finding_metric(gap, "share")
                   : 0;
    int r = (in ? 1 : 0) | (ov ? 2 : 0) | (gap ? 4 : 0);
    if (a.host.n_steps != 4 || a.host.w1 - a.host.w0 != 300000 + step_us * 1000 ||
        a.host.unrecorded_ns != 3 * (100 - step_us) * 1000 ||
        tp_an_host_other_ns(&a.host) !=
            a.host.w1 - a.host.w0 - 4 * (data_us + op_us) * 1000 - a.host.unrecorded_ns)
        r = -1;
    tp_rank_analysis_free(&a);
    tp_model_close(m);
    return r;
}

static void test_host_rules(void) {
    double share;
    CHECK_EQ_I(host_findings(100, 40, 50, 0, &share), 1); /* data 40 % of the steps */
    CHECK(share > 0.399 && share < 0.401);
    CHECK_EQ_I(host_findings(100, 20, 75, 0, &share), 0); /* healthy: data 20 %, ops 75 % */
    CHECK_EQ_I(host_findings(100, 5, 20, 0, &share), 2);  /* 75 % neither op nor data */
    CHECK(share > 0.749 && share < 0.751);
    CHECK_EQ_I(host_findings(100, 45, 0, 0, &share), 1); /* no ops: overhead is not judged */
    /* steps of 50 µs 100 µs apart: 150 of the window's 350 µs with no range open */
    CHECK_EQ_I(host_findings(50, 10, 35, 0, &share), 4);
    CHECK(fabs(share - 150.0 / 350.0) < 1e-9);
    /* the same inside an "epoch" range: the time between the steps is still no step's */
    CHECK_EQ_I(host_findings(50, 10, 35, 1, &share), 4);
    CHECK(fabs(share - 150.0 / 350.0) < 1e-9);
    /* steps of 80 µs: 60 of 380 µs (16 %), below the rule's 30 % */
    CHECK_EQ_I(host_findings(80, 10, 65, 0, &share), 0);
}

int main(void) {
    TP_RUN(test_import_fields);
    TP_RUN(test_python_stacks);
    TP_RUN(test_table);
    TP_RUN(test_both_paths);
    TP_RUN(test_host_rules);
    return tp_test_summary();
}
