/* tp_folded: a model's call stacks as Brendan Gregg's folded stacks, for flamegraph.pl,
 * speedscope, inferno and the like (`trainprof export --format folded`).
 *
 * One line per distinct stack: its frames root first, separated by ';', then a space and the
 * weight in nanoseconds ("main;train.py:42 in step;cudaLaunchKernel (libcudart.so);gemm
 * 1234"). Frames read as tp_an_frames gives them (the report's and the TUI's words, Python
 * frames where the interpreter ran them); the leaf is what the weight belongs to: the kernel,
 * the range or the API call, by name. What weighs (a table, tp_folded_weight_*):
 *   gpu    the GPU time of each GPU op the kernels table counts, charged to the stack of the
 *          call that launched it (tp_an_stacks' rule): the lines sum to the GPU time of the
 *          ops launched from a recorded stack;
 *   range  the duration of each NVTX range / annotation, charged to the stack it was pushed
 *          from (--stacks all);
 *   cpu    the duration of each CUDA/device API call, charged to its own stack;
 *   samples       `record --sample`'s samples that found the thread on a CPU, each weighing
 *                 its period, charged to the thread's Python stack (py-spy's flame graph);
 *   samples-wall  every sample, on a CPU or waiting (py-spy --idle).
 * Sample lines have no leaf: their innermost frame is where the thread was.
 * A model of several ranks puts "rank N" at the root of each line. ';' inside a name becomes
 * ':' and control characters '?', so every line parses. Lines are sorted by their text, so
 * the output is the same for the same trace. */
#ifndef TP_FOLDED_H
#define TP_FOLDED_H

#include <stdint.h>
#include <stdio.h>

#include "tp_model.h"
#include "tp_status.h"

typedef struct {
    const char *weight; /* a tp_folded_weight_name: "gpu" (default when NULL), "range", "cpu",
                           "samples", "samples-wall" */
    int no_symbols;     /* frames as module+offset, never opening the modules' files */
} tp_folded_opts;

typedef struct {
    uint64_t lines;   /* lines written */
    uint64_t samples; /* events (ops, ranges, calls) whose weight was written */
    int64_t total_ns; /* the sum of the weights written */
} tp_folded_stats;

/* Name of weight i ("gpu", "range", "cpu", "samples", "samples-wall"), NULL past the last. */
const char *tp_folded_weight_name(int i);

/* Writes the folded stacks of every rank of `m` (finished) to `out`; *st (may be NULL) gets
 * what was written. TP_ERR_ARG for NULL arguments or an unknown weight, TP_ERR_IO when writing
 * fails. Events without a stack are left out (and counted nowhere). */
tp_status tp_folded_write(FILE *out, const tp_model *m, const tp_folded_opts *o,
                          tp_folded_stats *st);

#endif
