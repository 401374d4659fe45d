/* The TUI's Memory view, headless, over a real recording of the trainer's fragmentation-oom
 * scenario (the real collector, `trainprof record`): it opens at the peak, whose allocated
 * bytes are the trainer's own peak (--json-summary); 'o' moves the cursor to the failed
 * allocation, where the kept activations ('forward conv1') are among the top holders and
 * segments that cannot fit the request are marked; Left leaves it, 'p' comes back to the
 * peak; the view is number 7 and `--view memory`. Arguments: TRAINPROF TRAINER (tc_run.h). */
#include "../collector/tc_run.h"
#include "tp_test.h"

#include "tp_load.h"
#include "tp_tui.h"
#include "tp_units.h"

static tc_run R;

static const char *screen_row(tp_tui *t, int y) {
    static char buf[16384];
    tp_tui_grid_row(tp_tui_render(t), y, buf, sizeof buf, 1);
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

/* A number from the trainer's --json-summary ("key": N). */
static long long summary_number(const char *key) {
    char path[PATH_MAX + 32], buf[8192], pat[64];
    snprintf(path, sizeof path, "%s/summary.json", R.dir);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = 0;
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(buf, pat);
    return p ? strtoll(p + strlen(pat), NULL, 10) : -1;
}

static void test_memory_view(void) {
    const char *args[] = {"--device",          "cpu",          "--scenario",
                          "fragmentation-oom", "--steps",      "400",
                          "--json-summary",    "summary.json", NULL};
    int rc = tc_record(&R, NULL, NULL, args);
    CHECK_EQ_I(rc, 3); /* the trainer's exit status for out of memory */
    char path[1024];
    CHECK_EQ_I(tc_trace(&R, 0, path, sizeof path), 1);
    tp_model *m = NULL;
    tp_load_result res;
    const char *paths[] = {path};
    CHECK_EQ_I(tp_load_paths(paths, 1, &m, &res), TP_OK);
    if (!m)
        return;
    CHECK_EQ_I(tp_tui_view_index("memory"), 7);
    CHECK_EQ_I(tp_tui_view_index("8"), 7);
    tp_tui_opts o;
    tp_tui_opts_init(&o);
    o.view = "memory", o.width = 120, o.height = 50;
    char err[256];
    tp_tui *t = NULL;
    CHECK_EQ_I(tp_tui_open(&t, m, &o, err, sizeof err), TP_OK);
    if (!t) {
        tp_model_close(m);
        return;
    }
    char want[64], b[32];
    snprintf(want, sizeof want, "[peak]: allocated %s,",
             tp_units_bytes(b, sizeof b, (double)summary_number("peak_allocated_bytes")));
    CHECK(screen_find(t, want) == 1);
    tp_tui_key(t, 'o');
    CHECK(screen_find(t, "[failed allocation]") == 1);
    int h = screen_find(t, "Top holders");
    CHECK(h > 1);
    int kept = screen_find(t, "range 'forward conv1' in 'step'");
    CHECK(kept > h && kept <= h + 3);
    int segs = screen_find(t, "Segments (");
    CHECK(segs > kept);
    CHECK(segs > 0 && strlen(screen_row(t, segs + 1)) > 60); /* a row of cells per segment */
    tp_tui_key(t, TP_TUI_KEY_LEFT);
    CHECK(screen_find(t, "[failed allocation]") < 0);
    tp_tui_key(t, 'p');
    CHECK(screen_find(t, want) == 1);
    tp_tui_key(t, '1'); /* another view, then back by number */
    tp_tui_key(t, '8');
    CHECK_EQ_I(tp_tui_current_view(t), 7);
    tp_tui_close(t);
    tp_model_close(m);
}

int main(int argc, char **argv) {
    tc_init(&R, argc, argv);
    TP_RUN(test_memory_view);
    return tp_test_summary();
}
