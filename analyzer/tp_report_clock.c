/* tp_report_clock: see tp_report_clock.h. */
#include "tp_report_clock.h"

#include <math.h>

#include "tp_align.h"
#include "tp_report_fmt.h"
#include "tp_units.h"

/* What each source means, for people. */
static const char *source_text(tp_clock_source s) {
    switch (s) {
    case TP_CLOCK_REFERENCE:
        return "the job clock (reference rank)";
    case TP_CLOCK_SYNC:
        return "by the first CLOCK_SYNC realtime pairs";
    case TP_CLOCK_KINETO_BASE:
        return "by baseTimeNanoseconds";
    case TP_CLOCK_AS_RECORDED:
        return "none needed: wall-clock timestamps as recorded";
    default:
        return "not aligned: no clock pair on this rank or the reference";
    }
}

static int exceeds(const tp_rank_clock *c) {
    return c->residual_ns > TP_ALIGN_RESIDUAL_LIMIT_NS;
}

void tp_report_clock_text(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    const tp_rank_clock *c = &rr->v.r->clock;
    char b[2][32];
    if (!c->aligned)
        return;
    fprintf(f, "Clock\n");
    if (c->source == TP_CLOCK_REFERENCE) {
        fprintf(f, "  %s\n\n", source_text(c->source));
        return;
    }
    fprintf(f, "  shift to rank %d's clock  %s%s (%s)\n", c->ref_rank, c->shift_ns < 0 ? "-" : "+",
            tp_units_dur(b[0], 32, (double)(c->shift_ns < 0 ? -c->shift_ns : c->shift_ns)),
            source_text(c->source));
    if (c->method == TP_RESIDUAL_COLLECTIVES)
        fprintf(f, "  residual offset          %s (median over %zu communication kernels' ends)\n",
                tp_units_dur(b[1], 32, (double)c->residual_ns), c->n_matched);
    else if (c->method == TP_RESIDUAL_SYNC_PAIRS)
        fprintf(f, "  residual offset          <= %s (last CLOCK_SYNC pairs against the first)\n",
                tp_units_dur(b[1], 32, (double)c->residual_ns));
    else
        fprintf(f, "  residual offset          unknown (no matching collectives, no second "
                   "clock pair)\n");
    if (exceeds(c))
        fprintf(f,
                "  above %s: which rank reached a collective first, and this rank's place in "
                "merged timelines, are uncertain by that much\n",
                tp_units_dur(b[0], 32, TP_ALIGN_RESIDUAL_LIMIT_NS));
    fprintf(f, "\n");
}

void tp_report_clock_json(yajl_gen g, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    const tp_rank_clock *c = &rr->v.r->clock;
    if (!c->aligned)
        return;
    tp_rj_str(g, "clock");
    yajl_gen_map_open(g);
    tp_rj_int(g, "reference_rank", c->ref_rank);
    tp_rj_kv(g, "source", tp_align_source_key(c->source));
    tp_rj_int(g, "shift_ns", c->shift_ns);
    tp_rj_kv(g, "residual_method", tp_align_method_key(c->method));
    if (c->residual_ns >= 0)
        tp_rj_int(g, "residual_ns", c->residual_ns);
    else
        tp_rj_num(g, "residual_ns", NAN); /* null: unknown */
    tp_rj_int(g, "matched_collectives", (long long)c->n_matched);
    tp_rj_int(g, "residual_limit_ns", TP_ALIGN_RESIDUAL_LIMIT_NS);
    tp_rj_str(g, "residual_above_limit");
    yajl_gen_bool(g, exceeds(c));
    yajl_gen_map_close(g);
}
