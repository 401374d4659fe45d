/* tp_diag_stack: the CPU stack behind a finding, read from the model and symbolized.
 *
 * A native row refers to an interned stack by id; the model holds its frames and modules
 * (tp_rank_stack), so the trace file is never opened again. Each frame becomes one
 * tp_diag_frame per function at its address (inlined ones first), symbolized offline with
 * tp_symbolize from the module's file unless opts.no_symbols; a file that is missing or
 * rebuilt keeps module+offset and says why. Frames inside trainprof's own collector and
 * libc's program start are left out: they are in every stack. Python frames (trace v1.2)
 * come as "python" frames (function, file, line) where the interpreter ran them, and the
 * interpreter's own frames are left out. Internal to the diagnosis. */
#ifndef TP_DIAG_STACK_H
#define TP_DIAG_STACK_H

#include <stdint.h>

#include "tp_diag_ctx.h"

/* Sets f->frames to the frames of stack `stack` of the rank (every frame, innermost first;
 * none for 0 or an unknown id) and appends "; stack: func (file.c:12) < libx.so+0x1a2b < ..."
 * to f->source: at most 6 frames as tp_an_frames_prefix reads them (a Python program's call,
 * " < ... < " where library frames are left out, then its own line and callers), with a note
 * when a module's file changed since the recording. */
void tp_diag_stack_append(tp_diag_ctx *d, uint32_t stack, tp_finding *f);

#endif
