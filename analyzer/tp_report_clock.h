/* tp_report_clock: the report's "clock" section of a rank in a job of several: how its
 * times were put on the job clock and the offset estimated to be left (model/tp_align), text
 * and JSON, rows of tp_report.c's section tables. Private to analyzer/. */
#ifndef TP_REPORT_CLOCK_H
#define TP_REPORT_CLOCK_H

#include "tp_report_section.h"

/* Text: "Clock" with the shift, its source and the residual; nothing for a job of one rank. */
void tp_report_clock_text(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o);

/* JSON: "clock" (docs/report-schema.md); absent for a job of one rank. */
void tp_report_clock_json(yajl_gen g, const tp_rank_analysis *rr, const tp_report_opts *o);

#endif
