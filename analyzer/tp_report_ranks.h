/* tp_report_ranks: the cross-rank section rendered (tp_an_ranks), text and JSON, and the
 * per-rank summary row that `report --format json` writes into each rank ("cross_rank_row")
 * for `trainprof merge` to read back. `report` and `merge` print the section through these
 * functions only, so the same rows give the same section, byte for byte. Private to
 * analyzer/ (the merge and the report). */
#ifndef TP_REPORT_RANKS_H
#define TP_REPORT_RANKS_H

#include <stdio.h>
#include <yajl/yajl_gen.h>

#include "tp_an_ranks.h"
#include "tp_rank_analysis.h"
#include "tp_report.h"

/* The `Ranks` table and `Cross-rank findings`, followed by an empty line. */
void tp_report_ranks_text(FILE *f, const tp_an_ranks *x);

/* "cross_rank": {medians, ranks[], findings[]} (a key and its object, in an open map). */
void tp_report_ranks_json(yajl_gen g, const tp_an_ranks *x);

/* One row as a JSON object (the entries of cross_rank.ranks[] and each rank's
 * cross_rank_row). */
void tp_report_ranks_json_row(yajl_gen g, const tp_an_rank_row *r);

/* The per-rank section "cross_rank_row": rank analysis `rr`'s row (tp_an_rank_row_fill), a
 * row of tp_report.c's JSON section table. */
void tp_report_ranks_json_section(yajl_gen g, const tp_rank_analysis *rr, const tp_report_opts *o);

#endif
