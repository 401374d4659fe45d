/* tp_report_ranks: see tp_report_ranks.h. */
#include "tp_report_ranks.h"

#include <math.h>

#include "tp_diagnose.h"
#include "tp_report_fmt.h"
#include "tp_text.h"
#include "tp_units.h"

#define NONE "           -" /* an empty 12-column cell */

static const char *bytes_cell(char *b, size_t n, int64_t v) {
    char s[32];
    if (v < 0)
        return NONE;
    snprintf(b, n, "%12s", tp_units_bytes(s, sizeof s, (double)v));
    return b;
}

static void text_row(FILE *f, const tp_an_rank_row *r) {
    char b[10][32];
    fprintf(f, "  %6d %7zu %s %s %s %9s %s %s %s %s %s\n", r->rank, r->n_steps,
            r->n_steps ? tp_rf_time(b[1], 32, r->step_p50_ns) : NONE,
            r->n_steps ? tp_rf_time(b[2], 32, r->step_p90_ns) : NONE,
            tp_rf_time(b[3], 32, (double)r->span_ns),
            tp_rf_pct_str(b[4], 32, tp_rf_pct(r->busy_ns, r->span_ns)),
            tp_rf_time(b[5], 32, (double)r->compute_ns),
            r->comm_ns ? tp_rf_time(b[6], 32, (double)r->exposed_comm_ns) : NONE,
            r->comm_ns ? tp_rf_time(b[7], 32, (double)(r->comm_ns - r->exposed_comm_ns)) : NONE,
            bytes_cell(b[8], 32, r->mem_peak_bytes), tp_rf_time(b[9], 32, (double)r->data_wait_ns));
}

void tp_report_ranks_text(FILE *f, const tp_an_ranks *x) {
    char b1[32], b2[32];
    fprintf(f, "Ranks\n  %6s %7s %12s %12s %12s %9s %12s %12s %12s %12s %12s\n", "rank", "steps",
            "step p50", "step p90", "GPU span", "util", "compute", "exposed comm", "overlapped",
            "memory peak", "data wait");
    for (size_t i = 0; i < x->n; i++)
        text_row(f, &x->r[i]);
    /* ranks without a device, sampled: their waits stand for the exposed communication */
    size_t n_host = 0;
    for (size_t i = 0; i < x->n; i++) {
        const tp_an_rank_row *r = &x->r[i];
        if (!tp_an_rank_host_waits(r) || !r->n_steps)
            continue;
        fprintf(f, "%s rank %d %s",
                n_host++ ? ","
                         : "  waits per step (no device: the step thread sampled off a CPU in its "
                           "steps, data loading aside):",
                r->rank, tp_units_dur(b1, sizeof b1, (double)r->host_wait_ns / (double)r->n_steps));
    }
    if (n_host)
        fprintf(f, "\n");
    fprintf(f, "  median step over ranks %s", tp_units_dur(b1, sizeof b1, x->median_step_p50_ns));
    if (!isnan(x->median_mem_peak))
        fprintf(f, ", median memory peak %s", tp_units_bytes(b2, sizeof b2, x->median_mem_peak));
    fprintf(f, "\n\nCross-rank findings\n");
    if (!x->n_findings)
        fprintf(f, "  %s\n", tp_an_ranks_quiet(x));
    for (size_t i = 0; i < x->n_findings; i++) {
        const tp_an_rank_finding *g = &x->f[i];
        fprintf(f, "  %zu. [%-6s %3.0f%%] ", i + 1, tp_diag_level(g->severity), 100 * g->severity);
        tp_text_fputs(g->title, f);
        fputc('\n', f);
        tp_rf_wrapped(f, "evidence:", g->evidence);
        tp_rf_wrapped(f, "fix:     ", g->advice);
    }
    fprintf(f, "\n");
}

void tp_report_ranks_json_row(yajl_gen g, const tp_an_rank_row *r) {
    yajl_gen_map_open(g);
    tp_rj_int(g, "rank", r->rank);
    tp_rj_int(g, "steps", (long long)r->n_steps);
    tp_rj_num(g, "step_p50_ns", r->step_p50_ns);
    tp_rj_num(g, "step_p90_ns", r->step_p90_ns);
    tp_rj_num(g, "own_p50_ns", r->own_p50_ns);
    tp_rj_int(g, "span_ns", r->span_ns);
    tp_rj_int(g, "busy_ns", r->busy_ns);
    tp_rj_int(g, "compute_ns", r->compute_ns);
    tp_rj_int(g, "comm_ns", r->comm_ns);
    tp_rj_int(g, "exposed_comm_ns", r->exposed_comm_ns);
    tp_rj_int(g, "overlapped_comm_ns", r->comm_ns - r->exposed_comm_ns);
    tp_rj_int(g, "mem_peak_bytes", r->mem_peak_bytes);
    tp_rj_int(g, "data_wait_ns", r->data_wait_ns);
    if (r->host_wait_ns >= 0) /* measured: a rank without device, sampled */
        tp_rj_int(g, "host_wait_ns", r->host_wait_ns);
    if (!isnan(r->cpu_demand)) { /* sampled */
        tp_rj_num(g, "cpu_demand", r->cpu_demand);
        tp_rj_kv(g, "host", r->host);
        tp_rj_int(g, "cores", r->cores);
        tp_rj_num(g, "cpus", r->cpus);
    }
    yajl_gen_map_close(g);
}

static void json_finding(yajl_gen g, const tp_an_rank_finding *f) {
    yajl_gen_map_open(g);
    tp_rj_kv(g, "id", f->id);
    tp_rj_num(g, "severity", f->severity);
    tp_rj_kv(g, "level", tp_diag_level(f->severity));
    tp_rj_int(g, "rank", f->rank);
    tp_rj_kv(g, "title", f->title);
    tp_rj_kv(g, "evidence", f->evidence);
    tp_rj_kv(g, "advice", f->advice);
    yajl_gen_map_close(g);
}

void tp_report_ranks_json(yajl_gen g, const tp_an_ranks *x) {
    tp_rj_str(g, "cross_rank");
    yajl_gen_map_open(g);
    tp_rj_num(g, "median_step_p50_ns", x->median_step_p50_ns);
    tp_rj_num(g, "median_own_p50_ns", x->median_own_p50_ns);
    tp_rj_num(g, "median_mem_peak_bytes", x->median_mem_peak);
    tp_rj_str(g, "ranks");
    yajl_gen_array_open(g);
    for (size_t i = 0; i < x->n; i++)
        tp_report_ranks_json_row(g, &x->r[i]);
    yajl_gen_array_close(g);
    tp_rj_str(g, "findings");
    yajl_gen_array_open(g);
    for (size_t i = 0; i < x->n_findings; i++)
        json_finding(g, &x->f[i]);
    yajl_gen_array_close(g);
    yajl_gen_map_close(g);
}

/* The row alone carries no own_p50 (the merge derives it with the other ranks' medians, as
 * tp_an_ranks_judge does for the report): judging a one-row set gives it. */
void tp_report_ranks_json_section(yajl_gen g, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    tp_an_ranks one = {0};
    tp_an_rank_row row;
    tp_an_rank_row_fill(&row, rr);
    tp_an_ranks_add(&one, &row);
    tp_an_ranks_judge(&one);
    tp_rj_str(g, "cross_rank_row");
    tp_report_ranks_json_row(g, &one.r[0]);
    tp_an_ranks_free(&one);
}
