/* tp_an_ranks: the ranks of a job compared (the report's cross-rank section).
 *
 * One summary row per rank (tp_an_rank_row), then job-level findings that no single rank can
 * show. The findings are computed from the rows alone (tp_an_ranks_judge), whoever filled
 * them: `trainprof report` fills them from the loaded traces (tp_an_ranks_run: one
 * tp_rank_analysis per rank, tp_an_rank_row_fill), `trainprof merge` from the rows that
 * `report --format json` wrote per rank (tp_merge), so the two give the same section.
 *
 * The findings are the rows of a rule table (tp_diag_rank_rules.h, functions in
 * tp_diag_ranks.c):
 * - straggler: a rank whose own work per step (median step minus its exposed communication
 *   per step, i.e. the step without the time spent waiting in collectives; on a rank without
 *   device activity recorded with samples, its step thread's sampled time off a CPU in its
 *   steps outside data loading: tp_an_rank_waits) is >= 20 % above
 *   the median rank's (the seeds' rule for DDP/FSDP: data or sharding imbalance, a slow device
 *   or host), which every collective then waits for. Judging the raw step time would name the
 *   ranks that wait longest, whose steps are long because of the straggler;
 * - collective-wait: ranks that spend much more time in communication no computation hides
 *   (or, without devices, sampled waiting in their steps) than the others (>= 1.5x the least, and
 * >= 10 % of the median step apart): they arrive at the collectives early and wait there for the
 * rank with the least, which arrives last;
 * - memory-imbalance: a rank whose peak allocated device memory is >= 20 % above the median
 *   rank's (uneven shards, batches or sequence lengths; the first rank to run out of memory);
 * - input-straggler: a rank whose data loading per step is >= 1.5x the other ranks' median
 *   (and above it by >= 10 % of the median step): the others wait for its input pipeline,
 *   with or without a device (a gloo job's steps are equal and its communication unseen);
 * - cpu-oversubscribed: the sampled ranks on one machine whose processes may use all its
 *   cores want at least as many CPUs at a time as it has: each waits for the CPUs the others
 *   hold (a rank's own cpu-contention sees its own processes only).
 * Ranks without steps are listed but take no part in the step rules; ranks without memory
 * events take no part in the memory rule. */
#ifndef TP_AN_RANKS_H
#define TP_AN_RANKS_H

#include <stddef.h>
#include <stdint.h>

#include "tp_an_view.h"
#include "tp_model.h"
#include "tp_rank_analysis.h"

#define TP_AN_HOST_MAX 64 /* a row's host name, cut */

typedef struct {
    int rank;
    size_t n_steps;
    double step_p50_ns, step_p90_ns; /* NaN without steps */
    double own_p50_ns;               /* step_p50 minus the waits per step (tp_an_rank_waits; set
                                        by tp_an_ranks_judge) */
    int64_t span_ns, busy_ns, compute_ns;
    int64_t comm_ns, exposed_comm_ns; /* communication kernels, and the part no computation
                                         kernel overlapped (tp_an_overlap's comm - overlap) */
    int64_t mem_peak_bytes;           /* peak allocated device memory (tp_an_memuse); -1: unknown */
    int64_t data_wait_ns;             /* data loading in the steps' window (tp_an_host's data_ns) */
    int64_t host_wait_ns; /* a rank without device activity, sampled (`record --sample`): its
                             step thread's time off a CPU in its steps, data loading aside
                             (where a gloo job waits in its collectives); -1: not measured */
    /* Sampled ranks: how many of their Python threads (every process of the rank) were in
     * state R at a time over their steps after warm-up (tp_an_samples_demand; NaN: not
     * sampled), on which machine (its `host` fact; "": unknown), with how many cores
     * (cpu.cores; 0: unknown) and how many of them the rank's processes could use
     * (tp_an_env_cpus: cores, affinity mask, cgroup quota; 0: unknown). */
    double cpu_demand;
    char host[TP_AN_HOST_MAX];
    int64_t cores;
    double cpus;
} tp_an_rank_row;

/* A rank's waits, the part of its steps that is not its own work: its exposed communication
 * when it ran collective kernels, else its sampled host waits when measured, else 0. The one
 * definition the straggler and collective-wait rules read. */
int64_t tp_an_rank_waits(const tp_an_rank_row *r);

/* 1 when the row's waits are its sampled host waits (no collective kernels). */
int tp_an_rank_host_waits(const tp_an_rank_row *r);

typedef struct {
    const char *id; /* a rule's id (tp_diag_rank_rules.h): "straggler", ... */
    double severity;
    char title[256];
    char evidence[1024];
    const char *advice;
    int rank; /* the rank it is about (the straggler, the rank arriving last) */
} tp_an_rank_finding;

typedef struct {
    size_t n;
    tp_an_rank_row *r;         /* by rank */
    double median_step_p50_ns; /* median over ranks with steps; NaN when none */
    double median_own_p50_ns;  /* median of own_p50_ns over those ranks */
    double median_mem_peak;    /* median over ranks with a known peak; NaN when none */
    size_t n_findings;
    tp_an_rank_finding *f; /* most severe first */
} tp_an_ranks;

/* A cross-rank rule: one finding id and the function that judges it from the rows and
 * medians (it appends findings with tp_an_ranks_add_finding). */
typedef struct tp_an_rank_rule {
    const char *id;
    void (*run)(tp_an_ranks *x, const struct tp_an_rank_rule *self);
    const char *description; /* one line: what it detects */
} tp_an_rank_rule;

/* The analyses (TP_RA_* bits) tp_an_rank_row_fill reads. */
#define TP_AN_RANK_ROW_NEEDS                                                                       \
    (TP_RA_TEMPORAL | TP_RA_OVERLAP | TP_RA_DIAGNOSIS | TP_RA_MEMUSE | TP_RA_HOST)

/* The summary row of one rank from its analysis `a` (which ran TP_AN_RANK_ROW_NEEDS). */
void tp_an_rank_row_fill(tp_an_rank_row *row, const tp_rank_analysis *a);

/* Appends a copy of `row` to `x`. Two rows may carry one rank number (a job and a stray
 * trace of the same rank: the report compares what it loaded); tp_an_ranks_find finds them. */
void tp_an_ranks_add(tp_an_ranks *x, const tp_an_rank_row *row);

/* The index of the first row of rank `rank` in `x`, or -1. */
long tp_an_ranks_find(const tp_an_ranks *x, int rank);

/* Orders the rows by rank, derives own_p50_ns, the medians, and runs the rules (with two rows
 * or more) into x->f, most severe first. Findings of an earlier call are replaced. */
void tp_an_ranks_judge(tp_an_ranks *x);

/* Compares the model's ranks (only those for which `keep(rank)` holds, when keep is not
 * NULL) under options `o` into `out` (free with tp_an_ranks_free): a row per rank, judged. */
void tp_an_ranks_run(const tp_model *m, const tp_an_opts *o,
                     int (*keep)(const tp_rank *r, const void *arg), const void *arg,
                     tp_an_ranks *out);
void tp_an_ranks_free(tp_an_ranks *out); /* NULL: no-op */

/* What the report says where no cross-rank rule found anything (text and HTML alike). */
const char *tp_an_ranks_quiet(const tp_an_ranks *x);

/* The cross-rank rules, in the order they run (a static table); returns their count. */
size_t tp_an_ranks_rules(const tp_an_rank_rule **rules);

/* For the rules: appends a finding of rule `self` about `rank` with severity `sev` (clamped
 * to 1); the caller fills its texts. */
tp_an_rank_finding *tp_an_ranks_add_finding(tp_an_ranks *x, const tp_an_rank_rule *self, double sev,
                                            int rank);

#endif
