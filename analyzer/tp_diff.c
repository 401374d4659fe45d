/* tp_diff: see tp_diff.h. */
#include "tp_diff.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_gen.h>

#include "tp_an_env.h"
#include "tp_an_samples.h"
#include "tp_an_stacks.h"
#include "tp_mem.h"
#include "tp_rank_analysis.h"
#include "tp_report_fmt.h"
#include "tp_units.h"

/* ---------------------------------------------------------------- figures */

typedef enum { U_TIME, U_PCT, U_COUNT, U_BYTES } unit;

#define NAME_W 50  /* the text tables' name column */
#define STACK_W 90 /* a launching stack's line: the call, and the program's line after it */

static double step_time(const tp_rank_analysis *a) {
    return a->dg.n_steps ? a->dg.step_mean_ns : NAN;
}
static double step_p50(const tp_rank_analysis *a) {
    return a->dg.n_steps ? a->dg.step_p50_ns : NAN;
}
static double step_p90(const tp_rank_analysis *a) {
    return a->dg.n_steps ? a->dg.step_p90_ns : NAN;
}
static double step_period(const tp_rank_analysis *a) {
    return tp_diag_step_period_ns(&a->dg);
}
static double steps(const tp_rank_analysis *a) {
    return a->dg.n_steps ? (double)a->dg.n_steps : NAN;
}
static double has_gpu(const tp_rank_analysis *a, double v) {
    return a->t.has_gpu ? v : NAN;
}
static double span(const tp_rank_analysis *a) {
    return has_gpu(a, (double)a->t.span);
}
static double util(const tp_rank_analysis *a) {
    return has_gpu(a, tp_rf_pct(a->t.busy, a->t.span));
}
static double busy(const tp_rank_analysis *a) {
    return has_gpu(a, (double)a->t.busy);
}
static double idle(const tp_rank_analysis *a) {
    return has_gpu(a, (double)a->t.idle);
}
static double compute(const tp_rank_analysis *a) {
    return has_gpu(a, (double)a->t.compute);
}
static double non_compute(const tp_rank_analysis *a) {
    return has_gpu(a, (double)a->t.non_compute);
}
static double kernel_count(const tp_rank_analysis *a) {
    size_t n = 0;
    for (size_t i = 0; i < a->k.n; i++)
        n += a->k.k[i].count;
    return has_gpu(a, (double)n);
}
static double kernel_time(const tp_rank_analysis *a) {
    int64_t s = 0;
    for (size_t i = 0; i < a->k.n; i++)
        s += a->k.k[i].sum;
    return has_gpu(a, (double)s);
}
static double copy_bytes(const tp_rank_analysis *a) {
    int64_t s = 0;
    for (size_t i = 0; i < a->mem.n_copy; i++)
        s += a->mem.copy[i].bytes;
    return has_gpu(a, (double)s);
}
static double copy_time(const tp_rank_analysis *a) {
    int64_t s = 0;
    for (size_t i = 0; i < a->mem.n_copy; i++)
        s += a->mem.copy[i].dur_ns;
    return has_gpu(a, (double)s);
}
static double launch_cpu(const tp_rank_analysis *a) {
    return a->l.n_pairs ? a->l.cpu.p50 : NAN;
}
static double launch_delay(const tp_rank_analysis *a) {
    return a->l.n_pairs ? a->l.delay.p50 : NAN;
}
static double overlap(const tp_rank_analysis *a) {
    return a->ov.pct;
}
/* Device memory as the report's "Device memory use" has it (tp_an_memuse: NVTX memory events
 * or the PyTorch profiler's [memory] rows, replayed); NaN without memory events or where the
 * total is unknown (-1). */
static double mem_known(const tp_rank_analysis *a, int64_t v) {
    return a->mu.source != TP_AN_MSRC_NONE && v >= 0 ? (double)v : NAN;
}
static double mem_peak(const tp_rank_analysis *a) {
    return mem_known(a, a->mu.peak_allocated);
}
static double mem_reserved_peak(const tp_rank_analysis *a) {
    return mem_known(a, a->mu.peak_reserved);
}
/* The host side (tp_an_host, the report's "Host" section). NaN where the run recorded none of
 * it: data loading without a data-loading range (a loop that does not annotate its loading
 * has no figure, not a zero), framework ops without any (a recording without the PyTorch
 * profiler's CPU ops). */
static double host_data(const tp_rank_analysis *a) {
    return a->host.data_name ? (double)a->host.data_ns : NAN;
}
static double host_data_step(const tp_rank_analysis *a) {
    /* over the diagnosis' steps, as the cross-rank input-straggler rule divides it */
    return a->dg.n_steps ? host_data(a) / (double)a->dg.n_steps : NAN;
}
static double host_ops(const tp_rank_analysis *a) {
    return a->host.n_ops ? (double)a->host.ops_ns : NAN;
}

/* The CPU the sampled threads got in the steps, over the steps (`record --sample`): NaN without
 * samples or steps, and for the native threads without a recording whose sampler read them. */
static double sampled_cpu_step(const tp_rank_analysis *a, int native_only) {
    size_t n = a->dg.n_steps;
    if (!n || !a->v.r->samples.n || (native_only && !tp_an_env_samples_native(a->v.m, a->v.r)))
        return NAN;
    return (double)tp_an_samples_clock_in(&a->v, a->dg.step_start, a->dg.step_end, n, native_only) /
           (double)n;
}
static double cpu_step(const tp_rank_analysis *a) {
    return sampled_cpu_step(a, 0);
}
static double native_cpu_step(const tp_rank_analysis *a) {
    return sampled_cpu_step(a, 1);
}

/* The headline figures: key (for gates and JSON), label, unit, definition (the report's
 * fields; NaN when the run has nothing to measure it by). */
static const struct {
    const char *key, *label;
    unit u;
    double (*get)(const tp_rank_analysis *a);
    const char *what;
} figures[] = {
    {"step_time", "time per step (mean)", U_TIME, step_time, "mean duration of the steps"},
    {"step_p50", "time per step (median)", U_TIME, step_p50, "median step duration"},
    {"step_p90", "time per step (p90)", U_TIME, step_p90, "90th percentile step duration"},
    {"step_period", "loop period (mean)", U_TIME, step_period,
     "mean time from a step's start to the next one's: an iteration, waits between steps "
     "included"},
    {"steps", "steps", U_COUNT, steps, "steps found (ranges named step, ProfilerStep#N)"},
    {"span", "device span", U_TIME, span, "first to last device op"},
    {"utilization", "device utilization", U_PCT, util, "busy share of the span"},
    {"busy", "device busy", U_TIME, busy, "time with any device op running"},
    {"idle", "device idle", U_TIME, idle, "span minus busy"},
    {"compute", "compute", U_TIME, compute, "time with a kernel running"},
    {"non_compute", "non-compute", U_TIME, non_compute, "busy minus compute"},
    {"kernels", "device ops", U_COUNT, kernel_count, "kernels, copies and memsets"},
    {"kernel_time", "device op time", U_TIME, kernel_time, "their summed durations"},
    {"copy_bytes", "bytes copied", U_BYTES, copy_bytes, "copies and memsets"},
    {"copy_time", "copy time", U_TIME, copy_time, "copies and memsets, summed"},
    {"launch_call", "launch call (median)", U_TIME, launch_cpu, "CPU time of a launch call"},
    {"launch_delay", "launch delay (median)", U_TIME, launch_delay, "launch call to op start"},
    {"overlap", "comm/comp overlap", U_PCT, overlap, "communication overlapped by compute"},
    {"mem_peak", "peak device memory", U_BYTES, mem_peak,
     "peak allocated device memory (memory events replayed)"},
    {"mem_reserved_peak", "peak reserved memory", U_BYTES, mem_reserved_peak,
     "peak memory the caching allocator reserved"},
    {"data_loading", "data loading (host)", U_TIME, host_data,
     "data-loading ranges in the host window (first to last step)"},
    {"data_per_step", "data loading per step", U_TIME, host_data_step,
     "data_loading over the steps"},
    {"cpu_ops", "framework ops (host)", U_TIME, host_ops,
     "CPU framework ops in the host window, outside data loading"},
    {"cpu_per_step", "sampled CPU per step", U_TIME, cpu_step,
     "the CPU clocks of every sampled thread (all processes) in the steps, over the steps"},
    {"native_cpu_per_step", "native CPU per step", U_TIME, native_cpu_step,
     "the same for the native threads (intra-op and OpenMP pools, libraries' threads)"},
};
#define N_FIGURES (sizeof figures / sizeof figures[0])

static int figure_index(const char *key) {
    for (size_t i = 0; i < N_FIGURES; i++)
        if (!strcmp(figures[i].key, key))
            return (int)i;
    return -1;
}

static const char *unit_name(unit u) {
    static const char *const names[] = {"ns", "percentage points", "count", "bytes"};
    return names[u];
}

void tp_diff_list_figures(FILE *out) {
    for (size_t i = 0; i < N_FIGURES; i++)
        fprintf(out, "  %-17s (%s) %s: %s\n", figures[i].key, unit_name(figures[i].u),
                figures[i].label, figures[i].what);
}

/* ---------------------------------------------------------------- gates */

tp_status tp_diff_parse_gate(const char *s, tp_diff_gate *g, char *err, size_t err_size) {
    memset(g, 0, sizeof *g);
    if (!strncmp(s, "finding:", 8)) {
        if (!s[8] || strlen(s + 8) >= sizeof g->key) {
            snprintf(err, err_size, "'%s': finding:ID needs a finding id", s);
            return TP_ERR_ARG;
        }
        g->finding = 1;
        strcpy(g->key, s + 8);
        return TP_OK;
    }
    size_t k = strcspn(s, "<>");
    if (!s[k] || k == 0 || k >= sizeof g->key) {
        snprintf(err, err_size, "'%s': expected KEY>+N%%, KEY<-N%%, KEY>N or finding:ID", s);
        return TP_ERR_ARG;
    }
    memcpy(g->key, s, k);
    g->key[k] = 0;
    if (figure_index(g->key) < 0) {
        snprintf(err, err_size, "'%s': unknown figure '%s' (trainprof diff --help lists them)", s,
                 g->key);
        return TP_ERR_ARG;
    }
    g->greater = s[k] == '>';
    char *end;
    const char *num = s + k + 1;
    g->threshold = strtod(num, &end);
    if (end == num || !isfinite(g->threshold)) {
        snprintf(err, err_size, "'%s': no number after '%c'", s, s[k]);
        return TP_ERR_ARG;
    }
    g->relative = *end == '%';
    if (*end && strcmp(end, "%")) {
        snprintf(err, err_size, "'%s': unexpected '%s' after the number", s, end);
        return TP_ERR_ARG;
    }
    return TP_OK;
}

/* ---------------------------------------------------------------- tables by name */

typedef struct {
    char *name;
    double base, next;     /* totals (ns or bytes) */
    size_t n_base, n_next; /* counts */
} row;

typedef struct {
    row *r;
    size_t n, cap;
} table;

static row *table_get(table *t, const char *name) {
    for (size_t i = 0; i < t->n; i++) /* tables are a few hundred names at most per rank */
        if (!strcmp(t->r[i].name, name))
            return &t->r[i];
    tp_mem_xgrow((void **)&t->r, &t->cap, t->n + 1, sizeof *t->r);
    row *r = &t->r[t->n++];
    memset(r, 0, sizeof *r);
    r->name = strdup(name);
    if (!r->name)
        abort();
    return r;
}

static void table_add(table *t, const char *name, int side, double total, size_t count) {
    row *r = table_get(t, name);
    if (side) {
        r->next += total;
        r->n_next += count;
    } else {
        r->base += total;
        r->n_base += count;
    }
}

static void table_free(table *t) {
    for (size_t i = 0; i < t->n; i++)
        free(t->r[i].name);
    free(t->r);
}

static int by_change(const void *a, const void *b) {
    const row *x = a, *y = b;
    double dx = fabs(x->next - x->base), dy = fabs(y->next - y->base);
    if (dx != dy)
        return dx < dy ? 1 : -1;
    return strcmp(x->name, y->name);
}

static void fill_tables(const tp_rank_analysis *a, int side, table *kern, table *rng, table *cp,
                        table *ops) {
    for (size_t i = 0; i < a->k.n; i++)
        table_add(kern, tp_model_str(a->v.m, a->k.k[i].name), side, (double)a->k.k[i].sum,
                  a->k.k[i].count);
    char lb[512]; /* a name in two NVTX domains is two ranges: "[domain] name" */
    for (size_t i = 0; i < a->nv.n; i++)
        table_add(rng, tp_an_range_label(a->v.m, &a->nv.r[i], lb, sizeof lb), side,
                  (double)a->nv.r[i].total, a->nv.r[i].count);
    for (size_t i = 0; i < a->mem.n_copy; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s %s", tp_an_copy_kind_name(a->mem.copy[i].copy_kind),
                 tp_an_mem_kind_name(a->mem.copy[i].src_kind));
        table_add(cp, name, side, (double)a->mem.copy[i].bytes, a->mem.copy[i].count);
    }
    /* The report's CPU operators by self time; its annotation rows are the ranges above. */
    for (size_t i = 0; i < a->ops.n; i++)
        if (a->ops.op[i].cat == TP_CAT_CPU_OP)
            table_add(ops, tp_model_str(a->v.m, a->ops.op[i].name), side, (double)a->ops.op[i].self,
                      a->ops.op[i].count);
}

/* GPU time by launching stack (tp_an_stacks, as the report groups it), each group by its
 * frames as one line (tp_an_frames_text): "conv.py:548 in _conv_forward < ... < train.py:59 in
 * step < ...", so the same call from the same line of the program matches across the runs
 * whatever the stack ids. Nothing when neither run recorded stacks. */
static void fill_stacks(const tp_rank_analysis *a, int side, table *stk) {
    tp_an_stacks st;
    tp_an_stacks_run(&a->v, a->v.opts.stack_depth, &st);
    for (size_t i = 0; i < st.n; i++) {
        char *line = tp_an_frames_text(st.s[i].frames, st.s[i].n_frames);
        table_add(stk, line, side, (double)st.s[i].gpu_ns, st.s[i].count);
        free(line);
    }
    tp_an_stacks_free(&st);
}

/* CPU time by line from `record --sample`'s samples (tp_an_samples, as the report groups them):
 * each row's on-CPU time and samples by its frames as one line, like fill_stacks. Nothing
 * when neither run has samples. */
static void fill_samples(const tp_rank_analysis *a, int side, table *smp) {
    if (!a->v.r->samples.n)
        return;
    tp_an_samples sa;
    tp_an_samples_run(&a->v, a->v.opts.stack_depth, 0, 0, &sa);
    for (size_t i = 0; i < sa.n; i++) {
        char *line = tp_an_frames_text(sa.s[i].frames, sa.s[i].n_frames);
        table_add(smp, line, side, (double)sa.s[i].cpu_ns, sa.s[i].samples);
        free(line);
    }
    tp_an_samples_free(&sa);
}

/* ---------------------------------------------------------------- one rank */

static double change_pct(double b, double n) {
    return b != 0 && isfinite(b) && isfinite(n) ? 100.0 * (n - b) / fabs(b) : NAN;
}

static const char *fmt_value(char *buf, size_t n, unit u, double v) {
    if (isnan(v))
        return snprintf(buf, n, "-"), buf;
    switch (u) {
    case U_TIME:
        return tp_units_dur(buf, n, v);
    case U_BYTES:
        return tp_units_bytes(buf, n, v);
    case U_PCT:
        return snprintf(buf, n, "%.2f %%", v), buf;
    default:
        return snprintf(buf, n, "%.0f", v), buf;
    }
}

static const char *fmt_change(char *buf, size_t n, unit u, double b, double v) {
    if (isnan(b) || isnan(v))
        return snprintf(buf, n, "-"), buf;
    if (u == U_PCT)
        return snprintf(buf, n, "%+.2f pp", v - b), buf;
    double p = change_pct(b, v);
    if (isnan(p))
        return snprintf(buf, n, v == b ? "0" : "new"), buf;
    return snprintf(buf, n, "%+.1f %%", p), buf;
}

static const tp_finding *find(const tp_diagnosis *d, const char *id) {
    for (size_t i = 0; i < d->n; i++)
        if (!strcmp(d->f[i].id, id))
            return &d->f[i];
    return NULL;
}

/* Whether gate g fails for this rank; `why` says what it saw. */
static int gate_fails(const tp_diff_gate *g, const tp_rank_analysis *b, const tp_rank_analysis *n,
                      char *why, size_t why_size) {
    if (g->finding) {
        int fails = find(&n->dg, g->key) && !find(&b->dg, g->key);
        snprintf(why, why_size, "finding %s %s", g->key,
                 fails                  ? "appeared"
                 : find(&n->dg, g->key) ? "was already there"
                                        : "absent");
        return fails;
    }
    int fi = figure_index(g->key);
    double vb = figures[fi].get(b), vn = figures[fi].get(n);
    if (isnan(vb) || isnan(vn)) {
        snprintf(why, why_size, "%s not measured in %s", g->key, isnan(vb) ? "BASE" : "NEW");
        return 1;
    }
    double ch = g->relative ? change_pct(vb, vn) : vn - vb;
    if (isnan(ch)) {
        snprintf(why, why_size, "%s: relative change from 0 undefined", g->key);
        return 1;
    }
    snprintf(why, why_size, "%s changed by %+.2f%s", g->key, ch,
             g->relative              ? " %"
             : figures[fi].u == U_PCT ? " pp"
                                      : "");
    return g->greater ? ch > g->threshold : ch < g->threshold;
}

/* A table's top rows by change; the name column `w` wide (names longer are cut). */
static void text_table(FILE *f, const char *title, table *t, unit u, size_t top, int w) {
    char b1[32], b2[32], b3[32], nb[256];
    if (!t->n)
        return;
    qsort(t->r, t->n, sizeof *t->r, by_change);
    fprintf(f, "%s (top %zu of %zu by change)\n  %-*s %12s %12s %10s %8s %8s\n", title,
            top < t->n ? top : t->n, t->n, w, "name", "base", "new", "change", "n base", "n new");
    for (size_t i = 0; i < t->n && i < top; i++) {
        const row *r = &t->r[i];
        fprintf(f, "  %-*s %12s %12s %10s %8zu %8zu\n", w,
                tp_rf_clip(nb, sizeof nb, r->name, (size_t)w),
                r->n_base ? fmt_value(b1, sizeof b1, u, r->base) : "-",
                r->n_next ? fmt_value(b2, sizeof b2, u, r->next) : "-",
                !r->n_base   ? "new"
                : !r->n_next ? "gone"
                             : fmt_change(b3, sizeof b3, u, r->base, r->next),
                r->n_base, r->n_next);
    }
    fprintf(f, "\n");
}

static void json_table(yajl_gen g, const char *key, table *t) {
    if (t->n)
        qsort(t->r, t->n, sizeof *t->r, by_change);
    tp_rj_str(g, key);
    yajl_gen_array_open(g);
    for (size_t i = 0; i < t->n; i++) {
        yajl_gen_map_open(g);
        tp_rj_kv(g, "name", t->r[i].name);
        tp_rj_num(g, "base", t->r[i].n_base ? t->r[i].base : NAN);
        tp_rj_num(g, "new", t->r[i].n_next ? t->r[i].next : NAN);
        tp_rj_int(g, "count_base", (long long)t->r[i].n_base);
        tp_rj_int(g, "count_new", (long long)t->r[i].n_next);
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
}

static void text_findings(FILE *f, const tp_diagnosis *b, const tp_diagnosis *n) {
    fprintf(f, "Findings\n");
    int any = 0;
    for (size_t i = 0; i < n->n; i++) {
        const tp_finding *x = &n->f[i], *was = find(b, x->id);
        if (!was)
            fprintf(f, "  + %-24s new (%s %.0f %%)\n", x->id, tp_diag_level(x->severity),
                    100 * x->severity);
        else if (fabs(was->severity - x->severity) >= 0.005)
            fprintf(f, "  ~ %-24s %.0f %% -> %.0f %%\n", x->id, 100 * was->severity,
                    100 * x->severity);
        else
            fprintf(f, "  = %-24s %.0f %%\n", x->id, 100 * x->severity);
        any = 1;
    }
    for (size_t i = 0; i < b->n; i++)
        if (!find(n, b->f[i].id)) {
            fprintf(f, "  - %-24s gone (was %.0f %%)\n", b->f[i].id, 100 * b->f[i].severity);
            any = 1;
        }
    if (!any)
        fprintf(f, "  none in either run\n");
    fprintf(f, "\n");
}

static void json_findings(yajl_gen g, const tp_diagnosis *b, const tp_diagnosis *n) {
    tp_rj_str(g, "findings");
    yajl_gen_array_open(g);
    for (int side = 0; side < 2; side++) {
        const tp_diagnosis *d = side ? b : n, *o = side ? n : b;
        for (size_t i = 0; i < d->n; i++) {
            const tp_finding *x = &d->f[i], *other = find(o, x->id);
            if (side && other)
                continue; /* listed from NEW's side */
            yajl_gen_map_open(g);
            tp_rj_kv(g, "id", x->id);
            tp_rj_kv(g, "status", side ? "gone" : other ? "kept" : "new");
            tp_rj_num(g, "severity_base", side ? x->severity : other ? other->severity : NAN);
            tp_rj_num(g, "severity_new", side ? NAN : x->severity);
            yajl_gen_map_close(g);
        }
    }
    yajl_gen_array_close(g);
}

/* Compares one rank; returns the number of gates that failed on it. */
static int diff_rank(FILE *f, yajl_gen g, const tp_rank_analysis *b, const tp_rank_analysis *n,
                     const tp_diff_opts *o) {
    size_t top = (size_t)(o->top > 0 ? o->top : 10);
    table kern = {0}, rng = {0}, cp = {0}, ops = {0}, stk = {0}, smp = {0};
    fill_tables(b, 0, &kern, &rng, &cp, &ops);
    fill_tables(n, 1, &kern, &rng, &cp, &ops);
    fill_stacks(b, 0, &stk);
    fill_stacks(n, 1, &stk);
    fill_samples(b, 0, &smp);
    fill_samples(n, 1, &smp);
    char b1[32], b2[32], b3[32], why[160];
    if (g) {
        yajl_gen_map_open(g);
        tp_rj_int(g, "rank", b->v.rank);
        tp_rj_str(g, "figures");
        yajl_gen_map_open(g);
        for (size_t i = 0; i < N_FIGURES; i++) {
            double vb = figures[i].get(b), vn = figures[i].get(n);
            tp_rj_str(g, figures[i].key);
            yajl_gen_map_open(g);
            tp_rj_kv(g, "unit", unit_name(figures[i].u));
            tp_rj_num(g, "base", vb);
            tp_rj_num(g, "new", vn);
            tp_rj_num(g, "change", vn - vb);
            tp_rj_num(g, "change_pct", change_pct(vb, vn));
            yajl_gen_map_close(g);
        }
        yajl_gen_map_close(g);
        json_table(g, "kernels", &kern);
        json_table(g, "ranges", &rng);
        json_table(g, "copies", &cp);
        json_table(g, "cpu_ops", &ops);
        json_table(g, "launch_stacks", &stk);
        if (smp.n) /* only where a run was sampled */
            json_table(g, "cpu_samples", &smp);
        json_findings(g, &b->dg, &n->dg);
    } else {
        fprintf(f, "== rank %d ==\n\n  %-24s %14s %14s %12s\n", b->v.rank, "", "base", "new",
                "change");
        for (size_t i = 0; i < N_FIGURES; i++) {
            double vb = figures[i].get(b), vn = figures[i].get(n);
            if (isnan(vb) && isnan(vn))
                continue;
            fprintf(f, "  %-24s %14s %14s %12s\n", figures[i].label,
                    fmt_value(b1, sizeof b1, figures[i].u, vb),
                    fmt_value(b2, sizeof b2, figures[i].u, vn),
                    fmt_change(b3, sizeof b3, figures[i].u, vb, vn));
        }
        fprintf(f, "\n");
        text_findings(f, &b->dg, &n->dg);
        text_table(f, "Device ops by total time", &kern, U_TIME, top, NAME_W);
        text_table(f, "GPU time by launching stack", &stk, U_TIME, top, STACK_W);
        text_table(f, "CPU time by line, sampled (on CPU)", &smp, U_TIME, top, STACK_W);
        text_table(f, "CPU operators by self time", &ops, U_TIME, top, NAME_W);
        text_table(f, "Annotation ranges by total time", &rng, U_TIME, top, NAME_W);
        text_table(f, "Copies and memsets by bytes", &cp, U_BYTES, top, NAME_W);
    }
    int failed = 0;
    if (g) {
        tp_rj_str(g, "gates");
        yajl_gen_array_open(g);
    } else if (o->n_gates) {
        fprintf(f, "Gates\n");
    }
    for (size_t i = 0; i < o->n_gates; i++) {
        int fails = gate_fails(&o->gates[i], b, n, why, sizeof why);
        failed += fails;
        if (g) {
            yajl_gen_map_open(g);
            tp_rj_kv(g, "gate", o->gates[i].key);
            tp_rj_str(g, "failed");
            yajl_gen_bool(g, fails);
            tp_rj_kv(g, "why", why);
            yajl_gen_map_close(g);
        } else {
            fprintf(f, "  %s  %s\n", fails ? "FAIL" : "ok  ", why);
        }
    }
    if (g) {
        yajl_gen_array_close(g);
        yajl_gen_map_close(g);
    } else if (o->n_gates) {
        fprintf(f, "\n");
    }
    table_free(&kern), table_free(&rng), table_free(&cp), table_free(&ops), table_free(&stk);
    table_free(&smp);
    return failed;
}

static void json_print(void *ctx, const char *s, size_t len) {
    fwrite(s, 1, len, (FILE *)ctx);
}

tp_status tp_diff_write(FILE *out, const tp_model *base, const tp_model *next,
                        const tp_diff_opts *o, int *failed) {
    if (!out || !base || !next || !o || !failed)
        return TP_ERR_ARG;
    *failed = 0;
    size_t common = 0;
    for (size_t i = 0; i < base->n_ranks; i++) {
        int rk = base->ranks[i].rank;
        common += (o->rank < 0 || rk == o->rank) && tp_model_rank(next, rk) != NULL;
    }
    if (!common)
        return TP_ERR_NOT_FOUND;
    yajl_gen g = NULL;
    if (o->json) {
        g = yajl_gen_alloc(NULL);
        yajl_gen_config(g, yajl_gen_beautify, 1);
        yajl_gen_config(g, yajl_gen_print_callback, json_print, (void *)out);
        yajl_gen_map_open(g);
        tp_rj_kv(g, "schema", "trainprof-diff/v1");
        tp_rj_kv(g, "mode", o->an.compat_hta ? "hta" : "native");
        tp_rj_str(g, "ranks");
        yajl_gen_array_open(g);
    } else {
        fprintf(out, "trainprof diff: %zu rank(s) in both runs (base -> new)\n\n", common);
    }
    for (size_t i = 0; i < base->n_ranks; i++) {
        const tp_rank *rb = &base->ranks[i], *rn = tp_model_rank(next, rb->rank);
        if (!rn || (o->rank >= 0 && rb->rank != o->rank))
            continue;
        tp_rank_analysis ab, an;
        tp_rank_analysis_run(&ab, base, rb, &o->an, TP_RA_ALL);
        tp_rank_analysis_run(&an, next, rn, &o->an, TP_RA_ALL);
        *failed += diff_rank(out, g, &ab, &an, o);
        tp_rank_analysis_free(&ab);
        tp_rank_analysis_free(&an);
    }
    if (g) {
        yajl_gen_array_close(g);
        tp_rj_int(g, "gates_failed", *failed);
        yajl_gen_map_close(g);
        yajl_gen_free(g);
        fputc('\n', out);
    } else if (o->n_gates) {
        fprintf(out, "%s: %d of %zu gate check(s) failed\n", *failed ? "FAIL" : "ok", *failed,
                o->n_gates * common);
    }
    return ferror(out) ? TP_ERR_IO : TP_OK;
}
