/* tp_tui_stacks: the Stacks view (see the header). The table lists one row per group, in the
 * analysis' order, so table row i is group i; the detail pane reads the group itself. Two
 * sources, one table: the launching stacks (GPU time), or the CPU samples (`record --sample`;
 * key c switches). */
#include "tp_tui_stacks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_an_samples.h"
#include "tp_an_stacks.h"
#include "tp_units.h"

typedef struct {
    tp_tui_panel super;
    const tp_tui_data *d;
    tp_an_stacks st;
    tp_an_samples sa; /* run the first time samples are shown */
    int samples;      /* 1: the table shows the CPU samples */
    int sa_ran;
    tp_tui_table t;
} tp_tui_stacks;

static const tp_tui_keydoc keys_launch[] = {{"c", "CPU samples"}};
static const tp_tui_keydoc keys_samples[] = {{"c", "launching stacks"}};

#define DETAIL_MIN 6 /* rows kept for the selected group's frames when the table is long */

/* A group's row: its innermost frame and its caller ("train.py:7 in augment < train.py:31 in
 * main"), or, where library frames lead to that call from the program's own code (a Python
 * program's call into torch), the program's line first, then the call: "train.py:59 in step ->
 * functional.py:2846 in batch_norm", so that a narrow column cuts the library's name, not the
 * line of yours. */
void tp_tui_stacks_label(const tp_an_frame *f, size_t n_frames, char *buf, size_t n) {
    char call[512];
    buf[0] = 0;
    if (n_frames > 1 && f[1].skipped) {
        size_t len = strlen(tp_an_frame_label(&f[1], buf, n));
        snprintf(buf + len, n - len, " -> %s", tp_an_frame_label(&f[0], call, sizeof call));
    } else if (n_frames) {
        /* the caller too: rows of one line called from two places read apart */
        size_t len = strlen(tp_an_frame_label(&f[0], buf, n));
        if (n_frames > 1)
            snprintf(buf + len, n - len, " < %s", tp_an_frame_label(&f[1], call, sizeof call));
    }
}

/* One row of either table: the stack's label, a time `ns` and its share of `of`, then two
 * more columns (their text and sort keys). */
static void add_row(tp_tui_table *t, const tp_an_frame *f, size_t nf, int64_t ns, int64_t of,
                    const char *c3, double k3, const char *c4, double k4) {
    char label[512], time[32], share[32];
    double pct = of > 0 ? 100.0 * (double)ns / (double)of : 0;
    tp_tui_stacks_label(f, nf, label, sizeof label);
    snprintf(share, sizeof share, "%.2f %%", pct);
    const char *txt[] = {label, tp_units_dur(time, sizeof time, (double)ns), share, c3, c4};
    double key[] = {0, (double)ns, pct, k3, k4};
    tp_tui_table_add(t, txt, key);
}

/* The table of the CPU samples: on-CPU time by stack, then its waiting (the Stacks view's,
 * and `trainprof top`'s for a sampled job: one table). */
void tp_tui_samples_table(tp_tui_table *t, const tp_an_samples *sa) {
    static const tp_tui_col cols[] = {{"sampled stack (your line -> the call, < its caller)", 0, 0},
                                      {"on CPU", 10, 1},
                                      {"share", 8, 1},
                                      {"waiting", 10, 1},
                                      {"samples", 8, 1}};
    tp_tui_table_init(t, cols, 5, 1);
    t->empty = "(no samples: record with --sample)";
    for (size_t i = 0; i < sa->n; i++) {
        const tp_an_sample_row *r = &sa->s[i];
        char wait[32], n[24];
        int64_t waited = r->wall_ns - r->cpu_ns;
        snprintf(n, sizeof n, "%zu", r->samples);
        add_row(t, r->frames, r->n_frames, r->cpu_ns, sa->cpu_ns,
                tp_units_dur(wait, sizeof wait, (double)waited), (double)waited, n,
                (double)r->samples);
    }
    if (sa->no_stack) {
        char line[128], d[32];
        snprintf(line, sizeof line, "without Python frames: %zu samples, %s on CPU", sa->no_stack,
                 tp_units_dur(d, sizeof d, (double)sa->no_stack_cpu_ns));
        tp_tui_table_note(t, line);
    }
    tp_tui_table_refresh(t);
}

static void build(tp_tui_stacks *s) {
    s->super.keys = s->d->a.v.r->samples.n ? s->samples ? keys_samples : keys_launch : NULL;
    s->super.n_keys = s->super.keys ? 1 : 0;
    if (s->samples) {
        if (!s->sa_ran)
            tp_an_samples_run(&s->d->a.v, s->d->a.v.opts.stack_depth, 0, 0, &s->sa);
        s->sa_ran = 1;
        tp_tui_samples_table(&s->t, &s->sa);
        return;
    }
    static const tp_tui_col cols[] = {
        {"launching stack (your line -> the call, < its caller)", 0, 0},
        {"GPU time", 10, 1},
        {"share", 8, 1},
        {"ops", 8, 1},
        {"kernels", 8, 1}};
    tp_tui_table_init(&s->t, cols, 5, 1);
    s->t.empty = "(no GPU op launched from a recorded stack: record with --stacks api or all)";
    for (size_t i = 0; i < s->st.n; i++) {
        const tp_an_stack_row *r = &s->st.s[i];
        char ops[24], nk[24];
        snprintf(ops, sizeof ops, "%zu", r->count);
        snprintf(nk, sizeof nk, "%zu", r->n_k);
        add_row(&s->t, r->frames, r->n_frames, r->gpu_ns, s->st.gpu_ns, ops, (double)r->count, nk,
                (double)r->n_k);
    }
    if (s->st.no_stack) {
        char line[128], d[32];
        snprintf(line, sizeof line, "without a stack: %zu ops, %s", s->st.no_stack,
                 tp_units_dur(d, sizeof d, (double)s->st.no_stack_ns));
        tp_tui_table_note(&s->t, line);
    }
    tp_tui_table_refresh(&s->t);
}

/* The selected sample row's frames and times in rows [y, y + h). */
static void draw_sample_detail(tp_tui_stacks *s, tp_tui_grid *g, int y, int h) {
    const tp_an_sample_row *r = &s->sa.s[s->t.shown[s->t.sel]];
    char label[512], c[32], w[32], gap[64];
    int line = 0;
    tp_tui_grid_printf(g, 0, y + line++, g->w, TP_TUI_A_HEADER,
                       "stack (up to %d frames, innermost first): %s on a CPU, %s waiting, %zu "
                       "samples",
                       s->sa.depth, tp_units_dur(c, sizeof c, (double)r->cpu_ns),
                       tp_units_dur(w, sizeof w, (double)(r->wall_ns - r->cpu_ns)), r->samples);
    for (size_t k = 0; k < r->n_frames && line < h; k++) {
        if (r->frames[k].skipped)
            tp_tui_grid_printf(g, 2, y + line++, g->w - 2, TP_TUI_A_NORMAL, "%s",
                               tp_an_frame_gap(&r->frames[k], gap, sizeof gap));
        if (line < h)
            tp_tui_grid_printf(g, 2, y + line++, g->w - 2, TP_TUI_A_NORMAL, "%s",
                               tp_an_frame_label(&r->frames[k], label, sizeof label));
    }
}

/* The selected group's frames and kernels in rows [y, y + h). */
static void draw_detail(tp_tui_stacks *s, tp_tui_grid *g, int y, int h) {
    if (!s->t.nshown || h < 2)
        return;
    if (s->samples) {
        draw_sample_detail(s, g, y, h);
        return;
    }
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
    char nb[96];
    if (s->samples)
        tp_tui_grid_printf(g, 0, y, g->w, TP_TUI_A_NORMAL,
                           "%zu sampled stacks (up to %d frames; %zu samples of %zu threads, "
                           "%lld a second%s), sorted by %s",
                           s->t.nrows, s->sa.depth, s->sa.samples, s->sa.n_threads,
                           (long long)s->sa.hz, tp_an_samples_native_note(&s->sa, nb, sizeof nb),
                           s->t.cols[s->t.sort_col].title);
    else
        tp_tui_grid_printf(g, 0, y, g->w, TP_TUI_A_NORMAL,
                           "%zu launching stacks (up to %d frames), sorted by %s", s->t.nrows,
                           s->st.depth, s->t.cols[s->t.sort_col].title);
    int detail = s->t.nshown ? DETAIL_MIN + (int)(s->samples ? s->sa.depth : s->st.depth) : 0;
    int table_h = h - 1 - detail;
    if (table_h < 3)
        table_h = h - 1 < 3 ? h - 1 : 3;
    tp_tui_table_draw(&s->t, g, y + 1, table_h);
    draw_detail(s, g, y + 1 + table_h, h - 1 - table_h);
}

static int key(tp_tui_panel *p, int k, int page) {
    tp_tui_stacks *s = (tp_tui_stacks *)p;
    if (k == 'c' && s->d->a.v.r->samples.n) { /* the other source, in a table of its own */
        tp_tui_table_free(&s->t);
        s->samples ^= 1;
        build(s);
        return 0;
    }
    return tp_tui_table_nav(p->table, k, page);
}

static void destroy(tp_tui_panel *p) {
    tp_tui_stacks *s = (tp_tui_stacks *)p;
    tp_tui_table_free(&s->t);
    tp_an_stacks_free(&s->st);
    tp_an_samples_free(&s->sa);
    free(s);
}

tp_tui_panel *tp_tui_stacks_new(tp_tui_data *d) {
    tp_tui_stacks *s = calloc(1, sizeof *s);
    if (!s)
        abort();
    s->d = d;
    s->super = (tp_tui_panel){.name = "stacks",
                              .title = "Stacks",
                              .help = "Up/Down/PgUp/PgDn move",
                              .draw = draw,
                              .key = key,
                              .destroy = destroy,
                              .table = &s->t};
    tp_an_stacks_run(&d->a.v, d->a.v.opts.stack_depth, &s->st);
    /* a trace with samples and no launching stack (a CPU job) opens on its samples */
    s->samples = d->a.v.r->samples.n && !s->st.n;
    build(s);
    return &s->super;
}
