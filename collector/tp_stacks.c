/* tp_stacks: unw_backtrace + per-thread cache + module map (see tp_stacks.h). */
#include "tp_stacks.h"

#define UNW_LOCAL_ONLY
#include <elf.h>
#include <libunwind.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
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

tp_status tp_stacks_init(tp_writer *w, const void *self_fn) {
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

uint32_t tp_stacks_capture(tp_writer *w, tp_stack_cache *cache) {
    void *pcs[CAPTURE_DEPTH];
    int n = unw_backtrace(pcs, CAPTURE_DEPTH);
    int skip = 0;
    while (skip < n && (uint64_t)(uintptr_t)pcs[skip] >= g_self_lo &&
           (uint64_t)(uintptr_t)pcs[skip] < g_self_hi)
        skip++;
    if (skip >= n)
        return 0;
    uint32_t depth = (uint32_t)(n - skip);
    /* The calling thread's Python frames (none outside CPython): part of the cache key, since
     * one native stack runs many Python lines. */
    tp_pyframe py[TP_PYFRAMES_MAX];
    uint64_t py_hash;
    uint32_t n_py = tp_pyframes_walk(py, TP_PYFRAMES_MAX, &py_hash);
    uint64_t h = pcs_key(pcs + skip, depth, depth ^ py_hash);
    uint32_t hit = cache ? cache_find(cache, h) : 0;
    if (hit)
        return hit;
    uint64_t frames[CAPTURE_DEPTH], merged[TP_STACK_MAX_FRAMES];
    const uint64_t *out = frames;
    tp_stacks_encode(w, pcs + skip, depth, frames);
    if (n_py) {
        depth =
            tp_pyframes_merge(w, pcs + skip, frames, depth, py, n_py, merged, TP_STACK_MAX_FRAMES);
        out = merged;
    }
    uint32_t id = 0;
    if (tp_writer_intern_stack(w, out, depth, &id) != TP_OK)
        return 0;
    if (cache && id)
        cache_put(cache, h, id);
    return id;
}
