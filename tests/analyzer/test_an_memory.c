/* test_an_memory: bandwidth time-series summary and copy statistics by kind and source. */
#include "tp_an_memory.h"
#include "tp_an_fixture.h"
#include "tp_test.h"

/* Two overlapping HtoD copies (10 and 20 GB/s) from pageable memory, a pinned DtoH copy
 * and a memset. HtoD concurrent bandwidth: 10, 30, 20 (then 0, not counted). */
static fx_model copies(void) {
    fx_model f = fx_new();
    fx_copy(&f, "Memcpy HtoD (Pageable -> Device)", 0, 100, 1000000, 1, 1, 1);
    fx_copy(&f, "Memcpy HtoD (Pageable -> Device)", 50, 100, 2000000, 1, 1, 2);
    fx_copy(&f, "Memcpy DtoH (Device -> Pinned)", 300, 10, 500000, 2, 3, 3);
    fx_copy(&f, "Memset (Device)", 400, 2, 4000, 0, 3, 4);
    tp_model_finish(f.m);
    return f;
}

static void test_bw_summary(void) {
    fx_model f = copies();
    for (int compat = 0; compat < 2; compat++) {
        tp_an_view v;
        tp_an_memory mem;
        fx_view(&v, &f, compat);
        tp_an_memory_run(&v, &mem);
        CHECK_EQ_U(mem.n_bw, 3);
        CHECK_STR(mem.bw[0].type, "Memcpy DtoH");
        CHECK_STR(mem.bw[1].type, "Memcpy HtoD");
        CHECK_STR(mem.bw[2].type, "Memset");
        CHECK_EQ_U(mem.bw[1].bw.count, 3);
        CHECK_NEAR(mem.bw[1].bw.mean, 20, 1e-9);
        CHECK_NEAR(mem.bw[1].bw.max, 30, 1e-9);
        CHECK_NEAR(mem.bw[1].bw.min, 10, 1e-9);
        CHECK_NEAR(mem.bw[0].bw.max, 50, 1e-9);
        tp_an_memory_free(&mem);
        tp_an_view_free(&v);
    }
    tp_model_close(f.m);
}

static void test_copy_stats(void) {
    fx_model f = copies();
    tp_an_view v;
    tp_an_memory mem;
    tp_an_view_build(&v, f.m, &f.m->ranks[0], NULL);
    tp_an_memory_run(&v, &mem);
    CHECK_EQ_U(mem.n_copy, 3);
    const tp_an_copy *h = &mem.copy[0];
    CHECK_STR(tp_an_copy_kind_name(h->copy_kind), "HtoD");
    CHECK_STR(tp_an_mem_kind_name(h->src_kind), "pageable");
    CHECK_EQ_U(h->count, 2);
    CHECK_EQ_I(h->bytes, 3000000);
    CHECK_EQ_I(h->dur_ns, FX_US(200));
    CHECK_NEAR(h->gbps, 15, 1e-9);
    CHECK_NEAR(h->max_gbps, 20, 1e-9);
    CHECK_STR(tp_an_copy_kind_name(mem.copy[1].copy_kind), "DtoH");
    CHECK_STR(tp_an_copy_kind_name(mem.copy[2].copy_kind), "Memset");
    CHECK_NEAR(mem.copy[2].gbps, 2, 1e-9);
    tp_an_memory_free(&mem);
    tp_an_view_free(&v);
    tp_model_close(f.m);
}

int main(void) {
    TP_RUN(test_bw_summary);
    TP_RUN(test_copy_stats);
    return tp_test_summary();
}
