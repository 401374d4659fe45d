/* tp_rank_analysis: the analyses of a rank, from one table (see the header). */
#include "tp_rank_analysis.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tp_mem.h"

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
};

/* With two cores these run on a thread of their own while this one runs the rest (the
 * diagnosis is the costliest analysis on a 62 MB Kineto trace: ~7 of ~35 ms). The host and
 * CPU-op analyses there too balanced the time better but added up to 3.5 MiB of peak RSS
 * (their arrays of one entry per row alive at the same time as the others'). */
#define SECOND_THREAD (TP_RA_MEMUSE | TP_RA_DIAGNOSIS)

typedef struct {
    tp_rank_analysis *ra;
    unsigned which;
} run_job;

static void run_set(tp_rank_analysis *ra, unsigned which) {
    for (size_t i = 0; i < sizeof analyses / sizeof analyses[0]; i++)
        if (which & analyses[i].bit)
            analyses[i].run(ra);
}

static void *run_job_main(void *arg) {
    run_job *j = arg;
    run_set(j->ra, j->which);
#if TP_GLIBC_MALLOC
    /* This thread's malloc arena keeps the small blocks its analyses freed (the diagnosis's
     * scratch) resident for the rest of the report, on top of what the other thread still
     * allocates: giving them back took ~0.9 MiB off hta_df_index_resolver's peak (median of
     * 8 runs, docs/PERFORMANCE.md), at one trim per rank. */
    malloc_trim(0);
#endif
    return NULL;
}

/* Two threads unless one core is online or TP_ANALYSIS_THREADS=1. */
static int two_threads(void) {
    const char *e = getenv("TP_ANALYSIS_THREADS");
    return !(e && *e && atoi(e) == 1) && sysconf(_SC_NPROCESSORS_ONLN) >= 2;
}

void tp_rank_analysis_run(tp_rank_analysis *ra, const tp_model *m, const tp_rank *r,
                          const tp_an_opts *o, unsigned which) {
    memset(ra, 0, sizeof *ra);
    tp_an_view_build(&ra->v, m, r, o);
    tp_an_drops_compute(r, &ra->drops);
    tp_rank_analysis_more(ra, which);
}

void tp_rank_analysis_more(tp_rank_analysis *ra, unsigned which) {
    unsigned todo = which & TP_RA_ALL & ~ra->ran;
    if (todo & TP_RA_DIAGNOSIS)
        todo |= TP_RA_MEMUSE & ~ra->ran; /* the diagnosis reads it */
    /* the results do not depend on the split: each analysis writes only its own, and the
     * view's scratch cache is shared under its mutex */
    run_job second = {ra, todo & SECOND_THREAD};
    pthread_t th;
    int threaded = second.which && second.which != todo && two_threads() &&
                   pthread_create(&th, NULL, run_job_main, &second) == 0;
    run_set(ra, threaded ? todo & ~second.which : todo);
    if (threaded)
        pthread_join(th, NULL);
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
    tp_an_view_free(&ra->v);
    memset(ra, 0, sizeof *ra);
}
