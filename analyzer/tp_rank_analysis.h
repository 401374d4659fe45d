/* tp_rank_analysis: every analysis of one rank, run in one place for every front end.
 *
 * `trainprof report`, the TUI (and live mode next) look at a rank through this module: one
 * view (tp_an_view) built under one tp_an_opts, then the analyses asked for, always in the
 * same order and with the same options, so a figure shown by any of them is the same call on
 * the same rows. The result owns what the analyses allocated; the model must outlive it. */
#ifndef TP_RANK_ANALYSIS_H
#define TP_RANK_ANALYSIS_H

#include "tp_an_cpuops.h"
#include "tp_an_drops.h"
#include "tp_an_host.h"
#include "tp_an_idle.h"
#include "tp_an_kernels.h"
#include "tp_an_launch.h"
#include "tp_an_marks.h"
#include "tp_an_memory.h"
#include "tp_an_memuse.h"
#include "tp_an_nvtx.h"
#include "tp_an_overlap.h"
#include "tp_an_queue.h"
#include "tp_an_stacks.h"
#include "tp_an_temporal.h"
#include "tp_an_view.h"
#include "tp_diagnose.h"
#include "tp_model.h"

/* The analyses, as bits of the `which` argument. */
enum {
    TP_RA_TEMPORAL = 1u << 0,
    TP_RA_IDLE = 1u << 1,
    TP_RA_KERNELS = 1u << 2,
    TP_RA_LAUNCH = 1u << 3,
    TP_RA_QUEUE = 1u << 4,
    TP_RA_MEMORY = 1u << 5,
    TP_RA_OVERLAP = 1u << 6,
    TP_RA_NVTX = 1u << 7,
    TP_RA_DIAGNOSIS = 1u << 8,
    TP_RA_MEMUSE = 1u << 9, /* who holds device memory: the allocator replay (tp_an_memuse) */
    TP_RA_CPUOPS = 1u << 10,
    TP_RA_HOST = 1u << 11,
    TP_RA_ALL = (1u << 12) - 1,
    /* For the report's sections, not in TP_RA_ALL: GPU time by launching stack (tp_an_stacks;
     * it symbolizes) and the NVTX marks (tp_an_marks). Computed here only when the analyses
     * take the work list (a second core, a view of ~0.5 M rows or more; the stacks
     * beside the diagnosis, which shares the symbolizer); otherwise `ran` lacks the bit and
     * the section runs it. */
    TP_RA_STACKS = 1u << 12,
    TP_RA_MARKS = 1u << 13,
    TP_RA_SECTIONS = TP_RA_STACKS | TP_RA_MARKS
};

/* Every analysis of one rank. Results of analyses not asked for are zero. */
typedef struct {
    tp_an_view v;
    unsigned ran;      /* TP_RA_* bits of the analyses that ran */
    tp_an_drops drops; /* what the collector lost (always: it qualifies every figure) */
    tp_an_temporal t;
    tp_an_idle idle;
    tp_an_kernels k;
    tp_an_launch l;
    tp_an_queue q;
    tp_an_memory mem;
    tp_an_overlap ov;
    tp_an_nvtx nv;
    tp_diagnosis dg;
    tp_an_memuse mu;
    tp_an_cpuops ops; /* the CPU operators table */
    tp_an_host host;  /* steps, what filled them, threads (the host side) */
    tp_an_stacks st;  /* TP_RA_STACKS */
    tp_an_marks mk;   /* TP_RA_MARKS */
    /* Called once the diagnosis has run, on the thread that ran it (NULL: not called); see
     * tp_report_opts.diagnosed */
    void (*diagnosed)(void *arg, const tp_an_view *v);
    void *diagnosed_arg;
} tp_rank_analysis;

/* Builds the view of rank `r` of `m` under `o` (NULL: tp_an_opts_init's defaults) and runs
 * the analyses whose TP_RA_* bit is in `which` into *ra (overwritten). Never fails; aborts on
 * out of memory like the analyses. Free with tp_rank_analysis_free. */
void tp_rank_analysis_run(tp_rank_analysis *ra, const tp_model *m, const tp_rank *r,
                          const tp_an_opts *o, unsigned which);

/* tp_rank_analysis_run's first part: the view (and the drop counts) into *ra, no analysis
 * run yet (tp_rank_analysis_more runs them), for a caller with something to do in between
 * (tp_report_write: tp_report_opts.view_built). */
void tp_rank_analysis_view(tp_rank_analysis *ra, const tp_model *m, const tp_rank *r,
                           const tp_an_opts *o);

/* What the report, its HTML and the TUI say of a diagnosis without findings: a rank without
 * device activity was judged by the host rules only, and without steps by none of them. */
const char *tp_rank_analysis_no_findings(const tp_rank_analysis *ra);

/* What the report, its HTML and the TUI say under the diagnosis' heading of a recorded rank
 * with device activity and no step named (judged over the GPU span), or NULL. */
const char *tp_rank_analysis_steps_note(const tp_rank_analysis *ra);

/* 1 when, once the diagnosis of `v` has run, no analysis or writer reads its rank's
 * correlation index again: a view that does not borrow it (tp_an_view.by_corr NULL:
 * --compat hta, a window), whose analyses group their rows by correlation themselves; the
 * diagnosis walks the index (tp_diag_ctx's cpu_call). A caller that owns the model may then
 * free it (tp_rank_drop_corr_index). */
int tp_rank_analysis_corr_index_done(const tp_an_view *v);

/* Runs the analyses in `which` that have not run yet on the view *ra already holds (a front
 * end that computes each analysis when a user first asks for it, tp_tui_data). The results
 * equal those of one tp_rank_analysis_run with all the bits: each analysis reads only the
 * view. */
void tp_rank_analysis_more(tp_rank_analysis *ra, unsigned which);

/* Frees what tp_rank_analysis_run allocated (not the model); NULL is a no-op. */
void tp_rank_analysis_free(tp_rank_analysis *ra);

#endif
