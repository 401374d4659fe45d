/* test_an_report: the report renders text for people and valid, versioned JSON whose values
 * are the analyses' results; a rank without GPU work says so; bad options are refused. */
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_tree.h>

#include "tp_report.h"
#include "tp_an_fixture.h"
#include "tp_test.h"

static char *render(const tp_model *m, const tp_report_opts *o, tp_status *st) {
    FILE *f = tmpfile();
    *st = tp_report_write(f, m, o);
    long n = ftell(f);
    rewind(f);
    char *buf = calloc((size_t)n + 1, 1);
    size_t got = fread(buf, 1, (size_t)n, f);
    buf[got] = 0;
    fclose(f);
    return buf;
}

static fx_model small(void) {
    fx_model f = fx_new();
    fx_ev(&f, "fwd", TP_CAT_USER_ANNOTATION, 0, 300, -1, -1);
    fx_launch(&f, "gemm \"quoted\"", 0, 5, 10, 100, 7, 1);
    fx_launch(&f, "relu", 10, 5, 150, 50, 7, 2);
    tp_model_finish(f.m);
    return f;
}

static yajl_val at(yajl_val v, const char **path) {
    return yajl_tree_get(v, path, yajl_t_any);
}

static void test_json(void) {
    fx_model f = small();
    tp_report_opts o;
    tp_report_opts_init(&o);
    o.format = TP_REPORT_JSON;
    tp_status st;
    char *text = render(f.m, &o, &st);
    CHECK_EQ_I(st, TP_OK);
    char err[256];
    yajl_val doc = yajl_tree_parse(text, err, sizeof err);
    CHECK(doc != NULL);
    if (doc) {
        const char *schema[] = {"schema", NULL}, *ranks[] = {"ranks", NULL};
        CHECK_STR(YAJL_GET_STRING(at(doc, schema)), "trainprof-report/v1");
        yajl_val r = at(doc, ranks)->u.array.values[0];
        const char *span[] = {"temporal", "span_ns", NULL}, *idle[] = {"temporal", "idle_ns", NULL};
        const char *kname[] = {"kernels", NULL}, *ranges[] = {"ranges", NULL};
        CHECK_EQ_I(YAJL_GET_INTEGER(at(r, span)), FX_US(190));
        CHECK_EQ_I(YAJL_GET_INTEGER(at(r, idle)), FX_US(40));
        yajl_val k0 = at(r, kname)->u.array.values[0];
        const char *nm[] = {"name", NULL}, *gpu[] = {"gpu_ns", NULL};
        CHECK_STR(YAJL_GET_STRING(at(k0, nm)), "gemm \"quoted\"");
        yajl_val r0 = at(r, ranges)->u.array.values[0];
        CHECK_EQ_I(YAJL_GET_INTEGER(at(r0, gpu)), FX_US(150));
        yajl_tree_free(doc);
    }
    free(text);
    tp_model_close(f.m);
}

static void test_text(void) {
    fx_model f = small();
    tp_report_opts o;
    tp_report_opts_init(&o);
    tp_status st;
    char *text = render(f.m, &o, &st);
    CHECK_EQ_I(st, TP_OK);
    CHECK(strstr(text, "GPU span") != NULL);
    CHECK(strstr(text, "190.00 \u00b5s") != NULL);
    CHECK(strstr(text, "GPU utilization") != NULL);
    CHECK(strstr(text, "78.95 %") != NULL); /* 150 of 190 µs busy */
    CHECK(strstr(text, "Idle time per stream") != NULL);
    CHECK(strstr(text, "fwd") != NULL);
    free(text);
    tp_model_close(f.m);
}

static void test_no_gpu_and_errors(void) {
    fx_model f = fx_new();
    fx_ev(&f, "aten::add", TP_CAT_CPU_OP, 0, 10, -1, -1);
    tp_model_finish(f.m);
    tp_report_opts o;
    tp_report_opts_init(&o);
    tp_status st;
    char *text = render(f.m, &o, &st);
    CHECK_EQ_I(st, TP_OK);
    CHECK(strstr(text, "no GPU activity") != NULL);
    free(text);
    o.rank = 5;
    text = render(f.m, &o, &st);
    CHECK_EQ_I(st, TP_ERR_NOT_FOUND);
    free(text);
    CHECK_EQ_I(tp_report_write(NULL, f.m, &o), TP_ERR_ARG);
    tp_model_close(f.m);
}

/* Two ranks: the text starts with a per-rank table; --rank keeps one rank. */
static void test_multi_rank(void) {
    fx_model f = small();
    tp_rank *r1 = tp_model_add_rank(f.m, "rank1.json");
    r1->rank = r1->rank_hta = 1;
    f.r = r1;
    fx_launch(&f, "gemm", 0, 5, 10, 40, 7, 1);
    tp_model_finish(f.m);
    tp_report_opts o;
    tp_report_opts_init(&o);
    tp_status st;
    char *text = render(f.m, &o, &st);
    CHECK_EQ_I(st, TP_OK);
    CHECK(strstr(text, "Ranks\n") != NULL);
    CHECK(strstr(text, "== rank 1: rank1.json") != NULL);
    free(text);
    o.rank = 1;
    o.format = TP_REPORT_JSON;
    text = render(f.m, &o, &st);
    char err[256];
    yajl_val doc = yajl_tree_parse(text, err, sizeof err);
    const char *ranks[] = {"ranks", NULL}, *rank[] = {"rank", NULL},
               *span[] = {"temporal", "span_ns", NULL};
    yajl_val arr = doc ? at(doc, ranks) : NULL;
    CHECK(arr && arr->u.array.len == 1);
    if (arr && arr->u.array.len == 1) {
        CHECK_EQ_I(YAJL_GET_INTEGER(at(arr->u.array.values[0], rank)), 1);
        CHECK_EQ_I(YAJL_GET_INTEGER(at(arr->u.array.values[0], span)), FX_US(40));
    }
    yajl_tree_free(doc);
    free(text);
    tp_model_close(f.m);
}

int main(void) {
    TP_RUN(test_multi_rank);
    TP_RUN(test_json);
    TP_RUN(test_text);
    TP_RUN(test_no_gpu_and_errors);
    return tp_test_summary();
}
