/* tp_diag_memory: the memory rules, fragmentation-oom, oom and memory-growth.
 *
 * An allocation failure stops the job: severity 1. The first ALLOC_FAIL is a
 * fragmentation-oom when the allocator had enough free memory (reserved - allocated >=
 * requested) but no free block large enough (or its largest block is unknown), else an oom;
 * its source is the range open at that moment and the failing call's stack. Memory growth
 * samples allocated memory at every step end (>= 4 steps; else at 8 even points of the
 * series) and fires when it grew by at least max(1 MiB, 10 % of the peak) and rose in at
 * least half the intervals; severity: the growth's share of the peak. Series: native traces
 * sum NVTX regions (allocated) and heaps (reserved; without heaps, DEVICE_MEM allocations);
 * Kineto has the device's "Total Allocated" / "Total Reserved". */
#include <stdlib.h>
#include <string.h>

#include "tp_an_stats.h"
#include "tp_diag_ctx.h"
#include "tp_an_env.h"
#include "tp_diag_rules.h"
#include "tp_diag_source.h"
#include "tp_diag_stack.h"
#include "tp_units.h"

#define MIB (1024.0 * 1024.0)

/* ---------------------------------------------------------------- allocation failures */

/* The first allocation failure and what the allocator said about it. */
typedef struct {
    size_t first, fails;
    int64_t req, res, fr, big; /* requested, reserved, free, largest free block; -1: unknown */
    int frag;
} alloc_failure;

static int find_failure(const tp_diag_ctx *d, alloc_failure *a) {
    const tp_memevents *m = &d->r->mem;
    memset(a, 0, sizeof *a);
    a->first = m->n;
    for (size_t i = 0; i < m->n; i++)
        if (m->kind[i] == TP_MEMEV_ALLOC_FAIL)
            a->first = a->fails++ ? a->first : i;
    if (!a->fails)
        return 0;
    size_t k = a->first;
    a->req = m->bytes[k], a->res = m->total_reserved[k];
    a->fr = a->res >= 0 && m->total_allocated[k] >= 0 ? a->res - m->total_allocated[k] : -1;
    a->big = m->largest_free[k];
    if (a->res <= 0) /* nothing reserved: the reporter did not know (a failed cudaMalloc) */
        a->res = a->fr = a->big = -1;
    a->frag = a->fr >= 0 && a->fr >= a->req && (a->big < 0 || a->big < a->req);
    return 1;
}

static void report_failure(tp_diag_ctx *d, const tp_diag_rule *self, const alloc_failure *a) {
    const tp_memevents *m = &d->r->mem;
    tp_finding *f = tp_diag_add(d, self, 1.0);
    tp_diag_cat(&f->title, "%s",
                a->frag ? "fragmentation-oom: an allocation failed although enough memory was "
                          "free, in pieces too small"
                        : "oom: the device ran out of memory");
    char b1[32], b2[32], b3[32], b4[32];
    tp_diag_cat(&f->evidence,
                "allocation of %s (%lld bytes) failed: %s reserved, %s free in cached blocks, "
                "largest free block %s%s; %zu failed allocation(s)",
                tp_units_bytes(b1, 32, (double)a->req), (long long)a->req,
                a->res >= 0 ? tp_units_bytes(b2, 32, (double)a->res) : "?",
                a->fr >= 0 ? tp_units_bytes(b3, 32, (double)a->fr) : "?",
                a->big >= 0 ? tp_units_bytes(b4, 32, (double)a->big) : "?",
                a->frag ? " (free memory exceeds the request but no free block fits)" : "",
                a->fails);
    int expandable = tp_an_env_expandable_segments(d->v->m, d->r);
    if (a->frag && expandable) /* the usual cure is already on: say what is left */
        tp_diag_cat(&f->advice, "%s",
                    "expandable_segments is already on (PYTORCH_CUDA_ALLOC_CONF), so segments "
                    "grow in place and the free pieces are what the program holds between them: "
                    "do not keep activations or outputs alive across steps; keep batch shapes "
                    "stable (pad or bucket); lower the peak (smaller batch with gradient "
                    "accumulation, activation checkpointing); torch.cuda.empty_cache() between "
                    "phases of different shapes");
    else
        tp_diag_cat(&f->advice, "%s",
                    a->frag ? "set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (or "
                              "max_split_size_mb); do not keep activations or outputs alive across "
                              "steps; keep batch shapes stable (pad or bucket) so freed blocks fit "
                              "the next request"
                            : "reduce memory per step: smaller batch with gradient accumulation, "
                              "activation checkpointing, mixed precision; free tensors kept across "
                              "steps");
    long rg = tp_diag_range_at(d, m->ts[a->first]);
    if (rg >= 0)
        tp_diag_range_label(d, rg, &f->source);
    tp_diag_stack_append(d, m->stack[a->first], f);
    if (f->source[0] == ';') /* no range: drop the separator */
        memmove(f->source, f->source + 2, strlen(f->source + 2) + 1);
    tp_diag_put_metric(f, "requested_bytes", (double)a->req);
    tp_diag_put_metric(f, "reserved_bytes", (double)a->res);
    tp_diag_put_metric(f, "free_bytes", (double)a->fr);
    tp_diag_put_metric(f, "largest_free_bytes", (double)a->big);
    tp_diag_put_metric(f, "failures", (double)a->fails);
    if (expandable)
        tp_diag_put_metric(f, "expandable_segments", 1);
    tp_diag_put_metric(f, "ts_ns", (double)m->ts[a->first]);
}

void tp_diag_fragmentation_oom(tp_diag_ctx *d, const tp_diag_rule *self) {
    alloc_failure a;
    if (find_failure(d, &a) && a.frag)
        report_failure(d, self, &a);
}

void tp_diag_oom(tp_diag_ctx *d, const tp_diag_rule *self) {
    alloc_failure a;
    if (find_failure(d, &a) && !a.frag)
        report_failure(d, self, &a);
}

/* ---------------------------------------------------------------- growth */

typedef struct {
    int64_t *t, *v;
    size_t n;
    int64_t peak;
} series;

static void series_push(series *s, int64_t t, int64_t v) {
    s->t[s->n] = t, s->v[s->n++] = v;
    s->peak = v > s->peak ? v : s->peak;
}

/* Allocated (which = 0) or reserved (1) bytes over time. Native: running sums of NVTX
 * regions (allocated), heaps (reserved) and device allocations (reserved when regions exist,
 * else allocated). Kineto: the device's "Total Allocated" / "Total Reserved" values. */
static void build_series(const tp_rank *r, int which, series *s) {
    const tp_memevents *m = &r->mem;
    int has_region = 0, has_heap = 0;
    for (size_t i = 0; i < m->n; i++) {
        has_region |=
            (m->kind[i] == TP_MEMEV_ALLOC || m->kind[i] == TP_MEMEV_FREE) && m->device[i] < 0;
        has_heap |= m->kind[i] == TP_MEMEV_HEAP;
    }
    s->t = tp_an_alloc(m->n + 1, sizeof *s->t);
    s->v = tp_an_alloc(m->n + 1, sizeof *s->v);
    s->n = 0, s->peak = 0;
    int64_t sum = 0;
    for (size_t i = 0; i < m->n; i++) {
        int ab = m->kind[i] == TP_MEMEV_ALLOC || m->kind[i] == TP_MEMEV_FREE;
        if (!r->native) {
            int64_t val = which ? m->total_reserved[i] : m->total_allocated[i];
            if (ab && m->device[i] >= 0 && val >= 0)
                series_push(s, m->ts[i], val);
            continue;
        }
        int take = which == 0 ? ab && (has_region ? m->device[i] < 0 : m->device[i] >= 0)
                   : has_heap ? m->kind[i] == TP_MEMEV_HEAP
                              : ab && has_region && m->device[i] >= 0;
        if (take)
            sum = tp_an_add(sum, m->bytes[i]), series_push(s, m->ts[i], sum);
    }
}

/* Value at time t (after the last event at or before t); -1 when none yet. */
static int64_t series_at(const series *s, int64_t t) {
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->t[mid] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? s->v[lo - 1] : -1;
}

/* Samples at every step end, or at 8 even points over the series when there are < 4 steps
 * (`out` holds max(steps, 8)). */
static size_t sample(const tp_diag_ctx *d, const series *s, int64_t *out) {
    size_t k = 0;
    if (d->n_step_end >= 4) {
        for (size_t i = 0; i < d->n_step_end; i++)
            if (series_at(s, d->step_end[i]) >= 0)
                out[k++] = series_at(s, d->step_end[i]);
        return k;
    }
    if (s->n < 2)
        return 0;
    int64_t span = s->t[s->n - 1] - s->t[0]; /* up to 2^62: span * i could overflow */
    for (int i = 1; i <= 8; i++)
        out[k++] = series_at(s, s->t[0] + span / 8 * i + span % 8 * i / 8);
    return k;
}

static void report_growth(tp_diag_ctx *d, const tp_diag_rule *self, const int64_t *sa, size_t ka,
                          const int64_t *sr, size_t kr, size_t rises, const series *al,
                          const series *re) {
    int64_t growth = sa[ka - 1] - sa[0];
    const char *per = d->n_step_end >= 4 ? "step" : "interval";
    tp_finding *f = tp_diag_add(d, self, tp_diag_share(growth, al->peak));
    char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32];
    tp_diag_cat(&f->title, "memory-growth: allocated device memory keeps rising across %s",
                d->n_step_end >= 4 ? "steps" : "the trace");
    tp_diag_cat(&f->evidence,
                "allocated grew from %s to %s (+%s per %s) and rose in %zu of %zu intervals; peak "
                "allocated %s",
                tp_units_bytes(b1, 32, (double)sa[0]), tp_units_bytes(b2, 32, (double)sa[ka - 1]),
                tp_units_bytes(b3, 32, (double)growth / (double)(ka - 1)), per, rises, ka - 1,
                tp_units_bytes(b4, 32, (double)al->peak));
    if (kr >= 2)
        tp_diag_cat(&f->evidence, "; reserved went from %s to %s",
                    tp_units_bytes(b5, 32, (double)sr[0]),
                    tp_units_bytes(b6, 32, (double)sr[kr - 1]));
    tp_diag_cat(&f->advice,
                "look for tensors kept across steps (losses or outputs appended to a list without "
                ".detach()/.item(), hooks storing activations, growing caches); "
                "torch.cuda.memory_snapshot() shows who holds them");
    tp_diag_put_metric(f, "growth_bytes", (double)growth);
    tp_diag_put_metric(f, "first_bytes", (double)sa[0]);
    tp_diag_put_metric(f, "last_bytes", (double)sa[ka - 1]);
    tp_diag_put_metric(f, "peak_allocated_bytes", (double)al->peak);
    tp_diag_put_metric(f, "peak_reserved_bytes", (double)re->peak);
}

void tp_diag_memory_growth(tp_diag_ctx *d, const tp_diag_rule *self) {
    series al, re;
    build_series(d->r, 0, &al);
    build_series(d->r, 1, &re);
    size_t cap = d->n_step_end > 8 ? d->n_step_end : 8;
    int64_t *sa = tp_an_alloc(cap, sizeof *sa), *sr = tp_an_alloc(cap, sizeof *sr);
    size_t ka = sample(d, &al, sa), kr = sample(d, &re, sr), rises = 0;
    for (size_t i = 1; i < ka; i++)
        rises += sa[i] > sa[i - 1];
    int64_t growth = ka >= 4 ? sa[ka - 1] - sa[0] : 0;
    double thresh = 0.1 * (double)al.peak > MIB ? 0.1 * (double)al.peak : MIB;
    if (ka >= 4 && (double)growth >= thresh && 2 * rises >= ka - 1)
        report_growth(d, self, sa, ka, sr, kr, rises, &al, &re);
    free(sa), free(sr), free(al.t), free(al.v), free(re.t), free(re.v);
}
