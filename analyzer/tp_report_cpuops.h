/* tp_report_cpuops: the report's CPU operators section (tp_an_cpuops), text and JSON, as
 * rows of tp_report.c's section tables. Private to analyzer/. */
#ifndef TP_REPORT_CPUOPS_H
#define TP_REPORT_CPUOPS_H

#include "tp_report_section.h"

/* "CPU operators (...)": the top rows by self (or total) time; nothing when the rank has
 * neither framework ops nor annotation ranges. */
void tp_report_cpuops_text(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o);

/* "cpu_ops": {"group_by", "sort", "span_ns", "self_ns", "ops": [...]} with every row. */
void tp_report_cpuops_json(yajl_gen g, const tp_rank_analysis *rr, const tp_report_opts *o);

#endif
