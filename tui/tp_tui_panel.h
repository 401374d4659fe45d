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
 * view and calls its show_row once the key is handled. A table view whose rows are names
 * (Kernels, Ranges, ...) sets jump_cats: Enter on a row then shows that name's longest
 * occurrence among rows of those categories on the Timeline, the next longest on the next
 * Enter (view -> name -> Timeline; tp_tui_data_nth_longest).
 *
 * Keys are documented once, in `keys` (most important first): the key bar shows those that
 * fit and `?` shows them all. */
#ifndef TP_TUI_PANEL_H
#define TP_TUI_PANEL_H

#include <stdint.h>

#include "tp_tui.h"
#include "tp_tui_grid.h"
#include "tp_tui_table.h"

typedef struct tp_tui_panel tp_tui_panel;

/* One key of a view, for the key bar and the `?` reference. */
typedef struct {
    const char *key;  /* "n/p" */
    const char *what; /* "next/prev at this level" */
} tp_tui_keydoc;

struct tp_tui_panel {
    const char *name;          /* "timeline": the --view name */
    const char *title;         /* "Timeline": the title bar */
    const char *help;          /* this view's keys as one line (when keys is NULL) */
    const tp_tui_keydoc *keys; /* this view's keys, most important first; NULL: see help */
    int n_keys;
    void (*draw)(tp_tui_panel *p, tp_tui_grid *g, int y, int h);
    int (*key)(tp_tui_panel *p, int key, int page_rows);
    void (*destroy)(tp_tui_panel *p);
    void (*show_row)(tp_tui_panel *p, long row); /* NULL: cannot show a model row */
    tp_tui_table *table;                         /* NULL unless the panel is a table */
    int ascii;                                   /* draw with ASCII only */
    const char *jump_view; /* set by key(): show jump_row in this view (a --view name) */
    long jump_row;
    size_t jump_rank; /* set by key(): open the model's rank of index jump_rank - 1 (its
                         Summary); 0: none */
    /* `/` on a view without a table: find(p, text, dir) selects the next (dir > 0) or
     * previous occurrence of text; NULL: `/` is ignored. find_kept is the text kept after
     * Enter (the key bar offers Esc to clear it). */
    void (*find)(tp_tui_panel *p, const char *text, int dir);
    char find_kept[64];
    /* table views: Enter shows the selected row's name on the Timeline among rows whose
     * category bit (1 << tp_cat) is in jump_cats; name_of gives the name of table row i
     * (as added); 0 / NULL: Enter does nothing. */
    unsigned jump_cats;
    uint32_t (*name_of)(const tp_tui_panel *p, size_t row);
};

#endif
