/* tp_diag_comm: communication the device waits on (exposed-comm).
 *
 * Collective kernels (NCCL's ncclKernel_* / ncclDevKernel_*, HTA's COMMUNICATION type) that
 * run while no computation kernel runs are time the device spends only communicating: in a
 * data-parallel step that is the all-reduce the backward pass did not hide, or a rank waiting
 * inside the collective for a slower one. HTA reports the overlap share
 * (get_comm_comp_overlap) and TraceLens the exposed time; this rule judges it as a share of the
 * step: exposed = |comm \ comp| within the window. The advice distinguishes the two causes by
 * pointing at the cross-rank step times, where a straggler shows. */
#include <stdlib.h>

#include "tp_an_ivset.h"
#include "tp_diag_ctx.h"
#include "tp_diag_rules.h"
#include "tp_mem.h"
#include "tp_units.h"

void tp_diag_exposed_comm(tp_diag_ctx *d, const tp_diag_rule *self) {
    if (d->win <= 0)
        return;
    tp_scratch *sc = d->v->scratch;
    tp_an_ivset comm = {.sc = sc}, comp = {.sc = sc}, exposed = {.sc = sc};
    int64_t *by_name = tp_mem_xcalloc(d->n_names + 1, sizeof *by_name);
    /* the collectives first: without any (most traces) the computation set is not needed,
     * and when the view knows it has no communication kernel, no pass finds none */
    int no_comm = (d->v->gpu_kinds_absent >> TP_KT_COMMUNICATION) & 1;
    for (int kt = 0; kt < 2 && !no_comm; kt++) {
        tp_an_ivset *set = kt ? &comp : &comm;
        tp_diag_clear_seen(d);
        TP_DIAG_FOR_ROWS(d, i, row) {
            if (!tp_an_view_gpu(d->v, i) ||
                tp_an_view_ktype(d->v, i) != (kt ? TP_KT_COMPUTATION : TP_KT_COMMUNICATION))
                continue;
            int64_t a = tp_an_view_ts(d->v, i) > d->w0 ? tp_an_view_ts(d->v, i) : d->w0;
            int64_t b = tp_diag_vend(d->v, i) < d->w1 ? tp_diag_vend(d->v, i) : d->w1;
            /* a computation kernel that overlaps no collective does not change comm less
             * comp: left out of comp (16 bytes a computation kernel, and its norm: ~0.2 MiB
             * of the diagnosis's peak on hta_df_index_resolver, 15 k kernels) */
            if (a >= b || (kt && !tp_an_ivset_overlaps(&comm, a, b)))
                continue;
            tp_an_ivset_add(set, a, b);
            if (!kt && d->ev->name[row] < d->n_names)
                by_name[d->ev->name[row]] += b - a;
        }
        tp_an_ivset_norm(set, d->w0, d->w1);
        if (!comm.n)
            break;
    }
    tp_an_ivset_minus(&comm, &comp, &exposed);
    int64_t comm_ns = tp_an_ivset_len(&comm), exp_ns = tp_an_ivset_len(&exposed);
    double sev = tp_diag_share(exp_ns, d->win);
    if (comm_ns > 0 && sev >= TP_DIAG_MIN_SEVERITY) {
        size_t top = 0;
        for (size_t k = 1; k < d->n_names; k++)
            top = by_name[k] > by_name[top] ? k : top;
        char b1[32], b2[32];
        tp_finding *f = tp_diag_add(d, self, sev);
        tp_diag_cat(&f->title,
                    "exposed-comm: the device waits on communication %.0f%% %s (collectives with "
                    "no computation alongside)",
                    100 * sev, tp_diag_window_words(d));
        tp_diag_cat(&f->evidence,
                    "communication kernels ran %s (%.1f%% %s); %s of it (%.1f%% of the "
                    "communication) overlapped no computation kernel",
                    tp_units_dur(b1, sizeof b1, (double)comm_ns),
                    100 * tp_diag_share(comm_ns, d->win), tp_diag_window_words(d),
                    tp_units_dur(b2, sizeof b2, (double)exp_ns),
                    100 * tp_diag_share(exp_ns, comm_ns));
        if (by_name[top] > 0)
            tp_diag_cat(&f->source, "kernel '%s' (%s in the window)",
                        tp_model_str(d->v->m, (uint32_t)top),
                        tp_units_dur(b1, sizeof b1, (double)by_name[top]));
        tp_diag_cat(&f->advice,
                    "if other ranks' steps are faster (the report's per-rank table), this rank "
                    "waits inside the collective for the slowest one: fix that imbalance first "
                    "(data, sharding, a slow device); otherwise hide the communication behind "
                    "computation: keep DDP's gradient bucketing on and no sync between backward "
                    "and the optimizer, enable FSDP's backward/forward prefetch, use fewer and "
                    "larger collectives (bucket_cap_mb), and check the interconnect (NCCL_* "
                    "settings, NVLink vs PCIe)");
        tp_diag_put_metric(f, "comm_ns", (double)comm_ns);
        tp_diag_put_metric(f, "exposed_comm_ns", (double)exp_ns);
        tp_diag_put_metric(f, "window_ns", (double)d->win);
        tp_diag_qualify_drops(d, f, self);
    }
    free(by_name);
    tp_an_ivset_free(&comm), tp_an_ivset_free(&comp), tp_an_ivset_free(&exposed);
}
