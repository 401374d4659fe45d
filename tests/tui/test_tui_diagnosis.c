/* The TUI's Diagnosis view, headless, over the committed trainer samples: it lists the
 * findings tp_rank_analysis computes (as the report does), and Enter / t take the user to
 * the finding's evidence: the range in Ranges, the op under the Timeline's cursor. The
 * expected rows are read from the analysis' own result, so a jump to any other row fails. */
#include <stdarg.h>

#include "tp_load.h"
#include "tp_rank_analysis.h"
#include "tp_test.h"
#include "tp_tui.h"
#include "tp_units.h"

static tp_model *load_sample(const char *name) {
    const char *src = getenv("TP_SOURCE_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/traces/samples/%s", src ? src : ".", name);
    const char *paths[] = {path};
    tp_load_result res;
    tp_model *m = NULL;
    if (tp_load_paths(paths, 1, &m, &res) != TP_OK)
        fprintf(stderr, "cannot load %s: %s\n", path, res.error);
    return m;
}

static const char *screen_row(tp_tui *t, int y) {
    static char buf[16384];
    tp_tui_grid_row(tp_tui_render(t), y, buf, sizeof buf, 1);
    return buf;
}

/* First frame row that starts with (at = 1) or contains (at = 0) s, or -1. */
static int screen_find(tp_tui *t, const char *s, int at) {
    const tp_tui_grid *g = tp_tui_render(t);
    for (int y = 0; y < g->h; y++) {
        const char *r = screen_row(t, y), *hit = strstr(r, s);
        if (hit && (!at || hit == r))
            return y;
    }
    return -1;
}

static tp_tui *open_tui(const tp_model *m, const char *view, int h) {
    tp_tui_opts o;
    tp_tui_opts_init(&o);
    o.view = view, o.width = 120, o.height = h;
    o.an.no_symbols = 1; /* the stacks' text does not depend on the files on this machine */
    char err[256];
    tp_tui *t = NULL;
    if (tp_tui_open(&t, m, &o, err, sizeof err) != TP_OK)
        fprintf(stderr, "tp_tui_open: %s\n", err);
    return t;
}

/* The diagnosis the TUI must show: the report's options (native, here without symbols). */
static void analyze(const tp_model *m, tp_rank_analysis *a) {
    tp_an_opts o;
    tp_an_opts_init(&o);
    o.no_symbols = 1;
    tp_rank_analysis_run(a, m, &m->ranks[0], &o, TP_RA_DIAGNOSIS);
}

static const char *row_name(const tp_model *m, long row) {
    return tp_model_str(m, m->ranks[0].ev.name[row]);
}

/* Every finding's heading, in the analysis' order, with the first selected. */
static void test_lists_findings(void) {
    tp_model *m = load_sample("cpu-trainer-pageable-copies.tprof");
    CHECK(m != NULL);
    tp_rank_analysis a;
    analyze(m, &a);
    CHECK(a.dg.n >= 1);
    tp_tui *t = open_tui(m, "diagnosis", 200);
    CHECK(t != NULL && tp_tui_current_view(t) == 5);
    CHECK(strstr(screen_row(t, 0), "[6 Diagnosis]") != NULL);
    char want[256];
    snprintf(want, sizeof want, "Diagnosis (device busy %.2f %% of the training steps)",
             100 * a.dg.utilization);
    CHECK(screen_find(t, want, 1) == 1);
    int last = 0;
    for (size_t i = 0; i < a.dg.n; i++) {
        const tp_finding *f = &a.dg.f[i];
        snprintf(want, sizeof want, "%s%zu. [%-6s %3.0f%%] %s", i ? "  " : "> ", i + 1,
                 tp_diag_level(f->severity), 100 * f->severity, f->title);
        int y = screen_find(t, want, 1);
        CHECK(y > last);
        last = y;
    }
    tp_tui_close(t);
    tp_rank_analysis_free(&a);
    tp_model_close(m);
}

/* pageable-h2d: Enter shows its range in Ranges; t shows its slowest copy call on the
 * Timeline, under the cursor, in that range. */
static void test_jumps_to_range_and_op(void) {
    tp_model *m = load_sample("cpu-trainer-pageable-copies.tprof");
    CHECK(m != NULL);
    tp_rank_analysis a;
    analyze(m, &a);
    const tp_finding *f = tp_diagnosis_find(&a.dg, "pageable-h2d");
    CHECK(f != NULL && f == &a.dg.f[0] && f->range_row >= 0 && f->op_row >= 0);
    const tp_events *ev = &m->ranks[0].ev;
    /* The op is the longest call of its name: the one the evidence is about. */
    for (size_t i = 0; i < ev->n; i++)
        if (ev->name[i] == ev->name[f->op_row])
            CHECK(tp_ev_dur(ev, i) <= tp_ev_dur(ev, f->op_row));
    tp_tui *t = open_tui(m, "diagnosis", 40);
    char want[256];
    snprintf(want, sizeof want, "Enter range '%s' in Ranges, t '%s' on the Timeline",
             row_name(m, f->range_row), row_name(m, f->op_row));
    CHECK(screen_find(t, want, 0) > 0);
    tp_tui_key(t, TP_TUI_KEY_ENTER);
    CHECK_EQ_I(tp_tui_current_view(t), 3);
    snprintf(want, sizeof want, "> %s ", row_name(m, f->range_row));
    CHECK(screen_find(t, want, 1) >= 3);
    tp_tui_key(t, '6');
    tp_tui_key(t, 't');
    CHECK_EQ_I(tp_tui_current_view(t), 1);
    snprintf(want, sizeof want, "Selected: %s", row_name(m, f->op_row));
    int y = screen_find(t, want, 1);
    CHECK(y > 0);
    char start[40], dur[40];
    tp_units_dur(start, sizeof start, (double)(ev->ts[f->op_row] - ev->ts[0]));
    tp_units_dur(dur, sizeof dur, (double)tp_ev_dur(ev, f->op_row));
    snprintf(want, sizeof want, "  start +%s  duration %s  thread %lld", start, dur,
             (long long)tp_ev_tid(ev, f->op_row));
    CHECK(strstr(screen_row(t, y + 1), want) == screen_row(t, y + 1));
    snprintf(want, sizeof want, "  in range: %s", row_name(m, f->range_row));
    CHECK_STR(screen_row(t, y + 2), want);
    tp_tui_close(t);
    tp_rank_analysis_free(&a);
    tp_model_close(m);
}

/* input-bound has a range and no op: Enter shows it in Ranges, t on the Timeline. */
static void test_input_bound_range(void) {
    tp_model *m = load_sample("cpu-trainer-input-bound.tprof");
    CHECK(m != NULL);
    tp_rank_analysis a;
    analyze(m, &a);
    const tp_finding *f = tp_diagnosis_find(&a.dg, "input-bound");
    CHECK(f != NULL && f->range_row >= 0 && f->op_row == -1);
    tp_tui *t = open_tui(m, "6", 40);
    tp_tui_key(t, '\n');
    CHECK_EQ_I(tp_tui_current_view(t), 3);
    char want[256];
    snprintf(want, sizeof want, "> %s ", row_name(m, f->range_row));
    CHECK(screen_find(t, want, 1) >= 3);
    tp_tui_key(t, TP_TUI_KEY_TAB); /* Tab from Ranges: Copies, then Diagnosis */
    tp_tui_key(t, TP_TUI_KEY_TAB);
    CHECK_EQ_I(tp_tui_current_view(t), 5);
    tp_tui_key(t, 't');
    CHECK_EQ_I(tp_tui_current_view(t), 1);
    snprintf(want, sizeof want, "Selected: %s", row_name(m, f->range_row));
    CHECK(screen_find(t, want, 1) > 0);
    tp_tui_close(t);
    tp_rank_analysis_free(&a);
    tp_model_close(m);
}

/* A rank without device activity is judged by the host rules only, as the report says; with
 * no step named none of them could judge, and the view says how to name steps; Enter stays on
 * the view. */
static void test_nothing_to_judge(void) {
    tp_model *m = tp_model_new();
    tp_rank *r = tp_model_add_rank(m, "cpu.json");
    tp_event_row e;
    tp_event_row_init(&e);
    e.ts = 1000, e.dur = 500, e.cat = TP_CAT_CPU_OP, e.pid = 1, e.tid = 1;
    e.name = tp_model_intern(m, "aten::add", 9);
    tp_events_push(&r->ev, &e);
    tp_model_finish(m);
    tp_tui *t = open_tui(m, "diagnosis", 20);
    CHECK(screen_find(t, "  nothing judged on the host: no training step was named", 1) > 0);
    CHECK(screen_find(t, "Diagnosis (no device activity: judged from the host's steps)", 1) > 0);
    CHECK(screen_find(t, "  not judged without device activity: input-bound", 1) > 0);
    tp_tui_key(t, TP_TUI_KEY_ENTER);
    tp_tui_key(t, TP_TUI_KEY_DOWN);
    CHECK_EQ_I(tp_tui_current_view(t), 5);
    tp_tui_close(t);
    tp_model_close(m);
}

/* A recorded rank with device activity and no step is judged over its GPU span: the view says
 * so under its heading, wrapped, and how to name steps (the report's note: one text); a
 * Kineto trace (no `record` to rerun) does not get it. */
static void test_steps_note(void) {
    for (int native = 1; native >= 0; native--) {
        tp_model *m = tp_model_new();
        tp_rank *r = tp_model_add_rank(m, native ? "job.tprof" : "job.json");
        r->native = native;
        tp_event_row e;
        tp_event_row_init(&e);
        e.ts = 1000, e.dur = 500, e.cat = TP_CAT_KERNEL, e.stream = 7, e.device = 0;
        e.name = tp_model_intern(m, "gemm", 4);
        tp_events_push(&r->ev, &e);
        tp_model_finish(m);
        tp_rank_analysis a;
        analyze(m, &a);
        const char *note = tp_rank_analysis_steps_note(&a);
        CHECK(native ? note && strstr(note, "`trainprof record --pytorch` marks its steps")
                     : note == NULL);
        tp_tui *t = open_tui(m, "diagnosis", 20);
        CHECK((screen_find(t, "  no training step was named (a range \"step\"", 1) > 0) == native);
        CHECK((screen_find(t, "    ", 1) > 0 && screen_find(t, "DataLoader fetches", 0) > 0) ==
              native); /* wrapped, whole */
        tp_tui_close(t);
        tp_rank_analysis_free(&a);
        tp_model_close(m);
    }
}

/* A short screen scrolls to keep the selected finding in view. */
static void test_scrolls_to_selection(void) {
    tp_model *m = load_sample("cpu-trainer-pageable-copies.tprof");
    tp_rank_analysis a;
    analyze(m, &a);
    tp_tui *t = open_tui(m, "diagnosis", 12);
    for (size_t i = 1; i < a.dg.n; i++)
        tp_tui_key(t, TP_TUI_KEY_DOWN);
    char want[64];
    snprintf(want, sizeof want, "> %zu. [", a.dg.n);
    CHECK(screen_find(t, want, 1) > 0);
    tp_tui_key(t, TP_TUI_KEY_HOME);
    CHECK(screen_find(t, "> 1. [", 1) > 0);
    tp_tui_close(t);
    tp_rank_analysis_free(&a);
    tp_model_close(m);
}

int main(void) {
    TP_RUN(test_lists_findings);
    TP_RUN(test_jumps_to_range_and_op);
    TP_RUN(test_input_bound_range);
    TP_RUN(test_nothing_to_judge);
    TP_RUN(test_scrolls_to_selection);
    TP_RUN(test_steps_note);
    return tp_test_summary();
}
