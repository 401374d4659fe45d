/* tp_report_html: the report as one self-contained HTML page (trainprof report --format html).
 *
 * The third renderer of the report (tp_report.c's renderer table), beside text and JSON, over
 * the same results: each rank's tp_rank_analysis and the job's tp_an_ranks. The page holds the
 * diagnosis (ranked findings with evidence, source and fix), a summary, the step time split
 * per step (tp_an_stepsplit: compute, exposed communication, copies, other, idle) as stacked
 * bars, the device's busy share over time, the memory timeline (allocated and reserved),
 * the kernel, annotation range, CPU operator and copy tables, GPU time by launching stack
 * (tp_report_stacks_of: the text report's groups), and, with several ranks, their
 * comparison; a rank without device activity shows its host step split and threads instead
 * of the device charts. Everything is inline (CSS and SVG; no script, no font, no link outside the
 * page), every trace string is escaped (tp_rh_text), and the size is bounded whatever the trace:
 * the tables keep the top rows (--top), the charts at most TP_RH_MAX_BARS bars and
 * TP_RH_SERIES_POINTS points, and the page says so where it cuts.
 *
 * The figures scripts may read are data-* attributes, with the JSON report's exact values
 * (docs/analyzer.md, "The HTML report", lists them): data-busy-ns, data-step-p50-ns, data-sum-ns,
 * data-finding-id, ... Private to analyzer/. */
#ifndef TP_REPORT_HTML_H
#define TP_REPORT_HTML_H

#include <stddef.h>
#include <stdio.h>

#include "tp_an_ranks.h"
#include "tp_rank_analysis.h"
#include "tp_report.h"

#define TP_RH_MAX_BARS 240      /* step bars; more steps: each bar the mean of a few */
#define TP_RH_SERIES_POINTS 480 /* memory timeline points (each the maximum of its slice) */
#define TP_RH_BUSY_BUCKETS 200  /* device utilization over time */

/* The renderer's entry points (tp_report_renderer): the page head, the cross-rank section,
 * one rank, the page end. open returns the state the others take; close frees it. */
void *tp_report_html_open(FILE *out, const tp_model *m, const tp_report_opts *o, size_t n_ranks);
void tp_report_html_ranks(void *st, const tp_an_ranks *x);
void tp_report_html_rank(void *st, const tp_rank_analysis *rr, const tp_report_opts *o);
void tp_report_html_close(void *st, const tp_an_ranks *x);

#endif
