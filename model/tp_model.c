/* tp_model: columnar event tables, the string pool, and the indexes built once after load.
 * Out of memory aborts (STYLE.md rule 5: the analyzer may), so building never fails. */
#include "tp_model.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "tp_hash.h"
#include "tp_mem.h"
#include "tp_par.h"
#include "tp_sort.h"

/* ---------------------------------------------------------------- memory */

/* Resizes a column to `cap` elements (tp_mem's checked arithmetic; aborts when out of memory). */
#define GROW(ptr, cap) ((ptr) = tp_mem_xrealloc((ptr), (cap), sizeof *(ptr)))

/* Growing tables leave the heap early. A doubling in the heap copies the column into a new
 * block and leaves the old one behind as free room that the import had written, resident until
 * the malloc_trim after it: at the end of hta_trace_diff_test's import (68 k rows) 0.65 MiB of
 * the heap's 1.6 MiB was such room. Past TABLE_HEAP_ROWS rows a table's columns therefore go
 * straight to blocks of TP_MEM_MAPPED_MIN bytes or more (every column, the 1-byte ones too):
 * mapped, they grow by remapping without a copy, and the room past the rows written costs
 * address space, not memory. The import's high water fell 9.3 -> 8.8 MiB on
 * hta_trace_diff_test, 9.4 -> 8.6 on hta_negative_queue_length (gdb phases). A small table
 * (a short trace's, a side table's) stays in the heap, sharing its pages: a mapped column
 * costs a few system calls (map, the finish's fit, unmap), ~0.2 ms a table of ~15 columns,
 * which param_dlrm_8rank's eight tables of 2.5 k rows showed past 1,024 rows (report CPU 24.4
 * -> 25.7 ms). Past 4,096 the room left behind is at most ~170 KB (about 0.1 MiB more at the
 * end of hta_trace_diff_test's import than with 1,024). */
#define TABLE_HEAP_ROWS 4096

/* The capacity that a table whose narrowest column has `size`-byte elements grows to from
 * `cap` to hold `need` rows: tp_mem_next_cap's, or TP_MEM_MAPPED_MIN bytes of that column
 * when that is more and the table is past TABLE_HEAP_ROWS (see above). */
static size_t table_next_cap(size_t cap, size_t need, size_t size) {
    size_t n = tp_mem_next_cap(cap, need);
    size_t mapped = (TP_MEM_MAPPED_MIN + size - 1) / size;
    return n > TABLE_HEAP_ROWS && n < mapped ? mapped : n;
}

/* TP_MEM_XGROW with table_next_cap: for the side tables that grow with the rows. */
#define TABLE_XGROW(arr, cap, need)                                                                \
    do {                                                                                           \
        if ((need) > (cap)) {                                                                      \
            (cap) = table_next_cap((cap), (need), sizeof *(arr));                                  \
            GROW(arr, cap);                                                                        \
        }                                                                                          \
    } while (0)

/* ---------------------------------------------------------------- string pool */

/* Strings live in large blocks so their addresses never move; ids index `strs`. An open
 * addressing table of ids (0 = empty slot) finds an existing string by hash. */
struct tp_strpool {
    char **blocks;
    size_t n_blocks;
    size_t used, block_cap; /* of the current block */
    const char **strs;
    uint32_t *lens;
    uint64_t *hashes;
    uint32_t n, cap;
    uint32_t *table;
    size_t mask;
};

#define POOL_BLOCK (1u << 20)
#define POOL_SEED 0x7470u

static tp_strpool *pool_new(void) {
    tp_strpool *p = tp_mem_xcalloc(1, sizeof *p);
    p->cap = 1024;
    p->strs = tp_mem_xcalloc(p->cap, sizeof *p->strs);
    p->lens = tp_mem_xcalloc(p->cap, sizeof *p->lens);
    p->hashes = tp_mem_xcalloc(p->cap, sizeof *p->hashes);
    p->strs[0] = "";
    p->n = 1;
    p->mask = 2047;
    p->table = tp_mem_xcalloc(p->mask + 1, sizeof *p->table);
    return p;
}

static void pool_free(tp_strpool *p) {
    if (!p)
        return;
    for (size_t i = 0; i < p->n_blocks; i++)
        free(p->blocks[i]);
    free(p->blocks);
    free(p->strs);
    free(p->lens);
    free(p->hashes);
    free(p->table);
    free(p);
}

static char *pool_store(tp_strpool *p, const char *s, size_t len) {
    if (p->n_blocks == 0 || p->used + len + 1 > p->block_cap) {
        size_t cap = len + 1 > POOL_BLOCK ? len + 1 : POOL_BLOCK;
        GROW(p->blocks, p->n_blocks + 1);
        p->blocks[p->n_blocks++] = tp_mem_xalloc(cap, 1);
        p->block_cap = cap;
        p->used = 0;
    }
    char *dst = p->blocks[p->n_blocks - 1] + p->used;
    memcpy(dst, s, len);
    dst[len] = 0;
    p->used += len + 1;
    return dst;
}

static void pool_rehash(tp_strpool *p) {
    p->mask = p->mask * 2 + 1;
    free(p->table);
    p->table = tp_mem_xcalloc(p->mask + 1, sizeof *p->table);
    for (uint32_t id = 1; id < p->n; id++) {
        size_t i = p->hashes[id] & p->mask;
        while (p->table[i])
            i = (i + 1) & p->mask;
        p->table[i] = id;
    }
}

/* Slot of `s` in the table: holds its id, or 0 where it would go. */
static size_t pool_slot(const tp_strpool *p, const char *s, size_t len, uint64_t h) {
    size_t i = h & p->mask;
    for (uint32_t id; (id = p->table[i]) != 0; i = (i + 1) & p->mask)
        if (p->hashes[id] == h && p->lens[id] == len && !memcmp(p->strs[id], s, len))
            break;
    return i;
}

uint64_t tp_model_str_hash(const char *s, size_t len) {
    return tp_hash_table_bytes(s, len, POOL_SEED);
}

uint32_t tp_model_intern(tp_model *m, const char *s, size_t len) {
    return len ? tp_model_intern_hashed(m, s, len, tp_hash_table_bytes(s, len, POOL_SEED)) : 0;
}

/* Adds `s` (not in the pool) at table slot `slot` (pool_slot's empty one); returns its id. */
static __attribute__((noinline)) uint32_t pool_add(tp_strpool *p, const char *s, size_t len,
                                                   uint64_t h, size_t slot) {
    if (p->n == p->cap) {
        p->cap *= 2;
        GROW(p->strs, p->cap);
        GROW(p->lens, p->cap);
        GROW(p->hashes, p->cap);
    }
    uint32_t id = p->n++;
    p->strs[id] = pool_store(p, s, len);
    p->lens[id] = (uint32_t)len;
    p->hashes[id] = h;
    p->table[slot] = id;
    if ((size_t)p->n * 2 > p->mask)
        pool_rehash(p);
    return id;
}

/* pool_slot's probe written out here, the new string's insertion out of line: a Kineto import
 * interns each event's name and category (~430 k on xdit, nearly all found), and the two calls'
 * entries and exits were ~20 of the ~60 instructions of a found string. */
uint32_t tp_model_intern_hashed(tp_model *m, const char *s, size_t len, uint64_t h) {
    tp_strpool *p = m->strings;
    if (len == 0)
        return 0;
    assert(h == tp_hash_table_bytes(s, len, POOL_SEED));
    size_t i = h & p->mask;
    for (uint32_t id; (id = p->table[i]) != 0; i = (i + 1) & p->mask)
        if (p->hashes[id] == h && p->lens[id] == len && !memcmp(p->strs[id], s, len))
            return id;
    return pool_add(p, s, len, h, i);
}

uint32_t tp_model_find_str(const tp_model *m, const char *s) {
    size_t len = strlen(s);
    if (len == 0)
        return 0;
    uint64_t h = tp_hash_table_bytes(s, len, POOL_SEED);
    return m->strings->table[pool_slot(m->strings, s, len, h)];
}

size_t tp_model_strings_bytes(const tp_model *m) {
    const tp_strpool *p = m->strings;
    size_t b = sizeof *p + p->n_blocks * (sizeof *p->blocks + POOL_BLOCK);
    b += (size_t)p->cap * (sizeof *p->strs + sizeof *p->lens + sizeof *p->hashes);
    return b + (p->mask + 1) * sizeof *p->table;
}

uint32_t tp_model_n_strings(const tp_model *m) {
    return m->strings->n;
}

size_t tp_model_str_len(const tp_model *m, uint32_t id) {
    return m && id < m->strings->n ? m->strings->lens[id] : 0;
}

const char *tp_model_str(const tp_model *m, uint32_t id) {
    if (!m || id >= m->strings->n)
        return "";
    return m->strings->strs[id];
}

/* ---------------------------------------------------------------- categories */

static const char *const cat_names[] = {
#define TP_CAT_NAME(name, text) text,
    TP_CAT_TABLE(TP_CAT_NAME)
#undef TP_CAT_NAME
};

const char *tp_cat_name(tp_cat c) {
    return (unsigned)c < TP_CAT_COUNT ? cat_names[c] : "other";
}

const char *tp_skip_reason(tp_skip s) {
    static const char *const text[] = {
#define TP_SKIP_TEXT(name, key, t) t,
        TP_SKIP_TABLE(TP_SKIP_TEXT)
#undef TP_SKIP_TEXT
    };
    return (unsigned)s < TP_SKIP_COUNT ? text[s] : "an impossible value";
}

const char *tp_skip_key(tp_skip s) {
    static const char *const keys[] = {
#define TP_SKIP_KEY(name, key, t) key,
        TP_SKIP_TABLE(TP_SKIP_KEY)
#undef TP_SKIP_KEY
    };
    return (unsigned)s < TP_SKIP_COUNT ? keys[s] : "other";
}

uint64_t tp_rank_skipped(const tp_rank *r) {
    uint64_t n = 0;
    for (int s = 0; s < TP_SKIP_COUNT; s++)
        n += r->n_skipped[s];
    return n;
}

const char *tp_devtype_name(tp_devtype d) {
    switch (d) {
    case TP_DEVTYPE_NVIDIA:
        return "NVIDIA GPU";
    case TP_DEVTYPE_AMD:
        return "AMD GPU";
    case TP_DEVTYPE_CPU_DEVICE:
        return "CPU device";
    default:
        return "CPU only";
    }
}

/* Calls that put work on a GPU queue, CUDA and HIP. HTA's launch statistics use a subset
 * (cudaLaunchKernel, cudaLaunchKernelExC, cudaMemcpyAsync, cudaMemsetAsync), by name. */
static int is_launch_name(const char *s) {
    static const char *const names[] = {"cudaLaunchKernel",
                                        "cudaLaunchKernelExC",
                                        "cuLaunchKernel",
                                        "cuLaunchKernelEx",
                                        "cudaLaunchCooperativeKernel",
                                        "cudaMemcpyAsync",
                                        "cudaMemsetAsync",
                                        "cudaMemcpy",
                                        "cudaMemset",
                                        "cudaGraphLaunch",
                                        "cuGraphLaunch",
                                        "hipLaunchKernel",
                                        "hipExtLaunchKernel",
                                        "hipModuleLaunchKernel",
                                        "hipExtModuleLaunchKernel",
                                        "hipMemcpyAsync",
                                        "hipMemsetAsync",
                                        "hipMemcpyWithStream",
                                        "hipGraphLaunch",
                                        "hipMemcpy",
                                        "hipMemset"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(s, names[i]))
            return 1;
    return 0;
}

uint8_t tp_model_name_flags(const char *s) {
    return (uint8_t)((is_launch_name(s) ? TP_EVF_LAUNCH : 0) |
                     (!strncmp(s, "ProfilerStep#", 13) ? TP_EVF_PROFILER_STEP : 0) |
                     (strstr(s, "nccl") ? TP_EVF_NCCL : 0));
}

/* ---------------------------------------------------------------- model */

tp_model *tp_model_new(void) {
    tp_model *m = tp_mem_xcalloc(1, sizeof *m);
    m->strings = pool_new();
    return m;
}

static void buckets_free(tp_buckets *b) {
    free(b->key);
    free(b->key2);
    free(b->off);
    free(b->rows);
    memset(b, 0, sizeof *b);
}

static void events_free(tp_events *e) {
#define FREE_COL(c, none) free(e->c);
    TP_EV_ALL(FREE_COL)
#undef FREE_COL
#define FREE_WIDE(w) free(e->w.row), free(e->w.val);
    TP_EV_WIDES(FREE_WIDE)
#undef FREE_WIDE
#define FREE_SPARSE(c, sp, none, by_corr, grows)                                                   \
    free(e->sp.bits), free(e->sp.rank), free(e->sp.val);
    TP_EV_SPARSE(FREE_SPARSE)
#undef FREE_SPARSE
    free(e->external_id_corr);
    free(e->places.v), free(e->places.slots);
    free(e->copies);
    memset(e, 0, sizeof *e);
}

static void memev_free(tp_memevents *e) {
#define FREE_COL(c, none) free(e->c);
    TP_MEMEV_ALL(FREE_COL)
#undef FREE_COL
#define FREE_WIDE(w) free(e->w.row), free(e->w.val);
    TP_MEMEV_WIDES(FREE_WIDE)
#undef FREE_WIDE
    free(e->places.v), free(e->places.slots);
    free(e->totals);
    memset(e, 0, sizeof *e);
}

static void rank_free(tp_rank *r) {
    for (size_t i = 0; i < r->n_procs; i++)
        free((char *)r->procs[i].file);
    free(r->procs);
    free((char *)r->file);
    free(r->devices);
    free(r->env);
    events_free(&r->ev);
    memev_free(&r->mem);
    free(r->by_corr);
    free(r->corr_dir);
    buckets_free(&r->streams);
    buckets_free(&r->threads);
    buckets_free(&r->cats);
    free(r->tn_pid), free(r->tn_tid), free(r->tn_name);
    free(r->samples.ts), free(r->samples.pid), free(r->samples.tid), free(r->samples.stack);
    free(r->samples.cpu_ns), free(r->samples.period_ns), free(r->samples.flags);
    free(r->stacks.v), free(r->stacks.frame_module), free(r->stacks.frame_addr);
    free(r->stacks.frame_next), free(r->stacks.modules), free(r->stacks.pycodes);
}

void tp_model_close(tp_model *m) {
    if (!m)
        return;
    for (size_t i = 0; i < m->n_ranks; i++)
        rank_free(&m->ranks[i]);
    free(m->ranks);
    pool_free(m->strings);
    tp_scratch_close(m->scratch);
    free(m);
}

tp_rank *tp_model_add_rank(tp_model *m, const char *file) {
    GROW(m->ranks, m->n_ranks + 1);
    tp_rank *r = &m->ranks[m->n_ranks++];
    memset(r, 0, sizeof *r);
    r->rank = -1;
    r->world_size = -1;
    r->file = strdup(file ? file : "");
    if (!r->file)
        abort();
    return r;
}

/* Index of (pid, tid) in r's thread names; exact_only 0 also accepts another pid. -1: none. */
static long thread_name_index(const tp_rank *r, int64_t pid, int64_t tid, int exact_only) {
    long any = -1;
    for (size_t i = 0; i < r->n_thread_names; i++)
        if (r->tn_tid[i] == tid) {
            if (r->tn_pid[i] == pid)
                return (long)i;
            if (any < 0 && !exact_only)
                any = (long)i;
        }
    return any;
}

void tp_rank_set_thread_name(tp_model *m, tp_rank *r, int64_t pid, int64_t tid, const char *name,
                             size_t len) {
    if (!len)
        return;
    uint32_t id = tp_model_intern(m, name, len);
    long i = thread_name_index(r, pid, tid, 1);
    if (i < 0) {
        i = (long)r->n_thread_names++;
        GROW(r->tn_pid, r->n_thread_names), GROW(r->tn_tid, r->n_thread_names);
        GROW(r->tn_name, r->n_thread_names);
        r->tn_pid[i] = pid, r->tn_tid[i] = tid;
    }
    r->tn_name[i] = id;
}

const char *tp_rank_thread_name(const tp_model *m, const tp_rank *r, int64_t pid, int64_t tid) {
    long i = thread_name_index(r, pid, tid, 0);
    return i < 0 ? NULL : tp_model_str(m, r->tn_name[i]);
}

void tp_model_pop_rank(tp_model *m) {
    if (m->n_ranks > 0)
        rank_free(&m->ranks[--m->n_ranks]);
}

/* ---------------------------------------------------------------- optional columns */

/* Creates optional column *col for e->cap rows, rows [0, n) "none" as `none` (one element of
 * `elem` bytes) says. */
static void *opt_create(const tp_events *e, size_t elem, const void *none, size_t n) {
    char *col = tp_mem_xalloc(e->cap ? e->cap : 1, elem);
    for (size_t i = 0; i < n; i++)
        memcpy(col + i * elem, none, elem);
    return col;
}

/* The bitmap word of rows [base, base + 64) of column `c` (n rows): bit j set when row
 * base + j is not `none`. SSE2 (x86-64's baseline) compares four rows at a time: ~1.8
 * instructions a row, against ~7 for the scalar loop (the tail word, other targets). */
static inline uint64_t sparse_word(const uint32_t *c, size_t base, size_t n, uint32_t none) {
    uint64_t b = 0;
#ifdef __SSE2__
    if (base + 64 <= n) {
        const __m128i nv = _mm_set1_epi32((int)none);
        for (size_t j = 0; j < 64; j += 4) {
            __m128i x = _mm_loadu_si128((const void *)(c + base + j));
            unsigned m = (unsigned)_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(x, nv)));
            b |= (uint64_t)(~m & 15u) << j;
        }
        return b;
    }
#endif
    for (size_t i = base; i < n && i < base + 64; i++)
        b |= (uint64_t)(c[i] != none) << (i - base);
    return b;
}

/* The bitmap word of rows [base, base + 64) (n rows) whose `c` is their correlation code
 * `corr` and not TP_EV_U32_WIDE (their value is their correlation id then, but for its high
 * half: see corr_rows). SSE2 as sparse_word: ~2.5 instructions a row. */
static inline uint64_t corr_word(const uint32_t *c, const uint32_t *corr, size_t base, size_t n) {
    uint64_t b = 0;
#ifdef __SSE2__
    if (base + 64 <= n) {
        const __m128i wide = _mm_set1_epi32((int)TP_EV_U32_WIDE);
        for (size_t j = 0; j < 64; j += 4) {
            __m128i x = _mm_loadu_si128((const void *)(c + base + j));
            __m128i y = _mm_loadu_si128((const void *)(corr + base + j));
            __m128i eq = _mm_andnot_si128(_mm_cmpeq_epi32(x, wide), _mm_cmpeq_epi32(x, y));
            b |= (uint64_t)(unsigned)_mm_movemask_ps(_mm_castsi128_ps(eq)) << j;
        }
        return b;
    }
#endif
    for (size_t i = base; i < n && i < base + 64; i++)
        b |= (uint64_t)(c[i] == corr[i] && c[i] != TP_EV_U32_WIDE) << (i - base);
    return b;
}

/* Of the rows set in bits[0, words) (values of column `c`, the External id), those whose
 * value is their correlation id: a bitmap of them, cleared from `bits` and taken off *k, when
 * that pays (8 bytes per 64 rows against the 4 a row it saves); else NULL, nothing changed.
 * (A step per value was ~10 instructions: 1.4 M on df_index_resolver.) */
static uint64_t *corr_rows(const tp_events *e, const uint32_t *c, uint64_t *bits, size_t words,
                           size_t *k) {
    uint64_t *same = tp_mem_xalloc(words ? words : 1, sizeof *same);
    size_t s = 0;
    for (size_t w = 0; w < words; w++) {
        uint64_t b = bits[w] & corr_word(c, e->corr32, w * 64, e->n);
        for (uint64_t t = e->corr_hi_any ? b : 0; t; t &= t - 1) { /* the high halves too */
            size_t i = w * 64 + (size_t)__builtin_ctzll(t);
            if (tp_ev_corr(e, i) != c[i])
                b &= ~(t & -t);
        }
        same[w] = b;
        s += (size_t)__builtin_popcountll(b);
    }
    if (s * sizeof *c <= words * sizeof *same) {
        free(same);
        return NULL;
    }
    for (size_t w = 0; w < words; w++)
        bits[w] &= ~same[w];
    *k -= s;
    return same;
}

/* Stores column *col (n rows) as `sp` (tp_ev_sparse) when that is smaller, its values packed
 * to the front of the column's own block (then shrunk, not copied); frees it when every row is
 * `none`. `by_corr` (the External id): the rows whose value is their correlation id are bits of
 * e->external_id_corr instead (corr_rows). The bitmap first (sparse_word), then a step per
 * value: ~2 instructions a row and ~5 a value (a branchless pass over every row took 11 a row:
 * 4.5 M on xdit's two columns). */
static void col_sparsify(tp_events *e, uint32_t **col, tp_ev_sparse *sp, uint32_t none,
                         int by_corr) {
    uint32_t *c = *col;
    size_t n = e->n, words = (n + 63) / 64, k = 0;
    uint64_t *bits = tp_mem_xalloc(words ? words : 1, sizeof *bits);
    for (size_t w = 0; w < words; w++) {
        bits[w] = sparse_word(c, w * 64, n, none);
        k += (size_t)__builtin_popcountll(bits[w]);
    }
    uint64_t *same = by_corr && k ? corr_rows(e, c, bits, words, &k) : NULL;
    size_t sparse = words * (sizeof *bits + sizeof *sp->rank + (same ? sizeof *same : 0));
    if ((k || same) && sparse + k * sizeof *c >= n * sizeof *c) {
        free(bits), free(same); /* stays an array (its values untouched) */
        return;
    }
    *col = NULL;
    if (same)
        e->external_id_corr = same;
    if (!k) {
        free(bits), free(c);
        return;
    }
    uint32_t *rank = tp_mem_xalloc(words, sizeof *rank);
    k = 0;
    for (size_t w = 0; w < words; w++) {
        rank[w] = (uint32_t)k;
        for (uint64_t b = bits[w]; b; b &= b - 1) /* k <= the row read: not overwritten yet */
            c[k++] = c[w * 64 + (size_t)__builtin_ctzll(b)];
    }
    GROW(c, k);
    *sp = (tp_ev_sparse){bits, rank, c, k, k, words};
}

/* Makes column *col again (`cap` rows) from its sparse form `sp` (and, `by_corr`,
 * e->external_id_corr), if it has one. */
static void col_densify(tp_events *e, uint32_t **col, tp_ev_sparse *sp, size_t cap, uint32_t none,
                        int by_corr) {
    uint64_t *same = by_corr ? e->external_id_corr : NULL;
    if (!sp->bits && !same)
        return;
    uint32_t *c = tp_mem_xalloc(cap ? cap : 1, sizeof *c);
    for (size_t i = 0; i < e->n; i++)
        c[i] = tp_ev_sparse_get(sp, i, none);
    for (size_t w = 0; same && w < (e->n + 63) / 64; w++)
        for (uint64_t b = same[w]; b; b &= b - 1) {
            size_t i = w * 64 + (size_t)__builtin_ctzll(b);
            c[i] = (uint32_t)tp_ev_corr(e, i); /* a narrow code: corr_rows took no other */
        }
    free(sp->bits), free(sp->rank), free(sp->val), free(same);
    memset(sp, 0, sizeof *sp);
    if (by_corr)
        e->external_id_corr = NULL;
    *col = c;
}

/* The TP_EV_SPARSE columns as arrays again: a table that grows or is permuted (a push or a
 * second finish after a finish). */
static void events_densify(tp_events *e, size_t cap) {
#define DENSIFY(c, sp, none, by_corr, grows)                                                       \
    if (!(grows))                                                                                  \
        col_densify(e, &e->c, &e->sp, cap, none, by_corr);
    TP_EV_SPARSE(DENSIFY)
#undef DENSIFY
}

/* ---------------------------------------------------------------- sparse while loading
 *
 * The Sequence number and Input Dims (TP_EV_SPARSE's `grows`) are on 5-17 % and 35-55 % of a
 * Kineto trace's rows. As arrays until finish they were 4 bytes a row each at the import's end,
 * its high water (0.53 MiB on hta_trace_diff_test, 68 k rows), for 0.4-0.9 and 1.6-2.5 bytes a
 * row sparse after. So they are sparse from their first value: a row without one writes nothing
 * (its bit is 0 from the start), a row with one sets its bit and appends its code. The bitmap and
 * ranks have a word per 64 rows of the table's capacity (grown with the columns); a word's rank is
 * set when its first value comes (and every word's up to it), since a read looks at the rank only
 * under a set bit. */

/* Words of bitmap for a table of `cap` rows (a word per 64 rows, one at least: col_sparsify's). */
static size_t sparse_words(size_t cap) {
    return cap ? (cap + 63) / 64 : 1;
}

/* Resizes the bitmap and ranks of a growing sparse column to a table of `cap` rows (from `had`),
 * new words cleared. */
static void sparse_resize(tp_ev_sparse *sp, size_t had, size_t cap) {
    size_t w0 = sparse_words(had), w1 = sparse_words(cap);
    GROW(sp->bits, w1), GROW(sp->rank, w1);
    if (w1 > w0)
        memset(sp->bits + w0, 0, (w1 - w0) * sizeof *sp->bits);
    sp->n_ranked = sp->n_ranked < w1 ? sp->n_ranked : w1;
}

/* Appends code `v` (not the column's none) of `row`, past the rows that have one, to a growing
 * sparse column of a table of e->cap rows (made at its first value). */
static void sparse_append(const tp_events *e, tp_ev_sparse *sp, size_t row, uint32_t v) {
    if (!sp->bits) {
        size_t words = sparse_words(e->cap);
        sp->bits = tp_mem_xcalloc(words, sizeof *sp->bits);
        sp->rank = tp_mem_xalloc(words, sizeof *sp->rank);
    }
    for (size_t w = row >> 6; sp->n_ranked <= w;)
        sp->rank[sp->n_ranked++] = (uint32_t)sp->n_val;
    sp->bits[row >> 6] |= UINT64_C(1) << (row & 63);
    TABLE_XGROW(sp->val, sp->val_cap, sp->n_val + 1);
    sp->val[sp->n_val++] = v;
}

/* A growing sparse column after the rows moved (new row i = old row perm[i]): built again in
 * the new order, a bit test a row (finish; no array of every row in between). */
static void sparse_permute(const tp_events *e, tp_ev_sparse *sp, const uint32_t *perm,
                           uint32_t none) {
    size_t n = e->n, words = sparse_words(e->cap);
    tp_ev_sparse out = {tp_mem_xcalloc(words, sizeof *out.bits),
                        tp_mem_xalloc(words, sizeof *out.rank),
                        tp_mem_xalloc(sp->n_val ? sp->n_val : 1, sizeof *out.val),
                        0,
                        sp->n_val,
                        0};
    for (size_t i = 0; i < n; i++) {
        uint32_t v = tp_ev_sparse_get(sp, perm[i], none);
        if (v == none)
            continue;
        for (size_t w = i >> 6; out.n_ranked <= w;)
            out.rank[out.n_ranked++] = (uint32_t)out.n_val;
        out.bits[i >> 6] |= UINT64_C(1) << (i & 63);
        out.val[out.n_val++] = v;
    }
    free(sp->bits), free(sp->rank), free(sp->val);
    *sp = out;
}

/* A growing sparse column at finish (the table fitted to its rows): every word's rank set, its
 * values fitted; an array instead where that is not larger, as col_sparsify decides. */
static void sparse_fit(tp_events *e, uint32_t **col, tp_ev_sparse *sp, uint32_t none) {
    size_t n = e->n, words = sparse_words(e->cap);
    while (sp->n_ranked < words)
        sp->rank[sp->n_ranked++] = (uint32_t)sp->n_val;
    if (sp->n_val && sp->n_val != sp->val_cap)
        GROW(sp->val, sp->n_val), sp->val_cap = sp->n_val;
    if (tp_ev_sparse_bytes(sp, n) >= n * sizeof **col)
        col_densify(e, col, sp, e->cap, none, 0);
}

/* The TP_EV_SPARSE columns sparse where that is smaller (tp_model_finish, after the sort). */
static void events_sparsify(tp_events *e) {
#define SPARSIFY(c, sp, none, by_corr, grows)                                                      \
    if (e->c)                                                                                      \
        col_sparsify(e, &e->c, &e->sp, none, by_corr);                                             \
    else if ((grows) && e->sp.bits)                                                                \
        sparse_fit(e, &e->c, &e->sp, none);
    TP_EV_SPARSE(SPARSIFY)
#undef SPARSIFY
}

/* ---------------------------------------------------------------- narrow columns */

/* Sets the wide value of `row`: its entry replaced, or a new one inserted in row order (at the
 * end while loading, as rows only grow). */
static void wide_put(tp_ev_wide *w, size_t row, int64_t v) {
    size_t at = w->n;
    while (at > 0 && w->row[at - 1] >= row)
        at--;
    if (at == w->n || w->row[at] != row) {
        if (w->n == w->cap) {
            w->cap = tp_mem_next_cap(w->cap, w->n + 1);
            GROW(w->row, w->cap), GROW(w->val, w->cap);
        }
        memmove(w->row + at + 1, w->row + at, (w->n - at) * sizeof *w->row);
        memmove(w->val + at + 1, w->val + at, (w->n - at) * sizeof *w->val);
        w->n++;
    }
    w->row[at] = (uint32_t)row, w->val[at] = v;
}

int64_t tp_ev_wide_get(const tp_ev_wide *w, size_t row) {
    size_t lo = 0, hi = w->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (w->row[mid] < row)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < w->n && w->row[lo] == row ? w->val[lo] : -1;
}

/* Appends the wide value of `row`, rows in any order (a derived column's, found thread by
 * thread): wide_sort puts them in row order once all are there. */
static void wide_append(tp_ev_wide *w, size_t row, int64_t v) {
    if (w->n == w->cap) {
        w->cap = tp_mem_next_cap(w->cap, w->n + 1);
        GROW(w->row, w->cap), GROW(w->val, w->cap);
    }
    w->row[w->n] = (uint32_t)row, w->val[w->n++] = v;
}

/* Frees a side table's entries. */
static void wide_clear(tp_ev_wide *w) {
    free(w->row), free(w->val);
    memset(w, 0, sizeof *w);
}

/* 1 when `w` holds a value of row `row` or later (narrow_put drops it first). */
static inline int wide_at_or_past(const tp_ev_wide *w, size_t row) {
    return w->n && w->row[w->n - 1] >= row;
}

/* Drops the wide value of `row`, if any (a row edited in place to a value that fits). */
static void wide_drop(tp_ev_wide *w, size_t row) {
    for (size_t at = 0; at < w->n; at++)
        if (w->row[at] == row) {
            memmove(w->row + at, w->row + at + 1, (w->n - at - 1) * sizeof *w->row);
            memmove(w->val + at, w->val + at + 1, (w->n - at - 1) * sizeof *w->val);
            w->n--;
            return;
        }
}

/* The 32-bit code of value `v` of `row` in a narrow column whose wide values are `w`. */
static uint32_t narrow_put(tp_ev_wide *w, size_t row, int64_t v) {
    if (v >= 0 && v < TP_EV_U32_WIDE) {
        if (w->n && w->row[w->n - 1] >= row) /* an edit in place: the row may have had one */
            wide_drop(w, row);
        return (uint32_t)v;
    }
    if (v == -1)
        return TP_EV_U32_NONE;
    wide_put(w, row, v);
    return TP_EV_U32_WIDE;
}

/* The side table after the rows moved (new_of: old row -> new row): each entry renumbered,
 * then put back in row order; fitted to its count. */
static void wide_permute(tp_ev_wide *w, const uint32_t *new_of) {
    if (!w->n) {
        free(w->row), free(w->val);
        memset(w, 0, sizeof *w);
        return;
    }
    uint64_t *key = tp_mem_xalloc(w->n, sizeof *key);
    uint32_t *order = tp_mem_xalloc(w->n, sizeof *order);
    for (size_t k = 0; k < w->n; k++)
        key[k] = new_of[w->row[k]], order[k] = (uint32_t)k;
    tp_sort_pairs(key, order, w->n);
    uint32_t *row = tp_mem_xalloc(w->n, sizeof *row);
    int64_t *val = tp_mem_xalloc(w->n, sizeof *val);
    for (size_t k = 0; k < w->n; k++)
        row[k] = (uint32_t)key[k], val[k] = w->val[order[k]];
    free(key), free(order), free(w->row), free(w->val);
    w->row = row, w->val = val, w->cap = w->n;
}

/* Puts the entries wide_append left in any order in row order, fitted to their count. */
static void wide_sort(tp_ev_wide *w) {
    size_t k = 1;
    while (k < w->n && w->row[k - 1] < w->row[k])
        k++;
    if (k >= w->n) { /* in order already (or empty): only fitted */
        if (w->n && w->cap != w->n)
            GROW(w->row, w->n), GROW(w->val, w->n), w->cap = w->n;
        return;
    }
    uint64_t *key = tp_mem_xalloc(w->n, sizeof *key);
    uint32_t *order = tp_mem_xalloc(w->n, sizeof *order);
    for (k = 0; k < w->n; k++)
        key[k] = w->row[k], order[k] = (uint32_t)k;
    tp_sort_pairs(key, order, w->n);
    uint32_t *row = tp_mem_xalloc(w->n, sizeof *row);
    int64_t *val = tp_mem_xalloc(w->n, sizeof *val);
    for (k = 0; k < w->n; k++)
        row[k] = (uint32_t)key[k], val[k] = w->val[order[k]];
    free(key), free(order), free(w->row), free(w->val);
    w->row = row, w->val = val, w->cap = w->n;
}

/* Sets optional narrow column *col of `row` to `v` (created at the first value other than
 * -1, the rows before it -1). */
static void opt_put_narrow(tp_events *e, uint32_t **col, tp_ev_wide *w, size_t row, int64_t v) {
    static const uint32_t none = TP_EV_U32_NONE;
    if (!*col && v == -1)
        return;
    if (!*col)
        *col = opt_create(e, sizeof **col, &none, row);
    (*col)[row] = narrow_put(w, row, v);
}

/* opt_put_narrow with its common case inline: the column there and a value that is its own
 * code or none (-1, whose low half is TP_EV_U32_NONE): a Kineto trace's External id of every
 * row (a call and ~33 instructions a row on xdit). */
_Static_assert(TP_EV_U32_NONE == (uint32_t)-1, "-1's code is its low half");
static inline void opt_put_narrow_fast(tp_events *e, uint32_t **col, tp_ev_wide *w, size_t row,
                                       int64_t v) {
    uint32_t *c = *col;
    if (c && (uint64_t)v + 1 <= (uint64_t)TP_EV_U32_WIDE && !wide_at_or_past(w, row))
        c[row] = (uint32_t)v;
    else
        opt_put_narrow(e, col, w, row, v);
}

/* ---------------------------------------------------------------- places */

static int place_eq(const tp_ev_place *a, const tp_ev_place *b) {
    return a->pid == b->pid && a->tid == b->tid && a->stream == b->stream &&
           a->fwd_tid == b->fwd_tid && a->device == b->device && a->corr_hi == b->corr_hi &&
           a->domain == b->domain;
}

/* place_eq against a row's own fields (no place built for the rows that repeat the last).
 * The fields that tell a thread's places apart (domain) and a thread from a stream first:
 * the test against the other of two alternating places (place_recent) fails at once. */
static inline int place_is(const tp_ev_place *a, const tp_event_row *r, uint32_t corr_hi) {
    return a->domain == r->domain && a->stream == r->stream && a->tid == r->tid &&
           a->pid == r->pid && a->fwd_tid == r->fwd_tid && a->device == r->device &&
           a->corr_hi == corr_hi;
}

/* The fields folded by odd multipliers, then mixed (found for every row while loading). Not
 * the domain: a thread's few domains share its slot run, and tp_model_move_ranks can then
 * translate their string ids without a rehash. */
static uint64_t place_hash(const tp_ev_place *p) {
    uint64_t h = (uint64_t)p->pid * 0x9e3779b97f4a7c15ULL;
    h ^= (uint64_t)p->tid * 0xc2b2ae3d27d4eb4fULL;
    h ^= (uint64_t)p->stream * 0x165667b19e3779f9ULL;
    h ^= (uint64_t)p->fwd_tid * 0x27d4eb2f165667c5ULL;
    h ^= ((uint64_t)(uint32_t)p->device << 32 | p->corr_hi) * 0x94d049bb133111ebULL;
    return tp_hash_mix64(h);
}

/* Slot of place `p` in the table: holds its index + 1, or 0 where it would go. */
static size_t place_slot(const tp_ev_places *t, const tp_ev_place *p) {
    size_t i = place_hash(p) & t->mask;
    for (uint32_t k; (k = t->slots[i]) != 0; i = (i + 1) & t->mask)
        if (place_eq(&t->v[k - 1], p))
            break;
    return i;
}

static void place_rehash(tp_ev_places *t) {
    t->mask = t->slots ? t->mask * 2 + 1 : 63;
    free(t->slots);
    t->slots = tp_mem_xcalloc(t->mask + 1, sizeof *t->slots);
    for (size_t k = 0; k < t->n; k++)
        t->slots[place_slot(t, &t->v[k])] = (uint32_t)k + 1;
}

/* Place k becomes the last found, the last one the one before. */
static inline size_t place_found(tp_ev_places *t, size_t k) {
    if (k != t->last)
        t->prev = t->last, t->last = k;
    return k;
}

/* The index of place `p` in `t`, added when new. */
static size_t place_find(tp_ev_places *t, const tp_ev_place *p) {
    if (t->n && place_eq(&t->v[t->last], p))
        return t->last;
    if (t->n && place_eq(&t->v[t->prev], p))
        return place_found(t, t->prev);
    if (!t->slots)
        place_rehash(t);
    size_t slot = place_slot(t, p);
    if (!t->slots[slot]) {
        TP_MEM_XGROW(t->v, t->cap, t->n + 1);
        t->v[t->n++] = *p;
        t->slots[slot] = (uint32_t)t->n;
        if (t->n * 2 > t->mask)
            place_rehash(t);
        return place_found(t, t->n - 1);
    }
    return place_found(t, t->slots[slot] - 1);
}

/* The index of row `r`'s place (correlation high half `hi`) when it is the last found or
 * the one before (which then becomes the last: a thread's NVTX ranges of a domain of their
 * own alternate with its calls, two places), else SIZE_MAX. */
static inline size_t place_recent(tp_ev_places *t, const tp_event_row *r, uint32_t hi) {
    if (!t->n)
        return SIZE_MAX;
    size_t k = t->last;
    if (place_is(&t->v[k], r, hi))
        return k;
    k = t->prev;
    if (!place_is(&t->v[k], r, hi))
        return SIZE_MAX;
    t->prev = t->last, t->last = k;
    return k;
}

/* Sets col[row] to the index of place `p` in `t` (past 65,534 places: TP_EV_PLACE_WIDE, the
 * index in `w`). */
static void place_index_put(tp_ev_places *t, tp_ev_wide *w, uint16_t *col, size_t row,
                            const tp_ev_place *p) {
    size_t k = place_find(t, p);
    if (k < TP_EV_PLACE_WIDE) {
        if (w->n && w->row[w->n - 1] >= row)
            wide_drop(w, row); /* an edit in place */
        col[row] = (uint16_t)k;
    } else {
        col[row] = TP_EV_PLACE_WIDE;
        wide_put(w, row, (int64_t)k);
    }
}

/* Sets row `row`'s place to `p`. */
static void place_put(tp_events *e, size_t row, const tp_ev_place *p) {
    e->corr_hi_any |= p->corr_hi != 0;
    place_index_put(&e->places, &e->wide_place, e->place, row, p);
}

/* place_put of a row's own fields: out of line, so push_common builds the place only for
 * the rows (~1 %) whose place is not the last one (built inline, every row packed the six
 * fields into vector registers first). */
static __attribute__((noinline)) void place_put_row(tp_events *e, size_t row, const tp_event_row *r,
                                                    uint32_t corr_hi) {
    place_put(e, row,
              &(tp_ev_place){r->pid, r->tid, r->stream, r->fwd_tid, r->device, corr_hi, r->domain});
}

/* Fits a place table to its entries. */
static void places_fit(tp_ev_places *t) {
    if (t->cap != t->n && t->n) {
        GROW(t->v, t->n);
        t->cap = t->n;
    }
}

/* Fits a side table of wide values to its entries. */
static void wide_fit(tp_ev_wide *w) {
    if (w->cap != w->n && w->n) {
        GROW(w->row, w->n), GROW(w->val, w->n);
        w->cap = w->n;
    }
}

/* Row `row`'s correlation id `c` as its code, with the high half it needs in its place. */
static uint32_t corr_put(tp_events *e, size_t row, int64_t c, uint32_t *hi) {
    uint32_t lo = (uint32_t)((uint64_t)c & UINT32_MAX);
    *hi = 0;
    if (c != -1 && lo < TP_EV_U32_WIDE) {
        if (e->wide_corr.n && e->wide_corr.row[e->wide_corr.n - 1] >= row)
            wide_drop(&e->wide_corr, row); /* an edit in place */
        *hi = (uint32_t)((uint64_t)c >> 32);
        return lo;
    }
    return narrow_put(&e->wide_corr, row, c); /* -1, or a low half that is a code */
}

/* corr_put's common case inline (push_common: every launch and GPU row of a native trace):
 * an id whose low half fits its code, appended past any wide value; corr_put for the rest. */
static inline uint32_t corr_put_fast(tp_events *e, size_t row, int64_t c, uint32_t *hi) {
    uint32_t lo = (uint32_t)((uint64_t)c & UINT32_MAX);
    if (c == -1 || lo >= TP_EV_U32_WIDE || wide_at_or_past(&e->wide_corr, row))
        return corr_put(e, row, c, hi);
    *hi = (uint32_t)((uint64_t)c >> 32);
    return lo;
}

/* The category text: absent while every row of a category has the text its first row had
 * (a native trace's canonical names; a Kineto trace's "Kernel" or "kernel"); created, every
 * earlier row filled from cat_raw_dflt, at the first row that differs. */
static void opt_put_cat_raw(tp_events *e, size_t row, uint32_t v) {
    unsigned c = e->cat[row] < TP_CAT_COUNT ? e->cat[row] : TP_CAT_OTHER;
    if (!(e->cat_raw_seen & (1u << c))) {
        e->cat_raw_seen |= 1u << c;
        e->cat_raw_dflt[c] = v;
    }
    if (!e->cat_raw_opt && v == e->cat_raw_dflt[c])
        return;
    if (!e->cat_raw_opt) {
        uint32_t *col = tp_mem_xalloc(e->cap ? e->cap : 1, sizeof *col);
        for (size_t i = 0; i < row; i++) /* tp_ev_cat_raw while the column is still absent */
            col[i] = tp_ev_cat_raw(e, i);
        e->cat_raw_opt = col;
    }
    e->cat_raw_opt[row] = v;
}

/* Sets the copy facts of `row`: its entry replaced, or a new one inserted in row order (at the
 * end while loading, as rows only grow). */
static void copies_put(tp_events *e, size_t row, const tp_ev_copy *c) {
    size_t at = e->n_copies;
    while (at > 0 && e->copies[at - 1].row >= row)
        at--;
    if (at == e->n_copies || e->copies[at].row != row) {
        TABLE_XGROW(e->copies, e->copies_cap, e->n_copies + 1);
        memmove(e->copies + at + 1, e->copies + at, (e->n_copies - at) * sizeof *e->copies);
        e->n_copies++;
    }
    e->copies[at] = *c;
    e->copies[at].row = (uint32_t)row;
}

/* A side-table entry that holds nothing. */
static const tp_ev_copy copy_none = {0, 0, 0, 0, -1, NAN};

void tp_events_set_copy(tp_events *e, size_t row, int64_t bytes, uint8_t copy_kind,
                        uint8_t src_kind, uint8_t dst_kind) {
    tp_ev_copy c = copy_none;
    const tp_ev_copy *had = tp_ev_copy_of(e, row);
    if (had)
        c = *had;
    c.bytes = bytes, c.copy_kind = copy_kind, c.src_kind = src_kind, c.dst_kind = dst_kind;
    copies_put(e, row, &c);
}

/* A row that a side table holds, after the rows moved: its new and old row. */
typedef struct {
    uint32_t new_row, old_row;
} moved_row;

/* Index of `row` in the ascending rows[0..n), or n when absent. */
static size_t row_find(const uint32_t *rows, size_t n, uint32_t row) {
    size_t lo = tp_sort_lower_u32(rows, 0, n, row);
    return lo < n && rows[lo] == row ? lo : n;
}

/* The same in the copies (ascending by row). */
static size_t copy_find(const tp_ev_copy *c, size_t n, uint32_t row) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c[mid].row < row)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && c[lo].row == row ? lo : n;
}

/* The side tables after the rows moved, from the rows they hold (`mv`, ascending by new row:
 * events_permute): each table's entries come out in row order as they are found, so neither
 * the inverse permutation of every row nor a sort is needed; fitted to their counts. */
static void copies_renumber(tp_events *e, const moved_row *mv, size_t n_mv) {
    if (!e->n_copies)
        return;
    tp_ev_copy *out = tp_mem_xalloc(e->n_copies, sizeof *out);
    size_t k = 0;
    for (size_t j = 0; j < n_mv; j++) {
        size_t at = copy_find(e->copies, e->n_copies, mv[j].old_row);
        if (at < e->n_copies) {
            out[k] = e->copies[at];
            out[k++].row = mv[j].new_row;
        }
    }
    free(e->copies);
    e->copies = out;
    e->copies_cap = e->n_copies;
}

static void wide_renumber(tp_ev_wide *w, const moved_row *mv, size_t n_mv) {
    if (!w->n) {
        free(w->row), free(w->val);
        memset(w, 0, sizeof *w);
        return;
    }
    uint32_t *row = tp_mem_xalloc(w->n, sizeof *row);
    int64_t *val = tp_mem_xalloc(w->n, sizeof *val);
    size_t k = 0;
    for (size_t j = 0; j < n_mv; j++) {
        size_t at = row_find(w->row, w->n, mv[j].old_row);
        if (at < w->n)
            row[k] = mv[j].new_row, val[k++] = w->val[at];
    }
    free(w->row), free(w->val);
    w->row = row, w->val = val, w->cap = w->n;
}

void tp_events_set_thread(tp_events *e, size_t row, int64_t pid, int64_t tid) {
    tp_ev_place p = *tp_ev_place_of(e, row);
    p.pid = pid, p.tid = tid;
    place_put(e, row, &p);
}

void tp_events_set_domain(tp_events *e, size_t row, uint32_t domain) {
    tp_ev_place p = *tp_ev_place_of(e, row);
    p.domain = domain;
    place_put(e, row, &p);
}

void tp_events_set_bw_gbps(tp_events *e, size_t row, double bw_gbps) {
    tp_ev_copy c = copy_none;
    const tp_ev_copy *had = tp_ev_copy_of(e, row);
    if (had)
        c = *had;
    c.bw_gbps = bw_gbps;
    copies_put(e, row, &c);
}

void tp_event_row_init(tp_event_row *r) {
    memset(r, 0, sizeof *r);
    r->cat = TP_CAT_OTHER;
    r->stream = -1;
    r->device = -1;
    r->correlation = -1;
    r->external_id = -1;
    r->bytes = -1;
    r->bw_gbps = NAN;
    r->seq = r->fwd_tid = -1;
}

/* Resizes every allocated column to `cap` rows (the derived ones only once finish made them:
 * a push after finish keeps them in step until the next finish remakes them). */
static void events_resize(tp_events *e, size_t cap) {
    events_densify(e, cap);
#define RESIZE_SPARSE(c, sp, none, by_corr, grows)                                                 \
    if ((grows) && e->sp.bits)                                                                     \
        sparse_resize(&e->sp, e->cap, cap);
    TP_EV_SPARSE(RESIZE_SPARSE)
#undef RESIZE_SPARSE
    e->cap = cap;
    cap = cap ? cap : 1;
#define RESIZE_COL(c, none)                                                                        \
    if (e->c)                                                                                      \
        GROW(e->c, cap);
    TP_EV_OPTIONAL(RESIZE_COL)
    TP_EV_DERIVED(RESIZE_COL)
#undef RESIZE_COL
#define RESIZE_DENSE(c, none) GROW(e->c, cap);
    TP_EV_DENSE(RESIZE_DENSE)
#undef RESIZE_DENSE
}

/* The stack column is made at the first row with a stack, not with the table: a Kineto trace
 * without Python or Call stacks wrote a 0 for every row, which finish then dropped
 * (stack_drop_unused): 0.27 MiB of hta_trace_diff_test's import high water. calloc: a mapped
 * block comes zeroed without a write. */
uint32_t *tp_events_stack_col(tp_events *e) {
    if (!e->stack)
        e->stack = tp_mem_xcalloc(e->cap ? e->cap : 1, sizeof *e->stack);
    return e->stack;
}

void tp_events_reserve(tp_events *e, size_t rows) {
    if (rows > e->cap)
        events_resize(e, rows);
}

static void events_grow(tp_events *e) {
    events_resize(e, table_next_cap(e->cap, e->n + 1, sizeof *e->cat)); /* 1-byte columns */
}

/* What tp_events_push does for the few rows that need more than the common columns: copy
 * facts, the derived columns of a model pushed after a finish, Kineto's External id and
 * Sequence number. */
static void push_rare(tp_events *e, size_t i, const tp_event_row *r) {
    if (e->dropped) /* after a finish (parent16), a column freed for good: see TP_EV_DROP_* */
        abort();
    if (r->bytes != -1 || r->copy_kind || r->src_kind || r->dst_kind || !isnan(r->bw_gbps))
        copies_put(e, i,
                   &(tp_ev_copy){(uint32_t)i, r->copy_kind, r->src_kind, r->dst_kind, r->bytes,
                                 r->bw_gbps});
    if (e->parent16) { /* pushed after a finish: the next finish derives these again */
        e->parent16[i] = 0, e->depth8[i] = 0;
        if (e->load_rows32) /* its load position: after every row before it */
            e->load_rows32[i] = (uint32_t)i;
        else
            e->load_d16[i] = 0;
    }
    if (e->external_id32_opt || r->external_id != -1)
        opt_put_narrow_fast(e, &e->external_id32_opt, &e->wide_external_id, i, r->external_id);
    if (e->seq32_opt) /* an array: finish found it smaller (TP_EV_SPARSE's `grows`) */
        opt_put_narrow_fast(e, &e->seq32_opt, &e->wide_seq, i, r->seq);
    else if (r->seq != -1)
        sparse_append(e, &e->seq_sp, i, narrow_put(&e->wide_seq, i, r->seq));
}

/* The columns every row writes (tp_events_push, tp_events_push_plain); returns the row. The
 * common cases inline (a row appended, values that fit their codes, the place of the row
 * before); the helpers do the rest. */
__attribute__((always_inline)) static inline size_t push_common(tp_events *e,
                                                                const tp_event_row *r) {
    assert(r->dur >= 0 && r->ts >= -TP_NS_LIMIT && r->ts <= TP_NS_LIMIT && r->dur <= TP_NS_LIMIT);
    if (e->n == e->cap)
        events_grow(e);
    size_t i = e->n++;
    e->ts[i] = r->ts, e->name[i] = r->name;
    if (r->dur >= 0 && r->dur < TP_EV_U32_WIDE && !wide_at_or_past(&e->wide_dur, i))
        e->dur32[i] = (uint32_t)r->dur;
    else
        e->dur32[i] = narrow_put(&e->wide_dur, i, r->dur);
    e->cat[i] = r->cat, e->flags[i] = r->flags;
    if (e->stack) /* once it exists every row writes it, as shapes_opt below */
        e->stack[i] = r->stack;
    else if (r->stack)
        tp_events_stack_col(e)[i] = r->stack;
    uint32_t hi;
    if (r->correlation == -1)
        e->corr32[i] = TP_EV_U32_NONE, hi = 0;
    else
        e->corr32[i] = corr_put_fast(e, i, r->correlation, &hi);
    size_t k = place_recent(&e->places, r, hi);
    if (k < TP_EV_PLACE_WIDE && !wide_at_or_past(&e->wide_place, i))
        e->place[i] = (uint16_t)k; /* place_put's result, corr_hi_any set before */
    else
        place_put_row(e, i, r, hi);
    if (e->shapes_opt) /* an array: finish found it smaller (TP_EV_SPARSE's `grows`) */
        e->shapes_opt[i] = r->shapes;
    else if (r->shapes)
        sparse_append(e, &e->shapes_sp, i, r->shapes);
    return i;
}

void tp_events_push(tp_events *e, const tp_event_row *r) {
    size_t i = push_common(e, r);
    /* one test, without branches, for what native rows never have (push_rare) */
    if ((r->bytes != -1) | ((r->copy_kind | r->src_kind | r->dst_kind) != 0) |
        (r->bw_gbps == r->bw_gbps) | (r->external_id != -1) | (r->seq != -1) |
        (((uintptr_t)e->parent16 | (uintptr_t)e->external_id32_opt | (uintptr_t)e->seq32_opt) != 0))
        push_rare(e, i, r);
    unsigned c = r->cat < TP_CAT_COUNT ? r->cat : TP_CAT_OTHER; /* opt_put_cat_raw's test */
    if (e->cat_raw_opt || !(e->cat_raw_seen >> c & 1) || r->cat_raw != e->cat_raw_dflt[c])
        opt_put_cat_raw(e, i, r->cat_raw);
}

int tp_events_plain(const tp_events *e, const tp_event_row *r) {
    unsigned c = r->cat < TP_CAT_COUNT ? r->cat : TP_CAT_OTHER;
    return r->bytes == -1 && !r->copy_kind && !r->src_kind && !r->dst_kind && isnan(r->bw_gbps) &&
           r->external_id == -1 && r->seq == -1 && !e->parent16 && !e->external_id32_opt &&
           !e->seq32_opt && !e->cat_raw_opt && (e->cat_raw_seen >> c & 1) &&
           r->cat_raw == e->cat_raw_dflt[c];
}

/* tp_events_push_plain's common case: 1 when it appended plain row `r` (room for it, a
 * duration and a correlation id that fit their 32-bit codes, the place of the row before,
 * optional columns that exist or that `r` leaves "none"), 0 when it wrote nothing. Every test
 * comes before the first write, so this path calls nothing and needs no callee-saved
 * registers (push_common inline saved and restored six for every row, ~17 of its ~100
 * instructions, because its rarer branches call helpers). No wide value lies at or past row
 * n (values are only ever set for rows that exist), so a new row needs no test of the side
 * tables (asserted in tp_events_push_plain). */
static inline int push_plain_fast(tp_events *e, const tp_event_row *r) {
    size_t i = e->n;
    uint64_t c = (uint64_t)r->correlation;
    uint32_t lo = (uint32_t)c, hi = r->correlation == -1 ? 0 : (uint32_t)(c >> 32);
    /* -1's low half is TP_EV_U32_NONE, its code; any other low half must sit below the codes */
    size_t k;
    if (i < e->cap && (uint64_t)r->dur < TP_EV_U32_WIDE &&
        (r->correlation == -1 || lo < TP_EV_U32_WIDE) && (e->shapes_opt || !r->shapes) &&
        (e->stack || !r->stack) && (k = place_recent(&e->places, r, hi)) < TP_EV_PLACE_WIDE) {
        e->n = i + 1;
        e->ts[i] = r->ts, e->name[i] = r->name, e->dur32[i] = (uint32_t)r->dur;
        e->cat[i] = r->cat, e->flags[i] = r->flags;
        e->corr32[i] = lo, e->place[i] = (uint16_t)k;
        if (e->stack)
            e->stack[i] = r->stack;
        if (e->shapes_opt)
            e->shapes_opt[i] = r->shapes;
        return 1;
    }
    return 0;
}

/* push_common out of line: the rows push_plain_fast turns away (~0.5 % on a native trace). */
static __attribute__((noinline)) void push_plain_slow(tp_events *e, const tp_event_row *r) {
    push_common(e, r);
}

void tp_events_push_plain(tp_events *e, const tp_event_row *r) {
    assert(tp_events_plain(e, r));
    assert(!wide_at_or_past(&e->wide_dur, e->n) && !wide_at_or_past(&e->wide_corr, e->n) &&
           !wide_at_or_past(&e->wide_place, e->n)); /* push_plain_fast needs it */
    if (!push_plain_fast(e, r))
        push_plain_slow(e, r);
}

/* Resizes every memory-event column to `cap` rows. */
static void memev_resize(tp_memevents *e, size_t cap) {
    e->cap = cap;
    cap = cap ? cap : 1;
#define RESIZE_COL(c, none) GROW(e->c, cap);
    TP_MEMEV_ALL(RESIZE_COL)
#undef RESIZE_COL
}

void tp_memev_reserve(tp_memevents *e, size_t rows) {
    if (rows > e->cap)
        memev_resize(e, rows);
}

const tp_memev_totals *tp_memev_totals_find(const tp_memevents *e, size_t row) {
    if (row < e->n_totals && e->totals[row].row == row) /* Kineto: every row has totals */
        return &e->totals[row];
    size_t lo = 0, hi = e->n_totals;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (e->totals[mid].row < row)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < e->n_totals && e->totals[lo].row == row ? &e->totals[lo] : NULL;
}

/* 1 when the row carries allocator totals (an entry in tp_memevents.totals). */
static inline int memev_has_totals(const tp_memev_row *r) {
    return (r->total_allocated != -1) | (r->total_reserved != -1) | (r->largest_free != 0);
}

/* The place of a row's pid, tid, device and heap (see tp_memevents). */
static inline int memev_place_is(const tp_ev_place *p, const tp_memev_row *r) {
    return p->pid == r->pid && p->tid == r->tid && p->device == r->device &&
           p->stream == (int64_t)r->heap;
}

/* The row's place when it is one of the last two found (then the last one), else
 * TP_EV_PLACE_WIDE: rows of one thread come in runs, a region's rows alternate. */
static inline size_t memev_place_recent(tp_memevents *e, const tp_memev_row *r) {
    tp_ev_places *t = &e->places;
    if (!t->n)
        return TP_EV_PLACE_WIDE;
    size_t last = t->last, alt = e->place_alt;
    if (last < TP_EV_PLACE_WIDE && memev_place_is(&t->v[last], r))
        return last;
    if (alt < TP_EV_PLACE_WIDE && alt < t->n && memev_place_is(&t->v[alt], r)) {
        t->last = alt, e->place_alt = last;
        return alt;
    }
    return TP_EV_PLACE_WIDE;
}

/* tp_memev_push's every case (the common one is also written by tp_memev_push itself): rows
 * only append, so the side tables take their entries at the end. */
static __attribute__((noinline)) void memev_push_slow(tp_memevents *e, const tp_memev_row *r) {
    assert(r->op <= TP_MEMEV_OP_MASK);
    if (e->n == e->cap)
        memev_resize(e, table_next_cap(e->cap, e->n + 1, sizeof *e->kind)); /* 1-byte columns */
    size_t i = e->n++;
    e->ts[i] = r->ts, e->kind[i] = r->kind, e->addr[i] = r->addr, e->stack[i] = r->stack;
    uint8_t f = r->op & TP_MEMEV_OP_MASK; /* an op past the table (asserted) is not a flag */
    if (r->bytes > INT32_MIN && r->bytes <= INT32_MAX) {
        e->bytes32[i] = (int32_t)r->bytes;
    } else {
        e->bytes32[i] = TP_MEMEV_BYTES_WIDE;
        wide_put(&e->wide_bytes, i, r->bytes);
    }
    if (r->size != tp_memev_size_derived(f, r->bytes)) { /* as tp_memev_size will read it */
        f |= TP_MEMEV_F_SIZE;
        wide_put(&e->wide_size, i, (int64_t)r->size);
    }
    if (memev_has_totals(r)) {
        f |= TP_MEMEV_F_TOTALS;
        TABLE_XGROW(e->totals, e->totals_cap, e->n_totals + 1);
        e->totals[e->n_totals++] =
            (tp_memev_totals){r->total_allocated, r->total_reserved, r->largest_free, (uint32_t)i};
    }
    e->op_flags[i] = f;
    size_t k = memev_place_recent(e, r);
    if (k < TP_EV_PLACE_WIDE) {
        e->place[i] = (uint16_t)k;
    } else {
        size_t last = e->places.n ? e->places.last : 0;
        place_index_put(&e->places, &e->wide_place, e->place, i,
                        &(tp_ev_place){r->pid, r->tid, (int64_t)r->heap, -1, r->device, 0, 0});
        e->place_alt = e->places.last != last ? last : e->place_alt;
    }
}

/* memev_push_slow's result for the rows that need none of its helpers (room for the row,
 * no side table entry, the last row's place), tested before anything is written, so this
 * path calls nothing and saves no registers (as tp_events_push_plain). */
void tp_memev_push(tp_memevents *e, const tp_memev_row *r) {
    size_t i = e->n;
    if (i < e->cap && r->bytes > INT32_MIN && r->bytes <= INT32_MAX && r->op <= TP_MEMEV_OP_MASK &&
        r->size == tp_memev_size_derived(r->op, r->bytes) && !memev_has_totals(r)) {
        size_t k = memev_place_recent(e, r);
        if (k < TP_EV_PLACE_WIDE) {
            e->n = i + 1;
            e->ts[i] = r->ts, e->kind[i] = r->kind, e->addr[i] = r->addr, e->stack[i] = r->stack;
            e->bytes32[i] = (int32_t)r->bytes, e->op_flags[i] = r->op;
            e->place[i] = (uint16_t)k;
            return;
        }
    }
    memev_push_slow(e, r);
}

/* ---------------------------------------------------------------- processes */

const char *tp_proc_role_name(tp_proc_role r) {
    return r == TP_PROC_WORKER ? "worker" : r == TP_PROC_LAUNCHER ? "launcher" : "main";
}

void tp_rank_add_process(tp_rank *r, const tp_process *p) {
    GROW(r->procs, r->n_procs + 1);
    tp_process *q = &r->procs[r->n_procs++];
    *q = *p;
    q->file = strdup(p->file ? p->file : r->file ? r->file : "");
    if (!q->file)
        abort();
}

const tp_process *tp_rank_process(const tp_rank *r, int64_t pid) {
    const tp_process *best = NULL;
    for (size_t i = 0; i < r->n_procs; i++)
        if (r->procs[i].pid == pid && (!best || r->procs[i].exec_gen > best->exec_gen))
            best = &r->procs[i];
    return best;
}

/* Row i of `e` as a row to push. */
static tp_event_row event_row(const tp_events *e, size_t i) {
    tp_event_row r;
    r.ts = e->ts[i], r.dur = tp_ev_dur(e, i), r.name = e->name[i];
    r.cat_raw = tp_ev_cat_raw(e, i);
    const tp_ev_copy *c = tp_ev_copy_of(e, i);
    r.cat = e->cat[i], r.flags = e->flags[i], r.copy_kind = c ? c->copy_kind : 0;
    r.src_kind = c ? c->src_kind : 0, r.dst_kind = c ? c->dst_kind : 0;
    r.stream = tp_ev_stream(e, i), r.device = tp_ev_device(e, i);
    r.pid = tp_ev_pid(e, i), r.tid = tp_ev_tid(e, i);
    r.correlation = tp_ev_corr(e, i), r.external_id = tp_ev_external_id(e, i);
    r.bytes = c ? c->bytes : -1, r.bw_gbps = c ? c->bw_gbps : NAN, r.stack = tp_ev_stack(e, i);
    r.shapes = tp_ev_shapes(e, i), r.seq = tp_ev_seq(e, i), r.fwd_tid = tp_ev_fwd_tid(e, i);
    r.domain = tp_ev_domain(e, i);
    return r;
}

/* Where the ids of a merged process's stacks, modules and Python code objects start in the
 * rank: past every id the rank has (each process numbers its own from 1). */
typedef struct {
    uint32_t stack, module, pycode;
} id_bases;

static id_bases stack_bases(const tp_stacks *s) {
    id_bases b = {0, 0, 0};
    for (size_t i = 0; i < s->n; i++)
        b.stack = s->v[i].id > b.stack ? s->v[i].id : b.stack;
    for (size_t i = 0; i < s->n_modules; i++)
        b.module = s->modules[i].id + 1 > b.module ? s->modules[i].id + 1 : b.module;
    for (size_t i = 0; i < s->n_pycodes; i++)
        b.pycode = s->pycodes[i].id > b.pycode ? s->pycodes[i].id : b.pycode;
    return b;
}

static uint32_t moved(uint32_t id, uint32_t base) {
    return id ? id + base : 0;
}

static void merge_stacks(tp_model *m, tp_rank *into, const tp_stacks *s, id_bases b) {
    for (size_t i = 0; i < s->n_modules; i++) {
        const tp_stack_module *mo = &s->modules[i];
        tp_rank_add_stack_module(m, into, mo->id + b.module,
                                 mo->path ? tp_model_str(m, mo->path) : NULL, mo->build_id,
                                 mo->build_id_len);
    }
    for (size_t i = 0; i < s->n_pycodes; i++) {
        const tp_stack_pycode *c = &s->pycodes[i];
        tp_rank_add_stack_pycode(m, into, c->id + b.pycode,
                                 c->file ? tp_model_str(m, c->file) : NULL,
                                 c->name ? tp_model_str(m, c->name) : NULL, c->first_line);
    }
    for (size_t i = 0; i < s->n; i++) {
        const tp_stack *st = &s->v[i];
        uint32_t *mods = tp_mem_xalloc(st->n, sizeof *mods);
        uint64_t *addrs = tp_mem_xalloc(st->n, sizeof *addrs);
        for (uint32_t k = 0, f = (uint32_t)st->first; k < st->n;
             k++, f = s->frame_next ? s->frame_next[f] : f + 1) {
            uint32_t mo = s->frame_module ? s->frame_module[f] : TP_STACK_PYTHON;
            uint64_t a = s->frame_addr[f];
            if (mo == TP_STACK_PYTHON)
                a = ((uint64_t)(TP_STACK_PY_CODE(a) + b.pycode) << 24) | TP_STACK_PY_LINE(a);
            else if (mo != TP_STACK_NO_MODULE)
                mo += b.module;
            mods[k] = mo, addrs[k] = a;
        }
        tp_rank_add_stack(into, st->id + b.stack, mods, addrs, st->n);
        free(mods), free(addrs);
    }
}

static void merge_events(tp_rank *into, const tp_rank *from, int64_t offset, id_bases b) {
    const tp_events *e = &from->ev;
    for (size_t i = 0; i < e->n; i++) {
        tp_event_row r = event_row(e, i);
        if (r.correlation != -1)
            r.correlation += offset;
        if (r.stream != -1) { /* a GPU-side row: pid = device, tid = stream (tp_events) */
            r.stream += offset;
            r.tid = r.stream;
        }
        r.stack = moved(r.stack, b.stack);
        tp_events_push(&into->ev, &r);
    }
    const tp_memevents *m = &from->mem;
    for (size_t i = 0; i < m->n; i++) {
        tp_memev_row r = {m->ts[i],
                          tp_memev_bytes(m, i),
                          tp_memev_total_allocated(m, i),
                          tp_memev_total_reserved(m, i),
                          m->addr[i],
                          tp_memev_device(m, i),
                          m->kind[i],
                          moved(m->stack[i], b.stack),
                          tp_memev_largest_free(m, i),
                          tp_memev_op_of(m, i),
                          tp_memev_heap(m, i),
                          tp_memev_size(m, i),
                          tp_memev_pid(m, i),
                          tp_memev_tid(m, i)};
        tp_memev_push(&into->mem, &r);
    }
}

void tp_samples_push(tp_samples *s, int64_t ts, uint32_t pid, uint32_t tid, uint32_t stack,
                     unsigned flags, uint64_t cpu_ns, uint64_t period_ns) {
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 256;
        s->ts = tp_mem_xrealloc(s->ts, cap, sizeof *s->ts);
        s->pid = tp_mem_xrealloc(s->pid, cap, sizeof *s->pid);
        s->tid = tp_mem_xrealloc(s->tid, cap, sizeof *s->tid);
        s->stack = tp_mem_xrealloc(s->stack, cap, sizeof *s->stack);
        s->flags = tp_mem_xrealloc(s->flags, cap, sizeof *s->flags);
        s->cpu_ns = tp_mem_xrealloc(s->cpu_ns, cap, sizeof *s->cpu_ns);
        s->period_ns = tp_mem_xrealloc(s->period_ns, cap, sizeof *s->period_ns);
        s->cap = cap;
    }
    size_t i = s->n++;
    s->ts[i] = ts, s->pid[i] = pid, s->tid[i] = tid, s->stack[i] = stack;
    s->flags[i] = (uint8_t)flags;
    s->cpu_ns[i] = cpu_ns, s->period_ns[i] = period_ns;
}

static void merge_samples(tp_rank *into, const tp_samples *s, id_bases b) {
    for (size_t i = 0; i < s->n; i++)
        tp_samples_push(&into->samples, s->ts[i], s->pid[i], s->tid[i], moved(s->stack[i], b.stack),
                        s->flags[i], s->cpu_ns[i], s->period_ns[i]);
}

static void merge_meta(tp_model *m, tp_rank *into, const tp_rank *from) {
    for (size_t i = 0; i < from->n_thread_names; i++) {
        const char *name = tp_model_str(m, from->tn_name[i]);
        tp_rank_set_thread_name(m, into, from->tn_pid[i], from->tn_tid[i], name, strlen(name));
    }
    for (size_t i = 0; i < from->n_devices; i++) {
        int known = 0;
        for (size_t j = 0; j < into->n_devices && !known; j++)
            known = into->devices[j].id == from->devices[i].id;
        if (!known) {
            GROW(into->devices, into->n_devices + 1);
            into->devices[into->n_devices++] = from->devices[i];
        }
    }
    /* the first process's environment stands; a worker adds what it alone saw */
    for (size_t i = 0; i < from->n_env; i++)
        tp_rank_set_env(m, into, from->env[i].device, tp_model_str(m, from->env[i].key),
                        tp_model_str(m, from->env[i].value), 0);
    if (into->device_type == TP_DEVTYPE_CPU_ONLY)
        into->device_type = from->device_type;
    if (into->world_size < 0)
        into->world_size = from->world_size;
    into->n_json_events += from->n_json_events, into->n_flow += from->n_flow;
    into->n_instant += from->n_instant, into->n_meta += from->n_meta;
    into->n_dropped += from->n_dropped, into->n_dropped_records += from->n_dropped_records;
    for (size_t t = 0; t < TP_MODEL_REC_KINDS; t++) {
        into->n_kept_kind[t] += from->n_kept_kind[t];
        into->n_lost_kind[t] += from->n_lost_kind[t];
    }
    for (size_t k = 0; k < TP_SKIP_COUNT; k++)
        into->n_skipped[k] += from->n_skipped[k];
}

void tp_model_merge_rank(tp_model *m, size_t into_i, size_t from_i) {
    tp_rank *into = &m->ranks[into_i], *from = &m->ranks[from_i];
    /* Correlation and stream ids are per process (CUPTI counts from 1 in each): the k-th
     * process's move past every id a process can have (32 bits). */
    int64_t offset = (int64_t)into->n_procs << 32;
    id_bases b = stack_bases(&into->stacks);
    merge_events(into, from, offset, b);
    merge_samples(into, &from->samples, b);
    merge_stacks(m, into, &from->stacks, b);
    merge_meta(m, into, from);
    for (size_t i = 0; i < from->n_procs; i++) {
        tp_process p = from->procs[i];
        p.corr_offset += offset;
        tp_rank_add_process(into, &p);
    }
    rank_free(from);
    memmove(from, from + 1, (m->n_ranks - from_i - 1) * sizeof *from);
    m->n_ranks--;
}

/* ---------------------------------------------------------------- sorting */

/* The old buffers of the columns permuted so far, one per element size (index: the size;
 * sizes over 8 are not kept). A column is permuted into the previous same-sized column's old
 * buffer (room for at least n rows: a column never shrinks while loading) instead of into new
 * pages: on a 10 M-record trace that was ~350 MB of page faults fewer in tp_model_finish. */
typedef struct {
    void *old[9];
} tp_spares;

static void spares_free(tp_spares *sp) {
    for (size_t i = 0; i < sizeof sp->old / sizeof *sp->old; i++)
        free(sp->old[i]);
}

/* Column `col` (n elements of `elem` bytes) permuted by `perm` (new row i = old row perm[i])
 * into a spare buffer (exactly n rows after) or a new array; `col` becomes the spare of its
 * size. A function, not a macro, so that a table's worth of columns stays a short function;
 * the fixed-size copies compile to plain moves. */
static void *permuted(void *col, size_t elem, const uint32_t *perm, size_t n, tp_spares *sp) {
    int keep = elem < sizeof sp->old / sizeof *sp->old;
    char *out = keep && sp->old[elem] ? sp->old[elem] : tp_mem_xalloc(n, elem);
    const char *in = col;
    switch (elem) {
    case 8:
        for (size_t i = 0; i < n; i++)
            memcpy(out + i * 8, in + (size_t)perm[i] * 8, 8);
        break;
    case 4:
        for (size_t i = 0; i < n; i++)
            memcpy(out + i * 4, in + (size_t)perm[i] * 4, 4);
        break;
    case 1:
        for (size_t i = 0; i < n; i++)
            out[i] = in[perm[i]];
        break;
    default:
        for (size_t i = 0; i < n; i++)
            memcpy(out + i * elem, in + (size_t)perm[i] * elem, elem);
    }
    if (!keep) {
        free(col);
        return out;
    }
    if (out == sp->old[elem]) /* a spare with growth slack: give the slack back (in place) */
        out = tp_mem_xrealloc(out, n ? n : 1, elem);
    sp->old[elem] = col;
    return out;
}

#define PERMUTE(col, perm, n, sp) ((col) = permuted((col), sizeof *(col), (perm), (n), (sp)))

/* Column `col` of `T` (n rows) permuted by `perm` through `tmp` (room for n): gathered into
 * tmp, then copied back, so the column keeps its array. Unrolled by 4, as the finish's other
 * passes over every row (`#pragma GCC unroll 4`): -O2 unrolls no loop, and the count, compare
 * and branch of each row were a third to a half of such a loop's instructions. */
#define GATHER_BACK(name, T)                                                                       \
    static void name(T *col, const uint32_t *perm, size_t n, T *tmp) {                             \
        _Pragma("GCC unroll 4") for (size_t i = 0; i < n; i++) tmp[i] = col[perm[i]];              \
        memcpy(col, tmp, n * sizeof *col);                                                         \
    }
GATHER_BACK(gather_back8, uint64_t)
GATHER_BACK(gather_back4, uint32_t)
GATHER_BACK(gather_back2, uint16_t)
GATHER_BACK(gather_back1, uint8_t)
#undef GATHER_BACK

/* Column `col` (n elements of `elem` bytes: 8, 4, 2 or 1) permuted in place through tmp. */
static void gather_back(void *col, size_t elem, const uint32_t *perm, size_t n, void *tmp) {
    switch (elem) {
    case 8:
        gather_back8(col, perm, n, tmp);
        break;
    case 4:
        gather_back4(col, perm, n, tmp);
        break;
    case 2:
        gather_back2(col, perm, n, tmp);
        break;
    default:
        gather_back1(col, perm, n, tmp);
    }
}

typedef struct {
    tp_events *e;
    const uint32_t *perm;
    tp_scratch *sc;
    const uint64_t *side; /* bit per old row: a side table holds it (NULL: no side table) */
    moved_row *moved;     /* out: those rows of this half, ascending by new row */
    size_t n_moved;
    int half;   /* 0 or 1 */
    void *tmp1; /* half 1's gather block: 4 bytes a row (the categories' index, not yet
                   written); half 0's is a scratch block of 8 */
} permute_half;

/* Two 4-byte columns permuted in one pass (perm read once for both) through tmp (8 bytes a
 * row: one column's worth each). */
static void gather_back_44(uint32_t *a, uint32_t *b, const uint32_t *perm, size_t n, void *tmp) {
    uint32_t *ta = tmp, *tb = ta + n;
#pragma GCC unroll 4 /* as GATHER_BACK */
    for (size_t i = 0; i < n; i++) {
        uint32_t p = perm[i];
        ta[i] = a[p], tb[i] = b[p];
    }
    memcpy(a, ta, n * sizeof *a);
    memcpy(b, tb, n * sizeof *b);
}

/* Two 1-byte columns and a 2-byte one the same way. */
static void gather_back_112(uint8_t *a, uint8_t *b, uint16_t *c, const uint32_t *perm, size_t n,
                            void *tmp) {
    uint16_t *tc = tmp;
    uint8_t *ta = (uint8_t *)(tc + n), *tb = ta + n;
#pragma GCC unroll 4 /* as GATHER_BACK */
    for (size_t i = 0; i < n; i++) {
        uint32_t p = perm[i];
        ta[i] = a[p], tb[i] = b[p], tc[i] = c[p];
    }
    memcpy(a, ta, n);
    memcpy(b, tb, n);
    memcpy(c, tc, n * sizeof *c);
}

/* The allocated columns of a table, grouped for permute_cols: two 4-byte columns, or two
 * 1-byte and a 2-byte one, move in one pass over perm; the rest one by one. Each group has
 * its half: half 0 gathers through 8 bytes a row (the 8-byte columns, the pairs of 4-byte
 * ones), half 1 through 4 (the narrower groups, 4-byte columns one by one), with about as
 * many bytes a row each. */
typedef struct {
    void *col[3];
    uint8_t elem, n_cols, half; /* elem: of a single column; 0: a group (44 or 112) */
} perm_group;

#define COUNT_COL(c, none) +1
enum { N_EV_COLS = 0 TP_EV_ALL(COUNT_COL) }; /* every column a table may have */
#undef COUNT_COL

static size_t perm_groups(tp_events *e, perm_group *g) {
    void *c8[N_EV_COLS], *c4[N_EV_COLS], *c2[N_EV_COLS], *c1[N_EV_COLS];
    size_t n8 = 0, n4 = 0, n2 = 0, n1 = 0, k = 0;
#define GROUP_COL(c, none)                                                                         \
    if (e->c) {                                                                                    \
        static_assert(sizeof *e->c == 8 || sizeof *e->c == 4 || sizeof *e->c == 2 ||               \
                          sizeof *e->c == 1,                                                       \
                      "gather_back moves 8-, 4-, 2- and 1-byte elements");                         \
        if (sizeof *e->c == 8)                                                                     \
            c8[n8++] = e->c;                                                                       \
        else if (sizeof *e->c == 4)                                                                \
            c4[n4++] = e->c;                                                                       \
        else if (sizeof *e->c == 2)                                                                \
            c2[n2++] = e->c;                                                                       \
        else                                                                                       \
            c1[n1++] = e->c;                                                                       \
    }
    TP_EV_ALL(GROUP_COL)
#undef GROUP_COL
    /* k1 of the 4-byte columns to half 1 (one by one), the rest to half 0 (in pairs), so
     * that 8 * n8 + 4 * (n4 - k1) and 4 * k1 + the narrower columns' bytes come out even */
    size_t b0 = 8 * n8 + 4 * n4, b1 = 2 * n2 + n1;
    size_t k1 = b0 > b1 ? (b0 - b1) / 8 : 0;
    k1 = k1 < n4 ? k1 : n4;
    for (size_t i = 0; i < n8; i++)
        g[k++] = (perm_group){{c8[i]}, 8, 1, 0};
    size_t i4 = 0;
    for (; i4 < k1; i4++)
        g[k++] = (perm_group){{c4[i4]}, 4, 1, 1};
    for (; i4 + 2 <= n4; i4 += 2)
        g[k++] = (perm_group){{c4[i4], c4[i4 + 1]}, 0, 2, 0};
    if (i4 < n4)
        g[k++] = (perm_group){{c4[i4]}, 4, 1, 0};
    size_t i1 = 0, i2 = 0;
    for (; i1 + 2 <= n1 && i2 < n2; i1 += 2, i2++)
        g[k++] = (perm_group){{c1[i1], c1[i1 + 1], c2[i2]}, 0, 3, 1};
    for (; i2 < n2; i2++)
        g[k++] = (perm_group){{c2[i2]}, 2, 1, 1};
    for (; i1 < n1; i1++)
        g[k++] = (perm_group){{c1[i1]}, 1, 1, 1};
    return k;
}

/* The columns of one half permuted through one block of this thread: half 0 a scratch block
 * of 8 bytes a row, half 1 the categories' index (4 bytes a row, written by index_cats_half
 * after this): a second scratch block of 8 was more than the analyses take from the scratch
 * after the finish (lb20k: ~10 k page faults and ~40 MB of peak fewer). The columns are
 * independent, and each gather is about a cache miss per row: two threads, each with half of
 * them (perm_groups), take ~half the time. */
static void permute_cols(void *arg) {
    permute_half *h = arg;
    tp_events *e = h->e;
    size_t n = e->n;
    if (h->side) /* its half of the new rows that side tables hold (well under 1 %: not the
                    inverse permutation of every row, ~25 ms of scattered writes into fresh
                    pages on a 10 M-record trace) */
        for (size_t i = h->half ? n / 2 : 0; i < (h->half ? n : n / 2); i++) {
            uint32_t o = h->perm[i];
            if (h->side[o / 64] >> (o % 64) & 1)
                h->moved[h->n_moved++] = (moved_row){(uint32_t)i, o};
        }
    void *tmp = h->half ? h->tmp1 : tp_scratch_get(h->sc, n, 8);
    perm_group g[N_EV_COLS];
    size_t ng = perm_groups(e, g);
    for (size_t k = 0; k < ng; k++) {
        if (g[k].half != h->half)
            continue;
        if (g[k].elem)
            gather_back(g[k].col[0], g[k].elem, h->perm, n, tmp);
        else if (g[k].n_cols == 2)
            gather_back_44(g[k].col[0], g[k].col[1], h->perm, n, tmp);
        else
            gather_back_112(g[k].col[0], g[k].col[1], g[k].col[2], h->perm, n, tmp);
    }
    if (!h->half)
        tp_scratch_put(h->sc, tmp);
}

/* 1 when row a goes before row b: earlier, or as early and longer (ties: neither). */
static inline int row_before(const tp_events *e, uint32_t a, uint32_t b) {
    return e->ts[a] < e->ts[b] || (e->ts[a] == e->ts[b] && tp_ev_dur(e, a) > tp_ev_dur(e, b));
}

/* 1 when row a goes before row b in the order ts_sort gives (row_before, ties by row): a
 * total order, which perm lists. */
static inline int row_order_before(const tp_events *e, uint32_t a, uint32_t b) {
    return row_before(e, a, b) || (a < b && !row_before(e, b, a));
}

/* The rows marked in `side` (a bit per old row), each with its new row: a binary search of
 * perm by row_order_before, before the columns move (~20 steps a row where permute_cols
 * tested every row's bit: ~5 M instructions on a 2,000-step trace of 630 k rows for its 4 k
 * copies). Into moved, ascending by new row; returns how many. */
static size_t moved_by_search(const tp_events *e, const uint32_t *perm, const uint64_t *side,
                              moved_row *moved) {
    size_t n = e->n, k = 0;
    for (size_t w = 0; w <= n / 64; w++)
        for (uint64_t bits = side[w]; bits; bits &= bits - 1) {
            uint32_t o = (uint32_t)(w * 64 + (size_t)__builtin_ctzll(bits));
            size_t lo = 0, hi = n;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (row_order_before(e, perm[mid], o))
                    lo = mid + 1;
                else
                    hi = mid;
            }
            assert(lo < n && perm[lo] == o);
            moved[k++] = (moved_row){(uint32_t)lo, o};
        }
    uint64_t *key = tp_mem_xalloc(k ? k : 1, sizeof *key);
    uint32_t *old = tp_mem_xalloc(k ? k : 1, sizeof *old);
    for (size_t j = 0; j < k; j++)
        key[j] = moved[j].new_row, old[j] = moved[j].old_row;
    tp_sort_pairs(key, old, k);
    for (size_t j = 0; j < k; j++)
        moved[j] = (moved_row){(uint32_t)key[j], old[j]};
    free(key), free(old);
    return k;
}

/* Permutes every allocated column in place (new row i = old row perm[i]): each is gathered
 * into a block of its thread (permute_cols: a scratch block, or tmp1, n rows of 4 bytes) and
 * copied back. No column moves into new pages (on a 10 M-record trace that was ~95 MB of
 * fresh pages, a page fault per 4 KiB, for old columns freed right after); the scratch block
 * stays in sc for the view. This replaced walking
 * the permutation's cycles in place, whose search (~63 ms on a 10 M-record trace) was serial:
 * the copies back cost less, on both threads. The columns keep their capacity (finish fits
 * them after). */
static void events_permute(tp_events *e, const uint32_t *perm, tp_scratch *sc, void *tmp1) {
    size_t n = e->n;
    size_t n_side = e->n_copies; /* side tables follow their rows */
#define ANY_WIDE(w) n_side += e->w.n;
    TP_EV_WIDES(ANY_WIDE)
#undef ANY_WIDE
    uint64_t *side = NULL; /* the rows they hold, a bit each */
    moved_row *moved = NULL;
    if (n_side) {
        side = tp_mem_xcalloc(n / 64 + 1, sizeof *side);
        for (size_t k = 0; k < e->n_copies; k++)
            side[e->copies[k].row / 64] |= UINT64_C(1) << (e->copies[k].row % 64);
#define MARK_WIDE(w)                                                                               \
    for (size_t k = 0; k < e->w.n; k++)                                                            \
        side[e->w.row[k] / 64] |= UINT64_C(1) << (e->w.row[k] % 64);
        TP_EV_WIDES(MARK_WIDE)
#undef MARK_WIDE
        moved = tp_mem_xalloc(2 * n_side, sizeof *moved); /* each half finds at most n_side */
    }
    /* few side rows (a native trace's copies): each found in the new order by a search before
     * the columns move, not by a test of every row in permute_cols */
    size_t n_moved = 0;
    if (n_side && n_side * 32 < n) {
        n_moved = moved_by_search(e, perm, side, moved);
        free(side), side = NULL;
    }
    /* no side rows: no `moved` either (NULL + 0 is undefined in C; UBSan under fuzz_kineto) */
    moved_row *moved1 = moved ? moved + n_side : NULL;
    permute_half half[2] = {{e, perm, sc, side, moved, 0, 0, NULL},
                            {e, perm, sc, side, moved1, 0, 1, tmp1}};
    tp_par_both(n, permute_cols, &half[0], permute_cols, &half[1]);
    if (!n_side)
        return;
    if (side) {
        free(side);
        memmove(moved + half[0].n_moved, moved + n_side, half[1].n_moved * sizeof *moved);
        n_moved = half[0].n_moved + half[1].n_moved; /* ascending by new row */
    }
    copies_renumber(e, moved, n_moved);
#define RENUMBER_WIDE(w) wide_renumber(&e->w, moved, n_moved);
    TP_EV_WIDES(RENUMBER_WIDE)
#undef RENUMBER_WIDE
    free(moved);
}

/* Orders rows[0..n) (of equal ts) by dur, longer first, stably; key[0..n) is scratch. */
static void longer_first(const tp_events *e, uint64_t *key, uint32_t *rows, size_t n) {
    for (size_t i = 0; i < n; i++)
        key[i] = tp_sort_key_i64(-tp_ev_dur(e, rows[i]));
    tp_sort_pairs(key, rows, n); /* an insertion sort for the short runs of a real trace */
}

/* Buckets of the ts sort at most this big are finished by insertion; bigger ones (a crafted
 * or oddly spread trace) by the radix sort. */
#define TS_INSERTION_MAX 64

/* rows[0..n) (in the order they should keep on ties) ordered by ts, longer first on equal
 * ts, stably: a stable radix sort by ts, then each run of equal ts by duration. key: room for
 * n keys. */
static void ts_sort_radix(const tp_events *e, uint32_t *rows, size_t n, uint64_t *key,
                          tp_scratch *sc) {
    for (size_t i = 0; i < n; i++)
        key[i] = tp_sort_key_i64(e->ts[rows[i]]);
    tp_sort_pairs_s(key, rows, n, sc);
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && key[j] == key[i];)
            j++;
        if (j - i > 1)
            longer_first(e, key + i, rows + i, j - i);
    }
}

/* One thread's half of the ts sort (ts_sort): rows [from, to) and, once they are spread,
 * the buckets [b_from, b_to). */
typedef struct {
    const tp_events *e;
    uint32_t *perm;
    tp_scratch *sc;
    size_t from, to;
    int64_t lo, hi; /* the half's least and greatest ts */
    int64_t base;   /* the table's least ts */
    int shift;      /* a row's bucket: (ts - base) >> shift */
    size_t nb;
    uint32_t *at;        /* nb counters: this half's rows per bucket, then where they go */
    const uint32_t *end; /* where each bucket ends (the second half's at, once spread) */
    size_t b_from, b_to;
} ts_half;

static void ts_range(void *arg) {
    ts_half *h = arg;
    const int64_t *ts = h->e->ts;
    int64_t lo = ts[h->from], hi = ts[h->from];
#pragma GCC unroll 4 /* as GATHER_BACK */
    for (size_t i = h->from + 1; i < h->to; i++) {
        lo = ts[i] < lo ? ts[i] : lo;
        hi = ts[i] > hi ? ts[i] : hi;
    }
    h->lo = lo, h->hi = hi;
}

static inline size_t ts_bucket(const ts_half *h, int64_t ts) {
    return (size_t)(((uint64_t)ts - (uint64_t)h->base) >> h->shift);
}

/* ts_count and ts_spread read the half's fields into locals first: a store into `at` or
 * `perm` (uint32_t) may alias h->shift (an int) for the compiler, which then read h->shift,
 * h->base and the arrays' addresses again for every row. */
static void ts_count(void *arg) {
    ts_half *h = arg;
    h->at = tp_scratch_get0(h->sc, h->nb, sizeof *h->at);
    const ts_half k = *h;
#pragma GCC unroll 4 /* as GATHER_BACK */
    for (size_t i = k.from; i < k.to; i++)
        k.at[ts_bucket(&k, k.e->ts[i])]++;
}

static void ts_spread(void *arg) {
    const ts_half k = *(const ts_half *)arg;
#pragma GCC unroll 4 /* as GATHER_BACK */
    for (size_t i = k.from; i < k.to; i++)
        k.perm[k.at[ts_bucket(&k, k.e->ts[i])]++] = (uint32_t)i;
}

/* Each of the half's buckets finished by a stable insertion sort on (ts, -dur), or the radix
 * sort for one bigger than TS_INSERTION_MAX. */
static void ts_finish_buckets(void *arg) {
    ts_half *h = arg;
    const tp_events *e = h->e;
    uint64_t *key = NULL; /* for the radix sort (a crafted or oddly spread trace) */
    size_t key_n = 0;
    for (size_t b = h->b_from; b < h->b_to; b++) {
        size_t start = b ? h->end[b - 1] : 0;
        uint32_t *rows = h->perm + start;
        size_t m = h->end[b] - start;
        if (m > TS_INSERTION_MAX) {
            if (m > key_n)
                key = tp_scratch_resize(h->sc, key, 0, key_n = m, sizeof *key);
            ts_sort_radix(e, rows, m, key, h->sc);
            continue;
        }
        for (size_t i = 1; i < m; i++) {
            uint32_t r = rows[i];
            size_t j = i;
            for (; j > 0 && row_before(e, r, rows[j - 1]); j--)
                rows[j] = rows[j - 1];
            rows[j] = r;
        }
    }
    if (key)
        tp_scratch_put(h->sc, key);
}

/* The order of the rows by ts, longer first on ties, then by their current order (load
 * order on the first finish), in perm. Rows are spread by ts over about n / 4 buckets
 * (counting, stable), and each bucket is finished by a stable insertion sort on (ts, -dur):
 * the load order is nearly sorted within a bucket (a thread's rows in time order, ranges
 * emitted as they end), so this is two passes and a few moves per row, and it needs only
 * perm and the counts where a radix sort of (key, row) pairs mapped 24 bytes per row of
 * scratch (~150 MB and as many page faults on a 10 M-record trace). Each pass runs on two
 * threads (tp_par_both), each with half of the rows: the first half's rows of a bucket go
 * before the second's, as one pass in row order puts them; then each finishes the buckets
 * that end in its half of perm. */
static void ts_sort(const tp_events *e, uint32_t *perm, tp_scratch *sc) {
    size_t n = e->n; /* 2 or more: a shorter table is sorted (events_sort) */
    ts_half h[2] = {{.e = e, .perm = perm, .sc = sc, .from = 0, .to = n / 2},
                    {.e = e, .perm = perm, .sc = sc, .from = n / 2, .to = n}};
    tp_par_both(n, ts_range, &h[0], ts_range, &h[1]);
    int64_t lo = h[0].lo < h[1].lo ? h[0].lo : h[1].lo, hi = h[0].hi > h[1].hi ? h[0].hi : h[1].hi;
    uint64_t span = (uint64_t)hi - (uint64_t)lo;
    size_t nb = 1;
    while (nb < n / 4 && nb < ((size_t)1 << 24))
        nb *= 2;
    int shift = 0;
    while ((span >> shift) >= nb)
        shift++;
    nb = (size_t)(span >> shift) + 1;
    for (int k = 0; k < 2; k++)
        h[k].base = lo, h[k].shift = shift, h[k].nb = nb;
    tp_par_both(n, ts_count, &h[0], ts_count, &h[1]);
    uint32_t *at0 = h[0].at, *at1 = h[1].at;
    uint32_t sum = 0;
    for (size_t b = 0; b < nb; b++) { /* each half's first slot in bucket b */
        uint32_t c0 = at0[b], c1 = at1[b];
        at0[b] = sum;
        at1[b] = sum + c0;
        sum += c0 + c1;
    }
    tp_par_both(n, ts_spread, &h[0], ts_spread, &h[1]);
    /* at1[b] is now where bucket b ends; the halves split the buckets near the middle row */
    size_t mid = 0, top = nb; /* the first bucket that ends past n / 2 (at1 ascends) */
    while (mid < top) {
        size_t b = mid + (top - mid) / 2;
        if (at1[b] <= n / 2)
            mid = b + 1;
        else
            top = b;
    }
    for (int k = 0; k < 2; k++)
        h[k].end = at1;
    h[0].b_from = 0, h[0].b_to = mid, h[1].b_from = mid, h[1].b_to = nb;
    tp_par_both(n, ts_finish_buckets, &h[0], ts_finish_buckets, &h[1]);
    tp_scratch_put(sc, at1);
    tp_scratch_put(sc, at0);
}

/* Row i's load position `pos` into load_d16 (rows in ascending order: wide_load stays in
 * row order). A trace's rows load nearly in time order (a collector's buffers, a range
 * written when it ends), so pos - i fits 16 bits but for a few rows. */
static __attribute__((noinline)) void load_put_wide(tp_events *e, size_t i, size_t pos) {
    e->load_d16[i] = TP_EV_LOAD_WIDE;
    wide_append(&e->wide_load, i, (int64_t)pos);
}
static inline void load_put(tp_events *e, size_t i, size_t pos) {
    int64_t d = (int64_t)pos - (int64_t)i;
    if (d > INT16_MIN && d <= INT16_MAX)
        e->load_d16[i] = (int16_t)d;
    else
        load_put_wide(e, i, pos);
}

/* 1 when load order positions with `wide` of n rows outside load_d16's 16 bits take fewer
 * bytes as load_rows32 (4 a row) than as load_d16 and wide_load (2 a row and 12 a wide
 * one). */
static int load_wide_is_cheaper(size_t wide, size_t n) {
    return wide * 12 > n * 2;
}

/* load_rows32 of rows whose positions are pos[i]: row i at pos[i]. */
static void load_rows_put(tp_events *e, const uint32_t *restrict pos) {
    uint32_t *restrict rows = tp_mem_xalloc(e->n ? e->n : 1, sizeof *rows);
    for (size_t i = 0; i < e->n; i++)
        rows[pos[i]] = (uint32_t)i;
    e->load_rows32 = rows;
}

const uint32_t *tp_ev_load_rows(const tp_events *e, uint32_t *buf) {
    if (e->dropped & TP_EV_DROP_LOAD_ORDER)
        abort();
    if (e->load_rows32)
        return e->load_rows32;
    /* each row's position, its wide values read in step with the rows (both ascend) instead
     * of a search each */
    const tp_ev_wide *w = &e->wide_load;
    for (size_t i = 0, k = 0; i < e->n; i++) {
        int16_t d = e->load_d16[i];
        size_t at;
        if (d != TP_EV_LOAD_WIDE) {
            at = (size_t)((int64_t)i + d);
        } else {
            while (k < w->n && w->row[k] < i)
                k++;
            assert(k < w->n && w->row[k] == i);
            at = (size_t)w->val[k];
        }
        buf[at] = (uint32_t)i;
    }
    return buf;
}

/* The load order column from the first finish's permutation (perm[i]: row i's position):
 * load_d16 of every row, differences mod 2^32 (exact: both are below 2^32), no branch per
 * row (a loop the compiler vectorizes), counting the rows that do not fit 16 bits; then
 * either those rows' wide values in a second pass, only when there are any, or, when they
 * are too many (load_wide_is_cheaper), the permutation inverted as load_rows32. */
static void load_from_perm(tp_events *e, const uint32_t *restrict perm) {
    size_t n = e->n;
    uint32_t wide = 0;
    int16_t *restrict d16 = e->load_d16;
    size_t i = 0;
    /* blocks of 16: a loop of a fixed count is what GCC -O2's cheap vectorizer takes */
    for (; i + 16 <= n; i += 16)
        for (size_t j = i; j < i + 16; j++) {
            uint32_t d = perm[j] - (uint32_t)j;
            d16[j] = (int16_t)(uint16_t)d;
            wide += d + 32767u > 65534u; /* outside [-32767, 32767] */
        }
    for (; i < n; i++) {
        uint32_t d = perm[i] - (uint32_t)i;
        d16[i] = (int16_t)(uint16_t)d;
        wide += d + 32767u > 65534u;
    }
    if (load_wide_is_cheaper(wide, n)) {
        free(e->load_d16), e->load_d16 = NULL;
        load_rows_put(e, perm);
        return;
    }
    for (i = 0; wide && i < n; i++)
        if (perm[i] - (uint32_t)i + 32767u > 65534u)
            load_put_wide(e, i, perm[i]);
}

/* The load order column of rows whose positions are pos[i] (NULL: i), either form, after
 * a later finish or when the first found the rows sorted. */
static void load_from_pos(tp_events *e, const uint32_t *pos) {
    size_t n = e->n, wide = 0;
    for (size_t i = 0; pos && i < n; i++)
        wide += pos[i] - (uint32_t)i + 32767u > 65534u;
    if (load_wide_is_cheaper(wide, n)) {
        load_rows_put(e, pos);
        return;
    }
    e->load_d16 = tp_mem_xalloc(n ? n : 1, sizeof *e->load_d16);
    for (size_t i = 0; i < n; i++)
        load_put(e, i, pos ? pos[i] : i);
}

/* Sorts by ts, longer first on ties (an enclosing range precedes its children), then by
 * load order so equal events keep the file's order, and sets the load order column (the
 * permutation on the first finish; a later one carries each row's along). Skips the sort
 * when already sorted. tmp1: room for n rows of 4 bytes, free to overwrite (events_permute). */
static void events_sort(tp_events *e, tp_scratch *sc, void *tmp1) {
    size_t n = e->n;
    uint32_t *was = NULL; /* a finish before: each row's load position (this order's) */
    if (tp_ev_has_load_ord(e)) {
        was = tp_scratch_get(sc, n ? n : 1, sizeof *was);
        uint32_t *buf = e->load_rows32 ? NULL : tp_scratch_get(sc, n ? n : 1, sizeof *buf);
        const uint32_t *rows = tp_ev_load_rows(e, buf);
        for (size_t k = 0; k < n; k++)
            was[rows[k]] = (uint32_t)k;
        if (buf)
            tp_scratch_put(sc, buf);
        free(e->load_d16), e->load_d16 = NULL; /* neither permuted nor renumbered */
        free(e->load_rows32), e->load_rows32 = NULL;
        wide_clear(&e->wide_load);
    }
    int sorted = 1;
    for (size_t i = 1; i < n && sorted; i++)
        if (row_before(e, (uint32_t)i, (uint32_t)i - 1))
            sorted = 0;
    uint32_t *perm = NULL; /* new row i = old row perm[i]; NULL: the same */
    if (!sorted) {
        perm = tp_scratch_get(sc, n, sizeof *perm);
        ts_sort(e, perm, sc);
        events_permute(e, perm, sc, tmp1);
#define PERMUTE_SPARSE(c, sp, none, by_corr, grows)                                                \
    if ((grows) && e->sp.bits)                                                                     \
        sparse_permute(e, &e->sp, perm, none);
        TP_EV_SPARSE(PERMUTE_SPARSE)
#undef PERMUTE_SPARSE
    }
    if (perm && !was) { /* the first finish: the permutation is the load order */
        e->load_d16 = tp_mem_xalloc(n ? n : 1, sizeof *e->load_d16);
        load_from_perm(e, perm);
    } else if (perm) { /* each row's position from before, carried along (into was) */
        for (size_t i = 0; i < n; i++)
            perm[i] = was[perm[i]];
        load_from_pos(e, perm);
    } else {
        load_from_pos(e, was);
    }
    if (perm)
        tp_scratch_put(sc, perm);
    if (was)
        tp_scratch_put(sc, was);
}

/* Gives the side tables' and the places' growth slack back (their entries are all there). */
static void events_fit_side(tp_events *e) {
    if (e->copies_cap != e->n_copies && e->n_copies) {
        GROW(e->copies, e->n_copies);
        e->copies_cap = e->n_copies;
    }
#define FIT_WIDE(w) wide_fit(&e->w);
    TP_EV_WIDES(FIT_WIDE)
#undef FIT_WIDE
    places_fit(&e->places);
}

/* The totals after the rows moved (new_of: old row -> new row), back in row order. */
static void totals_permute(tp_memevents *e, const uint32_t *new_of) {
    size_t n = e->n_totals;
    uint64_t *key = tp_mem_xalloc(n, sizeof *key);
    uint32_t *order = tp_mem_xalloc(n, sizeof *order);
    for (size_t k = 0; k < n; k++)
        key[k] = new_of[e->totals[k].row], order[k] = (uint32_t)k;
    tp_sort_pairs(key, order, n);
    tp_memev_totals *t = tp_mem_xalloc(n, sizeof *t);
    for (size_t k = 0; k < n; k++) {
        t[k] = e->totals[order[k]];
        t[k].row = (uint32_t)key[k];
    }
    free(key), free(order), free(e->totals);
    e->totals = t, e->totals_cap = n;
}

static void memev_sort(tp_memevents *e) {
    int sorted = 1;
    for (size_t i = 1; i < e->n && sorted; i++)
        sorted = e->ts[i] >= e->ts[i - 1];
    if (sorted)
        return;
    uint32_t *perm = tp_sort_order_i64(e->ts, e->n);
    size_t n = e->n;
    tp_spares sp = {{0}};
#define PERMUTE_COL(c, none) PERMUTE(e->c, perm, n, &sp);
    TP_MEMEV_ALL(PERMUTE_COL)
#undef PERMUTE_COL
    spares_free(&sp);
    e->cap = n;
    if (e->wide_place.n || e->wide_bytes.n || e->wide_size.n || e->n_totals) {
        uint32_t *new_of = tp_mem_xalloc(n, sizeof *new_of); /* the side tables follow */
        for (size_t i = 0; i < n; i++)
            new_of[perm[i]] = (uint32_t)i;
#define PERMUTE_WIDE(w)                                                                            \
    if (e->w.n)                                                                                    \
        wide_permute(&e->w, new_of);
        TP_MEMEV_WIDES(PERMUTE_WIDE)
#undef PERMUTE_WIDE
        if (e->n_totals)
            totals_permute(e, new_of);
        free(new_of);
    }
    free(perm);
}

/* Frees the growth slack (up to half of every column while loading) once the rows are all
 * there: an unsorted table lost it in the permutation already. */
static void memev_fit(tp_memevents *e) {
    if (e->cap != e->n && e->n)
        memev_resize(e, e->n);
    places_fit(&e->places);
#define FIT_WIDE(w) wide_fit(&e->w);
    TP_MEMEV_WIDES(FIT_WIDE)
#undef FIT_WIDE
    if (e->totals_cap != e->n_totals && e->n_totals) {
        GROW(e->totals, e->n_totals);
        e->totals_cap = e->n_totals;
    }
}

/* ---------------------------------------------------------------- indexes */

/* A place and its index, for ordering places (place_ranks). */
typedef struct {
    tp_ev_place p;
    uint32_t k;
} place_at;

static int cmp_i64(int64_t a, int64_t b) {
    return (a > b) - (a < b);
}

/* Threads in (tid, pid) order, streams in stream order. */
static int cmp_thread_place(const void *x, const void *y) {
    const tp_ev_place *a = &((const place_at *)x)->p, *b = &((const place_at *)y)->p;
    int c = cmp_i64(a->tid, b->tid);
    return c ? c : cmp_i64(a->pid, b->pid);
}

static int cmp_stream_place(const void *x, const void *y) {
    return cmp_i64(((const place_at *)x)->p.stream, ((const place_at *)y)->p.stream);
}

/* Per place: its rank in the order `cmp` gives (places `cmp` calls equal share one). */
static uint64_t *place_ranks(const tp_events *e, int (*cmp)(const void *, const void *)) {
    size_t n = e->places.n;
    place_at *v = tp_mem_xalloc(n + 1, sizeof *v);
    for (size_t k = 0; k < n; k++)
        v[k].p = e->places.v[k], v[k].k = (uint32_t)k;
    qsort(v, n, sizeof *v, cmp);
    uint64_t *rank = tp_mem_xalloc(n + 1, sizeof *rank);
    for (size_t k = 0, r = 0; k < n; k++) {
        r += k > 0 && cmp(&v[k - 1], &v[k]) != 0;
        rank[v[k].k] = r;
    }
    free(v);
    return rank;
}

/* Threads in (pid, tid) order: a thread pass's order. */
static int cmp_pid_tid_place(const void *x, const void *y) {
    const tp_ev_place *a = &((const place_at *)x)->p, *b = &((const place_at *)y)->p;
    int c = cmp_i64(a->pid, b->pid);
    return c ? c : cmp_i64(a->tid, b->tid);
}

typedef struct {
    const tp_events *e;
    const uint64_t *rank; /* per place */
} thread_rank_ctx;

static uint64_t thread_rank_of(const void *ctx, uint32_t row) {
    const thread_rank_ctx *t = ctx;
    return t->rank[tp_ev_place_index(t->e, row)];
}

void tp_events_sort_rows_by_thread(const tp_events *e, uint32_t *rows, size_t n, tp_scratch *s) {
    thread_rank_ctx t = {e, place_ranks(e, cmp_pid_tid_place)};
    size_t ngroups = 0;
    for (size_t k = 0; k < e->places.n; k++)
        ngroups = t.rank[k] + 1 > ngroups ? t.rank[k] + 1 : ngroups;
    tp_sort_rows_grouped_s(thread_rank_of, &t, ngroups, e->ts, rows, n, s);
    free((void *)t.rank);
}

/* Row i's place index; `narrow` (a constant where inlined): no place is wide, so the code is
 * the index, read without tp_ev_place_index's test (buckets_by_place's two passes read it for
 * every row, twice per pass in the scatter). */
__attribute__((always_inline)) static inline size_t place_code(const tp_events *e, size_t i,
                                                               int narrow) {
    return narrow ? e->place[i] : tp_ev_place_index(e, i);
}

/* buckets_by_place's counts: four counts per slot, by row mod 4 (see there). */
__attribute__((always_inline)) static inline void
slots_count(const tp_events *e, const uint32_t *slot, uint32_t *at, size_t np, int narrow) {
    size_t i4 = e->n & ~(size_t)3;
    for (size_t i = 0; i < i4; i += 4) {
        at[slot[place_code(e, i, narrow)] + 1]++;
        at[np + 2 + slot[place_code(e, i + 1, narrow)] + 1]++;
        at[2 * (np + 2) + slot[place_code(e, i + 2, narrow)] + 1]++;
        at[3 * (np + 2) + slot[place_code(e, i + 3, narrow)] + 1]++;
    }
    for (size_t i = i4; i < e->n; i++)
        at[slot[place_code(e, i, narrow)] + 1]++;
}

/* buckets_by_place's scatter: a run of rows of one slot at a time (a thread's rows come in
 * runs), its position held in a register, in row order (stable: rows stay in time order
 * within a bucket); at[s]: where slot s's rows go. */
__attribute__((always_inline)) static inline void
slots_scatter(const tp_events *e, const uint32_t *slot, uint32_t *at, uint32_t *rows, int narrow) {
    for (size_t i = 0; i < e->n;) {
        uint32_t s = slot[place_code(e, i, narrow)];
        if (!s) {
            i++;
            continue;
        }
        uint32_t pos = at[s];
        do
            rows[pos++] = (uint32_t)i++;
        while (i < e->n && slot[place_code(e, i, narrow)] == s);
        at[s] = pos;
    }
}

/* Groups the rows whose stream is (want_gpu) or is not (!want_gpu) -1 into CSR buckets of the
 * places that `cmp` calls equal, in its order, rows in each bucket staying in time order (a
 * stable sort by the place's rank: as stable sorts by the places' fields would), by counting
 * over every row: no list of the rows first, no copy of it. Keys are set by the caller. */
static void buckets_by_place(tp_buckets *b, const tp_events *e,
                             int (*cmp)(const void *, const void *), int want_gpu, tp_scratch *sc) {
    buckets_free(b);
    uint64_t *rank = place_ranks(e, cmp); /* ranks < places.n: few, so a counting sort */
    size_t np = e->places.n;
    /* slot[k]: 1 + place k's rank when its rows belong here (their stream is or is not -1),
     * else 0, the slot of the rows left out */
    uint32_t *slot = tp_mem_xalloc(np + 1, sizeof *slot);
    for (size_t k = 0; k < np; k++)
        slot[k] = (e->places.v[k].stream != -1) == want_gpu ? (uint32_t)rank[k] + 1 : 0;
    free(rank);
    /* four counts per slot, by row mod 4: a thread's rows come in runs, and one count bumped
     * row after row waits for its own last store each time */
    uint32_t *at = tp_scratch_get0(sc, 4 * (np + 2), sizeof *at);
    if (!e->wide_place.n)
        slots_count(e, slot, at, np, 1);
    else
        slots_count(e, slot, at, np, 0);
    for (size_t k = 0; k < np + 2; k++)
        at[k] += at[np + 2 + k] + at[2 * (np + 2) + k] + at[3 * (np + 2) + k];
    size_t nb = 0, n = 0;
    at[1] = 0; /* the rows left out take no room: the first bucket starts at 0 */
    for (size_t k = 2; k <= np + 1; k++) {
        nb += at[k] > 0;
        at[k] += at[k - 1];
    }
    n = at[np + 1];
    b->n = nb;
    b->key = tp_mem_xcalloc(nb, sizeof *b->key);
    b->key2 = tp_mem_xcalloc(nb, sizeof *b->key2);
    b->off = tp_mem_xcalloc(nb + 1, sizeof *b->off);
    for (size_t k = 1, j = 0; k <= np; k++)
        if (at[k + 1] > at[k])
            b->off[j++] = at[k];
    b->off[nb] = (uint32_t)n;
    /* straight into the index's array (slots_scatter) */
    uint32_t *rows = tp_mem_xalloc(n ? n : 1, sizeof *rows);
    if (!e->wide_place.n)
        slots_scatter(e, slot, at, rows, 1);
    else
        slots_scatter(e, slot, at, rows, 0);
    b->rows = rows;
    free(slot);
    tp_scratch_put(sc, at);
}

/* Streams are keyed by stream id; key2: the device of the stream's first row. */
static void index_streams(tp_rank *r, tp_scratch *sc) {
    const tp_events *e = &r->ev;
    tp_buckets *b = &r->streams;
    buckets_by_place(b, e, cmp_stream_place, 1, sc);
    for (size_t j = 0; j < b->n; j++) {
        b->key[j] = tp_ev_stream(e, b->rows[b->off[j]]);
        b->key2[j] = tp_ev_device(e, b->rows[b->off[j]]);
    }
}

/* Threads are keyed (tid, pid): key = tid and key2 = pid. */
static void index_threads(tp_rank *r, tp_scratch *sc) {
    const tp_events *e = &r->ev;
    tp_buckets *b = &r->threads;
    buckets_by_place(b, e, cmp_thread_place, 0, sc);
    for (size_t j = 0; j < b->n; j++) {
        b->key[j] = tp_ev_tid(e, b->rows[b->off[j]]);
        b->key2[j] = tp_ev_pid(e, b->rows[b->off[j]]);
    }
}

/* Adds the rows [from, to) of each cat byte value to count[0, 256): a counter for every byte
 * value, so the loop needs no clamp to TP_CAT_OTHER (cat_fold does it once per value); four
 * sets of counters, since one bumped row after row waits for its own last store. */
static void cat_count(const tp_events *e, size_t from, size_t to, size_t *count) {
    uint32_t c4[4][256] = {{0}}; /* rows fit 32 bits (the index's rows are uint32_t) */
    size_t i = from;
    const uint8_t *cat = e->cat;
    for (; i + 4 <= to; i += 4) { /* written out: GCC kept a loop over k (7 instructions a row) */
        c4[0][cat[i]]++;
        c4[1][cat[i + 1]]++;
        c4[2][cat[i + 2]]++;
        c4[3][cat[i + 3]]++;
    }
    for (; i < to; i++)
        c4[0][cat[i]]++;
    for (size_t v = 0; v < 256; v++)
        count[v] += (size_t)c4[0][v] + c4[1][v] + c4[2][v] + c4[3][v];
}

/* Folds cat_count's counts of values past the categories into TP_CAT_OTHER (as every reader
 * of the column does); returns how many there were. */
static size_t cat_fold(size_t *count) {
    size_t past = 0;
    for (size_t v = TP_CAT_COUNT; v < 256; v++)
        past += count[v];
    count[TP_CAT_OTHER] += past;
    return past;
}

/* Per-category row lists by counting sort (few categories; rows stay in time order), in two
 * halves, one on each thread (index_cats_half): half 0 takes the rows [0, n / 2) and writes
 * the buckets' keys and starts, half 1 the rest. Each counts both halves of the rows itself
 * (a byte a row) rather than wait for the other; the halves write disjoint rows of the index.
 * On a 10 M-record trace the index was ~25 ms on one thread (its 25 MB of fresh pages most of
 * it), which left one thread that much longer than the other. index_cats_begin allocates the
 * index before the threads start. */
static void index_cats_begin(tp_rank *r) {
    buckets_free(&r->cats);
    r->cats.rows = tp_mem_xalloc(r->ev.n ? r->ev.n : 1, sizeof *r->cats.rows);
}

static void index_cats_half(tp_rank *r, int half) {
    const tp_events *e = &r->ev;
    tp_buckets *b = &r->cats;
    size_t mid = e->n / 2, lo[256] = {0}, count[256] = {0};
    cat_count(e, 0, mid, lo);
    memcpy(count, lo, sizeof count);
    cat_count(e, mid, e->n, count);
    size_t lo_past = cat_fold(lo), past = cat_fold(count);
    int clamp = half ? past > lo_past : lo_past > 0; /* this half has a value past them */
    size_t start[TP_CAT_COUNT], nb = 0, at = 0;
    for (size_t c = 0; c < TP_CAT_COUNT; c++) {
        start[c] = at + (half ? lo[c] : 0);
        nb += count[c] > 0;
        at += count[c];
    }
    if (!half) {
        b->key = tp_mem_xcalloc(nb, sizeof *b->key);
        b->key2 = tp_mem_xcalloc(nb, sizeof *b->key2);
        b->off = tp_mem_xcalloc(nb + 1, sizeof *b->off);
        for (size_t c = 0, j = 0, o = 0; c < TP_CAT_COUNT; o += count[c++])
            if (count[c]) {
                b->key[j] = (int64_t)c;
                b->off[j++] = (uint32_t)o;
            }
        b->off[nb] = (uint32_t)e->n;
        b->n = nb;
    }
    size_t from = half ? mid : 0, to = half ? e->n : mid;
    if (clamp) {
        for (size_t i = from; i < to; i++)
            b->rows[start[e->cat[i] < TP_CAT_COUNT ? e->cat[i] : TP_CAT_OTHER]++] = (uint32_t)i;
    } else {         /* every value a category: no clamp */
#pragma GCC unroll 4 /* as GATHER_BACK */
        for (size_t i = from; i < to; i++)
            b->rows[start[e->cat[i]]++] = (uint32_t)i;
    }
}

/* Splits the correlation range into equal slices (about one per 4 entries, at most 2^16) and
 * records where each starts in by_corr, so a lookup bisects one slice (a few entries)
 * instead of all of them: the correlation index is the join of every launch with its GPU
 * work, asked once per row. */
/* The directory's slices, corr_lo, corr_hi and corr_shift for the n ids lo..hi of by_corr;
 * returns the array of its slices + 1 entries, for the caller to fill. */
static uint32_t *corr_dir_shape(tp_rank *r, int64_t lo, int64_t hi, size_t *slices_out, int want) {
    free(r->corr_dir);
    r->corr_dir = NULL;
    size_t slices = 1;
    while (slices < (1u << 16) && slices * 4 < r->n_by_corr)
        slices *= 2;
    r->corr_lo = lo, r->corr_hi = hi;
    uint64_t span = (uint64_t)hi - (uint64_t)lo;
    r->corr_shift = 0;
    while ((span >> r->corr_shift) >= slices)
        r->corr_shift++;
    *slices_out = slices;
    return want ? r->corr_dir = tp_mem_xalloc(slices + 1, sizeof *r->corr_dir) : NULL;
}

/* want: 0 when the caller drops the directory (TP_FINISH_NO_CORR_DIR) */
static void corr_directory(tp_rank *r, int want) {
    const tp_events *e = &r->ev;
    if (!r->n_by_corr || !want) {
        free(r->corr_dir);
        r->corr_dir = NULL;
        return;
    }
    size_t slices;
    uint32_t *dir = corr_dir_shape(r, tp_ev_corr(e, r->by_corr[0]),
                                   tp_ev_corr(e, r->by_corr[r->n_by_corr - 1]), &slices, 1);
    /* locals: a store into dir (uint32_t) may alias r->corr_shift (an int) for the compiler,
     * which then read the rank's fields again for every entry */
    const uint32_t *by = r->by_corr;
    size_t at = 0, n = r->n_by_corr;
    uint64_t lo = (uint64_t)r->corr_lo;
    int shift = r->corr_shift;
    for (size_t j = 0; j <= slices; j++) { /* first entry of slice j */
        while (at < n && ((uint64_t)tp_ev_corr(e, by[at]) - lo) >> shift < j)
            at++;
        dir[j] = (uint32_t)at;
    }
}

/* rows[0..n) (ascending) by correlation, ties in row order, by counting when the ids span
 * at most a few per row (CUPTI numbers them from 1, one per call: a launch and its GPU rows
 * share one), which is the stable sort's order in two passes instead of four or five; 0
 * (nothing done) when they spread wider. */
static int corr_counting_sort(const tp_events *e, uint32_t *rows, size_t n, tp_scratch *sc) {
    if (n < 2)
        return 0;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t k = 0; k < n; k++) {
        int64_t c = tp_ev_corr(e, rows[k]);
        lo = c < lo ? c : lo;
        hi = c > hi ? c : hi;
    }
    uint64_t span = (uint64_t)hi - (uint64_t)lo;
    if (span > 4 * (uint64_t)n)
        return 0;
    uint32_t *at = tp_scratch_get(sc, (size_t)span + 2, sizeof *at);
    uint32_t *out = tp_scratch_get(sc, n, sizeof *out);
    memset(at, 0, ((size_t)span + 2) * sizeof *at);
    for (size_t k = 0; k < n; k++)
        at[(uint64_t)tp_ev_corr(e, rows[k]) - (uint64_t)lo + 1]++;
    for (size_t j = 1; j <= (size_t)span + 1; j++)
        at[j] += at[j - 1];
    for (size_t k = 0; k < n; k++)
        out[at[(uint64_t)tp_ev_corr(e, rows[k]) - (uint64_t)lo]++] = rows[k];
    memcpy(rows, out, n * sizeof *rows);
    tp_scratch_put(sc, out);
    tp_scratch_put(sc, at);
    return 1;
}

/* index_corr when every correlation is its own 32-bit code (no high halves, no wide values)
 * and they span at most 4 per row: a counting sort over every row, straight into the index's
 * array (no list of the rows first, no copy of it), and the directory from its counts. 0
 * when it does not apply. */
static int corr_index_direct(tp_rank *r, tp_scratch *sc, int want_dir) {
    const tp_events *e = &r->ev;
    if (e->corr_hi_any || e->wide_corr.n)
        return 0;
    uint32_t lo = UINT32_MAX, hi = 0;
    size_t n = 0;
#pragma GCC unroll 4 /* as GATHER_BACK */
    for (size_t i = 0; i < e->n; i++) {
        uint32_t v = e->corr32[i];
        if (v == TP_EV_U32_NONE)
            continue;
        n++;
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    if (n < 2 || (uint64_t)(hi - lo) > 4 * (uint64_t)n) /* as corr_counting_sort decides */
        return 0;
    size_t span = (size_t)(hi - lo);
    uint32_t *at = tp_scratch_get0(sc, span + 2, sizeof *at);
#pragma GCC unroll 4 /* as GATHER_BACK */
    for (size_t i = 0; i < e->n; i++)
        if (e->corr32[i] != TP_EV_U32_NONE)
            at[e->corr32[i] - lo + 1]++;
    for (size_t j = 1; j <= span + 1; j++)
        at[j] += at[j - 1];
    /* the directory from the counts: at[k] is now the first entry of id lo + k (k <= span + 1,
     * n past the last), so slice j starts at at[j << shift] (corr_directory's search of
     * by_corr, ~13 instructions an entry, is not needed) */
    r->n_by_corr = n;
    size_t slices;
    uint32_t *dir = corr_dir_shape(r, lo, hi, &slices, want_dir);
    int shift = r->corr_shift;
    for (size_t j = 0; dir && j <= slices; j++) {
        uint64_t k = (uint64_t)j << shift;
        dir[j] = at[k < span + 1 ? k : span + 1];
    }
    uint32_t *rows = tp_mem_xalloc(n, sizeof *rows);
#pragma GCC unroll 4                  /* as GATHER_BACK */
    for (size_t i = 0; i < e->n; i++) /* stable: (correlation, row) */
        if (e->corr32[i] != TP_EV_U32_NONE)
            rows[at[e->corr32[i] - lo]++] = (uint32_t)i;
    tp_scratch_put(sc, at);
    free(r->by_corr);
    r->by_corr = rows;
    return 1;
}

static void index_corr(tp_rank *r, tp_scratch *sc, int want_dir) {
    if (corr_index_direct(r, sc, want_dir)) /* the directory too */
        return;
    const tp_events *e = &r->ev;
    uint32_t *rows = tp_mem_xalloc(e->n ? e->n : 1, sizeof *rows);
    size_t n = 0;
    for (size_t i = 0; i < e->n; i++)
        if (e->corr32[i] != TP_EV_U32_NONE)
            rows[n++] = (uint32_t)i;
    rows = tp_mem_xrealloc(rows, n ? n : 1, sizeof *rows); /* kept: no slack */
    if (!corr_counting_sort(e, rows, n, sc)) {
        uint64_t *key = tp_scratch_get(sc, n + 1, sizeof *key);
        for (size_t k = 0; k < n; k++)
            key[k] = tp_sort_key_i64(tp_ev_corr(e, rows[k]));
        tp_sort_pairs_s(key, rows, n, sc); /* stable: (correlation, row) */
        tp_scratch_put(sc, key);
    }
    free(r->by_corr);
    r->by_corr = rows;
    r->n_by_corr = n;
    corr_directory(r, want_dir);
}

/* An open range on nest_thread's stack: its row, start and end (read once, when it is pushed:
 * the tests against the top read no column). */
typedef struct {
    int64_t ts, end;
    uint32_t row;
} nest_open;

/* nest_thread's rare rows: a parent over 65,534 rows back or a depth past 254. */
static __attribute__((noinline)) void nest_put_wide(tp_events *e, uint32_t row, size_t up,
                                                    size_t depth) {
    if (up < TP_EV_PARENT_WIDE) {
        e->parent16[row] = (uint16_t)up;
    } else {
        e->parent16[row] = TP_EV_PARENT_WIDE;
        wide_append(&e->wide_parent, row, (int64_t)(row - up));
    }
    size_t d = depth < 65535 ? depth : 65535; /* as deep as the 16-bit column went */
    if (d < TP_EV_DEPTH_WIDE) {
        e->depth8[row] = (uint8_t)d;
    } else {
        e->depth8[row] = TP_EV_DEPTH_WIDE;
        wide_append(&e->wide_depth, row, (int64_t)d);
    }
}

/* Nesting on one thread: rows come sorted by (ts, longer first), so a stack of open ranges
 * holds exactly the ancestors of the next row once the ones that do not contain it are
 * popped. A partial overlap is not nesting: the row becomes a sibling. */
static void nest_thread(tp_events *e, const uint32_t *rows, size_t n, nest_open *stack) {
    /* the columns in locals: a store into depth8 (a byte, which may alias anything for the
     * compiler) made it load every column's address from e again for each row */
    const int64_t *ts_col = e->ts;
    const uint32_t *dur32 = e->dur32;
    uint16_t *parent16 = e->parent16;
    uint8_t *depth8 = e->depth8;
    size_t depth = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t row = rows[i];
        int64_t ts = ts_col[row];
        int64_t dur = dur32[row] < TP_EV_U32_WIDE ? dur32[row] : tp_ev_dur(e, row);
        int64_t end = ts + dur;
        while (depth > 0) {
            const nest_open *top = &stack[depth - 1];
            if (top->end > ts && top->end >= end)
                break;
            if (top->end == ts && dur == 0 && top->end > top->ts)
                break; /* a zero-length event at a range's end still belongs to it */
            depth--;
        }
        size_t up = depth ? row - stack[depth - 1].row : 0; /* the parent is an earlier row */
        if (up < TP_EV_PARENT_WIDE && depth < TP_EV_DEPTH_WIDE)
            parent16[row] = (uint16_t)up, depth8[row] = (uint8_t)depth;
        else
            nest_put_wide(e, row, up, depth);
        stack[depth++] = (nest_open){ts, end, row};
    }
}

static void resolve_nesting(tp_rank *r) {
    tp_events *e = &r->ev;
    free(e->parent16);
    free(e->depth8);
    wide_clear(&e->wide_parent);
    wide_clear(&e->wide_depth);
    /* zeroed: no parent and depth 0 for the rows no thread holds (GPU-side rows) */
    e->parent16 = tp_mem_xcalloc(e->n ? e->n : 1, sizeof *e->parent16);
    e->depth8 = tp_mem_xcalloc(e->n ? e->n : 1, sizeof *e->depth8);
    const tp_buckets *t = &r->threads;
    size_t most = 0; /* the most rows of one thread: the deepest the stack can get */
    for (size_t j = 0; j < t->n; j++)
        most = t->off[j + 1] - t->off[j] > most ? t->off[j + 1] - t->off[j] : most;
    nest_open *stack = tp_mem_xalloc(most ? most : 1, sizeof *stack);
    for (size_t j = 0; j < t->n; j++)
        nest_thread(e, t->rows + t->off[j], t->off[j + 1] - t->off[j], stack);
    free(stack);
    wide_sort(&e->wide_parent);
    wide_sort(&e->wide_depth);
}

/* AMD when a HIP runtime call appears (ROCm traces name them hip*), else NVIDIA when any
 * GPU-side row exists, else CPU-only. A loader that knows better sets device_type itself. */
static void derive_device_type(const tp_model *m, tp_rank *r) {
    if (r->device_type != TP_DEVTYPE_CPU_ONLY)
        return;
    const tp_events *e = &r->ev;
    int gpu = 0, hip = 0;
    uint32_t named = UINT32_MAX; /* the runtime name tested last: calls repeat a few names */
    for (size_t i = 0; i < e->n && !hip; i++) { /* serial, every row of a GPU trace: cheap tests */
        if (!gpu)
            gpu = tp_ev_stream(e, i) != -1 || e->cat[i] == TP_CAT_KERNEL;
        if (e->cat[i] == TP_CAT_CUDA_RUNTIME && e->name[i] != named) {
            const char *name = tp_model_str(m, named = e->name[i]);
            hip = name[0] == 'h' && name[1] == 'i' && name[2] == 'p';
        }
    }
    r->device_type = hip ? TP_DEVTYPE_AMD : gpu ? TP_DEVTYPE_NVIDIA : TP_DEVTYPE_CPU_ONLY;
}

static int rank_cmp(const void *x, const void *y) {
    const tp_rank *p = x, *q = y;
    return (p->rank > q->rank) - (p->rank < q->rank);
}

/* ---------------------------------------------------------------- call stacks */

/* Makes frame_module a column of its own (the first frame that is not a Python one): every
 * frame before it was TP_STACK_PYTHON. */
static void frame_modules_own(tp_stacks *s) {
    s->frame_module = tp_mem_xalloc(s->frames_cap ? s->frames_cap : 1, sizeof *s->frame_module);
    for (size_t i = 0; i < s->n_frames; i++)
        s->frame_module[i] = TP_STACK_PYTHON;
}

/* Grows the frame columns to `cap` frames (frame_module and frame_next only when they are
 * columns). */
static void frames_grow(tp_stacks *s, size_t cap) {
    s->frames_cap = cap;
    GROW(s->frame_addr, s->frames_cap);
    if (s->frame_module)
        GROW(s->frame_module, s->frames_cap);
    if (s->frame_next)
        GROW(s->frame_next, s->frames_cap);
}

/* Room for `n` more frames, doubling. */
static void frames_fit(tp_stacks *s, size_t n) {
    if (s->n_frames + n > s->frames_cap) {
        size_t cap = s->frames_cap;
        while (s->n_frames + n > cap)
            cap = cap ? 2 * cap : 1024;
        frames_grow(s, cap);
    }
}

size_t tp_rank_add_frames(tp_rank *r, const uint32_t *module, const uint64_t *addr, size_t n) {
    tp_stacks *s = &r->stacks;
    if (n == 0) /* an empty stack (a crafted Call stack): its arrays may not exist yet */
        return s->n_frames;
    frames_fit(s, n);
    for (size_t i = 0; !s->frame_module && i < n; i++)
        if (module[i] != TP_STACK_PYTHON)
            frame_modules_own(s);
    size_t first = s->n_frames;
    if (s->frame_module)
        memcpy(s->frame_module + first, module, n * sizeof *module);
    memcpy(s->frame_addr + first, addr, n * sizeof *addr);
    for (size_t i = 0; s->frame_next && i < n; i++)
        s->frame_next[first + i] = (uint32_t)(first + i + 1);
    s->n_frames += n;
    return first;
}

size_t tp_rank_add_frame_on(tp_rank *r, uint32_t module, uint64_t addr, size_t outer) {
    tp_stacks *s = &r->stacks;
    frames_fit(s, 1);
    if (!s->frame_next) { /* the frames so far: each stack's contiguous */
        s->frame_next = tp_mem_xalloc(s->frames_cap, sizeof *s->frame_next);
        for (size_t i = 0; i < s->n_frames; i++)
            s->frame_next[i] = (uint32_t)(i + 1);
    }
    if (!s->frame_module && module != TP_STACK_PYTHON)
        frame_modules_own(s);
    size_t at = s->n_frames++;
    if (s->frame_module)
        s->frame_module[at] = module;
    s->frame_addr[at] = addr;
    s->frame_next[at] = outer == SIZE_MAX ? UINT32_MAX : (uint32_t)outer;
    return at;
}

void tp_rank_add_stack_frames(tp_rank *r, uint32_t id, size_t first, size_t n) {
    tp_stacks *s = &r->stacks;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        GROW(s->v, s->cap);
    }
    s->v[s->n++] = (tp_stack){id, (uint32_t)n, first};
}

void tp_rank_add_stack(tp_rank *r, uint32_t id, const uint32_t *module, const uint64_t *addr,
                       size_t n) {
    tp_rank_add_stack_frames(r, id, tp_rank_add_frames(r, module, addr, n), n);
}

void tp_rank_reserve_stacks(tp_rank *r, size_t stacks, size_t frames) {
    tp_stacks *s = &r->stacks;
    if (s->n + stacks > s->cap) {
        s->cap = s->n + stacks;
        GROW(s->v, s->cap);
    }
    if (s->n_frames + frames > s->frames_cap)
        frames_grow(s, s->n_frames + frames);
}

void tp_rank_add_stack_module(tp_model *m, tp_rank *r, uint32_t id, const char *path,
                              const uint8_t *build_id, size_t len) {
    tp_stacks *s = &r->stacks;
    if (s->n_modules == s->modules_cap) {
        s->modules_cap = s->modules_cap ? 2 * s->modules_cap : 16;
        GROW(s->modules, s->modules_cap);
    }
    tp_stack_module *mo = &s->modules[s->n_modules++];
    memset(mo, 0, sizeof *mo);
    mo->id = id;
    mo->path = path ? tp_model_intern(m, path, strlen(path)) : 0;
    mo->build_id_len = (uint32_t)(len < sizeof mo->build_id ? len : sizeof mo->build_id);
    if (mo->build_id_len)
        memcpy(mo->build_id, build_id, mo->build_id_len);
}

void tp_rank_add_stack_pycode(tp_model *m, tp_rank *r, uint32_t id, const char *file,
                              const char *name, uint32_t first_line) {
    tp_stacks *s = &r->stacks;
    if (s->n_pycodes == s->pycodes_cap) {
        s->pycodes_cap = s->pycodes_cap ? 2 * s->pycodes_cap : 16;
        GROW(s->pycodes, s->pycodes_cap);
    }
    s->pycodes[s->n_pycodes++] =
        (tp_stack_pycode){id, file ? tp_model_intern(m, file, strlen(file)) : 0,
                          name ? tp_model_intern(m, name, strlen(name)) : 0, first_line};
}

static int stack_cmp(const void *x, const void *y) {
    uint32_t a = ((const tp_stack *)x)->id, b = ((const tp_stack *)y)->id;
    return (a > b) - (a < b);
}

static int module_cmp(const void *x, const void *y) {
    uint32_t a = ((const tp_stack_module *)x)->id, b = ((const tp_stack_module *)y)->id;
    return (a > b) - (a < b);
}

static int pycode_cmp(const void *x, const void *y) {
    uint32_t a = ((const tp_stack_pycode *)x)->id, b = ((const tp_stack_pycode *)y)->id;
    return (a > b) - (a < b);
}

/* Stacks, modules and code objects by id, for the lookups; the frames stay where they are. */
static void stacks_sort(tp_stacks *s) {
    if (s->n_pycodes > 1)
        qsort(s->pycodes, s->n_pycodes, sizeof *s->pycodes, pycode_cmp);
    if (s->n > 1)
        qsort(s->v, s->n, sizeof *s->v, stack_cmp);
    if (s->n_modules > 1)
        qsort(s->modules, s->n_modules, sizeof *s->modules, module_cmp);
}

void tp_model_trim_scratch(tp_model *m) {
    tp_scratch_trim(m->scratch);
}

void tp_model_drop_cat_index(tp_model *m) {
    for (size_t i = 0; i < m->n_ranks; i++)
        buckets_free(&m->ranks[i].cats);
}

void tp_model_drop_stream_index(tp_model *m) {
    for (size_t i = 0; i < m->n_ranks; i++) {
        buckets_free(&m->ranks[i].streams);
        m->ranks[i].streams.dropped = 1;
    }
}

void tp_rank_drop_corr_index(tp_rank *r) {
    free(r->by_corr), r->by_corr = NULL, r->n_by_corr = 0;
    free(r->corr_dir), r->corr_dir = NULL;
    r->corr_dropped = 1;
}

void tp_model_drop_corr_dir(tp_model *m) {
    for (size_t i = 0; i < m->n_ranks; i++) {
        free(m->ranks[i].corr_dir);
        m->ranks[i].corr_dir = NULL;
    }
}

static void wide_free(tp_ev_wide *w) {
    free(w->row), free(w->val);
    memset(w, 0, sizeof *w);
}

static void sparse_free(tp_ev_sparse *s) {
    free(s->bits), free(s->rank), free(s->val);
    memset(s, 0, sizeof *s);
}

static void drop_external_id(tp_events *e) {
    free(e->external_id32_opt), e->external_id32_opt = NULL;
    sparse_free(&e->external_id_sp);
    free(e->external_id_corr), e->external_id_corr = NULL;
    wide_free(&e->wide_external_id);
}

static void drop_shapes(tp_events *e) {
    free(e->shapes_opt), e->shapes_opt = NULL;
    sparse_free(&e->shapes_sp);
}

static void drop_depth(tp_events *e) {
    free(e->depth8), e->depth8 = NULL;
    wide_free(&e->wide_depth);
}

static void drop_load_order(tp_events *e) {
    free(e->load_d16), e->load_d16 = NULL;
    free(e->load_rows32), e->load_rows32 = NULL;
    wide_free(&e->wide_load);
}

/* What each TP_EV_DROP_* bit frees (the columns its accessors read). */
static const struct {
    unsigned bit;
    void (*drop)(tp_events *e);
} droppable[] = {
    {TP_EV_DROP_EXTERNAL_ID, drop_external_id},
    {TP_EV_DROP_SHAPES, drop_shapes},
    {TP_EV_DROP_DEPTH, drop_depth},
    {TP_EV_DROP_LOAD_ORDER, drop_load_order},
};

void tp_rank_drop_columns(tp_rank *r, unsigned cols) {
    for (size_t k = 0; k < sizeof droppable / sizeof droppable[0]; k++) {
        if (cols & droppable[k].bit & ~r->ev.dropped) {
            droppable[k].drop(&r->ev);
            r->ev.dropped |= droppable[k].bit;
        }
    }
}

void tp_model_drop_columns(tp_model *m, unsigned cols) {
    for (size_t i = 0; i < m->n_ranks; i++)
        tp_rank_drop_columns(&m->ranks[i], cols);
}

typedef struct {
    tp_rank *r;
    tp_scratch *sc; /* shared: its mutex guards it */
    unsigned skip;  /* tp_model.finish_skip */
} finish_job;

/* The indexes by stream and correlation and half of the categories' index, on one thread
 * while the other sorts the memory events, writes the other half of the categories' index,
 * indexes the threads and resolves the nesting (which reads the threads' index only): they
 * read the sorted columns and each writes its own index or table (or half). With the whole
 * categories' index on the first thread it took ~20 ms longer than the second on a 10 M-record
 * trace (perf, 2026-12-03), the calling thread waiting for it. */
static void index_some(void *arg) {
    const finish_job *j = arg;
    if (!(j->skip & TP_FINISH_NO_STREAM_INDEX))
        index_streams(j->r, j->sc);
    if (!(j->skip & TP_FINISH_NO_CAT_INDEX))
        index_cats_half(j->r, 0);
    index_corr(j->r, j->sc, !(j->skip & TP_FINISH_NO_CORR_DIR));
}

/* The memory events' table first: its sort and permutation (~30 ms on a 10 M-record trace of
 * 2 M memory events) touch nothing the other thread's indexes read. */
static void mem_then_threads_and_nest(void *arg) {
    const finish_job *j = arg;
    memev_sort(&j->r->mem);
    memev_fit(&j->r->mem);
    if (!(j->skip & TP_FINISH_NO_CAT_INDEX))
        index_cats_half(j->r, 1);
    index_threads(j->r, j->sc);
    resolve_nesting(j->r);
}

/* Frees the stack column when no row has a stack (after the finish fitted the columns: the
 * next push grows them, and events_resize makes the column again). Every row is 0 when the
 * first is and each equals the next: one memcmp of the column against itself a row on, libc's
 * vector loop (a loop of ours or'ing the rows took ~5 instructions a row: GCC -O2 left it
 * scalar). */
static void stack_drop_unused(tp_events *e) {
    size_t n = e->n;
    if (!e->stack || e->cap != n || (n && e->stack[0]) ||
        (n > 1 && memcmp(e->stack, e->stack + 1, (n - 1) * sizeof *e->stack) != 0))
        return;
    free(e->stack), e->stack = NULL;
}

/* The columns a TP_FINISH_DROP goes before the sort: no step of the finish reads them (the
 * others it derives). xdit's finish 53.1 -> 45.1 M instructions (its External ids and shapes
 * neither permuted nor fitted), hta_negative_queue_length's finish high water -0.14 MiB. */
#define FINISH_DROP_FIRST (TP_EV_DROP_EXTERNAL_ID | TP_EV_DROP_SHAPES)

void tp_model_finish(tp_model *m) {
    /* the sorts' scratch blocks are reused from sort to sort (and rank to rank) instead of
     * mapped afresh (with the CLI's fixed mmap threshold each one cost a page fault per 4 KiB),
     * and kept afterwards for the first view (m->scratch) */
    size_t most = 0;
    for (size_t i = 0; i < m->n_ranks; i++)
        most = m->ranks[i].ev.n > most ? m->ranks[i].ev.n : most;
    if (!m->scratch)
        m->scratch = tp_scratch_open(24 * most);
    tp_scratch *sc = m->scratch;
    unsigned drop = m->finish_skip >> TP_FINISH_DROP_SHIFT; /* TP_EV_DROP_* */
    for (size_t i = 0; i < m->n_ranks; i++) {
        tp_rank *r = &m->ranks[i];
        if (r->ev.dropped || r->corr_dropped) /* what was dropped would not come back */
            abort();
        if (r->rank < 0)
            r->rank = (int)i;
        tp_rank_drop_columns(r, drop & FINISH_DROP_FIRST);
        index_cats_begin(r); /* its rows are the permutation's second gather block first */
        events_densify(&r->ev, r->ev.cap); /* a second finish: the sort permutes the arrays */
        events_sort(&r->ev, sc, r->cats.rows);
        if (m->finish_skip & TP_FINISH_NO_CAT_INDEX) /* the sort's block only: gone before the
                                                       other indexes are made */
            buckets_free(&r->cats);
        if (m->finish_skip & TP_FINISH_NO_STREAM_INDEX) {
            buckets_free(&r->streams);
            r->streams.dropped = 1;
        }
        if (r->ev.cap != r->ev.n)
            events_resize(&r->ev, r->ev.n);
        events_fit_side(&r->ev);
        stack_drop_unused(&r->ev);
        events_sparsify(&r->ev);
        derive_device_type(m, r);
        finish_job j = {r, sc, m->finish_skip}; /* two threads: see index_some */
        tp_par_both(r->ev.n, mem_then_threads_and_nest, &j, index_some, &j);
        stacks_sort(&r->stacks);
        tp_rank_drop_columns(r, drop);
    }
    if (m->n_ranks > 1)
        qsort(m->ranks, m->n_ranks, sizeof *m->ranks, rank_cmp);
}

/* ---------------------------------------------------------------- queries */

/* by_corr[k]'s correlation; narrow: every indexed id is its own low 32 bits */
static inline int64_t by_corr_at(const tp_rank *r, size_t k, int narrow) {
    return narrow ? (int64_t)r->ev.corr32[r->by_corr[k]] : tp_ev_corr(&r->ev, r->by_corr[k]);
}

/* The entries of corr are by_corr[lo, end): lo bisected, then end stepped to over a few
 * entries (most correlations have one or two rows) and bisected past them: a correlation
 * shared by hundreds of rows (a graph launch's kernels), each of which asks for its partners,
 * cost a step per entry per row. */
static size_t corr_range(const tp_rank *r, int64_t corr, size_t lo, size_t hi, size_t *end_out,
                         int narrow) {
    while (lo < hi) { /* first entry with correlation >= corr */
        size_t mid = lo + (hi - lo) / 2;
        if (by_corr_at(r, mid, narrow) < corr)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t end = lo, top = r->n_by_corr;
    for (int step = 0; step < 4; step++, end++)
        if (end >= top || by_corr_at(r, end, narrow) != corr) {
            *end_out = end;
            return lo;
        }
    while (end < top) { /* first entry past them: every entry in [lo, end) equals corr */
        size_t mid = end + (top - end) / 2;
        if (by_corr_at(r, mid, narrow) <= corr)
            end = mid + 1;
        else
            top = mid;
    }
    *end_out = end;
    return lo;
}

size_t tp_rank_corr_rows(const tp_rank *r, int64_t corr, const uint32_t **rows) {
    if (r->corr_dropped) /* the caller dropped what it asks: no answer is right */
        abort();
    size_t lo = 0, hi = r->n_by_corr;
    if (r->corr_dir) {
        if (corr < r->corr_lo || corr > r->corr_hi) {
            *rows = NULL;
            return 0;
        }
        size_t j = (size_t)(((uint64_t)corr - (uint64_t)r->corr_lo) >> r->corr_shift);
        lo = r->corr_dir[j], hi = r->corr_dir[j + 1];
    }
    const tp_events *e = &r->ev;
    size_t end;
    if (!e->corr_hi_any && !e->wide_corr.n) /* every indexed id is its own code */
        lo = corr_range(r, corr, lo, hi, &end, 1);
    else
        lo = corr_range(r, corr, lo, hi, &end, 0);
    *rows = end > lo ? r->by_corr + lo : NULL;
    return end - lo;
}

long tp_rank_stream_index(const tp_rank *r, int64_t stream) {
    if (r->streams.dropped) /* the caller dropped what it asks: no answer is right */
        abort();
    for (size_t j = 0; j < r->streams.n; j++) /* few streams per rank: linear is fine */
        if (r->streams.key[j] == stream)
            return (long)j;
    return -1;
}

const tp_rank *tp_model_rank(const tp_model *m, int rank) {
    for (size_t i = 0; i < m->n_ranks; i++)
        if (m->ranks[i].rank == rank)
            return &m->ranks[i];
    return NULL;
}

size_t tp_rank_stack_copy(const tp_rank *r, uint32_t id, uint32_t *module, uint64_t *addr,
                          size_t cap) {
    const tp_stacks *s = &r->stacks;
    tp_stack key = {id, 0, 0};
    const tp_stack *st = id && s->n ? bsearch(&key, s->v, s->n, sizeof *s->v, stack_cmp) : NULL;
    if (!st)
        return 0;
    size_t f = st->first;
    for (size_t k = 0; k < st->n && k < cap; k++, f = s->frame_next ? s->frame_next[f] : f + 1) {
        module[k] = s->frame_module ? s->frame_module[f] : TP_STACK_PYTHON;
        addr[k] = s->frame_addr[f];
    }
    return st->n;
}

const tp_stack_module *tp_rank_stack_module(const tp_rank *r, uint32_t id) {
    const tp_stacks *s = &r->stacks;
    tp_stack_module key = {.id = id};
    if (id == TP_STACK_NO_MODULE || !s->n_modules)
        return NULL;
    return bsearch(&key, s->modules, s->n_modules, sizeof *s->modules, module_cmp);
}

const tp_stack_pycode *tp_rank_stack_pycode(const tp_rank *r, uint32_t id) {
    const tp_stacks *s = &r->stacks;
    tp_stack_pycode key = {.id = id};
    if (!s->n_pycodes)
        return NULL;
    return bsearch(&key, s->pycodes, s->n_pycodes, sizeof *s->pycodes, pycode_cmp);
}

/* ------------------------------------------------------------------ environment */

static tp_env_entry *env_find(const tp_rank *r, int32_t device, uint32_t key) {
    for (size_t i = 0; i < r->n_env; i++)
        if (r->env[i].device == device && r->env[i].key == key)
            return &r->env[i];
    return NULL;
}

void tp_rank_set_env(tp_model *m, tp_rank *r, int32_t device, const char *key, const char *value,
                     int replace) {
    if (!key || !key[0] || !value || !value[0])
        return;
    uint32_t k = tp_model_intern(m, key, strlen(key));
    uint32_t v = tp_model_intern(m, value, strlen(value));
    tp_env_entry *e = env_find(r, device, k);
    if (e) {
        if (replace)
            e->value = v;
        return;
    }
    GROW(r->env, r->n_env + 1);
    r->env[r->n_env++] = (tp_env_entry){k, v, device};
}

const char *tp_rank_env(const tp_model *m, const tp_rank *r, int32_t device, const char *key) {
    uint32_t k = tp_model_find_str(m, key);
    const tp_env_entry *e = k ? env_find(r, device, k) : NULL;
    return e ? tp_model_str(m, e->value) : NULL;
}
