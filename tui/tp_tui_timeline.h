/* tp_tui_timeline: the Timeline view: one row per GPU stream and per CPU thread, time on x.
 *
 * Each lane cell shows how busy the lane was during the cell's time (eighth blocks, from
 * tp_tui_busy_cells). A cursor (a cell on the selected lane) names the op under it: name,
 * start, duration, stream or thread, correlation, the CPU call that launched it and the
 * NVTX range around that call. + and - zoom around the cursor; PgUp/PgDn pan by half a
 * window; the cursor pushes the window when it reaches an edge; n / p jump to the next /
 * previous op on the lane. Times on screen are relative to the rank's first event. Another
 * view can ask it to show a model row (show_row): the row's lane is selected and the window
 * zoomed around the row, with the cursor on its start. */
#ifndef TP_TUI_TIMELINE_H
#define TP_TUI_TIMELINE_H

#include "tp_tui_data.h"
#include "tp_tui_layout.h"
#include "tp_tui_panel.h"

typedef struct {
    tp_tui_panel super;
    const tp_tui_data *d;
    tp_tui_window win; /* win.width follows the plot width at each draw */
    int cursor;        /* cell in the plot */
    size_t lane, lane_top;
    int placed;  /* the initial window/cursor has been set for a plot width */
    long target; /* model row to show at the next draw (show_row); -1: none */
    long pinned; /* row the info lines name (the one shown by show_row) until a key; -1 */
    double *frac;
    uint32_t *touched;
    int cap;
} tp_tui_timeline;

/* A new Timeline panel over d (which must outlive it). */
tp_tui_panel *tp_tui_timeline_new(const tp_tui_data *d);

/* The time range [*a, *b) under the cursor. */
void tp_tui_timeline_cursor_span(const tp_tui_timeline *tl, int64_t *a, int64_t *b);

#endif
