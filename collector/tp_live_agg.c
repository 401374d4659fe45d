/* tp_live_agg: the live job's online aggregator (see the header). */
#include "tp_live_agg.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_interval.h"
#include "tp_kgroup.h"
#include "tp_kineto_names.h"
#include "tp_mem.h"
#include "tp_pairing.h"

#define SEGS (2 * TP_LIVE_AGG_STEPS + 2) /* a step and its gap each */
#define MAX_STREAMS 64
#define TOP_OPS 12
#define TOP_RANGES 14
#define SHOW_STREAMS 6
#define CELLS 64
#define NAME_MAX_SHOWN 160
#define RANGE_KEY (1ull << 63) /* stat keys: ranges have this bit, operations do not */
#define CORR_SLOTS 65536u      /* launches remembered (correlation ids are sequential) */
#define MAX_OPEN 65536u        /* NVTX ranges open at once that are followed */

enum { IT_OP, IT_RANGE, IT_MEM };

/* What the figures need of one record. */
typedef struct {
    uint64_t ts, end;
    uint64_t key;           /* OP: name key; RANGE: RANGE_KEY | domain << 32 | name */
    int64_t d_alloc, d_res; /* MEM */
    uint32_t stream;        /* OP: index into streams, or MAX_STREAMS: none */
    uint32_t corr;          /* OP: the launch's correlation id, 0: none */
    uint8_t kind, group;    /* group: tp_kgroup of an operation */
} item;

/* Per name: the same four figures the analyzer's tables start from. */
typedef struct {
    uint64_t key; /* + 1; 0: empty slot */
    uint64_t count;
    int64_t sum, min, max;
    int64_t gpu_ns; /* ranges: device time of the operations launched inside (innermost) */
    uint64_t gpu_ops;
    uint8_t group;
} stat;

/* A launch: the innermost range open on its thread when it was made. */
typedef struct {
    uint32_t corr;     /* 0: empty */
    uint64_t range;    /* stat key of that range, 0: none */
    uint64_t range_ts; /* its start */
} launch;

/* Device time for a range that started before the segment the operation is in: a window
 * counts it only when it holds the range's start too (a window's trace pairs an operation
 * with a range only when both are in it). */
typedef struct {
    uint64_t range, range_ts;
    int64_t dur;
} cross;

typedef struct {
    stat *v;
    size_t cap, n; /* cap: a power of two */
} stat_map;

typedef struct {
    tp_interval iv;
    uint32_t stream;
} span;

typedef struct {
    uint64_t start;
    stat_map st;
    span *sp;
    size_t n_sp, cap_sp;
    cross *x;
    size_t n_x, cap_x;
    int64_t d_alloc, d_res;
    uint64_t mem_events;
    int final;
} seg;

struct tp_live_agg {
    char *strs; /* STRING texts, NUL-terminated, at str_off[sid] - 1 */
    size_t strs_len, strs_cap;
    uint32_t *str_off;
    size_t str_cap;
    struct {
        uint32_t device, stream;
    } streams[MAX_STREAMS];
    int n_streams;
    tp_range_stack open; /* NVTX ranges waiting for their end */
    launch *launches;    /* CORR_SLOTS, by correlation id modulo */
    tp_region_map regions;
    item *pend;
    size_t n_pend, cap_pend;
    seg *segs; /* ring of SEGS, oldest at head */
    size_t head, n_segs;
    int64_t base_alloc, base_res; /* memory state before the oldest segment */
    uint64_t base_events;
    int have_mem;
    uint64_t watermark;
    tp_live_agg_stats st;
};

tp_status tp_live_agg_open(tp_live_agg **out) {
    tp_live_agg *a = calloc(1, sizeof *a);
    if (!a || !(a->segs = calloc(SEGS, sizeof *a->segs)) ||
        !(a->launches = calloc(CORR_SLOTS, sizeof *a->launches))) {
        if (a)
            free(a->segs);
        free(a);
        return TP_ERR_NOMEM;
    }
    *out = a;
    return TP_OK;
}

static void seg_free(seg *s) {
    free(s->x);
    free(s->st.v);
    free(s->sp);
    memset(s, 0, sizeof *s);
}

void tp_live_agg_close(tp_live_agg *a) {
    if (!a)
        return;
    for (size_t i = 0; i < a->n_segs; i++)
        seg_free(&a->segs[(a->head + i) % SEGS]);
    free(a->segs);
    free(a->launches);
    free(a->pend);
    free(a->strs);
    free(a->str_off);
    tp_range_stack_free(&a->open);
    tp_region_map_free(&a->regions);
    free(a);
}

/* ---------------------------------------------------------------- names */

static void see_string(tp_live_agg *a, const tp_rec_string *s) {
    size_t room = s->h.size - sizeof *s;
    const char *nul = memchr(s->text, 0, room);
    if (!nul || s->id >= (1u << 24))
        return;
    size_t len = (size_t)(nul - s->text);
    size_t had = a->str_cap;
    if (!TP_MEM_GROW(a->strs, a->strs_cap, a->strs_len + len + 1) ||
        !TP_MEM_GROW(a->str_off, a->str_cap, (size_t)s->id + 1))
        return;
    memset(a->str_off + had, 0, (a->str_cap - had) * sizeof *a->str_off);
    memcpy(a->strs + a->strs_len, s->text, len + 1);
    a->str_off[s->id] = (uint32_t)a->strs_len + 1;
    a->strs_len += len + 1;
}

static const char *str_of(const tp_live_agg *a, uint32_t sid) {
    return sid < a->str_cap && a->str_off[sid] ? a->strs + a->str_off[sid] - 1 : "";
}

/* An operation's name into buf: its string, or Kineto's name of a copy or memset (the
 * loader's, so the two name them alike). */
static const char *op_name(const tp_live_agg *a, uint64_t key, char *buf, size_t n) {
    unsigned k = (unsigned)(key & 0xffffffffu);
    switch (key >> 32) {
    case 1:
        return tp_kineto_memcpy_name(buf, n, k >> 16, (k >> 8) & 0xff, k & 0xff);
    case 2:
        return tp_kineto_memset_name(buf, n, k);
    default:
        return str_of(a, k);
    }
}

/* ---------------------------------------------------------------- maps */

static stat *stat_slot(stat_map *m, uint64_t key) {
    if ((m->n + 1) * 2 > m->cap) {
        stat_map g = {calloc(m->cap ? m->cap * 2 : 64, sizeof(stat)), m->cap ? m->cap * 2 : 64, 0};
        if (!g.v)
            return NULL;
        for (size_t i = 0; i < m->cap; i++)
            if (m->v[i].key)
                *stat_slot(&g, m->v[i].key - 1) = m->v[i];
        free(m->v);
        *m = g;
    }
    size_t i = (size_t)((key + 1) * 0x9e3779b97f4a7c15ull >> 32) & (m->cap - 1);
    while (m->v[i].key && m->v[i].key != key + 1)
        i = (i + 1) & (m->cap - 1);
    if (!m->v[i].key) {
        m->v[i] = (stat){.key = key + 1, .min = INT64_MAX, .max = INT64_MIN};
        m->n++;
    }
    return &m->v[i];
}

/* Adds `x` (key and all) into m's row of the same key. */
static void stat_merge(stat_map *m, const stat *x) {
    stat *s = stat_slot(m, x->key - 1);
    if (!s)
        return;
    s->group = x->group;
    s->count += x->count;
    s->sum += x->sum;
    s->min = x->min < s->min ? x->min : s->min;
    s->max = x->max > s->max ? x->max : s->max;
    s->gpu_ns += x->gpu_ns;
    s->gpu_ops += x->gpu_ops;
}

static void stat_add(stat_map *m, uint64_t key, uint8_t group, int64_t d) {
    stat x = {key + 1, 1, d, d, d, 0, 0, group};
    stat_merge(m, &x);
}

/* ---------------------------------------------------------------- records */

static uint32_t stream_index(tp_live_agg *a, uint32_t device, uint32_t stream) {
    if (stream == UINT32_MAX) /* no stream: not device work the analyses count */
        return MAX_STREAMS;
    for (int i = 0; i < a->n_streams; i++)
        if (a->streams[i].device == device && a->streams[i].stream == stream)
            return (uint32_t)i;
    if (a->n_streams == MAX_STREAMS)
        return MAX_STREAMS;
    a->streams[a->n_streams].device = device;
    a->streams[a->n_streams].stream = stream;
    return (uint32_t)a->n_streams++;
}

static void place(tp_live_agg *a, const item *it);

static void pend(tp_live_agg *a, const item *it) {
    if (it->ts < a->watermark) { /* arrived after its time was declared final */
        a->st.late++;
        place(a, it);
        return;
    }
    if (a->n_pend == TP_LIVE_AGG_PENDING) { /* full: the oldest half goes now */
        size_t half = a->n_pend / 2;
        for (size_t i = 0; i < half; i++)
            place(a, &a->pend[i]);
        memmove(a->pend, a->pend + half, (a->n_pend - half) * sizeof *a->pend);
        a->n_pend -= half;
        a->st.early += half;
    }
    if (!TP_MEM_GROW(a->pend, a->cap_pend, a->n_pend + 1))
        return;
    a->pend[a->n_pend++] = *it;
}

static void see_op(tp_live_agg *a, uint64_t ts, uint64_t end, uint64_t key, uint32_t device,
                   uint32_t stream, uint32_t corr) {
    char buf[TP_KINETO_NAME_MAX];
    item it = {.ts = ts, .end = end > ts ? end : ts, .key = key, .kind = IT_OP, .corr = corr};
    it.stream = stream_index(a, device, stream);
    if (it.stream == MAX_STREAMS)
        return;
    it.group = (uint8_t)tp_kgroup_of(op_name(a, key, buf, sizeof buf));
    pend(a, &it);
}

static void see_range(tp_live_agg *a, const tp_open_range *o, uint64_t end) {
    item it = {.ts = o->ts, .end = end > o->ts ? end : o->ts, .kind = IT_RANGE};
    it.key = RANGE_KEY | ((uint64_t)o->domain << 32) | o->msg_sid;
    pend(a, &it);
}

static void see_mem(tp_live_agg *a, uint64_t ts, int64_t d_alloc, int64_t d_res) {
    item it = {.ts = ts, .end = ts, .d_alloc = d_alloc, .d_res = d_res, .kind = IT_MEM};
    a->have_mem = 1;
    pend(a, &it);
}

/* Ranges never closed (a thread that died inside one) must not grow the list without end. */
static void open_range(tp_live_agg *a, const tp_open_range *o) {
    if (a->open.n >= MAX_OPEN || !tp_range_stack_push(&a->open, o))
        a->st.unplaced++;
}

static void see_nvtx(tp_live_agg *a, const tp_rec_hdr *r) {
    tp_open_range o = {0}, done;
    switch (r->type) {
    case TP_REC_NVTX_PUSH: {
        const tp_rec_nvtx *p = (const tp_rec_nvtx *)r;
        o.key = TP_PAIR_PUSH_KEY(p->tid, p->domain);
        o.ts = p->ts, o.msg_sid = p->msg_sid, o.tid = p->tid, o.domain = p->domain;
        open_range(a, &o);
        break;
    }
    case TP_REC_NVTX_POP: {
        const tp_rec_nvtx_pop *p = (const tp_rec_nvtx_pop *)r;
        if (tp_range_stack_take(&a->open, TP_PAIR_PUSH_KEY(p->tid, p->domain), &done))
            see_range(a, &done, p->ts);
        break;
    }
    case TP_REC_NVTX_START: {
        const tp_rec_nvtx_start *p = (const tp_rec_nvtx_start *)r;
        o.key = p->range_id;
        o.ts = p->ts, o.msg_sid = p->msg_sid, o.tid = p->tid, o.domain = p->domain;
        open_range(a, &o);
        break;
    }
    case TP_REC_NVTX_END: {
        const tp_rec_nvtx_end *p = (const tp_rec_nvtx_end *)r;
        if (tp_range_stack_take(&a->open, p->range_id, &done))
            see_range(a, &done, p->ts);
        break;
    }
    default:
        break;
    }
}

/* The smallest size each type's fields need (older writers' shorter records are skipped). */
static size_t need(uint16_t type) {
    switch (type) {
    case TP_REC_KERNEL:
        return offsetof(tp_rec_kernel, grid_x);
    case TP_REC_MEMCPY:
        return offsetof(tp_rec_memcpy, reserved0);
    case TP_REC_MEMSET:
        return sizeof(tp_rec_memset);
    case TP_REC_HEAP:
        return sizeof(tp_rec_heap);
    case TP_REC_REGION:
        return sizeof(tp_rec_region);
    case TP_REC_NVTX_PUSH:
        return sizeof(tp_rec_nvtx);
    case TP_REC_NVTX_POP:
        return sizeof(tp_rec_nvtx_pop);
    case TP_REC_NVTX_START:
        return sizeof(tp_rec_nvtx_start);
    case TP_REC_NVTX_END:
        return sizeof(tp_rec_nvtx_end);
    case TP_REC_STRING:
        return sizeof(tp_rec_string) + 1;
    case TP_REC_API:
        return sizeof(tp_rec_api);
    default:
        return SIZE_MAX;
    }
}

/* A launch (an API call with a correlation id): a thread's records arrive in its order, so
 * the ranges open on it now are those open at the call. The innermost one (the model's
 * parent chain, which analyzer/tp_an_nvtx follows) gets the device time of what it launched. */
static void see_api(tp_live_agg *a, const tp_rec_api *c) {
    if (!c->correlation)
        return;
    launch *l = &a->launches[c->correlation % CORR_SLOTS];
    l->corr = c->correlation;
    l->range = 0;
    for (size_t i = a->open.n; i-- > 0;)
        if (a->open.v[i].tid == c->tid && a->open.v[i].ts <= c->ts) {
            const tp_open_range *o = &a->open.v[i];
            l->range = RANGE_KEY | ((uint64_t)o->domain << 32) | o->msg_sid;
            l->range_ts = o->ts;
            return;
        }
}

void tp_live_agg_add(tp_live_agg *a, const tp_rec_hdr *r) {
    if (r->size < need(r->type))
        return;
    switch (r->type) {
    case TP_REC_API:
        see_api(a, (const tp_rec_api *)r);
        break;
    case TP_REC_STRING:
        see_string(a, (const tp_rec_string *)r);
        break;
    case TP_REC_KERNEL: {
        const tp_rec_kernel *k = (const tp_rec_kernel *)r;
        see_op(a, k->ts, k->end, k->name_sid, k->device, k->stream, k->correlation);
        break;
    }
    case TP_REC_MEMCPY: {
        const tp_rec_memcpy *c = (const tp_rec_memcpy *)r;
        uint64_t key =
            1ull << 32 | (uint32_t)c->copy_kind << 16 | (uint32_t)c->src_kind << 8 | c->dst_kind;
        see_op(a, c->ts, c->end, key, c->device, c->stream, c->correlation);
        break;
    }
    case TP_REC_MEMSET: {
        const tp_rec_memset *m = (const tp_rec_memset *)r;
        see_op(a, m->ts, m->end, 2ull << 32 | m->mem_kind, m->device, m->stream, m->correlation);
        break;
    }
    case TP_REC_REGION: {
        const tp_rec_region *g = (const tp_rec_region *)r;
        int64_t delta;
        (void)tp_region_map_apply(&a->regions, g->address, g->size, g->op == TP_REGION_UNREGISTER,
                                  &delta);
        see_mem(a, g->ts, delta, 0);
        break;
    }
    case TP_REC_HEAP: {
        const tp_rec_heap *h = (const tp_rec_heap *)r;
        see_mem(a, h->ts, 0, tp_heap_reserved_delta(h->op, h->size));
        break;
    }
    default:
        see_nvtx(a, r);
    }
}

/* ---------------------------------------------------------------- segments */

static seg *seg_at(tp_live_agg *a, size_t i) {
    return &a->segs[(a->head + i) % SEGS];
}

/* Index of the segment `ts` falls in, or -1 when it is older than every one kept. */
static long seg_find(tp_live_agg *a, uint64_t ts) {
    size_t lo = 0, hi = a->n_segs; /* the answer is lo - 1 after the search */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (seg_at(a, mid)->start <= ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (long)lo - 1;
}

/* The range row an operation's device time goes to (its launch's innermost range), 0: none.
 * Asked when the operation is attributed: by then (the watermark) its launch has arrived. */
static const launch *launched_in(const tp_live_agg *a, uint32_t corr) {
    const launch *l = corr ? &a->launches[corr % CORR_SLOTS] : NULL;
    return l && l->corr == corr && l->range ? l : NULL;
}

static void seg_put(const tp_live_agg *a, seg *s, const item *it) {
    switch (it->kind) {
    case IT_MEM:
        s->d_alloc += it->d_alloc, s->d_res += it->d_res, s->mem_events++;
        break;
    case IT_RANGE:
        stat_add(&s->st, it->key, 0, (int64_t)(it->end - it->ts));
        break;
    default: {
        int64_t d = (int64_t)(it->end - it->ts);
        stat_add(&s->st, it->key, it->group, d);
        const launch *l = launched_in(a, it->corr);
        if (l && l->range_ts >= s->start) {
            stat g = {l->range + 1, 0, 0, INT64_MAX, INT64_MIN, d, 1, 0};
            stat_merge(&s->st, &g);
        } else if (l && TP_MEM_GROW(s->x, s->cap_x, s->n_x + 1)) {
            s->x[s->n_x++] = (cross){l->range, l->range_ts, d};
        }
        if (TP_MEM_GROW(s->sp, s->cap_sp, s->n_sp + 1))
            s->sp[s->n_sp++] = (span){{(int64_t)it->ts, (int64_t)it->end}, it->stream};
    }
    }
}

static void place(tp_live_agg *a, const item *it) {
    long i = seg_find(a, it->ts);
    if (i >= 0) {
        seg_put(a, seg_at(a, (size_t)i), it);
    } else if (it->kind == IT_MEM) {
        a->base_alloc += it->d_alloc, a->base_res += it->d_res, a->base_events++;
    } else {
        a->st.unplaced++;
    }
}

static int by_stream(const void *x, const void *y) {
    const span *p = x, *q = y;
    return (p->stream > q->stream) - (p->stream < q->stream);
}

/* A final segment keeps only the union of its intervals per stream (the busy time cannot
 * change any more, and the runs are fewer than the operations). */
static void seg_compact(seg *s) {
    if (s->n_sp < 2)
        return;
    qsort(s->sp, s->n_sp, sizeof *s->sp, by_stream);
    size_t out = 0;
    for (size_t i = 0; i < s->n_sp;) {
        size_t j = i;
        while (j < s->n_sp && s->sp[j].stream == s->sp[i].stream)
            j++;
        tp_interval *iv = malloc((j - i) * sizeof *iv);
        if (!iv)
            return;
        for (size_t k = i; k < j; k++)
            iv[k - i] = s->sp[k].iv;
        size_t runs = tp_interval_union(iv, j - i, INT64_MIN, INT64_MAX);
        uint32_t stream = s->sp[i].stream;
        for (size_t k = 0; k < runs; k++)
            s->sp[out++] = (span){iv[k], stream};
        free(iv);
        i = j;
    }
    s->n_sp = out;
}

void tp_live_agg_edge(tp_live_agg *a, uint64_t ts) {
    if (a->n_segs && seg_at(a, a->n_segs - 1)->start >= ts)
        return;
    if (a->n_segs == SEGS) { /* the oldest goes: its memory stays in the state */
        seg *o = seg_at(a, 0);
        a->base_alloc += o->d_alloc, a->base_res += o->d_res, a->base_events += o->mem_events;
        seg_free(o);
        a->head = (a->head + 1) % SEGS;
        a->n_segs--;
    }
    seg *s = seg_at(a, a->n_segs++);
    memset(s, 0, sizeof *s);
    s->start = ts;
}

void tp_live_agg_advance(tp_live_agg *a, uint64_t watermark) {
    if (watermark <= a->watermark)
        return;
    a->watermark = watermark;
    size_t keep = 0;
    for (size_t i = 0; i < a->n_pend; i++) {
        if (a->pend[i].ts < watermark)
            place(a, &a->pend[i]);
        else
            a->pend[keep++] = a->pend[i];
    }
    a->n_pend = keep;
    for (size_t i = 0; i + 1 < a->n_segs; i++) {
        seg *s = seg_at(a, i);
        if (!s->final && seg_at(a, i + 1)->start <= watermark) {
            s->final = 1;
            seg_compact(s);
        }
    }
}

void tp_live_agg_get_stats(const tp_live_agg *a, tp_live_agg_stats *out) {
    *out = a->st;
    out->pending = a->n_pend;
    out->segments = a->n_segs;
}

/* ---------------------------------------------------------------- a window */

typedef struct {
    stat_map st;
    tp_interval *iv;
    uint32_t *ivs;
    size_t n_iv, cap_iv, cap_ivs;
    int64_t alloc0, res0, d_alloc, d_res;
    uint64_t mem_events;
    int provisional;
} window;

static void win_span(window *w, const span *s) {
    if (TP_MEM_GROW(w->iv, w->cap_iv, w->n_iv + 1) && TP_MEM_GROW(w->ivs, w->cap_ivs, w->n_iv + 1))
        w->iv[w->n_iv] = s->iv, w->ivs[w->n_iv++] = s->stream;
}

static void win_seg(window *w, const seg *s, uint64_t t0) {
    for (size_t i = 0; i < s->n_x; i++)
        if (s->x[i].range_ts >= t0) {
            stat g = {s->x[i].range + 1, 0, 0, INT64_MAX, INT64_MIN, s->x[i].dur, 1, 0};
            stat_merge(&w->st, &g);
        }
    for (size_t i = 0; i < s->st.cap; i++) {
        if (s->st.v[i].key)
            stat_merge(&w->st, &s->st.v[i]);
    }
    for (size_t i = 0; i < s->n_sp; i++)
        win_span(w, &s->sp[i]);
    w->d_alloc += s->d_alloc, w->d_res += s->d_res, w->mem_events += s->mem_events;
    w->provisional |= !s->final;
}

/* A pending record: in the window, or (memory) before it. */
static void win_pending(const tp_live_agg *a, window *w, const item *it, uint64_t t0, uint64_t t1) {
    if (it->kind == IT_MEM && it->ts < t0) {
        w->alloc0 += it->d_alloc, w->res0 += it->d_res;
        return;
    }
    if (it->ts < t0 || it->ts > t1)
        return;
    w->provisional = 1;
    seg tmp = {.start = UINT64_MAX}; /* every device time of it goes through the t0 test */
    seg_put(a, &tmp, it);
    tmp.final = 1;
    win_seg(w, &tmp, t0);
    seg_free(&tmp);
}

static void gather(tp_live_agg *a, uint64_t t0, uint64_t t1, window *w) {
    w->alloc0 = a->base_alloc, w->res0 = a->base_res;
    for (size_t i = 0; i < a->n_segs; i++) {
        const seg *s = seg_at(a, i);
        if (s->start < t0)
            w->alloc0 += s->d_alloc, w->res0 += s->d_res;
        else if (s->start < t1 || (s->start == t1 && t0 == t1))
            win_seg(w, s, t0);
    }
    for (size_t i = 0; i < a->n_pend; i++)
        win_pending(a, w, &a->pend[i], t0, t1);
    if (a->watermark < t1)
        w->provisional = 1;
}

typedef struct {
    char *buf;
    size_t cap, len;
} out_text;

static void put(out_text *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(out_text *o, const char *fmt, ...) {
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof line || o->len + (size_t)n + 1 > o->cap)
        return; /* a line that does not fit is left out whole */
    memcpy(o->buf + o->len, line, (size_t)n + 1);
    o->len += (size_t)n;
}

static int by_sum(const void *x, const void *y) {
    const stat *p = *(const stat *const *)x, *q = *(const stat *const *)y;
    return (p->sum < q->sum) - (p->sum > q->sum);
}

/* A name as one line of the reply: no line breaks, at most NAME_MAX_SHOWN bytes. */
static void clean_name(const char *s, char *out, size_t n) {
    size_t k = 0;
    for (; s[k] && k + 1 < n && k < NAME_MAX_SHOWN; k++)
        out[k] = s[k] == '\n' || s[k] == '\r' ? ' ' : s[k];
    out[k] = 0;
}

static void put_tables(tp_live_agg *a, const window *w, out_text *o) {
    const stat **v = malloc((w->st.n + 1) * sizeof *v);
    if (!v)
        return;
    size_t n = 0, ops = 0, ranges = 0;
    for (size_t i = 0; i < w->st.cap; i++)
        if (w->st.v[i].key)
            v[n++] = &w->st.v[i];
    qsort(v, n, sizeof *v, by_sum);
    for (size_t i = 0; i < n; i++) {
        char buf[TP_KINETO_NAME_MAX], name[NAME_MAX_SHOWN + 1];
        uint64_t key = v[i]->key - 1;
        if (key & RANGE_KEY) {
            if (ranges >= TOP_RANGES || !v[i]->count) /* only device time of it here */
                continue;
            clean_name(str_of(a, (uint32_t)key), name, sizeof name);
            put(o, "r%zu=%llu,%lld,%lld,%lld,%lld,%llu,%s\n", ranges++,
                (unsigned long long)v[i]->count, (long long)v[i]->sum, (long long)v[i]->min,
                (long long)v[i]->max, (long long)v[i]->gpu_ns, (unsigned long long)v[i]->gpu_ops,
                name);
        } else if (v[i]->group != TP_KGROUP_OTHER && ops < TOP_OPS) {
            clean_name(op_name(a, key, buf, sizeof buf), name, sizeof name);
            put(o, "k%zu=%llu,%lld,%lld,%lld,%u,%s\n", ops++, (unsigned long long)v[i]->count,
                (long long)v[i]->sum, (long long)v[i]->min, (long long)v[i]->max, v[i]->group,
                name);
        }
    }
    free(v);
}

/* Per stream: busy time and the busy share of CELLS equal cells of the window, 0-100. */
static void put_streams(tp_live_agg *a, window *w, uint64_t t0, uint64_t t1, out_text *o) {
    tp_interval *iv = malloc((w->n_iv + 1) * sizeof *iv);
    if (!iv)
        return;
    double len = (double)(t1 - t0);
    for (int s = 0, shown = 0; s < a->n_streams && shown < SHOW_STREAMS; s++) {
        size_t n = 0;
        for (size_t i = 0; i < w->n_iv; i++)
            if (w->ivs[i] == (uint32_t)s)
                iv[n++] = w->iv[i];
        if (!n)
            continue;
        n = tp_interval_union(iv, n, (int64_t)t0, (int64_t)t1);
        char cells[CELLS * 4 + 1];
        size_t c = 0, k = 0;
        for (int cell = 0; cell < CELLS; cell++) {
            int64_t c0 = (int64_t)(t0 + (uint64_t)(len * cell / CELLS)),
                    c1 = (int64_t)(t0 + (uint64_t)(len * (cell + 1) / CELLS)), busy = 0;
            while (k < n && iv[k].b <= c0)
                k++;
            for (size_t j = k; j < n && iv[j].a < c1; j++)
                busy += (iv[j].b < c1 ? iv[j].b : c1) - (iv[j].a > c0 ? iv[j].a : c0);
            c += (size_t)snprintf(cells + c, sizeof cells - c, "%s%d", cell ? "," : "",
                                  c1 > c0 ? (int)(100 * busy / (c1 - c0)) : 0);
        }
        put(o, "s%d=%lld,%u,%u,%s\n", shown++, (long long)tp_interval_len(iv, n),
            a->streams[s].device, a->streams[s].stream, cells);
    }
    free(iv);
}

size_t tp_live_agg_window(tp_live_agg *a, uint64_t t0, uint64_t t1, char *buf, size_t cap) {
    out_text o = {buf, cap, strlen(buf)};
    window w = {0};
    gather(a, t0, t1, &w);
    tp_interval *all = malloc((w.n_iv + 1) * sizeof *all);
    int64_t busy = 0;
    if (all) {
        if (w.n_iv)
            memcpy(all, w.iv, w.n_iv * sizeof *all);
        busy = tp_interval_len(all, tp_interval_union(all, w.n_iv, (int64_t)t0, (int64_t)t1));
        free(all);
    }
    put(&o, "agg_t0=%llu\nagg_t1=%llu\nagg_final=%d\nagg_watermark=%llu\nagg_busy_ns=%lld\n",
        (unsigned long long)t0, (unsigned long long)t1, !w.provisional,
        (unsigned long long)a->watermark, (long long)busy);
    if (a->have_mem)
        put(&o,
            "agg_alloc0=%lld\nagg_alloc1=%lld\nagg_reserved0=%lld\nagg_reserved1=%lld\n"
            "agg_mem_events=%llu\n",
            (long long)w.alloc0, (long long)(w.alloc0 + w.d_alloc), (long long)w.res0,
            (long long)(w.res0 + w.d_res), (unsigned long long)w.mem_events);
    put(&o, "agg_late=%llu\nagg_pending=%zu\n", (unsigned long long)a->st.late, a->n_pend);
    put_streams(a, &w, t0, t1, &o);
    put_tables(a, &w, &o);
    free(w.st.v), free(w.iv), free(w.ivs);
    return o.len;
}
