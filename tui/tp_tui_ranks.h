/* tp_tui_ranks: the Ranks view: the job's ranks side by side and what no single rank shows
 * (tp_an_ranks, the report's "Ranks" and "Cross-rank findings" sections, the same rows and
 * rules), for the straggler hunt HTA and Nsight Systems' multi-report view serve.
 *
 * A table of the ranks (rank and the cross-rank findings naming it, steps, step p50 and p90,
 * device utilization, compute, exposed communication, memory peak, data wait), sortable and
 * searchable like the other tables (`/straggler` keeps the ranks a finding names); the shown
 * rank is selected at first. Under it the medians and the findings, each wrapped as the
 * report prints them, or the report's "nothing found" line. Enter opens the selected rank
 * (its Summary). With one rank the view says there is nothing to compare and how to load a
 * job. The comparison is computed once for the whole session (the app's TP_TUI_RANKS part):
 * switching ranks keeps it. */
#ifndef TP_TUI_RANKS_H
#define TP_TUI_RANKS_H

#include "tp_tui_data.h"
#include "tp_tui_panel.h"

/* A new Ranks panel over d, whose job (d->job) is computed; d must outlive it. */
tp_tui_panel *tp_tui_ranks_new(tp_tui_data *d);

#endif
