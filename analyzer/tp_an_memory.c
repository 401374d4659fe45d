/* tp_an_memory: memory bandwidth time series summary (HTA) and copy statistics. */
#include "tp_an_memory.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_kineto_names.h"
#include "tp_mem.h"
#include "tp_record.h"
#include "tp_sort.h"

/* Kineto's spelling of the kind; the report's "unknown" (lower case, as for memory kinds)
 * for the rest. */
const char *tp_an_copy_kind_name(uint8_t k) {
    if (k == TP_AN_MEMSET_KIND)
        return TP_KINETO_MEMSET;
    return k != TP_COPY_UNKNOWN && k <= TP_COPY_PTOP ? tp_copy_kind_name(k) : "unknown";
}

const char *tp_an_mem_kind_name(uint8_t k) {
    static const char *const names[] = {"unknown", "pageable", "pinned",        "device",
                                        "array",   "managed",  "device_static", "managed_static"};
    return k < sizeof names / sizeof *names ? names[k] : "unknown";
}

/* `s` cut to at most n characters into out (n < 16): snprintf's "%.*s", without its
 * format parsing (asked per memory op: 2.7 M instructions for 4 k copies on lb2k). */
static void copy_prefix(char out[16], const char *s, size_t n) {
    size_t k = strnlen(s, n);
    memcpy(out, s, k);
    out[k] = '\0';
}

/* HTA's get_memory_kernel_type: "Memset", the first 11 characters of a Memcpy name, or
 * "Memcpy Unknown". */
static void mem_type(const char *name, char out[16]) {
    if (tp_kineto_is_memset(name))
        copy_prefix(out, TP_KINETO_MEMSET, 15);
    else if (!tp_kineto_is_memcpy(name))
        copy_prefix(out, TP_KINETO_MEMCPY " Unknown", 15);
    else
        copy_prefix(out, name, 11);
}

typedef struct {
    double bw;
    int type; /* index into the type table */
} tp_bwpt;

/* The points: their times apart (ts, the sort's key as it is: no copy of them), the rest in
 * p; both with room for cap. */
typedef struct {
    tp_bwpt *p;
    int64_t *ts;
    size_t n, cap;
    char (*types)[16];
    size_t nt, tcap;
} tp_series;

static int type_index(tp_series *s, const char *t) {
    for (size_t k = 0; k < s->nt; k++)
        if (strcmp(s->types[k], t) == 0)
            return (int)k;
    tp_an_grow((void **)&s->types, &s->tcap, s->nt + 1, sizeof *s->types);
    snprintf(s->types[s->nt], 16, "%s", t);
    return (int)s->nt++;
}

/* Room for `need` points in both columns, `need` exactly when the list must grow. */
static void pts_room(tp_series *s, size_t need) {
    if (need <= s->cap)
        return;
    s->p = tp_mem_xrealloc(s->p, need, sizeof *s->p);
    s->ts = tp_mem_xrealloc(s->ts, need, sizeof *s->ts);
    s->cap = need;
}

static void add_pt(tp_series *s, int64_t ts, double bw, int type) {
    if (s->n == s->cap)
        pts_room(s, s->cap < 16 ? 16 : 2 * s->cap);
    s->ts[s->n] = ts;
    s->p[s->n++] = (tp_bwpt){bw, type};
}

/* Bandwidth (GB/s) and duration of a memory op, or 0 when the op is skipped. */
static int op_bw(const tp_an_view *v, size_t i, double *bw, int64_t *dur) {
    const tp_events *ev = &v->r->ev;
    *dur = tp_an_view_dur(v, i);
    if (v->opts.compat_hta) {
        double b = tp_ev_bw_gbps(ev, tp_an_view_row(v, i));
        *bw = isnan(b) ? 0.0 : b;
        if (*dur == 0)
            *dur = 1000; /* HTA issue #20: 0 µs ops count as 1 µs */
        return 1;
    }
    int64_t bytes = tp_ev_bytes(ev, tp_an_view_row(v, i));
    if (*dur <= 0 || bytes < 0)
        return 0;
    *bw = (double)bytes / (double)*dur;
    return 1;
}

static int cmp_type(const void *a, const void *b) {
    return strcmp(((const tp_an_membw *)a)->type, ((const tp_an_membw *)b)->type);
}

static void copy_add(const tp_an_view *v, tp_an_memory *out, size_t *cap, size_t i);

/* The bandwidth series, and the copy statistics in the same pass over the rows (copy_add:
 * every GPU copy and memset, in view order). The pass visits the GPU rows only: through
 * gpu_order when that is their view order (the model's rows, in order, at its own times:
 * their starts ascend, and gpu_order exists only when no two GPU starts are equal), else the
 * view's rows with their GPU test (a fifth to a third of them are GPU rows). */
static void bw_summary(const tp_an_view *v, tp_an_memory *out) {
    tp_series s = {0};
    /* The memory ops' ends, one per op as they come (was a duration and a row index per view
     * row, zeroed: 16 bytes a row for the few memory ops among them). */
    int64_t *end = NULL;
    size_t na = 0, end_cap = 0;
    char t[16];
    size_t cap = 0;
    const uint8_t *cat = v->r->ev.cat;
    const uint32_t *order = v->by_corr && tp_an_view_ts_model(v) ? v->gpu_order : NULL;
    for (size_t k = 0, n = order ? v->n_gpu : v->n; k < n; k++) {
        double bw;
        int64_t dur;
        size_t i = order ? order[k] : k;
        if (!order && !tp_an_view_gpu(v, i))
            continue;
        if (cat[tp_an_view_row(v, i)] == TP_CAT_MEMCPY ||
            cat[tp_an_view_row(v, i)] == TP_CAT_MEMSET)
            copy_add(v, out, &cap, i);
        if (tp_an_view_ktype(v, i) != TP_KT_MEMORY || !op_bw(v, i, &bw, &dur))
            continue;
        mem_type(tp_an_view_name(v, i), t);
        add_pt(&s, tp_an_view_ts(v, i), bw, type_index(&s, t));
        tp_an_grow((void **)&end, &end_cap, na + 1, sizeof *end);
        end[na++] = tp_an_view_ts(v, i) + dur;
    }
    pts_room(&s, 2 * na);           /* the end points' room at once: 2 na points, not a doubling */
    for (size_t k = 0; k < na; k++) /* HTA concatenates the end points after the starts */
        add_pt(&s, end[k], -s.p[k].bw, s.p[k].type);
    free(end);
    /* numpy's order of the times, 4-byte indices below 2^32 points (else 8): with the times
     * as the key itself, 12 bytes a point less than a key copy and an 8-byte order (of
     * 9,480 points on hta_trace_diff_test) */
    uint32_t *ord32 = NULL;
    size_t *ordw = NULL;
    if (s.n < UINT32_MAX)
        ord32 = tp_an_argsort_np_over(s.ts, s.n, tp_sort_order_i64_s(s.ts, s.n, v->scratch),
                                      v->scratch);
    else
        tp_an_argsort_np(s.ts, s.n, ordw = tp_an_alloc(s.n, sizeof *ordw), v->scratch);
    free(s.ts); /* before vals: they take its place */
    s.ts = NULL;
    double *vals = tp_an_alloc(s.n + 1, sizeof *vals);
    out->bw = tp_an_alloc(s.nt + 1, sizeof *out->bw);
    out->n_bw = s.nt;
    for (size_t ty = 0; ty < s.nt; ty++) {
        double cum = 0;
        size_t m = 0;
        for (size_t k = 0; k < s.n; k++) {
            const tp_bwpt *pt = &s.p[ord32 ? ord32[k] : ordw[k]];
            if (pt->type != (int)ty)
                continue;
            cum += pt->bw;
            if (cum > 0)
                vals[m++] = cum;
        }
        snprintf(out->bw[ty].type, sizeof out->bw[ty].type, "%s", s.types[ty]);
        tp_an_describe(vals, m, &out->bw[ty].bw);
    }
    qsort(out->bw, out->n_bw, sizeof *out->bw, cmp_type);
    tp_an_tmp_put(v, ord32);
    free(ordw);
    free(vals);
    free(s.p);
    free(s.types);
}

static int cmp_copy(const void *a, const void *b) {
    const tp_an_copy *x = a, *y = b;
    if (x->copy_kind != y->copy_kind)
        return x->copy_kind < y->copy_kind ? -1 : 1;
    return (x->src_kind > y->src_kind) - (x->src_kind < y->src_kind);
}

static tp_an_copy *copy_slot(tp_an_memory *out, size_t *cap, uint8_t ck, uint8_t sk) {
    for (size_t k = 0; k < out->n_copy; k++)
        if (out->copy[k].copy_kind == ck && out->copy[k].src_kind == sk)
            return &out->copy[k];
    tp_an_grow((void **)&out->copy, cap, out->n_copy + 1, sizeof *out->copy);
    tp_an_copy *c = &out->copy[out->n_copy++];
    memset(c, 0, sizeof *c);
    c->copy_kind = ck;
    c->src_kind = sk;
    return c;
}

/* Copy statistics: view row i (a GPU copy or memset) counted in its kind's slot. */
static void copy_add(const tp_an_view *v, tp_an_memory *out, size_t *cap, size_t i) {
    const tp_events *ev = &v->r->ev;
    size_t r = tp_an_view_row(v, i);
    /* one lookup of the row's copy facts (a bisection of the side table), not five:
     * their mispredicted branches were ~1 % of `report --compat hta`'s CPU time */
    const tp_ev_copy *cp = tp_ev_copy_of(ev, r);
    uint8_t ck = ev->cat[r] == TP_CAT_MEMSET ? TP_AN_MEMSET_KIND : cp ? cp->copy_kind : 0;
    tp_an_copy *c = copy_slot(out, cap, ck, cp ? cp->src_kind : 0);
    int64_t d = tp_an_view_dur(v, i), bytes = cp ? cp->bytes : -1;
    c->count++;
    c->dur_ns = tp_an_add(c->dur_ns, d);
    if (bytes > 0) {
        c->bytes = tp_an_add(c->bytes, bytes);
        if (d > 0 && (double)bytes / (double)d > c->max_gbps)
            c->max_gbps = (double)bytes / (double)d;
    }
}

/* The copy slots' rates, and the slots by kind. */
static void copy_finish(tp_an_memory *out) {
    for (size_t k = 0; k < out->n_copy; k++)
        out->copy[k].gbps =
            out->copy[k].dur_ns > 0 ? (double)out->copy[k].bytes / (double)out->copy[k].dur_ns : 0;
    if (out->n_copy)
        qsort(out->copy, out->n_copy, sizeof *out->copy, cmp_copy);
}

void tp_an_memory_run(const tp_an_view *v, tp_an_memory *out) {
    memset(out, 0, sizeof *out);
    bw_summary(v, out);
    copy_finish(out);
}

void tp_an_memory_free(tp_an_memory *out) {
    if (!out)
        return;
    free(out->bw);
    free(out->copy);
    memset(out, 0, sizeof *out);
}
