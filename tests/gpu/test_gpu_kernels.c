/* test_gpu_kernels: every CUDA kernel (and the cuDNN convolutions) against the CPU kernels,
 * then a short CUDA training run that must learn. Skips (77) without a usable GPU.
 *
 * Bound: max |cuda - cpu| <= 1e-4 * max(1, max |cpu|); the two sum in different orders. */
#include "tp_kcpu.h"
#include "tp_kcuda.h"
#include "tp_test.h"
#include "tp_train.h"

#include <cuda_runtime_api.h>

#define TOL 1e-4

static uint64_t rs = 12345;
static tp_kcuda *kc;

static float frand(void) {
    rs = rs * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(rs >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static float *host_rand(size_t n) {
    float *p = malloc(n * sizeof(float) + 4);
    for (size_t i = 0; i < n; i++)
        p[i] = frand();
    return p;
}

static void *dev_copy(const void *h, size_t bytes) {
    void *d = NULL;
    if (cudaMalloc(&d, bytes ? bytes : 4) != cudaSuccess)
        return NULL;
    if (h)
        cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice);
    else
        cudaMemset(d, 0, bytes);
    return d;
}

/* Copies n floats back from the device and compares with ref. */
static double diff(const void *dev, const float *ref, size_t n) {
    float *h = malloc(n * sizeof(float) + 4);
    cudaDeviceSynchronize();
    cudaMemcpy(h, dev, n * sizeof(float), cudaMemcpyDeviceToHost);
    double maxd = 0, maxr = 1;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)h[i] - ref[i]);
        maxd = d > maxd || d != d ? (d != d ? INFINITY : d) : maxd;
        maxr = fabs(ref[i]) > maxr ? fabs(ref[i]) : maxr;
    }
    free(h);
    return maxd / maxr;
}

static void test_conv(void) {
    tp_conv_shape s = {8, 16, 14, 14, 32, 1, 1};
    tp_kcuda_conv g = {8, 16, 14, 14, 32, 1};
    size_t nx = 8 * 16 * 14 * 14, nw = 32 * 16 * 9, ny = 8 * 32 * 14 * 14;
    float *x = host_rand(nx), *w = host_rand(nw), *b = host_rand(32), *dy = host_rand(ny);
    float *y = malloc(ny * 4), *dx = malloc(nx * 4), *dw = malloc(nw * 4), *db = malloc(32 * 4);
    float *ws = malloc(tp_conv3x3_workspace(&s) * 4);
    tp_conv3x3_fwd(&s, x, w, b, y, ws);
    tp_conv3x3_bwd_data(&s, dy, w, dx, ws);
    tp_conv3x3_bwd_filter(&s, x, dy, dw, db, ws);
    size_t wsb = tp_kcuda_conv_workspace(kc, &g);
    void *X = dev_copy(x, nx * 4), *W = dev_copy(w, nw * 4), *B = dev_copy(b, 128);
    void *DY = dev_copy(dy, ny * 4), *Y = dev_copy(NULL, ny * 4), *DX = dev_copy(NULL, nx * 4);
    void *DW = dev_copy(NULL, nw * 4), *DB = dev_copy(NULL, 128), *WS = dev_copy(NULL, wsb);
    CHECK_OK(tp_kcuda_conv_fwd(kc, 0, &g, X, W, B, Y, WS, wsb));
    CHECK_OK(tp_kcuda_conv_bwd_data(kc, 0, &g, DY, W, DX, WS, wsb));
    CHECK_OK(tp_kcuda_conv_bwd_filter(kc, 0, &g, X, DY, DW, DB, WS, wsb));
    if (wsb) /* a workspace below the query's size is refused as a cuDNN error, nothing queued */
        CHECK(tp_kcuda_conv_bwd_filter(kc, 0, &g, X, DY, DW, DB, WS, 0) >= TP_KCUDA_CUDNN_BASE);
    CHECK(diff(Y, y, ny) <= TOL);
    CHECK(diff(DX, dx, nx) <= TOL);
    CHECK(diff(DW, dw, nw) <= TOL);
    CHECK(diff(DB, db, 32) <= TOL);
}

static void test_linear_relu_pool(void) {
    int n = 33, in = 70, out = 19;
    float *x = host_rand((size_t)n * in), *w = host_rand((size_t)out * in), *b = host_rand(out);
    float *dy = host_rand((size_t)n * out), *y = malloc((size_t)n * out * 4);
    float *dx = malloc((size_t)n * in * 4), *dw = malloc((size_t)out * in * 4),
          *db = malloc(out * 4);
    tp_linear_fwd(n, in, out, x, w, b, y, 1);
    tp_linear_bwd_data(n, in, out, dy, w, dx, 1);
    tp_linear_bwd_weight(n, in, out, x, dy, dw, db, 1);
    void *X = dev_copy(x, (size_t)n * in * 4), *W = dev_copy(w, (size_t)out * in * 4);
    void *B = dev_copy(b, out * 4), *DY = dev_copy(dy, (size_t)n * out * 4);
    void *Y = dev_copy(NULL, (size_t)n * out * 4), *DX = dev_copy(NULL, (size_t)n * in * 4);
    void *DW = dev_copy(NULL, (size_t)out * in * 4), *DB = dev_copy(NULL, out * 4);
    CHECK_OK(tp_kcuda_linear_fwd(0, n, in, out, X, W, B, Y));
    CHECK_OK(tp_kcuda_linear_bwd_data(0, n, in, out, DY, W, DX));
    CHECK_OK(tp_kcuda_linear_bwd_weight(0, n, in, out, X, DY, DW, DB));
    CHECK(diff(Y, y, (size_t)n * out) <= TOL);
    CHECK(diff(DX, dx, (size_t)n * in) <= TOL);
    CHECK(diff(DW, dw, (size_t)out * in) <= TOL);
    CHECK(diff(DB, db, out) <= TOL);

    size_t cnt = 4 * 3 * 8 * 6;
    float *px = host_rand(cnt), *pdy = host_rand(cnt / 4), *py = malloc(cnt),
          *pdx = malloc(cnt * 4);
    float *ry = malloc(cnt * 4), *rdx = malloc(cnt * 4);
    int32_t *idx = malloc(cnt);
    tp_maxpool2_fwd(4, 3, 8, 6, px, py, idx);
    tp_maxpool2_bwd(4, 3, 8, 6, pdy, idx, pdx);
    tp_relu_fwd(cnt, px, ry);
    tp_relu_bwd(cnt, ry, px, rdx);
    void *PX = dev_copy(px, cnt * 4), *PDY = dev_copy(pdy, cnt), *PY = dev_copy(NULL, cnt);
    void *PDX = dev_copy(NULL, cnt * 4), *IDX = dev_copy(NULL, cnt), *RY = dev_copy(NULL, cnt * 4);
    void *RDX = dev_copy(NULL, cnt * 4);
    CHECK_OK(tp_kcuda_maxpool2_fwd(0, 4, 3, 8, 6, PX, PY, IDX));
    CHECK_OK(tp_kcuda_maxpool2_bwd(0, 4, 3, 8, 6, PDY, IDX, PDX));
    CHECK_OK(tp_kcuda_relu_fwd(0, cnt, PX, RY));
    CHECK_OK(tp_kcuda_relu_bwd(0, cnt, RY, PX, RDX));
    CHECK(diff(PY, py, cnt / 4) == 0);
    CHECK(diff(PDX, pdx, cnt) == 0);
    CHECK(diff(RY, ry, cnt) == 0);
    CHECK(diff(RDX, rdx, cnt) == 0);
}

static void test_loss_and_optimizers(void) {
    int n = 50, c = 10;
    float *z = host_rand((size_t)n * c), *p = malloc((size_t)n * c * 4);
    float *dz = malloc((size_t)n * c * 4), acc[3] = {0, 0, 0};
    int32_t lab[50];
    for (int i = 0; i < n; i++)
        lab[i] = i % c;
    tp_softmax_ce_fwd(n, c, z, lab, p, acc);
    tp_softmax_ce_bwd(n, c, p, lab, dz);
    void *Z = dev_copy(z, (size_t)n * c * 4), *L = dev_copy(lab, sizeof lab);
    void *P = dev_copy(NULL, (size_t)n * c * 4), *DZ = dev_copy(NULL, (size_t)n * c * 4);
    void *ACC = dev_copy(NULL, 12);
    CHECK_OK(tp_kcuda_softmax_ce_fwd(0, n, c, Z, L, P, ACC));
    CHECK_OK(tp_kcuda_softmax_ce_bwd(0, n, c, P, L, DZ));
    CHECK(diff(P, p, (size_t)n * c) <= TOL);
    CHECK(diff(DZ, dz, (size_t)n * c) <= TOL);
    CHECK(diff(ACC, acc, 3) <= TOL);

    size_t m = 1000;
    float *w = host_rand(m), *g = host_rand(m), *mo = host_rand(m), *v = host_rand(m);
    for (size_t i = 0; i < m; i++)
        v[i] = fabsf(v[i]);
    void *W = dev_copy(w, m * 4), *G = dev_copy(g, m * 4), *MO = dev_copy(mo, m * 4);
    void *V = dev_copy(v, m * 4), *W2 = dev_copy(w, m * 4), *M2 = dev_copy(mo, m * 4);
    float *w2 = malloc(m * 4), *m2 = malloc(m * 4);
    memcpy(w2, w, m * 4);
    memcpy(m2, mo, m * 4);
    tp_sgd_step(m, w, g, mo, 0.1f, 0.9f, 1e-3f);
    tp_adam_step(m, w2, g, m2, v, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.1f, 0.001f);
    CHECK_OK(tp_kcuda_sgd_step(0, m, W, G, MO, 0.1f, 0.9f, 1e-3f));
    CHECK_OK(tp_kcuda_adam_step(0, m, W2, G, M2, V, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.1f, 0.001f));
    CHECK(diff(W, w, m) <= TOL);
    CHECK(diff(MO, mo, m) <= TOL);
    CHECK(diff(W2, w2, m) <= TOL);
    CHECK(diff(V, v, m) <= TOL);
}

static void test_cuda_training_learns(void) {
    tp_train_opts o;
    tp_train_defaults(&o);
    o.device.kind = TP_DEVICE_CUDA;
    o.steps = 150;
    o.log_every = 0;
    tp_train_result r;
    tp_train_run(&o, &r, NULL, NULL);
    printf("  cuda: %s, loss %.3f -> %.3f, eval accuracy %.3f, %.2f ms/step\n", r.exit_reason,
           r.initial_loss, r.final_loss, r.eval_accuracy, r.mean_step_ms);
    CHECK_EQ_I(r.exit_code, 0);
    CHECK(r.final_loss <= 0.5 * r.initial_loss);
    CHECK(r.eval_accuracy > 0.9);
}

int main(void) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0)
        TP_SKIP("no usable CUDA device");
    char err[256];
    if (tp_kcuda_open(&kc, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    TP_RUN(test_conv);
    TP_RUN(test_linear_relu_pool);
    TP_RUN(test_loss_and_optimizers);
    TP_RUN(test_cuda_training_learns);
    tp_kcuda_close(kc);
    return tp_test_summary(); /* device buffers are reclaimed with the context at exit */
}
