/* test_kernels: every CPU kernel against a naive double-precision reference.
 *
 * Forward kernels are compared with direct loops in double. Backward kernels are compared
 * with double-precision references, and those references are themselves checked against
 * central finite differences of the double forward (so a wrong reference cannot hide a
 * wrong kernel). Bound: max |kernel - ref| <= 2e-5 * max(1, max |ref|) for products
 * summing at most a few thousand terms (float32 accumulation error), checked on several
 * shapes, with 1 and 2 threads and with every GEMM micro-kernel this CPU runs. */
#include "tp_gemm.h"
#include "tp_kcpu.h"
#include "tp_test.h"

#include <stdint.h>

#define REL_TOL 2e-5

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static float frand(void) { /* uniform in [-1, 1) */
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (float)((rng_state >> 40) * (1.0 / 16777216.0) * 2.0 - 1.0);
}

static float *rand_buf(size_t n) {
    float *p = malloc(n * sizeof *p + 4);
    for (size_t i = 0; i < n; i++)
        p[i] = frand();
    return p;
}

/* max |a-b| relative to max(1, max |ref|). */
static double rel_err(const float *a, const double *ref, size_t n) {
    double maxd = 0.0, maxr = 1.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - ref[i]);
        if (d > maxd || d != d)
            maxd = d != d ? INFINITY : d;
        if (fabs(ref[i]) > maxr)
            maxr = fabs(ref[i]);
    }
    return maxd / maxr;
}

/* ---- GEMM ---- */

static void gemm_case(int ta, int tb, int m, int n, int k, float beta, int threads) {
    int lda = ta ? m + 3 : k + 1, ldb = tb ? k + 2 : n + 5, ldc = n + 1;
    float *a = rand_buf((size_t)(ta ? k : m) * lda), *b = rand_buf((size_t)(tb ? n : k) * ldb);
    float *c = rand_buf((size_t)m * ldc);
    double *ref = calloc((size_t)m * ldc, sizeof *ref);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < ldc; j++) {
            double s = 0.0;
            for (int p = 0; p < k && j < n; p++)
                s += (double)(ta ? a[(size_t)p * lda + i] : a[(size_t)i * lda + p]) *
                     (tb ? b[(size_t)j * ldb + p] : b[(size_t)p * ldb + j]);
            double old = c[(size_t)i * ldc + j];
            ref[(size_t)i * ldc + j] = j < n ? 0.5 * s + beta * old : old; /* padding kept */
        }
    tp_gemm(ta, tb, m, n, k, 0.5f, a, lda, b, ldb, beta, c, ldc, threads);
    double e = rel_err(c, ref, (size_t)m * ldc);
    if (!(e <= REL_TOL * (1 + k / 256)))
        fprintf(stderr, "gemm ta=%d tb=%d m=%d n=%d k=%d beta=%g threads=%d: err %g\n", ta, tb, m,
                n, k, beta, threads, e);
    free(a);
    free(b);
    free(c);
    free(ref);
    CHECK(e <= REL_TOL * (1 + k / 256));
}

static void test_gemm_all_isas(void) {
    static const int shapes[][3] = {{1, 1, 1},    {6, 32, 7},     {7, 33, 9},     {13, 17, 300},
                                    {64, 64, 64}, {150, 70, 513}, {200, 500, 40}, {5, 3100, 3}};
    const char *isas[] = {"avx512", "avx2", "generic"};
    int ran = 0;
    for (int s = 0; s < 3; s++) {
        if (tp_gemm_force_isa(isas[s]) != 0)
            continue;
        ran++;
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
            for (int t = 0; t < 4; t++) {
                gemm_case(t & 1, t >> 1, shapes[i][0], shapes[i][1], shapes[i][2], 0.0f, 1);
                gemm_case(t & 1, t >> 1, shapes[i][0], shapes[i][1], shapes[i][2], 0.75f, 2);
            }
    }
    tp_gemm_force_isa(NULL);
    CHECK(ran >= 1);
    CHECK_EQ_I(tp_gemm_force_isa("no-such-isa"), -1);
}

static void test_gemm_beta_zero_ignores_nan(void) {
    float a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 0, 1}, c[4] = {NAN, NAN, NAN, NAN};
    tp_gemm(0, 0, 2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2, 1);
    CHECK_NEAR(c[0], 1.0, 0);
    CHECK_NEAR(c[3], 4.0, 0);
}

/* ---- convolution: double reference, checked by finite differences ---- */

static double conv_ref_at(const tp_conv_shape *s, const double *x, const double *w, const double *b,
                          int i, int kk, int oy, int ox) {
    double sum = b ? b[kk] : 0.0;
    for (int ch = 0; ch < s->c; ch++)
        for (int ky = 0; ky < 3; ky++)
            for (int kx = 0; kx < 3; kx++) {
                int iy = oy + ky - s->pad, ix = ox + kx - s->pad;
                if (iy < 0 || iy >= s->h || ix < 0 || ix >= s->w)
                    continue;
                sum += w[((kk * s->c + ch) * 3 + ky) * 3 + kx] *
                       x[(((size_t)i * s->c + ch) * s->h + iy) * s->w + ix];
            }
    return sum;
}

static void conv_ref_fwd(const tp_conv_shape *s, const double *x, const double *w, const double *b,
                         double *y) {
    int oh = tp_conv_out_h(s), ow = tp_conv_out_w(s);
    for (int i = 0; i < s->n; i++)
        for (int kk = 0; kk < s->k; kk++)
            for (int oy = 0; oy < oh; oy++)
                for (int ox = 0; ox < ow; ox++)
                    y[(((size_t)i * s->k + kk) * oh + oy) * ow + ox] =
                        conv_ref_at(s, x, w, b, i, kk, oy, ox);
}

/* Analytic gradients of L = sum(y * dy) in double: dx, dw, db. */
static void conv_ref_bwd(const tp_conv_shape *s, const double *x, const double *w, const double *dy,
                         double *dx, double *dw, double *db) {
    int oh = tp_conv_out_h(s), ow = tp_conv_out_w(s);
    memset(dx, 0, sizeof(double) * s->n * s->c * s->h * s->w);
    memset(dw, 0, sizeof(double) * s->k * s->c * 9);
    memset(db, 0, sizeof(double) * s->k);
    for (int i = 0; i < s->n; i++)
        for (int kk = 0; kk < s->k; kk++)
            for (int oy = 0; oy < oh; oy++)
                for (int ox = 0; ox < ow; ox++) {
                    double g = dy[(((size_t)i * s->k + kk) * oh + oy) * ow + ox];
                    db[kk] += g;
                    for (int ch = 0; ch < s->c; ch++)
                        for (int ky = 0; ky < 3; ky++)
                            for (int kx = 0; kx < 3; kx++) {
                                int iy = oy + ky - s->pad, ix = ox + kx - s->pad;
                                if (iy < 0 || iy >= s->h || ix < 0 || ix >= s->w)
                                    continue;
                                size_t xi = (((size_t)i * s->c + ch) * s->h + iy) * s->w + ix;
                                size_t wi = ((kk * s->c + ch) * 3 + ky) * 3 + kx;
                                dx[xi] += g * w[wi];
                                dw[wi] += g * x[xi];
                            }
                }
}

static double *to_double(const float *f, size_t n) {
    double *d = malloc(n * sizeof *d + 8);
    for (size_t i = 0; i < n; i++)
        d[i] = f[i];
    return d;
}

static double dot_d(const double *a, const double *b, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

/* Central difference of L(v) = <conv(x, w, b), dy> along coordinate j of `v`. */
static double conv_fd(const tp_conv_shape *s, double *x, double *w, double *b, const double *dy,
                      double *v, size_t j, double *ybuf, size_t ny) {
    const double h = 1e-6;
    double keep = v[j];
    v[j] = keep + h;
    conv_ref_fwd(s, x, w, b, ybuf);
    double lp = dot_d(ybuf, dy, ny);
    v[j] = keep - h;
    conv_ref_fwd(s, x, w, b, ybuf);
    double lm = dot_d(ybuf, dy, ny);
    v[j] = keep;
    return (lp - lm) / (2 * h);
}

static void conv_case(int n, int c, int h, int w, int k, int pad, int threads) {
    tp_conv_shape s = {n, c, h, w, k, pad, threads};
    int oh = tp_conv_out_h(&s), ow = tp_conv_out_w(&s);
    size_t nx = (size_t)n * c * h * w, nw = (size_t)k * c * 9, ny = (size_t)n * k * oh * ow;
    float *x = rand_buf(nx), *wt = rand_buf(nw), *b = rand_buf(k), *dy = rand_buf(ny);
    float *y = malloc(ny * 4), *dx = malloc(nx * 4), *dw = malloc(nw * 4), *db = malloc(k * 4);
    float *ws = malloc(tp_conv3x3_workspace(&s) * 4);
    double *xd = to_double(x, nx), *wd = to_double(wt, nw), *bd = to_double(b, k);
    double *dyd = to_double(dy, ny), *yr = malloc(ny * 8), *dxr = malloc(nx * 8);
    double *dwr = malloc(nw * 8), *dbr = malloc(k * 8);

    tp_conv3x3_fwd(&s, x, wt, b, y, ws);
    conv_ref_fwd(&s, xd, wd, bd, yr);
    double ef = rel_err(y, yr, ny);
    tp_conv3x3_bwd_data(&s, dy, wt, dx, ws);
    tp_conv3x3_bwd_filter(&s, x, dy, dw, db, ws);
    conv_ref_bwd(&s, xd, wd, dyd, dxr, dwr, dbr);
    double ex = rel_err(dx, dxr, nx), ew = rel_err(dw, dwr, nw), eb = rel_err(db, dbr, k);
    /* the reference backward agrees with finite differences on a few coordinates */
    double fd_err = 0;
    for (size_t j = 0; j < 5; j++) {
        size_t xi = (j * 7919) % nx, wi = (j * 104729) % nw;
        fd_err = fmax(fd_err, fabs(conv_fd(&s, xd, wd, bd, dyd, xd, xi, yr, ny) - dxr[xi]));
        fd_err = fmax(fd_err, fabs(conv_fd(&s, xd, wd, bd, dyd, wd, wi, yr, ny) - dwr[wi]));
        fd_err = fmax(fd_err, fabs(conv_fd(&s, xd, wd, bd, dyd, bd, j % k, yr, ny) - dbr[j % k]));
    }
    if (ef > REL_TOL || ex > REL_TOL || ew > REL_TOL || eb > REL_TOL || fd_err > 1e-5)
        fprintf(stderr, "conv n%d c%d %dx%d k%d pad%d t%d: fwd %g dx %g dw %g db %g fd %g\n", n, c,
                h, w, k, pad, threads, ef, ex, ew, eb, fd_err);
    void *bufs[] = {x, wt, b, dy, y, dx, dw, db, ws, xd, wd, bd, dyd, yr, dxr, dwr, dbr};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        free(bufs[i]);
    CHECK(ef <= REL_TOL);
    CHECK(ex <= REL_TOL);
    CHECK(ew <= REL_TOL);
    CHECK(eb <= REL_TOL);
    CHECK(fd_err <= 1e-5);
}

static void test_conv(void) {
    conv_case(1, 1, 5, 5, 1, 1, 1);
    conv_case(2, 3, 7, 6, 4, 1, 1);
    conv_case(3, 2, 8, 8, 5, 0, 2);
    conv_case(4, 1, 28, 28, 16, 1, 2);  /* SimpleCNN conv1 */
    conv_case(2, 16, 14, 14, 32, 1, 1); /* SimpleCNN conv2 */
}

/* ---- relu, pool ---- */

static void test_relu(void) {
    size_t n = 1001;
    float *x = rand_buf(n), *dy = rand_buf(n), *y = malloc(n * 4), *dx = malloc(n * 4);
    tp_relu_fwd(n, x, y);
    tp_relu_bwd(n, y, dy, dx);
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        bad += y[i] != (x[i] > 0 ? x[i] : 0.0f);
        bad += dx[i] != (x[i] > 0 ? dy[i] : 0.0f);
    }
    free(x);
    free(dy);
    free(y);
    free(dx);
    CHECK_EQ_I(bad, 0);
}

static void pool_case(int n, int c, int h, int w) {
    size_t nx = (size_t)n * c * h * w, ny = nx / 4;
    float *x = rand_buf(nx), *dy = rand_buf(ny), *y = malloc(ny * 4), *dx = malloc(nx * 4);
    int32_t *idx = malloc(ny * 4);
    double *dxr = calloc(nx, 8), *yr = malloc(ny * 8);
    tp_maxpool2_fwd(n, c, h, w, x, y, idx);
    tp_maxpool2_bwd(n, c, h, w, dy, idx, dx);
    for (size_t pl = 0; pl < (size_t)n * c; pl++)
        for (int oy = 0; oy < h / 2; oy++)
            for (int ox = 0; ox < w / 2; ox++) {
                size_t best = pl * h * w + (size_t)(2 * oy) * w + 2 * ox;
                for (int q = 1; q < 4; q++) {
                    size_t cand = pl * h * w + (size_t)(2 * oy + q / 2) * w + 2 * ox + q % 2;
                    if (x[cand] > x[best])
                        best = cand;
                }
                size_t o = pl * (h / 2) * (w / 2) + (size_t)oy * (w / 2) + ox;
                yr[o] = x[best];
                dxr[best] += dy[o];
            }
    double ey = rel_err(y, yr, ny), ex = rel_err(dx, dxr, nx);
    free(x);
    free(dy);
    free(y);
    free(dx);
    free(idx);
    free(dxr);
    free(yr);
    CHECK(ey == 0.0);
    CHECK(ex == 0.0);
}

static void test_pool(void) {
    pool_case(1, 1, 2, 2);
    pool_case(2, 3, 8, 6);
    pool_case(4, 16, 28, 28);
}

/* ---- linear ---- */

static void linear_case(int n, int in, int out, int threads) {
    float *x = rand_buf((size_t)n * in), *w = rand_buf((size_t)out * in), *b = rand_buf(out);
    float *dy = rand_buf((size_t)n * out), *y = malloc((size_t)n * out * 4);
    float *dx = malloc((size_t)n * in * 4), *dw = malloc((size_t)out * in * 4);
    float *db = malloc((size_t)out * 4);
    double *yr = calloc((size_t)n * out, 8), *dxr = calloc((size_t)n * in, 8);
    double *dwr = calloc((size_t)out * in, 8), *dbr = calloc(out, 8);
    for (int i = 0; i < n; i++)
        for (int o = 0; o < out; o++) {
            double s = b[o], g = dy[(size_t)i * out + o];
            for (int j = 0; j < in; j++) {
                s += (double)x[(size_t)i * in + j] * w[(size_t)o * in + j];
                dxr[(size_t)i * in + j] += g * w[(size_t)o * in + j];
                dwr[(size_t)o * in + j] += g * x[(size_t)i * in + j];
            }
            yr[(size_t)i * out + o] = s;
            dbr[o] += g;
        }
    tp_linear_fwd(n, in, out, x, w, b, y, threads);
    tp_linear_bwd_data(n, in, out, dy, w, dx, threads);
    tp_linear_bwd_weight(n, in, out, x, dy, dw, db, threads);
    double e1 = rel_err(y, yr, (size_t)n * out), e2 = rel_err(dx, dxr, (size_t)n * in);
    double e3 = rel_err(dw, dwr, (size_t)out * in), e4 = rel_err(db, dbr, out);
    void *bufs[] = {x, w, b, dy, y, dx, dw, db, yr, dxr, dwr, dbr};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        free(bufs[i]);
    CHECK(e1 <= REL_TOL);
    CHECK(e2 <= REL_TOL);
    CHECK(e3 <= REL_TOL);
    CHECK(e4 <= REL_TOL);
}

static void test_linear(void) {
    linear_case(1, 1, 1, 1);
    linear_case(3, 5, 7, 1);
    linear_case(64, 1568, 10, 2); /* SimpleCNN classifier */
    linear_case(130, 257, 129, 2);
}

/* ---- softmax cross-entropy (checked against finite differences of the double loss) ---- */

static double ce_loss_ref(int n, int classes, const double *z, const int32_t *labels) {
    double total = 0;
    for (int i = 0; i < n; i++) {
        double mx = z[i * classes], s = 0;
        for (int j = 1; j < classes; j++)
            mx = fmax(mx, z[i * classes + j]);
        for (int j = 0; j < classes; j++)
            s += exp(z[i * classes + j] - mx);
        total += log(s) + mx - z[i * classes + labels[i]];
    }
    return total / n;
}

static void ce_case(int n, int classes) {
    float *z = rand_buf((size_t)n * classes), *p = malloc((size_t)n * classes * 4);
    float *dz = malloc((size_t)n * classes * 4), acc[3] = {0.5f, 1.0f, 2.0f};
    int32_t *lab = malloc((size_t)n * 4);
    for (int i = 0; i < n; i++)
        lab[i] = (int32_t)((i * 7 + 3) % classes);
    for (int i = 0; i < n * classes; i++)
        z[i] *= 4.0f;
    tp_softmax_ce_fwd(n, classes, z, lab, p, acc);
    tp_softmax_ce_bwd(n, classes, p, lab, dz);
    double *zd = to_double(z, (size_t)n * classes), *gr = malloc((size_t)n * classes * 8);
    int correct = 0;
    for (int i = 0; i < n; i++) {
        int arg = 0;
        for (int j = 1; j < classes; j++)
            arg = z[i * classes + j] > z[i * classes + arg] ? j : arg;
        correct += arg == lab[i];
    }
    for (int j = 0; j < n * classes; j++) {
        double keep = zd[j];
        zd[j] = keep + 1e-6;
        double lp = ce_loss_ref(n, classes, zd, lab);
        zd[j] = keep - 1e-6;
        double lm = ce_loss_ref(n, classes, zd, lab);
        zd[j] = keep;
        gr[j] = (lp - lm) / 2e-6;
    }
    double loss = ce_loss_ref(n, classes, zd, lab), eg = rel_err(dz, gr, (size_t)n * classes);
    free(z);
    free(p);
    free(dz);
    free(lab);
    free(zd);
    free(gr);
    CHECK_NEAR(acc[0] - 0.5f, loss, 1e-5 * fmax(1.0, loss));
    CHECK_NEAR(acc[1] - 1.0f, correct, 0);
    CHECK_NEAR(acc[2] - 2.0f, n, 0);
    CHECK(eg <= 1e-6);
}

static void test_softmax_ce(void) {
    ce_case(1, 2);
    ce_case(5, 10);
    ce_case(64, 10);
}

static void test_softmax_ce_bad_label_is_safe(void) {
    float z[4] = {1, 2, 3, 4}, p[4], acc[3] = {0, 0, 0};
    int32_t lab[2] = {-1, 7};
    tp_softmax_ce_fwd(2, 2, z, lab, p, acc);
    CHECK_NEAR(acc[0], 0.0, 0);
    CHECK_NEAR(acc[1], 0.0, 0);
    CHECK_NEAR(acc[2], 2.0, 0);
}

/* ---- optimizers: one step against the formulas in double ---- */

static void test_sgd(void) {
    size_t n = 257;
    float *w = rand_buf(n), *g = rand_buf(n), *m = rand_buf(n);
    double *wr = to_double(w, n), *mr = to_double(m, n);
    for (size_t i = 0; i < n; i++) {
        double gi = g[i] + 1e-4 * wr[i];
        mr[i] = 0.9 * mr[i] + gi;
        wr[i] -= 0.05 * mr[i];
    }
    tp_sgd_step(n, w, g, m, 0.05f, 0.9f, 1e-4f);
    double ew = rel_err(w, wr, n), em = rel_err(m, mr, n);
    free(w);
    free(g);
    free(m);
    free(wr);
    free(mr);
    CHECK(ew <= 1e-6);
    CHECK(em <= 1e-6);
}

static void test_adam(void) {
    size_t n = 257;
    float *w = rand_buf(n), *g = rand_buf(n), *m = rand_buf(n), *v = rand_buf(n);
    for (size_t i = 0; i < n; i++)
        v[i] = fabsf(v[i]);
    double *wr = to_double(w, n), *mr = to_double(m, n), *vr = to_double(v, n);
    double b1 = 0.9, b2 = 0.999, bc1 = 1 - pow(b1, 3), bc2 = 1 - pow(b2, 3);
    for (size_t i = 0; i < n; i++) {
        mr[i] = b1 * mr[i] + (1 - b1) * g[i];
        vr[i] = b2 * vr[i] + (1 - b2) * (double)g[i] * g[i];
        wr[i] -= 1e-3 * (mr[i] / bc1) / (sqrt(vr[i] / bc2) + 1e-8);
    }
    tp_adam_step(n, w, g, m, v, 1e-3f, 0.9f, 0.999f, 1e-8f, (float)bc1, (float)bc2);
    double ew = rel_err(w, wr, n), em = rel_err(m, mr, n), ev = rel_err(v, vr, n);
    void *bufs[] = {w, g, m, v, wr, mr, vr};
    for (size_t i = 0; i < 7; i++)
        free(bufs[i]);
    CHECK(ew <= 1e-6);
    CHECK(em <= 1e-6);
    CHECK(ev <= 1e-6);
}

int main(void) {
    TP_RUN(test_gemm_all_isas);
    TP_RUN(test_gemm_beta_zero_ignores_nan);
    TP_RUN(test_conv);
    TP_RUN(test_relu);
    TP_RUN(test_pool);
    TP_RUN(test_linear);
    TP_RUN(test_softmax_ce);
    TP_RUN(test_softmax_ce_bad_label_is_safe);
    TP_RUN(test_sgd);
    TP_RUN(test_adam);
    return tp_test_summary();
}
