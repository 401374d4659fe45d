/* tp_diag_cpu: cpu-contention, from `trainprof record --sample`'s samples.
 *
 * A sample finds a thread in state R when it runs and also when it is ready to run and waits
 * in a run queue for a CPU; its CPU clock, read at the same sample, says what it got. Where
 * the step thread's samples in the steps found it in state R for much longer than its clock
 * advanced, it had work and no CPU to do it on: the job (its DataLoader workers, intra-op
 * threads, other ranks on the machine) or another program wants more CPUs than the process
 * may use (the machine's cores, its affinity mask, its control group's quota: tp_an_env_cpus).
 * The finding says what that cost the steps, how many CPUs the job's sampled threads wanted
 * at a time against those it has, and so whether the job itself asks for too many.
 *
 * Fires when the step thread waited for a CPU >= 20 % of its time in state R and >= 10 % of
 * its sampled time in the steps (tp_diag_samples_waited_cpu), over >= 20 samples. Severity:
 * the time it waited for a CPU over its sampled time. */
#include <stdint.h>

#include "tp_an_env.h"
#include "tp_an_samples.h"
#include "tp_diag_ctx.h"
#include "tp_diag_rules.h"
#include "tp_diag_samples.h"
#include "tp_units.h"

#define CONTENTION_MIN_SAMPLES 20 /* fewer say little about a share of time */
#define OVERSUBSCRIBED 0.9        /* the job's demand >= 90 % of its CPUs: its own doing */

void tp_diag_cpu_contention(tp_diag_ctx *d, const tp_diag_rule *self) {
    int64_t pid, tid;
    if (!d->r->samples.n || !tp_diag_samples_step_thread(d, &pid, &tid))
        return;
    /* the steps after warm-up (first batches and imports are one-time work); without steps,
     * the whole run */
    const tp_diagnosis *o = d->out;
    size_t first = o->n_warmup, n = o->n_steps > first ? o->n_steps - first : 0;
    int64_t all_lo = INT64_MIN, all_hi = INT64_MAX;
    const int64_t *lo = n ? o->step_start + first : &all_lo,
                  *hi = n ? o->step_end + first : &all_hi;
    size_t n_iv = n ? n : 1;
    tp_an_samples_part p;
    tp_an_samples_in(d->v, tp_diag_samples_all(d), pid, tid, lo, hi, n_iv, &p);
    if (p.samples < CONTENTION_MIN_SAMPLES ||
        !tp_diag_samples_waited_cpu(p.cpu_ns, p.wall_ns, p.clock_ns))
        return;
    int64_t waited = p.cpu_ns - p.clock_ns;
    double share = tp_diag_share(waited, p.wall_ns);
    tp_finding *f = tp_diag_add(d, self, share);
    char b1[32], b2[32], b3[32], b4[32];
    tp_diag_cat(&f->title, "cpu-contention: the step thread waited for a CPU %.0f%% of %s",
                100 * share, n ? "the step time" : "its time");
    tp_diag_cat(
        &f->evidence,
        "sampled %s (%zu samples): the step thread was ready to run or running %.0f%% of "
        "the time (%s of %s) but ran %.0f%% (its CPU clock: %s); it waited %s for a CPU",
        n ? "in the steps after warm-up" : "over the run", p.samples,
        100 * tp_diag_share(p.cpu_ns, p.wall_ns), tp_units_dur(b1, sizeof b1, (double)p.cpu_ns),
        tp_units_dur(b2, sizeof b2, (double)p.wall_ns), 100 * tp_diag_share(p.clock_ns, p.wall_ns),
        tp_units_dur(b3, sizeof b3, (double)p.clock_ns),
        tp_units_dur(b4, sizeof b4, (double)waited));
    /* the job's own demand: its step intervals (without steps, the step thread's sampled
     * span stands for the run) */
    int64_t span_lo = INT64_MAX, span_hi = INT64_MIN;
    if (!n)
        for (size_t i = 0; i < d->r->samples.n; i++)
            if (d->r->samples.pid[i] == pid && d->r->samples.tid[i] == tid) {
                int64_t t = d->r->samples.ts[i];
                span_lo = t < span_lo ? t : span_lo, span_hi = t > span_hi ? t : span_hi;
            }
    tp_an_samples_want w;
    double want = n ? tp_an_samples_demand(d->v, lo, hi, n, &w)
                    : tp_an_samples_demand(d->v, &span_lo, &span_hi, span_hi > span_lo, &w);
    size_t threads = w.threads, procs = w.procs, native = w.native;
    /* a recording made before the sampler read native threads has Python threads alone */
    int natives_read = tp_an_env_samples_native(d->v->m, d->r);
    double cpus = 0;
    const char *bound = NULL;
    int known = tp_an_env_cpus(d->v->m, d->r, &cpus, &bound) == 0;
    if (natives_read) {
        tp_diag_cat(&f->evidence,
                    ". Meanwhile the job's sampled threads (%zu in %zu process%s, %zu of them "
                    "native: intra-op and OpenMP pools, libraries' threads) were ready to run "
                    "%.1f at a time on average",
                    threads, procs, procs == 1 ? "" : "es", native, want);
        if (w.native_cpus >= 0.05)
            tp_diag_cat(&f->evidence, " (%.1f of them native threads)", w.native_cpus);
    } else {
        tp_diag_cat(&f->evidence,
                    ". Meanwhile the job's sampled Python threads (%zu in %zu process%s) were "
                    "ready to run %.1f at a time on average",
                    threads, procs, procs == 1 ? "" : "es", want);
    }
    if (known)
        tp_diag_cat(&f->evidence, ", against %g CPUs (%s)", cpus, bound);
    int own = known && want >= OVERSUBSCRIBED * cpus;
    if (own)
        tp_diag_cat(&f->evidence, ": the job alone asks for more CPUs than it has");
    else if (natives_read)
        tp_diag_cat(&f->evidence,
                    "%s: the rest of the demand is what the sampler does not see, the job's "
                    "other ranks on this machine (a rank sees its own processes only) or other "
                    "programs",
                    known ? "" : " (the CPUs it could use are not recorded)");
    else
        tp_diag_cat(
            &f->evidence,
            "%s: the rest of the demand is what the sampler does not see, the job's "
            "native threads (PyTorch's intra-op pool, OpenMP, BLAS: torch.get_num_threads() "
            "of them in each process), the job's other ranks on this machine (a rank sees "
            "its own processes only) or other programs",
            known ? "" : " (the CPUs it could use are not recorded)");
    if (own && natives_read && w.native_cpus >= 0.5) /* the pools first: one call sizes them */
        tp_diag_cat(&f->advice,
                    "the native threads (PyTorch's intra-op pool, OpenMP, BLAS) want %.1f of the "
                    "CPUs: torch.set_num_threads() or OMP_NUM_THREADS at the CPUs left over by "
                    "the DataLoader workers and the other processes; ",
                    w.native_cpus);
    if (own)
        tp_diag_cat(&f->advice,
                    "keep the job's busy threads within its %g CPUs: DataLoader workers compute on "
                    "one CPU each (num_workers below the CPUs left to the training process), "
                    "torch.set_num_threads() or OMP_NUM_THREADS so that processes x threads fit, "
                    "one rank per share of the CPUs on a shared node (taskset, the scheduler's "
                    "CPU request); a CPU-bound input pipeline that needs more CPUs than there are "
                    "wants less work per sample (cache decoded data)",
                    cpus);
    else
        tp_diag_cat(&f->advice,
                    "find what else runs on these CPUs (top, pidstat): an intra-op pool as wide "
                    "as the machine in each of several processes (torch.set_num_threads() or "
                    "OMP_NUM_THREADS at the CPUs over the processes), another job on the node; "
                    "give the job CPUs of its own (taskset, a cpuset, the scheduler's CPU "
                    "request)");
    tp_diag_put_metric(f, "cpu_wait_ns", (double)waited);
    tp_diag_put_metric(f, "ready_ns", (double)p.cpu_ns);
    tp_diag_put_metric(f, "ran_ns", (double)p.clock_ns);
    tp_diag_put_metric(f, "sampled_wall_ns", (double)p.wall_ns);
    tp_diag_put_metric(f, "demand_cpus", want);
    if (natives_read)
        tp_diag_put_metric(f, "native_demand_cpus", w.native_cpus);
    if (known)
        tp_diag_put_metric(f, "cpus", cpus);
}
