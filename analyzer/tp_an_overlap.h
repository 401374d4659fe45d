/* tp_an_overlap: how much communication ran while computation ran.
 *
 * comm_ns = union of COMMUNICATION kernels; overlap_ns = time when both the union of
 * COMPUTATION kernels and that of COMMUNICATION kernels are active; pct = 100 * overlap /
 * comm (HTA's get_comm_comp_overlap), NaN when there is no communication. */
#ifndef TP_AN_OVERLAP_H
#define TP_AN_OVERLAP_H

#include "tp_an_view.h"

typedef struct {
    int64_t comm_ns, comp_ns, overlap_ns;
    double pct;
} tp_an_overlap;

/* Runs the analysis over view `v` and fills `out` (overwritten; plain values, nothing to
 * free). */
void tp_an_overlap_run(const tp_an_view *v, tp_an_overlap *out);

#endif
