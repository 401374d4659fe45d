/* tp_tui_ranks: the Ranks view (see the header). Table row i is rank row i of the job
 * (d->job->r, by rank); the text under the table is laid out like the Diagnosis view's. */
#include "tp_tui_ranks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_diagnose.h"
#include "tp_tui_layout.h"
#include "tp_units.h"

typedef struct {
    tp_tui_panel super;
    const tp_tui_data *d;
    tp_tui_table t;
    size_t first; /* the first finding shown ([ and ] scroll them) */
} tp_tui_ranks;

#define NONE "-"

/* The rank column: the rank, then the ids of the cross-rank findings about it, so that a
 * search for "straggler" keeps the ranks it names. Fixed width, so the text sort is the
 * rank order. */
static void rank_cell(const tp_an_ranks *x, const tp_an_rank_row *r, char *buf, size_t n) {
    size_t len = (size_t)snprintf(buf, n, "%6d", r->rank);
    const char *sep = "  ";
    for (size_t i = 0; i < x->n_findings && len < n; i++)
        if (x->f[i].rank == r->rank) {
            len += (size_t)snprintf(buf + len, n - len, "%s%s", sep, x->f[i].id);
            sep = ", ";
        }
}

static const char *time_cell(char *buf, size_t n, int known, double ns) {
    return known ? tp_units_dur(buf, n, ns) : NONE;
}

/* The exposed communication, or for a rank without a device whose waits were sampled those
 * waits, marked "*" (as the report's line under its table and the HTML cell say). */
static const char *comm_cell(char *buf, size_t n, const tp_an_rank_row *r) {
    if (r->comm_ns > 0)
        return tp_units_dur(buf, n, (double)r->exposed_comm_ns);
    if (!tp_an_rank_host_waits(r))
        return NONE;
    char d[32];
    snprintf(buf, n, "%s*", tp_units_dur(d, sizeof d, (double)r->host_wait_ns));
    return buf;
}

static void build(tp_tui_ranks *s) {
    static const tp_tui_col cols[] = {
        {"rank  finding", 0, 0}, {"steps", 7, 1},        {"step p50", 10, 1},
        {"step p90", 10, 1},     {"util", 8, 1},         {"compute", 10, 1},
        {"exposed comm", 12, 1}, {"memory peak", 11, 1}, {"data wait", 10, 1},
    };
    const tp_an_ranks *x = s->d->job;
    tp_tui_table_init(&s->t, cols, (int)(sizeof cols / sizeof *cols), 0);
    s->t.empty = "(open a job's folder or several ranks' traces to compare them: trainprof tui "
                 "DIR, or TRACE TRACE...)";
    for (size_t i = 0; x && i < x->n; i++) {
        const tp_an_rank_row *r = &x->r[i];
        char name[160], steps[24], p50[32], p90[32], util[24], comp[32], comm[32], mem[32],
            wait[32];
        double pct = r->span_ns > 0 ? 100.0 * (double)r->busy_ns / (double)r->span_ns : NAN;
        rank_cell(x, r, name, sizeof name);
        snprintf(steps, sizeof steps, "%zu", r->n_steps);
        if (isnan(pct))
            snprintf(util, sizeof util, NONE);
        else
            snprintf(util, sizeof util, "%.2f %%", pct);
        if (r->mem_peak_bytes >= 0)
            tp_units_bytes(mem, sizeof mem, (double)r->mem_peak_bytes);
        else
            snprintf(mem, sizeof mem, NONE);
        const char *txt[] = {name,
                             steps,
                             time_cell(p50, sizeof p50, r->n_steps > 0, r->step_p50_ns),
                             time_cell(p90, sizeof p90, r->n_steps > 0, r->step_p90_ns),
                             util,
                             tp_units_dur(comp, sizeof comp, (double)r->compute_ns),
                             comm_cell(comm, sizeof comm, r),
                             mem,
                             tp_units_dur(wait, sizeof wait, (double)r->data_wait_ns)};
        double key[] = {0,
                        (double)r->n_steps,
                        r->n_steps ? r->step_p50_ns : -1,
                        r->n_steps ? r->step_p90_ns : -1,
                        isnan(pct) ? -1 : pct,
                        (double)r->compute_ns,
                        r->comm_ns || tp_an_rank_host_waits(r) ? (double)tp_an_rank_waits(r) : -1,
                        (double)r->mem_peak_bytes,
                        (double)r->data_wait_ns};
        tp_tui_table_add(&s->t, txt, key);
    }
    tp_tui_table_refresh(&s->t);
    long shown = x ? tp_an_ranks_find(x, s->d->r->rank) : -1;
    if (shown >= 0)
        tp_tui_table_select(&s->t, (size_t)shown);
}

/* `lead` then `text` wrapped to the width from row *y on (up to row `end`), continuation
 * lines indented by `indent`: the Diagnosis view's layout. Returns 1 when rows ran out. */
static int wrapped(tp_tui_grid *g, int *y, int end, tp_tui_attr a, const char *lead, int indent,
                   const char *text) {
    int cols = g->w - indent > 10 ? g->w - indent : 10;
    for (int first = 1; first || *text; first = 0) {
        if (*y >= end)
            return 1;
        const char *next;
        int len = (int)tp_tui_wrap(text, cols, &next);
        if (first)
            tp_tui_grid_printf(g, 0, (*y)++, g->w, a, "%-*s%.*s", indent, lead, len, text);
        else
            tp_tui_grid_printf(g, indent, (*y)++, g->w - indent, a, "%.*s", len, text);
        text = next;
    }
    return 0;
}

/* The medians and the cross-rank findings in rows [y, end), as the report prints them. */
static void draw_findings(const tp_an_ranks *x, size_t first, tp_tui_grid *g, int y, int end) {
    char b1[32], b2[32], lead[64];
    if (y < end && !isnan(x->median_step_p50_ns))
        tp_tui_grid_printf(
            g, 0, y++, g->w, TP_TUI_A_NORMAL, "median step over ranks %s%s%s",
            tp_units_dur(b1, sizeof b1, x->median_step_p50_ns),
            isnan(x->median_mem_peak) ? "" : ", median memory peak ",
            isnan(x->median_mem_peak) ? "" : tp_units_bytes(b2, sizeof b2, x->median_mem_peak));
    if (y < end && first)
        tp_tui_grid_printf(g, 0, y++, g->w, TP_TUI_A_HEADER,
                           "Cross-rank findings (from %zu of %zu: [ and ] scroll)", first + 1,
                           x->n_findings);
    else if (y < end)
        tp_tui_grid_put(g, 0, y++, "Cross-rank findings", g->w, TP_TUI_A_HEADER);
    if (!x->n_findings && y < end)
        tp_tui_grid_printf(g, 2, y++, g->w - 2, TP_TUI_A_NORMAL, "%s", tp_an_ranks_quiet(x));
    size_t i = first;
    int cut = 0;
    for (; i < x->n_findings && !cut; i++) {
        const tp_an_rank_finding *f = &x->f[i];
        snprintf(lead, sizeof lead, "  %zu. [%-6s %3.0f%%] ", i + 1, tp_diag_level(f->severity),
                 100 * f->severity);
        cut = wrapped(g, &y, end, TP_TUI_A_HEADER, lead, (int)strlen(lead), f->title) ||
              wrapped(g, &y, end, TP_TUI_A_NORMAL, "     evidence:  ", 16, f->evidence) ||
              wrapped(g, &y, end, TP_TUI_A_NORMAL, "     fix:       ", 16, f->advice);
    }
    if (!cut && i >= x->n_findings)
        return;
    tp_tui_grid_fill(g, end - 1, TP_TUI_A_NORMAL); /* cut: say so on the last row */
    tp_tui_grid_printf(g, 0, end - 1, g->w, TP_TUI_A_KEY,
                       "  ... more findings below (] scrolls, trainprof report shows all)");
}

static void draw(tp_tui_panel *p, tp_tui_grid *g, int y, int h) {
    tp_tui_ranks *s = (tp_tui_ranks *)p;
    const tp_an_ranks *x = s->d->job;
    if (!x || x->n < 2)
        tp_tui_grid_put(g, 0, y, "one rank in this trace: nothing to compare", g->w,
                        TP_TUI_A_NORMAL);
    else
        tp_tui_grid_printf(g, 0, y, g->w, TP_TUI_A_NORMAL, "%zu ranks, sorted by %s%s%s%s",
                           s->t.nrows, s->t.cols[s->t.sort_col].title,
                           s->t.search[0] ? "; search \"" : "", s->t.search,
                           s->t.search[0] ? "\"" : "");
    /* the table as tall as its header and rows (half the body at most when findings
     * follow), then a blank line and the findings */
    int table_h = 1 + (int)(s->t.nrows ? s->t.nrows : 1) + s->t.n_notes;
    int most = x && x->n > 1 ? (h - 1) / 2 : h - 1;
    table_h = table_h > most ? (most > 3 ? most : 3) : table_h;
    tp_tui_table_draw(&s->t, g, y + 1, table_h);
    if (x && x->n > 1)
        draw_findings(x, s->first, g, y + 2 + table_h, y + h);
}

static int key(tp_tui_panel *p, int k, int page) {
    tp_tui_ranks *s = (tp_tui_ranks *)p;
    if (tp_tui_table_nav(&s->t, k, page))
        return 1;
    size_t nf = s->d->job ? s->d->job->n_findings : 0;
    if (k == ']' || k == '[') {
        s->first = k == ']' ? (s->first + 1 < nf ? s->first + 1 : s->first)
                            : (s->first ? s->first - 1 : 0);
        return 1;
    }
    if ((k != TP_TUI_KEY_ENTER && k != '\r') || !s->t.nshown || !s->d->job)
        return 0;
    const tp_rank *r = tp_model_rank(s->d->m, s->d->job->r[s->t.shown[s->t.sel]].rank);
    if (r)
        p->jump_rank = (size_t)(r - s->d->m->ranks) + 1;
    return 1;
}

static void destroy(tp_tui_panel *p) {
    tp_tui_ranks *s = (tp_tui_ranks *)p;
    tp_tui_table_free(&s->t);
    free(s);
}

static const tp_tui_keydoc keys[] = {
    {"Up/Down", "move"},
    {"Enter", "open the rank"},
    {"[/]", "scroll the findings"},
    {"/", "search"},
    {"s", "sort"},
    {"PgUp/PgDn", "page"},
    {"Home/End", "first/last"},
};

tp_tui_panel *tp_tui_ranks_new(tp_tui_data *d) {
    tp_tui_ranks *s = calloc(1, sizeof *s);
    if (!s)
        abort();
    s->d = d;
    build(s);
    s->super = (tp_tui_panel){.name = "ranks",
                              .title = "Ranks",
                              .help = "Up/Down/PgUp/PgDn move",
                              .keys = keys,
                              .n_keys = (int)(sizeof keys / sizeof *keys),
                              .draw = draw,
                              .key = key,
                              .destroy = destroy,
                              .table = &s->t};
    return &s->super;
}
