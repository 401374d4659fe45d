/* test_thread_names: the model keeps thread names from both sources, per rank.
 *
 * Native: nvtx_app names its threads ("main-thread", "worker-N") with nvtxNameOsThread; run
 * under the real `trainprof record`, the loaded rank must name the threads its rows run on.
 * Kineto: "thread_name" metadata events ({"ph":"M","args":{"name":...}}) name (pid, tid);
 * a later name replaces an earlier one, other metadata is ignored.
 * Arguments: TRAINPROF NVTX_APP (tc_run.h). */
#include "../collector/tc_run.h"
#include "tp_test.h"

#include "tp_load.h"
#include "tp_model.h"

static tc_run R;

static tp_model *load(const char *path) {
    tp_model *m = NULL;
    tp_load_result res;
    if (tp_load_paths(&path, 1, &m, &res) != TP_OK)
        fprintf(stderr, "load %s: %s\n", path, res.error);
    return m;
}

static void test_native(void) {
    int rc = tc_record(&R, NULL, NULL, NULL);
    if (rc != 0)
        fprintf(stderr, "trainprof record: exit %d\n%s", rc, tc_stderr(&R));
    CHECK_EQ_I(rc, 0);
    char path[1024];
    CHECK_EQ_I(tc_trace(&R, 0, path, sizeof path), 1);
    tp_model *m = load(path);
    CHECK(m != NULL && m->n_ranks == 1);
    if (!m)
        return;
    const tp_rank *r = &m->ranks[0];
    int main_named = 0, workers = 0;
    for (size_t i = 0; i < r->threads.n; i++) {
        const char *n = tp_rank_thread_name(m, r, r->threads.key2[i], r->threads.key[i]);
        main_named += n && !strcmp(n, "main-thread");
        workers += n && !strncmp(n, "worker-", 7);
    }
    CHECK_EQ_I(main_named, 1);
    CHECK(workers >= 2);
    CHECK(tp_rank_thread_name(m, r, -1, 0x7fffffff) == NULL);
    tp_model_close(m);
    /* unlinking while reading the directory can skip entries: repeat until it is gone */
    for (int i = 0; i < 8 && access(R.dir, F_OK) == 0; i++)
        tc_cleanup(&R);
}

static void test_kineto(void) {
    char path[] = "/tmp/tp-thread-names-XXXXXX.json";
    int fd = mkstemps(path, 5);
    CHECK(fd >= 0);
    static const char json[] =
        "{\"traceEvents\":["
        "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":10,\"tid\":0,\"args\":{\"name\":\"p\"}},"
        "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":10,\"tid\":11,"
        "\"args\":{\"name\":\"first\"}},"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::add\",\"pid\":10,\"tid\":11,"
        "\"ts\":1,\"dur\":5,\"args\":{}},"
        "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":10,\"tid\":11,"
        "\"args\":{\"name\":\"python main\"}},"
        "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":20,\"tid\":11,"
        "\"args\":{\"name\":\"other process\"}},"
        "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":10,\"tid\":12,"
        "\"args\":{\"sort_index\":3}}"
        "]}";
    CHECK(write(fd, json, sizeof json - 1) == (ssize_t)(sizeof json - 1));
    close(fd);
    tp_model *m = load(path);
    unlink(path);
    CHECK(m != NULL);
    if (!m)
        return;
    const tp_rank *r = &m->ranks[0];
    CHECK_STR(tp_rank_thread_name(m, r, 10, 11), "python main");
    CHECK_STR(tp_rank_thread_name(m, r, 20, 11), "other process");
    CHECK_STR(tp_rank_thread_name(m, r, -1, 11), "python main"); /* first named */
    CHECK(tp_rank_thread_name(m, r, 10, 12) == NULL);
    CHECK_EQ_U(r->n_meta, 5);
    CHECK_EQ_U(r->ev.n, 1);
    tp_model_close(m);
}

int main(int argc, char **argv) {
    tc_init(&R, argc, argv);
    TP_RUN(test_native);
    TP_RUN(test_kineto);
    return tp_test_summary();
}
