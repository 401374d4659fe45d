/* tp_tui_layout: the TUI's arithmetic, kept apart from drawing so it can be unit-tested.
 *
 * Everything here is pure: no globals, no I/O, no locale. It covers
 *   - the timeline window: which nanoseconds each screen cell shows, zoom and pan;
 *   - the per-cell "busy fraction" of a lane (union of its intervals, so nested CPU ranges
 *     are not counted twice) and the eighth-block glyph that draws it;
 *   - UTF-8 display width, truncation with "…" (names are user text: any bytes) and word
 *     wrapping;
 *   - the screen split (title, body, help bar) and the "terminal too small" rule;
 *   - human units for durations. */
#ifndef TP_TUI_LAYOUT_H
#define TP_TUI_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

/* A time window drawn over `width` cells: cell c shows [cell_start(c), cell_start(c + 1)).
 * Invariants (tp_tui_window_make keeps them): width >= 1 and span >= width (every cell at
 * least 1 ns, so no cell is empty). */
typedef struct {
    int64_t t0;   /* ns at the left edge */
    int64_t span; /* ns across all cells */
    int width;    /* cells */
} tp_tui_window;

/* A window of `width` cells over [t0, t0 + span), span raised to width when smaller. */
tp_tui_window tp_tui_window_make(int64_t t0, int64_t span, int width);

/* First ns of cell `cell` (0 <= cell <= width; cell == width gives the window's end):
 * t0 + floor(span * cell / width), exact for any int64 span. */
int64_t tp_tui_cell_start(const tp_tui_window *w, int cell);

/* Cell showing time `t`: floor((t - t0) * width / span). May be < 0 or >= width when `t`
 * is outside the window; the result is clamped to [-1, width]. */
int tp_tui_time_cell(const tp_tui_window *w, int64_t t);

/* Zooms by 2x (in > 0: half the span; else double) keeping the time under cell `anchor` at
 * that cell; the span stays within [width, max_span]. */
tp_tui_window tp_tui_zoom(const tp_tui_window *w, int anchor, int in, int64_t max_span);

/* Moves the window so it stays inside [lo, hi] where it can (a window wider than the
 * range starts at lo). */
tp_tui_window tp_tui_clamp(const tp_tui_window *w, int64_t lo, int64_t hi);

/* Per-cell busy fraction of the intervals [ts[r], ts[r] + dur[r]) for r in rows[0..n)
 * (rows sorted by ts; rows == NULL means 0..n-1). Overlapping intervals count once.
 * frac[c] = covered ns of cell c / ns of cell c, in [0, 1]. touched[c] (when non-NULL) is
 * the number of intervals overlapping cell c (a zero-length one counts in the cell of its
 * ts), so ops too short to cover a visible fraction stay visible. */
void tp_tui_busy_cells(const tp_tui_window *w, const int64_t *ts, const int64_t *dur,
                       const uint32_t *rows, size_t n, double *frac, uint32_t *touched);

/* Eighth-block level 0..8 for a busy fraction: 0 for an empty cell, at least 1 when the
 * cell is touched or frac > 0, ceil(frac * 8) otherwise. */
int tp_tui_busy_level(double frac, uint32_t touched);

/* " ", "▁".."█" for levels 0..8 (UTF-8), or " .:-=+*#@" when ascii. */
const char *tp_tui_busy_glyph(int level, int ascii);

/* Decodes one UTF-8 code point at s (n bytes available). Returns the bytes used (>= 1) and
 * sets *cp; invalid or truncated sequences give 1 byte and cp = 0xFFFD. */
int tp_tui_utf8_next(const char *s, size_t n, uint32_t *cp);

/* Display columns of a code point: 0 for combining marks and zero-width characters, 2 for
 * East Asian wide and emoji, 1 otherwise (controls count 1: they are drawn as '?'). */
int tp_tui_cp_width(uint32_t cp);

/* Display columns of the UTF-8 string s. */
int tp_tui_str_width(const char *s);

/* Copies s into out (cap bytes) cut to at most `cols` display columns; when it had to cut,
 * the last column is "…". Control characters and invalid bytes become '?'. Returns the
 * columns written. out is always NUL-terminated (cap >= 1). */
int tp_tui_fit(char *out, size_t cap, const char *s, int cols);

/* Word wrap: the length in bytes of the line that starts at `s` in `cols` display columns
 * (words kept whole, with the spaces between them; a word longer than a line is cut at a
 * character boundary); *next is set to where the next line starts (the spaces after the line
 * skipped; at the NUL at the end). A line holds at least one character when any is left. */
size_t tp_tui_wrap(const char *s, int cols, const char **next);

/* Screen split. Too small (ok == 0) below TP_TUI_MIN_W x TP_TUI_MIN_H. */
#define TP_TUI_MIN_W 40
#define TP_TUI_MIN_H 10

typedef struct {
    int ok;
    int w, h;
    int title_row; /* 0 */
    int body_top;  /* 1 */
    int body_h;    /* rows between the title and the help bar */
    int help_row;  /* h - 1 */
} tp_tui_screen;

tp_tui_screen tp_tui_screen_split(int w, int h);

/* Timeline split of a body `w` columns wide: the lane label column and the plot width. */
typedef struct {
    int label_w; /* includes the one-column gap after the label */
    int plot_w;
} tp_tui_timeline_cols;

tp_tui_timeline_cols tp_tui_timeline_split(int w);

/* Rows to scroll so that `sel` (0..n-1) is visible in `vis` rows starting at `top`. */
int tp_tui_scroll_to(int top, int sel, int vis, int n);

/* Width of a table's first (name) column: what `w` leaves after the fixed columns (each
 * followed by one space), at least min_w. */
int tp_tui_name_width(int w, const int *fixed, int n_fixed, int min_w);

#endif
