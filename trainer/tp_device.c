/* tp_device: generic layer over the device backends (see tp_device.h). */
#include "tp_device.h"

#include "tp_devbackend.h"
#include "tp_mem.h"

#include <nvtx3/nvToolsExt.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef struct {
    char *ptr;
    size_t bytes;
    int pinned;
} host_buf;

struct tp_device {
    tp_devbackend be;
    void *impl;
    tp_device_kind kind;
    tp_device_stats st;
    pthread_mutex_t host_mu; /* host buffer table */
    host_buf *host;
    size_t host_count, host_cap;
};

struct tp_event {
    void *impl;
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

tp_status tp_device_open(const tp_device_opts *opts, tp_device **out, char *err, size_t errlen) {
    *out = NULL;
    /* NVTX initializes lazily at its first call, writing its function table while other
     * threads may already read it; doing it here, before any device or loader thread
     * exists, makes that ordering explicit (and keeps ThreadSanitizer quiet). */
    nvtxInitialize(NULL);
    tp_device *d = calloc(1, sizeof *d);
    if (!d)
        return TP_ERR_NOMEM;
    tp_status s = opts->kind == TP_DEVICE_CUDA
                      ? tp_cudadev_open(opts, &d->be, &d->impl, err, errlen)
                      : tp_cpudev_open(opts, &d->be, &d->impl, err, errlen);
    if (s != TP_OK) {
        free(d);
        return s;
    }
    d->kind = opts->kind;
    pthread_mutex_init(&d->host_mu, NULL);
    *out = d;
    return TP_OK;
}

void tp_device_close(tp_device *d) {
    if (!d)
        return;
    for (size_t i = 0; i < d->host_count; i++)
        d->be.host_free(d->impl, d->host[i].ptr, d->host[i].bytes, d->host[i].pinned);
    free(d->host);
    d->be.close(d->impl);
    pthread_mutex_destroy(&d->host_mu);
    free(d);
}

const char *tp_device_name(const tp_device *d) {
    return d->be.name;
}

tp_device_kind tp_device_get_kind(const tp_device *d) {
    return d->kind;
}

tp_status tp_device_seg_alloc(void *ctx, size_t bytes, void **out) {
    tp_device *d = ctx;
    return d->be.seg_alloc(d->impl, bytes, out);
}

void tp_device_seg_free(void *ctx, void *ptr, size_t bytes) {
    tp_device *d = ctx;
    d->be.seg_free(d->impl, ptr, bytes);
}

uint32_t tp_device_activity_id(const tp_device *d) {
    return d->be.activity_id;
}

void *tp_device_host_alloc(tp_device *d, size_t bytes, int pinned) {
    void *p = d->be.host_alloc(d->impl, bytes, pinned);
    if (!p)
        return NULL;
    pthread_mutex_lock(&d->host_mu);
    if (!TP_MEM_GROW(d->host, d->host_cap, d->host_count + 1)) {
        pthread_mutex_unlock(&d->host_mu);
        d->be.host_free(d->impl, p, bytes, pinned);
        return NULL;
    }
    d->host[d->host_count++] = (host_buf){p, bytes, pinned};
    pthread_mutex_unlock(&d->host_mu);
    return p;
}

void tp_device_host_free(tp_device *d, void *ptr) {
    if (!ptr)
        return;
    pthread_mutex_lock(&d->host_mu);
    for (size_t i = 0; i < d->host_count; i++)
        if (d->host[i].ptr == ptr) {
            host_buf hb = d->host[i];
            d->host[i] = d->host[--d->host_count];
            pthread_mutex_unlock(&d->host_mu);
            d->be.host_free(d->impl, hb.ptr, hb.bytes, hb.pinned);
            return;
        }
    pthread_mutex_unlock(&d->host_mu);
}

/* 1 when [p, p+bytes) lies inside one pinned host allocation. */
static int is_pinned(tp_device *d, const void *p, size_t bytes) {
    const char *c = p;
    int found = 0;
    pthread_mutex_lock(&d->host_mu);
    for (size_t i = 0; i < d->host_count && !found; i++)
        found = d->host[i].pinned && c >= d->host[i].ptr &&
                c + bytes <= d->host[i].ptr + d->host[i].bytes;
    pthread_mutex_unlock(&d->host_mu);
    return found;
}

size_t tp_device_conv_workspace(tp_device *d, const tp_kcall *k) {
    return d->be.conv_workspace(d->impl, k);
}

static double queue_wait(tp_device *d) {
    return d->be.queue_wait_seconds ? d->be.queue_wait_seconds(d->impl) : 0.0;
}

/* Seconds since t0 less the time spent blocked on a full queue since q0 (which goes to
 * queue_full_s instead). */
static double call_time(tp_device *d, double t0, double q0) {
    double q = queue_wait(d) - q0;
    d->st.queue_full_s += q;
    return now_s() - t0 - q;
}

void tp_device_launch(tp_device *d, int stream, const tp_kcall *k) {
    double t0 = now_s(), q0 = queue_wait(d);
    d->be.launch(d->impl, stream, k);
    d->st.launch_s += call_time(d, t0, q0);
    d->st.launches++;
}

void tp_device_memcpy(tp_device *d, int stream, void *dst, const void *src, size_t bytes,
                      tp_copy_dir dir) {
    int pinned = dir == TP_COPY_H2D   ? is_pinned(d, src, bytes)
                 : dir == TP_COPY_D2H ? is_pinned(d, dst, bytes)
                                      : 1;
    double t0 = now_s(), q0 = queue_wait(d);
    d->be.copy(d->impl, stream, dst, src, bytes, dir, pinned);
    double dt = call_time(d, t0, q0);
    if (dir == TP_COPY_H2D) {
        d->st.h2d_s += dt;
        d->st.copies_h2d++;
        d->st.h2d_bytes += bytes;
    } else if (dir == TP_COPY_D2H) {
        d->st.d2h_s += dt;
        d->st.copies_d2h++;
        d->st.d2h_bytes += bytes;
    }
}

void tp_device_memset(tp_device *d, int stream, void *dst, int value, size_t bytes) {
    double t0 = now_s(), q0 = queue_wait(d);
    d->be.memset(d->impl, stream, dst, value, bytes);
    (void)call_time(d, t0, q0);
    d->st.memsets++;
}

tp_event *tp_device_event_create(tp_device *d) {
    tp_event *e = calloc(1, sizeof *e);
    if (e && !(e->impl = d->be.event_create(d->impl))) {
        free(e);
        e = NULL;
    }
    return e;
}

void tp_device_event_destroy(tp_device *d, tp_event *e) {
    if (!e)
        return;
    d->be.event_destroy(d->impl, e->impl);
    free(e);
}

void tp_device_event_record(tp_device *d, tp_event *e, int stream) {
    d->be.event_record(d->impl, e->impl, stream);
}

void tp_device_stream_wait_event(tp_device *d, int stream, tp_event *e) {
    d->be.stream_wait_event(d->impl, stream, e->impl);
}

void tp_device_event_sync(tp_device *d, tp_event *e, int count_it) {
    double t0 = now_s();
    d->be.event_sync(d->impl, e->impl);
    if (count_it) {
        d->st.sync_s += now_s() - t0;
        d->st.syncs++;
    }
}

void tp_device_stream_sync(tp_device *d, int stream) {
    double t0 = now_s();
    d->be.stream_sync(d->impl, stream);
    d->st.sync_s += now_s() - t0;
    d->st.syncs++;
}

void tp_device_get_stats(const tp_device *d, tp_device_stats *out) {
    *out = d->st;
    out->kernel_s = d->be.kernel_seconds ? d->be.kernel_seconds(d->impl) : 0.0;
}

#ifndef TP_HAVE_CUDA_DEVICE
/* Built without the CUDA toolkit: --device cuda is refused with a message. */
tp_status tp_cudadev_open(const tp_device_opts *opts, tp_devbackend *be, void **impl, char *err,
                          size_t errlen) {
    snprintf(err, errlen, "this trainprof-trainer was built without CUDA support");
    return TP_ERR_UNSUPPORTED;
}
#endif
