/* tp_tui: the UI state machine: panels, view switching, search, ranks, and the frame
 * (title bar, body, help bar). Everything here is headless; tp_tui_term.c adds ncurses. */
#include "tp_tui.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tp_tui_data.h"
#include "tp_tui_diagnosis.h"
#include "tp_tui_layout.h"
#include "tp_tui_memory.h"
#include "tp_tui_panel.h"
#include "tp_tui_stacks.h"
#include "tp_tui_summary.h"
#include "tp_tui_timeline.h"

struct tp_tui {
    const tp_model *m;
    tp_an_opts an;
    size_t rank_idx;
    tp_tui_data d;
    tp_tui_panel *panels[TP_TUI_N_VIEWS];
    int view;
    int w, h, ascii;
    int searching;
    char query[64];
    tp_tui_grid grid;
    int rendered;
};

void tp_tui_opts_init(tp_tui_opts *o) {
    memset(o, 0, sizeof *o);
    o->rank = -1;
    o->width = 120;
    o->height = 40;
    tp_an_opts_init(&o->an);
}

/* ------------------------------------------------------------------ table panel */

typedef struct {
    tp_tui_panel super;
    const char *noun; /* "kernels" */
    const tp_tui_data *d;
    long (*index)(const tp_tui_data *d, long row); /* table row listing model row; NULL */
} table_panel;

static void table_draw(tp_tui_panel *p, tp_tui_grid *g, int y, int h) {
    table_panel *tp = (table_panel *)p;
    tp_tui_table *t = p->table;
    char st[160];
    int n = snprintf(st, sizeof st, "%zu %s, sorted by %s", t->nrows, tp->noun,
                     t->cols[t->sort_col].title);
    if (t->search[0])
        snprintf(st + n, sizeof st - (size_t)n, "; search \"%s\": %zu shown", t->search, t->nshown);
    tp_tui_grid_put(g, 0, y, st, g->w, TP_TUI_A_NORMAL);
    tp_tui_table_draw(t, g, y + 1, h - 1);
}

static int table_key(tp_tui_panel *p, int k, int page) {
    tp_tui_table *t = p->table;
    switch (k) {
    case TP_TUI_KEY_UP:
        tp_tui_table_move(t, -1);
        return 1;
    case TP_TUI_KEY_DOWN:
        tp_tui_table_move(t, 1);
        return 1;
    case TP_TUI_KEY_PGUP:
        tp_tui_table_move(t, -page);
        return 1;
    case TP_TUI_KEY_PGDN:
        tp_tui_table_move(t, page);
        return 1;
    case TP_TUI_KEY_HOME:
        tp_tui_table_move(t, -(long)t->nrows);
        return 1;
    case TP_TUI_KEY_END:
        tp_tui_table_move(t, (long)t->nrows);
        return 1;
    default:
        return 0;
    }
}

static void table_destroy(tp_tui_panel *p) {
    free(p);
}

static void table_show_row(tp_tui_panel *p, long row) {
    table_panel *tp = (table_panel *)p;
    long i = tp->index(tp->d, row);
    if (i >= 0)
        tp_tui_table_select(p->table, (size_t)i);
}

static tp_tui_panel *table_panel_new(tp_tui_table *t, const char *name, const char *title,
                                     const char *noun) {
    table_panel *tp = calloc(1, sizeof *tp);
    if (!tp)
        abort();
    tp->super = (tp_tui_panel){.name = name,
                               .title = title,
                               .help = "Up/Down/PgUp/PgDn move",
                               .draw = table_draw,
                               .key = table_key,
                               .destroy = table_destroy,
                               .table = t};
    tp->noun = noun;
    return &tp->super;
}

/* ------------------------------------------------------------------ views */

static tp_tui_panel *kernels_new(tp_tui_data *d) {
    return table_panel_new(&d->kernels, "kernels", "Kernels", "kernels");
}

static tp_tui_panel *ranges_new(tp_tui_data *d) {
    tp_tui_panel *p = table_panel_new(&d->ranges, "ranges", "Ranges", "ranges");
    table_panel *tp = (table_panel *)p;
    tp->d = d, tp->index = tp_tui_data_range_index;
    p->show_row = table_show_row;
    return p;
}

static tp_tui_panel *copies_new(tp_tui_data *d) {
    return table_panel_new(&d->copies, "copies", "Copies", "copy kinds");
}

static tp_tui_panel *summary_new(tp_tui_data *d) {
    return tp_tui_summary_new(d);
}

static tp_tui_panel *timeline_new(tp_tui_data *d) {
    return tp_tui_timeline_new(d);
}

static tp_tui_panel *memory_new(tp_tui_data *d) {
    return tp_tui_memory_new(d);
}

static tp_tui_panel *diagnosis_new(tp_tui_data *d) {
    return tp_tui_diagnosis_new(d);
}

/* The views, in the order of their keys (1..6) and of the title bar. */
static const struct {
    const char *name; /* --view name, and the panel's name */
    tp_tui_panel *(*make)(tp_tui_data *d);
} views[TP_TUI_N_VIEWS] = {
    {"summary", summary_new},      {"timeline", timeline_new}, {"kernels", kernels_new},
    {"ranges", ranges_new},        {"copies", copies_new},     {"diagnosis", diagnosis_new},
    {"stacks", tp_tui_stacks_new}, {"memory", memory_new},
};

int tp_tui_view_index(const char *name) {
    for (int i = 0; name && i < TP_TUI_N_VIEWS; i++)
        if (!strcmp(name, views[i].name) || (name[0] == '1' + i && !name[1]))
            return i;
    return -1;
}

const char *tp_tui_view_name(int i) {
    return i >= 0 && i < TP_TUI_N_VIEWS ? views[i].name : NULL;
}

/* ------------------------------------------------------------------ app */

static void free_rank(tp_tui *t) {
    for (int i = 0; i < TP_TUI_N_VIEWS; i++)
        if (t->panels[i])
            t->panels[i]->destroy(t->panels[i]);
    memset(t->panels, 0, sizeof t->panels);
    tp_tui_data_free(&t->d);
}

static void load_rank(tp_tui *t, size_t idx) {
    free_rank(t);
    t->rank_idx = idx;
    tp_tui_data_build(&t->d, t->m, &t->m->ranks[idx], &t->an);
    for (int i = 0; i < TP_TUI_N_VIEWS; i++) {
        t->panels[i] = views[i].make(&t->d);
        assert(!strcmp(t->panels[i]->name, views[i].name));
        t->panels[i]->ascii = t->ascii;
    }
    t->searching = 0;
    t->rendered = 0;
}

tp_status tp_tui_open(tp_tui **out, const tp_model *m, const tp_tui_opts *o, char *err,
                      size_t errlen) {
    tp_tui_opts def;
    if (!o)
        tp_tui_opts_init(&def), o = &def;
    *out = NULL;
    if (!m || !m->n_ranks)
        return snprintf(err, errlen, "the trace has no rank"), TP_ERR_EMPTY;
    const tp_rank *r = o->rank < 0 ? &m->ranks[0] : tp_model_rank(m, o->rank);
    if (!r)
        return snprintf(err, errlen, "no rank %d in the trace", o->rank), TP_ERR_NOT_FOUND;
    int view = o->view ? tp_tui_view_index(o->view) : 0;
    if (view < 0) {
        int n = snprintf(err, errlen, "unknown view '%s' (", o->view);
        for (int i = 0; i < TP_TUI_N_VIEWS && n > 0 && (size_t)n < errlen; i++)
            n += snprintf(err + n, errlen - (size_t)n, "%s%s", views[i].name,
                          i + 1 < TP_TUI_N_VIEWS ? ", " : ")");
        return TP_ERR_ARG;
    }
    tp_tui *t = calloc(1, sizeof *t);
    if (!t)
        abort();
    t->m = m;
    t->an = o->an;
    t->view = view;
    t->ascii = o->ascii;
    tp_tui_resize(t, o->width > 0 ? o->width : 120, o->height > 0 ? o->height : 40);
    load_rank(t, (size_t)(r - m->ranks));
    *out = t;
    return TP_OK;
}

void tp_tui_close(tp_tui *t) {
    if (!t)
        return;
    free_rank(t);
    tp_tui_grid_free(&t->grid);
    free(t);
}

void tp_tui_resize(tp_tui *t, int w, int h) {
    t->w = w < 1 ? 1 : w > 1000 ? 1000 : w;
    t->h = h < 1 ? 1 : h > 1000 ? 1000 : h;
    t->rendered = 0;
}

int tp_tui_current_view(const tp_tui *t) {
    return t->view;
}

static void search_key(tp_tui *t, int k) {
    size_t n = strlen(t->query);
    if (k == TP_TUI_KEY_ENTER || k == '\r') {
        t->searching = 0;
        return;
    }
    if (k == TP_TUI_KEY_ESC)
        t->searching = 0, n = 0;
    else if ((k == TP_TUI_KEY_BACKSPACE || k == 127 || k == 8) && n > 0)
        n--;
    else if (k >= 0x20 && k < 0x100 && k != 127 && n + 1 < sizeof t->query)
        t->query[n++] = (char)k; /* UTF-8 bytes arrive one by one and are kept as bytes */
    t->query[n] = 0;
    tp_tui_table_search(t->panels[t->view]->table, t->query);
}

static int page_rows(const tp_tui *t) {
    return t->h - 5 > 1 ? t->h - 5 : 1;
}

/* Shows the row panel p asked for in the view it named. */
static void jump(tp_tui *t, tp_tui_panel *p) {
    int v = tp_tui_view_index(p->jump_view);
    p->jump_view = NULL;
    if (v < 0 || !t->panels[v]->show_row)
        return;
    t->view = v;
    t->panels[v]->show_row(t->panels[v], p->jump_row);
}

int tp_tui_key(tp_tui *t, int k) {
    tp_tui_panel *p = t->panels[t->view];
    if (!t->rendered)
        tp_tui_render(t); /* panels lay themselves out when drawn: keys act on that layout */
    t->rendered = 0;
    if (t->searching && p->table)
        return search_key(t, k), 0;
    if (k == 'q' || k == 'Q')
        return 1;
    if (k >= '1' && k < '1' + TP_TUI_N_VIEWS)
        t->view = k - '1';
    else if (k == TP_TUI_KEY_TAB)
        t->view = (t->view + 1) % TP_TUI_N_VIEWS;
    else if (k == TP_TUI_KEY_BTAB)
        t->view = (t->view + TP_TUI_N_VIEWS - 1) % TP_TUI_N_VIEWS;
    else if (k == 'r' && t->m->n_ranks > 1)
        load_rank(t, (t->rank_idx + 1) % t->m->n_ranks);
    else if (k == 's' && p->table)
        tp_tui_table_next_sort(p->table);
    else if (k == '/' && p->table) {
        t->searching = 1;
        snprintf(t->query, sizeof t->query, "%s", p->table->search);
    } else if (p->key(p, k, page_rows(t)) && p->jump_view)
        jump(t, p);
    return 0;
}

static void draw_title(tp_tui *t, tp_tui_grid *g) {
    tp_tui_grid_fill(g, 0, TP_TUI_A_TITLE);
    int x = tp_tui_grid_put(g, 0, 0, " trainprof ", g->w, TP_TUI_A_TITLE);
    /* The rank first, so it shows at any width; then the views, named in full when they all
     * fit, else only the current one named and the others by their key. */
    x += tp_tui_grid_printf(g, x, 0, g->w, TP_TUI_A_TITLE, " rank %d (%zu of %zu) ",
                            t->m->ranks[t->rank_idx].rank, t->rank_idx + 1, t->m->n_ranks);
    int full = 0;
    for (int i = 0; i < TP_TUI_N_VIEWS; i++)
        full += 4 + (int)strlen(t->panels[i]->title) + (i + 1 >= 10);
    int named = x + full <= g->w - 24; /* leave room for the drop warning */
    for (int i = 0; i < TP_TUI_N_VIEWS; i++) {
        if (i == t->view)
            x += tp_tui_grid_printf(g, x, 0, g->w, TP_TUI_A_TITLE, " [%d %s]", i + 1,
                                    t->panels[i]->title);
        else if (named)
            x += tp_tui_grid_printf(g, x, 0, g->w, TP_TUI_A_TITLE, "  %d %s ", i + 1,
                                    t->panels[i]->title);
        else
            x += tp_tui_grid_printf(g, x, 0, g->w, TP_TUI_A_TITLE, " %d", i + 1);
    }
    const tp_an_drops *dr = &t->d.a.drops; /* the report's line says the same, in full */
    if (dr->lost)
        tp_tui_grid_printf(g, x, 0, g->w, TP_TUI_A_WARN, "  %.2f %% dropped: lower bounds",
                           100 * dr->share);
}

static void draw_help(tp_tui *t, tp_tui_grid *g, int y) {
    const tp_tui_panel *p = t->panels[t->view];
    tp_tui_grid_fill(g, y, TP_TUI_A_TITLE);
    if (t->searching) {
        tp_tui_grid_printf(g, 0, y, g->w, TP_TUI_A_KEY, " Search: %s_   Enter keep  Esc clear",
                           t->query);
        return;
    }
    tp_tui_grid_printf(g, 0, y, g->w, TP_TUI_A_TITLE, " q Quit  Tab/1-%d View  %s%s%s",
                       TP_TUI_N_VIEWS, p->table ? "s Sort  / Search  " : "", p->help,
                       t->m->n_ranks > 1 ? "  r Rank" : "");
}

const tp_tui_grid *tp_tui_render(tp_tui *t) {
    tp_tui_grid *g = &t->grid;
    if (g->w != t->w || g->h != t->h) {
        tp_tui_grid_free(g);
        tp_tui_grid_init(g, t->w, t->h);
    }
    for (int y = 0; y < g->h; y++)
        tp_tui_grid_fill(g, y, TP_TUI_A_NORMAL);
    tp_tui_screen s = tp_tui_screen_split(t->w, t->h);
    t->rendered = 1;
    if (!s.ok) {
        /* Two short lines, so that even a very narrow terminal shows the words. */
        tp_tui_grid_put(g, 0, 0, "terminal too small", g->w, TP_TUI_A_WARN);
        tp_tui_grid_printf(g, 0, 1, g->w, TP_TUI_A_WARN, "%dx%d, need %dx%d", t->w, t->h,
                           TP_TUI_MIN_W, TP_TUI_MIN_H);
        return g;
    }
    draw_title(t, g);
    t->panels[t->view]->draw(t->panels[t->view], g, s.body_top, s.body_h);
    draw_help(t, g, s.help_row);
    return g;
}

tp_status tp_tui_snapshot(tp_tui *t, FILE *out) {
    const tp_tui_grid *g = tp_tui_render(t);
    char buf[16 * 1024];
    for (int y = 0; y < g->h; y++) {
        tp_tui_grid_row(g, y, buf, sizeof buf, 1);
        fprintf(out, "%s\n", buf);
    }
    errno = 0; /* a failed fflush says why; a flag from an earlier failed write does not */
    return fflush(out) || ferror(out) ? TP_ERR_IO : TP_OK;
}
