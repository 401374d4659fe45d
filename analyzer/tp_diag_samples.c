/* tp_diag_samples: samples in a finding's evidence (see the header). */
#include "tp_diag_samples.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_an_ivset.h"
#include "tp_an_samples.h"
#include "tp_an_stats.h"
#include "tp_an_util.h"
#include "tp_mem.h"
#include "tp_diag_rules.h"
#include "tp_units.h"

/* "<words> <the row's stack> (N%)" into the evidence: row `row` of *all, which holds `part`
 * of `of`. */
static void sampled_row(tp_finding *f, const tp_an_samples *all, long row, const char *words,
                        int64_t part, int64_t of) {
    const tp_an_sample_row *r = &all->s[row];
    char *text = tp_an_frames_text(r->frames, r->n_frames);
    tp_diag_cat(&f->evidence, "%s %s (%.0f%%)", words, text, 100 * tp_diag_share(part, of));
    free(text);
}

int tp_diag_samples_main_thread(const tp_diag_ctx *d, int64_t *pid, int64_t *tid) {
    if (d->main_bucket < 0)
        return 0;
    *pid = d->r->threads.key2[d->main_bucket];
    *tid = d->r->threads.key[d->main_bucket];
    return 1;
}

int tp_diag_samples_step_thread(const tp_diag_ctx *d, int64_t *pid, int64_t *tid) {
    if (tp_diag_samples_main_thread(d, pid, tid))
        return 1;
    for (size_t i = 0; i < d->v->n; i++) {
        size_t row = tp_an_view_row(d->v, i);
        if (!tp_an_view_gpu(d->v, i) && (tp_diag_name_class(d, row) & TP_DIAG_NC_STEP)) {
            *pid = tp_ev_pid(d->ev, row), *tid = tp_ev_tid(d->ev, row);
            return 1;
        }
    }
    return 0;
}

/* The rank's samples grouped as the report groups them, once for every rule that reads them. */
static const tp_an_samples *samples_of(tp_diag_ctx *d) {
    if (!d->samples) {
        d->samples = tp_an_alloc(1, sizeof *d->samples);
        tp_an_samples_run(d->v, d->v->opts.stack_depth, 0, 0, d->samples);
    }
    return d->samples;
}

const tp_an_samples *tp_diag_samples_all(tp_diag_ctx *d) {
    return samples_of(d);
}

/* PyTorch's name for its DataLoader workers' threads (torch/utils/data/_utils/worker.py) */
#define LOADER_WORKER "pt_data_worker"

/* LOADER_WORKER when a process other than `pid` has a sampled thread of that name: then the
 * workers are those processes (not the resource tracker or a compile worker beside them);
 * NULL: every other process. */
static const char *loader_workers(const tp_an_samples *all, int64_t pid) {
    for (size_t t = 0; t < all->n_threads; t++)
        if (all->t[t].pid != pid && !strcmp(all->t[t].name, LOADER_WORKER))
            return LOADER_WORKER;
    return NULL;
}

int tp_diag_samples_waited_cpu(int64_t on_cpu, int64_t wall, int64_t clock) {
    int64_t waited = on_cpu - clock;
    return waited > 0 && waited >= on_cpu / 5 && waited >= wall / 10;
}

int tp_diag_samples_sampled(const tp_finding *f, int64_t *on_cpu, int64_t *wall, int64_t *clock) {
    double o = tp_finding_metric(f, "sampled_cpu_ns"), w = tp_finding_metric(f, "sampled_wall_ns"),
           c = tp_finding_metric(f, "sampled_clock_ns");
    if (isnan(o) || isnan(w) || isnan(c))
        return 0;
    *on_cpu = (int64_t)o, *wall = (int64_t)w, *clock = (int64_t)c;
    return 1;
}

void tp_diag_samples_ran(tp_finding *f, int64_t on_cpu, int64_t wall, int64_t clock, int plural) {
    if (!tp_diag_samples_waited_cpu(on_cpu, wall, clock))
        return;
    char b[32];
    tp_diag_cat(&f->evidence, ", but ran %.0f%% (CPU clock %s: %s waited for a CPU the rest)",
                100 * tp_diag_share(clock, wall), tp_units_dur(b, sizeof b, (double)clock),
                plural ? "they" : "it");
}

int tp_diag_samples_in(tp_diag_ctx *d, tp_finding *f, int64_t pid, int64_t tid, const int64_t *lo,
                       const int64_t *hi, size_t n, const char *lead, const char *who) {
    if (!d->r->samples.n) {
        /* the sampler reads Python threads: the hint is for a Python program's trace */
        if (d->r->native && tp_rank_env(d->v->m, d->r, -1, "python"))
            tp_diag_cat(&f->evidence, " (`trainprof record --sample` samples which lines run "
                                      "there)");
        return 0;
    }
    const tp_an_samples *all = samples_of(d);
    tp_an_samples_part p;
    tp_an_samples_in(d->v, all, pid, tid, lo, hi, n, &p);
    int said = p.samples && p.wall_ns > 0;
    if (said) {
        int waits = p.wall_ns - p.cpu_ns > p.cpu_ns;
        char b1[32], b2[32];
        tp_diag_cat(&f->evidence,
                    "%s (%zu samples): the %s was on a CPU %.0f%% of the time (%s of %s)", lead,
                    p.samples, who, 100 * tp_diag_share(p.cpu_ns, p.wall_ns),
                    tp_units_dur(b1, sizeof b1, (double)p.cpu_ns),
                    tp_units_dur(b2, sizeof b2, (double)p.wall_ns));
        tp_diag_samples_ran(f, p.cpu_ns, p.wall_ns, p.clock_ns, 0);
        long top = waits ? p.top_wait : p.top_cpu;
        if (top >= 0)
            sampled_row(f, all, top, waits ? "; it waited most at" : "; most of it at",
                        waits ? p.top_wait_ns : p.top_cpu_ns,
                        waits ? p.wall_ns - p.cpu_ns : p.cpu_ns);
        tp_diag_put_metric(f, "sampled_cpu_ns", (double)p.cpu_ns);
        tp_diag_put_metric(f, "sampled_wall_ns", (double)p.wall_ns);
        tp_diag_put_metric(f, "sampled_clock_ns", (double)p.clock_ns);
        if (top >= 0)
            tp_diag_put_metric(f, waits ? "sampled_top_wait_ns" : "sampled_top_cpu_ns",
                               (double)(waits ? p.top_wait_ns : p.top_cpu_ns));
        /* Waiting for what? The thread (of any process of the rank: DataLoader workers are
         * processes) that was on a CPU most meanwhile, and where. */
        tp_an_samples_part best = {0}, grp = {0};
        const tp_an_sample_thread *busy = NULL;
        for (size_t t = 0; waits && t < all->n_threads; t++) {
            const tp_an_sample_thread *o = &all->t[t];
            if (o->pid == pid && o->tid == tid)
                continue;
            tp_an_samples_part q;
            tp_an_samples_in(d->v, all, o->pid, o->tid, lo, hi, n, &q);
            if (q.cpu_ns > best.cpu_ns)
                best = q, busy = o;
        }
        /* Several worker processes share the work (DataLoader workers, each a batch at a
         * time): together they say more than the busiest of them. */
        const char *named = loader_workers(all, pid);
        if (waits)
            tp_an_samples_in_others(d->v, all, pid, named, lo, hi, n, &grp);
        if (grp.n_procs >= 2 && grp.cpu_ns > best.cpu_ns && grp.top_cpu >= 0 &&
            grp.cpu_ns >= (p.wall_ns - p.cpu_ns) / 5) {
            char b3[32], b4[32];
            tp_diag_cat(&f->evidence,
                        "; meanwhile %zu other processes%s were on a CPU %.0f%% of the "
                        "time (each its busiest thread: %s of %s)",
                        grp.n_procs, named ? " (DataLoader workers)" : "",
                        100 * tp_diag_share(grp.lead_cpu_ns, grp.lead_wall_ns),
                        tp_units_dur(b3, sizeof b3, (double)grp.lead_cpu_ns),
                        tp_units_dur(b4, sizeof b4, (double)grp.lead_wall_ns));
            tp_diag_samples_ran(f, grp.lead_cpu_ns, grp.lead_wall_ns, grp.lead_clock_ns, 1);
            sampled_row(f, all, grp.top_cpu, ", most at", grp.top_cpu_ns, grp.cpu_ns);
            tp_diag_put_metric(f, "sampled_other_cpu_ns", (double)grp.cpu_ns);
            tp_diag_put_metric(f, "sampled_other_procs", (double)grp.n_procs);
        } else if (busy && best.top_cpu >= 0 && best.cpu_ns >= (p.wall_ns - p.cpu_ns) / 5) {
            tp_diag_cat(&f->evidence,
                        "; meanwhile thread %lld/%lld%s%s was on a CPU %.0f%% of the time",
                        (long long)busy->pid, (long long)busy->tid, busy->name[0] ? " " : "",
                        busy->name, 100 * tp_diag_share(best.cpu_ns, best.wall_ns));
            /* in the training thread's process and holding the GIL most of the time: whatever
             * the training thread waited for, it could not have run Python meanwhile */
            int gil = busy->pid == pid && best.gil_ns >= best.wall_ns / 2;
            if (gil)
                tp_diag_cat(&f->evidence, " and held the GIL %.0f%% of it",
                            100 * tp_diag_share(best.gil_ns, best.wall_ns));
            sampled_row(f, all, best.top_cpu, ", most at", best.top_cpu_ns, best.cpu_ns);
            if (gil)
                tp_diag_cat(&f->evidence,
                            " (a thread that holds the GIL that much keeps every other Python "
                            "thread of its process from running: such work belongs in worker "
                            "processes, as DataLoader workers)");
            tp_diag_put_metric(f, "sampled_other_cpu_ns", (double)best.cpu_ns);
            tp_diag_put_metric(f, "sampled_other_gil_ns", (double)best.gil_ns);
        }
    }
    return said;
}

/* The index of the interval of the n sorted [lo, hi) that holds `t`, or begins at most `early`
 * after it; n when none. */
static size_t interval_at(const int64_t *lo, const int64_t *hi, size_t n, int64_t t,
                          int64_t early) {
    size_t a = tp_an_first_end_after(hi, n, t);
    int64_t gap;
    return a < n && (lo[a] <= t || (!__builtin_sub_overflow(lo[a], t, &gap) && gap <= early)) ? a
                                                                                              : n;
}

/* What starting and stopping each set of workers cost: the data-loading interval each set
 * started in (the one holding its first sample: the iterator's first fetch, which waits for
 * them) and the one it ended in (holding its last sample, or begun at most a sampling period
 * after it: the fetch that ends the epoch, where the iterator joins its workers) against the
 * others, into the evidence and the metric worker_churn_ns (their sum). */
static int64_t churn(tp_finding *f, const tp_an_sample_workers *w, int64_t hz, const int64_t *lo,
                     const int64_t *hi, size_t n) {
    if (!n)
        return 0;
    int64_t period = hz > 0 ? 1000000000 / hz : 0;
    char *kind = tp_mem_xcalloc(n, 1); /* 1: a first fetch, 2: a last one */
    for (size_t g = 0; g < w->generations; g++) {
        size_t a = interval_at(lo, hi, n, w->starts[g], 0),
               z = interval_at(lo, hi, n, w->ends[g], period);
        if (a < n)
            kind[a] = 1;
        if (z < n && z != a)
            kind[z] = 2;
    }
    double *rest = tp_mem_xalloc(n + 1, sizeof *rest);
    size_t n_rest = 0, count[3] = {0};
    int64_t sum[3] = {0};
    for (size_t i = 0; i < n; i++) {
        count[(int)kind[i]]++, sum[(int)kind[i]] = tp_an_add(sum[(int)kind[i]], hi[i] - lo[i]);
        if (!kind[i])
            rest[n_rest++] = (double)(hi[i] - lo[i]);
    }
    if ((count[1] || count[2]) && n_rest) {
        char b1[32], b2[32], b3[32];
        tp_diag_cat(&f->evidence, "; the waits for a set's first batch took %s on average (%zu)",
                    count[1] ? tp_units_dur(b1, sizeof b1, (double)sum[1] / (double)count[1]) : "-",
                    count[1]);
        tp_diag_cat(&f->evidence, ", for the batch that ended a set (its workers joined) %s (%zu)",
                    count[2] ? tp_units_dur(b2, sizeof b2, (double)sum[2] / (double)count[2]) : "-",
                    count[2]);
        tp_diag_cat(&f->evidence, ", any other batch %s (median)",
                    tp_units_dur(b3, sizeof b3, tp_an_percentile(rest, n_rest, 50)));
        tp_diag_put_metric(f, "worker_churn_ns", (double)tp_an_add(sum[1], sum[2]));
    }
    free(kind), free(rest);
    return n_rest ? tp_an_add(sum[1], sum[2]) : 0;
}

void tp_diag_samples_loader_advice(tp_diag_ctx *d, tp_finding *f, int64_t pid, const int64_t *lo,
                                   const int64_t *hi, size_t n, const char *otherwise) {
    if (!d->r->samples.n) {
        tp_diag_cat(&f->advice, "%s", otherwise);
        return;
    }
    const tp_an_samples *all = samples_of(d);
    tp_an_sample_workers w;
    const char *named = loader_workers(all, pid);
    tp_an_samples_workers(d->v, all, pid, named, &w);
    if (!w.procs)
        free(w.starts), free(w.ends);
    /* sampled, and no other process: where the training thread computed its batches, or
     * waited while another thread of its process was busy (a producer thread: the evidence
     * named it), they are made in its process; where it waited and nothing was busy, whoever
     * made them is not in this trace (a live window or a capture holds one process) */
    int64_t on, wall, clock;
    if (!w.procs && tp_diag_samples_sampled(f, &on, &wall, &clock) && wall - on > on &&
        isnan(tp_finding_metric(f, "sampled_other_cpu_ns"))) {
        tp_diag_cat(&f->advice,
                    "the training thread mostly waited for its batches, and no process that "
                    "makes them was sampled here (a live window or a capture holds the training "
                    "process alone: `trainprof report` on the recording reads its workers' "
                    "traces); %s",
                    otherwise);
        return;
    }
    if (!w.procs) {
        tp_diag_cat(&f->advice,
                    "the batches are made in the training process itself: DataLoader workers "
                    "(num_workers > 0) make them beside the training loop; then move decoding "
                    "and augmentation into the Dataset, or cache preprocessed data");
        return;
    }
    tp_diag_cat(&f->evidence, ". %zu worker process%s sampled, %zu at a time%s", w.procs,
                w.procs == 1 ? "" : "es", w.at_once, w.generations > 1 ? "," : "");
    if (w.generations > 1)
        tp_diag_cat(&f->evidence, " started %zu times", w.generations);
    int64_t churned = w.generations > 1 ? churn(f, &w, all->hz, lo, hi, n) : 0, waited = 0;
    for (size_t i = 0; i < n; i++)
        waited = tp_an_add(waited, hi[i] - lo[i]);
    free(w.starts), free(w.ends);
    tp_diag_put_metric(f, "worker_procs", (double)w.procs);
    tp_diag_put_metric(f, "workers_at_once", (double)w.at_once);
    tp_diag_put_metric(f, "worker_starts", (double)w.generations);
    if (w.generations > 1)
        tp_diag_cat(&f->advice,
                    "persistent_workers=True keeps the workers from one iterator to the next "
                    "(without it each epoch and each evaluation starts them anew: %zu times "
                    "here, and the first batch of each waits for them); ",
                    w.generations);
    if (tp_diag_share(churned, waited) >= 0.5) {
        /* what the workers do then is starting (imports, a spawned worker's copy of the
         * program): more of them would start more */
        tp_diag_cat(&f->advice,
                    "most of the waiting (%.0f%%) is for the workers to start and to be joined",
                    100 * tp_diag_share(churned, waited));
        return;
    }
    tp_an_samples_part g;
    tp_an_samples_in_others(d->v, all, pid, named, lo, hi, n, &g);
    if (g.top_cpu >= 0 && tp_diag_share(g.lead_cpu_ns, g.lead_wall_ns) >= 0.5 &&
        tp_diag_samples_waited_cpu(g.lead_cpu_ns, g.lead_wall_ns, g.lead_clock_ns)) {
        /* busy, and short of CPUs: more workers would share the same ones */
        const tp_an_sample_row *r = &all->s[g.top_cpu];
        char *text = tp_an_frames_text(r->frames, r->n_frames);
        tp_diag_cat(&f->advice,
                    "the workers were ready to run %.0f%% of the time in the waits but ran "
                    "%.0f%%: they waited for a CPU, so more of them would wait too; the job "
                    "needs fewer busy threads on its CPUs (cpu-contention, when it fires, says "
                    "who) or less work per sample: they spent most at %s",
                    100 * tp_diag_share(g.lead_cpu_ns, g.lead_wall_ns),
                    100 * tp_diag_share(g.lead_clock_ns, g.lead_wall_ns), text);
        free(text);
    } else if (g.top_cpu >= 0 && tp_diag_share(g.lead_cpu_ns, g.lead_wall_ns) >= 0.5) {
        const tp_an_sample_row *r = &all->s[g.top_cpu];
        char *text = tp_an_frames_text(r->frames, r->n_frames);
        tp_diag_cat(&f->advice,
                    "the workers were busy (on a CPU %.0f%% of the time in the waits): "
                    "more of them (num_workers above %zu, cores allowing) or less work each: "
                    "they spent most at %s",
                    100 * tp_diag_share(g.lead_cpu_ns, g.lead_wall_ns), w.at_once, text);
        free(text);
    } else {
        tp_diag_cat(&f->advice,
                    "the workers were mostly idle while the loop waited: a larger "
                    "prefetch_factor lets them work ahead; then look at what the training "
                    "process does to receive each batch (collate, pin_memory, unpickling)");
    }
}
