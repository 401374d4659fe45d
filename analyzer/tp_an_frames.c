/* tp_an_frames: a rank's stacks as symbolized frames, resolved once each (see the header). */
#include "tp_an_frames.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_libpath.h"
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
    uint32_t *lib_file; /* Python files classified (tp_libpath_python), by string id
                           + 1 (open addressing; 0: empty): one classification per file */
    uint8_t *lib_is;
    size_t n_lib, used_lib;
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
    free(fx->lib_file), free(fx->lib_is);
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
    *fr = (tp_an_frame){
        .module = module ? module : "", .offset = off, .func = "", .file = "", .symbols = symbols};
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

static size_t lib_slot(const tp_an_frames *fx, uint32_t key) {
    size_t i = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 20) & (fx->n_lib - 1);
    while (fx->lib_file[i] && fx->lib_file[i] != key)
        i = (i + 1) & (fx->n_lib - 1);
    return i;
}

/* tp_libpath_python of the file with string id `file`, classified once per handle:
 * a report reads the same few hundred files in thousands of stacks. */
static int library_file(tp_an_frames *fx, uint32_t file) {
    if (2 * (fx->used_lib + 1) > fx->n_lib) {
        uint32_t *old = fx->lib_file;
        uint8_t *old_is = fx->lib_is;
        size_t n = fx->n_lib;
        fx->n_lib = n ? 2 * n : 256;
        fx->lib_file = tp_mem_xcalloc(fx->n_lib, sizeof *fx->lib_file);
        fx->lib_is = tp_mem_xalloc(fx->n_lib, sizeof *fx->lib_is);
        for (size_t i = 0; i < n; i++)
            if (old[i]) {
                size_t k = lib_slot(fx, old[i]);
                fx->lib_file[k] = old[i], fx->lib_is[k] = old_is[i];
            }
        free(old), free(old_is);
    }
    size_t k = lib_slot(fx, file + 1);
    if (!fx->lib_file[k]) {
        fx->lib_file[k] = file + 1, fx->used_lib++;
        fx->lib_is[k] = (uint8_t)tp_libpath_python(file ? tp_model_str(fx->m, file) : "");
    }
    return fx->lib_is[k];
}

/* A Python frame: function, file and line from its code object in the model. */
static void add_python(tp_an_frames *fx, uint64_t addr) {
    const tp_stack_pycode *c = tp_rank_stack_pycode(fx->r, TP_STACK_PY_CODE(addr));
    tp_an_frame *fr = add_frame(fx, NULL, 0, c ? "python" : "unknown Python code");
    fr->func = c && c->name ? tp_model_str(fx->m, c->name) : "?";
    fr->file = c && c->file ? tp_model_str(fx->m, c->file) : "";
    fr->line = (int)TP_STACK_PY_LINE(addr);
    fr->python = 1;
    fr->library = library_file(fx, c ? c->file : 0);
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

/* The frames of one stack into fx->cur (see the header for what is left out), from raw
 * frame `from` on, stopping once `limit` frames are there (0: no limit): what is not needed
 * is never symbolized. skip_cuda_head: leave out the innermost CUDA library frames (the
 * prefix of a stack without Python frames, tp_libpath_cuda). python_depth: only the Python
 * frames a prefix of that depth reads (a Python program's: tp_an_frames_prefix), so no native
 * frame is symbolized; 0: every frame. */
static void collect(tp_an_frames *fx, const uint32_t *mods, const uint64_t *addrs, size_t nf,
                    size_t from, size_t limit, int skip_cuda_head, size_t python_depth) {
    uint32_t interp = interpreter_module(mods, nf);
    int python = interp != TP_STACK_NO_MODULE, seen_python = 0;
    size_t above = 0, own = SIZE_MAX; /* python_depth: the program's innermost frame (the
                                         first, or after it), once collected */
    for (size_t i = from; i < nf && (!limit || fx->n_cur < limit); i++) {
        if (mods[i] == TP_STACK_PYTHON) {
            add_python(fx, addrs[i]);
            seen_python = 1;
            if (!python_depth)
                continue;
            /* a prefix reads the first frame, then `depth` - 1 from the program's own on
             * (tp_an_frames_prefix): the frames past those are never read */
            const tp_an_frame *c = fx->cur;
            if (own == SIZE_MAX && (fx->n_cur == 1 ? !c[0].library : !c[fx->n_cur - 1].library))
                own = fx->n_cur - 1;
            if (own != SIZE_MAX && fx->n_cur - (own ? own : 1) + 1 >= python_depth)
                break;
            continue;
        }
        if (python_depth || (python && (mods[i] == interp ||
                                        (!seen_python && fx->max_above && above >= fx->max_above))))
            continue;
        const tp_stack_module *mo = tp_rank_stack_module(fx->r, mods[i]);
        const char *path = mo && mo->path ? tp_model_str(fx->m, mo->path) : NULL;
        const char *base = path ? strrchr(path, '/') : NULL;
        base = base ? base + 1 : path;
        if (is_collector(base) || is_cupti(base) ||
            (skip_cuda_head && fx->n_cur == 0 && tp_libpath_cuda(base)))
            continue;
        above += !seen_python;
        size_t first = fx->n_cur;
        if (!mo)
            add_frame(fx, NULL, addrs[i], "no module");
        else
            add_symbolized(fx, mo, path, base, addrs[i]);
        /* in a Python program its native frames are the interpreter's and its extensions' */
        int lib = python || tp_libpath_native(path);
        for (size_t k = first; k < fx->n_cur; k++)
            fx->cur[k].library = lib;
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
        collect(fx, fx->mods, fx->addrs, nf, 0, 0, 0, 0);
        c->n = fx->n_cur;
        c->f = copy_cur(fx);
        c->done = 1;
    }
    *out = c->f;
    return c->n;
}

/* A Python program's prefix from its frames f[0..n) (innermost first, some Python): see the
 * header. Returns a new array of its frames, *n_out of them. */
static tp_an_frame *python_prefix(const tp_an_frame *f, size_t n, size_t depth, size_t *n_out) {
    size_t first = tp_an_frames_first_python(f, n), own = first;
    while (own < n && (!f[own].python || f[own].library))
        own++;
    tp_an_frame *p = tp_mem_xalloc(depth, sizeof *p);
    size_t np = 0;
    uint32_t skipped = 0;
    for (size_t i = first; i < n && np < depth; i++) {
        if (!f[i].python)
            continue;
        if (np == 1 && own < n && i < own) { /* between the call and the program's code */
            skipped++;
            continue;
        }
        p[np] = f[i];
        p[np++].skipped = skipped;
        skipped = 0;
    }
    *n_out = np;
    return np < depth ? tp_mem_xrealloc(p, np ? np : 1, sizeof *p) : p;
}

size_t tp_an_frames_prefix(tp_an_frames *fx, uint32_t stack, int depth, const tp_an_frame **out) {
    stack_frames *c = cached(fx, stack);
    *out = NULL;
    if (!c || depth <= 0)
        return 0;
    if (c->pre_depth == depth) {
        *out = c->pre;
        return c->n_pre;
    }
    const tp_an_frame *f = c->f;
    size_t n = c->n;
    if (!c->done) {
        /* only the raw frames the prefix may read are resolved: a Python program's Python
         * frames (never symbolized), or a native stack's first frames from the CUDA
         * libraries' caller */
        size_t nf = raw_frames(fx, stack), from = 0;
        while (from < nf && fx->mods[from] != TP_STACK_PYTHON)
            from++;
        int python = from < nf;
        fx->n_cur = 0;
        collect(fx, fx->mods, fx->addrs, nf, python ? from : 0, python ? 0 : (size_t)depth, !python,
                python ? (size_t)depth : 0);
        f = fx->cur, n = fx->n_cur;
    }
    free(c->pre);
    if (tp_an_frames_first_python(f, n) < n) {
        c->pre = python_prefix(f, n, (size_t)depth, &c->n_pre);
    } else {
        size_t first = 0; /* a native stack: from the caller of the CUDA libraries on */
        if (c->done)
            while (first < n && tp_libpath_cuda(f[first].module))
                first++;
        first = first == n ? 0 : first;
        c->n_pre = n - first < (size_t)depth ? n - first : (size_t)depth;
        c->pre = tp_mem_xalloc(c->n_pre ? c->n_pre : 1, sizeof *c->pre);
        if (c->n_pre)
            memcpy(c->pre, f + first, c->n_pre * sizeof *f);
    }
    c->pre_depth = depth;
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

char *tp_an_frames_text(const tp_an_frame *f, size_t n) {
    char label[1024];
    size_t len = 0, cap = 0;
    char *s = NULL;
    for (size_t i = 0; i <= n; i++) {
        const char *sep = !i ? "" : i == n ? NULL : f[i].skipped ? " < ... < " : " < ";
        const char *l = i < n ? tp_an_frame_label(&f[i], label, sizeof label) : "";
        size_t k = (sep ? strlen(sep) : 0) + strlen(l);
        TP_MEM_XGROW(s, cap, len + k + 1);
        len += (size_t)snprintf(s + len, cap - len, "%s%s", sep ? sep : "", l);
    }
    return s;
}

const char *tp_an_frame_gap(const tp_an_frame *f, char *buf, size_t n) {
    if (f->skipped)
        snprintf(buf, n, "... %u library frame%s", f->skipped, f->skipped == 1 ? "" : "s");
    else if (n)
        buf[0] = 0;
    return buf;
}
