/* tp_tui_grid: a character canvas that every view draws into.
 *
 * The views never call ncurses: they draw into a grid of cells (one UTF-8 character and an
 * attribute each), and then either the terminal front end copies the grid to the screen or
 * the headless --snapshot mode prints it as text. So a snapshot is exactly what the screen
 * shows, minus colors. A wide (2-column) character takes its cell and marks the next one as
 * its continuation. Writes outside the grid are clipped, never an error. */
#ifndef TP_TUI_GRID_H
#define TP_TUI_GRID_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    TP_TUI_A_NORMAL = 0,
    TP_TUI_A_TITLE,  /* title and help bars */
    TP_TUI_A_HEADER, /* table headers, section titles */
    TP_TUI_A_SELECT, /* the selected table row / lane label */
    TP_TUI_A_CURSOR, /* the timeline cursor cell */
    TP_TUI_A_BUSY,   /* timeline busy glyphs */
    TP_TUI_A_KEY,    /* key names in the help bar */
    TP_TUI_A_WARN,   /* "terminal too small", errors */
    TP_TUI_A_COUNT
} tp_tui_attr;

typedef struct {
    char ch[16];  /* one character and any combining marks, UTF-8, NUL-terminated */
    uint8_t attr; /* tp_tui_attr */
    uint8_t cont; /* 1: right half of the wide character in the cell before */
} tp_tui_cell;

typedef struct {
    int w, h;
    tp_tui_cell *c; /* h rows of w cells */
} tp_tui_grid;

/* Allocates a w x h grid of blanks (aborts on out of memory, TUI policy). */
void tp_tui_grid_init(tp_tui_grid *g, int w, int h);
void tp_tui_grid_free(tp_tui_grid *g);

/* Blanks row y with attribute a (the whole row, for bars). */
void tp_tui_grid_fill(tp_tui_grid *g, int y, tp_tui_attr a);

/* Writes s at (x, y) in at most `cols` columns (and the grid's edge), truncated with "…".
 * Returns the columns written. */
int tp_tui_grid_put(tp_tui_grid *g, int x, int y, const char *s, int cols, tp_tui_attr a);

/* Writes `n` copies of `glyph`, one display column each, from (x, y), clipped at the edge:
 * the fast path for the timeline's bars and rules (the caller promises one column of valid
 * UTF-8, such as the layout's glyphs; nothing is measured). */
void tp_tui_grid_glyphs(tp_tui_grid *g, int x, int y, const char *glyph, int n, tp_tui_attr a);

/* printf-style tp_tui_grid_put. */
int tp_tui_grid_printf(tp_tui_grid *g, int x, int y, int cols, tp_tui_attr a, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* Sets the attribute of cells [x0, x1) of row y. */
void tp_tui_grid_attr(tp_tui_grid *g, int y, int x0, int x1, tp_tui_attr a);

/* The text of row y as UTF-8 into out (cap bytes), trailing blanks removed when trim.
 * Returns the bytes written (out is NUL-terminated). */
size_t tp_tui_grid_row(const tp_tui_grid *g, int y, char *out, size_t cap, int trim);

#endif
