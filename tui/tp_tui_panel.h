/* tp_tui_panel: the base "class" of the TUI's views (htop's Panel, in C).
 *
 * A concrete panel embeds tp_tui_panel as its first member (`super`) and fills the
 * function pointers; the app keeps an array of tp_tui_panel * and never knows which kind it
 * holds. draw() paints rows [y, y + h) of the grid; key() handles a key and returns 1 when
 * it used it. A table panel also exposes its tp_tui_table so the app can route / and s.
 *
 * Views point at each other's content by model row: a panel that can show a row (the
 * Timeline: the op; Ranges: the range's name) has show_row; a key that should take the user
 * elsewhere (Enter on a finding) sets jump_view and jump_row, and the app switches to that
 * view and calls its show_row once the key is handled. */
#ifndef TP_TUI_PANEL_H
#define TP_TUI_PANEL_H

#include "tp_tui.h"
#include "tp_tui_grid.h"
#include "tp_tui_table.h"

typedef struct tp_tui_panel tp_tui_panel;

struct tp_tui_panel {
    const char *name;  /* "timeline": the --view name */
    const char *title; /* "Timeline": the title bar */
    const char *help;  /* this view's keys, for the help bar */
    void (*draw)(tp_tui_panel *p, tp_tui_grid *g, int y, int h);
    int (*key)(tp_tui_panel *p, int key, int page_rows);
    void (*destroy)(tp_tui_panel *p);
    void (*show_row)(tp_tui_panel *p, long row); /* NULL: cannot show a model row */
    tp_tui_table *table;                         /* NULL unless the panel is a table */
    int ascii;                                   /* draw with ASCII only */
    const char *jump_view; /* set by key(): show jump_row in this view (a --view name) */
    long jump_row;
};

#endif
