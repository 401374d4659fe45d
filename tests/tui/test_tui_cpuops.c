/* test_tui_cpuops: the CPU ops view (--view cpuops, key 9) over the committed sample trace,
 * headless: its rows are the report's CPU-operator table (tp_an_cpuops) with the same
 * numbers, `s` re-sorts, `/` narrows; an unknown trace kind gets its empty-table line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_load.h"
#include "tp_rank_analysis.h"
#include "tp_test.h"
#include "tp_tui.h"
#include "tp_units.h"

static tp_model *sample;

static const char *screen_row(tp_tui *t, int y) {
    static char buf[16384];
    const tp_tui_grid *g = tp_tui_render(t);
    tp_tui_grid_row(g, y, buf, sizeof buf, 1);
    return buf;
}

static int screen_find(tp_tui *t, const char *s) {
    const tp_tui_grid *g = tp_tui_render(t);
    for (int y = 0; y < g->h; y++)
        if (strstr(screen_row(t, y), s))
            return y;
    return -1;
}

static tp_tui *open_view(const tp_model *m, const char *view) {
    tp_tui_opts o;
    tp_tui_opts_init(&o);
    o.view = view, o.width = 160, o.height = 40;
    char err[256];
    tp_tui *t = NULL;
    if (tp_tui_open(&t, m, &o, err, sizeof err) != TP_OK)
        fprintf(stderr, "tp_tui_open: %s\n", err);
    return t;
}

static void test_rows_are_the_report_table(void) {
    tp_tui *t = open_view(sample, "cpuops");
    CHECK(t != NULL);
    CHECK_EQ_I(tp_tui_current_view(t), tp_tui_view_index("cpuops"));
    CHECK_EQ_I(tp_tui_view_index("9"), tp_tui_view_index("cpuops"));
    CHECK(screen_find(t, "[9 CPU ops]") >= 0);
    tp_rank_analysis a;
    tp_rank_analysis_run(&a, sample, &sample->ranks[0], NULL, TP_RA_CPUOPS);
    CHECK(a.ops.n > 0);
    char head[64];
    snprintf(head, sizeof head, "%zu CPU ops and ranges, sorted by self", a.ops.n);
    CHECK(screen_find(t, head) >= 0);
    /* the first row is the report's first: its name, count and self time */
    const tp_an_cpuop *top = &a.ops.op[0];
    char cnt[32], self[32];
    snprintf(cnt, sizeof cnt, " %zu ", top->count);
    tp_units_dur(self, sizeof self, (double)top->self);
    int y = screen_find(t, tp_model_str(sample, top->name));
    CHECK(y >= 0);
    CHECK(y >= 0 && strstr(screen_row(t, y), self) != NULL);
    CHECK(y >= 0 && strstr(screen_row(t, y), cnt) != NULL);
    CHECK(y >= 0 && screen_row(t, y)[0] == '>');
    /* s: sorted by the next column (self %); / narrows to one name */
    tp_tui_key(t, 's');
    CHECK(screen_find(t, "sorted by self %") >= 0);
    tp_tui_key(t, '/');
    const char *name = tp_model_str(sample, a.ops.op[a.ops.n - 1].name);
    for (const char *c = name; *c; c++)
        tp_tui_key(t, (unsigned char)*c);
    tp_tui_key(t, TP_TUI_KEY_ENTER);
    CHECK(screen_find(t, "; search \"") >= 0);
    CHECK(screen_find(t, name) >= 0);
    tp_rank_analysis_free(&a);
    tp_tui_close(t);
}

/* --sort-ops total (tp_an_opts.ops_by_total): the view opens sorted by total time. */
/* Enter on a row shows that op's longest occurrence on the Timeline, as Kernels and Ranges do. */
static void test_enter_jumps_to_timeline(void) {
    tp_tui *t = open_view(sample, "cpuops");
    CHECK(t != NULL);
    if (!t)
        return;
    int y = screen_find(t, "> ");
    CHECK(y >= 0);
    char name[128];
    const char *row = screen_row(t, y) + 2;
    snprintf(name, sizeof name, "%.*s", (int)strcspn(row, " "), row);
    CHECK(name[0] != 0);
    tp_tui_key(t, TP_TUI_KEY_ENTER);
    CHECK_EQ_I(tp_tui_current_view(t), tp_tui_view_index("timeline"));
    char want[200];
    snprintf(want, sizeof want, "Selected: %s", name);
    CHECK(screen_find(t, want) > 0);
    tp_tui_close(t);
}

static void test_sorted_by_total(void) {
    tp_tui_opts o;
    tp_tui_opts_init(&o);
    o.view = "cpuops", o.width = 160, o.height = 40, o.an.ops_by_total = 1;
    char err[256];
    tp_tui *t = NULL;
    CHECK_OK(tp_tui_open(&t, sample, &o, err, sizeof err));
    CHECK(screen_find(t, "sorted by total") >= 0);
    tp_tui_close(t);
}

static void test_empty(void) {
    tp_model *m = tp_model_new();
    tp_rank *r = tp_model_add_rank(m, "k.json");
    tp_event_row e;
    tp_event_row_init(&e);
    e.ts = 1000, e.dur = 500, e.cat = TP_CAT_KERNEL, e.stream = 7, e.device = 0;
    e.name = tp_model_intern(m, "gemm", 4);
    tp_events_push(&r->ev, &e);
    tp_model_finish(m);
    tp_tui *t = open_view(m, "cpuops");
    CHECK(t != NULL);
    CHECK(screen_find(t, "no framework ops or annotation ranges") >= 0);
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
    TP_RUN(test_rows_are_the_report_table);
    TP_RUN(test_enter_jumps_to_timeline);
    TP_RUN(test_sorted_by_total);
    TP_RUN(test_empty);
    tp_model_close(sample);
    return tp_test_summary();
}
