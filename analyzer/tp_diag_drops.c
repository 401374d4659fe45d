/* tp_diag_drops: what the collector lost, in the diagnosis (dropped-records, and the lower-
 * bound note on the findings that read lost kinds).
 *
 * When records were dropped (tp_an_drops), every number is a lower bound, and a finding built
 * on a kind that lost records may be wrong in either direction: a launch whose kernel was
 * dropped pairs with nothing, a range whose pop was dropped ends at the trace's end. So the
 * diagnosis says it twice: one finding (always, however few were lost: its severity is the
 * largest share one kind lost) that counts the drops by kind, and, on each other finding
 * whose rule needs a kind that lost records (tp_diag_rule.needs), a sentence in its evidence
 * and a "dropped_records" metric. With every KERNEL dropped the diagnosis no longer says
 * "no device activity" but that the device's records were lost. */
#include "tp_an_drops.h"
#include "tp_diag_ctx.h"
#include "tp_diag_rules.h"

void tp_diag_dropped_records(tp_diag_ctx *d, const tp_diag_rule *self) {
    tp_an_drops dr;
    tp_an_drops_compute(d->r, &dr);
    if (!dr.lost)
        return;
    char line[1024];
    const tp_an_drop_kind *worst = &dr.k[0];
    for (size_t i = 1; i < dr.n; i++)
        worst = dr.k[i].share > worst->share ? &dr.k[i] : worst;
    tp_finding *f = tp_diag_add(d, self, dr.worst);
    tp_diag_cat(&f->title,
                "dropped records: %.1f%% of the %s records were lost while recording; every "
                "figure is a lower bound",
                100 * worst->share, worst->name);
    tp_diag_cat(&f->evidence, "%s", tp_an_drops_line(&dr, line, sizeof line));
    tp_diag_cat(&f->advice,
                "record again with a larger --buffer-mb, or capture less (--capture "
                "nvtx:RANGE, --delay/--duration); until then read every figure as 'at least'");
    tp_diag_put_metric(f, "dropped_records", (double)dr.lost);
    tp_diag_put_metric(f, "event_records", (double)(dr.lost + dr.kept));
    tp_diag_put_metric(f, "dropped_share", dr.share);
    tp_diag_put_metric(f, "worst_kind_share", worst->share);
}

void tp_diag_qualify_drops(tp_diag_ctx *d, tp_finding *f, const tp_diag_rule *rule) {
    if (!rule->needs)
        return;
    tp_an_drops dr;
    tp_an_drops_compute(d->r, &dr);
    uint64_t lost = tp_an_drops_lost(&dr, rule->needs);
    if (!lost)
        return;
    char kinds[512];
    tp_diag_cat(&f->evidence, "; lower bound: %s this finding reads were dropped while recording",
                tp_an_drops_kinds(&dr, rule->needs, kinds, sizeof kinds));
    tp_diag_put_metric(f, "dropped_records", (double)lost);
}
