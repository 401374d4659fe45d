/* tp_report_marks: the report's "NVTX marks" section (tp_an_marks), text and JSON, rows of
 * tp_report.c's section tables. Private to analyzer/. */
#ifndef TP_REPORT_MARKS_H
#define TP_REPORT_MARKS_H

#include "tp_report_section.h"

/* Text: the o->top most frequent marks; nothing when the rank has none. */
void tp_report_marks_text(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o);

/* JSON: "marks" (docs/report-schema.md), every (name, domain), in every rank. */
void tp_report_marks_json(yajl_gen g, const tp_rank_analysis *rr, const tp_report_opts *o);

#endif
