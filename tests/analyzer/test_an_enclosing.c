/* test_an_enclosing: the enclosing-range queries on a hand-built thread:
 *
 *   step (annotation)     [0, 100)
 *     aten::mm (op)         [10, 50)
 *       cudaLaunchKernel      [20, 25)   -> gemm on stream 7
 *     data wait (annotation) [60, 90)
 *       train.py(3): next (python) [65, 85)
 *         cudaMemcpy                [70, 72)
 */
#include "tp_an_enclosing.h"

#include "tp_an_fixture.h"
#include "tp_test.h"

static fx_model build(void) {
    fx_model f = fx_new();
    fx_ev(&f, "step", TP_CAT_USER_ANNOTATION, 0, 100, -1, -1);
    fx_ev(&f, "aten::mm", TP_CAT_CPU_OP, 10, 40, -1, -1);
    fx_launch(&f, "gemm", 20, 5, 30, 10, 7, 1);
    fx_ev(&f, "data wait", TP_CAT_USER_ANNOTATION, 60, 30, -1, -1);
    fx_ev(&f, "train.py(3): next", TP_CAT_PYTHON_FUNCTION, 65, 20, -1, -1);
    fx_ev(&f, "cudaMemcpy", TP_CAT_CUDA_RUNTIME, 70, 2, -1, -1);
    tp_model_finish(f.m);
    return f;
}

/* The row named `name` (each name is used once). */
static long row_of(const fx_model *f, const char *name) {
    const tp_events *ev = &f->m->ranks[0].ev;
    for (size_t i = 0; i < ev->n; i++)
        if (strcmp(tp_model_str(f->m, ev->name[i]), name) == 0)
            return (long)i;
    return -1;
}

static void test_row(void) {
    fx_model f = build();
    const tp_events *ev = &f.m->ranks[0].ev;
    long step = row_of(&f, "step"), mm = row_of(&f, "aten::mm"),
         call = row_of(&f, "cudaLaunchKernel");
    long data = row_of(&f, "data wait"), py = row_of(&f, "train.py(3): next");
    long copy = row_of(&f, "cudaMemcpy"), gemm = row_of(&f, "gemm");
    CHECK_EQ_I(tp_an_enclosing_row(ev, call, TP_AN_RANGES_ANNOTATIONS), step);
    CHECK_EQ_I(tp_an_enclosing_row(ev, call, TP_AN_RANGES_ALL), mm);
    CHECK_EQ_I(tp_an_enclosing_row(ev, mm, TP_AN_RANGES_ANNOTATIONS), step);
    CHECK_EQ_I(tp_an_enclosing_row(ev, copy, TP_AN_RANGES_ANNOTATIONS), data);
    CHECK_EQ_I(tp_an_enclosing_row(ev, copy, TP_AN_RANGES_ALL), py);
    CHECK_EQ_I(tp_an_enclosing_row(ev, py, TP_AN_RANGES_ALL), data);
    /* the row itself counts only with TP_AN_ENCLOSING_SELF, and only when it is a range */
    CHECK_EQ_I(tp_an_enclosing_row(ev, step, TP_AN_RANGES_ANNOTATIONS), -1);
    CHECK_EQ_I(tp_an_enclosing_row(ev, step, TP_AN_RANGES_ANNOTATIONS | TP_AN_ENCLOSING_SELF),
               step);
    CHECK_EQ_I(tp_an_enclosing_row(ev, mm, TP_AN_RANGES_ALL | TP_AN_ENCLOSING_SELF), mm);
    CHECK_EQ_I(tp_an_enclosing_row(ev, mm, TP_AN_RANGES_ANNOTATIONS | TP_AN_ENCLOSING_SELF), step);
    CHECK_EQ_I(tp_an_enclosing_row(ev, call, TP_AN_RANGES_ALL | TP_AN_ENCLOSING_SELF), mm);
    /* GPU rows have no parent: ask for the launching call */
    CHECK_EQ_I(tp_an_enclosing_row(ev, gemm, TP_AN_RANGES_ALL), -1);
    CHECK_EQ_I(tp_an_enclosing_row(ev, -1, TP_AN_RANGES_ALL), -1);
    CHECK(tp_an_is_range(TP_CAT_CPU_OP, TP_AN_RANGES_ALL));
    CHECK(!tp_an_is_range(TP_CAT_CPU_OP, TP_AN_RANGES_ANNOTATIONS));
    CHECK(!tp_an_is_range(TP_CAT_CUDA_RUNTIME, TP_AN_RANGES_ALL));
    CHECK(!tp_an_is_range(TP_CAT_COUNT, ~0u));
    tp_model_close(f.m);
}

static void test_at(void) {
    fx_model f = build();
    const tp_rank *r = &f.m->ranks[0];
    long bucket = -1;
    for (size_t b = 0; b < r->threads.n; b++)
        if (r->threads.key[b] == 1 && r->threads.key2[b] == 100)
            bucket = (long)b;
    CHECK(bucket >= 0);
    size_t bk = (size_t)bucket;
    CHECK_EQ_I(tp_an_enclosing_at(r, bk, FX_US(15), TP_AN_RANGES_ALL), row_of(&f, "aten::mm"));
    CHECK_EQ_I(tp_an_enclosing_at(r, bk, FX_US(22), TP_AN_RANGES_ALL), row_of(&f, "aten::mm"));
    CHECK_EQ_I(tp_an_enclosing_at(r, bk, FX_US(22), TP_AN_RANGES_ANNOTATIONS), row_of(&f, "step"));
    CHECK_EQ_I(tp_an_enclosing_at(r, bk, FX_US(50), TP_AN_RANGES_ALL), row_of(&f, "step"));
    CHECK_EQ_I(tp_an_enclosing_at(r, bk, FX_US(71), TP_AN_RANGES_ALL),
               row_of(&f, "train.py(3): next"));
    CHECK_EQ_I(tp_an_enclosing_at(r, bk, FX_US(86), TP_AN_RANGES_ALL), row_of(&f, "data wait"));
    CHECK_EQ_I(tp_an_enclosing_at(r, bk, FX_US(0), TP_AN_RANGES_ALL), row_of(&f, "step"));
    CHECK_EQ_I(tp_an_enclosing_at(r, bk, FX_US(100), TP_AN_RANGES_ALL), -1); /* ends are open */
    CHECK_EQ_I(tp_an_enclosing_at(r, bk, -1, TP_AN_RANGES_ALL), -1);
    CHECK_EQ_I(tp_an_enclosing_at(r, r->threads.n, FX_US(15), TP_AN_RANGES_ALL), -1);
    tp_model_close(f.m);
}

int main(void) {
    TP_RUN(test_row);
    TP_RUN(test_at);
    return tp_test_summary();
}
