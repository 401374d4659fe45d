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

/* The host window's parts in the order every front end shows them (the report's text and HTML,
 * the TUI's Summary): data loading, framework ops outside it, other work inside recorded
 * ranges, and the time with no range open (between steps, where there are steps); their
 * labels into `label`, their times into `part`. They add up to the window. */
#define TP_REPORT_HOST_PARTS 4

/* The heading of those parts ("Step time on the host (16 steps, 101.17 ms from the first start
 * to the last end)", or the CPU span's without steps) into buf; returns buf. */
const char *tp_report_host_heading(const tp_an_host *h, char *buf, size_t n);
void tp_report_host_parts(const tp_an_host *h, const char *label[TP_REPORT_HOST_PARTS],
                          int64_t part[TP_REPORT_HOST_PARTS]);

/* The rule ids a rank without device activity cannot be judged by, ", "-separated, into buf. */
const char *tp_report_host_not_judged(char *buf, size_t n);

/* The two lines a diagnosis of a rank without device activity starts with, one wording for
 * the report (text, HTML) and the TUI: what it is judged from ("no device activity: judged
 * from the host's steps", or "every device record was dropped: ..."), into `basis`, and the
 * rules it cannot run ("not judged without device activity: input-bound, ..."), into
 * `not_judged`. Returns 0, both "", for a rank with device activity. */
int tp_report_host_basis(const tp_rank_analysis *rr, char *basis, size_t nb, char *not_judged,
                         size_t nn);

#endif
