/* tp_an_stacks: GPU time by launching stack, like torch.profiler's
 * key_averages(group_by_stack_n=N).
 *
 * Every GPU op the kernels table counts (tp_an_kernels: a GPU row of a known kernel type,
 * copies and memsets included) is charged to the CPU call that launched it (the view's
 * correlation link) and that call's stack (tp_events.stack, recorded with `trainprof record
 * --stacks api|all`). Stacks are read as tp_an_frames gives them (Python frames where the
 * interpreter ran them, as py-spy --native shows them) and grouped by their first `depth`
 * frames as tp_an_frames_prefix reads them: in a Python program's stack the call being made
 * (its innermost Python frame), then the program's own line that led to it and its callers.
 * Two stacks whose prefixes read the same (same functions, files and lines) are one group,
 * whatever their addresses.
 *
 * Promises: the groups' GPU time plus no_stack_ns equals the kernels table's total; groups
 * are sorted by GPU time (descending), ties by stack id, and within a group its kernels
 * likewise (ties by name id). The result owns its arrays and the frames handle; the view's model
 * must outlive it. */
#ifndef TP_AN_STACKS_H
#define TP_AN_STACKS_H

#include <stddef.h>
#include <stdint.h>

#include "tp_an_frames.h"
#include "tp_an_view.h"

#define TP_AN_STACK_DEPTH_DEFAULT 5 /* frames per group unless asked (--stack-depth) */
#define TP_AN_STACK_DEPTH_MAX 64

/* One kernel name within a group. */
typedef struct {
    uint32_t name; /* string pool id */
    size_t count;
    int64_t gpu_ns;
} tp_an_stack_kernel;

/* One group: the stacks whose first frames read the same. */
typedef struct {
    uint32_t stack;            /* a stack of the group (its lowest id): frames from there */
    const tp_an_frame *frames; /* the group's frames, innermost first (owned by fx) */
    size_t n_frames;           /* <= depth */
    size_t count;              /* GPU ops launched from the group's stacks */
    int64_t gpu_ns;            /* their GPU time */
    tp_an_stack_kernel *k;     /* by GPU time, descending */
    size_t n_k;
} tp_an_stack_row;

typedef struct {
    int depth;
    tp_an_stack_row *s; /* by GPU time, descending */
    size_t n;
    size_t n_ops;    /* every GPU op counted, with a stack or not */
    int64_t gpu_ns;  /* their GPU time (the kernels table's total) */
    size_t no_stack; /* ops whose launch call has no stack (or no launch call in the view) */
    int64_t no_stack_ns;
    tp_an_frames *fx; /* the frames the rows point into */
} tp_an_stacks;

/* 1 when view row i is a GPU op this analysis charges (one the kernels table counts). */
int tp_an_stacks_counted(const tp_an_view *v, size_t i);

/* The stack of the CPU call that launched view row i (its correlation link); 0: none. */
uint32_t tp_an_stacks_launch(const tp_an_view *v, size_t i);

/* Groups the GPU ops of view `v` by the first `depth` frames of their launching stacks
 * (depth <= 0: TP_AN_STACK_DEPTH_DEFAULT; more than TP_AN_STACK_DEPTH_MAX: that) into *out
 * (overwritten). Symbolizes unless v->opts.no_symbols. Aborts on out of memory. */
void tp_an_stacks_run(const tp_an_view *v, int depth, tp_an_stacks *out);

/* Frees what tp_an_stacks_run allocated; a zeroed result or NULL is a no-op. */
void tp_an_stacks_free(tp_an_stacks *s);

#endif
