/* tp_report_stacks: the report's "GPU time by launching stack" section (tp_an_stacks), text
 * and JSON, rows of tp_report.c's section tables. Private to analyzer/. */
#ifndef TP_REPORT_STACKS_H
#define TP_REPORT_STACKS_H

#include "tp_an_stacks.h"
#include "tp_report_section.h"

/* Text: the o->top heaviest groups with their frames and kernels; nothing when no GPU op
 * was launched from a recorded stack (a trace recorded without --stacks). */
void tp_report_stacks_text(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o);

/* JSON: "launch_stacks" (docs/report-schema.md), every group, in every rank. */
void tp_report_stacks_json(yajl_gen g, const tp_rank_analysis *rr, const tp_report_opts *o);

/* "stack_id" and "frames" of a row as the JSON report writes them, each frame (label,
 * function, file, line, module, offset, python, inlined, library, skipped, symbols) as
 * launching stacks and CPU samples alike do. */
void tp_report_stacks_json_frames(yajl_gen g, uint32_t stack, const tp_an_frame *f, size_t n);

/* The rank's launching stacks, as every format reads them: those the analyses computed
 * (TP_RA_STACKS), else run into *own, which the caller frees (tp_an_stacks_free). */
const tp_an_stacks *tp_report_stacks_of(const tp_rank_analysis *rr, const tp_report_opts *o,
                                        tp_an_stacks *own);

#endif
