/* tp_kcuda: CUDA kernels and cuDNN convolution (see tp_kcuda.h).
 *
 * Kernels are written for clarity first: one thread per output element (or row for the
 * loss), grid-stride loops, and a 16x16 shared-memory tiled SGEMM. They are compared
 * with the CPU kernels by tests/gpu. */
#include "tp_kcuda.h"

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef TP_HAVE_CUDNN
#include <cudnn.h>
#endif

#define TILE 16
#define THREADS 256

static unsigned blocks_for(size_t count) {
    size_t b = (count + THREADS - 1) / THREADS;
    return (unsigned)(b == 0 ? 1 : (b > 65535 ? 65535 : b));
}

static int last_error(void) {
    return (int)cudaGetLastError();
}

const char *tp_kcuda_error_string(int e) {
    static __thread char buf[160];
#ifdef TP_HAVE_CUDNN
    if (e >= TP_KCUDA_CUDNN_BASE) {
        snprintf(buf, sizeof buf, "cuDNN: %s",
                 cudnnGetErrorString((cudnnStatus_t)(e - TP_KCUDA_CUDNN_BASE)));
        return buf;
    }
#endif
    snprintf(buf, sizeof buf, "CUDA: %s", cudaGetErrorString((cudaError_t)e));
    return buf;
}

/* ---- elementwise ---- */

__global__ void relu_fwd_k(size_t count, const float *x, float *y) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

__global__ void relu_bwd_k(size_t count, const float *y, const float *dy, float *dx) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count;
         i += (size_t)gridDim.x * blockDim.x)
        dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

__global__ void sgd_k(size_t count, float *w, const float *g, float *m, float lr, float mom,
                      float wd) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count;
         i += (size_t)gridDim.x * blockDim.x) {
        float gi = g[i] + wd * w[i];
        m[i] = mom * m[i] + gi;
        w[i] -= lr * m[i];
    }
}

__global__ void adam_k(size_t count, float *w, const float *g, float *m, float *v, float lr,
                       float b1, float b2, float eps, float bc1, float bc2) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count;
         i += (size_t)gridDim.x * blockDim.x) {
        m[i] = b1 * m[i] + (1.0f - b1) * g[i];
        v[i] = b2 * v[i] + (1.0f - b2) * g[i] * g[i];
        w[i] -= lr * (m[i] / bc1) / (sqrtf(v[i] / bc2) + eps);
    }
}

/* ---- pooling ---- */

__global__ void pool_fwd_k(size_t outs, int h, int w, const float *x, float *y, int32_t *idx) {
    const int oh = h / 2, ow = w / 2;
    for (size_t o = blockIdx.x * (size_t)blockDim.x + threadIdx.x; o < outs;
         o += (size_t)gridDim.x * blockDim.x) {
        size_t plane = o / ((size_t)oh * ow);
        int r = (int)(o % ((size_t)oh * ow)), oy = r / ow, ox = r % ow;
        const float *in = x + plane * h * w;
        int best = 2 * oy * w + 2 * ox;
        int cand[3] = {best + 1, best + w, best + w + 1};
        for (int q = 0; q < 3; q++)
            if (in[cand[q]] > in[best])
                best = cand[q];
        y[o] = in[best];
        idx[o] = best;
    }
}

/* One thread per input element: gathers from its pooling window's winner. */
__global__ void pool_bwd_k(size_t ins, int h, int w, const float *dy, const int32_t *idx,
                           float *dx) {
    const int oh = h / 2, ow = w / 2;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < ins;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t plane = i / ((size_t)h * w);
        int r = (int)(i % ((size_t)h * w)), iy = r / w, ix = r % w;
        size_t o = plane * oh * ow + (size_t)(iy / 2) * ow + ix / 2;
        dx[i] = (iy / 2 < oh && ix / 2 < ow && idx[o] == r) ? dy[o] : 0.0f;
    }
}

/* ---- GEMM and linear layers ---- */

/* C[M,N] = op(A)[M,K] . op(B)[K,N] (row-major, overwriting C). */
__global__ void sgemm_k(int ta, int tb, int M, int N, int K, const float *A, int lda,
                        const float *B, int ldb, float *C, int ldc) {
    __shared__ float As[TILE][TILE + 1], Bs[TILE][TILE + 1];
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        int ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
        As[threadIdx.y][threadIdx.x] =
            (row < M && ka < K) ? (ta ? A[(size_t)ka * lda + row] : A[(size_t)row * lda + ka])
                                : 0.0f;
        Bs[threadIdx.y][threadIdx.x] =
            (kb < K && col < N) ? (tb ? B[(size_t)col * ldb + kb] : B[(size_t)kb * ldb + col])
                                : 0.0f;
        __syncthreads();
        for (int kk = 0; kk < TILE; kk++)
            acc += As[threadIdx.y][kk] * Bs[kk][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N)
        C[(size_t)row * ldc + col] = acc;
}

static int sgemm(cudaStream_t st, int ta, int tb, int M, int N, int K, const float *A, int lda,
                 const float *B, int ldb, float *C, int ldc) {
    dim3 block(TILE, TILE), grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    if (M > 0 && N > 0)
        sgemm_k<<<grid, block, 0, st>>>(ta, tb, M, N, K, A, lda, B, ldb, C, ldc);
    return last_error();
}

__global__ void add_bias_k(size_t count, int out, const float *b, float *y) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] += b[i % out];
}

__global__ void col_sum_k(int n, int out, const float *dy, float *db) {
    int o = blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= out)
        return;
    float s = 0.0f;
    for (int i = 0; i < n; i++)
        s += dy[(size_t)i * out + o];
    db[o] = s;
}

/* ---- loss ---- */

__global__ void ce_fwd_k(int n, int classes, const float *z, const int32_t *labels, float *p,
                         float *acc) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0)
        atomicAdd(&acc[2], (float)n);
    if (i >= n)
        return;
    const float *zi = z + (size_t)i * classes;
    int arg = 0;
    for (int j = 1; j < classes; j++)
        if (zi[j] > zi[arg])
            arg = j;
    float sum = 0.0f;
    for (int j = 0; j < classes; j++)
        sum += expf(zi[j] - zi[arg]);
    for (int j = 0; j < classes; j++)
        p[(size_t)i * classes + j] = expf(zi[j] - zi[arg]) / sum;
    int y = labels[i];
    if (y < 0 || y >= classes)
        return;
    atomicAdd(&acc[0], (logf(sum) - (zi[y] - zi[arg])) / (float)n);
    if (arg == y)
        atomicAdd(&acc[1], 1.0f);
}

__global__ void ce_bwd_k(int n, int classes, const float *p, const int32_t *labels, float *dz) {
    size_t total = (size_t)n * classes;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        int row = (int)(i / classes), j = (int)(i % classes);
        dz[i] = (p[i] - (labels[row] == j ? 1.0f : 0.0f)) / (float)n;
    }
}

/* ---- C interface ---- */

extern "C" {

int tp_kcuda_relu_fwd(cudaStream_t st, size_t count, const float *x, float *y) {
    relu_fwd_k<<<blocks_for(count), THREADS, 0, st>>>(count, x, y);
    return last_error();
}

int tp_kcuda_relu_bwd(cudaStream_t st, size_t count, const float *y, const float *dy, float *dx) {
    relu_bwd_k<<<blocks_for(count), THREADS, 0, st>>>(count, y, dy, dx);
    return last_error();
}

int tp_kcuda_maxpool2_fwd(cudaStream_t st, int n, int c, int h, int w, const float *x, float *y,
                          int32_t *idx) {
    size_t outs = (size_t)n * c * (h / 2) * (w / 2);
    pool_fwd_k<<<blocks_for(outs), THREADS, 0, st>>>(outs, h, w, x, y, idx);
    return last_error();
}

int tp_kcuda_maxpool2_bwd(cudaStream_t st, int n, int c, int h, int w, const float *dy,
                          const int32_t *idx, float *dx) {
    size_t ins = (size_t)n * c * h * w;
    pool_bwd_k<<<blocks_for(ins), THREADS, 0, st>>>(ins, h, w, dy, idx, dx);
    return last_error();
}

int tp_kcuda_linear_fwd(cudaStream_t st, int n, int in, int out, const float *x, const float *w,
                        const float *b, float *y) {
    int e = sgemm(st, 0, 1, n, out, in, x, in, w, in, y, out);
    if (e || !b)
        return e;
    size_t count = (size_t)n * out;
    add_bias_k<<<blocks_for(count), THREADS, 0, st>>>(count, out, b, y);
    return last_error();
}

int tp_kcuda_linear_bwd_data(cudaStream_t st, int n, int in, int out, const float *dy,
                             const float *w, float *dx) {
    return sgemm(st, 0, 0, n, in, out, dy, out, w, in, dx, in);
}

int tp_kcuda_linear_bwd_weight(cudaStream_t st, int n, int in, int out, const float *x,
                               const float *dy, float *dw, float *db) {
    int e = sgemm(st, 1, 0, out, in, n, dy, out, x, in, dw, in);
    if (e || !db)
        return e;
    col_sum_k<<<(out + THREADS - 1) / THREADS, THREADS, 0, st>>>(n, out, dy, db);
    return last_error();
}

int tp_kcuda_softmax_ce_fwd(cudaStream_t st, int n, int classes, const float *logits,
                            const int32_t *labels, float *probs, float *acc) {
    ce_fwd_k<<<(n + THREADS - 1) / THREADS + (n == 0), THREADS, 0, st>>>(n, classes, logits, labels,
                                                                         probs, acc);
    return last_error();
}

int tp_kcuda_softmax_ce_bwd(cudaStream_t st, int n, int classes, const float *probs,
                            const int32_t *labels, float *dlogits) {
    size_t total = (size_t)n * classes;
    ce_bwd_k<<<blocks_for(total), THREADS, 0, st>>>(n, classes, probs, labels, dlogits);
    return last_error();
}

int tp_kcuda_sgd_step(cudaStream_t st, size_t count, float *w, const float *g, float *m, float lr,
                      float momentum, float wd) {
    sgd_k<<<blocks_for(count), THREADS, 0, st>>>(count, w, g, m, lr, momentum, wd);
    return last_error();
}

int tp_kcuda_adam_step(cudaStream_t st, size_t count, float *w, const float *g, float *m, float *v,
                       float lr, float b1, float b2, float eps, float bc1, float bc2) {
    adam_k<<<blocks_for(count), THREADS, 0, st>>>(count, w, g, m, v, lr, b1, b2, eps, bc1, bc2);
    return last_error();
}

/* ---- cuDNN convolution ---- */

#ifdef TP_HAVE_CUDNN
struct tp_kcuda {
    cudnnHandle_t h;
};

/* Descriptors for one shape; created per call (a few microseconds, off the GPU's path). */
typedef struct {
    cudnnTensorDescriptor_t x, y, b;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
} conv_desc;

static const cudnnConvolutionFwdAlgo_t FWD_ALGO = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
static const cudnnConvolutionBwdDataAlgo_t BWD_DATA_ALGO = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
static const cudnnConvolutionBwdFilterAlgo_t BWD_FILTER_ALGO = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;

static void desc_destroy(conv_desc *d) {
    cudnnDestroyTensorDescriptor(d->x);
    cudnnDestroyTensorDescriptor(d->y);
    cudnnDestroyTensorDescriptor(d->b);
    cudnnDestroyFilterDescriptor(d->w);
    cudnnDestroyConvolutionDescriptor(d->conv);
}

static int desc_make(const tp_kcuda_conv *s, conv_desc *d) {
    int oh = s->h + 2 * s->pad - 2, ow = s->w + 2 * s->pad - 2;
    cudnnStatus_t e = CUDNN_STATUS_SUCCESS;
    d->x = d->y = d->b = NULL;
    d->w = NULL;
    d->conv = NULL;
    if ((e = cudnnCreateTensorDescriptor(&d->x)) || (e = cudnnCreateTensorDescriptor(&d->y)) ||
        (e = cudnnCreateTensorDescriptor(&d->b)) || (e = cudnnCreateFilterDescriptor(&d->w)) ||
        (e = cudnnCreateConvolutionDescriptor(&d->conv)) ||
        (e = cudnnSetTensor4dDescriptor(d->x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, s->n, s->c, s->h,
                                        s->w)) ||
        (e = cudnnSetTensor4dDescriptor(d->y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, s->n, s->k, oh,
                                        ow)) ||
        (e = cudnnSetTensor4dDescriptor(d->b, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, s->k, 1,
                                        1)) ||
        (e = cudnnSetFilter4dDescriptor(d->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, s->k, s->c, 3,
                                        3)) ||
        (e = cudnnSetConvolution2dDescriptor(d->conv, s->pad, s->pad, 1, 1, 1, 1,
                                             CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT)) ||
        (e = cudnnSetConvolutionMathType(d->conv, CUDNN_FMA_MATH))) { /* no TF32 (tp_kcuda.h) */
        desc_destroy(d);
        return TP_KCUDA_CUDNN_ERROR(e);
    }
    return 0;
}

/* cuDNN status -> our code (0 stays 0). */
static int dnn(cudnnStatus_t e) {
    return e == CUDNN_STATUS_SUCCESS ? 0 : TP_KCUDA_CUDNN_ERROR(e);
}

/* The workspace size query's verdict on `ws_bytes`: its own error, or BAD_PARAM when the
 * caller's workspace is smaller than what the algorithm needs. */
static int ws_check(cudnnStatus_t query, size_t need, size_t ws_bytes) {
    if (query != CUDNN_STATUS_SUCCESS)
        return TP_KCUDA_CUDNN_ERROR(query);
    return need > ws_bytes ? TP_KCUDA_CUDNN_ERROR(CUDNN_STATUS_BAD_PARAM) : 0;
}

int tp_kcuda_open(tp_kcuda **out, char *err, size_t errlen) {
    *out = NULL;
    tp_kcuda *kc = (tp_kcuda *)calloc(1, sizeof *kc);
    if (!kc)
        return -1;
    cudnnStatus_t e = cudnnCreate(&kc->h);
    if (e != CUDNN_STATUS_SUCCESS) {
        snprintf(err, errlen, "cudnnCreate: %s", cudnnGetErrorString(e));
        free(kc);
        return TP_KCUDA_CUDNN_ERROR(e);
    }
    *out = kc;
    return 0;
}

void tp_kcuda_close(tp_kcuda *kc) {
    if (!kc)
        return;
    cudnnDestroy(kc->h);
    free(kc);
}

size_t tp_kcuda_conv_workspace(tp_kcuda *kc, const tp_kcuda_conv *s) {
    conv_desc d;
    if (desc_make(s, &d))
        return 0;
    size_t a = 0, b = 0, c = 0; /* a refused query counts 0: the call itself reports it */
    if (cudnnGetConvolutionForwardWorkspaceSize(kc->h, d.x, d.w, d.conv, d.y, FWD_ALGO, &a))
        a = 0;
    if (cudnnGetConvolutionBackwardDataWorkspaceSize(kc->h, d.w, d.y, d.conv, d.x, BWD_DATA_ALGO,
                                                     &b))
        b = 0;
    if (cudnnGetConvolutionBackwardFilterWorkspaceSize(kc->h, d.x, d.y, d.conv, d.w,
                                                       BWD_FILTER_ALGO, &c))
        c = 0;
    desc_destroy(&d);
    size_t m = a > b ? a : b;
    return m > c ? m : c;
}

int tp_kcuda_conv_fwd(tp_kcuda *kc, cudaStream_t st, const tp_kcuda_conv *s, const float *x,
                      const float *w, const float *b, float *y, void *ws, size_t ws_bytes) {
    conv_desc d;
    int e = desc_make(s, &d);
    const float one = 1.0f, zero = 0.0f;
    size_t need = 0;
    if (e)
        return e;
    cudnnStatus_t q =
        cudnnGetConvolutionForwardWorkspaceSize(kc->h, d.x, d.w, d.conv, d.y, FWD_ALGO, &need);
    e = ws_check(q, need, ws_bytes);
    if (!e && !(e = dnn(cudnnSetStream(kc->h, st))))
        e = dnn(cudnnConvolutionForward(kc->h, &one, d.x, x, d.w, w, d.conv, FWD_ALGO, ws, ws_bytes,
                                        &zero, d.y, y));
    if (!e && b)
        e = dnn(cudnnAddTensor(kc->h, &one, d.b, b, &one, d.y, y));
    desc_destroy(&d);
    return e;
}

int tp_kcuda_conv_bwd_data(tp_kcuda *kc, cudaStream_t st, const tp_kcuda_conv *s, const float *dy,
                           const float *w, float *dx, void *ws, size_t ws_bytes) {
    conv_desc d;
    int e = desc_make(s, &d);
    const float one = 1.0f, zero = 0.0f;
    size_t need = 0;
    if (e)
        return e;
    cudnnStatus_t q = cudnnGetConvolutionBackwardDataWorkspaceSize(kc->h, d.w, d.y, d.conv, d.x,
                                                                   BWD_DATA_ALGO, &need);
    e = ws_check(q, need, ws_bytes);
    if (!e && !(e = dnn(cudnnSetStream(kc->h, st))))
        e = dnn(cudnnConvolutionBackwardData(kc->h, &one, d.w, w, d.y, dy, d.conv, BWD_DATA_ALGO,
                                             ws, ws_bytes, &zero, d.x, dx));
    desc_destroy(&d);
    return e;
}

int tp_kcuda_conv_bwd_filter(tp_kcuda *kc, cudaStream_t st, const tp_kcuda_conv *s, const float *x,
                             const float *dy, float *dw, float *db, void *ws, size_t ws_bytes) {
    conv_desc d;
    int e = desc_make(s, &d);
    const float one = 1.0f, zero = 0.0f;
    size_t need = 0;
    if (e)
        return e;
    cudnnStatus_t q = cudnnGetConvolutionBackwardFilterWorkspaceSize(kc->h, d.x, d.y, d.conv, d.w,
                                                                     BWD_FILTER_ALGO, &need);
    e = ws_check(q, need, ws_bytes);
    if (!e && !(e = dnn(cudnnSetStream(kc->h, st))))
        e = dnn(cudnnConvolutionBackwardFilter(kc->h, &one, d.x, x, d.y, dy, d.conv,
                                               BWD_FILTER_ALGO, ws, ws_bytes, &zero, d.w, dw));
    if (!e && db)
        e = dnn(cudnnConvolutionBackwardBias(kc->h, &one, d.y, dy, &zero, d.b, db));
    desc_destroy(&d);
    return e;
}

#else /* no cuDNN: the CUDA device cannot run convolutions */

struct tp_kcuda {
    int unused;
};

int tp_kcuda_open(tp_kcuda **out, char *err, size_t errlen) {
    *out = NULL;
    snprintf(err, errlen, "built without cuDNN, which the CUDA device needs for convolutions");
    return -1;
}

void tp_kcuda_close(tp_kcuda *kc) {
    free(kc);
}

size_t tp_kcuda_conv_workspace(tp_kcuda *kc, const tp_kcuda_conv *s) {
    return 0;
}

int tp_kcuda_conv_fwd(tp_kcuda *kc, cudaStream_t st, const tp_kcuda_conv *s, const float *x,
                      const float *w, const float *b, float *y, void *ws, size_t ws_bytes) {
    return -1;
}

int tp_kcuda_conv_bwd_data(tp_kcuda *kc, cudaStream_t st, const tp_kcuda_conv *s, const float *dy,
                           const float *w, float *dx, void *ws, size_t ws_bytes) {
    return -1;
}

int tp_kcuda_conv_bwd_filter(tp_kcuda *kc, cudaStream_t st, const tp_kcuda_conv *s, const float *x,
                             const float *dy, float *dw, float *db, void *ws, size_t ws_bytes) {
    return -1;
}
#endif

} /* extern "C" */
