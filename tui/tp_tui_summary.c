/* tp_tui_summary: the Summary view (see the header). Lines are produced in order through a
 * small writer that skips the scrolled-off ones, so the text is written in one place. */
#include "tp_tui_summary.h"
#include "tp_units.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_report_fmt.h"
#include "tp_report_host.h"
#include "tp_tui_layout.h"

typedef struct {
    tp_tui_panel super;
    const tp_tui_data *d;
    int top;   /* first line shown */
    int lines; /* lines in the last draw */
    int vis;   /* rows in the last draw */
} tp_tui_summary;

typedef struct {
    tp_tui_grid *g;
    int y, h, top, line;
} writer;

static void line(writer *w, tp_tui_attr a, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void line(writer *w, tp_tui_attr a, const char *fmt, ...) {
    int row = w->line++ - w->top;
    if (row < 0 || row >= w->h)
        return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    tp_tui_grid_put(w->g, 0, w->y + row, buf, w->g->w, a);
}

/* Human duration right-aligned to w display columns (printf would count "µ" as two). */
static const char *rdur(char *buf, size_t cap, double ns, int w) {
    char d[32];
    tp_units_dur(d, sizeof d, ns);
    size_t pad = (size_t)(w > tp_tui_str_width(d) ? w - tp_tui_str_width(d) : 0), n = strlen(d);
    if (pad + n + 1 > cap)
        pad = 0;
    memset(buf, ' ', pad);
    memcpy(buf + pad, d, n + 1 < cap ? n + 1 : cap);
    buf[cap - 1] = 0;
    return buf;
}

static double pct(int64_t a, int64_t b) {
    return b > 0 ? 100.0 * (double)a / (double)b : NAN;
}

/* A bar of `n` cells, the first busy/span of them full. */
static const char *bar(char *buf, size_t cap, double frac, int n, int ascii) {
    size_t o = 0;
    int full = (int)lround(frac * n);
    for (int i = 0; i < n && o + 4 < cap; i++) {
        const char *c = i < full ? (ascii ? "#" : "\u2588") : (ascii ? "." : "\u2591");
        for (; *c; c++)
            buf[o++] = *c;
    }
    buf[o] = 0;
    return buf;
}

static void head(writer *w, const tp_tui_data *d) {
    const tp_rank *r = d->r;
    line(w, TP_TUI_A_HEADER, "Rank %d  %s", r->rank, r->file ? r->file : "-");
    line(w, TP_TUI_A_NORMAL, "  %s, %zu events, %zu GPU ops, %zu streams, %zu CPU threads",
         tp_devtype_name(r->device_type), d->a.v.n, d->a.v.n_gpu, r->streams.n, r->threads.n);
    char dropped[1024];
    if (d->a.drops.lost) /* the report's line: every figure below is a lower bound */
        line(w, TP_TUI_A_WARN, "  Dropped: %s",
             tp_an_drops_line(&d->a.drops, dropped, sizeof dropped));
    line(w, TP_TUI_A_NORMAL, "%s", "");
}

static void temporal(writer *w, const tp_tui_data *d, int ascii) {
    const tp_an_temporal *t = &d->a.t;
    char b1[32], b2[32], b3[32], bb[256];
    double util = pct(t->busy, t->span);
    line(w, TP_TUI_A_NORMAL, "  %-20s %s", "Span", rdur(b1, 32, (double)t->span, 12));
    line(w, TP_TUI_A_NORMAL, "  %-20s %10.2f %%   busy %s", "Device utilization", util,
         tp_units_dur(b1, 32, (double)t->busy));
    line(w, TP_TUI_A_BUSY, "  [%s]", bar(bb, sizeof bb, util / 100, 40, ascii));
    line(w, TP_TUI_A_NORMAL, "  %-20s %s   %.2f %%", "Idle", rdur(b1, 32, (double)t->idle, 12),
         pct(t->idle, t->span));
    int64_t sum = d->idle_split[0] + d->idle_split[1] + d->idle_split[2];
    line(w, TP_TUI_A_NORMAL, "    idle by cause (summed over streams):");
    line(w, TP_TUI_A_NORMAL,
         "      host wait %s (%.2f %%)   kernel wait %s (%.2f %%)   other %s (%.2f %%)",
         tp_units_dur(b1, 32, (double)d->idle_split[TP_IDLE_HOST_WAIT]),
         sum ? pct(d->idle_split[TP_IDLE_HOST_WAIT], sum) : 0.0,
         tp_units_dur(b2, 32, (double)d->idle_split[TP_IDLE_KERNEL_WAIT]),
         sum ? pct(d->idle_split[TP_IDLE_KERNEL_WAIT], sum) : 0.0,
         tp_units_dur(b3, 32, (double)d->idle_split[TP_IDLE_OTHER]),
         sum ? pct(d->idle_split[TP_IDLE_OTHER], sum) : 0.0);
    line(w, TP_TUI_A_NORMAL, "  %-20s %s   %.2f %%", "Compute",
         rdur(b1, 32, (double)t->compute, 12), pct(t->compute, t->span));
    line(w, TP_TUI_A_NORMAL, "  %-20s %s   %.2f %%", "Non-compute",
         rdur(b1, 32, (double)t->non_compute, 12), pct(t->non_compute, t->span));
    line(w, TP_TUI_A_NORMAL, "%s", "");
}

static void tops(writer *w, const tp_tui_data *d) {
    char b1[32], b2[32], nm[256];
    int nw = w->g->w - 40 < 20 ? 20 : w->g->w - 40;
    if (!d->a.k.n)
        line(w, TP_TUI_A_NORMAL, "No GPU kernels in this trace (no kernel, copy or memset).");
    else
        line(w, TP_TUI_A_HEADER, "Top kernels%*s %8s %12s %8s", nw - 9, "", "count", "total",
             "% busy");
    for (size_t i = 0; i < d->a.k.n && i < 10; i++) {
        tp_tui_fit(nm, sizeof nm, tp_model_str(d->m, d->a.k.k[i].name), nw);
        line(w, TP_TUI_A_NORMAL, "  %s%*s %8zu %s %6.2f %%", nm, nw - tp_tui_str_width(nm), "",
             d->a.k.k[i].count, rdur(b1, 32, (double)d->a.k.k[i].sum, 12),
             pct(d->a.k.k[i].sum, d->a.t.busy));
    }
    line(w, TP_TUI_A_NORMAL, "%s", "");
    if (!d->a.nv.n) {
        line(w, TP_TUI_A_NORMAL, "No NVTX ranges or annotations in this rank.");
        return;
    }
    line(w, TP_TUI_A_HEADER, "Top ranges%*s %8s %12s %12s", nw - 8, "", "count", "total",
         "GPU time");
    for (size_t i = 0; i < d->a.nv.n && i < 10; i++) {
        char lb[512];
        tp_tui_fit(nm, sizeof nm, tp_an_range_label(d->m, &d->a.nv.r[i], lb, sizeof lb), nw);
        line(w, TP_TUI_A_NORMAL, "  %s%*s %8zu %s %s", nm, nw - tp_tui_str_width(nm), "",
             d->a.nv.r[i].count, rdur(b1, 32, (double)d->a.nv.r[i].total, 12),
             rdur(b2, 32, (double)d->a.nv.r[i].gpu_ns, 12));
    }
}

/* A rank without device activity: its step window split as the report splits it. */
static void host(writer *w, const tp_an_host *h) {
    char head[160], b1[32], bp[32];
    const char *label[TP_REPORT_HOST_PARTS];
    int64_t part[TP_REPORT_HOST_PARTS], win = h->w1 - h->w0;
    if (win <= 0)
        return;
    line(w, TP_TUI_A_HEADER, "%s", tp_report_host_heading(h, head, sizeof head));
    tp_report_host_parts(h, label, part);
    for (int i = 0; i < TP_REPORT_HOST_PARTS; i++)
        line(w, TP_TUI_A_NORMAL, "  %-40s %12s %9s", label[i], tp_rf_time(b1, 32, (double)part[i]),
             tp_rf_pct_str(bp, sizeof bp, tp_rf_pct(part[i], win)));
    line(w, TP_TUI_A_NORMAL, "%s", "");
}

static void draw(tp_tui_panel *p, tp_tui_grid *g, int y, int h) {
    tp_tui_summary *s = (tp_tui_summary *)p;
    writer w = {g, y, h, s->top, 0};
    head(&w, s->d);
    if (s->d->a.t.has_gpu) {
        temporal(&w, s->d, p->ascii);
    } else {
        line(&w, TP_TUI_A_WARN, "  No GPU activity in this rank (%zu CPU-side events).",
             s->d->a.v.n);
        line(&w, TP_TUI_A_NORMAL,
             "  The Timeline (2) shows the CPU threads; Ranges (4) the annotations.");
        line(&w, TP_TUI_A_NORMAL, "%s", "");
        host(&w, &s->d->a.host);
    }
    tops(&w, s->d);
    s->lines = w.line;
    s->vis = h;
}

static int key(tp_tui_panel *p, int k, int page) {
    tp_tui_summary *s = (tp_tui_summary *)p;
    int max = s->lines - s->vis > 0 ? s->lines - s->vis : 0, top = s->top;
    switch (k) {
    case TP_TUI_KEY_UP:
        top--;
        break;
    case TP_TUI_KEY_DOWN:
        top++;
        break;
    case TP_TUI_KEY_PGUP:
        top -= page;
        break;
    case TP_TUI_KEY_PGDN:
        top += page;
        break;
    case TP_TUI_KEY_HOME:
        top = 0;
        break;
    case TP_TUI_KEY_END:
        top = max;
        break;
    default:
        return 0;
    }
    s->top = top < 0 ? 0 : top > max ? max : top;
    return 1;
}

static void destroy(tp_tui_panel *p) {
    free(p);
}

tp_tui_panel *tp_tui_summary_new(const tp_tui_data *d) {
    tp_tui_summary *s = calloc(1, sizeof *s);
    if (!s)
        abort();
    s->super = (tp_tui_panel){.name = "summary",
                              .title = "Summary",
                              .help = "Up/Down/PgUp/PgDn scroll",
                              .draw = draw,
                              .key = key,
                              .destroy = destroy};
    s->d = d;
    return &s->super;
}
