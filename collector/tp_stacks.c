/* tp_stacks: unw_backtrace + per-thread cache + module map (see tp_stacks.h). */
#include "tp_stacks.h"

#define UNW_LOCAL_ONLY
#include <elf.h>
#include <libunwind.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tp_hash.h"
#include "tp_pyframes.h"

#define MAX_MODULES 1024
#define CAPTURE_DEPTH 64

typedef struct {
    uint64_t bias, lo, hi;
} module_range;

/* Append-only: captures read entries [0, count) without a lock; refresh appends under mu. */
static module_range g_mods[MAX_MODULES];
static _Atomic uint32_t g_nmods;
static pthread_mutex_t g_mods_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t g_self_lo, g_self_hi;
static int g_verify; /* TRAINPROF_STACKS_VERIFY=1 */
/* tp_stacks_init's busy_enter and busy_leave (no-ops when NULL), around a capture's slow
 * paths. */
static void (*g_busy_enter)(void), (*g_busy_leave)(void);
static _Atomic uint64_t g_verify_hits, g_verify_bad;

typedef struct {
    tp_writer *w;
    char exe[4096];
} refresh_ctx;

static void module_range_of(const struct dl_phdr_info *info, uint64_t *lo, uint64_t *hi) {
    *lo = UINT64_MAX;
    *hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uint64_t a = info->dlpi_addr + ph->p_vaddr, b = a + ph->p_memsz;
        *lo = a < *lo ? a : *lo;
        *hi = b > *hi ? b : *hi;
    }
}

/* Reads NT_GNU_BUILD_ID from the in-memory PT_NOTE segments (no file I/O). */
static void module_build_id(const struct dl_phdr_info *info, tp_rec_module *m) {
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const void *)p;
            const char *name = p + sizeof *nh;
            const char *desc = name + ((nh->n_namesz + 3) & ~3u);
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4)) {
                uint32_t n = nh->n_descsz < sizeof m->build_id ? nh->n_descsz : sizeof m->build_id;
                memcpy(m->build_id, desc, n);
                m->build_id_len = n;
                return;
            }
            p = desc + ((nh->n_descsz + 3) & ~3u);
        }
    }
}

static int module_known(uint64_t bias, uint64_t lo) {
    uint32_t n = atomic_load_explicit(&g_nmods, memory_order_acquire);
    for (uint32_t i = 0; i < n; i++)
        if (g_mods[i].bias == bias && g_mods[i].lo == lo)
            return 1;
    return 0;
}

/* dl_iterate_phdr callback: appends and writes each module not seen before. */
static int refresh_one(struct dl_phdr_info *info, size_t size, void *data) {
    refresh_ctx *ctx = data;
    uint64_t lo, hi;
    module_range_of(info, &lo, &hi);
    uint32_t n = atomic_load_explicit(&g_nmods, memory_order_relaxed);
    if (lo >= hi || n >= MAX_MODULES || module_known(info->dlpi_addr, lo))
        return 0;
    /* The main program has an empty name; vdso has a name but no file. */
    const char *path = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : ctx->exe;
    tp_rec_module m;
    TP_REC_CLEAR(&m, TP_REC_MODULE);
    m.id = n + 1; /* 0 means none */
    m.load_bias = info->dlpi_addr;
    m.lo = lo;
    m.hi = hi;
    module_build_id(info, &m);
    if (tp_writer_intern_string(ctx->w, path, strlen(path), &m.path_sid) != TP_OK)
        return 0;
    if (tp_writer_write_meta(ctx->w, &m) != TP_OK)
        return 0;
    g_mods[n] = (module_range){info->dlpi_addr, lo, hi};
    atomic_store_explicit(&g_nmods, n + 1, memory_order_release);
    return 0;
}

static void refresh_modules(tp_writer *w) {
    refresh_ctx ctx = {.w = w};
    ssize_t r = readlink("/proc/self/exe", ctx.exe, sizeof ctx.exe - 1);
    ctx.exe[r > 0 ? r : 0] = 0;
    pthread_mutex_lock(&g_mods_mu);
    dl_iterate_phdr(refresh_one, &ctx);
    pthread_mutex_unlock(&g_mods_mu);
    tp_pyframes_modules_changed(); /* libpython may have just been loaded */
}

static int find_module(uint64_t pc) {
    uint32_t n = atomic_load_explicit(&g_nmods, memory_order_acquire);
    for (uint32_t i = 0; i < n; i++)
        if (pc >= g_mods[i].lo && pc < g_mods[i].hi)
            return (int)i;
    return -1;
}

tp_status tp_stacks_init(tp_writer *w, const void *self_fn, void (*busy_enter)(void),
                         void (*busy_leave)(void)) {
    g_busy_enter = busy_enter;
    g_busy_leave = busy_leave;
    const char *v = getenv("TRAINPROF_STACKS_VERIFY");
    g_verify = v && !strcmp(v, "1");
    /* One walk here, before any other thread captures: libunwind initialises itself on its
     * first walk, and every thread that walks before that init is done writes its global
     * signal mask unlocked while another may read it (a data race TSan reported in
     * test_collector_threads when two threads took their first stack at once). */
    void *first[1];
    (void)unw_backtrace(first, 1);
    refresh_modules(w);
    int self = find_module((uint64_t)(uintptr_t)self_fn);
    if (self >= 0) {
        g_self_lo = g_mods[self].lo;
        g_self_hi = g_mods[self].hi;
    }
    return atomic_load(&g_nmods) ? TP_OK : TP_ERR_NOT_FOUND;
}

void tp_stacks_reset(void) {
    /* Only called while no thread captures (before start, or in a fork child, where the
     * lock may have been copied held): start over with a fresh lock. */
    pthread_mutex_init(&g_mods_mu, NULL);
    atomic_store(&g_nmods, 0);
    tp_pyframes_reset();
}

uint32_t tp_stacks_module_count(void) {
    return atomic_load(&g_nmods);
}

uint32_t tp_stacks_encode(tp_writer *w, void *const *pcs, uint32_t n, uint64_t *out) {
    int refreshed = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t pc = (uint64_t)(uintptr_t)pcs[i] - 1; /* return address -> the call */
        int m = find_module(pc);
        if (m < 0 && !refreshed) {
            refresh_modules(w);
            refreshed = 1;
            m = find_module(pc);
        }
        out[i] = m < 0 ? TP_FRAME_MAKE(TP_FRAME_NO_MODULE, pc)
                       : TP_FRAME_MAKE((uint32_t)m + 1, pc - g_mods[m].bias);
    }
    return n;
}

/* Key of a raw capture in the thread's cache: one multiply and shift per frame, inline (a
 * general byte hash with its tail copy cost several times more), then a full mix. A hit is
 * trusted without comparing the pcs, so the key is 64 bits, never 0 (an empty slot). */
static uint64_t pcs_key(void *const *pcs, uint32_t n, uint64_t seed) {
    uint64_t h = seed ^ ((uint64_t)n * 0x9e3779b97f4a7c15ull);
    for (uint32_t i = 0; i < n; i++) {
        h = (h ^ (uint64_t)(uintptr_t)pcs[i]) * 0xbf58476d1ce4e5b9ull;
        h ^= h >> 31;
    }
    h = tp_hash_mix64(h);
    return h ? h : 1;
}

/* The thread's cache is 2-way set associative: a training step's few dozen distinct stacks
 * collided often in a direct-mapped table, and every collision re-interned a stack under the
 * writer's lock. A new key goes into way 0, the older one moves to way 1. */
static uint32_t cache_find(const tp_stack_cache *c, uint64_t key) {
    uint32_t set = (uint32_t)(key & (TP_STACK_CACHE_SLOTS / 2 - 1)) * 2;
    if (c->hash[set] == key)
        return c->id[set];
    return c->hash[set + 1] == key ? c->id[set + 1] : 0;
}

static void cache_put(tp_stack_cache *c, uint64_t key, uint32_t id) {
    uint32_t set = (uint32_t)(key & (TP_STACK_CACHE_SLOTS / 2 - 1)) * 2;
    c->hash[set + 1] = c->hash[set];
    c->id[set + 1] = c->id[set];
    c->hash[set] = key;
    c->id[set] = id;
}

/* Frames of pcs outside the collector: where the app's stack starts. */
static int skip_self(void *const *pcs, int n) {
    int skip = 0;
    while (skip < n && (uint64_t)(uintptr_t)pcs[skip] >= g_self_lo &&
           (uint64_t)(uintptr_t)pcs[skip] < g_self_hi)
        skip++;
    return skip;
}

static void busy_enter(void) {
    if (g_busy_enter)
        g_busy_enter();
}

static void busy_leave(void) {
    if (g_busy_leave)
        g_busy_leave();
}

/* A capture's full unwind, a slow path: busy from here to the end of tp_stacks_capture. */
__attribute__((noinline)) static int backtrace_slow(void **pcs) {
    busy_enter();
    return unw_backtrace(pcs, CAPTURE_DEPTH);
}

/* ---------------------------------------------------------------- verified walks
 *
 * unw_backtrace costs ~110 instructions a frame, at every launch: most of the collector's
 * cost on a launch-bound job. Yet a training step launches from the same few places, with
 * the same stack each time. A walk depends on the registers it starts from and on the stack
 * words it reads; so after one full walk (a libunwind cursor) we keep, for that starting
 * point (stack pointer and frame pointer of the capture), the pcs and every stack address
 * the walk read: each frame's return-address slot (the pc it yielded) and the slot each
 * frame's caller rbp was restored from (the register a frame-pointer rule computes the CFA
 * from). The next capture from the same starting point re-reads those slots: if each holds
 * the same word, the same walk follows step for step, frame by frame (each slot was written
 * by the frame that owns it: the call pushed the return address, the prologue saved rbp,
 * and both frames are live), so the cached pcs are the stack, at a few loads a frame.
 * Walks through a signal frame, off the thread's stack or deeper than CAPTURE_DEPTH are
 * never cached. TRAINPROF_STACKS_VERIFY=1 unwinds every cached hit again and counts any
 * difference (tests run the collector with it). x86-64 only; elsewhere unw_backtrace. */
#if defined(__x86_64__)
/* A step launches from a few dozen places, many at the same stack depth (one caller's
 * calls into several layers): those share a stack pointer, hence a set, and the set keeps
 * the most recent WALK_WAYS of them, tried in order of use. */
#define WALK_SETS 16
#define WALK_WAYS 16
#define WALK_BP_CHECKS 16
#define WALK_AFTER 16 /* captures before a thread gets its walk cache */
/* A hit compares its slots (return addresses, then saved rbps) one by one, unrolled, for
 * walks of up to WALK_UNROLLED slots (every launch's in the trainer, a 24-frame NVTX push's);
 * longer ones four at a time, one branch per four, the last slot repeated up to a multiple
 * of four. */
#define WALK_UNROLLED 32
#define WALK_GROUP 4
#define WALK_SLOTS (CAPTURE_DEPTH + WALK_BP_CHECKS + WALK_GROUP - 1)

typedef struct walk_entry {
    uint64_t sp, bp; /* the capture's starting point; sp == 0: empty */
    uint32_t n, nbp;
    uint32_t nslot;    /* n - 1 + nbp: slots [1, 1 + nslot) are compared */
    uint32_t ncmp;     /* nslot rounded up to WALK_GROUP (a walk of more than WALK_UNROLLED) */
    int need_bp;       /* a frame's CFA came from the live rbp: compare it */
    int never;         /* a walk that cannot be cached (see walk_full): unw_backtrace it, always */
    uint32_t stack_id; /* the interned stack of these pcs with no Python frames; 0: not yet */
    int check;         /* need_bp || never: the hit's one test before it compares */
    /* sp when a prediction may take this walk on its compare alone (!check, at most
     * WALK_UNROLLED slots), else 0 (never a capture's): walk_is's one test where it took
     * three (sp, check), and the unrolled compare without a bound test; the rest are the
     * set's. */
    uint64_t psp;
    /* The walks of the captures that followed this one's the last two times (the thread's
     * `none`, whose psp is 0: none yet; never NULL, so a prediction needs no NULL test), the
     * latest first: the next capture tries them first (see tp_stack_walks.prev). */
    struct walk_entry *next[2];
    /* The compared slots, from sp, and their words: [1, n) the return-address slots of the
     * pcs, so pcs[k] is frame k's pc; [n, n + nbp) bp_off/bp_val; then the last again. */
    void *pcs[WALK_SLOTS];
    uint32_t ra_off[WALK_SLOTS];
    uint32_t bp_off[WALK_BP_CHECKS];
    uint64_t bp_val[WALK_BP_CHECKS];
} walk_entry;

/* What a capture compares first, for each entry, kept apart from the entries: a set's 16
 * tags lie in 6 cache lines, where its entries' fields lie in 32 (~1 KB an entry). */
typedef struct {
    uint64_t sp;                  /* e.sp; 0: empty */
    uint64_t lead_pc, lead2_pc;   /* e.pcs[lead], e.pcs[lead2] (walk_retag's leads) */
    uint32_t lead_off, lead2_off; /* e.ra_off[lead], e.ra_off[lead2] */
    struct walk_entry *e;         /* the entry: a hit reaches it without `order`'s index */
} walk_tag;

struct tp_stack_walks {
    uint64_t lo, hi; /* the thread's stack */
    /* A training step captures from the same places in the same order at every step, so
     * the walks that followed the last capture's walk before are tried first, with no key,
     * set or tag (the full compare decides, as for any candidate): `prev` is the last
     * capture's walk, `none` when it had none (sp 0: never a candidate). */
    struct walk_entry *prev;
    uint32_t seen[64]; /* a starting point is cached when it comes back: 4 byte tags a set */
    uint8_t order[WALK_SETS][WALK_WAYS]; /* entry index per way, most recently used first */
    /* tag[s][w] is e[order[s][w]]'s: kept in the order of use (moved with `order`), so a
     * capture scans its set's tags in a row, at ~5 instructions a way where the lookup
     * through `order` took 11. */
    walk_tag tag[WALK_SETS][WALK_WAYS];
    walk_entry e[WALK_SETS * WALK_WAYS];
    walk_entry none;
};

/* One multiply: its high bits depend on every bit of sp (the set, the one-off filter's
 * slot and tag come from them); the full mix cost ~12 instructions at every capture. */
static uint64_t walk_key(uint64_t sp) {
    return sp * 0x9e3779b97f4a7c15ull;
}

/* 1 when `tag` is among the set's four most recent (its bytes); else 0, and it becomes the
 * most recent. Four ways: with one, two starting points whose tags shared a byte took turns
 * evicting each other and neither was ever cached (unwound in full at every capture). */
static int seen_before(uint32_t *set, uint8_t tag) {
    uint32_t x = *set ^ (tag * 0x01010101u); /* a zero byte where the tag is */
    if ((x - 0x01010101u) & ~x & 0x80808080u)
        return 1;
    *set = *set << 8 | tag;
    return 0;
}

/* A hit at way `w` > 0 of a set's order moves one way forward (its tag with it): walks used
 * often drift to the front and stay clear of the last way, which a new walk takes. Moving it
 * to the front cost a memmove call (~20 instructions) at half the hits. */
static void order_hit(uint8_t *order, walk_tag *tags, int w) {
    uint8_t i = order[w];
    order[w] = order[w - 1];
    order[w - 1] = i;
    walk_tag t = tags[w];
    tags[w] = tags[w - 1];
    tags[w - 1] = t;
}

static tp_stack_walks *walks_make(void) {
    pthread_attr_t a;
    void *addr = NULL;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &a) != 0)
        return NULL;
    int ok = pthread_attr_getstack(&a, &addr, &size) == 0 && addr && size;
    pthread_attr_destroy(&a);
    tp_stack_walks *wc = ok ? calloc(1, sizeof *wc) : NULL;
    if (wc) {
        wc->prev = wc->none.next[0] = wc->none.next[1] = &wc->none;
        wc->lo = (uint64_t)(uintptr_t)addr;
        wc->hi = wc->lo + size;
        for (int s = 0; s < WALK_SETS; s++)
            for (int w = 0; w < WALK_WAYS; w++)
                wc->order[s][w] = (uint8_t)(s * WALK_WAYS + w);
    }
    return wc;
}

/* The number of cached pcs when `e` holds for the capture at (sp, bp) (they are e->pcs); 0
 * when not; -1 when it is a walk that is never cached (then probably, never certainly, this
 * one). */
/* Reads words of the calling thread's live stack frames that belong to other functions
 * (locals out of scope among them, when the walk does not match): deliberate, so not
 * instrumented by ASan. The slots are 8-byte aligned (return addresses and pushes). */
#define TP_READS_OTHER_FRAMES __attribute__((no_sanitize_address))

static TP_READS_OTHER_FRAMES uint64_t stack_word(const unsigned char *base, uint32_t off) {
    return *(const uint64_t *)(const void *)(base + off);
}

/* 1 when e[i] may hold for the capture at sp: its first compared slot holds its word. */
TP_READS_OTHER_FRAMES
static int tag_hit(const walk_tag *t, uint64_t sp) {
    const unsigned char *base = (const unsigned char *)(uintptr_t)sp;
    return t->sp == sp && stack_word(base, t->lead_off) == t->lead_pc &&
           stack_word(base, t->lead2_off) == t->lead2_pc;
}

/* walk_same for a walk of up to WALK_UNROLLED slots: unrolled, entered at the walk's last slot
 * (a jump table): 4 instructions a slot, no loop, no padding slots, where the loop of
 * four-slot groups took ~19 a group. Few registers: tp_stacks_capture needs none saved. */
TP_READS_OTHER_FRAMES
__attribute__((always_inline)) static inline int walk_same_short(const walk_entry *e, uint64_t sp) {
    const unsigned char *base = (const unsigned char *)(uintptr_t)sp;
#define WALK_SAME_AT(k)                                                                            \
    case k:                                                                                        \
        if (stack_word(base, e->ra_off[k]) != (uint64_t)(uintptr_t)e->pcs[k])                      \
            return 0;                                                                              \
        __attribute__((fallthrough))
    _Static_assert(WALK_UNROLLED == 32, "the cases below");
    switch (e->nslot) {
        WALK_SAME_AT(32);
        WALK_SAME_AT(31);
        WALK_SAME_AT(30);
        WALK_SAME_AT(29);
        WALK_SAME_AT(28);
        WALK_SAME_AT(27);
        WALK_SAME_AT(26);
        WALK_SAME_AT(25);
        WALK_SAME_AT(24);
        WALK_SAME_AT(23);
        WALK_SAME_AT(22);
        WALK_SAME_AT(21);
        WALK_SAME_AT(20);
        WALK_SAME_AT(19);
        WALK_SAME_AT(18);
        WALK_SAME_AT(17);
        WALK_SAME_AT(16);
        WALK_SAME_AT(15);
        WALK_SAME_AT(14);
        WALK_SAME_AT(13);
        WALK_SAME_AT(12);
        WALK_SAME_AT(11);
        WALK_SAME_AT(10);
        WALK_SAME_AT(9);
        WALK_SAME_AT(8);
        WALK_SAME_AT(7);
        WALK_SAME_AT(6);
        WALK_SAME_AT(5);
        WALK_SAME_AT(4);
        WALK_SAME_AT(3);
        WALK_SAME_AT(2);
        WALK_SAME_AT(1);
    case 0:
        return 1;
    default:
        __builtin_unreachable(); /* nslot <= WALK_UNROLLED: no bound test */
    }
#undef WALK_SAME_AT
}

/* 1 when every compared slot of `e` (a kept walk from sp) holds its word at sp: then e's
 * walk is the capture's, frame for frame (see above). */
TP_READS_OTHER_FRAMES
__attribute__((always_inline)) static inline int walk_same(const walk_entry *e, uint64_t sp) {
    if (e->nslot <= WALK_UNROLLED)
        return walk_same_short(e, sp);
    const unsigned char *base = (const unsigned char *)(uintptr_t)sp;
    /* Four slots a branch: ~4.5 instructions a slot where one compare each took 7. */
    const uint32_t *off = e->ra_off + 1, *end = off + e->ncmp;
    void *const *w = e->pcs + 1;
    do { /* a kept walk has two frames or more: ncmp >= WALK_GROUP */
        uint64_t d = (stack_word(base, off[0]) ^ (uint64_t)(uintptr_t)w[0]) |
                     (stack_word(base, off[1]) ^ (uint64_t)(uintptr_t)w[1]) |
                     (stack_word(base, off[2]) ^ (uint64_t)(uintptr_t)w[2]) |
                     (stack_word(base, off[3]) ^ (uint64_t)(uintptr_t)w[3]);
        if (d)
            return 0;
        off += WALK_GROUP, w += WALK_GROUP;
    } while (off < end);
    return 1;
}

/* After tag_hit: the number of cached pcs when `e` holds for the capture at (sp, bp) (they
 * are e->pcs); 0 when not; -1 when it is a walk that is never cached (then probably, never
 * certainly, this one). */
static int walk_hit(const walk_entry *e, uint64_t sp, uint64_t bp) {
    if (__builtin_expect(e->check, 0)) {
        if (e->need_bp && e->bp != bp)
            return 0;
        if (e->never)
            return -1;
    }
    return walk_same(e, sp) ? (int)e->n : 0;
}

/* The capture's walk is `e` (NULL: it has none): the previous one's latest successor, and
 * where the next capture starts looking. */
static void walk_follow(tp_stack_walks *wc, walk_entry *e) {
    walk_entry *p = wc->prev;
    if (e && p->next[0] != e)
        p->next[1] = p->next[0], p->next[0] = e;
    wc->prev = e ? e : &wc->none;
}

/* 1 when `e` (the thread's `none`: no walk) is the walk of the capture at sp, compared in
 * full; walks to be checked first (need_bp, never; psp 0) are left to walk_hit. */
__attribute__((always_inline)) static inline int walk_is(const walk_entry *e, uint64_t sp) {
    return e->psp == sp && walk_same_short(e, sp);
}

/* The full walk from `cur` (the capture's frame, at sp), into pcs and (when every read
 * slot lies on the thread's stack above sp) into `e`; returns the number of pcs. */
TP_READS_OTHER_FRAMES
static int walk_full(unw_cursor_t *c, uint64_t sp, uint64_t bp, const tp_stack_walks *wc,
                     void **pcs, walk_entry *e) {
    unw_cursor_t cur = *c;
    int n = 0, keep = e != NULL;
    /* The frame below: its rbp, and where that came from (0: the context's register). */
    uint64_t below_rbp = 0, below_src = 0, below_sp = 0, last_src = 0;
    walk_entry t = {.sp = sp, .bp = bp};
    do {
        unw_word_t ip = 0, csp = 0, rbp = 0;
        unw_get_reg(&cur, UNW_REG_IP, &ip);
        unw_get_reg(&cur, UNW_REG_SP, &csp);
        unw_get_reg(&cur, UNW_X86_64_RBP, &rbp);
        if (!ip)
            break;
        if (n > 0) {
            /* The frame below computed this frame's sp (its CFA) from rbp when a
             * frame-pointer rule made it rbp + 16: then the walk holds only for that rbp,
             * so the cache compares the rbp's source (the context, or the slot a frame
             * saved it to). A realigned frame (gcc's DRAP: rbp points inside the frame, the
             * CFA is read from rbp - 8) is not cached. */
            if (below_rbp + 16 == (uint64_t)csp) {
                if (n == 1 && below_rbp + 8 == sp) {
                    /* the capture's own frame pointer (Debug builds): its CFA is sp + 8,
                     * for every capture from sp */
                } else if (!below_src) {
                    /* The live register: the hit compares the one read at its start, so the
                     * walk holds only if that is the value this rule used. */
                    t.need_bp = 1;
                    if (below_rbp != bp)
                        keep = 0;
                } else if (below_src != last_src) {
                    if (t.nbp == WALK_BP_CHECKS)
                        keep = 0;
                    else {
                        t.bp_off[t.nbp] = (uint32_t)(below_src - sp);
                        t.bp_val[t.nbp++] = below_rbp;
                    }
                    last_src = below_src;
                }
            } else if (below_rbp >= below_sp + 8 && below_rbp < (uint64_t)csp &&
                       *(const uint64_t *)(uintptr_t)(below_rbp - 8) == (uint64_t)csp) {
                keep = 0; /* realigned (DRAP): the CFA was read through rbp */
            }
            uint64_t ra = (uint64_t)csp - 8;
            if (ra < sp || ra + 8 > wc->hi || ra - sp > UINT32_MAX - 8) {
                keep = 0;
                t.ra_off[n] = UINT32_MAX;
            } else
                t.ra_off[n] = (uint32_t)(ra - sp);
        }
        pcs[n] = (void *)(uintptr_t)ip;
        unw_save_loc_t loc;
        below_rbp = rbp;
        below_sp = csp;
        below_src = 0;
        if (unw_get_save_loc(&cur, UNW_X86_64_RBP, &loc) == 0 && loc.type == UNW_SLT_MEMORY) {
            uint64_t a = (uint64_t)loc.u.addr;
            /* Below sp (walk_miss's context or saved registers): the register itself, as
             * the capture's frame had it at the call. */
            if (a >= sp) {
                below_src = a;
                if (a + 8 > wc->hi || a - sp > UINT32_MAX - 8)
                    keep = 0;
            }
        }
        if (unw_is_signal_frame(&cur) > 0)
            keep = 0;
        n++;
    } while (n < CAPTURE_DEPTH && unw_step(&cur) > 0);
    /* A walk cut at CAPTURE_DEPTH is kept: the slots cover every frame it yields. */
    /* Not kept: remembered as a walk never to cache, so that the next capture from here
     * costs an unw_backtrace, not this walk again. */
    if (e && n > 1) {
        t.n = (uint32_t)n;
        t.never = !keep;
        memcpy(t.pcs, pcs, (size_t)n * sizeof *pcs);
        t.check = t.need_bp || t.never;
        uint32_t last = (uint32_t)n + t.nbp - 1; /* the rbp slots after the frames' */
        for (uint32_t j = 0; j < t.nbp; j++)
            t.pcs[n + j] = (void *)(uintptr_t)t.bp_val[j], t.ra_off[n + j] = t.bp_off[j];
        t.nslot = last;
        t.psp = t.check || last > WALK_UNROLLED ? 0 : sp;
        t.ncmp = (last + WALK_GROUP - 1) / WALK_GROUP * WALK_GROUP;
        for (uint32_t k = last + 1; k < 1 + t.ncmp; k++) /* a slot compared twice: no change */
            t.pcs[k] = t.pcs[last], t.ra_off[k] = t.ra_off[last];
        *e = t;
    }
    return n;
}

/* 1 when a capture that `o` holds for reads, at `e`'s frame k's slot, a word other than
 * e's: `o` has a slot at that address (return address or saved rbp) holding another word. */
static int walk_differs_at(const walk_entry *e, uint32_t k, const walk_entry *o) {
    uint32_t off = e->ra_off[k];
    uint64_t pc = (uint64_t)(uintptr_t)e->pcs[k];
    for (uint32_t j = 1; j < o->n; j++)
        if (o->ra_off[j] == off)
            return (uint64_t)(uintptr_t)o->pcs[j] != pc;
    for (uint32_t j = 0; j < o->nbp; j++)
        if (o->bp_off[j] == off)
            return o->bp_val[j] != pc;
    return 0;
}

/* A frame of `e` to compare first (its tag): of the frames whose slot lies on the stack, the
 * one where the walks of its set from the same stack pointer differ from it most often (the
 * earliest of those), counting only those that agree with it at frame `first` (0: all), so
 * that a capture one of them holds for fails there at once. One caller launching from
 * several places shares every frame but one or two with its neighbours (a 2 x 2 of call
 * sites at two depths needs two frames to tell its four walks apart); a lead shared with a
 * neighbour sends that neighbour's captures on to compare all their slots here. Any frame
 * whose slot lies on the stack is correct (all of them in a cached walk): tags only order
 * the work. 0 when no slot does. */
static uint32_t walk_lead(const walk_entry *e, const tp_stack_walks *wc, const uint8_t *order,
                          uint32_t first) {
    /* Among frames that tell as many apart, the one nearest `pref`: the app's first frame's
     * caller (its caller for the second lead). Walks yet to come differ there more often than
     * in the collector's frames, which every capture shares: a walk never cached tagged there
     * took every later capture from its stack pointer (a path not walked yet, too) to
     * unw_backtrace for good. */
    int app = skip_self(e->pcs, (int)e->n);
    int pref = app + (first ? 2 : 1);
    pref = pref < (int)e->n ? pref : (int)e->n - 1;
    uint32_t best = 0;
    int best_score = INT32_MIN;
    for (uint32_t k = 1; k < e->n; k++) {
        if (e->ra_off[k] == UINT32_MAX)
            continue;
        int d = 0;
        for (int w = 0; w < WALK_WAYS; w++) {
            const walk_entry *o = &wc->e[order[w]];
            if (o != e && o->sp == e->sp && !(first && walk_differs_at(e, first, o)))
                d += walk_differs_at(e, k, o);
        }
        int score = d * (CAPTURE_DEPTH + 1) - abs((int)k - pref);
        if (score > best_score)
            best = k, best_score = score;
    }
    return best;
}

/* Sets the tag of every walk of the set `order` from stack pointer `sp` (a new walk from there
 * changes which of their frames tell them apart best). */
static void walk_retag(tp_stack_walks *wc, const uint8_t *order, walk_tag *tags, uint64_t sp) {
    for (int w = 0; w < WALK_WAYS; w++) {
        uint8_t i = order[w];
        walk_entry *o = &wc->e[i];
        if (o->sp != sp)
            continue;
        /* the frames compared first: where it parts from its neighbours */
        uint32_t lead = walk_lead(o, wc, order, 0);
        uint32_t lead2 = lead ? walk_lead(o, wc, order, lead) : 0;
        if (lead)
            tags[w] = (walk_tag){o->sp,
                                 (uint64_t)(uintptr_t)o->pcs[lead],
                                 (uint64_t)(uintptr_t)o->pcs[lead2],
                                 o->ra_off[lead],
                                 o->ra_off[lead2],
                                 o};
        else
            *o = (walk_entry){.next = {&wc->none, &wc->none}}, tags[w] = (walk_tag){0};
    }
}

__attribute__((noinline, cold)) static void verify_hit(void *const *pcs, int n) {
    void *ref[CAPTURE_DEPTH];
    int m = unw_backtrace(ref, CAPTURE_DEPTH);
    int a = skip_self(pcs, n), b = skip_self(ref, m);
    int same = n - a == m - b && !memcmp(pcs + a, ref + b, (size_t)(n - a) * sizeof *pcs);
    atomic_fetch_add(&g_verify_hits, 1);
    if (!same)
        atomic_fetch_add(&g_verify_bad, 1);
}

/* The capture's starting point: a hit needs only these two, and unw_getcontext costs more
 * than the rest of a hit (it saves the x87 environment with fnstenv), so only a full walk
 * takes the context. sp is the calling function's rsp at its entry (its CFA - 8: the caller's
 * return-address slot), wherever its prologue (if any) has moved rsp. bp is the caller's rbp:
 * the register, or, where the function set up a frame pointer of its own (rbp == sp - 8, as
 * in the Debug builds), the value its prologue pushed there. The walks compare it only where
 * walk_full found it to be the value a frame-pointer rule used. */
#define WALK_START(sp, bp)                                                                         \
    do {                                                                                           \
        (sp) = (uint64_t)(uintptr_t)__builtin_dwarf_cfa() - 8;                                     \
        __asm__ volatile("mov %%rbp, %0" : "=r"(bp));                                              \
        if ((bp) == (sp)-8)                                                                        \
            (bp) = stack_word((const unsigned char *)(uintptr_t)(bp), 0);                          \
    } while (0)

/* backtrace_cached's miss (the capture at sp, bp found no walk), apart from it so that a hit
 * pays neither for its locals (a context, a cursor, an entry: ~3 KB) nor for the registers
 * they need: the pcs, and the walk kept when it can be. sp and bp are what tp_stacks_capture
 * read at its entry (no frame yet: sp + 8 is its CFA). The walk starts in the frame below
 * tp_stacks_capture's caller (capture_slow's or tp_stacks_capture's, found by that CFA; else
 * the walk is not kept), so its slots are the caller's and above, all at sp or above. A
 * frame between saved the caller's rbp below sp: walk_full then takes it as the live
 * register (the value read at sp, which the entry had not changed) and keeps the walk only
 * if it is that value. Never a tail call: the steps back start from here. */
__attribute__((noinline)) static int walk_miss(void **pcs, tp_stack_walks *wc, uint64_t sp,
                                               uint64_t bp, uint64_t key) {
    busy_enter(); /* a slow path (see tp_stacks_capture) */
    if (!seen_before(&wc->seen[(key >> 54) % 64], (uint8_t)(key >> 40 | 1))) {
        walk_follow(wc, NULL);
        return unw_backtrace(pcs, CAPTURE_DEPTH); /* first time here: no walk for a one-off */
    }
    unw_context_t uc;
    unw_cursor_t cur, at, up;
    if (unw_getcontext(&uc) < 0 || unw_init_local(&cur, &uc) < 0 || unw_step(&cur) <= 0) {
        walk_follow(wc, NULL);
        return unw_backtrace(pcs, CAPTURE_DEPTH);
    }
    /* The capture's frame: the one whose caller's sp is sp + 8, tp_stacks_capture's CFA
     * (capture_slow's when it was a tail call, else tp_stacks_capture's own). Not found (the
     * hit did not read sp at its entry): the walk is not kept. */
    int found = 0;
    at = cur;
    for (int i = 0; i < 3 && !found; i++) {
        unw_word_t csp = 0;
        up = at;
        if (unw_step(&up) <= 0 || unw_get_reg(&up, UNW_REG_SP, &csp) < 0 || csp > sp + 8)
            break;
        found = csp == sp + 8;
        if (!found)
            at = up;
    }
    walk_entry e = {0};
    int n = walk_full(found ? &at : &cur, sp, bp, wc, pcs, found ? &e : NULL);
    if (e.sp) { /* into the least recently used way, now the first */
        uint8_t *order = wc->order[key >> 60];
        walk_tag *tags = wc->tag[key >> 60];
        uint8_t i = order[WALK_WAYS - 1];
        memmove(order + 1, order, WALK_WAYS - 1);
        memmove(tags + 1, tags, (WALK_WAYS - 1) * sizeof *tags);
        order[0] = i;
        wc->e[i] = e;
        wc->e[i].next[0] = wc->e[i].next[1] = &wc->none; /* no successor yet */
        walk_retag(wc, order, tags, e.sp);
        walk_follow(wc, wc->e[i].sp ? &wc->e[i] : NULL);
    } else
        walk_follow(wc, NULL);
    return n;
}

/* The calling thread's pcs when tp_stacks_capture's predictions did not serve it, from its
 * starting point (sp, bp: 0 when it had no walk cache to read them for): in `pcs`, or, on a
 * verified walk's hit, in (*hit)->pcs (not copied: the caller may need only the walk's stack
 * id). Returns their number. */
__attribute__((always_inline)) static inline int
backtrace_cached(void **pcs, tp_stack_cache *cache, walk_entry **hit, uint64_t sp, uint64_t bp) {
    *hit = NULL;
    if (!cache)
        return backtrace_slow(pcs);
    if (!cache->walks && ++cache->captures == WALK_AFTER) {
        cache->walks = walks_make();
        if (!cache->walks)
            cache->captures = UINT32_MAX / 2; /* unknown stack: never again */
    }
    tp_stack_walks *wc = cache->walks;
    if (!wc || !sp)
        return backtrace_slow(pcs);
    if (sp < wc->lo || sp >= wc->hi)
        return backtrace_slow(pcs); /* a signal stack, a coroutine's */
    /* The predictions of more than WALK_UNROLLED slots (psp 0: tp_stacks_capture leaves them
     * here), compared with the loop before the set (~60 instructions less a capture). */
    walk_entry *p = wc->prev;
    for (int i = 0; i < 2; i++) {
        walk_entry *c = p->next[i];
        if (c->sp == sp && !c->check && c->nslot > WALK_UNROLLED && walk_same(c, sp)) {
            walk_follow(wc, c);
            *hit = c;
            return (int)c->n;
        }
    }
    uint64_t key = walk_key(sp);
    uint8_t *order = wc->order[key >> 60];
    walk_tag *tags = wc->tag[key >> 60];
    _Static_assert(WALK_SETS == 16, "the set is the key's top 4 bits");
    for (int w = 0; w < WALK_WAYS; w++) {
        if (!tag_hit(&tags[w], sp))
            continue;
        walk_entry *e = tags[w].e;
        int n = walk_hit(e, sp, bp);
        if (n < 0) {
            walk_follow(wc, NULL);
            return backtrace_slow(pcs);
        }
        if (n) {
            if (w)
                order_hit(order, tags, w);
            walk_follow(wc, e);
            *hit = e;
            return n;
        }
    }
    int n = walk_miss(pcs, wc, sp, bp, key);
    /* Not a tail call: walk_miss unwinds from its caller's frame. */
    __asm__ volatile("" : "+r"(n));
    return n;
}
#else
typedef struct {
    void *pcs[CAPTURE_DEPTH];
    uint32_t n, stack_id;
} walk_entry;

static int backtrace_cached(void **pcs, tp_stack_cache *cache, walk_entry **hit, uint64_t sp,
                            uint64_t bp) {
    (void)cache, (void)sp, (void)bp;
    *hit = NULL;
    return backtrace_slow(pcs);
}

static void verify_hit(void *const *pcs, int n) { /* never called: no walk hits here */
    (void)pcs, (void)n;
}
#endif

void tp_stacks_cache_release(tp_stack_cache *cache) {
    free(cache->walks);
    cache->walks = NULL;
}

void tp_stacks_report(void) {
    if (g_verify)
        fprintf(stderr, "trainprof: stack walks verified: %llu cached, %llu differed\n",
                (unsigned long long)atomic_load(&g_verify_hits),
                (unsigned long long)atomic_load(&g_verify_bad));
}

/* The rest of a capture after its native pcs: Python frames, the key, the thread's cache and,
 * on a miss, interning. Apart from tp_stacks_capture so that a hit does not pay for this
 * frame's arrays and saved registers. */
__attribute__((noinline)) static uint32_t capture_rest(tp_writer *w, tp_stack_cache *cache,
                                                       void *const *buf, int n, walk_entry *hit) {
    /* The calling thread's Python frames (none outside CPython): part of the cache key, since
     * one native stack runs many Python lines. */
    tp_pyframe py[TP_PYFRAMES_MAX];
    uint64_t py_hash;
    uint32_t n_py = tp_pyframes_walk(py, TP_PYFRAMES_MAX, &py_hash);
    if (hit && !n_py && hit->stack_id)
        return hit->stack_id;
    void *const *pcs = hit ? hit->pcs : buf;
    int skip = skip_self(pcs, n);
    if (skip >= n)
        return 0;
    uint32_t depth = (uint32_t)(n - skip);
    uint64_t h = pcs_key(pcs + skip, depth, depth ^ py_hash);
    uint32_t id = cache ? cache_find(cache, h) : 0;
    if (!id) {
        uint64_t frames[CAPTURE_DEPTH], merged[TP_STACK_MAX_FRAMES];
        const uint64_t *out = frames;
        tp_stacks_encode(w, pcs + skip, depth, frames);
        if (n_py) {
            depth = tp_pyframes_merge(w, pcs + skip, frames, depth, py, n_py, merged,
                                      TP_STACK_MAX_FRAMES);
            out = merged;
        }
        if (tp_writer_intern_stack(w, out, depth, &id) != TP_OK)
            return 0;
        if (cache && id)
            cache_put(cache, h, id);
    }
    if (hit && !n_py && !g_verify) /* verified hits take the test above, without the id */
        hit->stack_id = id;
    return id;
}

/* tp_stacks_capture past its predictions: `hit` the walk one served (its id not kept, or
 * Python frames to walk), else NULL, and the starting point it read (see backtrace_cached). */
__attribute__((noinline)) static uint32_t capture_slow(tp_writer *w, tp_stack_cache *cache,
                                                       walk_entry *hit, uint64_t sp, uint64_t bp) {
    void *buf[CAPTURE_DEPTH];
    int n = hit ? (int)hit->n : backtrace_cached(buf, cache, &hit, sp, bp);
    /* Every way through a capture but a verified walk with its id is busy, from its first
     * slow call (backtrace_slow and walk_miss enter, without a hit) to the end. */
    if (hit) {
        /* Under TRAINPROF_STACKS_VERIFY no walk keeps its id (capture_rest), so the id's test
         * also sends every hit here, to the verify: none at each hit. */
        if (hit->stack_id && tp_pyframes_none())
            return hit->stack_id;
        if (g_verify)
            verify_hit(hit->pcs, n);
        busy_enter();
    }
    uint32_t id = capture_rest(w, cache, buf, n, hit);
    busy_leave();
    return id;
}

/* A training step captures from the same places in the same order at every step: the walks
 * that followed the last capture's walk before are tried first, here, with no key, set or
 * tag (the full compare decides), in a function with no frame and no saved registers (the
 * rest, its buffer among them, is capture_slow's; ~20 instructions a capture less). A
 * verified walk without Python frames is always the same stack: its id, kept in the walk,
 * skips the key and the look-up (and, in a process without a CPython to walk, the call that
 * would say so). It takes no lock, so it is not busy (see capture_slow). sp is read at the
 * entry, before anything moves rsp (walk_miss keeps a walk only if sp + 8 is this frame's
 * CFA): the starting point of every walk kept. */
uint32_t tp_stacks_capture(tp_writer *w, tp_stack_cache *cache) {
#if defined(__x86_64__)
    uint64_t sp = 0, bp = 0;
    walk_entry *e = NULL;
    tp_stack_walks *wc = cache ? cache->walks : NULL;
    if (wc) {
        WALK_START(sp, bp);
        /* A walk's sp is on the thread's stack (checked before one is kept), so a
         * candidate's sp equal to this one says this one is too. */
        walk_entry *p = wc->prev;
        e = p->next[0];
        if (walk_is(e, sp))
            wc->prev = e; /* p->next[0] is e already */
        else if (walk_is(e = p->next[1], sp))
            walk_follow(wc, e);
        else
            e = NULL;
        if (e && e->stack_id && tp_pyframes_none())
            return e->stack_id;
    }
    return capture_slow(w, cache, e, sp, bp);
#else
    return capture_slow(w, cache, NULL, 0, 0);
#endif
}
