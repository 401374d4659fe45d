/* tp_tui_data: what the TUI shows about one rank, computed from the analyzer when first needed.
 *
 * The numbers come from tp_rank_analysis, the same call `trainprof report` makes, under the
 * options the TUI was given (native mode by default), so the TUI and the report always
 * agree; this module only arranges them: the three tables (kernels, ranges, copies), the
 * timeline lanes (one per GPU stream, then one per CPU thread, as rows of the model's stream
 * and thread indexes) and the lookups behind the timeline cursor. The model must outlive the
 * data. Each part is computed the first time a view asks for it (tp_tui_data_need): on a
 * trace of millions of events the first frame of one view costs only what that view shows
 * (the diagnosis alone can take seconds, the timeline's levels as long). */
#ifndef TP_TUI_DATA_H
#define TP_TUI_DATA_H

#include "tp_an_ranks.h"
#include "tp_an_view.h"
#include "tp_model.h"
#include "tp_rank_analysis.h"
#include "tp_tui_rows.h"
#include "tp_tui_table.h"

typedef struct {
    int is_stream;
    int64_t key;          /* stream id or tid */
    int64_t pid;          /* threads: the process (a rank may hold several, tp_job) */
    size_t proc;          /* threads: its place in the rank's processes (their order) */
    char label[48];       /* "stream 7", "thread 1234" */
    char prefix[8];       /* drawn before the label or name: "w " for a worker process's
                             thread, indented one space per level below the first */
    const uint32_t *rows; /* model rows, sorted by ts */
    size_t n;
    tp_tui_level *lv; /* the rows by nesting level (tp_tui_rows), n_lv >= 1 */
    int n_lv;
    /* threads sampled by `record --sample` (a lane of its own for one with samples and no
     * event: a DataLoader worker, a native thread): its samples (indices in r->samples) in
     * time order, and their CPU clocks summed (n_samp + 1: cum[i] = the first i's), for its
     * CPU share per cell (tp_tui_data_lane_cpu) */
    uint32_t *samp;
    int64_t *samp_cum;
    size_t n_samp;
    int native; /* its samples say it is no thread of the interpreter */
} tp_tui_lane;

typedef struct {
    const tp_model *m;
    const tp_rank *r;
    tp_an_opts opts;    /* the options the analyses run under */
    tp_an_drops drops;  /* what the collector lost (the title bar), known from tp_tui_data_open
                           on; a.drops equals it once the view is built */
    tp_rank_analysis a; /* the view, the analyses the views show, diagnosis */
    int64_t idle_split[TP_IDLE_COUNT]; /* summed over streams */
    int64_t t_first, t_last;           /* first start and last end of any event of the rank */
    uint32_t n_names;                  /* 1 + the largest name id of the rank's rows */
    tp_tui_lane *lanes;
    size_t n_lanes;
    tp_tui_table kernels, ranges, copies;
    unsigned ready;         /* the parts computed so far: TP_RA_* bits, TP_TUI_VIEW, TP_TUI_LANES */
    const tp_an_ranks *job; /* the job's ranks compared (the Ranks view), owned by the app
                               (tp_tui), which computes it once for every rank: valid once the
                               app says TP_TUI_RANKS is ready; NULL outside the app */
} tp_tui_data;

/* Parts for tp_tui_data_need besides the TP_RA_* analyses, as bits above theirs: the timeline's
 * lanes (and their levels, n_names), and the analyses' view of the rank (a.v), which every
 * analysis needs (so asking for one brings it) and the Timeline does not. */
#define TP_TUI_LANES (1u << 31)
#define TP_TUI_VIEW (1u << 30)
/* The job's ranks compared (tp_an_ranks_run over every rank of the model): a part of the app's
 * (tp_tui), not of one rank's data, computed once; tp_tui_data_need ignores it. */
#define TP_TUI_RANKS (1u << 29)

/* Takes rank `r` of `m` and options `o` (NULL: defaults, native mode); computes the drops and
 * the rank's time span (t_first, t_last), nothing else yet (not even the view). */
void tp_tui_data_open(tp_tui_data *d, const tp_model *m, const tp_rank *r, const tp_an_opts *o);

/* Computes the parts in `which` (TP_RA_* analyses, TP_TUI_VIEW, TP_TUI_LANES) not computed yet
 * (and the view first when an analysis needs it), and what
 * the views draw from them (idle split, the kernels / ranges / copies tables, the lanes). The
 * results are those an eager run would give: each analysis reads only the view. */
void tp_tui_data_need(tp_tui_data *d, unsigned which);

/* tp_tui_data_open, then every part the views show (the live view, tests). */
void tp_tui_data_build(tp_tui_data *d, const tp_model *m, const tp_rank *r, const tp_an_opts *o);
void tp_tui_data_free(tp_tui_data *d);

/* The row of the ranges table (= index in d->a.nv) that lists annotation row `row` (the
 * range with its name); -1 when `row` is not an annotation or not listed. */
long tp_tui_data_range_index(const tp_tui_data *d, long row);

/* The model row of lane `l` best shown for time [a, b): among the rows overlapping it
 * (a zero-length row overlaps when a <= ts < b), the deepest (innermost range), then the
 * one overlapping most. -1 when none. */
long tp_tui_data_op_at(const tp_tui_data *d, const tp_tui_lane *l, int64_t a, int64_t b);

/* The CPU call that launched GPU row `row` (same correlation, stream -1; launch calls
 * preferred). -1 when none or when `row` is not a GPU row. */
long tp_tui_data_launcher(const tp_tui_data *d, long row);

/* The innermost annotation (NVTX range) enclosing CPU row `row`, itself included. -1: none. */
long tp_tui_data_range_of(const tp_tui_data *d, long row);

/* The first GPU row that CPU row `row` launched (same correlation, on a stream); -1: none. */
long tp_tui_data_launched(const tp_tui_data *d, long row);

/* The CPU time sampled thread lane `l` got in [a, b): each sample's CPU clock spread evenly
 * over its period, the periods in [a, b) summed (two binary searches and the partial periods
 * at the ends: O(log n) a cell). 0 for a lane without samples. */
int64_t tp_tui_data_lane_cpu(const tp_tui_data *d, const tp_tui_lane *l, int64_t a, int64_t b);

/* The lane showing model row `row` (-1: none) and its level there (*level, may be NULL). */
long tp_tui_data_lane_of(const tp_tui_data *d, long row, int *level);

/* The step around `row`: the outermost annotation enclosing it on its thread (a GPU row:
 * around the call that launched it), itself included; -1: none. */
long tp_tui_data_step_of(const tp_tui_data *d, long row);

/* The next (dir > 0) or previous annotation after `step` on its lane and level with its
 * name; -1: none. */
long tp_tui_data_step_next(const tp_tui_data *d, long step, int dir);

/* Rows whose category is in mask `cats` (bits 1 << tp_cat): the k-th longest (ties: the
 * earlier first) of those named `name`, k taken modulo their count; -1 when none. What a
 * table view's Enter shows on the Timeline (Kernels: kernels, copies and memsets; Ranges:
 * annotations; any later view: its own categories). */
long tp_tui_data_nth_longest(const tp_tui_data *d, uint32_t name, unsigned cats, size_t k);

/* The next (dir > 0) or previous row after time t (ties: after row `after`) whose name
 * contains `q` (case-insensitive), wrapping around the rank; -1 when none. */
long tp_tui_data_find(const tp_tui_data *d, const char *q, int64_t t, long after, int dir);

/* The name of the process with `pid` in the rank ("" when unknown) and its role ("main",
 * "worker"; NULL when the rank holds no process records). */
const char *tp_tui_data_proc_name(const tp_tui_data *d, int64_t pid, char *buf, size_t n,
                                  const char **role);

#endif
