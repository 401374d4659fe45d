/* tp_an_ranks: the ranks of a job compared (the report's cross-rank section).
 *
 * One row per rank from the rank's own analyses (tp_rank_analysis: the steps' durations of
 * the diagnosis, temporal, overlap), then job-level findings that no single rank can show:
 * - straggler: a rank whose own work per step (median step minus its exposed communication
 *   per step, i.e. the step without the time spent waiting in collectives) is >= 20 % above
 *   the median rank's (the seeds' rule for DDP/FSDP: data or sharding imbalance, a slow device
 *   or host), which every collective then waits for. Judging the raw step time would name the
 *   ranks that wait longest, whose steps are long because of the straggler;
 * - collective-wait: ranks that spend much more time in communication no computation hides
 *   than the others (>= 1.5x the least, and >= 10 % of the median step apart): they arrive at
 *   the collectives early and wait there for the rank with the least, which arrives last.
 * Ranks without steps are listed but take no part in the step rules. */
#ifndef TP_AN_RANKS_H
#define TP_AN_RANKS_H

#include <stddef.h>
#include <stdint.h>

#include "tp_an_view.h"
#include "tp_model.h"

typedef struct {
    int rank;
    size_t n_steps;
    double step_p50_ns, step_p90_ns; /* NaN without steps */
    double own_p50_ns;               /* step_p50 minus exposed communication per step */
    int64_t span_ns, busy_ns, compute_ns;
    int64_t comm_ns, exposed_comm_ns; /* communication kernels, and the part no computation
                                         kernel overlapped (tp_an_overlap's comm - overlap) */
} tp_an_rank_row;

typedef struct {
    const char *id; /* "straggler", "collective-wait" */
    double severity;
    char title[256];
    char evidence[1024];
    const char *advice;
    int rank; /* the rank it is about (the straggler, the rank arriving last) */
} tp_an_rank_finding;

typedef struct {
    size_t n;
    tp_an_rank_row *r;         /* in the model's rank order */
    double median_step_p50_ns; /* median over ranks with steps; NaN when none */
    double median_own_p50_ns;  /* median of own_p50_ns over those ranks */
    size_t n_findings;
    tp_an_rank_finding *f; /* most severe first */
} tp_an_ranks;

/* Compares the model's ranks (only those for which `keep(rank)` holds, when keep is not
 * NULL) under options `o` into `out` (free with tp_an_ranks_free). */
void tp_an_ranks_run(const tp_model *m, const tp_an_opts *o,
                     int (*keep)(const tp_rank *r, const void *arg), const void *arg,
                     tp_an_ranks *out);
void tp_an_ranks_free(tp_an_ranks *out);

#endif
