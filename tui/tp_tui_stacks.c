/* tp_tui_stacks: the Stacks view (see the header). The table lists one row per group, in the
 * analysis' order, so table row i is group i; the detail pane reads the group itself. */
#include "tp_tui_stacks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_an_stacks.h"
#include "tp_units.h"

typedef struct {
    tp_tui_panel super;
    const tp_tui_data *d;
    tp_an_stacks st;
    tp_tui_table t;
} tp_tui_stacks;

#define DETAIL_MIN 6 /* rows kept for the selected group's frames when the table is long */

/* A group's row: its innermost frame, or, where library frames lead to that call from the
 * program's own code (a Python program's call into torch), the program's line first, then the
 * call: "train.py:59 in step -> functional.py:2846 in batch_norm", so that a narrow column
 * cuts the library's name, not the line of yours. */
static void call_label(const tp_an_stack_row *r, char *buf, size_t n) {
    char call[512];
    if (r->n_frames > 1 && r->frames[1].skipped) {
        size_t len = strlen(tp_an_frame_label(&r->frames[1], buf, n));
        snprintf(buf + len, n - len, " -> %s", tp_an_frame_label(&r->frames[0], call, sizeof call));
    } else {
        tp_an_frame_label(&r->frames[0], buf, n);
    }
}

static void build(tp_tui_stacks *s) {
    static const tp_tui_col cols[] = {{"launching stack (your line -> the call)", 0, 0},
                                      {"GPU time", 10, 1},
                                      {"share", 8, 1},
                                      {"ops", 8, 1},
                                      {"kernels", 8, 1}};
    tp_tui_table_init(&s->t, cols, 5, 1);
    s->t.empty = "(no GPU op launched from a recorded stack: record with --stacks api or all)";
    for (size_t i = 0; i < s->st.n; i++) {
        const tp_an_stack_row *r = &s->st.s[i];
        char label[512], gpu[32], share[32], ops[24], nk[24];
        double pct = s->st.gpu_ns > 0 ? 100.0 * (double)r->gpu_ns / (double)s->st.gpu_ns : 0;
        call_label(r, label, sizeof label);
        snprintf(share, sizeof share, "%.2f %%", pct);
        snprintf(ops, sizeof ops, "%zu", r->count);
        snprintf(nk, sizeof nk, "%zu", r->n_k);
        const char *txt[] = {label, tp_units_dur(gpu, sizeof gpu, (double)r->gpu_ns), share, ops,
                             nk};
        double key[] = {0, (double)r->gpu_ns, pct, (double)r->count, (double)r->n_k};
        tp_tui_table_add(&s->t, txt, key);
    }
    if (s->st.no_stack) {
        char line[128], d[32];
        snprintf(line, sizeof line, "without a stack: %zu ops, %s", s->st.no_stack,
                 tp_units_dur(d, sizeof d, (double)s->st.no_stack_ns));
        tp_tui_table_note(&s->t, line);
    }
    tp_tui_table_refresh(&s->t);
}

/* The selected group's frames and kernels in rows [y, y + h). */
static void draw_detail(tp_tui_stacks *s, tp_tui_grid *g, int y, int h) {
    if (!s->t.nshown || h < 2)
        return;
    const tp_an_stack_row *r = &s->st.s[s->t.shown[s->t.sel]];
    char label[512], d[32], gap[64];
    int line = 0;
    tp_tui_grid_printf(g, 0, y + line++, g->w, TP_TUI_A_HEADER,
                       "stack (up to %d frames, innermost first):", s->st.depth);
    for (size_t k = 0; k < r->n_frames && line < h; k++) {
        if (r->frames[k].skipped)
            tp_tui_grid_printf(g, 2, y + line++, g->w - 2, TP_TUI_A_NORMAL, "%s",
                               tp_an_frame_gap(&r->frames[k], gap, sizeof gap));
        if (line < h)
            tp_tui_grid_printf(g, 2, y + line++, g->w - 2, TP_TUI_A_NORMAL, "%s",
                               tp_an_frame_label(&r->frames[k], label, sizeof label));
    }
    for (size_t k = 0; k < r->n_k && line < h; k++)
        tp_tui_grid_printf(g, 2, y + line++, g->w - 2, TP_TUI_A_NORMAL, "-> %s  x%zu  %s",
                           tp_model_str(s->d->m, r->k[k].name), r->k[k].count,
                           tp_units_dur(d, sizeof d, (double)r->k[k].gpu_ns));
}

static void draw(tp_tui_panel *p, tp_tui_grid *g, int y, int h) {
    tp_tui_stacks *s = (tp_tui_stacks *)p;
    tp_tui_grid_printf(g, 0, y, g->w, TP_TUI_A_NORMAL,
                       "%zu launching stacks (up to %d frames), sorted by %s", s->t.nrows,
                       s->st.depth, s->t.cols[s->t.sort_col].title);
    int detail = s->t.nshown ? DETAIL_MIN + (int)s->st.depth : 0;
    int table_h = h - 1 - detail;
    if (table_h < 3)
        table_h = h - 1 < 3 ? h - 1 : 3;
    tp_tui_table_draw(&s->t, g, y + 1, table_h);
    draw_detail(s, g, y + 1 + table_h, h - 1 - table_h);
}

static int key(tp_tui_panel *p, int k, int page) {
    return tp_tui_table_nav(p->table, k, page);
}

static void destroy(tp_tui_panel *p) {
    tp_tui_stacks *s = (tp_tui_stacks *)p;
    tp_tui_table_free(&s->t);
    tp_an_stacks_free(&s->st);
    free(s);
}

tp_tui_panel *tp_tui_stacks_new(tp_tui_data *d) {
    tp_tui_stacks *s = calloc(1, sizeof *s);
    if (!s)
        abort();
    s->d = d;
    tp_an_stacks_run(&d->a.v, d->a.v.opts.stack_depth, &s->st);
    build(s);
    s->super = (tp_tui_panel){.name = "stacks",
                              .title = "Stacks",
                              .help = "Up/Down/PgUp/PgDn move",
                              .draw = draw,
                              .key = key,
                              .destroy = destroy,
                              .table = &s->t};
    return &s->super;
}
