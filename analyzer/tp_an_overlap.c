/* tp_an_overlap: communication/computation overlap of one rank. */
#include "tp_an_overlap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tp_an_stats.h"
#include "tp_an_temporal.h"

void tp_an_overlap_run(const tp_an_view *v, tp_an_overlap *out) {
    memset(out, 0, sizeof *out);
    unsigned comm = 1u << TP_KT_COMMUNICATION, comp = 1u << TP_KT_COMPUTATION;
    out->comm_ns = tp_an_gpu_union(v, comm, NULL, NULL);
    out->comp_ns = tp_an_gpu_union(v, comp, NULL, NULL);
    /* |A ∩ B| = |A| + |B| - |A ∪ B| for the merged unions */
    out->overlap_ns = out->comm_ns + out->comp_ns - tp_an_gpu_union(v, comm | comp, NULL, NULL);
    out->pct = out->comm_ns > 0 ? 100.0 * (double)out->overlap_ns / (double)out->comm_ns : NAN;
}
