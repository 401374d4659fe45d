/* bench_tui_redraw: what one key costs on the Timeline of a big trace (redraw included).
 *
 * Builds a rank in memory: S streams of back-to-back kernels and T threads, each with steps
 * holding nested ranges and launch calls (depth 3), N events in all (default 2,000,000; the
 * first argument changes it). Opens the TUI at 200x60 on the Timeline and times each key of a
 * user's session (zoom in, n, Up/Down, pan, zoom out, whole rank, Enter flow, find, step
 * window, Kernels' Enter) as tp_tui_key + tp_tui_render, reporting the median and the worst
 * of 5 runs of each against the 16 ms frame goal (docs/PERFORMANCE.md). The lane drawing is
 * O(cells log n) per level (tp_tui_rows), so the figures should hardly move with N. Before the
 * keys, the first frame of every view (each computes its analyses when first shown). With a
 * second argument `bg`: the interactive UI's background computation instead (see background). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tp_model.h"
#include "tp_tui.h"

/* CPU time of this (the only) thread: on a machine loaded by others, wall time measures the
 * others as much as us (a run here got 13 % of a core); the frame's own cost is its CPU time.
 * TP_BENCH_WALL=1 measures wall time instead. */
static double now_ms(void) {
    static int wall = -1;
    if (wall < 0)
        wall = getenv("TP_BENCH_WALL") != NULL;
    struct timespec ts;
    clock_gettime(wall ? CLOCK_MONOTONIC : CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static uint32_t str(tp_model *m, const char *s) {
    return tp_model_intern(m, s, strlen(s));
}

static void push(tp_rank *r, int64_t ts, int64_t dur, uint32_t name, tp_cat cat, int64_t stream,
                 int64_t tid, int64_t corr) {
    tp_event_row e;
    tp_event_row_init(&e);
    e.ts = ts, e.dur = dur, e.name = name, e.cat = (uint8_t)cat, e.stream = stream;
    e.device = stream >= 0 ? 0 : -1, e.pid = 1, e.tid = stream >= 0 ? stream : tid;
    e.correlation = corr;
    e.flags = cat == TP_CAT_CUDA_RUNTIME ? TP_EVF_LAUNCH : 0;
    tp_events_push(&r->ev, &e);
}

/* One thread's step: step > (forward > launch), the launched kernel on stream `s`. */
static void one_step(tp_model *m, tp_rank *r, int64_t t, int64_t tid, int64_t s, int64_t *corr) {
    static uint32_t n_step, n_fwd, n_launch, n_kernel;
    if (!n_step)
        n_step = str(m, "step"), n_fwd = str(m, "forward conv1"),
        n_launch = str(m, "cudaLaunchKernel"), n_kernel = str(m, "conv3x3_fwd");
    push(r, t, 1000, n_step, TP_CAT_USER_ANNOTATION, -1, tid, -1);
    push(r, t + 100, 600, n_fwd, TP_CAT_USER_ANNOTATION, -1, tid, -1);
    push(r, t + 200, 100, n_launch, TP_CAT_CUDA_RUNTIME, -1, tid, *corr);
    push(r, t + 400, 500, n_kernel, TP_CAT_KERNEL, s, -1, *corr);
    ++*corr;
}

static tp_model *build(size_t n) {
    tp_model *m = tp_model_new();
    tp_rank *r = tp_model_add_rank(m, "bench.json");
    r->rank = 0;
    int64_t corr = 1;
    size_t steps = n / 4, threads = 4;
    for (size_t i = 0; i < steps; i++)
        one_step(m, r, (int64_t)(i / threads) * 1200, (int64_t)(100 + i % threads),
                 (int64_t)(i % threads), &corr);
    tp_model_finish(m);
    return m;
}

typedef struct {
    const char *what;
    const char *keys; /* characters; '\n' is Enter, 'U' Up, 'D' Down, 'R' Right */
} step;

static int key_of(char c) {
    return c == '\n'  ? TP_TUI_KEY_ENTER
           : c == 'U' ? TP_TUI_KEY_UP
           : c == 'D' ? TP_TUI_KEY_DOWN
           : c == 'R' ? TP_TUI_KEY_RIGHT
                      : (unsigned char)c;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* `bench_tui_redraw N bg`: the interactive UI's way (tp_tui_opts.background): the Summary's
 * first frame (it says "computing"), then wall time until the Summary is drawn from its data,
 * until every view's data is there; CPU time of the UI thread for the first frame. */
static int background(tp_model *m, tp_tui_opts *o, double model_ms) {
    tp_tui *t;
    char err[128];
    o->view = "summary", o->background = 1;
    double w0 = wall_ms(), c0 = now_ms();
    if (tp_tui_open(&t, m, o, err, sizeof err) != TP_OK)
        return fprintf(stderr, "%s\n", err), 1;
    tp_tui_render(t);
    double w1 = wall_ms(), c1 = now_ms();
    int computing = tp_tui_computing(t);
    while (tp_tui_computing(t)) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    tp_tui_render(t);
    double w2 = wall_ms();
    tp_tui_wait_all(t);
    double w3 = wall_ms();
    printf("bench_tui_redraw bg: %zu events; model %.0f ms; first frame (open + render%s): "
           "%.1f ms wall, %.1f ms UI-thread CPU; Summary drawn from its data after %.0f ms "
           "wall; every view's data after %.0f ms wall\n",
           m->ranks[0].ev.n, model_ms, computing ? ", \"computing\"" : "", w1 - w0, c1 - c0,
           w2 - w0, w3 - w0);
    tp_tui_close(t);
    tp_model_close(m);
    return 0;
}

int main(int argc, char **argv) {
    size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 2000000;
    double t0 = now_ms();
    tp_model *m = build(n);
    double t1 = now_ms();
    tp_tui_opts o;
    tp_tui_opts_init(&o);
    o.view = "timeline", o.width = 200, o.height = 60;
    tp_tui *t;
    char err[128];
    if (argc > 2 && !strcmp(argv[2], "bg"))
        return background(m, &o, t1 - t0);
    if (tp_tui_open(&t, m, &o, err, sizeof err) != TP_OK)
        return fprintf(stderr, "%s\n", err), 1;
    double t_open = now_ms();
    tp_tui_render(t);
    double t2 = now_ms();
    printf("bench_tui_redraw: %zu events; model %.0f ms, open (view) %.0f ms, Timeline's first "
           "frame %.0f ms (open + frame: %.0f ms)\n",
           m->ranks[0].ev.n, t1 - t0, t_open - t1, t2 - t_open, t2 - t1);
    /* Each other view's first frame: what it computes when first shown (tp_tui_data_need). */
    for (int v = 0; v < TP_TUI_N_VIEWS; v++) {
        if (v == 1)
            continue;
        double a = now_ms();
        tp_tui_key(t, '1' + v);
        tp_tui_render(t);
        printf("first frame of %-10s %8.0f ms\n", tp_tui_view_name(v), now_ms() - a);
    }
    tp_tui_key(t, '2'); /* back to the Timeline for the key session */
    static const step session[] = {
        {"redraw (no key)", ""}, {"+ zoom in", "+"},
        {"- zoom out", "-"},     {"n next", "n"},
        {"Down level", "D"},     {"Up level", "U"},
        {"Right pan", "R"},      {"0 whole rank", "0"},
        {"Enter flow", "\n"},    {"w step window", "w"},
        {"Esc", "\x1b"},         {"c collapse lane", "c"},
        {"c expand lane", "c"},  {"/ find + Enter", "/forward\n"},
    };
    printf("%-22s %10s %10s   (200x60, 5 runs; goal 16 ms; %s time)\n", "key", "median ms",
           "max ms", getenv("TP_BENCH_WALL") ? "wall" : "CPU");
    for (size_t s = 0; s < sizeof session / sizeof *session; s++) {
        double v[5];
        for (int k = 0; k < 5; k++) {
            double a = now_ms();
            for (const char *c = session[s].keys; *c; c++)
                tp_tui_key(t, key_of(*c));
            tp_tui_render(t);
            v[k] = now_ms() - a;
            if (session[s].keys[0] == 'c' || session[s].keys[0] == '\n')
                break; /* a toggle: once */
        }
        int runs = session[s].keys[0] == 'c' || session[s].keys[0] == '\n' ? 1 : 5;
        qsort(v, (size_t)runs, sizeof *v, cmp_d);
        printf("%-22s %10.3f %10.3f\n", session[s].what, v[runs / 2], v[runs - 1]);
    }
    double a = now_ms();
    tp_tui_key(t, '3');
    tp_tui_key(t, TP_TUI_KEY_ENTER);
    tp_tui_render(t);
    printf("%-22s %10.3f %10s\n", "Kernels Enter (jump)", now_ms() - a, "");
    tp_tui_close(t);
    tp_model_close(m);
    return 0;
}
