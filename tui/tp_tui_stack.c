/* tp_tui_stack: a model stack as lines (see the header), read through tp_an_frames, the
 * reading every front end shares. */
#include "tp_tui_stack.h"

#include <stdio.h>
#include <stdlib.h>

#include "tp_an_frames.h"
#include "tp_an_stacks.h"
#include "tp_mem.h"

struct tp_tui_stacks {
    tp_an_frames *fx;
};

tp_tui_stacks *tp_tui_stacks_open(const tp_model *m, const tp_rank *r, int no_symbols) {
    tp_tui_stacks *s = tp_mem_xcalloc(1, sizeof *s);
    s->fx = tp_an_frames_open(m, r, no_symbols, 0);
    return s;
}

void tp_tui_stacks_close(tp_tui_stacks *s) {
    if (!s)
        return;
    tp_an_frames_close(s->fx);
    free(s);
}

/* Frame f as line n of lines, when it fits: its label, " inlined" for an inlined function. */
static int put(const tp_an_frame *f, char (*lines)[TP_TUI_STACK_LINE], int n, int max) {
    if (n >= max)
        return n;
    char label[TP_TUI_STACK_LINE];
    snprintf(lines[n], TP_TUI_STACK_LINE, "%s%s", tp_an_frame_label(f, label, sizeof label),
             f->inlined ? " inlined" : "");
    return n + 1;
}

int tp_tui_stack_lines(tp_tui_stacks *s, uint32_t id, char (*lines)[TP_TUI_STACK_LINE], int max) {
    const tp_an_frame *all = NULL, *pre = NULL;
    size_t n_all = id ? tp_an_frames_get(s->fx, id, &all) : 0;
    size_t first_py = tp_an_frames_first_python(all, n_all);
    int n = 0;
    if (first_py == n_all) { /* a native stack: every frame, innermost first */
        for (size_t i = 0; i < n_all; i++)
            n = put(&all[i], lines, n, max);
        return n;
    }
    /* A Python program's: its frames as the report reads them (the call, the library frames
     * left out, the program's own line and its callers), then the native call being made */
    size_t n_pre = tp_an_frames_prefix(s->fx, id, TP_AN_STACK_DEPTH_MAX, &pre);
    for (size_t i = 0; i < n_pre && n < max; i++) {
        if (pre[i].skipped)
            tp_an_frame_gap(&pre[i], lines[n++], TP_TUI_STACK_LINE);
        n = put(&pre[i], lines, n, max);
    }
    for (size_t i = 0; i < first_py; i++)
        n = put(&all[i], lines, n, max);
    return n;
}
