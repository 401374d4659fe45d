/* tp_diag_sync: the synchronization rule (sync-stall).
 *
 * The host blocks in sync calls (cudaStreamSynchronize, loss.item(), ...) on a training
 * thread. Every such call drains the launch queue, so the device idles from the moment it
 * catches up until the host launches again: the *drain* is the idle gaps that began during
 * a sync, less data loading, each at most as long as that sync (had the host not blocked,
 * it would have been ahead by no more than that). Severity: when syncs are frequent (>= 0.5
 * per step, or >= 10 without steps) the larger of the host time blocked and the drain, else
 * the drain. The source is the range that holds the sync calls, with the longest one's
 * stack. */
#include <math.h>

#include "tp_diag_ctx.h"
#include "tp_an_env.h"
#include "tp_diag_rules.h"
#include "tp_diag_source.h"
#include "tp_diag_stack.h"
#include "tp_units.h"

void tp_diag_sync_stall(tp_diag_ctx *d, const tp_diag_rule *self) {
    if (d->win <= 0)
        return;
    size_t n_api = 0, n_rec = 0;
    long worst = -1;
    tp_diag_blame bl = {0};
    for (size_t k = 0; k < d->n_sync_at; k++) { /* the host syncs, found with the sync set */
        size_t i = d->sync_at[k], row = tp_an_view_row(d->v, i);
        if (tp_an_view_ts(d->v, i) < d->w0 || tp_an_view_ts(d->v, i) >= d->w1)
            continue;
        if (!tp_diag_is_api(d->ev->cat[row])) {
            n_rec++;
            continue;
        }
        n_api++;
        tp_diag_blame_add(d, &bl, tp_diag_enclosing(d, (long)row), tp_ev_dur(d->ev, row));
        if (worst < 0 || tp_ev_dur(d->ev, row) > tp_ev_dur(d->ev, worst))
            worst = (long)row;
    }
    size_t n_sync = n_api ? n_api : n_rec;
    int64_t host = tp_an_ivset_len(&d->sync), drain = d->drain; /* tp_diag_ctx's idle split */
    double per_step = d->out->n_steps ? (double)n_sync / (double)d->out->n_steps : NAN;
    int frequent = d->out->n_steps ? per_step >= 0.5 : n_sync >= 10;
    double sev = tp_diag_share(frequent ? (host > drain ? host : drain) : drain, d->win);
    if (!n_sync || sev < TP_DIAG_MIN_SEVERITY) {
        tp_diag_blame_free(&bl);
        return;
    }
    tp_finding *f = tp_diag_add(d, self, sev);
    char b1[32], b2[32], b3[32];
    tp_diag_cat(&f->title, "sync-stall: the host blocks on device synchronization%s",
                frequent && d->out->n_steps ? " every step (like loss.item() every step)" : "");
    tp_diag_cat(&f->evidence, "host blocked %s (%.1f%% %s) in %zu sync calls",
                tp_units_dur(b1, 32, (double)host), 100 * tp_diag_share(host, d->win),
                tp_diag_window_words(d), n_sync);
    if (d->out->n_steps)
        tp_diag_cat(&f->evidence, " (%.2f per step)", per_step);
    tp_diag_cat(&f->evidence,
                ", mean %s each; the device ran dry during them and idled %s (%.1f%%) until the "
                "host launched again (outside data loading)",
                tp_units_dur(b2, 32, n_sync ? (double)host / (double)n_sync : 0),
                tp_units_dur(b3, 32, (double)drain), 100 * tp_diag_share(drain, d->win));
    if (tp_an_env_launch_blocking(d->v->m, d->r)) {
        tp_diag_cat(&f->evidence, "; %s", TP_DIAG_LAUNCH_BLOCKING_NOTE);
        tp_diag_cat(&f->advice, "%s; then: ", TP_DIAG_LAUNCH_BLOCKING_FIX);
        tp_diag_put_metric(f, "launch_blocking", 1);
    }
    tp_diag_cat(&f->advice,
                "do not read device values back every step (loss.item(), .cpu(), print(tensor), "
                "torch.cuda.synchronize()): accumulate on the device and read every N steps; use "
                "non_blocking copies and events instead of full synchronization");
    tp_diag_blame_source(d, &bl, tp_diag_blame_sum(&bl), "of it", &f->source);
    if (worst >= 0)
        tp_diag_stack_append(d, tp_ev_stack(d->ev, worst), f);
    f->op_row = worst;
    tp_diag_put_metric(f, "host_blocked_ns", (double)host);
    tp_diag_put_metric(f, "syncs", (double)n_sync);
    tp_diag_put_metric(f, "syncs_per_step", per_step);
    tp_diag_put_metric(f, "drain_idle_ns", (double)drain);
    tp_diag_put_metric(f, "window_ns", (double)d->win);
    tp_diag_blame_free(&bl);
}
