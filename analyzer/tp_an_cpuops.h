/* tp_an_cpuops: the CPU operators table, like torch.profiler's key_averages().table().
 *
 * One row per name (and, with opts.ops_by_shapes, per input-shapes text, Kineto's args
 * "Input Dims") over the rank's CPU-side framework ops (Kineto cpu_op) and annotation ranges
 * (NVTX, record_function): how many, total time, self time and mean. Self time is a row's
 * duration minus the durations of its direct children on the same thread (the model's
 * nesting: ops, annotations, runtime calls and Python functions directly inside it), so the
 * self times of one thread never count a nanosecond twice. A backward op (Kineto args "Fwd
 * thread id" > 0; forward ops write 0 or nothing) names the forward op that created it: of the
 * forward ops with its autograd "Sequence number", the outermost, and of those the last (the
 * one whose autograd node took the number). Times are the model's exact ns
 * (never HTA-rounded). Rows are sorted by self time (opts.ops_by_total: total time),
 * descending; ties by name. */
#ifndef TP_AN_CPUOPS_H
#define TP_AN_CPUOPS_H

#include "tp_an_view.h"

typedef struct {
    uint32_t name;     /* string pool id */
    uint32_t shapes;   /* input shapes text (by shapes only); 0: none or not grouped */
    uint32_t fwd_name; /* backward op: the forward op that created it; 0: none / unknown */
    uint8_t cat;       /* TP_CAT_CPU_OP or TP_CAT_USER_ANNOTATION */
    size_t count;
    int64_t total, self; /* ns */
    double mean;         /* total / count, ns */
} tp_an_cpuop;

typedef struct {
    size_t n;
    tp_an_cpuop *op;  /* sorted as above */
    int64_t span;     /* the CPU span: first start to last end of the rank's CPU-side rows */
    int64_t self_sum; /* sum of every call's self time ("self %" is a share of it) */
    int by_shapes, by_total;
    int has_shapes; /* some op carried input shapes (found with by_shapes only: else 0) */
} tp_an_cpuops;

/* Fills `out` (overwritten; owns its array until tp_an_cpuops_free) from view `v`, grouped
 * and sorted as v->opts asks. Aborts on out of memory, like the rest of the analyzer. */
void tp_an_cpuops_run(const tp_an_view *v, tp_an_cpuops *out);

/* Frees what `out` owns and zeroes it; NULL is a no-op. */
void tp_an_cpuops_free(tp_an_cpuops *out);

/* "op" for a framework op, "range" for an annotation. */
const char *tp_an_cpuop_kind(const tp_an_cpuop *op);

#endif
