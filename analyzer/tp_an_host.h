/* tp_an_host: what the host did, judged without any device activity: the training steps and
 * what filled them, and the threads.
 *
 * Steps are the CPU-side ranges named like a step ("step", "train_step", "training_step",
 * "ProfilerStep#N"; tp_an_host_step_name); a step nested in a step is the same step. The
 * window is the first step's start to the last step's end (the rank's CPU span when it has
 * no steps), so data loading between steps (a DataLoader's __next__ before each `step`
 * range) counts as much as data loading inside them. Inside the window, on the threads that
 * hold steps (every thread without steps): the union of the data-loading ranges
 * (tp_an_host_data_name, or named "data"), the union of the framework ops (Kineto cpu_op)
 * outside them, and the time with no recorded range open (no step, annotation, op or Python
 * function, but for ranges that hold two steps or more, an epoch's: between steps, where a
 * `for batch in loader` loop that annotates only its steps waits for the next batch).
 * Threads: every (pid, tid) with CPU-side rows, with its rows' count and the union of their
 * intervals (busy), busiest first. Exact model ns (never HTA-rounded). */
#ifndef TP_AN_HOST_H
#define TP_AN_HOST_H

#include "tp_an_stats.h"
#include "tp_an_view.h"

typedef struct {
    int64_t pid, tid;
    size_t n_events;
    int64_t busy;        /* union of its rows' intervals, ns */
    int64_t first, last; /* first start, last end */
} tp_an_host_thread;

typedef struct {
    size_t n_steps;
    tp_an_describe_t step_ns;   /* step lengths (outermost steps), ns */
    int64_t w0, w1;             /* the window (see above); w0 == w1: nothing on the CPU */
    int64_t data_ns;            /* data loading in the window, on the step threads */
    int64_t ops_ns;             /* framework ops in the window outside data loading */
    size_t n_ops;               /* framework op rows (not empty) in the window, step threads */
    int64_t unrecorded_ns;      /* in the window with no recorded range open on the step
                                   threads: between steps, never inside one (a step is a range) */
    uint32_t data_name;         /* the data-loading range name with the most time; 0: none */
    uint32_t step_name;         /* the name of the step that starts first; 0: no steps */
    int64_t step_pid, step_tid; /* its thread (the step thread of a rank without device) */
    size_t n_threads;
    tp_an_host_thread *th; /* busiest first */
} tp_an_host;

/* The rest of the window: inside recorded ranges, neither data loading nor framework ops
 * (Python code, dispatch, waits inside the steps). The one definition the report, its HTML
 * and the diagnosis read. */
static inline int64_t tp_an_host_other_ns(const tp_an_host *h) {
    return h->w1 - h->w0 - h->data_ns - h->ops_ns - h->unrecorded_ns;
}

/* Fills `out` (overwritten; owns its arrays until tp_an_host_free) from view `v`'s CPU-side
 * rows. Aborts on out of memory, like the rest of the analyzer. */
void tp_an_host_run(const tp_an_view *v, tp_an_host *out);

/* Frees what `out` owns and zeroes it; NULL is a no-op. */
void tp_an_host_free(tp_an_host *out);

/* 1 when `name` names a training step ("step", "train_step", "training_step", "train step",
 * any case; "ProfilerStep#N"). The diagnosis finds its steps with the same test. */
int tp_an_host_step_name(const char *name);

/* 1 when `name` names data loading: "dataloader", "get_batch", "data wait", ... anywhere in
 * it, any case (the diagnosis' test). The host window also takes a range named exactly
 * "data" (any case): inside a step, with no device to wait, nothing else is meant by it. */
int tp_an_host_data_name(const char *name);

/* The data-loading ranges (tp_an_host_window_data_name) of thread (pid, tid) in view `v`,
 * merged, ascending, into *lo / *hi (allocated; free them); returns their count. */
size_t tp_an_host_data_ranges(const tp_an_view *v, int64_t pid, int64_t tid, int64_t **lo,
                              int64_t **hi);

/* The host window's data-loading test: tp_an_host_data_name, or exactly "data" (any case). */
int tp_an_host_window_data_name(const char *name);

#endif
