/* tp_diag_rank_rules: the table of cross-rank rules, one row per finding id.
 *
 * The companion of tp_diag_rules.h for what only the ranks side by side show: a row is
 * {id, function, description}; the functions live in tp_diag_ranks.c and judge the rows and
 * medians of a tp_an_ranks (tp_an_ranks.h), never a trace, so `report` and `merge` share
 * them. They are a table of their own because a per-rank rule sees one rank's view
 * (tp_diag_ctx) and these see every rank's summary. Rows run in the order listed; ids are
 * unique across both tables (test_diag_rules). */
#ifndef TP_DIAG_RANK_RULES_H
#define TP_DIAG_RANK_RULES_H

#include "tp_an_ranks.h"

/* X(id, function, description) */
#define TP_DIAG_RANK_RULES(X)                                                                      \
    X("straggler", tp_diag_rank_straggler,                                                         \
      "a rank's own work per step (outside waits in collectives) is >= 1.2x the median rank's")    \
    X("collective-wait", tp_diag_rank_collective_wait,                                             \
      "ranks wait in collectives (exposed communication >= 1.5x the least) for the last one")      \
    X("memory-imbalance", tp_diag_rank_memory_imbalance,                                           \
      "a rank's peak allocated device memory is >= 1.2x the median rank's: sharding imbalance")    \
    X("input-straggler", tp_diag_rank_input_straggler,                                             \
      "a rank's data loading per step is >= 1.5x the other ranks' median: the others wait for it") \
    X("cpu-oversubscribed", tp_diag_rank_cpu_oversubscribed,                                       \
      "the ranks on one machine want more CPUs at a time than it has (sampled)")

#define TP_DIAG_RANK_RULE_PROTO(id, fn, description)                                               \
    void fn(tp_an_ranks *x, const tp_an_rank_rule *self);
TP_DIAG_RANK_RULES(TP_DIAG_RANK_RULE_PROTO)
#undef TP_DIAG_RANK_RULE_PROTO

#endif
