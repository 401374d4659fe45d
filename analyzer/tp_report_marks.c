/* tp_report_marks: NVTX marks in the report (see the header). */
#include "tp_report_marks.h"

#include <string.h>

#include "tp_an_marks.h"
#include "tp_report_fmt.h"

/* "[domain] name" for a mark outside the default domain (marks are few: always say it). */
static const char *label(const tp_model *m, const tp_an_mark *k, char *buf, size_t n) {
    if (k->domain)
        snprintf(buf, n, "[%s] %s", tp_model_str(m, k->domain), tp_model_str(m, k->name));
    else
        snprintf(buf, n, "%s", tp_model_str(m, k->name));
    return buf;
}

/* The rank's marks: those the analyses computed (TP_RA_MARKS), else into *own, which the
 * caller frees. */
static const tp_an_marks *marks_of(const tp_rank_analysis *rr, tp_an_marks *own) {
    memset(own, 0, sizeof *own);
    if (rr->ran & TP_RA_MARKS)
        return &rr->mk;
    tp_an_marks_run(&rr->v, own);
    return own;
}

void tp_report_marks_text(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o) {
    tp_an_marks own;
    const tp_an_marks *mk = marks_of(rr, &own);
    if (mk->n) {
        char lb[512], nb[128], b1[32];
        size_t top = (size_t)(o->top > 0 ? o->top : 10);
        fprintf(f, "NVTX marks (top %zu of %zu by count)\n  %-60s %8s %12s\n",
                top < mk->n ? top : mk->n, mk->n, "name", "count", "span");
        for (size_t i = 0; i < mk->n && i < top; i++)
            fprintf(f, "  %-60s %8zu %s\n",
                    tp_rf_clip(nb, sizeof nb, label(rr->v.m, &mk->m[i], lb, sizeof lb), 60),
                    mk->m[i].count,
                    tp_rf_time(b1, sizeof b1, (double)(mk->m[i].last - mk->m[i].first)));
        fprintf(f, "\n");
    }
    tp_an_marks_free(&own);
}

void tp_report_marks_json(yajl_gen g, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    tp_an_marks own;
    const tp_an_marks *mk = marks_of(rr, &own);
    tp_rj_str(g, "marks");
    yajl_gen_array_open(g);
    for (size_t i = 0; i < mk->n; i++) {
        yajl_gen_map_open(g);
        tp_rj_kv(g, "name", tp_model_str(rr->v.m, mk->m[i].name));
        tp_rj_kv(g, "domain", tp_model_str(rr->v.m, mk->m[i].domain));
        tp_rj_int(g, "count", (long long)mk->m[i].count);
        tp_rj_int(g, "first_ns", mk->m[i].first);
        tp_rj_int(g, "last_ns", mk->m[i].last);
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
    tp_an_marks_free(&own);
}
