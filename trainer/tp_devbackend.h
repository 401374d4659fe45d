/* tp_devbackend: the table each device backend (tp_cpudev, tp_cudadev) fills in.
 *
 * Internal to trainer/: tp_device.c owns timing, counters and pinned-buffer bookkeeping,
 * and forwards the work to these functions. `host_pinned` tells a copy whether its host
 * side is page-locked; a backend makes pageable copies blocking. */
#ifndef TP_DEVBACKEND_H
#define TP_DEVBACKEND_H

#include "tp_device.h"

typedef struct {
    const char *name;
    void (*close)(void *impl);
    tp_status (*seg_alloc)(void *impl, size_t bytes, void **out);
    void (*seg_free)(void *impl, void *ptr, size_t bytes);
    void *(*host_alloc)(void *impl, size_t bytes, int pinned);
    void (*host_free)(void *impl, void *ptr, size_t bytes, int pinned);
    void (*launch)(void *impl, int stream, const tp_kcall *k);
    void (*copy)(void *impl, int stream, void *dst, const void *src, size_t bytes, tp_copy_dir dir,
                 int host_pinned);
    void (*memset)(void *impl, int stream, void *dst, int value, size_t bytes);
    void *(*event_create)(void *impl);
    void (*event_destroy)(void *impl, void *ev);
    void (*event_record)(void *impl, void *ev, int stream);
    void (*stream_wait_event)(void *impl, int stream, void *ev);
    void (*event_sync)(void *impl, void *ev);
    void (*stream_sync)(void *impl, int stream);
    double (*kernel_seconds)(void *impl);
    /* bytes of workspace the conv op in k (any of the three) needs */
    size_t (*conv_workspace)(void *impl, const tp_kcall *k);
    /* seconds the owning thread has spent blocked on full launch queues (may be NULL) */
    double (*queue_wait_seconds)(void *impl);
    uint32_t activity_id;
} tp_devbackend;

/* Each returns TP_OK and fills *be and *impl, or an error with a message in err. */
tp_status tp_cpudev_open(const tp_device_opts *opts, tp_devbackend *be, void **impl, char *err,
                         size_t errlen);
tp_status tp_cudadev_open(const tp_device_opts *opts, tp_devbackend *be, void **impl, char *err,
                          size_t errlen);

#endif
