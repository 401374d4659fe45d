/* tp_cudadev: the CUDA device backend (built when the CUDA toolkit is present).
 *
 * Real streams (non-blocking, one per trainer stream), events without timing,
 * cudaMalloc'd segments, cudaHostAlloc'd pinned buffers, cudaMemcpyAsync from pinned or
 * pageable memory (CUDA itself makes the pageable ones blocking), kernels from
 * kernels/cuda and cuDNN convolutions. CUPTI sees all of it, so this backend makes no
 * activity reports of its own. With no usable GPU, open fails with TP_ERR_UNSUPPORTED
 * and the CUDA runtime's reason. The first CUDA error of a launch or copy is kept and
 * printed once on stderr at the next sync, since the queueing calls cannot fail. */
#include "tp_devbackend.h"
#include "tp_kcuda.h"

#include <cuda_runtime_api.h>

#include <stdio.h>
#include <stdlib.h>

typedef struct {
    cudaStream_t streams[TP_DEVICE_STREAMS];
    tp_kcuda *kc;
    int first_error;
    int reported;
} cudadev;

static cudaStream_t stream_of(cudadev *d, int s) {
    return d->streams[s >= 0 && s < TP_DEVICE_STREAMS ? s : 0];
}

static void note(cudadev *d, int err) {
    if (err && !d->first_error)
        d->first_error = err;
}

static void report_errors(cudadev *d) {
    if (d->first_error && !d->reported) {
        fprintf(stderr, "trainprof-trainer: error %d during queued work (%s)\n", d->first_error,
                tp_kcuda_error_string(d->first_error));
        d->reported = 1;
    }
}

static tp_kcuda_conv conv_of(const tp_kcall *k) {
    return (tp_kcuda_conv){k->i[0], k->i[1], k->i[2], k->i[3], k->i[4], k->i[5]};
}

static size_t cuda_conv_workspace(void *impl, const tp_kcall *k) {
    tp_kcuda_conv s = conv_of(k);
    return tp_kcuda_conv_workspace(((cudadev *)impl)->kc, &s);
}

/* Convolution launches: the workspace size is recomputed so cuDNN gets the exact bound. */
static int launch_conv(cudadev *d, cudaStream_t st, const tp_kcall *k) {
    tp_kcuda_conv s = conv_of(k);
    void *const *p = k->p;
    size_t ws = tp_kcuda_conv_workspace(d->kc, &s);
    if (k->op == TP_K_CONV_FWD)
        return tp_kcuda_conv_fwd(d->kc, st, &s, p[0], p[1], p[2], p[3], p[4], ws);
    if (k->op == TP_K_CONV_BWD_DATA)
        return tp_kcuda_conv_bwd_data(d->kc, st, &s, p[0], p[1], p[2], p[3], ws);
    return tp_kcuda_conv_bwd_filter(d->kc, st, &s, p[0], p[1], p[2], p[3], p[4], ws);
}

static void cuda_launch(void *impl, int stream, const tp_kcall *k) {
    cudadev *d = impl;
    cudaStream_t st = stream_of(d, stream);
    void *const *p = k->p;
    const int *i = k->i;
    const float *f = k->f;
    int e = 0;
    switch (k->op) {
    case TP_K_CONV_FWD:
    case TP_K_CONV_BWD_DATA:
    case TP_K_CONV_BWD_FILTER:
        e = launch_conv(d, st, k);
        break;
    case TP_K_RELU_FWD:
        e = tp_kcuda_relu_fwd(st, (size_t)i[0], p[0], p[1]);
        break;
    case TP_K_RELU_BWD:
        e = tp_kcuda_relu_bwd(st, (size_t)i[0], p[0], p[1], p[2]);
        break;
    case TP_K_POOL_FWD:
        e = tp_kcuda_maxpool2_fwd(st, i[0], i[1], i[2], i[3], p[0], p[1], p[2]);
        break;
    case TP_K_POOL_BWD:
        e = tp_kcuda_maxpool2_bwd(st, i[0], i[1], i[2], i[3], p[0], p[1], p[2]);
        break;
    case TP_K_LINEAR_FWD:
        e = tp_kcuda_linear_fwd(st, i[0], i[1], i[2], p[0], p[1], p[2], p[3]);
        break;
    case TP_K_LINEAR_BWD_DATA:
        e = tp_kcuda_linear_bwd_data(st, i[0], i[1], i[2], p[0], p[1], p[2]);
        break;
    case TP_K_LINEAR_BWD_WEIGHT:
        e = tp_kcuda_linear_bwd_weight(st, i[0], i[1], i[2], p[0], p[1], p[2], p[3]);
        break;
    case TP_K_CE_FWD:
        e = tp_kcuda_softmax_ce_fwd(st, i[0], i[1], p[0], p[1], p[2], p[3]);
        break;
    case TP_K_CE_BWD:
        e = tp_kcuda_softmax_ce_bwd(st, i[0], i[1], p[0], p[1], p[2]);
        break;
    case TP_K_SGD:
        e = tp_kcuda_sgd_step(st, (size_t)i[0], p[0], p[1], p[2], f[0], f[1], f[2]);
        break;
    case TP_K_ADAM:
        e = tp_kcuda_adam_step(st, (size_t)i[0], p[0], p[1], p[2], p[3], f[0], f[1], f[2], f[3],
                               f[4], f[5]);
        break;
    default:
        break;
    }
    note(d, e);
}

static void cuda_copy(void *impl, int stream, void *dst, const void *src, size_t bytes,
                      tp_copy_dir dir, int host_pinned) {
    enum cudaMemcpyKind kind = dir == TP_COPY_H2D   ? cudaMemcpyHostToDevice
                               : dir == TP_COPY_D2H ? cudaMemcpyDeviceToHost
                                                    : cudaMemcpyDeviceToDevice;
    note(impl, (int)cudaMemcpyAsync(dst, src, bytes, kind, stream_of(impl, stream)));
}

static void cuda_memset(void *impl, int stream, void *dst, int value, size_t bytes) {
    note(impl, (int)cudaMemsetAsync(dst, value, bytes, stream_of(impl, stream)));
}

static tp_status cuda_seg_alloc(void *impl, size_t bytes, void **out) {
    *out = NULL;
    if (cudaMalloc(out, bytes) != cudaSuccess) {
        (void)cudaGetLastError(); /* clear the sticky-free error so later calls are clean */
        return TP_ERR_NOMEM;
    }
    return TP_OK;
}

static void cuda_seg_free(void *impl, void *ptr, size_t bytes) {
    cudaFree(ptr);
}

static void *cuda_host_alloc(void *impl, size_t bytes, int pinned) {
    if (!pinned)
        return malloc(bytes ? bytes : 1);
    void *p = NULL;
    return cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocDefault) == cudaSuccess ? p : NULL;
}

static void cuda_host_free(void *impl, void *ptr, size_t bytes, int pinned) {
    if (pinned)
        cudaFreeHost(ptr);
    else
        free(ptr);
}

static void *cuda_event_create(void *impl) {
    cudaEvent_t e;
    return cudaEventCreateWithFlags(&e, cudaEventDisableTiming) == cudaSuccess ? (void *)e : NULL;
}

static void cuda_event_destroy(void *impl, void *ev) {
    cudaEventDestroy((cudaEvent_t)ev);
}

static void cuda_event_record(void *impl, void *ev, int stream) {
    note(impl, (int)cudaEventRecord((cudaEvent_t)ev, stream_of(impl, stream)));
}

static void cuda_stream_wait_event(void *impl, int stream, void *ev) {
    note(impl, (int)cudaStreamWaitEvent(stream_of(impl, stream), (cudaEvent_t)ev, 0));
}

static void cuda_event_sync(void *impl, void *ev) {
    note(impl, (int)cudaEventSynchronize((cudaEvent_t)ev));
}

static void cuda_stream_sync(void *impl, int stream) {
    note(impl, (int)cudaStreamSynchronize(stream_of(impl, stream)));
    report_errors(impl);
}

static void cuda_close(void *impl) {
    cudadev *d = impl;
    cudaDeviceSynchronize();
    report_errors(d);
    for (int i = 0; i < TP_DEVICE_STREAMS; i++)
        if (d->streams[i])
            cudaStreamDestroy(d->streams[i]);
    tp_kcuda_close(d->kc);
    free(d);
}

tp_status tp_cudadev_open(const tp_device_opts *opts, tp_devbackend *be, void **impl, char *err,
                          size_t errlen) {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        snprintf(err, errlen, "--device cuda: no usable CUDA device (%s)",
                 e != cudaSuccess ? cudaGetErrorString(e) : "device count is 0");
        return TP_ERR_UNSUPPORTED;
    }
    cudadev *d = calloc(1, sizeof *d);
    if (!d)
        return TP_ERR_NOMEM;
    char why[192] = "";
    if ((e = cudaSetDevice(0)) != cudaSuccess)
        snprintf(why, sizeof why, "cudaSetDevice: %s", cudaGetErrorString(e));
    for (int i = 0; !why[0] && i < TP_DEVICE_STREAMS; i++)
        if ((e = cudaStreamCreateWithFlags(&d->streams[i], cudaStreamNonBlocking)) != cudaSuccess)
            snprintf(why, sizeof why, "cudaStreamCreate: %s", cudaGetErrorString(e));
    if (!why[0] && tp_kcuda_open(&d->kc, why, sizeof why) != 0 && !why[0])
        snprintf(why, sizeof why, "cannot initialize cuDNN");
    if (why[0]) {
        snprintf(err, errlen, "--device cuda: %s", why);
        cuda_close(d);
        return TP_ERR_UNSUPPORTED;
    }
    *be = (tp_devbackend){.name = "cuda",
                          .close = cuda_close,
                          .seg_alloc = cuda_seg_alloc,
                          .seg_free = cuda_seg_free,
                          .host_alloc = cuda_host_alloc,
                          .host_free = cuda_host_free,
                          .launch = cuda_launch,
                          .copy = cuda_copy,
                          .memset = cuda_memset,
                          .event_create = cuda_event_create,
                          .event_destroy = cuda_event_destroy,
                          .event_record = cuda_event_record,
                          .stream_wait_event = cuda_stream_wait_event,
                          .event_sync = cuda_event_sync,
                          .stream_sync = cuda_stream_sync,
                          .conv_workspace = cuda_conv_workspace,
                          .activity_id = 0};
    *impl = d;
    return TP_OK;
}
