/* tp_loader: the input pipeline (worker threads, prefetch, pinned or pageable staging).
 *
 * Batch b holds samples [first + sum of earlier batch sizes, ...) of the synthetic
 * dataset, each rendered and augmented (tp_data). With workers > 0, that many threads
 * fill up to `prefetch` batches ahead of the consumer into a ring of prefetch + 1 host
 * staging buffers (page-locked when pinned); with workers == 0 the consumer builds each
 * batch itself inside tp_loader_next (the input-bound pattern). A buffer handed to the
 * consumer is refilled only after tp_loader_release, and then only once the device event
 * given there has completed (the copy out of it is done), as PyTorch's pinned-memory
 * allocator waits on recorded events. Workers name their threads through NVTX. */
#ifndef TP_LOADER_H
#define TP_LOADER_H

#include "tp_device.h"
#include "tp_status.h"

#include <stdint.h>

typedef struct tp_loader tp_loader;

typedef struct {
    int workers;         /* 0: build batches on the consumer thread */
    int prefetch;        /* batches in flight (>= 1) */
    int pinned;          /* page-locked staging buffers */
    int batch;           /* batch size when no schedule */
    const int *schedule; /* optional: batch b has size schedule[b % schedule_len] */
    int schedule_len;
    int transform_cost; /* resampling passes per sample (0 = no augmentation) */
    uint64_t seed;
    uint64_t max_batches; /* batches the consumer will ask for */
    int read_latency_us;  /* each batch first waits this long for its input (0: none) */
} tp_loader_opts;

typedef struct {
    float *x;   /* n x 784, host staging memory */
    int32_t *y; /* n labels */
    int n;
    int slot;
    uint64_t index; /* batch number */
} tp_batch;

/* Starts opts->workers threads that build batches into host staging memory of `dev` (which
 * must outlive the loader); with 0 workers tp_loader_next builds them itself. TP_ERR_ARG
 * without a batch size or schedule, TP_ERR_NOMEM when buffers or threads are missing. */
tp_status tp_loader_open(const tp_loader_opts *opts, tp_device *dev, tp_loader **out);

/* Stops and joins the workers and frees the buffers (after waiting for their events).
 * NULL is a no-op. */
void tp_loader_close(tp_loader *l);

/* Blocks until the next batch is ready. TP_ERR_EMPTY after max_batches. */
tp_status tp_loader_next(tp_loader *l, tp_batch *out);

/* Gives the batch's buffer back; it is refilled once `copied` (recorded after the last
 * copy out of it; may be NULL) has completed. */
void tp_loader_release(tp_loader *l, const tp_batch *b, tp_event *copied);

/* An event owned by the loader for this batch's slot, for the caller to record. */
tp_event *tp_loader_slot_event(tp_loader *l, const tp_batch *b);

/* Largest batch size the schedule can produce. */
int tp_loader_max_batch(const tp_loader_opts *opts);

#endif
