/* tp_an_frames: a rank's stacks as symbolized frames, resolved once each (see the header). */
#include "tp_an_frames.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_mem.h"
#include "tp_symbolize.h"

/* One stack's frames, resolved on first use: all of them (f), or only the prefix a table
 * groups by (pre, when the whole stack was not needed). */
typedef struct {
    uint32_t id; /* the stack; 0: an empty slot of the cache */
    tp_an_frame *f;
    size_t n;
    int done;
    tp_an_frame *pre;
    size_t n_pre;
    int pre_depth; /* 0: no prefix yet */
} stack_frames;

struct tp_an_frames {
    const tp_model *m;
    const tp_rank *r;
    int no_symbols;
    size_t max_above;
    tp_symbolizer *sym; /* shared (borrowed) or opened on first use (owned) */
    int sym_tried, sym_owned;
    stack_frames *cache; /* the stacks asked for, by id (open addressing): one entry per
                            stack of the rank was 48 bytes each at once, 0.6 MB for a
                            trace's 12 k Python stacks of which a report reads a few */
    size_t n_cache, used;
    tp_an_frame *cur; /* the frames being collected */
    size_t n_cur, cap_cur;
    uint32_t *mods; /* the raw frames of the stack being collected (tp_rank_stack_copy) */
    uint64_t *addrs;
    size_t cap_raw;
};

tp_an_frames *tp_an_frames_open(const tp_model *m, const tp_rank *r, int no_symbols,
                                size_t max_native_above) {
    return tp_an_frames_open_shared(m, r, NULL, no_symbols, max_native_above);
}

tp_an_frames *tp_an_frames_open_shared(const tp_model *m, const tp_rank *r, tp_symbolizer *shared,
                                       int no_symbols, size_t max_native_above) {
    tp_an_frames *fx = tp_mem_xcalloc(1, sizeof *fx);
    fx->m = m, fx->r = r;
    fx->sym = shared;
    fx->sym_tried = shared != NULL;
    fx->no_symbols = no_symbols;
    fx->max_above = max_native_above;
    return fx;
}

void tp_an_frames_close(tp_an_frames *fx) {
    if (!fx)
        return;
    for (size_t i = 0; i < fx->n_cache; i++)
        free(fx->cache[i].f), free(fx->cache[i].pre);
    free(fx->cache);
    free(fx->cur), free(fx->mods), free(fx->addrs);
    if (fx->sym_owned)
        tp_symbolizer_close(fx->sym);
    free(fx);
}

static tp_symbolizer *symbolizer(tp_an_frames *fx) {
    if (!fx->sym_tried && !fx->no_symbols) {
        fx->sym_tried = 1;
        if (tp_symbolizer_open(&fx->sym) != TP_OK)
            fx->sym = NULL;
        fx->sym_owned = fx->sym != NULL;
    }
    return fx->no_symbols ? NULL : fx->sym;
}

/* libc's program start (_start, __libc_start_main, __libc_start_call_main): in every stack,
 * so it says nothing about this one. */
static int is_start_func(const char *func) {
    return !strcmp(func, "_start") || !strncmp(func, "__libc_start", 12);
}

static tp_an_frame *add_frame(tp_an_frames *fx, const char *module, uint64_t off,
                              const char *symbols) {
    TP_MEM_XGROW(fx->cur, fx->cap_cur, fx->n_cur + 1);
    tp_an_frame *fr = &fx->cur[fx->n_cur++];
    *fr = (tp_an_frame){module ? module : "", off, "", "", 0, 0, 0, symbols};
    return fr;
}

/* One raw frame -> one frame per function at that address (inlined ones first). */
static void add_symbolized(tp_an_frames *fx, const tp_stack_module *mo, const char *path,
                           const char *base, uint64_t off) {
    tp_symbolizer *sy = symbolizer(fx);
    if (!sy || !path) {
        add_frame(fx, base, off, sy ? tp_sym_status_str(TP_SYM_NO_FILE) : "off");
        return;
    }
    /* libc's start is left out whole: its symbol-table name says so without reading libc's
     * (compressed) DWARF. */
    const char *owner = tp_symbolize_func(sy, path, mo->build_id, mo->build_id_len, off);
    if (owner && is_start_func(owner))
        return;
    const tp_sym *sym = tp_symbolize(sy, path, mo->build_id, mo->build_id_len, off);
    if (sym->status != TP_SYM_OK) {
        add_frame(fx, base, off, tp_sym_status_str(sym->status));
        return;
    }
    for (size_t k = 0; k < sym->n; k++) {
        if (k + 1 == sym->n && is_start_func(sym->f[k].func))
            break;
        tp_an_frame *fr = add_frame(fx, base, off, "ok");
        fr->func = sym->f[k].func;
        fr->file = sym->f[k].file ? sym->f[k].file : "";
        fr->line = sym->f[k].line;
        fr->inlined = k + 1 < sym->n;
    }
}

/* A Python frame: function, file and line from its code object in the model. */
static void add_python(tp_an_frames *fx, uint64_t addr) {
    const tp_stack_pycode *c = tp_rank_stack_pycode(fx->r, TP_STACK_PY_CODE(addr));
    tp_an_frame *fr = add_frame(fx, NULL, 0, c ? "python" : "unknown Python code");
    fr->func = c && c->name ? tp_model_str(fx->m, c->name) : "?";
    fr->file = c && c->file ? tp_model_str(fx->m, c->file) : "";
    fr->line = (int)TP_STACK_PY_LINE(addr);
    fr->python = 1;
}

/* The module whose frames run Python code: the native frame right after a Python frame is
 * its interpreter's evaluation loop. TP_STACK_NO_MODULE when the stack has none there. */
static uint32_t interpreter_module(const uint32_t *mods, size_t nf) {
    for (size_t i = 0; i + 1 < nf; i++)
        if (mods[i] == TP_STACK_PYTHON && mods[i + 1] != TP_STACK_PYTHON)
            return mods[i + 1];
    return TP_STACK_NO_MODULE;
}

/* trainprof's own collector: its frames (the hook that took the stack) are in every stack. */
static int is_collector(const char *base) {
    return base && strstr(base, "trainprof") && strstr(base, ".so");
}

/* The frames a CUDA API call's stack starts with on a GPU: CUPTI calling our callback (in
 * every such stack, anywhere inner to the caller) and, innermost, the runtime or driver call
 * being made (named by the API row already) and the NVIDIA library that made it (cuDNN,
 * cuBLAS, NCCL: internals a program cannot change). Left out, a launch stack starts at the
 * program's call site; kept, every launch of the first GPU run grouped as one stack of CUPTI
 * frames, and cuDNN's kernels by cuDNN's own frames. */
static int is_cupti(const char *base) {
    return base && !strncmp(base, "libcupti", 8);
}
static int is_cuda_lib(const char *base) {
    static const char *const libs[] = {"libcuda.so", "libcudart.so", "libcudnn", "libcublas",
                                       "libnccl.so"};
    for (size_t i = 0; base && i < sizeof libs / sizeof *libs; i++)
        if (!strncmp(base, libs[i], strlen(libs[i])))
            return 1;
    return 0;
}

/* The frames of one stack into fx->cur (see the header for what is left out), from raw
 * frame `from` on, stopping once `limit` frames are there (0: no limit): what is not needed
 * is never symbolized. skip_cuda_head: leave out the innermost CUDA library frames (the
 * prefix of a stack without Python frames, is_cuda_lib). */
static void collect(tp_an_frames *fx, const uint32_t *mods, const uint64_t *addrs, size_t nf,
                    size_t from, size_t limit, int skip_cuda_head) {
    uint32_t interp = interpreter_module(mods, nf);
    int python = interp != TP_STACK_NO_MODULE, seen_python = 0;
    size_t above = 0;
    for (size_t i = from; i < nf && (!limit || fx->n_cur < limit); i++) {
        if (mods[i] == TP_STACK_PYTHON) {
            add_python(fx, addrs[i]);
            seen_python = 1;
            continue;
        }
        if (python &&
            (mods[i] == interp || (!seen_python && fx->max_above && above >= fx->max_above)))
            continue;
        const tp_stack_module *mo = tp_rank_stack_module(fx->r, mods[i]);
        const char *path = mo && mo->path ? tp_model_str(fx->m, mo->path) : NULL;
        const char *base = path ? strrchr(path, '/') : NULL;
        base = base ? base + 1 : path;
        if (is_collector(base) || is_cupti(base) ||
            (skip_cuda_head && fx->n_cur == 0 && is_cuda_lib(base)))
            continue;
        above += !seen_python;
        if (!mo)
            add_frame(fx, NULL, addrs[i], "no module");
        else
            add_symbolized(fx, mo, path, base, addrs[i]);
    }
}

static int stack_cmp(const void *a, const void *b) {
    uint32_t x = ((const tp_stack *)a)->id, y = ((const tp_stack *)b)->id;
    return x < y ? -1 : x > y;
}

static size_t cache_slot(const tp_an_frames *fx, uint32_t id) {
    size_t i = (size_t)((id * 0x9e3779b97f4a7c15ull) >> 20) & (fx->n_cache - 1);
    while (fx->cache[i].id && fx->cache[i].id != id)
        i = (i + 1) & (fx->n_cache - 1);
    return i;
}

/* The cache entry of `stack` (made on first use), NULL when the rank has no such stack. */
static stack_frames *cached(tp_an_frames *fx, uint32_t stack) {
    const tp_stacks *s = &fx->r->stacks;
    tp_stack key = {stack, 0, 0};
    if (!stack || !s->n || !bsearch(&key, s->v, s->n, sizeof *s->v, stack_cmp))
        return NULL;
    if (2 * (fx->used + 1) > fx->n_cache) {
        stack_frames *old = fx->cache;
        size_t n = fx->n_cache;
        fx->n_cache = n ? 2 * n : 64;
        fx->cache = tp_mem_xcalloc(fx->n_cache, sizeof *fx->cache);
        for (size_t i = 0; i < n; i++)
            if (old[i].id)
                fx->cache[cache_slot(fx, old[i].id)] = old[i];
        free(old);
    }
    stack_frames *c = &fx->cache[cache_slot(fx, stack)];
    if (!c->id)
        c->id = stack, fx->used++;
    return c;
}

/* The raw frames of `stack` into fx->mods and fx->addrs: returns their count. */
static size_t raw_frames(tp_an_frames *fx, uint32_t stack) {
    size_t nf = tp_rank_stack_copy(fx->r, stack, fx->mods, fx->addrs, fx->cap_raw);
    if (nf > fx->cap_raw) {
        size_t cap = fx->cap_raw;
        TP_MEM_XGROW(fx->mods, fx->cap_raw, nf);
        TP_MEM_XGROW(fx->addrs, cap, nf);
        tp_rank_stack_copy(fx->r, stack, fx->mods, fx->addrs, fx->cap_raw);
    }
    return nf;
}

/* A copy of fx->cur (NULL when empty). */
static tp_an_frame *copy_cur(const tp_an_frames *fx) {
    tp_an_frame *f = fx->n_cur ? tp_mem_xalloc(fx->n_cur, sizeof *f) : NULL;
    if (fx->n_cur)
        memcpy(f, fx->cur, fx->n_cur * sizeof *f);
    return f;
}

size_t tp_an_frames_get(tp_an_frames *fx, uint32_t stack, const tp_an_frame **out) {
    stack_frames *c = cached(fx, stack);
    if (!c)
        return 0;
    if (!c->done) {
        size_t nf = raw_frames(fx, stack);
        fx->n_cur = 0;
        collect(fx, fx->mods, fx->addrs, nf, 0, 0, 0);
        c->n = fx->n_cur;
        c->f = copy_cur(fx);
        c->done = 1;
    }
    *out = c->f;
    return c->n;
}

size_t tp_an_frames_prefix(tp_an_frames *fx, uint32_t stack, int depth, const tp_an_frame **out) {
    stack_frames *c = cached(fx, stack);
    *out = NULL;
    if (!c || depth <= 0)
        return 0;
    if (c->done) { /* the whole stack is there already: its prefix is a slice of it */
        size_t first = tp_an_frames_first_python(c->f, c->n);
        if (first == c->n) /* no Python frame: from the caller of the CUDA libraries on */
            for (first = 0; first < c->n && is_cuda_lib(c->f[first].module);)
                first++;
        first = first == c->n ? 0 : first;
        *out = c->f ? c->f + first : NULL; /* an empty stack: no NULL + 0 */
        return c->n - first < (size_t)depth ? c->n - first : (size_t)depth;
    }
    if (c->pre_depth != depth) {
        size_t nf = raw_frames(fx, stack), from = 0;
        const uint32_t *mods = fx->mods;
        /* A Python program's stack reads from its innermost Python frame: the native frames
         * inner to it are not part of the prefix, so they are not symbolized. */
        while (from < nf && mods[from] != TP_STACK_PYTHON)
            from++;
        int python = from < nf; /* else the prefix starts at the CUDA libraries' caller */
        from = python ? from : 0;
        fx->n_cur = 0;
        collect(fx, mods, fx->addrs, nf, from, (size_t)depth, !python);
        free(c->pre);
        c->n_pre = fx->n_cur < (size_t)depth ? fx->n_cur : (size_t)depth;
        c->pre = copy_cur(fx);
        c->pre_depth = depth;
    }
    *out = c->pre;
    return c->n_pre;
}

size_t tp_an_frames_first_python(const tp_an_frame *f, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (f[i].python)
            return i;
    return n;
}

static const char *file_base(const char *path) {
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

const char *tp_an_frame_label(const tp_an_frame *x, char *buf, size_t n) {
    unsigned long long off = (unsigned long long)x->offset;
    if (x->python && !x->file[0]) /* no file: a C function called from Python (Kineto) */
        snprintf(buf, n, "%s", x->func);
    else if (x->python)
        snprintf(buf, n, "%s:%d in %s", file_base(x->file), x->line, x->func);
    else if (x->func[0] && x->line > 0)
        snprintf(buf, n, "%s (%s:%d)", x->func, file_base(x->file), x->line);
    else if (x->func[0])
        snprintf(buf, n, "%s (%s)", x->func, x->module);
    else if (x->module[0])
        snprintf(buf, n, "%s+0x%llx", x->module, off);
    else
        snprintf(buf, n, "0x%llx", off);
    return buf;
}
