/* test_an_timeline: temporal breakdown, idle-time breakdown, kernel breakdown and comm/comp
 * overlap on hand-built ranks with known answers. */
#include "tp_an_idle.h"
#include "tp_an_kernels.h"
#include "tp_an_overlap.h"
#include "tp_an_temporal.h"
#include "tp_an_fixture.h"
#include "tp_test.h"

/* compute [0,100) + [50,150), copy [200,260), nccl [240,300) on stream 8, a stream sync
 * [300,400) (cuda_sync with a stream: a GPU event for HTA, not GPU work natively). */
static fx_model temporal_model(void) {
    fx_model f = fx_new();
    fx_launch(&f, "gemm", 0, 1, 0, 100, 7, 1);
    fx_launch(&f, "relu", 1, 1, 50, 100, 7, 2);
    fx_ev(&f, "Memcpy HtoD (Pageable -> Device)", TP_CAT_MEMCPY, 200, 60, 7, 3);
    fx_ev(&f, "cudaMemcpyAsync", TP_CAT_CUDA_RUNTIME, 150, 2, -1, 3);
    fx_launch(&f, "ncclKernel_AllReduce", 2, 1, 240, 60, 8, 4);
    fx_ev(&f, "Stream Sync", TP_CAT_CUDA_SYNC, 300, 100, 7, 5);
    tp_model_finish(f.m);
    return f;
}

static void test_temporal_native(void) {
    fx_model f = temporal_model();
    tp_an_view v;
    tp_an_temporal t;
    tp_an_view_build(&v, f.m, &f.m->ranks[0], NULL);
    tp_an_temporal_run(&v, &t);
    CHECK_EQ_I(t.has_gpu, 1);
    CHECK_EQ_I(t.span, FX_US(300));
    CHECK_EQ_I(t.busy, FX_US(250));
    CHECK_EQ_I(t.idle, FX_US(50));
    CHECK_EQ_I(t.compute, FX_US(150));
    CHECK_EQ_I(t.non_compute, FX_US(100));
    tp_an_view_free(&v);
    tp_model_close(f.m);
}

static void test_temporal_hta(void) {
    fx_model f = temporal_model();
    tp_an_opts o;
    tp_an_opts_init(&o);
    o.compat_hta = 1;
    tp_an_view v;
    tp_an_temporal t;
    tp_an_view_build(&v, f.m, &f.m->ranks[0], &o);
    tp_an_temporal_run(&v, &t);
    CHECK_EQ_I(t.span, FX_US(400)); /* the stream sync counts for HTA */
    CHECK_EQ_I(t.idle, FX_US(50));
    CHECK_EQ_I(t.compute, FX_US(150));
    CHECK_EQ_I(t.non_compute, FX_US(200));
    tp_an_view_free(&v);
    tp_model_close(f.m);
}

/* temporal's two unions from one walk of gpu_order give what two walks give (a fresh view's
 * tp_an_gpu_union per kind), and are kept for the next analysis: overlapping and disjoint
 * kernels and copies, computation ones in between, starts distinct. */
static void test_temporal_one_walk(void) {
    fx_model f = fx_new();
    uint64_t s = 5;
    double at = 0;
    for (int k = 0; k < 300; k++) {
        s = s * 6364136223846793005u + 1442695040888963407u;
        at += 1 + (double)(s >> 60);             /* distinct starts */
        double dur = 1 + (double)(s >> 58 & 15); /* some overlap the next ones */
        if (s >> 57 & 1)
            fx_launch(&f, s >> 56 & 1 ? "gemm" : "ncclKernel_AllReduce", at - 0.5, 0.2, at, dur, 7,
                      k + 1);
        else
            fx_ev(&f, "Memcpy HtoD (Pageable -> Device)", TP_CAT_MEMCPY, at, dur, 7, k + 1);
    }
    tp_model_finish(f.m);
    tp_an_view v, w;
    tp_an_temporal t;
    tp_an_view_build(&v, f.m, &f.m->ranks[0], NULL);
    tp_an_view_build(&w, f.m, &f.m->ranks[0], NULL);
    CHECK(v.gpu_order != NULL);
    tp_an_temporal_run(&v, &t);
    int64_t first, last, busy = tp_an_gpu_union(&w, ~0u, &first, &last);
    int64_t comp = tp_an_gpu_union(&w, 1u << TP_KT_COMPUTATION, NULL, NULL);
    CHECK_EQ_I(t.busy, busy);
    CHECK_EQ_I(t.first_ts, first);
    CHECK_EQ_I(t.last_end, last);
    CHECK_EQ_I(t.compute, comp);
    CHECK(comp > 0 && comp < busy);
    CHECK_EQ_I(tp_an_gpu_union(&v, 1u << TP_KT_COMPUTATION, NULL, NULL), comp); /* kept */
    tp_an_view_free(&v);
    tp_an_view_free(&w);
    tp_model_close(f.m);
}

static void test_no_gpu(void) {
    fx_model f = fx_new();
    fx_ev(&f, "aten::add", TP_CAT_CPU_OP, 0, 10, -1, -1);
    tp_model_finish(f.m);
    tp_an_view v;
    tp_an_temporal t;
    tp_an_view_build(&v, f.m, &f.m->ranks[0], NULL);
    tp_an_temporal_run(&v, &t);
    CHECK_EQ_I(t.has_gpu, 0);
    CHECK_EQ_I(t.span, 0);
    tp_an_view_free(&v);
    tp_model_close(f.m);
}

/* Stream 7: K2 follows K1 after 10 µs (kernel wait), K3 after 100 µs although launched long
 * before (other), K4 launched after K3 ended (host wait, 60 µs). */
static void test_idle(void) {
    fx_model f = fx_new();
    fx_launch(&f, "k1", 0, 5, 10, 90, 7, 1);
    fx_launch(&f, "k2", 20, 5, 110, 90, 7, 2);
    fx_launch(&f, "k3", 30, 5, 300, 100, 7, 3);
    fx_launch(&f, "k4", 450, 5, 460, 40, 7, 4);
    tp_model_finish(f.m);
    tp_an_view v;
    tp_an_idle idle;
    tp_an_view_build(&v, f.m, &f.m->ranks[0], NULL);
    tp_an_idle_run(&v, &idle);
    CHECK_EQ_U(idle.n, 1);
    CHECK_EQ_I(idle.s[0].stream, 7);
    CHECK_EQ_U(idle.s[0].n_ops, 4);
    CHECK_EQ_I(idle.s[0].idle[TP_IDLE_HOST_WAIT], FX_US(60));
    CHECK_EQ_I(idle.s[0].idle[TP_IDLE_KERNEL_WAIT], FX_US(10));
    CHECK_EQ_I(idle.s[0].idle[TP_IDLE_OTHER], FX_US(100));
    CHECK_EQ_U(idle.s[0].gaps[TP_IDLE_OTHER].count, 1);
    CHECK_NEAR(idle.s[0].gaps[TP_IDLE_HOST_WAIT].max, 60000, 0);
    CHECK_EQ_I(tp_an_idle_total(&idle.s[0]), FX_US(170));
    tp_an_idle_free(&idle);
    tp_an_view_free(&v);
    tp_model_close(f.m);
}

static void test_kernels(void) {
    fx_model f = fx_new();
    fx_launch(&f, "gemm", 0, 1, 0, 10, 7, 1);
    fx_launch(&f, "gemm", 1, 1, 20, 20, 7, 2);
    fx_launch(&f, "gemm", 2, 1, 50, 30, 7, 3);
    fx_launch(&f, "ncclKernel_AllReduce", 3, 1, 60, 90, 8, 4);                 /* [60,150) */
    fx_ev(&f, "Memcpy DtoH (Device -> Pinned)", TP_CAT_MEMCPY, 120, 80, 9, 5); /* [120,200) */
    fx_ev(&f, "Event Sync", TP_CAT_CUDA_SYNC, 300, 10, 9, 6);                  /* OTHER type */
    tp_model_finish(f.m);
    tp_an_opts o;
    tp_an_opts_init(&o);
    o.compat_hta = 1;
    tp_an_view v;
    tp_an_kernels k;
    tp_an_view_build(&v, f.m, &f.m->ranks[0], &o);
    tp_an_kernels_run(&v, &k);
    CHECK_EQ_U(k.n, 3);
    CHECK_STR(tp_model_str(f.m, k.k[0].name), "ncclKernel_AllReduce");
    CHECK_EQ_I(k.k[0].ktype, TP_KT_COMMUNICATION);
    CHECK_STR(tp_model_str(f.m, k.k[1].name), "Memcpy DtoH (Device -> Pinned)");
    CHECK_EQ_I(k.k[1].ktype, TP_KT_MEMORY);
    const tp_an_kernel_row *g = &k.k[2];
    CHECK_EQ_U(g->count, 3);
    CHECK_EQ_I(g->sum, FX_US(60));
    CHECK_EQ_I(g->min, FX_US(10));
    CHECK_EQ_I(g->max, FX_US(30));
    CHECK_NEAR(g->mean, 20000, 1e-9);
    CHECK_NEAR(g->std, 10000, 1e-6);
    /* compute [0,10) [20,40) [50,80); comm [60,150); memory [120,200) */
    unsigned C = 1, N = 2, M = 4;
    CHECK_EQ_I(k.class_ns[C], FX_US(10 + 20 + 10));
    CHECK_EQ_I(k.class_ns[C | N], FX_US(20));
    CHECK_EQ_I(k.class_ns[N], FX_US(40));
    CHECK_EQ_I(k.class_ns[N | M], FX_US(30));
    CHECK_EQ_I(k.class_ns[M], FX_US(50));
    CHECK_EQ_I(k.class_total, FX_US(180));
    char lb[96];
    CHECK_STR(tp_an_kernel_class_label(N | M, lb, sizeof lb), "COMMUNICATION overlapping MEMORY");
    tp_an_overlap ov;
    tp_an_overlap_run(&v, &ov);
    CHECK_EQ_I(ov.comm_ns, FX_US(90));
    CHECK_EQ_I(ov.overlap_ns, FX_US(20));
    CHECK_NEAR(ov.pct, 100.0 * 20 / 90, 1e-9);
    tp_an_kernels_free(&k);
    tp_an_view_free(&v);
    tp_model_close(f.m);
}

static void test_ktype(void) {
    CHECK_EQ_I(tp_ktype_of("ncclDevKernel_AllGather"), TP_KT_COMMUNICATION);
    CHECK_EQ_I(tp_ktype_of("hipFooKernel"), TP_KT_COMMUNICATION); /* HTA's ^hip rule */
    CHECK_EQ_I(tp_ktype_of("Memset (Device)"), TP_KT_MEMORY);
    CHECK_EQ_I(tp_ktype_of("Context Sync"), TP_KT_OTHER);
    CHECK_EQ_I(tp_ktype_of("Stream Wait Event"), TP_KT_OTHER);
    CHECK_EQ_I(tp_ktype_of("cudaLaunchKernel"), TP_KT_OTHER);
    CHECK_EQ_I(tp_ktype_of("void at::native::vectorized_elementwise_kernel<4>"), TP_KT_COMPUTATION);
}

int main(void) {
    TP_RUN(test_temporal_native);
    TP_RUN(test_temporal_hta);
    TP_RUN(test_temporal_one_walk);
    TP_RUN(test_no_gpu);
    TP_RUN(test_idle);
    TP_RUN(test_kernels);
    TP_RUN(test_ktype);
    return tp_test_summary();
}
