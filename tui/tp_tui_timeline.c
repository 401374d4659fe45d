/* tp_tui_timeline: the Timeline view (see the header). The window arithmetic comes from
 * tp_tui_layout, the levels from tp_tui_rows, the detail pane from tp_tui_tldetail.c; this
 * file decides what goes where and handles the keys. */
#include "tp_tui_timeline.h"
#include "tp_mem.h"
#include "tp_tui_tldetail.h"
#include "tp_units.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REL(buf, t) tp_tui_tl_rel(buf, sizeof buf, tl, t)

const char *tp_tui_tl_rel(char *buf, size_t n, const tp_tui_timeline *tl, int64_t t) {
    char d[32];
    snprintf(buf, n, "+%s", tp_units_dur(d, sizeof d, (double)(t - tl->d->t_first)));
    return buf;
}

long tp_tui_timeline_selected(const tp_tui_timeline *tl) {
    return tl->sel;
}

static int64_t full_span(const tp_tui_timeline *tl) {
    int64_t s = tl->d->t_last - tl->d->t_first;
    return s > tl->win.width ? s : tl->win.width;
}

static void clamp(tp_tui_timeline *tl) {
    tl->win = tp_tui_clamp(&tl->win, tl->d->t_first, tl->d->t_first + full_span(tl));
}

static const tp_events *events(const tp_tui_timeline *tl) {
    return &tl->d->r->ev;
}

/* The rows of the focused lane's focused level (level 0 of a collapsed lane). */
static const tp_tui_level *focus_level(const tp_tui_timeline *tl) {
    const tp_tui_lane *l = &tl->d->lanes[tl->lane];
    return &l->lv[tl->level < l->n_lv ? tl->level : 0];
}

/* Selects model row `row` (-1: nothing) and focuses its lane and level. */
static void select_row(tp_tui_timeline *tl, long row) {
    int level = 0;
    long li = tp_tui_data_lane_of(tl->d, row, &level);
    if (li < 0)
        return;
    tl->sel = row;
    tl->lane = (size_t)li;
    tl->level = level;
    tl->anchor = events(tl)->ts[row];
}

/* Pans so that the selected row shows (its start a quarter into the window when it was out). */
static void reveal(tp_tui_timeline *tl) {
    if (tl->sel < 0)
        return;
    const tp_events *ev = events(tl);
    int64_t s = ev->ts[tl->sel], e = s + tp_ev_dur(ev, tl->sel);
    int64_t a = tl->win.t0, b = a + tl->win.span;
    if ((s >= a && s < b) || (e > a && e <= b) || (s <= a && e >= b))
        return;
    tl->win.t0 = s - tl->win.span / 4;
    clamp(tl);
}

/* Sets the window for a plot `w` cells wide: the whole rank at first (the first event of
 * the first lane selected), then the same t0 and span at the new width after a resize. */
static void place(tp_tui_timeline *tl, int w) {
    if (!tl->placed) {
        tl->win = tp_tui_window_make(tl->d->t_first, tl->d->t_last - tl->d->t_first, w);
        tl->placed = 1;
        const tp_tui_lane *l = tl->d->n_lanes ? &tl->d->lanes[0] : NULL;
        tl->anchor = tl->d->t_first;
        if (l && l->lv[0].n && tl->sel < 0)
            select_row(tl, l->lv[0].rows[0]);
    } else if (w != tl->win.width) {
        tl->win = tp_tui_window_make(tl->win.t0, tl->win.span, w);
    }
    clamp(tl);
    if (w > tl->cap) {
        tl->frac = tp_mem_xrealloc(tl->frac, (size_t)w, sizeof *tl->frac);
        tl->touched = tp_mem_xrealloc(tl->touched, (size_t)w, sizeof *tl->touched);
        tl->cap = w;
    }
}

/* ------------------------------------------------------------------ rows of the lane area */

static int64_t lane_group(const tp_tui_lane *l) {
    return l->is_stream ? -1 - l->pid : l->pid; /* streams: by device; threads: by process */
}

static void add_row(tp_tui_timeline *tl, int lane, int level, int64_t group) {
    if (tl->n_rows == tl->rows_cap) {
        tl->rows_cap = tl->rows_cap ? 2 * tl->rows_cap : 64;
        tl->rows = tp_mem_xrealloc(tl->rows, (size_t)tl->rows_cap, sizeof *tl->rows);
    }
    tl->rows[tl->n_rows++] = (tp_tui_tlrow){lane, level, group};
}

/* The lane area's rows: a header where the device or process changes, then each lane's
 * levels (one row when collapsed). */
static void build_rows(tp_tui_timeline *tl) {
    tl->n_rows = 0;
    for (size_t i = 0; i < tl->d->n_lanes; i++) {
        const tp_tui_lane *l = &tl->d->lanes[i];
        int64_t g = lane_group(l);
        int first = i == 0 || tl->d->lanes[i - 1].is_stream != l->is_stream ||
                    lane_group(&tl->d->lanes[i - 1]) != g;
        if (first)
            add_row(tl, -1, 0, g);
        if (l->n && tl->collapsed[i]) /* a thread with samples alone has its CPU row alone */
            add_row(tl, (int)i, -1, g);
        else if (l->n)
            for (int k = 0; k < l->n_lv; k++)
                add_row(tl, (int)i, k, g);
        if (l->n_samp)
            add_row(tl, (int)i, TP_TUI_ROW_CPU, g);
    }
}

/* The lane-area row of the focus. */
static int focus_row(const tp_tui_timeline *tl) {
    for (int i = 0; i < tl->n_rows; i++)
        if (tl->rows[i].lane == (int)tl->lane &&
            (tl->rows[i].level == tl->level || tl->rows[i].level == -1))
            return i;
    return 0;
}

/* ------------------------------------------------------------------ drawing */

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

/* A group header: the device of the streams below, or the process of the threads. */
static void draw_group(tp_tui_timeline *tl, tp_tui_grid *g, int y, const tp_tui_tlrow *row) {
    const tp_tui_lane *l = &tl->d->lanes[tl->rows[row - tl->rows + 1].lane];
    char name[64], text[160];
    const char *role = NULL;
    if (l->is_stream) {
        snprintf(text, sizeof text, "device %lld", (long long)l->pid);
    } else {
        tp_tui_data_proc_name(tl->d, l->pid, name, sizeof name, &role);
        snprintf(text, sizeof text, "pid %lld%s%s%s%s%s", (long long)l->pid, name[0] ? " " : "",
                 name, role ? " (" : "", role ? role : "", role ? ")" : "");
    }
    int n = tp_tui_grid_put(g, 0, y, text, g->w, TP_TUI_A_HEADER);
    tp_tui_grid_glyphs(g, n + 1, y, tl->super.ascii ? "-" : "\u2500", g->w - n - 1,
                       TP_TUI_A_HEADER);
}

/* A lane's label: name and id ("trainprof-train 1234", "stream 7"); when both do not fit,
 * the name is cut so that the id always shows. */
static void draw_label(tp_tui_timeline *tl, tp_tui_grid *g, int y, int x0,
                       const tp_tui_tlrow *row) {
    const tp_tui_lane *l = &tl->d->lanes[row->lane];
    /* '>' on the focused level's row and on its lane's name, so both read at a glance */
    int cpu = row->level == TP_TUI_ROW_CPU;
    int focus = !cpu && row->lane == (int)tl->lane && (row->level <= 0 || row->level == tl->level);
    char lab[200], id[32], cut[128];
    const char *mark = focus ? ">" : " ";
    if (cpu && l->n) { /* under the lane's levels, which carry its name */
        snprintf(lab, sizeof lab, " %*scpu%s", (int)strlen(l->prefix), "",
                 l->native ? " (native)" : "");
        tp_tui_grid_put(g, 0, y, lab, x0 - 1, TP_TUI_A_NORMAL);
        return;
    }
    if (row->level > 0) {
        tp_tui_grid_put(g, 0, y, mark, x0 - 1, focus ? TP_TUI_A_SELECT : TP_TUI_A_NORMAL);
        return;
    }
    const char *tn =
        l->is_stream ? "stream" : tp_rank_thread_name(tl->d->m, tl->d->r, l->pid, l->key);
    snprintf(id, sizeof id, "%lld", (long long)l->key);
    if (!tn || !tn[0])
        tn = "thread";
    const char *fold = row->level == -1 ? "+" : cpu && l->native ? "~" : "";
    int room = x0 - 1 - tp_tui_str_width(mark) - tp_tui_str_width(l->prefix) -
               tp_tui_str_width(fold) - (int)strlen(id) - 1;
    tp_tui_fit(cut, sizeof cut, tn, room < 1 ? 1 : room);
    snprintf(lab, sizeof lab, "%s%s%s%s %s", mark, fold, l->prefix, cut, id);
    tp_tui_grid_put(g, 0, y, lab, x0 - 1, focus ? TP_TUI_A_SELECT : TP_TUI_A_NORMAL);
}

/* One event as a bar over cells [s, e): a start mark, its name where it fits, a rule after. */
static void draw_bar(tp_tui_timeline *tl, tp_tui_grid *g, int y, int x, int k, long r) {
    int ascii = tl->super.ascii;
    tp_tui_attr a = r == tl->sel ? TP_TUI_A_CURSOR : TP_TUI_A_BUSY;
    if (k == 1) {
        tp_tui_grid_glyphs(g, x, y, ascii ? "#" : "\u25ae", 1, a);
        return;
    }
    tp_tui_grid_glyphs(g, x, y, ascii ? "|" : "\u258f", 1, a);
    int n = 0;
    if (k - 1 >= 3)
        n = tp_tui_grid_put(g, x + 1, y, tp_model_str(tl->d->m, events(tl)->name[r]), k - 1, a);
    tp_tui_grid_glyphs(g, x + 1 + n, y, ascii ? "-" : "\u2500", k - 1 - n, a);
}

/* The events of one level: each visible one as a bar from its first to its last cell. A
 * cell shows one event (the first that reaches it), so the cost is O(cells log n) however
 * many events the window holds; the rest of a crowded cell is found by zooming in. */
static void draw_level(tp_tui_timeline *tl, tp_tui_grid *g, int y, int x0, const tp_tui_level *lv) {
    const tp_events *ev = events(tl);
    int w = tl->win.width;
    size_t i = 0;
    for (int x = 0; x < w;) {
        int64_t t = tp_tui_cell_start(&tl->win, x);
        size_t j = tp_tui_level_seek(lv, t);
        i = j > i ? j : i;
        while (i < lv->n) { /* maxend may come from an earlier long row: skip what ended */
            uint32_t r = lv->rows[i];
            int64_t e = ev->ts[r] + tp_ev_dur(ev, r);
            if (e > t || (e == t && ev->ts[r] == t))
                break;
            i++;
        }
        if (i >= lv->n)
            break;
        uint32_t r = lv->rows[i];
        int s = tp_tui_time_cell(&tl->win, ev->ts[r]);
        if (s >= w)
            break;
        s = s < x ? x : s;
        int e = tp_ev_dur(ev, r) > 0
                    ? tp_tui_time_cell(&tl->win, ev->ts[r] + tp_ev_dur(ev, r) - 1) + 1
                    : s + 1;
        e = e > w ? w : e <= s ? s + 1 : e;
        draw_bar(tl, g, y, x0 + s, e - s, r);
        x = e;
        i++;
    }
}

/* A collapsed lane: how busy its outermost level is in each cell, in eighth blocks (two
 * binary searches a cell, tp_tui_level_busy). */
static void draw_collapsed(tp_tui_timeline *tl, tp_tui_grid *g, int y, int x0,
                           const tp_tui_lane *l) {
    for (int c = 0; c < tl->win.width; c++) {
        int64_t a = tp_tui_cell_start(&tl->win, c), b = tp_tui_cell_start(&tl->win, c + 1);
        size_t touched = 0;
        int64_t busy = tp_tui_level_busy(&l->lv[0], events(tl), a, b, &touched);
        int lvl = tp_tui_busy_level((double)busy / (double)(b - a), touched > 0);
        tp_tui_grid_glyphs(g, x0 + c, y, tp_tui_busy_glyph(lvl, tl->super.ascii), 1,
                           lvl ? TP_TUI_A_BUSY : TP_TUI_A_NORMAL);
    }
}

/* A sampled thread's CPU share in each cell, in eighth blocks: the CPU clock its samples say it
 * got there over the cell's span (tp_tui_data_lane_cpu: O(log n) a cell), as Nsight Systems
 * draws a thread's CPU utilization. */
static void draw_cpu(tp_tui_timeline *tl, tp_tui_grid *g, int y, int x0, const tp_tui_lane *l) {
    for (int c = 0; c < tl->win.width; c++) {
        int64_t a = tp_tui_cell_start(&tl->win, c), b = tp_tui_cell_start(&tl->win, c + 1);
        int64_t cpu = tp_tui_data_lane_cpu(tl->d, l, a, b);
        int lvl = tp_tui_busy_level(b > a ? (double)cpu / (double)(b - a) : 0, cpu > 0);
        tp_tui_grid_glyphs(g, x0 + c, y, tp_tui_busy_glyph(lvl, tl->super.ascii), 1,
                           lvl ? TP_TUI_A_BUSY : TP_TUI_A_NORMAL);
    }
}

/* Marks the selected event's cells when it is on this row (a crowded cell may have drawn
 * another event over it). */
static void mark_selected(tp_tui_timeline *tl, tp_tui_grid *g, int y, int x0) {
    const tp_events *ev = events(tl);
    int s = tp_tui_time_cell(&tl->win, ev->ts[tl->sel]);
    int e =
        tp_tui_time_cell(&tl->win, ev->ts[tl->sel] +
                                       (tp_ev_dur(ev, tl->sel) ? tp_ev_dur(ev, tl->sel) - 1 : 0)) +
        1;
    s = s < 0 ? 0 : s;
    e = e > tl->win.width ? tl->win.width : e;
    if (s < tl->win.width && e > 0)
        tp_tui_grid_attr(g, y, x0 + s, x0 + (e > s ? e : s + 1), TP_TUI_A_CURSOR);
}

static void draw_row(tp_tui_timeline *tl, tp_tui_grid *g, int y, int x0, const tp_tui_tlrow *row) {
    if (row->lane < 0) {
        draw_group(tl, g, y, row);
        return;
    }
    const tp_tui_lane *l = &tl->d->lanes[row->lane];
    draw_label(tl, g, y, x0, row);
    if (row->level == TP_TUI_ROW_CPU) {
        draw_cpu(tl, g, y, x0, l);
        return;
    }
    if (row->level < 0)
        draw_collapsed(tl, g, y, x0, l);
    else
        draw_level(tl, g, y, x0, &l->lv[row->level]);
    int on = row->lane == (int)tl->lane && (row->level == tl->level || row->level < 0);
    if (on && tl->sel >= 0)
        mark_selected(tl, g, y, x0);
}

/* Selects row tl->target (another view's jump): its lane expanded, the window zoomed so
 * that the row covers about 8 cells with its start a quarter into the window. Needs the
 * plot width: runs at draw time. */
static void show_target(tp_tui_timeline *tl) {
    long row = tl->target;
    tl->target = -1;
    long li = tp_tui_data_lane_of(tl->d, row, NULL);
    if (li < 0)
        return;
    tl->collapsed[li] = 0;
    select_row(tl, row);
    const tp_events *ev = events(tl);
    int w = tl->win.width, at = w / 4;
    int64_t cell = tp_ev_dur(ev, row) / 8 > 0 ? tp_ev_dur(ev, row) / 8 : 1;
    tl->win = tp_tui_window_make(ev->ts[row] - cell * at, cell * w, w);
    clamp(tl);
}

static void show_row(tp_tui_panel *p, long row) {
    ((tp_tui_timeline *)p)->target = row;
}

/* Rows of the detail pane for a body of h rows (half of it for a window's statistics). */
static int detail_rows(const tp_tui_timeline *tl, int h) {
    int stats = tl->ws.set && tl->show_stats, d = stats ? h / 2 : h / 3;
    return d < 5 ? 5 : d > (stats ? 30 : 16) ? (stats ? 30 : 16) : d;
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
    build_rows(tl);
    int dh = detail_rows(tl, h);
    if (h - 2 - dh < 3) /* a short screen: three lane rows at least, the pane gives way */
        dh = h - 2 - 3 < 3 ? 3 : h - 2 - 3;
    int nl = h - 2 - dh < 1 ? 1 : h - 2 - dh;
    int f = focus_row(tl);
    tl->top = tp_tui_scroll_to(tl->top, f, nl, tl->n_rows);
    if (f > 0 && tl->top == f && tl->rows[f - 1].lane < 0 && nl > 1)
        tl->top = f - 1; /* the focused lane's group header shows with it */
    for (int k = 0; k < nl && tl->top + k < tl->n_rows; k++)
        draw_row(tl, g, y + 2 + k, cols.label_w, &tl->rows[tl->top + k]);
    tp_tui_tl_detail(tl, g, y + 2 + nl, h - 2 - nl);
}

/* ------------------------------------------------------------------ keys */

static void pan(tp_tui_timeline *tl, int64_t delta) {
    tl->win.t0 += delta;
    clamp(tl);
}

static int64_t sel_mid(const tp_tui_timeline *tl) {
    const tp_events *ev = events(tl);
    return tl->sel >= 0 ? ev->ts[tl->sel] + tp_ev_dur(ev, tl->sel) / 2 : tl->anchor;
}

/* Zooms 2x in or out around the selection (it stays at the window's center). */
static void zoom(tp_tui_timeline *tl, int in) {
    int64_t span = in ? tl->win.span / 2 : tl->win.span * 2;
    span = span > full_span(tl) ? full_span(tl) : span;
    tl->win = tp_tui_window_make(sel_mid(tl) - span / 2, span, tl->win.width);
    clamp(tl);
}

/* Fits the window to the selected event with a margin of an eighth on each side. */
static void fit(tp_tui_timeline *tl) {
    if (tl->sel < 0)
        return;
    const tp_events *ev = events(tl);
    int64_t d = tp_ev_dur(ev, tl->sel) > 0 ? tp_ev_dur(ev, tl->sel) : 1;
    tl->win = tp_tui_window_make(ev->ts[tl->sel] - d / 8, d + d / 4, tl->win.width);
    clamp(tl);
}

/* Focus on lane-area row i (not a header) and select its event at the selection's time. */
static void focus_on(tp_tui_timeline *tl, int i) {
    const tp_tui_tlrow *row = &tl->rows[i];
    int64_t t = tl->sel >= 0 ? events(tl)->ts[tl->sel] : tl->anchor;
    tl->lane = (size_t)row->lane;
    tl->level = row->level < 0 ? 0 : row->level;
    long r = tp_tui_level_at(focus_level(tl), events(tl), t);
    tl->sel = r;
    if (r < 0)
        tl->anchor = t;
    reveal(tl);
}

static void vertical(tp_tui_timeline *tl, int dir) {
    build_rows(tl);
    for (int i = focus_row(tl) + dir; i >= 0 && i < tl->n_rows; i += dir)
        if (tl->rows[i].lane >= 0 && tl->rows[i].level != TP_TUI_ROW_CPU) {
            focus_on(tl, i);
            return;
        }
}

/* n / p: the next or previous event at the focused level. */
static void sibling(tp_tui_timeline *tl, int dir) {
    const tp_tui_level *lv = focus_level(tl);
    long i = tl->sel >= 0 ? tp_tui_level_find(lv, events(tl), (uint32_t)tl->sel) : -1;
    if (i < 0) {
        long r = tp_tui_level_at(lv, events(tl), tl->anchor);
        if (r >= 0)
            tl->sel = r, reveal(tl);
        return;
    }
    i += dir;
    if (i >= 0 && (size_t)i < lv->n) {
        tl->sel = lv->rows[i];
        reveal(tl);
    }
}

/* Enter: from a GPU op to the call that launched it, from a call to the op it launched. */
static void flow(tp_tui_timeline *tl) {
    if (tl->sel < 0)
        return;
    long to = tp_ev_stream(events(tl), tl->sel) != -1 ? tp_tui_data_launcher(tl->d, tl->sel)
                                                      : tp_tui_data_launched(tl->d, tl->sel);
    if (to < 0)
        return;
    long li = tp_tui_data_lane_of(tl->d, to, NULL);
    if (li >= 0)
        tl->collapsed[li] = 0;
    select_row(tl, to);
    reveal(tl);
}

static void set_window(tp_tui_timeline *tl, int64_t lo, int64_t hi, long step) {
    tp_tui_wstats_set(&tl->ws, tl->d, lo, hi);
    tl->ws.step = step;
    tl->show_stats = 1;
    tl->mark = -1;
}

/* m: the first press marks a start (the selection's), the second an end. */
static void mark(tp_tui_timeline *tl) {
    const tp_events *ev = events(tl);
    if (tl->mark < 0) {
        tl->mark = tl->sel >= 0 ? ev->ts[tl->sel] : tl->anchor;
        return;
    }
    int64_t end = tl->sel >= 0 ? ev->ts[tl->sel] + tp_ev_dur(ev, tl->sel) : tl->anchor;
    int64_t lo = tl->mark < end ? tl->mark : (tl->sel >= 0 ? ev->ts[tl->sel] : end);
    int64_t hi = tl->mark < end ? end : tl->mark;
    set_window(tl, lo, hi, -1);
}

/* w: the step around the selection; [ / ]: the step before / after the current one (the
 * window's, else the selection's), selected and shown whole. */
static void step(tp_tui_timeline *tl, int dir) {
    long cur = tl->ws.set && tl->ws.step >= 0 ? tl->ws.step : tp_tui_data_step_of(tl->d, tl->sel);
    long s = dir ? tp_tui_data_step_next(tl->d, cur, dir) : cur;
    if (s < 0)
        return;
    const tp_events *ev = events(tl);
    set_window(tl, ev->ts[s], ev->ts[s] + tp_ev_dur(ev, s), s);
    select_row(tl, s);
    if (dir)
        fit(tl);
    else
        reveal(tl);
}

static void find(tp_tui_panel *p, const char *text, int dir) {
    tp_tui_timeline *tl = (tp_tui_timeline *)p;
    long r = tp_tui_data_find(tl->d, text, tl->anchor, tl->sel, dir);
    if (r < 0)
        return;
    long li = tp_tui_data_lane_of(tl->d, r, NULL);
    if (li >= 0)
        tl->collapsed[li] = 0;
    select_row(tl, r);
    reveal(tl);
}

static int escape(tp_tui_timeline *tl) {
    if (tl->ws.set || tl->mark >= 0) {
        tp_tui_wstats_clear(&tl->ws);
        tl->mark = -1;
        tl->show_stats = 0;
        return 1;
    }
    return 0;
}

static int move(tp_tui_timeline *tl, int k) {
    switch (k) {
    case TP_TUI_KEY_LEFT:
    case TP_TUI_KEY_RIGHT:
        pan(tl, (k == TP_TUI_KEY_LEFT ? -1 : 1) * (tl->win.span / 8 > 0 ? tl->win.span / 8 : 1));
        return 1;
    case TP_TUI_KEY_PGUP:
    case TP_TUI_KEY_PGDN:
        pan(tl, (k == TP_TUI_KEY_PGUP ? -1 : 1) * (tl->win.span / 2 > 0 ? tl->win.span / 2 : 1));
        return 1;
    case TP_TUI_KEY_HOME:
        tl->win.t0 = tl->d->t_first;
        clamp(tl);
        return 1;
    case TP_TUI_KEY_END:
        tl->win.t0 = tl->d->t_first + full_span(tl) - tl->win.span;
        clamp(tl);
        return 1;
    case '0':
        tl->win = tp_tui_window_make(tl->d->t_first, tl->d->t_last - tl->d->t_first, tl->win.width);
        clamp(tl);
        return 1;
    default:
        return 0;
    }
}

static int act(tp_tui_timeline *tl, int k) {
    switch (k) {
    case TP_TUI_KEY_UP:
    case TP_TUI_KEY_DOWN:
        vertical(tl, k == TP_TUI_KEY_UP ? -1 : 1);
        return 1;
    case 'n':
    case 'p':
        sibling(tl, k == 'n' ? 1 : -1);
        return 1;
    case '+':
    case '=':
    case '-':
    case '_':
        zoom(tl, k == '+' || k == '=');
        return 1;
    case TP_TUI_KEY_ENTER:
    case '\r':
        flow(tl);
        return 1;
    case 'f':
        fit(tl);
        return 1;
    case 'c':
        tl->collapsed[tl->lane] = !tl->collapsed[tl->lane];
        tl->level = 0;
        if (tl->sel >= 0 && tl->collapsed[tl->lane])
            tl->sel = tp_tui_level_at(focus_level(tl), events(tl), events(tl)->ts[tl->sel]);
        return 1;
    case 'm':
        mark(tl);
        return 1;
    case 'w':
    case '[':
    case ']':
        step(tl, k == 'w' ? 0 : k == '[' ? -1 : 1);
        return 1;
    case 'i':
        tl->show_stats = tl->ws.set && !tl->show_stats;
        return 1;
    case 'N':
        if (tl->super.find_kept[0])
            find(&tl->super, tl->super.find_kept, 1);
        return 1;
    case TP_TUI_KEY_ESC:
        return escape(tl);
    default:
        return move(tl, k);
    }
}

static int key(tp_tui_panel *p, int k, int page_rows) {
    tp_tui_timeline *tl = (tp_tui_timeline *)p;
    (void)page_rows;
    if (!tl->d->n_lanes || !tl->placed)
        return 0;
    return act(tl, k);
}

static void destroy(tp_tui_panel *p) {
    tp_tui_timeline *tl = (tp_tui_timeline *)p;
    tp_tui_wstats_clear(&tl->ws);
    tp_tui_stacks_close(tl->stacks);
    free(tl->collapsed);
    free(tl->rows);
    free(tl->frac);
    free(tl->touched);
    free(tl);
}

/* The Timeline's keys, most important first (the key bar shows what fits). */
static const tp_tui_keydoc keys[] = {
    {"Up/Down", "level/lane"},
    {"n/p", "next/prev"},
    {"+/-", "zoom"},
    {"Enter", "flow kernel<->call"},
    {"/", "find"},
    {"w", "step stats"},
    {"[/]", "prev/next step"},
    {"m", "mark start, end"},
    {"Left/Right", "pan"},
    {"PgUp/PgDn", "pan half a window"},
    {"Home/End", "start/end of the rank"},
    {"f", "fit the selection"},
    {"0", "whole rank"},
    {"c", "collapse/expand the lane"},
    {"N", "next match of the kept find"},
    {"i", "window stats/event details"},
    {"Esc", "clear the window or mark"},
};

tp_tui_panel *tp_tui_timeline_new(const tp_tui_data *d) {
    tp_tui_timeline *tl = tp_mem_xcalloc(1, sizeof *tl);
    tl->super = (tp_tui_panel){.name = "timeline",
                               .title = "Timeline",
                               .help = "",
                               .keys = keys,
                               .n_keys = (int)(sizeof keys / sizeof keys[0]),
                               .draw = draw,
                               .key = key,
                               .destroy = destroy,
                               .show_row = show_row,
                               .find = find};
    tl->d = d;
    tl->target = tl->sel = tl->mark = -1;
    tl->ws.step = -1;
    tl->collapsed = tp_mem_xcalloc(d->n_lanes + 1, 1);
    tl->stacks = tp_tui_stacks_open(d->m, d->r, d->opts.no_symbols);
    return &tl->super;
}
