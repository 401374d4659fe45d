/* tp_diag_input: the input pipeline rule (input-bound).
 *
 * The device idles while a training thread is inside a data-loading range (the DataLoader's
 * __next__, "dataloader wait", "get_batch", ...). Severity: that idle's share of the window.
 * The source is the data-loading range name that takes the most time in the window. */
#include <math.h>

#include "tp_an_enclosing.h"
#include "tp_diag_ctx.h"
#include "tp_diag_rules.h"
#include "tp_diag_samples.h"
#include "tp_diag_source.h"
#include "tp_units.h"

void tp_diag_input_bound(tp_diag_ctx *d, const tp_diag_rule *self) {
    const tp_diag_idle *s = &d->split;
    double sev = tp_diag_share(s->data, d->win);
    if (d->win <= 0 || sev < TP_DIAG_MIN_SEVERITY)
        return;
    tp_diag_blame bl = {0};
    for (size_t k = 0; k < d->n_data_at; k++) { /* the rows' pass's data-loading ranges */
        size_t i = d->data_at[k];
        if (tp_an_view_ts(d->v, i) >= d->w0 && tp_an_view_ts(d->v, i) < d->w1)
            tp_diag_blame_add(d, &bl, (long)tp_an_view_row(d->v, i), tp_diag_vdur(d->v, i));
    }
    size_t best = tp_diag_blame_top(&bl);
    int64_t range_ns = bl.n ? bl.ns[best] : 0;
    tp_finding *f = tp_diag_add(d, self, sev);
    tp_diag_cat(&f->title, "input-bound: the device waits for the input pipeline");
    char b1[32];
    const char *rn = bl.n ? tp_model_str(d->v->m, bl.name[best]) : "data loading";
    double per_step = d->out->n_steps ? (double)range_ns / (double)d->out->n_steps : NAN;
    tp_diag_cat(&f->evidence,
                "device idle %.1f%% %s; %.1f%% of that idle is host wait inside data-loading "
                "ranges; the '%s' range takes %.1f%% %s%s%s",
                100 * tp_diag_share(s->idle, d->win), tp_diag_window_words(d),
                100 * tp_diag_share(s->data, s->idle), rn, 100 * tp_diag_share(range_ns, d->win),
                tp_diag_window_words(d), d->out->n_steps ? ", mean per step " : "",
                d->out->n_steps ? tp_units_dur(b1, sizeof b1, per_step) : "");
    static const char advice[] = "add DataLoader workers / prefetch (num_workers, "
                                 "prefetch_factor, persistent_workers); move augmentation and "
                                 "decoding off the training thread (or onto the GPU); cache "
                                 "preprocessed data";
    int64_t pid, tid;
    if (tp_diag_samples_main_thread(d, &pid, &tid)) {
        tp_diag_samples_in(d, f, pid, tid, d->data.a, d->data.b, d->data.n,
                           ". Sampled inside the data-loading ranges", "training thread");
        tp_diag_samples_loader_advice(d, f, pid, d->data.a, d->data.b, d->data.n, advice);
    } else {
        tp_diag_cat(&f->advice, "%s", advice);
    }
    if (bl.n)
        tp_diag_range_label(d, bl.row[best], &f->source);
    tp_diag_put_metric(f, "idle_ns", (double)s->idle);
    tp_diag_put_metric(f, "data_wait_idle_ns", (double)s->data);
    tp_diag_put_metric(f, "range_ns", (double)range_ns);
    tp_diag_put_metric(f, "window_ns", (double)d->win);
    tp_diag_blame_free(&bl);
}
