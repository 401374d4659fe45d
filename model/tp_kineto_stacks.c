/* tp_kineto_stacks: Python stacks of Kineto traces (see the header).
 *
 * Stacks of python_function events form a tree: a stack is its innermost frame on top of the
 * stack of the enclosing call, so each distinct (enclosing stack, frame) pair is interned once
 * in a hash table and gets the next stack id; its frames are its own followed by its
 * parent's. Code objects are keyed by "file\x1ffunction" through the model's string pool. */
#include "tp_kineto_stacks.h"

#include <ctype.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tp_mem.h"
#include "tp_par.h"
#include "tp_scratch.h"
#include "tp_sort.h"

typedef struct {
    uint64_t addr;   /* the frame: code id << 24 | line */
    uint32_t parent; /* enclosing stack id; 0: none */
    uint32_t id;     /* 0: empty slot */
} node_slot;

struct tp_kineto_stacks {
    tp_model *m;
    tp_rank *r;
    uint32_t next_stack, next_code;
    uint32_t *code_of_key; /* by string id of "file\x1ffunction": code id; 0: none yet */
    size_t n_code_of_key;
    uint32_t *stack_of_text; /* by string id of a "Call stack" text: stack id */
    size_t n_stack_of_text;
    node_slot *slots; /* python_function stacks: (parent, frame) -> id, open addressing */
    size_t n_slots, used;
    uint32_t *parent_of; /* by stack id: the enclosing stack (tree stacks only) */
    uint64_t *frame_of;  /* by stack id: its innermost frame (tree stacks only) */
    size_t cap_ids;
    uint64_t *addr_of_name; /* by string id of a python_function name: its frame; 0: not yet */
    size_t n_addr_of_name;
};

tp_kineto_stacks *tp_kineto_stacks_open(tp_model *m, tp_rank *r) {
    tp_kineto_stacks *s = tp_mem_xcalloc(1, sizeof *s);
    s->m = m, s->r = r;
    s->next_stack = s->next_code = 1;
    return s;
}

void tp_kineto_stacks_close(tp_kineto_stacks *s) {
    if (!s)
        return;
    free(s->code_of_key), free(s->stack_of_text), free(s->slots);
    free(s->parent_of), free(s->frame_of), free(s->addr_of_name);
    free(s);
}

/* Grows a uint32 map indexed by string id so that `id` is a valid index (new entries 0). */
static void map_fit(uint32_t **map, size_t *n, uint32_t id) {
    if (id < *n)
        return;
    size_t old = *n;
    TP_MEM_XGROW(*map, *n, (size_t)id + 1);
    memset(*map + old, 0, (*n - old) * sizeof **map);
}

/* The code id of function `func` in `file` (first line `first`, 0: unknown). */
static uint32_t code_id(tp_kineto_stacks *s, const char *file, size_t nf, const char *func,
                        size_t nfn, uint32_t first) {
    char *key = tp_mem_xalloc(nf + nfn + 2, 1);
    memcpy(key, file, nf);
    key[nf] = '\x1f';
    memcpy(key + nf + 1, func, nfn);
    key[nf + 1 + nfn] = 0;
    uint32_t k = tp_model_intern(s->m, key, nf + nfn + 1);
    map_fit(&s->code_of_key, &s->n_code_of_key, k);
    if (!s->code_of_key[k]) {
        key[nf] = 0; /* two NUL-terminated strings: file, function */
        s->code_of_key[k] = s->next_code++;
        tp_rank_add_stack_pycode(s->m, s->r, s->code_of_key[k], nf ? key : NULL, key + nf + 1,
                                 first);
    }
    free(key);
    return s->code_of_key[k];
}

/* Length of `t` before an object address: "<built-in method to of Tensor object at
 * 0x7f...>" ends in " at 0x" + hex digits + ">", which differs per object, so the caller cuts
 * it out (keeping the ">") and the method is one code object; n when there is none. */
static size_t without_address(const char *t, size_t n) {
    size_t h = n;
    if (h < 8 || t[h - 1] != '>')
        return n;
    for (h--; h > 0 && isxdigit((unsigned char)t[h - 1]); h--)
        ;
    return h >= 6 && !memcmp(t + h - 6, " at 0x", 6) ? h - 6 : n;
}

/* One frame text, "file(line): func" (anything else is a function name alone), as a Python
 * frame address. `first`: the line is the function's first line (python_function names). */
static uint64_t frame_addr(tp_kineto_stacks *s, const char *t, size_t n, int first) {
    size_t close = 0, open = 0; /* t[open] == '(', t[close] == ')' of the first "): " */
    while (close + 2 < n && !(t[close] == ')' && t[close + 1] == ':' && t[close + 2] == ' '))
        close++;
    int ok = close + 2 < n;
    for (open = close; ok && open > 0 && t[open] != '(';)
        open--;
    ok = ok && t[open] == '(' && open > 0 && open + 1 < close;
    uint32_t line = 0;
    for (size_t i = open + 1; ok && i < close; i++) {
        ok = t[i] >= '0' && t[i] <= '9';
        line = line < 0xffffffu / 10 ? line * 10 + (uint32_t)(t[i] - '0') : 0xffffffu;
    }
    if (!ok) { /* "<built-in method to of Tensor object at 0x7f...>": one code per method */
        size_t k = without_address(t, n);
        char *name = tp_mem_xalloc(k + 2, 1);
        memcpy(name, t, k);
        name[k] = '>';
        uint32_t code = code_id(s, "", 0, name, k < n ? k + 1 : k, 0);
        free(name);
        return (uint64_t)code << 24;
    }
    uint32_t code = code_id(s, t, open, t + close + 3, n - close - 3, first ? line : 0);
    return ((uint64_t)code << 24) | line;
}

/* Makes room for stack id `id` in the tree columns. */
static void ids_fit(tp_kineto_stacks *s, uint32_t id) {
    if (id < s->cap_ids)
        return;
    size_t cap = s->cap_ids, old = cap;
    TP_MEM_XGROW(s->parent_of, cap, (size_t)id + 1);
    cap = old;
    TP_MEM_XGROW(s->frame_of, cap, (size_t)id + 1);
    s->cap_ids = cap;
    memset(s->parent_of + old, 0, (cap - old) * sizeof *s->parent_of);
    memset(s->frame_of + old, 0, (cap - old) * sizeof *s->frame_of);
}

uint32_t tp_kineto_stacks_call_stack(tp_kineto_stacks *s, const char *text, size_t len) {
    uint32_t k = tp_model_intern(s->m, text, len);
    map_fit(&s->stack_of_text, &s->n_stack_of_text, k);
    if (s->stack_of_text[k])
        return s->stack_of_text[k];
    size_t nf = 0, cap = 0;
    uint32_t *mods = NULL;
    uint64_t *addrs = NULL;
    for (size_t a = 0; a < len;) {
        size_t b = a;
        while (b < len && text[b] != ';')
            b++;
        if (b > a) {
            size_t c2 = cap;
            TP_MEM_XGROW(mods, cap, nf + 1);
            TP_MEM_XGROW(addrs, c2, nf + 1);
            mods[nf] = TP_STACK_PYTHON;
            addrs[nf++] = frame_addr(s, text + a, b - a, 0);
        }
        a = b + 1;
    }
    uint32_t id = 0;
    if (nf) {
        id = s->next_stack++;
        tp_rank_add_stack(s->r, id, mods, addrs, nf);
    }
    free(mods), free(addrs);
    s->stack_of_text[k] = id;
    return id;
}

static size_t slot_of(const tp_kineto_stacks *s, uint32_t parent, uint64_t addr) {
    uint64_t h = (addr * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)parent * 0xc2b2ae3d27d4eb4full);
    size_t i = (size_t)(h >> 17) & (s->n_slots - 1);
    while (s->slots[i].id && (s->slots[i].parent != parent || s->slots[i].addr != addr))
        i = (i + 1) & (s->n_slots - 1);
    return i;
}

static void slots_grow(tp_kineto_stacks *s) {
    node_slot *old = s->slots;
    size_t n = s->n_slots;
    s->n_slots = n ? 2 * n : 1024;
    s->slots = tp_mem_xcalloc(s->n_slots, sizeof *s->slots);
    for (size_t i = 0; i < n; i++)
        if (old[i].id)
            s->slots[slot_of(s, old[i].parent, old[i].addr)] = old[i];
    free(old);
}

/* The stack of frame `addr` called from stack `parent` (0: none), on first sight a new id
 * in the tree (parent_of, frame_of); its frames go into the rank at the end (add_tree). */
static uint32_t tree_stack(tp_kineto_stacks *s, uint32_t parent, uint64_t addr) {
    if (2 * (s->used + 1) > s->n_slots)
        slots_grow(s);
    size_t i = slot_of(s, parent, addr);
    if (s->slots[i].id)
        return s->slots[i].id;
    uint32_t id = s->next_stack++;
    s->slots[i] = (node_slot){addr, parent, id};
    s->used++;
    ids_fit(s, id);
    s->parent_of[id] = parent, s->frame_of[id] = addr;
    return id;
}

/* Adds the tree's stacks [lo, next_stack) to the rank, in id order, as a tree: a stack's
 * frames are its own followed by its parent's, so each stack stores its own frame once, on
 * its parent's (tp_rank_add_frame_on), 8 + 4 bytes a stack. Contiguous frames (before) needed
 * every leaf's whole path: 196 k frames for xdit's 12 k stacks, 1.6 MB against 0.15. */
static void add_tree(tp_kineto_stacks *s, uint32_t lo) {
    uint32_t hi = s->next_stack;
    if (hi <= lo)
        return;
    size_t n = hi - lo;
    uint32_t *depth = tp_mem_xalloc(n, sizeof *depth);
    size_t *at = tp_mem_xalloc(n, sizeof *at); /* the stack's own frame */
    tp_rank_reserve_stacks(s->r, n, n);
    for (uint32_t id = lo; id < hi; id++) {
        uint32_t p = s->parent_of[id]; /* 0 or a tree stack: parents are open python_functions,
                                          so they have smaller ids */
        depth[id - lo] = 1 + (p ? depth[p - lo] : 0);
        at[id - lo] =
            tp_rank_add_frame_on(s->r, TP_STACK_PYTHON, s->frame_of[id], p ? at[p - lo] : SIZE_MAX);
        tp_rank_add_stack_frames(s->r, id, at[id - lo], depth[id - lo]);
    }
    free(depth), free(at);
}

/* name_frame on a name not seen yet. */
static uint64_t name_frame_new(tp_kineto_stacks *s, uint32_t name) {
    if (name >= s->n_addr_of_name) {
        size_t old = s->n_addr_of_name;
        TP_MEM_XGROW(s->addr_of_name, s->n_addr_of_name, (size_t)name + 1);
        memset(s->addr_of_name + old, 0, (s->n_addr_of_name - old) * sizeof *s->addr_of_name);
    }
    if (!s->addr_of_name[name]) { /* never 0 once known: code ids start at 1 */
        const char *t = tp_model_str(s->m, name);
        s->addr_of_name[name] = frame_addr(s, t, strlen(t), 1);
    }
    return s->addr_of_name[name];
}

/* The frame of python_function name `name` (a string id): frame_addr once per name (code ids
 * are still given in order of first sight), then from the cache (here, inline: the call was
 * ~20 instructions a python_function row). */
static inline uint64_t name_frame(tp_kineto_stacks *s, uint32_t name) {
    uint64_t f = name < s->n_addr_of_name ? s->addr_of_name[name] : 0;
    return f ? f : name_frame_new(s, name);
}

/* One thread's rows in time order: the nesting rule of the model (tp_model_finish), with the
 * stack of the innermost open python_function carried along. */
static void thread_pass(tp_kineto_stacks *s, const uint32_t *rows, size_t n, uint32_t *open,
                        uint32_t *open_stack) {
    tp_events *e = &s->r->ev;
    size_t depth = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t row = rows[i];
        int64_t end = e->ts[row] + tp_ev_dur(e, row);
        while (depth > 0) {
            uint32_t top = open[depth - 1];
            int64_t top_end = e->ts[top] + tp_ev_dur(e, top);
            if (top_end > e->ts[row] && top_end >= end)
                break;
            if (top_end == e->ts[row] && tp_ev_dur(e, row) == 0 && tp_ev_dur(e, top) > 0)
                break;
            depth--;
        }
        uint32_t cur = depth ? open_stack[depth - 1] : 0;
        if (e->cat[row] == TP_CAT_PYTHON_FUNCTION)
            cur = tree_stack(s, cur, name_frame(s, e->name[row]));
        if (!e->stack[row])
            e->stack[row] = cur;
        open[depth] = row, open_stack[depth++] = cur;
    }
}

/* Whether row a goes after row b in a thread pass: by ts, then the longer first (rows have
 * dur >= 0); equal ones stay in row order. */
static inline int after(const tp_events *e, uint32_t a, uint32_t b) {
    return e->ts[a] > e->ts[b] || (e->ts[a] == e->ts[b] && tp_ev_dur(e, a) < tp_ev_dur(e, b));
}

/* rows[0..n) (ascending row numbers) into (ts, -dur, row) order by radix sorts: -dur as its
 * distance from the longest (only the bytes the durations span vary), then ts, stable. */
static void time_sort(const tp_events *e, uint32_t *rows, size_t n, tp_scratch *sc) {
    uint64_t *key = tp_scratch_get(sc, n + 1, sizeof *key);
    uint64_t longest = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t d = tp_sort_key_i64(tp_ev_dur(e, rows[i]));
        longest = d > longest ? d : longest;
    }
    for (size_t i = 0; i < n; i++)
        key[i] = longest - tp_sort_key_i64(tp_ev_dur(e, rows[i]));
    tp_sort_pairs_s(key, rows, n, sc);
    tp_scratch_put(sc, key);
    tp_sort_rows_i64_s(e->ts, rows, n, sc);
}

#define MAX_RUNS 64 /* runs of a thread merged (log2 of it passes); more: radix sorts */

/* One thread's rows[0..n) (ascending row numbers) into (ts, -dur, row) order. Kineto writes a
 * thread's events in a few runs in that order (the peer traces: up to 113 rows where the
 * order breaks in 65-190 k CPU rows, e.g. the python_function events after the CPU ops), so
 * the runs are merged, stably; with more than MAX_RUNS, the radix sorts. Sorting every row
 * (before) was 2/3 of the Python pass (~10 ms on a 62 MB trace). */
static void thread_sort(const tp_events *e, uint32_t *rows, size_t n, tp_scratch *sc) {
    size_t run[MAX_RUNS + 1], nr = 1;
    run[0] = 0;
    for (size_t i = 1; i < n; i++)
        if (after(e, rows[i - 1], rows[i])) {
            if (nr == MAX_RUNS) {
                time_sort(e, rows, n, sc);
                return;
            }
            run[nr++] = i;
        }
    if (nr == 1)
        return;
    run[nr] = n;
    uint32_t *tmp = tp_scratch_get(sc, n + 1, sizeof *tmp), *src = rows, *dst = tmp;
    while (nr > 1) { /* runs 2k and 2k+1 merged into run k (an odd last one copied) */
        size_t k = 0;
        for (size_t r = 0; r < nr; r += 2, k++) {
            size_t lo = run[r], mid = run[r + 1], hi = r + 2 <= nr ? run[r + 2] : n, a = lo,
                   b = mid, o = lo;
            while (a < mid && b < hi)
                dst[o++] = after(e, src[a], src[b]) ? src[b++] : src[a++];
            while (a < mid)
                dst[o++] = src[a++];
            while (b < hi)
                dst[o++] = src[b++];
            run[k] = lo;
        }
        run[k] = n;
        nr = k;
        uint32_t *t = src;
        src = dst, dst = t;
    }
    if (src != rows)
        memcpy(rows, src, n * sizeof *rows);
    tp_scratch_put(sc, tmp);
}

static int cmp_thread(const void *x, const void *y) {
    const tp_ev_place *a = x, *b = y;
    return a->pid != b->pid   ? (a->pid < b->pid ? -1 : 1)
           : a->tid != b->tid ? (a->tid < b->tid ? -1 : 1)
                              : 0;
}

/* The CPU threads of `e` in (pid, tid) order: *nt of them, and by place the thread's rank
 * there (UINT32_MAX: a GPU stream; equal (pid, tid) share the first one's rank); free() it. */
static uint32_t *thread_ranks(const tp_events *e, size_t *nt_out) {
    size_t np = e->places.n, nt = 0;
    tp_ev_place *threads = tp_mem_xalloc(np + 1, sizeof *threads);
    for (size_t i = 0; i < np; i++)
        if (e->places.v[i].stream == -1)
            threads[nt++] = e->places.v[i];
    qsort(threads, nt, sizeof *threads, cmp_thread);
    uint32_t *rank = tp_mem_xalloc(np + 1, sizeof *rank); /* by place; UINT32_MAX: not CPU */
    for (size_t i = 0; i < np; i++) {
        const tp_ev_place *pl = &e->places.v[i];
        const tp_ev_place *t =
            pl->stream == -1 ? bsearch(pl, threads, nt, sizeof *threads, cmp_thread) : NULL;
        rank[i] = t ? (uint32_t)(t - threads) : UINT32_MAX;
    }
    for (size_t i = 0; i < np; i++) /* equal (pid, tid) share the first one's rank */
        if (rank[i] != UINT32_MAX)
            while (rank[i] && !cmp_thread(&threads[rank[i] - 1], &threads[rank[i]]))
                rank[i]--;
    free(threads);
    *nt_out = nt;
    return rank;
}

/* The CPU-side rows (stream -1) of the threads with python_function rows, in the order of a
 * thread pass: (pid, tid, ts, -dur), ties in row order. Grouped by thread (a counting sort by
 * the thread's rank in (pid, tid) order, each thread's rows staying in row order), then each
 * thread's in time (thread_sort). Radix
 * sorts of all of them (before) were 2/3 of the Python pass (~10 ms on a 62 MB trace): most
 * rows are in order already. *n: their count; free() the result. */
static uint32_t *thread_order(const tp_events *e, size_t *n) {
    size_t nt = 0, k = 0;
    uint32_t *rank = thread_ranks(e, &nt);
    size_t *start = tp_mem_xcalloc(nt + 2, sizeof *start); /* by thread rank */
    uint8_t *py = tp_mem_xcalloc(nt + 1, 1); /* by thread rank: has a python_function */
    for (size_t i = 0; i < e->n; i++) {
        uint32_t r = rank[tp_ev_place_index(e, i)];
        if (r != UINT32_MAX)
            start[r + 1]++, py[r] |= e->cat[i] == TP_CAT_PYTHON_FUNCTION;
    }
    /* A thread without python_function rows gets no stack from the pass (its rows keep
     * theirs), so its rows are neither sorted nor walked. */
    for (size_t t = 0; t < nt; t++) {
        start[t + 1] = py[t] ? start[t + 1] : 0;
        k += start[t + 1];
        start[t + 1] += start[t];
    }
    uint32_t *rows = tp_mem_xalloc(k + 1, sizeof *rows);
    for (size_t i = 0; i < e->n; i++) {
        uint32_t r = rank[tp_ev_place_index(e, i)];
        if (r != UINT32_MAX && py[r])
            rows[start[r]++] = (uint32_t)i;
    }
    free(py);
    tp_scratch *sc = tp_scratch_open(16 * (k + 1)); /* only a thread out of order uses it */
    for (size_t t = 0, a = 0; t < nt; t++) {        /* start[t]: the end of thread t's rows now */
        thread_sort(e, rows + a, start[t] - a, sc);
        a = start[t];
    }
    tp_scratch_close(sc);
    free(start), free(rank);
    *n = k;
    return rows;
}

/* The pass on this thread alone. */
static void python_serial(tp_kineto_stacks *s) {
    tp_events *e = &s->r->ev;
    size_t n = 0, py = 0;
    for (size_t i = 0; i < e->n; i++)
        py += e->cat[i] == TP_CAT_PYTHON_FUNCTION;
    if (!py)
        return;
    tp_events_stack_col(e); /* thread_pass writes it */
    uint32_t *rows = thread_order(e, &n);
    uint32_t first_tree = s->next_stack;
    uint32_t *open = tp_mem_xalloc(n + 1, sizeof *open);
    uint32_t *open_stack = tp_mem_xalloc(n + 1, sizeof *open_stack);
    for (size_t a = 0, b; a < n; a = b) {
        int64_t pid = tp_ev_pid(e, rows[a]), tid = tp_ev_tid(e, rows[a]);
        for (b = a + 1; b < n && tp_ev_pid(e, rows[b]) == pid && tp_ev_tid(e, rows[b]) == tid; b++)
            ;
        thread_pass(s, rows + a, b - a, open, open_stack);
    }
    free(rows), free(open), free(open_stack);
    add_tree(s, first_tree);
}

/* ---------------------------------------------------------------- the pass on two threads
 *
 * With two cores (the two-thread import) the pass was serial after the walk, one core idle:
 * 2.2-4.2 ms of a ~22 ms import of a 40 MB trace (docs/PERFORMANCE.md, Kineto JSON import).
 * One thread holds ~all python_function rows, so the work is split inside each step, not by
 * thread; both threads run duo_work, the importing one (0) and a helper (1):
 *   1. the table's two halves grouped by thread (count, then place), as thread_order;
 *   2. each thread's rows sorted: the breaks of its runs found in halves, then each merge
 *      pass of thread_sort split at the middle of its output (a merge path search), so each
 *      thread writes one half of every pass; a stable sort, so the order is thread_sort's;
 *   3. the nesting (thread 0: for each row in pass order, as thread_pass pops and pushes,
 *      the python_function row whose stack it takes, itself or the innermost open one; for
 *      each python_function row in order, the one enclosing it and its frame, name_frame)
 *      beside the stacks (thread 1: each python_function row's stack, tree_stack in pass
 *      order, on the rows thread 0 handed over so far). Both are called in the serial pass's
 *      order, so code, string and stack ids are given as there (they touch disjoint state);
 *   4. the rows' stack column, each thread one half of the rows;
 *   5. the tree into the rank (add_tree), on this thread.
 * In step 3 thread 1 reads only what thread 0 handed over (no row's columns): with the rows'
 * stacks written there too it took ~1.2x thread 0's time, with the frames ~1.6x (scratch
 * timers, xdit); now thread 1 ends 0.05-0.2 ms after thread 0 on xdit, ~0.4 ms on owlv2
 * (fewer rows a python_function row: less nesting for thread 0). */

#define DUO_ROWS_MIN ((size_t)1 << 15) /* smaller tables: the serial pass (a thread ~50 us) */
#define NEST_STEP ((size_t)4096)       /* python_function rows a hand-over to thread 1 */
#define NO_PAR UINT32_MAX

typedef struct {
    tp_kineto_stacks *s;
    tp_events *e;
    pthread_barrier_t bar;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t nested;           /* under mu: python_function rows handed over to thread 1 */
    int nest_done;           /* under mu: all of them */
    int waiting;             /* under mu: thread 1 waits for more */
    size_t nt;               /* CPU threads */
    uint32_t *rank;          /* by place: thread rank (thread_ranks) */
    size_t *cnt[2], *pos[2]; /* by thread rank, per half of the table: rows, next slot */
    uint8_t *py[2];          /* by thread rank, per half: has python_function rows */
    size_t *seg, n_seg;      /* threads with python rows: where each starts in rows */
    size_t k;                /* rows of the pass */
    uint32_t *rows, *tmp;    /* in pass order; the merges' other buffer, then the stacks (by
                                python_function row) */
    uint32_t *own;           /* by position: the python_function row (its number, in pass order)
                                whose stack the row takes; NO_PAR: none */
    uint32_t *py_par;        /* by python_function row: the one enclosing it; NO_PAR: none */
    uint64_t *py_frame;      /* by python_function row: its frame (name_frame) */
    size_t brk[2][MAX_RUNS], nbrk[2]; /* a sort's run breaks, per half */
    tp_scratch *sc;                   /* time_sort's (thread 0) */
} duo;

static void duo_wait(duo *d) {
    pthread_barrier_wait(&d->bar);
}

/* Thread 0, between the counts and the placing: where each half's rows of each thread go
 * (threads in rank order, the first half's rows before the second's) and the buffers. */
static void duo_layout(duo *d) {
    size_t k = 0, ns = 0;
    for (size_t t = 0; t < d->nt; t++) {
        d->py[0][t] |= d->py[1][t];
        if (!d->py[0][t])
            continue;
        d->seg[ns++] = k;
        d->pos[0][t] = k, k += d->cnt[0][t];
        d->pos[1][t] = k, k += d->cnt[1][t];
    }
    d->seg[ns] = k;
    d->n_seg = ns, d->k = k;
    if (!k)
        return;
    d->rows = tp_mem_xalloc(k + 1, sizeof *d->rows);
    d->tmp = tp_mem_xalloc(k + 1, sizeof *d->tmp);
    d->own = tp_mem_xalloc(k + 1, sizeof *d->own);
    d->py_par = tp_mem_xalloc(k + 1, sizeof *d->py_par);
    d->py_frame = tp_mem_xalloc(k + 1, sizeof *d->py_frame);
    d->sc = tp_scratch_open(16 * (k + 1));
}

/* Writes dst[x..y) of the merge of src[lo..mid) and src[mid..hi) (thread_sort's: ties from
 * the first run first): the merge's first x - lo outputs are the first i of one run and the
 * rest of the other, i found by binary search. */
static void merge_part(const tp_events *e, const uint32_t *src, uint32_t *dst, size_t lo,
                       size_t mid, size_t hi, size_t x, size_t y) {
    if (x >= y)
        return;
    size_t k = x - lo, na = mid - lo, nb = hi - mid;
    size_t l = k > nb ? k - nb : 0, r = k < na ? k : na;
    while (l < r) { /* the least i where src[lo + i] goes after the other run's (k - i)th */
        size_t i = l + (r - l) / 2;
        if (after(e, src[lo + i], src[mid + (k - i - 1)]))
            r = i;
        else
            l = i + 1;
    }
    size_t a = lo + l, b = mid + (k - l), o = x;
    while (o < y && a < mid && b < hi)
        dst[o++] = after(e, src[a], src[b]) ? src[b++] : src[a++];
    while (o < y && a < mid)
        dst[o++] = src[a++];
    while (o < y)
        dst[o++] = src[b++];
}

/* Both threads: one thread's rows[a..b) into pass order, as thread_sort (a stable sort: the
 * same order); thread `who` finds the runs' breaks in its half and writes its half of each
 * merge pass's output. */
static void duo_sort(duo *d, int who, size_t a, size_t b) {
    const tp_events *e = d->e;
    uint32_t *rows = d->rows + a;
    size_t n = b - a, h = n / 2, nb = 0;
    for (size_t i = who ? (h ? h : 1) : 1; i < (who ? n : h); i++)
        if (after(e, rows[i - 1], rows[i])) {
            if (nb < MAX_RUNS)
                d->brk[who][nb] = i;
            nb++;
        }
    d->nbrk[who] = nb;
    duo_wait(d);
    size_t run[MAX_RUNS + 1], nr = 1 + d->nbrk[0] + d->nbrk[1];
    if (nr > MAX_RUNS || nr == 1) {
        if (nr > 1 && !who)
            time_sort(e, rows, n, d->sc);
        duo_wait(d); /* brk and rows are read before the next segment writes them */
        return;
    }
    run[0] = 0;
    memcpy(run + 1, d->brk[0], d->nbrk[0] * sizeof *run);
    memcpy(run + 1 + d->nbrk[0], d->brk[1], d->nbrk[1] * sizeof *run);
    run[nr] = n; /* brk is written again after this sort's merge passes' barriers */
    uint32_t *src = rows, *dst = d->tmp + a;
    size_t olo = who ? h : 0, ohi = who ? n : h;
    while (nr > 1) { /* runs 2k and 2k+1 merged into run k (an odd last one copied) */
        size_t k = 0;
        for (size_t r = 0; r < nr; r += 2, k++) {
            size_t lo = run[r], mid = run[r + 1], hi = r + 2 <= nr ? run[r + 2] : n;
            merge_part(e, src, dst, lo, mid, hi, lo > olo ? lo : olo, hi < ohi ? hi : ohi);
            run[k] = lo;
        }
        run[k] = n;
        nr = k;
        uint32_t *t = src;
        src = dst, dst = t;
        duo_wait(d);
    }
    if (src != rows) {
        memcpy(rows + olo, src + olo, (ohi - olo) * sizeof *rows);
        duo_wait(d);
    }
}

/* Thread 0 hands python_function rows [0, n) to thread 1 (`done`: all there are). */
static void duo_publish(duo *d, size_t n, int done) {
    pthread_mutex_lock(&d->mu);
    d->nested = n, d->nest_done = done;
    if (d->waiting)
        pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->mu);
}

/* Thread 0: thread_pass's nesting; own, py_par and py_frame (see duo). */
static void duo_nest(duo *d) {
    const tp_events *e = d->e;
    typedef struct {
        int64_t end;
        uint32_t own, has_dur;
    } open_row;
    size_t cap = 64, nq = 0;
    open_row *open = tp_mem_xalloc(cap, sizeof *open);
    for (size_t g = 0; g < d->n_seg; g++) {
        size_t depth = 0;
        for (size_t i = d->seg[g]; i < d->seg[g + 1]; i++) {
            uint32_t row = d->rows[i];
            int64_t ts = e->ts[row], dur = tp_ev_dur(e, row), end = ts + dur;
            while (depth > 0) {
                int64_t top_end = open[depth - 1].end;
                if (top_end > ts && top_end >= end)
                    break;
                if (top_end == ts && dur == 0 && open[depth - 1].has_dur)
                    break;
                depth--;
            }
            uint32_t own = depth ? open[depth - 1].own : NO_PAR;
            if (e->cat[row] == TP_CAT_PYTHON_FUNCTION) {
                d->py_par[nq] = own, d->py_frame[nq] = name_frame(d->s, e->name[row]);
                own = (uint32_t)nq++;
                if (nq % NEST_STEP == 0)
                    duo_publish(d, nq, 0);
            }
            d->own[i] = own;
            if (depth == cap)
                TP_MEM_XGROW(open, cap, depth + 1);
            open[depth++] = (open_row){end, own, dur > 0};
        }
    }
    free(open);
    duo_publish(d, nq, 1);
}

/* Thread 1: the python_function rows' stacks (in tmp), behind the nesting. */
static void duo_stacks(duo *d) {
    tp_kineto_stacks *s = d->s;
    uint32_t *stk = d->tmp;
    for (size_t q = 0;;) {
        pthread_mutex_lock(&d->mu);
        while (d->nested == q && !d->nest_done) {
            d->waiting = 1;
            pthread_cond_wait(&d->cv, &d->mu);
            d->waiting = 0;
        }
        size_t to = d->nested;
        int done = d->nest_done;
        pthread_mutex_unlock(&d->mu);
        for (; q < to; q++) {
            uint32_t p = d->py_par[q];
            stk[q] = tree_stack(s, p == NO_PAR ? 0 : stk[p], d->py_frame[q]);
        }
        if (done)
            return;
    }
}

/* Both threads: the stack column of thread `who`'s half of the rows. */
static void duo_store(duo *d, int who) {
    tp_events *e = d->e;
    const uint32_t *stk = d->tmp;
    for (size_t i = who ? d->k / 2 : 0, n = who ? d->k : d->k / 2; i < n; i++) {
        uint32_t q = d->own[i], row = d->rows[i];
        if (q != NO_PAR && !e->stack[row])
            e->stack[row] = stk[q];
    }
}

static void duo_work(duo *d, int who) {
    const tp_events *e = d->e;
    size_t half = e->n / 2, lo = who ? half : 0, hi = who ? e->n : half;
    size_t *cnt = d->cnt[who];
    uint8_t *py = d->py[who];
    for (size_t i = lo; i < hi; i++) {
        uint32_t r = d->rank[tp_ev_place_index(e, i)];
        if (r != UINT32_MAX)
            cnt[r]++, py[r] |= e->cat[i] == TP_CAT_PYTHON_FUNCTION;
    }
    duo_wait(d);
    if (!who)
        duo_layout(d);
    duo_wait(d);
    if (!d->k)
        return;
    size_t *pos = d->pos[who];
    for (size_t i = lo; i < hi; i++) {
        uint32_t r = d->rank[tp_ev_place_index(e, i)];
        if (r != UINT32_MAX && d->py[0][r])
            d->rows[pos[r]++] = (uint32_t)i;
    }
    duo_wait(d);
    for (size_t g = 0; g < d->n_seg; g++)
        if (d->seg[g + 1] - d->seg[g] > 1)
            duo_sort(d, who, d->seg[g], d->seg[g + 1]);
    if (who)
        duo_stacks(d);
    else
        duo_nest(d);
    duo_wait(d);
    duo_store(d, who);
}

static void *duo_main(void *arg) {
    duo_work(arg, 1);
    return NULL;
}

/* The pass on two threads; 0 (nothing done) when the second cannot start. */
static int python_duo(tp_kineto_stacks *s) {
    duo *d = tp_mem_xcalloc(1, sizeof *d);
    d->s = s, d->e = &s->r->ev;
    tp_events_stack_col(d->e); /* duo_store writes it */
    d->rank = thread_ranks(d->e, &d->nt);
    for (int h = 0; h < 2; h++) {
        d->cnt[h] = tp_mem_xcalloc(d->nt + 1, sizeof *d->cnt[h]);
        d->pos[h] = tp_mem_xcalloc(d->nt + 1, sizeof *d->pos[h]);
        d->py[h] = tp_mem_xcalloc(d->nt + 1, 1);
    }
    d->seg = tp_mem_xalloc(d->nt + 2, sizeof *d->seg);
    pthread_barrier_init(&d->bar, NULL, 2);
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cv, NULL);
    uint32_t first_tree = s->next_stack;
    pthread_t th;
    int ok = pthread_create(&th, NULL, duo_main, d) == 0;
    if (ok) {
        duo_work(d, 0);
        pthread_join(th, NULL);
        add_tree(s, first_tree);
    }
    pthread_barrier_destroy(&d->bar);
    pthread_mutex_destroy(&d->mu);
    pthread_cond_destroy(&d->cv);
    tp_scratch_close(d->sc);
    for (int h = 0; h < 2; h++)
        free(d->cnt[h]), free(d->pos[h]), free(d->py[h]);
    free(d->rank), free(d->seg), free(d->rows), free(d->tmp), free(d->own), free(d->py_par),
        free(d->py_frame);
    free(d);
    return ok;
}

void tp_kineto_stacks_python(tp_kineto_stacks *s, int threads) {
    const tp_events *e = &s->r->ev;
    size_t min = tp_par_min_rows() < DUO_ROWS_MIN ? tp_par_min_rows() : DUO_ROWS_MIN;
    if (threads >= 2 && e->n >= min && e->n && memchr(e->cat, TP_CAT_PYTHON_FUNCTION, e->n) &&
        python_duo(s))
        return;
    python_serial(s);
}
