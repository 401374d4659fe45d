/* tp_kineto_stacks: the Python call stacks of a PyTorch-profiler trace, as model stacks.
 *
 * torch.profiler records where an op was called from in two ways: `with_stack` in PyTorch up
 * to 1.10 writes each op's stack as an args "Call stack" string ("file.py(42): func;..."),
 * innermost first; later versions write a `python_function` event per Python call, nested
 * (by time, on the op's thread) around the ops, annotations and runtime calls it made. Both
 * become the model's stacks exactly as the native loader stores a recorded one (tp_stacks):
 * Python frames (frame_module TP_STACK_PYTHON, a code object and a line) interned once per
 * code object, each distinct stack once, innermost frame first, referenced by tp_events.stack
 * of the CPU-side rows (GPU ops reach theirs through the launching call, as in native
 * traces). Used by the Kineto importer only. */
#ifndef TP_KINETO_STACKS_H
#define TP_KINETO_STACKS_H

#include <stddef.h>
#include <stdint.h>

#include "tp_model.h"

typedef struct tp_kineto_stacks tp_kineto_stacks;

/* Starts the stacks of rank `r` of `m` (r must stay valid while it is open). Aborts on out
 * of memory, like the importer. */
tp_kineto_stacks *tp_kineto_stacks_open(tp_model *m, tp_rank *r);

/* Frees the builder (the stacks stay in the rank). NULL: no-op. */
void tp_kineto_stacks_close(tp_kineto_stacks *s);

/* The stack id of a "Call stack" text (`len` bytes, frames split by ';', innermost first,
 * each "file(line): function"; other frame texts become a function name without file),
 * added to the rank on first sight; 0 for a text without frames. */
uint32_t tp_kineto_stacks_call_stack(tp_kineto_stacks *s, const char *text, size_t len);

/* Gives every CPU-side row of the rank that has no stack yet the stack of the
 * python_function events enclosing it on its thread (innermost first; the event itself
 * first for a python_function row). Call once, after every row was pushed. `threads` 2: the
 * import ran on two threads, and so may the pass (on tables of 32 k rows or more, or
 * TP_PAR_MIN_ROWS when it is less); the result is the same either way. */
void tp_kineto_stacks_python(tp_kineto_stacks *s, int threads);

#endif
