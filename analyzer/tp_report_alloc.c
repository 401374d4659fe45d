/* tp_report_alloc: the device-memory section (see the header). */
#include "tp_report_alloc.h"

#include <inttypes.h>
#include <stdio.h>

#include "tp_report_fmt.h"
#include "tp_units.h"

#define MAX_STEP_ROWS 40 /* more steps: every k-th, the last always */

static const char *source_words(tp_an_msource s) {
    static const char *const w[] = {"no memory events", "NVTX memory API regions and heaps",
                                    "PyTorch profiler [memory] events", "CUDA-level allocations"};
    return (size_t)s < sizeof w / sizeof w[0] ? w[s] : "?";
}

static const char *source_key(tp_an_msource s) {
    static const char *const k[] = {"none", "nvtx", "kineto", "device"};
    return (size_t)s < sizeof k / sizeof k[0] ? k[s] : "?";
}

static int shown(const tp_rank_analysis *rr) {
    return (rr->ran & TP_RA_MEMUSE) && (rr->mu.source != TP_AN_MSRC_NONE || rr->mu.has_oom);
}

/* "12.00 MiB", or "?" when unknown (< 0). */
static const char *bytes_str(char *b, size_t n, int64_t v) {
    return v >= 0 ? tp_units_bytes(b, n, (double)v) : "?";
}

/* ---------------------------------------------------------------- text */

static void text_steps(FILE *f, const tp_an_memuse *u) {
    if (!u->n_steps)
        return;
    size_t k = (u->n_steps + MAX_STEP_ROWS - 1) / MAX_STEP_ROWS;
    char b1[32], b2[32], b3[32], b4[32];
    fprintf(f, "  per step%s  %12s %12s %12s %12s\n", k > 1 ? " (sampled)" : "", "alloc end",
            "alloc max", "reserved end", "reserved max");
    for (size_t i = 0; i < u->n_steps; i++) {
        if (i % k && i + 1 != u->n_steps)
            continue;
        const tp_an_memstep *s = &u->steps[i];
        fprintf(f, "    step %-5zu %s%12s %12s %12s %12s\n", i + 1, k > 1 ? "           " : "",
                bytes_str(b1, 32, s->alloc_end), bytes_str(b2, 32, s->alloc_max),
                bytes_str(b3, 32, s->res_end), bytes_str(b4, 32, s->res_max));
    }
}

static void text_holders(FILE *f, const tp_rank_analysis *rr, const tp_an_memmoment *mo,
                         size_t top) {
    char lb[256], cb[128], b1[32], bp[32];
    if (!mo->n_holders)
        return;
    fprintf(f, "    %-56s %12s %7s %8s %6s\n", "allocation site", "bytes", "blocks", "share",
            "steps");
    for (size_t i = 0; i < mo->n_holders && i < top; i++) {
        const tp_an_holder *h = &mo->holders[i];
        tp_an_memuse_site_label(&rr->mu, rr->v.m, h->site, lb, sizeof lb);
        fprintf(f, "    %-56s %12s %7zu %8s %6" PRId64 "\n", tp_rf_clip(cb, sizeof cb, lb, 56),
                tp_units_bytes(b1, 32, (double)h->bytes), h->blocks,
                tp_rf_pct_str(bp, sizeof bp, 100 * h->share), h->steps_alive);
    }
}

static void text_segments(FILE *f, const tp_rank_analysis *rr, const tp_an_memmoment *mo,
                          size_t top) {
    if (!mo->n_segs)
        return;
    char b1[32], b2[32], b3[32], b4[32], lb[256], cb[128];
    fprintf(f, "    %-24s %10s %10s %10s %12s  %s\n", "segment (! cannot fit)", "size", "live",
            "free", "largest hole", "pinned by (blocks from earlier steps)");
    for (size_t i = 0; i < mo->n_segs && i < top; i++) {
        const tp_an_segstate *g = &mo->segs[i];
        const char *pin =
            g->pin_site ? tp_an_memuse_site_label(&rr->mu, rr->v.m, g->pin_site, lb, sizeof lb)
                        : "-";
        char base[32];
        snprintf(base, sizeof base, "0x%" PRIx64 "%s", g->base, g->fits ? "" : " !");
        fprintf(
            f, "    %-24s %10s %10s %10s %12s  %s\n", base, tp_units_bytes(b1, 32, (double)g->size),
            tp_units_bytes(b2, 32, (double)g->live), tp_units_bytes(b3, 32, (double)g->free),
            tp_units_bytes(b4, 32, (double)g->largest_hole), tp_rf_clip(cb, sizeof cb, pin, 40));
    }
    if (mo->n_segs > top)
        fprintf(f, "    ... %zu more segments\n", mo->n_segs - top);
}

static void text_moment(FILE *f, const tp_rank_analysis *rr, const char *what,
                        const tp_an_memmoment *mo, size_t top) {
    char b1[32], b2[32], b3[32], b4[32];
    size_t blocks = 0;
    for (size_t i = 0; i < mo->n_holders; i++)
        blocks += mo->holders[i].blocks;
    fprintf(f, "  %s: %s allocated (%s in %zu live blocks), %s reserved, largest hole %s", what,
            bytes_str(b1, 32, mo->allocated), bytes_str(b4, 32, mo->in_blocks), blocks,
            bytes_str(b2, 32, mo->reserved), bytes_str(b3, 32, mo->largest_hole));
    if (mo->step >= 0)
        fprintf(f, ", step %ld", mo->step + 1);
    fprintf(f, "\n");
    text_holders(f, rr, mo, top);
    text_segments(f, rr, mo, top);
}

static void text_oom(FILE *f, const tp_rank_analysis *rr, size_t top) {
    const tp_an_oomfail *a = &rr->mu.oom;
    char b1[32], b2[32], b3[32], b4[32];
    fprintf(f,
            "  failed allocation (%zu in all): %s requested, %s live, %s reserved, %s free, "
            "largest free block %s\n",
            a->failures, bytes_str(b1, 32, a->request), bytes_str(b2, 32, a->live),
            bytes_str(b3, 32, a->reserved), bytes_str(b4, 32, a->free),
            bytes_str(b1, 32, a->largest_free));
    fprintf(f, "    class: %s: %s\n", tp_an_oom_key(a->kind), tp_an_oom_text(a->kind));
    if (a->device_capacity > 0)
        fprintf(f, "    device capacity %s, outside the allocator %s\n",
                bytes_str(b1, 32, a->device_capacity), bytes_str(b2, 32, a->outside));
    text_moment(f, rr, "at the failure", &rr->mu.at_oom, top);
}

void tp_report_alloc_text(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o) {
    if (!shown(rr))
        return;
    const tp_an_memuse *u = &rr->mu;
    size_t top = (size_t)(o->top > 0 ? o->top : 10);
    char b1[32], b2[32];
    fprintf(f, "Device memory: who holds it (%s, %zu events)\n", source_words(u->source),
            u->n_events);
    fprintf(f, "  peak allocated %s, peak reserved %s\n", bytes_str(b1, 32, u->peak_allocated),
            bytes_str(b2, 32, u->peak_reserved));
    text_steps(f, u);
    if (u->peak.valid)
        text_moment(f, rr, "at the peak", &u->peak, top);
    if (u->has_oom)
        text_oom(f, rr, top);
    const tp_an_mcounts *c = &u->counts;
#define TP_AN_MCOUNT_TEXT(name, text)                                                              \
    if (c->name)                                                                                   \
        fprintf(f, "  replay: %zu %s\n", c->name, text);
    TP_AN_MCOUNT_TABLE(TP_AN_MCOUNT_TEXT)
#undef TP_AN_MCOUNT_TEXT
    fprintf(f, "\n");
}

/* ---------------------------------------------------------------- JSON */

static void json_moment(yajl_gen g, const tp_rank_analysis *rr, const char *key,
                        const tp_an_memmoment *mo) {
    char lb[256];
    tp_rj_str(g, key);
    yajl_gen_map_open(g);
    tp_rj_int(g, "ts_ns", mo->ts);
    tp_rj_int(g, "step", mo->step >= 0 ? mo->step + 1 : 0);
    tp_rj_int(g, "allocated_bytes", mo->allocated);
    tp_rj_int(g, "reserved_bytes", mo->reserved);
    tp_rj_int(g, "in_blocks_bytes", mo->in_blocks);
    tp_rj_int(g, "largest_hole_bytes", mo->largest_hole);
    tp_rj_str(g, "holders");
    yajl_gen_array_open(g);
    for (size_t i = 0; i < mo->n_holders; i++) {
        const tp_an_holder *h = &mo->holders[i];
        yajl_gen_map_open(g);
        tp_rj_kv(g, "site", tp_an_memuse_site_label(&rr->mu, rr->v.m, h->site, lb, sizeof lb));
        tp_rj_int(g, "stack", tp_an_memstate_site(rr->mu.state, h->site)->stack);
        tp_rj_int(g, "bytes", h->bytes);
        tp_rj_int(g, "blocks", (long long)h->blocks);
        tp_rj_num(g, "share", h->share);
        tp_rj_int(g, "steps_alive", h->steps_alive);
        tp_rj_int(g, "largest_block_bytes", h->largest);
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
    tp_rj_str(g, "segments");
    yajl_gen_array_open(g);
    for (size_t i = 0; i < mo->n_segs; i++) {
        const tp_an_segstate *s = &mo->segs[i];
        yajl_gen_map_open(g);
        tp_rj_int(g, "base", (long long)s->base);
        tp_rj_int(g, "size_bytes", s->size);
        tp_rj_int(g, "live_bytes", s->live);
        tp_rj_int(g, "free_bytes", s->free);
        tp_rj_int(g, "largest_hole_bytes", s->largest_hole);
        tp_rj_int(g, "blocks", (long long)s->blocks);
        tp_rj_int(g, "pinned_bytes", s->pinned_bytes);
        tp_rj_kv(g, "pinned_by",
                 s->pin_site ? tp_an_memuse_site_label(&rr->mu, rr->v.m, s->pin_site, lb, sizeof lb)
                             : "");
        tp_rj_str(g, "fits_request");
        yajl_gen_bool(g, s->fits);
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
    yajl_gen_map_close(g);
}

static void json_steps(yajl_gen g, const tp_an_memuse *u) {
    tp_rj_str(g, "steps");
    yajl_gen_array_open(g);
    for (size_t i = 0; i < u->n_steps; i++) {
        const tp_an_memstep *s = &u->steps[i];
        yajl_gen_map_open(g);
        tp_rj_int(g, "start_ns", s->start);
        tp_rj_int(g, "end_ns", s->end);
        tp_rj_int(g, "allocated_end_bytes", s->alloc_end);
        tp_rj_int(g, "allocated_max_bytes", s->alloc_max);
        tp_rj_int(g, "reserved_end_bytes", s->res_end);
        tp_rj_int(g, "reserved_max_bytes", s->res_max);
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
}

static void json_oom(yajl_gen g, const tp_rank_analysis *rr) {
    const tp_an_oomfail *a = &rr->mu.oom;
    tp_rj_str(g, "oom");
    yajl_gen_map_open(g);
    tp_rj_kv(g, "class", tp_an_oom_key(a->kind));
    tp_rj_int(g, "failures", (long long)a->failures);
    tp_rj_int(g, "ts_ns", a->ts);
    tp_rj_int(g, "requested_bytes", a->request);
    tp_rj_int(g, "live_bytes", a->live);
    tp_rj_int(g, "reserved_bytes", a->reserved);
    tp_rj_int(g, "free_bytes", a->free);
    tp_rj_int(g, "largest_free_bytes", a->largest_free);
    tp_rj_int(g, "budget_bytes", a->budget);
    tp_rj_int(g, "device_capacity_bytes", a->device_capacity);
    tp_rj_int(g, "outside_bytes", a->outside);
    json_moment(g, rr, "state", &rr->mu.at_oom);
    yajl_gen_map_close(g);
}

static void json_growth(yajl_gen g, const tp_rank_analysis *rr) {
    const tp_an_memgrowth *x = &rr->mu.growth;
    char lb[256];
    tp_rj_str(g, "growth");
    if (!x->found) {
        yajl_gen_null(g);
        return;
    }
    yajl_gen_map_open(g);
    tp_rj_kv(g, "site", tp_an_memuse_site_label(&rr->mu, rr->v.m, x->site, lb, sizeof lb));
    tp_rj_num(g, "slope_bytes_per_step", x->slope);
    tp_rj_int(g, "first_bytes", x->first);
    tp_rj_int(g, "last_bytes", x->last);
    tp_rj_int(g, "rises", (long long)x->rises);
    tp_rj_int(g, "intervals", (long long)x->intervals);
    tp_rj_int(g, "blocks", (long long)x->allocs);
    tp_rj_int(g, "blocks_freed", (long long)x->frees);
    yajl_gen_map_close(g);
}

void tp_report_alloc_json(yajl_gen g, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    if (!shown(rr))
        return;
    const tp_an_memuse *u = &rr->mu;
    tp_rj_str(g, "memory_use");
    yajl_gen_map_open(g);
    tp_rj_kv(g, "source", source_key(u->source));
    tp_rj_int(g, "events", (long long)u->n_events);
    tp_rj_int(g, "peak_allocated_bytes", u->peak_allocated);
    tp_rj_int(g, "peak_reserved_bytes", u->peak_reserved);
    json_steps(g, u);
    if (u->peak.valid)
        json_moment(g, rr, "peak", &u->peak);
    if (u->has_oom)
        json_oom(g, rr);
    json_growth(g, rr);
    tp_rj_str(g, "replay");
    yajl_gen_map_open(g);
#define TP_AN_MCOUNT_JSON(name, text) tp_rj_int(g, #name, (long long)u->counts.name);
    TP_AN_MCOUNT_TABLE(TP_AN_MCOUNT_JSON)
#undef TP_AN_MCOUNT_JSON
    yajl_gen_map_close(g);
    yajl_gen_map_close(g);
}
