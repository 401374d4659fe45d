/* tp_report: renders every analysis of a loaded model as one report, for people (text) or
 * for scripts and CI (JSON, schema "trainprof-report/v1", docs/report-schema.md).
 *
 * The text report opens each rank with its diagnosis (tp_diagnose: ranked findings and what
 * to do), then a one-screen summary (GPU span, utilization, idle and its split, top kernels,
 * top annotation ranges) and then one section per analysis, with aligned columns and human
 * units. A rank without GPU activity says so plainly. Each rank's numbers come from
 * tp_rank_analysis, as the TUI's do. The report only reads the model; it writes to `out` and
 * nowhere else. */
#ifndef TP_REPORT_H
#define TP_REPORT_H

#include <stdio.h>

#include "tp_an_view.h"
#include "tp_model.h"
#include "tp_status.h"

/* TEXT: for people in a terminal; JSON: for scripts; HTML: one self-contained page with
 * charts (tp_report_html), the same figures as the other two. */
typedef enum { TP_REPORT_TEXT = 0, TP_REPORT_JSON = 1, TP_REPORT_HTML = 2 } tp_report_format;

typedef struct {
    tp_report_format format;
    tp_an_opts an; /* the analyses' options: mode (native or HTA's rules, docs/analyzer.md),
                      cutoffs, symbolization; shown in the JSON "options" as they are */
    int rank;      /* only this rank; -1: all ranks */
    int top;       /* rows in "top" tables (kernels, ranges); 0: default 10 */
    /* Called with each rank's view once it is built, before its analyses run (NULL: not
     * called): a caller that owns the model frees there what only the view's build read
     * (tp_an_view_build_only_columns; trainprof report). The report builds no other view of
     * that rank after it. */
    void (*view_built)(void *arg, const tp_an_view *v);
    void *view_built_arg;
    /* Called once a rank's diagnosis has run (NULL: not called), on the thread that ran it
     * while the other may run other analyses of the rank: a caller that owns the model frees
     * there what only the diagnosis read after the view (tp_rank_analysis_corr_index_done;
     * trainprof report). */
    void (*diagnosed)(void *arg, const tp_an_view *v);
    void *diagnosed_arg;
} tp_report_opts;

/* Fills the defaults: text, native mode (tp_an_opts_init), all ranks, top 10. */
void tp_report_opts_init(tp_report_opts *o);

/* Writes the report of `m` (finished) to `out`. Returns TP_OK, TP_ERR_ARG for NULL
 * arguments, TP_ERR_NOT_FOUND when opts->rank names no rank of the model, TP_ERR_IO when
 * writing fails. */
tp_status tp_report_write(FILE *out, const tp_model *m, const tp_report_opts *opts);

#endif
