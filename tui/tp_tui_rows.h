/* tp_tui_rows: a Timeline lane's events split into rows by nesting level.
 *
 * A thread's rows come from the model's nesting (tp_ev_depth: NVTX ranges, CPU ops,
 * Python functions, API calls, outermost at level 0); a stream's kernels and copies are
 * placed greedily on the first level where they overlap nothing before them (one level when
 * the stream serializes, as streams do). Each level keeps its rows by start time and a
 * running maximum of their ends, so the rows visible in any time window are found by binary
 * search: drawing a level costs O(cells · log rows), whatever the trace's size (the
 * level-of-detail rule: a cell shows one bar or one glyph, never every op inside it). */
#ifndef TP_TUI_ROWS_H
#define TP_TUI_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "tp_model.h"

typedef struct {
    uint32_t *rows;  /* model rows at this level, sorted by ts */
    int64_t *maxend; /* maxend[i] = the latest end among rows[0..i] (non-decreasing) */
    int64_t *cumdur; /* cumdur[i] = the durations of rows[0..i) summed (n + 1 entries) */
    size_t n;
} tp_tui_level;

/* Splits the n model rows `rows` (sorted by ts) of one lane into levels: by tp_ev_depth for a
 * thread (is_stream 0), greedily for a stream. *out gets *n_out levels (at least one; free
 * with tp_tui_levels_free). Aborts on out of memory. */
void tp_tui_levels_build(const tp_events *ev, const uint32_t *rows, size_t n, int is_stream,
                         tp_tui_level **out, int *n_out);

/* Frees n levels and the array. NULL: no-op. */
void tp_tui_levels_free(tp_tui_level *lv, int n);

/* Index of the first row of `lv` that may reach time t or later: the first i with
 * maxend[i] >= t (every row before it ends before t); lv->n when none. */
size_t tp_tui_level_seek(const tp_tui_level *lv, int64_t t);

/* Index of the first row of `lv` that starts at or after time t; lv->n when none. */
size_t tp_tui_level_until(const tp_tui_level *lv, const tp_events *ev, int64_t t);

/* How much of [a, b) the rows of `lv` cover (ns, the rows taken as not overlapping, which
 * a level's rows are; clipped to b - a) and how many reach into it (*touched), in two binary
 * searches: a collapsed lane's busy glyph per cell costs O(log n). */
int64_t tp_tui_level_busy(const tp_tui_level *lv, const tp_events *ev, int64_t a, int64_t b,
                          size_t *touched);

/* The row of `lv` best matching time t: one that contains t (the latest starting), else the
 * nearest by distance; -1 for an empty level. */
long tp_tui_level_at(const tp_tui_level *lv, const tp_events *ev, int64_t t);

/* Position of model row `row` in lv->rows, -1 when absent (binary search by ts). */
long tp_tui_level_find(const tp_tui_level *lv, const tp_events *ev, uint32_t row);

#endif
