/* tp_tui_tldetail: the Timeline's detail pane, under the lanes.
 *
 * For the selected event: its name, start, duration, stream or thread, correlation and
 * category; for a GPU op the call that launched it and the range around that call, for a
 * CPU row its range and what it launched; then the two stacks a user asks for first: the
 * launch call's and the range push's, symbolized (tp_tui_stack). With a window marked (and
 * not switched away with i), the window's statistics instead (tp_tui_wstats). Part of the
 * Timeline panel. */
#ifndef TP_TUI_TLDETAIL_H
#define TP_TUI_TLDETAIL_H

#include "tp_tui_timeline.h"

/* Draws the pane into rows [y, y + h) of g. */
void tp_tui_tl_detail(tp_tui_timeline *tl, tp_tui_grid *g, int y, int h);

/* "+1.23 ms": time t relative to the rank's first event, into buf. */
const char *tp_tui_tl_rel(char *buf, size_t n, const tp_tui_timeline *tl, int64_t t);

#endif
