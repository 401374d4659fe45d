/* tp_report: renders every analysis of a loaded model as one report, for people (text) or
 * for scripts and CI (JSON, schema "trainprof-report/v1", docs/report-schema.md).
 *
 * The text report opens each rank with its diagnosis (tp_diagnose: ranked findings and what
 * to do), then a one-screen summary (GPU span, utilization, idle and its split, top kernels,
 * top annotation ranges) and then one section per analysis, with aligned columns and human
 * units. A rank without GPU activity says so plainly. The report
 * only reads the model; it writes to `out` and nowhere else. */
#ifndef TP_REPORT_H
#define TP_REPORT_H

#include <stdio.h>

#include "tp_an_idle.h"
#include "tp_an_kernels.h"
#include "tp_an_launch.h"
#include "tp_an_memory.h"
#include "tp_an_nvtx.h"
#include "tp_an_overlap.h"
#include "tp_an_queue.h"
#include "tp_an_temporal.h"
#include "tp_an_view.h"
#include "tp_diagnose.h"
#include "tp_model.h"
#include "tp_status.h"

typedef enum { TP_REPORT_TEXT = 0, TP_REPORT_JSON = 1 } tp_report_format;

typedef struct {
    tp_report_format format;
    int compat_hta;        /* apply HTA's admission rules (docs/analyzer.md) */
    int include_last_step; /* compat_hta: keep the last profiler step (HTA option) */
    int no_ns_rounding;    /* compat_hta: HTA_DISABLE_NS_ROUNDING=1 behaviour */
    int rank;              /* only this rank; -1: all ranks */
    int top;               /* rows in "top" tables (kernels, ranges); 0: default 10 */
    int no_symbols;        /* stacks as module+offset only (no offline symbolization) */
} tp_report_opts;

/* Fills the defaults: text, native mode, all ranks, top 10. */
void tp_report_opts_init(tp_report_opts *o);

/* Every analysis of one rank, as the report computes it. Public so that tests (the HTA
 * acceptance test) check exactly what `trainprof report` prints. */
typedef struct {
    tp_an_view v;
    tp_an_temporal t;
    tp_an_idle idle;
    tp_an_kernels k;
    tp_an_launch l;
    tp_an_queue q;
    tp_an_memory mem;
    tp_an_overlap ov;
    tp_an_nvtx nv;
    tp_diagnosis dg;
} tp_rank_report;

/* Runs every analysis of rank `r` of `m` under `o`'s mode into *rr; free with
 * tp_report_rank_free. */
void tp_report_rank_run(tp_rank_report *rr, const tp_model *m, const tp_rank *r,
                        const tp_report_opts *o);
void tp_report_rank_free(tp_rank_report *rr);

/* Writes the report of `m` (finished) to `out`. Returns TP_OK, TP_ERR_ARG for NULL
 * arguments, TP_ERR_NOT_FOUND when opts->rank names no rank of the model, TP_ERR_IO when
 * writing fails. */
tp_status tp_report_write(FILE *out, const tp_model *m, const tp_report_opts *opts);

#endif
