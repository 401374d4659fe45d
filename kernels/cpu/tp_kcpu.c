/* tp_kcpu: CPU kernels (see tp_kcpu.h).
 *
 * Convolution is im2col + GEMM per image: the 3x3 patches of one image become a
 * (c*9) x (oh*ow) matrix, so forward is W[k, c*9] . col, the filter gradient is
 * dy . col^T and the data gradient is col2im(W^T . dy). Images are split across threads;
 * each thread owns a slice of the workspace. */
#include "tp_kcpu.h"

#include "tp_gemm.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

/* ---- a tiny fork-join over index ranges ---- */

typedef void (*range_fn)(void *ctx, int tid, int lo, int hi);

typedef struct {
    range_fn fn;
    void *ctx;
    int tid, lo, hi;
} range_job;

static void *range_job_run(void *p) {
    range_job *j = p;
    j->fn(j->ctx, j->tid, j->lo, j->hi);
    return NULL;
}

/* Runs fn over [0, count) split into `threads` contiguous ranges; the caller runs range 0.
 * A thread that cannot be started has its range run by the caller instead. */
static void par_ranges(int threads, int count, range_fn fn, void *ctx) {
    range_job jobs[16];
    pthread_t tids[16];
    int ok[16] = {0};
    if (threads > count)
        threads = count;
    if (threads > 16)
        threads = 16;
    if (threads <= 1) {
        fn(ctx, 0, 0, count);
        return;
    }
    int chunk = (count + threads - 1) / threads;
    for (int t = 0; t < threads; t++) {
        int lo = t * chunk, hi = lo + chunk < count ? lo + chunk : count;
        jobs[t] = (range_job){fn, ctx, t, lo, hi < lo ? lo : hi};
    }
    for (int t = 1; t < threads; t++)
        ok[t] = pthread_create(&tids[t], NULL, range_job_run, &jobs[t]) == 0;
    range_job_run(&jobs[0]);
    for (int t = 1; t < threads; t++) {
        if (ok[t])
            pthread_join(tids[t], NULL);
        else
            range_job_run(&jobs[t]);
    }
}

/* ---- convolution ---- */

static size_t col_floats(const tp_conv_shape *s) {
    return (size_t)s->c * 9 * tp_conv_out_h(s) * tp_conv_out_w(s);
}

static size_t slice_floats(const tp_conv_shape *s) {
    return col_floats(s) + (size_t)s->k * s->c * 9 + (size_t)s->k;
}

static int conv_threads(const tp_conv_shape *s) {
    int t = s->threads < 1 ? 1 : s->threads;
    return t > 16 ? 16 : t;
}

size_t tp_conv3x3_workspace(const tp_conv_shape *s) {
    return slice_floats(s) * (size_t)conv_threads(s);
}

static void im2col(const float *x, const tp_conv_shape *s, float *col) {
    const int oh = tp_conv_out_h(s), ow = tp_conv_out_w(s);
    for (int ch = 0; ch < s->c; ch++) {
        const float *plane = x + (size_t)ch * s->h * s->w;
        for (int ky = 0; ky < 3; ky++)
            for (int kx = 0; kx < 3; kx++) {
                float *dst = col + (size_t)(ch * 9 + ky * 3 + kx) * oh * ow;
                for (int oy = 0; oy < oh; oy++, dst += ow) {
                    int iy = oy + ky - s->pad;
                    if (iy < 0 || iy >= s->h) {
                        memset(dst, 0, (size_t)ow * sizeof(float));
                        continue;
                    }
                    const float *src = plane + (size_t)iy * s->w;
                    for (int ox = 0; ox < ow; ox++) {
                        int ix = ox + kx - s->pad;
                        dst[ox] = (ix >= 0 && ix < s->w) ? src[ix] : 0.0f;
                    }
                }
            }
    }
}

/* dx (one image, overwritten) = the sum of each column entry back at its input pixel. */
static void col2im(const float *col, const tp_conv_shape *s, float *dx) {
    const int oh = tp_conv_out_h(s), ow = tp_conv_out_w(s);
    memset(dx, 0, (size_t)s->c * s->h * s->w * sizeof(float));
    for (int ch = 0; ch < s->c; ch++) {
        float *plane = dx + (size_t)ch * s->h * s->w;
        for (int ky = 0; ky < 3; ky++)
            for (int kx = 0; kx < 3; kx++) {
                const float *src = col + (size_t)(ch * 9 + ky * 3 + kx) * oh * ow;
                for (int oy = 0; oy < oh; oy++, src += ow) {
                    int iy = oy + ky - s->pad;
                    if (iy < 0 || iy >= s->h)
                        continue;
                    float *dst = plane + (size_t)iy * s->w;
                    for (int ox = 0; ox < ow; ox++) {
                        int ix = ox + kx - s->pad;
                        if (ix >= 0 && ix < s->w)
                            dst[ix] += src[ox];
                    }
                }
            }
    }
}

typedef struct {
    const tp_conv_shape *s;
    const float *x, *w, *b, *dy;
    float *y, *dx, *dw, *db, *ws;
} conv_ctx;

static void conv_fwd_range(void *p, int tid, int lo, int hi) {
    const conv_ctx *c = p;
    const tp_conv_shape *s = c->s;
    const int ohw = tp_conv_out_h(s) * tp_conv_out_w(s), c9 = s->c * 9;
    float *col = c->ws + slice_floats(s) * (size_t)tid;
    for (int i = lo; i < hi; i++) {
        float *y = c->y + (size_t)i * s->k * ohw;
        im2col(c->x + (size_t)i * s->c * s->h * s->w, s, col);
        tp_gemm(0, 0, s->k, ohw, c9, 1.0f, c->w, c9, col, ohw, 0.0f, y, ohw, 1);
        if (c->b)
            for (int kk = 0; kk < s->k; kk++)
                for (int j = 0; j < ohw; j++)
                    y[(size_t)kk * ohw + j] += c->b[kk];
    }
}

void tp_conv3x3_fwd(const tp_conv_shape *s, const float *x, const float *w, const float *b,
                    float *y, float *ws) {
    conv_ctx c = {.s = s, .x = x, .w = w, .b = b, .y = y, .ws = ws};
    par_ranges(conv_threads(s), s->n, conv_fwd_range, &c);
}

static void conv_bwd_data_range(void *p, int tid, int lo, int hi) {
    const conv_ctx *c = p;
    const tp_conv_shape *s = c->s;
    const int ohw = tp_conv_out_h(s) * tp_conv_out_w(s), c9 = s->c * 9;
    float *col = c->ws + slice_floats(s) * (size_t)tid;
    for (int i = lo; i < hi; i++) {
        tp_gemm(1, 0, c9, ohw, s->k, 1.0f, c->w, c9, c->dy + (size_t)i * s->k * ohw, ohw, 0.0f, col,
                ohw, 1);
        col2im(col, s, c->dx + (size_t)i * s->c * s->h * s->w);
    }
}

void tp_conv3x3_bwd_data(const tp_conv_shape *s, const float *dy, const float *w, float *dx,
                         float *ws) {
    conv_ctx c = {.s = s, .dy = dy, .w = w, .dx = dx, .ws = ws};
    par_ranges(conv_threads(s), s->n, conv_bwd_data_range, &c);
}

/* Each thread accumulates into its own dw/db slice; the caller adds them up. */
static void conv_bwd_filter_range(void *p, int tid, int lo, int hi) {
    const conv_ctx *c = p;
    const tp_conv_shape *s = c->s;
    const int ohw = tp_conv_out_h(s) * tp_conv_out_w(s), c9 = s->c * 9;
    float *col = c->ws + slice_floats(s) * (size_t)tid;
    float *dw = col + col_floats(s), *db = dw + (size_t)s->k * c9;
    memset(dw, 0, ((size_t)s->k * c9 + s->k) * sizeof(float));
    for (int i = lo; i < hi; i++) {
        const float *dy = c->dy + (size_t)i * s->k * ohw;
        im2col(c->x + (size_t)i * s->c * s->h * s->w, s, col);
        tp_gemm(0, 1, s->k, c9, ohw, 1.0f, dy, ohw, col, ohw, 1.0f, dw, c9, 1);
        for (int kk = 0; kk < s->k; kk++) {
            float sum = 0.0f;
            for (int j = 0; j < ohw; j++)
                sum += dy[(size_t)kk * ohw + j];
            db[kk] += sum;
        }
    }
}

void tp_conv3x3_bwd_filter(const tp_conv_shape *s, const float *x, const float *dy, float *dw,
                           float *db, float *ws) {
    conv_ctx c = {.s = s, .x = x, .dy = dy, .ws = ws};
    int threads = conv_threads(s) < s->n ? conv_threads(s) : (s->n > 0 ? s->n : 1);
    par_ranges(threads, s->n, conv_bwd_filter_range, &c);
    const size_t nw = (size_t)s->k * s->c * 9, stride = slice_floats(s);
    for (size_t j = 0; j < nw + (size_t)s->k; j++) {
        float sum = 0.0f;
        for (int t = 0; t < threads; t++)
            sum += ws[stride * t + col_floats(s) + j];
        if (j < nw)
            dw[j] = sum;
        else if (db)
            db[j - nw] = sum;
    }
}

/* ---- elementwise, pooling, linear ---- */

void tp_relu_fwd(size_t count, const float *x, float *y) {
    for (size_t i = 0; i < count; i++)
        y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void tp_relu_bwd(size_t count, const float *y, const float *dy, float *dx) {
    for (size_t i = 0; i < count; i++)
        dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

void tp_maxpool2_fwd(int n, int c, int h, int w, const float *x, float *y, int32_t *idx) {
    const int oh = h / 2, ow = w / 2;
    for (size_t pl = 0; pl < (size_t)n * c; pl++) {
        const float *in = x + pl * h * w;
        float *out = y + pl * oh * ow;
        int32_t *ix = idx + pl * oh * ow;
        for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < ow; ox++) {
                int best = 2 * oy * w + 2 * ox;
                const int cand[3] = {best + 1, best + w, best + w + 1};
                for (int q = 0; q < 3; q++)
                    if (in[cand[q]] > in[best])
                        best = cand[q];
                out[oy * ow + ox] = in[best];
                ix[oy * ow + ox] = best;
            }
    }
}

void tp_maxpool2_bwd(int n, int c, int h, int w, const float *dy, const int32_t *idx, float *dx) {
    const size_t plane_out = (size_t)(h / 2) * (w / 2);
    memset(dx, 0, (size_t)n * c * h * w * sizeof(float));
    for (size_t pl = 0; pl < (size_t)n * c; pl++)
        for (size_t j = 0; j < plane_out; j++)
            dx[pl * h * w + (size_t)idx[pl * plane_out + j]] += dy[pl * plane_out + j];
}

void tp_linear_fwd(int n, int in, int out, const float *x, const float *w, const float *b, float *y,
                   int threads) {
    tp_gemm(0, 1, n, out, in, 1.0f, x, in, w, in, 0.0f, y, out, threads);
    if (b)
        for (int i = 0; i < n; i++)
            for (int o = 0; o < out; o++)
                y[(size_t)i * out + o] += b[o];
}

void tp_linear_bwd_data(int n, int in, int out, const float *dy, const float *w, float *dx,
                        int threads) {
    tp_gemm(0, 0, n, in, out, 1.0f, dy, out, w, in, 0.0f, dx, in, threads);
}

void tp_linear_bwd_weight(int n, int in, int out, const float *x, const float *dy, float *dw,
                          float *db, int threads) {
    tp_gemm(1, 0, out, in, n, 1.0f, dy, out, x, in, 0.0f, dw, in, threads);
    if (!db)
        return;
    for (int o = 0; o < out; o++)
        db[o] = 0.0f;
    for (int i = 0; i < n; i++)
        for (int o = 0; o < out; o++)
            db[o] += dy[(size_t)i * out + o];
}

/* ---- loss and optimizers ---- */

void tp_softmax_ce_fwd(int n, int classes, const float *logits, const int32_t *labels, float *probs,
                       float *acc) {
    double loss = 0.0;
    int correct = 0;
    for (int i = 0; i < n; i++) {
        const float *z = logits + (size_t)i * classes;
        float *p = probs + (size_t)i * classes;
        int arg = 0;
        for (int j = 1; j < classes; j++)
            if (z[j] > z[arg])
                arg = j;
        double sum = 0.0;
        for (int j = 0; j < classes; j++)
            sum += exp((double)z[j] - z[arg]);
        for (int j = 0; j < classes; j++)
            p[j] = (float)(exp((double)z[j] - z[arg]) / sum);
        int y = labels[i];
        if (y < 0 || y >= classes)
            continue;
        loss += log(sum) - ((double)z[y] - z[arg]);
        correct += arg == y;
    }
    acc[0] += n > 0 ? (float)(loss / n) : 0.0f;
    acc[1] += (float)correct;
    acc[2] += (float)n;
}

void tp_softmax_ce_bwd(int n, int classes, const float *probs, const int32_t *labels,
                       float *dlogits) {
    const float inv = n > 0 ? 1.0f / (float)n : 0.0f;
    for (int i = 0; i < n; i++) {
        int y = labels[i];
        for (int j = 0; j < classes; j++) {
            float t = (j == y) ? 1.0f : 0.0f;
            dlogits[(size_t)i * classes + j] = (probs[(size_t)i * classes + j] - t) * inv;
        }
    }
}

void tp_sgd_step(size_t count, float *w, const float *g, float *m, float lr, float momentum,
                 float wd) {
    for (size_t i = 0; i < count; i++) {
        float gi = g[i] + wd * w[i];
        m[i] = momentum * m[i] + gi;
        w[i] -= lr * m[i];
    }
}

void tp_adam_step(size_t count, float *w, const float *g, float *m, float *v, float lr, float b1,
                  float b2, float eps, float bc1, float bc2) {
    for (size_t i = 0; i < count; i++) {
        m[i] = b1 * m[i] + (1.0f - b1) * g[i];
        v[i] = b2 * v[i] + (1.0f - b2) * g[i] * g[i];
        w[i] -= lr * (m[i] / bc1) / (sqrtf(v[i] / bc2) + eps);
    }
}
