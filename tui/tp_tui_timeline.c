/* tp_tui_timeline: the Timeline view (see the header). The window and busy fractions come
 * from tp_tui_layout; this file only decides what goes where and handles the keys. */
#include "tp_tui_timeline.h"
#include "tp_units.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REL(buf, t) rel_time(buf, sizeof buf, tl, t)

static const char *rel_time(char *buf, size_t n, const tp_tui_timeline *tl, int64_t t) {
    char d[32];
    snprintf(buf, n, "+%s", tp_units_dur(d, sizeof d, (double)(t - tl->d->t_first)));
    return buf;
}

static int64_t range_hi(const tp_tui_timeline *tl) {
    int64_t lo = tl->d->t_first, hi = tl->d->t_last;
    return hi - lo < tl->win.width ? lo + tl->win.width : hi;
}

static void clamp(tp_tui_timeline *tl) {
    tl->win = tp_tui_clamp(&tl->win, tl->d->t_first, range_hi(tl));
}

/* Sets the window for a plot `w` cells wide: the whole rank at first, then the same t0 and
 * span at the new width after a resize. */
static void place(tp_tui_timeline *tl, int w) {
    if (!tl->placed) {
        tl->win = tp_tui_window_make(tl->d->t_first, tl->d->t_last - tl->d->t_first, w);
        tl->placed = 1;
        tl->cursor = 0;
        const tp_tui_lane *l = tl->d->n_lanes ? &tl->d->lanes[0] : NULL;
        if (l && l->n) { /* start on the first op, so the info lines say something useful */
            int c = tp_tui_time_cell(&tl->win, tl->d->r->ev.ts[l->rows[0]]);
            tl->cursor = c < 0 ? 0 : c >= w ? w - 1 : c;
        }
    } else if (w != tl->win.width) {
        tl->pinned = -1;
        tl->win = tp_tui_window_make(tl->win.t0, tl->win.span, w);
        if (tl->cursor >= w)
            tl->cursor = w - 1;
    }
    clamp(tl);
    if (w > tl->cap) {
        tl->frac = realloc(tl->frac, (size_t)w * sizeof *tl->frac);
        tl->touched = realloc(tl->touched, (size_t)w * sizeof *tl->touched);
        if (!tl->frac || !tl->touched)
            abort();
        tl->cap = w;
    }
}

void tp_tui_timeline_cursor_span(const tp_tui_timeline *tl, int64_t *a, int64_t *b) {
    *a = tp_tui_cell_start(&tl->win, tl->cursor);
    *b = tp_tui_cell_start(&tl->win, tl->cursor + 1);
}

static void draw_header(tp_tui_timeline *tl, tp_tui_grid *g, int y) {
    char a[40], b[40], s[32], c[32];
    int64_t full = tl->d->t_last - tl->d->t_first;
    double zoom = full > 0 ? (double)full / (double)tl->win.span : 1;
    tp_tui_grid_printf(g, 0, y, g->w, TP_TUI_A_HEADER,
                       "Window %s .. %s   span %s   %s/cell   zoom %.4gx   %zu lanes",
                       REL(a, tl->win.t0), REL(b, tp_tui_cell_start(&tl->win, tl->win.width)),
                       tp_units_dur(s, sizeof s, (double)tl->win.span),
                       tp_units_dur(c, sizeof c, (double)tl->win.span / tl->win.width), zoom,
                       tl->d->n_lanes);
}

static void draw_ruler(tp_tui_timeline *tl, tp_tui_grid *g, int y, int x0) {
    tp_tui_grid_put(g, 0, y, "time", x0 - 1, TP_TUI_A_HEADER);
    for (int c = 0; c + 10 < tl->win.width; c += 20) {
        char t[40], lab[48];
        snprintf(lab, sizeof lab, "|%s", REL(t, tp_tui_cell_start(&tl->win, c)));
        tp_tui_grid_put(g, x0 + c, y, lab, 19, TP_TUI_A_NORMAL);
    }
}

static void draw_lane(tp_tui_timeline *tl, tp_tui_grid *g, int y, int x0, size_t li) {
    const tp_tui_lane *l = &tl->d->lanes[li];
    const tp_events *ev = &tl->d->r->ev;
    int sel = li == tl->lane;
    char lab[112];
    /* A named thread shows its name (the trace's THREAD record or Kineto thread_name), with
     * its tid when both fit; the info line below still says "thread <tid>". */
    const char *tn = l->is_stream ? NULL : tp_rank_thread_name(tl->d->m, tl->d->r, -1, l->key);
    if (tn && tn[0]) {
        snprintf(lab, sizeof lab, "%s%s %lld", sel ? ">" : " ", tn, (long long)l->key);
        if (tp_tui_str_width(lab) > x0 - 1)
            snprintf(lab, sizeof lab, "%s%s", sel ? ">" : " ", tn);
    } else {
        snprintf(lab, sizeof lab, "%s%s", sel ? ">" : " ", l->label);
    }
    tp_tui_grid_put(g, 0, y, lab, x0 - 1, sel ? TP_TUI_A_SELECT : TP_TUI_A_NORMAL);
    tp_tui_busy_cells(&tl->win, ev->ts, ev->dur, l->rows, l->n, tl->frac, tl->touched);
    for (int c = 0; c < tl->win.width; c++) {
        int lv = tp_tui_busy_level(tl->frac[c], tl->touched[c]);
        int cur = sel && c == tl->cursor;
        const char *gl = tp_tui_busy_glyph(lv, tl->super.ascii);
        tp_tui_grid_put(g, x0 + c, y, cur && lv == 0 ? (tl->super.ascii ? "." : "\u00b7") : gl, 1,
                        cur  ? TP_TUI_A_CURSOR
                        : lv ? TP_TUI_A_BUSY
                             : TP_TUI_A_NORMAL);
    }
}

/* The three lines about the op under the cursor. */
static void draw_info(tp_tui_timeline *tl, tp_tui_grid *g, int y) {
    const tp_tui_data *d = tl->d;
    const tp_events *ev = &d->r->ev;
    const tp_tui_lane *l = &d->lanes[tl->lane];
    int64_t a, b;
    char t1[40], t2[40], t3[32];
    tp_tui_timeline_cursor_span(tl, &a, &b);
    long row = tl->pinned >= 0 ? tl->pinned : tp_tui_data_op_at(d, l, a, b);
    if (row < 0) {
        tp_tui_grid_printf(g, 0, y, g->w, TP_TUI_A_NORMAL,
                           "Under cursor: nothing on %s in [%s, %s)", l->label, REL(t1, a),
                           REL(t2, b));
        return;
    }
    tp_tui_grid_printf(g, 0, y, g->w, TP_TUI_A_HEADER, "Under cursor: %s",
                       tp_model_str(d->m, ev->name[row]));
    char where[48], corr[32] = "-";
    if (ev->stream[row] != -1)
        snprintf(where, sizeof where, "stream %lld", (long long)ev->stream[row]);
    else
        snprintf(where, sizeof where, "thread %lld", (long long)ev->tid[row]);
    if (ev->correlation[row] != -1)
        snprintf(corr, sizeof corr, "%lld", (long long)ev->correlation[row]);
    tp_tui_grid_printf(g, 0, y + 1, g->w, TP_TUI_A_NORMAL,
                       "  start %s  duration %s  %s  correlation %s  [%s]", REL(t1, ev->ts[row]),
                       tp_units_dur(t3, sizeof t3, (double)ev->dur[row]), where, corr,
                       tp_cat_name((tp_cat)ev->cat[row]));
    long call = ev->stream[row] != -1 ? tp_tui_data_launcher(d, row) : -1;
    long range = tp_tui_data_range_of(d, ev->stream[row] != -1 ? call : ev->parent[row]);
    const char *rname = range >= 0 ? tp_model_str(d->m, ev->name[range]) : "(none)";
    if (ev->stream[row] == -1)
        tp_tui_grid_printf(g, 0, y + 2, g->w, TP_TUI_A_NORMAL, "  in range: %s", rname);
    else if (call < 0)
        tp_tui_grid_printf(g, 0, y + 2, g->w, TP_TUI_A_NORMAL, "  launched by: (unknown)");
    else
        tp_tui_grid_printf(g, 0, y + 2, g->w, TP_TUI_A_NORMAL,
                           "  launched by: %s (thread %lld, %s)  in range: %s",
                           tp_model_str(d->m, ev->name[call]), (long long)ev->tid[call],
                           REL(t2, ev->ts[call]), rname);
}

/* The lane holding model row `row`, or -1. */
static long lane_of(const tp_tui_data *d, long row) {
    for (size_t li = 0; li < d->n_lanes; li++)
        for (size_t i = 0; i < d->lanes[li].n; i++)
            if (d->lanes[li].rows[i] == (uint32_t)row)
                return (long)li;
    return -1;
}

/* Selects the lane of tl->target, zooms so that the row covers about 8 cells with its start
 * a quarter into the window, and puts the cursor on its start. Other ops may share that
 * cell, so the row is pinned: the info lines name it until a key moves the cursor. Needs
 * the plot width: runs at draw time. */
static void show_target(tp_tui_timeline *tl) {
    long row = tl->target, li = lane_of(tl->d, row);
    tl->target = -1;
    if (li < 0)
        return;
    const tp_events *ev = &tl->d->r->ev;
    int w = tl->win.width, at = w / 4;
    int64_t cell = ev->dur[row] / 8 > 0 ? ev->dur[row] / 8 : 1;
    tl->lane = (size_t)li;
    tl->win = tp_tui_window_make(ev->ts[row] - cell * at, cell * w, w);
    clamp(tl);
    int c = tp_tui_time_cell(&tl->win, ev->ts[row]);
    tl->cursor = c < 0 ? 0 : c >= w ? w - 1 : c;
    tl->pinned = row;
}

static void show_row(tp_tui_panel *p, long row) {
    ((tp_tui_timeline *)p)->target = row;
}

static void draw(tp_tui_panel *p, tp_tui_grid *g, int y, int h) {
    tp_tui_timeline *tl = (tp_tui_timeline *)p;
    tp_tui_timeline_cols cols = tp_tui_timeline_split(g->w);
    place(tl, cols.plot_w);
    if (tl->target >= 0)
        show_target(tl);
    draw_header(tl, g, y);
    if (!tl->d->n_lanes) {
        tp_tui_grid_put(g, 0, y + 2, "(no events in this rank)", g->w, TP_TUI_A_NORMAL);
        return;
    }
    draw_ruler(tl, g, y + 1, cols.label_w);
    int nl = h - 6 < 1 ? 1 : h - 6;
    tl->lane_top =
        (size_t)tp_tui_scroll_to((int)tl->lane_top, (int)tl->lane, nl, (int)tl->d->n_lanes);
    int k = 0;
    for (; k < nl && tl->lane_top + (size_t)k < tl->d->n_lanes; k++)
        draw_lane(tl, g, y + 2 + k, cols.label_w, tl->lane_top + (size_t)k);
    char t[40], m[48];
    int64_t a, b;
    tp_tui_timeline_cursor_span(tl, &a, &b);
    snprintf(m, sizeof m, "^ %s", REL(t, a));
    int mx = cols.label_w + tl->cursor, mw = tp_tui_str_width(m);
    if (mx + mw > g->w) /* near the right edge the label goes left of the caret */
        snprintf(m, sizeof m, "%s ^", REL(t, a)), mx -= tp_tui_str_width(m) - 1;
    tp_tui_grid_put(g, mx, y + 2 + nl, m, g->w, TP_TUI_A_NORMAL);
    draw_info(tl, g, y + 3 + nl);
}

static void pan(tp_tui_timeline *tl, int64_t delta) {
    tl->win.t0 += delta;
    clamp(tl);
}

/* Moves the window and cursor so that time t is under the cursor (or as close as the
 * range allows). */
static void show_time(tp_tui_timeline *tl, int64_t t) {
    int c = tp_tui_time_cell(&tl->win, t);
    if (c >= 0 && c < tl->win.width) {
        tl->cursor = c;
        return;
    }
    pan(tl, t - tp_tui_cell_start(&tl->win, tl->cursor));
    c = tp_tui_time_cell(&tl->win, t);
    tl->cursor = c < 0 ? 0 : c >= tl->win.width ? tl->win.width - 1 : c;
}

static void jump(tp_tui_timeline *tl, int dir) {
    const tp_tui_lane *l = &tl->d->lanes[tl->lane];
    const int64_t *ts = tl->d->r->ev.ts;
    int64_t a, b;
    tp_tui_timeline_cursor_span(tl, &a, &b);
    long hit = -1;
    if (dir > 0) {
        for (size_t i = 0; i < l->n && hit < 0; i++)
            hit = ts[l->rows[i]] >= b ? (long)l->rows[i] : -1;
    } else {
        for (size_t i = l->n; i-- > 0 && hit < 0;)
            hit = ts[l->rows[i]] < a ? (long)l->rows[i] : -1;
    }
    if (hit >= 0)
        show_time(tl, ts[hit]);
}

static void zoom(tp_tui_timeline *tl, int in) {
    int64_t full = tl->d->t_last - tl->d->t_first;
    tl->win = tp_tui_zoom(&tl->win, tl->cursor, in, full);
    int64_t at = tp_tui_cell_start(&tl->win, tl->cursor);
    clamp(tl);
    show_time(tl, at);
}

static int move_cursor(tp_tui_timeline *tl, int d) {
    int c = tl->cursor + d;
    if (c < 0 || c >= tl->win.width)
        pan(tl, (d < 0 ? -1 : 1) * (tl->win.span / 4 > 0 ? tl->win.span / 4 : 1));
    else
        tl->cursor = c;
    return 1;
}

static int move(tp_tui_timeline *tl, int k, size_t nl) {
    switch (k) {
    case TP_TUI_KEY_LEFT:
        return move_cursor(tl, -1);
    case TP_TUI_KEY_RIGHT:
        return move_cursor(tl, 1);
    case TP_TUI_KEY_UP:
        tl->lane = tl->lane ? tl->lane - 1 : 0;
        return 1;
    case TP_TUI_KEY_DOWN:
        tl->lane = tl->lane + 1 < nl ? tl->lane + 1 : nl - 1;
        return 1;
    case TP_TUI_KEY_PGUP:
        pan(tl, -tl->win.span / 2);
        return 1;
    case TP_TUI_KEY_PGDN:
        pan(tl, tl->win.span / 2);
        return 1;
    case TP_TUI_KEY_HOME:
        tl->win.t0 = tl->d->t_first, tl->cursor = 0;
        clamp(tl);
        return 1;
    case TP_TUI_KEY_END:
        tl->win.t0 = range_hi(tl) - tl->win.span, tl->cursor = tl->win.width - 1;
        clamp(tl);
        return 1;
    case '+':
    case '=':
        zoom(tl, 1);
        return 1;
    case '-':
    case '_':
        zoom(tl, 0);
        return 1;
    case '0':
        tl->placed = 0;
        place(tl, tl->win.width);
        return 1;
    case 'n':
        jump(tl, 1);
        return 1;
    case 'p':
        jump(tl, -1);
        return 1;
    default:
        return 0;
    }
}

static int key(tp_tui_panel *p, int k, int page_rows) {
    tp_tui_timeline *tl = (tp_tui_timeline *)p;
    size_t nl = tl->d->n_lanes;
    (void)page_rows;
    if (!nl || !tl->placed || !move(tl, k, nl))
        return 0;
    tl->pinned = -1; /* the cursor, the lane or the window moved */
    return 1;
}

static void destroy(tp_tui_panel *p) {
    tp_tui_timeline *tl = (tp_tui_timeline *)p;
    free(tl->frac);
    free(tl->touched);
    free(tl);
}

tp_tui_panel *tp_tui_timeline_new(const tp_tui_data *d) {
    tp_tui_timeline *tl = calloc(1, sizeof *tl);
    if (!tl)
        abort();
    tl->super = (tp_tui_panel){.name = "timeline",
                               .title = "Timeline",
                               .help = "Left/Right cursor  Up/Down lane  +/- zoom  PgUp/PgDn pan  "
                                       "n/p next/prev op  0 reset",
                               .draw = draw,
                               .key = key,
                               .destroy = destroy,
                               .show_row = show_row};
    tl->d = d;
    tl->target = tl->pinned = -1;
    return &tl->super;
}
