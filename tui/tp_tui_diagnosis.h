/* tp_tui_diagnosis: the Diagnosis view: the rank's findings, most severe first, as the
 * report's diagnosis shows them (level, severity, title, evidence, source, fix), from the
 * same tp_diagnosis the report renders, each with where its evidence is.
 *
 * Up/Down select a finding (the list scrolls to keep it whole on screen when it fits).
 * Enter jumps to the finding's evidence: the range its source names, in Ranges, when that
 * range is an annotation the Ranges view lists; else the op it points at (the longest sync
 * or copy call), or that range, on the Timeline. t always goes to the Timeline. */
#ifndef TP_TUI_DIAGNOSIS_H
#define TP_TUI_DIAGNOSIS_H

#include "tp_tui_data.h"
#include "tp_tui_panel.h"

/* Where a finding's evidence is shown: a view (--view name) and the model row to show
 * there. view NULL: the finding has no evidence to show. */
typedef struct {
    const char *view;
    long row;
} tp_tui_evidence;

/* Where Enter (timeline == 0) or t (timeline == 1) on finding `i` of d's diagnosis goes. */
tp_tui_evidence tp_tui_diagnosis_target(const tp_tui_data *d, size_t i, int timeline);

/* A new Diagnosis panel over d (which must outlive it). */
tp_tui_panel *tp_tui_diagnosis_new(const tp_tui_data *d);

#endif
