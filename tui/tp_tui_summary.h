/* tp_tui_summary: the Summary view: span, device utilization, idle and its split by cause
 * (host wait / kernel wait / other), compute, top kernels and top ranges, with the
 * analyzer's numbers and the report's units, so a number here can be found in
 * `trainprof report`. Up/Down/PgUp/PgDn/Home/End scroll when it does not fit. */
#ifndef TP_TUI_SUMMARY_H
#define TP_TUI_SUMMARY_H

#include "tp_tui_data.h"
#include "tp_tui_panel.h"

/* A new Summary panel over d (which must outlive it). */
tp_tui_panel *tp_tui_summary_new(const tp_tui_data *d);

#endif
