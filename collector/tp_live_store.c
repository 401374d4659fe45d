/* tp_live_store: recent records of a live job and the traces cut from them (see the header). */
#include "tp_live_store.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tp_mem.h"
#include "tp_stepname.h"
#include "tp_writer.h"

#define CHUNK_BYTES ((size_t)256 << 10)
#define STEP_HIST 4096u  /* completed steps remembered */
#define OPEN_SLOTS 1024u /* threads x domains followed for step ranges */
#define OPEN_STEPS 8     /* step ranges open at once on one thread and domain */
#define START_SLOTS 16   /* step ranges opened with nvtxRangeStart, open at once */
#define MAX_DOMAINS 16

typedef struct {
    size_t len;
    uint64_t max_ts;    /* the latest start among its timed records: a window starting after
                           it takes nothing of the chunk but its untimed records */
    uint32_t n_recs;    /* records in it */
    uint32_t n_untimed; /* of them untimed (external correlations, which every window takes) */
    uint8_t buf[CHUNK_BYTES];
} chunk;

/* One thread and domain: its push depth and the step ranges open on it. */
typedef struct {
    uint64_t key; /* TP_PAIR_PUSH_KEY + 1 (0: empty slot) */
    int depth;
    int n;
    int at[OPEN_STEPS]; /* depth of each open step push */
    uint64_t ts[OPEN_STEPS];
} open_key;

/* A u64 -> counter map with open addressing (only while a window is written). */
typedef struct {
    uint64_t *k;
    int64_t *v;
    size_t cap, n;
} u64_map;

struct tp_live_store {
    tp_live_store_opts o;
    uint8_t *meta; /* every metadata record, in order */
    size_t meta_len, meta_cap;
    chunk **ring; /* data chunks, oldest at head */
    size_t ring_cap, head, n;
    uint8_t *step_sid; /* 1: string id names a step range */
    size_t step_sid_cap;
    uint8_t *dom_sid; /* 1: string id is the step domain's name */
    size_t dom_sid_cap;
    uint32_t domains[MAX_DOMAINS]; /* domain ids with that name */
    int n_domains;
    open_key open[OPEN_SLOTS];
    struct {
        uint64_t id, ts;
    } starts[START_SLOTS];
    tp_live_step steps[STEP_HIST];
    tp_live_store_stats st;
};

tp_status tp_live_store_open(const tp_live_store_opts *o, tp_live_store **out) {
    tp_live_store *s = calloc(1, sizeof *s);
    if (!s)
        return TP_ERR_NOMEM;
    s->o = *o;
    size_t budget = o->budget ? o->budget : (size_t)32 << 20;
    s->ring_cap = budget / CHUNK_BYTES < 4 ? 4 : budget / CHUNK_BYTES;
    s->ring = calloc(s->ring_cap, sizeof *s->ring);
    if (!s->ring) {
        free(s);
        return TP_ERR_NOMEM;
    }
    *out = s;
    return TP_OK;
}

void tp_live_store_close(tp_live_store *s) {
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        free(s->ring[(s->head + i) % s->ring_cap]);
    free(s->ring);
    free(s->meta);
    free(s->step_sid);
    free(s->dom_sid);
    free(s);
}

/* ---------------------------------------------------------------- metadata */

static int is_meta(const tp_rec_hdr *r) {
    return r->type == TP_REC_CLOCK_SYNC ||
           (!(r->flags & TP_RF_TIMED) && r->type != TP_REC_EXT_CORRELATION);
}

static void set_bit(uint8_t **v, size_t *cap, uint32_t id) {
    if (id >= *cap) {
        size_t ncap = *cap ? *cap : 256;
        while (ncap <= id)
            ncap *= 2;
        uint8_t *n = realloc(*v, ncap);
        if (!n)
            return;
        memset(n + *cap, 0, ncap - *cap);
        *v = n, *cap = ncap;
    }
    (*v)[id] = 1;
}

static int has_bit(const uint8_t *v, size_t cap, uint32_t id) {
    return id < cap && v[id];
}

static int is_step_name(const tp_live_store *s, const char *t) {
    if (s->o.step && s->o.step[0])
        return !strcmp(t, s->o.step);
    return tp_step_name(t); /* common/tp_stepname: the analyses' own */
}

static void see_meta(tp_live_store *s, const tp_rec_hdr *r) {
    if (r->type == TP_REC_STRING && r->size > sizeof(tp_rec_string)) {
        const tp_rec_string *x = (const tp_rec_string *)r;
        if (memchr(x->text, 0, r->size - sizeof *x) == NULL)
            return;
        if (is_step_name(s, x->text))
            set_bit(&s->step_sid, &s->step_sid_cap, x->id);
        if (s->o.domain && s->o.domain[0] && !strcmp(x->text, s->o.domain))
            set_bit(&s->dom_sid, &s->dom_sid_cap, x->id);
    } else if (r->type == TP_REC_DOMAIN && r->size >= sizeof(tp_rec_domain)) {
        const tp_rec_domain *d = (const tp_rec_domain *)r;
        if (has_bit(s->dom_sid, s->dom_sid_cap, d->name_sid) && s->n_domains < MAX_DOMAINS)
            s->domains[s->n_domains++] = d->id;
    }
}

static void add_meta(tp_live_store *s, const tp_rec_hdr *r) {
    if (!TP_MEM_GROW(s->meta, s->meta_cap, s->meta_len + r->size))
        return;
    memcpy(s->meta + s->meta_len, r, r->size);
    s->meta_len += r->size;
    see_meta(s, r);
}

/* ---------------------------------------------------------------- steps */

static int step_domain(const tp_live_store *s, uint32_t domain) {
    if (!s->o.domain || !s->o.domain[0])
        return 1;
    for (int i = 0; i < s->n_domains; i++)
        if (s->domains[i] == domain)
            return 1;
    return 0;
}

static open_key *open_find(tp_live_store *s, uint32_t tid, uint32_t domain) {
    uint64_t key = (((uint64_t)tid << 32) | domain) + 1;
    size_t i = (size_t)(key * 0x9e3779b97f4a7c15ull >> 54) % OPEN_SLOTS;
    for (size_t k = 0; k < OPEN_SLOTS; k++, i = (i + 1) % OPEN_SLOTS) {
        if (s->open[i].key == key)
            return &s->open[i];
        if (!s->open[i].key) {
            s->open[i].key = key;
            return &s->open[i];
        }
    }
    return NULL; /* more threads than slots: their steps are not followed */
}

static void edge(tp_live_store *s, uint64_t ts) {
    if (s->o.edge)
        s->o.edge(s->o.edge_ctx, ts);
}

static void step_done(tp_live_store *s, uint64_t start, uint64_t end) {
    edge(s, end);
    s->steps[s->st.steps % STEP_HIST] = (tp_live_step){start, end};
    s->st.steps++;
}

static void see_push(tp_live_store *s, const tp_rec_nvtx *r) {
    open_key *k = open_find(s, r->tid, r->domain);
    if (!k)
        return;
    k->depth++;
    if (has_bit(s->step_sid, s->step_sid_cap, r->msg_sid) && step_domain(s, r->domain) &&
        k->n < OPEN_STEPS) {
        k->at[k->n] = k->depth;
        k->ts[k->n++] = r->ts;
        edge(s, r->ts);
    }
}

static void see_pop(tp_live_store *s, const tp_rec_nvtx_pop *r) {
    open_key *k = open_find(s, r->tid, r->domain);
    if (!k || k->depth <= 0)
        return;
    if (k->n && k->at[k->n - 1] == k->depth)
        step_done(s, k->ts[--k->n], r->ts);
    k->depth--;
}

static void see_start(tp_live_store *s, const tp_rec_nvtx_start *r) {
    if (!has_bit(s->step_sid, s->step_sid_cap, r->msg_sid) || !step_domain(s, r->domain))
        return;
    for (int i = 0; i < START_SLOTS; i++)
        if (!s->starts[i].id) {
            s->starts[i].id = r->range_id + 1;
            s->starts[i].ts = r->ts;
            edge(s, r->ts);
            return;
        }
}

static void see_end(tp_live_store *s, const tp_rec_nvtx_end *r) {
    for (int i = 0; i < START_SLOTS; i++)
        if (s->starts[i].id == r->range_id + 1) {
            s->starts[i].id = 0;
            step_done(s, s->starts[i].ts, r->ts);
            return;
        }
}

static void see_data(tp_live_store *s, const tp_rec_hdr *r) {
    uint64_t ts = tp_record_ts(r);
    if (ts > s->st.last_ts)
        s->st.last_ts = ts;
    if (r->type == TP_REC_NVTX_PUSH && r->size >= sizeof(tp_rec_nvtx))
        see_push(s, (const tp_rec_nvtx *)r);
    else if (r->type == TP_REC_NVTX_POP && r->size >= sizeof(tp_rec_nvtx_pop))
        see_pop(s, (const tp_rec_nvtx_pop *)r);
    else if (r->type == TP_REC_NVTX_START && r->size >= sizeof(tp_rec_nvtx_start))
        see_start(s, (const tp_rec_nvtx_start *)r);
    else if (r->type == TP_REC_NVTX_END && r->size >= sizeof(tp_rec_nvtx_end))
        see_end(s, (const tp_rec_nvtx_end *)r);
}

/* ---------------------------------------------------------------- data */

static void evict_oldest(tp_live_store *s) {
    chunk *c = s->ring[s->head];
    if (c->max_ts > s->st.lost_upto)
        s->st.lost_upto = c->max_ts;
    s->st.evicted += c->n_recs;
    s->st.records -= c->n_recs;
    s->st.bytes -= c->len;
    s->ring[s->head] = NULL;
    s->head = (s->head + 1) % s->ring_cap;
    s->n--;
    free(c);
}

/* The chunk new records go into, with room for `size` bytes; NULL when out of memory. */
static chunk *room(tp_live_store *s, size_t size) {
    chunk *last = s->n ? s->ring[(s->head + s->n - 1) % s->ring_cap] : NULL;
    if (last && last->len + size <= CHUNK_BYTES)
        return last;
    if (s->n == s->ring_cap)
        evict_oldest(s);
    chunk *c = malloc(sizeof *c);
    if (!c)
        return NULL;
    c->len = 0, c->max_ts = 0, c->n_recs = c->n_untimed = 0;
    s->ring[(s->head + s->n++) % s->ring_cap] = c;
    return c;
}

void tp_live_store_add(tp_live_store *s, const tp_rec_hdr *r) {
    if (r->size < sizeof *r || r->size > CHUNK_BYTES)
        return;
    if (is_meta(r)) {
        add_meta(s, r);
        return;
    }
    see_data(s, r);
    chunk *c = room(s, r->size);
    if (!c) {
        s->st.evicted++;
        return;
    }
    memcpy(c->buf + c->len, r, r->size);
    c->len += r->size;
    uint64_t ts = tp_record_ts(r);
    c->max_ts = ts > c->max_ts ? ts : c->max_ts;
    c->n_recs++;
    c->n_untimed += !(r->flags & TP_RF_TIMED);
    s->st.records++;
    s->st.bytes += r->size;
}

void tp_live_store_get_stats(const tp_live_store *s, tp_live_store_stats *out) {
    *out = s->st;
}

size_t tp_live_store_last_steps(const tp_live_store *s, size_t n, tp_live_step *out) {
    uint64_t have = s->st.steps < STEP_HIST ? s->st.steps : STEP_HIST;
    if (n > have)
        n = (size_t)have;
    for (size_t i = 0; i < n; i++)
        out[i] = s->steps[(s->st.steps - n + i) % STEP_HIST];
    return n;
}

int tp_live_store_steps_after(const tp_live_store *s, uint64_t after, size_t n, uint64_t *t0,
                              uint64_t *t1) {
    uint64_t have = s->st.steps < STEP_HIST ? s->st.steps : STEP_HIST;
    if (!n)
        return 0;
    for (uint64_t i = s->st.steps - have; i < s->st.steps; i++) {
        const tp_live_step *a = &s->steps[i % STEP_HIST];
        if (a->start < after)
            continue;
        if (i + n > s->st.steps)
            return 0;
        *t0 = a->start;
        *t1 = s->steps[(i + n - 1) % STEP_HIST].end;
        return 1;
    }
    return 0;
}

/* ---------------------------------------------------------------- writing a window */

static int64_t *map_slot(u64_map *m, uint64_t key) {
    if ((m->n + 1) * 2 > m->cap) {
        u64_map g = {0};
        g.cap = m->cap ? m->cap * 2 : 1024;
        g.k = calloc(g.cap, sizeof *g.k);
        g.v = calloc(g.cap, sizeof *g.v);
        if (!g.k || !g.v) {
            free(g.k), free(g.v);
            return NULL;
        }
        for (size_t i = 0; i < m->cap; i++)
            if (m->k[i])
                *map_slot(&g, m->k[i] - 1) = m->v[i];
        free(m->k), free(m->v);
        *m = g;
    }
    size_t i = (size_t)((key + 1) * 0x9e3779b97f4a7c15ull >> 40) & (m->cap - 1);
    while (m->k[i] && m->k[i] != key + 1)
        i = (i + 1) & (m->cap - 1);
    if (!m->k[i]) {
        m->k[i] = key + 1;
        m->v[i] = 0;
        m->n++;
    }
    return &m->v[i];
}

typedef struct {
    uint64_t t0, t1;
    u64_map push;    /* (tid, domain) -> pushes written and not yet popped */
    u64_map start;   /* range id -> 1 while its start was written */
    uintptr_t *skip; /* opening records of ranges still open now (unclosed), sorted */
    size_t n_skip;
} window_sel;

/* 1 when a record at `ts` opens a range in the window: in [t0, t1). A range opened at t1
 * itself begins as the window ends: when a step's pop and the next step's push fall on the
 * same clock tick (seen: ~1 step boundary in 5 on the trainer), t1 is also the next step's
 * start, and a capture of N steps had N + 1. */
static int opens_in(const window_sel *w, uint64_t ts) {
    return ts >= w->t0 && ts <= w->t1 && (ts < w->t1 || ts == w->t0);
}

static int cmp_uptr(const void *a, const void *b) {
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return (x > y) - (x < y);
}

static int skipped(const window_sel *w, const tp_rec_hdr *r) {
    uintptr_t at = (uintptr_t)r;
    return w->n_skip && bsearch(&at, w->skip, w->n_skip, sizeof at, cmp_uptr);
}

/* The ranges that open in the window and that no record the store holds closes (yet): the
 * step still running when a window in seconds is cut, an epoch around every step. They are
 * left out as a range open at t0 is, so a window holds the ranges that open in it and have
 * ended; written, such a range would end at the window's last record and read as a step of
 * 0 ns. One pass over the store's data, pushes matched to pops per (thread, domain) as the
 * writer's select_rec matches them; no memory: nothing is left out. */
static void find_unclosed(const tp_live_store *s, window_sel *w) {
    typedef struct {
        uint64_t key; /* (tid, domain) of a push; a start's range id */
        int start;
        uintptr_t at;
    } open_rec;
    open_rec *open = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < s->n; i++) {
        const chunk *c = s->ring[(s->head + i) % s->ring_cap];
        if (c->max_ts < w->t0) /* its ranges opened before the window, its ends close those */
            continue;
        for (size_t off = 0; off < c->len;) {
            const tp_rec_hdr *r = (const tp_rec_hdr *)(c->buf + off);
            off += r->size;
            int is_push = r->type == TP_REC_NVTX_PUSH, is_start = r->type == TP_REC_NVTX_START;
            if ((is_push || is_start) && opens_in(w, tp_record_ts(r))) {
                if (n == cap) {
                    open_rec *g = realloc(open, (cap ? cap * 2 : 64) * sizeof *g);
                    if (!g) {
                        free(open);
                        return;
                    }
                    open = g, cap = cap ? cap * 2 : 64;
                }
                uint64_t key = is_push ? (uint64_t)((const tp_rec_nvtx *)r)->tid << 32 |
                                             ((const tp_rec_nvtx *)r)->domain
                                       : ((const tp_rec_nvtx_start *)r)->range_id;
                open[n++] = (open_rec){key, is_start, (uintptr_t)r};
            } else if (r->type == TP_REC_NVTX_POP || r->type == TP_REC_NVTX_END) {
                int end = r->type == TP_REC_NVTX_END;
                uint64_t key = end ? ((const tp_rec_nvtx_end *)r)->range_id
                                   : (uint64_t)((const tp_rec_nvtx_pop *)r)->tid << 32 |
                                         ((const tp_rec_nvtx_pop *)r)->domain;
                size_t k = n; /* the innermost open push of its thread and domain */
                while (k > 0 && (open[k - 1].key != key || open[k - 1].start != end))
                    k--;
                if (k > 0) {
                    memmove(&open[k - 1], &open[k], (n - k) * sizeof *open);
                    n--;
                }
            }
        }
    }
    uintptr_t *skip = n ? malloc(n * sizeof *skip) : NULL;
    for (size_t k = 0; skip && k < n; k++)
        skip[k] = open[k].at;
    free(open);
    if (!skip)
        return;
    qsort(skip, n, sizeof *skip, cmp_uptr);
    w->skip = skip, w->n_skip = n;
}

/* 1 when record `r` belongs in the window: it starts in [t0, t1] (a range opens in [t0, t1)
 * and has ended), or it closes a range whose opening record was written. */
static int select_rec(window_sel *w, const tp_rec_hdr *r) {
    uint64_t ts = tp_record_ts(r);
    int in = ts >= w->t0 && ts <= w->t1;
    int opens = opens_in(w, ts);
    int64_t *c = NULL;
    switch (r->type) {
    case TP_REC_NVTX_PUSH: {
        const tp_rec_nvtx *p = (const tp_rec_nvtx *)r;
        opens = opens && !skipped(w, r);
        if (opens && (c = map_slot(&w->push, ((uint64_t)p->tid << 32) | p->domain)))
            ++*c;
        return opens && c;
    }
    case TP_REC_NVTX_POP: {
        const tp_rec_nvtx_pop *p = (const tp_rec_nvtx_pop *)r;
        c = map_slot(&w->push, ((uint64_t)p->tid << 32) | p->domain);
        return c && *c > 0 && (--*c, 1);
    }
    case TP_REC_NVTX_START:
        c = opens && !skipped(w, r) ? map_slot(&w->start, ((const tp_rec_nvtx_start *)r)->range_id)
                                    : NULL;
        return c && (*c = 1);
    case TP_REC_NVTX_END:
        c = map_slot(&w->start, ((const tp_rec_nvtx_end *)r)->range_id);
        return c && *c && !(*c = 0);
    case TP_REC_EXT_CORRELATION:
        return 1; /* untimed: cheap, and only pairs with what is there */
    default:
        return in;
    }
}

static tp_status write_meta(tp_live_store *s, tp_writer *w) {
    for (size_t off = 0; off < s->meta_len;) {
        const tp_rec_hdr *r = (const tp_rec_hdr *)(s->meta + off);
        tp_status st = tp_writer_write_meta(w, r);
        if (st != TP_OK && st != TP_ERR_ARG)
            return st;
        off += r->size;
    }
    return TP_OK;
}

static tp_status write_data(tp_live_store *s, tp_writer *w, window_sel *sel, uint64_t *records) {
    for (size_t i = 0; i < s->n; i++) {
        const chunk *c = s->ring[(s->head + i) % s->ring_cap];
        /* select_rec takes none of its records: each starts before t0, and a pop or end in it
         * closes a range opened before t0 (a thread's records arrive in its order) */
        if (c->max_ts < sel->t0 && !c->n_untimed)
            continue;
        for (size_t off = 0; off < c->len;) {
            const tp_rec_hdr *r = (const tp_rec_hdr *)(c->buf + off);
            off += r->size;
            if (!select_rec(sel, r))
                continue;
            tp_status st = tp_writer_write(w, r);
            if (st != TP_OK)
                return st;
            ++*records;
        }
    }
    return TP_OK;
}

tp_status tp_live_store_write(tp_live_store *s, uint64_t t0, uint64_t t1, int fd,
                              uint64_t *records) {
    *records = 0;
    if (s->st.lost_upto && s->st.lost_upto >= t0) {
        close(fd);
        return TP_ERR_EMPTY;
    }
    tp_writer_opts o;
    tp_writer_opts_default(&o);
    o.background = 0;
    o.block_when_full = 1;
    o.buffer_bytes = (size_t)4 << 20;
    o.producer = s->o.producer;
    tp_writer *w;
    tp_status st = tp_writer_open_fd(fd, NULL, &o, &w);
    if (st != TP_OK)
        return st;
    window_sel sel = {.t0 = t0, .t1 = t1};
    find_unclosed(s, &sel);
    st = write_meta(s, w);
    if (st == TP_OK)
        st = write_data(s, w, &sel, records);
    free(sel.push.k), free(sel.push.v), free(sel.start.k), free(sel.start.v), free(sel.skip);
    tp_status cs = tp_writer_close(w);
    return st != TP_OK ? st : cs;
}
