/* Unit tests of tp_tui_layout: the cell <-> time mapping, zoom and clamping, the per-cell
 * busy fraction, glyph levels, UTF-8 width and truncation, and the screen splits. Exact
 * values, computed by hand in the comments. */
#include "tp_test.h"
#include "tp_tui_grid.h"
#include "tp_tui_data.h"
#include "tp_tui_layout.h"
#include "tp_tui_rows.h"
#include "tp_units.h"

static void test_cell_mapping(void) {
    /* 1000 ns over 10 cells: 100 ns each. */
    tp_tui_window w = tp_tui_window_make(5000, 1000, 10);
    CHECK_EQ_I(tp_tui_cell_start(&w, 0), 5000);
    CHECK_EQ_I(tp_tui_cell_start(&w, 3), 5300);
    CHECK_EQ_I(tp_tui_cell_start(&w, 10), 6000);
    CHECK_EQ_I(tp_tui_time_cell(&w, 5000), 0);
    CHECK_EQ_I(tp_tui_time_cell(&w, 5099), 0);
    CHECK_EQ_I(tp_tui_time_cell(&w, 5100), 1);
    CHECK_EQ_I(tp_tui_time_cell(&w, 5999), 9);
    CHECK_EQ_I(tp_tui_time_cell(&w, 6000), 10); /* past the end */
    CHECK_EQ_I(tp_tui_time_cell(&w, 4999), -1);
    /* 10 ns over 3 cells: boundaries floor(10*c/3) = 0, 3, 6, 10: uneven but gapless. */
    tp_tui_window u = tp_tui_window_make(0, 10, 3);
    CHECK_EQ_I(tp_tui_cell_start(&u, 1), 3);
    CHECK_EQ_I(tp_tui_cell_start(&u, 2), 6);
    CHECK_EQ_I(tp_tui_cell_start(&u, 3), 10);
    CHECK_EQ_I(tp_tui_time_cell(&u, 5), 1);
    CHECK_EQ_I(tp_tui_time_cell(&u, 6), 2);
    /* A span below the width is raised to 1 ns per cell. */
    tp_tui_window s = tp_tui_window_make(0, 3, 8);
    CHECK_EQ_I(s.span, 8);
    /* Huge spans do not overflow: 2^62 ns over 7 cells. */
    tp_tui_window h = tp_tui_window_make(0, (int64_t)1 << 62, 7);
    CHECK_EQ_I(tp_tui_cell_start(&h, 7), (int64_t)1 << 62);
    CHECK_EQ_I(tp_tui_time_cell(&h, ((int64_t)1 << 62) - 1), 6);
}

static void test_zoom_clamp(void) {
    tp_tui_window w = tp_tui_window_make(0, 1000, 10);
    /* Zoom in at cell 4 (t = 400): span 500, t0 = 400 - 500*4/10 = 200. */
    tp_tui_window z = tp_tui_zoom(&w, 4, 1, 1000);
    CHECK_EQ_I(z.span, 500);
    CHECK_EQ_I(z.t0, 200);
    CHECK_EQ_I(tp_tui_cell_start(&z, 4), 400);
    /* Out again: span 1000, t0 = 400 - 400 = 0. */
    tp_tui_window o = tp_tui_zoom(&z, 4, 0, 1000);
    CHECK_EQ_I(o.span, 1000);
    CHECK_EQ_I(o.t0, 0);
    /* Out past max_span stays at max_span. */
    tp_tui_window m = tp_tui_zoom(&o, 0, 0, 1000);
    CHECK_EQ_I(m.span, 1000);
    /* In down to the floor of 1 ns per cell. */
    tp_tui_window f = tp_tui_window_make(0, 12, 10);
    f = tp_tui_zoom(&f, 0, 1, 1000);
    CHECK_EQ_I(f.span, 10);
    /* Clamp keeps the window inside [0, 1000]. */
    tp_tui_window c = {900, 500, 10};
    CHECK_EQ_I(tp_tui_clamp(&c, 0, 1000).t0, 500);
    c.t0 = -50;
    CHECK_EQ_I(tp_tui_clamp(&c, 0, 1000).t0, 0);
    c.span = 2000, c.t0 = 300; /* wider than the range: starts at lo */
    CHECK_EQ_I(tp_tui_clamp(&c, 0, 1000).t0, 0);
}

static void test_busy_cells(void) {
    /* 10 cells of 100 ns over [0, 1000). */
    tp_tui_window w = tp_tui_window_make(0, 1000, 10);
    /* [50, 250), nested [100, 200) (counts once), [700, 710), zero-length at 905,
     * and [-100, 20) starting before the window. Sorted by ts. */
    int64_t ts[] = {-100, 50, 100, 700, 905};
    int64_t dur[] = {120, 200, 100, 10, 0};
    double f[10];
    uint32_t t[10];
    tp_tui_busy_cells(&w, ts, dur, NULL, 5, f, t);
    CHECK_NEAR(f[0], 0.70, 1e-12); /* [0,20) + [50,100) = 70 of 100 */
    CHECK_NEAR(f[1], 1.00, 1e-12);
    CHECK_NEAR(f[2], 0.50, 1e-12); /* [200, 250) */
    CHECK_NEAR(f[3], 0.00, 1e-12);
    CHECK_NEAR(f[7], 0.10, 1e-12);
    CHECK_NEAR(f[9], 0.00, 1e-12);
    CHECK_EQ_U(t[0], 2); /* [-100,20) and [50,250) */
    CHECK_EQ_U(t[1], 2); /* [50,250) and [100,200) */
    CHECK_EQ_U(t[2], 1);
    CHECK_EQ_U(t[3], 0);
    CHECK_EQ_U(t[9], 1);                          /* the zero-length op at 905 */
    CHECK_EQ_I(tp_tui_busy_level(f[0], t[0]), 6); /* ceil(0.7 * 8) = 6 */
    CHECK_EQ_I(tp_tui_busy_level(f[1], t[1]), 8);
    CHECK_EQ_I(tp_tui_busy_level(f[2], t[2]), 4);
    CHECK_EQ_I(tp_tui_busy_level(f[7], t[7]), 1); /* ceil(0.8) */
    CHECK_EQ_I(tp_tui_busy_level(f[9], t[9]), 1); /* touched, 0 time: still visible */
    CHECK_EQ_I(tp_tui_busy_level(f[3], t[3]), 0);
    CHECK_STR(tp_tui_busy_glyph(8, 0), "\u2588");
    CHECK_STR(tp_tui_busy_glyph(4, 1), "=");
    /* Through a row list, and with uneven cells (10 ns over 3 cells: 3, 3, 4 ns). */
    tp_tui_window u = tp_tui_window_make(0, 10, 3);
    uint32_t rows[] = {1};
    int64_t ts2[] = {0, 5}, dur2[] = {10, 4}; /* row 1: [5, 9) */
    double g[3];
    tp_tui_busy_cells(&u, ts2, dur2, rows, 1, g, NULL);
    CHECK_NEAR(g[0], 0.0, 1e-12);
    CHECK_NEAR(g[1], 1.0 / 3.0, 1e-12); /* [5,6) of [3,6) */
    CHECK_NEAR(g[2], 3.0 / 4.0, 1e-12); /* [6,9) of [6,10) */
}

static void test_utf8(void) {
    uint32_t cp;
    CHECK_EQ_I(tp_tui_utf8_next("\xc3\xa9", 2, &cp), 2); /* é */
    CHECK_EQ_U(cp, 0xE9);
    CHECK_EQ_I(tp_tui_utf8_next("\xe6\x97\xa5", 3, &cp), 3); /* 日 */
    CHECK_EQ_U(cp, 0x65E5);
    CHECK_EQ_I(tp_tui_utf8_next("\xc0\xaf", 2, &cp), 1); /* overlong */
    CHECK_EQ_U(cp, 0xFFFD);
    CHECK_EQ_I(tp_tui_utf8_next("\xe6\x97", 2, &cp), 1); /* truncated */
    CHECK_EQ_I(tp_tui_str_width("abc"), 3);
    CHECK_EQ_I(tp_tui_str_width("日本"), 4);
    CHECK_EQ_I(tp_tui_str_width("e\xcc\x81"), 1); /* e + combining acute */
    CHECK_EQ_I(tp_tui_str_width("\xc2\xb5s"), 2); /* µs */
    char out[64];
    CHECK_EQ_I(tp_tui_fit(out, sizeof out, "abcdef", 6), 6);
    CHECK_STR(out, "abcdef");
    CHECK_EQ_I(tp_tui_fit(out, sizeof out, "abcdefg", 6), 6);
    CHECK_STR(out, "abcde\u2026");
    CHECK_EQ_I(tp_tui_fit(out, sizeof out, "日本語テキスト", 7), 7); /* 3 wide + … */
    CHECK_STR(out, "日本語\u2026");
    CHECK_EQ_I(tp_tui_fit(out, sizeof out, "a\tb\xff", 10), 4); /* control, bad byte -> ? */
    CHECK_STR(out, "a?b?");
    CHECK_EQ_I(tp_tui_fit(out, sizeof out, "abc", 0), 0);
    CHECK_STR(out, "");
    char tiny[6]; /* the buffer, not the columns, is the limit: never overflows */
    tp_tui_fit(tiny, sizeof tiny, "abcdefghij", 100);
    CHECK(strlen(tiny) < sizeof tiny);
}

static void test_screen(void) {
    tp_tui_screen s = tp_tui_screen_split(120, 40);
    CHECK_EQ_I(s.ok, 1);
    CHECK_EQ_I(s.body_top, 1);
    CHECK_EQ_I(s.body_h, 38);
    CHECK_EQ_I(s.help_row, 39);
    CHECK_EQ_I(tp_tui_screen_split(39, 40).ok, 0);
    CHECK_EQ_I(tp_tui_screen_split(40, 9).ok, 0);
    CHECK_EQ_I(tp_tui_screen_split(40, 10).ok, 1);
    tp_tui_timeline_cols c = tp_tui_timeline_split(120);
    CHECK_EQ_I(c.label_w, 20);
    CHECK_EQ_I(c.plot_w, 100);
    c = tp_tui_timeline_split(48);
    CHECK_EQ_I(c.label_w, 10);
    CHECK_EQ_I(c.plot_w, 38);
    CHECK_EQ_I(tp_tui_scroll_to(0, 5, 10, 100), 0);
    CHECK_EQ_I(tp_tui_scroll_to(0, 15, 10, 100), 6);
    CHECK_EQ_I(tp_tui_scroll_to(50, 15, 10, 100), 15);
    CHECK_EQ_I(tp_tui_scroll_to(95, 99, 10, 100), 90);
    CHECK_EQ_I(tp_tui_scroll_to(3, 2, 10, 5), 0);
    int fixed[] = {8, 10, 10};
    CHECK_EQ_I(tp_tui_name_width(100, fixed, 3, 8), 69);
    CHECK_EQ_I(tp_tui_name_width(30, fixed, 3, 8), 8);
    char b[32];
    CHECK_STR(tp_units_dur(b, sizeof b, 812), "812 ns");
    CHECK_STR(tp_units_dur(b, sizeof b, 12300), "12.30 \u00b5s");
    CHECK_STR(tp_units_dur(b, sizeof b, 2.9e9), "2.90 s");
    CHECK_STR(tp_units_bytes(b, sizeof b, 1536), "1.50 KiB");
}

static void test_grid(void) {
    tp_tui_grid g;
    tp_tui_grid_init(&g, 10, 2);
    char row[256];
    /* 9 columns: a fifth wide character and "…" would need 11. */
    CHECK_EQ_I(tp_tui_grid_put(&g, 0, 0, "日本語テキスト", 10, TP_TUI_A_NORMAL), 9);
    tp_tui_grid_row(&g, 0, row, sizeof row, 1);
    CHECK_STR(row, "日本語テ\u2026");
    /* Writing over the right half of a wide character blanks its left half. */
    tp_tui_grid_put(&g, 1, 0, "x", 1, TP_TUI_A_NORMAL);
    tp_tui_grid_row(&g, 0, row, sizeof row, 1);
    CHECK_STR(row, " x本語テ\u2026");
    /* Clipped at the grid's edge, with the ellipsis. */
    tp_tui_grid_put(&g, 7, 1, "abcdef", 100, TP_TUI_A_NORMAL);
    tp_tui_grid_row(&g, 1, row, sizeof row, 0);
    CHECK_STR(row, "       ab\u2026");
    CHECK_EQ_I(tp_tui_grid_put(&g, 10, 1, "zz", 5, TP_TUI_A_NORMAL), 0);
    CHECK_EQ_I(tp_tui_grid_put(&g, 0, 2, "zz", 5, TP_TUI_A_NORMAL), 0);
    tp_tui_grid_free(&g);
}

/* Random bytes (valid and broken UTF-8, controls, wide characters) never overflow a
 * buffer, never exceed the columns asked for, and always leave valid UTF-8 behind. */
static void test_fit_random(void) {
    static const char *const pieces[] = {
        "a",        "\xc3\xa9", "\xe6\x97\xa5", "\xf0\x9f\x98\x80", "\xcc\x81", "\xff",
        "\xe6\x97", "\t",       "\x7f",         "\xed\xa0\x80",     "\xc0\xaf", " "};
    unsigned seed = 12345;
    tp_tui_grid g;
    tp_tui_grid_init(&g, 17, 1);
    for (int iter = 0; iter < 5000; iter++) {
        char in[256] = "", out[40], row[512];
        int np = (int)((seed = seed * 1103515245u + 12345u) >> 16) % 40;
        for (int k = 0; k < np; k++)
            strcat(in, pieces[((seed = seed * 1103515245u + 12345u) >> 16) % 12]);
        int cols = (int)(seed >> 20) % 20, cap = 1 + (int)(seed >> 8) % 39;
        int w = tp_tui_fit(out, (size_t)cap, in, cols);
        CHECK(strlen(out) < (size_t)cap);
        CHECK(w <= cols);
        CHECK_EQ_I(tp_tui_str_width(out), w);
        for (size_t i = 0; out[i];) { /* the output decodes without replacement characters */
            uint32_t cp;
            i += (size_t)tp_tui_utf8_next(out + i, strlen(out + i), &cp);
            CHECK(cp != 0xFFFD);
        }
        tp_tui_grid_fill(&g, 0, TP_TUI_A_NORMAL);
        tp_tui_grid_put(&g, iter % 17, 0, in, cols, TP_TUI_A_NORMAL);
        tp_tui_grid_row(&g, 0, row, sizeof row, 0);
        CHECK(tp_tui_str_width(row) == 17);
    }
    tp_tui_grid_free(&g);
}

/* Wraps s at cols into lines joined by '|'. */
static const char *wrap_all(const char *s, int cols) {
    static char out[512];
    size_t o = 0;
    while (*s && o + 2 < sizeof out) {
        const char *next;
        size_t n = tp_tui_wrap(s, cols, &next);
        if (n == 0 || next <= s) /* no progress: the loop would never end */
            return "(stuck)";
        o += (size_t)snprintf(out + o, sizeof out - o, "%s%.*s", o ? "|" : "", (int)n, s);
        s = next;
    }
    out[o < sizeof out ? o : sizeof out - 1] = 0;
    return out;
}

static void test_wrap(void) {
    CHECK_STR(wrap_all("the device waits for the input", 10), "the device|waits for|the input");
    CHECK_STR(wrap_all("exactly ten", 11), "exactly ten");
    CHECK_STR(wrap_all("a  b", 4), "a  b");                     /* inner spaces kept on a line */
    CHECK_STR(wrap_all("a   b", 2), "a|b");                     /* dropped at a break */
    CHECK_STR(wrap_all("abcdefghij xy", 4), "abcd|efgh|ij|xy"); /* a long word is cut */
    /* Widths are display columns: "µs" is two bytes but one column per character. */
    CHECK_STR(wrap_all("12 \u00b5s 34 \u00b5s", 5), "12 \u00b5s|34 \u00b5s");
    CHECK_STR(wrap_all("\u5bbd\u5bbd\u5bbd", 4), "\u5bbd\u5bbd|\u5bbd"); /* wide: 2 columns */
    const char *next;
    CHECK_EQ_U(tp_tui_wrap("", 10, &next), 0);
    CHECK(*next == 0);
}

/* Levels of a thread (by the model's nesting) and of a stream (greedy), and the lookups the
 * Timeline draws with, against brute force. */
static void push_ev(tp_model *m, tp_rank *r, int64_t ts, int64_t dur, int64_t stream) {
    tp_event_row e;
    tp_event_row_init(&e);
    e.ts = ts, e.dur = dur, e.pid = 1, e.tid = 1, e.stream = stream;
    e.cat = stream >= 0 ? TP_CAT_KERNEL : TP_CAT_USER_ANNOTATION;
    e.name = tp_model_intern(m, "x", 1);
    tp_events_push(&r->ev, &e);
}

static void test_levels(void) {
    tp_model *m = tp_model_new();
    tp_rank *r = tp_model_add_rank(m, "levels.json");
    /* thread: [0,100) > [10,40) > [20,30), [50,90); then [200,300) */
    push_ev(m, r, 0, 100, -1), push_ev(m, r, 10, 30, -1), push_ev(m, r, 20, 10, -1);
    push_ev(m, r, 50, 40, -1), push_ev(m, r, 200, 100, -1);
    /* stream: [0,50), [40,60) overlaps, [60,70) back on level 0 */
    push_ev(m, r, 0, 50, 3), push_ev(m, r, 40, 20, 3), push_ev(m, r, 60, 10, 3);
    tp_model_finish(m);
    const tp_events *ev = &r->ev;
    tp_tui_level *lv;
    int n;
    const tp_buckets *th = &r->threads;
    tp_tui_levels_build(ev, th->rows + th->off[0], th->off[1] - th->off[0], 0, &lv, &n);
    CHECK_EQ_I(n, 3);
    CHECK_EQ_I(lv[0].n, 2);
    CHECK_EQ_I(lv[1].n, 2);
    CHECK_EQ_I(lv[2].n, 1);
    CHECK_EQ_I(ev->ts[tp_tui_level_at(&lv[0], ev, 25)], 0);    /* contains 25 */
    CHECK_EQ_I(ev->ts[tp_tui_level_at(&lv[0], ev, 160)], 200); /* nearest: 200 - 160 < 160 - 100 */
    CHECK_EQ_I(ev->ts[tp_tui_level_at(&lv[0], ev, 150)], 0);   /* a tie: the earlier */
    CHECK_EQ_I(ev->ts[tp_tui_level_at(&lv[1], ev, 45)], 10);   /* nearest end 40 */
    CHECK_EQ_I(tp_tui_level_seek(&lv[1], 41), 1);
    CHECK_EQ_I(tp_tui_level_until(&lv[1], ev, 50), 1);
    CHECK_EQ_I(tp_tui_level_find(&lv[1], ev, lv[1].rows[1]), 1);
    CHECK_EQ_I(tp_tui_level_find(&lv[1], ev, lv[0].rows[0]), -1);
    size_t touched;
    CHECK_EQ_I(tp_tui_level_busy(&lv[1], ev, 0, 100, &touched), 70); /* 30 + 40 */
    CHECK_EQ_I(touched, 2);
    CHECK_EQ_I(tp_tui_level_busy(&lv[1], ev, 30, 60, &touched), 20); /* 10 + 10, clipped */
    CHECK_EQ_I(touched, 2);
    CHECK_EQ_I(tp_tui_level_busy(&lv[1], ev, 91, 199, &touched), 0);
    CHECK_EQ_I(touched, 0);
    CHECK_EQ_I(tp_tui_level_busy(&lv[0], ev, 250, 260, &touched), 10);
    tp_tui_levels_free(lv, n);
    const tp_buckets *st = &r->streams;
    tp_tui_levels_build(ev, st->rows + st->off[0], st->off[1] - st->off[0], 1, &lv, &n);
    CHECK_EQ_I(n, 2);
    CHECK_EQ_I(lv[0].n, 2);
    CHECK_EQ_I(lv[1].n, 1);
    CHECK_EQ_I(ev->ts[lv[1].rows[0]], 40);
    tp_tui_levels_free(lv, n);
    tp_tui_levels_free(NULL, 0);
    tp_model_close(m);
}

/* A sampled thread's CPU share per cell (tp_tui_data_lane_cpu) against the samples' exact
 * arithmetic; a thread with samples and no event gets a lane of its own. */
static void test_lane_cpu(void) {
    tp_model *m = tp_model_new();
    tp_rank *r = tp_model_add_rank(m, "cpu.json");
    push_ev(m, r, 0, 1000, -1); /* thread 1 of pid 1: one range */
    /* thread 1: periods [0,100) 50 ns of CPU, [100,200) 100, [200,400) 20; thread 2 (no event,
     * native): [0,1000) 0, then [1000,1100) 100 */
    tp_samples_push(&r->samples, 100, 1, 1, 0, TP_SAMPLE_F_ON_CPU, 50, 100);
    tp_samples_push(&r->samples, 200, 1, 1, 0, TP_SAMPLE_F_ON_CPU, 100, 100);
    tp_samples_push(&r->samples, 400, 1, 1, 0, 0, 20, 200);
    tp_samples_push(&r->samples, 1000, 1, 2, 0, TP_SAMPLE_F_NATIVE, 0, 1000);
    tp_samples_push(&r->samples, 1100, 1, 2, 0, TP_SAMPLE_F_NATIVE | TP_SAMPLE_F_ON_CPU, 100, 100);
    tp_model_finish(m);
    tp_tui_data d;
    tp_tui_data_open(&d, m, &m->ranks[0], NULL);
    tp_tui_data_need(&d, TP_TUI_LANES);
    CHECK_EQ_U(d.n_lanes, 2);
    const tp_tui_lane *a = NULL, *b = NULL;
    for (size_t i = 0; i < d.n_lanes; i++)
        *(d.lanes[i].key == 1 ? &a : &b) = &d.lanes[i];
    if (a && b) {
        CHECK(a->n == 1 && a->n_samp == 3 && !a->native);
        CHECK(b->n == 0 && b->n_samp == 2 && b->native);
        CHECK_EQ_I(tp_tui_data_lane_cpu(&d, a, 0, 400), 170);   /* every period whole */
        CHECK_EQ_I(tp_tui_data_lane_cpu(&d, a, 50, 150), 75);   /* halves of the first two */
        CHECK_EQ_I(tp_tui_data_lane_cpu(&d, a, 100, 200), 100); /* one whole */
        CHECK_EQ_I(tp_tui_data_lane_cpu(&d, a, 300, 500), 10);  /* half the last, then none */
        CHECK_EQ_I(tp_tui_data_lane_cpu(&d, a, 400, 900), 0);
        CHECK_EQ_I(tp_tui_data_lane_cpu(&d, b, 0, 1000), 0);
        CHECK_EQ_I(tp_tui_data_lane_cpu(&d, b, 1050, 2000), 50);
    }
    tp_tui_data_free(&d);
    tp_model_close(m);
}

int main(void) {
    TP_RUN(test_lane_cpu);
    TP_RUN(test_levels);
    TP_RUN(test_cell_mapping);
    TP_RUN(test_zoom_clamp);
    TP_RUN(test_busy_cells);
    TP_RUN(test_utf8);
    TP_RUN(test_screen);
    TP_RUN(test_grid);
    TP_RUN(test_fit_random);
    TP_RUN(test_wrap);
    return tp_test_summary();
}
