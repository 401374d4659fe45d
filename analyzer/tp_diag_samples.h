/* tp_diag_samples: what the sampler saw (`trainprof record --sample`) during the part of a
 * thread's time a finding is about, as words of its evidence: the share of that time the
 * thread was on a CPU, the line it computed at or (when it mostly waited) the line it waited
 * at, and then the thread of any process of the rank (DataLoader workers are processes) that
 * was on a CPU most meanwhile, and its line. One wording for every rule that reads samples
 * (host-step-gaps, input-bound, low-utilization). Internal to the diagnosis. */
#ifndef TP_DIAG_SAMPLES_H
#define TP_DIAG_SAMPLES_H

#include <stddef.h>
#include <stdint.h>

#include "tp_diag_ctx.h"

/* Appends to f's evidence "<lead> (N samples): the <who> was on a CPU X% of the time (a of
 * b); most of it at <stack> (P%)" or "...; it waited most at <stack> (P%); meanwhile thread
 * PID/TID NAME was on a CPU Q% of the time, most at <stack> (R%)", for the samples of thread
 * (pid, tid) in the n sorted intervals [lo[k], hi[k]), with the metrics sampled_cpu_ns,
 * sampled_wall_ns, sampled_top_cpu_ns or sampled_top_wait_ns, sampled_other_cpu_ns. A native
 * trace of a Python program without samples gets " (`trainprof record --sample` samples which
 * lines run there)"; other traces nothing. Returns 1 when samples were described. */
int tp_diag_samples_in(tp_diag_ctx *d, tp_finding *f, int64_t pid, int64_t tid, const int64_t *lo,
                       const int64_t *hi, size_t n, const char *lead, const char *who);

/* 1 when threads whose samples found them in state R (running, or ready to run and waiting
 * for a CPU) for `on_cpu` of `wall` ns got less CPU time than that (their CPU clock, `clock`)
 * by >= 20 % of it and >= 10 % of the wall time: they waited for a CPU (cpu-contention's test,
 * and the words below). */
int tp_diag_samples_waited_cpu(int64_t on_cpu, int64_t wall, int64_t clock);

/* The step thread's sampled figures that tp_diag_samples_in put into f's metrics (its time in
 * state R, its wall time, its CPU clock); 0 when it put none (no samples there). */
int tp_diag_samples_sampled(const tp_finding *f, int64_t *on_cpu, int64_t *wall, int64_t *clock);

/* ", but ran Y% (CPU clock c: it waited for a CPU the rest)" ("they" when `plural`) into f's
 * evidence after a sampled "on a CPU X% of the time (on_cpu of wall)", when
 * tp_diag_samples_waited_cpu; nothing otherwise. */
void tp_diag_samples_ran(tp_finding *f, int64_t on_cpu, int64_t wall, int64_t clock, int plural);

/* The advice of an input-bound finding about the data-loading time [lo[k], hi[k]) of the
 * training process `pid`, from what the sampler saw of the processes that feed it (DataLoader
 * workers): none sampled (the batches are made in the training process), started anew for each
 * iterator (persistent_workers), busy (more workers, or less work each: their line), or idle
 * (prefetch, the receiving side); also their counts into the evidence and metrics worker_procs,
 * workers_at_once, worker_starts. Without samples, `otherwise`. */
void tp_diag_samples_loader_advice(tp_diag_ctx *d, tp_finding *f, int64_t pid, const int64_t *lo,
                                   const int64_t *hi, size_t n, const char *otherwise);

/* The training thread of the rank (the busiest launching thread) as (pid, tid); 0 when it
 * has none. */
int tp_diag_samples_main_thread(const tp_diag_ctx *d, int64_t *pid, int64_t *tid);

/* The rank's samples grouped as the report groups them (tp_an_samples_run), made once for
 * every rule that reads them; owned by the context. Only for a rank with samples. */
const struct tp_an_samples_s *tp_diag_samples_all(tp_diag_ctx *d);

/* The thread whose steps the rank's are: the training (launching) thread, else the first step
 * range's, as (pid, tid); 0 when there is none. */
int tp_diag_samples_step_thread(const tp_diag_ctx *d, int64_t *pid, int64_t *tid);

#endif
