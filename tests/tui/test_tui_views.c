/* Headless tests of the TUI over the committed sample trace and over hand-made models:
 * keys go in through tp_tui_key, the frame comes out through tp_tui_render, and the
 * assertions compare screen text with the analyzer's own numbers (tp_an_*), so a view
 * that shows a wrong or stale value fails. */
#include <stdarg.h>

#include "tp_an_kernels.h"
#include "tp_an_ranks.h"
#include "tp_an_temporal.h"
#include "tp_load.h"
#include "tp_rank_analysis.h"
#include "tp_test.h"
#include "tp_tui.h"
#include "tp_tui_data.h"
#include "tp_units.h"
#include "tp_tui_layout.h"

static tp_model *sample;

/* Row y of the current frame. */
static const char *screen_row(tp_tui *t, int y) {
    static char buf[16384];
    const tp_tui_grid *g = tp_tui_render(t);
    tp_tui_grid_row(g, y, buf, sizeof buf, 1);
    return buf;
}

/* First frame row containing s, or -1. */
static int screen_find(tp_tui *t, const char *s) {
    const tp_tui_grid *g = tp_tui_render(t);
    for (int y = 0; y < g->h; y++)
        if (strstr(screen_row(t, y), s))
            return y;
    return -1;
}

static void keys(tp_tui *t, const char *ks) {
    for (; *ks; ks++)
        tp_tui_key(t, *ks == '\n' ? TP_TUI_KEY_ENTER : (unsigned char)*ks);
}

static tp_tui *open_tui(const tp_model *m, const char *view, int w, int h) {
    tp_tui_opts o;
    tp_tui_opts_init(&o);
    o.view = view, o.width = w, o.height = h;
    char err[256];
    tp_tui *t = NULL;
    if (tp_tui_open(&t, m, &o, err, sizeof err) != TP_OK)
        fprintf(stderr, "tp_tui_open: %s\n", err);
    return t;
}

static void test_summary_numbers(void) {
    tp_an_view v;
    tp_an_temporal tm;
    tp_an_view_build(&v, sample, &sample->ranks[0], NULL);
    tp_an_temporal_run(&v, &tm);
    tp_an_view_free(&v);
    char want[64];
    snprintf(want, sizeof want, "%-20s %10.2f %%", "Device utilization",
             100.0 * (double)tm.busy / (double)tm.span);
    tp_tui *t = open_tui(sample, "summary", 120, 40);
    CHECK(t != NULL);
    CHECK(screen_find(t, want) > 0);
    char span[32];
    tp_units_dur(span, sizeof span, (double)tm.span);
    int y = screen_find(t, "  Span ");
    CHECK(y > 0 && strstr(screen_row(t, y), span));
    CHECK(screen_find(t, "host wait") > 0);
    CHECK(strstr(screen_row(t, 0), "[1 Summary]") != NULL);
    CHECK(strstr(screen_row(t, 39), "q Quit") != NULL);
    tp_tui_close(t);
}

static void test_kernels_sort_search(void) {
    tp_an_view v;
    tp_an_kernels k;
    tp_an_view_build(&v, sample, &sample->ranks[0], NULL);
    tp_an_kernels_run(&v, &k);
    size_t best_mean = 0, n_relu = 0;
    for (size_t i = 0; i < k.n; i++) {
        best_mean = k.k[i].mean > k.k[best_mean].mean ? i : best_mean;
        n_relu += strstr(tp_model_str(sample, k.k[i].name), "relu") != NULL;
    }
    char top_total[256], top_mean[256];
    snprintf(top_total, sizeof top_total, "> %s ", tp_model_str(sample, k.k[0].name));
    snprintf(top_mean, sizeof top_mean, "%s ", tp_model_str(sample, k.k[best_mean].name));
    tp_tui *t = open_tui(sample, "3", 120, 40);
    CHECK(t != NULL);
    CHECK(strstr(screen_row(t, 0), "[3 Kernels]") != NULL);
    CHECK(strstr(screen_row(t, 3), top_total) == screen_row(t, 3)); /* first row, selected */
    CHECK(strstr(screen_row(t, 2), "total\u25bc") != NULL);
    keys(t, "s"); /* total -> mean */
    CHECK(strstr(screen_row(t, 2), "mean\u25bc") != NULL);
    CHECK(strstr(screen_row(t, 3), top_mean) == screen_row(t, 3) + 2); /* selection kept */
    keys(t, "/relu\n");
    char want[64];
    snprintf(want, sizeof want, "search \"relu\": %zu shown", n_relu);
    CHECK(strstr(screen_row(t, 1), want) != NULL);
    for (size_t i = 0; i < n_relu; i++)
        CHECK(strstr(screen_row(t, 3 + (int)i), "relu") != NULL);
    CHECK_STR(screen_row(t, 3 + (int)n_relu), "");
    keys(t, "/\x1b"); /* Esc clears the search */
    CHECK(strstr(screen_row(t, 1), "search") == NULL);
    tp_tui_key(t, TP_TUI_KEY_END); /* the last row gets selected and scrolled into view */
    CHECK(screen_find(t, "> ") > 3);
    tp_an_kernels_free(&k);
    tp_an_view_free(&v);
    tp_tui_close(t);
}

/* The Timeline: zoom levels, the selection (first op of stream 0 at first), n, and that the
 * selection survives zoom and pan. */
static void test_timeline_zoom_select(void) {
    const tp_rank *r = &sample->ranks[0];
    tp_tui *t = open_tui(sample, "timeline", 120, 40);
    CHECK(t != NULL);
    CHECK(strstr(screen_row(t, 1), "zoom 1x") != NULL);
    CHECK(strstr(screen_row(t, 3), "device ") == screen_row(t, 3)); /* the streams' header */
    CHECK(screen_find(t, ">stream 0") == 4);
    uint32_t first = r->streams.rows[r->streams.off[0]];
    char want[256];
    snprintf(want, sizeof want, "Selected: %s", tp_model_str(sample, r->ev.name[first]));
    CHECK(screen_find(t, want) > 0);
    CHECK(screen_find(t, "launched by: ") > 0);
    keys(t, "+");
    CHECK(strstr(screen_row(t, 1), "zoom 2x") != NULL);
    keys(t, "++");
    CHECK(strstr(screen_row(t, 1), "zoom 8x") != NULL);
    keys(t, "-");
    CHECK(strstr(screen_row(t, 1), "zoom 4x") != NULL);
    keys(t, "0");
    CHECK(strstr(screen_row(t, 1), "zoom 1x") != NULL);
    /* n: the next op on stream 0's first level; it stays selected through zoom and pan. */
    keys(t, "n");
    int y = screen_find(t, "Selected: ");
    CHECK(y > 0);
    char sel[256];
    snprintf(sel, sizeof sel, "%s", screen_row(t, y));
    CHECK(strstr(screen_row(t, y + 1), "stream 0") != NULL);
    keys(t, "++++++");
    CHECK(screen_find(t, sel) == y);
    tp_tui_key(t, TP_TUI_KEY_RIGHT);
    tp_tui_key(t, TP_TUI_KEY_PGDN);
    CHECK(screen_find(t, sel) == y);
    /* c collapses stream 0 into one row of busy glyphs and expands it again. */
    keys(t, "0");
    int rows_before = screen_find(t, "pid ");
    keys(t, "c");
    CHECK(screen_find(t, ">+stream 0") == 4);
    CHECK(screen_find(t, "pid ") < rows_before); /* its levels folded into one row */
    CHECK(strstr(screen_row(t, 4), "\u2588") || strstr(screen_row(t, 4), "\u2581"));
    keys(t, "c");
    CHECK(screen_find(t, "pid ") == rows_before);
    /* Panning never leaves the trace. */
    for (int i = 0; i < 200; i++)
        tp_tui_key(t, TP_TUI_KEY_PGUP);
    CHECK(strstr(screen_row(t, 1), "Window +0 ns") != NULL);
    tp_tui_close(t);
}

/* Nesting: Down from the first step selects the event nested in it at its start, Up from
 * that selects the step again, whatever the zoom; a step window's statistics are the
 * analyzer's on that window. */
static void test_timeline_nesting(void) {
    const tp_events *ev = &sample->ranks[0].ev;
    uint32_t step_name = tp_model_find_str(sample, "step");
    long step = -1, child = -1;
    for (size_t i = 0; i < ev->n && step < 0; i++)
        step = ev->name[i] == step_name && ev->cat[i] == TP_CAT_USER_ANNOTATION ? (long)i : -1;
    CHECK(step >= 0);
    for (size_t i = (size_t)step + 1; i < ev->n && child < 0; i++)
        child = tp_ev_parent(ev, i) == step ? (long)i : -1;
    CHECK(child >= 0 && ev->ts[child] >= ev->ts[step]);
    tp_tui *t = open_tui(sample, "timeline", 120, 40);
    keys(t, "/step\n");
    CHECK(screen_find(t, "Selected: step") > 0);
    CHECK(screen_find(t, "Esc clear \"step\"") == 39); /* the kept find, and how to clear it */
    tp_tui_key(t, TP_TUI_KEY_DOWN);
    char want[256];
    snprintf(want, sizeof want, "Selected: %s", tp_model_str(sample, ev->name[child]));
    CHECK(screen_find(t, want) > 0);
    keys(t, "++");
    tp_tui_key(t, TP_TUI_KEY_UP);
    CHECK(screen_find(t, "Selected: step") > 0);
    keys(t, "++");
    CHECK(screen_find(t, "Selected: step") > 0);
    keys(t, "\x1b");
    CHECK(screen_find(t, "Esc clear") < 0);
    /* w: the step's window; its statistics are those of the analyzer on [start, end). */
    keys(t, "w");
    CHECK(screen_find(t, "Window +") > 0 && screen_find(t, ": step ") > 0);
    tp_an_opts o;
    tp_an_opts_init(&o);
    o.window_lo = ev->ts[step], o.window_hi = ev->ts[step] + tp_ev_dur(ev, step);
    tp_rank_analysis a;
    tp_rank_analysis_run(&a, sample, &sample->ranks[0], &o, TP_RA_ALL);
    CHECK(a.nv.n > 0);
    int found = 0;
    for (size_t i = 0; i < a.nv.n; i++)
        found += a.nv.r[i].name == step_name && a.nv.r[i].count == 1;
    CHECK_EQ_I(found, 1);
    char dur[32];
    tp_units_dur(dur, sizeof dur, (double)a.t.busy);
    snprintf(want, sizeof want, "Device busy %s of GPU span", dur);
    CHECK(a.t.has_gpu ? screen_find(t, want) > 0 : screen_find(t, "no GPU activity") > 0);
    char first_window[256];
    snprintf(first_window, sizeof first_window, "%s", screen_row(t, screen_find(t, "Window +")));
    keys(t, "]"); /* the next step: another window */
    CHECK(screen_find(t, ": step ") > 0 && screen_find(t, first_window) < 0);
    keys(t, "i"); /* the event again: the step selected */
    CHECK(screen_find(t, "Selected: step") > 0);
    keys(t, "i\x1b");
    CHECK(screen_find(t, "Device busy") < 0);
    tp_rank_analysis_free(&a);
    tp_tui_close(t);
}

/* Enter on a Kernels row: the kernel's longest occurrence, selected on its stream; Enter
 * again on the Timeline: the call that launched it; ? shows the Timeline's keys. */
static void test_jump_and_flow(void) {
    const tp_events *ev = &sample->ranks[0].ev;
    tp_tui *t = open_tui(sample, "kernels", 120, 40);
    const char *top = screen_row(t, 3) + 2; /* "> name ..." */
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(top, " "), top);
    uint32_t id = tp_model_find_str(sample, name);
    long longest = -1;
    for (size_t i = 0; i < ev->n; i++)
        if (ev->name[i] == id && tp_ev_stream(ev, i) != -1 &&
            (longest < 0 || tp_ev_dur(ev, i) > tp_ev_dur(ev, longest)))
            longest = (long)i;
    CHECK(longest >= 0);
    tp_tui_key(t, TP_TUI_KEY_ENTER);
    CHECK_EQ_I(tp_tui_current_view(t), 1);
    char want[256], dur[32];
    snprintf(want, sizeof want, "Selected: %s", name);
    int y = screen_find(t, want);
    CHECK(y > 0);
    tp_units_dur(dur, sizeof dur, (double)tp_ev_dur(ev, longest));
    snprintf(want, sizeof want, "duration %s  stream %lld", dur,
             (long long)tp_ev_stream(ev, longest));
    CHECK(strstr(screen_row(t, y + 1), want) != NULL);
    tp_tui_key(t, TP_TUI_KEY_ENTER); /* the flow: to the launching call */
    y = screen_find(t, "Selected: ");
    CHECK(strstr(screen_row(t, y + 1), "thread ") != NULL);
    CHECK(screen_find(t, "Stack of ") > 0);
    tp_tui_key(t, TP_TUI_KEY_ENTER); /* and back */
    snprintf(want, sizeof want, "Selected: %s", name);
    CHECK(screen_find(t, want) > 0);
    /* m marks a window by hand: from this op's start to the next one's end. */
    long first = -1, second = -1;
    for (size_t i = 0; i < ev->n; i++) /* the selection: the longest `name` */
        if (ev->name[i] == id && tp_ev_stream(ev, i) != -1 &&
            tp_ev_dur(ev, i) == tp_ev_dur(ev, longest)) {
            first = (long)i;
            break;
        }
    for (size_t i = (size_t)first + 1; i < ev->n && second < 0; i++)
        second = tp_ev_stream(ev, i) == tp_ev_stream(ev, first) &&
                         ev->ts[i] >= ev->ts[first] + tp_ev_dur(ev, first)
                     ? (long)i
                     : -1;
    keys(t, "m");
    CHECK(screen_find(t, "Window start marked at +") > 0);
    keys(t, "nm");
    char a[32], b[32];
    snprintf(
        want, sizeof want, "Window +%s .. +%s",
        tp_units_dur(a, sizeof a, (double)(ev->ts[first] - ev->ts[0])),
        tp_units_dur(b, sizeof b, (double)(ev->ts[second] + tp_ev_dur(ev, second) - ev->ts[0])));
    CHECK(second >= 0 && screen_find(t, want) > 0);
    keys(t, "\x1b");
    keys(t, "?");
    CHECK(screen_find(t, "Keys of the Timeline view") == 1);
    CHECK(screen_find(t, "Everywhere:") > 0);
    keys(t, "x"); /* any key closes it */
    CHECK(screen_find(t, "Keys of the Timeline view") < 0);
    /* Ranges: Enter shows the top range's longest occurrence, then the next longest. */
    keys(t, "4");
    CHECK(screen_find(t, "> step ") == 3);
    uint32_t step = tp_model_find_str(sample, "step");
    int64_t longest_step = 0, second_step = 0;
    for (size_t i = 0; i < ev->n; i++)
        if (ev->name[i] == step && tp_ev_dur(ev, i) > longest_step)
            second_step = longest_step, longest_step = tp_ev_dur(ev, i);
        else if (ev->name[i] == step && tp_ev_dur(ev, i) > second_step)
            second_step = tp_ev_dur(ev, i);
    tp_tui_key(t, TP_TUI_KEY_ENTER);
    y = screen_find(t, "Selected: step");
    tp_units_dur(dur, sizeof dur, (double)longest_step);
    snprintf(want, sizeof want, "duration %s  thread", dur);
    CHECK(y > 0 && strstr(screen_row(t, y + 1), want) != NULL);
    keys(t, "4");
    tp_tui_key(t, TP_TUI_KEY_ENTER);
    y = screen_find(t, "Selected: step");
    tp_units_dur(dur, sizeof dur, (double)second_step);
    snprintf(want, sizeof want, "duration %s  thread", dur);
    CHECK(y > 0 && strstr(screen_row(t, y + 1), want) != NULL);
    tp_tui_close(t);
}

static void test_resize_small(void) {
    tp_tui *t = open_tui(sample, "timeline", 120, 40);
    CHECK(t != NULL);
    tp_tui_resize(t, 40, 10); /* the smallest frame still shows the focused lane */
    CHECK(screen_find(t, ">stream 0") > 0 && screen_find(t, "Selected: ") > 0);
    tp_tui_resize(t, 30, 8);
    CHECK(strstr(screen_row(t, 0), "terminal too small") == screen_row(t, 0));
    CHECK_STR(screen_row(t, 1), "30x8, need 40x10");
    keys(t, "+-3s"); /* keys on a too-small screen do no harm */
    tp_tui_resize(t, 60, 12);
    CHECK(strstr(screen_row(t, 0), "[3 Kernels]") != NULL);
    tp_tui_resize(t, 1, 1);
    CHECK(strlen(screen_row(t, 0)) > 0);
    tp_tui_close(t);
}

static void push(tp_model *m, tp_rank *r, const char *name, tp_cat cat, int64_t ts, int64_t dur) {
    tp_event_row e;
    tp_event_row_init(&e);
    e.ts = ts, e.dur = dur, e.cat = (uint8_t)cat;
    e.name = tp_model_intern(m, name, strlen(name));
    e.pid = 1, e.tid = 7;
    tp_events_push(&r->ev, &e);
}

/* A thread named in the trace shows its name in the timeline's lane label. */
static void test_thread_name_lane(void) {
    tp_model *m = tp_model_new();
    tp_rank *r = tp_model_add_rank(m, "named.json");
    r->rank = 0;
    push(m, r, "load", TP_CAT_USER_ANNOTATION, 1000, 5000);
    tp_rank_set_thread_name(m, r, 1, 7, "dataloader", 10);
    tp_model_finish(m);
    tp_tui *t = open_tui(m, "timeline", 100, 24);
    CHECK(t != NULL);
    CHECK(screen_find(t, ">dataloader 7") > 0);
    tp_tui_close(t);
    tp_model_close(m);
}

/* A CPU-only rank with a long UTF-8 range name: no GPU, no crash, names cut with "…". */
static void test_no_gpu_utf8(void) {
    static const char *name = "数据加载 — préparation des données, étape très longue "
                              "qui ne tient pas dans la colonne du tableau des plages";
    tp_model *m = tp_model_new();
    tp_rank *r = tp_model_add_rank(m, "handmade.json");
    r->rank = 0;
    push(m, r, name, TP_CAT_USER_ANNOTATION, 1000, 5000);
    push(m, r, "inner", TP_CAT_USER_ANNOTATION, 2000, 1000);
    tp_model_finish(m);
    tp_tui *t = open_tui(m, "summary", 80, 24);
    CHECK(t != NULL);
    CHECK(screen_find(t, "No GPU activity in this rank") > 0);
    /* the host's split, as the report's Step time on the host: no steps, the CPU span */
    CHECK(screen_find(t, "CPU span on the host (no steps named; 5.00 \u00b5s)") > 0);
    int o = screen_find(t, "  other ");
    CHECK(o > 0 && strstr(screen_row(t, o), "5.00 \u00b5s") &&
          strstr(screen_row(t, o), "100.00 %"));
    CHECK(screen_find(t, "  no range open ") > 0);
    keys(t, "3");
    CHECK(screen_find(t, "(no GPU kernels") > 0);
    keys(t, "5");
    CHECK(screen_find(t, "(no copies") > 0);
    keys(t, "4");
    int y = screen_find(t, "数据加载 — pré"); /* at 80 columns the right columns give way */
    CHECK(y > 0);
    CHECK(strstr(screen_row(t, y), "\u2026") != NULL);
    CHECK(tp_tui_str_width(screen_row(t, y)) <= 80);
    keys(t, "1");
    CHECK(screen_find(t, "No GPU kernels in this trace") > 0); /* an empty table says why */
    keys(t, "2");
    CHECK(screen_find(t, ">thread 7") > 0);
    /* The first event (ts 1000) is selected: the outer range, drawn with its name cut. */
    CHECK(screen_find(t, "Selected: 数据加载") > 0);
    CHECK(screen_find(t, "\u258f数据加载") > 0);
    keys(t, "/inner\n"); /* find: the nested range, one level down */
    CHECK(screen_find(t, "Selected: inner") > 0);
    tp_tui_key(t, TP_TUI_KEY_UP);
    CHECK(screen_find(t, "Selected: 数据加载") > 0);
    CHECK(tp_tui_key(t, 'q') == 1);
    tp_tui_close(t);
    tp_model_close(m);
}

/* Stack `id` of two Python frames, innermost first: code `c0` at `l0` called from `c1` at `l1`
 * (codes as tp_rank_add_stack_pycode registered them). */
static void py_stack(tp_rank *r, uint32_t id, uint64_t c0, uint64_t l0, uint64_t c1, uint64_t l1) {
    const uint32_t py[] = {TP_STACK_PYTHON, TP_STACK_PYTHON};
    const uint64_t pc[] = {c0 << 24 | l0, c1 << 24 | l1};
    tp_rank_add_stack(r, id, py, pc, 2);
}

/* A CPU job recorded with --sample: the Stacks view opens on its samples (the program's line
 * first, then the call), c switches to the launching stacks (none) and back; the detail pane
 * names the selected row's frames and its time on a CPU and waiting. */
static void test_stacks_samples(void) {
    tp_model *m = tp_model_new();
    tp_rank *r = tp_model_add_rank(m, "sampled.tprof");
    r->rank = 0, r->native = 1;
    push(m, r, "train_step", TP_CAT_USER_ANNOTATION, 1000, 500000000);
    tp_rank_add_stack_pycode(m, r, 1, "/job/train.py", "augment", 5);
    tp_rank_add_stack_pycode(m, r, 2, "/job/train.py", "main", 20);
    tp_rank_add_stack_pycode(m, r, 3, "/usr/lib/python3.11/threading.py", "Condition.wait", 300);
    py_stack(r, 1, 1, 7, 2, 31);   /* augment:7 < main:31 */
    py_stack(r, 2, 3, 327, 2, 26); /* Condition.wait:327 < main:26 */
    for (int i = 0; i < 50; i++)   /* 30 on a CPU in augment, 20 waiting in Condition.wait */
        tp_samples_push(&r->samples, 10000000 * (int64_t)(i + 1), 1, 7, i < 30 ? 1 : 2, i < 30,
                        i < 30 ? 10000000 : 0, 10000000);
    tp_model_finish(m);
    tp_tui *t = open_tui(m, "stacks", 120, 30);
    CHECK(t != NULL);
    CHECK(screen_find(
              t, "2 sampled stacks (up to 5 frames; 50 samples of 1 threads, 100 a second)") == 1);
    int y = screen_find(t, "> train.py:7 in augment");
    CHECK(y > 0 && strstr(screen_row(t, y), "300.00 ms") && strstr(screen_row(t, y), "100.00 %"));
    y = screen_find(t, "  threading.py:327 in Condition.wait");
    CHECK(y > 0 && strstr(screen_row(t, y), "200.00 ms") && strstr(screen_row(t, y), "20"));
    CHECK(screen_find(t, "300.00 ms on a CPU, 0 ns waiting, 30 samples") > 0);
    keys(t, "c");
    CHECK(screen_find(t, "0 launching stacks") == 1);
    CHECK(screen_find(t, "(no GPU op launched from a recorded stack") > 0);
    keys(t, "c");
    CHECK(screen_find(t, "2 sampled stacks") == 1);
    keys(t, "s"); /* sort by share, then by waiting: the wait row first */
    keys(t, "s");
    CHECK(screen_find(t, "sorted by waiting") == 1);
    y = screen_find(t, "threading.py:327 in Condition.wait");
    CHECK(y > 0 && y < screen_find(t, "train.py:7 in augment"));
    tp_tui_close(t);
    tp_model_close(m);
}

/* A step marked on the Timeline (find, w, ]) of a rank recorded with --sample: the window's
 * statistics add the CPU time by line of the samples inside it, and each step shows its own
 * (step 1 burned in augment, step 2 in train, called from two lines of main). */
static void test_window_samples(void) {
    tp_model *m = tp_model_new();
    tp_rank *r = tp_model_add_rank(m, "sampled.tprof");
    r->rank = 0, r->native = 1;
    push(m, r, "step", TP_CAT_USER_ANNOTATION, 1000000, 400000000);
    push(m, r, "step", TP_CAT_USER_ANNOTATION, 500000000, 200000000);
    tp_rank_add_stack_pycode(m, r, 1, "/job/train.py", "augment", 5);
    tp_rank_add_stack_pycode(m, r, 2, "/job/train.py", "main", 20);
    tp_rank_add_stack_pycode(m, r, 3, "/job/train.py", "train", 40);
    py_stack(r, 1, 1, 7, 2, 31);   /* augment:7 < main:31 */
    py_stack(r, 2, 3, 44, 2, 33);  /* train:44 < main:33 */
    py_stack(r, 3, 3, 44, 2, 35);  /* train:44 < main:35 */
    for (int i = 0; i < 69; i++) { /* every 10 ms from 10 ms: 40 in step 1, 20 in step 2 */
        int64_t ts = 10000000 * (int64_t)(i + 1);
        uint32_t st = ts < 500000000 ? 1 : ts < 600000000 ? 2 : 3;
        tp_samples_push(&r->samples, ts, 1, 7, st, 1, 10000000, 10000000);
    }
    tp_model_finish(m);
    tp_tui *t = open_tui(m, "timeline", 120, 50);
    CHECK(t != NULL);
    keys(t, "/step\nw["); /* find goes to the next "step" from the first event: [ the first */
    CHECK(screen_find(t, "Window +0 ns .. +400.00 ms (400.00 ms): step") > 0);
    int y = screen_find(t, "CPU time by line, sampled in the window: 40 samples of 1 threads, "
                           "400.00 ms on a CPU, 0 ns waiting");
    CHECK(y > 0);
    y = screen_find(t, "train.py:7 in augment < train.py:31 in main");
    CHECK(y > 0 && strstr(screen_row(t, y), "400.00 ms") && strstr(screen_row(t, y), "100.00 %") &&
          strstr(screen_row(t, y), " 40"));
    CHECK(screen_find(t, "in train <") < 0);
    keys(t, "]"); /* the second step: train, from two lines of main */
    CHECK(screen_find(t, "(200.00 ms): step") > 0);
    CHECK(screen_find(t, "sampled in the window: 20 samples") > 0);
    y = screen_find(t, "train.py:44 in train < train.py:33 in main");
    CHECK(y > 0 && strstr(screen_row(t, y), "100.00 ms") && strstr(screen_row(t, y), "50.00 %"));
    CHECK(screen_find(t, "train.py:44 in train < train.py:35 in main") > y);
    CHECK(screen_find(t, "in augment") < 0);
    tp_tui_close(t);
    tp_model_close(m);
}

/* Two ranks: --rank picks one, r cycles, and each rank shows its own numbers. */
static void test_ranks(void) {
    tp_model *m = tp_model_new();
    for (int k = 0; k < 2; k++) {
        tp_rank *r = tp_model_add_rank(m, k ? "rank1.json" : "rank0.json");
        r->rank = k;
        tp_event_row e;
        tp_event_row_init(&e);
        e.ts = 1000, e.dur = 500 * (k + 1), e.cat = TP_CAT_KERNEL, e.stream = 7, e.device = 0;
        e.name = tp_model_intern(m, k ? "kernel_of_rank1" : "kernel_of_rank0", 15);
        tp_events_push(&r->ev, &e);
    }
    tp_model_finish(m);
    tp_tui_opts o;
    tp_tui_opts_init(&o);
    o.rank = 1, o.view = "kernels";
    char err[128];
    tp_tui *t = NULL;
    CHECK_OK(tp_tui_open(&t, m, &o, err, sizeof err));
    CHECK(strstr(screen_row(t, 0), "rank 1 (2 of 2)") != NULL);
    CHECK(screen_find(t, "> kernel_of_rank1") == 3);
    keys(t, "r");
    CHECK(strstr(screen_row(t, 0), "rank 0 (1 of 2)") != NULL);
    CHECK(screen_find(t, "> kernel_of_rank0") == 3);
    CHECK(screen_find(t, "r Rank") > 0);
    keys(t, "1");
    CHECK(screen_find(t, "Rank 0  rank0.json") > 0);
    tp_tui_close(t);
    tp_model_close(m);
}

/* The Ranks view: the job's rows as tp_an_ranks_run makes them for the report, the shown
 * rank selected, Enter opens a rank's Summary, R comes back with the comparison kept; a
 * single rank says there is nothing to compare. */
static void test_ranks_view(void) {
    tp_model *m = tp_model_new();
    for (int k = 0; k < 3; k++) {
        char file[32];
        snprintf(file, sizeof file, "rank%d.json", k);
        tp_rank *r = tp_model_add_rank(m, file);
        r->rank = k;
        tp_event_row e;
        tp_event_row_init(&e);
        e.ts = 1000, e.dur = 500 * (k + 1), e.cat = TP_CAT_KERNEL, e.stream = 7, e.device = 0;
        e.name = tp_model_intern(m, "k", 1);
        tp_events_push(&r->ev, &e);
    }
    tp_model_finish(m);
    tp_an_ranks x;
    tp_an_ranks_run(m, NULL, NULL, NULL, &x);
    CHECK_EQ_I(x.n, 3);
    tp_tui_opts o;
    tp_tui_opts_init(&o);
    o.rank = 1, o.view = "ranks";
    char err[128], want[64];
    tp_tui *t = NULL;
    CHECK_OK(tp_tui_open(&t, m, &o, err, sizeof err));
    CHECK(strstr(screen_row(t, 0), "[R Ranks]") != NULL);
    CHECK(screen_find(t, "3 ranks, sorted by") == 1);
    CHECK(tp_tui_computed(t) & TP_TUI_RANKS);
    for (size_t i = 0; i < x.n; i++) {
        char dur[32];
        snprintf(want, sizeof want, "%c %6d ", i == 1 ? '>' : ' ', x.r[i].rank);
        int y = screen_find(t, want);
        CHECK(y == 3 + (int)i);
        tp_units_dur(dur, sizeof dur, (double)x.r[i].compute_ns);
        CHECK(y > 0 && strstr(screen_row(t, y), dur) != NULL);
    }
    CHECK(screen_find(t, "Cross-rank findings") > 6);
    CHECK(screen_find(t, tp_an_ranks_quiet(&x)) > 6);
    tp_tui_key(t, TP_TUI_KEY_DOWN);
    keys(t, "\n"); /* rank 2's Summary */
    CHECK_EQ_I(tp_tui_current_view(t), 0);
    CHECK(strstr(screen_row(t, 0), "rank 2 (3 of 3)") != NULL);
    keys(t, "R");
    CHECK_EQ_I(tp_tui_current_view(t), 9);
    CHECK(screen_find(t, ">      2") == 5);
    keys(t, "r"); /* the next rank: the comparison stays, the selection follows */
    CHECK(strstr(screen_row(t, 0), "rank 0 (1 of 3)") != NULL);
    CHECK(screen_find(t, ">      0") == 3);
    tp_tui_close(t);
    tp_an_ranks_free(&x);
    tp_model_close(m);
    t = open_tui(sample, "R", 120, 40);
    CHECK(screen_find(t, "one rank in this trace: nothing to compare") == 1);
    CHECK(screen_find(t, "trainprof tui DIR") > 1);
    tp_tui_close(t);
}

/* The Ranks view's findings when they do not fit: the last row says so, ] scrolls to the
 * next finding (the header says from which), [ back; two samples loaded as two ranks. */
static void test_ranks_findings_scroll(void) {
    const char *src = getenv("TP_SOURCE_DIR");
    char a[4096], b[4096];
    snprintf(a, sizeof a, "%s/traces/samples/cpu-trainer-input-bound.tprof", src ? src : ".");
    snprintf(b, sizeof b, "%s/traces/samples/cpu-trainer-pageable-copies.tprof", src ? src : ".");
    const char *paths[] = {a, b};
    tp_model *m = NULL;
    tp_load_result res;
    CHECK_OK(tp_load_paths(paths, 2, &m, &res));
    tp_an_ranks x;
    tp_an_ranks_run(m, NULL, NULL, NULL, &x);
    CHECK(x.n_findings >= 2);
    char f0[48], f1[48], want[64]; /* the titles' starts: they wrap */
    snprintf(f0, sizeof f0, "%.40s", x.f[0].title);
    snprintf(f1, sizeof f1, "%.40s", x.f[1].title);
    tp_tui *t = open_tui(m, "ranks", 100, 20);
    CHECK(screen_find(t, "... more findings below") == 18);
    CHECK(screen_find(t, f0) > 0);
    keys(t, "]");
    snprintf(want, sizeof want, "Cross-rank findings (from 2 of %zu", x.n_findings);
    CHECK(screen_find(t, want) > 0);
    CHECK(screen_find(t, f0) < 0 && screen_find(t, f1) > 0);
    keys(t, "[[");
    CHECK(screen_find(t, f0) > 0);
    tp_tui_close(t);
    t = open_tui(m, "ranks", 160, 60); /* room for all: no note */
    CHECK(screen_find(t, "... more findings below") < 0);
    tp_tui_close(t);
    tp_an_ranks_free(&x);
    tp_model_close(m);
}

static void test_open_errors(void) {
    tp_tui_opts o;
    tp_tui_opts_init(&o);
    char err[256];
    tp_tui *t = NULL;
    o.rank = 5;
    CHECK_EQ_I(tp_tui_open(&t, sample, &o, err, sizeof err), TP_ERR_NOT_FOUND);
    CHECK(t == NULL && strstr(err, "no rank 5"));
    o.rank = -1, o.view = "flamegraph";
    CHECK_EQ_I(tp_tui_open(&t, sample, &o, err, sizeof err), TP_ERR_ARG);
    tp_model *empty = tp_model_new();
    tp_model_finish(empty);
    CHECK_EQ_I(tp_tui_open(&t, empty, NULL, err, sizeof err), TP_ERR_EMPTY);
    tp_model_close(empty);
    tp_tui_close(NULL);
}

/* The whole frame as text. */
static char *frame_text(tp_tui *t) {
    const tp_tui_grid *g = tp_tui_render(t);
    size_t cap = (size_t)g->h * 16384, n = 0;
    char *out = malloc(cap), row[16384];
    for (int y = 0; y < g->h; y++) {
        tp_tui_grid_row(g, y, row, sizeof row, 1);
        n += (size_t)snprintf(out + n, cap - n, "%s\n", row);
    }
    return out;
}

/* Each view computes its data on its first frame, no sooner (the Timeline's first frame runs
 * no analysis at all, not even the view they share; the Diagnosis only when shown), and a view's
 * frame is the same whether it is the first view or shown after all the others (nothing depends on
 * the order). */
static void test_lazy_views(void) {
    tp_tui *t = open_tui(sample, "timeline", 120, 40);
    tp_tui_render(t);
    CHECK_EQ_U(tp_tui_computed(t), TP_TUI_LANES);
    keys(t, "1"); /* Summary */
    tp_tui_render(t);
    unsigned c = tp_tui_computed(t);
    CHECK(c & TP_RA_KERNELS && c & TP_RA_TEMPORAL && c & TP_TUI_VIEW && !(c & TP_RA_DIAGNOSIS));
    CHECK(!(c & TP_RA_MEMUSE) && !(c & TP_RA_CPUOPS));
    keys(t, "6");
    tp_tui_render(t);
    CHECK(tp_tui_computed(t) & TP_RA_DIAGNOSIS);
    tp_tui_close(t);
    for (int v = 0; v < TP_TUI_N_VIEWS; v++) {
        tp_tui *first = open_tui(sample, tp_tui_view_name(v), 120, 40);
        char *a = frame_text(first);
        tp_tui *later = open_tui(sample, tp_tui_view_name((v + 1) % TP_TUI_N_VIEWS), 120, 40);
        for (int k = 1; k < TP_TUI_N_VIEWS; k++) {
            tp_tui_key(later, tp_tui_view_key((v + 1 + k) % TP_TUI_N_VIEWS));
            tp_tui_render(later);
        }
        CHECK_EQ_I(tp_tui_current_view(later), v);
        char *b = frame_text(later);
        if (strcmp(a, b))
            printf("view %s differs:\n%s\n---\n%s\n", tp_tui_view_name(v), a, b);
        CHECK(!strcmp(a, b));
        free(a), free(b);
        tp_tui_close(first), tp_tui_close(later);
    }
}

/* The background thread (tp_tui_opts.background): every view's frame, once the thread is done,
 * is the frame drawn without it; the thread computes every part; switching ranks while it
 * works stops and restarts it (the sanitizer builds check the handover). A frame drawn while
 * it computes either says so or is the finished one (which of the two is up to the clock). */
static void test_background(void) {
    tp_tui_opts o;
    tp_tui_opts_init(&o);
    o.width = 120, o.height = 40, o.background = 1;
    char err[128];
    for (int v = 0; v < TP_TUI_N_VIEWS; v++) {
        tp_tui *sync = open_tui(sample, tp_tui_view_name(v), 120, 40), *bg = NULL;
        o.view = tp_tui_view_name(v);
        CHECK_OK(tp_tui_open(&bg, sample, &o, err, sizeof err));
        char *early = frame_text(bg);
        char *a = frame_text(sync);
        CHECK(strstr(early, "computing the ") || !strcmp(early, a));
        tp_tui_wait_all(bg);
        CHECK(!tp_tui_computing(bg));
        char *b = frame_text(bg);
        CHECK(!strcmp(a, b));
        unsigned all = tp_tui_computed(bg);
        CHECK(all & TP_TUI_LANES && all & TP_RA_DIAGNOSIS && all & TP_RA_CPUOPS &&
              all & TP_RA_MEMUSE);
        free(early), free(a), free(b);
        tp_tui_close(sync), tp_tui_close(bg);
    }
    /* Keys right away, before the thread is done: view switches and a rank switch. */
    tp_model *m = tp_model_new();
    for (int k = 0; k < 2; k++) {
        tp_rank *r = tp_model_add_rank(m, k ? "rank1.json" : "rank0.json");
        r->rank = k;
        tp_event_row e;
        tp_event_row_init(&e);
        e.ts = 1000, e.dur = 500, e.cat = TP_CAT_KERNEL, e.stream = 7, e.device = 0;
        e.name = tp_model_intern(m, "k", 1);
        tp_events_push(&r->ev, &e);
    }
    tp_model_finish(m);
    o.view = "diagnosis";
    tp_tui *t = NULL;
    CHECK_OK(tp_tui_open(&t, m, &o, err, sizeof err));
    keys(t, "2r3r6");
    tp_tui_wait_all(t);
    CHECK_EQ_I(tp_tui_current_view(t), 5);
    CHECK(strstr(screen_row(t, 0), "rank 0 (1 of 2)") != NULL);
    CHECK(tp_tui_computed(t) & TP_TUI_RANKS); /* the job's comparison, after the rank switches */
    keys(t, "R");
    CHECK(screen_find(t, "2 ranks, sorted by") == 1);
    tp_tui_close(t);
    tp_model_close(m);
}

int main(void) {
    const char *src = getenv("TP_SOURCE_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/traces/samples/cpu-trainer-input-bound.tprof", src ? src : ".");
    const char *paths[] = {path};
    tp_load_result res;
    if (tp_load_paths(paths, 1, &sample, &res) != TP_OK) {
        fprintf(stderr, "cannot load %s: %s\n", path, res.error);
        return 1;
    }
    TP_RUN(test_lazy_views);
    TP_RUN(test_background);
    TP_RUN(test_summary_numbers);
    TP_RUN(test_kernels_sort_search);
    TP_RUN(test_timeline_zoom_select);
    TP_RUN(test_timeline_nesting);
    TP_RUN(test_jump_and_flow);
    TP_RUN(test_resize_small);
    TP_RUN(test_no_gpu_utf8);
    TP_RUN(test_thread_name_lane);
    TP_RUN(test_stacks_samples);
    TP_RUN(test_window_samples);
    TP_RUN(test_ranks);
    TP_RUN(test_ranks_view);
    TP_RUN(test_ranks_findings_scroll);
    TP_RUN(test_open_errors);
    tp_model_close(sample);
    return tp_test_summary();
}
