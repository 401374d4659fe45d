/* tp_kcuda: the CUDA kernels of trainprof-trainer, with a C interface.
 *
 * The same operations as kernels/cpu/tp_kcpu.h, on device pointers, queued on a given
 * stream: convolution through cuDNN (forward, backward data, backward filter + bias),
 * everything else as CUDA C kernels (a shared-memory tiled SGEMM for the linear layers).
 * Launch functions return 0 or a CUDA/cuDNN error code, and never synchronize. Semantics
 * match tp_kcpu (overwrite gradients; the loss kernel adds into acc[3]). */
#ifndef TP_KCUDA_H
#define TP_KCUDA_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tp_kcuda tp_kcuda;

typedef struct {
    int n, c, h, w, k, pad;
} tp_kcuda_conv;

/* Creates the cuDNN handle; returns 0, or non-zero with a message in err. */
int tp_kcuda_open(tp_kcuda **out, char *err, size_t errlen);
/* Destroys the handle; NULL is a no-op. */
void tp_kcuda_close(tp_kcuda *kc);

/* Workspace bytes the three conv calls need for this shape (the max of the three). */
size_t tp_kcuda_conv_workspace(tp_kcuda *kc, const tp_kcuda_conv *s);

/* 3x3 convolution through cuDNN on stream `st`; `ws` holds ws_bytes of device workspace (at
 * least tp_kcuda_conv_workspace). */
int tp_kcuda_conv_fwd(tp_kcuda *kc, cudaStream_t st, const tp_kcuda_conv *s, const float *x,
                      const float *w, const float *b, float *y, void *ws, size_t ws_bytes);
int tp_kcuda_conv_bwd_data(tp_kcuda *kc, cudaStream_t st, const tp_kcuda_conv *s, const float *dy,
                           const float *w, float *dx, void *ws, size_t ws_bytes);
int tp_kcuda_conv_bwd_filter(tp_kcuda *kc, cudaStream_t st, const tp_kcuda_conv *s, const float *x,
                             const float *dy, float *dw, float *db, void *ws, size_t ws_bytes);

/* The CUDA C kernels, one launch each on stream `st` (shapes as in tp_kcpu.h). */
int tp_kcuda_relu_fwd(cudaStream_t st, size_t count, const float *x, float *y);
int tp_kcuda_relu_bwd(cudaStream_t st, size_t count, const float *y, const float *dy, float *dx);
int tp_kcuda_maxpool2_fwd(cudaStream_t st, int n, int c, int h, int w, const float *x, float *y,
                          int32_t *idx);
int tp_kcuda_maxpool2_bwd(cudaStream_t st, int n, int c, int h, int w, const float *dy,
                          const int32_t *idx, float *dx);
int tp_kcuda_linear_fwd(cudaStream_t st, int n, int in, int out, const float *x, const float *w,
                        const float *b, float *y);
int tp_kcuda_linear_bwd_data(cudaStream_t st, int n, int in, int out, const float *dy,
                             const float *w, float *dx);
int tp_kcuda_linear_bwd_weight(cudaStream_t st, int n, int in, int out, const float *x,
                               const float *dy, float *dw, float *db);
int tp_kcuda_softmax_ce_fwd(cudaStream_t st, int n, int classes, const float *logits,
                            const int32_t *labels, float *probs, float *acc);
int tp_kcuda_softmax_ce_bwd(cudaStream_t st, int n, int classes, const float *probs,
                            const int32_t *labels, float *dlogits);
int tp_kcuda_sgd_step(cudaStream_t st, size_t count, float *w, const float *g, float *m, float lr,
                      float momentum, float wd);
int tp_kcuda_adam_step(cudaStream_t st, size_t count, float *w, const float *g, float *m, float *v,
                       float lr, float b1, float b2, float eps, float bc1, float bc2);

#ifdef __cplusplus
}
#endif

#endif
