/* tp_tui_diagnosis: the Diagnosis view (see the header). The text is laid out in one pass
 * through a writer that counts lines and skips the scrolled-off ones; a first pass that
 * draws nothing finds where the selected finding lies, so the second can scroll to it. */
#include "tp_tui_diagnosis.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_report_host.h"
#include "tp_tui_layout.h"

typedef struct {
    tp_tui_panel super;
    const tp_tui_data *d;
    size_t sel; /* selected finding */
    int top;    /* first line shown */
} tp_tui_diagnosis;

typedef struct {
    tp_tui_grid *g; /* NULL: measure only */
    int y, h, top, line;
} writer;

static void put(writer *w, tp_tui_attr a, const char *s) {
    int row = w->line++ - w->top;
    if (!w->g || row < 0 || row >= w->h)
        return;
    if (a == TP_TUI_A_SELECT)
        tp_tui_grid_fill(w->g, w->y + row, a);
    tp_tui_grid_put(w->g, 0, w->y + row, s, w->g->w, a);
}

/* `label` then `text` wrapped to the width, continuation lines indented under the text (the
 * report's layout: five spaces, the label, two spaces). */
static void wrapped(writer *w, int width, const char *label, const char *text) {
    int indent = 7 + (int)strlen(label), cols = width - indent > 10 ? width - indent : 10;
    char buf[1024];
    for (int first = 1; first || *text; first = 0) {
        const char *next;
        size_t n = tp_tui_wrap(text, cols, &next);
        int len = (int)(n < 900 ? n : 900);
        if (first)
            snprintf(buf, sizeof buf, "     %s  %.*s", label, len, text);
        else
            snprintf(buf, sizeof buf, "%*s%.*s", indent, "", len, text);
        put(w, TP_TUI_A_NORMAL, buf);
        text = next;
    }
}

/* A note under the heading: two columns in, wrapped, its further lines four in. */
static void note(writer *w, int width, const char *text) {
    int cols = width - 4 > 10 ? width - 4 : 10;
    char buf[1024];
    for (int first = 1; first || *text; first = 0) {
        const char *next;
        size_t n = tp_tui_wrap(text, cols, &next);
        snprintf(buf, sizeof buf, "%s%.*s", first ? "  " : "    ", (int)(n < 900 ? n : 900), text);
        put(w, TP_TUI_A_NORMAL, buf);
        text = next;
    }
}

/* "range 'x' in Ranges" / "'x' on the Timeline" */
static void target_words(const tp_tui_data *d, tp_tui_evidence e, char *buf, size_t n) {
    const char *name = tp_model_str(d->m, d->r->ev.name[e.row]);
    if (!strcmp(e.view, "ranges"))
        snprintf(buf, n, "range '%s' in Ranges", name);
    else
        snprintf(buf, n, "'%s' on the Timeline", name);
}

/* "go to:  Enter range 'x' in Ranges, t 'y' on the Timeline" when the finding has evidence. */
static void goto_line(writer *w, int width, const tp_tui_data *d, size_t i) {
    tp_tui_evidence enter = tp_tui_diagnosis_target(d, i, 0), t = tp_tui_diagnosis_target(d, i, 1);
    if (!enter.view)
        return;
    char a[256], b[256], line[600];
    target_words(d, enter, a, sizeof a);
    if (!strcmp(enter.view, t.view) && enter.row == t.row) {
        snprintf(line, sizeof line, "Enter or t %s", a);
    } else {
        target_words(d, t, b, sizeof b);
        snprintf(line, sizeof line, "Enter %s, t %s", a, b);
    }
    wrapped(w, width, "go to:   ", line);
}

/* "> 1. [high    72%] title", the title wrapped under itself on a narrow screen. */
static void heading(writer *w, int width, const tp_finding *x, size_t i, int sel) {
    char pre[64], line[1024];
    int np = snprintf(pre, sizeof pre, "%s%zu. [%-6s %3.0f%%] ", sel ? "> " : "  ", i + 1,
                      tp_diag_level(x->severity), 100 * x->severity);
    const char *text = x->title;
    for (int first = 1; first || *text; first = 0) {
        const char *next;
        size_t n = tp_tui_wrap(text, width - np > 10 ? width - np : 10, &next);
        snprintf(line, sizeof line, "%s%.*s", first ? pre : "", (int)(n < 900 ? n : 900), text);
        if (!first)
            snprintf(line, sizeof line, "%*s%.*s", np, "", (int)(n < 900 ? n : 900), text);
        put(w, sel ? TP_TUI_A_SELECT : TP_TUI_A_HEADER, line);
        text = next;
    }
}

static void finding(writer *w, int width, const tp_tui_data *d, size_t i, int sel) {
    const tp_finding *x = &d->a.dg.f[i];
    heading(w, width, x, i, sel);
    wrapped(w, width, "evidence:", x->evidence);
    if (x->source[0])
        wrapped(w, width, "source:  ", x->source);
    wrapped(w, width, "fix:     ", x->advice);
    goto_line(w, width, d, i);
    put(w, TP_TUI_A_NORMAL, "");
}

/* Lays the view out into w; *sel_a, *sel_b: the selected finding's first and end line. */
static void layout(writer *w, int width, const tp_tui_diagnosis *s, int *sel_a, int *sel_b) {
    const tp_diagnosis *dg = &s->d->a.dg;
    char head[160] = "Diagnosis", basis[128], nj[640];
    int host = tp_report_host_basis(&s->d->a, basis, sizeof basis, nj, sizeof nj);
    if (dg->window_ns > 0)
        snprintf(head, sizeof head, "Diagnosis (device busy %.2f %% of %s)", 100 * dg->utilization,
                 dg->n_steps ? "the training steps" : "the GPU span");
    else if (host)
        snprintf(head, sizeof head, "Diagnosis (%s)", basis);
    put(w, TP_TUI_A_HEADER, head);
    if (host)
        note(w, width, nj);
    if (tp_rank_analysis_steps_note(&s->d->a))
        note(w, width, tp_rank_analysis_steps_note(&s->d->a));
    if (dg->n_warmup) {
        char wu[256], line[264];
        snprintf(line, sizeof line, "  %s", tp_diag_warmup_text(dg, wu, sizeof wu));
        put(w, TP_TUI_A_NORMAL, line);
    }
    put(w, TP_TUI_A_NORMAL, "");
    if (!dg->n)
        note(w, width, tp_rank_analysis_no_findings(&s->d->a));
    *sel_a = *sel_b = 0;
    for (size_t i = 0; i < dg->n; i++) {
        if (i == s->sel)
            *sel_a = w->line;
        finding(w, width, s->d, i, i == s->sel);
        if (i == s->sel)
            *sel_b = w->line - 1; /* without the blank line after it */
    }
}

static void draw(tp_tui_panel *p, tp_tui_grid *g, int y, int h) {
    tp_tui_diagnosis *s = (tp_tui_diagnosis *)p;
    writer m = {NULL, y, h, 0, 0};
    int a, b;
    layout(&m, g->w, s, &a, &b);
    /* The selected finding whole on screen when it fits, else its first line at the top;
     * no blank screen below the last line. */
    if (b - a >= h || a < s->top)
        s->top = a;
    else if (b >= s->top + h)
        s->top = b - h + 1;
    if (s->top > m.line - h)
        s->top = m.line - h > 0 ? m.line - h : 0;
    writer w = {g, y, h, s->top, 0};
    layout(&w, g->w, s, &a, &b);
}

static int key(tp_tui_panel *p, int k, int page) {
    tp_tui_diagnosis *s = (tp_tui_diagnosis *)p;
    size_t n = s->d->a.dg.n;
    (void)page;
    if (!n)
        return 0;
    switch (k) {
    case TP_TUI_KEY_UP:
    case TP_TUI_KEY_PGUP:
        s->sel = s->sel ? s->sel - 1 : 0;
        return 1;
    case TP_TUI_KEY_DOWN:
    case TP_TUI_KEY_PGDN:
        s->sel = s->sel + 1 < n ? s->sel + 1 : n - 1;
        return 1;
    case TP_TUI_KEY_HOME:
        s->sel = 0;
        return 1;
    case TP_TUI_KEY_END:
        s->sel = n - 1;
        return 1;
    case TP_TUI_KEY_ENTER:
    case '\r':
    case 't': {
        tp_tui_evidence e = tp_tui_diagnosis_target(s->d, s->sel, k == 't');
        p->jump_view = e.view, p->jump_row = e.row;
        return e.view != NULL;
    }
    default:
        return 0;
    }
}

static void destroy(tp_tui_panel *p) {
    free(p);
}

tp_tui_evidence tp_tui_diagnosis_target(const tp_tui_data *d, size_t i, int timeline) {
    tp_tui_evidence e = {NULL, -1};
    if (i >= d->a.dg.n)
        return e;
    const tp_finding *f = &d->a.dg.f[i];
    if (!timeline && tp_tui_data_range_index(d, f->range_row) >= 0)
        return (tp_tui_evidence){"ranges", f->range_row};
    long row = f->op_row >= 0 ? f->op_row : f->range_row;
    if (row >= 0 && (size_t)row < d->r->ev.n)
        e = (tp_tui_evidence){"timeline", row};
    return e;
}

tp_tui_panel *tp_tui_diagnosis_new(const tp_tui_data *d) {
    tp_tui_diagnosis *s = calloc(1, sizeof *s);
    if (!s)
        abort();
    s->super = (tp_tui_panel){.name = "diagnosis",
                              .title = "Diagnosis",
                              .help = "Up/Down select  Enter evidence  t on Timeline",
                              .draw = draw,
                              .key = key,
                              .destroy = destroy};
    s->d = d;
    return &s->super;
}
