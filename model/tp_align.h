/* tp_align: the ranks of a job on one clock.
 *
 * Each rank's timestamps are on its own clock: a native trace's trace clock (close to that
 * machine's CLOCK_MONOTONIC), a Kineto trace's microseconds since its baseTimeNanoseconds (or
 * since 1970 when it has none). The job clock is the reference rank's (the lowest); every
 * other rank gets a shift that puts its times on it, from what both ranks know of the wall
 * clock: realtime = ts + base, base being the first CLOCK_SYNC realtime pair (native) or
 * baseTimeNanoseconds (Kineto, 0 when absent: its ts are wall-clock already), so
 * shift = base(rank) - base(reference). Rows are not moved: the shift is applied where ranks
 * meet (the merged exports, cross-rank comparisons).
 *
 * The alignment is only as good as the clocks it trusts, so each rank also gets an estimate
 * of the offset left after the shift (docs/analyzer.md, "Ranks on one clock"):
 *   - collectives: when the rank and the reference ran the same number of communication
 *     kernels (NCCL), the k-th ends on every rank at nearly the same instant (a collective
 *     completes for all once the last rank's data is in), so the median over k of
 *     end_k(rank) + shift - end_k(reference) is the residual offset;
 *   - otherwise, for two native traces with two CLOCK_SYNC pairs each: how much their
 *     offset moved between the first pair (the alignment) and the last (an independent
 *     one), plus the pairs' uncertainty.
 * A residual above TP_ALIGN_RESIDUAL_LIMIT_NS matters for comparing ranks' timelines. */
#ifndef TP_ALIGN_H
#define TP_ALIGN_H

#include "tp_model.h"

/* Beyond this residual (100 µs, longer than a typical kernel or a small collective), which
 * rank reached a collective first and the merged exports' cross-rank order are uncertain. */
#define TP_ALIGN_RESIDUAL_LIMIT_NS 100000

/* Sets every rank's `clock` (m finished, ranks sorted). With one rank nothing is set. */
void tp_align_ranks(tp_model *m);

/* "clock_sync", "kineto_base", ...: `s` as a JSON value; "reference rank" etc. for text. */
const char *tp_align_source_key(tp_clock_source s);
const char *tp_align_method_key(tp_clock_residual r);

#endif
