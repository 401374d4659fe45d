/* tp_visit: the record walk and its dispatch (see tp_visit.h).
 *
 * Dispatch is by table: v->data[type] for records, `pairing` below for the NVTX halves, one
 * call per type in the walk's `step`. Records are walked in the cursor's buffer, a run at a
 * time (tp_cursor_run_begin), the rest from tp_cursor_next. The per-record cost is a bounds-free
 * table load, one size compare and an indirect call; the zero-extending copy happens only for
 * records shorter than this build's struct. */
#include "tp_visit.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "tp_mem.h"

/* Room for the longest fixed-size record, for zero-extending shorter (older) ones. */
#define EXT_BYTES 256
#define TP_VISIT_FITS(name, value, st, timed, interval)                                            \
    static_assert(sizeof(st) <= EXT_BYTES, #st " must fit the zero-extension buffer");
TP_RECORD_TABLE(TP_VISIT_FITS)
#undef TP_VISIT_FITS

/* One walk's state. */
typedef struct walk {
    const tp_visitor *v;
    void *ctx;
    tp_reader *r;
    /* per type, all a record's dispatch reads, in one entry: the shortest size this build
     * reads without zero-extending it and the one call the record takes, fn(arg, record): the
     * visitor's handler (arg: its ctx), the pairing step (arg: the walk) or, for a type that
     * has both, pair_then_data; fn NULL: neither */
    struct step {
        uint32_t min_size;
        tp_visit_fn fn;
        void *arg;
    } step[TP_REC_TYPE_LIMIT];
    int hooks; /* keep or each: visit_record's loop with them (visit_data) */
    tp_range_stack pushes, starts;
    /* ENDs that came before their START in file order (a range ended on another thread
     * whose chunk was written first): `early` keeps each END's time and thread (taken ones
     * stay as holes), `early_ids` maps its range id to 1 + its index there. */
    tp_range_stack early;
    tp_region_map early_ids;
    tp_visit_stats st;
    uint64_t ext[EXT_BYTES / 8];
} walk;

/* ---------------------------------------------------------------- metadata */

enum { FIRST = 1, LAST = 2 };

typedef struct {
    uint32_t tid;
    size_t i; /* position in file order */
} tid_at;

static int tid_at_cmp(const void *a, const void *b) {
    const tid_at *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* flags[i] = FIRST / LAST when recs[i] is its tid's first / last THREAD record. Sorting
 * keeps this O(n log n) for traces with many short-lived threads. */
static int thread_flags(const tp_rec_hdr *const *recs, size_t n, uint8_t *flags) {
    tid_at *ord = tp_mem_alloc(n, sizeof *ord);
    if (!ord)
        return 0;
    for (size_t i = 0; i < n; i++)
        ord[i] = (tid_at){((const tp_rec_thread *)recs[i])->tid, i};
    qsort(ord, n, sizeof *ord, tid_at_cmp);
    for (size_t k = 0; k < n; k++) {
        flags[ord[k].i] |= k == 0 || ord[k - 1].tid != ord[k].tid ? FIRST : 0;
        flags[ord[k].i] |= k + 1 == n || ord[k + 1].tid != ord[k].tid ? LAST : 0;
    }
    free(ord);
    return 1;
}

static tp_status visit_threads(walk *w, const tp_rec_hdr *const *recs, size_t n) {
    uint8_t *flags = n ? tp_mem_calloc(n, 1) : NULL;
    if (n && (!flags || !thread_flags(recs, n, flags))) {
        free(flags);
        return TP_ERR_NOMEM;
    }
    tp_status st = TP_OK;
    for (size_t i = 0; i < n && st == TP_OK; i++) {
        if (w->v->meta[TP_REC_THREAD])
            st = w->v->meta[TP_REC_THREAD](w->ctx, recs[i]);
        const tp_rec_thread *t = (const tp_rec_thread *)recs[i];
        tp_visit_thread d = {t, tp_reader_thread_name(w->r, t->tid), (flags[i] & FIRST) != 0,
                             (flags[i] & LAST) != 0};
        if (st == TP_OK)
            st = w->v->thread(w->ctx, &d);
    }
    free(flags);
    return st;
}

/* The reader keeps metadata records at full length already (tp_reader_meta). */
static tp_status visit_meta(walk *w) {
    for (uint16_t t = 0; t < TP_REC_TYPE_LIMIT; t++) {
        int digest = t == TP_REC_THREAD && w->v->thread;
        tp_visit_fn fn = w->v->meta[t];
        if (!fn && !digest)
            continue;
        const tp_rec_hdr *const *recs;
        size_t n = tp_reader_meta(w->r, t, &recs);
        if (digest) {
            tp_status st = visit_threads(w, recs, n);
            if (st != TP_OK)
                return st;
            continue;
        }
        for (size_t i = 0; i < n; i++) {
            tp_status st = fn(w->ctx, recs[i]);
            if (st != TP_OK)
                return st;
        }
    }
    return TP_OK;
}

/* ---------------------------------------------------------------- NVTX pairing */

/* tp_range_stack_push, its common case (room for one more) inline. */
static inline tp_status open_range(tp_range_stack *s, const tp_open_range *o) {
    if (s->n < s->cap) {
        s->v[s->n++] = *o;
        return TP_OK;
    }
    return tp_range_stack_push(s, o) ? TP_OK : TP_ERR_NOMEM;
}

/* tp_range_stack_take, its common case (the innermost range closes: pushes and pops nest)
 * inline. */
static inline int take_range(tp_range_stack *s, uint64_t key, tp_open_range *out) {
    if (s->n && s->v[s->n - 1].key == key) {
        *out = s->v[--s->n];
        return 1;
    }
    return tp_range_stack_take(s, key, out);
}

static tp_status close_range(walk *w, tp_range_stack *s, uint64_t key, uint64_t end,
                             uint32_t end_tid) {
    tp_visit_range r = {.end = end, .end_tid = end_tid, .closed = 1};
    if (!take_range(s, key, &r.open)) {
        w->st.nvtx_unpaired++;
        return TP_OK;
    }
    return w->v->range(w->ctx, &r);
}

/* An END with no open START: kept until its START comes (chunks of different threads reach
 * the file in drain order, not time order), counted unpaired if none does. A second early
 * END of one id replaces the first, which is unpaired. */
static tp_status keep_early_end(walk *w, uint64_t id, uint64_t ts, uint32_t tid) {
    if (id == 0) { /* no range has id 0 (the map cannot hold it) */
        w->st.nvtx_unpaired++;
        return TP_OK;
    }
    tp_open_range e = {.key = id, .ts = ts, .tid = tid};
    w->st.nvtx_unpaired += tp_region_map_take(&w->early_ids, id) != 0;
    if (!tp_range_stack_push(&w->early, &e) || !tp_region_map_put(&w->early_ids, id, w->early.n))
        return TP_ERR_NOMEM;
    return TP_OK;
}

static uint32_t color_of(const tp_rec_hdr *h, uint32_t color) {
    return (h->flags & TP_NVTX_HAS_COLOR) ? color : 0;
}

static tp_status pair_push(void *wp, const tp_rec_hdr *h) {
    walk *w = wp;
    const tp_rec_nvtx *n = (const void *)h;
    tp_open_range o = {.key = TP_PAIR_PUSH_KEY(n->tid, n->domain),
                       .ts = n->ts,
                       .msg_sid = n->msg_sid,
                       .tid = n->tid,
                       .domain = n->domain,
                       .category = n->category,
                       .color = color_of(h, n->color),
                       .opened_by = TP_REC_NVTX_PUSH,
                       .stack_id = n->stack_id};
    return open_range(&w->pushes, &o);
}

static tp_status pair_start(void *wp, const tp_rec_hdr *h) {
    walk *w = wp;
    const tp_rec_nvtx_start *n = (const void *)h;
    uint64_t slot = w->early_ids.n ? tp_region_map_take(&w->early_ids, n->range_id) : 0;
    tp_open_range o = {.key = n->range_id,
                       .ts = n->ts,
                       .msg_sid = n->msg_sid,
                       .tid = n->tid,
                       .domain = n->domain,
                       .category = n->category,
                       .color = color_of(h, n->color),
                       .opened_by = TP_REC_NVTX_START,
                       .stack_id = n->stack_id};
    if (slot) { /* its END came first: the range is whole now */
        const tp_open_range *e = &w->early.v[slot - 1];
        tp_visit_range r = {.open = o, .end = e->ts, .end_tid = e->tid, .closed = 1};
        return w->v->range(w->ctx, &r);
    }
    return open_range(&w->starts, &o);
}

static tp_status pair_pop(void *wp, const tp_rec_hdr *h) {
    walk *w = wp;
    const tp_rec_nvtx_pop *n = (const void *)h;
    return close_range(w, &w->pushes, TP_PAIR_PUSH_KEY(n->tid, n->domain), n->ts, n->tid);
}

static tp_status pair_end(void *wp, const tp_rec_hdr *h) {
    walk *w = wp;
    const tp_rec_nvtx_end *n = (const void *)h;
    tp_visit_range r = {.end = n->ts, .end_tid = n->tid, .closed = 1};
    if (take_range(&w->starts, n->range_id, &r.open))
        return w->v->range(w->ctx, &r);
    return keep_early_end(w, n->range_id, n->ts, n->tid);
}

static const tp_visit_fn pairing[TP_REC_TYPE_LIMIT] = {
    [TP_REC_NVTX_PUSH] = pair_push,
    [TP_REC_NVTX_POP] = pair_pop,
    [TP_REC_NVTX_START] = pair_start,
    [TP_REC_NVTX_END] = pair_end,
};

/* A type both paired and handled (a visitor with a data handler for an NVTX half): the
 * pairing step, then the handler. */
static tp_status pair_then_data(void *wp, const tp_rec_hdr *h) {
    walk *w = wp;
    tp_status st = pairing[h->type](w, h);
    return st == TP_OK ? w->v->data[h->type](w->ctx, h) : st;
}

/* Ranges never closed, innermost first: pushes, then starts. */
static tp_status flush_open(walk *w, tp_range_stack *s) {
    tp_visit_range r = {.closed = 0};
    while (s->n) {
        r.open = s->v[--s->n];
        w->st.nvtx_unclosed++;
        tp_status st = w->v->range(w->ctx, &r);
        if (st != TP_OK)
            return st;
    }
    return TP_OK;
}

/* ---------------------------------------------------------------- data */

/* The types whose chunks are worth decoding; 0: none. */
static uint64_t wanted(const tp_visitor *v) {
    if (v->each)
        return ~0ull;
    uint64_t m = 0;
    for (int t = 0; t < TP_REC_TYPE_LIMIT; t++)
        m |= v->data[t] || (v->range && pairing[t]) ? TP_REC_BIT(t) : 0;
    return m;
}

/* One record's dispatch; `hooks` is a constant in each of visit_data's two loops (always
 * inline), so the common loop, without keep and each, does not test for them per record. */
static inline __attribute__((always_inline)) tp_status visit_record(walk *w, const tp_rec_hdr *h,
                                                                    int hooks) {
    const struct step *s = &w->step[h->type];
    tp_status st = TP_OK;
    if (h->size < s->min_size) { /* an older writer's shorter record */
        tp_record_get(h, w->ext, s->min_size);
        h = (const tp_rec_hdr *)w->ext;
    }
    if (hooks) {
        const tp_visitor *v = w->v;
        if (v->keep && !v->keep(w->ctx, h))
            return TP_OK;
        if (v->each && (st = v->each(w->ctx, h)) != TP_OK)
            return st;
    }
    if (!hooks) { /* the cursor returns the types wanted() asks for: each has its call */
        assert(s->fn);
        return s->fn(s->arg, h);
    }
    return s->fn ? s->fn(s->arg, h) : TP_OK;
}

/* The records of the cursor's runs (tp_cursor_run_begin) visited as the run is walked, each
 * record the run's test leaves through tp_cursor_next; `hooks` a constant, as visit_record's.
 * Returns the status, the records visited in *records. */
static inline __attribute__((always_inline)) tp_status visit_runs(walk *w, tp_cursor *c,
                                                                  uint64_t *records, int hooks) {
    tp_status st = TP_OK;
    uint64_t k = 0;
    for (;;) {
        tp_cursor_run run;
        tp_cursor_run_begin(c, &run);
        size_t off = run.off;
        while (off < run.len) {
            const tp_rec_hdr *h = (const tp_rec_hdr *)(run.buf + off);
            if (!(h->type < TP_REC_TYPE_LIMIT && (run.fast >> h->type & 1)))
                break;
            off += h->size;
            k++;
            if ((st = visit_record(w, h, hooks)) != TP_OK)
                break;
        }
        tp_cursor_run_end(c, off);
        if (st != TP_OK)
            break;
        const tp_rec_hdr *h = tp_cursor_next(c); /* the rest: other records, the next chunk */
        if (!h)
            break;
        k++;
        if ((st = visit_record(w, h, hooks)) != TP_OK)
            break;
    }
    *records = k;
    return st;
}

static tp_status visit_data(walk *w) {
    tp_query q = {wanted(w->v), 0, 0};
    if (w->v->t_end > w->v->t_begin)
        q.t_begin = w->v->t_begin, q.t_end = w->v->t_end;
    if (!q.type_mask)
        return TP_OK;
    tp_cursor *c;
    tp_status st = tp_cursor_open(w->r, &q, &c);
    if (st != TP_OK)
        return st;
    if (w->v->t_limit)
        tp_cursor_set_late(c, w->v->t_limit);
    if (w->v->read_ahead)
        tp_cursor_read_ahead(c); /* or not: the records are the same */
    /* the cursor returns known types only: h->type < LIMIT */
    uint64_t records = 0;
    st = w->hooks ? visit_runs(w, c, &records, 1) : visit_runs(w, c, &records, 0);
    w->st.records += records;
    w->st.late = tp_cursor_late(c);
    tp_cursor_close(c);
    if (st == TP_OK && w->v->range)
        st = flush_open(w, &w->pushes);
    if (st == TP_OK && w->v->range)
        st = flush_open(w, &w->starts);
    w->st.nvtx_unpaired += w->early_ids.n; /* ENDs whose START never came */
    return st;
}

tp_status tp_visit_run(tp_reader *r, const tp_visitor *v, void *ctx, tp_visit_stats *stats) {
    walk w = {.v = v, .ctx = ctx, .r = r};
    for (uint16_t t = 0; t < TP_REC_TYPE_LIMIT; t++) {
        tp_visit_fn pair = v->range ? pairing[t] : NULL;
        w.step[t].min_size = tp_record_info(t)->min_size;
        w.step[t].fn = pair && v->data[t] ? pair_then_data : pair ? pair : v->data[t];
        w.step[t].arg = pair ? (void *)&w : ctx;
    }
    w.hooks = v->keep || v->each;
    tp_status st = visit_meta(&w);
    if (st == TP_OK)
        st = visit_data(&w);
    tp_range_stack_free(&w.pushes);
    tp_range_stack_free(&w.starts);
    tp_range_stack_free(&w.early);
    tp_region_map_free(&w.early_ids);
    if (stats)
        *stats = w.st;
    return st;
}
