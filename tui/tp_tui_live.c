/* tp_tui_live: the live view (see tp_tui_live.h). Layout, top to bottom: title bar; the job
 * (command, status line); step time and steps/s histories; device busy share and one
 * sparkline per stream; copies; memory; drops and collector cost; the diagnosis of the
 * window; top kernels and top ranges (tp_tui_data's tables) and, for a job recorded with
 * --sample, its CPU time by line (the Stacks view's samples table, over the window); the key
 * bar with the last message. */
#include "tp_tui_live.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tp_live_client.h"
#include "tp_live_figs.h"
#include "tp_mem.h"
#include "tp_outfile.h"
#include "tp_tui.h"
#include "tp_tui_data.h"
#include "tp_tui_layout.h"
#include "tp_tui_stacks.h"
#include "tp_tui_term.h"
#include "tp_units.h"

#define MAX_STREAMS 6
/* The figures come from the job's aggregator at every refresh; a window's trace (for the
 * diagnosis, copies, drops and the offline views, which need the whole model) is cut and
 * loaded every CUT_EVERY-th refresh only (every 2 s at 2 Hz), and at every refresh while the
 * views are open or a --save file is asked for. */
#define CUT_EVERY 4

struct tp_tui_live {
    tp_tui_live_opts o;
    tp_live_client *c;
    tp_live_msg *st; /* the last STATUS reply */
    tp_model *m;     /* the last window */
    tp_tui_data d;
    int have_data;
    tp_live_window w;
    int fell_back; /* 1: no complete step yet, the window is the last seconds */
    char msg[4608];
    tp_live_client *cap; /* a capture in progress */
    char cap_path[4096];
    tp_file_id cap_id;
    tp_tui_grid g;
    tp_tui *views; /* the offline views over the window, while open */
    int view;
    tp_live_figs f;   /* the job's aggregator figures of the window (every refresh) */
    tp_an_samples sa; /* the window's CPU samples, when the job samples (have_sa) */
    tp_tui_table sat; /* their table */
    int have_sa;
    unsigned ticks; /* refreshes so far: a trace is cut every CUT_EVERY-th */
};

void tp_tui_live_opts_init(tp_tui_live_opts *o) {
    memset(o, 0, sizeof *o);
    o->by_steps = 1;
    o->n = 20;
    o->capture_steps = 10;
    o->dir = ".";
    o->width = 120;
    o->height = 40;
    tp_an_opts_init(&o->an);
}

tp_status tp_tui_live_open(tp_tui_live **out, const tp_tui_live_opts *o, char *err, size_t errlen) {
    tp_live_client *c;
    tp_status s = tp_live_client_open(o->pid, &c, err, errlen);
    if (s != TP_OK)
        return s;
    tp_tui_live *t = tp_mem_xcalloc(1, sizeof *t);
    t->o = *o;
    t->c = c;
    t->st = tp_mem_xcalloc(1, sizeof *t->st);
    tp_tui_grid_init(&t->g, o->width > 0 ? o->width : 120, o->height > 0 ? o->height : 40);
    *out = t;
    return TP_OK;
}

static void drop_window(tp_tui_live *t) {
    if (t->have_data)
        tp_tui_data_free(&t->d);
    t->have_data = 0;
    if (t->have_sa) {
        tp_tui_table_free(&t->sat);
        tp_an_samples_free(&t->sa);
    }
    t->have_sa = 0;
    tp_tui_close(t->views);
    t->views = NULL;
    tp_model_close(t->m);
    t->m = NULL;
}

static void end_capture(tp_tui_live *t, int failed) {
    if (failed) {
        tp_file_id now;
        if (tp_outfile_id(t->cap_path, &now) == 0 && now.ino == t->cap_id.ino &&
            now.dev == t->cap_id.dev)
            unlink(t->cap_path);
    }
    tp_live_client_close(t->cap);
    t->cap = NULL;
}

void tp_tui_live_close(tp_tui_live *t) {
    if (!t)
        return;
    if (t->cap)
        end_capture(t, 1);
    drop_window(t);
    tp_live_client_close(t->c);
    tp_tui_grid_free(&t->g);
    free(t->st);
    free(t);
}

/* ---------------------------------------------------------------- refresh */

static void poll_capture(tp_tui_live *t) {
    char err[512];
    tp_live_msg *m = malloc(sizeof *m);
    if (!m)
        abort();
    tp_status s = tp_live_client_capture_wait(t->cap, 0, m, err, sizeof err);
    if (s == TP_OK) {
        size_t others = tp_live_client_capture_members(t->cap, t->cap_path, m);
        snprintf(t->msg, sizeof t->msg, "capture written: %s (%d steps%s)", t->cap_path,
                 t->o.capture_steps, others ? ", the job's other processes beside it" : "");
    } else if (s != TP_ERR_STATE)
        snprintf(t->msg, sizeof t->msg, "capture failed: %s", err);
    if (s != TP_ERR_STATE)
        end_capture(t, s != TP_OK);
    free(m);
}

static tp_status fetch_window(tp_tui_live *t, char *err, size_t errlen) {
    tp_model *m = NULL;
    tp_live_window w = {0};
    tp_status s =
        tp_live_client_window(t->c, t->o.by_steps, t->o.n, t->o.save, &m, &w, err, errlen);
    t->fell_back = 0;
    if (s == TP_ERR_EMPTY && t->o.by_steps) { /* no step yet: show the last seconds */
        t->fell_back = 1;
        s = tp_live_client_window(t->c, 0, 5, t->o.save, &m, &w, err, errlen);
    }
    if (s != TP_OK)
        return s;
    drop_window(t);
    t->m = m;
    t->w = w;
    tp_live_figs_parse(t->o.by_steps && !t->fell_back ? w.reply : NULL, &t->f);
    if (m->n_ranks) {
        tp_tui_data_build(&t->d, m, &m->ranks[0], &t->o.an);
        t->have_data = 1;
    }
    /* a sampled job: its table, even with no sample in this window (a few short steps) */
    if (t->have_data && (t->d.r->samples.n || tp_live_get_num(t->st->text, "sample_hz", 0) > 0)) {
        tp_an_samples_run(&t->d.a.v, t->d.a.v.opts.stack_depth, 0, 0, &t->sa);
        tp_tui_samples_table(&t->sat, &t->sa);
        t->sat.empty = "(no sample in this window)";
        t->have_sa = 1;
    }
    return TP_OK;
}

/* 1 when this refresh can do with the aggregator's figures (and did), 0 when a window's trace
 * must be cut. */
static int figures_only(tp_tui_live *t, char *err, size_t errlen) {
    if (!t->m || t->views || t->o.save || !t->o.by_steps || t->o.n > 512 ||
        t->ticks % CUT_EVERY == 0)
        return 0;
    tp_live_msg *m = malloc(sizeof *m);
    if (!m)
        abort();
    tp_status s = tp_live_client_figures(t->c, t->o.n, m, err, errlen);
    if (s == TP_OK)
        tp_live_figs_parse(m->text, &t->f);
    free(m);
    return s == TP_OK && t->f.have;
}

tp_status tp_tui_live_refresh(tp_tui_live *t, char *err, size_t errlen) {
    tp_status s = tp_live_client_status(t->c, t->st, err, errlen);
    if (s != TP_OK)
        return s;
    if (!figures_only(t, err, errlen) && (s = fetch_window(t, err, errlen)) != TP_OK)
        return s;
    t->ticks++;
    if (t->cap)
        poll_capture(t);
    if (t->view && t->m) {
        tp_tui_opts vo;
        tp_tui_opts_init(&vo);
        vo.width = t->g.w, vo.height = t->g.h, vo.ascii = t->o.ascii, vo.an = t->o.an;
        vo.view = tp_tui_view_name(t->view - 1);
        char e[256];
        if (tp_tui_open(&t->views, t->m, &vo, e, sizeof e) != TP_OK)
            t->view = 0;
    }
    return TP_OK;
}

static int is_idle(const tp_tui_live *t) {
    char mode[16];
    return tp_live_get(t->st->text, "mode", mode, sizeof mode) && !strcmp(mode, "idle");
}

/* 1 when an idle or fresh job's window does not hold what was asked yet: steps recorded since
 * `since` (an idle job's clock at the first request: steps it holds from an earlier watch are
 * old; 0 for a job that records all along). */
static int idle_short(tp_tui_live *t, double since, double waited_s) {
    if (!is_idle(t) && !t->o.fresh)
        return 0;
    if (t->o.by_steps)
        return t->fell_back || (double)t->w.steps < t->o.n || (double)t->w.t0 < since;
    return waited_s < t->o.n;
}

tp_status tp_tui_live_settle(tp_tui_live *t, int timeout_ms, char *err, size_t errlen) {
    double since = is_idle(t) ? tp_live_get_num(t->st->text, "now", 0) : 0;
    /* every 400 ms: a refresh is two requests, and a job serves at most 10 a second */
    for (int waited = 0; waited < timeout_ms && idle_short(t, since, waited / 1000.0);
         waited += 400) {
        usleep(400000);
        tp_status s = tp_tui_live_refresh(t, err, errlen);
        if (s != TP_OK)
            return s;
    }
    return TP_OK;
}

/* ---------------------------------------------------------------- keys */

static void start_capture(tp_tui_live *t) {
    char err[512];
    if (t->cap) {
        snprintf(t->msg, sizeof t->msg, "a capture is in progress: %s", t->cap_path);
        return;
    }
    int fd = -1;
    tp_status s = TP_ERR_EXISTS;
    for (int k = 1; k < 1000 && s == TP_ERR_EXISTS; k++) {
        snprintf(t->cap_path, sizeof t->cap_path, "%s/top-%ld-capture-%d.tprof", t->o.dir, t->o.pid,
                 k);
        s = tp_outfile_create(t->cap_path, 0, &fd, &t->cap_id);
    }
    if (s != TP_OK) {
        snprintf(t->msg, sizeof t->msg, "cannot create %s: %s", t->cap_path, strerror(errno));
        return;
    }
    s = tp_live_client_open(t->o.pid, &t->cap, err, sizeof err);
    if (s == TP_OK)
        s = tp_live_client_capture(t->cap, 1, t->o.capture_steps, fd, err, sizeof err);
    close(fd);
    if (s != TP_OK) {
        snprintf(t->msg, sizeof t->msg, "capture failed: %s", err);
        end_capture(t, 1);
        return;
    }
    snprintf(t->msg, sizeof t->msg, "capturing the next %d steps into %s", t->o.capture_steps,
             t->cap_path);
}

/* + and -: the window doubles or halves (at least 1 step, 0.5 s). */
static void resize_window(tp_tui_live *t, int grow) {
    double n = grow ? t->o.n * 2 : t->o.n / 2;
    double lo = t->o.by_steps ? 1 : 0.5, hi = t->o.by_steps ? 4096 : 3600;
    t->o.n = n < lo ? lo : n > hi ? hi : t->o.by_steps ? floor(n) : n;
}

int tp_tui_live_key(tp_tui_live *t, int key) {
    if (t->views) { /* the offline views take every key but v, l and q */
        if (key == 'v' || key == 'l' || key == TP_TUI_KEY_ESC) {
            t->view = 0;
            tp_tui_close(t->views);
            t->views = NULL;
            return 0;
        }
        if (key != 'q') {
            tp_tui_key(t->views, key);
            t->view = tp_tui_current_view(t->views) + 1;
            return 0;
        }
    }
    switch (key) {
    case 'q':
        return 1;
    case 'c':
        start_capture(t);
        break;
    case '+':
    case '=':
        resize_window(t, 1);
        break;
    case '-':
        resize_window(t, 0);
        break;
    case 'w':
        t->o.by_steps = !t->o.by_steps;
        t->o.n = t->o.by_steps ? 20 : 10;
        break;
    case 'v':
        if (t->m) {
            t->view = 1;
            tp_tui_opts vo;
            tp_tui_opts_init(&vo);
            vo.width = t->g.w, vo.height = t->g.h, vo.ascii = t->o.ascii, vo.an = t->o.an;
            char e[256];
            if (tp_tui_open(&t->views, t->m, &vo, e, sizeof e) != TP_OK)
                t->view = 0;
        }
        break;
    default:
        break;
    }
    return 0;
}

void tp_tui_live_resize(tp_tui_live *t, int w, int h) {
    tp_tui_grid_free(&t->g);
    tp_tui_grid_init(&t->g, w, h);
    if (t->views)
        tp_tui_resize(t->views, w, h);
}

/* ---------------------------------------------------------------- drawing */

/* A sparkline of `n` values scaled to their maximum, at most `cols` cells (the newest). */
static void sparkline(tp_tui_grid *g, int x, int y, int cols, const double *v, int n, int ascii) {
    double mx = 0;
    int first = n > cols ? n - cols : 0;
    for (int i = first; i < n; i++)
        mx = v[i] > mx ? v[i] : mx;
    for (int i = first; i < n; i++) {
        double f = mx > 0 ? v[i] / mx : 0;
        tp_tui_grid_put(g, x + i - first, y, tp_tui_busy_glyph(tp_tui_busy_level(f, 0), ascii), 1,
                        TP_TUI_A_BUSY);
    }
}

static int draw_title(tp_tui_live *t, tp_tui_grid *g, int y) {
    const char *s = t->st->text;
    char mode[16], up[32], cmd[512];
    tp_live_get(s, "mode", mode, sizeof mode);
    tp_live_get(s, "cmd", cmd, sizeof cmd);
    tp_units_dur(up, sizeof up, tp_live_get_num(s, "uptime_ns", 0));
    tp_tui_grid_fill(g, y, TP_TUI_A_TITLE);
    char win[64];
    if (t->fell_back)
        snprintf(win, sizeof win, "last 5 s (no complete step yet)");
    else
        snprintf(win, sizeof win, t->o.by_steps ? "last %.0f steps" : "last %.1f s", t->o.n);
    tp_tui_grid_printf(g, 0, y, g->w, TP_TUI_A_TITLE,
                       " trainprof top  pid %ld (%s)  up %s  steps %.0f  window: %s", t->o.pid,
                       mode, up, tp_live_get_num(s, "steps", 0), win);
    tp_tui_grid_printf(g, 0, y + 1, g->w, TP_TUI_A_NORMAL, " %s", cmd);
    return y + 2;
}

static int draw_steps(tp_tui_live *t, tp_tui_grid *g, int y) {
    char list[TP_LIVE_REPLY_MAX], a[32], b[32];
    double v[64] = {0}, sps[64] = {0};
    int n = 0;
    tp_live_get(t->st->text, "step_ns", list, sizeof list);
    for (char *p = list; *p && n < 64;) {
        v[n++] = strtod(p, &p);
        p += *p == ',';
    }
    /* steps/s of each recent step: the job's own step times, so it is there from the first
     * frame (a rate between refreshes would need two). */

    for (int i = 0; i < n; i++)
        sps[i] = v[i] > 0 ? 1e9 / v[i] : 0;
    tp_tui_grid_printf(g, 0, y, 34, TP_TUI_A_HEADER, " step time  last %s",
                       tp_units_dur(a, sizeof a, n ? v[n - 1] : NAN));
    sparkline(g, 35, y, 32, v, n, t->o.ascii);
    tp_tui_grid_printf(g, 69, y, 22, TP_TUI_A_HEADER, "steps/s  %.2f", n ? sps[n - 1] : 0.0);
    sparkline(g, 92, y, g->w - 93, sps, n, t->o.ascii);
    double wsteps = t->have_data ? (double)t->d.a.dg.n_steps : 0;
    double span = t->have_data ? (double)t->d.a.dg.window_ns : NAN;
    double busy = t->have_data ? 100 * t->d.a.dg.utilization : NAN;
    if (t->have_data && !(span > 0) && t->w.t1 > t->w.t0) {
        /* no device activity, no window in the analysis' sense: the window asked for, in
         * which the device was not busy */
        span = (double)(t->w.t1 - t->w.t0);
        busy = 0;
    }
    if (t->f.have) { /* the aggregator's: the same definitions, kept up to date */
        wsteps = (double)t->f.steps, span = t->f.t1 - t->f.t0;
        busy = span > 0 ? 100 * t->f.busy_ns / span : NAN;
    }
    tp_tui_grid_printf(g, 0, y + 1, g->w, TP_TUI_A_NORMAL,
                       " window: %.0f steps in %s, %s a step; device busy %.2f %% of it%s", wsteps,
                       tp_units_dur(a, sizeof a, span),
                       tp_units_dur(b, sizeof b, wsteps > 0 ? span / wsteps : NAN), busy,
                       t->f.have && !t->f.final ? "  (provisional: device records may still arrive)"
                                                : "");
    return y + 2;
}

/* The aggregator's streams: each cell shows the share of its part of the window. */
static int draw_fig_streams(tp_tui_live *t, tp_tui_grid *g, int y) {
    int cols = g->w - 30;
    double span = t->f.t1 - t->f.t0;
    int devices = 0; /* more than one device: the label names it */
    for (size_t i = 1; i < t->f.n_streams; i++)
        devices |= t->f.streams[i].device != t->f.streams[0].device;
    for (size_t i = 0; i < t->f.n_streams; i++) {
        const tp_live_figs_stream *s = &t->f.streams[i];
        if (devices)
            tp_tui_grid_printf(g, 0, y, 20, TP_TUI_A_NORMAL, " dev %u stream %u", s->device,
                               s->stream);
        else
            tp_tui_grid_printf(g, 0, y, 20, TP_TUI_A_NORMAL, " stream %u", s->stream);
        for (int c = 0; c < cols && s->n_cells; c++) {
            double f = s->cells[(long)c * s->n_cells / cols];
            tp_tui_grid_put(g, 20 + c, y,
                            tp_tui_busy_glyph(tp_tui_busy_level(f, f > 0), t->o.ascii), 1,
                            TP_TUI_A_BUSY);
        }
        tp_tui_grid_printf(g, 21 + cols, y, 9, TP_TUI_A_NORMAL, "%5.1f %%",
                           span > 0 ? 100 * s->busy_ns / span : 0.0);
        y++;
    }
    if (!t->f.n_streams)
        tp_tui_grid_put(g, 0, y++, " (no device activity in the window)", g->w, TP_TUI_A_NORMAL);
    return y;
}

/* One sparkline per stream: the busy share of each cell over the window. */
static int draw_streams(tp_tui_live *t, tp_tui_grid *g, int y) {
    if (t->f.have && g->w - 30 >= 4)
        return draw_fig_streams(t, g, y);
    int shown = 0, cols = g->w - 30;
    if (!t->have_data || cols < 4)
        return y;
    tp_tui_window win = tp_tui_window_make(t->d.t_first, t->d.t_last - t->d.t_first, cols);
    const tp_events *ev = &t->d.r->ev;
    double *frac = tp_mem_xalloc((size_t)cols, sizeof *frac);
    uint32_t *touched = tp_mem_xalloc((size_t)cols, sizeof *touched);
    for (size_t l = 0; l < t->d.n_lanes && shown < MAX_STREAMS; l++) {
        const tp_tui_lane *ln = &t->d.lanes[l];
        if (!ln->is_stream)
            continue;
        /* the lane's times as arrays: tp_tui_busy_cells knows no model, and durations are
         * read through tp_ev_dur */
        int64_t *ts = tp_mem_xalloc(ln->n + 1, sizeof *ts),
                *dur = tp_mem_xalloc(ln->n + 1, sizeof *dur);
        for (size_t i = 0; i < ln->n; i++)
            ts[i] = ev->ts[ln->rows[i]], dur[i] = tp_ev_dur(ev, ln->rows[i]);
        tp_tui_busy_cells(&win, ts, dur, NULL, ln->n, frac, touched);
        free(ts), free(dur);
        double sum = 0;
        tp_tui_grid_printf(g, 0, y, 20, TP_TUI_A_NORMAL, " %s", ln->label);
        for (int c = 0; c < cols; c++) {
            sum += frac[c];
            tp_tui_grid_put(g, 20 + c, y,
                            tp_tui_busy_glyph(tp_tui_busy_level(frac[c], touched[c]), t->o.ascii),
                            1, TP_TUI_A_BUSY);
        }
        tp_tui_grid_printf(g, 21 + cols, y, 9, TP_TUI_A_NORMAL, "%5.1f %%", 100 * sum / cols);
        y++, shown++;
    }
    if (!shown)
        tp_tui_grid_put(g, 0, y++, " (no device activity in the window)", g->w, TP_TUI_A_NORMAL);
    free(frac);
    free(touched);
    return y;
}

static int draw_copies_memory(tp_tui_live *t, tp_tui_grid *g, int y) {
    char line[1024], a[32], b[32];
    int n = snprintf(line, sizeof line, " copies:");
    const tp_an_memory *mem = &t->d.a.mem;
    for (size_t i = 0; t->have_data && i < mem->n_copy && n > 0 && (size_t)n < sizeof line; i++)
        n += snprintf(line + n, sizeof line - (size_t)n, "  %s %s %zu x %s",
                      tp_an_copy_kind_name(mem->copy[i].copy_kind),
                      tp_an_mem_kind_name(mem->copy[i].src_kind), mem->copy[i].count,
                      tp_units_bytes(a, sizeof a, (double)mem->copy[i].bytes));
    if (!t->have_data || !mem->n_copy)
        snprintf(line + n, sizeof line - (size_t)n, "  none");
    tp_tui_grid_put(g, 0, y++, line, g->w, TP_TUI_A_NORMAL);
    /* Memory: the allocator's totals as the last event in the window reported them. */
    double al = NAN, re = NAN;
    const tp_memevents *me = t->have_data ? &t->d.r->mem : NULL;
    for (size_t i = me ? me->n : 0; i-- > 0 && (isnan(al) || isnan(re));) {
        if (isnan(al) && tp_memev_total_allocated(me, i) >= 0)
            al = (double)tp_memev_total_allocated(me, i);
        if (isnan(re) && tp_memev_total_reserved(me, i) >= 0)
            re = (double)tp_memev_total_reserved(me, i);
    }
    if (t->f.have && t->f.have_mem && isnan(al) && isnan(re)) {
        /* The allocator's NVTX regions and heaps, as the aggregator followed them from the
         * job's start: the window starts with the state before it, not with zero. */
        char c[32], d[32];
        tp_tui_grid_printf(
            g, 0, y++, g->w, TP_TUI_A_NORMAL,
            " memory: allocated %s  reserved %s  (at the window's start %s / %s; %.0f allocator "
            "events in the window%s)",
            tp_units_bytes(a, sizeof a, t->f.alloc1), tp_units_bytes(b, sizeof b, t->f.reserved1),
            tp_units_bytes(c, sizeof c, t->f.alloc0), tp_units_bytes(d, sizeof d, t->f.reserved0),
            t->f.mem_events,
            is_idle(t) ? "; --idle: only what was allocated while recording is known" : "");
        return y;
    }
    tp_tui_grid_printf(g, 0, y++, g->w, TP_TUI_A_NORMAL,
                       " memory: allocated %s  reserved %s  (%zu allocator events in the window)",
                       isnan(al) ? "-" : tp_units_bytes(a, sizeof a, al),
                       isnan(re) ? "-" : tp_units_bytes(b, sizeof b, re), me ? me->n : 0);
    return y;
}

static int draw_costs(tp_tui_live *t, tp_tui_grid *g, int y) {
    const char *s = t->st->text;
    char a[32];
    double up = tp_live_get_num(s, "uptime_ns", 0),
           drain = tp_live_get_num(s, "writer_overhead_ns", 0);
    tp_tui_grid_printf(
        g, 0, y++, g->w, TP_TUI_A_NORMAL,
        " drops: %.0f records lost in the window, %.0f by the collector so far; live buffer: "
        "%.0f evicted, %.0f not staged, %.0f updates not delivered",
        t->have_data ? (double)t->d.a.drops.lost : 0, tp_live_get_num(s, "writer_dropped", 0),
        tp_live_get_num(s, "evicted", 0), tp_live_get_num(s, "tap_dropped", 0),
        tp_live_get_num(s, "updates_dropped", 0));
    tp_tui_grid_printf(g, 0, y++, g->w, TP_TUI_A_NORMAL,
                       " collector overhead: writer drain %s (%.2f %% of the run)",
                       tp_units_dur(a, sizeof a, drain), up > 0 ? 100 * drain / up : 0);
    return y;
}

static int draw_diagnosis(tp_tui_live *t, tp_tui_grid *g, int y, int max) {
    tp_tui_grid_put(g, 0, y++, " Diagnosis of the window", g->w, TP_TUI_A_HEADER);
    const tp_diagnosis *dg = &t->d.a.dg;
    if (!t->have_data || !dg->n) {
        tp_tui_grid_put(g, 0, y++, "   no findings", g->w, TP_TUI_A_NORMAL);
        return y;
    }
    for (size_t i = 0; i < dg->n && (int)i < max; i++)
        tp_tui_grid_printf(g, 0, y++, g->w, TP_TUI_A_NORMAL, "   [%s %.1f%%] %s",
                           tp_diag_level(dg->f[i].severity), 100 * dg->f[i].severity,
                           dg->f[i].title);
    return y;
}

/* The aggregator's top kernels (kernels = 1) or ranges, by total time, in `rows` lines, in
 * the columns of the offline tables. */
static void draw_fig_table(tp_tui_live *t, tp_tui_grid *g, int y, int rows, int kernels) {
    static const char *const groups[] = {"COMPUTATION", "COMMUNICATION", "MEMORY", "OTHER"};
    const tp_live_figs_row *r = kernels ? t->f.kernels : t->f.ranges;
    size_t n = kernels ? t->f.n_kernels : t->f.n_ranges;
    int namew = g->w - (kernels ? 78 : 86);
    namew = namew < 16 ? 16 : namew;
    if (kernels)
        tp_tui_grid_printf(g, 0, y, g->w, TP_TUI_A_HEADER,
                           "  %-*s  %8s  %10s  %10s  %10s  %10s  type", namew, "kernel", "count",
                           "total", "mean", "min", "max");
    else
        tp_tui_grid_printf(g, 0, y, g->w, TP_TUI_A_HEADER,
                           "  %-*s  %8s  %10s  %10s  %8s  %10s  %10s  %10s", namew, "range",
                           "count", "total", "GPU time", "GPU ops", "mean", "min", "max");
    for (size_t i = 0; i < n && (int)i + 1 < rows; i++) {
        char a[32], b[32], c[32], d[32], e[32], col[64];
        if (kernels)
            snprintf(col, sizeof col, "  %s", groups[r[i].group & 3]);
        else
            snprintf(col, sizeof col, "  %10s  %8.0f", tp_units_dur(e, sizeof e, r[i].gpu_ns),
                     r[i].gpu_ops);
        char mid[64]; /* ranges: the device time next to the total, as the offline table */
        snprintf(mid, sizeof mid, "%s", kernels ? "" : col);
        tp_tui_grid_printf(
            g, 0, y + 1 + (int)i, g->w, i ? TP_TUI_A_NORMAL : TP_TUI_A_SELECT,
            "%c %-*.*s  %8llu  %10s%s  %10s  %10s  %10s%s", i ? ' ' : '>', namew, namew, r[i].name,
            r[i].count, tp_units_dur(a, sizeof a, r[i].sum), mid,
            tp_units_dur(b, sizeof b, r[i].count ? r[i].sum / (double)r[i].count : NAN),
            tp_units_dur(c, sizeof c, r[i].min), tp_units_dur(d, sizeof d, r[i].max),
            kernels ? col : "");
    }
}

/* The window's CPU samples in rows [y, y + rows): a line saying what they are, then their
 * table. A window of a few fast steps holds few samples: the line says how to widen it. */
static void draw_samples(tp_tui_live *t, tp_tui_grid *g, int y, int rows) {
    char hint[96] = "";
    if (t->sa.samples < 50) /* 0.5 s of one thread at the default rate */
        snprintf(hint, sizeof hint, "; few in this window: + widens it, w makes it seconds");
    char nb[96];
    tp_tui_grid_printf(g, 0, y, g->w, TP_TUI_A_HEADER,
                       " CPU time by line, sampled: %zu samples of %zu threads, %.0f a second%s%s",
                       t->sa.samples, t->sa.n_threads,
                       t->sa.hz ? (double)t->sa.hz : tp_live_get_num(t->st->text, "sample_hz", 0),
                       tp_an_samples_native_note(&t->sa, nb, sizeof nb), hint);
    tp_tui_table_draw(&t->sat, g, y + 1, rows - 1);
}

static void draw_keys(tp_tui_live *t, tp_tui_grid *g) {
    int y = g->h - 1;
    tp_tui_grid_fill(g, y, TP_TUI_A_KEY);
    tp_tui_grid_printf(g, 0, y, g->w, TP_TUI_A_KEY,
                       " q quit  c capture next %d steps  +/- window  w steps/seconds  v views",
                       t->o.capture_steps);
    tp_tui_grid_printf(g, 0, y - 1, g->w, TP_TUI_A_HEADER, " %s", t->msg); /* its own line */
}

const tp_tui_grid *tp_tui_live_render(tp_tui_live *t) {
    if (t->views)
        return tp_tui_render(t->views);
    tp_tui_grid *g = &t->g;
    for (int y = 0; y < g->h; y++)
        tp_tui_grid_fill(g, y, TP_TUI_A_NORMAL);
    if (g->w < 60 || g->h < 20) {
        tp_tui_grid_put(g, 0, 0, "terminal too small", g->w, TP_TUI_A_WARN);
        return g;
    }
    int y = draw_title(t, g, 0);
    y = draw_steps(t, g, y);
    y = draw_streams(t, g, y);
    y = draw_copies_memory(t, g, y);
    y = draw_costs(t, g, y);
    y = draw_diagnosis(t, g, y, 4);
    int left = g->h - 2 - y; /* above the message and key lines */
    if (t->have_sa && left >= 12) {
        /* a sampled job: its lines take what the kernels and ranges do not need (a CPU job
         * has no kernels: their table keeps two rows to say so) */
        size_t nk = t->f.have ? t->f.n_kernels : t->d.kernels.nrows,
               nr = t->f.have ? t->f.n_ranges : t->d.ranges.nrows;
        int kr = nk ? left / 4 : 2, rr = (int)nr + 1 < left / 4 ? (int)nr + 1 : left / 4;
        rr = rr < 2 ? 2 : rr;
        draw_samples(t, g, y + kr + rr, left - kr - rr);
        if (t->f.have) {
            draw_fig_table(t, g, y, kr, 1);
            draw_fig_table(t, g, y + kr, rr, 0);
        } else {
            tp_tui_table_draw(&t->d.kernels, g, y, kr);
            tp_tui_table_draw(&t->d.ranges, g, y + kr, rr);
        }
    } else if (t->f.have && left >= 6) {
        draw_fig_table(t, g, y, left / 2, 1);
        draw_fig_table(t, g, y + left / 2, left - left / 2, 0);
    } else if (t->have_data && left >= 6) {
        tp_tui_table_draw(&t->d.kernels, g, y, left / 2);
        tp_tui_table_draw(&t->d.ranges, g, y + left / 2, left - left / 2);
    }
    draw_keys(t, g);
    return g;
}

tp_status tp_tui_live_snapshot(tp_tui_live *t, FILE *out) {
    const tp_tui_grid *g = tp_tui_live_render(t);
    char line[8192];
    for (int y = 0; y < g->h; y++) {
        tp_tui_grid_row(g, y, line, sizeof line, 1);
        if (fprintf(out, "%s\n", line) < 0)
            return TP_ERR_IO;
    }
    return fflush(out) == 0 ? TP_OK : TP_ERR_IO;
}

/* ---------------------------------------------------------------- the terminal */

static const tp_tui_grid *app_render(void *t) {
    return tp_tui_live_render(t);
}

static void app_resize(void *t, int w, int h) {
    tp_tui_live_resize(t, w, h);
}

static int app_key(void *t, int k) {
    return tp_tui_live_key(t, k);
}

static void app_tick(void *p) {
    tp_tui_live *t = p;
    char err[512];
    if (tp_tui_live_refresh(t, err, sizeof err) != TP_OK)
        snprintf(t->msg, sizeof t->msg, "%s", err);
}

tp_status tp_tui_live_run(tp_tui_live *t) {
    tp_tui_term_app app = {t, app_render, app_resize, app_key, app_tick, 500};
    return tp_tui_term_run(&app);
}
