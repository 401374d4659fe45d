/* tp_report_host: the host sections of the report (see the header). */
#include "tp_report_host.h"

#include <string.h>

#include "tp_report_fmt.h"
#include "tp_text.h"
#include "tp_units.h"

void tp_report_host_parts(const tp_an_host *h, const char *label[TP_REPORT_HOST_PARTS],
                          int64_t part[TP_REPORT_HOST_PARTS]) {
    label[0] = "data loading", part[0] = h->data_ns;
    label[1] = "framework ops (outside data loading)", part[1] = h->ops_ns;
    label[2] = h->n_ops ? "other (Python, dispatch, waits)" : "other";
    part[2] = tp_an_host_other_ns(h);
    label[3] = h->n_steps ? "between steps, no range open" : "no range open";
    part[3] = h->unrecorded_ns;
}

const char *tp_report_host_heading(const tp_an_host *h, char *buf, size_t n) {
    char b[32];
    tp_units_dur(b, sizeof b, (double)(h->w1 - h->w0));
    if (h->n_steps)
        snprintf(buf, n,
                 "Step time on the host (%zu step%s, %s from the first start to the last end)",
                 h->n_steps, h->n_steps == 1 ? "" : "s", b);
    else
        snprintf(buf, n, "CPU span on the host (no steps named; %s)", b);
    return buf;
}

void tp_report_host_steps_text(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    const tp_an_host *h = &rr->host;
    char b1[32], bp[32], head[160];
    int64_t win = h->w1 - h->w0, part[TP_REPORT_HOST_PARTS];
    const char *label[TP_REPORT_HOST_PARTS];
    if (win <= 0)
        return;
    fprintf(f, "%s\n", tp_report_host_heading(h, head, sizeof head));
    tp_report_host_parts(h, label, part);
    for (int i = 0; i < TP_REPORT_HOST_PARTS; i++)
        fprintf(f, "  %-40s %12s %9s\n", label[i], tp_rf_time(b1, 32, (double)part[i]),
                tp_rf_pct_str(bp, sizeof bp, tp_rf_pct(part[i], win)));
    fprintf(f, "\n");
}

void tp_report_host_threads_text(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o) {
    const tp_an_host *h = &rr->host;
    char b1[32], bp[32], nb[64];
    if (!h->n_threads)
        return;
    size_t top = (size_t)(o->top > 0 ? o->top : 10);
    fprintf(f, "Threads (top %zu of %zu by busy time: inside any recorded range or call)\n",
            top < h->n_threads ? top : h->n_threads, h->n_threads);
    fprintf(f, "  %10s %10s %-32s %10s %12s %9s\n", "pid", "tid", "name", "events", "busy",
            "of span");
    for (size_t i = 0; i < h->n_threads && i < top; i++) {
        const tp_an_host_thread *t = &h->th[i];
        const char *name = tp_rank_thread_name(rr->v.m, rr->v.r, t->pid, t->tid);
        fprintf(f, "  %10lld %10lld %-32s %10zu %12s %9s\n", (long long)t->pid, (long long)t->tid,
                tp_rf_clip(nb, sizeof nb, name ? name : "", 32), t->n_events,
                tp_rf_time(b1, 32, (double)t->busy),
                tp_rf_pct_str(bp, sizeof bp, tp_rf_pct(t->busy, t->last - t->first)));
    }
    fprintf(f, "\n");
}

const char *tp_report_host_not_judged(char *buf, size_t n) {
    const tp_diag_rule *rules;
    size_t k = tp_diagnose_rules(&rules), at = 0;
    buf[0] = 0;
    for (size_t i = 0; i < k && at < n; i++)
        if (tp_diag_rule_needs_device(&rules[i]))
            at += (size_t)snprintf(buf + at, n - at, "%s%s", at ? ", " : "", rules[i].id);
    return buf;
}

int tp_report_host_basis(const tp_rank_analysis *rr, char *basis, size_t nb, char *not_judged,
                         size_t nn) {
    char nj[512];
    basis[0] = not_judged[0] = 0;
    if (rr->v.n_gpu)
        return 0;
    /* whose device records were all dropped had device activity: it says so */
    int lost = tp_an_drops_lost(&rr->drops, tp_an_drops_device_kinds()) != 0;
    snprintf(basis, nb, "%s: judged from the host's steps",
             lost ? "every device record was dropped" : "no device activity");
    snprintf(not_judged, nn, "not judged without device %s: %s", lost ? "records" : "activity",
             tp_report_host_not_judged(nj, sizeof nj));
    return 1;
}

static void json_threads(yajl_gen g, const tp_rank_analysis *rr) {
    const tp_an_host *h = &rr->host;
    tp_rj_str(g, "threads");
    yajl_gen_array_open(g);
    for (size_t i = 0; i < h->n_threads; i++) {
        const tp_an_host_thread *t = &h->th[i];
        const char *name = tp_rank_thread_name(rr->v.m, rr->v.r, t->pid, t->tid);
        yajl_gen_map_open(g);
        tp_rj_int(g, "pid", t->pid);
        tp_rj_int(g, "tid", t->tid);
        tp_rj_kv(g, "name", name ? name : "");
        tp_rj_int(g, "n_events", (long long)t->n_events);
        tp_rj_int(g, "busy_ns", t->busy);
        tp_rj_int(g, "first_ns", t->first);
        tp_rj_int(g, "last_ns", t->last);
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
}

void tp_report_host_json(yajl_gen g, const tp_rank_analysis *rr, const tp_report_opts *o) {
    (void)o;
    const tp_an_host *h = &rr->host;
    tp_rj_str(g, "host");
    yajl_gen_map_open(g);
    tp_rj_int(g, "n_steps", (long long)h->n_steps);
    tp_rj_int(g, "window_ns", h->w1 - h->w0);
    tp_rj_int(g, "data_ns", h->data_ns);
    tp_rj_int(g, "ops_ns", h->ops_ns);
    tp_rj_int(g, "n_ops", (long long)h->n_ops);
    tp_rj_int(g, "unrecorded_ns", h->unrecorded_ns);
    tp_rj_kv(g, "data_range", tp_model_str(rr->v.m, h->data_name));
    json_threads(g, rr);
    tp_rj_str(g, "not_judged");
    yajl_gen_array_open(g);
    const tp_diag_rule *rules;
    size_t k = tp_diagnose_rules(&rules);
    for (size_t i = 0; i < k && !rr->t.has_gpu; i++)
        if (tp_diag_rule_needs_device(&rules[i]))
            tp_rj_str(g, rules[i].id);
    yajl_gen_array_close(g);
    yajl_gen_map_close(g);
}
