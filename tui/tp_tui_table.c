/* tp_tui_table: sortable, searchable table panel (see the header). */
#include "tp_tui_table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tp_mem.h"
#include "tp_tui.h"
#include "tp_tui_layout.h"

void tp_tui_table_init(tp_tui_table *t, const tp_tui_col *cols, int ncols, int sort_col) {
    memset(t, 0, sizeof *t);
    t->ncols = ncols > TP_TUI_MAX_COLS ? TP_TUI_MAX_COLS : ncols;
    memcpy(t->cols, cols, (size_t)t->ncols * sizeof *cols);
    t->sort_col = sort_col;
    t->empty = "(no rows)";
}

void tp_tui_table_free(tp_tui_table *t) {
    for (size_t i = 0; i < t->nrows * (size_t)t->ncols; i++)
        free(t->text[i]);
    free(t->text);
    free(t->key);
    free(t->shown);
    for (int i = 0; i < t->n_notes; i++)
        free(t->notes[i]);
    memset(t, 0, sizeof *t);
}

void tp_tui_table_add(tp_tui_table *t, const char *const *text, const double *keys) {
    size_t nc = (size_t)t->ncols;
    if (t->nrows == t->cap) {
        t->cap = tp_mem_next_cap(t->cap, t->nrows + 1); /* three arrays, one capacity */
        t->text = tp_mem_xrealloc(t->text, t->cap * nc, sizeof *t->text);
        t->key = tp_mem_xrealloc(t->key, t->cap * nc, sizeof *t->key);
        t->shown = tp_mem_xrealloc(t->shown, t->cap, sizeof *t->shown);
    }
    for (size_t c = 0; c < nc; c++) {
        t->text[t->nrows * nc + c] = strdup(text[c] ? text[c] : "");
        if (!t->text[t->nrows * nc + c])
            abort();
        t->key[t->nrows * nc + c] = keys ? keys[c] : 0;
    }
    t->nrows++;
}

void tp_tui_table_note(tp_tui_table *t, const char *line) {
    if (t->n_notes >= (int)(sizeof t->notes / sizeof t->notes[0]))
        return;
    t->notes[t->n_notes] = strdup(line);
    if (!t->notes[t->n_notes++])
        abort();
}

/* Order of two row numbers under the table's sort column (glibc qsort_r comparator). */
static int cmp_rows(const void *pa, const void *pb, void *ctx) {
    const tp_tui_table *t = ctx;
    size_t a = *(const size_t *)pa, b = *(const size_t *)pb, nc = (size_t)t->ncols;
    int c = t->sort_col, r = 0;
    if (c == 0) {
        r = strcmp(t->text[a * nc], t->text[b * nc]);
    } else {
        double x = t->key[a * nc + (size_t)c], y = t->key[b * nc + (size_t)c];
        r = (x < y) - (x > y);
    }
    return r ? r : (a > b) - (a < b);
}

static size_t selected_row(const tp_tui_table *t) {
    return t->sel < t->nshown ? t->shown[t->sel] : (size_t)-1;
}

/* Rebuilds `shown`, then selects `keep` (a row number) if it is still shown. */
static void rebuild(tp_tui_table *t, size_t keep) {
    t->nshown = 0;
    for (size_t r = 0; r < t->nrows; r++)
        if (!t->search[0] || strcasestr(t->text[r * (size_t)t->ncols], t->search))
            t->shown[t->nshown++] = r;
    if (t->nshown)
        qsort_r(t->shown, t->nshown, sizeof *t->shown, cmp_rows, t);
    t->sel = 0;
    for (size_t i = 0; i < t->nshown; i++)
        if (t->shown[i] == keep)
            t->sel = i;
    t->top = 0;
}

void tp_tui_table_refresh(tp_tui_table *t) {
    rebuild(t, selected_row(t));
}

void tp_tui_table_next_sort(tp_tui_table *t) {
    t->sort_col = (t->sort_col + 1) % (t->ncols ? t->ncols : 1);
    rebuild(t, selected_row(t));
}

void tp_tui_table_search(tp_tui_table *t, const char *s) {
    snprintf(t->search, sizeof t->search, "%s", s ? s : "");
    rebuild(t, (size_t)-1);
}

void tp_tui_table_select(tp_tui_table *t, size_t row) {
    t->search[0] = 0;
    rebuild(t, row);
}

void tp_tui_table_move(tp_tui_table *t, long d) {
    long s = (long)t->sel + d, last = (long)t->nshown - 1;
    t->sel = (size_t)(s > last ? last : s < 0 ? 0 : s);
    if (t->nshown == 0)
        t->sel = 0;
}

const char *tp_tui_table_cell(const tp_tui_table *t, size_t i, int c) {
    if (i >= t->nshown || c < 0 || c >= t->ncols)
        return "";
    return t->text[t->shown[i] * (size_t)t->ncols + (size_t)c];
}

/* Writes `s` into a column of width w at x, right-aligned when asked. */
static void put_col(tp_tui_grid *g, int x, int y, int w, int right, const char *s, tp_tui_attr a) {
    int sw = tp_tui_str_width(s);
    tp_tui_grid_put(g, right && sw < w ? x + w - sw : x, y, s, right && sw < w ? sw : w, a);
}

/* Columns that fit in w: the last ones go first, until the name column gets at least
 * TP_TUI_NAME_MIN (or only name and one column are left). Sets *nw to the name width. */
#define TP_TUI_NAME_MIN 24
static int visible_cols(const tp_tui_table *t, int w, int *nw) {
    int fixed[TP_TUI_MAX_COLS], n = t->ncols;
    for (int c = 1; c < t->ncols; c++)
        fixed[c - 1] = t->cols[c].width;
    while (n > 2 && tp_tui_name_width(w - 2, fixed, n - 1, 0) < TP_TUI_NAME_MIN)
        n--;
    *nw = tp_tui_name_width(w - 2, fixed, n - 1, 8);
    return n;
}

static void draw_row(const tp_tui_table *t, tp_tui_grid *g, int y, size_t i, int nw, int nc) {
    int sel = i == t->sel;
    tp_tui_attr a = sel ? TP_TUI_A_SELECT : TP_TUI_A_NORMAL;
    if (sel)
        tp_tui_grid_fill(g, y, a);
    tp_tui_grid_put(g, 0, y, sel ? ">" : " ", 1, a);
    int x = 2;
    for (int c = 0; c < nc; c++) {
        int w = c ? t->cols[c].width : nw;
        put_col(g, x, y, w, t->cols[c].right, tp_tui_table_cell(t, i, c), a);
        x += w + 1;
    }
}

static void draw_header(const tp_tui_table *t, tp_tui_grid *g, int y, int nw, int nc) {
    tp_tui_grid_fill(g, y, TP_TUI_A_HEADER);
    int x = 2;
    for (int c = 0; c < nc; c++) {
        int w = c ? t->cols[c].width : nw;
        char h[64];
        snprintf(h, sizeof h, "%s%s", t->cols[c].title, c == t->sort_col ? "\u25bc" : "");
        put_col(g, x, y, w, t->cols[c].right, h, TP_TUI_A_HEADER);
        x += w + 1;
    }
}

void tp_tui_table_draw(tp_tui_table *t, tp_tui_grid *g, int y, int h) {
    if (h < 1)
        return;
    if (t->n_notes && h - t->n_notes - 1 >= 3) { /* notes last, one blank line above */
        h -= t->n_notes + 1;
        for (int i = 0; i < t->n_notes; i++)
            tp_tui_grid_put(g, 0, y + h + 1 + i, t->notes[i], g->w, TP_TUI_A_NORMAL);
    }
    int nw, nc = visible_cols(t, g->w, &nw);
    draw_header(t, g, y, nw, nc);
    int vis = h - 1;
    if (t->nshown == 0) {
        tp_tui_grid_put(g, 2, y + 1, t->search[0] ? "(no row matches the search)" : t->empty,
                        g->w - 2, TP_TUI_A_NORMAL);
        return;
    }
    t->top = (size_t)tp_tui_scroll_to((int)t->top, (int)t->sel, vis, (int)t->nshown);
    for (int k = 0; k < vis && t->top + (size_t)k < t->nshown; k++)
        draw_row(t, g, y + 1 + k, t->top + (size_t)k, nw, nc);
}

int tp_tui_table_nav(tp_tui_table *t, int k, int page) {
    long d = k == TP_TUI_KEY_UP     ? -1
             : k == TP_TUI_KEY_DOWN ? 1
             : k == TP_TUI_KEY_PGUP ? -page
             : k == TP_TUI_KEY_PGDN ? page
             : k == TP_TUI_KEY_HOME ? -(long)t->nrows
             : k == TP_TUI_KEY_END  ? (long)t->nrows
                                    : 0;
    if (!d)
        return 0;
    tp_tui_table_move(t, d);
    return 1;
}
