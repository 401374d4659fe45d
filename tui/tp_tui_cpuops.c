/* tp_tui_cpuops: the CPU ops view (see the header). The panel owns its table, built once from
 * the rank's tp_an_cpuops, the same rows `trainprof report` prints. */
#include "tp_tui_cpuops.h"

#include <stdio.h>
#include <stdlib.h>

#include "tp_units.h"

typedef struct {
    tp_tui_panel super;
    tp_tui_table t;
    const tp_tui_data *d;
    size_t jumped, n_jumps; /* the row Enter showed last and how often (next: the next longest) */
} cpuops_panel;

/* What a row of the table can be on the Timeline: framework ops and annotation ranges. */
#define CPUOP_CATS                                                                                 \
    ((1u << TP_CAT_CPU_OP) | (1u << TP_CAT_USER_ANNOTATION) | (1u << TP_CAT_PYTHON_FUNCTION))

#define DUR(buf, x) tp_units_dur(buf, sizeof buf, (double)(x))

static void fill(cpuops_panel *p, const tp_tui_data *d) {
    /* Columns in order of importance: narrow terminals drop them from the right. */
    static const tp_tui_col cols[] = {
        {"CPU op / range", 0, 0}, {"count", 8, 1},         {"self", 10, 1},
        {"self %", 8, 1},         {"total", 10, 1},        {"mean", 10, 1},
        {"kind", 6, 0},           {"input shapes", 28, 0}, {"forward op", 24, 0}};
    const tp_an_cpuops *c = &d->a.ops;
    tp_tui_table_init(&p->t, cols, 9, c->by_total ? 4 : 2); /* the column the table sorts by */
    p->t.empty = "(no framework ops or annotation ranges in this rank)";
    for (size_t i = 0; i < c->n; i++) {
        const tp_an_cpuop *x = &c->op[i];
        char cnt[24], pct[24], b[4][32];
        double share = c->self_sum > 0 ? 100.0 * (double)x->self / (double)c->self_sum : 0;
        snprintf(cnt, sizeof cnt, "%zu", x->count);
        snprintf(pct, sizeof pct, "%.2f %%", share);
        const char *txt[] = {tp_model_str(d->m, x->name),
                             cnt,
                             DUR(b[0], x->self),
                             pct,
                             DUR(b[1], x->total),
                             DUR(b[2], x->mean),
                             tp_an_cpuop_kind(x),
                             tp_model_str(d->m, x->shapes),
                             tp_model_str(d->m, x->fwd_name)};
        double key[] = {
            0, (double)x->count, (double)x->self, share, (double)x->total, x->mean, x->cat, 0, 0};
        tp_tui_table_add(&p->t, txt, key);
    }
    tp_tui_table_refresh(&p->t);
}

static void draw(tp_tui_panel *tp, tp_tui_grid *g, int y, int h) {
    cpuops_panel *p = (cpuops_panel *)tp;
    char st[160];
    int n = snprintf(st, sizeof st, "%zu CPU ops and ranges, sorted by %s (self: not in a child)",
                     p->t.nrows, p->t.cols[p->t.sort_col].title);
    if (p->t.search[0])
        snprintf(st + n, sizeof st - (size_t)n, "; search \"%s\": %zu shown", p->t.search,
                 p->t.nshown);
    tp_tui_grid_put(g, 0, y, st, g->w, TP_TUI_A_NORMAL);
    tp_tui_table_draw(&p->t, g, y + 1, h - 1);
}

/* Enter: the row's name at its longest occurrence on the Timeline, then the next longest on
 * each further Enter on the same row, as the Kernels and Ranges views do. */
static int key(tp_tui_panel *tp, int k, int page) {
    cpuops_panel *p = (cpuops_panel *)tp;
    if (k != TP_TUI_KEY_ENTER && k != '\r')
        return tp_tui_table_nav(tp->table, k, page);
    if (!p->t.nshown)
        return 1;
    size_t row = p->t.shown[p->t.sel];
    if (row >= p->d->a.ops.n)
        return 1;
    p->n_jumps = row == p->jumped ? p->n_jumps + 1 : 0;
    p->jumped = row;
    long ev = tp_tui_data_nth_longest(p->d, p->d->a.ops.op[row].name, CPUOP_CATS, p->n_jumps);
    if (ev >= 0)
        tp->jump_view = "timeline", tp->jump_row = ev;
    return 1;
}

static void destroy(tp_tui_panel *tp) {
    cpuops_panel *p = (cpuops_panel *)tp;
    tp_tui_table_free(&p->t);
    free(p);
}

tp_tui_panel *tp_tui_cpuops_new(tp_tui_data *d) {
    cpuops_panel *p = calloc(1, sizeof *p);
    if (!p)
        abort();
    fill(p, d);
    p->d = d;
    p->jumped = (size_t)-1;
    p->super = (tp_tui_panel){.name = "cpuops",
                              .title = "CPU ops",
                              .help = "Up/Down/PgUp/PgDn move, Enter show on Timeline",
                              .draw = draw,
                              .key = key,
                              .destroy = destroy,
                              .table = &p->t};
    return &p->super;
}
