/* tp_report_cpuops: the CPU operators section of the report (see the header). */
#include "tp_report_cpuops.h"

#include "tp_report_fmt.h"
#include "tp_units.h"

void tp_report_cpuops_text(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o) {
    const tp_an_cpuops *c = &rr->ops;
    char b1[32], b2[32], b3[32], bp[32], nb[128], sb[128];
    if (!c->n)
        return;
    size_t top = (size_t)(o->top > 0 ? o->top : 10);
    int shapes = c->by_shapes && c->has_shapes, fwd = 0;
    for (size_t i = 0; i < c->n && i < top; i++)
        fwd |= c->op[i].fwd_name != 0;
    fprintf(f,
            "CPU operators (top %zu of %zu by %s time%s; self = not in a child on the same "
            "thread, self %% = share of all self time; CPU span %s)\n",
            top < c->n ? top : c->n, c->n, c->by_total ? "total" : "self",
            shapes ? ", by input shapes" : "", tp_units_dur(b1, sizeof b1, (double)c->span));
    fprintf(f, "  %-50s %-5s %8s %12s %8s %12s %12s", "name", "kind", "count", "self", "self %",
            "total", "mean");
    if (shapes)
        fprintf(f, fwd ? "  %-30s" : "  %s", "input shapes");
    if (fwd)
        fprintf(f, "  %s", "forward op");
    fputc('\n', f);
    for (size_t i = 0; i < c->n && i < top; i++) {
        const tp_an_cpuop *x = &c->op[i];
        fprintf(f, "  %-50s %-5s %8zu %12s %8s %12s %12s",
                tp_rf_clip(nb, sizeof nb, tp_model_str(rr->v.m, x->name), 50), tp_an_cpuop_kind(x),
                x->count, tp_rf_time(b1, sizeof b1, (double)x->self),
                tp_rf_pct_str(bp, sizeof bp, tp_rf_pct(x->self, c->self_sum)),
                tp_rf_time(b2, sizeof b2, (double)x->total), tp_rf_time(b3, sizeof b3, x->mean));
        if (shapes)
            fprintf(f, fwd ? "  %-30s" : "  %s",
                    tp_rf_clip(sb, sizeof sb, tp_model_str(rr->v.m, x->shapes), 30));
        if (fwd && x->fwd_name)
            fprintf(f, "  %s", tp_rf_clip(sb, sizeof sb, tp_model_str(rr->v.m, x->fwd_name), 60));
        fputc('\n', f);
    }
    fputc('\n', f);
}

void tp_report_cpuops_json(yajl_gen g, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    const tp_an_cpuops *c = &rr->ops;
    tp_rj_str(g, "cpu_ops");
    yajl_gen_map_open(g);
    tp_rj_kv(g, "group_by", c->by_shapes ? "shapes" : "name");
    tp_rj_kv(g, "sort", c->by_total ? "total" : "self");
    tp_rj_int(g, "span_ns", c->span);
    tp_rj_int(g, "self_ns", c->self_sum);
    tp_rj_str(g, "ops");
    yajl_gen_array_open(g);
    for (size_t i = 0; i < c->n; i++) {
        const tp_an_cpuop *x = &c->op[i];
        yajl_gen_map_open(g);
        tp_rj_kv(g, "name", tp_model_str(rr->v.m, x->name));
        tp_rj_kv(g, "kind", tp_an_cpuop_kind(x));
        if (c->by_shapes)
            tp_rj_kv(g, "input_shapes", tp_model_str(rr->v.m, x->shapes));
        tp_rj_int(g, "count", (long long)x->count);
        tp_rj_int(g, "self_ns", x->self);
        tp_rj_int(g, "total_ns", x->total);
        tp_rj_num(g, "mean_ns", x->mean);
        tp_rj_num(g, "self_pct", tp_rf_pct(x->self, c->self_sum));
        tp_rj_kv(g, "forward_op", tp_model_str(rr->v.m, x->fwd_name));
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
    yajl_gen_map_close(g);
}
