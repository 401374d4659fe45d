/* tp_load_native: maps every record type of a .tprof trace onto the model, as one visitor
 * (traces/tp_visit.h) whose handlers are the table `loader` below. NVTX ranges come paired
 * from the visitor; region sizes are remembered by address so an unregister can report how
 * much it released. */
#include "tp_load_native.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_chunk.h"
#include "tp_clocksync.h"
#include "tp_demangle.h"
#include "tp_kineto_names.h"
#include "tp_mem.h"
#include "tp_pairing.h"
#include "tp_prefault.h"
#include "tp_progress.h"
#include "tp_reader.h"
#include "tp_record.h"
#include "tp_sort.h"
#include "tp_visit.h"

/* What a trace string id became in the model: its pool id and the flags its text implies
 * (tp_model_name_flags). Millions of records name a few hundred strings, so a direct-mapped
 * cache by sid saves a lookup, a hash and a string search per record. */
typedef struct {
    uint32_t sid, id; /* sid 0: empty slot (sid 0 is never a string) */
    uint8_t flags;
} sid_slot;

#define SID_CACHE 4096 /* a power of two */

/* The place index of the row a handler pushed last and its key: the fields of its record that
 * tell that type's places apart (the process's pid aside: on_process forgets every memo). The
 * next row of the same key has the same place, so it needs no search for it (push_known). */
typedef struct {
    uint64_t key;
    uint16_t place; /* TP_EV_PLACE_WIDE: none remembered */
} place_memo;

/* place_memo of a memory row: its place by (tid, heap), the pid as there, the device -1. */
typedef struct {
    uint64_t heap;
    uint32_t tid;
    uint16_t place; /* TP_EV_PLACE_WIDE: none remembered */
} mem_memo;

typedef struct {
    tp_model *m;
    tp_rank *r;
    tp_reader *rd;
    int64_t pid;
    int64_t t_last;
    tp_region_map regions;
    int gpus, cpu_devices;
    sid_slot *sids;                 /* SID_CACHE slots */
    uint32_t cat_raw[TP_CAT_COUNT]; /* pool id of each category's name; 0: not yet interned */
    uint32_t cats_pushed;           /* bit c: category c has a row (push_row_as) */
    /* the stack ids the rows refer to, marked as rows come (note_stack), so load_stacks needs
     * no pass over the stack columns on one thread after the load: a bit per id */
    uint64_t *stack_seen;
    size_t stack_words;
    uint32_t stack_last;       /* the id marked last */
    int stack_unmarked;        /* an id too large for the bits came: referenced_stacks */
    uint32_t dom_id, dom_name; /* the domain named last (domain_name), valid when dom_set */
    int dom_set;
    tp_event_row row0; /* tp_event_row_init's row, copied for each rarer record */
    /* the rows of the common records: each type sets the same fields every time (the rest
     * stay row0's), so a record writes only those, not a whole row */
    tp_event_row api_row, kernel_row, range_row;
    /* the place of each common record's last row, by the fields that tell its places apart
     * (push_known) */
    place_memo api_place, kernel_place, range_place;
    mem_memo region_place[2]; /* the latest first: a thread's regions alternate two heaps */
    /* memcpy names by copy, source and destination kind (memcpy_name); 0: not yet interned */
    uint32_t copy_names[TP_COPY_PTOP + 1][TP_MEM_MANAGED_STATIC + 1][TP_MEM_MANAGED_STATIC + 1];
    tp_prefault *ahead; /* faulting the reserved columns in (size_tables); NULL: none */
    unsigned ahead_opt; /* the optional columns ahead has: bit k, the k-th of TP_EV_OPTIONAL
                           then TP_MEMEV_OPTIONAL */
} nload;

/* Slot e's string, looked up and interned (a sid not cached there). */
static __attribute__((noinline)) const sid_slot *sid_fill(nload *L, sid_slot *e, uint32_t sid) {
    const char *s = tp_reader_string(L->rd, sid);
    char *d = tp_demangle(s); /* a C++ kernel's name, as torch.profiler shows it */
    e->sid = sid;
    if (d)
        e->id = tp_model_intern(L->m, d, strlen(d));
    else
        e->id = s ? tp_model_intern(L->m, s, tp_kineto_api_name_len(s, strlen(s))) : 0;
    free(d);
    e->flags = tp_model_name_flags(tp_model_str(L->m, e->id));
    return e;
}

/* Inline: a load and a compare for the cached sids of nearly every record. */
static inline const sid_slot *sid_lookup(nload *L, uint32_t sid) {
    sid_slot *e = &L->sids[sid & (SID_CACHE - 1)];
    return e->sid != sid || sid == 0 ? sid_fill(L, e, sid) : e;
}

static uint32_t intern_sid(nload *L, uint32_t sid) {
    return sid_lookup(L, sid)->id;
}

/* The name of NVTX domain `id` (its DOMAIN record, the latest when renamed), interned; 0 for
 * the default domain (id 0) or a domain without a record. Domains are few: a linear search. */
static uint32_t domain_name_lookup(nload *L, uint32_t id) {
    const tp_rec_hdr *const *recs;
    size_t n = id ? tp_reader_meta(L->rd, TP_REC_DOMAIN, &recs) : 0;
    uint32_t name = 0;
    for (size_t i = 0; i < n; i++) {
        tp_rec_domain d = {0};
        tp_record_get(recs[i], &d, sizeof d);
        if (d.id == id)
            name = intern_sid(L, d.name_sid);
    }
    return name;
}

/* domain_name_lookup, remembered for the last id: a trace's ranges name one domain or two
 * (a search of the DOMAIN records per range was ~4 % of the load). The first lookup of an
 * id interns what the search interns, in the same order, so the pool's ids do not move. */
static uint32_t domain_name(nload *L, uint32_t id) {
    if (!L->dom_set || L->dom_id != id) {
        L->dom_name = domain_name_lookup(L, id);
        L->dom_id = id, L->dom_set = 1;
    }
    return L->dom_name;
}

static uint32_t intern_lit(nload *L, const char *s) {
    return tp_model_intern(L->m, s, strlen(s));
}

static void stop_ahead(nload *L) {
    tp_prefault_stop(L->ahead);
    L->ahead = NULL;
}

/* Rows between two looks for optional columns that appeared (ahead_optional): a column the
 * loading thread faults in itself for at most this many rows after its first value. */
#define AHEAD_LOOK_ROWS 4096

/* Hands the optional columns created since the last look (at their first value, sized for the
 * reserved rows: tp_model.c) to the thread that faults the columns in: on a 10 M-record trace
 * the events' domains and the memory events' heaps and sizes took ~20 k page faults on the
 * loading thread (the memory events have no optional column now: TP_MEMEV_OPTIONAL). */
static void ahead_optional(nload *L) {
    const tp_events *ev = &L->r->ev;
    unsigned k = 0;
#define OPT_COL(t, c)                                                                              \
    if (t->c && !(L->ahead_opt >> k & 1)) {                                                        \
        L->ahead_opt |= 1u << k;                                                                   \
        tp_prefault_add(L->ahead, &(tp_prefault_col){t->c, sizeof *t->c, t->cap}, t->n);           \
    }                                                                                              \
    k++;
#define EV_OPT(c, none) OPT_COL(ev, c)
    TP_EV_OPTIONAL(EV_OPT)
#undef EV_OPT
#undef OPT_COL
}

/* Ids past this many bits (for `rows` rows so far) are not marked: a crafted file's ids far
 * past the row count take referenced_stacks' sort (its bound, for the rows at that time). */
static size_t stack_bits_max(size_t rows) {
    return 64 * rows + ((size_t)1 << 20);
}

/* note_stack's rare part, out of line: an id past the bits so far (the set grows, or, past
 * its bound, the id is left unmarked). Inline, its calls made every handler save and restore
 * three more registers per record. */
static __attribute__((noinline)) void note_stack_grow(nload *L, uint32_t id) {
    size_t w = id / 64;
    if (id > stack_bits_max(L->r->ev.n + L->r->mem.n + L->r->samples.n)) {
        L->stack_unmarked = 1;
        return;
    }
    size_t old = L->stack_words;
    TP_MEM_XGROW(L->stack_seen, L->stack_words, w + 1);
    memset(L->stack_seen + old, 0, (L->stack_words - old) * sizeof *L->stack_seen);
    L->stack_seen[w] |= UINT64_C(1) << (id & 63);
}

/* Marks stack id `id` of the row pushed next (rows of one call site come in runs). */
static inline void note_stack(nload *L, uint32_t id) {
    if (id == L->stack_last)
        return;
    L->stack_last = id;
    size_t w = id / 64;
    if (w < L->stack_words)
        L->stack_seen[w] |= UINT64_C(1) << (id & 63);
    else
        note_stack_grow(L, id);
}

static void push_memev(nload *L, const tp_memev_row *row) {
    note_stack(L, row->stack);
    if (L->r->mem.n == L->r->mem.cap) /* see push_row */
        stop_ahead(L);
    tp_memev_push(&L->r->mem, row);
    if (L->r->mem.n % AHEAD_LOOK_ROWS == 1 && L->ahead)
        ahead_optional(L);
}

/* rows_pushed's part every few rows: the optional columns to fault in ahead, the progress. */
static __attribute__((noinline)) tp_status rows_pushed_rare(nload *L, size_t n) {
    if (n % AHEAD_LOOK_ROWS == 1 && L->ahead)
        ahead_optional(L);
    if (n % 16384 == 0) /* tp_progress_events shows multiples of 16 Ki only */
        tp_progress_events(L->m->progress, n);
    return TP_OK;
}

/* After each row; TP_OK. Inline: a test, and a tail call every few rows. */
static inline tp_status rows_pushed(nload *L) {
    size_t n = L->r->ev.n;
    _Static_assert(16384 % AHEAD_LOOK_ROWS == 0, "one test for both");
    return n % AHEAD_LOOK_ROWS > 1 ? TP_OK : rows_pushed_rare(L, n);
}

/* Appends `row`; `plain`: one of the rows kept per type (api_row, kernel_row, range_row: no
 * copy facts, no Kineto args), which take tp_events_push_plain once their category has a row
 * (the table then knows its text: every native row of a category has the same). Inline in
 * each handler: `plain` is then a constant, and the call's saving and restoring of registers
 * (~20 instructions a row) goes. */
__attribute__((always_inline)) static inline tp_status
push_row_as(nload *L, tp_event_row *row, int plain, tp_cat c, int64_t end) {
    assert(c == (row->cat < TP_CAT_COUNT ? (tp_cat)row->cat : TP_CAT_OTHER));
    assert(end == row->ts + row->dur);
    if (end > L->t_last)
        L->t_last = end;
    if (!L->cat_raw[c])
        L->cat_raw[c] = intern_lit(L, tp_cat_name(c));
    row->cat_raw = L->cat_raw[c];
    if (L->r->ev.n == L->r->ev.cap) /* more rows than the index said: the columns move */
        stop_ahead(L);
    _Static_assert(TP_CAT_COUNT <= 32, "cats_pushed has a bit for each category");
    note_stack(L, row->stack);
    if (plain && (L->cats_pushed >> c & 1)) {
        assert(tp_events_plain(&L->r->ev, row));
        tp_events_push_plain(&L->r->ev, row);
    } else {
        tp_events_push(&L->r->ev, row);
        L->cats_pushed |= 1u << c;
    }
    return rows_pushed(L);
}

/* Appends a plain row of category `c` straight into the columns when `pm` holds the place of
 * `key` (a memo is only set after its row was pushed, so `c` has a row: its text is then the
 * table's, the row plain; API keys hold the category, their type's only one of two), with
 * push_row_as's
 * bookkeeping but for rows_pushed (the caller's tail); 0 when it wrote nothing (the handler
 * then builds its row and pushes it, and remember_place notes where it went). Inline in each
 * handler's fast path, which calls nothing (its slow path is a function of its own, so the
 * fast one saves no registers): the common rows of a native trace (its API calls, kernels and
 * NVTX ranges, ~97 % of them on a launch-bound trainer's) take no tp_event_row and no search
 * of their place (was ~180 instructions an API call with tp_events_push_plain). */
__attribute__((always_inline)) static inline int push_known(nload *L, const place_memo *pm,
                                                            uint64_t key, int64_t ts, int64_t end,
                                                            uint32_t name, tp_cat c, uint8_t flags,
                                                            uint32_t stack, uint32_t corr32) {
    assert(pm->key != key || pm->place == TP_EV_PLACE_WIDE || (L->cats_pushed >> c & 1));
    if (pm->key != key || pm->place == TP_EV_PLACE_WIDE)
        return 0;
    size_t w = stack / 64; /* note_stack without its call: an id past the bits goes slow */
    if (stack != L->stack_last && w >= L->stack_words)
        return 0;
    if (!tp_events_append_plain(&L->r->ev, ts, (uint64_t)(end - ts), name, (uint8_t)c, flags, stack,
                                corr32, pm->place))
        return 0;
    if (stack != L->stack_last) {
        L->stack_last = stack;
        L->stack_seen[w] |= UINT64_C(1) << (stack & 63);
    }
    if (end > L->t_last)
        L->t_last = end;
    return 1;
}

/* The sid's cached slot, or NULL (sid_lookup then fills it): no call on the fast path. */
static inline const sid_slot *sid_cached(const nload *L, uint32_t sid) {
    const sid_slot *e = &L->sids[sid & (SID_CACHE - 1)];
    return e->sid == sid && sid != 0 ? e : NULL;
}

/* The place of the row just pushed, as `pm`'s for `key`. */
static void remember_place(nload *L, place_memo *pm, uint64_t key) {
    size_t k = tp_ev_place_index(&L->r->ev, L->r->ev.n - 1);
    pm->key = key;
    pm->place = k < TP_EV_PLACE_WIDE ? (uint16_t)k : TP_EV_PLACE_WIDE;
}

static void forget_places(nload *L) {
    L->api_place.place = L->kernel_place.place = L->range_place.place = TP_EV_PLACE_WIDE;
    for (size_t k = 0; k < sizeof L->region_place / sizeof *L->region_place; k++)
        L->region_place[k].place = TP_EV_PLACE_WIDE;
}

/* The region_place entry that holds (tid, heap), else its second (then replaced). */
static inline mem_memo *mem_memo_find(nload *L, uint32_t tid, uint64_t heap) {
    mem_memo *mm = &L->region_place[0];
    return mm->heap == heap && mm->tid == tid ? mm : mm + 1;
}

static tp_status push_row(nload *L, tp_event_row *row) {
    return push_row_as(L, row, 0, row->cat < TP_CAT_COUNT ? (tp_cat)row->cat : TP_CAT_OTHER,
                       row->ts + row->dur);
}

/* ---------------------------------------------------------------- records */

/* An API row's memo key: its thread and its category (runtime or driver). */
static inline uint64_t api_key(uint32_t tid, tp_cat cat) {
    return (uint64_t)cat << 32 | tid;
}

/* on_api for the rows push_known does not take. */
static __attribute__((noinline)) tp_status api_slow(nload *L, const tp_rec_api *a) {
    const sid_slot *s = sid_lookup(L, a->name_sid); /* first: nothing lives across its call */
    unsigned kind = a->h.flags & TP_RF_TYPE_MASK;
    tp_cat cat = kind == TP_API_DRIVER ? TP_CAT_CUDA_DRIVER : TP_CAT_CUDA_RUNTIME;
    tp_event_row *row = &L->api_row;
    row->name = s->id;
    row->flags = s->flags | (kind == TP_API_DEVICE ? TP_EVF_LAUNCH : 0);
    row->ts = (int64_t)a->ts;
    row->dur = a->end > a->ts ? (int64_t)(a->end - a->ts) : 0;
    row->cat = cat;
    row->pid = L->pid;
    row->tid = a->tid;
    row->correlation = a->correlation ? (int64_t)a->correlation : -1;
    row->stack = a->stack_id;
    tp_status st = push_row_as(L, row, 1, cat, row->ts + row->dur);
    remember_place(L, &L->api_place, api_key(a->tid, cat)); /* the place: (pid, tid) */
    return st;
}

static tp_status on_api(void *ctx, const tp_rec_hdr *h) {
    nload *L = ctx;
    const tp_rec_api *a = (const void *)h;
    const sid_slot *s = sid_cached(L, a->name_sid);
    unsigned kind = h->flags & TP_RF_TYPE_MASK;
    tp_cat cat = kind == TP_API_DRIVER ? TP_CAT_CUDA_DRIVER : TP_CAT_CUDA_RUNTIME;
    int64_t ts = (int64_t)a->ts, end = a->end > a->ts ? (int64_t)a->end : ts;
    uint32_t corr = a->correlation; /* its high half 0 */
    if (s && corr < TP_EV_U32_WIDE &&
        push_known(L, &L->api_place, api_key(a->tid, cat), ts, end, s->id, cat,
                   s->flags | (kind == TP_API_DEVICE ? TP_EVF_LAUNCH : 0), a->stack_id,
                   corr ? corr : TP_EV_U32_NONE))
        return rows_pushed(L);
    return api_slow(L, a);
}

/* Sets the fields every GPU-side row has (the others as row0's: the row is a copy of it or
 * kernel_row). */
static void gpu_fields(tp_event_row *row, uint64_t ts, uint64_t end, uint32_t device,
                       uint32_t stream, uint32_t corr) {
    row->ts = (int64_t)ts;
    row->dur = end > ts ? (int64_t)(end - ts) : 0;
    row->device = (int32_t)device;
    row->stream = stream;
    row->pid = device;
    row->tid = stream;
    row->correlation = corr ? (int64_t)corr : -1;
}

static void gpu_row(const nload *L, tp_event_row *row, uint64_t ts, uint64_t end, uint32_t device,
                    uint32_t stream, uint32_t corr) {
    *row = L->row0;
    gpu_fields(row, ts, end, device, stream, corr);
}

/* on_kernel for the rows push_known does not take. */
static __attribute__((noinline)) tp_status kernel_slow(nload *L, const tp_rec_kernel *k) {
    const sid_slot *s = sid_lookup(L, k->name_sid);
    tp_event_row *row = &L->kernel_row;
    gpu_fields(row, k->ts, k->end, k->device, k->stream, k->correlation);
    row->cat = TP_CAT_KERNEL;
    row->name = s->id;
    row->flags = s->flags & (uint8_t)~TP_EVF_LAUNCH;
    tp_status st = push_row_as(L, row, 1, TP_CAT_KERNEL, row->ts + row->dur);
    /* every field of the place from the device and the stream */
    remember_place(L, &L->kernel_place, (uint64_t)k->device << 32 | k->stream);
    return st;
}

static tp_status on_kernel(void *ctx, const tp_rec_hdr *h) {
    nload *L = ctx;
    const tp_rec_kernel *k = (const void *)h;
    const sid_slot *s = sid_cached(L, k->name_sid);
    int64_t ts = (int64_t)k->ts, end = k->end > k->ts ? (int64_t)k->end : ts;
    uint32_t corr = k->correlation;
    if (s && corr < TP_EV_U32_WIDE &&
        push_known(L, &L->kernel_place, (uint64_t)k->device << 32 | k->stream, ts, end, s->id,
                   TP_CAT_KERNEL, s->flags & (uint8_t)~TP_EVF_LAUNCH, 0,
                   corr ? corr : TP_EV_U32_NONE))
        return rows_pushed(L);
    return kernel_slow(L, k);
}

/* The interned name of a copy of these kinds: remembered for the kinds that fit the table
 * (every kind the collector writes), since formatting and interning it took ~1.3 k
 * instructions per copy. The first copy of each kind interns it, as before. */
static uint32_t memcpy_name(nload *L, uint8_t copy_kind, uint8_t src_kind, uint8_t dst_kind) {
    uint32_t *slot = copy_kind <= TP_COPY_PTOP && src_kind <= TP_MEM_MANAGED_STATIC &&
                             dst_kind <= TP_MEM_MANAGED_STATIC
                         ? &L->copy_names[copy_kind][src_kind][dst_kind]
                         : NULL;
    if (slot && *slot)
        return *slot;
    char name[TP_KINETO_NAME_MAX];
    uint32_t id =
        intern_lit(L, tp_kineto_memcpy_name(name, sizeof name, copy_kind, src_kind, dst_kind));
    if (slot)
        *slot = id;
    return id;
}

static tp_status on_memcpy(void *ctx, const tp_rec_hdr *h) {
    nload *L = ctx;
    const tp_rec_memcpy *c = (const void *)h;
    tp_event_row row;
    gpu_row(L, &row, c->ts, c->end, c->device, c->stream, c->correlation);
    row.cat = TP_CAT_MEMCPY;
    row.name = memcpy_name(L, c->copy_kind, c->src_kind, c->dst_kind);
    row.bytes = (int64_t)c->bytes;
    row.copy_kind = c->copy_kind;
    row.src_kind = c->src_kind;
    row.dst_kind = c->dst_kind;
    row.flags = (h->flags & TP_MEMCPY_ASYNC) ? TP_EVF_ASYNC : 0;
    return push_row(L, &row);
}

static tp_status on_memset(void *ctx, const tp_rec_hdr *h) {
    nload *L = ctx;
    const tp_rec_memset *s = (const void *)h;
    tp_event_row row;
    gpu_row(L, &row, s->ts, s->end, s->device, s->stream, s->correlation);
    char name[TP_KINETO_NAME_MAX];
    row.cat = TP_CAT_MEMSET;
    row.name = intern_lit(L, tp_kineto_memset_name(name, sizeof name, s->mem_kind));
    row.bytes = (int64_t)s->bytes;
    row.src_kind = row.dst_kind = s->mem_kind;
    return push_row(L, &row);
}

static tp_status on_sync(void *ctx, const tp_rec_hdr *h) {
    nload *L = ctx;
    const tp_rec_sync *s = (const void *)h;
    tp_event_row row;
    gpu_row(L, &row, s->ts, s->end, s->device, s->stream, s->correlation);
    if (s->stream == 0xffffffffu) { /* not stream-specific: a CPU-side wait */
        row.stream = -1;
        row.pid = L->pid;
        row.tid = s->tid;
    }
    row.cat = TP_CAT_CUDA_SYNC;
    row.name = intern_lit(L, tp_sync_type_name(s->type));
    return push_row(L, &row);
}

/* on_range for the rows push_known does not take; `ts` and `dur` as on_range says. */
static __attribute__((noinline)) tp_status range_slow(nload *L, const tp_visit_range *r, int64_t ts,
                                                      int64_t dur) {
    const sid_slot *s = sid_lookup(L, r->open.msg_sid);
    tp_event_row *row = &L->range_row;
    row->ts = ts;
    row->dur = dur;
    row->cat = TP_CAT_USER_ANNOTATION;
    row->name = s->id;
    row->flags = s->flags & (uint8_t)~TP_EVF_LAUNCH;
    row->pid = L->pid;
    row->tid = r->open.tid;
    row->stack = r->open.stack_id; /* the push's stack (--stacks all): the TUI shows it */
    row->domain = domain_name(L, r->open.domain);
    tp_status st = push_row_as(L, row, 1, TP_CAT_USER_ANNOTATION, ts + dur);
    /* the place: (pid, tid, the domain's name); an id names one domain in a load, and a memo's
     * first row of an id looked its name up here, so no string is interned out of its order */
    remember_place(L, &L->range_place, (uint64_t)r->open.tid << 32 | r->open.domain);
    return st;
}

/* An NVTX range, paired by the visitor; ranges still open end at the trace's last time. */
static tp_status on_range(void *ctx, const tp_visit_range *r) {
    nload *L = ctx;
    int64_t end = r->closed ? (int64_t)r->end : L->t_last, ts = (int64_t)r->open.ts;
    int64_t dur = end > ts ? end - ts : 0;
    const sid_slot *s = sid_cached(L, r->open.msg_sid);
    if (s && push_known(L, &L->range_place, (uint64_t)r->open.tid << 32 | r->open.domain, ts,
                        ts + dur, s->id, TP_CAT_USER_ANNOTATION, s->flags & (uint8_t)~TP_EVF_LAUNCH,
                        r->open.stack_id, TP_EV_U32_NONE))
        return rows_pushed(L);
    return range_slow(L, r, ts, dur);
}

/* One memory row; `x` carries what the record did (op, heap, raw size, thread). */
static tp_status mem_event(nload *L, int64_t ts, uint8_t kind, int32_t dev, uint64_t addr,
                           int64_t bytes, uint32_t stack, tp_memev_row x) {
    tp_memev_row row = {ts,    bytes, -1,   -1,     addr,   dev,    kind,
                        stack, 0,     x.op, x.heap, x.size, L->pid, x.tid};
    push_memev(L, &row);
    return TP_OK;
}

static tp_status on_device_mem(void *ctx, const tp_rec_hdr *h) {
    const tp_rec_device_mem *d = (const void *)h;
    int free_op = d->op == TP_MEMOP_FREE;
    tp_memev_row x = {.tid = d->tid};
    return mem_event(ctx, (int64_t)d->ts, free_op ? TP_MEMEV_FREE : TP_MEMEV_ALLOC,
                     (int32_t)d->device, d->address, (int64_t)(free_op ? 0 - d->bytes : d->bytes),
                     d->stack_id, x);
}

static tp_status on_heap(void *ctx, const tp_rec_hdr *h) {
    const tp_rec_heap *p = (const void *)h;
    /* sizes come from the file: negate in unsigned arithmetic, never overflow a signed */
    int64_t sz = (int64_t)(p->op == TP_HEAP_REGISTER ? p->size : 0 - p->size);
    static const uint8_t ops[] = {[TP_HEAP_REGISTER] = TP_MEMEV_OP_HEAP_REGISTER,
                                  [TP_HEAP_UNREGISTER] = TP_MEMEV_OP_HEAP_UNREGISTER,
                                  [TP_HEAP_RESET] = TP_MEMEV_OP_HEAP_RESET};
    tp_memev_row x = {.op = p->op < sizeof ops ? ops[p->op] : TP_MEMEV_OP_NONE,
                      .heap = p->heap,
                      .size = p->op == TP_HEAP_REGISTER ? p->size : 0,
                      .tid = p->tid};
    return mem_event(ctx, (int64_t)p->ts, TP_MEMEV_HEAP, -1, p->address, sz, p->stack_id, x);
}

/* on_region's row when its place is not in `mm` (or it needs more than the columns): pushed
 * as any memory row, its place remembered. */
static __attribute__((noinline)) void region_slow(nload *L, const tp_rec_region *g, int64_t delta,
                                                  uint8_t op, mem_memo *mm) {
    tp_memev_row x = {.op = op,
                      .heap = g->heap,
                      .size = g->op == TP_REGION_UNREGISTER ? 0 : g->size,
                      .tid = g->tid};
    mem_event(L, (int64_t)g->ts, delta < 0 ? TP_MEMEV_FREE : TP_MEMEV_ALLOC, -1, g->address, delta,
              g->stack_id, x);
    const tp_memevents *mem = &L->r->mem;
    uint16_t k = mem->place[mem->n - 1];
    if (mm != &L->region_place[0]) /* a new key: the latest first */
        L->region_place[1] = L->region_place[0], mm = &L->region_place[0];
    *mm = (mem_memo){g->heap, g->tid, k}; /* TP_EV_PLACE_WIDE (none) when wide */
}

static tp_status on_region(void *ctx, const tp_rec_hdr *h) {
    nload *L = ctx;
    const tp_rec_region *g = (const void *)h;
    int64_t delta;
    if (!tp_region_map_apply(&L->regions, g->address, g->size, g->op == TP_REGION_UNREGISTER,
                             &delta))
        return TP_ERR_NOMEM;
    static const uint8_t ops[] = {[TP_REGION_REGISTER] = TP_MEMEV_OP_REGION_REGISTER,
                                  [TP_REGION_RESIZE] = TP_MEMEV_OP_REGION_RESIZE,
                                  [TP_REGION_UNREGISTER] = TP_MEMEV_OP_REGION_UNREGISTER};
    uint8_t op = g->op < sizeof ops ? ops[g->op] : TP_MEMEV_OP_NONE;
    uint64_t size = g->op == TP_REGION_UNREGISTER ? 0 : g->size;
    mem_memo *mm = mem_memo_find(L, g->tid, g->heap);
    tp_memevents *mem = &L->r->mem;
    /* push_memev's work for a row of a known place, no totals and a size its op implies */
    if (mm->place != TP_EV_PLACE_WIDE && mm->heap == g->heap && mm->tid == g->tid &&
        size == tp_memev_size_derived(op, delta) &&
        tp_memev_append(mem, (int64_t)g->ts, delta < 0 ? TP_MEMEV_FREE : TP_MEMEV_ALLOC, g->address,
                        delta, g->stack_id, op, mm->place)) {
        /* after the row, not before as push_memev: the bound an unmarked id is judged by
         * moves by one row, and either way load_stacks finds the same ids (referenced_stacks
         * and marked_stacks agree); before, the fast path took ~5 instructions more a row */
        note_stack(L, g->stack_id);
        if (mem->n % AHEAD_LOOK_ROWS == 1 && L->ahead)
            ahead_optional(L);
        return TP_OK;
    }
    region_slow(L, g, delta, op, mm);
    return TP_OK;
}

static tp_status on_alloc_fail(void *ctx, const tp_rec_hdr *h) {
    nload *L = ctx;
    const tp_rec_alloc_fail *f = (const void *)h;
    tp_memev_row row = {(int64_t)f->ts,
                        (int64_t)f->requested,
                        (int64_t)(f->reserved_bytes - f->free_bytes),
                        (int64_t)f->reserved_bytes,
                        0,
                        (int32_t)f->device,
                        TP_MEMEV_ALLOC_FAIL,
                        f->stack_id,
                        (int64_t)f->largest_free_block,
                        TP_MEMEV_OP_NONE,
                        0,
                        0,
                        L->pid,
                        f->tid};
    push_memev(L, &row);
    return TP_OK;
}

static tp_status on_dropped(void *ctx, const tp_rec_hdr *h) {
    nload *L = ctx;
    const tp_rec_dropped *d = (const void *)h;
    L->r->n_dropped_records += d->count;
    L->r->n_lost_kind[d->what < TP_MODEL_REC_KINDS ? d->what : 0] += d->count;
    return TP_OK;
}

static tp_status on_overhead(void *ctx, const tp_rec_hdr *h) {
    nload *L = ctx;
    const tp_rec_overhead *o = (const void *)h;
    tp_event_row row = L->row0;
    row.ts = (int64_t)o->ts;
    row.dur = o->end > o->ts ? (int64_t)(o->end - o->ts) : 0;
    row.cat = TP_CAT_OVERHEAD;
    row.name = o->name_sid ? intern_sid(L, o->name_sid) : intern_lit(L, "trainprof overhead");
    row.pid = L->pid;
    row.tid = o->tid;
    return push_row(L, &row);
}

/* An NVTX mark: an instant row (TP_EVF_MARK) on its thread, with its domain, so the report's
 * marks table and the TUI's timeline see it; it is no range (category OTHER). */
static tp_status on_mark(void *ctx, const tp_rec_hdr *h) {
    nload *L = ctx;
    const tp_rec_nvtx *n = (const void *)h;
    tp_event_row row = L->row0;
    row.ts = (int64_t)n->ts;
    row.dur = 0;
    row.name = intern_sid(L, n->msg_sid);
    row.flags = TP_EVF_MARK;
    row.pid = L->pid;
    row.tid = n->tid;
    row.domain = domain_name(L, n->domain);
    return push_row(L, &row);
}

/* A sample of a thread's Python stack (`record --sample`): kept in the rank's samples. */
static tp_status on_sample(void *ctx, const tp_rec_hdr *h) {
    nload *L = ctx;
    tp_rec_sample r;
    tp_record_get(h, &r, sizeof r);
    if (r.stack_id)
        note_stack(L, r.stack_id);
    tp_samples_push(&L->r->samples, (int64_t)r.ts, L->pid, r.tid, r.stack_id,
                    ((h->flags & TP_SAMPLE_ON_CPU) ? TP_SAMPLE_F_ON_CPU : 0u) |
                        ((h->flags & TP_SAMPLE_HOLDS_GIL) ? TP_SAMPLE_F_HOLDS_GIL : 0u) |
                        ((h->flags & TP_SAMPLE_NATIVE) ? TP_SAMPLE_F_NATIVE : 0u),
                    r.cpu_ns, r.period_ns);
    return TP_OK;
}

/* Counters and clock syncs among the data: counted as instants, not kept. */
static tp_status on_instant(void *ctx, const tp_rec_hdr *h) {
    (void)h;
    ((nload *)ctx)->r->n_instant++;
    return TP_OK;
}

/* A counter is an instant; the collector's "trainprof.cuda_off: <why>" and
 * "trainprof.cupti_refused: <what>" are also kept. */
static tp_status on_counter(void *ctx, const tp_rec_hdr *h) {
    nload *L = ctx;
    tp_rec_counter c;
    tp_record_get(h, &c, sizeof c);
    const char *name = tp_reader_string(L->rd, c.name_sid);
    static const char prefix[] = "trainprof.cuda_off: ", refused[] = "trainprof.cupti_refused: ";
    if (name && !strncmp(name, prefix, sizeof prefix - 1) && !L->r->cuda_off)
        L->r->cuda_off = intern_lit(L, name + sizeof prefix - 1);
    if (name && !strncmp(name, refused, sizeof refused - 1) && !L->r->cupti_refused)
        L->r->cupti_refused = intern_lit(L, name + sizeof refused - 1);
    return on_instant(ctx, h);
}

/* ---------------------------------------------------------------- stacks */

/* Marks Python code id `id` in the set *seen of *cap bytes (grown and zero-filled as
 * needed); *max is the largest id marked. */
static void note_code(uint8_t **seen, size_t *cap, uint32_t *max, uint32_t id) {
    if (!id) /* ids start at 1 */
        return;
    size_t old = *cap;
    TP_MEM_XGROW(*seen, *cap, (size_t)id + 1);
    memset(*seen + old, 0, *cap - old);
    (*seen)[id] = 1;
    *max = id > *max ? id : *max;
}

/* Marks the stack ids of `col` (n rows; 0: none) in the bit set `seen`. */
static void mark_stacks(uint64_t *seen, const uint32_t *col, size_t n) {
    uint32_t last = 0; /* rows of one call site come in runs */
    for (size_t i = 0; i < n; i++)
        if (col[i] != last) {
            last = col[i];
            seen[last >> 6] |= UINT64_C(1) << (last & 63);
        }
}

/* The largest stack id of `col` (n rows), or `max`. */
static uint32_t max_stack(const uint32_t *col, size_t n, uint32_t max) {
    for (size_t i = 0; i < n; i++)
        max = col[i] > max ? col[i] : max;
    return max;
}

/* The distinct stack ids the rank's rows refer to, ascending (*n of them; free it). Ids are
 * the collector's, counted from 1, so a bit per id up to the largest replaces a sort of
 * every row's id (tens of MB of keys on a 10 M-record trace, for a few dozen stacks); ids
 * far past the row count (a crafted file) take the sort. */
static uint32_t *referenced_stacks(const tp_events *ev, const tp_memevents *mem,
                                   const tp_samples *sa, size_t *n) {
    uint32_t max =
        max_stack(sa->stack, sa->n, max_stack(mem->stack, mem->n, max_stack(ev->stack, ev->n, 0)));
    size_t rows = ev->n + mem->n + sa->n, k = 0;
    if (max <= 64 * rows + (1u << 20)) {
        uint64_t *seen = tp_mem_xcalloc((size_t)max / 64 + 1, sizeof *seen);
        mark_stacks(seen, ev->stack, ev->n);
        mark_stacks(seen, mem->stack, mem->n);
        mark_stacks(seen, sa->stack, sa->n);
        seen[0] &= ~UINT64_C(1); /* id 0: no stack */
        size_t distinct = 0;
        for (size_t w = 0; w <= max / 64; w++)
            distinct += (size_t)__builtin_popcountll(seen[w]);
        uint32_t *ids = tp_mem_xalloc(distinct + 1, sizeof *ids);
        for (size_t w = 0; w <= max / 64; w++)
            for (uint64_t b = seen[w]; b; b &= b - 1)
                ids[k++] = (uint32_t)(w * 64 + (size_t)__builtin_ctzll(b));
        free(seen);
        *n = k;
        return ids;
    }
    uint64_t *keys = tp_mem_xalloc(rows + 1, sizeof *keys);
    for (size_t i = 0; i < ev->n; i++)
        if (ev->stack[i])
            keys[k++] = ev->stack[i];
    for (size_t i = 0; i < mem->n; i++)
        if (mem->stack[i])
            keys[k++] = mem->stack[i];
    for (size_t i = 0; i < sa->n; i++)
        if (sa->stack[i])
            keys[k++] = sa->stack[i];
    tp_sort_pairs(keys, NULL, k);
    uint32_t *ids = tp_mem_xalloc(k + 1, sizeof *ids);
    size_t d = 0;
    for (size_t i = 0; i < k; i++)
        if (!d || ids[d - 1] != (uint32_t)keys[i])
            ids[d++] = (uint32_t)keys[i];
    free(keys);
    *n = d;
    return ids;
}

/* The ids note_stack marked, ascending (*n of them; free it): referenced_stacks' answer
 * whenever every id was marked (the sets are the same, and its sort would take the same ids
 * only for a largest id past its bound, which note_stack leaves unmarked). */
static uint32_t *marked_stacks(nload *L, size_t *n) {
    size_t distinct = 0, k = 0;
    if (L->stack_words)
        L->stack_seen[0] &= ~UINT64_C(1); /* id 0: no stack */
    for (size_t w = 0; w < L->stack_words; w++)
        distinct += (size_t)__builtin_popcountll(L->stack_seen[w]);
    uint32_t *ids = tp_mem_xalloc(distinct + 1, sizeof *ids);
    for (size_t w = 0; w < L->stack_words; w++)
        for (uint64_t b = L->stack_seen[w]; b; b &= b - 1)
            ids[k++] = (uint32_t)(w * 64 + (size_t)__builtin_ctzll(b));
    *n = k;
    return ids;
}

/* Copies the stacks the rank's rows refer to, the modules their frames point into and the
 * Python code objects, from the trace into the model, so the analyses never reopen the file
 * to read a stack. Reads only the rank's rows and the reader's metadata; call it once the
 * records are loaded. */
static void load_stacks(nload *L) {
    uint8_t *mod_seen = tp_mem_xcalloc(TP_FRAME_NO_MODULE + 1, 1);
    uint8_t *code_seen = NULL; /* Python code ids met, by id (TP_PYCODE_MAX_ID at most) */
    size_t code_cap = 0;
    uint32_t max_code = 0;
    uint32_t *mods = NULL;
    uint64_t *addrs = NULL;
    size_t n = 0, cap = 0;
    uint32_t *ids = L->stack_unmarked ? referenced_stacks(&L->r->ev, &L->r->mem, &L->r->samples, &n)
                                      : marked_stacks(L, &n);
    for (size_t k = 0; k < n; k++) {
        uint32_t nf = 0;
        const uint64_t *f = tp_reader_stack(L->rd, ids[k], &nf);
        if (!f)
            continue;
        if (nf > cap) { /* two arrays, one capacity */
            cap = nf;
            mods = tp_mem_xrealloc(mods, cap, sizeof *mods);
            addrs = tp_mem_xrealloc(addrs, cap, sizeof *addrs);
        }
        for (uint32_t i = 0; i < nf; i++) {
            uint32_t mo = TP_FRAME_MODULE(f[i]);
            addrs[i] = TP_FRAME_OFFSET(f[i]);
            if (TP_FRAME_IS_PYTHON(f[i])) {
                mods[i] = TP_STACK_PYTHON;
                note_code(&code_seen, &code_cap, &max_code, TP_FRAME_PY_CODE(f[i]));
                continue;
            }
            mods[i] = mo == TP_FRAME_NO_MODULE ? TP_STACK_NO_MODULE : mo;
            mod_seen[mo] = 1;
        }
        tp_rank_add_stack(L->r, ids[k], mods, addrs, nf);
    }
    for (uint32_t id = 0; id < TP_FRAME_NO_MODULE; id++) {
        const tp_rec_module *mo = mod_seen[id] ? tp_reader_module(L->rd, id) : NULL;
        if (mo)
            tp_rank_add_stack_module(L->m, L->r, id, tp_reader_string(L->rd, mo->path_sid),
                                     mo->build_id, mo->build_id_len);
    }
    for (uint32_t id = 1; id <= max_code; id++) {
        const tp_rec_pycode *c = code_seen[id] ? tp_reader_pycode(L->rd, id) : NULL;
        if (c)
            tp_rank_add_stack_pycode(L->m, L->r, id, tp_reader_string(L->rd, c->file_sid),
                                     tp_reader_string(L->rd, c->name_sid), c->first_line);
    }
    free(ids), free(mod_seen), free(code_seen), free(mods), free(addrs);
}

/* ---------------------------------------------------------------- metadata */

/* The trace's process (its last PROCESS record: a trace has one) for the rank's list. */
static void load_process(nload *L, const tp_rec_process *p) {
    tp_process q = {0};
    q.pid = p->pid, q.ppid = p->ppid, q.exec_gen = p->exec_gen, q.job_id = p->job_id;
    q.root_pid = p->root_pid, q.rank = p->rank, q.command = intern_sid(L, p->cmdline_sid);
    q.start_ns = (int64_t)(p->start_realtime_ns < (uint64_t)INT64_MAX ? p->start_realtime_ns : 0);
    q.parent = -1;
    q.role = TP_PROC_MAIN;
    if (L->r->n_procs) { /* a second PROCESS record: the last one wins */
        free((char *)L->r->procs[0].file);
        L->r->n_procs = 0;
    }
    tp_rank_add_process(L->r, &q);
}

static tp_status on_process(void *ctx, const tp_rec_hdr *h) {
    nload *L = ctx;
    tp_rec_process full;
    tp_record_get(h, &full, sizeof full); /* an older record: the appended fields are 0 */
    const tp_rec_process *p = &full;
    load_process(L, p);
    L->pid = p->pid;
    forget_places(L); /* the rows' places hold the pid */
    if (p->rank >= 0 && L->r->rank < 0) {
        L->r->rank = p->rank;
        L->r->rank_hta = p->rank;
        L->r->has_dist_info = 1;
    }
    if (p->world_size > 0)
        L->r->world_size = p->world_size;
    return TP_OK;
}

/* Each named thread under its latest name; rows carry the PROCESS pid, so names do too. */
static tp_status on_thread(void *ctx, const tp_visit_thread *t) {
    nload *L = ctx;
    if (t->first && t->name)
        tp_rank_set_thread_name(L->m, L->r, L->pid, t->rec->tid, t->name, strlen(t->name));
    return TP_OK;
}

static tp_status on_device(void *ctx, const tp_rec_hdr *h) {
    nload *L = ctx;
    const tp_rec_device *d = (const void *)h;
    L->gpus += d->kind == TP_DEVICE_GPU;
    L->cpu_devices += d->kind == TP_DEVICE_CPU_ACCEL;
    L->r->devices = tp_mem_xrealloc(L->r->devices, L->r->n_devices + 1, sizeof *L->r->devices);
    L->r->devices[L->r->n_devices++] = (tp_device_info){(int32_t)d->id,
                                                        intern_sid(L, d->name_sid),
                                                        (int64_t)d->global_memory_bytes,
                                                        (int32_t)(d->compute_capability / 10),
                                                        (int32_t)(d->compute_capability % 10),
                                                        (int32_t)d->sm_count};
    return TP_OK;
}

/* The latest record of a (device, key) wins: the collector writes what it knows at start and
 * again before the trace closes. */
static tp_status on_env(void *ctx, const tp_rec_hdr *h) {
    nload *L = ctx;
    const tp_rec_env *e = (const void *)h;
    const char *k = tp_reader_string(L->rd, e->key_sid), *v = tp_reader_string(L->rd, e->value_sid);
    int32_t dev = e->device == TP_ENV_PROCESS || e->device > INT32_MAX ? -1 : (int32_t)e->device;
    tp_rank_set_env(L->m, L->r, dev, k, v, 1);
    return TP_OK;
}

static const tp_visitor loader = {
    .meta =
        {
            [TP_REC_PROCESS] = on_process,
            [TP_REC_DEVICE] = on_device,
            [TP_REC_ENV] = on_env,
        },
    .thread = on_thread,
    .data =
        {
            [TP_REC_API] = on_api,
            [TP_REC_KERNEL] = on_kernel,
            [TP_REC_MEMCPY] = on_memcpy,
            [TP_REC_MEMSET] = on_memset,
            [TP_REC_SYNC] = on_sync,
            [TP_REC_DEVICE_MEM] = on_device_mem,
            [TP_REC_HEAP] = on_heap,
            [TP_REC_REGION] = on_region,
            [TP_REC_ALLOC_FAIL] = on_alloc_fail,
            [TP_REC_DROPPED] = on_dropped,
            [TP_REC_OVERHEAD] = on_overhead,
            [TP_REC_NVTX_MARK] = on_mark,
            [TP_REC_COUNTER] = on_counter,
            [TP_REC_SAMPLE] = on_sample,
            [TP_REC_CLOCK_SYNC] = on_instant,
        },
    .range = on_range,
    .read_ahead = 1, /* handlers read the reader's strings, stacks and DOMAIN records only */
    /* a record of a timed type whose start or end lies past TP_NS_LIMIT (a corrupt or crafted
     * clock) is counted as skipped and never becomes a row, so no sum of times can overflow
     * later; the handlers read ts / end from the struct whatever the record's flags say, so
     * the type's layout decides (tp_cursor_set_late) */
    .t_limit = (uint64_t)TP_NS_LIMIT,
};

/* The records that become a row each (ranges: the record that opens one) of the events'
 * table and of the memory events' table. */
static const uint16_t event_row_types[] = {TP_REC_API,       TP_REC_KERNEL,    TP_REC_MEMCPY,
                                           TP_REC_MEMSET,    TP_REC_SYNC,      TP_REC_OVERHEAD,
                                           TP_REC_NVTX_MARK, TP_REC_NVTX_PUSH, TP_REC_NVTX_START};
static const uint16_t memev_row_types[] = {TP_REC_DEVICE_MEM, TP_REC_HEAP, TP_REC_REGION,
                                           TP_REC_ALLOC_FAIL};

/* Sizes the rank's tables for the rows the index says will come (a few fewer when some are
 * dropped: finish gives the rest back; at most one a byte of the file) and starts faulting their
 * columns in on the other core (tp_prefault): on a 10 M-record trace the loading thread took ~70 k
 * page faults as the columns grew. Without an intact index the columns grow as rows come. */
static void size_tables(nload *L) {
    tp_events *ev = &L->r->ev;
    tp_memevents *mem = &L->r->mem;
    size_t n_ev = (size_t)tp_reader_index_count(L->rd, event_row_types,
                                                sizeof event_row_types / sizeof *event_row_types);
    size_t n_mem = (size_t)tp_reader_index_count(L->rd, memev_row_types,
                                                 sizeof memev_row_types / sizeof *memev_row_types);
    tp_events_stack_col(ev); /* optional, but native rows carry stacks: append_plain writes it */
    if (!n_ev && !n_mem)
        return;
    tp_events_reserve(ev, n_ev);
    tp_memev_reserve(mem, n_mem);
    /* the dense columns (the optional ones come later, if at all: ahead_optional) */
#define COUNT_COL(c, none) +1
    enum {
        N_COLS = 0 TP_EV_DENSE(COUNT_COL) TP_MEMEV_DENSE(COUNT_COL),
        N_OPT = 0 TP_EV_OPTIONAL(COUNT_COL) TP_MEMEV_OPTIONAL(COUNT_COL)
    };
#undef COUNT_COL
    _Static_assert(N_COLS + N_OPT <= TP_PREFAULT_MAX_COLS, "tp_prefault takes every column");
    _Static_assert(N_OPT <= 32, "ahead_opt has a bit for each optional column");
    tp_prefault_col cols[N_COLS + 1];
    size_t n = 0;
#define EV_COL(c, none) cols[n++] = (tp_prefault_col){ev->c, sizeof *ev->c, n_ev};
    TP_EV_DENSE(EV_COL)
    EV_COL(stack, 0)
#undef EV_COL
    L->ahead_opt |= 1u; /* the stack column, TP_EV_OPTIONAL's first: in the list already */
#define MEM_COL(c, none) cols[n++] = (tp_prefault_col){mem->c, sizeof *mem->c, n_mem};
    TP_MEMEV_DENSE(MEM_COL)
#undef MEM_COL
    L->ahead = tp_prefault_start(cols, n);
}

static tp_status load_from(tp_model *m, const char *name, tp_reader *rd, uint64_t t0, uint64_t t1,
                           tp_load_error *e) {
    nload L = {0};
    L.m = m;
    L.rd = rd;
    L.r = tp_model_add_rank(m, name);
    L.r->native = 1;
    L.sids = tp_mem_xcalloc(SID_CACHE, sizeof *L.sids);
    tp_event_row_init(&L.row0);
    L.api_row = L.kernel_row = L.range_row = L.row0;
    forget_places(&L);
    if (t1 <= t0) /* a window holds a part: the whole file's counts would size it too large */
        size_tables(&L);
    tp_visit_stats vs = {0};
    tp_visitor v = loader;
    v.t_begin = t0, v.t_end = t1;
    tp_status st = tp_visit_run(rd, &v, &L, &vs);
    L.r->n_skipped[TP_SKIP_TIME_RANGE] += vs.late;
    stop_ahead(&L);
    if (st == TP_OK)
        load_stacks(&L);
    tp_clocksync cs; /* realtime = ts + base_time_ns: the first pair (tp_clocksync.h) */
    tp_clocksync_read(rd, &cs);
    L.r->base_time_ns = cs.first_ns, L.r->base_time_end_ns = cs.last_ns;
    L.r->clock_uncertainty_ns = cs.uncertainty_ns, L.r->n_clock_pairs = cs.n_pairs;
    if (L.r->n_procs) /* every row, as the rank counts them (the collector's own included) */
        L.r->procs[0].n_events = L.r->ev.n;
    const tp_trace_info *info = tp_reader_info(rd); /* what was kept, by kind */
    for (int t = 0; t < TP_MODEL_REC_KINDS && t < TP_REC_TYPE_LIMIT; t++)
        L.r->n_kept_kind[t] = info->records[t];
    tp_region_map_free(&L.regions);
    free(L.sids);
    free(L.stack_seen);
    if (L.cpu_devices && !L.gpus)
        L.r->device_type = TP_DEVTYPE_CPU_DEVICE;
    const tp_integrity *in = tp_reader_integrity(rd);
    if (st != TP_OK) {
        tp_model_pop_rank(m);
        tp_load_error_set(e, st, "%s", tp_status_str(st));
    } else if (in && in->message[0]) {
        tp_load_error_set(e, TP_OK, "%s", in->message); /* a note: damage skipped */
    }
    return st;
}

int tp_load_native_sniff(const void *head, size_t len) {
    size_t n = len < sizeof TP_FILE_MAGIC - 1 ? len : sizeof TP_FILE_MAGIC - 1;
    return len > 0 && memcmp(head, TP_FILE_MAGIC, n) == 0; /* a cut magic: let the reader say */
}

tp_status tp_load_native_window(tp_model *m, const char *path, uint64_t t0, uint64_t t1,
                                tp_load_error *e) {
    tp_load_error_init(e, path);
    tp_reader *rd;
    tp_status st = t1 > t0 ? tp_reader_open_window(path, t0, t1, &rd) : tp_reader_open(path, &rd);
    if (st != TP_OK)
        return tp_load_error_set(e, st, "%s", tp_status_why(st, errno));
    st = load_from(m, path, rd, t0, t1, e);
    tp_reader_close(rd);
    return st;
}

tp_status tp_load_native_load(tp_model *m, const char *path, tp_load_error *e) {
    return tp_load_native_window(m, path, 0, 0, e);
}

tp_status tp_load_native_file(tp_model *m, const char *path, char *err, size_t err_len) {
    tp_load_error e;
    return tp_load_error_string(tp_load_native_load(m, path, &e), &e, err, err_len);
}

tp_status tp_load_native_mem(tp_model *m, const char *name, const void *data, size_t size,
                             char *err, size_t err_len) {
    tp_load_error e;
    tp_load_error_init(&e, name);
    tp_reader *rd;
    tp_status st = tp_reader_open_mem(data, size, &rd);
    if (st != TP_OK)
        return tp_load_error_string(tp_load_error_set(&e, st, "%s", tp_status_str(st)), &e, err,
                                    err_len);
    st = load_from(m, name, rd, 0, 0, &e);
    tp_reader_close(rd);
    return tp_load_error_string(st, &e, err, err_len);
}
