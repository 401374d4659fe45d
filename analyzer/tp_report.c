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

#include "tp_rank_analysis.h"
#include "tp_text.h"
#include "tp_units.h"

void tp_report_opts_init(tp_report_opts *o) {
    memset(o, 0, sizeof *o);
    o->format = TP_REPORT_TEXT;
    tp_an_opts_init(&o->an);
    o->rank = -1;
    o->top = 10;
}

static double pct(int64_t a, int64_t b) {
    return b > 0 ? 100.0 * (double)a / (double)b : NAN;
}

/* ------------------------------------------------------------------ text */

/* fmt_dur right-aligned to 12 display columns for table cells. printf pads by bytes, and
 * "µ" takes two, so the padding is done here and "%12s" then leaves the string alone. */
static const char *fmt_time(char *buf, size_t n, double ns) {
    char s[32];
    tp_units_dur(s, sizeof s, ns);
    size_t bytes = strlen(s), cols = bytes - (strstr(s, "\u00b5") ? 1 : 0);
    size_t pad = cols < 12 ? 12 - cols : 0;
    if (pad + bytes + 1 > n)
        pad = 0;
    assert(bytes + 1 <= n);
    memset(buf, ' ', pad);
    memcpy(buf + pad, s, bytes + 1);
    return buf;
}

static const char *fmt_pct(char *buf, size_t n, double p) {
    if (isnan(p))
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, "%.2f %%", p);
    return buf;
}

/* A name from the trace, terminal-safe (tp_text), shortened to `w` bytes with a trailing
 * "..." when longer. */
static const char *clip(char *buf, size_t n, const char *s, size_t w) {
    if (tp_text_safe_size(s) <= w + 1 || w < 4 || w + 1 > n)
        return tp_text_safe(buf, n, s);
    tp_text_safe(buf, w - 2, s);
    strcat(buf, "...");
    return buf;
}

#define T(x) fmt_time(b1, sizeof b1, (double)(x))
#define T2(x) fmt_time(b2, sizeof b2, (double)(x))
#define T3(x) fmt_time(b3, sizeof b3, (double)(x))
#define P(x) fmt_pct(bp, sizeof bp, (x))

/* Writes `label` then `text` (made terminal-safe) wrapped at 100 columns, continuation lines
 * indented to match. */
static void text_wrapped(FILE *f, const char *label, const char *raw) {
    const size_t indent = 7 + strlen(label), width = 100;
    char *safe = tp_text_safe_dup(raw);
    if (!safe)
        abort();
    const char *text = safe;
    fprintf(f, "     %s  ", label);
    size_t col = indent;
    while (*text) {
        size_t w = strcspn(text, " ");
        if (col > indent && col + 1 + w > width) {
            fprintf(f, "\n%*s", (int)indent, "");
            col = indent;
        } else if (col > indent) {
            fputc(' ', f);
            col++;
        }
        fwrite(text, 1, w, f);
        col += w;
        text += w;
        text += strspn(text, " ");
    }
    fputc('\n', f);
    free(safe);
}

/* The findings first, most severe first: what is wrong and what to do, before the numbers. */
static void text_diagnosis(FILE *f, const tp_rank_analysis *rr) {
    const tp_diagnosis *d = &rr->dg;
    char bp[32];
    fprintf(f, "Diagnosis");
    if (d->window_ns > 0)
        fprintf(f, " (device busy %s of %s)", fmt_pct(bp, sizeof bp, 100 * d->utilization),
                d->n_steps ? "the training steps" : "the GPU span");
    fprintf(f, "\n");
    if (!d->n)
        fprintf(f, "  %s\n",
                d->window_ns > 0 ? "no problem found" : "nothing to judge: no device activity");
    for (size_t i = 0; i < d->n; i++) {
        const tp_finding *x = &d->f[i];
        fprintf(f, "  %zu. [%-6s %3.0f%%] ", i + 1, tp_diag_level(x->severity), 100 * x->severity);
        tp_text_fputs(x->title, f);
        fputc('\n', f);
        text_wrapped(f, "evidence:", x->evidence);
        if (x->source[0])
            text_wrapped(f, "source:  ", x->source);
        text_wrapped(f, "fix:     ", x->advice);
    }
    fprintf(f, "\n");
}

static void text_summary(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o) {
    char b1[32], b2[32], b3[32], bp[32], nb[128];
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
            P(pct(t->busy, t->span)), tp_units_dur(b2, sizeof b2, (double)t->busy));
    fprintf(f, "  %-22s %12s   %s\n", "idle", T(t->idle), P(pct(t->idle, t->span)));
    fprintf(f, "    idle by cause, summed over streams: host wait %s, kernel wait %s, other %s\n",
            tp_units_dur(b1, sizeof b1, (double)split[0]),
            tp_units_dur(b2, sizeof b2, (double)split[1]),
            tp_units_dur(b3, sizeof b3, (double)split[2]));
    fprintf(f, "  %-22s %12s   %s\n", "compute", T(t->compute), P(pct(t->compute, t->span)));
    fprintf(f, "  %-22s %12s   %s\n", "non-compute", T(t->non_compute),
            P(pct(t->non_compute, t->span)));
    if (isnan(rr->ov.pct))
        fprintf(f, "  %-22s %12s\n", "comm/comp overlap", "n/a (no communication kernels)");
    else
        fprintf(f, "  %-22s %12s\n", "comm/comp overlap", P(rr->ov.pct));
    size_t top = (size_t)(o->top > 0 ? o->top : 10);
    fprintf(f, "  top kernels:\n");
    for (size_t i = 0; i < rr->k.n && i < top; i++)
        fprintf(f, "    %-60s %8zu %12s %7.2f %%\n",
                clip(nb, sizeof nb, tp_model_str(rr->v.m, rr->k.k[i].name), 60), rr->k.k[i].count,
                T(rr->k.k[i].sum), pct(rr->k.k[i].sum, t->busy));
    if (rr->nv.n)
        fprintf(f, "  top ranges:\n");
    for (size_t i = 0; i < rr->nv.n && i < top; i++)
        fprintf(f, "    %-60s %8zu %12s  GPU %s\n",
                clip(nb, sizeof nb, tp_model_str(rr->v.m, rr->nv.r[i].name), 60), rr->nv.r[i].count,
                T(rr->nv.r[i].total), tp_units_dur(b2, sizeof b2, (double)rr->nv.r[i].gpu_ns));
    fprintf(f, "\n");
}

static void text_kernels(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o) {
    char b1[32], b2[32], b3[32], bp[32], nb[128], lb[96];
    fprintf(f, "Kernel types (time with exactly these types running)\n");
    for (unsigned c = 1; c < TP_KT_CLASSES; c++)
        if (rr->k.class_ns[c])
            fprintf(f, "  %-58s %12s %9s\n", tp_an_kernel_class_label(c, lb, sizeof lb),
                    T(rr->k.class_ns[c]), P(pct(rr->k.class_ns[c], rr->k.class_total)));
    size_t top = (size_t)(o->top > 0 ? o->top : 10);
    fprintf(f, "\nKernels (top %zu of %zu by total time)\n", top < rr->k.n ? top : rr->k.n,
            rr->k.n);
    fprintf(f, "  %-60s %-13s %8s %12s %12s %12s %12s\n", "name", "type", "count", "total", "mean",
            "min", "max");
    for (size_t i = 0; i < rr->k.n && i < top; i++) {
        const tp_an_kernel_row *k = &rr->k.k[i];
        char bm[32];
        fprintf(f, "  %-60s %-13s %8zu %12s %12s %12s %12s\n",
                clip(nb, sizeof nb, tp_model_str(rr->v.m, k->name), 60),
                tp_ktype_name((tp_ktype)k->ktype), k->count, T(k->sum), T2(k->mean), T3(k->min),
                fmt_time(bm, sizeof bm, (double)k->max));
    }
    fprintf(f, "\n");
}

static void text_idle(FILE *f, const tp_rank_analysis *rr) {
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
                    T2(g->mean), T3(g->p50), fmt_time(bm, sizeof bm, g->max));
        }
    fprintf(f, "\n");
}

static void text_dist(FILE *f, const char *label, const tp_an_dist *d) {
    char b1[32], b2[32], b3[32], b4[32], b5[32];
    fprintf(f, "  %-16s %12s %12s %12s %12s %12s\n", label, fmt_time(b1, 32, d->mean),
            fmt_time(b2, 32, d->min), fmt_time(b3, 32, d->p50), fmt_time(b4, 32, d->p95),
            fmt_time(b5, 32, d->max));
}

static void text_launch(FILE *f, const tp_rank_analysis *rr) {
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

static void text_queue(FILE *f, const tp_rank_analysis *rr) {
    char b1[32], b2[32];
    fprintf(f, "Launch queue length per stream (median launch call %s)\n",
            tp_units_dur(b1, 32, rr->q.median_launch_ns));
    fprintf(f, "  %8s %8s %8s %8s %12s %9s %12s\n", "stream", "mean", "median", "max", "at max",
            "blocked", "blocked time");
    for (size_t s = 0; s < rr->q.n; s++) {
        const tp_an_queue_stream *q = &rr->q.s[s];
        fprintf(f, "  %8lld %8.2f %8.1f %8lld %12s %9zu %12s\n", (long long)q->stream, q->len.mean,
                q->len.p50, (long long)q->max_len, fmt_time(b1, 32, (double)q->at_max_ns),
                q->n_blocked, fmt_time(b2, 32, (double)q->blocked_ns));
    }
    fprintf(f, "\n");
}

static void text_memory(FILE *f, const tp_rank_analysis *rr) {
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
                tp_units_bytes(b1, 32, (double)c->bytes), fmt_time(b2, 32, (double)c->dur_ns),
                c->gbps, c->max_gbps);
    }
    fprintf(f, "\n");
}

static void text_ranges(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o) {
    char b1[32], b2[32], b3[32], b4[32], nb[128];
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
                clip(nb, sizeof nb, tp_model_str(rr->v.m, r->name), 50), r->count,
                fmt_time(b1, 32, (double)r->total), fmt_time(b2, 32, r->mean),
                fmt_time(b3, 32, (double)r->max), r->n_gpu_ops,
                fmt_time(b4, 32, (double)r->gpu_ns));
    }
    fprintf(f, "  GPU ops outside any range: %zu (%s)\n\n", rr->nv.unattributed_ops,
            tp_units_dur(b1, 32, (double)rr->nv.unattributed_ns));
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
static void text_processes(FILE *f, const tp_rank_analysis *rr) {
    const tp_rank *r = rr->v.r;
    if (r->n_procs < 2)
        return;
    fprintf(f, "Processes (%zu)\n  %-14s %8s  %-7s %8s  %s\n", r->n_procs, "pid", "ppid", "role",
            "events", "command");
    for (size_t k = 0; k < r->n_procs; k++) {
        const tp_process *p = &r->procs[k];
        char pid[32], gen[24] = "";
        int depth = proc_depth(r, k);
        snprintf(pid, sizeof pid, "%*s%lld", 2 * (depth < 4 ? depth : 4), "", (long long)p->pid);
        if (p->exec_gen)
            snprintf(gen, sizeof gen, "[exec %u] ", p->exec_gen);
        fprintf(f, "  %-14s %8lld  %-7s %8zu  %s", pid, (long long)p->ppid,
                tp_proc_role_name(p->role), p->n_events, gen);
        tp_text_fputs(tp_model_str(rr->v.m, p->command), f);
        fputc('\n', f);
    }
    fprintf(f, "\n");
}

/* What the collector lost, said before any figure: every number below is a lower bound. */
static void text_dropped(FILE *f, const tp_rank_analysis *rr) {
    char line[1024];
    if (rr->drops.lost)
        fprintf(f, "Dropped: %s\n\n", tp_an_drops_line(&rr->drops, line, sizeof line));
}

/* Why the trace has no (or, after another CUPTI client took over, no more) CUDA records. */
static void text_cuda_off(FILE *f, const tp_rank_analysis *rr) {
    uint32_t why = rr->v.r->cuda_off;
    if (!why)
        return;
    fprintf(f, "CUDA: not traced (");
    tp_text_fputs(tp_model_str(rr->v.m, why), f);
    fprintf(f, ")\n\n");
}

/* Events the loader skipped as impossible (tp_rank.n_skipped), said before any figure so
 * that nobody reads a span or a finding without knowing what was left out of it. */
static void text_skipped(FILE *f, const tp_rank *r) {
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
    text_processes(f, rr);
    text_dropped(f, rr);
    text_cuda_off(f, rr);
    text_skipped(f, r);
    text_diagnosis(f, rr);
    text_summary(f, rr, o);
    if (!rr->t.has_gpu)
        return;
    text_kernels(f, rr, o);
    text_idle(f, rr);
    text_launch(f, rr);
    text_queue(f, rr);
    text_memory(f, rr);
    text_ranges(f, rr, o);
}

/* ------------------------------------------------------------------ JSON */

/* Strings are exact (yajl escapes controls); only bytes that are not UTF-8, which no JSON
 * document may hold, become U+FFFD. */
static void jstr(yajl_gen g, const char *s) {
    size_t n;
    const char *u = tp_text_utf8_fix(s, strlen(s), &n);
    if (!u)
        abort();
    yajl_gen_string(g, (const unsigned char *)u, n);
    if (u != s)
        free((void *)u);
}

static void jint(yajl_gen g, const char *k, long long v) {
    jstr(g, k);
    yajl_gen_integer(g, v);
}

static void jnum(yajl_gen g, const char *k, double v) {
    jstr(g, k);
    if (isnan(v) || isinf(v)) {
        yajl_gen_null(g);
        return;
    }
    char buf[40];
    int n = snprintf(buf, sizeof buf, "%.17g", v);
    yajl_gen_number(g, buf, (size_t)n);
}

static void jkv(yajl_gen g, const char *k, const char *v) {
    jstr(g, k);
    jstr(g, v);
}

static void jdescribe(yajl_gen g, const char *k, const tp_an_describe_t *d) {
    jstr(g, k);
    yajl_gen_map_open(g);
    jint(g, "count", (long long)d->count);
    jnum(g, "mean", d->mean);
    jnum(g, "std", d->std);
    jnum(g, "min", d->min);
    jnum(g, "p25", d->p25);
    jnum(g, "p50", d->p50);
    jnum(g, "p75", d->p75);
    jnum(g, "max", d->max);
    yajl_gen_map_close(g);
}

static void jdist(yajl_gen g, const char *k, const tp_an_dist *d) {
    jstr(g, k);
    yajl_gen_map_open(g);
    jint(g, "count", (long long)d->count);
    jnum(g, "sum", d->sum);
    jnum(g, "mean", d->mean);
    jnum(g, "min", d->min);
    jnum(g, "p50", d->p50);
    jnum(g, "p95", d->p95);
    jnum(g, "max", d->max);
    yajl_gen_map_close(g);
}

static void json_temporal(yajl_gen g, const tp_an_temporal *t) {
    jstr(g, "temporal");
    yajl_gen_map_open(g);
    jint(g, "span_ns", t->span);
    jint(g, "busy_ns", t->busy);
    jint(g, "idle_ns", t->idle);
    jint(g, "compute_ns", t->compute);
    jint(g, "non_compute_ns", t->non_compute);
    jnum(g, "idle_pct", pct(t->idle, t->span));
    jnum(g, "compute_pct", pct(t->compute, t->span));
    jnum(g, "non_compute_pct", pct(t->non_compute, t->span));
    yajl_gen_map_close(g);
}

static void json_idle(yajl_gen g, const tp_an_idle *idle) {
    jstr(g, "idle");
    yajl_gen_array_open(g);
    for (size_t s = 0; s < idle->n; s++) {
        const tp_an_idle_stream *st = &idle->s[s];
        int64_t tot = tp_an_idle_total(st);
        yajl_gen_map_open(g);
        jint(g, "stream", st->stream);
        jint(g, "n_ops", (long long)st->n_ops);
        for (int c = 0; c < TP_IDLE_COUNT; c++) {
            jstr(g, tp_idle_cat_name((tp_idle_cat)c));
            yajl_gen_map_open(g);
            jint(g, "idle_ns", st->idle[c]);
            jnum(g, "ratio", tot ? (double)st->idle[c] / (double)tot : NAN);
            jdescribe(g, "gaps_ns", &st->gaps[c]);
            yajl_gen_map_close(g);
        }
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
}

static void json_kernels(yajl_gen g, const tp_rank_analysis *rr) {
    char lb[96];
    jstr(g, "kernel_types");
    yajl_gen_array_open(g);
    for (unsigned c = 1; c < TP_KT_CLASSES; c++) {
        if (!rr->k.class_ns[c])
            continue;
        yajl_gen_map_open(g);
        jkv(g, "type", tp_an_kernel_class_label(c, lb, sizeof lb));
        jint(g, "ns", rr->k.class_ns[c]);
        jnum(g, "pct", pct(rr->k.class_ns[c], rr->k.class_total));
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
    jstr(g, "kernels");
    yajl_gen_array_open(g);
    for (size_t i = 0; i < rr->k.n; i++) {
        const tp_an_kernel_row *k = &rr->k.k[i];
        yajl_gen_map_open(g);
        jkv(g, "name", tp_model_str(rr->v.m, k->name));
        jkv(g, "type", tp_ktype_name((tp_ktype)k->ktype));
        jint(g, "count", (long long)k->count);
        jint(g, "sum_ns", k->sum);
        jnum(g, "mean_ns", k->mean);
        jint(g, "min_ns", k->min);
        jint(g, "max_ns", k->max);
        jnum(g, "std_ns", k->std);
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
}

static void json_launch(yajl_gen g, const tp_an_launch *l) {
    jstr(g, "launch");
    yajl_gen_map_open(g);
    jint(g, "n_pairs", (long long)l->n_pairs);
    jdist(g, "cpu_ns", &l->cpu);
    jdist(g, "gpu_ns", &l->gpu);
    jdist(g, "delay_ns", &l->delay);
    jint(g, "n_short_gpu", (long long)l->n_short_gpu);
    jint(g, "n_runtime_outliers", (long long)l->n_runtime_outliers);
    jint(g, "n_delay_outliers", (long long)l->n_delay_outliers);
    yajl_gen_map_close(g);
}

static void json_queue(yajl_gen g, const tp_an_queue *q) {
    jstr(g, "queue");
    yajl_gen_array_open(g);
    for (size_t s = 0; s < q->n; s++) {
        yajl_gen_map_open(g);
        jint(g, "stream", q->s[s].stream);
        jdescribe(g, "length", &q->s[s].len);
        jint(g, "max", q->s[s].max_len);
        jint(g, "at_max_ns", q->s[s].at_max_ns);
        jint(g, "n_blocked", (long long)q->s[s].n_blocked);
        jint(g, "blocked_ns", q->s[s].blocked_ns);
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
}

static void json_memory(yajl_gen g, const tp_an_memory *m) {
    jstr(g, "memory_bw");
    yajl_gen_array_open(g);
    for (size_t i = 0; i < m->n_bw; i++) {
        yajl_gen_map_open(g);
        jkv(g, "type", m->bw[i].type);
        jdescribe(g, "gbps", &m->bw[i].bw);
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
    jstr(g, "copies");
    yajl_gen_array_open(g);
    for (size_t i = 0; i < m->n_copy; i++) {
        const tp_an_copy *c = &m->copy[i];
        yajl_gen_map_open(g);
        jkv(g, "kind", tp_an_copy_kind_name(c->copy_kind));
        jkv(g, "src", tp_an_mem_kind_name(c->src_kind));
        jint(g, "count", (long long)c->count);
        jint(g, "bytes", c->bytes);
        jint(g, "dur_ns", c->dur_ns);
        jnum(g, "gbps", c->gbps);
        jnum(g, "max_gbps", c->max_gbps);
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
}

static void json_ranges(yajl_gen g, const tp_rank_analysis *rr) {
    jstr(g, "ranges");
    yajl_gen_array_open(g);
    for (size_t i = 0; i < rr->nv.n; i++) {
        const tp_an_range *r = &rr->nv.r[i];
        yajl_gen_map_open(g);
        jkv(g, "name", tp_model_str(rr->v.m, r->name));
        jint(g, "count", (long long)r->count);
        jint(g, "total_ns", r->total);
        jnum(g, "mean_ns", r->mean);
        jint(g, "min_ns", r->min);
        jint(g, "max_ns", r->max);
        jint(g, "gpu_ops", (long long)r->n_gpu_ops);
        jint(g, "gpu_ns", r->gpu_ns);
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
    jstr(g, "ranges_unattributed");
    yajl_gen_map_open(g);
    jint(g, "gpu_ops", (long long)rr->nv.unattributed_ops);
    jint(g, "gpu_ns", rr->nv.unattributed_ns);
    yajl_gen_map_close(g);
}

/* The CPU stack behind a finding, innermost first (appended in v1: "frames"). */
static void json_frames(yajl_gen g, const tp_finding *x) {
    jstr(g, "frames");
    yajl_gen_array_open(g);
    for (size_t k = 0; k < x->n_frames; k++) {
        const tp_diag_frame *fr = &x->frames[k];
        yajl_gen_map_open(g);
        jkv(g, "module", fr->module);
        jint(g, "offset", (long long)fr->offset);
        jkv(g, "function", fr->func);
        jkv(g, "file", fr->file);
        jint(g, "line", fr->line);
        jstr(g, "inlined");
        yajl_gen_bool(g, fr->inlined);
        jkv(g, "symbols", fr->symbols ? fr->symbols : "");
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
}

static void json_findings(yajl_gen g, const tp_diagnosis *d) {
    jstr(g, "findings");
    yajl_gen_array_open(g);
    for (size_t i = 0; i < d->n; i++) {
        const tp_finding *x = &d->f[i];
        yajl_gen_map_open(g);
        jkv(g, "id", x->id);
        jnum(g, "severity", x->severity);
        jkv(g, "level", tp_diag_level(x->severity));
        jkv(g, "title", x->title);
        jkv(g, "evidence", x->evidence);
        jkv(g, "advice", x->advice);
        jkv(g, "source", x->source);
        jstr(g, "metrics");
        yajl_gen_map_open(g);
        for (size_t k = 0; k < x->n_metrics; k++)
            jnum(g, x->metrics[k].key, x->metrics[k].value);
        yajl_gen_map_close(g);
        json_frames(g, x);
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
}

/* "dropped_records": {"total", "of", "share", "lower_bounds": true, "by_kind": {KIND: n}},
 * only when the collector lost records. */
static void json_dropped(yajl_gen g, const tp_an_drops *d) {
    if (!d->lost)
        return;
    jstr(g, "dropped_records");
    yajl_gen_map_open(g);
    jint(g, "total", (long long)d->lost);
    jint(g, "of", (long long)(d->lost + d->kept));
    jnum(g, "share", d->share);
    jstr(g, "lower_bounds");
    yajl_gen_bool(g, 1);
    jstr(g, "by_kind");
    yajl_gen_map_open(g);
    for (size_t i = 0; i < d->n; i++)
        jint(g, d->k[i].name, (long long)d->k[i].lost);
    yajl_gen_map_close(g);
    yajl_gen_map_close(g);
}

/* "processes": the rank's processes in tree order, only when it holds more than one. */
static void json_processes(yajl_gen g, const tp_rank_analysis *rr) {
    const tp_rank *r = rr->v.r;
    if (r->n_procs < 2)
        return;
    jstr(g, "processes");
    yajl_gen_array_open(g);
    for (size_t k = 0; k < r->n_procs; k++) {
        const tp_process *p = &r->procs[k];
        yajl_gen_map_open(g);
        jint(g, "pid", p->pid);
        jint(g, "ppid", p->ppid);
        jint(g, "exec_gen", p->exec_gen);
        jkv(g, "role", tp_proc_role_name(p->role));
        jint(g, "parent", p->parent);
        jint(g, "n_events", (long long)p->n_events);
        jkv(g, "command", tp_model_str(rr->v.m, p->command));
        jkv(g, "file", p->file ? p->file : "");
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
}

/* "skipped_events": {"total": N, "<reason>": n, ...}, only when the loader skipped any. */
static void json_skipped(yajl_gen g, const tp_rank *r) {
    uint64_t n = tp_rank_skipped(r);
    if (!n)
        return;
    jstr(g, "skipped_events");
    yajl_gen_map_open(g);
    jint(g, "total", (long long)n);
    for (int s = 0; s < TP_SKIP_COUNT; s++)
        if (r->n_skipped[s])
            jint(g, tp_skip_key((tp_skip)s), (long long)r->n_skipped[s]);
    yajl_gen_map_close(g);
}

static void json_rank(yajl_gen g, const tp_rank_analysis *rr) {
    const tp_rank *r = rr->v.r;
    yajl_gen_map_open(g);
    jint(g, "rank", rr->v.rank);
    jkv(g, "file", r->file ? r->file : "");
    jkv(g, "device_type", tp_devtype_name(r->device_type));
    jint(g, "n_events", (long long)rr->v.n);
    jint(g, "n_gpu_events", (long long)rr->v.n_gpu);
    jstr(g, "trimmed");
    yajl_gen_bool(g, rr->v.trimmed);
    jstr(g, "has_gpu");
    yajl_gen_bool(g, rr->t.has_gpu);
    json_processes(g, rr);
    json_dropped(g, &rr->drops);
    json_skipped(g, r);
    json_temporal(g, &rr->t);
    json_idle(g, &rr->idle);
    json_kernels(g, rr);
    json_launch(g, &rr->l);
    json_queue(g, &rr->q);
    json_memory(g, &rr->mem);
    jstr(g, "overlap");
    yajl_gen_map_open(g);
    jint(g, "comm_ns", rr->ov.comm_ns);
    jint(g, "comp_ns", rr->ov.comp_ns);
    jint(g, "overlap_ns", rr->ov.overlap_ns);
    jnum(g, "pct", rr->ov.pct);
    yajl_gen_map_close(g);
    json_ranges(g, rr);
    json_findings(g, &rr->dg);
    yajl_gen_map_close(g);
}

static void json_head(yajl_gen g, const tp_model *m, const tp_report_opts *o) {
    yajl_gen_map_open(g);
    jkv(g, "schema", "trainprof-report/v1");
    jkv(g, "mode", o->an.compat_hta ? "hta" : "native");
    jstr(g, "options");
    yajl_gen_map_open(g);
    jstr(g, "include_last_step");
    yajl_gen_bool(g, o->an.include_last_step);
    jstr(g, "no_ns_rounding");
    yajl_gen_bool(g, o->an.no_ns_rounding);
    jint(g, "kernel_wait_ns", o->an.kernel_wait_ns);
    jint(g, "rank", o->rank);
    yajl_gen_map_close(g);
    jint(g, "n_ranks", (long long)m->n_ranks);
    jstr(g, "ranks");
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

/* Multi-rank jobs: one line per rank first, so stragglers stand out before the details. */
static void text_ranks_table(FILE *f, const tp_model *m, const tp_report_opts *o) {
    char b1[32], b2[32], b3[32], b4[32], p1[32], p2[32];
    fprintf(f, "Ranks\n  %6s %12s %10s %12s %12s %12s %10s\n", "rank", "GPU span", "util", "idle",
            "compute", "non-compute", "overlap");
    for (size_t i = 0; i < m->n_ranks; i++) {
        if (!rank_selected(&m->ranks[i], o))
            continue;
        tp_rank_analysis a;
        tp_rank_analysis_run(&a, m, &m->ranks[i], &o->an, TP_RA_TEMPORAL | TP_RA_OVERLAP);
        const tp_an_temporal *t = &a.t;
        fprintf(f, "  %6d %s %10s %s %s %s %10s\n", a.v.rank, fmt_time(b1, 32, (double)t->span),
                fmt_pct(p1, 32, pct(t->busy, t->span)), fmt_time(b2, 32, (double)t->idle),
                fmt_time(b3, 32, (double)t->compute), fmt_time(b4, 32, (double)t->non_compute),
                fmt_pct(p2, 32, a.ov.pct));
        tp_rank_analysis_free(&a);
    }
    fprintf(f, "\n");
}

tp_status tp_report_write(FILE *out, const tp_model *m, const tp_report_opts *opts) {
    if (!out || !m || !opts)
        return TP_ERR_ARG;
    size_t sel = 0;
    for (size_t i = 0; i < m->n_ranks; i++)
        sel += rank_selected(&m->ranks[i], opts);
    if (!sel)
        return TP_ERR_NOT_FOUND;
    yajl_gen g = NULL;
    if (opts->format == TP_REPORT_JSON) {
        g = yajl_gen_alloc(NULL);
        yajl_gen_config(g, yajl_gen_beautify, 1);
        yajl_gen_config(g, yajl_gen_print_callback, json_print, (void *)out);
        json_head(g, m, opts);
    } else {
        fprintf(out, "trainprof report: %zu rank(s), %s mode\n\n", sel,
                opts->an.compat_hta ? "HTA-compatible" : "native (exact ns)");
        if (sel > 1)
            text_ranks_table(out, m, opts);
    }
    for (size_t i = 0; i < m->n_ranks; i++) {
        if (!rank_selected(&m->ranks[i], opts))
            continue;
        tp_rank_analysis rr;
        tp_rank_analysis_run(&rr, m, &m->ranks[i], &opts->an, TP_RA_ALL);
        if (g)
            json_rank(g, &rr);
        else
            text_rank(out, &rr, opts);
        tp_rank_analysis_free(&rr);
    }
    if (g) {
        yajl_gen_array_close(g);
        yajl_gen_map_close(g);
        yajl_gen_free(g);
        fputc('\n', out);
    }
    return ferror(out) ? TP_ERR_IO : TP_OK;
}
