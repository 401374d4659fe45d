/* tp_tui_help: key bar and key reference from the key tables (see the header). */
#include "tp_tui_help.h"

#include <stdio.h>
#include <string.h>

#include "tp_tui_layout.h"

/* Appends " KEY what " at *x when it fits before the edge; returns 0 when it did not. */
static int item(tp_tui_grid *g, int y, int *x, const char *k, const char *what) {
    char buf[160];
    snprintf(buf, sizeof buf, "%s %s", k, what);
    int w = tp_tui_str_width(buf);
    if (*x + w + 1 > g->w)
        return 0;
    tp_tui_grid_put(g, *x, y, k, g->w - *x, TP_TUI_A_KEY);
    tp_tui_grid_put(g, *x + tp_tui_str_width(k) + 1, y, what, g->w, TP_TUI_A_TITLE);
    *x += w + 2;
    return 1;
}

void tp_tui_help_bar(tp_tui_grid *g, int y, const tp_tui_panel *p, const char *kept,
                     const tp_tui_keydoc *first, int n_first, const tp_tui_keydoc *rest,
                     int n_rest) {
    int x = 1;
    tp_tui_grid_fill(g, y, TP_TUI_A_TITLE);
    item(g, y, &x, "?", "Keys");
    if (kept && kept[0]) {
        char what[96];
        snprintf(what, sizeof what, "clear \"%.60s\"", kept);
        item(g, y, &x, "Esc", what);
    }
    int ok = 1;
    for (int i = 0; ok && i < n_first; i++)
        ok = item(g, y, &x, first[i].key, first[i].what);
    for (int i = 0; ok && p->keys && i < p->n_keys; i++)
        ok = item(g, y, &x, p->keys[i].key, p->keys[i].what);
    if (ok && !p->keys && p->help && p->help[0]) {
        tp_tui_grid_put(g, x, y, p->help, g->w - x, TP_TUI_A_TITLE);
        x += tp_tui_str_width(p->help) + 2;
    }
    for (int i = 0; ok && i < n_rest; i++)
        ok = item(g, y, &x, rest[i].key, rest[i].what);
}

/* One "  KEY  what" entry of the reference at (x, y) in `cols` columns. */
static void entry(tp_tui_grid *g, int x, int y, int cols, int kw, const tp_tui_keydoc *k) {
    char buf[200];
    snprintf(buf, sizeof buf, "  %-*s %s", kw, k->key, k->what);
    tp_tui_grid_put(g, x, y, buf, cols, TP_TUI_A_NORMAL);
}

void tp_tui_help_draw(tp_tui_grid *g, int y, int h, const tp_tui_panel *p,
                      const tp_tui_keydoc *global, int n_global) {
    tp_tui_keydoc all[64];
    int n = 0;
    for (int i = 0; p->keys && i < p->n_keys && n < 60; i++)
        all[n++] = p->keys[i];
    int n_view = n;
    for (int i = 0; i < n_global && n < 64; i++)
        all[n++] = global[i];
    int kw = 0;
    for (int i = 0; i < n; i++)
        kw = (int)strlen(all[i].key) > kw ? (int)strlen(all[i].key) : kw;
    tp_tui_grid_printf(g, 0, y, g->w, TP_TUI_A_HEADER, "Keys of the %s view%s", p->title,
                       !p->keys && p->help && p->help[0] ? ":" : "   (any key closes this)");
    if (!p->keys && p->help && p->help[0])
        tp_tui_grid_printf(g, 0, y + 1, g->w, TP_TUI_A_NORMAL, "  %s   (any key closes this)",
                           p->help);
    int top = y + (!p->keys && p->help && p->help[0] ? 3 : 2), rows = y + h - top - 1;
    rows = rows < 1 ? 1 : rows;
    int per_col = n + 1 < rows ? n + 1 : rows; /* +1: the "Everywhere" line */
    int ncols = (n + 1 + per_col - 1) / per_col, cw = g->w / (ncols ? ncols : 1);
    for (int i = 0, slot = 0; i < n; i++, slot++) {
        if (i == n_view) { /* the global keys under their own heading */
            tp_tui_grid_put(g, (slot / per_col) * cw, top + slot % per_col, "Everywhere:", cw,
                            TP_TUI_A_HEADER);
            slot++;
        }
        entry(g, (slot / per_col) * cw, top + slot % per_col, cw - 1, kw, &all[i]);
    }
}
