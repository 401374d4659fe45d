/* tp_diag_source: which range a finding comes from.
 *
 * A finding names the range behind its worst offenders: the innermost enclosing range
 * (tp_an_enclosing, TP_AN_RANGES_ALL) of each offending call, weighted by time, "blamed"
 * per range name; or the range open on the main training thread at a moment. Labels give
 * the range and its parent ("range 'forward conv1' in 'step'"). A blame weighs every name it
 * is given (a limit of 32 named the wrong range on traces with many small ranges, e.g. the
 * trainer's launch-bound run). Internal to the diagnosis. */
#ifndef TP_DIAG_SOURCE_H
#define TP_DIAG_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "tp_an_enclosing.h"
#include "tp_an_stats.h"
#include "tp_diag_ctx.h"

/* Time per range name, names in the order first blamed. */
typedef struct {
    size_t n, cap;
    long *row;      /* a representative range row per name */
    uint32_t *name; /* the name's string id */
    int64_t *ns;
    uint32_t *slot; /* per name id: index + 1 into the arrays above; 0: not blamed yet */
} tp_diag_blame;

/* Innermost range enclosing model row `row` (not itself), or -1. */
static inline long tp_diag_enclosing(const tp_diag_ctx *d, long row) {
    return tp_an_enclosing_row(d->ev, row, TP_AN_RANGES_ALL);
}

/* Innermost range on the main training thread that contains time t (model times), or -1. */
long tp_diag_range_at(const tp_diag_ctx *d, int64_t t);

/* Appends "range 'x' in 'y'" for range row `p` (its innermost two levels; a recursive
 * caller of the same name is skipped) to *buf; the current finding's range_row becomes `p`
 * unless it names one already. */
void tp_diag_range_label(const tp_diag_ctx *d, long p, char **buf);

/* tp_diag_blame_add for a name not blamed yet (or the first blame). */
void tp_diag_blame_new(const tp_diag_ctx *d, tp_diag_blame *bl, long range_row, int64_t ns);

/* Adds `ns` to the name of range row `range_row` (nothing when < 0). `bl` starts zeroed.
 * Inline for a name blamed before (launch-bound blames per kernel: a quarter million calls
 * on the 2,000 step launch-bound trace, nearly all of them repeats). */
static inline void tp_diag_blame_add(const tp_diag_ctx *d, tp_diag_blame *bl, long range_row,
                                     int64_t ns) {
    if (range_row < 0)
        return;
    uint32_t k = bl->slot ? bl->slot[d->ev->name[range_row]] : 0;
    if (k)
        bl->ns[k - 1] = tp_an_add(bl->ns[k - 1], ns);
    else
        tp_diag_blame_new(d, bl, range_row, ns);
}

int64_t tp_diag_blame_sum(const tp_diag_blame *bl);

/* Index of the name with the most time (the first blamed among equals); 0 when empty. */
size_t tp_diag_blame_top(const tp_diag_blame *bl);

/* Appends "range 'x' in 'y' (62% of <what>)" for the top name to *buf, then up to two
 * runners-up over 10% as ", 'z' (20%)"; says "spread over N ranges; most in" first when the
 * top name has under 20% of `total`. Nothing when nothing was blamed. */
void tp_diag_blame_source(const tp_diag_ctx *d, const tp_diag_blame *bl, int64_t total,
                          const char *what, char **buf);

void tp_diag_blame_free(tp_diag_blame *bl);

#endif
