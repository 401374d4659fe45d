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
 * (except failures). Findings are sorted by severity, descending; ties keep a fixed order.
 * The diagnosis only reads the model; for native traces it may open the rank's trace file
 * again (read-only) to read a stack, and symbolizes its frames offline from the modules'
 * files (tp_symbolize: "func (file:line)"; module+offset when the file is gone, rebuilt or
 * has no symbols, or with opts.no_symbols). */
#ifndef TP_DIAGNOSE_H
#define TP_DIAGNOSE_H

#include <stddef.h>
#include <stdint.h>

#include "tp_an_view.h"

#define TP_DIAG_MAX_METRICS 10
#define TP_DIAG_MAX_FRAMES 16

/* One frame of the CPU stack behind a finding (JSON "frames"), innermost first. Symbolized
 * offline (tp_symbolize) unless opts.no_symbols; an inlined function is a frame of its own. */
typedef struct {
    char module[64];     /* file name of the module; "" when the frame has none (raw address) */
    uint64_t offset;     /* ELF virtual address in the module (raw address without one) */
    char func[128];      /* "" when not symbolized */
    char file[256];      /* source file as the debug info names it; "" when unknown */
    int line;            /* 0: unknown */
    int inlined;         /* 1: inlined into the next frame (same module and offset) */
    const char *symbols; /* static: "ok", or why it is not symbolized ("off", "build-id
                            differs from the trace", "module file not found", ...) */
} tp_diag_frame;

/* A named number behind the evidence, for scripts (JSON "metrics"). */
typedef struct {
    const char *key; /* static string, e.g. "idle_ns" */
    double value;
} tp_diag_metric;

typedef struct {
    const char *id;  /* stable id (static): "input-bound", "pageable-h2d", ... */
    double severity; /* [0, 1], see above */
    char title[160];
    char evidence[768];
    char advice[384];
    char source[512]; /* NVTX range / CPU stack behind it; "" when unknown */
    size_t n_metrics;
    tp_diag_metric metrics[TP_DIAG_MAX_METRICS];
    size_t n_frames; /* the CPU stack in `source`, structured; 0 when none */
    tp_diag_frame frames[TP_DIAG_MAX_FRAMES];
    /* Where the evidence is, as model rows (rows of the view's rank), for front ends that
     * show it (the TUI jumps there): the range `source` names first, and the op the
     * finding points at (the longest sync call, the slowest copy call). -1: none. */
    long range_row;
    long op_row;
} tp_finding;

typedef struct {
    size_t n;
    tp_finding *f;      /* by severity, descending */
    int64_t window_ns;  /* length of the analysis window; 0: no device activity */
    size_t n_steps;     /* steps found (0: the window is the GPU span) */
    double utilization; /* busy share of the window; NaN when the window is empty */
} tp_diagnosis;

/* Diagnoses the rank seen by `v` into `out` (owned by the caller; free with
 * tp_diagnose_free). Never fails; aborts on out of memory like the rest of the analyzer. */
void tp_diagnose_run(const tp_an_view *v, tp_diagnosis *out);

void tp_diagnose_free(tp_diagnosis *d); /* NULL: no-op */

/* "high" (>= 0.25), "medium" (>= 0.10) or "low". */
const char *tp_diag_level(double severity);

/* The finding with `id`, or NULL. */
const tp_finding *tp_diagnosis_find(const tp_diagnosis *d, const char *id);

/* The value of metric `key` of `f`, NaN when absent. */
double tp_finding_metric(const tp_finding *f, const char *key);

#endif
