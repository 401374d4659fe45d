/* tp_tui_wstats: a window's statistics from the analyzer (see the header). */
#include "tp_tui_wstats.h"

#include <stdio.h>
#include <string.h>

#include "tp_tui_layout.h"
#include "tp_tui_stacks.h"
#include "tp_units.h"

void tp_tui_wstats_set(tp_tui_wstats *w, const tp_tui_data *d, int64_t lo, int64_t hi) {
    tp_tui_wstats_clear(w);
    if (lo > hi) {
        int64_t t = lo;
        lo = hi, hi = t;
    }
    tp_an_opts o = d->opts;
    o.window_lo = lo;
    o.window_hi = hi > lo ? hi : lo + 1;
    tp_rank_analysis_run(&w->a, d->m, d->r, &o, TP_TUI_WSTATS_ANALYSES);
    w->lo = o.window_lo, w->hi = o.window_hi;
    w->set = 1;
    if (d->r->samples.n) { /* the view has the window: only its samples count */
        tp_an_samples_run(&w->a.v, w->a.v.opts.stack_depth, 0, 0, &w->sa);
        w->has_sa = 1;
    }
}

void tp_tui_wstats_clear(tp_tui_wstats *w) {
    if (w->set)
        tp_rank_analysis_free(&w->a);
    if (w->has_sa)
        tp_an_samples_free(&w->sa);
    w->has_sa = 0;
    w->set = 0;
    w->step = -1;
}

#define DUR(b, x) tp_units_dur(b, sizeof b, (double)(x))

static int line(tp_tui_grid *g, int *y, int end, int x, tp_tui_attr a, const char *s) {
    if (*y >= end)
        return 0;
    tp_tui_grid_put(g, x, (*y)++, s, g->w - x, a);
    return 1;
}

/* Kernels then ranges, each as "name  count  total", in one column or two side by side. */
static void tables(const tp_tui_wstats *w, const tp_tui_data *d, tp_tui_grid *g, int y, int end) {
    int two = g->w >= 100, cw = two ? g->w / 2 - 1 : g->w, nw = cw - 24 > 12 ? cw - 24 : 12;
    int y1 = y, y2;
    char b[256], t[32];
    snprintf(b, sizeof b, "%-*.*s %6s %12s", nw, nw, "kernel (GPU ops)", "count", "total");
    line(g, &y1, end, 0, TP_TUI_A_HEADER, b);
    if (!w->a.k.n)
        line(g, &y1, end, 0, TP_TUI_A_NORMAL, "(no GPU kernels, copies or memsets in the window)");
    for (size_t i = 0; i < w->a.k.n && y1 < end; i++) {
        char name[200];
        tp_tui_fit(name, sizeof name, tp_model_str(d->m, w->a.k.k[i].name), nw);
        int pad = nw - tp_tui_str_width(name);
        snprintf(b, sizeof b, "%s%*s %6zu %12s", name, pad > 0 ? pad : 0, "", w->a.k.k[i].count,
                 DUR(t, w->a.k.k[i].sum));
        line(g, &y1, end, 0, TP_TUI_A_NORMAL, b);
    }
    int x = two ? g->w / 2 + 1 : 0;
    y2 = two ? y : y1;
    snprintf(b, sizeof b, "%-*.*s %6s %12s", nw, nw, "range", "count", "total");
    line(g, &y2, end, x, TP_TUI_A_HEADER, b);
    if (!w->a.nv.n)
        line(g, &y2, end, x, TP_TUI_A_NORMAL, "(no NVTX ranges start in the window)");
    for (size_t i = 0; i < w->a.nv.n && y2 < end; i++) {
        char name[200];
        tp_tui_fit(name, sizeof name, tp_model_str(d->m, w->a.nv.r[i].name), nw);
        int pad = nw - tp_tui_str_width(name);
        snprintf(b, sizeof b, "%s%*s %6zu %12s", name, pad > 0 ? pad : 0, "", w->a.nv.r[i].count,
                 DUR(t, w->a.nv.r[i].total));
        line(g, &y2, end, x, TP_TUI_A_NORMAL, b);
    }
}

/* The window's samples: a line of totals, then a row per stack by on-CPU time. */
static void samples(const tp_tui_wstats *w, tp_tui_grid *g, int y, int end) {
    const tp_an_samples *sa = &w->sa;
    char b[640], c[32], t[32], label[512], nb[96];
    snprintf(b, sizeof b,
             "CPU time by line, sampled in the window: %zu samples of %zu threads, %s on a CPU, "
             "%s waiting%s",
             sa->samples, sa->n_threads, DUR(c, sa->cpu_ns), DUR(t, sa->wall_ns - sa->cpu_ns),
             tp_an_samples_native_note(sa, nb, sizeof nb));
    line(g, &y, end, 0, TP_TUI_A_HEADER, b);
    if (!sa->samples)
        line(g, &y, end, 0, TP_TUI_A_NORMAL, "(no sample in the window)");
    int lw = g->w - 30 > 12 ? g->w - 30 : 12;
    for (size_t i = 0; i < sa->n && y < end; i++) {
        const tp_an_sample_row *r = &sa->s[i];
        char name[520];
        tp_tui_stacks_label(r->frames, r->n_frames, label, sizeof label);
        tp_tui_fit(name, sizeof name, label, lw);
        int pad = lw - tp_tui_str_width(name);
        snprintf(b, sizeof b, "%s%*s %12s %7.2f %% %6zu", name, pad > 0 ? pad : 0, "",
                 DUR(c, r->cpu_ns),
                 sa->cpu_ns > 0 ? 100.0 * (double)r->cpu_ns / (double)sa->cpu_ns : 0.0, r->samples);
        line(g, &y, end, 0, TP_TUI_A_NORMAL, b);
    }
}

void tp_tui_wstats_draw(const tp_tui_wstats *w, const tp_tui_data *d, tp_tui_grid *g, int y,
                        int h) {
    char a[32], b[32], s[32], busy[32], span[32], cb[32], cd[32];
    const tp_an_temporal *t = &w->a.t;
    int end = y + h;
    tp_tui_grid_printf(
        g, 0, y++, g->w, TP_TUI_A_HEADER, "Window +%s .. +%s (%s)%s%s   [ ] step  Esc clear",
        DUR(a, w->lo - d->t_first), DUR(b, w->hi - d->t_first), DUR(s, w->hi - w->lo),
        w->step >= 0 ? ": " : "", w->step >= 0 ? tp_model_str(d->m, d->r->ev.name[w->step]) : "");
    if (y >= end)
        return;
    size_t nc = 0;
    int64_t cbytes = 0, cdur = 0;
    for (size_t i = 0; i < w->a.mem.n_copy; i++) {
        nc += w->a.mem.copy[i].count;
        cbytes += w->a.mem.copy[i].bytes;
        cdur += w->a.mem.copy[i].dur_ns;
    }
    if (t->has_gpu)
        tp_tui_grid_printf(g, 0, y++, g->w, TP_TUI_A_NORMAL,
                           "Device busy %s of GPU span %s (%.2f %%)   copies %zu, %s, %s",
                           DUR(busy, t->busy), DUR(span, t->span),
                           t->span > 0 ? 100.0 * (double)t->busy / (double)t->span : 0.0, nc,
                           tp_units_bytes(cb, sizeof cb, (double)cbytes), DUR(cd, cdur));
    else
        tp_tui_grid_put(g, 0, y++, "Device busy: no GPU activity starts in the window", g->w,
                        TP_TUI_A_NORMAL);
    if (!w->has_sa) {
        tables(w, d, g, y, end);
        return;
    }
    /* the kernel and range tables take what they need, up to half; the samples the rest */
    size_t need = (w->a.k.n > w->a.nv.n ? w->a.k.n : w->a.nv.n) + 1;
    int tabs = (int)need + 1 < (end - y) / 2 ? (int)need + 1 : (end - y) / 2;
    tables(w, d, g, y, y + tabs);
    samples(w, g, y + tabs, end);
}
