/* tp_train: the training loop of trainprof-trainer, and the numbers it measures.
 *
 * One run: open the device, the caching allocator, the loader and the model; then for each
 * step wait for a batch ("dataloader wait"), copy it to the device ("host-to-device
 * copy"), run forward/loss/backward/optimizer ("step" contains all of these as NVTX
 * ranges), and every read_loss_every steps read the accumulated loss back (a D2H copy
 * plus a stream sync, which is what loss.item() does). After the last step it synchronizes,
 * evaluates on held-out samples and fills a tp_train_result. The loop never prints to
 * stdout itself except through the log callback; failures come back as an exit reason. */
#ifndef TP_TRAIN_H
#define TP_TRAIN_H

#include "tp_device.h"
#include "tp_net.h"

#include <stdint.h>

/* Process exit codes of trainprof-trainer (documented in docs/trainer.md). */
#define TP_EXIT_OK 0
#define TP_EXIT_ERROR 1
#define TP_EXIT_USAGE 2
#define TP_EXIT_OOM 3
#define TP_EXIT_NO_DEVICE 4

#define TP_MAX_SCHEDULE 64

typedef struct {
    tp_device_opts device;
    uint64_t memory_limit; /* caching allocator limit (0 = none) */
    tp_net_opts model;
    int steps;
    int batch;
    int schedule[TP_MAX_SCHEDULE]; /* varying batch sizes (fragmentation-oom) */
    int schedule_len;
    int workers, prefetch, pinned;
    int transform_cost;
    int read_latency_us; /* per batch: a slow filesystem or object store (--read-latency) */
    uint64_t seed;
    int log_every;       /* print loss/accuracy every N steps (0 = never) */
    int read_loss_every; /* read the loss back every N steps (0 = only at log steps/end) */
    int eval_samples;
} tp_train_opts;

typedef struct {
    const char *exit_reason; /* "completed", "oom", "no_device", "error" */
    int exit_code;
    char message[512];
    int steps_run;
    double initial_loss, final_loss, train_accuracy, eval_accuracy;
    double wall_s, mean_step_ms, steps_per_s, samples_per_s;
    double data_wait_s, h2d_s, sync_s, launch_s, kernel_s, queue_full_s;
    uint64_t h2d_bytes, launches, syncs, samples;
    uint64_t peak_allocated, peak_reserved, alloc_failures;
    uint64_t oom_requested, oom_free, oom_largest_free, oom_reserved;
    size_t params;
} tp_train_result;

/* Called every log_every steps with the loss and accuracy of the window. */
typedef void (*tp_train_log_fn)(void *ctx, int step, double loss, double acc, double steps_per_s);

/* Sets the defaults (SimpleCNN, SGD, cpu device, healthy input pipeline). */
void tp_train_defaults(tp_train_opts *o);

/* Runs training; always fills *r (exit_reason/exit_code/message on failure). */
void tp_train_run(const tp_train_opts *o, tp_train_result *r, tp_train_log_fn log, void *ctx);

#endif
