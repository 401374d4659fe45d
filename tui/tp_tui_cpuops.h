/* tp_tui_cpuops: the CPU ops view (--view cpuops): the CPU-operator table of the report
 * (tp_an_cpuops: framework ops and annotation ranges with count, self, self %, total, mean,
 * the input shapes when the TUI was asked to group by them, and a backward op's forward op),
 * as a sortable, searchable table; s sorts by the next column, / searches. */
#ifndef TP_TUI_CPUOPS_H
#define TP_TUI_CPUOPS_H

#include "tp_tui_data.h"
#include "tp_tui_panel.h"

/* A new CPU ops panel over d (which must outlive it; d's analyses include TP_RA_CPUOPS). */
tp_tui_panel *tp_tui_cpuops_new(tp_tui_data *d);

#endif
