/* tp_an_stepsplit: where each training step's device time goes, and the device's busy share
 * over time: the figures behind the HTML report's step and utilization charts.
 *
 * A step's time [start, end) is split into parts that never overlap and add up to its length:
 * compute (union of the view's COMPUTATION kernels), communication (COMMUNICATION kernels
 * while no computation ran: the exposed part), copies and memsets (MEMORY rows while neither
 * ran), other device work (any other GPU row while none of those ran) and idle (no GPU row).
 * The steps are the diagnosis' (tp_diagnosis.step_start/step_end: the outermost step ranges
 * on the launching threads), so the steps' lengths are the durations whose median the report
 * prints. Busy is the union of every GPU row of the view, as tp_an_temporal's. Aborts on out
 * of memory, like the other analyses. */
#ifndef TP_AN_STEPSPLIT_H
#define TP_AN_STEPSPLIT_H

#include <stddef.h>
#include <stdint.h>

#include "tp_an_view.h"

typedef enum {
    TP_SS_COMPUTE = 0,
    TP_SS_COMM,
    TP_SS_MEMORY,
    TP_SS_OTHER,
    TP_SS_IDLE,
    TP_SS_COUNT
} tp_ss_part;

/* "compute", "communication", "copies/memsets", "other device", "idle" (display names). */
const char *tp_ss_part_label(tp_ss_part p);
/* "compute", "comm", "memory", "other", "idle" (keys: ids and data attributes). */
const char *tp_ss_part_key(tp_ss_part p);

typedef struct {
    int64_t start, end;
    int64_t part[TP_SS_COUNT]; /* ns; they sum to end - start */
} tp_an_stepsplit_row;

typedef struct {
    size_t n;
    tp_an_stepsplit_row *s; /* in the order given (the diagnosis': by start) */
} tp_an_stepsplit;

/* Splits the `n` steps [start[i], end[i]) of view `v` into *out (overwritten; free with
 * tp_an_stepsplit_free). n == 0 gives an empty result. */
void tp_an_stepsplit_run(const tp_an_view *v, const int64_t *start, const int64_t *end, size_t n,
                         tp_an_stepsplit *out);
void tp_an_stepsplit_free(tp_an_stepsplit *out); /* NULL: no-op */

/* The device's busy share (union of the view's GPU rows) in each of `n` equal buckets of
 * [lo, hi), into out[0..n-1] as fractions in [0, 1]; 0 everywhere when hi <= lo. */
void tp_an_busy_series(const tp_an_view *v, int64_t lo, int64_t hi, size_t n, double *out);

#endif
