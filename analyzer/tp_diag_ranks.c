/* tp_diag_ranks: the cross-rank rules (tp_diag_rank_rules.h), judged from the ranks' summary
 * rows and the medians over them (tp_an_ranks), so that `report` on traces and `merge` on the
 * per-rank JSONs find the same. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_diag_rank_rules.h"
#include "tp_mem.h"
#include "tp_units.h"

#define STRAGGLER_RATIO 1.2 /* own work per step >= 1.2 x the median rank's */
#define WAIT_RATIO 1.5      /* exposed communication >= 1.5 x the least */
#define WAIT_MIN_SHARE 0.10 /* ... and apart by >= 10 % of the median step */
#define MEMORY_RATIO 1.2    /* peak allocated >= 1.2 x the median rank's */
#define INPUT_RATIO 1.5     /* data loading per step >= 1.5 x the other ranks' median ... */
#define INPUT_MIN_SHARE WAIT_MIN_SHARE /* ... and above it by >= 10 % of the median step */

void tp_diag_rank_straggler(tp_an_ranks *x, const tp_an_rank_rule *self) {
    char b1[32], b2[32], b3[32], b4[32];
    double med = x->median_own_p50_ns;
    if (isnan(med) || med <= 0)
        return;
    for (size_t i = 0; i < x->n; i++) {
        const tp_an_rank_row *r = &x->r[i];
        if (isnan(r->own_p50_ns) || r->own_p50_ns < STRAGGLER_RATIO * med)
            continue;
        tp_an_rank_finding *f =
            tp_an_ranks_add_finding(x, self, (r->own_p50_ns - med) / r->own_p50_ns, r->rank);
        snprintf(f->title, sizeof f->title,
                 "straggler: rank %d's own work per step is %.2fx the median rank's", r->rank,
                 r->own_p50_ns / med);
        snprintf(f->evidence, sizeof f->evidence,
                 "rank %d: median step %s (p90 %s), %s of it outside %s, against %s for the "
                 "median rank over %zu ranks; in a synchronous job every collective waits for "
                 "the slowest rank",
                 r->rank, tp_units_dur(b1, sizeof b1, r->step_p50_ns),
                 tp_units_dur(b2, sizeof b2, r->step_p90_ns),
                 tp_units_dur(b3, sizeof b3, r->own_p50_ns),
                 tp_an_rank_host_waits(r)
                     ? "its waits (its step thread sampled off a CPU, data loading aside: "
                       "without a device, where it waits in collectives)"
                     : "waits in collectives",
                 tp_units_dur(b4, sizeof b4, med), x->n);
        f->advice = "look at this rank's own findings (input-bound: its data loading; "
                    "memory or sharding: an uneven share of data, sequence lengths or FSDP "
                    "shards), its device (clocks, a shared or throttled GPU) and host (CPU "
                    "contention, NUMA); the other ranks' exposed communication is largely "
                    "waiting for it";
    }
}

/* Whether row r's waits take part: its communication kernels when any rank ran some (`host`
 * 0), else its sampled host waits (`host` 1). */
static int has_waits(const tp_an_rank_row *r, int host) {
    return host ? tp_an_rank_host_waits(r) : r->comm_ns > 0;
}

/* The rank with the least waits (tp_an_rank_waits) among the ranks with any, by communication
 * kernels when some rank ran them, else by sampled host waits (*host 1); NULL with fewer than
 * two such ranks. */
static const tp_an_rank_row *last_to_arrive(const tp_an_ranks *x, int *host) {
    *host = 1;
    for (size_t i = 0; i < x->n; i++)
        *host &= x->r[i].comm_ns <= 0;
    const tp_an_rank_row *least = NULL;
    size_t n_comm = 0;
    for (size_t i = 0; i < x->n; i++)
        if (has_waits(&x->r[i], *host)) {
            n_comm++;
            if (!least || tp_an_rank_waits(&x->r[i]) < tp_an_rank_waits(least))
                least = &x->r[i];
        }
    return n_comm >= 2 ? least : NULL;
}

/* Appends `item` as the n-th of the list `buf` ("0, 1, 3"), ending it with ", ..." past 100
 * characters (buf holds 128 or more). */
static void list_add(char *buf, size_t size, size_t *used, size_t n, const char *item) {
    if (*used >= 100)
        return;
    int w = snprintf(buf + *used, size - *used, "%s%s", n ? ", " : "", item);
    *used += w > 0 && (size_t)w < size - *used ? (size_t)w : 0;
    if (*used >= 100)
        *used += (size_t)snprintf(buf + *used, size - *used, ", ...");
}

static void list_rank(char *buf, size_t size, size_t *used, size_t n, int rank) {
    char item[16];
    snprintf(item, sizeof item, "%d", rank);
    list_add(buf, size, used, n, item);
}

void tp_diag_rank_collective_wait(tp_an_ranks *x, const tp_an_rank_rule *self) {
    char b1[32], b2[32];
    double med = x->median_step_p50_ns;
    int host;
    const tp_an_rank_row *least = last_to_arrive(x, &host);
    if (!least || isnan(med) || med <= 0)
        return;
    int64_t least_w = tp_an_rank_waits(least);
    char waiting[128] = ""; /* the waiting ranks, "0, 1, 3" */
    size_t used = 0, n_wait = 0;
    int64_t most = 0;
    for (size_t i = 0; i < x->n; i++) {
        const tp_an_rank_row *r = &x->r[i];
        if (r == least || !has_waits(r, host))
            continue;
        int64_t w = tp_an_rank_waits(r);
        double steps = r->n_steps ? (double)r->n_steps : 1;
        double apart = (double)(w - least_w) / steps;
        if ((double)w < WAIT_RATIO * (double)least_w || apart < WAIT_MIN_SHARE * med)
            continue;
        list_rank(waiting, sizeof waiting, &used, n_wait++, r->rank);
        most = w > most ? w : most;
    }
    if (!n_wait)
        return;
    double per_step = (double)(most - least_w) / (double)(least->n_steps ? least->n_steps : 1);
    tp_an_rank_finding *f = tp_an_ranks_add_finding(x, self, per_step / med, least->rank);
    snprintf(f->title, sizeof f->title,
             "collective-wait: rank%s %s wait%s in collectives for rank %d, which arrives last",
             n_wait > 1 ? "s" : "", waiting, n_wait > 1 ? "" : "s", least->rank);
    snprintf(f->evidence, sizeof f->evidence,
             host ? "no device: the step threads' time off a CPU in their steps, data loading "
                    "aside (sampled), up to %s on rank%s %s against %s on rank %d (the least: it "
                    "arrives last, the others wait for it in the collective)"
                  : "communication no computation hides: up to %s on rank%s %s against %s on "
                    "rank %d (the least: it arrives last, the others wait for it inside the "
                    "collective)",
             tp_units_dur(b1, sizeof b1, (double)most), n_wait > 1 ? "s" : "", waiting,
             tp_units_dur(b2, sizeof b2, (double)least_w), least->rank);
    f->advice = "the time is lost before the collective on the rank that arrives last: look at "
                "its work between collectives (its own findings, its data and shard sizes); "
                "balancing it shortens every rank's step";
}

/* Severity: the share of the rank's peak above the median rank's, as straggler's share of
 * its own work. */
void tp_diag_rank_memory_imbalance(tp_an_ranks *x, const tp_an_rank_rule *self) {
    char b1[32], b2[32];
    double med = x->median_mem_peak;
    if (isnan(med) || med <= 0)
        return;
    size_t n_mem = 0;
    for (size_t i = 0; i < x->n; i++)
        n_mem += x->r[i].mem_peak_bytes > 0;
    for (size_t i = 0; i < x->n; i++) {
        const tp_an_rank_row *r = &x->r[i];
        double peak = (double)r->mem_peak_bytes;
        if (r->mem_peak_bytes <= 0 || peak < MEMORY_RATIO * med)
            continue;
        tp_an_rank_finding *f = tp_an_ranks_add_finding(x, self, (peak - med) / peak, r->rank);
        snprintf(f->title, sizeof f->title,
                 "memory-imbalance: rank %d's peak device memory is %.2fx the median rank's",
                 r->rank, peak / med);
        snprintf(f->evidence, sizeof f->evidence,
                 "rank %d: peak allocated %s against %s for the median rank over %zu ranks "
                 "with memory events; the job's batch and model size are bounded by this rank",
                 r->rank, tp_units_bytes(b1, sizeof b1, peak), tp_units_bytes(b2, sizeof b2, med),
                 n_mem);
        f->advice = "the ranks should hold equal shares: check how parameters, optimizer state "
                    "and activations are sharded (FSDP/ZeRO wrapping, uneven embedding tables or "
                    "pipeline stages), whether this rank gets longer sequences or larger batches "
                    "(bucket by length, pad evenly), and whether it alone keeps extra buffers "
                    "(rank-0 logging, evaluation, checkpointing); its own memory report names "
                    "who holds the peak";
    }
}

/* Data loading per step of row r (tp_an_host's data time in the steps' window over its steps),
 * NaN for a rank without steps. */
static double data_per_step(const tp_an_rank_row *r) {
    return r->n_steps && !isnan(r->step_p50_ns) ? (double)r->data_wait_ns / (double)r->n_steps
                                                : NAN;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median data loading per step of the ranks with steps other than row `self`; NaN when
 * there is none. Against the others, not all ranks: with two ranks the median of both would
 * be their mean, half made of the rank judged. */
static double others_median(const tp_an_ranks *x, size_t self, double *buf) {
    size_t n = 0;
    for (size_t i = 0; i < x->n; i++)
        if (i != self && !isnan(data_per_step(&x->r[i])))
            buf[n++] = data_per_step(&x->r[i]);
    if (!n)
        return NAN;
    qsort(buf, n, sizeof *buf, cmp_double);
    return n % 2 ? buf[n / 2] : (buf[n / 2 - 1] + buf[n / 2]) / 2;
}

/* A synchronous job runs at the pace of its slowest input pipeline: where one rank loads its
 * data for longer than the others, they wait for it in the next collective, and the wait shows
 * on them (as exposed communication, or, without device activity, as host time in the step),
 * not on it. Without device activity (gloo on CPUs) the straggler rule sees equal steps and
 * no communication, so this rule judges the data loading itself: the rank's data time per
 * step >= 1.5x the other ranks' median and above it by >= 10 % of the median step. Severity:
 * that excess over the rank's median step. */
void tp_diag_rank_input_straggler(tp_an_ranks *x, const tp_an_rank_rule *self) {
    char b1[32], b2[32], b3[32], b4[32];
    double med = x->median_step_p50_ns;
    if (isnan(med) || med <= 0)
        return;
    double *buf = tp_mem_xalloc(x->n, sizeof *buf);
    for (size_t i = 0; i < x->n; i++) {
        const tp_an_rank_row *r = &x->r[i];
        double d = data_per_step(r), others = others_median(x, i, buf);
        if (isnan(d) || isnan(others) || d < INPUT_RATIO * others ||
            d - others < INPUT_MIN_SHARE * med)
            continue;
        tp_an_rank_finding *f =
            tp_an_ranks_add_finding(x, self, (d - others) / r->step_p50_ns, r->rank);
        snprintf(f->title, sizeof f->title,
                 "input-straggler: rank %d loads its data for %s a step against %s on the "
                 "%s, which wait%s for it",
                 r->rank, tp_units_dur(b1, sizeof b1, d), tp_units_dur(b2, sizeof b2, others),
                 x->n == 2 ? "other rank" : "others", x->n == 2 ? "s" : "");
        snprintf(f->evidence, sizeof f->evidence,
                 "rank %d: data-loading ranges %s per step over %zu steps, against %s%s%s; its "
                 "median step %s, the job's %s: in a synchronous job each collective waits for "
                 "the rank that comes last",
                 r->rank, tp_units_dur(b1, sizeof b1, d), r->n_steps,
                 x->n == 2 ? "" : "a median of ", tp_units_dur(b2, sizeof b2, others),
                 x->n == 2 ? " on the other rank" : " over the other ranks",
                 tp_units_dur(b3, sizeof b3, r->step_p50_ns), tp_units_dur(b4, sizeof b4, med));
        f->advice = "give this rank's input pipeline what the others have: as many DataLoader "
                    "workers and prefetch, its share of the data on storage as fast (a local "
                    "copy, not a network path), no extra work in its loop (rank-0 logging or "
                    "evaluation), and samples of even cost (shard by size, not by count)";
    }
    free(buf);
}

/* The sampled ranks of one machine (the same `host`, its cores known, every rank's processes
 * free to use all of them: an affinity mask or a quota per rank splits the machine, which each
 * rank's own cpu-contention judges) whose Python threads together want at least as many CPUs at
 * a time as it has cores: each rank waits for the CPUs the others hold. A finding per machine,
 * naming the rank that wants the most; severity: the demand above the cores, over the demand. */
void tp_diag_rank_cpu_oversubscribed(tp_an_ranks *x, const tp_an_rank_rule *self) {
    unsigned char *done = tp_mem_xcalloc(x->n + 1, 1);
    for (size_t i = 0; i < x->n; i++) {
        const tp_an_rank_row *a = &x->r[i];
        if (done[i] || isnan(a->cpu_demand) || !a->host[0] || a->cores <= 0)
            continue;
        double sum = 0;
        size_t n = 0, most = i;
        int whole = 1; /* every rank of the machine may use all its cores */
        char ranks[128] = "", want[160] = "";
        size_t used = 0, wused = 0;
        for (size_t j = i; j < x->n; j++) {
            const tp_an_rank_row *b = &x->r[j];
            if (done[j] || isnan(b->cpu_demand) || strcmp(b->host, a->host) != 0)
                continue;
            done[j] = 1;
            sum += b->cpu_demand;
            whole &= b->cores == a->cores && b->cpus >= (double)b->cores;
            most = b->cpu_demand > x->r[most].cpu_demand ? j : most;
            char item[32];
            snprintf(item, sizeof item, "%.1f", b->cpu_demand);
            list_rank(ranks, sizeof ranks, &used, n, b->rank);
            list_add(want, sizeof want, &wused, n, item);
            n++;
        }
        if (n < 2 || !whole || sum < (double)a->cores)
            continue;
        tp_an_rank_finding *f =
            tp_an_ranks_add_finding(x, self, (sum - (double)a->cores) / sum, x->r[most].rank);
        snprintf(f->title, sizeof f->title,
                 "cpu-oversubscribed: the %zu ranks on %s want %.1f CPUs at a time, on %lld "
                 "cores",
                 n, a->host, sum, (long long)a->cores);
        snprintf(f->evidence, sizeof f->evidence,
                 "ranks %s on %s: their sampled Python threads (training threads, DataLoader "
                 "workers; not their native threads) were ready to run or running %s at a time "
                 "over their steps, %.1f together against the machine's %lld cores: each rank "
                 "waits for the CPUs the others hold (rank %d wants the most)",
                 ranks, a->host, want, sum, (long long)a->cores, x->r[most].rank);
        f->advice = "fewer busy threads per rank: DataLoader workers at most (cores - ranks) / "
                    "ranks each, torch.set_num_threads() or OMP_NUM_THREADS at cores / ranks; "
                    "bind each rank to its share of the cores (numactl or taskset per "
                    "LOCAL_RANK, the launcher's binding option), then each rank's own "
                    "cpu-contention judges its share";
    }
    free(done);
}
