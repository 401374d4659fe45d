/* tp_tui_memory: the Memory view (see the header). The chart's columns and the cursor are
 * laid out at each draw from the panel's width; the cursor is kept as a time, so a resize
 * keeps it where it was. The moment under the cursor is rebuilt only when the cursor's
 * event index changes. */
#include "tp_tui_memory.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_units.h"

#define LABEL_W 11   /* y-axis labels and segment bases */
#define CHART_H 8    /* chart rows */
#define SEG_LABEL 22 /* "0x7f8e9a400000 20 MiB" */

typedef struct {
    tp_tui_panel super;
    tp_tui_data *d;
    int64_t t0, t1;     /* the timeline's span */
    int64_t cursor;     /* time under the cursor */
    int cols;           /* chart columns in the last draw */
    int scroll, lines;  /* holders/segments list: first line shown, lines in it */
    int vis;            /* list rows in the last draw */
    size_t mo_ev;       /* events applied in `mo`; SIZE_MAX: none */
    tp_an_memmoment mo; /* the moment at the cursor */
} tp_tui_memory;

static const tp_an_memuse *mu(const tp_tui_memory *s) {
    return &s->d->a.mu;
}

/* Events at or before t. */
static size_t events_at(const tp_rank *r, int64_t t) {
    size_t lo = 0, hi = r->mem.n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->mem.ts[mid] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int64_t col_time(const tp_tui_memory *s, int c) {
    if (s->cols <= 1)
        return s->t0;
    return s->t0 + (int64_t)((double)(s->t1 - s->t0) * c / (s->cols - 1));
}

static int time_col(const tp_tui_memory *s, int64_t t) {
    if (s->t1 <= s->t0 || s->cols <= 1)
        return 0;
    double f = (double)(t - s->t0) / (double)(s->t1 - s->t0);
    int c = (int)(f * (s->cols - 1) + 0.5);
    return c < 0 ? 0 : c >= s->cols ? s->cols - 1 : c;
}

/* Maximum of allocated and reserved over the value holding at a and the points in [a, b). */
static void bucket(const tp_an_memuse *u, int64_t a, int64_t b, int64_t *al, int64_t *re) {
    size_t lo = 0, hi = u->n_points;
    while (lo < hi) { /* the first point after a */
        size_t mid = lo + (hi - lo) / 2;
        if (tp_an_memuse_pt_ts(u, mid) <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    *al = *re = 0;
    for (size_t i = lo ? lo - 1 : 0; i < u->n_points && (i < lo || tp_an_memuse_pt_ts(u, i) < b);
         i++) {
        *al = u->pt_alloc[i] > *al ? u->pt_alloc[i] : *al;
        int64_t res = tp_an_memuse_pt_res(u, i);
        *re = res > *re ? res : *re;
    }
}

static void draw_chart(tp_tui_memory *s, tp_tui_grid *g, int y) {
    const tp_an_memuse *u = mu(s);
    int64_t top = u->peak_reserved > u->peak_allocated ? u->peak_reserved : u->peak_allocated;
    char b[32];
    tp_tui_grid_printf(g, 0, y, LABEL_W, TP_TUI_A_NORMAL, "%10s",
                       tp_units_bytes(b, sizeof b, (double)top));
    tp_tui_grid_printf(g, 0, y + CHART_H - 1, LABEL_W, TP_TUI_A_NORMAL, "%10s", "0");
    int cur = time_col(s, s->cursor);
    for (int c = 0; c < s->cols; c++) {
        int64_t al, re;
        int64_t a = col_time(s, c), z = c + 1 < s->cols ? col_time(s, c + 1) : s->t1 + 1;
        bucket(u, a, z, &al, &re);
        int ha = top > 0 ? (int)((double)al * CHART_H / (double)top + 0.5) : 0;
        int hr = top > 0 ? (int)((double)re * CHART_H / (double)top + 0.5) : 0;
        for (int k = 0; k < CHART_H; k++) {
            int level = CHART_H - k; /* row k shows heights >= level */
            const char *ch = ha >= level   ? (s->super.ascii ? "#" : "\u2588")
                             : hr >= level ? (s->super.ascii ? ":" : "\u2592")
                                           : " ";
            tp_tui_grid_put(g, LABEL_W + c, y + k, ch, 1,
                            c == cur ? TP_TUI_A_CURSOR : TP_TUI_A_BUSY);
        }
    }
}

static void ensure_moment(tp_tui_memory *s) {
    size_t ev = events_at(s->d->r, s->cursor);
    if (ev == s->mo_ev)
        return;
    tp_an_memmoment_free(&s->mo);
    const tp_an_memuse *u = mu(s);
    int64_t req = u->has_oom && ev == u->oom.row ? u->oom.request : 0;
    tp_an_memuse_moment(u, ev, req, &s->mo);
    s->mo_ev = ev;
}

/* One segment as a row of cells: each cell a slice of the segment, full when blocks cover
 * at least half of it. */
static void seg_row(tp_tui_memory *s, tp_tui_grid *g, int y, const tp_an_segstate *sg, int w) {
    char b[32], lab[48];
    snprintf(lab, sizeof lab, "%" PRIx64 " %s", sg->base,
             tp_units_bytes(b, sizeof b, (double)sg->size));
    tp_tui_grid_put(g, 2, y, lab, SEG_LABEL, sg->fits ? TP_TUI_A_NORMAL : TP_TUI_A_WARN);
    size_t nb;
    const tp_an_mblock *bl = tp_an_memstate_blocks(mu(s)->state, &nb);
    for (int c = 0; c < w; c++) {
        uint64_t a = sg->base + (uint64_t)((double)sg->size * c / w);
        uint64_t z = sg->base + (uint64_t)((double)sg->size * (c + 1) / w);
        uint64_t live = 0;
        for (size_t i = 0; i < nb; i++) { /* blocks are few per segment; a scan is fine */
            uint64_t x0 = bl[i].addr, x1 = bl[i].addr + (uint64_t)bl[i].size;
            uint64_t o0 = x0 > a ? x0 : a, o1 = x1 < z ? x1 : z;
            live += o1 > o0 ? o1 - o0 : 0;
        }
        int full = 2 * live >= z - a;
        tp_tui_grid_put(g, 2 + SEG_LABEL + 1 + c, y,
                        full ? (s->super.ascii ? "#" : "\u2588")
                             : (s->super.ascii ? "." : "\u00b7"),
                        1, full ? TP_TUI_A_BUSY : TP_TUI_A_NORMAL);
    }
}

/* Holders then segments, scrolled by s->scroll, in rows [y, y + h). */
static void draw_list(tp_tui_memory *s, tp_tui_grid *g, int y, int h) {
    const tp_an_memmoment *mo = &s->mo;
    int line = 0, w = g->w - (2 + SEG_LABEL + 1) - 1;
    char lb[256], b1[32];
#define ROW (line++ - s->scroll)
    int r = ROW;
    if (r >= 0 && r < h)
        tp_tui_grid_printf(g, 0, y + r, g->w, TP_TUI_A_HEADER, "Top holders (%zu sites)",
                           mo->n_holders);
    for (size_t i = 0; i < mo->n_holders; i++) {
        const tp_an_holder *x = &mo->holders[i];
        if ((r = ROW) < 0 || r >= h)
            continue;
        tp_tui_grid_printf(g, 2, y + r, g->w - 2, TP_TUI_A_NORMAL,
                           "%-50.50s %11s %5zu blk %5.1f %%  %3" PRId64 " steps",
                           tp_an_memuse_site_label(mu(s), s->d->m, x->site, lb, sizeof lb),
                           tp_units_bytes(b1, sizeof b1, (double)x->bytes), x->blocks,
                           100 * x->share, x->steps_alive);
    }
    if ((r = ROW) >= 0 && r < h)
        tp_tui_grid_printf(g, 0, y + r, g->w, TP_TUI_A_HEADER, "Segments (%zu; live %s, free %s)",
                           mo->n_segs, s->super.ascii ? "#" : "\u2588",
                           s->super.ascii ? "." : "\u00b7");
    for (size_t i = 0; i < mo->n_segs; i++)
        if ((r = ROW) >= 0 && r < h && w > 4)
            seg_row(s, g, y + r, &mo->segs[i], w);
#undef ROW
    s->lines = line;
    s->vis = h;
}

static void draw(tp_tui_panel *p, tp_tui_grid *g, int y, int h) {
    tp_tui_memory *s = (tp_tui_memory *)p;
    const tp_an_memuse *u = mu(s);
    if (u->source == TP_AN_MSRC_NONE && !u->has_oom) {
        tp_tui_grid_put(g, 0, y, "  No memory events in this rank.", g->w, TP_TUI_A_WARN);
        return;
    }
    s->cols = g->w - LABEL_W - 1;
    ensure_moment(s);
    char b1[32], b2[32], b3[32], tb[32];
    tp_units_dur(tb, sizeof tb, (double)(s->cursor - s->t0));
    int at_peak = s->mo_ev == u->peak.ev, at_oom = u->has_oom && s->mo_ev == u->oom.row;
    tp_tui_grid_printf(g, 0, y, g->w, TP_TUI_A_HEADER,
                       "Memory at +%s%s: allocated %s, reserved %s  (peak %s; p: peak%s)", tb,
                       at_oom    ? " [failed allocation]"
                       : at_peak ? " [peak]"
                                 : "",
                       s->mo.allocated >= 0 ? tp_units_bytes(b1, 32, (double)s->mo.allocated) : "?",
                       s->mo.reserved >= 0 ? tp_units_bytes(b2, 32, (double)s->mo.reserved) : "?",
                       tp_units_bytes(b3, 32, (double)u->peak_allocated),
                       u->has_oom ? ", o: failed allocation" : "");
    draw_chart(s, g, y + 1);
    if (h > CHART_H + 2)
        draw_list(s, g, y + CHART_H + 2, h - CHART_H - 2);
}

static int key(tp_tui_panel *p, int k, int page) {
    tp_tui_memory *s = (tp_tui_memory *)p;
    const tp_an_memuse *u = mu(s);
    const tp_rank *r = s->d->r;
    int c = time_col(s, s->cursor), max = s->lines - s->vis > 0 ? s->lines - s->vis : 0;
    switch (k) {
    case TP_TUI_KEY_LEFT:
        s->cursor = col_time(s, c > 0 ? c - 1 : 0);
        break;
    case TP_TUI_KEY_RIGHT:
        s->cursor = col_time(s, c + 1 < s->cols ? c + 1 : c);
        break;
    case TP_TUI_KEY_HOME:
        s->cursor = s->t0;
        break;
    case TP_TUI_KEY_END:
        s->cursor = s->t1;
        break;
    case 'p':
        if (u->peak.valid && u->peak.ev)
            s->cursor = r->mem.ts[u->peak.ev - 1];
        break;
    case 'o':
        if (u->has_oom) /* the state the request met: just before the failure */
            s->cursor = u->oom.row ? r->mem.ts[u->oom.row - 1] : s->t0;
        break;
    case TP_TUI_KEY_UP:
        s->scroll = s->scroll > 0 ? s->scroll - 1 : 0;
        break;
    case TP_TUI_KEY_DOWN:
        s->scroll = s->scroll < max ? s->scroll + 1 : max;
        break;
    case TP_TUI_KEY_PGUP:
        s->scroll = s->scroll > page ? s->scroll - page : 0;
        break;
    case TP_TUI_KEY_PGDN:
        s->scroll = s->scroll + page < max ? s->scroll + page : max;
        break;
    default:
        return 0;
    }
    return 1;
}

static void destroy(tp_tui_panel *p) {
    tp_tui_memory *s = (tp_tui_memory *)p;
    tp_an_memmoment_free(&s->mo);
    free(s);
}

tp_tui_panel *tp_tui_memory_new(tp_tui_data *d) {
    tp_tui_memory *s = calloc(1, sizeof *s);
    if (!s)
        abort();
    s->super = (tp_tui_panel){.name = "memory",
                              .title = "Memory",
                              .help = "Left/Right cursor  p peak  o failed allocation  "
                                      "Up/Down scroll",
                              .draw = draw,
                              .key = key,
                              .destroy = destroy};
    s->d = d;
    s->mo_ev = SIZE_MAX;
    const tp_an_memuse *u = &d->a.mu;
    s->t0 = u->n_points ? tp_an_memuse_pt_ts(u, 0) : d->t_first;
    s->t1 = u->n_points ? tp_an_memuse_pt_ts(u, u->n_points - 1) : d->t_last;
    if (d->r->mem.n) {
        s->t0 = d->r->mem.ts[0] < s->t0 ? d->r->mem.ts[0] : s->t0;
        s->t1 = d->r->mem.ts[d->r->mem.n - 1] > s->t1 ? d->r->mem.ts[d->r->mem.n - 1] : s->t1;
    }
    s->cursor = u->peak.valid && u->peak.ev ? d->r->mem.ts[u->peak.ev - 1] : s->t0;
    return &s->super;
}
