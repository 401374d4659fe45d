/* tp_report_host: the report's host sections (tp_an_host): the steps and what filled them, and
 * the threads, in text for ranks without device activity (a GPU rank's report is about its
 * device) and in JSON for every rank. Private to analyzer/. */
#ifndef TP_REPORT_HOST_H
#define TP_REPORT_HOST_H

#include "tp_report_section.h"

/* "Step time on the host": the steps' window split into data loading, framework ops and the
 * rest (their count and lengths are the report's "Steps" line). */
void tp_report_host_steps_text(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o);

/* "Threads": the busiest threads (top N), events and busy time. */
void tp_report_host_threads_text(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o);

/* "host": {"n_steps", "window_ns", "data_ns", "ops_ns", "n_ops", "data_range",
 * "threads": [...], "not_judged": [rule ids needing a device, when the rank has none]}. */
void tp_report_host_json(yajl_gen g, const tp_rank_analysis *rr, const tp_report_opts *o);

/* The rule ids a rank without device activity cannot be judged by, ", "-separated, into buf. */
const char *tp_report_host_not_judged(char *buf, size_t n);

#endif
