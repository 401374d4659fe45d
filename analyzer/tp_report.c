/* tp_report: text and JSON rendering of every analysis, rank by rank.
 *
 * The report runs tp_rank_analysis for one rank (a view and the results of every analysis),
 * renders it, frees it, and moves on, so memory stays at one rank's worth. */
#include "tp_report.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_gen.h>

#include "tp_an_ranks.h"
#include "tp_report_ranks.h"
#include "tp_an_stacks.h"
#include "tp_rank_analysis.h"
#include "tp_report_cpuops.h"
#include "tp_report_host.h"
#include "tp_report_env.h"
#include "tp_report_alloc.h"
#include "tp_report_fmt.h"
#include "tp_report_clock.h"
#include "tp_report_html.h"
#include "tp_report_section.h"
#include "tp_report_marks.h"
#include "tp_report_samples.h"
#include "tp_report_stacks.h"
#include "tp_text.h"
#include "tp_units.h"

void tp_report_opts_init(tp_report_opts *o) {
    memset(o, 0, sizeof *o);
    o->format = TP_REPORT_TEXT;
    tp_an_opts_init(&o->an);
    o->rank = -1;
    o->top = 10;
}

/* ------------------------------------------------------------------ text */

#define T(x) tp_rf_time(b1, sizeof b1, (double)(x))
#define T2(x) tp_rf_time(b2, sizeof b2, (double)(x))
#define T3(x) tp_rf_time(b3, sizeof b3, (double)(x))
#define P(x) tp_rf_pct_str(bp, sizeof bp, (x))

/* The findings first, most severe first: what is wrong and what to do, before the numbers. */
static void text_diagnosis(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    const tp_diagnosis *d = &rr->dg;
    char bp[32], basis[128], nj[640];
    fprintf(f, "Diagnosis");
    if (d->window_ns > 0)
        fprintf(f, " (device busy %s of %s)", tp_rf_pct_str(bp, sizeof bp, 100 * d->utilization),
                d->n_steps ? "the training steps" : "the GPU span");
    /* a rank without device activity (or whose device records were all dropped) is judged
     * from its host side, and says what that cannot tell */
    int host = tp_report_host_basis(rr, basis, sizeof basis, nj, sizeof nj);
    if (host)
        fprintf(f, " (%s)", basis);
    fprintf(f, "\n");
    if (host)
        fprintf(f, "  %s\n", nj);
    const char *steps = tp_rank_analysis_steps_note(rr);
    if (steps)
        fprintf(f, "  %s\n", steps);
    if (d->warmup_only)
        fprintf(f, "  only the first (warm-up) step was recorded: time shares not judged\n");
    if (d->n_warmup) {
        char wu[256];
        fprintf(f, "  %s\n", tp_diag_warmup_text(d, wu, sizeof wu));
    }
    if (!d->n)
        fprintf(f, "  %s\n", tp_rank_analysis_no_findings(rr));
    for (size_t i = 0; i < d->n; i++) {
        const tp_finding *x = &d->f[i];
        fprintf(f, "  %zu. [%-6s %3.0f%%] ", i + 1, tp_diag_level(x->severity), 100 * x->severity);
        tp_text_fputs(x->title, f);
        fputc('\n', f);
        tp_rf_wrapped(f, "evidence:", x->evidence);
        if (x->source[0])
            tp_rf_wrapped(f, "source:  ", x->source);
        tp_rf_wrapped(f, "fix:     ", x->advice);
    }
    fprintf(f, "\n");
}

static void text_summary(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o) {
    char b1[32], b2[32], b3[32], bp[32], nb[128], lb[512];
    const tp_an_temporal *t = &rr->t;
    fprintf(f, "Summary\n");
    if (!t->has_gpu) {
        char kinds[512];
        uint64_t device = tp_an_drops_device_kinds();
        if (tp_an_drops_lost(&rr->drops, device)) /* not "none": none was kept */
            fprintf(f,
                    "  no GPU activity recorded in this rank (%zu CPU-side events; %s were "
                    "dropped)\n\n",
                    rr->v.n, tp_an_drops_kinds(&rr->drops, device, kinds, sizeof kinds));
        else
            fprintf(f, "  no GPU activity in this rank (%zu CPU-side events)\n\n", rr->v.n);
        return;
    }
    int64_t split[TP_IDLE_COUNT] = {0};
    for (size_t s = 0; s < rr->idle.n; s++)
        for (int c = 0; c < TP_IDLE_COUNT; c++)
            split[c] += rr->idle.s[s].idle[c];
    /* A non-CUDA device (the trainer's CPU device, through activity.h) is not a GPU. */
    int gpu = rr->v.r->device_type != TP_DEVTYPE_CPU_DEVICE;
    fprintf(f, "  %-22s %12s\n", gpu ? "GPU span" : "device span", T(t->span));
    fprintf(f, "  %-22s %12s   (busy %s)\n", gpu ? "GPU utilization" : "device utilization",
            P(tp_rf_pct(t->busy, t->span)), tp_units_dur(b2, sizeof b2, (double)t->busy));
    fprintf(f, "  %-22s %12s   %s\n", "idle", T(t->idle), P(tp_rf_pct(t->idle, t->span)));
    fprintf(f, "    idle by cause, summed over streams: host wait %s, kernel wait %s, other %s\n",
            tp_units_dur(b1, sizeof b1, (double)split[0]),
            tp_units_dur(b2, sizeof b2, (double)split[1]),
            tp_units_dur(b3, sizeof b3, (double)split[2]));
    fprintf(f, "  %-22s %12s   %s\n", "compute", T(t->compute), P(tp_rf_pct(t->compute, t->span)));
    fprintf(f, "  %-22s %12s   %s\n", "non-compute", T(t->non_compute),
            P(tp_rf_pct(t->non_compute, t->span)));
    if (isnan(rr->ov.pct))
        fprintf(f, "  %-22s %12s\n", "comm/comp overlap", "n/a (no communication kernels)");
    else
        fprintf(f, "  %-22s %12s\n", "comm/comp overlap", P(rr->ov.pct));
    size_t top = (size_t)(o->top > 0 ? o->top : 10);
    fprintf(f, "  top kernels:\n");
    for (size_t i = 0; i < rr->k.n && i < top; i++)
        fprintf(f, "    %-60s %8zu %12s %7.2f %%\n",
                tp_rf_clip(nb, sizeof nb, tp_model_str(rr->v.m, rr->k.k[i].name), 60),
                rr->k.k[i].count, T(rr->k.k[i].sum), tp_rf_pct(rr->k.k[i].sum, t->busy));
    if (rr->nv.n)
        fprintf(f, "  top ranges:\n");
    for (size_t i = 0; i < rr->nv.n && i < top; i++)
        fprintf(
            f, "    %-60s %8zu %12s  GPU %s\n",
            tp_rf_clip(nb, sizeof nb, tp_an_range_label(rr->v.m, &rr->nv.r[i], lb, sizeof lb), 60),
            rr->nv.r[i].count, T(rr->nv.r[i].total),
            tp_units_dur(b2, sizeof b2, (double)rr->nv.r[i].gpu_ns));
    fprintf(f, "\n");
}

static void text_kernels(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o) {
    char b1[32], b2[32], b3[32], bp[32], nb[128], lb[96];
    fprintf(f, "Kernel types (time with exactly these types running)\n");
    for (unsigned c = 1; c < TP_KT_CLASSES; c++)
        if (rr->k.class_ns[c])
            fprintf(f, "  %-58s %12s %9s\n", tp_an_kernel_class_label(c, lb, sizeof lb),
                    T(rr->k.class_ns[c]), P(tp_rf_pct(rr->k.class_ns[c], rr->k.class_total)));
    size_t top = (size_t)(o->top > 0 ? o->top : 10);
    fprintf(f, "\nKernels (top %zu of %zu by total time)\n", top < rr->k.n ? top : rr->k.n,
            rr->k.n);
    fprintf(f, "  %-60s %-13s %8s %12s %12s %12s %12s\n", "name", "type", "count", "total", "mean",
            "min", "max");
    for (size_t i = 0; i < rr->k.n && i < top; i++) {
        const tp_an_kernel_row *k = &rr->k.k[i];
        char bm[32];
        fprintf(f, "  %-60s %-13s %8zu %12s %12s %12s %12s\n",
                tp_rf_clip(nb, sizeof nb, tp_model_str(rr->v.m, k->name), 60),
                tp_ktype_name((tp_ktype)k->ktype), k->count, T(k->sum), T2(k->mean), T3(k->min),
                tp_rf_time(bm, sizeof bm, (double)k->max));
    }
    fprintf(f, "\n");
}

static void text_idle(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    char b1[32], b2[32], b3[32], bp[32];
    (void)bp;
    fprintf(f, "Idle time per stream (gap before each op; kernel wait: gap < %s)\n",
            tp_units_dur(b1, sizeof b1, (double)rr->v.opts.kernel_wait_ns));
    fprintf(f, "  %8s %-12s %8s %12s %12s %12s %12s\n", "stream", "cause", "gaps", "total", "mean",
            "median", "max");
    for (size_t s = 0; s < rr->idle.n; s++)
        for (int c = 0; c < TP_IDLE_COUNT; c++) {
            const tp_an_describe_t *g = &rr->idle.s[s].gaps[c];
            char bm[32];
            fprintf(f, "  %8lld %-12s %8zu %12s %12s %12s %12s\n", (long long)rr->idle.s[s].stream,
                    tp_idle_cat_name((tp_idle_cat)c), g->count, T(rr->idle.s[s].idle[c]),
                    T2(g->mean), T3(g->p50), tp_rf_time(bm, sizeof bm, g->max));
        }
    fprintf(f, "\n");
}

static void text_dist(FILE *f, const char *label, const tp_an_dist *d) {
    char b1[32], b2[32], b3[32], b4[32], b5[32];
    fprintf(f, "  %-16s %12s %12s %12s %12s %12s\n", label, tp_rf_time(b1, 32, d->mean),
            tp_rf_time(b2, 32, d->min), tp_rf_time(b3, 32, d->p50), tp_rf_time(b4, 32, d->p95),
            tp_rf_time(b5, 32, d->max));
}

static void text_launch(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    const tp_an_launch *l = &rr->l;
    fprintf(f, "Kernel launches (%zu CPU call / GPU op pairs)\n", l->n_pairs);
    if (!l->n_pairs) {
        fprintf(f, "  none\n\n");
        return;
    }
    fprintf(f, "  %-16s %12s %12s %12s %12s %12s\n", "", "mean", "min", "median", "p95", "max");
    text_dist(f, "CPU launch call", &l->cpu);
    text_dist(f, "GPU duration", &l->gpu);
    text_dist(f, "launch delay", &l->delay);
    fprintf(f,
            "  short GPU ops (launch cost dominates): %zu; launch calls > %lld \u00b5s: %zu; "
            "delays > %lld \u00b5s: %zu\n\n",
            l->n_short_gpu, (long long)(rr->v.opts.runtime_cutoff_ns / 1000), l->n_runtime_outliers,
            (long long)(rr->v.opts.launch_delay_cutoff_ns / 1000), l->n_delay_outliers);
}

static void text_queue(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    char b1[32], b2[32];
    fprintf(f, "Launch queue length per stream (median launch call %s)\n",
            tp_units_dur(b1, 32, rr->q.median_launch_ns));
    fprintf(f, "  %8s %8s %8s %8s %12s %9s %12s\n", "stream", "mean", "median", "max", "at max",
            "blocked", "blocked time");
    for (size_t s = 0; s < rr->q.n; s++) {
        const tp_an_queue_stream *q = &rr->q.s[s];
        fprintf(f, "  %8lld %8.2f %8.1f %8lld %12s %9zu %12s\n", (long long)q->stream, q->len.mean,
                q->len.p50, (long long)q->max_len, tp_rf_time(b1, 32, (double)q->at_max_ns),
                q->n_blocked, tp_rf_time(b2, 32, (double)q->blocked_ns));
    }
    fprintf(f, "\n");
}

static void text_memory(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    char b1[32], b2[32];
    fprintf(f, "Memory bandwidth (concurrent GB/s while active)\n");
    fprintf(f, "  %-16s %8s %10s %10s %10s\n", "type", "points", "mean", "median", "max");
    for (size_t i = 0; i < rr->mem.n_bw; i++) {
        const tp_an_describe_t *d = &rr->mem.bw[i].bw;
        fprintf(f, "  %-16s %8zu %10.2f %10.2f %10.2f\n", rr->mem.bw[i].type, d->count, d->mean,
                d->p50, d->max);
    }
    fprintf(f, "\nCopies and memsets by kind and source memory\n");
    fprintf(f, "  %-8s %-10s %8s %12s %12s %10s %10s\n", "kind", "source", "count", "bytes", "busy",
            "GB/s", "max GB/s");
    for (size_t i = 0; i < rr->mem.n_copy; i++) {
        const tp_an_copy *c = &rr->mem.copy[i];
        fprintf(f, "  %-8s %-10s %8zu %12s %12s %10.2f %10.2f\n",
                tp_an_copy_kind_name(c->copy_kind), tp_an_mem_kind_name(c->src_kind), c->count,
                tp_units_bytes(b1, 32, (double)c->bytes), tp_rf_time(b2, 32, (double)c->dur_ns),
                c->gbps, c->max_gbps);
    }
    fprintf(f, "\n");
}

static void text_ranges(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o) {
    char b1[32], b2[32], b3[32], b4[32], nb[128], lb[512];
    if (!rr->nv.n)
        return;
    size_t top = (size_t)(o->top > 0 ? o->top : 10);
    fprintf(f, "Annotation ranges (top %zu of %zu by total; GPU = ops launched inside)\n",
            top < rr->nv.n ? top : rr->nv.n, rr->nv.n);
    fprintf(f, "  %-50s %8s %12s %12s %12s %8s %12s\n", "name", "count", "total", "mean", "max",
            "GPU ops", "GPU time");
    for (size_t i = 0; i < rr->nv.n && i < top; i++) {
        const tp_an_range *r = &rr->nv.r[i];
        fprintf(f, "  %-50s %8zu %12s %12s %12s %8zu %12s\n",
                tp_rf_clip(nb, sizeof nb, tp_an_range_label(rr->v.m, r, lb, sizeof lb), 50),
                r->count, tp_rf_time(b1, 32, (double)r->total), tp_rf_time(b2, 32, r->mean),
                tp_rf_time(b3, 32, (double)r->max), r->n_gpu_ops,
                tp_rf_time(b4, 32, (double)r->gpu_ns));
    }
    fprintf(f, "  GPU ops outside any range: %zu (%s)\n\n", rr->nv.unattributed_ops,
            tp_units_dur(b1, 32, (double)rr->nv.unattributed_ns));
}

/* The steps' durations (tp_diagnosis: ranges named step, ProfilerStep#N, ...), only when the
 * rank has steps. */
static void text_steps(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    const tp_diagnosis *d = &rr->dg;
    char b1[32], b2[32], b3[32];
    if (!d->n_steps)
        return;
    fprintf(f, "Steps: %zu, time per step mean %s, median %s, p90 %s", d->n_steps,
            tp_units_dur(b1, sizeof b1, d->step_mean_ns),
            tp_units_dur(b2, sizeof b2, d->step_p50_ns),
            tp_units_dur(b3, sizeof b3, d->step_p90_ns));
    if (tp_diag_steps_leave_gaps(d)) {
        double period = tp_diag_step_period_ns(d);
        fprintf(f, "; start to start %s (the steps hold %.0f %% of the loop)",
                tp_units_dur(b1, sizeof b1, period), 100 * d->step_mean_ns / period);
    }
    fprintf(f, "\n\n");
}

/* Depth of process k in its rank's tree (0: a main process). */
static int proc_depth(const tp_rank *r, size_t k) {
    int d = 0;
    for (int p = r->procs[k].parent; p >= 0 && d < (int)r->n_procs; p = r->procs[p].parent)
        d++;
    return d;
}

/* A rank gathered from several processes (tp_job) lists them, main first, each under the one
 * it came from; a rank of one process says nothing more than its header. */
static void text_processes(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    const tp_rank *r = rr->v.r;
    if (r->n_procs < 2)
        return;
    fprintf(f, "Processes (%zu)\n  %-14s %8s  %-8s %8s  %s\n", r->n_procs, "pid", "ppid", "role",
            "events", "command");
    for (size_t k = 0; k < r->n_procs; k++) {
        const tp_process *p = &r->procs[k];
        char pid[32], gen[24] = "";
        int depth = proc_depth(r, k);
        snprintf(pid, sizeof pid, "%*s%lld", 2 * (depth < 4 ? depth : 4), "", (long long)p->pid);
        if (p->exec_gen)
            snprintf(gen, sizeof gen, "[exec %u] ", p->exec_gen);
        fprintf(f, "  %-14s %8lld  %-8s %8zu  %s", pid, (long long)p->ppid,
                tp_proc_role_name(p->role), p->n_events, gen);
        tp_text_fputs(tp_model_str(rr->v.m, p->command), f);
        fputc('\n', f);
    }
    fprintf(f, "\n");
}

/* What the collector lost, said before any figure: every number below is a lower bound. */
static void text_dropped(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    char line[1024];
    if (rr->drops.lost)
        fprintf(f, "Dropped: %s\n\n", tp_an_drops_line(&rr->drops, line, sizeof line));
}

/* A note on CUDA tracing kept in the trace (string id `what`, 0: none): one line. */
static void cuda_note(FILE *f, const tp_rank_analysis *rr, uint32_t what, const char *pre,
                      const char *post) {
    if (!what)
        return;
    fputs(pre, f);
    tp_text_fputs(tp_model_str(rr->v.m, what), f);
    fputs(post, f);
}

/* Why the trace has no (or, after another CUPTI client took over, no more) CUDA records. */
static void text_cuda_off(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    cuda_note(f, rr, rr->v.r->cuda_off, "CUDA: not traced (", ")\n\n");
}

/* Another CUPTI client of the program (torch.profiler) that asked for CUPTI while the
 * recording held it: its own trace has no CUDA activity, this one has it all. */
static void text_cupti_refused(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    cuda_note(f, rr, rr->v.r->cupti_refused, "CUDA: traced here; ", "\n\n");
}

/* Events the loader skipped as impossible (tp_rank.n_skipped), said before any figure so
 * that nobody reads a span or a finding without knowing what was left out of it. */
static void text_skipped(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    const tp_rank *r = rr->v.r;
    uint64_t n = tp_rank_skipped(r);
    if (!n)
        return;
    fprintf(f, "Skipped: %" PRIu64 " event%s with impossible times, left out of every figure (", n,
            n == 1 ? "" : "s");
    const char *sep = "";
    for (int s = 0; s < TP_SKIP_COUNT; s++)
        if (r->n_skipped[s]) {
            fprintf(f, "%s%" PRIu64 " with %s", sep, r->n_skipped[s], tp_skip_reason((tp_skip)s));
            sep = ", ";
        }
    fprintf(f, ")\n\n");
}

/* The text report of a rank, in print order: what was lost and what is wrong before the
 * numbers. */
/* One row per line, so that adding a section is a one-line change. */
// clang-format off
static const tp_report_text_section text_sections[] = {
    {"environment", TP_RS_ALWAYS, tp_report_env_text},
    {"processes", TP_RS_ALWAYS, text_processes},
    {"clock", TP_RS_ALWAYS, tp_report_clock_text},
    {"dropped", TP_RS_ALWAYS, text_dropped},
    {"cuda_off", TP_RS_ALWAYS, text_cuda_off},
    {"cupti_refused", TP_RS_ALWAYS, text_cupti_refused},
    {"skipped", TP_RS_ALWAYS, text_skipped},
    {"diagnosis", TP_RS_ALWAYS, text_diagnosis},
    {"summary", TP_RS_ALWAYS, text_summary},
    {"steps", TP_RS_ALWAYS, text_steps},
    {"host_split", TP_RS_HOST, tp_report_host_steps_text},
    {"kernels", TP_RS_DEVICE, text_kernels},
    {"idle", TP_RS_DEVICE, text_idle},
    {"launch", TP_RS_DEVICE, text_launch},
    {"queue", TP_RS_DEVICE, text_queue},
    {"memory", TP_RS_DEVICE, text_memory},
    {"memory_use", TP_RS_ALWAYS, tp_report_alloc_text},
    {"ranges", TP_RS_ALWAYS, text_ranges},
    {"stacks", TP_RS_DEVICE, tp_report_stacks_text},
    {"samples", TP_RS_ALWAYS, tp_report_samples_text},
    {"marks", TP_RS_ALWAYS, tp_report_marks_text},
    {"cpu_ops", TP_RS_ALWAYS, tp_report_cpuops_text},
    {"threads", TP_RS_HOST, tp_report_host_threads_text},
};
// clang-format on

static void text_rank(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o) {
    const tp_rank *r = rr->v.r;
    char *file = tp_text_safe_dup(r->file ? r->file : "-");
    if (!file)
        abort();
    fprintf(f, "== rank %d: %s (%s, %zu events, %zu %s)%s ==\n\n", rr->v.rank, file,
            tp_devtype_name(r->device_type), rr->v.n, rr->v.n_gpu,
            r->device_type == TP_DEVTYPE_CPU_DEVICE ? "device ops" : "GPU",
            rr->v.trimmed ? " [last profiler step trimmed]" : "");
    free(file);
    for (size_t i = 0; i < sizeof text_sections / sizeof text_sections[0]; i++)
        if (tp_report_section_shown(text_sections[i].when, rr))
            text_sections[i].text(f, rr, o);
}

/* ------------------------------------------------------------------ JSON */

static void json_temporal(yajl_gen g, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    const tp_an_temporal *t = &rr->t;
    tp_rj_str(g, "temporal");
    yajl_gen_map_open(g);
    tp_rj_int(g, "span_ns", t->span);
    tp_rj_int(g, "busy_ns", t->busy);
    tp_rj_int(g, "idle_ns", t->idle);
    tp_rj_int(g, "compute_ns", t->compute);
    tp_rj_int(g, "non_compute_ns", t->non_compute);
    tp_rj_num(g, "idle_pct", tp_rf_pct(t->idle, t->span));
    tp_rj_num(g, "compute_pct", tp_rf_pct(t->compute, t->span));
    tp_rj_num(g, "non_compute_pct", tp_rf_pct(t->non_compute, t->span));
    yajl_gen_map_close(g);
}

static void json_idle(yajl_gen g, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    const tp_an_idle *idle = &rr->idle;
    tp_rj_str(g, "idle");
    yajl_gen_array_open(g);
    for (size_t s = 0; s < idle->n; s++) {
        const tp_an_idle_stream *st = &idle->s[s];
        int64_t tot = tp_an_idle_total(st);
        yajl_gen_map_open(g);
        tp_rj_int(g, "stream", st->stream);
        tp_rj_int(g, "n_ops", (long long)st->n_ops);
        for (int c = 0; c < TP_IDLE_COUNT; c++) {
            tp_rj_str(g, tp_idle_cat_name((tp_idle_cat)c));
            yajl_gen_map_open(g);
            tp_rj_int(g, "idle_ns", st->idle[c]);
            tp_rj_num(g, "ratio", tot ? (double)st->idle[c] / (double)tot : NAN);
            tp_rj_describe(g, "gaps_ns", &st->gaps[c]);
            yajl_gen_map_close(g);
        }
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
}

static void json_kernels(yajl_gen g, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    char lb[96];
    tp_rj_str(g, "kernel_types");
    yajl_gen_array_open(g);
    for (unsigned c = 1; c < TP_KT_CLASSES; c++) {
        if (!rr->k.class_ns[c])
            continue;
        yajl_gen_map_open(g);
        tp_rj_kv(g, "type", tp_an_kernel_class_label(c, lb, sizeof lb));
        tp_rj_int(g, "ns", rr->k.class_ns[c]);
        tp_rj_num(g, "pct", tp_rf_pct(rr->k.class_ns[c], rr->k.class_total));
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
    tp_rj_str(g, "kernels");
    yajl_gen_array_open(g);
    for (size_t i = 0; i < rr->k.n; i++) {
        const tp_an_kernel_row *k = &rr->k.k[i];
        yajl_gen_map_open(g);
        tp_rj_kv(g, "name", tp_model_str(rr->v.m, k->name));
        tp_rj_kv(g, "type", tp_ktype_name((tp_ktype)k->ktype));
        tp_rj_int(g, "count", (long long)k->count);
        tp_rj_int(g, "sum_ns", k->sum);
        tp_rj_num(g, "mean_ns", k->mean);
        tp_rj_int(g, "min_ns", k->min);
        tp_rj_int(g, "max_ns", k->max);
        tp_rj_num(g, "std_ns", k->std);
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
}

static void json_launch(yajl_gen g, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    const tp_an_launch *l = &rr->l;
    tp_rj_str(g, "launch");
    yajl_gen_map_open(g);
    tp_rj_int(g, "n_pairs", (long long)l->n_pairs);
    tp_rj_dist(g, "cpu_ns", &l->cpu);
    tp_rj_dist(g, "gpu_ns", &l->gpu);
    tp_rj_dist(g, "delay_ns", &l->delay);
    tp_rj_int(g, "n_short_gpu", (long long)l->n_short_gpu);
    tp_rj_int(g, "n_runtime_outliers", (long long)l->n_runtime_outliers);
    tp_rj_int(g, "n_delay_outliers", (long long)l->n_delay_outliers);
    yajl_gen_map_close(g);
}

static void json_queue(yajl_gen g, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    const tp_an_queue *q = &rr->q;
    tp_rj_str(g, "queue");
    yajl_gen_array_open(g);
    for (size_t s = 0; s < q->n; s++) {
        yajl_gen_map_open(g);
        tp_rj_int(g, "stream", q->s[s].stream);
        tp_rj_describe(g, "length", &q->s[s].len);
        tp_rj_int(g, "max", q->s[s].max_len);
        tp_rj_int(g, "at_max_ns", q->s[s].at_max_ns);
        tp_rj_int(g, "n_blocked", (long long)q->s[s].n_blocked);
        tp_rj_int(g, "blocked_ns", q->s[s].blocked_ns);
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
}

static void json_memory(yajl_gen g, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    const tp_an_memory *m = &rr->mem;
    tp_rj_str(g, "memory_bw");
    yajl_gen_array_open(g);
    for (size_t i = 0; i < m->n_bw; i++) {
        yajl_gen_map_open(g);
        tp_rj_kv(g, "type", m->bw[i].type);
        tp_rj_describe(g, "gbps", &m->bw[i].bw);
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
    tp_rj_str(g, "copies");
    yajl_gen_array_open(g);
    for (size_t i = 0; i < m->n_copy; i++) {
        const tp_an_copy *c = &m->copy[i];
        yajl_gen_map_open(g);
        tp_rj_kv(g, "kind", tp_an_copy_kind_name(c->copy_kind));
        tp_rj_kv(g, "src", tp_an_mem_kind_name(c->src_kind));
        tp_rj_int(g, "count", (long long)c->count);
        tp_rj_int(g, "bytes", c->bytes);
        tp_rj_int(g, "dur_ns", c->dur_ns);
        tp_rj_num(g, "gbps", c->gbps);
        tp_rj_num(g, "max_gbps", c->max_gbps);
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
}

static void json_ranges(yajl_gen g, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    tp_rj_str(g, "ranges");
    yajl_gen_array_open(g);
    for (size_t i = 0; i < rr->nv.n; i++) {
        const tp_an_range *r = &rr->nv.r[i];
        yajl_gen_map_open(g);
        tp_rj_kv(g, "name", tp_model_str(rr->v.m, r->name));
        tp_rj_kv(g, "domain", tp_model_str(rr->v.m, r->domain));
        tp_rj_int(g, "count", (long long)r->count);
        tp_rj_int(g, "total_ns", r->total);
        tp_rj_num(g, "mean_ns", r->mean);
        tp_rj_int(g, "min_ns", r->min);
        tp_rj_int(g, "max_ns", r->max);
        tp_rj_int(g, "gpu_ops", (long long)r->n_gpu_ops);
        tp_rj_int(g, "gpu_ns", r->gpu_ns);
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
    tp_rj_str(g, "ranges_unattributed");
    yajl_gen_map_open(g);
    tp_rj_int(g, "gpu_ops", (long long)rr->nv.unattributed_ops);
    tp_rj_int(g, "gpu_ns", rr->nv.unattributed_ns);
    yajl_gen_map_close(g);
}

/* The CPU stack behind a finding, innermost first (appended in v1: "frames"). */
static void json_frames(yajl_gen g, const tp_finding *x) {
    tp_rj_str(g, "frames");
    yajl_gen_array_open(g);
    for (size_t k = 0; k < x->n_frames; k++) {
        const tp_diag_frame *fr = &x->frames[k];
        yajl_gen_map_open(g);
        tp_rj_kv(g, "module", fr->module);
        tp_rj_int(g, "offset", (long long)fr->offset);
        tp_rj_kv(g, "function", fr->func);
        tp_rj_kv(g, "file", fr->file);
        tp_rj_int(g, "line", fr->line);
        tp_rj_str(g, "inlined");
        yajl_gen_bool(g, fr->inlined);
        tp_rj_str(g, "library");
        yajl_gen_bool(g, fr->library);
        tp_rj_kv(g, "symbols", fr->symbols ? fr->symbols : "");
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
}

static void json_findings(yajl_gen g, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    const tp_diagnosis *d = &rr->dg;
    tp_rj_str(g, "findings");
    yajl_gen_array_open(g);
    for (size_t i = 0; i < d->n; i++) {
        const tp_finding *x = &d->f[i];
        yajl_gen_map_open(g);
        tp_rj_kv(g, "id", x->id);
        tp_rj_num(g, "severity", x->severity);
        tp_rj_kv(g, "level", tp_diag_level(x->severity));
        tp_rj_kv(g, "title", x->title);
        tp_rj_kv(g, "evidence", x->evidence);
        tp_rj_kv(g, "advice", x->advice);
        tp_rj_kv(g, "source", x->source);
        tp_rj_str(g, "metrics");
        yajl_gen_map_open(g);
        for (size_t k = 0; k < x->n_metrics; k++)
            tp_rj_num(g, x->metrics[k].key, x->metrics[k].value);
        yajl_gen_map_close(g);
        json_frames(g, x);
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
}

/* "dropped_records": {"total", "of", "share", "lower_bounds": true, "by_kind": {KIND: n}},
 * only when the collector lost records. */
static void json_dropped(yajl_gen g, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    const tp_an_drops *d = &rr->drops;
    if (!d->lost)
        return;
    tp_rj_str(g, "dropped_records");
    yajl_gen_map_open(g);
    tp_rj_int(g, "total", (long long)d->lost);
    tp_rj_int(g, "of", (long long)(d->lost + d->kept));
    tp_rj_num(g, "share", d->share);
    tp_rj_str(g, "lower_bounds");
    yajl_gen_bool(g, 1);
    tp_rj_str(g, "by_kind");
    yajl_gen_map_open(g);
    for (size_t i = 0; i < d->n; i++)
        tp_rj_int(g, d->k[i].name, (long long)d->k[i].lost);
    yajl_gen_map_close(g);
    yajl_gen_map_close(g);
}

/* "cuda_off": why CUDA was not (or, from some point, no longer) traced; only when it was so. */
static void json_cuda_off(yajl_gen g, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    if (rr->v.r->cuda_off)
        tp_rj_kv(g, "cuda_off", tp_model_str(rr->v.m, rr->v.r->cuda_off));
    if (rr->v.r->cupti_refused)
        tp_rj_kv(g, "cupti_refused", tp_model_str(rr->v.m, rr->v.r->cupti_refused));
}

/* "processes": the rank's processes in tree order, only when it holds more than one. */
static void json_processes(yajl_gen g, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    const tp_rank *r = rr->v.r;
    if (r->n_procs < 2)
        return;
    tp_rj_str(g, "processes");
    yajl_gen_array_open(g);
    for (size_t k = 0; k < r->n_procs; k++) {
        const tp_process *p = &r->procs[k];
        yajl_gen_map_open(g);
        tp_rj_int(g, "pid", p->pid);
        tp_rj_int(g, "ppid", p->ppid);
        tp_rj_int(g, "exec_gen", p->exec_gen);
        tp_rj_kv(g, "role", tp_proc_role_name(p->role));
        tp_rj_int(g, "parent", p->parent);
        tp_rj_int(g, "n_events", (long long)p->n_events);
        tp_rj_kv(g, "command", tp_model_str(rr->v.m, p->command));
        tp_rj_kv(g, "file", p->file ? p->file : "");
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
}

/* "skipped_events": {"total": N, "<reason>": n, ...}, only when the loader skipped any. */
static void json_skipped(yajl_gen g, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    const tp_rank *r = rr->v.r;
    uint64_t n = tp_rank_skipped(r);
    if (!n)
        return;
    tp_rj_str(g, "skipped_events");
    yajl_gen_map_open(g);
    tp_rj_int(g, "total", (long long)n);
    for (int s = 0; s < TP_SKIP_COUNT; s++)
        if (r->n_skipped[s])
            tp_rj_int(g, tp_skip_key((tp_skip)s), (long long)r->n_skipped[s]);
    yajl_gen_map_close(g);
}

/* "steps": {"count", "mean_ns", "p50_ns", "p90_ns"[, "warmup_steps", "warmup_ns"][,
 * "period_mean_ns"]}; the times null without steps. */
static void json_steps(yajl_gen g, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    tp_rj_str(g, "steps");
    yajl_gen_map_open(g);
    tp_rj_int(g, "count", (long long)rr->dg.n_steps);
    tp_rj_num(g, "mean_ns", rr->dg.step_mean_ns);
    tp_rj_num(g, "p50_ns", rr->dg.step_p50_ns);
    tp_rj_num(g, "p90_ns", rr->dg.step_p90_ns);
    if (rr->dg.n_warmup) { /* only when some were left out: other traces' JSON is unchanged */
        tp_rj_int(g, "warmup_steps", (long long)rr->dg.n_warmup);
        tp_rj_int(g, "warmup_ns", tp_diag_warmup_ns(&rr->dg));
    }
    if (tp_diag_steps_leave_gaps(&rr->dg)) /* only there, as above */
        tp_rj_num(g, "period_mean_ns", tp_diag_step_period_ns(&rr->dg));
    yajl_gen_map_close(g);
}

static void json_overlap(yajl_gen g, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    tp_rj_str(g, "overlap");
    yajl_gen_map_open(g);
    tp_rj_int(g, "comm_ns", rr->ov.comm_ns);
    tp_rj_int(g, "comp_ns", rr->ov.comp_ns);
    tp_rj_int(g, "overlap_ns", rr->ov.overlap_ns);
    tp_rj_num(g, "pct", rr->ov.pct);
    yajl_gen_map_close(g);
}

/* The JSON keys of a rank, in print order (docs/report-schema.md); every rank has every key
 * except those that exist only when there is something to say (processes, dropped, skipped). */
/* One row per line, so that adding a section is a one-line change. */
// clang-format off
static const tp_report_json_section json_sections[] = {
    {"environment", TP_RS_ALWAYS, tp_report_env_json},
    {"processes", TP_RS_ALWAYS, json_processes},
    {"clock", TP_RS_ALWAYS, tp_report_clock_json},
    {"dropped", TP_RS_ALWAYS, json_dropped},
    {"cuda_off", TP_RS_ALWAYS, json_cuda_off},
    {"skipped", TP_RS_ALWAYS, json_skipped},
    {"temporal", TP_RS_ALWAYS, json_temporal},
    {"idle", TP_RS_ALWAYS, json_idle},
    {"kernels", TP_RS_ALWAYS, json_kernels},
    {"launch", TP_RS_ALWAYS, json_launch},
    {"queue", TP_RS_ALWAYS, json_queue},
    {"memory", TP_RS_ALWAYS, json_memory},
    {"memory_use", TP_RS_ALWAYS, tp_report_alloc_json},
    {"overlap", TP_RS_ALWAYS, json_overlap},
    {"ranges", TP_RS_ALWAYS, json_ranges},
    {"stacks", TP_RS_ALWAYS, tp_report_stacks_json},
    {"samples", TP_RS_ALWAYS, tp_report_samples_json},
    {"marks", TP_RS_ALWAYS, tp_report_marks_json},
    {"steps", TP_RS_ALWAYS, json_steps},
    {"findings", TP_RS_ALWAYS, json_findings},
    {"cpu_ops", TP_RS_ALWAYS, tp_report_cpuops_json},
    {"host", TP_RS_ALWAYS, tp_report_host_json},
    {"cross_rank_row", TP_RS_ALWAYS, tp_report_ranks_json_section},
};
// clang-format on

static void json_rank(yajl_gen g, const tp_rank_analysis *rr, const tp_report_opts *o) {
    const tp_rank *r = rr->v.r;
    yajl_gen_map_open(g);
    tp_rj_int(g, "rank", rr->v.rank);
    tp_rj_kv(g, "file", r->file ? r->file : "");
    tp_rj_kv(g, "device_type", tp_devtype_name(r->device_type));
    tp_rj_int(g, "n_events", (long long)rr->v.n);
    tp_rj_int(g, "n_gpu_events", (long long)rr->v.n_gpu);
    tp_rj_str(g, "trimmed");
    yajl_gen_bool(g, rr->v.trimmed);
    tp_rj_str(g, "has_gpu");
    yajl_gen_bool(g, rr->t.has_gpu);
    for (size_t i = 0; i < sizeof json_sections / sizeof json_sections[0]; i++)
        if (tp_report_section_shown(json_sections[i].when, rr))
            json_sections[i].json(g, rr, o);
    yajl_gen_map_close(g);
}

static void json_head(yajl_gen g, const tp_model *m, const tp_report_opts *o) {
    yajl_gen_map_open(g);
    tp_rj_kv(g, "schema", "trainprof-report/v1");
    tp_rj_kv(g, "mode", o->an.compat_hta ? "hta" : "native");
    tp_rj_str(g, "options");
    yajl_gen_map_open(g);
    tp_rj_str(g, "include_last_step");
    yajl_gen_bool(g, o->an.include_last_step);
    tp_rj_str(g, "no_ns_rounding");
    yajl_gen_bool(g, o->an.no_ns_rounding);
    tp_rj_int(g, "kernel_wait_ns", o->an.kernel_wait_ns);
    tp_rj_int(g, "rank", o->rank);
    tp_rj_int(g, "stack_depth",
              o->an.stack_depth > 0 ? o->an.stack_depth : TP_AN_STACK_DEPTH_DEFAULT);
    yajl_gen_map_close(g);
    tp_rj_int(g, "n_ranks", (long long)m->n_ranks);
    tp_rj_str(g, "ranks");
    yajl_gen_array_open(g);
}

static void json_print(void *ctx, const char *s, size_t len) {
    fwrite(s, 1, len, (FILE *)ctx);
}

/* ------------------------------------------------------------------ entry */

static int rank_selected(const tp_rank *r, const tp_report_opts *o) {
    if (o->rank < 0)
        return 1;
    return (o->an.compat_hta ? r->rank_hta : r->rank) == o->rank;
}

static int keep_selected(const tp_rank *r, const void *arg) {
    return rank_selected(r, arg);
}

/* ------------------------------------------------------------------ renderers */

static void *text_open(FILE *out, const tp_model *m, const tp_report_opts *o, size_t n_ranks) {
    (void)m;
    fprintf(out, "trainprof report: %zu rank(s), %s mode\n\n", n_ranks,
            o->an.compat_hta ? "HTA-compatible" : "native (exact ns)");
    return out;
}

static void text_ranks(void *st, const tp_an_ranks *x) {
    tp_report_ranks_text(st, x);
}

static void text_rank_st(void *st, const tp_rank_analysis *rr, const tp_report_opts *o) {
    text_rank(st, rr, o);
}

/* The JSON renderer's state: the generator and the file it prints to. */
typedef struct {
    yajl_gen g;
    FILE *out;
} json_state;

static void *json_open(FILE *out, const tp_model *m, const tp_report_opts *o, size_t n_ranks) {
    (void)n_ranks;
    json_state *j = malloc(sizeof *j);
    if (!j || !(j->g = yajl_gen_alloc(NULL)))
        abort();
    j->out = out;
    yajl_gen_config(j->g, yajl_gen_beautify, 1);
    yajl_gen_config(j->g, yajl_gen_print_callback, json_print, (void *)out);
    json_head(j->g, m, o);
    return j;
}

static void json_rank_st(void *st, const tp_rank_analysis *rr, const tp_report_opts *o) {
    json_rank(((json_state *)st)->g, rr, o);
}

/* The cross-rank object follows the ranks array (docs/report-schema.md). */
static void json_close(void *st, const tp_an_ranks *x) {
    json_state *j = st;
    yajl_gen_array_close(j->g);
    if (x)
        tp_report_ranks_json(j->g, x);
    yajl_gen_map_close(j->g);
    yajl_gen_free(j->g);
    fputc('\n', j->out);
    free(j);
}

/* The output formats; a new one is a row here and a module of its own (tp_report_html). */
// clang-format off
static const tp_report_renderer renderers[] = {
    {TP_REPORT_TEXT, text_open, text_ranks, text_rank_st, NULL},
    {TP_REPORT_JSON, json_open, NULL, json_rank_st, json_close},
    {TP_REPORT_HTML, tp_report_html_open, tp_report_html_ranks, tp_report_html_rank,
     tp_report_html_close},
};
// clang-format on

static const tp_report_renderer *renderer(tp_report_format f) {
    for (size_t i = 0; i < sizeof renderers / sizeof renderers[0]; i++)
        if (renderers[i].format == f)
            return &renderers[i];
    return NULL;
}

tp_status tp_report_write(FILE *out, const tp_model *m, const tp_report_opts *opts) {
    if (!out || !m || !opts)
        return TP_ERR_ARG;
    const tp_report_renderer *rd = renderer(opts->format);
    if (!rd)
        return TP_ERR_ARG;
    size_t sel = 0;
    for (size_t i = 0; i < m->n_ranks; i++)
        sel += rank_selected(&m->ranks[i], opts);
    if (!sel)
        return TP_ERR_NOT_FOUND;
    /* One symbolizer for the whole report: the diagnosis, the stacks table and every rank
     * share its modules and resolved addresses (docs/PERFORMANCE.md). */
    tp_report_opts o = *opts;
    /* The views live for one rank's analyses and render: keeping up to 48 bytes a row of
     * their pages between the analyses (the default: 24) took ~10 % of a 10 M-record report's
     * page faults off for ~4 % more peak RSS with one analysis thread, none measurable with
     * two (docs/PERFORMANCE.md, native report, fourteenth round). */
    if (!o.an.scratch_row_bytes)
        o.an.scratch_row_bytes = 2 * TP_AN_SCRATCH_ROW_BYTES;
    tp_symbolizer *own = NULL;
    if (!o.an.no_symbols && !o.an.symbolizer && tp_symbolizer_open(&own) == TP_OK)
        o.an.symbolizer = own;
    void *st = rd->open(out, m, &o, sel);
    tp_an_ranks x = {0};
    if (sel > 1) {
        tp_an_ranks_run(m, &o.an, keep_selected, &o, &x);
        if (rd->ranks)
            rd->ranks(st, &x);
    }
    for (size_t i = 0; i < m->n_ranks; i++) {
        if (!rank_selected(&m->ranks[i], &o))
            continue;
        tp_rank_analysis rr;
        tp_rank_analysis_view(&rr, m, &m->ranks[i], &o.an);
        if (o.view_built)
            o.view_built(o.view_built_arg, &rr.v);
        rr.diagnosed = o.diagnosed, rr.diagnosed_arg = o.diagnosed_arg;
        tp_rank_analysis_more(&rr, TP_RA_ALL | TP_RA_SECTIONS);
        rd->rank(st, &rr, &o);
        tp_rank_analysis_free(&rr);
    }
    if (rd->close)
        rd->close(st, sel > 1 ? &x : NULL);
    tp_an_ranks_free(&x);
    tp_symbolizer_close(own);
    return ferror(out) ? TP_ERR_IO : TP_OK;
}
