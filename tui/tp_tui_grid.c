/* tp_tui_grid: the character canvas (see the header). */
#include "tp_tui_grid.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_tui_layout.h"

void tp_tui_grid_init(tp_tui_grid *g, int w, int h) {
    g->w = w > 0 ? w : 0;
    g->h = h > 0 ? h : 0;
    g->c = calloc((size_t)g->w * (size_t)g->h + 1, sizeof *g->c);
    if (!g->c)
        abort();
    for (int y = 0; y < g->h; y++)
        tp_tui_grid_fill(g, y, TP_TUI_A_NORMAL);
}

void tp_tui_grid_free(tp_tui_grid *g) {
    free(g->c);
    g->c = NULL;
    g->w = g->h = 0;
}

static tp_tui_cell *cell(tp_tui_grid *g, int x, int y) {
    return &g->c[(size_t)y * (size_t)g->w + (size_t)x];
}

void tp_tui_grid_fill(tp_tui_grid *g, int y, tp_tui_attr a) {
    if (y < 0 || y >= g->h)
        return;
    for (int x = 0; x < g->w; x++)
        *cell(g, x, y) = (tp_tui_cell){.ch = " ", .attr = (uint8_t)a};
}

/* Overwrites one cell, first breaking up any wide character it was part of. */
static void set_cell(tp_tui_grid *g, int x, int y, const char *s, size_t n, tp_tui_attr a) {
    tp_tui_cell *c = cell(g, x, y);
    if (c->cont && x > 0)
        strcpy(cell(g, x - 1, y)->ch, " ");
    if (x + 1 < g->w && cell(g, x + 1, y)->cont)
        *cell(g, x + 1, y) = (tp_tui_cell){.ch = " ", .attr = c->attr};
    if (n >= sizeof c->ch)
        n = sizeof c->ch - 1;
    memcpy(c->ch, s, n);
    c->ch[n] = 0;
    c->attr = (uint8_t)a;
    c->cont = 0;
}

void tp_tui_grid_glyphs(tp_tui_grid *g, int x, int y, const char *glyph, int n, tp_tui_attr a) {
    if (y < 0 || y >= g->h)
        return;
    size_t len = strlen(glyph);
    for (int i = x < 0 ? -x : 0; i < n && x + i < g->w; i++)
        set_cell(g, x + i, y, glyph, len, a);
}

int tp_tui_grid_put(tp_tui_grid *g, int x, int y, const char *s, int cols, tp_tui_attr a) {
    if (y < 0 || y >= g->h || x < 0 || x >= g->w)
        return 0;
    if (cols > g->w - x)
        cols = g->w - x;
    char buf[1024];
    int used = tp_tui_fit(buf, sizeof buf, s, cols);
    size_t n = strlen(buf);
    int cx = x;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        int k = tp_tui_utf8_next(buf + i, n - i, &cp), cw = tp_tui_cp_width(cp);
        if (cw == 0 && cx > x) { /* a combining mark joins the character before it */
            tp_tui_cell *p = cell(g, cx - 1, y);
            size_t have = strlen(p->ch);
            if (have + (size_t)k < sizeof p->ch)
                memcpy(p->ch + have, buf + i, (size_t)k), p->ch[have + (size_t)k] = 0;
        } else if (cw > 0) {
            set_cell(g, cx, y, buf + i, (size_t)k, a);
            if (cw == 2) {
                set_cell(g, cx + 1, y, "", 0, a);
                cell(g, cx + 1, y)->cont = 1;
            }
            cx += cw;
        }
        i += (size_t)k;
    }
    return used;
}

int tp_tui_grid_printf(tp_tui_grid *g, int x, int y, int cols, tp_tui_attr a, const char *fmt,
                       ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return tp_tui_grid_put(g, x, y, buf, cols, a);
}

void tp_tui_grid_attr(tp_tui_grid *g, int y, int x0, int x1, tp_tui_attr a) {
    if (y < 0 || y >= g->h)
        return;
    for (int x = x0 < 0 ? 0 : x0; x < x1 && x < g->w; x++)
        cell(g, x, y)->attr = (uint8_t)a;
}

size_t tp_tui_grid_row(const tp_tui_grid *g, int y, char *out, size_t cap, int trim) {
    size_t o = 0, keep = 0;
    out[0] = 0;
    if (y < 0 || y >= g->h)
        return 0;
    for (int x = 0; x < g->w; x++) {
        const tp_tui_cell *c = &g->c[(size_t)y * (size_t)g->w + (size_t)x];
        size_t n = strlen(c->ch);
        if (c->cont)
            continue;
        if (o + n + 1 > cap)
            break;
        memcpy(out + o, c->ch, n);
        o += n;
        if (strcmp(c->ch, " "))
            keep = o;
    }
    o = trim ? keep : o;
    out[o] = 0;
    return o;
}
