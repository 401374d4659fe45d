/* tp_tui_data: what the TUI shows about one rank, computed once from the analyzer.
 *
 * The numbers come from the analyzer's public analyses (tp_an_*), run in native mode, so
 * the TUI and `trainprof report` always agree; this module only arranges them: the three
 * tables (kernels, ranges, copies), the timeline lanes (one per GPU stream, then one per
 * CPU thread, as rows of the model's stream and thread indexes) and the lookups behind the
 * timeline cursor. The model must outlive the data. */
#ifndef TP_TUI_DATA_H
#define TP_TUI_DATA_H

#include "tp_an_idle.h"
#include "tp_an_kernels.h"
#include "tp_an_memory.h"
#include "tp_an_nvtx.h"
#include "tp_an_temporal.h"
#include "tp_an_view.h"
#include "tp_model.h"
#include "tp_tui_table.h"

typedef struct {
    int is_stream;
    int64_t key;          /* stream id or tid */
    char label[48];       /* "stream 7", "thread 1234" */
    const uint32_t *rows; /* model rows, sorted by ts */
    size_t n;
} tp_tui_lane;

typedef struct {
    const tp_model *m;
    const tp_rank *r;
    tp_an_view v;
    tp_an_temporal t;
    tp_an_idle idle;
    tp_an_kernels k;
    tp_an_memory mem;
    tp_an_nvtx nv;
    int64_t idle_split[TP_IDLE_COUNT]; /* summed over streams */
    int64_t t_first, t_last;           /* first start and last end of any event of the rank */
    tp_tui_lane *lanes;
    size_t n_lanes;
    tp_tui_table kernels, ranges, copies;
} tp_tui_data;

/* Runs the analyses for rank `r` of `m` and builds tables and lanes. Aborts on OOM. */
void tp_tui_data_build(tp_tui_data *d, const tp_model *m, const tp_rank *r);
void tp_tui_data_free(tp_tui_data *d);

/* The model row of lane `l` best shown for time [a, b): among the rows overlapping it
 * (a zero-length row overlaps when a <= ts < b), the deepest (innermost range), then the
 * one overlapping most. -1 when none. */
long tp_tui_data_op_at(const tp_tui_data *d, const tp_tui_lane *l, int64_t a, int64_t b);

/* The CPU call that launched GPU row `row` (same correlation, stream -1; launch calls
 * preferred). -1 when none or when `row` is not a GPU row. */
long tp_tui_data_launcher(const tp_tui_data *d, long row);

/* The innermost annotation (NVTX range) enclosing CPU row `row`, itself included. -1: none. */
long tp_tui_data_range_of(const tp_tui_data *d, long row);

#endif
