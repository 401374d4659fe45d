/* tp_diag_memory: the memory rules, fragmentation-oom, oom and memory-growth.
 *
 * All three read the rank's memory analysis (tp_an_memuse: the allocator replay), so the
 * report's Memory section, the TUI and these findings say the same numbers.
 *
 * An allocation failure stops the job: severity 1. The first failure's class
 * (tp_an_oom_kind) picks the rule: fragmentation (free >= request > largest free block, or
 * the largest block unknown) is a fragmentation-oom, naming the segments that cannot fit
 * the request and the site whose blocks from earlier steps pin them; a single request larger
 * than anything the allocator held and capacity (live + request over that) are an oom. Both
 * name who held the memory (the top allocation sites at that moment) and the device memory
 * outside the allocator when the device's capacity is known; the source is the range open at
 * that moment and the failing call's stack. Memory growth samples allocated memory at every
 * step end (>= 4 steps; else at 8 even points of the timeline) and fires when it grew by at
 * least max(1 MiB, 10 % of the peak) and rose in at least half the intervals; severity: the
 * growth's share of the peak; it names the site whose live bytes rose (its slope per step,
 * whether its blocks are ever freed). */
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
#define TOP_HOLDERS 3 /* sites named in a finding's evidence */

/* ---------------------------------------------------------------- allocation failures */

/* pre + the byte count for people ("?" when unknown) + post */
static void cat_bytes(char **s, const char *pre, int64_t v, const char *post) {
    char b[32];
    tp_diag_cat(s, "%s%s%s", pre, v >= 0 ? tp_units_bytes(b, sizeof b, (double)v) : "?", post);
}

/* "; held by: range 'a' 40.00 MiB (3 blocks, 52 %, alive 5 steps), ..." */
static void cat_holders(tp_diag_ctx *d, const tp_an_memuse *u, const tp_an_memmoment *mo,
                        tp_finding *f) {
    if (!mo->n_holders)
        return;
    tp_diag_cat(&f->evidence, "; held by: ");
    for (size_t i = 0; i < mo->n_holders && i < TOP_HOLDERS; i++) {
        const tp_an_holder *h = &mo->holders[i];
        char lb[256], b[32];
        tp_diag_cat(&f->evidence, "%s%s %s (%zu block%s, %.0f %%, alive %lld step%s)",
                    i ? ", " : "", tp_an_memuse_site_label(u, d->v->m, h->site, lb, sizeof lb),
                    tp_units_bytes(b, sizeof b, (double)h->bytes), h->blocks,
                    h->blocks == 1 ? "" : "s", 100.0 * h->share, (long long)h->steps_alive,
                    h->steps_alive == 1 ? "" : "s");
    }
}

/* The segments with free holes that cannot fit the request, and what pins them. */
static void cat_pinned(tp_diag_ctx *d, const tp_an_memuse *u, tp_finding *f) {
    const tp_an_memmoment *mo = &u->at_oom;
    size_t n = 0, pinned = 0;
    uint32_t site = 0;
    int64_t free_b = 0, best = 0;
    for (size_t i = 0; i < mo->n_segs; i++) {
        const tp_an_segstate *g = &mo->segs[i];
        if (g->fits || g->free <= 0)
            continue;
        n++, free_b += g->free;
        if (g->pinned_bytes > 0)
            pinned++;
        if (g->pinned_bytes > best)
            best = g->pinned_bytes, site = g->pin_site;
    }
    if (!n)
        return;
    char lb[256], b[32];
    tp_diag_cat(&f->evidence, "; %zu segment%s hold %s free in holes smaller than the request", n,
                n == 1 ? "" : "s", tp_units_bytes(b, sizeof b, (double)free_b));
    if (pinned && site)
        tp_diag_cat(&f->evidence, ", %zu of them pinned by blocks from earlier steps of %s", pinned,
                    tp_an_memuse_site_label(u, d->v->m, site, lb, sizeof lb));
    tp_diag_put_metric(f, "segments_unfit", (double)n);
    tp_diag_put_metric(f, "segments_pinned", (double)pinned);
}

static const char *fail_title(tp_an_oom_kind k) {
    switch (k) {
    case TP_AN_OOM_FRAGMENTATION:
        return "fragmentation-oom: an allocation failed although enough memory was free, in "
               "pieces too small";
    case TP_AN_OOM_REQUEST:
        return "oom: a single request larger than anything the allocator could hold";
    default:
        return "oom: the device ran out of memory (live memory plus the request exceed what "
               "the allocator could hold)";
    }
}

static const char *fail_advice(tp_an_oom_kind k) {
    switch (k) {
    case TP_AN_OOM_FRAGMENTATION:
        return "set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (or max_split_size_mb); "
               "do not keep activations or outputs alive across steps (the pinning site "
               "above); keep batch shapes stable (pad or bucket) so freed blocks fit the next "
               "request";
    case TP_AN_OOM_REQUEST:
        return "this one tensor does not fit at all: split the batch (gradient accumulation) "
               "or the operation (chunking), use a smaller dtype, or raise the memory limit";
    default:
        return "reduce memory per step: smaller batch with gradient accumulation, activation "
               "checkpointing, mixed precision; free tensors kept across steps (the largest "
               "holders above)";
    }
}

static void report_failure(tp_diag_ctx *d, const tp_diag_rule *self, const tp_an_memuse *u) {
    const tp_an_oomfail *a = &u->oom;
    tp_finding *f = tp_diag_add(d, self, 1.0);
    tp_diag_cat(&f->title, "%s", fail_title(a->kind));
    char b1[32];
    tp_diag_cat(&f->evidence, "allocation of %s (%lld bytes) failed: ",
                tp_units_bytes(b1, 32, (double)a->request), (long long)a->request);
    cat_bytes(&f->evidence, "", a->reserved, " reserved, ");
    cat_bytes(&f->evidence, "", a->free, " free in cached blocks, ");
    cat_bytes(&f->evidence, "largest free block ", a->largest_free, "");
    if (a->kind == TP_AN_OOM_FRAGMENTATION)
        tp_diag_cat(&f->evidence, " (free memory exceeds the request but no free block fits)");
    if (a->kind == TP_AN_OOM_REQUEST)
        cat_bytes(&f->evidence, " (the allocator never held more than ", a->budget, ")");
    tp_diag_cat(&f->evidence, "; %zu failed allocation(s)", a->failures);
    cat_holders(d, u, &u->at_oom, f);
    if (a->kind == TP_AN_OOM_FRAGMENTATION)
        cat_pinned(d, u, f);
    if (a->outside > 0) {
        cat_bytes(&f->evidence, "; the device has ", a->device_capacity, ", ");
        cat_bytes(&f->evidence, "", a->outside,
                  " of it outside the allocator (CUDA context, NCCL, cuBLAS workspaces, other "
                  "processes, or beyond an allocator limit)");
    }
    int expandable = tp_an_env_expandable_segments(d->v->m, d->r);
    if (a->kind == TP_AN_OOM_FRAGMENTATION && expandable) /* the usual cure is already on */
        tp_diag_cat(&f->advice, "%s",
                    "expandable_segments is already on (PYTORCH_CUDA_ALLOC_CONF), so segments "
                    "grow in place and the free pieces are what the program holds between them: "
                    "do not keep activations or outputs alive across steps; keep batch shapes "
                    "stable (pad or bucket); lower the peak (smaller batch with gradient "
                    "accumulation, activation checkpointing); torch.cuda.empty_cache() between "
                    "phases of different shapes");
    else
        tp_diag_cat(&f->advice, "%s", fail_advice(a->kind));
    long rg = tp_diag_range_at(d, a->ts);
    if (rg >= 0)
        tp_diag_range_label(d, rg, &f->source);
    tp_diag_stack_append(d, a->stack, f);
    if (f->source[0] == ';') /* no range: drop the separator */
        memmove(f->source, f->source + 2, strlen(f->source + 2) + 1);
    tp_diag_put_metric(f, "requested_bytes", (double)a->request);
    tp_diag_put_metric(f, "reserved_bytes", (double)a->reserved);
    tp_diag_put_metric(f, "free_bytes", (double)a->free);
    tp_diag_put_metric(f, "largest_free_bytes", (double)a->largest_free);
    tp_diag_put_metric(f, "failures", (double)a->failures);
    tp_diag_put_metric(f, "ts_ns", (double)a->ts);
    tp_diag_put_metric(f, "live_bytes", (double)a->live);
    tp_diag_put_metric(f, "budget_bytes", (double)a->budget);
    tp_diag_put_metric(f, "outside_bytes", (double)a->outside);
    if (expandable)
        tp_diag_put_metric(f, "expandable_segments", 1);
}

void tp_diag_fragmentation_oom(tp_diag_ctx *d, const tp_diag_rule *self) {
    const tp_an_memuse *u = tp_diag_memuse(d);
    if (u->has_oom && u->oom.kind == TP_AN_OOM_FRAGMENTATION)
        report_failure(d, self, u);
}

void tp_diag_oom(tp_diag_ctx *d, const tp_diag_rule *self) {
    const tp_an_memuse *u = tp_diag_memuse(d);
    if (u->has_oom && u->oom.kind != TP_AN_OOM_FRAGMENTATION)
        report_failure(d, self, u);
}

/* ---------------------------------------------------------------- growth */

/* Timeline value (allocated, or reserved with `res`) at time t (after the last point at or
 * before t); -1 when none yet. */
static int64_t value_at(const tp_an_memuse *u, int res, int64_t t) {
    size_t lo = 0, hi = u->n_points;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (tp_an_memuse_pt_ts(u, mid) <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo)
        return -1;
    return res ? tp_an_memuse_pt_res(u, lo - 1) : u->pt_alloc[lo - 1];
}

/* Samples at every step end, or at 8 even points over the timeline when there are < 4 steps
 * (`out` holds max(steps, 8)). */
static size_t sample(const tp_diag_ctx *d, const tp_an_memuse *u, int res, int64_t *out) {
    size_t k = 0, n = u->n_points;
    if (d->n_step_end >= 4) {
        for (size_t i = 0; i < d->n_step_end; i++) {
            int64_t v = value_at(u, res, d->step_end[i]);
            if (v >= 0)
                out[k++] = v;
        }
        return k;
    }
    if (n < 2)
        return 0;
    int64_t t0 = tp_an_memuse_pt_ts(u, 0);
    int64_t span = tp_an_memuse_pt_ts(u, n - 1) - t0; /* up to 2^62: span * i could overflow */
    for (int i = 1; i <= 8; i++)
        out[k++] = value_at(u, res, t0 + span / 8 * i + span % 8 * i / 8);
    return k;
}

/* The site that grows: its slope and whether its blocks are ever freed. */
static void cat_growth_site(tp_diag_ctx *d, const tp_an_memuse *u, tp_finding *f) {
    const tp_an_memgrowth *g = &u->growth;
    if (!g->found)
        return;
    char lb[256], b1[32], b2[32];
    tp_diag_cat(&f->evidence, "; growing: %s, +%s per step (%s live at the last step end), ",
                tp_an_memuse_site_label(u, d->v->m, g->site, lb, sizeof lb),
                tp_units_bytes(b1, 32, g->slope), tp_units_bytes(b2, 32, (double)g->last));
    if (!g->frees)
        tp_diag_cat(&f->evidence, "none of its %zu blocks ever freed", g->allocs);
    else
        tp_diag_cat(&f->evidence, "%zu of its %zu blocks freed", g->frees, g->allocs);
    tp_diag_put_metric(f, "site_slope_bytes_per_step", g->slope);
    tp_diag_put_metric(f, "site_blocks", (double)g->allocs);
    tp_diag_put_metric(f, "site_blocks_freed", (double)g->frees);
}

static void report_growth(tp_diag_ctx *d, const tp_diag_rule *self, const int64_t *sa, size_t ka,
                          const int64_t *sr, size_t kr, size_t rises, const tp_an_memuse *u) {
    int64_t growth = sa[ka - 1] - sa[0];
    const char *per = d->n_step_end >= 4 ? "step" : "interval";
    tp_finding *f = tp_diag_add(d, self, tp_diag_share(growth, u->peak_allocated));
    char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32];
    tp_diag_cat(&f->title, "memory-growth: allocated device memory keeps rising across %s",
                d->n_step_end >= 4 ? "steps" : "the trace");
    tp_diag_cat(&f->evidence,
                "allocated grew from %s to %s (+%s per %s) and rose in %zu of %zu intervals; peak "
                "allocated %s",
                tp_units_bytes(b1, 32, (double)sa[0]), tp_units_bytes(b2, 32, (double)sa[ka - 1]),
                tp_units_bytes(b3, 32, (double)growth / (double)(ka - 1)), per, rises, ka - 1,
                tp_units_bytes(b4, 32, (double)u->peak_allocated));
    if (kr >= 2)
        tp_diag_cat(&f->evidence, "; reserved went from %s to %s",
                    tp_units_bytes(b5, 32, (double)sr[0]),
                    tp_units_bytes(b6, 32, (double)sr[kr - 1]));
    cat_growth_site(d, u, f);
    tp_diag_cat(&f->advice, "%s",
                u->growth.found && !u->growth.frees
                    ? "the growing site's blocks are never freed: something keeps them alive "
                      "across steps (losses or outputs appended to a list without "
                      ".detach()/.item(), hooks storing activations, a growing cache)"
                    : "look for tensors kept across steps (losses or outputs appended to a list "
                      "without .detach()/.item(), hooks storing activations, growing caches)");
    tp_diag_put_metric(f, "growth_bytes", (double)growth);
    tp_diag_put_metric(f, "first_bytes", (double)sa[0]);
    tp_diag_put_metric(f, "last_bytes", (double)sa[ka - 1]);
    tp_diag_put_metric(f, "peak_allocated_bytes", (double)u->peak_allocated);
    tp_diag_put_metric(f, "peak_reserved_bytes", (double)u->peak_reserved);
}

void tp_diag_memory_growth(tp_diag_ctx *d, const tp_diag_rule *self) {
    const tp_an_memuse *u = tp_diag_memuse(d);
    size_t cap = d->n_step_end > 8 ? d->n_step_end : 8;
    int64_t *sa = tp_an_alloc(cap, sizeof *sa), *sr = tp_an_alloc(cap, sizeof *sr);
    size_t ka = sample(d, u, 0, sa);
    size_t kr = u->peak_reserved >= 0 ? sample(d, u, 1, sr) : 0;
    size_t rises = 0;
    for (size_t i = 1; i < ka; i++)
        rises += sa[i] > sa[i - 1];
    int64_t growth = ka >= 4 ? sa[ka - 1] - sa[0] : 0;
    double peak = (double)u->peak_allocated;
    double thresh = 0.1 * peak > MIB ? 0.1 * peak : MIB;
    if (ka >= 4 && (double)growth >= thresh && 2 * rises >= ka - 1)
        report_growth(d, self, sa, ka, sr, kr, rises, u);
    free(sa), free(sr);
}
