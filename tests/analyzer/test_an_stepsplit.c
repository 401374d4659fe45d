/* test_an_stepsplit: the per-step split and the busy series behind the HTML report's charts,
 * on a hand-built rank with exact answers; the HTML renderer's escaping and the page it
 * writes for that rank (the step rows carry the same numbers). */
#include "tp_an_stepsplit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_an_fixture.h"
#include "tp_diagnose.h"
#include "tp_report.h"
#include "tp_report_svg.h"
#include "tp_test.h"

/* Step 1 [0, 100) µs: gemm [10, 40), an all-reduce [30, 60), a copy [55, 70), idle the rest:
 * compute 30, exposed communication 20 (40..60), copies 10 (60..70), idle 40.
 * Step 2 [100, 200): gemm [150, 250), cut at the step's end: compute 50, idle 50. */
static fx_model two_steps(void) {
    fx_model f = fx_new();
    fx_ev(&f, "step", TP_CAT_USER_ANNOTATION, 0, 100, -1, -1);
    fx_ev(&f, "step", TP_CAT_USER_ANNOTATION, 100, 100, -1, -1);
    fx_launch(&f, "gemm_kernel", 1, 2, 10, 30, 1, 1);
    fx_launch(&f, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 3, 2, 30, 30, 2, 2);
    fx_copy(&f, "Memcpy HtoD (Pageable -> Device)", 55, 15, 1 << 20, 1, 1, 3);
    fx_launch(&f, "gemm_kernel", 101, 2, 150, 100, 1, 4);
    tp_model_finish(f.m);
    return f;
}

static void test_split(void) {
    fx_model f = two_steps();
    for (int compat = 0; compat < 2; compat++) {
        tp_an_view v;
        fx_view(&v, &f, compat);
        tp_diagnosis d;
        tp_diagnose_run(&v, &d);
        CHECK_EQ_U(d.n_steps, 2);
        tp_an_stepsplit s;
        tp_an_stepsplit_run(&v, d.step_start, d.step_end, d.n_steps, &s);
        CHECK_EQ_U(s.n, 2);
        static const int64_t want[2][TP_SS_COUNT] = {{30, 20, 10, 0, 40}, {50, 0, 0, 0, 50}};
        for (size_t i = 0; i < s.n && i < 2; i++) {
            CHECK_EQ_I(s.s[i].start, FX_US(100.0 * (double)i));
            CHECK_EQ_I(s.s[i].end, FX_US(100.0 * (double)i + 100));
            for (int p = 0; p < TP_SS_COUNT; p++)
                CHECK_EQ_I(s.s[i].part[p], FX_US(want[i][p]));
        }
        double y[4];
        tp_an_busy_series(&v, 0, FX_US(200), 4, y); /* busy [10, 70) and [150, 250) */
        CHECK_NEAR(y[0], 0.8, 1e-12);
        CHECK_NEAR(y[1], 0.4, 1e-12);
        CHECK_NEAR(y[2], 0.0, 1e-12);
        CHECK_NEAR(y[3], 1.0, 1e-12);
        tp_an_stepsplit_free(&s);
        tp_diagnose_free(&d);
        tp_an_view_free(&v);
    }
    tp_model_close(f.m);
}

/* The HTML report of `m` into *page (caller frees); the status of tp_report_write. */
static tp_status html_of(const tp_model *m, char **page) {
    size_t len = 0;
    FILE *out = open_memstream(page, &len);
    tp_report_opts o;
    tp_report_opts_init(&o);
    o.format = TP_REPORT_HTML;
    tp_status st = tp_report_write(out, m, &o);
    fclose(out);
    return st;
}

/* The page of the rank above: its step rows hold the split, and nothing in it is a script. */
static void test_page(void) {
    fx_model f = two_steps();
    char *page = NULL;
    CHECK_EQ_I(html_of(f.m, &page), TP_OK);
    CHECK(strncmp(page, "<!DOCTYPE html>", 15) == 0);
    CHECK(strstr(page, "data-step-first=\"1\" data-step-count=\"1\" data-dur-ns=\"100000\" "
                       "data-compute-ns=\"30000\" data-comm-ns=\"20000\" data-memory-ns=\"10000\" "
                       "data-other-ns=\"0\" data-idle-ns=\"40000\"") != NULL);
    CHECK(strstr(page, "data-compute-ns=\"50000\" data-comm-ns=\"0\"") != NULL);
    CHECK(strstr(page, "data-sum-ns=\"130000\"") != NULL); /* gemm_kernel: 30 + 100 µs */
    CHECK(strstr(page, "<script") == NULL && strstr(page, "http") == NULL);
    CHECK(strstr(page, "</html>\n") != NULL);
    free(page);
    tp_model_close(f.m);
}

/* Trace strings as HTML text: markup characters as entities, controls and bad bytes U+FFFD. */
static void test_escape(void) {
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    tp_rh_text(out, "f<float, 2>(a&b) \"x\" 'y'\x1b[2J\xff\tok \xc2\xb5s");
    tp_rh_text(out, NULL);
    fclose(out);
    CHECK_STR(buf, "f&lt;float, 2&gt;(a&amp;b) &quot;x&quot; &#39;y&#39;&#xFFFD;[2J&#xFFFD;\tok "
                   "\xc2\xb5s");
    free(buf);
}

int main(void) {
    TP_RUN(test_split);
    TP_RUN(test_page);
    TP_RUN(test_escape);
    return tp_test_summary();
}
