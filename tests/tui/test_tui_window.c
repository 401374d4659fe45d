/* test_tui_window: the Timeline's statistics of one step equal `trainprof report` on the trace
 * cut to that step.
 *
 * usage: test_tui_window TRACE.tprof CUT.json LO HI OUT.txt
 * CUT.json is TRACE exported to Chrome JSON and cut by tests/tui/cut_trace.py to the events
 * that start in the step [LO, HI) (ns). The report's figures of CUT.json come from
 * tp_rank_analysis over the loaded cut (what `trainprof report` runs); the TUI's come from
 * tp_tui_wstats over the whole trace with that window, and from the screen after the keys a
 * user presses (find `step`, w, ] to the same step). Every kernel, range and copy row and the
 * device busy time must agree. OUT.txt gets the TUI's figures as text, which the script
 * compares with the JSON that `trainprof report` printed for CUT.json. */
#include <inttypes.h>
#include <stdlib.h>

#include "tp_load.h"
#include "tp_rank_analysis.h"
#include "tp_test.h"
#include "tp_tui.h"
#include "tp_tui_data.h"
#include "tp_tui_layout.h"
#include "tp_tui_wstats.h"
#include "tp_units.h"

static tp_model *load(const char *path) {
    tp_model *m = NULL;
    tp_load_result res;
    if (tp_load_paths(&path, 1, &m, &res) != TP_OK) {
        fprintf(stderr, "cannot load %s: %s\n", path, res.error);
        exit(1);
    }
    return m;
}

/* Rows are matched by name: the two models intern strings apart. */
static void same_kernels(const tp_model *ma, const tp_an_kernels *a, const tp_model *mb,
                         const tp_an_kernels *b) {
    CHECK_EQ_I(a->n, b->n);
    for (size_t i = 0; i < a->n && i < b->n; i++) {
        CHECK_STR(tp_model_str(ma, a->k[i].name), tp_model_str(mb, b->k[i].name));
        CHECK_EQ_I(a->k[i].count, b->k[i].count);
        CHECK_EQ_I(a->k[i].sum, b->k[i].sum);
        CHECK_EQ_I(a->k[i].min, b->k[i].min);
        CHECK_EQ_I(a->k[i].max, b->k[i].max);
    }
}

static void same_ranges(const tp_model *ma, const tp_an_nvtx *a, const tp_model *mb,
                        const tp_an_nvtx *b) {
    CHECK_EQ_I(a->n, b->n);
    for (size_t i = 0; i < a->n && i < b->n; i++) {
        CHECK_STR(tp_model_str(ma, a->r[i].name), tp_model_str(mb, b->r[i].name));
        CHECK_EQ_I(a->r[i].count, b->r[i].count);
        CHECK_EQ_I(a->r[i].total, b->r[i].total);
        CHECK_EQ_I(a->r[i].gpu_ns, b->r[i].gpu_ns);
        CHECK_EQ_I(a->r[i].n_gpu_ops, b->r[i].n_gpu_ops);
    }
    CHECK_EQ_I(a->unattributed_ops, b->unattributed_ops);
}

static void same_copies(const tp_an_memory *a, const tp_an_memory *b) {
    CHECK_EQ_I(a->n_copy, b->n_copy);
    for (size_t i = 0; i < a->n_copy && i < b->n_copy; i++) {
        CHECK_EQ_I(a->copy[i].copy_kind, b->copy[i].copy_kind);
        CHECK_EQ_I(a->copy[i].count, b->copy[i].count);
        CHECK_EQ_I(a->copy[i].bytes, b->copy[i].bytes);
        CHECK_EQ_I(a->copy[i].dur_ns, b->copy[i].dur_ns);
    }
}

static int screen_has(tp_tui *t, const char *a, const char *b) {
    static char buf[16384];
    const tp_tui_grid *g = tp_tui_render(t);
    for (int y = 0; y < g->h; y++) {
        tp_tui_grid_row(g, y, buf, sizeof buf, 1);
        const char *p = strstr(buf, a);
        if (p && (!b || strstr(p, b)))
            return 1;
    }
    return 0;
}

/* The user's way to the k-th step: find `step` (the first), w, then ] k times. */
static void check_screen(const tp_model *m, const tp_rank_analysis *cut, const tp_model *mc,
                         int64_t lo, int64_t hi) {
    tp_tui_opts o;
    tp_tui_opts_init(&o);
    o.view = "timeline", o.width = 200, o.height = 60;
    char err[128], want[256], a[32], b[32];
    tp_tui *t = NULL;
    CHECK_OK(tp_tui_open(&t, m, &o, err, sizeof err));
    const char *find = "/step\n";
    for (; *find; find++)
        tp_tui_key(t, *find == '\n' ? TP_TUI_KEY_ENTER : *find);
    tp_tui_key(t, 'w');
    const tp_events *ev = &m->ranks[0].ev;
    int64_t t0 = ev->ts[0];
    for (int k = 0; k < 10; k++) {
        snprintf(want, sizeof want, "Window +%s .. +%s",
                 tp_units_dur(a, sizeof a, (double)(lo - t0)),
                 tp_units_dur(b, sizeof b, (double)(hi - t0)));
        if (screen_has(t, want, ": step"))
            break;
        tp_tui_key(t, ']');
    }
    CHECK(screen_has(t, want, ": step"));
    snprintf(want, sizeof want, "Device busy %s", tp_units_dur(a, sizeof a, (double)cut->t.busy));
    CHECK(screen_has(t, want, NULL));
    for (size_t i = 0; i < cut->k.n && i < 12; i++) { /* the rows the pane has room for */
        snprintf(want, sizeof want, " %6zu %12s", cut->k.k[i].count,
                 tp_units_dur(a, sizeof a, (double)cut->k.k[i].sum));
        CHECK(screen_has(t, tp_model_str(mc, cut->k.k[i].name), want));
    }
    tp_tui_close(t);
}

/* The window's figures, one per line: "busy NS", "span NS", "kernel NAME\tCOUNT\tSUM",
 * "range NAME\tCOUNT\tTOTAL\tGPU_NS\tGPU_OPS", "copy KIND\tCOUNT\tBYTES\tNS". */
static void write_figures(const char *path, const tp_model *m, const tp_rank_analysis *a) {
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fprintf(f, "busy %" PRId64 "\nspan %" PRId64 "\n", a->t.busy, a->t.span);
    for (size_t i = 0; i < a->k.n; i++)
        fprintf(f, "kernel %s\t%zu\t%" PRId64 "\n", tp_model_str(m, a->k.k[i].name),
                a->k.k[i].count, a->k.k[i].sum);
    for (size_t i = 0; i < a->nv.n; i++)
        fprintf(f, "range %s\t%zu\t%" PRId64 "\t%" PRId64 "\t%zu\n",
                tp_model_str(m, a->nv.r[i].name), a->nv.r[i].count, a->nv.r[i].total,
                a->nv.r[i].gpu_ns, a->nv.r[i].n_gpu_ops);
    for (size_t i = 0; i < a->mem.n_copy; i++)
        fprintf(f, "copy %s\t%zu\t%" PRId64 "\t%" PRId64 "\n",
                tp_an_copy_kind_name(a->mem.copy[i].copy_kind), a->mem.copy[i].count,
                a->mem.copy[i].bytes, a->mem.copy[i].dur_ns);
    CHECK(fclose(f) == 0);
}

static void compare(char **argv) {
    tp_model *m = load(argv[1]), *mc = load(argv[2]);
    int64_t lo = strtoll(argv[3], NULL, 10), hi = strtoll(argv[4], NULL, 10);
    tp_rank_analysis cut; /* what `trainprof report CUT.json` prints */
    tp_rank_analysis_run(&cut, mc, &mc->ranks[0], NULL, TP_RA_ALL);
    tp_tui_data d;
    tp_tui_data_build(&d, m, &m->ranks[0], NULL);
    tp_tui_wstats w = {.step = -1};
    tp_tui_wstats_set(&w, &d, lo, hi);
    CHECK(cut.k.n > 0 && cut.nv.n > 0); /* the step has kernels and ranges to compare */
    CHECK_EQ_I(w.a.t.has_gpu, cut.t.has_gpu);
    CHECK_EQ_I(w.a.t.busy, cut.t.busy);
    CHECK_EQ_I(w.a.t.span, cut.t.span);
    CHECK_EQ_I(w.a.t.compute, cut.t.compute);
    same_kernels(m, &w.a.k, mc, &cut.k);
    same_ranges(m, &w.a.nv, mc, &cut.nv);
    same_copies(&w.a.mem, &cut.mem);
    check_screen(m, &cut, mc, lo, hi);
    write_figures(argv[5], m, &w.a);
    tp_tui_wstats_clear(&w);
    tp_tui_data_free(&d);
    tp_rank_analysis_free(&cut);
    tp_model_close(m);
    tp_model_close(mc);
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: test_tui_window TRACE.tprof CUT.json LO HI OUT.txt\n");
        return 2;
    }
    compare(argv);
    return tp_test_summary();
}
