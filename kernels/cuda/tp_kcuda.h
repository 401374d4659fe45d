/* tp_kcuda: the CUDA kernels of trainprof-trainer, with a C interface.
 *
 * The same operations as kernels/cpu/tp_kcpu.h, on device pointers, queued on a given
 * stream: convolution through cuDNN (forward, backward data, backward filter + bias),
 * everything else as CUDA C kernels (a shared-memory tiled SGEMM for the linear layers).
 * Launch functions return 0 or an error code, and never synchronize: a CUDA error as is, a
 * cuDNN status as TP_KCUDA_CUDNN_ERROR(status) (tp_kcuda_error_string names either).
 * Semantics match tp_kcpu (overwrite gradients; the loss kernel adds into acc[3]).
 * Precision: convolutions run in FP32 with FMA only (CUDNN_FMA_MATH), never TF32 tensor cores
 * (which Ampere and Hopper would otherwise pick), so they agree with the CPU kernels to FP32
 * rounding. */
#ifndef TP_KCUDA_H
#define TP_KCUDA_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tp_kcuda tp_kcuda;

/* cuDNN statuses are returned above every CUDA error code. */
#define TP_KCUDA_CUDNN_BASE 100000
#define TP_KCUDA_CUDNN_ERROR(status) (TP_KCUDA_CUDNN_BASE + (int)(status))

/* "cuDNN: <cuDNN's text>" or "CUDA: <the runtime's text>" for a code returned here (static). */
const char *tp_kcuda_error_string(int e);

typedef struct {
    int n, c, h, w, k, pad;
} tp_kcuda_conv;

/* Creates the cuDNN handle; returns 0, or non-zero with a message in err. */
int tp_kcuda_open(tp_kcuda **out, char *err, size_t errlen);
/* Destroys the handle; NULL is a no-op. */
void tp_kcuda_close(tp_kcuda *kc);

/* Workspace bytes the three conv calls need for this shape (the max of the three). A query
 * cuDNN refuses counts 0 here: each conv call queries its own size again and returns that
 * query's error, or CUDNN_STATUS_BAD_PARAM when `ws_bytes` is below what it needs, before it
 * queues anything. */
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
