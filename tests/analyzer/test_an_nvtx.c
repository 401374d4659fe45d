/* test_an_nvtx: annotation range summary and the GPU time of kernels launched inside. */
#include "tp_an_nvtx.h"
#include "tp_an_fixture.h"
#include "tp_test.h"

/* "fwd" [0,1000) encloses "attn" [5,100) which launches k1 (100 µs of GPU time); "fwd" also
 * launches k2 (30 µs) directly; k3 is launched outside any range; a second "fwd" is empty. */
static void test_ranges(void) {
    fx_model f = fx_new();
    fx_ev(&f, "fwd", TP_CAT_USER_ANNOTATION, 0, 1000, -1, -1);
    fx_ev(&f, "attn", TP_CAT_USER_ANNOTATION, 5, 95, -1, -1);
    fx_launch(&f, "k1", 10, 5, 20, 100, 7, 1);
    fx_launch(&f, "k2", 200, 5, 210, 30, 7, 2);
    fx_launch(&f, "k3", 2000, 5, 2010, 50, 7, 3);
    fx_ev(&f, "fwd", TP_CAT_USER_ANNOTATION, 3000, 500, -1, -1);
    tp_model_finish(f.m);
    tp_an_view v;
    tp_an_nvtx nv;
    tp_an_view_build(&v, f.m, &f.m->ranks[0], NULL);
    tp_an_nvtx_run(&v, &nv);
    CHECK_EQ_U(nv.n, 2);
    const tp_an_range *fwd = &nv.r[0], *attn = &nv.r[1];
    CHECK_STR(tp_model_str(f.m, fwd->name), "fwd");
    CHECK_EQ_U(fwd->count, 2);
    CHECK_EQ_I(fwd->total, FX_US(1500));
    CHECK_EQ_I(fwd->min, FX_US(500));
    CHECK_EQ_I(fwd->max, FX_US(1000));
    CHECK_NEAR(fwd->mean, 750000, 1e-9);
    CHECK_EQ_U(fwd->n_gpu_ops, 1);
    CHECK_EQ_I(fwd->gpu_ns, FX_US(30)); /* k1 belongs to the innermost range, attn */
    CHECK_STR(tp_model_str(f.m, attn->name), "attn");
    CHECK_EQ_U(attn->n_gpu_ops, 1);
    CHECK_EQ_I(attn->gpu_ns, FX_US(100));
    CHECK_EQ_U(nv.unattributed_ops, 1);
    CHECK_EQ_I(nv.unattributed_ns, FX_US(50));
    tp_an_nvtx_free(&nv);
    tp_an_view_free(&v);
    tp_model_close(f.m);
}

/* One name in two NVTX domains is two ranges; only such names carry their domain in labels. */
static void test_domains(void) {
    fx_model f = fx_new();
    fx_ev(&f, "fwd", TP_CAT_USER_ANNOTATION, 0, 100, -1, -1);
    fx_ev(&f, "fwd", TP_CAT_USER_ANNOTATION, 200, 50, -1, -1);
    tp_events_set_domain(&f.r->ev, f.r->ev.n - 1, tp_model_intern(f.m, "aux", 3));
    fx_ev(&f, "bwd", TP_CAT_USER_ANNOTATION, 300, 10, -1, -1);
    tp_events_set_domain(&f.r->ev, f.r->ev.n - 1, tp_model_intern(f.m, "aux", 3));
    tp_model_finish(f.m);
    tp_an_view v;
    tp_an_view_build(&v, f.m, f.r, NULL);
    tp_an_nvtx nv;
    tp_an_nvtx_run(&v, &nv);
    CHECK_EQ_U(nv.n, 3);
    char b[64];
    CHECK_STR(tp_an_range_label(f.m, &nv.r[0], b, sizeof b), "fwd"); /* 100 us, default */
    CHECK_EQ_I(nv.r[0].total, FX_US(100));
    CHECK_EQ_I(nv.r[0].shared_name, 1);
    CHECK_STR(tp_an_range_label(f.m, &nv.r[1], b, sizeof b), "[aux] fwd");
    CHECK_EQ_I(nv.r[1].total, FX_US(50));
    CHECK_STR(tp_an_range_label(f.m, &nv.r[2], b, sizeof b), "bwd"); /* one domain only */
    CHECK_STR(tp_model_str(f.m, nv.r[2].domain), "aux");
    tp_an_nvtx_free(&nv);
    tp_an_view_free(&v);
    tp_model_close(f.m);
}

int main(void) {
    TP_RUN(test_ranges);
    TP_RUN(test_domains);
    return tp_test_summary();
}
