/* tp_diag_stack: stack frames of a finding from the model, symbolized (see the header). */
#include "tp_diag_stack.h"

#include <stdlib.h>
#include <string.h>

#include "tp_an_stats.h"

#define TEXT_FRAMES 6 /* frames shown in the source text; the JSON has them all */

static tp_symbolizer *symbolizer(tp_diag_ctx *d) {
    if (!d->sym_tried && !d->v->opts.no_symbols) {
        d->sym_tried = 1;
        if (tp_symbolizer_open(&d->sym) != TP_OK)
            d->sym = NULL;
    }
    return d->sym;
}

/* libc's program start (_start, __libc_start_main, __libc_start_call_main): in every stack,
 * so it says nothing about this one. */
static int is_start_func(const char *func) {
    return !strcmp(func, "_start") || !strncmp(func, "__libc_start", 12);
}

static char *dup_str(const char *s) {
    char *p = NULL;
    tp_diag_cat(&p, "%s", s ? s : "");
    return p;
}

static tp_diag_frame *add_frame(tp_finding *f, const char *module, uint64_t off,
                                const char *symbols) {
    size_t cap = f->n_frames;
    tp_an_grow((void **)&f->frames, &cap, f->n_frames + 1, sizeof *f->frames);
    tp_diag_frame *fr = &f->frames[f->n_frames++];
    memset(fr, 0, sizeof *fr);
    fr->module = dup_str(module);
    fr->offset = off;
    fr->symbols = symbols;
    return fr;
}

/* One raw frame -> one frame per function at that address (inlined ones first). */
static void add_symbolized(tp_diag_ctx *d, tp_finding *f, const tp_stack_module *mo,
                           const char *path, const char *base, uint64_t off) {
    tp_symbolizer *sy = symbolizer(d);
    if (!sy || !path) {
        tp_diag_frame *fr = add_frame(f, base, off, sy ? tp_sym_status_str(TP_SYM_NO_FILE) : "off");
        fr->func = dup_str(""), fr->file = dup_str("");
        return;
    }
    const tp_sym *sym = tp_symbolize(sy, path, mo->build_id, mo->build_id_len, off);
    if (sym->status != TP_SYM_OK) {
        tp_diag_frame *fr = add_frame(f, base, off, tp_sym_status_str(sym->status));
        fr->func = dup_str(""), fr->file = dup_str("");
        return;
    }
    for (size_t k = 0; k < sym->n; k++) {
        if (k + 1 == sym->n && is_start_func(sym->f[k].func))
            break;
        tp_diag_frame *fr = add_frame(f, base, off, "ok");
        fr->func = dup_str(sym->f[k].func);
        fr->file = dup_str(sym->f[k].file);
        fr->line = sym->f[k].line;
        fr->inlined = k + 1 < sym->n;
    }
}

/* A Python frame: function, file and line from its code object in the model. */
static void add_python(tp_diag_ctx *d, tp_finding *f, uint64_t addr) {
    const tp_stack_pycode *c = tp_rank_stack_pycode(d->r, TP_STACK_PY_CODE(addr));
    tp_diag_frame *fr = add_frame(f, NULL, 0, c ? "python" : "unknown Python code");
    fr->func = dup_str(c && c->name ? tp_model_str(d->v->m, c->name) : "?");
    fr->file = dup_str(c && c->file ? tp_model_str(d->v->m, c->file) : "");
    fr->line = (int)TP_STACK_PY_LINE(addr);
}

/* The module whose frames run Python code: the native frame right after a Python frame is
 * its interpreter's evaluation loop. TP_STACK_NO_MODULE when the stack has none there. */
static uint32_t interpreter_module(const uint32_t *mods, size_t nf) {
    for (size_t i = 0; i + 1 < nf; i++)
        if (mods[i] == TP_STACK_PYTHON && mods[i + 1] != TP_STACK_PYTHON)
            return mods[i + 1];
    return TP_STACK_NO_MODULE;
}

/* Native frames kept above a Python program's innermost Python frame: the call itself and
 * its closest callers; the rest of the room goes to the Python frames. */
#define NATIVE_ABOVE_PYTHON 4

/* The frames of stack `stack` (innermost first) into f->frames. In a Python program's stack
 * the interpreter's own frames are left out (as py-spy --native shows stacks): its Python
 * frames stand where they ran. */
static void collect_frames(tp_diag_ctx *d, uint32_t stack, tp_finding *f) {
    const uint32_t *mods = NULL;
    const uint64_t *addrs = NULL;
    size_t nf = stack ? tp_rank_stack(d->r, stack, &mods, &addrs) : 0;
    uint32_t interp = nf ? interpreter_module(mods, nf) : TP_STACK_NO_MODULE;
    int python = interp != TP_STACK_NO_MODULE, seen_python = 0;
    size_t above = 0;
    for (size_t i = 0; i < nf; i++) {
        if (mods[i] == TP_STACK_PYTHON) {
            add_python(d, f, addrs[i]);
            seen_python = 1;
            continue;
        }
        if (python && (mods[i] == interp || (!seen_python && above >= NATIVE_ABOVE_PYTHON)))
            continue;
        const tp_stack_module *mo = tp_rank_stack_module(d->r, mods[i]);
        const char *path = mo && mo->path ? tp_model_str(d->v->m, mo->path) : NULL;
        const char *base = path ? strrchr(path, '/') : NULL;
        base = base ? base + 1 : path;
        if (base && strstr(base, "trainprof") && strstr(base, ".so"))
            continue;
        above += !seen_python;
        if (!mo) {
            tp_diag_frame *fr = add_frame(f, NULL, addrs[i], "no module");
            fr->func = dup_str(""), fr->file = dup_str("");
        } else {
            add_symbolized(d, f, mo, path, base, addrs[i]);
        }
    }
}

static const char *file_base(const char *path) {
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

static int is_python(const tp_diag_frame *x) {
    return !strcmp(x->symbols, "python");
}

void tp_diag_stack_append(tp_diag_ctx *d, uint32_t stack, tp_finding *f) {
    collect_frames(d, stack, f);
    const char *changed = NULL;
    int python = 0; /* a Python program's stack: the innermost frame, then Python frames */
    for (size_t i = 0; i < f->n_frames; i++)
        python |= is_python(&f->frames[i]);
    size_t shown = 0, last = 0;
    for (size_t i = 0; i < f->n_frames && shown < TEXT_FRAMES; i++) {
        const tp_diag_frame *x = &f->frames[i];
        if (python && i && !is_python(x))
            continue;
        const char *sep = !shown ? "; stack: " : i > last + 1 ? " < ... < " : " < ";
        shown++, last = i;
        if (is_python(x) && !x->file[0]) /* a C function called from Python (Kineto) */
            tp_diag_cat(&f->source, "%s%s", sep, x->func);
        else if (is_python(x))
            tp_diag_cat(&f->source, "%s%s:%d in %s", sep, file_base(x->file), x->line, x->func);
        else if (x->func[0] && x->line > 0)
            tp_diag_cat(&f->source, "%s%s (%s:%d)", sep, x->func, file_base(x->file), x->line);
        else if (x->func[0])
            tp_diag_cat(&f->source, "%s%s (%s)", sep, x->func, x->module);
        else if (x->module[0])
            tp_diag_cat(&f->source, "%s%s+0x%llx", sep, x->module, (unsigned long long)x->offset);
        else
            tp_diag_cat(&f->source, "%s0x%llx", sep, (unsigned long long)x->offset);
        if (!changed && !strcmp(x->symbols, tp_sym_status_str(TP_SYM_MISMATCH)))
            changed = x->module;
    }
    if (changed)
        tp_diag_cat(&f->source,
                    " (%s changed since the recording: build-id differs, not symbolized)", changed);
}
