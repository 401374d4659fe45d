/* tp_an_ranks: see tp_an_ranks.h. */
#include "tp_an_ranks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_an_env.h"
#include "tp_an_samples.h"
#include "tp_an_stats.h"
#include "tp_diag_rank_rules.h"
#include "tp_mem.h"

#define TP_DIAG_RANK_RULE_ROW(id, fn, description) {id, fn, description},
static const tp_an_rank_rule rules[] = {TP_DIAG_RANK_RULES(TP_DIAG_RANK_RULE_ROW)};
#undef TP_DIAG_RANK_RULE_ROW

size_t tp_an_ranks_rules(const tp_an_rank_rule **out) {
    *out = rules;
    return sizeof rules / sizeof rules[0];
}

/* Rows by rank, stable (a stray trace with a job's rank number stays after it): an insertion
 * sort, linear on rows that come in rank order as the model's and the merge's do. */
static void sort_by_rank(tp_an_rank_row *r, size_t n) {
    for (size_t i = 1; i < n; i++) {
        tp_an_rank_row v = r[i];
        size_t j = i;
        for (; j > 0 && r[j - 1].rank > v.rank; j--)
            r[j] = r[j - 1];
        r[j] = v;
    }
}

/* Most severe first; equal severities by rule order, then rank, so the order never depends
 * on qsort's. */
static size_t rule_index(const char *id) {
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        if (rules[i].id == id)
            return i;
    return sizeof rules / sizeof rules[0];
}

static int by_severity(const void *a, const void *b) {
    const tp_an_rank_finding *x = a, *y = b;
    if (x->severity != y->severity)
        return (x->severity < y->severity) - (x->severity > y->severity);
    size_t i = rule_index(x->id), j = rule_index(y->id);
    if (i != j)
        return (i > j) - (i < j);
    return (x->rank > y->rank) - (x->rank < y->rank);
}

tp_an_rank_finding *tp_an_ranks_add_finding(tp_an_ranks *x, const tp_an_rank_rule *self, double sev,
                                            int rank) {
    x->f = tp_mem_xrealloc(x->f, x->n_findings + 1, sizeof *x->f);
    tp_an_rank_finding *f = &x->f[x->n_findings++];
    memset(f, 0, sizeof *f);
    f->id = self->id, f->severity = sev > 1 ? 1 : sev, f->rank = rank;
    return f;
}

#define HOST_WAIT_MIN_SAMPLES 20 /* fewer say little about a share of the steps */

/* The step thread's sampled time off a CPU in its steps, outside its data-loading ranges, of
 * a rank without device activity recorded with samples; -1 otherwise. */
static int64_t host_waits(const tp_rank_analysis *a) {
    if (a->t.has_gpu || !a->v.r->samples.n || !a->dg.n_steps || !a->host.n_steps)
        return -1;
    int64_t *lo, *hi;
    size_t n = tp_an_host_data_ranges(&a->v, a->host.step_pid, a->host.step_tid, &lo, &hi), got;
    int64_t off = tp_an_samples_off_cpu(&a->v, a->host.step_pid, a->host.step_tid, a->dg.step_start,
                                        a->dg.step_end, a->dg.n_steps, lo, hi, n, &got);
    free(lo), free(hi);
    return got >= HOST_WAIT_MIN_SAMPLES ? off : -1;
}

/* The row's CPU figures (tp_an_rank_row): a rank's demand over its steps after warm-up. */
static void cpu_figures(tp_an_rank_row *r, const tp_rank_analysis *a) {
    r->cpu_demand = NAN;
    const char *host = tp_rank_env(a->v.m, a->v.r, -1, "host");
    snprintf(r->host, sizeof r->host, "%s", host ? host : "");
    const char *cores = tp_rank_env(a->v.m, a->v.r, -1, "cpu.cores");
    r->cores = cores ? strtoll(cores, NULL, 10) : 0;
    if (tp_an_env_cpus(a->v.m, a->v.r, &r->cpus, NULL) != 0)
        r->cpus = 0;
    size_t first = a->dg.n_warmup;
    if (a->v.r->samples.n && a->dg.n_steps > first)
        r->cpu_demand = tp_an_samples_demand(&a->v, a->dg.step_start + first,
                                             a->dg.step_end + first, a->dg.n_steps - first, NULL);
}

int64_t tp_an_rank_waits(const tp_an_rank_row *r) {
    return r->comm_ns > 0 ? r->exposed_comm_ns : r->host_wait_ns > 0 ? r->host_wait_ns : 0;
}

int tp_an_rank_host_waits(const tp_an_rank_row *r) {
    return r->comm_ns <= 0 && r->host_wait_ns >= 0;
}

void tp_an_rank_row_fill(tp_an_rank_row *r, const tp_rank_analysis *a) {
    memset(r, 0, sizeof *r);
    r->rank = a->v.rank;
    r->n_steps = a->dg.n_steps;
    r->step_p50_ns = a->dg.n_steps ? a->dg.step_p50_ns : NAN;
    r->step_p90_ns = a->dg.n_steps ? a->dg.step_p90_ns : NAN;
    r->own_p50_ns = NAN;
    r->span_ns = a->t.span, r->busy_ns = a->t.busy, r->compute_ns = a->t.compute;
    r->comm_ns = a->ov.comm_ns;
    r->exposed_comm_ns = a->ov.comm_ns - a->ov.overlap_ns;
    r->mem_peak_bytes = a->mu.peak_allocated;
    r->data_wait_ns = a->host.data_ns;
    r->host_wait_ns = host_waits(a);
    cpu_figures(r, a);
}

void tp_an_ranks_add(tp_an_ranks *x, const tp_an_rank_row *row) {
    x->r = tp_mem_xrealloc(x->r, x->n + 1, sizeof *x->r);
    x->r[x->n++] = *row;
}

const char *tp_an_ranks_quiet(const tp_an_ranks *x) {
    return isnan(x->median_step_p50_ns) && isnan(x->median_mem_peak)
               ? "nothing to compare: no steps found in the ranks"
               : "no straggler, no rank waiting on the others, no memory imbalance, no input "
                 "straggler, no machine short of CPUs";
}

long tp_an_ranks_find(const tp_an_ranks *x, int rank) {
    for (size_t i = 0; i < x->n; i++)
        if (x->r[i].rank == rank)
            return (long)i;
    return -1;
}

/* own_p50 of every row, and the medians over the rows that have each figure. */
static void medians(tp_an_ranks *x) {
    double *p50 = tp_mem_xcalloc(x->n + 1, sizeof *p50);
    double *own = tp_mem_xcalloc(x->n + 1, sizeof *own);
    double *mem = tp_mem_xcalloc(x->n + 1, sizeof *mem);
    size_t n_p50 = 0, n_own = 0, n_mem = 0;
    /* where some rank's waits were sampled, a rank without device whose were not has no own
     * work to compare (its whole step would read as its own) */
    int sampled = 0;
    for (size_t i = 0; i < x->n; i++)
        sampled |= tp_an_rank_host_waits(&x->r[i]);
    for (size_t i = 0; i < x->n; i++) {
        tp_an_rank_row *r = &x->r[i];
        r->own_p50_ns = NAN;
        if (r->n_steps && !isnan(r->step_p50_ns)) {
            p50[n_p50++] = r->step_p50_ns;
            if (sampled && r->comm_ns <= 0 && r->host_wait_ns < 0)
                continue;
            double w = r->step_p50_ns - (double)tp_an_rank_waits(r) / (double)r->n_steps;
            r->own_p50_ns = w > 0 ? w : 0;
            own[n_own++] = r->own_p50_ns;
        }
        if (r->mem_peak_bytes > 0)
            mem[n_mem++] = (double)r->mem_peak_bytes;
    }
    x->median_step_p50_ns = tp_an_percentile(p50, n_p50, 50); /* by selection */
    x->median_own_p50_ns = tp_an_percentile(own, n_own, 50);
    x->median_mem_peak = tp_an_percentile(mem, n_mem, 50);
    free(p50), free(own), free(mem);
}

void tp_an_ranks_judge(tp_an_ranks *x) {
    free(x->f);
    x->f = NULL, x->n_findings = 0;
    sort_by_rank(x->r, x->n);
    medians(x);
    if (x->n >= 2)
        for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
            rules[i].run(x, &rules[i]);
    if (x->n_findings)
        qsort(x->f, x->n_findings, sizeof *x->f, by_severity);
}

void tp_an_ranks_run(const tp_model *m, const tp_an_opts *o,
                     int (*keep)(const tp_rank *r, const void *arg), const void *arg,
                     tp_an_ranks *out) {
    memset(out, 0, sizeof *out);
    tp_an_opts opts = o ? *o : (tp_an_opts){0};
    if (!o)
        tp_an_opts_init(&opts);
    opts.no_symbols = 1; /* the rows need no stacks */
    for (size_t i = 0; i < m->n_ranks; i++) {
        if (keep && !keep(&m->ranks[i], arg))
            continue;
        tp_rank_analysis a;
        tp_rank_analysis_run(&a, m, &m->ranks[i], &opts, TP_AN_RANK_ROW_NEEDS);
        tp_an_rank_row row;
        tp_an_rank_row_fill(&row, &a);
        tp_rank_analysis_free(&a);
        tp_an_ranks_add(out, &row);
    }
    tp_an_ranks_judge(out);
}

void tp_an_ranks_free(tp_an_ranks *out) {
    if (!out)
        return;
    free(out->r), free(out->f);
    memset(out, 0, sizeof *out);
}
