/* tp_diag_samples: samples in a finding's evidence (see the header). */
#include "tp_diag_samples.h"

#include <stdio.h>
#include <stdlib.h>

#include "tp_an_samples.h"
#include "tp_an_stats.h"
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

/* The rank's samples grouped as the report groups them, once for every rule that reads them. */
static const tp_an_samples *samples_of(tp_diag_ctx *d) {
    if (!d->samples) {
        d->samples = tp_an_alloc(1, sizeof *d->samples);
        tp_an_samples_run(d->v, d->v->opts.stack_depth, 0, 0, d->samples);
    }
    return d->samples;
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
        long top = waits ? p.top_wait : p.top_cpu;
        if (top >= 0)
            sampled_row(f, all, top, waits ? "; it waited most at" : "; most of it at",
                        waits ? p.top_wait_ns : p.top_cpu_ns,
                        waits ? p.wall_ns - p.cpu_ns : p.cpu_ns);
        tp_diag_put_metric(f, "sampled_cpu_ns", (double)p.cpu_ns);
        tp_diag_put_metric(f, "sampled_wall_ns", (double)p.wall_ns);
        if (top >= 0)
            tp_diag_put_metric(f, waits ? "sampled_top_wait_ns" : "sampled_top_cpu_ns",
                               (double)(waits ? p.top_wait_ns : p.top_cpu_ns));
        /* Waiting for what? The thread (of any process of the rank: DataLoader workers are
         * processes) that was on a CPU most meanwhile, and where. */
        tp_an_samples_part best = {0};
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
        if (busy && best.top_cpu >= 0 && best.cpu_ns >= (p.wall_ns - p.cpu_ns) / 5) {
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
