/* tp_an_ranks: see tp_an_ranks.h. */
#include "tp_an_ranks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_an_stats.h"
#include "tp_mem.h"
#include "tp_rank_analysis.h"
#include "tp_units.h"

#define STRAGGLER_RATIO 1.2 /* median step >= 1.2 x the median rank's */
#define WAIT_RATIO 1.5      /* exposed communication >= 1.5 x the least */
#define WAIT_MIN_SHARE 0.10 /* ... and apart by >= 10 % of the median step */

static int by_severity(const void *a, const void *b) {
    const tp_an_rank_finding *x = a, *y = b;
    return (x->severity < y->severity) - (x->severity > y->severity);
}

static tp_an_rank_finding *add(tp_an_ranks *out, const char *id, double sev, int rank) {
    out->f = tp_mem_xrealloc(out->f, out->n_findings + 1, sizeof *out->f);
    tp_an_rank_finding *f = &out->f[out->n_findings++];
    memset(f, 0, sizeof *f);
    f->id = id, f->severity = sev > 1 ? 1 : sev, f->rank = rank;
    return f;
}

static void stragglers(tp_an_ranks *out) {
    char b1[32], b2[32], b3[32], b4[32];
    double med = out->median_own_p50_ns;
    if (isnan(med) || med <= 0)
        return;
    for (size_t i = 0; i < out->n; i++) {
        const tp_an_rank_row *r = &out->r[i];
        if (isnan(r->own_p50_ns) || r->own_p50_ns < STRAGGLER_RATIO * med)
            continue;
        tp_an_rank_finding *f =
            add(out, "straggler", (r->own_p50_ns - med) / r->own_p50_ns, r->rank);
        snprintf(f->title, sizeof f->title,
                 "straggler: rank %d's own work per step is %.2fx the median rank's", r->rank,
                 r->own_p50_ns / med);
        snprintf(f->evidence, sizeof f->evidence,
                 "rank %d: median step %s (p90 %s), %s of it outside waits in collectives, "
                 "against %s for the median rank over %zu ranks; in a synchronous job every "
                 "collective waits for the slowest rank",
                 r->rank, tp_units_dur(b1, sizeof b1, r->step_p50_ns),
                 tp_units_dur(b2, sizeof b2, r->step_p90_ns),
                 tp_units_dur(b3, sizeof b3, r->own_p50_ns), tp_units_dur(b4, sizeof b4, med),
                 out->n);
        f->advice = "look at this rank's own findings (input-bound: its data loading; "
                    "memory or sharding: an uneven share of data, sequence lengths or FSDP "
                    "shards), its device (clocks, a shared or throttled GPU) and host (CPU "
                    "contention, NUMA); the other ranks' exposed communication is largely "
                    "waiting for it";
    }
}

static void collective_wait(tp_an_ranks *out) {
    char b1[32], b2[32];
    double med = out->median_step_p50_ns;
    const tp_an_rank_row *least = NULL;
    size_t n_comm = 0;
    for (size_t i = 0; i < out->n; i++)
        if (out->r[i].comm_ns > 0) {
            n_comm++;
            if (!least || out->r[i].exposed_comm_ns < least->exposed_comm_ns)
                least = &out->r[i];
        }
    if (n_comm < 2 || isnan(med) || med <= 0)
        return;
    char waiting[128] = ""; /* the waiting ranks, "0, 1, 3"; "..." after 100 characters */
    size_t used = 0, n_wait = 0;
    int64_t most = 0;
    for (size_t i = 0; i < out->n; i++) {
        const tp_an_rank_row *r = &out->r[i];
        if (r == least || r->comm_ns <= 0)
            continue;
        double steps = r->n_steps ? (double)r->n_steps : 1;
        double apart = (double)(r->exposed_comm_ns - least->exposed_comm_ns) / steps;
        if ((double)r->exposed_comm_ns < WAIT_RATIO * (double)least->exposed_comm_ns ||
            apart < WAIT_MIN_SHARE * med)
            continue;
        if (used < 100) {
            int w = snprintf(waiting + used, sizeof waiting - used, "%s%d", n_wait ? ", " : "",
                             r->rank);
            used += w > 0 && (size_t)w < sizeof waiting - used ? (size_t)w : 0;
            if (used >= 100)
                used += (size_t)snprintf(waiting + used, sizeof waiting - used, ", ...");
        }
        n_wait++;
        most = r->exposed_comm_ns > most ? r->exposed_comm_ns : most;
    }
    if (!n_wait)
        return;
    double per_step =
        (double)(most - least->exposed_comm_ns) / (double)(least->n_steps ? least->n_steps : 1);
    tp_an_rank_finding *f = add(out, "collective-wait", per_step / med, least->rank);
    snprintf(f->title, sizeof f->title,
             "collective-wait: rank%s %s wait%s in collectives for rank %d, which arrives last",
             n_wait > 1 ? "s" : "", waiting, n_wait > 1 ? "" : "s", least->rank);
    snprintf(f->evidence, sizeof f->evidence,
             "communication no computation hides: up to %s on rank%s %s against %s on rank %d "
             "(the least: it arrives last, the others wait for it inside the collective)",
             tp_units_dur(b1, sizeof b1, (double)most), n_wait > 1 ? "s" : "", waiting,
             tp_units_dur(b2, sizeof b2, (double)least->exposed_comm_ns), least->rank);
    f->advice = "the time is lost before the collective on the rank that arrives last: look at "
                "its work between collectives (its own findings, its data and shard sizes); "
                "balancing it shortens every rank's step";
}

void tp_an_ranks_run(const tp_model *m, const tp_an_opts *o,
                     int (*keep)(const tp_rank *r, const void *arg), const void *arg,
                     tp_an_ranks *out) {
    memset(out, 0, sizeof *out);
    out->median_step_p50_ns = out->median_own_p50_ns = NAN;
    out->r = tp_mem_xcalloc(m->n_ranks + 1, sizeof *out->r);
    double *p50 = tp_mem_xcalloc(m->n_ranks + 1, sizeof *p50);
    double *own = tp_mem_xcalloc(m->n_ranks + 1, sizeof *own);
    size_t n_p50 = 0;
    tp_an_opts opts = o ? *o : (tp_an_opts){0};
    if (!o)
        tp_an_opts_init(&opts);
    opts.no_symbols = 1; /* the rows need no stacks */
    for (size_t i = 0; i < m->n_ranks; i++) {
        if (keep && !keep(&m->ranks[i], arg))
            continue;
        tp_rank_analysis a;
        tp_rank_analysis_run(&a, m, &m->ranks[i], &opts,
                             TP_RA_TEMPORAL | TP_RA_OVERLAP | TP_RA_DIAGNOSIS);
        tp_an_rank_row *r = &out->r[out->n++];
        r->rank = a.v.rank;
        r->n_steps = a.dg.n_steps;
        r->step_p50_ns = a.dg.n_steps ? a.dg.step_p50_ns : NAN;
        r->step_p90_ns = a.dg.n_steps ? a.dg.step_p90_ns : NAN;
        r->span_ns = a.t.span, r->busy_ns = a.t.busy, r->compute_ns = a.t.compute;
        r->comm_ns = a.ov.comm_ns;
        r->exposed_comm_ns = a.ov.comm_ns - a.ov.overlap_ns;
        r->own_p50_ns = NAN;
        if (a.dg.n_steps) {
            double w = a.dg.step_p50_ns - (double)r->exposed_comm_ns / (double)a.dg.n_steps;
            r->own_p50_ns = w > 0 ? w : 0;
            own[n_p50] = r->own_p50_ns;
            p50[n_p50++] = a.dg.step_p50_ns;
        }
        tp_rank_analysis_free(&a);
    }
    out->median_step_p50_ns = tp_an_percentile(p50, n_p50, 50);
    out->median_own_p50_ns = tp_an_percentile(own, n_p50, 50);
    free(p50), free(own);
    if (out->n >= 2) {
        stragglers(out);
        collective_wait(out);
    }
    if (out->n_findings)
        qsort(out->f, out->n_findings, sizeof *out->f, by_severity);
}

void tp_an_ranks_free(tp_an_ranks *out) {
    if (!out)
        return;
    free(out->r), free(out->f);
    memset(out, 0, sizeof *out);
}
