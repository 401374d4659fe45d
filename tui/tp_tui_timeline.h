/* tp_tui_timeline: the Timeline view, as Nsight Systems and the Perfetto UI draw one.
 *
 * Lanes: the GPU streams first (under a header per device), then the threads of each process
 * (under a header "pid N name (role)", the main process first, then its workers), each lane
 * labelled with its name and tid (or stream id). A lane has one row per nesting level
 * (tp_tui_rows): NVTX ranges, CPU ops, Python functions and API calls on a thread, kernels
 * and copies on a stream, each drawn as a bar with its name where it fits (cut with "…"), a
 * glyph where it does not; `c` collapses a lane into one row of busy glyphs (eighth blocks).
 *
 * Selection: one event is selected (the "sel" row). Up/Down move between the levels of a
 * lane and on to the next lane, selecting the event at the same time; n/p select the next /
 * previous event at the selected level; Enter follows the flow between a kernel (or copy)
 * and the API call that launched it. Zoom (+/-) keeps the selection centered; pan (Left /
 * Right, PgUp / PgDn, Home / End) keeps it selected. The detail pane under the lanes names
 * the selected event (start, duration, thread or stream, correlation), its launch call and
 * range, and the stacks of the launch call and of the range's push, symbolized.
 *
 * Find: `/` text Enter selects the next event whose name contains the text; N the next
 * again. Windows of time: m marks a start, a second m an end; w takes the step around the
 * selection (its outermost NVTX range); [ / ] move to the previous / next step; the detail
 * pane then shows the window's statistics (tp_tui_wstats), i switches back to the event,
 * Esc clears it. Another view can ask it to show a model row (show_row): the row is
 * selected and the window zoomed around it. Times on screen are relative to the rank's first
 * event. */
#ifndef TP_TUI_TIMELINE_H
#define TP_TUI_TIMELINE_H

#include "tp_tui_data.h"
#include "tp_tui_layout.h"
#include "tp_tui_panel.h"
#include "tp_tui_stack.h"
#include "tp_tui_wstats.h"

/* One row of the lane area: a group header, one level of a lane, a collapsed lane, or a sampled
 * thread's CPU share. */
typedef struct {
    int lane;  /* -1: a header */
    int level; /* the level shown; -1: the collapsed lane (all levels as busy glyphs);
                  TP_TUI_ROW_CPU: the thread's CPU share from its samples (never focused) */
    int64_t group;
} tp_tui_tlrow;

#define TP_TUI_ROW_CPU (-2)

typedef struct {
    tp_tui_panel super;
    const tp_tui_data *d;
    tp_tui_window win; /* win.width follows the plot width at each draw */
    size_t lane;       /* the focused lane and level */
    int level;
    long sel;           /* the selected model row; -1: none */
    int64_t anchor;     /* time of interest when nothing is selected */
    int top;            /* first lane-area row shown */
    int placed;         /* the initial window has been set for a plot width */
    long target;        /* model row to show at the next draw (show_row); -1: none */
    uint8_t *collapsed; /* per lane */
    tp_tui_tlrow *rows;
    int n_rows, rows_cap;
    int64_t mark; /* a window's start marked with m; -1: none */
    tp_tui_wstats ws;
    int show_stats; /* the detail pane shows the window's statistics */
    tp_tui_stacks *stacks;
    double *frac;
    uint32_t *touched;
    int cap;
} tp_tui_timeline;

/* A new Timeline panel over d (which must outlive it). */
tp_tui_panel *tp_tui_timeline_new(const tp_tui_data *d);

/* The selected model row (-1: none), for tests and other views. */
long tp_tui_timeline_selected(const tp_tui_timeline *tl);

#endif
