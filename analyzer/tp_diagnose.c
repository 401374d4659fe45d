/* tp_diagnose: runs the rule table over one rank and ranks the findings (see tp_diagnose.h).
 *
 * The shared state (window, threads, interval sets, idle split) is built once
 * (tp_diag_ctx); then every rule of TP_DIAG_RULES (tp_diag_rules.h) runs and appends at most
 * one finding; the list is sorted by severity, ties by the rules' order. A trace whose only
 * step is the first (warm-up) is not judged on time shares (tp_diagnosis.warmup_only). */
#include "tp_diagnose.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_diag_ctx.h"
#include "tp_diag_rules.h"
#include "tp_units.h"

#define TP_DIAG_ROW(id, fn, order, needs, description) {id, fn, order, needs, description},
static const tp_diag_rule rules[] = {TP_DIAG_RULES(TP_DIAG_ROW)};
#undef TP_DIAG_ROW

#define TP_DIAG_COUNT(id, fn, order, needs, description) +1
enum { N_RULES = 0 TP_DIAG_RULES(TP_DIAG_COUNT) };
#undef TP_DIAG_COUNT

/* The orders are a permutation of 0..N_RULES-1: N rows whose order bits together cover
 * exactly N bits can only use each order once, and none out of range. A typo does not
 * compile (instead of sorting a finding last, as a missing name in a list once did). */
#define TP_DIAG_ORDER_BIT(id, fn, order, needs, description) | (1ull << (order))
static_assert(N_RULES < 64, "rule orders are checked in a 64-bit mask");
static_assert((0 TP_DIAG_RULES(TP_DIAG_ORDER_BIT)) == (1ull << N_RULES) - 1,
              "every rule needs its own order in 0..N-1 (tp_diag_rules.h)");
#undef TP_DIAG_ORDER_BIT

/* The rule a finding came from (its id is the rule's own string). */
static unsigned order_of(const tp_finding *f) {
    for (size_t i = 0; i < N_RULES; i++)
        if (rules[i].id == f->id)
            return rules[i].order;
    return N_RULES;
}

/* The row of the rule a finding came from. */
static size_t order_rule(const tp_finding *f) {
    size_t i = 0;
    while (i + 1 < N_RULES && rules[i].id != f->id)
        i++;
    return i;
}

static int cmp_finding(const void *a, const void *b) {
    const tp_finding *x = a, *y = b;
    if (x->severity != y->severity)
        return x->severity > y->severity ? -1 : 1;
    unsigned p = order_of(x), q = order_of(y);
    return (p > q) - (p < q);
}

size_t tp_diagnose_rules(const tp_diag_rule **out) {
    *out = rules;
    return N_RULES;
}

void tp_diagnose_run(const tp_an_view *v, tp_diagnosis *out) {
    tp_diagnose_run_with(v, NULL, out);
}

void tp_diagnose_run_with(const tp_an_view *v, const tp_an_memuse *mu, tp_diagnosis *out) {
    tp_diag_ctx d;
    tp_diag_ctx_init(&d, v, out);
    d.mem_given = mu;
    /* A first step alone is warm-up: only the rules that need no more than memory records
     * (an OOM, growth) or none (drops) judge it; shares of time in it mean nothing. A native
     * trace records from the program's start, so its only step is the first; a PyTorch
     * profile's one ProfilerStep#N comes after the schedule's own warm-up steps. */
    out->warmup_only = out->n_steps == 1 && v->r->native;
    for (size_t i = 0; i < N_RULES; i++)
        if (!out->warmup_only || !(rules[i].needs & ~(uint64_t)TP_DIAG_NEEDS_MEMORY))
            rules[i].run(&d, &rules[i]);
    for (size_t i = 0; i < out->n; i++) /* a finding whose records were dropped says so */
        tp_diag_qualify_drops(&d, &out->f[i], &rules[order_rule(&out->f[i])]);
    if (out->n > 1)
        qsort(out->f, out->n, sizeof *out->f, cmp_finding);
    tp_diag_ctx_free(&d);
}

static void finding_free(tp_finding *f) {
    free(f->title), free(f->evidence), free(f->advice), free(f->source), free(f->metrics);
    for (size_t k = 0; k < f->n_frames; k++)
        free(f->frames[k].module), free(f->frames[k].func), free(f->frames[k].file);
    free(f->frames);
}

void tp_diagnose_free(tp_diagnosis *d) {
    if (!d)
        return;
    for (size_t i = 0; i < d->n; i++)
        finding_free(&d->f[i]);
    free(d->f);
    free(d->step_start), free(d->step_end);
    memset(d, 0, sizeof *d);
}

const char *tp_diag_level(double severity) {
    return severity >= 0.25 ? "high" : severity >= 0.10 ? "medium" : "low";
}

const tp_finding *tp_diagnosis_find(const tp_diagnosis *d, const char *id) {
    for (size_t i = 0; d && i < d->n; i++)
        if (strcmp(d->f[i].id, id) == 0)
            return &d->f[i];
    return NULL;
}

double tp_finding_metric(const tp_finding *f, const char *key) {
    for (size_t i = 0; f && i < f->n_metrics; i++)
        if (strcmp(f->metrics[i].key, key) == 0)
            return f->metrics[i].value;
    return NAN;
}

int64_t tp_diag_warmup_ns(const tp_diagnosis *d) {
    return d->n_warmup ? d->step_start[d->n_warmup] - d->step_start[0] : 0;
}

double tp_diag_step_period_ns(const tp_diagnosis *d) {
    if (d->n_steps < 2)
        return NAN;
    return (double)(d->step_start[d->n_steps - 1] - d->step_start[0]) / (double)(d->n_steps - 1);
}

int tp_diag_steps_leave_gaps(const tp_diagnosis *d) {
    double period = tp_diag_step_period_ns(d);
    return !isnan(period) && period >= 1.1 * d->step_mean_ns;
}

const char *tp_diag_warmup_text(const tp_diagnosis *d, char *buf, size_t n) {
    char t[32];
    if (!n)
        return buf;
    buf[0] = 0;
    if (!d->n_warmup)
        return buf;
    tp_units_dur(t, sizeof t, (double)tp_diag_warmup_ns(d));
    /* the first step over the median, as set_window judged it */
    double x = (double)(d->step_end[0] - d->step_start[0]) / d->step_p50_ns;
    if (d->n_warmup == 1)
        snprintf(buf, n,
                 "judged from step 2 on: step 1 (%s, %.0fx the median step) left out as warm-up "
                 "(kernel and library loading, first allocations)",
                 t, x);
    else
        snprintf(buf, n,
                 "judged from step %zu on: steps 1-%zu (%s; the first %.0fx the median step) "
                 "left out as warm-up (kernel and library loading, first allocations)",
                 d->n_warmup + 1, d->n_warmup, t, x);
    return buf;
}
