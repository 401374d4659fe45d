/* tp_rank_analysis: the analyses of a rank, from one table (see the header). */
#include "tp_rank_analysis.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tp_env_keys.h"
#include "tp_mem.h"
#include "tp_par.h"

static void run_temporal(tp_rank_analysis *a) {
    tp_an_temporal_run(&a->v, &a->t);
}
static void run_idle(tp_rank_analysis *a) {
    tp_an_idle_run(&a->v, &a->idle);
}
static void run_kernels(tp_rank_analysis *a) {
    tp_an_kernels_run(&a->v, &a->k);
}
static void run_launch(tp_rank_analysis *a) {
    tp_an_launch_run(&a->v, &a->l);
}
static void run_queue(tp_rank_analysis *a) {
    tp_an_queue_run(&a->v, &a->q);
}
static void run_memory(tp_rank_analysis *a) {
    tp_an_memory_run(&a->v, &a->mem);
}
static void run_overlap(tp_rank_analysis *a) {
    tp_an_overlap_run(&a->v, &a->ov);
}
static void run_nvtx(tp_rank_analysis *a) {
    tp_an_nvtx_run(&a->v, &a->nv);
}
static void run_memuse(tp_rank_analysis *a) {
    tp_an_memuse_run(&a->v, &a->mu);
}
static void run_cpuops(tp_rank_analysis *a) {
    tp_an_cpuops_run(&a->v, &a->ops);
}
static void run_host(tp_rank_analysis *a) {
    tp_an_host_run(&a->v, &a->host);
}
/* The memory rules read the memory analysis: it runs first, once, for both (the replay is
 * one of the costliest analyses; tp_rank_analysis_more adds it). */
static void run_diagnosis(tp_rank_analysis *a) {
    tp_diagnose_run_with(&a->v, &a->mu, &a->dg);
    if (a->diagnosed)
        a->diagnosed(a->diagnosed_arg, &a->v);
}
static void run_stacks(tp_rank_analysis *a) {
    tp_an_stacks_run(&a->v, a->v.opts.stack_depth, &a->st);
}
static void run_marks(tp_rank_analysis *a) {
    tp_an_marks_run(&a->v, &a->mk);
}

/* The analyses in the order they run (the report's order; the memory analysis before the
 * diagnosis, which reads it). Each reads only the view (and the diagnosis the memory
 * analysis) and writes only its own result. */
static const struct {
    unsigned bit;
    void (*run)(tp_rank_analysis *a);
} analyses[] = {
    {TP_RA_TEMPORAL, run_temporal},   {TP_RA_IDLE, run_idle},     {TP_RA_KERNELS, run_kernels},
    {TP_RA_LAUNCH, run_launch},       {TP_RA_QUEUE, run_queue},   {TP_RA_MEMORY, run_memory},
    {TP_RA_OVERLAP, run_overlap},     {TP_RA_NVTX, run_nvtx},     {TP_RA_MEMUSE, run_memuse},
    {TP_RA_DIAGNOSIS, run_diagnosis}, {TP_RA_CPUOPS, run_cpuops}, {TP_RA_HOST, run_host},
    {TP_RA_STACKS, run_stacks},       {TP_RA_MARKS, run_marks},
};

static void run_set(tp_rank_analysis *ra, unsigned which) {
    for (size_t i = 0; i < sizeof analyses / sizeof analyses[0]; i++)
        if (which & analyses[i].bit)
            analyses[i].run(ra);
}

/* With two cores and a view of LIST_MIN_ROWS rows or more (below), two threads take these jobs
 * from one list, each the next one when it is free, so both finish at about the same time:
 * the fixed split (SECOND_THREAD, below) left one core idle for ~0.35 s of ~1.45 s on a
 * 10 M-record native trace. Each analysis's instructions on the 2,000-step launch-bound
 * recording (callgrind, 0.63 M rows; the 20,000-step one has the same shape, ~10 times as
 * many): the memory replay 89 M and the diagnosis 87 M (with the launching stacks, 34 M,
 * which share its symbolizer), the queue 55 M, kernels 49 M, launch 37 M, CPU ops 29 M, idle
 * time 25 M, NVTX 22 M, host 21 M, the temporal breakdown 9-13 M (the more where it runs
 * first), the memory operations 10 M, the report's NVTX marks 7.5 M, the overlap ~0.
 * The costliest come first so that the last ones taken are short (longest first): the memory
 * analysis, the diagnosis (which reads it) and the launching stacks as one job (~210 M of
 * ~475 M), then the others by their cost, so that the other thread's queue..NVTX end about
 * with it and the short ones fill the rest. Per thread, in callgrind (--fair-sched=yes, the
 * list forced on that recording, before kernels, launch and CPU ops lost 6 M): 251 M and
 * 230 M, against 254 M and 228 M in the order before (the idle time second, the temporal
 * breakdown last but one).
 * The diagnosis takes the most scratch (~110 MB there before its context became ~30 %
 * cheaper); the queue no longer any (one 4-byte mark a row, where it took ~240 MB). Keeping the
 * diagnosis apart from the others (after the idle, kernel and launch analyses, waiting for the
 * memory analysis) took ~70 MB off the report's peak RSS when the queue still took ~240 MB, but
 * cost 0.1-0.2 s of wall and ~0.25 s of CPU on that trace, 12 alternating rounds
 * (docs/PERFORMANCE.md, eighteenth round, integration). */
/* clang-format off */
#define JOBS(X)                                                                                    \
    X(TP_RA_MEMUSE | TP_RA_DIAGNOSIS | TP_RA_STACKS) X(TP_RA_QUEUE) X(TP_RA_KERNELS)               \
    X(TP_RA_LAUNCH) X(TP_RA_CPUOPS) X(TP_RA_IDLE) X(TP_RA_NVTX) X(TP_RA_HOST) X(TP_RA_TEMPORAL)    \
    X(TP_RA_MEMORY) X(TP_RA_MARKS) X(TP_RA_OVERLAP)
/* clang-format on */
#define AS_ITEM(bits) bits,
#define AS_OR(bits) | (bits)
static const unsigned jobs[] = {JOBS(AS_ITEM)};
_Static_assert((0 JOBS(AS_OR)) == (TP_RA_ALL | TP_RA_SECTIONS), "every analysis is in one job");
#undef AS_ITEM
#undef AS_OR
#define N_JOBS (sizeof jobs / sizeof jobs[0])

typedef struct {
    tp_rank_analysis *ra;
    unsigned todo;
    atomic_size_t next; /* the next job to take */
} work_list;

static void take_jobs(work_list *w) {
    for (size_t j; (j = atomic_fetch_add(&w->next, 1)) < N_JOBS;)
        run_set(w->ra, w->todo & jobs[j]);
}

/* The second thread's malloc arena keeps the small blocks its analyses freed (the
 * diagnosis's scratch) resident for the rest of the report, on top of what the other thread
 * still allocates: giving them back took ~0.9 MiB off hta_df_index_resolver's peak (median
 * of 8 runs, docs/PERFORMANCE.md), at one trim per rank. malloc_trim leaves the free top of
 * an arena other than the main one resident: the CLI has every thread share the main arena
 * (M_ARENA_MAX, tp_mem_tune_process), where the trim gives that back too. */
static void trim_arena(void) {
#if TP_GLIBC_MALLOC
    malloc_trim(0);
#endif
}

static void take_jobs_main(void *w) {
    take_jobs(w);
}

/* The second thread, out of jobs, also unmaps the view's kept scratch pages (up to 48 bytes
 * a row in `report`), which the view's free did on the main thread after the render (~20 ms
 * of its CPU on a 10 M-record trace; the same page faults, docs/PERFORMANCE.md). A job still
 * running on the main thread has mostly taken its scratch by then, or takes fresh pages; a
 * later tp_rank_analysis_more (the TUI's) starts with none kept. */
static void take_jobs_and_trim(void *w) {
    take_jobs(w);
    tp_scratch_trim(((work_list *)w)->ra->v.scratch);
    trim_arena();
}

/* Views of LIST_MIN_ROWS rows or more take the work list (with two cores): the 2,000-step
 * launch-bound recording (~0.63 M rows, under tp_par_min_rows()'s 1 Mi then) ran the fixed split,
 * whose first step left the main thread ~85 M instructions idle beside the replay and the
 * diagnosis (90.7 M against 175.3 M) before its 162.7 M alone, and the launching stacks and
 * the marks (41.5 M) on the render after: 380 M on the main thread's path for ~470 M of work;
 * the list: 217.0 M and 250.4 M (callgrind --separate-threads=yes --fair-sched=yes; which
 * thread takes which job varies by run). The Kineto sets (~200 k rows at most) stay below it, so
 * their peak RSS stays as tuned (next comment). */
#define LIST_MIN_ROWS ((size_t)1 << 19)

/* Smaller views (the Kineto sets: ~200 k rows at most) keep the fixed
 * split tuned for their peak RSS: these on the second thread, the rest on this one in two
 * steps (BESIDE_DIAGNOSIS, below). The diagnosis is the costliest analysis on a 62 MB Kineto trace
 * (~7 of ~35 ms); the host and CPU-op analyses there too balanced the time better but added up to
 * 3.5 MiB of peak RSS (their arrays of one entry per row alive at the same time as the
 * others'), and the work list raised the largest set's peak by ~1 MiB of ~27 for the same
 * reason. */
#define SECOND_THREAD (TP_RA_MEMUSE | TP_RA_DIAGNOSIS)

/* The fixed split in two steps, so that the analyses that allocate the most never run beside
 * the replay and the diagnosis (whose scratch is the largest of the second thread's): first
 * these beside the second thread's part, then, alone, the CPU-op analysis (its per-row arrays,
 * 0.8 MiB at its peak on a 56 MB trace) and those whose results stay to the end (kernels,
 * launch and queue). The first thread's part in the table's order beside the diagnosis cost
 * up to 2 MiB of peak RSS (tracelens_h100_owlv2, hta_df_index_resolver, tracelens_xdit_sd35;
 * Kineto report peak, seventh round, docs/PERFORMANCE.md), and the peak varied with how the
 * two threads met. The host analysis is in the first step for the time: with it the first
 * step takes about as long as the replay and the diagnosis on the largest sets (xdit 58 M
 * instructions against 59 M, owlv2 32 M against 43 M), so the second core idles little; beside
 * the diagnosis it cost +0.1 MiB of peak on owlv2, nothing measurable on the others. The
 * results do not depend on the order. */
#define BESIDE_DIAGNOSIS                                                                           \
    (TP_RA_TEMPORAL | TP_RA_IDLE | TP_RA_MEMORY | TP_RA_OVERLAP | TP_RA_NVTX | TP_RA_HOST)

/* This thread's order (the steps above pick from it) */
/* clang-format off */
#define FIRST_ORDER(X)                                                                             \
    X(TP_RA_TEMPORAL) X(TP_RA_IDLE) X(TP_RA_MEMORY) X(TP_RA_OVERLAP) X(TP_RA_NVTX) X(TP_RA_CPUOPS) \
    X(TP_RA_HOST) X(TP_RA_LAUNCH) X(TP_RA_KERNELS) X(TP_RA_QUEUE) X(TP_RA_STACKS) X(TP_RA_MARKS)   \
    X(TP_RA_MEMUSE) X(TP_RA_DIAGNOSIS)
/* clang-format on */
#define AS_ITEM(bit) bit,
#define AS_OR(bit) | (bit)
static const unsigned first_order[] = {FIRST_ORDER(AS_ITEM)};
_Static_assert((0 FIRST_ORDER(AS_OR)) == (TP_RA_ALL | TP_RA_SECTIONS), "every analysis once");
#undef AS_ITEM
#undef AS_OR

typedef struct {
    tp_rank_analysis *ra;
    unsigned which;
} fixed_part;

static void run_bit(tp_rank_analysis *ra, unsigned bit) {
    for (size_t i = 0; i < sizeof analyses / sizeof analyses[0]; i++)
        if (analyses[i].bit == bit)
            analyses[i].run(ra);
}

/* After each analysis its freed small blocks go back to the kernel (malloc_trim: every
 * arena, the second thread's too): what one analysis freed in the middle of a heap stayed
 * resident beside what the next one, or the other thread, allocated anew (tracelens_h100_owlv2
 * -0.5 to -0.8 MiB of peak with this order, a dozen trims of a heap of a few MiB per rank). */
static void run_part(void *p) {
    const fixed_part *f = p;
    for (size_t k = 0; k < sizeof first_order / sizeof first_order[0]; k++) {
        if (f->which & first_order[k]) {
            run_bit(f->ra, first_order[k]);
            trim_arena();
        }
    }
}

static void run_part_and_trim(void *p) {
    const fixed_part *f = p;
    run_set(f->ra, f->which); /* the table's order: the replay before the diagnosis */
    trim_arena();
}

void tp_rank_analysis_view(tp_rank_analysis *ra, const tp_model *m, const tp_rank *r,
                           const tp_an_opts *o) {
    memset(ra, 0, sizeof *ra);
    tp_an_view_build(&ra->v, m, r, o);
    tp_an_drops_compute(r, &ra->drops);
}

#define NO_STEP                                                                                    \
    "no training step was named (a range \"step\", \"train_step\" or torch.profiler's "            \
    "ProfilerStep#N)"
#define PYTORCH_HINT "for a PyTorch loop without annotations, `trainprof record --pytorch` marks"

/* Recorded with `record --pytorch` (its variable, in the trace's environment): its steps are
 * the first optimizer's updates, and a run without any made none. */
#define PYTORCH_NO_STEP                                                                            \
    "no training step: `trainprof record --pytorch` marks one per update of the first "            \
    "optimizer, and this run made none (an inference or evaluation loop?); a range named "         \
    "\"step\" around each iteration (nvtx.annotate(\"step\")) names them"

static int marked_by_pytorch(const tp_rank_analysis *ra) {
    const char *v = tp_rank_env(ra->v.m, ra->v.r, -1, TP_ENV_VAR_PREFIX "TRAINPROF_PYTORCH");
    return v && !strcmp(v, "1");
}

const char *tp_rank_analysis_no_findings(const tp_rank_analysis *ra) {
    if (ra->v.n_gpu)
        return "no problem found";
    /* the host rules judge steps: without any, "no problem" would claim what was not looked at */
    if (ra->dg.n_steps)
        return "no problem found on the host";
    return marked_by_pytorch(ra) ? "nothing judged on the host: " PYTORCH_NO_STEP
                                 : "nothing judged on the host: " NO_STEP "; " PYTORCH_HINT
                                   " its steps";
}

const char *tp_rank_analysis_steps_note(const tp_rank_analysis *ra) {
    if (!ra->v.n_gpu || ra->dg.n_steps || !ra->v.r->native)
        return NULL;
    return marked_by_pytorch(ra) ? PYTORCH_NO_STEP ": judged over the GPU span"
                                 : NO_STEP
               ": judged over the GPU span, and input-bound not at all (no "
               "data-loading range); " PYTORCH_HINT " its steps and DataLoader fetches";
}

int tp_rank_analysis_corr_index_done(const tp_an_view *v) {
    return !v->by_corr; /* the diagnosis's tp_diag_ctx reads r->by_corr; nothing else does */
}

void tp_rank_analysis_run(tp_rank_analysis *ra, const tp_model *m, const tp_rank *r,
                          const tp_an_opts *o, unsigned which) {
    tp_rank_analysis_view(ra, m, r, o);
    tp_rank_analysis_more(ra, which);
}

void tp_rank_analysis_more(tp_rank_analysis *ra, unsigned which) {
    unsigned todo = which & (TP_RA_ALL | TP_RA_SECTIONS) & ~ra->ran;
    if (todo & TP_RA_DIAGNOSIS)
        todo |= TP_RA_MEMUSE & ~ra->ran; /* the diagnosis reads it */
    /* The report sections' analyses only in the work list (the launching stacks in the
     * diagnosis's job: one symbolizer, no lock): there they take ~50 + ~25 ms of a 10 M-record
     * trace off the render, when the other core is idle; elsewhere the sections run them, as
     * before (the Kineto sets' peak RSS stays as it was). */
    size_t list_min = tp_par_min_rows() < LIST_MIN_ROWS ? tp_par_min_rows() : LIST_MIN_ROWS;
    int listed = tp_par_two_threads() && ra->v.n >= list_min;
    if (!listed)
        todo &= ~TP_RA_SECTIONS;
    /* the results do not depend on the split: each analysis writes only its own, and the
     * view's scratch cache is shared under its mutex */
    size_t busy = 0; /* jobs with something to do: a second thread only for two or more */
    for (size_t j = 0; j < N_JOBS; j++)
        busy += (todo & jobs[j]) != 0;
    fixed_part first = {ra, todo & ~SECOND_THREAD}, second = {ra, todo & SECOND_THREAD};
    work_list w = {ra, todo, 0};
    if (!tp_par_two_threads()) {
        run_set(ra, todo); /* in the table's order */
    } else if (listed) {
        if (busy >= 2)
            /* SIZE_MAX: two threads at any size here (listed: n >= list_min) */
            tp_par_both(SIZE_MAX, take_jobs_main, &w, take_jobs_and_trim, &w);
        else
            run_set(ra, todo);
    } else if (second.which && (first.which & BESIDE_DIAGNOSIS)) {
        /* at any size: see SECOND_THREAD and BESIDE_DIAGNOSIS */
        fixed_part light = {ra, first.which & BESIDE_DIAGNOSIS};
        fixed_part rest = {ra, first.which & ~BESIDE_DIAGNOSIS};
        tp_par_both(SIZE_MAX, run_part, &light, run_part_and_trim, &second);
        run_part(&rest);
    } else if (second.which && first.which) {
        tp_par_both(SIZE_MAX, run_part, &first, run_part_and_trim, &second);
    } else {
        run_set(ra, todo);
    }
    ra->ran |= todo;
}

void tp_rank_analysis_free(tp_rank_analysis *ra) {
    if (!ra)
        return;
    /* Every free takes a zeroed result, so the ones that did not run need no test. */
    tp_an_idle_free(&ra->idle);
    tp_an_kernels_free(&ra->k);
    tp_an_queue_free(&ra->q);
    tp_an_memory_free(&ra->mem);
    tp_an_nvtx_free(&ra->nv);
    tp_diagnose_free(&ra->dg);
    tp_an_memuse_free(&ra->mu);
    tp_an_cpuops_free(&ra->ops);
    tp_an_host_free(&ra->host);
    tp_an_stacks_free(&ra->st);
    tp_an_marks_free(&ra->mk);
    tp_an_view_free(&ra->v);
    memset(ra, 0, sizeof *ra);
}
