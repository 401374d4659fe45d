/* tp_diag_rules: the table of diagnosis rules, one row per finding id.
 *
 * A row is {id, function, order, needs, description}: the stable id findings carry, the
 * function that judges it (defined in the family file tp_diag_<family>.c and declared here,
 * from the row), its place among findings of equal severity (0 first), the record kinds its
 * figures come from (a finding whose kinds lost records says it is a lower bound), and one
 * line on what it detects. Rows run in the order listed; a rule never depends on another having run
 * (what two rules share, e.g. whether launch-bound fires, is a function both call).
 *
 * Adding a rule is a row here and its function in a family file; nothing else. Mistakes do
 * not compile: the orders must be 0..N-1, each once (static_assert in tp_diagnose.c); a
 * function named in a row must exist (link error); a rule function without a row has no
 * prototype (-Wmissing-prototypes). test_diag_rules checks the ids are unique. */
#ifndef TP_DIAG_RULES_H
#define TP_DIAG_RULES_H

#include "tp_diagnose.h"
#include "tp_record.h"

/* The record kinds a rule's figures come from (tp_diag_rule.needs): when the collector
 * dropped some of them, the finding says its numbers are lower bounds (tp_diag_drops.c). */
#define TP_DIAG_KIND(k) TP_REC_BIT(TP_REC_##k)
#define TP_DIAG_NEEDS_DEVICE (TP_DIAG_KIND(KERNEL) | TP_DIAG_KIND(MEMCPY) | TP_DIAG_KIND(MEMSET))
#define TP_DIAG_NEEDS_RANGES                                                                       \
    (TP_DIAG_KIND(NVTX_PUSH) | TP_DIAG_KIND(NVTX_POP) | TP_DIAG_KIND(NVTX_START) |                 \
     TP_DIAG_KIND(NVTX_END))
#define TP_DIAG_NEEDS_MEMORY                                                                       \
    (TP_DIAG_KIND(DEVICE_MEM) | TP_DIAG_KIND(HEAP) | TP_DIAG_KIND(REGION) |                        \
     TP_DIAG_KIND(ALLOC_FAIL))

/* X(id, function, order, needs, description) */
#define TP_DIAG_RULES(X)                                                                           \
    /* tp_diag_input.c */                                                                          \
    X("input-bound", tp_diag_input_bound, 2,                                                       \
      TP_DIAG_NEEDS_DEVICE | TP_DIAG_NEEDS_RANGES | TP_DIAG_KIND(API),                             \
      "the device idles while the training thread waits in data-loading ranges")                   \
    /* tp_diag_sync.c */                                                                           \
    X("sync-stall", tp_diag_sync_stall, 4,                                                         \
      TP_DIAG_NEEDS_DEVICE | TP_DIAG_KIND(SYNC) | TP_DIAG_KIND(API),                               \
      "the host blocks on device synchronization and the device runs dry meanwhile")               \
    /* tp_diag_launch.c */                                                                         \
    X("launch-bound", tp_diag_launch_bound, 5, TP_DIAG_KIND(KERNEL) | TP_DIAG_KIND(API),           \
      "tiny kernels: the device waits on the host's per-launch overhead")                          \
    X("low-utilization", tp_diag_low_utilization, 8, TP_DIAG_NEEDS_DEVICE | TP_DIAG_KIND(API),     \
      "the device idles while the host does other work (unless launch-bound explains it)")         \
    /* tp_diag_copies.c */                                                                         \
    X("pageable-h2d", tp_diag_pageable_h2d, 3, TP_DIAG_KIND(MEMCPY) | TP_DIAG_KIND(API),           \
      "host-to-device copies from pageable memory")                                                \
    X("sync-h2d", tp_diag_sync_h2d, 6, TP_DIAG_KIND(MEMCPY) | TP_DIAG_KIND(API),                   \
      "synchronous host-to-device copies from non-pageable memory block the host")                 \
    X("copy-not-overlapped", tp_diag_copy_not_overlapped, 7, TP_DIAG_NEEDS_DEVICE,                 \
      "copies run while no kernel runs on any stream")                                             \
    /* tp_diag_memory.c */                                                                         \
    X("fragmentation-oom", tp_diag_fragmentation_oom, 0, TP_DIAG_NEEDS_MEMORY,                     \
      "an allocation failed although enough memory was free, in pieces too small")                 \
    X("oom", tp_diag_oom, 1, TP_DIAG_NEEDS_MEMORY,                                                 \
      "an allocation failed: the device ran out of memory")                                        \
    X("memory-growth", tp_diag_memory_growth, 9, TP_DIAG_NEEDS_MEMORY,                             \
      "allocated device memory keeps rising across steps")                                         \
    /* tp_diag_comm.c */                                                                           \
    X("exposed-comm", tp_diag_exposed_comm, 11, TP_DIAG_KIND(KERNEL),                              \
      "collective kernels run with no computation alongside: the device waits on communication")   \
    /* tp_diag_drops.c */                                                                          \
    X("dropped-records", tp_diag_dropped_records, 10, 0,                                           \
      "the collector dropped records while recording: every figure is a lower bound")              \
    /* tp_diag_host.c: ranks without device activity */                                            \
    X("host-input-bound", tp_diag_host_input_bound, 12, TP_DIAG_NEEDS_RANGES,                      \
      "no device: data loading takes >= 30 % of the steps")                                        \
    X("host-overhead", tp_diag_host_overhead, 13, TP_DIAG_NEEDS_RANGES,                            \
      "no device: Python and per-op dispatch outside any operator dominate the steps")             \
    X("host-step-gaps", tp_diag_host_step_gaps, 14, TP_DIAG_NEEDS_RANGES,                          \
      "no device: the loop spends >= 30 % of step time between its steps, with no range open")     \
    /* tp_diag_steps.c */                                                                          \
    X("step-spikes", tp_diag_step_spikes, 15, TP_DIAG_NEEDS_RANGES,                                \
      "a few steps take >= 2x the median and their excess is >= 10 % of step time")                \
    /* tp_diag_cpu.c */                                                                            \
    X("cpu-contention", tp_diag_cpu_contention, 16, TP_DIAG_KIND(SAMPLE),                          \
      "the step thread is ready to run but waits for a CPU (sampled)")

#define TP_DIAG_RULE_PROTO(id, fn, order, needs, description)                                      \
    void fn(tp_diag_ctx *d, const tp_diag_rule *self);
TP_DIAG_RULES(TP_DIAG_RULE_PROTO)
#undef TP_DIAG_RULE_PROTO

#endif
