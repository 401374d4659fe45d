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

/* The frames of stack `stack` (innermost first) into f->frames. */
static void collect_frames(tp_diag_ctx *d, uint32_t stack, tp_finding *f) {
    const uint32_t *mods = NULL;
    const uint64_t *addrs = NULL;
    size_t nf = stack ? tp_rank_stack(d->r, stack, &mods, &addrs) : 0;
    for (size_t i = 0; i < nf; i++) {
        const tp_stack_module *mo = tp_rank_stack_module(d->r, mods[i]);
        const char *path = mo && mo->path ? tp_model_str(d->v->m, mo->path) : NULL;
        const char *base = path ? strrchr(path, '/') : NULL;
        base = base ? base + 1 : path;
        if (base && strstr(base, "trainprof") && strstr(base, ".so"))
            continue;
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

void tp_diag_stack_append(tp_diag_ctx *d, uint32_t stack, tp_finding *f) {
    collect_frames(d, stack, f);
    const char *changed = NULL;
    for (size_t i = 0; i < f->n_frames && i < TEXT_FRAMES; i++) {
        const tp_diag_frame *x = &f->frames[i];
        const char *sep = i ? " < " : "; stack: ";
        if (x->func[0] && x->line > 0)
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
