/* tp_tui_stack: a CPU call stack of the model, symbolized, as lines for the Timeline's
 * detail pane (the stack of the call that launched a kernel, the stack of an NVTX push).
 *
 * The frames are tp_an_frames', the one reading of a stack the report, the Stacks view and
 * the exports share: named offline by tp_symbolize from the modules' files (function,
 * file:line, inlined functions marked), module+offset with --no-symbols or when a file is
 * missing or rebuilt; trainprof's collector frames and libc's program start left out. A
 * Python program's stack reads as the report reads it (tp_an_frames_prefix): the call, "...
 * N library frames" where library frames lead to it, the program's own line and its callers;
 * then the native frames of the call being made. A native program's: every frame. */
#ifndef TP_TUI_STACK_H
#define TP_TUI_STACK_H

#include <stddef.h>
#include <stdint.h>

#include "tp_model.h"

typedef struct tp_tui_stacks tp_tui_stacks;

#define TP_TUI_STACK_LINE 192

/* A stack reader over rank `r` of `m` (both must outlive it); no_symbols: never open
 * module files. Aborts on out of memory. */
tp_tui_stacks *tp_tui_stacks_open(const tp_model *m, const tp_rank *r, int no_symbols);

/* Frees it; NULL: no-op. */
void tp_tui_stacks_close(tp_tui_stacks *s);

/* Writes up to `max` lines for stack `id` (as the header says, innermost first) into lines;
 * returns how many (0: no stack, or id 0). */
int tp_tui_stack_lines(tp_tui_stacks *s, uint32_t id, char (*lines)[TP_TUI_STACK_LINE], int max);

#endif
