/* tp_kcpu: the CPU compute kernels of trainprof-trainer (forward, backward, optimizers).
 *
 * Tensors are dense float32, NCHW for images and row-major [batch, features] for linear
 * layers. Kernels never allocate: scratch space comes from the caller (see the
 * *_workspace functions), so a device runtime can take it from its own memory. Backward
 * kernels overwrite their gradient outputs (no accumulation across calls), so no zeroing
 * pass is needed between steps. `threads` > 1 splits work across that many threads
 * where it pays; results are identical for any thread count except where noted. */
#ifndef TP_KCPU_H
#define TP_KCPU_H

#include <stddef.h>
#include <stdint.h>

/* A 3x3, stride-1 convolution with zero padding `pad` (0 or 1) over n images of
 * c x h x w, producing k channels of oh x ow (oh = h + 2*pad - 2). */
typedef struct {
    int n, c, h, w, k, pad;
    int threads;
} tp_conv_shape;

static inline int tp_conv_out_h(const tp_conv_shape *s) {
    return s->h + 2 * s->pad - 2;
}
static inline int tp_conv_out_w(const tp_conv_shape *s) {
    return s->w + 2 * s->pad - 2;
}

/* Floats of scratch the conv kernels need for this shape (any of the three). */
size_t tp_conv3x3_workspace(const tp_conv_shape *s);

/* y[n,k,oh,ow] = sum w[k,c,3,3] * x + b[k]. b may be NULL. */
void tp_conv3x3_fwd(const tp_conv_shape *s, const float *x, const float *w, const float *b,
                    float *y, float *ws);
/* dx = conv_transpose(dy, w): the gradient with respect to the input. */
void tp_conv3x3_bwd_data(const tp_conv_shape *s, const float *dy, const float *w, float *dx,
                         float *ws);
/* dw = sum over images of dy (x) im2col(x); db = sum of dy per channel (db may be NULL).
 * With threads > 1 the per-thread partial sums are added in thread order, so results may
 * differ from threads == 1 by rounding. */
void tp_conv3x3_bwd_filter(const tp_conv_shape *s, const float *x, const float *dy, float *dw,
                           float *db, float *ws);

/* y = max(x, 0) over count elements (y may alias x). */
void tp_relu_fwd(size_t count, const float *x, float *y);
/* dx = dy where y > 0, else 0 (dx may alias dy). */
void tp_relu_bwd(size_t count, const float *y, const float *dy, float *dx);

/* 2x2, stride-2 max pooling over n*c planes of h x w (h, w even). idx receives, for each
 * output, the input offset within its plane that won (first maximum on ties). */
void tp_maxpool2_fwd(int n, int c, int h, int w, const float *x, float *y, int32_t *idx);
/* dx (n*c*h*w, overwritten) receives dy at the winning positions, 0 elsewhere. */
void tp_maxpool2_bwd(int n, int c, int h, int w, const float *dy, const int32_t *idx, float *dx);

/* y[n,out] = x[n,in] . w[out,in]^T + b[out] (b may be NULL). */
void tp_linear_fwd(int n, int in, int out, const float *x, const float *w, const float *b, float *y,
                   int threads);
/* dx[n,in] = dy[n,out] . w[out,in]. */
void tp_linear_bwd_data(int n, int in, int out, const float *dy, const float *w, float *dx,
                        int threads);
/* dw[out,in] = dy^T . x; db[out] = column sums of dy (db may be NULL). */
void tp_linear_bwd_weight(int n, int in, int out, const float *x, const float *dy, float *dw,
                          float *db, int threads);

/* Softmax cross-entropy over n rows of `classes` logits. Writes probs[n,classes] and ADDS
 * to acc[0] the mean loss over the rows, to acc[1] the number of rows whose argmax equals
 * the label, to acc[2] the value n (so a running accumulator can be read back later).
 * Labels outside [0, classes) count as wrong and contribute loss 0 (never read out of
 * bounds). */
void tp_softmax_ce_fwd(int n, int classes, const float *logits, const int32_t *labels, float *probs,
                       float *acc);
/* dlogits = (probs - onehot(labels)) / n. */
void tp_softmax_ce_bwd(int n, int classes, const float *probs, const int32_t *labels,
                       float *dlogits);

/* SGD with momentum and L2 weight decay (PyTorch's formulation):
 * g' = g + wd*w; m = momentum*m + g'; w -= lr*m. */
void tp_sgd_step(size_t count, float *w, const float *g, float *m, float lr, float momentum,
                 float wd);
/* Adam: m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; w -= lr * (m/bc1) / (sqrt(v/bc2) + eps),
 * where bc1 = 1 - b1^t and bc2 = 1 - b2^t are computed by the caller for step t. */
void tp_adam_step(size_t count, float *w, const float *g, float *m, float *v, float lr, float b1,
                  float b2, float eps, float bc1, float bc2);

#endif
