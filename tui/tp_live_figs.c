/* tp_live_figs: the aggregator's figures from a reply (see the header). */
#include "tp_live_figs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_liveproto.h"

/* Kernels "count,sum,min,max,group,name", ranges "count,sum,min,max,gpu_ns,gpu_ops,name": the
 * name is last, as it may hold commas. */
static int parse_row(const char *v, int kernels, tp_live_figs_row *r) {
    char *p;
    r->count = strtoull(v, &p, 10);
    double *num[] = {&r->sum, &r->min, &r->max};
    for (int i = 0; i < 3; i++) {
        if (*p != ',')
            return 0;
        *num[i] = strtod(p + 1, &p);
    }
    if (kernels) {
        if (*p != ',')
            return 0;
        r->group = (int)strtol(p + 1, &p, 10);
    } else {
        double *gpu[] = {&r->gpu_ns, &r->gpu_ops};
        for (int i = 0; i < 2; i++) {
            if (*p != ',')
                return 0;
            *gpu[i] = strtod(p + 1, &p);
        }
    }
    if (*p != ',')
        return 0;
    snprintf(r->name, sizeof r->name, "%s", p + 1);
    return 1;
}

static size_t parse_rows(const char *text, char prefix, int kernels, tp_live_figs_row *rows) {
    size_t n = 0;
    char key[16], v[512];
    for (; n < TP_LIVE_FIGS_ROWS; n++) {
        snprintf(key, sizeof key, "%c%zu", prefix, n);
        if (!tp_live_get(text, key, v, sizeof v) || !parse_row(v, kernels, &rows[n]))
            break;
    }
    return n;
}

/* "busy_ns,device,stream,c0,c1,...": cells in percent. */
static void parse_streams(const char *text, tp_live_figs *f) {
    char key[16], v[1024];
    for (f->n_streams = 0; f->n_streams < TP_LIVE_FIGS_STREAMS; f->n_streams++) {
        snprintf(key, sizeof key, "s%zu", f->n_streams);
        if (!tp_live_get(text, key, v, sizeof v))
            break;
        char *p;
        tp_live_figs_stream *s = &f->streams[f->n_streams];
        s->busy_ns = strtod(v, &p);
        s->device = (unsigned)strtoul(p + (*p == ','), &p, 10);
        s->stream = (unsigned)strtoul(p + (*p == ','), &p, 10);
        for (s->n_cells = 0; *p == ',' && s->n_cells < TP_LIVE_FIGS_CELLS; s->n_cells++)
            s->cells[s->n_cells] = strtod(p + 1, &p) / 100;
    }
}

void tp_live_figs_parse(const char *text, tp_live_figs *f) {
    memset(f, 0, sizeof *f);
    if (!text || tp_live_get_num(text, "agg_t1", -1) < 0)
        return;
    f->have = 1;
    f->t0 = tp_live_get_num(text, "agg_t0", 0);
    f->t1 = tp_live_get_num(text, "agg_t1", 0);
    f->final = tp_live_get_num(text, "agg_final", 0) > 0;
    f->busy_ns = tp_live_get_num(text, "agg_busy_ns", 0);
    f->steps = (size_t)tp_live_get_num(text, "steps", 0);
    f->have_mem = tp_live_get_num(text, "agg_alloc1", -1) > -1;
    f->alloc0 = tp_live_get_num(text, "agg_alloc0", 0);
    f->alloc1 = tp_live_get_num(text, "agg_alloc1", 0);
    f->reserved0 = tp_live_get_num(text, "agg_reserved0", 0);
    f->reserved1 = tp_live_get_num(text, "agg_reserved1", 0);
    f->mem_events = tp_live_get_num(text, "agg_mem_events", 0);
    f->late = tp_live_get_num(text, "agg_late", 0);
    f->pending = tp_live_get_num(text, "agg_pending", 0);
    parse_streams(text, f);
    f->n_kernels = parse_rows(text, 'k', 1, f->kernels);
    f->n_ranges = parse_rows(text, 'r', 0, f->ranges);
}
