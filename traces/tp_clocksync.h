/* tp_clocksync: what a trace's CLOCK_SYNC records say about its clock, read once for every
 * consumer (the model's loader, the merged exports), so that every front end puts a trace on
 * the job clock by the same rule.
 *
 * The collector writes a CLOCK_SYNC pair (trace clock, CLOCK_REALTIME) when the trace starts
 * and another when it ends (docs/trace-format.md). Each pair gives an offset `realtime - ts`;
 * the first pair is the one a trace is aligned by (realtime = ts + first_ns), the last an
 * independent estimate of the same offset taken later, which bounds how far the alignment
 * drifted over the trace (docs/analyzer.md, "Ranks on one clock"). */
#ifndef TP_CLOCKSYNC_H
#define TP_CLOCKSYNC_H

#include <stddef.h>
#include <stdint.h>

#include "tp_reader.h"

typedef struct {
    size_t n_pairs;          /* CLOCK_SYNC records read (0: none, the fields below are 0) */
    int64_t first_ns;        /* realtime - ts of the first pair */
    int64_t last_ns;         /* realtime - ts of the last pair (== first_ns with one pair) */
    uint64_t uncertainty_ns; /* the larger uncertainty the two pairs were taken with */
} tp_clocksync;

/* Reads the CLOCK_SYNC records of `r` into *out (all zero when the trace has none). */
void tp_clocksync_read(const tp_reader *r, tp_clocksync *out);

#endif
