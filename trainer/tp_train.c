/* tp_train: the training loop (see tp_train.h). */
#include "tp_train.h"

#include "tp_alloc.h"
#include "tp_data.h"
#include "tp_loader.h"
#include "tp_ranges.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EVAL_BATCH 256
#define EVAL_SEED_XOR 0x5eed0f7e57ull

typedef struct {
    const tp_train_opts *o;
    tp_train_result *r;
    tp_device *dev;
    tp_alloc *alloc;
    tp_loader *loader;
    tp_net *model;
    nvtxDomainHandle_t dom;
    nvtxStringHandle_t s_step, s_wait, s_h2d, s_read;
    float *acc_dev;  /* device accumulator: loss sum, correct, samples */
    float *acc_host; /* pinned readback buffer */
    int window_steps;
    int have_ds;
    tp_device_stats ds; /* device counters at the end of training (before evaluation) */
    tp_train_log_fn log;
    void *log_ctx;
} run;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void tp_train_defaults(tp_train_opts *o) {
    memset(o, 0, sizeof *o);
    o->device.kind = TP_DEVICE_CPU;
    o->device.kernel_threads = 1;
    o->model = (tp_net_opts){.kind = TP_NET_CNN,
                             .mlp_width = 128,
                             .mlp_depth = 2,
                             .seed = 1,
                             .opt = TP_OPT_SGD,
                             .lr = 0.05f,
                             .momentum = 0.9f};
    o->steps = 200;
    o->batch = 64;
    o->workers = 2;
    o->prefetch = 4;
    o->pinned = 1;
    o->transform_cost = 1;
    o->seed = 1;
    o->log_every = 50;
    o->eval_samples = 1024;
}

static void fail(run *R, const char *reason, int code, const char *msg) {
    R->r->exit_reason = reason;
    R->r->exit_code = code;
    snprintf(R->r->message, sizeof R->r->message, "%s", msg);
}

/* The allocator already printed its message; keep it and its numbers for the summary. */
static void fail_oom(run *R) {
    tp_alloc_failure f;
    if (!tp_alloc_last_failure(R->alloc, &f)) {
        fail(R, "oom", TP_EXIT_OOM, "device out of memory");
        return;
    }
    fail(R, "oom", TP_EXIT_OOM, f.message);
    R->r->oom_requested = f.requested;
    R->r->oom_free = f.free_cached;
    R->r->oom_largest_free = f.largest_free;
    R->r->oom_reserved = f.reserved;
}

static tp_status open_all(run *R) {
    const tp_train_opts *o = R->o;
    char err[256] = "";
    tp_status s = tp_device_open(&o->device, &R->dev, err, sizeof err);
    if (s == TP_ERR_UNSUPPORTED) {
        fail(R, "no_device", TP_EXIT_NO_DEVICE, err);
        return s;
    }
    if (s != TP_OK) {
        fail(R, "error", TP_EXIT_ERROR, err[0] ? err : tp_status_str(s));
        return s;
    }
    tp_alloc_opts ao = {tp_device_seg_alloc,           tp_device_seg_free, R->dev, o->memory_limit,
                        tp_device_activity_id(R->dev), TP_TRAINER_DOMAIN,  0};
    if ((s = tp_alloc_open(&ao, &R->alloc)) != TP_OK) {
        fail(R, "error", TP_EXIT_ERROR, "cannot create the device allocator");
        return s;
    }
    R->dom = nvtxDomainCreateA(TP_TRAINER_DOMAIN);
    R->s_step = nvtxDomainRegisterStringA(R->dom, "step");
    R->s_wait = nvtxDomainRegisterStringA(R->dom, "dataloader wait");
    R->s_h2d = nvtxDomainRegisterStringA(R->dom, "host-to-device copy");
    R->s_read = nvtxDomainRegisterStringA(R->dom, "read loss");
    if ((s = tp_net_open(&o->model, R->dev, R->alloc, R->dom, &R->model)) != TP_OK ||
        (s = tp_alloc_malloc(R->alloc, 4 * sizeof(float), (void **)&R->acc_dev)) != TP_OK) {
        fail_oom(R);
        return s;
    }
    tp_device_memset(R->dev, TP_STREAM_COMPUTE, R->acc_dev, 0, 4 * sizeof(float));
    R->acc_host = tp_device_host_alloc(R->dev, 4 * sizeof(float), 1);
    tp_loader_opts lo = {o->workers,         o->prefetch,       o->pinned,         o->batch,
                         o->schedule,        o->schedule_len,   o->transform_cost, o->seed,
                         (uint64_t)o->steps, o->read_latency_us};
    if (!R->acc_host || (s = tp_loader_open(&lo, R->dev, &R->loader)) != TP_OK) {
        fail(R, "error", TP_EXIT_ERROR, "cannot start the data loader");
        return TP_ERR_NOMEM;
    }
    R->r->params = tp_net_param_count(R->model);
    return TP_OK;
}

static void close_all(run *R) {
    if (R->dev)
        tp_device_stream_sync(R->dev, TP_STREAM_COMPUTE);
    tp_loader_close(R->loader);
    tp_net_close(R->model);
    if (R->alloc) {
        tp_alloc_free(R->alloc, R->acc_dev);
        tp_alloc_close(R->alloc);
    }
    if (R->dev) {
        tp_device_host_free(R->dev, R->acc_host);
        tp_device_close(R->dev);
    }
}

/* Reads the accumulator back (async copy + stream sync: loss.item()) and resets it. */
static void read_window(run *R, double *loss, double *acc) {
    tp_range_push(R->dom, R->s_read);
    tp_device_memcpy(R->dev, TP_STREAM_COMPUTE, R->acc_host, R->acc_dev, 3 * sizeof(float),
                     TP_COPY_D2H);
    tp_device_stream_sync(R->dev, TP_STREAM_COMPUTE);
    tp_device_memset(R->dev, TP_STREAM_COMPUTE, R->acc_dev, 0, 3 * sizeof(float));
    tp_range_pop(R->dom);
    int n = R->window_steps > 0 ? R->window_steps : 1;
    *loss = R->acc_host[0] / n;
    *acc = R->acc_host[2] > 0 ? R->acc_host[1] / R->acc_host[2] : 0.0;
    R->window_steps = 0;
}

/* Copies a host batch into fresh device buffers. */
static tp_status upload(run *R, const float *x, const int32_t *y, int n, float **xd, int32_t **yd) {
    size_t xb = (size_t)n * TP_DATA_PIXELS * sizeof(float), yb = (size_t)n * sizeof(int32_t);
    *xd = NULL;
    *yd = NULL;
    if (tp_alloc_malloc(R->alloc, xb, (void **)xd) != TP_OK ||
        tp_alloc_malloc(R->alloc, yb, (void **)yd) != TP_OK)
        return TP_ERR_NOMEM;
    tp_range_push(R->dom, R->s_h2d);
    tp_device_memcpy(R->dev, TP_STREAM_COMPUTE, *xd, x, xb, TP_COPY_H2D);
    tp_device_memcpy(R->dev, TP_STREAM_COMPUTE, *yd, y, yb, TP_COPY_H2D);
    tp_range_pop(R->dom);
    return TP_OK;
}

static tp_status train_step(run *R, int step) {
    tp_batch b;
    tp_range_push(R->dom, R->s_wait);
    double t0 = now_s();
    tp_status s = tp_loader_next(R->loader, &b);
    R->r->data_wait_s += now_s() - t0;
    tp_range_pop(R->dom);
    if (s != TP_OK)
        return s;
    float *xd = NULL;
    int32_t *yd = NULL;
    s = upload(R, b.x, b.y, b.n, &xd, &yd);
    tp_event *ev = tp_loader_slot_event(R->loader, &b);
    tp_device_event_record(R->dev, ev, TP_STREAM_COMPUTE);
    tp_loader_release(R->loader, &b, ev);
    if (s == TP_OK)
        s = tp_net_train_step(R->model, xd, yd, b.n, R->acc_dev);
    tp_alloc_free(R->alloc, xd);
    tp_alloc_free(R->alloc, yd);
    R->r->samples += (uint64_t)b.n;
    R->window_steps++;
    return s;
}

static int read_due(const run *R, int step) {
    const tp_train_opts *o = R->o;
    return step == 1 || step == o->steps ||
           (o->read_loss_every && step % o->read_loss_every == 0) ||
           (o->log_every && step % o->log_every == 0);
}

static tp_status train_loop(run *R) {
    const tp_train_opts *o = R->o;
    double t_start = now_s(), t_log = t_start;
    int log_step = 0;
    tp_status s = TP_OK;
    for (int step = 1; step <= o->steps; step++) {
        tp_range_push(R->dom, R->s_step);
        s = train_step(R, step);
        if (s == TP_OK && read_due(R, step)) {
            double loss, acc;
            read_window(R, &loss, &acc);
            if (step == 1)
                R->r->initial_loss = loss;
            R->r->final_loss = loss;
            R->r->train_accuracy = acc;
            if (R->log && o->log_every && (step % o->log_every == 0 || step == o->steps)) {
                double t = now_s();
                R->log(R->log_ctx, step, loss, acc, (step - log_step) / (t - t_log));
                t_log = t;
                log_step = step;
            }
        }
        tp_range_pop(R->dom);
        if (s != TP_OK)
            break;
        R->r->steps_run = step;
    }
    tp_device_stream_sync(R->dev, TP_STREAM_COMPUTE);
    R->r->wall_s = now_s() - t_start;
    tp_device_get_stats(R->dev, &R->ds);
    R->have_ds = 1;
    return s;
}

/* Accuracy on held-out samples (another seed, no augmentation). */
static tp_status evaluate(run *R) {
    int total = R->o->eval_samples, done = 0;
    float *host = malloc((size_t)EVAL_BATCH * TP_DATA_PIXELS * sizeof(float));
    int32_t *labels = malloc(EVAL_BATCH * sizeof(int32_t));
    tp_status s = host && labels ? TP_OK : TP_ERR_NOMEM;
    R->window_steps = 0;
    while (s == TP_OK && done < total) {
        int n = total - done < EVAL_BATCH ? total - done : EVAL_BATCH;
        for (int i = 0; i < n; i++)
            labels[i] = tp_data_sample(R->o->seed ^ EVAL_SEED_XOR, (uint64_t)(done + i),
                                       host + (size_t)i * TP_DATA_PIXELS);
        float *xd;
        int32_t *yd;
        s = upload(R, host, labels, n, &xd, &yd); /* pageable: completes before reuse */
        if (s == TP_OK)
            s = tp_net_eval(R->model, xd, yd, n, R->acc_dev);
        tp_alloc_free(R->alloc, xd);
        tp_alloc_free(R->alloc, yd);
        done += n;
    }
    if (s == TP_OK && total > 0) {
        double loss, acc;
        read_window(R, &loss, &acc);
        R->r->eval_accuracy = acc;
    }
    free(host);
    free(labels);
    return s;
}

static void fill_stats(run *R) {
    tp_train_result *r = R->r;
    if (R->dev) {
        tp_device_stats ds = R->ds;
        if (!R->have_ds)
            tp_device_get_stats(R->dev, &ds);
        r->h2d_s = ds.h2d_s;
        r->h2d_bytes = ds.h2d_bytes;
        r->sync_s = ds.sync_s;
        r->syncs = ds.syncs;
        r->launches = ds.launches;
        r->launch_s = ds.launch_s;
        r->kernel_s = ds.kernel_s;
        r->queue_full_s = ds.queue_full_s;
    }
    if (R->alloc) {
        tp_alloc_stats as;
        tp_alloc_get_stats(R->alloc, &as);
        r->peak_allocated = as.peak_allocated;
        r->peak_reserved = as.peak_reserved;
        r->alloc_failures = as.failures;
    }
    int steps = r->steps_run > 0 ? r->steps_run : 1;
    r->mean_step_ms = r->wall_s > 0 ? r->wall_s * 1e3 / steps : 0;
    r->steps_per_s = r->wall_s > 0 ? r->steps_run / r->wall_s : 0;
    r->samples_per_s = r->wall_s > 0 ? (double)r->samples / r->wall_s : 0;
}

void tp_train_run(const tp_train_opts *o, tp_train_result *r, tp_train_log_fn log, void *ctx) {
    memset(r, 0, sizeof *r);
    run R = {.o = o, .r = r, .log = log, .log_ctx = ctx};
    fail(&R, "completed", TP_EXIT_OK, "");
    double t0 = now_s();
    tp_status s = open_all(&R);
    if (s == TP_OK) {
        s = train_loop(&R);
        if (s == TP_OK)
            s = evaluate(&R);
        if (s == TP_ERR_NOMEM)
            fail_oom(&R);
        else if (s != TP_OK)
            fail(&R, "error", TP_EXIT_ERROR, tp_status_str(s));
    }
    if (R.dev && r->wall_s == 0) {
        tp_device_stream_sync(R.dev, TP_STREAM_COMPUTE);
        r->wall_s = now_s() - t0;
    }
    fill_stats(&R);
    close_all(&R);
}
