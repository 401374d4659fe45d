/* tp_report_samples: the report's "CPU time by line (sampled)" section (tp_an_samples), text
 * and JSON, rows of tp_report.c's section tables; only for a rank with samples (a trace
 * recorded with `trainprof record --sample`). Private to analyzer/. */
#ifndef TP_REPORT_SAMPLES_H
#define TP_REPORT_SAMPLES_H

#include "tp_report_section.h"

/* Text: the sampled threads, then the o->top rows by CPU time with their frames, then the
 * rows where threads waited most (wall time off a CPU), when that is a tenth of the wall. */
void tp_report_samples_text(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o);

/* JSON: "cpu_samples" (docs/report-schema.md), every thread and row. */
void tp_report_samples_json(yajl_gen g, const tp_rank_analysis *rr, const tp_report_opts *o);

#endif
