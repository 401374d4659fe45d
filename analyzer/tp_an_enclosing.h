/* tp_an_enclosing: which range encloses an event, or a moment on a thread.
 *
 * The one "enclosing range" query of the analyses, the diagnosis and the TUI. It reads the
 * nesting the model resolved once (tp_events.parent: the innermost enclosing CPU-side row on
 * the same thread) and walks up to the first row whose category is one of `kinds`:
 * NVTX ranges and record_function annotations only (TP_AN_RANGES_ANNOTATIONS: what the
 * Ranges analysis and the TUI name), or also framework ops and Python functions
 * (TP_AN_RANGES_ALL: what the diagnosis names as a source). Runtime calls and kernels are
 * never ranges. Queries are O(nesting depth), O(log n) more for a moment in time; pure. */
#ifndef TP_AN_ENCLOSING_H
#define TP_AN_ENCLOSING_H

#include <stddef.h>
#include <stdint.h>

#include "tp_model.h"

/* Sets of range categories (1 << tp_cat), for `kinds`. */
#define TP_AN_RANGES_ANNOTATIONS (1u << TP_CAT_USER_ANNOTATION)
#define TP_AN_RANGES_ALL                                                                           \
    (TP_AN_RANGES_ANNOTATIONS | (1u << TP_CAT_CPU_OP) | (1u << TP_CAT_PYTHON_FUNCTION))
/* Or-ed into `kinds`: the row itself counts when it is such a range. */
#define TP_AN_ENCLOSING_SELF (1u << 31)

/* 1 when a range named `s` is a training step: "ProfilerStep#N", "step", "train_step",
 * "training_step", "train step" (case-insensitive but for ProfilerStep#). The diagnosis's
 * window and the memory timeline's steps both ask this. */
int tp_an_is_step_name(const char *s);

/* The steps among `n` step intervals [a[i], b[i]) (ranges whose name passes
 * tp_an_is_step_name): a step inside another (a "step" range inside ProfilerStep#N) is the
 * same step, so only the outermost count. Writes them by start into *start and *end (arrays
 * of n + 1, allocated here; the caller frees both) and returns their count. The diagnosis's
 * steps and the host's step split both take their steps from here. */
size_t tp_an_outer_steps(const int64_t *a, const int64_t *b, size_t n, int64_t **start,
                         int64_t **end);

/* 1 when category `cat` is one of `kinds` (inline: asked per row by several analyses). */
static inline int tp_an_is_range(uint8_t cat, unsigned kinds) {
    return cat < TP_CAT_COUNT && (kinds & (1u << cat)) != 0;
}

/* The innermost range of `kinds` enclosing model row `row` (the row itself only with
 * TP_AN_ENCLOSING_SELF), -1 when none or row < 0. For a GPU op, ask for its launching CPU
 * call: GPU rows have no parent. Inline: the diagnosis and NVTX ask it per kernel (a call
 * cost as much as the walk, one or two parents up). */
static inline long tp_an_enclosing_row(const tp_events *ev, long row, unsigned kinds) {
    if (row < 0)
        return -1;
    long p = (kinds & TP_AN_ENCLOSING_SELF) ? row : tp_ev_parent(ev, (size_t)row);
    while (p >= 0 && !tp_an_is_range(ev->cat[p], kinds))
        p = tp_ev_parent(ev, (size_t)p);
    return p;
}

/* The innermost range of `kinds` on thread bucket `bucket` of r->threads that contains
 * time `t` (ts <= t < ts + dur), -1 when none. */
long tp_an_enclosing_at(const tp_rank *r, size_t bucket, int64_t t, unsigned kinds);

/* tp_an_enclosing_at for callers that ask about times mostly in ascending order on each
 * thread: *cursor (start it at r->threads.off[bucket]) remembers where the last answer was
 * found, and the search gallops from there (a step or two per call where binary search
 * took twenty); a time before the cursor's restarts it. */
long tp_an_enclosing_at_from(const tp_rank *r, size_t bucket, int64_t t, unsigned kinds,
                             uint32_t *cursor);

#endif
