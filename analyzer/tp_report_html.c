/* tp_report_html: the report as one HTML page (see the header). Each rank is a row-by-row
 * walk of html_sections, as the text and JSON renderers walk theirs. */
#include "tp_report_html.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tp_an_samples.h"
#include "tp_an_stepsplit.h"
#include "tp_report_fmt.h"
#include "tp_report_host.h"
#include "tp_report_section.h"
#include "tp_report_stacks.h"
#include "tp_report_svg.h"
#include "tp_units.h"

typedef struct {
    FILE *f;
    size_t n_ranks;
} html_state;

/* The page's look: light, dense, printable; no web font (system-ui). */
static const char css[] =
    "body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1180px;padding:0 18px 40px;"
    "color:#1d2330;background:#fff}"
    "h1{font-size:24px;margin:18px 0 2px}h2{font-size:20px;margin:34px 0 6px;padding-top:10px;"
    "border-top:3px solid #1d2330}h3{font-size:16px;margin:22px 0 6px}"
    ".sub{color:#5b6475;font-weight:normal;font-size:13px}.note{color:#8a4b00}"
    "nav a{margin-right:10px}"
    ".tiles{display:flex;flex-wrap:wrap;gap:10px}.tile{border:1px solid #d6dbe4;border-radius:6px;"
    "padding:8px 12px;min-width:130px}.tile .k{color:#5b6475;font-size:12px}"
    ".tile .v{font-size:19px;font-weight:600}"
    "ol.findings{padding-left:22px}ol.findings li{margin:0 0 12px}"
    ".badge{display:inline-block;border-radius:4px;padding:0 6px;color:#fff;font-size:12px;"
    "margin-right:6px}.high{background:#c0392b}.medium{background:#d68910}.low{background:#7f8c8d}"
    "dl{margin:4px 0 0;display:grid;grid-template-columns:80px 1fr;gap:2px 8px}"
    "dt{color:#5b6475}dd{margin:0;white-space:pre-wrap}"
    "table{border-collapse:collapse;width:100%;font-size:13px}th,td{padding:3px 8px;"
    "border-bottom:1px solid #e6e9ef;text-align:left;vertical-align:top}th{background:#f3f5f8}"
    "td.n,th.n{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}"
    "td.name{overflow-wrap:anywhere;font-family:ui-monospace,monospace;font-size:12px}"
    "svg.chart{width:100%;height:auto;display:block}svg .grid{stroke:#e3e6ec}"
    "svg text{font:11px system-ui,sans-serif;fill:#5b6475}svg .yl{text-anchor:end}"
    "svg .xl{text-anchor:middle}svg .bar:hover rect{opacity:.8}"
    "ul.legend{list-style:none;padding:0;margin:4px 0;display:flex;flex-wrap:wrap;gap:14px}"
    ".sw{display:inline-block;width:11px;height:11px;border-radius:2px;margin-right:5px;"
    "vertical-align:-1px}details{margin:6px 0}"
    ".share{display:flex;height:22px;border-radius:4px;overflow:hidden;background:#eef0f4}"
    ".share span{display:block;height:100%}";

/* The step parts' colours, in tp_ss_part order. */
static const char *const part_color[TP_SS_COUNT] = {"#4e79a7", "#e15759", "#f28e2b", "#b07aa1",
                                                    "#d9dde4"};

/* ---------------------------------------------------------------- small writers */

/* data-KEY="V": an integer attribute. */
static void attr_int(FILE *f, const char *key, long long v) {
    fprintf(f, " data-%s=\"%lld\"", key, v);
}

/* data-KEY="V": a number as the JSON report writes it; "" for NaN and inf (JSON null). */
static void attr_num(FILE *f, const char *key, double v) {
    if (isfinite(v))
        fprintf(f, " data-%s=\"%.17g\"", key, v);
    else
        fprintf(f, " data-%s=\"\"", key);
}

static void attr_str(FILE *f, const char *key, const char *v) {
    fprintf(f, " data-%s=\"", key);
    tp_rh_text(f, v);
    fputc('"', f);
}

/* A summary tile: label, shown value, and the attribute carrying the exact figure. */
static void tile_begin(FILE *f, const char *label) {
    fprintf(f, "<div class=\"tile\"><div class=\"k\">");
    tp_rh_text(f, label);
    fprintf(f, "</div><div class=\"v\"");
}

static void tile_end(FILE *f, const char *shown) {
    fputc('>', f);
    tp_rh_text(f, shown);
    fprintf(f, "</div></div>\n");
}

/* A table cell holding a duration (ns) in human units, right-aligned. */
static void td_dur(FILE *f, double ns) {
    char b[32];
    fprintf(f, "<td class=\"n\">");
    tp_rh_text(f, tp_units_dur(b, sizeof b, ns));
    fprintf(f, "</td>");
}

static void td_count(FILE *f, size_t n) {
    char b[32];
    fprintf(f, "<td class=\"n\">%s</td>", tp_units_count(b, sizeof b, n));
}

static void td_name(FILE *f, const char *s) {
    fprintf(f, "<td class=\"name\">");
    tp_rh_text(f, s);
    fprintf(f, "</td>");
}

/* The header row; the first `text` columns hold words, the others numbers (right-aligned). */
static void th_row(FILE *f, const char *const *cols, size_t n, size_t text) {
    fprintf(f, "<thead><tr>");
    for (size_t i = 0; i < n; i++)
        fprintf(f, "<th%s>%s</th>", i >= text ? " class=\"n\"" : "", cols[i]);
    fprintf(f, "</tr></thead>\n");
}

static size_t top_rows(const tp_report_opts *o) {
    return (size_t)(o->top > 0 ? o->top : 10);
}

/* "top 10 of 517" above a table that was cut, "all 7" when it was not. */
static void shown_of(FILE *f, size_t top, size_t n, const char *what) {
    if (n > top)
        fprintf(f, "<p class=\"sub\">top %zu of %zu %s (--top N shows more)</p>\n", top, n, what);
    else
        fprintf(f, "<p class=\"sub\">all %zu %s</p>\n", n, what);
}

/* The head of a table of the top rows: its title, how much of it is shown, the table tag with
 * data-rows (and one more data-* figure when extra_key is not NULL) and the header row. */
static void top_table_head(FILE *f, const char *title, const char *cls, size_t top, size_t n,
                           const char *what, const char *const *cols, size_t n_cols, size_t text,
                           const char *extra_key, long long extra) {
    fprintf(f, "<h3>%s</h3>\n", title);
    shown_of(f, top, n, what);
    fprintf(f, "<table class=\"%s\"", cls);
    attr_int(f, "rows", (long long)n);
    if (extra_key)
        attr_int(f, extra_key, extra);
    fprintf(f, ">\n");
    th_row(f, cols, n_cols, text);
}

/* ---------------------------------------------------------------- findings */

static void finding_li(FILE *f, const char *id, double severity, const char *title,
                       const char *evidence, const char *source, const char *advice, int rank) {
    const char *level = tp_diag_level(severity);
    fprintf(f, "<li");
    attr_str(f, "finding-id", id);
    attr_num(f, "severity", severity);
    if (rank >= 0)
        attr_int(f, "rank", rank);
    fprintf(f, "><span class=\"badge %s\">%s %.0f%%</span><b>", level, level, 100 * severity);
    tp_rh_text(f, title);
    fprintf(f, "</b> <span class=\"sub\">");
    tp_rh_text(f, id);
    fprintf(f, "</span><dl><dt>evidence</dt><dd>");
    tp_rh_text(f, evidence);
    if (source && source[0]) {
        fprintf(f, "</dd><dt>source</dt><dd>");
        tp_rh_text(f, source);
    }
    fprintf(f, "</dd><dt>fix</dt><dd>");
    tp_rh_text(f, advice);
    fprintf(f, "</dd></dl></li>\n");
}

static void html_diagnosis(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    const tp_diagnosis *d = &rr->dg;
    char bp[32];
    fprintf(f, "<h3>Diagnosis</h3>\n");
    char basis[128], nj[640];
    if (tp_report_host_basis(rr, basis, sizeof basis, nj, sizeof nj)) {
        fprintf(f, "<p class=\"sub\">");
        tp_rh_text(f, basis);
        fprintf(f, "</p>\n<p class=\"note\">");
        tp_rh_text(f, nj);
        fprintf(f, "</p>\n");
    }
    if (d->window_ns > 0) {
        fprintf(f, "<p class=\"sub\">device busy <span");
        attr_num(f, "diag-utilization", d->utilization);
        fprintf(f, ">%s</span> of %s</p>\n", tp_rf_pct_str(bp, sizeof bp, 100 * d->utilization),
                d->n_steps ? "the training steps" : "the GPU span");
    }
    const char *steps = tp_rank_analysis_steps_note(rr);
    if (steps) {
        fprintf(f, "<p class=\"note\">");
        tp_rh_text(f, steps);
        fprintf(f, "</p>\n");
    }
    if (d->warmup_only)
        fprintf(f, "<p class=\"note\">only the first (warm-up) step was recorded: time shares "
                   "not judged</p>\n");
    if (d->n_warmup) {
        char wu[256];
        fprintf(f, "<p class=\"note\">");
        tp_rh_text(f, tp_diag_warmup_text(d, wu, sizeof wu));
        fprintf(f, "</p>\n");
    }
    if (!d->n)
        fprintf(f, "<p>%s</p>\n", tp_rank_analysis_no_findings(rr));
    fprintf(f, "<ol class=\"findings\">\n");
    for (size_t i = 0; i < d->n; i++)
        finding_li(f, d->f[i].id, d->f[i].severity, d->f[i].title, d->f[i].evidence, d->f[i].source,
                   d->f[i].advice, -1);
    fprintf(f, "</ol>\n");
}

/* ---------------------------------------------------------------- notes and summary */

/* What qualifies every figure below: dropped records, skipped events, CUDA not traced. */
static void html_notes(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    char line[1024];
    if (rr->drops.lost) {
        fprintf(f, "<p class=\"note\">Dropped: ");
        tp_rh_text(f, tp_an_drops_line(&rr->drops, line, sizeof line));
        fprintf(f, "</p>\n");
    }
    uint64_t skipped = tp_rank_skipped(rr->v.r);
    if (skipped)
        fprintf(f,
                "<p class=\"note\">Skipped: %llu event(s) with impossible times, left out of "
                "every figure</p>\n",
                (unsigned long long)skipped);
    if (rr->v.r->cuda_off) {
        fprintf(f, "<p class=\"note\">CUDA: not traced (");
        tp_rh_text(f, tp_model_str(rr->v.m, rr->v.r->cuda_off));
        fprintf(f, ")</p>\n");
    }
    if (rr->v.r->cupti_refused) {
        fprintf(f, "<p class=\"note\">CUDA: traced here; ");
        tp_rh_text(f, tp_model_str(rr->v.m, rr->v.r->cupti_refused));
        fprintf(f, "</p>\n");
    }
    if (!rr->t.has_gpu)
        fprintf(f,
                "<p class=\"note\">No device activity in this rank (%zu CPU-side events): "
                "the device charts are left out.</p>\n",
                rr->v.n);
}

static void tiles_device(FILE *f, const tp_rank_analysis *rr) {
    const tp_an_temporal *t = &rr->t;
    char b[32];
    int gpu = rr->v.r->device_type != TP_DEVTYPE_CPU_DEVICE;
    tile_begin(f, gpu ? "GPU span" : "device span");
    attr_int(f, "span-ns", t->span);
    tile_end(f, tp_units_dur(b, sizeof b, (double)t->span));
    tile_begin(f, gpu ? "GPU utilization" : "device utilization");
    attr_int(f, "busy-ns", t->busy);
    tile_end(f, tp_rf_pct_str(b, sizeof b, tp_rf_pct(t->busy, t->span)));
    tile_begin(f, "compute");
    attr_int(f, "compute-ns", t->compute);
    tile_end(f, tp_rf_pct_str(b, sizeof b, tp_rf_pct(t->compute, t->span)));
    tile_begin(f, "idle");
    attr_int(f, "idle-ns", t->idle);
    tile_end(f, tp_rf_pct_str(b, sizeof b, tp_rf_pct(t->idle, t->span)));
    tile_begin(f, "comm/comp overlap");
    attr_num(f, "overlap-pct", rr->ov.pct);
    tile_end(f, isnan(rr->ov.pct) ? "n/a" : tp_rf_pct_str(b, sizeof b, rr->ov.pct));
}

static void html_summary(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    const tp_diagnosis *d = &rr->dg;
    char b[32];
    fprintf(f, "<h3>Summary</h3>\n<div class=\"tiles\">\n");
    if (rr->t.has_gpu)
        tiles_device(f, rr);
    tile_begin(f, "steps");
    attr_int(f, "steps", (long long)d->n_steps);
    tile_end(f, tp_units_count(b, sizeof b, d->n_steps));
    tile_begin(f, "step time, median");
    attr_num(f, "step-p50-ns", d->step_p50_ns);
    attr_num(f, "step-mean-ns", d->step_mean_ns);
    attr_num(f, "step-p90-ns", d->step_p90_ns);
    tile_end(f, tp_units_dur(b, sizeof b, d->step_p50_ns));
    if ((rr->ran & TP_RA_MEMUSE) && rr->mu.peak_allocated >= 0 &&
        rr->mu.source != TP_AN_MSRC_NONE) {
        tile_begin(f, "memory peak (allocated)");
        attr_int(f, "peak-allocated-bytes", rr->mu.peak_allocated);
        attr_int(f, "peak-reserved-bytes", rr->mu.peak_reserved);
        tile_end(f, tp_units_bytes(b, sizeof b, (double)rr->mu.peak_allocated));
    }
    fprintf(f, "</div>\n");
}

/* ---------------------------------------------------------------- steps */

typedef struct {
    size_t group, n; /* steps per bar; steps */
} bar_names;

static void step_bar_name(size_t i, char *buf, size_t n, const void *arg) {
    const bar_names *g = arg;
    size_t a = i * g->group + 1, b = a + g->group - 1 < g->n ? a + g->group - 1 : g->n;
    if (a == b)
        snprintf(buf, n, "step %zu", a);
    else
        snprintf(buf, n, "steps %zu-%zu", a, b);
}

/* The per-step numbers behind the bars, one row per bar (sums over the bar's steps). */
static void step_table(FILE *f, const tp_an_stepsplit *s, size_t group) {
    fprintf(f, "<details><summary>the numbers per %s</summary><table class=\"steps\">\n",
            group > 1 ? "bar" : "step");
    fprintf(f, "<thead><tr><th>%s</th><th class=\"n\">duration</th>", "steps");
    for (int p = 0; p < TP_SS_COUNT; p++)
        fprintf(f, "<th class=\"n\">%s</th>", tp_ss_part_label((tp_ss_part)p));
    fprintf(f, "</tr></thead>\n");
    for (size_t i = 0; i < s->n; i += group) {
        size_t n = i + group <= s->n ? group : s->n - i;
        int64_t part[TP_SS_COUNT] = {0}, dur = 0;
        for (size_t k = i; k < i + n; k++) {
            dur += s->s[k].end - s->s[k].start;
            for (int p = 0; p < TP_SS_COUNT; p++)
                part[p] += s->s[k].part[p];
        }
        fprintf(f, "<tr");
        attr_int(f, "step-first", (long long)i + 1);
        attr_int(f, "step-count", (long long)n);
        attr_int(f, "dur-ns", dur);
        for (int p = 0; p < TP_SS_COUNT; p++) {
            char key[32];
            snprintf(key, sizeof key, "%s-ns", tp_ss_part_key((tp_ss_part)p));
            attr_int(f, key, part[p]);
        }
        fprintf(f, "><td>%zu%s</td>", i + 1, n > 1 ? "+" : "");
        td_dur(f, (double)dur);
        for (int p = 0; p < TP_SS_COUNT; p++)
            td_dur(f, (double)part[p]);
        fprintf(f, "</tr>\n");
    }
    fprintf(f, "</table></details>\n");
}

static void html_steps(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    const tp_diagnosis *d = &rr->dg;
    fprintf(f, "<h3>Step time breakdown</h3>\n");
    if (!d->n_steps) {
        fprintf(f, "<p class=\"sub\">no training steps found (ranges named step, train_step or "
                   "ProfilerStep#N on the launching threads)</p>\n");
        return;
    }
    tp_an_stepsplit s;
    tp_an_stepsplit_run(&rr->v, d->step_start, d->step_end, d->n_steps, &s);
    size_t group = (s.n + TP_RH_MAX_BARS - 1) / TP_RH_MAX_BARS, nb = (s.n + group - 1) / group;
    double *v = calloc(nb * TP_SS_COUNT + 1, sizeof *v);
    if (!v)
        abort();
    for (size_t i = 0; i < s.n; i++)
        for (int p = 0; p < TP_SS_COUNT; p++) /* each bar: the mean of its steps */
            v[(i / group) * TP_SS_COUNT + (size_t)p] +=
                (double)s.s[i].part[p] /
                (double)(i / group + 1 < nb ? group : s.n - i / group * group);
    tp_svg_series ser[TP_SS_COUNT];
    for (int p = 0; p < TP_SS_COUNT; p++)
        ser[p] = (tp_svg_series){tp_ss_part_label((tp_ss_part)p), part_color[p]};
    fprintf(f,
            "<p class=\"sub\">%zu step(s); each bar splits a step's time by what the device "
            "did: compute kernels, communication no compute overlapped, copies and memsets, "
            "other device work, idle",
            s.n);
    if (group > 1)
        fprintf(f, "; each bar is the mean of %zu consecutive steps (at most %d bars)", group,
                TP_RH_MAX_BARS);
    fprintf(f, "</p>\n");
    tp_svg_legend(f, TP_SS_COUNT, ser);
    bar_names names = {group, s.n};
    tp_svg_bars(f, "step time per step", nb, TP_SS_COUNT, v, ser, TP_SVG_NS, step_bar_name, &names);
    step_table(f, &s, group);
    free(v);
    tp_an_stepsplit_free(&s);
}

/* ---------------------------------------------------------------- time series */

static void html_busy(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    const tp_an_temporal *t = &rr->t;
    enum { N = TP_RH_BUSY_BUCKETS };
    double y[N], x[N];
    tp_an_busy_series(&rr->v, t->first_ts, t->last_end, N, y);
    for (size_t k = 0; k < N; k++)
        x[k] = (double)t->first_ts + (double)t->span * ((double)k + 0.5) / N;
    char b[32];
    fprintf(f, "<h3>Device utilization over time</h3>\n<p class=\"sub\"");
    attr_int(f, "buckets", N);
    fprintf(f,
            ">busy share of the device (any kernel, copy or memset running) in %d equal "
            "slices of the span (%s each)</p>\n",
            N, tp_units_dur(b, sizeof b, (double)t->span / N));
    static const tp_svg_series ser[] = {{"device busy", "#59a14f"}};
    tp_svg_lines(f, "device utilization over time", N, x, 1, y, ser, TP_SVG_SHARE, 1, 1);
}

/* The memory timeline cut to TP_RH_SERIES_POINTS slices, each the maximum of its points (the
 * peak survives), a slice without points carrying the value before it. */
static size_t mem_series(const tp_an_memuse *u, double *x, double *ya, double *yr) {
    size_t n = TP_RH_SERIES_POINTS, j = 0;
    int64_t t0 = tp_an_memuse_pt_ts(u, 0), t1 = tp_an_memuse_pt_ts(u, u->n_points - 1);
    double a = 0, r = 0;
    for (size_t k = 0; k < n; k++) {
        double edge = (double)t0 + (double)(t1 - t0) * (double)(k + 1) / (double)n;
        double ma = a, mr = r;
        int any = 0;
        while (j < u->n_points && ((double)tp_an_memuse_pt_ts(u, j) <= edge || k + 1 == n)) {
            a = (double)u->pt_alloc[j], r = (double)tp_an_memuse_pt_res(u, j);
            ma = any && ma > a ? ma : a, mr = any && mr > r ? mr : r;
            any = 1, j++;
        }
        x[k] = (double)t0 + (double)(t1 - t0) * (double)k / (double)n;
        ya[k] = ma, yr[k] = mr;
    }
    return n;
}

static void html_memory(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    const tp_an_memuse *u = &rr->mu;
    if (!(rr->ran & TP_RA_MEMUSE) || u->source == TP_AN_MSRC_NONE || u->n_points < 2)
        return;
    size_t n = TP_RH_SERIES_POINTS;
    double *x = calloc(3 * n, sizeof *x);
    if (!x)
        abort();
    double *y = x + n;
    mem_series(u, x, y, y + n);
    char b1[32], b2[32];
    int res = u->peak_reserved >= 0;
    fprintf(f,
            "<h3>Device memory</h3>\n<p class=\"sub\">allocated%s after each of %zu memory "
            "events, shown as %zu slices (the maximum of each); peak allocated %s",
            res ? " and reserved" : "", u->n_events, n,
            tp_units_bytes(b1, sizeof b1, (double)u->peak_allocated));
    if (res)
        fprintf(f, ", peak reserved %s", tp_units_bytes(b2, sizeof b2, (double)u->peak_reserved));
    fprintf(f, "</p>\n");
    static const tp_svg_series ser[] = {{"allocated", "#4e79a7"}, {"reserved", "#9c755f"}};
    tp_svg_legend(f, res ? 2 : 1, ser);
    tp_svg_lines(f, "device memory over time", n, x, res ? 2 : 1, y, ser, TP_SVG_BYTES, 1, 0);
    free(x);
}

/* ---------------------------------------------------------------- tables */

static void html_kernels(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o) {
    static const char *const cols[] = {"kernel",        "type", "count", "total",
                                       "share of busy", "mean", "min",   "max"};
    size_t top = top_rows(o);
    char bp[32];
    top_table_head(f, "Kernels", "kernels", top, rr->k.n, "kernels by total time", cols,
                   sizeof cols / sizeof cols[0], 2, NULL, 0);
    for (size_t i = 0; i < rr->k.n && i < top; i++) {
        const tp_an_kernel_row *k = &rr->k.k[i];
        fprintf(f, "<tr");
        attr_int(f, "sum-ns", k->sum);
        attr_int(f, "count", (long long)k->count);
        fprintf(f, ">");
        td_name(f, tp_model_str(rr->v.m, k->name));
        fprintf(f, "<td>%s</td>", tp_ktype_name((tp_ktype)k->ktype));
        td_count(f, k->count);
        td_dur(f, (double)k->sum);
        fprintf(f, "<td class=\"n\">%s</td>",
                tp_rf_pct_str(bp, sizeof bp, tp_rf_pct(k->sum, rr->t.busy)));
        td_dur(f, k->mean);
        td_dur(f, (double)k->min);
        td_dur(f, (double)k->max);
        fprintf(f, "</tr>\n");
    }
    fprintf(f, "</table>\n");
}

/* A stack's frames in one cell, innermost first, with "... N library frames" where a prefix
 * left library frames out. */
static void td_frames(FILE *f, const tp_an_frame *fr, size_t n) {
    char label[1024], gap[64];
    fprintf(f, "<td class=\"name\">");
    for (size_t k = 0; k < n; k++) {
        if (fr[k].skipped) {
            fprintf(f, "<span class=\"sub\">");
            tp_rh_text(f, tp_an_frame_gap(&fr[k], gap, sizeof gap));
            fprintf(f, "</span><br>");
        }
        tp_rh_text(f, tp_an_frame_label(&fr[k], label, sizeof label));
        fprintf(f, "%s", k + 1 < n ? "<br>" : "");
    }
    fprintf(f, "</td>");
}

/* GPU time by launching stack (tp_an_stacks, the text report's section): the top groups, each
 * with its frames as the report reads them (a Python program's call, "... N library frames"
 * where library frames were left out, then the program's own line and its callers) and its
 * kernels; nothing when no GPU op was launched from a recorded stack. */
static void html_stacks(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o) {
    static const char *const cols[] = {"launching stack (innermost first)", "kernels", "GPU time",
                                       "share", "ops"};
    enum { KERNELS_SHOWN = 3, KERNEL_CHARS = 160 }; /* the Kernels table has every name whole */
    tp_an_stacks own;
    const tp_an_stacks *sp = tp_report_stacks_of(rr, o, &own);
    size_t top = top_rows(o);
    char label[1024], b[32];
    if (sp->n) {
        top_table_head(f, "GPU time by launching stack", "stacks", top, sp->n,
                       "groups of stacks by GPU time", cols, sizeof cols / sizeof cols[0], 2,
                       "depth", sp->depth);
    }
    for (size_t i = 0; i < sp->n && i < top; i++) {
        const tp_an_stack_row *g = &sp->s[i];
        fprintf(f, "<tr");
        attr_int(f, "gpu-ns", g->gpu_ns);
        attr_int(f, "count", (long long)g->count);
        attr_int(f, "stack-id", g->stack);
        fprintf(f, ">");
        td_frames(f, g->frames, g->n_frames);
        fprintf(f, "<td class=\"name\">");
        for (size_t k = 0; k < g->n_k && k < KERNELS_SHOWN; k++) {
            tp_rh_text(f, tp_rf_clip(label, sizeof label, tp_model_str(rr->v.m, g->k[k].name),
                                     KERNEL_CHARS));
            fprintf(f, " x%zu%s", g->k[k].count, k + 1 < g->n_k ? "<br>" : "");
        }
        if (g->n_k > KERNELS_SHOWN)
            fprintf(f, "+%zu more", g->n_k - KERNELS_SHOWN);
        fprintf(f, "</td>");
        td_dur(f, (double)g->gpu_ns);
        fprintf(f, "<td class=\"n\">%s</td>",
                tp_rf_pct_str(b, sizeof b, tp_rf_pct(g->gpu_ns, sp->gpu_ns)));
        td_count(f, g->count);
        fprintf(f, "</tr>\n");
    }
    if (sp->n)
        fprintf(f, "</table>\n");
    if (sp->n && sp->no_stack)
        fprintf(f, "<p class=\"sub\">without a stack: %zu ops, %s</p>\n", sp->no_stack,
                tp_units_dur(b, sizeof b, (double)sp->no_stack_ns));
    tp_an_stacks_free(&own);
}

/* One sampled thread's row: CPU clock, time in state R, wall, busy (clock over wall), GIL ("-"
 * for a native thread), samples; the kind in its class. */
static void sampled_thread_row(FILE *f, const tp_an_sample_thread *t, int native) {
    char b[32];
    fprintf(f, "<tr class=\"%s\"", native ? "native" : "python");
    attr_int(f, "clock-ns", t->clock_ns);
    attr_int(f, "cpu-ns", t->cpu_ns);
    attr_int(f, "wall-ns", t->wall_ns);
    fprintf(f, ">");
    td_name(f, t->name);
    fprintf(f, "<td class=\"n\">%lld</td><td class=\"n\">%lld</td><td>%s</td>", (long long)t->pid,
            (long long)t->tid, native ? "native" : "Python");
    td_dur(f, (double)t->clock_ns);
    td_dur(f, (double)t->cpu_ns);
    td_dur(f, (double)t->wall_ns);
    fprintf(f, "<td class=\"n\">%s</td>",
            tp_rf_pct_str(b, sizeof b, tp_rf_pct(t->clock_ns, t->wall_ns)));
    fprintf(f, "<td class=\"n\">%s</td>",
            native ? "-" : tp_rf_pct_str(b, sizeof b, tp_rf_pct(t->gil_ns, t->wall_ns)));
    td_count(f, t->samples);
    fprintf(f, "</tr>\n");
}

/* The sampled threads, as the text report's table: the Python threads by time on a CPU, then
 * the native ones that used a CPU. */
static void sampled_threads(FILE *f, const tp_an_samples *sa, size_t top) {
    static const char *const cols[] = {"thread", "pid",  "tid",  "kind", "CPU clock",
                                       "on CPU", "wall", "busy", "GIL",  "samples"};
    fprintf(f, "<h3>Sampled threads</h3>\n");
    shown_of(f, top, sa->n_threads, "Python threads by time on a CPU");
    fprintf(f, "<table class=\"sampled-threads\">\n");
    th_row(f, cols, sizeof cols / sizeof cols[0], 1);
    for (size_t i = 0; i < sa->n_threads && i < top; i++)
        sampled_thread_row(f, &sa->t[i], 0);
    for (size_t i = 0, shown = 0; i < sa->n_native && shown < top; i++)
        if (sa->nt[i].clock_ns > 0) /* as n_native_busy counts them */
            sampled_thread_row(f, &sa->nt[i], 1), shown++;
    fprintf(f, "</table>\n");
    if (sa->n_native)
        fprintf(f, "<p class=\"sub\">" TP_RF_NATIVE_THREADS ": %zu, %zu of them used a CPU</p>\n",
                sa->n_native, sa->n_native_busy);
}

/* CPU time by line, sampled (tp_an_samples, the text report's section): the top rows by time
 * on a CPU, their waiting beside; only for a rank with samples (`record --sample`). */
static void html_samples(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o) {
    static const char *const cols[] = {"sampled stack (innermost first)", "on CPU", "share",
                                       "waiting", "samples"};
    if (!rr->v.r->samples.n)
        return;
    tp_an_samples sa;
    tp_an_samples_run(&rr->v, o->an.stack_depth, 0, 0, &sa);
    size_t top = top_rows(o);
    char b[32];
    if (sa.n) {
        top_table_head(f, "CPU time by line, sampled", "samples", top, sa.n,
                       "stacks by time on a CPU", cols, sizeof cols / sizeof cols[0], 1, "hz",
                       sa.hz);
        for (size_t i = 0; i < sa.n && i < top; i++) {
            const tp_an_sample_row *r = &sa.s[i];
            fprintf(f, "<tr");
            attr_int(f, "cpu-ns", r->cpu_ns);
            attr_int(f, "wall-ns", r->wall_ns);
            attr_int(f, "samples", (long long)r->samples);
            attr_int(f, "stack-id", r->stack);
            fprintf(f, ">");
            td_frames(f, r->frames, r->n_frames);
            td_dur(f, (double)r->cpu_ns);
            fprintf(f, "<td class=\"n\">%s</td>",
                    tp_rf_pct_str(b, sizeof b, tp_rf_pct(r->cpu_ns, sa.cpu_ns)));
            td_dur(f, (double)(r->wall_ns - r->cpu_ns));
            td_count(f, r->samples);
            fprintf(f, "</tr>\n");
        }
        fprintf(f, "</table>\n");
        char nb[96];
        fprintf(f,
                "<p class=\"sub\">%zu samples of %zu threads, %lld a second; on CPU: the "
                "periods whose sample found the thread running or ready to run%s</p>\n",
                sa.samples, sa.n_threads, (long long)sa.hz,
                tp_an_samples_native_note(&sa, nb, sizeof nb));
    }
    if (sa.n_threads || sa.n_native)
        sampled_threads(f, &sa, top);
    tp_an_samples_free(&sa);
}

static void html_copies(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    static const char *const cols[] = {"kind", "source", "count", "bytes", "busy", "GB/s"};
    char b[32];
    if (!rr->mem.n_copy)
        return;
    fprintf(f, "<h3>Copies and memsets</h3>\n<table class=\"copies\">\n");
    th_row(f, cols, sizeof cols / sizeof cols[0], 2);
    for (size_t i = 0; i < rr->mem.n_copy; i++) {
        const tp_an_copy *c = &rr->mem.copy[i];
        fprintf(f, "<tr");
        attr_int(f, "bytes", c->bytes);
        attr_int(f, "dur-ns", c->dur_ns);
        fprintf(f, "><td>%s</td><td>%s</td>", tp_an_copy_kind_name(c->copy_kind),
                tp_an_mem_kind_name(c->src_kind));
        td_count(f, c->count);
        fprintf(f, "<td class=\"n\">%s</td>", tp_units_bytes(b, sizeof b, (double)c->bytes));
        td_dur(f, (double)c->dur_ns);
        fprintf(f, "<td class=\"n\">%.2f</td></tr>\n", c->gbps);
    }
    fprintf(f, "</table>\n");
}

static void html_ranges(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o) {
    static const char *const cols[] = {"range", "count",   "total",   "mean",
                                       "max",   "GPU ops", "GPU time"};
    char lb[512];
    size_t top = top_rows(o);
    if (!rr->nv.n)
        return;
    top_table_head(f, "Annotation ranges", "ranges", top, rr->nv.n,
                   "ranges by total time (GPU = work launched inside)", cols,
                   sizeof cols / sizeof cols[0], 1, NULL, 0);
    for (size_t i = 0; i < rr->nv.n && i < top; i++) {
        const tp_an_range *r = &rr->nv.r[i];
        fprintf(f, "<tr");
        attr_int(f, "total-ns", r->total);
        attr_int(f, "count", (long long)r->count);
        fprintf(f, ">");
        td_name(f, tp_an_range_label(rr->v.m, r, lb, sizeof lb));
        td_count(f, r->count);
        td_dur(f, (double)r->total);
        td_dur(f, r->mean);
        td_dur(f, (double)r->max);
        td_count(f, r->n_gpu_ops);
        td_dur(f, (double)r->gpu_ns);
        fprintf(f, "</tr>\n");
    }
    fprintf(f, "</table>\n");
}

static void html_cpuops(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o) {
    static const char *const cols[] = {"operator", "kind",  "count", "self",
                                       "self %",   "total", "mean"};
    const tp_an_cpuops *c = &rr->ops;
    size_t top = top_rows(o);
    char bp[32];
    if (!c->n)
        return;
    top_table_head(f, "CPU operators", "cpuops", top, c->n,
                   c->by_total ? "operators by total time" : "operators by self time", cols,
                   sizeof cols / sizeof cols[0], 2, NULL, 0);
    for (size_t i = 0; i < c->n && i < top; i++) {
        const tp_an_cpuop *x = &c->op[i];
        fprintf(f, "<tr");
        attr_int(f, "self-ns", x->self);
        attr_int(f, "total-ns", x->total);
        fprintf(f, ">");
        td_name(f, tp_model_str(rr->v.m, x->name));
        fprintf(f, "<td>%s</td>", tp_an_cpuop_kind(x));
        td_count(f, x->count);
        td_dur(f, (double)x->self);
        fprintf(f, "<td class=\"n\">%s</td>",
                tp_rf_pct_str(bp, sizeof bp, tp_rf_pct(x->self, c->self_sum)));
        td_dur(f, (double)x->total);
        td_dur(f, x->mean);
        fprintf(f, "</tr>\n");
    }
    fprintf(f, "</table>\n");
}

/* ---------------------------------------------------------------- host */

/* A rank without device activity: its step window split by what the host did (tp_an_host,
 * the text report's "Step time on the host"), as a share bar, then its busiest threads. */
static void host_split(FILE *f, const tp_an_host *h) {
    static const char *const color[] = {"#e15759", "#4e79a7", "#d9dde4", "#f28e2b"};
    enum { N_PARTS = TP_REPORT_HOST_PARTS };
    _Static_assert(sizeof color / sizeof color[0] == N_PARTS, "a color per part");
    const char *label[N_PARTS];
    int64_t win = h->w1 - h->w0, part[N_PARTS];
    tp_report_host_parts(h, label, part);
    char b[32], bp[32];
    fprintf(f, "<p class=\"sub\"");
    attr_int(f, "host-window-ns", win);
    attr_int(f, "host-data-ns", h->data_ns);
    attr_int(f, "host-ops-ns", h->ops_ns);
    attr_int(f, "host-unrecorded-ns", h->unrecorded_ns);
    fprintf(f, ">%s: %s</p>\n<div class=\"share\">",
            h->n_steps ? "the steps, first start to last end" : "the CPU span (no steps named)",
            tp_units_dur(b, sizeof b, (double)win));
    for (int i = 0; i < N_PARTS; i++)
        if (part[i] > 0)
            fprintf(f, "<span style=\"width:%.3f%%;background:%s\" title=\"%s %s\"></span>",
                    tp_rf_pct(part[i], win), color[i], label[i],
                    tp_rf_pct_str(bp, sizeof bp, tp_rf_pct(part[i], win)));
    fprintf(f, "</div>\n<ul class=\"legend\">");
    for (int i = 0; i < N_PARTS; i++) {
        fprintf(f, "<li><span class=\"sw\" style=\"background:%s\"></span>%s: ", color[i],
                label[i]);
        tp_rh_text(f, tp_units_dur(b, sizeof b, (double)part[i]));
        fprintf(f, " (%s)</li>", tp_rf_pct_str(bp, sizeof bp, tp_rf_pct(part[i], win)));
    }
    fprintf(f, "</ul>\n");
}

static void host_threads(FILE *f, const tp_rank_analysis *rr, size_t top) {
    static const char *const cols[] = {"thread", "pid", "tid", "events", "busy", "of its span"};
    const tp_an_host *h = &rr->host;
    char bp[32];
    fprintf(f, "<h3>Threads</h3>\n");
    shown_of(f, top, h->n_threads, "threads by busy time (inside any recorded range or call)");
    fprintf(f, "<table class=\"threads\">\n");
    th_row(f, cols, sizeof cols / sizeof cols[0], 1);
    for (size_t i = 0; i < h->n_threads && i < top; i++) {
        const tp_an_host_thread *t = &h->th[i];
        const char *name = tp_rank_thread_name(rr->v.m, rr->v.r, t->pid, t->tid);
        fprintf(f, "<tr");
        attr_int(f, "busy-ns", t->busy);
        fprintf(f, ">");
        td_name(f, name ? name : "");
        fprintf(f, "<td class=\"n\">%lld</td><td class=\"n\">%lld</td>", (long long)t->pid,
                (long long)t->tid);
        td_count(f, t->n_events);
        td_dur(f, (double)t->busy);
        fprintf(f, "<td class=\"n\">%s</td></tr>\n",
                tp_rf_pct_str(bp, sizeof bp, tp_rf_pct(t->busy, t->last - t->first)));
    }
    fprintf(f, "</table>\n");
}

static void html_host(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o) {
    const tp_an_host *h = &rr->host;
    if (h->w1 - h->w0 > 0) {
        fprintf(f, "<h3>Step time on the host</h3>\n");
        host_split(f, h);
    }
    if (h->n_threads)
        host_threads(f, rr, top_rows(o));
}

/* ---------------------------------------------------------------- the page */

typedef void (*html_fn)(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o);
typedef struct {
    const char *name;
    unsigned when; /* TP_RS_* */
    html_fn fn;
} html_section;

/* A rank's page part, in print order: what qualifies the figures, what is wrong, then the
 * charts and the tables. One row per line, so that adding a section is a one-line change. */
// clang-format off
static const html_section html_sections[] = {
    {"notes", TP_RS_ALWAYS, html_notes},
    {"diagnosis", TP_RS_ALWAYS, html_diagnosis},
    {"summary", TP_RS_ALWAYS, html_summary},
    {"host", TP_RS_HOST, html_host},
    {"steps", TP_RS_DEVICE, html_steps},
    {"busy", TP_RS_DEVICE, html_busy},
    {"memory", TP_RS_ALWAYS, html_memory},
    {"kernels", TP_RS_DEVICE, html_kernels},
    {"stacks", TP_RS_DEVICE, html_stacks},
    {"samples", TP_RS_ALWAYS, html_samples},
    {"copies", TP_RS_DEVICE, html_copies},
    {"ranges", TP_RS_ALWAYS, html_ranges},
    {"cpu_ops", TP_RS_ALWAYS, html_cpuops},
};
// clang-format on

static int shown_rank(const tp_rank *r, const tp_report_opts *o) {
    return o->rank < 0 || (o->an.compat_hta ? r->rank_hta : r->rank) == o->rank;
}

void *tp_report_html_open(FILE *out, const tp_model *m, const tp_report_opts *o, size_t n_ranks) {
    html_state *h = calloc(1, sizeof *h);
    if (!h)
        abort();
    h->f = out, h->n_ranks = n_ranks;
    fprintf(out,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            "<title>trainprof report</title>\n<style>%s</style></head>\n",
            css);
    fprintf(out, "<body");
    attr_int(out, "ranks", (long long)n_ranks);
    attr_int(out, "top", (long long)top_rows(o));
    attr_str(out, "mode", o->an.compat_hta ? "hta" : "native");
    fprintf(out,
            ">\n<h1>trainprof report</h1>\n<p class=\"sub\">%zu rank(s), %s mode; tables "
            "show the top %zu rows</p>\n",
            n_ranks, o->an.compat_hta ? "HTA-compatible" : "native (exact ns)", top_rows(o));
    if (n_ranks > 1) {
        fprintf(out, "<nav><a href=\"#cross-rank\">ranks compared</a>");
        for (size_t i = 0; i < m->n_ranks; i++)
            if (shown_rank(&m->ranks[i], o)) {
                int r = o->an.compat_hta ? m->ranks[i].rank_hta : m->ranks[i].rank;
                fprintf(out, "<a href=\"#rank-%d\">rank %d</a>", r, r);
            }
        fprintf(out, "</nav>\n");
    }
    return h;
}

static void rank_bar_name(size_t i, char *buf, size_t n, const void *arg) {
    snprintf(buf, n, "rank %d", ((const tp_an_ranks *)arg)->r[i].rank);
}

/* Per rank, the median step split in its own work and its exposed communication per step. */
static void ranks_chart(FILE *f, const tp_an_ranks *x) {
    double *v = calloc(2 * x->n + 1, sizeof *v);
    if (!v)
        abort();
    for (size_t i = 0; i < x->n; i++) {
        const tp_an_rank_row *r = &x->r[i];
        double own = isfinite(r->own_p50_ns) ? r->own_p50_ns : 0;
        double step = isfinite(r->step_p50_ns) ? r->step_p50_ns : 0;
        v[2 * i] = own, v[2 * i + 1] = step > own ? step - own : 0;
    }
    static const tp_svg_series ser[] = {{"own work", "#4e79a7"},
                                        {"exposed communication", "#e15759"}};
    fprintf(f, "<p class=\"sub\">median step per rank: its own work and the communication no "
               "computation hid (waiting for the others)</p>\n");
    tp_svg_legend(f, 2, ser);
    tp_svg_bars(f, "median step per rank", x->n, 2, v, ser, TP_SVG_NS, rank_bar_name, x);
    free(v);
}

static void ranks_table(FILE *f, const tp_an_ranks *x) {
    static const char *const cols[] = {"rank",     "steps", "step p50", "step p90",
                                       "GPU span", "util",  "compute",  "exposed comm"};
    char bp[32];
    fprintf(f, "<table class=\"ranks\">\n");
    th_row(f, cols, sizeof cols / sizeof cols[0], 1);
    for (size_t i = 0; i < x->n; i++) {
        const tp_an_rank_row *r = &x->r[i];
        fprintf(f, "<tr");
        attr_int(f, "xr-rank", r->rank);
        attr_int(f, "steps", (long long)r->n_steps);
        attr_num(f, "step-p50-ns", r->step_p50_ns);
        attr_int(f, "busy-ns", r->busy_ns);
        attr_int(f, "span-ns", r->span_ns);
        attr_int(f, "exposed-comm-ns", r->exposed_comm_ns);
        if (r->host_wait_ns >= 0)
            attr_int(f, "host-wait-ns", r->host_wait_ns);
        fprintf(f, "><td><a href=\"#rank-%d\">%d</a></td>", r->rank, r->rank);
        td_count(f, r->n_steps);
        td_dur(f, r->step_p50_ns);
        td_dur(f, r->step_p90_ns);
        td_dur(f, (double)r->span_ns);
        fprintf(f, "<td class=\"n\">%s</td>",
                tp_rf_pct_str(bp, sizeof bp, tp_rf_pct(r->busy_ns, r->span_ns)));
        td_dur(f, (double)r->compute_ns);
        if (r->comm_ns)
            td_dur(f, (double)r->exposed_comm_ns);
        else if (r->host_wait_ns >= 0) /* no device: the sampled waits, marked */
            fprintf(f,
                    "<td class=\"n\" title=\"no device: the step thread's time off a CPU in "
                    "its steps, data loading aside (sampled)\">%s*</td>",
                    tp_units_dur(bp, sizeof bp, (double)r->host_wait_ns));
        else
            fprintf(f, "<td class=\"n\">-</td>");
        fprintf(f, "</tr>\n");
    }
    fprintf(f, "</table>\n");
}

void tp_report_html_ranks(void *st, const tp_an_ranks *x) {
    html_state *h = st;
    FILE *f = h->f;
    char b[32];
    fprintf(f, "<section id=\"cross-rank\"");
    attr_num(f, "median-step-p50-ns", x->median_step_p50_ns);
    fprintf(f, ">\n<h2>Ranks compared <span class=\"sub\">median step over ranks %s</span></h2>\n",
            tp_units_dur(b, sizeof b, x->median_step_p50_ns));
    ranks_chart(f, x);
    ranks_table(f, x);
    fprintf(f, "<h3>Cross-rank findings</h3>\n");
    if (!x->n_findings)
        fprintf(f, "<p>%s</p>\n", tp_an_ranks_quiet(x));
    fprintf(f, "<ol class=\"findings xr\">\n");
    for (size_t i = 0; i < x->n_findings; i++)
        finding_li(f, x->f[i].id, x->f[i].severity, x->f[i].title, x->f[i].evidence, "",
                   x->f[i].advice, x->f[i].rank);
    fprintf(f, "</ol>\n</section>\n");
}

void tp_report_html_rank(void *st, const tp_rank_analysis *rr, const tp_report_opts *o) {
    html_state *h = st;
    FILE *f = h->f;
    const tp_rank *r = rr->v.r;
    fprintf(f, "<section class=\"rank\" id=\"rank-%d\"", rr->v.rank);
    attr_int(f, "rank", rr->v.rank);
    attr_int(f, "has-gpu", rr->t.has_gpu);
    fprintf(f, ">\n<h2>Rank %d <span class=\"sub\">", rr->v.rank);
    tp_rh_text(f, r->file ? r->file : "-");
    fprintf(f, " (%s, %zu events, %zu %s)%s</span></h2>\n", tp_devtype_name(r->device_type),
            rr->v.n, rr->v.n_gpu,
            r->device_type == TP_DEVTYPE_CPU_DEVICE ? "device ops" : "GPU events",
            rr->v.trimmed ? " [last profiler step trimmed]" : "");
    for (size_t i = 0; i < sizeof html_sections / sizeof html_sections[0]; i++)
        if (tp_report_section_shown(html_sections[i].when, rr))
            html_sections[i].fn(f, rr, o);
    fprintf(f, "</section>\n");
}

void tp_report_html_close(void *st, const tp_an_ranks *x) {
    (void)x;
    html_state *h = st;
    fprintf(h->f, "<footer class=\"sub\"><p>Written by trainprof report --format html: one "
                  "file, no script, nothing loaded from elsewhere.</p></footer>\n"
                  "</body></html>\n");
    free(h);
}
