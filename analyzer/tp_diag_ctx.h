/* tp_diag_ctx: the diagnosis of one rank in progress, shared by every rule.
 *
 * Built once before the rules run (tp_diag_ctx_init): the training threads (those whose
 * calls launched kernels), the steps and the analysis window, and merged interval sets
 * (tp_an_ivset) clipped to the window: device busy, host time blocked in syncs and
 * inside data-loading ranges on the training threads, kernels, copies; then the device idle
 * split by what the host was doing. Rules read these, visit the view's rows through
 * TP_DIAG_FOR_ROWS (each model row once, even when the HTA-compatible view repeats it, so
 * sums are not inflated), classify rows with the shared predicates below, and write their
 * finding through tp_diag_add / tp_diag_put_metric / tp_diag_cat. No count here is capped: the
 * threads, names and texts grow as needed. Internal to the diagnosis (tp_diagnose.c and the
 * tp_diag_*.c rule families). */
#ifndef TP_DIAG_CTX_H
#define TP_DIAG_CTX_H

#include <stddef.h>
#include <stdint.h>

#include "tp_an_host.h"
#include "tp_an_ivset.h"
#include "tp_an_memuse.h"
#include "tp_diagnose.h"
#include "tp_an_frames.h"

#define TP_DIAG_MIN_SEVERITY 0.03 /* findings explaining less are left out */

/* What sync-stall and launch-bound add when the program ran with CUDA_LAUNCH_BLOCKING=1
 * (tp_an_env_launch_blocking): every launch then returned only after its kernel finished, so
 * the synchronous launches are the setting's doing before they are the code's. */
#define TP_DIAG_LAUNCH_BLOCKING_NOTE                                                               \
    "CUDA_LAUNCH_BLOCKING=1 was set: every kernel launch waited for its kernel to finish, which "  \
    "by itself makes launches synchronous"
#define TP_DIAG_LAUNCH_BLOCKING_FIX                                                                \
    "unset CUDA_LAUNCH_BLOCKING (a debugging setting) and record again"

/* A thread that launched GPU work, and how many kernels it launched. */
typedef struct {
    int64_t pid, tid;
    size_t launches;
    size_t first; /* order in which it was first seen (ties for the main thread) */
} tp_diag_thread;

/* The window's device idle, split by the first class that holds for each nanosecond: a
 * training thread blocked in a sync, inside a data-loading range, a short gap between ops
 * (< opts.kernel_wait_ns), or other host work. */
typedef struct {
    int64_t idle, sync, data, shortg, other;
    tp_an_ivset other_set; /* the "other host work" idle itself */
} tp_diag_idle;

struct tp_diag_ctx {
    const tp_an_view *v;
    const tp_rank *r;
    const tp_events *ev;
    tp_diagnosis *out;
    uint8_t *seen;   /* model row visited by the current pass (unused when rows_once) */
    int rows_once;   /* each model row is in the view at most once (native: the view's
                        rows ascend; any untrimmed view): no pass needs seen, nor its
                        clearing */
    size_t *sync_at; /* view rows of the host syncs (tp_diag_is_sync_row and
                        tp_diag_host_sync), each model row once, in view order: found
                        while the sync set is built (win > 0 only) */
    size_t n_sync_at, cap_sync_at;
    size_t *data_at; /* view rows of the data-loading ranges (tp_an_is_range, TP_DIAG_NC_DATA)
                        on the training threads, in TP_DIAG_FOR_ROWS order, found by the same
                        pass (input-bound's rows, less its window test) */
    size_t n_data_at, cap_data_at;
    size_t n_launch_win; /* launch calls of the training threads that start in the window
                            (win > 0 only; launch-bound's count) */
    int gpu_by_time;     /* rows_once, the rows visited in time order and v->gpu_order set: the
                            GPU rows in gpu_order are those TP_DIAG_FOR_ROWS visits, in its
                            order (a pass over the GPU rows alone may read them there) */
    int identity;        /* view row i is model row i, for every model row (native, nothing
                            cut): a pass over a few rows can read the model's side tables */
    tp_diag_thread *th;  /* training threads, sorted by (pid, tid) */
    size_t n_th, cap_th;
    long main_bucket; /* r->threads bucket of the busiest training thread; -1: none */
    int64_t w0, w1, win;
    tp_an_ivset steps, busy, sync, data, kernels, copies; /* normalized, in the window;
        busy is empty once the idle split has read it; kernels holds only the runs that
        overlap a copy when the rows come in time order (all that "copies less kernels", its
        one reader, needs) */
    size_t busy_from;   /* busy's runs in the window are [busy_from, busy.n) until split_idle
                           (clip_sets leaves those before it in place) */
    int64_t drain;      /* sync-stall's drain: the idle gaps that began inside a sync, less data
                           loading, each at most that sync's length (found by the idle split: the
                           device idle is not kept as a set) */
    tp_diag_idle split; /* zero when win == 0 */
    int64_t *step_end;  /* every step's end, ascending (nested steps count once) */
    size_t n_step_end;
    uint8_t *ncls;      /* TP_DIAG_NC_* class of each name id, 0 until first asked */
    size_t n_names;     /* name ids are < n_names */
    tp_an_frames *fx;   /* the rank's stacks as frames, opened on first use (tp_diag_stack) */
    tp_finding *cur;    /* the finding being written (tp_diag_add) */
    int launch_verdict; /* launch-bound fires: 1 / 0; -1 until judged (tp_diag_launch.c,
                           whose two rules both need it) */
    tp_an_memuse *mem;  /* the memory analysis, made on first use by the memory rules
                           (tp_diag_memuse) */
    const tp_an_memuse *mem_given; /* borrowed: the caller's memory analysis of the same
                                      view (tp_diagnose_run_with); NULL: none */
    tp_an_host *host; /* the host analysis, made on first use by the host rules (tp_diag_host) */
    struct tp_an_samples_s *samples; /* the CPU samples, grouped once on first use by the rules
                                        that read them (tp_diag_samples) */
    uint32_t *cpu_call; /* per model row: 1 + tp_diag_cpu_call's answer, 0 for -1 (found for
                           every row in one pass over the correlation index: the rules ask
                           for each kernel's call several times); NULL: call_val instead */
    /* When the view is not the model's rows in order (--compat hta): the answers of the rows
     * on a stream only (the rules ask GPU rows only), 4 bytes each and 1 + 4/64 a model row,
     * not 4 a model row (0.1-0.15 MiB less on the 26-28 MB sets): call_val[call_base[row /
     * 64] + call_off[row]], call_off the row's place among its block of 64's rows on a stream
     * (0xff: not on one) -- an offset a row, no popcount (a library call in this build) */
    uint32_t *call_val, *call_base;
    uint8_t *call_off;
    uint8_t *place_launch; /* per place (tp_events.places): tp_diag_launch_thread of its (pid,
                              tid), found once: the rules ask it for most rows */
};

/* Builds everything above for the rank seen by `v`; findings go to `out` (zeroed here). */
void tp_diag_ctx_init(tp_diag_ctx *d, const tp_an_view *v, tp_diagnosis *out);
void tp_diag_ctx_free(tp_diag_ctx *d);

/* ---- rows ---- */

/* Visits view index i and model row `row` once per model row (a new pass starts with
 * tp_diag_clear_seen). */
#define TP_DIAG_FOR_ROWS(d, i, row)                                                                \
    for (size_t i = 0, row = 0; i < (d)->v->n; i++)                                                \
        if ((row = tp_an_view_row((d)->v, i)),                                                     \
            (d)->rows_once || (!(d)->seen[row] && ((d)->seen[row] = 1)))

void tp_diag_clear_seen(tp_diag_ctx *d);

/* The rank's memory analysis (tp_an_memuse), run once on first use; owned by the context. */
const tp_an_memuse *tp_diag_memuse(tp_diag_ctx *d);

/* The host analysis of d's view (tp_an_host), run once for every host rule. */
const tp_an_host *tp_diag_host(tp_diag_ctx *d);

/* Duration of view index i, never < 0: tp_diag_vend less its start, with no start read. */
static inline int64_t tp_diag_vdur(const tp_an_view *v, size_t i) {
    int64_t d = tp_an_view_dur(v, i);
    return d > 0 ? d : 0;
}

/* End of view index i, never before its start. */
static inline int64_t tp_diag_vend(const tp_an_view *v, size_t i) {
    return tp_an_view_ts(v, i) + tp_diag_vdur(v, i);
}

/* Name classes, computed once per name id (the string tests are the costly part of a pass). */
#define TP_DIAG_NC_KNOWN 1u
#define TP_DIAG_NC_STEP 2u /* "step", "train_step", "ProfilerStep#N", ... */
#define TP_DIAG_NC_DATA 4u /* data loading: "dataloader", "get_batch", ... */
#define TP_DIAG_NC_SYNC 8u /* "...Synchronize..." */
#define TP_DIAG_NC_WAIT 16u

unsigned tp_diag_name_class_new(const tp_diag_ctx *d, size_t row); /* first ask of a name */

/* Inline, as the two predicates below: the rules ask them for every row, several times. */
static inline unsigned tp_diag_name_class(const tp_diag_ctx *d, size_t row) {
    uint8_t c = d->ncls[d->ev->name[row]];
    return c ? c : tp_diag_name_class_new(d, row);
}

static inline int tp_diag_is_api(uint8_t cat) { /* a CUDA runtime or driver call */
    return cat == TP_CAT_CUDA_RUNTIME || cat == TP_CAT_CUDA_DRIVER;
}

/* A row where the host waits for the device: *Synchronize API calls, CPU-side SYNC records
 * and Kineto's cuda_sync events ("Stream Wait Event" is a device-side wait: left out). */
static inline int tp_diag_is_sync_row(const tp_diag_ctx *d, size_t row) {
    if (tp_diag_is_api(d->ev->cat[row]))
        return (tp_diag_name_class(d, row) & TP_DIAG_NC_SYNC) != 0;
    return d->ev->cat[row] == TP_CAT_CUDA_SYNC && !(tp_diag_name_class(d, row) & TP_DIAG_NC_WAIT);
}

/* A sync row that blocked a training thread. A SYNC record correlated with its API call is
 * the same wait seen from the device: the API row (with its thread) stands for both. */
int tp_diag_host_sync(const tp_diag_ctx *d, size_t row);

/* 1 when (pid, tid) is a training thread (every thread when none launched anything). */
int tp_diag_launch_thread(const tp_diag_ctx *d, int64_t pid, int64_t tid);

/* tp_diag_launch_thread of model row `row`'s (pid, tid). */
static inline int tp_diag_row_launch_thread(const tp_diag_ctx *d, size_t row) {
    return d->place_launch[tp_ev_place_index(d->ev, row)];
}

/* The CPU call that launched GPU row `row` (same correlation, not on a stream), or -1.
 * Inline: asked per kernel by several rules. */
static inline long tp_diag_cpu_call(const tp_diag_ctx *d, size_t row) {
    if (d->cpu_call)
        return (long)d->cpu_call[row] - 1;
    return (long)d->call_val[d->call_base[row >> 6] + d->call_off[row]] - 1;
}

/* ---- findings ---- */

/* a / b, 0 when b <= 0. */
double tp_diag_share(int64_t a, int64_t b);

/* "of step time" or "of the GPU span". */
const char *tp_diag_window_words(const tp_diag_ctx *d);

/* Appends a finding of `rule` with `severity` (clamped to [0, 1]), empty texts and no
 * evidence rows, and makes it the current one (d->cur: tp_diag_range_label records the first
 * range it names). The pointer is valid until the next tp_diag_add. */
tp_finding *tp_diag_add(tp_diag_ctx *d, const tp_diag_rule *rule, double severity);

/* Appends metric `key` (a static string). */
void tp_diag_put_metric(tp_finding *f, const char *key, double value);

/* Appends to finding `f` of `rule` that its figures are lower bounds, when records of a kind
 * the rule needs were dropped (tp_diag_drops.c); nothing otherwise. */
void tp_diag_qualify_drops(tp_diag_ctx *d, tp_finding *f, const tp_diag_rule *rule);

/* Appends printf-formatted text to the heap string *s (NULL: a new one). */
void tp_diag_cat(char **s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
