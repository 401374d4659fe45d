/* tp_tui_stack: a model stack as lines (see the header). */
#include "tp_tui_stack.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_mem.h"
#include "tp_symbolize.h"

struct tp_tui_stacks {
    const tp_model *m;
    const tp_rank *r;
    int no_symbols, tried;
    tp_symbolizer *sym;
    uint32_t *mods; /* the stack's raw frames (tp_rank_stack_copy) */
    uint64_t *addrs;
    size_t cap;
};

tp_tui_stacks *tp_tui_stacks_open(const tp_model *m, const tp_rank *r, int no_symbols) {
    tp_tui_stacks *s = tp_mem_xcalloc(1, sizeof *s);
    s->m = m, s->r = r, s->no_symbols = no_symbols;
    return s;
}

void tp_tui_stacks_close(tp_tui_stacks *s) {
    if (!s)
        return;
    tp_symbolizer_close(s->sym);
    free(s->mods), free(s->addrs);
    free(s);
}

static tp_symbolizer *symbolizer(tp_tui_stacks *s) {
    if (!s->tried && !s->no_symbols) {
        s->tried = 1;
        if (tp_symbolizer_open(&s->sym) != TP_OK)
            s->sym = NULL;
    }
    return s->sym;
}

static const char *base_name(const char *path) {
    const char *b = path ? strrchr(path, '/') : NULL;
    return b ? b + 1 : path ? path : "";
}

/* libc's program start and trainprof's collector: in every stack, so left out. */
static int boring(const char *module, const char *func) {
    if (strstr(module, "trainprof") && strstr(module, ".so"))
        return 1;
    return func && (!strcmp(func, "_start") || !strncmp(func, "__libc_start", 12));
}

/* One native frame into lines: one per function at its address, inlined ones first (as
 * the diagnosis lists them). Returns the lines written (0: left out). */
static int native_lines(tp_tui_stacks *s, uint32_t mod, uint64_t addr,
                        char (*lines)[TP_TUI_STACK_LINE], int max) {
    const tp_stack_module *mo = tp_rank_stack_module(s->r, mod);
    const char *path = mo && mo->path ? tp_model_str(s->m, mo->path) : NULL;
    const char *base = base_name(path);
    if (boring(base, NULL) || max < 1)
        return 0;
    tp_symbolizer *sy = path ? symbolizer(s) : NULL;
    const tp_sym *sym = sy ? tp_symbolize(sy, path, mo->build_id, mo->build_id_len, addr) : NULL;
    if (!sym || sym->status != TP_SYM_OK || !sym->n) {
        snprintf(lines[0], TP_TUI_STACK_LINE, "%s+0x%llx", path ? base : "?",
                 (unsigned long long)addr);
        return 1;
    }
    if (boring(base, sym->f[sym->n - 1].func))
        return 0;
    int n = 0;
    for (size_t k = 0; k < sym->n && n < max; k++, n++) {
        const tp_sym_frame *f = &sym->f[k];
        if (f->file && f->line > 0)
            snprintf(lines[n], TP_TUI_STACK_LINE, "%s (%s:%d)%s", f->func, base_name(f->file),
                     f->line, k + 1 < sym->n ? " inlined" : "");
        else
            snprintf(lines[n], TP_TUI_STACK_LINE, "%s (%s)", f->func, base);
    }
    return n;
}

static void python_line(tp_tui_stacks *s, uint64_t addr, char *line) {
    const tp_stack_pycode *c = tp_rank_stack_pycode(s->r, TP_STACK_PY_CODE(addr));
    snprintf(line, TP_TUI_STACK_LINE, "%s:%u in %s",
             c && c->file ? base_name(tp_model_str(s->m, c->file)) : "?",
             (unsigned)TP_STACK_PY_LINE(addr), c && c->name ? tp_model_str(s->m, c->name) : "?");
}

int tp_tui_stack_lines(tp_tui_stacks *s, uint32_t id, char (*lines)[TP_TUI_STACK_LINE], int max) {
    size_t nf = id ? tp_rank_stack_copy(s->r, id, s->mods, s->addrs, s->cap) : 0;
    if (nf > s->cap) {
        size_t cap = s->cap;
        TP_MEM_XGROW(s->mods, s->cap, nf);
        TP_MEM_XGROW(s->addrs, cap, nf);
        tp_rank_stack_copy(s->r, id, s->mods, s->addrs, s->cap);
    }
    const uint32_t *mods = s->mods;
    const uint64_t *addrs = s->addrs;
    int n = 0;
    for (size_t i = 0; i < nf && n < max; i++) /* Python frames first */
        if (mods[i] == TP_STACK_PYTHON)
            python_line(s, addrs[i], lines[n++]);
    int python = n > 0;
    for (size_t i = 0; i < nf && n < max; i++) {
        if (mods[i] == TP_STACK_PYTHON)
            continue;
        /* Under Python, the interpreter's frames between the call and the code say little:
         * keep the native frames up to the first Python one. */
        if (python && i > 0 && mods[i - 1] == TP_STACK_PYTHON)
            break;
        n += native_lines(s, mods[i], addrs[i], lines + n, max - n);
    }
    return n;
}
