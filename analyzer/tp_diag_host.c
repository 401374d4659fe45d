/* tp_diag_host: rules for a rank without device activity (a CPU training run, a
 * torch.profiler trace without CUDA), judged from the host's step structure (tp_an_host).
 *
 *   host-input-bound  data loading (DataLoader __next__, "dataloader", "data" ranges) takes
 *                     >= 30 % of the step window; severity: that share.
 *   host-overhead     the trace has framework ops, and >= 50 % of the window is neither in
 *                     an op nor in data loading: Python and per-op dispatch dominate the
 *                     steps; severity: that share.
 * With device activity both stay silent: the device rules (input-bound, launch-bound, ...)
 * judge those runs, from the device's idle time. What needs a device to be judged at all is
 * listed by tp_diag_rule_needs_device. */
#include <math.h>
#include <string.h>

#include "tp_an_host.h"
#include "tp_diag_ctx.h"
#include "tp_diag_rules.h"
#include "tp_diag_source.h"
#include "tp_units.h"

#define HOST_INPUT_SHARE 0.30    /* issue 10: data loading >= 30 % of the step */
#define HOST_OVERHEAD_SHARE 0.50 /* "dominating": more than anything else can be */

int tp_diag_rule_needs_device(const tp_diag_rule *r) {
    return (r->needs & TP_DIAG_NEEDS_DEVICE) != 0;
}

/* The host analysis of a rank without device activity; 0 (and nothing to free) otherwise. */
static int host_window(const tp_diag_ctx *d, tp_an_host *h) {
    if (d->v->n_gpu)
        return 0;
    tp_an_host_run(d->v, h);
    if (h->w1 > h->w0)
        return 1;
    tp_an_host_free(h);
    return 0;
}

static const char *window_words(const tp_an_host *h) {
    return h->n_steps ? "step time" : "the CPU span";
}

/* The first CPU-side row named `name`, for the finding's source; -1 when none. */
static long first_row(const tp_diag_ctx *d, uint32_t name) {
    for (size_t i = 0; name && i < d->v->n; i++)
        if (!tp_an_view_gpu(d->v, i) && d->ev->name[tp_an_view_row(d->v, i)] == name)
            return (long)tp_an_view_row(d->v, i);
    return -1;
}

void tp_diag_host_input_bound(tp_diag_ctx *d, const tp_diag_rule *self) {
    tp_an_host h;
    if (!host_window(d, &h))
        return;
    int64_t win = h.w1 - h.w0;
    double share = tp_diag_share(h.data_ns, win);
    if (share >= HOST_INPUT_SHARE) {
        char b1[32];
        tp_finding *f = tp_diag_add(d, self, share);
        tp_diag_cat(&f->title, "input-bound: the training loop waits for data (%.0f%% of %s)",
                    100 * share, window_words(&h));
        tp_diag_cat(&f->evidence,
                    "no device activity recorded, judged from the host's steps: data-loading "
                    "ranges take %.1f%% of %s (%zu steps",
                    100 * share, window_words(&h), h.n_steps);
        if (h.n_steps)
            tp_diag_cat(&f->evidence, ", %s of data loading per step",
                        tp_units_dur(b1, sizeof b1, (double)h.data_ns / (double)h.n_steps));
        tp_diag_cat(&f->evidence, "); framework ops %.1f%%", 100 * tp_diag_share(h.ops_ns, win));
        tp_diag_cat(&f->advice,
                    "add DataLoader workers / prefetch (num_workers, prefetch_factor, "
                    "persistent_workers); move decoding and augmentation out of the training "
                    "process; cache preprocessed data");
        long row = first_row(d, h.data_name);
        if (row >= 0)
            tp_diag_range_label(d, row, &f->source);
        tp_diag_put_metric(f, "data_ns", (double)h.data_ns);
        tp_diag_put_metric(f, "window_ns", (double)win);
        tp_diag_put_metric(f, "n_steps", (double)h.n_steps);
        tp_diag_put_metric(f, "share", share);
    }
    tp_an_host_free(&h);
}

void tp_diag_host_overhead(tp_diag_ctx *d, const tp_diag_rule *self) {
    tp_an_host h;
    if (!host_window(d, &h))
        return;
    int64_t win = h.w1 - h.w0, other = win - h.data_ns - h.ops_ns;
    double share = tp_diag_share(other, win);
    if (h.n_ops && share >= HOST_OVERHEAD_SHARE) {
        tp_finding *f = tp_diag_add(d, self, share);
        tp_diag_cat(&f->title,
                    "Python overhead dominates the steps: %.0f%% of %s runs outside any "
                    "operator",
                    100 * share, window_words(&h));
        tp_diag_cat(&f->evidence,
                    "no device activity recorded, judged from the host's steps: framework ops "
                    "(%zu calls) cover %.1f%% of %s, data loading %.1f%%; the remaining %.1f%% "
                    "is Python code and per-op dispatch between ops",
                    h.n_ops, 100 * tp_diag_share(h.ops_ns, win), window_words(&h),
                    100 * tp_diag_share(h.data_ns, win), 100 * share);
        tp_diag_cat(&f->advice,
                    "replace Python loops over tensors by batched ops; compile the step "
                    "(torch.compile) to cut per-op dispatch; move logging, .item() and metric "
                    "bookkeeping out of the step");
        tp_diag_put_metric(f, "overhead_ns", (double)other);
        tp_diag_put_metric(f, "ops_ns", (double)h.ops_ns);
        tp_diag_put_metric(f, "window_ns", (double)win);
        tp_diag_put_metric(f, "share", share);
    }
    tp_an_host_free(&h);
}
