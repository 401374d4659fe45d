/* tp_tui_table: a sortable, searchable table panel (kernels, ranges, copies).
 *
 * The table owns its cell texts (formatted once when the data is loaded) and one numeric
 * sort key per cell; the name column (column 0) sorts by text. Showing a table is a
 * permutation of its rows: the rows whose name contains the search text (case-insensitive),
 * in the order of the sort column (numbers descending, names ascending, ties by row). The
 * selected row and scroll offset are kept inside the shown rows. */
#ifndef TP_TUI_TABLE_H
#define TP_TUI_TABLE_H

#include <stddef.h>

#include "tp_tui_grid.h"

#define TP_TUI_MAX_COLS 10

typedef struct {
    const char *title;
    int width; /* columns; 0 for the flexible name column */
    int right; /* right-aligned */
} tp_tui_col;

typedef struct {
    int ncols;
    tp_tui_col cols[TP_TUI_MAX_COLS];
    size_t nrows, cap;
    char **text;   /* nrows * ncols strings, owned */
    double *key;   /* nrows * ncols numeric sort keys */
    size_t *shown; /* the rows on screen, in order */
    size_t nshown;
    int sort_col;
    size_t sel, top; /* positions in shown */
    char search[64];
    const char *empty; /* what to say when there are no rows (static string) */
    char *notes[8];    /* lines shown under the table (owned) */
    int n_notes;
} tp_tui_table;

/* Sets up an empty table with `ncols` columns (copied) sorted by `sort_col`. */
void tp_tui_table_init(tp_tui_table *t, const tp_tui_col *cols, int ncols, int sort_col);
void tp_tui_table_free(tp_tui_table *t);

/* Appends a row: ncols texts (copied) and ncols keys (keys[0] is ignored). */
void tp_tui_table_add(tp_tui_table *t, const char *const *text, const double *keys);

/* Adds a line shown under the table (copied; at most 8, the rest are dropped). */
void tp_tui_table_note(tp_tui_table *t, const char *line);

/* Re-sorts and re-filters after rows were added or the sort column / search changed. */
void tp_tui_table_refresh(tp_tui_table *t);

/* Sorts by the next column (wrapping), keeping the selected row selected. */
void tp_tui_table_next_sort(tp_tui_table *t);

/* Shows only rows whose name contains `s` ("" shows all); selects the first. */
void tp_tui_table_search(tp_tui_table *t, const char *s);

/* Clears the search and selects row `row` (numbered in the order rows were added); the next
 * draw scrolls it into view. An unknown row selects the first shown. */
void tp_tui_table_select(tp_tui_table *t, size_t row);

/* Moves the selection by `d` rows (clamped). */
void tp_tui_table_move(tp_tui_table *t, long d);

/* The table keys every table view shares: Up/Down, PgUp/PgDn (by `page` rows), Home/End
 * move the selection. Returns 1 when `k` was one of them, else 0 (the view's own key). */
int tp_tui_table_nav(tp_tui_table *t, int k, int page);

/* Text of shown row i, column c ("" when out of range). */
const char *tp_tui_table_cell(const tp_tui_table *t, size_t i, int c);

/* Draws the header and rows into rows [y, y + h) of g, the notes at the bottom when there
 * is room; the selected row is marked '>'. */
void tp_tui_table_draw(tp_tui_table *t, tp_tui_grid *g, int y, int h);

#endif
