/* test_env: the environment facts of a rank (tp_rank.env) and what reads them: set/replace
 * semantics and merging, the Kineto importer's deviceProperties / distributedInfo / version
 * fields, the report's Environment section (text and JSON), and the diagnosis notes that the
 * environment changes (CUDA_LAUNCH_BLOCKING=1 on launch-bound, expandable_segments on
 * fragmentation-oom). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tp_an_env.h"
#include "tp_an_fixture.h"
#include "tp_diagnose.h"
#include "tp_env_keys.h"
#include "tp_load.h"
#include "tp_report.h"
#include "tp_test.h"

static const char *data_dir = ".";

static void test_set_get(void) {
    fx_model f = fx_new();
    tp_rank_set_env(f.m, f.r, -1, "cuda.runtime", "12.8", 1);
    tp_rank_set_env(f.m, f.r, -1, "cuda.runtime", "13.0", 1); /* replaces */
    tp_rank_set_env(f.m, f.r, -1, "cuda.runtime", "11.0", 0); /* kept: no replace */
    tp_rank_set_env(f.m, f.r, 0, "gpu.name", "A", 1);
    tp_rank_set_env(f.m, f.r, 3, "gpu.name", "B", 1);
    tp_rank_set_env(f.m, f.r, -1, "cudnn", "", 1); /* empty: ignored */
    CHECK_STR(tp_rank_env(f.m, f.r, -1, "cuda.runtime"), "13.0");
    CHECK_STR(tp_rank_env(f.m, f.r, 3, "gpu.name"), "B");
    CHECK(tp_rank_env(f.m, f.r, -1, "gpu.name") == NULL);
    CHECK(tp_rank_env(f.m, f.r, -1, "cudnn") == NULL);
    CHECK(tp_rank_env(f.m, f.r, -1, "never.interned") == NULL);
    CHECK_EQ_U(f.r->n_env, 3);
    int32_t g[4];
    CHECK_EQ_U(tp_an_env_gpus(f.r, g, 4), 2);
    CHECK_EQ_I(g[0], 0);
    CHECK_EQ_I(g[1], 3);
    CHECK_EQ_U(tp_an_env_gpus(f.r, g, 1), 2); /* counts past cap, keeps the lowest */
    CHECK_EQ_I(g[0], 0);
    tp_model_close(f.m);
}

/* A worker's facts join the main process's without overriding them. */
static void test_merge(void) {
    fx_model f = fx_new();
    tp_rank_set_env(f.m, f.r, -1, "python", "3.12.3", 1);
    tp_rank *w = tp_model_add_rank(f.m, "worker");
    tp_rank_set_env(f.m, w, -1, "python", "3.11.0", 1);
    tp_rank_set_env(f.m, w, -1, "nccl", "2.27.3", 1);
    tp_model_merge_rank(f.m, 0, 1);
    tp_rank *r = &f.m->ranks[0];
    CHECK_STR(tp_rank_env(f.m, r, -1, "python"), "3.12.3");
    CHECK_STR(tp_rank_env(f.m, r, -1, "nccl"), "2.27.3");
    tp_model_close(f.m);
}

static tp_model *load1(const char *path) {
    tp_model *m = NULL;
    tp_load_result res;
    const char *paths[] = {path};
    if (tp_load_paths(paths, 1, &m, &res) != TP_OK)
        fprintf(stderr, "load %s: %s\n", path, res.error);
    return m;
}

static void test_kineto_metadata(void) {
    char path[1200];
    snprintf(path, sizeof path, "%s/kineto_current.json", data_dir);
    tp_model *m = load1(path);
    CHECK(m != NULL);
    if (!m)
        return;
    const tp_rank *r = &m->ranks[0];
    CHECK_STR(tp_rank_env(m, r, 0, "gpu.name"), "NVIDIA H100 80GB HBM3");
    CHECK_STR(tp_rank_env(m, r, 0, "gpu.sms"), "132");
    CHECK_STR(tp_rank_env(m, r, 0, "gpu.cc"), "9.0");
    CHECK_STR(tp_rank_env(m, r, 0, "gpu.memory"), "84929216512");
    CHECK_STR(tp_rank_env(m, r, 0, "gpu.source"), "kineto");
    CHECK_STR(tp_rank_env(m, r, -1, "dist.backend"), "nccl");
    CHECK_STR(tp_rank_env(m, r, -1, "dist.world_size"), "8");
    char line[256];
    CHECK_STR(tp_an_env_gpu_line(m, r, 0, line, sizeof line),
              "NVIDIA H100 80GB HBM3, 132 SMs, cc 9.0, 79.1 GiB");
    tp_model_close(m);
}

/* Newer Kineto writes the CUDA versions and NCCL's at the top and in distributedInfo. */
static void test_kineto_versions(void) {
    char path[] = "/tmp/tp-test-env-XXXXXX.json";
    int fd = mkstemps(path, 5);
    static const char js[] =
        "{\"schemaVersion\":1,\"cupti_version\":130001,\"cuda_runtime_version\":13000,"
        "\"cuda_driver_version\":13000,\"distributedInfo\":{\"backend\":\"nccl\",\"rank\":0,"
        "\"world_size\":2,\"nccl_version\":\"2.27.3\"},\"traceEvents\":[{\"ph\":\"X\","
        "\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":1,\"dur\":2,"
        "\"args\":{\"device\":0,\"stream\":7,\"correlation\":1}}]}";
    CHECK(fd >= 0 && write(fd, js, sizeof js - 1) == (ssize_t)(sizeof js - 1));
    close(fd);
    tp_model *m = load1(path);
    unlink(path);
    CHECK(m != NULL);
    if (!m)
        return;
    const tp_rank *r = &m->ranks[0];
    CHECK_STR(tp_rank_env(m, r, -1, "cupti"), "13.0.1");
    CHECK_STR(tp_rank_env(m, r, -1, "cuda.runtime"), "13.0");
    CHECK_STR(tp_rank_env(m, r, -1, "cuda.driver_api"), "13.0");
    CHECK_STR(tp_rank_env(m, r, -1, "nccl"), "2.27.3");
    tp_model_close(m);
}

static void run_diag(fx_model *f, tp_diagnosis *d) {
    tp_an_opts o;
    tp_an_opts_init(&o);
    tp_an_view v;
    tp_an_view_build(&v, f->m, &f->m->ranks[0], &o);
    tp_diagnose_run(&v, d);
    tp_an_view_free(&v);
}

/* test_diagnose's launch-bound rank, with and without CUDA_LAUNCH_BLOCKING=1. */
static void launch_bound(int blocking, tp_diagnosis *d, fx_model *f) {
    *f = fx_new();
    if (blocking)
        tp_rank_set_env(f->m, f->r, -1, TP_ENV_VAR_PREFIX "CUDA_LAUNCH_BLOCKING", "1", 1);
    else
        tp_rank_set_env(f->m, f->r, -1, TP_ENV_VAR_PREFIX "CUDA_LAUNCH_BLOCKING", "0", 1);
    int corr = 1;
    for (int s = 0; s < 2; s++) {
        double t = 100.0 * s;
        fx_ev(f, "step", TP_CAT_USER_ANNOTATION, t, 100, -1, -1);
        for (int k = 0; k < 20; k++, corr++)
            fx_launch(f, "tiny", t + 5 * k, 1, t + 5 * k + 1.5, 0.5, 1, corr);
    }
    tp_model_finish(f->m);
    run_diag(f, d);
}

static void test_launch_blocking_note(void) {
    for (int blocking = 0; blocking < 2; blocking++) {
        fx_model f;
        tp_diagnosis d;
        launch_bound(blocking, &d, &f);
        const tp_finding *x = tp_diagnosis_find(&d, "launch-bound");
        CHECK(x != NULL);
        if (x) {
            CHECK_EQ_I(strstr(x->evidence, "CUDA_LAUNCH_BLOCKING=1 was set") != NULL, blocking);
            CHECK_EQ_I(strstr(x->advice, "unset CUDA_LAUNCH_BLOCKING") == x->advice, blocking);
            CHECK_EQ_I(tp_finding_metric(x, "launch_blocking") == 1, blocking);
        }
        tp_diagnose_free(&d);
        tp_model_close(f.m);
    }
}

static void test_expandable_advice(void) {
    static const char *const conf[] = {NULL, "expandable_segments:True",
                                       "max_split_size_mb:128,expandable_segments:True",
                                       "expandable_segments:True,expandable_segments:False"};
    static const int on[] = {0, 1, 1, 0};
    for (int i = 0; i < 4; i++) {
        fx_model f = fx_new();
        if (conf[i])
            tp_rank_set_env(f.m, f.r, -1, TP_ENV_VAR_PREFIX "PYTORCH_CUDA_ALLOC_CONF", conf[i], 1);
        tp_memev_row row = {0};
        row.ts = 5000, row.kind = TP_MEMEV_ALLOC_FAIL, row.bytes = 9834496;
        row.total_reserved = 148897792, row.total_allocated = 148897792 - 14025216;
        row.largest_free = 6219776;
        tp_memev_push(&f.r->mem, &row);
        tp_model_finish(f.m);
        CHECK_EQ_I(tp_an_env_expandable_segments(f.m, f.r), on[i]);
        tp_diagnosis d;
        run_diag(&f, &d);
        const tp_finding *x = tp_diagnosis_find(&d, "fragmentation-oom");
        CHECK(x != NULL);
        if (x) {
            CHECK_EQ_I(strstr(x->advice, "set PYTORCH_CUDA_ALLOC_CONF=expandable_segments") != NULL,
                       !on[i]);
            CHECK_EQ_I(strstr(x->advice, "already on") != NULL, on[i]);
        }
        tp_diagnose_free(&d);
        tp_model_close(f.m);
    }
}

/* The report's Environment section: text lines in the key table's order, variables, one line
 * per GPU; JSON under "environment". None without facts. */
static void test_report_section(void) {
    for (int json = 0; json < 2; json++) {
        for (int with = 0; with < 2; with++) {
            fx_model f = fx_new();
            fx_launch(&f, "gemm", 0, 1, 2, 98, 1, 1);
            if (with) {
                tp_rank_set_env(f.m, f.r, -1, "cuda.runtime", "13.0", 1);
                tp_rank_set_env(f.m, f.r, -1, "host", "node7", 1);
                tp_rank_set_env(f.m, f.r, -1, "env.OMP_NUM_THREADS", "4", 1);
                tp_rank_set_env(f.m, f.r, 0, "gpu.name", "NVIDIA H200", 1);
                tp_rank_set_env(f.m, f.r, 0, "gpu.pci", "0000:19:00.0", 1);
            }
            tp_model_finish(f.m);
            char *buf = NULL;
            size_t len = 0;
            FILE *out = open_memstream(&buf, &len);
            tp_report_opts o;
            tp_report_opts_init(&o);
            o.format = json ? TP_REPORT_JSON : TP_REPORT_TEXT;
            CHECK_OK(tp_report_write(out, f.m, &o));
            fclose(out);
            if (!json && with) {
                const char *e = strstr(buf, "Environment\n");
                CHECK(e != NULL);
                CHECK(e &&
                      strstr(e, "  host                     node7\n"
                                "  CUDA runtime             13.0\n"
                                "  variable                 OMP_NUM_THREADS=4\n"
                                "  GPU 0                    NVIDIA H200, PCI 0000:19:00.0\n") ==
                          e + strlen("Environment\n"));
            } else if (json && with) {
                CHECK(strstr(buf, "\"environment\": {") != NULL);
                CHECK(strstr(buf, "\"cuda.runtime\": \"13.0\"") != NULL);
                CHECK(strstr(buf, "\"device\": 0,") != NULL);
                CHECK(strstr(buf, "\"gpu.pci\": \"0000:19:00.0\"") != NULL);
            } else {
                CHECK(strstr(buf, "Environment") == NULL);
                CHECK(strstr(buf, "\"environment\"") == NULL);
            }
            free(buf);
            tp_model_close(f.m);
        }
    }
}

int main(int argc, char **argv) {
    if (argc > 1)
        data_dir = argv[1];
    TP_RUN(test_set_get);
    TP_RUN(test_merge);
    TP_RUN(test_kineto_metadata);
    TP_RUN(test_kineto_versions);
    TP_RUN(test_launch_blocking_note);
    TP_RUN(test_expandable_advice);
    TP_RUN(test_report_section);
    return tp_test_summary();
}
