/* tp_diag_stack: stack frames of a finding from the model, symbolized (see the header). The
 * frames themselves come from tp_an_frames, as every front end's do; this file only copies
 * them into the finding and writes its text. */
#include "tp_diag_stack.h"

#include <stdlib.h>
#include <string.h>

#include "tp_an_stats.h"
#include "tp_symbolize.h"

#define TEXT_FRAMES 6 /* frames shown in the source text; the JSON has them all */

/* Native frames the JSON keeps above a Python program's innermost Python frame: the call
 * itself and its closest callers (the text leaves them out: tp_an_frames_prefix). */
#define NATIVE_ABOVE_PYTHON 4

static char *dup_str(const char *s) {
    char *p = NULL;
    tp_diag_cat(&p, "%s", s ? s : "");
    return p;
}

/* The frames of stack `stack` (innermost first) into f->frames. */
static void collect_frames(tp_diag_ctx *d, uint32_t stack, tp_finding *f) {
    if (!d->fx)
        d->fx = tp_an_frames_open_shared(d->v->m, d->r, d->v->opts.symbolizer,
                                         d->v->opts.no_symbols, NATIVE_ABOVE_PYTHON);
    const tp_an_frame *fr = NULL;
    size_t n = tp_an_frames_get(d->fx, stack, &fr);
    if (!n)
        return;
    size_t cap = f->n_frames;
    tp_an_grow((void **)&f->frames, &cap, f->n_frames + n, sizeof *f->frames);
    for (size_t i = 0; i < n; i++) {
        tp_diag_frame *x = &f->frames[f->n_frames++];
        x->module = dup_str(fr[i].module);
        x->offset = fr[i].offset;
        x->func = dup_str(fr[i].func);
        x->file = dup_str(fr[i].file);
        x->line = fr[i].line;
        x->inlined = fr[i].inlined;
        x->library = fr[i].library;
        x->symbols = fr[i].symbols;
    }
}

void tp_diag_stack_append(tp_diag_ctx *d, uint32_t stack, tp_finding *f) {
    collect_frames(d, stack, f);
    /* the text reads as the launching-stack table does (tp_an_frames_prefix): a Python
     * program's call, then the program's own line that led to it and its callers */
    const tp_an_frame *fr = NULL;
    size_t n = d->fx ? tp_an_frames_prefix(d->fx, stack, TEXT_FRAMES, &fr) : 0;
    const char *changed = NULL;
    for (size_t i = 0; i < n && !changed; i++)
        if (!strcmp(fr[i].symbols, tp_sym_status_str(TP_SYM_MISMATCH)))
            changed = fr[i].module;
    if (n) {
        char *text = tp_an_frames_text(fr, n);
        tp_diag_cat(&f->source, "; stack: %s", text);
        free(text);
    }
    if (changed)
        tp_diag_cat(&f->source,
                    " (%s changed since the recording: build-id differs, not symbolized)", changed);
}
