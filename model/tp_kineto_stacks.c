/* tp_kineto_stacks: Python stacks of Kineto traces (see the header).
 *
 * Stacks of python_function events form a tree: a stack is its innermost frame on top of the
 * stack of the enclosing call, so each distinct (enclosing stack, frame) pair is interned once
 * in a hash table and gets the next stack id; its frames are its own followed by its
 * parent's. Code objects are keyed by "file\x1ffunction" through the model's string pool. */
#include "tp_kineto_stacks.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tp_mem.h"
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

/* The frame of python_function name `name` (a string id): frame_addr once per name (code ids
 * are still given in order of first sight), then from the cache. */
static uint64_t name_frame(tp_kineto_stacks *s, uint32_t name) {
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
static int after(const tp_events *e, uint32_t a, uint32_t b) {
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

/* The CPU-side rows (stream -1) of the threads with python_function rows, in the order of a
 * thread pass: (pid, tid, ts, -dur), ties in row order. Grouped by thread (a counting sort by
 * the thread's rank in (pid, tid) order, each thread's rows staying in row order), then each
 * thread's in time (thread_sort). Radix
 * sorts of all of them (before) were 2/3 of the Python pass (~10 ms on a 62 MB trace): most
 * rows are in order already. *n: their count; free() the result. */
static uint32_t *thread_order(const tp_events *e, size_t *n) {
    size_t np = e->places.n, nt = 0, k = 0;
    tp_ev_place *threads = tp_mem_xalloc(np + 1, sizeof *threads);
    for (size_t i = 0; i < np; i++)
        if (e->places.v[i].stream == -1)
            threads[nt++] = e->places.v[i];
    qsort(threads, nt, sizeof *threads, cmp_thread);
    size_t *start = tp_mem_xcalloc(nt + 2, sizeof *start); /* by thread rank */
    uint32_t *rank = tp_mem_xalloc(np + 1, sizeof *rank);  /* by place; UINT32_MAX: not CPU */
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
    free(threads), free(start), free(rank);
    *n = k;
    return rows;
}

void tp_kineto_stacks_python(tp_kineto_stacks *s) {
    tp_events *e = &s->r->ev;
    size_t n = 0, py = 0;
    for (size_t i = 0; i < e->n; i++)
        py += e->cat[i] == TP_CAT_PYTHON_FUNCTION;
    if (!py)
        return;
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
