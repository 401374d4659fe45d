/* tp_an_kernels: what the GPU ran, by kernel type and by kernel name.
 *
 * Type breakdown: the union of COMPUTATION, COMMUNICATION and MEMORY events, split by which
 * types run at once ("COMPUTATION overlapping COMMUNICATION", ...), like HTA. Per name:
 * count, total, mean, min, max and sample standard deviation of the durations of every GPU
 * event of those three types, sorted by total time (descending). */
#ifndef TP_AN_KERNELS_H
#define TP_AN_KERNELS_H

#include "tp_an_view.h"

/* Overlap classes are bit masks of (1 << tp_ktype) over the three types: 1..7. */
#define TP_KT_CLASSES 8

typedef struct {
    uint32_t name; /* string pool id */
    uint8_t ktype; /* tp_ktype */
    size_t count;
    int64_t sum, min, max; /* ns */
    double mean, std;      /* ns; std is 0 for a single event (HTA) */
} tp_an_kernel_row;

typedef struct {
    int64_t class_ns[TP_KT_CLASSES]; /* time with exactly the types in the mask running */
    int64_t class_total;             /* sum of class_ns */
    size_t n;
    tp_an_kernel_row *k; /* by sum, descending */
} tp_an_kernels;

/* Runs the analysis over view `v` and fills `out` (overwritten; it owns its arrays until
 * tp_an_kernels_free). Aborts on out of memory, like the rest of the analyzer. */
void tp_an_kernels_run(const tp_an_view *v, tp_an_kernels *out);
/* Frees what `out` owns and zeroes it; NULL is a no-op. */
void tp_an_kernels_free(tp_an_kernels *out);

/* Label of an overlap class: "COMPUTATION", "COMPUTATION overlapping MEMORY", ... written
 * into buf (size >= 64). */
const char *tp_an_kernel_class_label(unsigned mask, char *buf, size_t size);

#endif
