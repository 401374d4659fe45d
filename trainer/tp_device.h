/* tp_device: the accelerator the trainer runs on, behind one small interface.
 *
 * Two backends: "cpu" (tp_cpudev: a simulated accelerator whose memory is a separate
 * arena with a capacity, whose streams are executed by device threads, and which reports
 * its kernels, copies, memsets and syncs through trainprof/activity.h) and "cuda"
 * (tp_cudadev: real CUDA streams, events, cudaMemcpyAsync, CUDA kernels and cuDNN).
 * Semantics follow CUDA: launches and copies are queued on a stream and return at once;
 * a copy between device memory and pageable host memory blocks the caller until it has
 * completed, while one from pinned memory (tp_device_host_alloc with pinned=1) is
 * asynchronous; synchronization is explicit (events, stream sync).
 *
 * The generic layer times each call on the calling thread and keeps the counters that
 * end up in the trainer's summary (time in launches, host-to-device copies, syncs). All
 * calls except the event and stream sync functions must come from one host thread. */
#ifndef TP_DEVICE_H
#define TP_DEVICE_H

#include "tp_kcall.h"
#include "tp_status.h"

#include <stddef.h>
#include <stdint.h>

typedef struct tp_device tp_device;
typedef struct tp_event tp_event;

typedef enum { TP_DEVICE_CPU, TP_DEVICE_CUDA } tp_device_kind;
typedef enum { TP_COPY_H2D = 1, TP_COPY_D2H = 2, TP_COPY_D2D = 8 } tp_copy_dir;

/* Stream numbers the trainer uses: compute and host-to-device copies. */
#define TP_STREAM_COMPUTE 0
#define TP_STREAM_COPY 1
#define TP_DEVICE_STREAMS 2

typedef struct {
    tp_device_kind kind;
    uint64_t memory_bytes; /* CPU device: arena capacity (0 = 4 GiB) */
    int kernel_threads;    /* CPU device: threads per kernel (0 = 1) */
} tp_device_opts;

typedef struct {
    uint64_t launches, copies_h2d, copies_d2h, memsets, syncs;
    uint64_t h2d_bytes, d2h_bytes;
    double launch_s;     /* host time inside launch calls, less queue_full_s */
    double h2d_s;        /* host time inside host-to-device copy calls, less queue_full_s */
    double queue_full_s; /* host time blocked because the device queue was full */
    double d2h_s;
    double sync_s;   /* host time blocked in stream/event syncs */
    double kernel_s; /* device time executing kernels (CPU device; 0 when unknown) */
} tp_device_stats;

/* Opens a device. TP_ERR_UNSUPPORTED when that kind is not built in or has no hardware
 * (message in err); other errors for resource failures. */
tp_status tp_device_open(const tp_device_opts *opts, tp_device **out, char *err, size_t errlen);

/* Waits for all queued work, then releases the device. NULL is a no-op. */
void tp_device_close(tp_device *d);

/* The backend's name ("cpu", "cuda"; static storage) and the kind it was opened as. */
const char *tp_device_name(const tp_device *d);
tp_device_kind tp_device_get_kind(const tp_device *d);

/* Device memory segments, for tp_alloc (ctx is the tp_device). */
tp_status tp_device_seg_alloc(void *ctx, size_t bytes, void **out);
void tp_device_seg_free(void *ctx, void *ptr, size_t bytes);
/* The id under which activity reports name this device. */
uint32_t tp_device_activity_id(const tp_device *d);

/* Host memory: pinned (page-locked; copies from it are asynchronous) or pageable. NULL on
 * failure. Free with tp_device_host_free. */
void *tp_device_host_alloc(tp_device *d, size_t bytes, int pinned);
void tp_device_host_free(tp_device *d, void *ptr);

/* Bytes of device workspace a conv call (TP_K_CONV_*, i[] filled in) needs here. */
size_t tp_device_conv_workspace(tp_device *d, const tp_kcall *k);

/* Queues kernel call `k` on `stream`; the device copies what it needs from `k`. */
void tp_device_launch(tp_device *d, int stream, const tp_kcall *k);
/* Copies bytes; the host side of H2D/D2H is looked up among pinned allocations. */
void tp_device_memcpy(tp_device *d, int stream, void *dst, const void *src, size_t bytes,
                      tp_copy_dir dir);
void tp_device_memset(tp_device *d, int stream, void *dst, int value, size_t bytes);

/* Events order work across streams like CUDA events. create returns NULL on failure;
 * destroy accepts NULL. */
tp_event *tp_device_event_create(tp_device *d);
void tp_device_event_destroy(tp_device *d, tp_event *e);
void tp_device_event_record(tp_device *d, tp_event *e, int stream);
void tp_device_stream_wait_event(tp_device *d, int stream, tp_event *e);
/* Blocks until the work recorded by e has completed (any host thread; counted as sync
 * time only on the thread that owns the device). */
void tp_device_event_sync(tp_device *d, tp_event *e, int count_it);
void tp_device_stream_sync(tp_device *d, int stream);

/* Copies the counters so far into `out` (kernel_s asked of the backend now). */
void tp_device_get_stats(const tp_device *d, tp_device_stats *out);

#endif
