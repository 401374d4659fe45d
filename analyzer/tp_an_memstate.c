/* tp_an_memstate: the allocator replay (see the header).
 *
 * Each memory-event row is turned into an action once, at open (which rows are blocks and
 * which are segments depends on the whole trace, see the header), with the site of every
 * allocating row. The replay then keeps live blocks and segments in dense arrays, found by
 * key through open-addressing hashes (linear probing, backward-shift deletion): freeing a
 * block moves the last one into its slot, so the live set is always one array. */
#include "tp_an_memstate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_an_enclosing.h"
#include "tp_an_stats.h"
#include "tp_mem.h"

enum {
    A_SKIP,
    A_BALLOC,  /* block allocated: addr, size */
    A_BFREE,   /* block freed: addr */
    A_BRESIZE, /* block resized in place: addr, size */
    A_SREG,    /* segment registered: handle (heap) or base (device allocation), size */
    A_SUNREG,  /* segment released (with any block still live in it) */
    A_SRESET,  /* heap reset: its blocks released, the segment stays */
};

#define EMPTY UINT64_MAX
#define KINETO_DEVICES 64 /* Kineto's own totals are kept per device below this id */

/* uint64 key -> dense index; key and value side by side, so a probe touches one line. */
typedef struct {
    uint64_t key;
    uint32_t val;
} islot;

typedef struct {
    islot *e;
    size_t cap, n;  /* cap: a power of two, kept >= 2n */
    unsigned shift; /* 64 - log2(cap): slot_of takes the product's top bits */
} imap;

/* A row's size as the replay reads it: a HEAP or REGION record's own size, else its byte
 * delta. Always inlined: the replay reads it per allocation, and as a call (once the size's
 * accessor grew a derived case) it cost 2 M instructions on lb2k. */
static inline __attribute__((always_inline)) int64_t row_size(const tp_memevents *e, size_t row) {
    return tp_memev_op_of(e, row) ? (int64_t)tp_memev_size(e, row) : tp_memev_bytes(e, row);
}

/* The replay's state at one moment: every field a seek changes. */
typedef struct {
    size_t pos;
    /* The live blocks as tp_an_memstate_blocks returns them, and beside them the heap each was
     * registered in (0: none said): a block and its heap in one record made that call copy
     * every live block out, 2,000 times on lb2k (2 M instructions). */
    tp_an_mblock *blocks;
    uint64_t *heaps;
    size_t n_blocks, cap_blocks; /* cap_blocks: the length of both arrays */
    tp_an_mseg *segs;
    size_t n_segs, cap_segs;
    imap bmap, smap;
    int64_t in_blocks, reserved;
    int64_t k_alloc[KINETO_DEVICES], k_res[KINETO_DEVICES]; /* Kineto: last totals; -1 */
    int64_t k_sum[KINETO_DEVICES]; /* Kineto: running sum of Bytes (older traces say no totals) */
    int k_ndev; /* Kineto: 1 + the highest device seen since the restart; the totals' loop stops
                 * there (memuse asks the totals at every event: 64 devices each time was ~1 %
                 * of `report`'s instructions on a 54 MB trace) */
    tp_an_mcounts counts;
    size_t *freed; /* per site: blocks freed by an unregister or free (not by a reset) */
} mstate;

struct tp_an_memstate {
    const tp_model *m;
    const tp_rank *r;
    tp_an_msource src;
    int has_segments; /* the trace describes segments: reserved is known */
    /* Per memory row: what the replay does, and the site of an allocating row (0 for the
     * others); its address and size are read from the model's columns. A 24-byte record per
     * row with both copied in was 51 MB on a 10 M-record trace (2.1 M memory rows), resident
     * for the whole report beside the analyses' peak, for a replay that reads each row ~once:
     * 5 bytes a row now (docs/PERFORMANCE.md, native report, eighteenth round). */
    uint8_t *act;
    uint32_t *site;
    tp_an_msite *sites;
    size_t n_sites, cap_sites;
    mstate st;   /* the replay's state now */
    mstate kept; /* tp_an_memstate_keep's copy; valid when has_kept */
    int has_kept;
};

/* ---------------------------------------------------------------- the hash */

/* Fibonacci hashing: the top bits of the product are the ones every key bit reaches (the
 * middle bits taken before ignored a site key's stack, its top 24 bits, so sites with the
 * same ranges but different stacks shared one probe chain). */
static size_t slot_of(const imap *h, uint64_t k) {
    return (size_t)((k * UINT64_C(0x9E3779B97F4A7C15)) >> h->shift);
}

static void imap_clear(imap *h) {
    for (size_t i = 0; i < h->cap; i++)
        h->e[i].key = EMPTY;
    h->n = 0;
}

/* Slot holding k, or the empty slot where it would go (the map must have a slot). */
static size_t imap_find(const imap *h, uint64_t k) {
    size_t i = slot_of(h, k);
    while (h->e[i].key != EMPTY && h->e[i].key != k)
        i = (i + 1) & (h->cap - 1);
    return i;
}

/* Out of line: it runs a few times per replay, and inlined into imap_reserve it kept the
 * reserve check itself from being inlined into block_add (a call per allocation). */
static __attribute__((noinline)) void imap_rehash(imap *h, size_t cap) {
    imap old = *h;
    h->cap = cap, h->n = 0;
    h->shift = 64 - (unsigned)__builtin_ctzll(cap);
    h->e = tp_an_alloc(cap, sizeof *h->e);
    imap_clear(h);
    for (size_t i = 0; i < old.cap; i++)
        if (old.e[i].key != EMPTY)
            h->e[imap_find(h, old.e[i].key)] = old.e[i], h->n++;
    free(old.e);
}

/* Makes room for one more key (call before imap_find when inserting). */
static inline void imap_reserve(imap *h) {
    if (2 * (h->n + 1) > h->cap)
        imap_rehash(h, h->cap ? 2 * h->cap : 64);
}

static void imap_put(imap *h, uint64_t k, uint32_t v) {
    imap_reserve(h);
    size_t i = imap_find(h, k);
    h->n += h->e[i].key == EMPTY;
    h->e[i] = (islot){k, v};
}

static long imap_get(const imap *h, uint64_t k) {
    if (!h->cap)
        return -1;
    size_t i = imap_find(h, k);
    return h->e[i].key == EMPTY ? -1 : (long)h->e[i].val;
}

/* Empties slot i. Backward-shift deletion keeps every probe chain unbroken without
 * tombstones. */
static void imap_del_slot(imap *h, size_t i) {
    size_t mask = h->cap - 1;
    h->n--;
    for (size_t j = (i + 1) & mask;; j = (j + 1) & mask) {
        if (h->e[j].key == EMPTY)
            break;
        size_t home = slot_of(h, h->e[j].key);
        /* j's entry may move to i when i lies cyclically in [home, j) */
        if (((j - home) & mask) >= ((j - i) & mask)) {
            h->e[i] = h->e[j];
            i = j;
        }
    }
    h->e[i].key = EMPTY;
}

static void imap_del(imap *h, uint64_t k) {
    if (!h->cap)
        return;
    size_t i = imap_find(h, k);
    if (h->e[i].key != EMPTY)
        imap_del_slot(h, i);
}

/* Points the entry of key k (present) at v. */
static void imap_set(imap *h, uint64_t k, uint32_t v) {
    h->e[imap_find(h, k)].val = v;
}

static uint64_t key_of(uint64_t k) {
    return k == EMPTY ? EMPTY - 1 : k; /* the one address that cannot be a key */
}

/* ---------------------------------------------------------------- blocks and segments */

/* Removes live block i whose hash entry is in slot `slot`; the last block moves into i. */
static void block_remove_at(tp_an_memstate *s, size_t i, size_t slot) {
    s->st.in_blocks -= s->st.blocks[i].size;
    imap_del_slot(&s->st.bmap, slot);
    size_t last = --s->st.n_blocks;
    if (i != last) {
        s->st.blocks[i] = s->st.blocks[last];
        s->st.heaps[i] = s->st.heaps[last];
        imap_set(&s->st.bmap, key_of(s->st.blocks[i].addr), (uint32_t)i);
    }
}

static void block_remove(tp_an_memstate *s, size_t i) {
    block_remove_at(s, i, imap_find(&s->st.bmap, key_of(s->st.blocks[i].addr)));
}

/* block_add and block_free are always inlined into the replay (apply_in): out of line each
 * call pushed and popped six registers, ~20 of the ~90 instructions an allocation or free
 * costs (106 k of each on lb2k: -1.4 M). block_remove_at stays a call: inlining it saved
 * little (see docs/PERFORMANCE.md, the memory replay's round). */
static inline __attribute__((always_inline)) void
block_add(tp_an_memstate *s, size_t row, uint64_t addr, int64_t size, const tp_ev_place *p) {
    const tp_memevents *e = &s->r->mem;
    imap_reserve(&s->st.bmap);
    size_t slot = imap_find(&s->st.bmap, key_of(addr));
    if (s->st.bmap.e[slot].key != EMPTY) { /* registered twice: the second replaces the first */
        s->st.counts.double_register++;
        block_remove_at(s, s->st.bmap.e[slot].val, slot);
        slot = imap_find(&s->st.bmap, key_of(addr));
    }
    if (s->st.n_blocks == s->st.cap_blocks) { /* heaps: as long as blocks */
        tp_an_grow((void **)&s->st.blocks, &s->st.cap_blocks, s->st.n_blocks + 1,
                   sizeof *s->st.blocks);
        s->st.heaps = tp_mem_xrealloc(s->st.heaps, s->st.cap_blocks, sizeof *s->st.heaps);
    }
    s->st.blocks[s->st.n_blocks] =
        (tp_an_mblock){addr, size, e->ts[row], s->site[row], p->device, row};
    s->st.heaps[s->st.n_blocks] = tp_memev_place_heap(p);
    s->st.in_blocks += size;
    s->st.bmap.e[slot] = (islot){key_of(addr), (uint32_t)s->st.n_blocks++};
    s->st.bmap.n++;
}

static inline __attribute__((always_inline)) void block_free(tp_an_memstate *s, uint64_t addr) {
    size_t slot = s->st.bmap.cap ? imap_find(&s->st.bmap, key_of(addr)) : 0;
    if (!s->st.bmap.cap || s->st.bmap.e[slot].key == EMPTY) {
        s->st.counts.unknown_unregister++;
        return;
    }
    size_t i = s->st.bmap.e[slot].val;
    s->st.freed[s->st.blocks[i].site]++;
    block_remove_at(s, i, slot);
}

static void block_resize(tp_an_memstate *s, uint64_t addr, int64_t size) {
    long i = imap_get(&s->st.bmap, key_of(addr));
    if (i < 0) {
        s->st.counts.unknown_resize++;
        return;
    }
    s->st.in_blocks += size - s->st.blocks[i].size;
    s->st.blocks[i].size = size;
}

/* Releases the live blocks of segment `g` (registered in its heap or lying in its range). */
static void release_blocks_in(tp_an_memstate *s, const tp_an_mseg *g) {
    for (size_t i = s->st.n_blocks; i-- > 0;) {
        const tp_an_mblock *b = &s->st.blocks[i];
        int inside = b->addr >= g->base && b->addr - g->base < (uint64_t)g->size;
        if ((g->handle && s->st.heaps[i] == g->handle) || inside) {
            s->st.counts.reset_live++;
            block_remove(s, i);
        }
    }
}

static uint64_t seg_key(const tp_memevents *e, size_t row) {
    return key_of(tp_memev_op_of(e, row) ? tp_memev_heap(e, row) : e->addr[row]);
}

static void seg_add(tp_an_memstate *s, size_t row) {
    const tp_memevents *e = &s->r->mem;
    uint64_t k = seg_key(e, row);
    int64_t size = row_size(e, row);
    if (imap_get(&s->st.smap, k) >= 0)
        s->st.counts.double_register++;
    else {
        tp_an_grow((void **)&s->st.segs, &s->st.cap_segs, s->st.n_segs + 1, sizeof *s->st.segs);
        imap_put(&s->st.smap, k, (uint32_t)s->st.n_segs);
        s->st.segs[s->st.n_segs++] =
            (tp_an_mseg){tp_memev_op_of(e, row) ? tp_memev_heap(e, row) : 0, e->addr[row], 0,
                         e->ts[row], tp_memev_device(e, row)};
    }
    tp_an_mseg *g = &s->st.segs[imap_get(&s->st.smap, k)];
    s->st.reserved += size - g->size;
    g->size = size;
}

/* Heap reset (`unregister` 0) or unregister / device free of a segment (1). NVTX says a
 * reset or an unregister ends every region still in the heap: they go with it, counted. */
static void seg_drop(tp_an_memstate *s, size_t row, int unregister) {
    long i = imap_get(&s->st.smap, seg_key(&s->r->mem, row));
    if (i < 0) {
        s->st.counts.unknown_heap++;
        return;
    }
    tp_an_mseg g = s->st.segs[i];
    release_blocks_in(s, &g);
    if (!unregister)
        return;
    s->st.reserved -= g.size;
    imap_del(&s->st.smap, seg_key(&s->r->mem, row));
    size_t last = --s->st.n_segs;
    if ((size_t)i != last) {
        s->st.segs[i] = s->st.segs[last];
        const tp_an_mseg *m = &s->st.segs[i];
        imap_put(&s->st.smap, key_of(m->handle ? m->handle : m->base), (uint32_t)i);
    }
}

/* ---------------------------------------------------------------- replay */

static void kineto_totals(tp_an_memstate *s, size_t row) {
    const tp_memevents *e = &s->r->mem;
    int32_t d = tp_memev_device(e, row);
    if (d < 0 || d >= KINETO_DEVICES)
        return;
    if (d >= s->st.k_ndev)
        s->st.k_ndev = d + 1;
    if (e->kind[row] == TP_MEMEV_ALLOC || e->kind[row] == TP_MEMEV_FREE)
        s->st.k_sum[d] += tp_memev_bytes(e, row);
    const tp_memev_totals *t = tp_memev_totals_of(e, row); /* one lookup for both */
    if (t && t->total_allocated >= 0)
        s->st.k_alloc[d] = t->total_allocated;
    if (t && t->total_reserved >= 0)
        s->st.k_res[d] = t->total_reserved;
}

/* Out of line: memuse seeks one event at a time (212 k calls on lb2k), and with the replay
 * inlined every seek saved and restored six registers before its first test; now a
 * one-event seek is a tail call here. */
static inline __attribute__((always_inline)) void apply_in(tp_an_memstate *s, size_t row) {
    const tp_memevents *e = &s->r->mem;
    switch (s->act[row]) {
    case A_BALLOC:
        block_add(s, row, e->addr[row], row_size(e, row), tp_memev_place_of(e, row));
        break;
    case A_BFREE:
        block_free(s, e->addr[row]);
        break;
    case A_BRESIZE:
        block_resize(s, e->addr[row], row_size(e, row));
        break;
    case A_SREG:
        seg_add(s, row);
        break;
    case A_SUNREG:
        seg_drop(s, row, 1);
        break;
    case A_SRESET:
        seg_drop(s, row, 0);
        break;
    default:
        break;
    }
    if (s->src == TP_AN_MSRC_KINETO)
        kineto_totals(s, row);
}

static __attribute__((noinline)) void apply(tp_an_memstate *s, size_t row) {
    apply_in(s, row);
}

static void restart(tp_an_memstate *s) {
    s->st.pos = 0, s->st.n_blocks = 0, s->st.n_segs = 0, s->st.in_blocks = 0, s->st.reserved = 0;
    imap_clear(&s->st.bmap), imap_clear(&s->st.smap);
    memset(&s->st.counts, 0, sizeof s->st.counts);
    memset(s->st.freed, 0, (s->n_sites + 1) * sizeof *s->st.freed);
    for (int d = 0; d < KINETO_DEVICES; d++)
        s->st.k_alloc[d] = s->st.k_res[d] = -1, s->st.k_sum[d] = 0;
    s->st.k_ndev = 0;
}

/* Copies n elements of `size` bytes into *dst (grown to *cap). */
static void copy_into(void **dst, size_t *cap, const void *src, size_t n, size_t size) {
    if (n > *cap) {
        free(*dst);
        *dst = tp_an_alloc(n, size);
        *cap = n;
    }
    if (n)
        memcpy(*dst, src, n * size);
}

static void imap_copy(imap *dst, size_t *cap, const imap *src) {
    copy_into((void **)&dst->e, cap, src->e, src->cap, sizeof *src->e);
    dst->cap = src->cap, dst->n = src->n, dst->shift = src->shift;
}

size_t tp_an_memstate_keep_cost(const tp_an_memstate *s) {
    return s->st.n_blocks + s->st.n_segs + s->st.bmap.cap + s->st.smap.cap + s->n_sites;
}

/* dst made a copy of src (n_sites: the length of the sites' freed counts); dst's arrays are
 * reused, at least as long as their counts say (copy_into); the hashes slot for slot, so the
 * state after a restore is the very one kept. */
static void mstate_copy(mstate *dst, const mstate *src, size_t n_sites) {
    size_t bcap = dst->bmap.e ? dst->bmap.cap : 0, scap = dst->smap.e ? dst->smap.cap : 0;
    size_t fcap = dst->freed ? n_sites + 1 : 0;
    dst->pos = src->pos;
    size_t hcap = dst->cap_blocks; /* the two arrays grow together */
    copy_into((void **)&dst->blocks, &dst->cap_blocks, src->blocks, src->n_blocks,
              sizeof *src->blocks);
    copy_into((void **)&dst->heaps, &hcap, src->heaps, src->n_blocks, sizeof *src->heaps);
    dst->n_blocks = src->n_blocks;
    copy_into((void **)&dst->segs, &dst->cap_segs, src->segs, src->n_segs, sizeof *src->segs);
    dst->n_segs = src->n_segs;
    imap_copy(&dst->bmap, &bcap, &src->bmap);
    imap_copy(&dst->smap, &scap, &src->smap);
    dst->in_blocks = src->in_blocks, dst->reserved = src->reserved;
    memcpy(dst->k_alloc, src->k_alloc, sizeof dst->k_alloc);
    memcpy(dst->k_res, src->k_res, sizeof dst->k_res);
    memcpy(dst->k_sum, src->k_sum, sizeof dst->k_sum);
    dst->k_ndev = src->k_ndev;
    dst->counts = src->counts;
    copy_into((void **)&dst->freed, &fcap, src->freed, n_sites + 1, sizeof *src->freed);
}

void tp_an_memstate_keep(tp_an_memstate *s) {
    mstate_copy(&s->kept, &s->st, s->n_sites);
    s->has_kept = 1;
}

/* The kept state made the current one. */
static void restore(tp_an_memstate *s) {
    mstate_copy(&s->st, &s->kept, s->n_sites);
}

void tp_an_memstate_seek(tp_an_memstate *s, size_t ev) {
    size_t pos = s->st.pos;
    if (ev == pos + 1 && ev <= s->r->mem.n) { /* the next event: memuse's every call */
        s->st.pos = ev;
        apply(s, pos);
        return;
    }
    if (ev > s->r->mem.n)
        ev = s->r->mem.n;
    if (ev < s->st.pos) {
        if (s->has_kept && s->kept.pos <= ev)
            restore(s);
        else
            restart(s);
    }
    for (; s->st.pos < ev; s->st.pos++)
        apply(s, s->st.pos);
}

size_t tp_an_memstate_pos(const tp_an_memstate *s) {
    return s->st.pos;
}

void tp_an_memstate_seek_time(tp_an_memstate *s, int64_t t) {
    const tp_memevents *e = &s->r->mem;
    size_t lo = 0, hi = e->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (e->ts[mid] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    tp_an_memstate_seek(s, lo);
}

/* ---------------------------------------------------------------- open: actions and sites */

/* Device allocations among the rows: only asked of an NVTX trace without heaps (see
 * pick_source). */
static int has_devmem(const tp_memevents *e) {
    for (size_t i = 0; i < e->n; i++)
        if (tp_memev_op_of(e, i) == TP_MEMEV_OP_NONE && tp_memev_device(e, i) >= 0 &&
            (e->kind[i] == TP_MEMEV_ALLOC || e->kind[i] == TP_MEMEV_FREE))
            return 1;
    return 0;
}

/* The pass over every row reads two byte columns into three branch-free reductions; the
 * device-allocation test (two more columns and a branch a row) was in it too, ~19
 * instructions a row, and it only matters to an NVTX trace without heaps. */
static tp_an_msource pick_source(const tp_rank *r, int *heaps, int *devmem) {
    const tp_memevents *e = &r->mem;
    uint8_t max_op = 0;
    int any = 0, heap = 0;
    for (size_t i = 0; i < e->n; i++) {
        uint8_t op = tp_memev_op_of(e, i);
        max_op = op > max_op ? op : max_op;
        heap |= op == TP_MEMEV_OP_HEAP_REGISTER;
        any |= e->kind[i] != TP_MEMEV_ALLOC_FAIL;
    }
    int regions = max_op >= TP_MEMEV_OP_REGION_REGISTER;
    *heaps = heap;
    *devmem = regions && !heap && has_devmem(e);
    if (!any)
        return TP_AN_MSRC_NONE;
    if (!r->native)
        return TP_AN_MSRC_KINETO;
    return regions ? TP_AN_MSRC_NVTX : TP_AN_MSRC_DEVICE;
}

/* Row i's action under source `src`. Always inlined into find_actions' loop per source, so
 * the source's switch is decided once, not per row. */
static inline __attribute__((always_inline)) uint8_t action_of(const tp_memevents *e, size_t i,
                                                               tp_an_msource src, int heaps) {
    static const uint8_t by_op[] = {
        [TP_MEMEV_OP_HEAP_REGISTER] = A_SREG,    [TP_MEMEV_OP_HEAP_UNREGISTER] = A_SUNREG,
        [TP_MEMEV_OP_HEAP_RESET] = A_SRESET,     [TP_MEMEV_OP_REGION_REGISTER] = A_BALLOC,
        [TP_MEMEV_OP_REGION_RESIZE] = A_BRESIZE, [TP_MEMEV_OP_REGION_UNREGISTER] = A_BFREE,
    };
    int ab = e->kind[i] == TP_MEMEV_ALLOC || e->kind[i] == TP_MEMEV_FREE;
    int alloc = e->kind[i] == TP_MEMEV_ALLOC;
    switch (src) {
    case TP_AN_MSRC_NVTX:
        if (tp_memev_op_of(e, i) && tp_memev_op_of(e, i) < sizeof by_op)
            return by_op[tp_memev_op_of(e, i)];
        /* device allocations stand for segments only where no heap says it */
        if (ab && tp_memev_device(e, i) >= 0 && !heaps)
            return alloc ? A_SREG : A_SUNREG;
        return A_SKIP;
    case TP_AN_MSRC_KINETO:
    case TP_AN_MSRC_DEVICE:
        /* an allocation without an address can never be matched with its free */
        if (ab && tp_memev_device(e, i) >= 0 && e->addr[i])
            return alloc ? A_BALLOC : A_BFREE;
        return A_SKIP;
    default:
        return A_SKIP;
    }
}

/* The r->threads bucket of (pid, tid), -1 when it has no rows. */
static long thread_bucket(const tp_rank *r, int64_t pid, int64_t tid) {
    for (size_t b = 0; b < r->threads.n; b++)
        if (r->threads.key[b] == tid && r->threads.key2[b] == pid)
            return (long)b;
    return -1;
}

static uint32_t intern_site(tp_an_memstate *s, const tp_an_msite *x, imap *h) {
    uint64_t k = key_of(((uint64_t)x->stack << 40) ^ ((uint64_t)x->name[0] << 20) ^ x->name[1]);
    for (long i = imap_get(h, k); i >= 0;) { /* a collision of two sites: compare */
        if (!memcmp(&s->sites[i], x, sizeof *x))
            return (uint32_t)i;
        k = key_of(k * 31 + 7), i = imap_get(h, k);
    }
    tp_an_grow((void **)&s->sites, &s->cap_sites, s->n_sites + 1, sizeof *s->sites);
    s->sites[s->n_sites] = *x;
    imap_put(h, k, (uint32_t)s->n_sites);
    return (uint32_t)s->n_sites++;
}

/* Each row's action. */
static void find_actions(tp_an_memstate *s, int heaps) {
    const tp_memevents *e = &s->r->mem;
    switch (s->src) {
    case TP_AN_MSRC_NVTX:
        for (size_t i = 0; i < e->n; i++)
            s->act[i] = action_of(e, i, TP_AN_MSRC_NVTX, heaps);
        break;
    case TP_AN_MSRC_KINETO:
    case TP_AN_MSRC_DEVICE: /* the same actions */
        for (size_t i = 0; i < e->n; i++)
            s->act[i] = action_of(e, i, TP_AN_MSRC_DEVICE, heaps);
        break;
    default:
        memset(s->act, A_SKIP, e->n);
        break;
    }
}

/* A direct-mapped memo of sites in front of intern_site: a trace has tens to hundreds of
 * sites and interleaves them (consecutive allocations rarely share one), and a hit here is
 * three compares where intern_site hashed, probed and compared the whole site, ~60
 * instructions an allocation. A miss (or a slot two sites share) just interns, as before. */
#define SITE_MEMO 256
typedef struct {
    tp_an_msite x;
    uint32_t site; /* UINT32_MAX: empty */
} site_memo;

static size_t memo_slot(const tp_an_msite *x) {
    uint64_t k = ((uint64_t)x->stack << 32 | x->name[0]) ^ ((uint64_t)x->name[1] << 16);
    return (size_t)((k * UINT64_C(0x9E3779B97F4A7C15)) >> 56); /* SITE_MEMO = 2^8 */
}

/* The site of each allocating row (s->site of the other rows is never read: left unset). */
static void find_sites(tp_an_memstate *s) {
    const tp_memevents *e = &s->r->mem;
    unsigned kinds = s->r->native ? TP_AN_RANGES_ANNOTATIONS : TP_AN_RANGES_ALL;
    imap h = {0};
    int64_t lp = -2, lt = -2;
    long bucket = -1;
    site_memo memo[SITE_MEMO] = {{{0, {0, 0}}, UINT32_MAX}};
    for (size_t k = 1; k < SITE_MEMO; k++)
        memo[k].site = UINT32_MAX;
    uint32_t *cursor = tp_an_alloc(s->r->threads.n + 1, sizeof *cursor); /* per bucket */
    memcpy(cursor, s->r->threads.off, s->r->threads.n * sizeof *cursor);
    for (size_t i = 0; i < e->n; i++) {
        if (s->act[i] != A_BALLOC)
            continue;
        if (tp_memev_pid(e, i) != lp || tp_memev_tid(e, i) != lt)
            lp = tp_memev_pid(e, i), lt = tp_memev_tid(e, i), bucket = thread_bucket(s->r, lp, lt);
        tp_an_msite x = {e->stack[i], {0, 0}};
        long rg = bucket >= 0 ? tp_an_enclosing_at_from(s->r, (size_t)bucket, e->ts[i], kinds,
                                                        &cursor[bucket])
                              : -1;
        for (int k = 0; k < 2 && rg >= 0; k++) {
            x.name[k] = s->r->ev.name[rg];
            rg = tp_an_enclosing_row(&s->r->ev, rg, kinds);
        }
        site_memo *m = &memo[memo_slot(&x)];
        if (m->site == UINT32_MAX || m->x.stack != x.stack || m->x.name[0] != x.name[0] ||
            m->x.name[1] != x.name[1])
            m->x = x, m->site = intern_site(s, &x, &h);
        s->site[i] = m->site;
    }
    free(h.e), free(cursor);
}

tp_an_memstate *tp_an_memstate_open(const tp_model *m, const tp_rank *r) {
    tp_an_memstate *s = tp_an_alloc(1, sizeof *s);
    memset(s, 0, sizeof *s);
    s->m = m, s->r = r;
    int heaps, devmem;
    s->src = pick_source(r, &heaps, &devmem);
    s->has_segments = s->src == TP_AN_MSRC_NVTX && (heaps || devmem);
    size_t n = r->mem.n ? r->mem.n : 1;
    tp_an_msite none = {0, {0, 0}};
    imap unused = {0};
    intern_site(s, &none, &unused); /* site 0: nothing known */
    free(unused.e);
    s->act = tp_an_alloc(n, sizeof *s->act);
    s->site = tp_an_alloc(n, sizeof *s->site);
    find_actions(s, heaps);
    find_sites(s);
    s->st.freed = tp_an_alloc(s->n_sites + 1, sizeof *s->st.freed);
    /* tp_an_memstate_blocks returns this array: never NULL, even with no block yet */
    tp_an_grow((void **)&s->st.blocks, &s->st.cap_blocks, 1, sizeof *s->st.blocks);
    s->st.heaps = tp_mem_xrealloc(s->st.heaps, s->st.cap_blocks, sizeof *s->st.heaps);
    restart(s);
    return s;
}

static void mstate_free(mstate *st) {
    free(st->blocks), free(st->heaps), free(st->segs), free(st->bmap.e), free(st->smap.e),
        free(st->freed);
}

void tp_an_memstate_close(tp_an_memstate *s) {
    if (!s)
        return;
    mstate_free(&s->st), mstate_free(&s->kept);
    free(s->act), free(s->site), free(s->sites);
    free(s);
}

/* ---------------------------------------------------------------- queries */

tp_an_msource tp_an_memstate_source(const tp_an_memstate *s) {
    return s->src;
}

const tp_rank *tp_an_memstate_rank(const tp_an_memstate *s) {
    return s->r;
}

void tp_an_memstate_totals(const tp_an_memstate *s, tp_an_mtotals *out) {
    out->in_blocks = s->st.in_blocks;
    out->blocks = s->st.n_blocks, out->segments = s->st.n_segs;
    out->allocated = s->st.in_blocks;
    out->reserved = s->has_segments               ? s->st.reserved
                    : s->src == TP_AN_MSRC_DEVICE ? s->st.in_blocks
                                                  : -1;
    if (s->src != TP_AN_MSRC_KINETO)
        return;
    int64_t a = 0, res = 0;
    int any_r = 0;
    for (int d = 0; d < s->st.k_ndev; d++) {
        /* a device's own total where it said one, else the sum of its Bytes so far */
        a += s->st.k_alloc[d] >= 0 ? s->st.k_alloc[d] : s->st.k_sum[d];
        if (s->st.k_res[d] >= 0)
            res += s->st.k_res[d], any_r = 1;
    }
    out->allocated = a;
    out->reserved = any_r ? res : -1;
}

void tp_an_memstate_seek_totals(tp_an_memstate *s, size_t ev, int64_t *allocated,
                                int64_t *reserved) {
    size_t pos = s->st.pos;
    if (ev == pos + 1 && ev <= s->r->mem.n) { /* the next event, as tp_an_memstate_seek; the
                                                 replay inline: this call does nothing else */
        s->st.pos = ev;
        apply_in(s, pos);
    } else {
        tp_an_memstate_seek(s, ev);
    }
    if (s->src == TP_AN_MSRC_KINETO) { /* the devices' figures: tp_an_memstate_totals' loop */
        tp_an_mtotals x;
        tp_an_memstate_totals(s, &x);
        *allocated = x.allocated, *reserved = x.reserved;
        return;
    }
    *allocated = s->st.in_blocks; /* as tp_an_memstate_totals */
    *reserved = s->has_segments               ? s->st.reserved
                : s->src == TP_AN_MSRC_DEVICE ? s->st.in_blocks
                                              : -1;
}

size_t tp_an_memstate_run_totals(tp_an_memstate *s, size_t to, int64_t above, int64_t *alloc,
                                 int64_t *res) {
    size_t from = s->st.pos, row = from;
    to = to < s->r->mem.n ? to : s->r->mem.n;
    if (s->src == TP_AN_MSRC_KINETO) { /* the devices' figures: tp_an_memstate_totals' loop */
        while (row < to) {
            apply(s, row);
            s->st.pos = ++row;
            tp_an_mtotals x;
            tp_an_memstate_totals(s, &x);
            alloc[row - from - 1] = x.allocated, res[row - from - 1] = x.reserved;
            if (x.allocated > above)
                break;
        }
        return row - from;
    }
    /* as tp_an_memstate_totals: reserved is the segments' sum, the blocks' or none */
    int seg = s->has_segments, dev = s->src == TP_AN_MSRC_DEVICE;
    while (row < to) {
        apply_in(s, row);
        s->st.pos = ++row;
        int64_t a = s->st.in_blocks;
        alloc[row - from - 1] = a;
        res[row - from - 1] = seg ? s->st.reserved : dev ? a : -1;
        if (a > above)
            break;
    }
    return row - from;
}

const tp_an_mcounts *tp_an_memstate_counts(const tp_an_memstate *s) {
    return &s->st.counts;
}

const tp_an_mblock *tp_an_memstate_blocks(const tp_an_memstate *s, size_t *n) {
    *n = s->st.n_blocks;
    return s->st.blocks; /* never NULL (open makes it) */
}

const tp_an_mseg *tp_an_memstate_segments(const tp_an_memstate *s, size_t *n) {
    *n = s->st.n_segs;
    return s->st.segs;
}

const tp_an_msite *tp_an_memstate_site(const tp_an_memstate *s, uint32_t i) {
    return &s->sites[i < s->n_sites ? i : 0];
}

size_t tp_an_memstate_n_sites(const tp_an_memstate *s) {
    return s->n_sites;
}

size_t tp_an_memstate_site_freed(const tp_an_memstate *s, uint32_t site) {
    return site < s->n_sites ? s->st.freed[site] : 0;
}

uint32_t tp_an_memstate_row_site(const tp_an_memstate *s, size_t row) {
    return row < s->r->mem.n && s->act[row] == A_BALLOC ? s->site[row] : UINT32_MAX;
}

/* ---------------------------------------------------------------- layouts */

typedef struct {
    uint64_t addr;
    size_t i;
} addr_ix;

static int cmp_addr(const void *a, const void *b) {
    uint64_t x = ((const addr_ix *)a)->addr, y = ((const addr_ix *)b)->addr;
    return (x > y) - (x < y);
}

static void add_hole(tp_an_mlayout *l, size_t *cap, uint64_t at, int64_t size) {
    if (size <= 0)
        return;
    tp_an_grow((void **)&l->hole_addr, cap, l->n_holes + 1, sizeof *l->hole_addr);
    l->hole_size = tp_mem_xrealloc(l->hole_size, *cap, sizeof *l->hole_size);
    l->hole_addr[l->n_holes] = at, l->hole_size[l->n_holes++] = size;
    l->free_bytes += size;
    l->largest_hole = size > l->largest_hole ? size : l->largest_hole;
}

/* Blocks [*k, n) of `b` (by address) that start inside segment g go into its layout. */
static void layout_one(const tp_an_mseg *g, const addr_ix *b, const tp_an_mblock *blocks, size_t n,
                       size_t *k, tp_an_mlayout *l) {
    size_t cap = 0;
    uint64_t end = g->base + (uint64_t)g->size, at = g->base;
    while (*k < n && b[*k].addr < g->base)
        (*k)++;
    for (; *k < n && b[*k].addr < end; (*k)++) {
        const tp_an_mblock *x = &blocks[b[*k].i];
        add_hole(l, &cap, at, (int64_t)(x->addr - at));
        l->blocks = tp_mem_xrealloc(l->blocks, l->n_blocks + 1, sizeof *l->blocks);
        l->blocks[l->n_blocks++] = b[*k].i;
        l->live_bytes += x->size;
        uint64_t xe = x->addr + (uint64_t)x->size;
        at = xe > at ? xe : at;
    }
    if (at < end)
        add_hole(l, &cap, at, (int64_t)(end - at));
}

void tp_an_memstate_layouts(const tp_an_memstate *s, tp_an_mlayout **out, size_t *n_out) {
    addr_ix *g = tp_an_alloc(s->st.n_segs + 1, sizeof *g),
            *b = tp_an_alloc(s->st.n_blocks + 1, sizeof *b);
    for (size_t i = 0; i < s->st.n_segs; i++)
        g[i] = (addr_ix){s->st.segs[i].base, i};
    for (size_t i = 0; i < s->st.n_blocks; i++)
        b[i] = (addr_ix){s->st.blocks[i].addr, i};
    qsort(g, s->st.n_segs, sizeof *g, cmp_addr);
    qsort(b, s->st.n_blocks, sizeof *b, cmp_addr);
    tp_an_mlayout *l = tp_mem_xcalloc(s->st.n_segs + 1, sizeof *l);
    size_t k = 0;
    for (size_t i = 0; i < s->st.n_segs; i++) {
        l[i].seg = g[i].i;
        layout_one(&s->st.segs[g[i].i], b, s->st.blocks, s->st.n_blocks, &k, &l[i]);
    }
    free(g), free(b);
    *out = l, *n_out = s->st.n_segs;
}

void tp_an_memstate_layouts_free(tp_an_mlayout *l, size_t n) {
    for (size_t i = 0; l && i < n; i++)
        free(l[i].blocks), free(l[i].hole_addr), free(l[i].hole_size);
    free(l);
}

int64_t tp_an_memstate_largest_hole(const tp_an_memstate *s) {
    if (!s->st.n_segs)
        return -1;
    tp_an_mlayout *l;
    size_t n;
    tp_an_memstate_layouts(s, &l, &n);
    int64_t best = 0;
    for (size_t i = 0; i < n; i++)
        best = l[i].largest_hole > best ? l[i].largest_hole : best;
    tp_an_memstate_layouts_free(l, n);
    return best;
}

char *tp_an_msite_label(const tp_model *m, const tp_an_msite *site, char *buf, size_t cap) {
    if (!site->name[0])
        snprintf(buf, cap, "(no range)");
    else if (!site->name[1])
        snprintf(buf, cap, "range '%s'", tp_model_str(m, site->name[0]));
    else
        snprintf(buf, cap, "range '%s' in '%s'", tp_model_str(m, site->name[0]),
                 tp_model_str(m, site->name[1]));
    return buf;
}
