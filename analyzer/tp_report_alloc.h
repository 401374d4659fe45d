/* tp_report_alloc: the report's device-memory section, who holds the memory (text and JSON),
 * from the rank's tp_an_memuse (TP_RA_MEMUSE): the peak, allocated and reserved per step,
 * the top holders at the peak and at the first failed allocation, and each segment's
 * fragmentation. Printed only for a rank with memory events or a failed allocation (the
 * JSON key `memory_use` likewise, docs/report-schema.md). Private to analyzer/: rows of
 * tp_report.c's section tables. */
#ifndef TP_REPORT_ALLOC_H
#define TP_REPORT_ALLOC_H

#include "tp_report_section.h"

void tp_report_alloc_text(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o);
void tp_report_alloc_json(yajl_gen g, const tp_rank_analysis *rr, const tp_report_opts *o);

#endif
