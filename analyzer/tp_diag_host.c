/* tp_diag_host: rules for a rank without device activity (a CPU training run, a
 * torch.profiler trace without CUDA), judged from the host's step structure (tp_an_host).
 *
 *   host-input-bound  data loading (DataLoader __next__, "dataloader", "data" ranges) takes
 *                     >= 30 % of the step window; severity: that share.
 *   host-overhead     the trace has framework ops, and >= 50 % of the window is inside
 *                     recorded ranges but neither in an op nor in data loading: Python and
 *                     per-op dispatch dominate the steps; severity: that share.
 *   host-step-gaps    two steps or more, and >= 30 % of the window has no recorded range open
 *                     (between the steps: a loop that annotates its steps but not the fetch of
 *                     the next batch waits there); severity: that share.
 * With device activity the three stay silent: the device rules (input-bound, launch-bound, ...)
 * judge those runs, from the device's idle time. What needs a device to be judged at all is
 * listed by tp_diag_rule_needs_device. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_an_drops.h"
#include "tp_an_host.h"
#include "tp_diag_ctx.h"
#include "tp_diag_rules.h"
#include "tp_diag_samples.h"
#include "tp_diag_source.h"
#include "tp_diag_stack.h"
#include "tp_mem.h"
#include "tp_units.h"

#define HOST_INPUT_SHARE 0.30    /* issue 10: data loading >= 30 % of the step */
#define HOST_OVERHEAD_SHARE 0.50 /* "dominating": more than anything else can be */

int tp_diag_rule_needs_device(const tp_diag_rule *r) {
    return (r->needs & TP_DIAG_NEEDS_DEVICE) != 0;
}

/* The host analysis of a rank without device activity with a window; NULL otherwise. */
static const tp_an_host *host_window(tp_diag_ctx *d) {
    if (d->v->n_gpu)
        return NULL;
    const tp_an_host *h = tp_diag_host(d);
    return h->w1 > h->w0 ? h : NULL;
}

/* What a host finding is judged from, the first words of its evidence: a rank whose device
 * records were all dropped had device activity (the report's Diagnosis header says the same). */
static const char *host_basis(const tp_diag_ctx *d) {
    tp_an_drops dr;
    tp_an_drops_compute(d->r, &dr);
    return tp_an_drops_lost(&dr, tp_an_drops_device_kinds()) ? "every device record was dropped"
                                                             : "no device activity recorded";
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

/* The finding's source: the first range named `name` and, with --stacks all, the stack it
 * was opened from (where in the program); a native trace recorded without those stacks says
 * how to get them. */
static void range_source(tp_diag_ctx *d, tp_finding *f, uint32_t name) {
    long row = first_row(d, name);
    if (row < 0)
        return;
    tp_diag_range_label(d, row, &f->source);
    uint32_t stack = tp_ev_stack(d->ev, (size_t)row);
    if (stack)
        tp_diag_stack_append(d, stack, f);
    else if (d->r->native)
        tp_diag_cat(&f->source,
                    " (`trainprof record --stacks all` records the line that opens it)");
}

/* The CPU ranges of one thread whose names `is` takes, ascending by start, into *s0 / *s1
 * (allocated; free them); the thread: the first such row's when *tid < 0 (the step thread, for
 * steps), else (pid, tid). Returns their count. */
static size_t thread_ranges(const tp_diag_ctx *d, int (*is)(const char *), int64_t *pid,
                            int64_t *tid, int64_t **s0, int64_t **s1) {
    const tp_an_view *v = d->v;
    size_t n = 0, cap = 0;
    *s0 = *s1 = NULL;
    for (size_t i = 0; i < v->n; i++) {
        if (tp_an_view_gpu(v, i))
            continue;
        uint32_t row = tp_an_view_row(v, i);
        if (!is(tp_model_str(v->m, d->ev->name[row])))
            continue;
        if (*tid < 0)
            *pid = tp_ev_pid(d->ev, row), *tid = tp_ev_tid(d->ev, row);
        if (tp_ev_pid(d->ev, row) != *pid || tp_ev_tid(d->ev, row) != *tid)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            *s0 = tp_mem_xrealloc(*s0, cap, sizeof **s0);
            *s1 = tp_mem_xrealloc(*s1, cap, sizeof **s1);
        }
        (*s0)[n] = tp_an_view_ts(v, i), (*s1)[n] = tp_an_view_end(v, i), n++;
    }
    return n;
}

/* The intervals [s0, s1) (ascending by start) merged, or with gaps = 1 the time between them,
 * inside the host window, into lo/hi (allocated; free them). Returns their count. */
static size_t merged(const tp_an_host *h, const int64_t *s0, const int64_t *s1, size_t n, int gaps,
                     int64_t **lo, int64_t **hi) {
    *lo = tp_mem_xalloc(n + 1, sizeof **lo), *hi = tp_mem_xalloc(n + 1, sizeof **hi);
    size_t g = 0;
    for (size_t k = 0; k < n;) {
        int64_t a = s0[k], b = s1[k];
        for (k++; k < n && s0[k] <= b; k++) /* overlapping or touching: one interval */
            b = s1[k] > b ? s1[k] : b;
        if (gaps && k == n) /* none past the last */
            break;
        int64_t x = gaps ? b : a, y = gaps ? s0[k] : b;
        x = x < h->w0 ? h->w0 : x, y = y > h->w1 ? h->w1 : y;
        if (x < y)
            (*lo)[g] = x, (*hi)[g] = y, g++;
    }
    return g;
}

/* The step thread (*pid, *tid; tid -1 when unknown) and its time between its steps
 * (between = 1) or inside its data-loading ranges, merged, into *lo / *hi (allocated; free
 * them). Returns their count. */
static size_t step_thread_time(tp_diag_ctx *d, const tp_an_host *h, int between, int64_t *pid,
                               int64_t *tid, int64_t **lo, int64_t **hi) {
    int64_t *s0 = NULL, *s1 = NULL;
    *pid = 0, *tid = -1;
    size_t ns = thread_ranges(d, tp_an_host_step_name, pid, tid, &s0, &s1);
    if (!between && *tid >= 0) {
        free(s0), free(s1);
        ns = thread_ranges(d, tp_an_host_window_data_name, pid, tid, &s0, &s1);
    }
    size_t n = merged(h, s0, s1, ns, between, lo, hi);
    free(s0), free(s1);
    return n;
}

/* What the sampler saw on the step thread (`record --sample`) between its steps (between = 1)
 * or inside its data-loading ranges; for the latter, the advice from the processes that feed it
 * (`otherwise` without samples). */
static void sampled(tp_diag_ctx *d, const tp_an_host *h, tp_finding *f, int between,
                    const char *otherwise) {
    int64_t pid = 0, tid = -1, *lo = NULL, *hi = NULL;
    size_t n = d->r->samples.n ? step_thread_time(d, h, between, &pid, &tid, &lo, &hi) : 0;
    tp_diag_samples_in(d, f, pid, tid < 0 ? 0 : tid, lo, hi, n,
                       between ? ". Sampled there" : ". Sampled inside the data-loading ranges",
                       "step thread");
    if (otherwise)
        tp_diag_samples_loader_advice(d, f, pid, lo, hi, n, otherwise);
    free(lo), free(hi);
}

void tp_diag_host_input_bound(tp_diag_ctx *d, const tp_diag_rule *self) {
    const tp_an_host *h = host_window(d);
    if (!h)
        return;
    int64_t win = h->w1 - h->w0;
    double share = tp_diag_share(h->data_ns, win);
    if (share >= HOST_INPUT_SHARE) {
        char b1[32];
        tp_finding *f = tp_diag_add(d, self, share);
        tp_diag_cat(&f->title, "input-bound: the training loop waits for data (%.0f%% of %s)",
                    100 * share, window_words(h));
        tp_diag_cat(&f->evidence,
                    "%s, judged from the host's steps: data-loading ranges take %.1f%% of %s (%zu "
                    "steps",
                    host_basis(d), 100 * share, window_words(h), h->n_steps);
        if (h->n_steps)
            tp_diag_cat(&f->evidence, ", %s of data loading per step",
                        tp_units_dur(b1, sizeof b1, (double)h->data_ns / (double)h->n_steps));
        tp_diag_cat(&f->evidence, "); framework ops %.1f%%", 100 * tp_diag_share(h->ops_ns, win));
        sampled(d, h, f, 0,
                "add DataLoader workers / prefetch (num_workers, prefetch_factor, "
                "persistent_workers); move decoding and augmentation out of the training "
                "process; cache preprocessed data");
        range_source(d, f, h->data_name);
        tp_diag_put_metric(f, "data_ns", (double)h->data_ns);
        tp_diag_put_metric(f, "window_ns", (double)win);
        tp_diag_put_metric(f, "n_steps", (double)h->n_steps);
        tp_diag_put_metric(f, "share", share);
    }
}

void tp_diag_host_overhead(tp_diag_ctx *d, const tp_diag_rule *self) {
    const tp_an_host *h = host_window(d);
    if (!h)
        return;
    int64_t win = h->w1 - h->w0, other = tp_an_host_other_ns(h);
    double share = tp_diag_share(other, win);
    if (h->n_ops && share >= HOST_OVERHEAD_SHARE) {
        tp_finding *f = tp_diag_add(d, self, share);
        tp_diag_cat(&f->title,
                    "Python overhead dominates the steps: %.0f%% of %s runs outside any "
                    "operator",
                    100 * share, window_words(h));
        tp_diag_cat(&f->evidence,
                    "%s, judged from the host's steps: framework ops "
                    "(%zu calls) cover %.1f%% of %s, data loading %.1f%%, no range open %.1f%%; "
                    "the remaining %.1f%% is Python code and per-op dispatch between ops",
                    host_basis(d), h->n_ops, 100 * tp_diag_share(h->ops_ns, win), window_words(h),
                    100 * tp_diag_share(h->data_ns, win),
                    100 * tp_diag_share(h->unrecorded_ns, win), 100 * share);
        tp_diag_cat(&f->advice,
                    "replace Python loops over tensors by batched ops; compile the step "
                    "(torch.compile) to cut per-op dispatch; move logging, .item() and metric "
                    "bookkeeping out of the step");
        tp_diag_put_metric(f, "overhead_ns", (double)other);
        tp_diag_put_metric(f, "ops_ns", (double)h->ops_ns);
        tp_diag_put_metric(f, "window_ns", (double)win);
        tp_diag_put_metric(f, "share", share);
    }
}

void tp_diag_host_step_gaps(tp_diag_ctx *d, const tp_diag_rule *self) {
    const tp_an_host *h = host_window(d);
    if (!h)
        return;
    int64_t win = h->w1 - h->w0;
    double share = tp_diag_share(h->unrecorded_ns, win);
    if (h->n_steps >= 2 && share >= HOST_INPUT_SHARE) {
        char b1[32], b2[32];
        tp_finding *f = tp_diag_add(d, self, share);
        tp_diag_cat(&f->title,
                    "between steps: the training loop spends %.0f%% of its time between its "
                    "steps with no range open (waiting for the next batch?)",
                    100 * share);
        tp_diag_cat(
            &f->evidence,
            "%s, judged from the host's steps: %zu steps, %s "
            "between them (%s a step) with no range, op or Python function recorded on "
            "the step thread; data loading ranges %.1f%%, framework ops %.1f%%. In a `for "
            "batch in loader:` loop that annotates only its steps this is the wait for "
            "the next batch, unless other work (logging, evaluation, checkpoints) runs "
            "there unannotated",
            host_basis(d), h->n_steps, tp_units_dur(b1, sizeof b1, (double)h->unrecorded_ns),
            tp_units_dur(b2, sizeof b2, (double)h->unrecorded_ns / (double)(h->n_steps - 1)),
            100 * tp_diag_share(h->data_ns, win), 100 * tp_diag_share(h->ops_ns, win));
        tp_diag_cat(&f->advice,
                    "annotate the fetch of the batch (a range named \"data\" around "
                    "next(loader): nvtx.annotate or torch.cuda.nvtx.range) and any other work "
                    "between steps, so the next recording says which it is; if it is the "
                    "DataLoader, add workers / prefetch (num_workers, prefetch_factor, "
                    "persistent_workers)");
        sampled(d, h, f, 1, NULL);
        range_source(d, f, h->step_name);
        tp_diag_put_metric(f, "unrecorded_ns", (double)h->unrecorded_ns);
        tp_diag_put_metric(f, "window_ns", (double)win);
        tp_diag_put_metric(f, "n_steps", (double)h->n_steps);
        tp_diag_put_metric(f, "share", share);
    }
}
