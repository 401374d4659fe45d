/* tp_diag_steps: slow steps among regular ones (step-spikes).
 *
 * A loop whose steps mostly take about the median but a few take twice that or more loses
 * the difference to whatever those few do: periodic evaluation, checkpointing or logging, a
 * garbage-collector pause, a data stall, a recompilation. Judged on the steps after warm-up
 * and the first (at least 10): the slow ones are those of >= 2x the median and >= 5 ms over
 * it; the severity is their time over the median, as a share of all the judged steps' time.
 * The evidence says how many, how slow, whether they come every N-th step (three gaps in
 * four), which range holds most of the extra time (per name: its time in a slow step against
 * its time in the others, any CPU-side range that starts in a step) and, with samples, what
 * the step thread did in them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tp_an_enclosing.h"
#include "tp_an_stats.h"
#include "tp_diag_ctx.h"
#include "tp_diag_rules.h"
#include "tp_diag_samples.h"
#include "tp_units.h"

#define SPIKE_RATIO 2.0
#define SPIKE_MIN_NS                                                                               \
    5000000 /* over the median: no finding on the system's jitter (a 1.5 ms                        \
               hiccup of a 0.3 ms step, twice in 60: the launch-bound trainer) */
#define SPIKE_MIN_STEPS 10
#define SPIKE_SHARE 0.10

static int cmp_size(const void *a, const void *b) {
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

/* The judged step holding time ts (steps sorted by start, not overlapping), or -1. */
static long step_of(const int64_t *s0, const int64_t *s1, size_t n, int64_t ts) {
    size_t lo = 0, hi = n;
    while (lo < hi) { /* the first step starting after ts */
        size_t mid = lo + (hi - lo) / 2;
        if (s0[mid] <= ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && ts < s1[lo - 1] ? (long)lo - 1 : -1;
}

/* The range name with the most time over its usual share in the slow steps: its id, and
 * *slow_ns / *other_ns its mean time in a slow step and in another. 0: none. */
static uint32_t culprit(tp_diag_ctx *d, const int64_t *s0, const int64_t *s1, size_t n,
                        const unsigned char *slow, size_t n_slow, int64_t *slow_ns,
                        int64_t *other_ns, int64_t *excess_ns) {
    const tp_an_view *v = d->v;
    int64_t *in_slow = tp_an_alloc(d->n_names + 1, sizeof *in_slow),
            *in_other = tp_an_alloc(d->n_names + 1, sizeof *in_other);
    for (size_t i = 0; i < v->n; i++) {
        if (tp_an_view_gpu(v, i))
            continue;
        size_t row = tp_an_view_row(v, i);
        uint32_t name = d->ev->name[row];
        if (!tp_an_is_range(d->ev->cat[row], TP_AN_RANGES_ALL) || name >= d->n_names ||
            (tp_diag_name_class(d, row) & TP_DIAG_NC_STEP))
            continue;
        long k = step_of(s0, s1, n, tp_an_view_ts(v, i));
        if (k >= 0)
            *(slow[k] ? &in_slow[name] : &in_other[name]) += tp_ev_dur(d->ev, row);
    }
    uint32_t best = 0;
    double best_x = 0;
    for (uint32_t k = 1; k < d->n_names; k++) {
        double x = (double)in_slow[k] - (double)n_slow * (double)in_other[k] / (double)(n - n_slow);
        if (x > best_x)
            best = k, best_x = x;
    }
    if (best) {
        *slow_ns = in_slow[best] / (int64_t)n_slow;
        *other_ns = in_other[best] / (int64_t)(n - n_slow);
        *excess_ns = (int64_t)best_x;
    }
    free(in_slow), free(in_other);
    return best;
}

void tp_diag_step_spikes(tp_diag_ctx *d, const tp_diag_rule *self) {
    const tp_diagnosis *o = d->out;
    /* the steps after warm-up; the first step is one-time work even under the warm-up ratio
     * (the first batch built, caches filled: the trainer's at 3x the median), never a spike */
    size_t first = o->n_warmup ? o->n_warmup : 1, n = o->n_steps > first ? o->n_steps - first : 0;
    if (n < SPIKE_MIN_STEPS || o->warmup_only)
        return;
    const int64_t *s0 = o->step_start + first, *s1 = o->step_end + first;
    double *dur = tp_an_alloc(n, sizeof *dur), total = 0;
    for (size_t k = 0; k < n; k++)
        dur[k] = (double)(s1[k] - s0[k]), total += dur[k];
    double *sorted = tp_an_alloc(n, sizeof *sorted);
    memcpy(sorted, dur, n * sizeof *dur);
    double med = tp_an_percentile(sorted, n, 50);
    free(sorted);
    unsigned char *slow = tp_an_alloc(n, 1);
    size_t n_slow = 0, longest = 0, *at = tp_an_alloc(n, sizeof *at);
    double excess = 0;
    for (size_t k = 0; k < n; k++) {
        slow[k] = med > 0 && dur[k] >= SPIKE_RATIO * med && dur[k] - med >= SPIKE_MIN_NS;
        if (slow[k]) {
            at[n_slow++] = k;
            excess += dur[k] - med;
            longest = dur[k] > dur[longest] || !slow[longest] ? k : longest;
        }
    }
    double share = total > 0 ? excess / total : 0;
    if (!n_slow || n_slow * 2 > n || share < SPIKE_SHARE) {
        free(dur), free(slow), free(at);
        return;
    }
    /* every G-th step: the slow ones (3 or more) G steps apart, three gaps in four or more (an
     * epoch's end shifts the count: a checkpoint every 10 batches of 64) */
    size_t every = 0;
    if (n_slow >= 3) {
        size_t *gap = tp_an_alloc(n_slow - 1, sizeof *gap), best = 0;
        for (size_t k = 1; k < n_slow; k++)
            gap[k - 1] = at[k] - at[k - 1];
        qsort(gap, n_slow - 1, sizeof *gap, cmp_size);
        for (size_t k = 0, run; k < n_slow - 1; k += run) {
            for (run = 1; k + run < n_slow - 1 && gap[k + run] == gap[k]; run++)
                ;
            if (run > best)
                best = run, every = gap[k];
        }
        if (4 * best < 3 * (n_slow - 1))
            every = 0;
        free(gap);
    }
    tp_finding *f = tp_diag_add(d, self, share);
    char b1[32], b2[32], b3[32];
    tp_diag_cat(&f->title, "step-spikes: %zu of %zu steps take %.0fx the median or more", n_slow, n,
                SPIKE_RATIO);
    if (every)
        tp_diag_cat(&f->title, ", one every %zu steps", every);
    tp_diag_cat(&f->evidence,
                "%zu of the %zu steps after warm-up take %.0fx the median step (%s) or more, the "
                "slowest %s (step %zu); their time over the median, %s, is %.1f%% of the steps' "
                "time",
                n_slow, n, SPIKE_RATIO, tp_units_dur(b1, sizeof b1, med),
                tp_units_dur(b2, sizeof b2, dur[longest]), first + longest + 1,
                tp_units_dur(b3, sizeof b3, excess), 100 * share);
    if (every)
        tp_diag_cat(&f->evidence, "; they come every %zu steps (steps %zu, %zu, ...)", every,
                    first + at[0] + 1, first + at[0] + every + 1);
    int64_t in_slow = 0, in_other = 0, x = 0;
    uint32_t name = culprit(d, s0, s1, n, slow, n_slow, &in_slow, &in_other, &x);
    if (name && (double)x >= 0.3 * excess)
        tp_diag_cat(&f->evidence,
                    ". Most of the extra time is in range '%s': %s in a slow step against %s in "
                    "the others",
                    tp_model_str(d->v->m, name), tp_units_dur(b1, sizeof b1, (double)in_slow),
                    tp_units_dur(b2, sizeof b2, (double)in_other));
    int64_t pid = 0, tid = 0;
    if (tp_diag_samples_step_thread(d, &pid, &tid)) {
        int64_t *lo = tp_an_alloc(n_slow, sizeof *lo), *hi = tp_an_alloc(n_slow, sizeof *hi);
        for (size_t k = 0; k < n_slow; k++)
            lo[k] = s0[at[k]], hi[k] = s1[at[k]];
        tp_diag_samples_in(d, f, pid, tid, lo, hi, n_slow, ". Sampled in the slow steps",
                           "step thread");
        free(lo), free(hi);
    }
    /* the step thread had work and no CPU in the slow steps: who took the CPUs comes first */
    int64_t on, wall, clock;
    if (tp_diag_samples_sampled(f, &on, &wall, &clock) &&
        tp_diag_samples_waited_cpu(on, wall, clock))
        tp_diag_cat(&f->advice,
                    "the step thread waited for a CPU in the slow steps: find what took the "
                    "CPUs then (other threads or processes of the job, cpu-contention when it "
                    "fires, or other programs); ");
    tp_diag_cat(&f->advice,
                "find what the slow steps do that the others do not (the range and lines "
                "above): evaluation, checkpointing or logging every N steps belongs outside the "
                "timed loop or in a background thread or process; a data stall wants more "
                "DataLoader workers or prefetch; Python's garbage collector pauses (gc.freeze() "
                "after set-up); a recompiling torch.compile (changing shapes: mark them dynamic)");
    tp_diag_put_metric(f, "slow_steps", (double)n_slow);
    tp_diag_put_metric(f, "steps", (double)n);
    tp_diag_put_metric(f, "median_ns", med);
    tp_diag_put_metric(f, "excess_ns", excess);
    tp_diag_put_metric(f, "every", (double)every);
    tp_diag_put_metric(f, "share", share);
    free(dur), free(slow), free(at);
}
