/* tp_report_env: the Environment section of a rank's report (rows of tp_report.c's section
 * tables). Private to analyzer/. */
#ifndef TP_REPORT_ENV_H
#define TP_REPORT_ENV_H

#include "tp_report_section.h"

void tp_report_env_text(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o);
void tp_report_env_json(yajl_gen g, const tp_rank_analysis *rr, const tp_report_opts *o);

#endif
