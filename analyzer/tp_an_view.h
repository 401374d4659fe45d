/* tp_an_view: the rows of one rank that the analyses look at, and when (HTA or native rules).
 *
 * Every analysis runs over a tp_an_view, never over the raw model, so that the choice
 * between the two modes is made once, here:
 *   - native (default): exact nanoseconds; "GPU events" are kernels, copies and memsets
 *     (rows with a stream and a GPU category); nothing is trimmed.
 *   - compat_hta: HTA v0.6.1's rules (docs/analyzer.md): timestamps rounded in µs like HTA
 *     (ceil start, floor end, in doubles) unless no_ns_rounding; profiler-step trimming when
 *     the job has >= 2 distinct ProfilerStep#N names (GPU rows duplicated once per kept CPU
 *     row that shares their correlation, as HTA's merge does); "GPU events" are all kept rows
 *     with stream != -1, whatever their category.
 * Row order: native keeps the model's (time) order; compat_hta uses the file order
 * (tp_ev_load_rows; after trimming, GPU rows first, then CPU rows, as HTA's frame), because
 * HTA's unstable sorts leave equal timestamps in an order that depends on it. A view owns
 * its arrays; the model must outlive it. Where the view's rows are the model's, in order, at
 * its times (native, no window), the view has no start, row or duration column of its own:
 * the accessors below read the model's (18 bytes a row were 5). Exact starts of other views
 * are the model's through the row map, HTA's rounded ones 4 bytes a row (ts32). */
#ifndef TP_AN_VIEW_H
#define TP_AN_VIEW_H

#include <stddef.h>
#include <stdint.h>

#include "tp_model.h"
#include "tp_scratch.h"
#include "tp_symbolize.h"

/* Options shared by all analyses. */
typedef struct {
    int compat_hta;
    int include_last_step;          /* compat_hta: keep CPU events up to the last step's end */
    int no_ns_rounding;             /* compat_hta: keep fractional µs (HTA_DISABLE_NS_ROUNDING) */
    int64_t kernel_wait_ns;         /* idle gap below which it counts as kernel wait (30 µs) */
    int64_t runtime_cutoff_ns;      /* launch calls longer than this are outliers (50 µs) */
    int64_t launch_delay_cutoff_ns; /* launch delays longer than this are outliers (100 µs) */
    int no_symbols;                 /* diagnosis: show stacks as module+offset, never opening
                                       the modules' files (trainprof report --no-symbols) */
    tp_symbolizer *symbolizer;      /* borrowed: the one symbolizer every stack reader of a
                                       report shares, so that each module is opened and each
                                       address resolved once per report (tp_report_write
                                       opens it); NULL: each reader opens its own */
    int ops_by_shapes; /* CPU-op table: one row per (name, input shapes) (--group-by shapes) */
    int ops_by_total;  /* CPU-op table: sorted by total time, not self (--sort-ops total) */
    int stack_depth;   /* launching stacks: frames per group (tp_an_stacks;
                          --stack-depth); 0: TP_AN_STACK_DEPTH_DEFAULT */
    size_t scratch_row_bytes;     /* native ranks: the most bytes per row the view's scratch
                                     keeps between analyses; 0: TP_AN_SCRATCH_ROW_BYTES */
    int64_t window_lo, window_hi; /* window_hi > window_lo: only rows that start in
                                     [window_lo, window_hi) (model ns), as if the trace had
                                     been cut to that window (the TUI's range statistics);
                                     else every row */
} tp_an_opts;

/* The view's kept scratch per row unless the options say otherwise: three columns of int64.
 * More kept pages mean fewer page faults for more resident memory while the view lives
 * (docs/PERFORMANCE.md, native report): `report` keeps twice this, the TUI's views this. */
#define TP_AN_SCRATCH_ROW_BYTES 24

/* Fills `o` with the defaults: native mode, the 30/50/100 µs cutoffs above. */
void tp_an_opts_init(tp_an_opts *o);

/* HTA's kernel types (hta/common/types.py), decided by name only. */
typedef enum {
    TP_KT_COMPUTATION = 0,
    TP_KT_COMMUNICATION = 1,
    TP_KT_MEMORY = 2,
    TP_KT_OTHER = 3,
    TP_KT_COUNT
} tp_ktype;

/* "COMPUTATION", ... */
const char *tp_ktype_name(tp_ktype t);

/* Classifies a kernel name with HTA's regular expressions. */
tp_ktype tp_ktype_of(const char *name);

typedef struct {
    const tp_model *m;
    const tp_rank *r;
    tp_an_opts opts;
    int rank; /* rank number reported (compat: HTA's inference) */
    size_t n;
    const uint32_t *row; /* row in r->ev (a row may appear more than once in compat mode); NULL
                            where view row i is model row i (native, no window: see ts64), 4
                            bytes a row not built; the model's load_rows32 where the view is
                            every model row in that order (compat, nothing trimmed, no
                            window). Read it through tp_an_view_row */
    uint32_t *row_own;   /* the view's own column behind row, else NULL */
    /* The rows' starts (ns; compat_hta: HTA-rounded), in one of three forms, the first
     * non-NULL of ts64, ts_by_row, ts32. Read them through tp_an_view_ts (or
     * tp_an_view_ts_array, tp_an_view_ts_model), never these fields. */
    const int64_t *ts64;      /* by view row, 8 bytes a row: the model's own column (r->ev.ts,
                                 borrowed) where the view's rows are the model's, in order, at
                                 its times; the view's own (ts64_own) where no other form holds
                                 them (--no-ns-rounding's ns, HTA's µs over 2^32 µs) */
    int64_t *ts64_own;        /* the view's column behind ts64, else NULL */
    uint32_t *ts32;           /* HTA's rounded starts (whole µs): ts_base + ts32[i] µs, 4 bytes
                                 a row */
    int64_t ts_base;          /* ns, with ts32: a whole µs at or below every start */
    const int64_t *ts_by_row; /* exact times through the row map (native windows, compat
                                 views of a trace in whole µs): ts_by_row[row[i]], the model's
                                 column (r->ev.ts): no column of the view's own, where an int64
                                 copy was the largest (0.5 MiB of trace_diff_test's, resident
                                 through every analysis) */

    uint8_t *dur8;         /* where every row's end - ts is whole µs (compat_hta: HTA's rounding
                              or a trace in whole µs): end - ts in µs, plus 1 (HTA's rounding
                              can end a row 1 µs before its start), or TP_AN_VIEW_DUR8_WIDE. 98-99
                              % of a Kineto trace's rows last under 254 µs (92 % of
                              param_resnet's): 1 byte a row, and 12 (dur_wide) per longer row,
                              where an int64 end was 8 (1.1 MiB of xdit_sd35's peak); else NULL */
    const uint32_t *dur32; /* else end - ts (ns, never < 0 here) in tp_ev_dur's codes
                              (TP_EV_U32_WIDE and up: in dur_wide): the model's column
                              (r->ev.dur32) where ts is the model's column, else the view's own */
    uint32_t *dur32_own;   /* the view's column behind dur32, else NULL */
    const uint32_t *dur32_narrow; /* dur32 when it holds no wide code (the model's, most
                                     native views): then every duration is its code */
    tp_ev_wide dur_wide;          /* the durations that dur8 or dur32 do not hold, by view row: the
                                     model's (r->ev.wide_dur, borrowed) with its dur32, else the view's
                                     own. Read all of them through tp_an_view_end (or tp_an_view_dur) */
    uint8_t *kind; /* TP_AN_VIEW_GPU for a GPU event (see above), or'ed with its tp_ktype
                      (TP_KT_OTHER for other rows), and TP_AN_VIEW_LINKED_OUT: one byte
                      for the three facts. Read it through tp_an_view_gpu,
                      tp_an_view_ktype and tp_an_view_linked */
    int32_t *link; /* GPU row: view row of its CPU-side correlated event; CPU row: of a GPU
                      event it launched; -1: none in the view. tp_an_view_link */
    size_t n_gpu;
    unsigned gpu_kinds_absent; /* bit t: no GPU row is of kind t (0: not known; a mask of only
                                  such kinds selects nothing) */
    uint32_t *gpu_order;       /* the n_gpu GPU rows by start, when no two of them start at the same
                                  time (then numpy's argsort of any subset of their starts is this
                                  order filtered, and HTA's merges need no sort); else NULL */
    const uint32_t *by_corr;   /* the view rows with a correlation, by (correlation, row),
                                  when the view's rows are the model's in the model's order
                                  (native, no window): the model's correlation index
                                  (tp_rank.by_corr), borrowed, so analyses that group rows by
                                  correlation need no sort of their own; else NULL */
    size_t n_by_corr;
    int by_corr_twos;                /* 1: every run of one correlation in by_corr is two rows (a
                                        launch and its GPU row: all 242 k of lb2k's), found by the
                                        view's links on their way, so that the analyses that walk
                                        by_corr again step by two instead of comparing each next
                                        row's correlation; 0: not known (no by_corr, wide ids) */
    int trimmed;                     /* 1: profiler-step trimming was applied */
    struct tp_an_gpu_sums *gpu_sums; /* the GPU unions' figures per kind mask, found once for
                                        all analyses (tp_an_view_gpu_sum_get); NULL: none kept */
    tp_scratch *scratch; /* the analyses' per-row scratch arrays (tp_an_tmp): blocks given
                            back stay mapped for the next analysis of this view */
} tp_an_view;

/* Builds the view of rank `r` of `m` under `opts` (NULL: defaults). Aborts on out of
 * memory. Free with tp_an_view_free. */
void tp_an_view_build(tp_an_view *v, const tp_model *m, const tp_rank *r, const tp_an_opts *opts);

/* The model columns (TP_EV_DROP_* bits) that no reader of `v` reads once it is built, only
 * its build: for a caller that owns the model and builds no other view of v's rank after
 * it (trainprof report), what it may free then (tp_rank_drop_columns). The load order (a
 * --compat hta view's row order), unless the view's rows are the model's load_rows32. */
unsigned tp_an_view_build_only_columns(const tp_an_view *v);

/* Frees the view's arrays (not the model it points into); NULL is a no-op. */
void tp_an_view_free(tp_an_view *v);

/* A scratch array of n elements (n == 0 allowed) for an analysis of `v`, uninitialised
 * (tp_an_tmp) or zeroed (tp_an_tmp0); give it back with tp_an_tmp_put, never free(). Large
 * ones are reused by the next request of this view (common/tp_scratch). */
static inline void *tp_an_tmp(const tp_an_view *v, size_t n, size_t size) {
    return tp_scratch_get(v->scratch, n, size);
}
static inline void *tp_an_tmp0(const tp_an_view *v, size_t n, size_t size) {
    return tp_scratch_get0(v->scratch, n, size);
}
static inline void tp_an_tmp_put(const tp_an_view *v, void *p) {
    tp_scratch_put(v->scratch, p);
}

/* The figures of one union of GPU rows (tp_an_gpu_union's): its length, summed in run
 * order, the first run's start, the last run's end, the runs. */
typedef struct {
    int64_t len, first, last;
    size_t n;
} tp_an_gpu_sum;

/* The union of the GPU rows whose kind bit is in `kt_mask`, when an analysis of `v` has
 * kept it (1; else 0): temporal, overlap and kernels merge the same kinds (computation in
 * all three), on either analysis thread, and each merge walks every GPU row. _put keeps one
 * (the same figures, whichever thread finds them first). */
int tp_an_view_gpu_sum_get(const tp_an_view *v, unsigned kt_mask, tp_an_gpu_sum *out);
void tp_an_view_gpu_sum_put(const tp_an_view *v, unsigned kt_mask, const tp_an_gpu_sum *s);

/* The view rows of category `c` in view order, from the rank's category index (tp_rank.cats),
 * when the view's rows are the model's, in order (view row i is model row i; native, no
 * window): an analysis that reads a few categories then visits those rows only, not every
 * row to test its category. Else NULL (walk the view). *n: how many (0 with a non-NULL
 * result: none of that category). */
const uint32_t *tp_an_view_cat_rows(const tp_an_view *v, tp_cat c, size_t *n);

/* 1: the view's starts are the model's own column, view row i at model row i's start (its
 * rows are the model's, in order, at its times: native, no window): rows ascend by start. */
static inline int tp_an_view_ts_model(const tp_an_view *v) {
    return v->ts64 && v->ts64 == v->r->ev.ts;
}

/* The view's n_gpu GPU rows in view order, when it has them listed: its rows are the
 * model's, in order (see tp_an_view_cat_rows), where gpu_order, by start, is that order too.
 * Else NULL (walk the view, testing gpu[]). An analysis of the GPU rows alone then visits a
 * third of a launch-bound trace's rows. */
static inline const uint32_t *tp_an_view_gpu_rows(const tp_an_view *v) {
    return v->gpu_order && tp_an_view_ts_model(v) ? v->gpu_order : NULL;
}

/* Name of view row i (never NULL). */
const char *tp_an_view_name(const tp_an_view *v, size_t i);

/* Raw category text of view row i (never NULL). */
const char *tp_an_view_cat(const tp_an_view *v, size_t i);

/* The view's per-row facts, read through these (never the arrays, which may be absent).
 * Each reads its column's pointer from the view and tests it: in a loop that stores to
 * memory that may alias the view (a char, a size_t), that pointer is read again each time,
 * so a hot loop reads a local copy of the view instead (const tp_an_view lv = *v, never
 * passed out), whose pointers stay in registers. */
#define TP_AN_VIEW_GPU 4u /* tp_an_view.kind's bit above the kernel type */
/* tp_an_view.kind's bit for a row whose correlated partner existed before trimming (HTA
 * index_correlation > 0) but is not in the view (link -1): the one case where "linked" is
 * not link >= 0, so a bit of kind, not a byte a row of its own */
#define TP_AN_VIEW_LINKED_OUT 8u
#define TP_AN_VIEW_DUR8_WIDE UINT8_MAX /* tp_an_view.dur8's code: the value is in dur_wide */
_Static_assert(TP_KT_COUNT <= TP_AN_VIEW_GPU, "a kernel type fits below the GPU bit");

/* ts32's unit (ns): a µs, the granularity of HTA's rounded times and of Kineto's own */
#define TP_AN_VIEW_TS32_UNIT 1000

/* The view's starts as an int64 array by view row (ts64), where it has them so: the
 * model's column in the model's order (native, no window), the view's own; else NULL. A hot
 * loop tests it once and runs in two copies, each reading through tp_an_view_ts_with with
 * this array or a constant NULL, so that neither tests it per row (2 instructions a read:
 * +11 M on lb2k, whose view borrows the model's column). */
static inline const int64_t *tp_an_view_ts_array(const tp_an_view *v) {
    return v->ts64;
}
/* Start of view row i (ns, view time), given ts64 = tp_an_view_ts_array(v): the one
 * definition of how a row's start is read. */
static inline int64_t tp_an_view_ts_with(const tp_an_view *v, const int64_t *ts64, size_t i) {
    if (ts64)
        return ts64[i];
    if (v->ts_by_row)
        return v->ts_by_row[v->row[i]];
    return v->ts_base + (int64_t)v->ts32[i] * TP_AN_VIEW_TS32_UNIT;
}
/* Start of view row i (ns, view time). */
static inline int64_t tp_an_view_ts(const tp_an_view *v, size_t i) {
    return tp_an_view_ts_with(v, v->ts64, i);
}

/* The model row of view row i. */
static inline uint32_t tp_an_view_row(const tp_an_view *v, size_t i) {
    return v->row ? v->row[i] : (uint32_t)i;
}
/* tp_an_view_dur of a row that dur8 does not hold (dur32: the view's, NULL with dur8), out
 * of line: a rare row's, or a view whose durations are ns and not all the model's (a
 * window's, HTA's times without rounding). It gets the view's fields, not the view: a hot
 * loop's local copy of the view must not escape (see above). */
int64_t tp_an_view_dur_slow(const uint32_t *dur32, tp_ev_wide w, size_t i);

/* Duration of view row i (end - start; < 0 possible in compat mode), and its end (ns, view
 * time). The model's durations with no wide one (most native views) in one test, as before
 * dur8; two more inline (dur32's wide codes as well as dur8's) made q_step too large for the
 * compiler to inline into tp_an_queue_run_wide_from (+12 M instructions on lb2k). */
static inline int64_t tp_an_view_dur(const tp_an_view *v, size_t i) {
    if (v->dur32_narrow)
        return v->dur32_narrow[i];
    unsigned c = v->dur8 ? v->dur8[i] : TP_AN_VIEW_DUR8_WIDE;
    if (__builtin_expect(c != TP_AN_VIEW_DUR8_WIDE, 1))
        return (int64_t)c * 1000 - 1000;
    return tp_an_view_dur_slow(v->dur8 ? NULL : v->dur32, v->dur_wide, i);
}
static inline int64_t tp_an_view_end_with(const tp_an_view *v, const int64_t *ts64, size_t i) {
    return tp_an_view_ts_with(v, ts64, i) + tp_an_view_dur(v, i);
}
static inline int64_t tp_an_view_end(const tp_an_view *v, size_t i) {
    return tp_an_view_end_with(v, v->ts64, i);
}
/* 1: view row i is a GPU event (see the file comment). */
static inline int tp_an_view_gpu(const tp_an_view *v, size_t i) {
    return (v->kind[i] & TP_AN_VIEW_GPU) != 0;
}
/* 1: model row `row` is a GPU event by the view's rule (see the file comment), as
 * tp_an_view_gpu says of each view row of it: for an analysis that walks the model's rows. */
static inline int tp_an_view_model_gpu(const tp_an_view *v, size_t row) {
    const tp_events *ev = &v->r->ev;
    if (v->opts.compat_hta)
        return tp_ev_stream(ev, row) != -1;
    uint8_t c = ev->cat[row]; /* first: most rows are CPU rows, and the stream is in the place */
    return (c == TP_CAT_KERNEL || c == TP_CAT_MEMCPY || c == TP_CAT_MEMSET) &&
           tp_ev_stream(ev, row) != -1;
}
/* tp_ktype of view row i: TP_KT_OTHER unless a GPU event. */
static inline unsigned tp_an_view_ktype(const tp_an_view *v, size_t i) {
    return v->kind[i] & (TP_AN_VIEW_GPU - 1);
}
/* View row of view row i's correlated partner (see `link`), -1: none. */
static inline int32_t tp_an_view_link(const tp_an_view *v, size_t i) {
    return v->link[i];
}

/* Column accessors through the row map. */
static inline int64_t tp_an_view_stream(const tp_an_view *v, size_t i) {
    return tp_ev_stream(&v->r->ev, tp_an_view_row(v, i));
}
static inline int64_t tp_an_view_corr(const tp_an_view *v, size_t i) {
    return tp_ev_corr(&v->r->ev, tp_an_view_row(v, i));
}
/* 1: view row i had a correlated partner before trimming (see TP_AN_VIEW_LINKED_OUT) */
static inline int tp_an_view_linked(const tp_an_view *v, size_t i) {
    return tp_an_view_link(v, i) >= 0 || (v->kind[i] & TP_AN_VIEW_LINKED_OUT);
}

/* Number of distinct ProfilerStep#N names among the model's events (all ranks). */
size_t tp_an_profiler_step_names(const tp_model *m);

#endif
