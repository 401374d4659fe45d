/* tp_an_samples: CPU time by line, from the sampler's SAMPLE records (`trainprof record
 * --sample`), as py-spy's and Nsight Systems' CPU sampling show it.
 *
 * Each sample holds where a Python thread was (its stack), whether it was on a CPU at that
 * instant, and the wall time since its previous sample: that period is charged to the stack
 * the thread was found at, as on-CPU time when it was running, else as waiting (a lock, I/O,
 * a sleep, a queue, the GPU): the statistical profile of every thread at HZ samples a second
 * (py-spy's, without --idle, is the on-CPU part). The thread's own CPU clock, read at each
 * sample, gives its measured CPU time, which the sampled on-CPU time estimates. Stacks are read as
 * tp_an_frames_prefix reads them (one definition with the launching stacks): the call being made
 * (the innermost Python frame), then the program's own line that led to it and that line's callers;
 * samples whose prefixes read the same are one row.
 *
 * Promises: rows' on-CPU, wall and sample counts plus the no-stack ones equal the totals,
 * which equal the Python threads' sums (native threads, sampled for their state and CPU clock
 * alone, have sums of their own); rows are sorted by CPU time (descending), ties by stack id;
 * threads by CPU time, ties by (pid, tid). Only samples that lie in the view's window when it has
 * one. The result owns its arrays and the frames handle; the view's model must outlive it. */
#ifndef TP_AN_SAMPLES_H
#define TP_AN_SAMPLES_H

#include <stddef.h>
#include <stdint.h>

#include "tp_an_frames.h"
#include "tp_an_view.h"

/* One row: the samples whose stacks read the same. */
typedef struct {
    uint32_t stack;            /* a stack of the row (its lowest id): frames from there */
    const tp_an_frame *frames; /* innermost first (owned by fx) */
    size_t n_frames;           /* <= depth */
    size_t samples;
    int64_t cpu_ns;  /* on-CPU time: the periods of its samples that found the thread running */
    int64_t wall_ns; /* every period of its samples: cpu_ns of it on a CPU, the rest waiting */
} tp_an_sample_row;

/* One sampled thread. */
typedef struct {
    int64_t pid, tid;
    const char *name; /* the thread's name in the trace ("" when unnamed; owned by the model) */
    size_t samples;
    int64_t cpu_ns, wall_ns; /* sampled on-CPU time (as the rows'), wall time */
    int64_t clock_ns;        /* its CPU clock over the same periods (measured) */
    int64_t gil_ns;          /* the periods whose sample found it holding the GIL */
} tp_an_sample_thread;

typedef struct tp_an_samples_s {
    int depth;
    tp_an_sample_row *s; /* by CPU time, descending */
    size_t n;
    tp_an_sample_thread *t; /* Python threads, by CPU time, descending */
    size_t n_threads;
    /* Native threads (TP_SAMPLE_F_NATIVE: an OpenMP or intra-op pool's, a CUDA or NCCL
     * library's; their state and CPU clock, no frames), by CPU time, descending; in no row and
     * none of the sums above, which are the Python threads' */
    tp_an_sample_thread *nt;
    size_t n_native;
    size_t n_native_busy; /* of them, those that used a CPU (CPU clock > 0): the ones listed */
    size_t native_samples;
    int64_t native_cpu_ns, native_wall_ns, native_clock_ns;
    size_t samples;                    /* every sample counted */
    int64_t cpu_ns, wall_ns, clock_ns; /* the threads' sums */
    size_t no_stack;                   /* samples of a thread that ran no Python code then */
    int64_t no_stack_cpu_ns, no_stack_wall_ns;
    int64_t hz; /* the sampling rate the samples' periods show (the median's, to two
                   significant digits), 0 when unknown */
    tp_an_frames *fx;
    /* each distinct stack id counted and its row in s, by stack id (tp_an_samples_top_in) */
    uint32_t *map_stack, *map_row;
    size_t n_map;
} tp_an_samples;

/* Charges the samples of view `v`'s rank to their stacks, grouped by the first `depth`
 * frames (depth <= 0: TP_AN_STACK_DEPTH_DEFAULT; more than TP_AN_STACK_DEPTH_MAX: that) into
 * *out (overwritten). Samples of one thread only when tid > 0 (pid and tid), else all.
 * Symbolizes unless v->opts.no_symbols. Aborts on out of memory. */
void tp_an_samples_run(const tp_an_view *v, int depth, int64_t pid, int64_t tid,
                       tp_an_samples *out);

/* The same for the samples (of every thread) in [lo, hi) of the view's time: a part of the
 * run, such as its steps (from the first step's start to the last one's end). */
void tp_an_samples_run_between(const tp_an_view *v, int depth, int64_t lo, int64_t hi,
                               tp_an_samples *out);

/* The samples of one Python thread that lie in a part of its time, and the rows they weigh most
 * in (tp_an_samples_in). */
typedef struct {
    size_t samples;
    int64_t cpu_ns, wall_ns; /* sampled on-CPU time, wall time */
    int64_t gil_ns;          /* the periods whose sample found the thread holding the GIL */
    long top_cpu; /* the row (index in the run's s) with the most on-CPU time there; -1: none */
    int64_t top_cpu_ns;
    long top_wait; /* the row with the most wall time off a CPU there; -1: none */
    int64_t top_wait_ns;
    size_t n_procs;   /* the processes the samples counted came from */
    int64_t clock_ns; /* the threads' CPU clocks over the same periods: the CPU time they got,
                         which cpu_ns (the periods that found them running or ready to run: a
                         thread waiting for a CPU is in state R too) exceeds when they waited */
    /* per process, its busiest thread there (the most on-CPU time), summed: the share of
     * time a worker process computed, which its idle helper threads (a queue's feeder) would
     * dilute in cpu_ns / wall_ns */
    int64_t lead_cpu_ns, lead_wall_ns, lead_clock_ns;
} tp_an_samples_part;

/* The samples of thread (pid, tid) whose time lies in one of the n intervals [lo[k], hi[k])
 * (sorted, not overlapping), grouped as *all (tp_an_samples_run over the same view) groups
 * them, into *out. For a finding about a part of one thread's time. */
void tp_an_samples_in(const tp_an_view *v, const tp_an_samples *all, int64_t pid, int64_t tid,
                      const int64_t *lo, const int64_t *hi, size_t n, tp_an_samples_part *out);

/* The same for every Python thread of the processes of the rank other than `pid` (the workers of a
 * training process, together; never a launcher, which feeds none), or only of those with a
 * sampled thread named `named` (not NULL: "pt_data_worker", PyTorch's DataLoader workers, not
 * the resource tracker beside them):
 * out->n_procs says how many of them had samples there. */
void tp_an_samples_in_others(const tp_an_view *v, const tp_an_samples *all, int64_t pid,
                             const char *named, const int64_t *lo, const int64_t *hi, size_t n,
                             tp_an_samples_part *out);

/* The processes of the rank other than `pid` that were sampled (DataLoader workers, mostly;
 * only those with a thread named `named` when not NULL, as tp_an_samples_in_others), grouped as
 * *all groups the rank's samples,
 * each alive from its first sample to its last: how many, how many at a time at most, and how
 * many times a set of them started while none was alive (a DataLoader without
 * persistent_workers starts its workers anew with each iterator: each epoch, each evaluation). */
typedef struct {
    size_t procs, at_once, generations;
    /* each set's first sample and the last sample before none was alive again, ascending
     * (`generations` of each; free them) */
    int64_t *starts, *ends;
} tp_an_sample_workers;

void tp_an_samples_workers(const tp_an_view *v, const tp_an_samples *all, int64_t pid,
                           const char *named, tp_an_sample_workers *out);

/* The wall time thread (pid, tid) was found off a CPU (waiting: a lock, a pipe, a collective)
 * in its samples in the n sorted intervals [lo[k], hi[k]) but not in the xn sorted [xlo[k],
 * xhi[k]) (its data loading, say), in the view's window; how many samples that was into
 * *samples. The cross-rank rules' waits of a rank without device activity. */
int64_t tp_an_samples_off_cpu(const tp_an_view *v, int64_t pid, int64_t tid, const int64_t *lo,
                              const int64_t *hi, size_t n, const int64_t *xlo, const int64_t *xhi,
                              size_t xn, size_t *samples);

/* The CPU clocks of the rank's samples (every thread; only the native ones when native_only) in
 * the n sorted intervals [lo[k], hi[k]): the CPU time the job's sampled threads got there.
 * `diff`'s cpu_per_step and native_cpu_per_step. */
int64_t tp_an_samples_clock_in(const tp_an_view *v, const int64_t *lo, const int64_t *hi, size_t n,
                               int native_only);

/* Who wanted the CPUs in tp_an_samples_demand's intervals. */
typedef struct {
    size_t threads, procs; /* the threads and processes sampled there */
    size_t native;         /* how many of those threads native */
    double native_cpus;    /* the native threads' part of the demand */
} tp_an_samples_want;

/* How many of the rank's sampled threads (every process, Python and native) were in state R
 * (running, or ready and waiting for a CPU) at a time on average over the n sorted intervals
 * [lo[k], hi[k]): the periods of their samples there found in R, over the intervals' length;
 * who they were into *w (NULL: not asked). The CPUs a rank's threads wanted: cpu-contention's
 * and the cross-rank cpu-oversubscribed rule's one definition. */
double tp_an_samples_demand(const tp_an_view *v, const int64_t *lo, const int64_t *hi, size_t n,
                            tp_an_samples_want *w);

/* The native threads in a few words, for a line that counts the Python threads' samples (the
 * HTML page's, the TUI's): "; N native threads beside them, CPU clock X" into buf (n bytes),
 * "" when there are none; returns buf. */
const char *tp_an_samples_native_note(const tp_an_samples *sa, char *buf, size_t n);

/* Frees what tp_an_samples_run allocated; a zeroed result or NULL is a no-op. */
void tp_an_samples_free(tp_an_samples *s);

#endif
