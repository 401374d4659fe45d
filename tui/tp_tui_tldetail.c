/* tp_tui_tldetail: the Timeline's detail pane (see the header). */
#include "tp_tui_tldetail.h"

#include <stdio.h>
#include <string.h>

#include "tp_units.h"

#define REL(buf, t) tp_tui_tl_rel(buf, sizeof buf, tl, t)
#define MAX_FRAMES 24

/* The three lines about the selected row (the same words the diagnosis' jumps are checked
 * against: "Selected: NAME", "  start ...", "  in range: ..." / "  launched by: ..."). */
static int event_lines(tp_tui_timeline *tl, tp_tui_grid *g, int y, long row, long call,
                       long range) {
    const tp_tui_data *d = tl->d;
    const tp_events *ev = &d->r->ev;
    char t1[40], t2[40], t3[32], where[48], corr[32] = "-";
    tp_tui_grid_printf(g, 0, y, g->w, TP_TUI_A_HEADER, "Selected: %s",
                       tp_model_str(d->m, ev->name[row]));
    if (tp_ev_stream(ev, row) != -1)
        snprintf(where, sizeof where, "stream %lld", (long long)tp_ev_stream(ev, row));
    else
        snprintf(where, sizeof where, "thread %lld", (long long)tp_ev_tid(ev, row));
    if (tp_ev_corr(ev, row) != -1)
        snprintf(corr, sizeof corr, "%lld", (long long)tp_ev_corr(ev, row));
    tp_tui_grid_printf(g, 0, y + 1, g->w, TP_TUI_A_NORMAL,
                       "  start %s  duration %s  %s  correlation %s  [%s]", REL(t1, ev->ts[row]),
                       tp_units_dur(t3, sizeof t3, (double)tp_ev_dur(ev, row)), where, corr,
                       tp_cat_name((tp_cat)ev->cat[row]));
    const char *rname = range >= 0 ? tp_model_str(d->m, ev->name[range]) : "(none)";
    if (tp_ev_stream(ev, row) == -1)
        tp_tui_grid_printf(g, 0, y + 2, g->w, TP_TUI_A_NORMAL, "  in range: %s", rname);
    else if (call < 0)
        tp_tui_grid_printf(g, 0, y + 2, g->w, TP_TUI_A_NORMAL, "  launched by: (unknown)");
    else
        tp_tui_grid_printf(g, 0, y + 2, g->w, TP_TUI_A_NORMAL,
                           "  launched by: %s (thread %lld, %s)  in range: %s",
                           tp_model_str(d->m, ev->name[call]), (long long)tp_ev_tid(ev, call),
                           REL(t2, ev->ts[call]), rname);
    long gpu = tp_ev_stream(ev, row) == -1 ? tp_tui_data_launched(d, row) : -1;
    if (gpu < 0)
        return 3;
    tp_tui_grid_printf(g, 0, y + 3, g->w, TP_TUI_A_NORMAL, "  launched: %s on stream %lld at %s",
                       tp_model_str(d->m, ev->name[gpu]), (long long)tp_ev_stream(ev, gpu),
                       REL(t1, ev->ts[gpu]));
    return 4;
}

/* One stack under its title, into rows [y, end) of column x (cols wide). */
static void stack_block(tp_tui_timeline *tl, tp_tui_grid *g, int x, int cols, int y, int end,
                        const char *title, long row) {
    static char lines[MAX_FRAMES][TP_TUI_STACK_LINE];
    const tp_events *ev = &tl->d->r->ev;
    if (y >= end || row < 0)
        return;
    tp_tui_grid_printf(g, x, y++, cols, TP_TUI_A_HEADER, "%s %s:", title,
                       tp_model_str(tl->d->m, ev->name[row]));
    int n = tp_tui_stack_lines(tl->stacks, tp_ev_stack(ev, row), lines, MAX_FRAMES);
    if (!n && y < end) /* NVTX pushes get stacks only when asked: say how */
        tp_tui_grid_put(g, x, y++,
                        ev->cat[row] == TP_CAT_USER_ANNOTATION && tl->d->r->native
                            ? "  (none recorded: `trainprof record --stacks all` records them)"
                            : "  (no stack recorded)",
                        cols, TP_TUI_A_NORMAL);
    for (int i = 0; i < n && y < end; i++)
        tp_tui_grid_printf(g, x, y++, cols, TP_TUI_A_NORMAL, "  %s", lines[i]);
}

static void event_detail(tp_tui_timeline *tl, tp_tui_grid *g, int y, int h) {
    const tp_tui_data *d = tl->d;
    const tp_events *ev = &d->r->ev;
    long row = tl->sel;
    if (row < 0) {
        char t[40];
        tp_tui_grid_printf(g, 0, y, g->w, TP_TUI_A_NORMAL,
                           "Selected: nothing on this row near %s (Up/Down, n/p select)",
                           REL(t, tl->anchor));
        return;
    }
    int gpu = tp_ev_stream(ev, row) != -1;
    long call = gpu ? tp_tui_data_launcher(d, row) : row;
    long range = tp_tui_data_range_of(d, gpu ? call : tp_ev_parent(ev, (size_t)row));
    int used = event_lines(tl, g, y, row, call, range);
    int end = y + h;
    y += used;
    if (ev->cat[row] == TP_CAT_USER_ANNOTATION) /* a range: its own push stack */
        call = -1, range = row;
    if (!d->r->stacks.n) { /* a Kineto trace, or one recorded with --stacks none */
        if (y < end)
            tp_tui_grid_put(g, 0, y, "(no call stacks in this trace)", g->w, TP_TUI_A_NORMAL);
        return;
    }
    int two = g->w >= 100, half = g->w / 2;
    int y2 = two ? y : y + (call >= 0 ? (end - y) / 2 : 0);
    stack_block(tl, g, 0, two ? half - 1 : g->w, y, two ? end : y2, "Stack of", call);
    stack_block(tl, g, two && call >= 0 ? half : 0, two ? half : g->w, y2, end,
                "Range push stack of", range);
}

void tp_tui_tl_detail(tp_tui_timeline *tl, tp_tui_grid *g, int y, int h) {
    char t[40];
    if (tl->ws.set && tl->show_stats) {
        tp_tui_wstats_draw(&tl->ws, tl->d, g, y, h);
        return;
    }
    if (tl->mark >= 0) {
        tp_tui_grid_printf(g, 0, y++, g->w, TP_TUI_A_KEY,
                           "Window start marked at %s: select the end and press m (Esc cancels)",
                           REL(t, tl->mark));
        h--;
    }
    event_detail(tl, g, y, h);
}
