/* tp_diagnose: explains a rank's numbers as a short, ranked list of findings.
 *
 * The other analyses measure; this one judges. It looks at one rank through a tp_an_view and
 * answers "why is the device not busy, and what do I change": input pipeline stalls, launch
 * overhead, synchronization, host-to-device copies (pageable, synchronous, not overlapped),
 * memory growth, fragmentation and out-of-memory failures. Every finding has a stable id, a
 * severity (the share of the analysis window it explains, see below), a one-line title,
 * the evidence as numbers, what to do, and where it comes from (NVTX range, CPU stack).
 *
 * The analysis window is the training steps when the rank has them (NVTX/user ranges named
 * "step", "train_step", "training_step" or "ProfilerStep#N" on a launching thread: first
 * step start to last step end), else the GPU span. Setup and evaluation outside the steps
 * are not judged. Device idle in the window is split by what the launching threads were
 * doing: blocked in a synchronization call, inside a data-loading range, or other host work
 * (gaps shorter than opts.kernel_wait_ns count as launch overhead).
 *
 * Severity is in [0, 1]: time findings give the share of the window they explain; "oom" and
 * "fragmentation-oom" give 1 (the job stopped); "memory-growth" gives the share of the peak
 * allocated memory that accumulated over the window. Findings under 3 % are left out
 * (except failures). Findings are sorted by severity, descending; ties follow the rules'
 * fixed order.
 *
 * Each finding id is one rule of a table (tp_diag_rules.h: {id, function, order,
 * needs, description}); tp_diagnose_rules lists them. When the collector dropped records
 * (tp_an_drops), the "dropped-records" finding says how many, and every finding whose rule
 * needs a kind that lost records says its figures are lower bounds. The diagnosis only reads the
 * model, stacks included (tp_rank_stack: it never opens the trace file), and symbolizes their
 * frames offline from the modules' files (tp_symbolize: "func (file:line)"; module+offset when the
 * file is gone, rebuilt or has no symbols, or with opts.no_symbols). Nothing in a finding
 * has a fixed size: texts, metrics and frames are as long as they need to be. */
#ifndef TP_DIAGNOSE_H
#define TP_DIAGNOSE_H

#include <stddef.h>
#include <stdint.h>

#include "tp_an_memuse.h"
#include "tp_an_view.h"

/* One frame of the CPU stack behind a finding (JSON "frames"), innermost first. Symbolized
 * offline (tp_symbolize) unless opts.no_symbols; an inlined function is a frame of its own.
 * The strings are owned by the diagnosis and never NULL. */
typedef struct {
    char *module;        /* file name of the module; "" when the frame has none (raw address) */
    uint64_t offset;     /* ELF virtual address in the module (raw address without one) */
    char *func;          /* "" when not symbolized */
    char *file;          /* source file as the debug info names it; "" when unknown */
    int line;            /* 0: unknown */
    int inlined;         /* 1: inlined into the next frame (same module and offset) */
    int library;         /* 1: not the program's own code (tp_an_frame.library) */
    const char *symbols; /* static: "ok", or why it is not symbolized ("off", "build-id
                            differs from the trace", "module file not found", ...) */
} tp_diag_frame;

/* A named number behind the evidence, for scripts (JSON "metrics"). */
typedef struct {
    const char *key; /* static string, e.g. "idle_ns" */
    double value;
} tp_diag_metric;

/* One finding. The texts are owned by the diagnosis and never NULL. */
typedef struct {
    const char *id;  /* stable id (static, the rule's): "input-bound", "pageable-h2d", ... */
    double severity; /* [0, 1], see above */
    char *title;
    char *evidence;
    char *advice;
    char *source; /* NVTX range / CPU stack behind it; "" when unknown */
    size_t n_metrics;
    tp_diag_metric *metrics;
    size_t n_frames; /* the CPU stack in `source`, structured (every frame); 0 when none */
    tp_diag_frame *frames;
    /* Where the evidence is, as model rows (rows of the view's rank), for front ends that
     * show it (the TUI jumps there): the range `source` names first, and the op the
     * finding points at (the longest sync call, the slowest copy call). -1: none. */
    long range_row;
    long op_row;
} tp_finding;

/* A leading step longer than this many median steps is warm-up (tp_diagnosis.n_warmup). */
#define TP_DIAG_WARMUP_RATIO 5.0

typedef struct {
    size_t n;
    tp_finding *f;     /* by severity, descending */
    int64_t window_ns; /* length of the analysis window; 0: no device activity */
    size_t n_steps;    /* steps found (0: the window is the GPU span) */
    double step_mean_ns, step_p50_ns, step_p90_ns; /* durations of those steps (outermost
                                                      when nested); NaN without steps */
    int64_t *step_start, *step_end; /* those steps, by start (n_steps of each): the HTML
                                       report's per-step bars */
    double utilization;             /* busy share of the window; NaN when the window is empty */
    /* Leading steps over TP_DIAG_WARMUP_RATIO times the median step, left out of the window:
     * the first step of a CUDA job loads kernels and libraries (cuDNN: 230-360 ms against a
     * 3-8 ms median on the first GPU run, which then made up half the window and put every
     * scenario's finding behind a low-utilization one), as a profiler's schedule would skip
     * them. The step statistics still count them. */
    size_t n_warmup; /* their time: tp_diag_warmup_ns */
    int warmup_only; /* the one step found is the first (e.g. an OOM in step 1): it holds
                        one-time costs (first batch, allocator growth), not a steady state, so
                        the rules that judge time shares did not run */
} tp_diagnosis;

typedef struct tp_diag_ctx tp_diag_ctx; /* a diagnosis in progress (tp_diag_ctx.h) */

/* A rule: one finding id and the function that judges it. `run` appends at most one finding
 * with this rule's id to the diagnosis in progress. Among findings of equal severity, the
 * lower `order` comes first. */
typedef struct tp_diag_rule {
    const char *id;
    void (*run)(tp_diag_ctx *d, const struct tp_diag_rule *self);
    unsigned order;
    uint64_t needs;          /* bits (1 << .tprof record type) of the kinds its figures come
                                from; a finding whose kinds lost records says it is a lower
                                bound */
    const char *description; /* one line: what it detects */
} tp_diag_rule;

/* 1 when rule `r` judges from device activity (kernels, copies, memsets), so that a rank
 * without any cannot be judged by it: the report lists these for such ranks. */
int tp_diag_rule_needs_device(const tp_diag_rule *r);

/* The rules, in the order they run (a static table); returns their count. */
size_t tp_diagnose_rules(const tp_diag_rule **rules);

/* Diagnoses the rank seen by `v` into `out` (owned by the caller; free with
 * tp_diagnose_free). Never fails; aborts on out of memory like the rest of the analyzer. */
void tp_diagnose_run(const tp_an_view *v, tp_diagnosis *out);

/* The same, with the memory analysis of the same view already made (`mu`, borrowed; it must
 * be tp_an_memuse_run's result for `v`): the memory rules read it instead of running the
 * allocator replay a second time. NULL: as tp_diagnose_run. */
void tp_diagnose_run_with(const tp_an_view *v, const tp_an_memuse *mu, tp_diagnosis *out);

void tp_diagnose_free(tp_diagnosis *d); /* NULL: no-op */

/* "high" (>= 0.25), "medium" (>= 0.10) or "low". */
const char *tp_diag_level(double severity);

/* The finding with `id`, or NULL. */
const tp_finding *tp_diagnosis_find(const tp_diagnosis *d, const char *id);

/* The value of metric `key` of `f`, NaN when absent. */
double tp_finding_metric(const tp_finding *f, const char *key);

/* The sentence saying which leading steps were left out as warm-up ("judged from step 2 on:
 * step 1 (266.10 ms, 80x the median step) left out as warm-up (...)"), into buf; "" when
 * none were. One wording for the report (text, HTML) and the TUI. Returns buf. */
const char *tp_diag_warmup_text(const tp_diagnosis *d, char *buf, size_t n);

/* The time of the warm-up steps left out (0: none), from the steps kept in `d`. */
int64_t tp_diag_warmup_ns(const tp_diagnosis *d);

/* The mean time from a step's start to the next one's: the loop's period, what an iteration
 * takes; NaN with fewer than two steps. */
double tp_diag_step_period_ns(const tp_diagnosis *d);

/* 1 when the steps leave >= 10 % of the loop's period out (a step range that does not hold
 * the fetch of its batch, or work between steps): then their durations understate what an
 * iteration takes, and the report shows the period beside them. 0 for steps that follow each
 * other (ProfilerStep#N). */
int tp_diag_steps_leave_gaps(const tp_diagnosis *d);

#endif
