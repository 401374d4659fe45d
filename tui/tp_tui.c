/* tp_tui: the UI state machine: panels, view switching, search, ranks, and the frame
 * (title bar, body, help bar). Everything here is headless; tp_tui_term.c adds ncurses. */
#include "tp_tui.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "tp_tui_cpuops.h"
#include "tp_tui_data.h"
#include "tp_tui_diagnosis.h"
#include "tp_tui_help.h"
#include "tp_tui_layout.h"
#include "tp_tui_memory.h"
#include "tp_tui_panel.h"
#include "tp_tui_ranks.h"
#include "tp_tui_stacks.h"
#include "tp_tui_summary.h"
#include "tp_tui_timeline.h"

/* The background computation (tp_tui_opts.background): one thread computes the rank's data
 * part by part (tp_tui_data_need with one bit), the parts the shown view waits for first, then
 * every other part, so later views are ready when visited. The thread is the only writer of
 * the data while it runs; the UI thread reads a part only after `ready` (under `mu`) says it
 * is complete, and never reads tp_tui_data.ready itself. */
typedef struct {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int running, stop;
    int started;    /* a thread was created and not joined yet */
    unsigned want;  /* the parts the shown view waits for */
    unsigned ready; /* the parts complete (a copy of d.ready, published under mu) */
} worker;

struct tp_tui {
    const tp_model *m;
    tp_an_opts an;
    size_t rank_idx;
    tp_tui_data d;
    int background;
    worker wk;
    tp_an_ranks job;  /* the job's ranks compared (TP_TUI_RANKS): one for every rank shown */
    int job_done;     /* written by whoever computes it (the worker), read once published */
    int job_stopped;  /* its computation gave up for a stop (a rank switch, quit) */
    int pending_view; /* a jump into a view still computing: shown when it is there; -1 */
    long pending_row;
    tp_tui_panel *panels[TP_TUI_N_VIEWS];
    int view;
    int w, h, ascii;
    int searching;
    int help; /* the `?` key reference is shown */
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
    size_t jumped, n_jumps; /* the row Enter showed last and how often (next: the next longest) */
} table_panel;

/* Enter on a table of names: that name's longest occurrence on the Timeline, then the next
 * longest on each further Enter on the same row. */
static void table_jump(tp_tui_panel *p) {
    table_panel *tp = (table_panel *)p;
    tp_tui_table *t = p->table;
    if (!p->jump_cats || !p->name_of || !t->nshown)
        return;
    size_t row = t->shown[t->sel];
    tp->n_jumps = row == tp->jumped ? tp->n_jumps + 1 : 0;
    tp->jumped = row;
    long ev = tp_tui_data_nth_longest(tp->d, p->name_of(p, row), p->jump_cats, tp->n_jumps);
    if (ev >= 0)
        p->jump_view = "timeline", p->jump_row = ev;
}

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
    if (tp_tui_table_nav(t, k, page))
        return 1;
    switch (k) {
    case TP_TUI_KEY_ENTER:
    case '\r':
        table_jump(p);
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

/* A table's keys, and those of a table whose Enter shows the row on the Timeline. */
static const tp_tui_keydoc table_keys[] = {
    {"Up/Down", "move"},        {"/", "search"}, {"s", "sort"}, {"PgUp/PgDn", "page"},
    {"Home/End", "first/last"},
};
static const tp_tui_keydoc jump_keys[] = {
    {"Up/Down", "move"}, {"Enter", "show on Timeline"}, {"/", "search"},
    {"s", "sort"},       {"PgUp/PgDn", "page"},         {"Home/End", "first/last"},
};

/* Makes Enter on table panel p show its row's name among rows of categories `cats`. */
static void table_jumps(tp_tui_panel *p, tp_tui_data *d, unsigned cats,
                        uint32_t (*name_of)(const tp_tui_panel *p, size_t row)) {
    table_panel *tp = (table_panel *)p;
    tp->d = d;
    tp->jumped = (size_t)-1;
    p->jump_cats = cats, p->name_of = name_of;
    p->keys = jump_keys, p->n_keys = (int)(sizeof jump_keys / sizeof *jump_keys);
}

static uint32_t kernel_name(const tp_tui_panel *p, size_t row) {
    const tp_tui_data *d = ((const table_panel *)p)->d;
    return row < d->a.k.n ? d->a.k.k[row].name : 0;
}

static uint32_t range_name(const tp_tui_panel *p, size_t row) {
    const tp_tui_data *d = ((const table_panel *)p)->d;
    return row < d->a.nv.n ? d->a.nv.r[row].name : 0;
}

static tp_tui_panel *table_panel_new(tp_tui_table *t, const char *name, const char *title,
                                     const char *noun) {
    table_panel *tp = calloc(1, sizeof *tp);
    if (!tp)
        abort();
    tp->super = (tp_tui_panel){.name = name,
                               .title = title,
                               .help = "Up/Down/PgUp/PgDn move",
                               .keys = table_keys,
                               .n_keys = (int)(sizeof table_keys / sizeof *table_keys),
                               .draw = table_draw,
                               .key = table_key,
                               .destroy = table_destroy,
                               .table = t};
    tp->noun = noun;
    return &tp->super;
}

/* ------------------------------------------------------------------ views */

#define CAT(c) (1u << (c))

static tp_tui_panel *kernels_new(tp_tui_data *d) {
    tp_tui_panel *p = table_panel_new(&d->kernels, "kernels", "Kernels", "kernels");
    table_jumps(p, d, CAT(TP_CAT_KERNEL) | CAT(TP_CAT_MEMCPY) | CAT(TP_CAT_MEMSET), kernel_name);
    return p;
}

static tp_tui_panel *ranges_new(tp_tui_data *d) {
    tp_tui_panel *p = table_panel_new(&d->ranges, "ranges", "Ranges", "ranges");
    table_panel *tp = (table_panel *)p;
    tp->index = tp_tui_data_range_index;
    p->show_row = table_show_row;
    table_jumps(p, d, CAT(TP_CAT_USER_ANNOTATION), range_name);
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

#define RA_SUMMARY (TP_RA_TEMPORAL | TP_RA_IDLE | TP_RA_KERNELS | TP_RA_NVTX | TP_RA_HOST)

/* The views, in the order of their keys (1..9) and of the title bar, with the parts of the
 * rank's data each draws (tp_tui_data_need): a view's panel is made, and its data computed,
 * the first time it is shown, so the first frame costs only what the first view shows. */
static const struct {
    const char *name;  /* --view name, and the panel's name */
    const char *title; /* the title bar's, and the panel's title */
    tp_tui_panel *(*make)(tp_tui_data *d);
    unsigned needs;
} views[TP_TUI_N_VIEWS] = {
    {"summary", "Summary", summary_new, RA_SUMMARY},
    {"timeline", "Timeline", timeline_new, TP_TUI_LANES},
    {"kernels", "Kernels", kernels_new, TP_RA_KERNELS},
    {"ranges", "Ranges", ranges_new, TP_RA_NVTX},
    {"copies", "Copies", copies_new, TP_RA_MEMORY},
    {"diagnosis", "Diagnosis", diagnosis_new, TP_RA_DIAGNOSIS | TP_RA_NVTX}, /* go to: Ranges */
    {"stacks", "Stacks", tp_tui_stacks_new, TP_TUI_VIEW},
    {"memory", "Memory", memory_new, TP_RA_MEMUSE},
    {"cpuops", "CPU ops", tp_tui_cpuops_new, TP_RA_CPUOPS},
    {"ranks", "Ranks", tp_tui_ranks_new, TP_TUI_RANKS},
};

int tp_tui_view_key(int i) {
    return i >= 0 && i < 9 ? '1' + i : i == 9 ? 'R' : 0; /* R: every rank ('0' zooms out) */
}

/* The view key k shows, -1 when k is no view's key. */
static int view_of_key(int k) {
    for (int i = 0; i < TP_TUI_N_VIEWS; i++)
        if (k == tp_tui_view_key(i))
            return i;
    return -1;
}

int tp_tui_view_index(const char *name) {
    for (int i = 0; name && i < TP_TUI_N_VIEWS; i++)
        if (!strcmp(name, views[i].name) || (name[0] == tp_tui_view_key(i) && !name[1]))
            return i;
    return -1;
}

const char *tp_tui_view_name(int i) {
    return i >= 0 && i < TP_TUI_N_VIEWS ? views[i].name : NULL;
}

/* ------------------------------------------------------------------ app */

static void worker_start(tp_tui *t);
static void worker_stop(tp_tui *t);

static void free_rank(tp_tui *t) {
    worker_stop(t);
    for (int i = 0; i < TP_TUI_N_VIEWS; i++)
        if (t->panels[i])
            t->panels[i]->destroy(t->panels[i]);
    memset(t->panels, 0, sizeof t->panels);
    tp_tui_data_free(&t->d);
}

/* Every part the views draw, in the order the background thread computes the parts no view
 * waits for: the first views' first. */
static unsigned all_parts(void) {
    unsigned all = 0;
    for (int i = 0; i < TP_TUI_N_VIEWS; i++)
        all |= views[i].needs;
    return all | TP_TUI_VIEW;
}

/* The next part to compute: the lowest bit the shown view waits for, else the lowest of the
 * rest, the job's ranks last (every rank's analyses); 0 when all are done. */
static unsigned next_part(const worker *w) {
    unsigned todo = w->want & ~w->ready;
    if (!todo)
        todo = all_parts() & ~w->ready;
    if (todo & ~TP_TUI_RANKS)
        todo &= ~TP_TUI_RANKS;
    return todo & -todo;
}

/* tp_an_ranks_run's filter for the job: every rank, unless the worker was asked to stop (a
 * rank switch, quit, all while the ranks are compared): then no further rank is analysed and
 * the comparison is thrown away, to be made again by the next rank's worker. */
static int job_keep(const tp_rank *r, const void *arg) {
    tp_tui *t = (tp_tui *)arg;
    (void)r;
    pthread_mutex_lock(&t->wk.mu);
    int stop = t->wk.stop;
    pthread_mutex_unlock(&t->wk.mu);
    t->job_stopped |= stop;
    return !stop;
}

/* The parts computed so far: the rank's, and the job's once compared. */
static unsigned parts_ready(const tp_tui *t) {
    return t->d.ready | (t->job_done ? TP_TUI_RANKS : 0);
}

/* Computes `parts`: the job's ranks compared (once for the session; a model of one rank has
 * nothing to compare), and the rank's data. */
static void compute(tp_tui *t, unsigned parts) {
    if ((parts & TP_TUI_RANKS) && !t->job_done) {
        if (t->m->n_ranks > 1) {
            t->job_stopped = 0;
            tp_an_ranks_run(t->m, &t->an, job_keep, t, &t->job);
            if (t->job_stopped)
                tp_an_ranks_free(&t->job);
        }
        t->job_done = !t->job_stopped;
    }
    tp_tui_data_need(&t->d, parts & ~TP_TUI_RANKS);
}

static void *work(void *arg) {
    tp_tui *t = arg;
    worker *w = &t->wk;
    pthread_mutex_lock(&w->mu);
    for (unsigned part; !w->stop && (part = next_part(w));) {
        pthread_mutex_unlock(&w->mu);
        compute(t, part); /* with its view first, when an analysis */
        pthread_mutex_lock(&w->mu);
        w->ready = parts_ready(t);
        pthread_cond_broadcast(&w->cv);
    }
    w->running = 0;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* Starts the background thread on the rank's data (falls back to computing on first frames
 * when it cannot start). */
static void worker_start(tp_tui *t) {
    worker *w = &t->wk;
    w->stop = 0, w->want = 0, w->ready = parts_ready(t);
    w->running = 1;
    if (pthread_create(&w->th, NULL, work, t))
        w->running = 0, t->background = 0;
    else
        w->started = 1;
}

/* Stops the background thread after its current part (and waits for it). */
static void worker_stop(tp_tui *t) {
    if (!t->background || !t->wk.started) /* none yet: the first rank's load */
        return;
    pthread_mutex_lock(&t->wk.mu);
    t->wk.stop = 1;
    pthread_mutex_unlock(&t->wk.mu);
    pthread_join(t->wk.th, NULL);
    t->wk.started = 0;
}

/* 1 when parts `needs` are computed; else asks the background thread for them first. */
static int have(tp_tui *t, unsigned needs) {
    if (!t->background)
        return compute(t, needs), 1;
    if (needs & TP_RA_ALL)
        needs |= TP_TUI_VIEW;
    pthread_mutex_lock(&t->wk.mu);
    int ok = !(needs & ~t->wk.ready);
    if (!ok)
        t->wk.want = needs;
    pthread_mutex_unlock(&t->wk.mu);
    return ok;
}

/* Waits until the background thread has computed parts `needs` (it does them first). */
static void wait_for(tp_tui *t, unsigned needs) {
    if (needs & TP_RA_ALL)
        needs |= TP_TUI_VIEW;
    pthread_mutex_lock(&t->wk.mu);
    t->wk.want = needs;
    while ((needs & ~t->wk.ready) && t->wk.running)
        pthread_cond_wait(&t->wk.cv, &t->wk.mu);
    pthread_mutex_unlock(&t->wk.mu);
}

/* View i's panel, made (with the data it draws) the first time it is asked for; NULL while
 * the background thread computes that data. */
static tp_tui_panel *panel(tp_tui *t, int i) {
    if (!t->panels[i]) {
        if (!have(t, views[i].needs))
            return NULL;
        t->panels[i] = views[i].make(&t->d);
        assert(!strcmp(t->panels[i]->name, views[i].name));
        assert(!strcmp(t->panels[i]->title, views[i].title));
        t->panels[i]->ascii = t->ascii;
        if (t->pending_view == i && t->panels[i]->show_row)
            t->panels[i]->show_row(t->panels[i], t->pending_row);
        t->pending_view = t->pending_view == i ? -1 : t->pending_view;
    }
    return t->panels[i];
}

static void load_rank(tp_tui *t, size_t idx) {
    free_rank(t);
    t->rank_idx = idx;
    tp_tui_data_open(&t->d, t->m, &t->m->ranks[idx], &t->an);
    t->d.job = &t->job;
    t->searching = 0;
    t->rendered = 0;
    t->pending_view = -1;
    if (t->background)
        worker_start(t);
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
    t->background = o->background;
    t->pending_view = -1;
    pthread_mutex_init(&t->wk.mu, NULL);
    pthread_cond_init(&t->wk.cv, NULL);
    tp_tui_resize(t, o->width > 0 ? o->width : 120, o->height > 0 ? o->height : 40);
    load_rank(t, (size_t)(r - m->ranks));
    *out = t;
    return TP_OK;
}

void tp_tui_close(tp_tui *t) {
    if (!t)
        return;
    free_rank(t);
    tp_an_ranks_free(&t->job);
    pthread_mutex_destroy(&t->wk.mu);
    pthread_cond_destroy(&t->wk.cv);
    tp_tui_grid_free(&t->grid);
    free(t);
}

void tp_tui_resize(tp_tui *t, int w, int h) {
    t->w = w < 1 ? 1 : w > 1000 ? 1000 : w;
    t->h = h < 1 ? 1 : h > 1000 ? 1000 : h;
    t->rendered = 0;
}

unsigned tp_tui_computed(tp_tui *t) {
    if (!t->background)
        return parts_ready(t);
    pthread_mutex_lock(&t->wk.mu);
    unsigned r = t->wk.ready;
    pthread_mutex_unlock(&t->wk.mu);
    return r;
}

int tp_tui_computing(tp_tui *t) {
    return !t->panels[t->view] && !have(t, views[t->view].needs);
}

void tp_tui_wait_all(tp_tui *t) {
    if (t->background && t->wk.started) /* the thread ends when all is done */
        pthread_join(t->wk.th, NULL);
    t->background = 0, t->wk.started = 0;
    compute(t, all_parts());
}

int tp_tui_current_view(const tp_tui *t) {
    return t->view;
}

static void search_key(tp_tui *t, int k) {
    tp_tui_panel *p = panel(t, t->view);
    size_t n = strlen(t->query);
    if (k == TP_TUI_KEY_ENTER || k == '\r') {
        t->searching = 0;
        if (!p->table) { /* a find: keep the text and go to its next occurrence */
            snprintf(p->find_kept, sizeof p->find_kept, "%s", t->query);
            p->find(p, p->find_kept, 1);
        }
        return;
    }
    if (k == TP_TUI_KEY_ESC && !p->table) {
        t->searching = 0; /* the prompt closes; what was kept stays kept */
        return;
    }
    if (k == TP_TUI_KEY_ESC)
        t->searching = 0, n = 0;
    else if ((k == TP_TUI_KEY_BACKSPACE || k == 127 || k == 8) && n > 0)
        n--;
    else if (k >= 0x20 && k < 0x100 && k != 127 && n + 1 < sizeof t->query)
        t->query[n++] = (char)k; /* UTF-8 bytes arrive one by one and are kept as bytes */
    t->query[n] = 0;
    if (p->table)
        tp_tui_table_search(p->table, t->query);
}

/* Esc with a kept search (a table's filter, a Timeline find) clears it; 1 when it did. */
static int clear_kept(tp_tui_panel *p) {
    if (p->table && p->table->search[0]) {
        tp_tui_table_search(p->table, "");
        return 1;
    }
    if (p->find && p->find_kept[0]) {
        p->find_kept[0] = 0;
        return 1;
    }
    return 0;
}

static int page_rows(const tp_tui *t) {
    return t->h - 5 > 1 ? t->h - 5 : 1;
}

/* Shows the row panel p asked for in the view it named. */
static void jump(tp_tui *t, tp_tui_panel *p) {
    int v = tp_tui_view_index(p->jump_view);
    p->jump_view = NULL;
    if (v < 0)
        return;
    tp_tui_panel *to = panel(t, v);
    if (!to) { /* still computing: shown once it is there */
        t->view = v, t->pending_view = v, t->pending_row = p->jump_row;
        return;
    }
    if (!to->show_row)
        return;
    t->view = v;
    to->show_row(to, p->jump_row);
}

static void load_rank(tp_tui *t, size_t idx);

/* A key while the shown view waits for its data: the keys of every view (quit, views, rank)
 * act at once; any other key waits for the view's data, so no key typed ahead is lost. Returns
 * 1 to quit, 0 when the key was taken, -1 when the view is there now to take it. */
static int waiting_key(tp_tui *t, int k) {
    if (k == 'q' || k == 'Q')
        return 1;
    if (k == 'r' && t->m->n_ranks > 1)
        load_rank(t, (t->rank_idx + 1) % t->m->n_ranks);
    else if (view_of_key(k) >= 0)
        t->view = view_of_key(k);
    else if (k == TP_TUI_KEY_TAB)
        t->view = (t->view + 1) % TP_TUI_N_VIEWS;
    else if (k == TP_TUI_KEY_BTAB)
        t->view = (t->view + TP_TUI_N_VIEWS - 1) % TP_TUI_N_VIEWS;
    else
        return wait_for(t, views[t->view].needs), -1;
    return 0;
}

int tp_tui_key(tp_tui *t, int k) {
    tp_tui_panel *p = panel(t, t->view);
    int w = p ? -1 : waiting_key(t, k);
    if (w >= 0)
        return t->rendered = 0, w;
    if (!(p = panel(t, t->view)))
        return 0; /* ALWAYS there after wait_for, unless the thread stopped */
    if (!t->rendered)
        tp_tui_render(t); /* panels lay themselves out when drawn: keys act on that layout */
    t->rendered = 0;
    if (t->searching && (p->table || p->find))
        return search_key(t, k), 0;
    if (t->help) { /* any key closes the key reference (and does nothing else) */
        t->help = 0;
        return 0;
    }
    if (k == 'q' || k == 'Q')
        return 1;
    if (k == '?')
        t->help = 1;
    else if (k == TP_TUI_KEY_ESC && clear_kept(p))
        return 0;
    else if (view_of_key(k) >= 0)
        t->view = view_of_key(k);
    else if (k == TP_TUI_KEY_TAB)
        t->view = (t->view + 1) % TP_TUI_N_VIEWS;
    else if (k == TP_TUI_KEY_BTAB)
        t->view = (t->view + TP_TUI_N_VIEWS - 1) % TP_TUI_N_VIEWS;
    else if (k == 'r' && t->m->n_ranks > 1)
        load_rank(t, (t->rank_idx + 1) % t->m->n_ranks);
    else if (k == 's' && p->table)
        tp_tui_table_next_sort(p->table);
    else if (k == '/' && (p->table || p->find)) {
        t->searching = 1;
        snprintf(t->query, sizeof t->query, "%s", p->table ? p->table->search : p->find_kept);
    } else if (p->key(p, k, page_rows(t)) && p->jump_view) {
        jump(t, p);
    } else if (p->jump_rank) { /* the panel goes with its rank: read it first */
        size_t idx = p->jump_rank - 1;
        p->jump_rank = 0;
        load_rank(t, idx);
        t->view = 0;
    }
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
        full += 5 + (int)strlen(views[i].title); /* "  2 Timeline " */
    int named = x + full <= g->w - 32;           /* leave room for the drop warning (31 columns) */
    for (int i = 0; i < TP_TUI_N_VIEWS; i++) {
        if (i == t->view)
            x += tp_tui_grid_printf(g, x, 0, g->w, TP_TUI_A_TITLE, " [%c %s]", tp_tui_view_key(i),
                                    views[i].title);
        else if (named)
            x += tp_tui_grid_printf(g, x, 0, g->w, TP_TUI_A_TITLE, "  %c %s ", tp_tui_view_key(i),
                                    views[i].title);
        else
            x += tp_tui_grid_printf(g, x, 0, g->w, TP_TUI_A_TITLE, " %c", tp_tui_view_key(i));
    }
    const tp_an_drops *dr = &t->d.drops; /* the report's line says the same, in full */
    if (dr->lost)
        tp_tui_grid_printf(g, x, 0, g->w, TP_TUI_A_WARN, "  %.2f %% dropped: lower bounds",
                           100 * dr->share);
}

/* Keys of every view: the key bar shows `first` before the view's keys and `rest` after. */
/* the views' keys (tp_tui_view_key): 1-9, then R (the Ranks view, beside r) */
static const tp_tui_keydoc first_keys[] = {{"q", "Quit"}, {"r", "Rank"}};
static const tp_tui_keydoc rest_keys[] = {{"Tab/1-9", "View"}};
static const tp_tui_keydoc global_keys[] = {
    {"?", "this key reference"},
    {"q", "quit"},
    {"Tab/S-Tab", "next/previous view"},
    {"1-9", "view by number"},
    {"R", "the Ranks view: every rank side by side"},
    {"/", "search (tables), find (Timeline)"},
    {"Esc", "clear a kept search or find"},
    {"r", "next rank"},
};

static void draw_help(tp_tui *t, tp_tui_grid *g, int y) {
    const tp_tui_panel *p = panel(t, t->view);
    if (!p) {
        tp_tui_grid_fill(g, y, TP_TUI_A_TITLE);
        tp_tui_grid_printf(g, 0, y, g->w, TP_TUI_A_KEY, " q Quit  Tab/1-9 View");
        return;
    }
    if (t->searching) {
        tp_tui_grid_fill(g, y, TP_TUI_A_TITLE);
        tp_tui_grid_printf(g, 0, y, g->w, TP_TUI_A_KEY, " %s: %s_   Enter %s  Esc %s",
                           p->table ? "Search" : "Find", t->query, p->table ? "keep" : "find next",
                           p->table ? "clear" : "cancel");
        return;
    }
    const char *kept = p->table ? p->table->search : p->find ? p->find_kept : "";
    tp_tui_help_bar(g, y, p, kept, first_keys, t->m->n_ranks > 1 ? 2 : 1, rest_keys, 1);
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
    tp_tui_panel *p = panel(t, t->view);
    draw_title(t, g);
    if (!p && views[t->view].needs == TP_TUI_RANKS) /* every rank's analyses */
        tp_tui_grid_printf(g, 1, s.body_top + 1, g->w - 1, TP_TUI_A_NORMAL,
                           "computing the %s view (comparing %zu ranks)...", views[t->view].title,
                           t->m->n_ranks);
    else if (!p) /* the background thread is computing what this view shows */
        tp_tui_grid_printf(g, 1, s.body_top + 1, g->w - 1, TP_TUI_A_NORMAL,
                           "computing the %s view (%zu events)...", views[t->view].title,
                           t->d.r->ev.n);
    else if (t->help)
        tp_tui_help_draw(g, s.body_top, s.body_h, p, global_keys,
                         (int)(sizeof global_keys / sizeof *global_keys) -
                             (t->m->n_ranks > 1 ? 0 : 1));
    else
        p->draw(p, g, s.body_top, s.body_h);
    draw_help(t, g, s.help_row);
    return g;
}

tp_status tp_tui_snapshot(tp_tui *t, FILE *out) {
    if (!tp_tui_screen_split(t->w, t->h).ok)
        return TP_ERR_ARG; /* a frame that says "too small" is no snapshot */
    const tp_tui_grid *g = tp_tui_render(t);
    char buf[16 * 1024];
    for (int y = 0; y < g->h; y++) {
        tp_tui_grid_row(g, y, buf, sizeof buf, 1);
        fprintf(out, "%s\n", buf);
    }
    errno = 0; /* a failed fflush says why; a flag from an earlier failed write does not */
    return fflush(out) || ferror(out) ? TP_ERR_IO : TP_OK;
}
