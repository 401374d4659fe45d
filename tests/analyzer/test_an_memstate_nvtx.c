/* test_an_memstate_nvtx: the NVTX memory API's edge cases, recorded from a real program
 * (nvtx_mem_edges) by the real `trainprof record`, loaded and replayed (tp_an_memstate):
 * resize in place, a heap reset with live regions, an unregister of an unknown region
 * (counted, reported, never a crash), a heap unregistered with a region still live; and the
 * report says what the replay counted. Arguments: TRAINPROF NVTX_MEM_EDGES (tc_run.h). */
#include "../collector/tc_run.h"
#include "tp_test.h"

#include "tp_an_memstate.h"
#include "tp_load.h"

#define MiB (1024 * 1024)

static tc_run R;

static void at(tp_an_memstate *s, size_t ev, int64_t alloc, int64_t res, size_t blocks) {
    tp_an_mtotals t;
    tp_an_memstate_seek(s, ev);
    tp_an_memstate_totals(s, &t);
    CHECK_EQ_I(t.allocated, alloc);
    CHECK_EQ_I(t.reserved, res);
    CHECK_EQ_U(t.blocks, blocks);
}

static void test_edges(void) {
    int rc = tc_record(&R, NULL, NULL, NULL);
    if (rc != 0)
        fprintf(stderr, "trainprof record: exit %d\n%s", rc, tc_stderr(&R));
    CHECK_EQ_I(rc, 0);
    char path[1024];
    CHECK_EQ_I(tc_trace(&R, 0, path, sizeof path), 1);
    tp_model *m = NULL;
    tp_load_result res;
    const char *paths[] = {path};
    CHECK_EQ_I(tp_load_paths(paths, 1, &m, &res), TP_OK);
    if (!m)
        return;
    const tp_rank *r = &m->ranks[0];
    CHECK_EQ_U(r->mem.n, 8); /* heap, 2 regions, resize, unknown, reset, region, heap off */
    tp_an_memstate *s = tp_an_memstate_open(m, r);
    CHECK_EQ_I(tp_an_memstate_source(s), TP_AN_MSRC_NVTX);
    at(s, 1, 0, 4 * MiB, 0);
    at(s, 3, MiB + MiB / 2, 4 * MiB, 2);
    at(s, 4, 2 * MiB, 4 * MiB, 2); /* r1 resized in place */
    at(s, 5, 2 * MiB, 4 * MiB, 2); /* the unknown unregister changed nothing */
    at(s, 6, 0, 4 * MiB, 0);       /* reset: r0 and r1 went with it */
    at(s, 7, MiB / 4, 4 * MiB, 1); /* r2 */
    at(s, 8, 0, 0, 0);             /* heap unregistered with r2 live */
    const tp_an_mcounts *c = tp_an_memstate_counts(s);
    CHECK_EQ_U(c->unknown_unregister, 1);
    CHECK_EQ_U(c->reset_live, 3);
    CHECK_EQ_U(c->unknown_resize, 0);
    CHECK_EQ_U(c->unknown_heap, 0);
    /* every block was allocated inside the NVTX range "edges" */
    tp_an_memstate_seek(s, 3);
    size_t n;
    const tp_an_mblock *b = tp_an_memstate_blocks(s, &n);
    char lb[64];
    for (size_t i = 0; i < n; i++)
        CHECK_STR(tp_an_msite_label(m, tp_an_memstate_site(s, b[i].site), lb, sizeof lb),
                  "range 'edges'");
    tp_an_memstate_close(s);
    tp_model_close(m);
    /* the report says what the replay counted */
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' report '%s'", R.trainprof, path);
    FILE *p = popen(cmd, "r");
    char out[65536];
    size_t k = p ? fread(out, 1, sizeof out - 1, p) : 0;
    out[k] = 0;
    CHECK(p && pclose(p) == 0);
    CHECK(strstr(out, "replay: 1 unregister of a region that is not live") != NULL);
    CHECK(strstr(out, "replay: 3 regions released by a heap reset or unregister while live") !=
          NULL);
}

int main(int argc, char **argv) {
    tc_init(&R, argc, argv);
    TP_RUN(test_edges);
    return tp_test_summary();
}
