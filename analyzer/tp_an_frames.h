/* tp_an_frames: the frames of a rank's call stacks as people read them, one definition for
 * every front end (the diagnosis' "source", the launching-stack table, the folded export, the
 * TUI).
 *
 * A native row refers to an interned stack by id; the model holds its frames (tp_rank_stack_copy).
 * This module turns stack `id` into frames, innermost first, the way `py-spy --native` shows a
 * Python program: every raw frame becomes one frame per function at its address (inlined ones
 * first), symbolized offline with tp_symbolize from the module's file unless `no_symbols`;
 * a Python frame (trace v1.2) becomes its function, file and line where the interpreter ran
 * it, and the interpreter's own frames (its evaluation loop, libpython) are left out. Frames
 * inside trainprof's own collector and libc's program start are left out: they are in every
 * stack. A file that is missing or rebuilt since the recording keeps module+offset and says
 * why (tp_an_frame.symbols).
 *
 * Each stack is resolved once per handle (and each address once per symbolizer, which the
 * readers of one report share: tp_an_frames_open_shared); what tp_an_frames_get returns stays valid
 * until tp_an_frames_close. The model must outlive the handle. Aborts on out of memory, like the
 * rest of the analyzer. */
#ifndef TP_AN_FRAMES_H
#define TP_AN_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#include "tp_model.h"
#include "tp_symbolize.h"

/* One frame. Strings are never NULL; they belong to the handle or the model. */
typedef struct {
    const char *module;  /* file name (no folder) of the module; "" for a Python frame or a
                            raw address */
    uint64_t offset;     /* ELF virtual address in the module (raw address without one) */
    const char *func;    /* "" when not symbolized */
    const char *file;    /* source file as the debug info (or co_filename) names it; "" */
    int line;            /* 0: unknown */
    int inlined;         /* 1: inlined into the next frame (same module and offset) */
    int python;          /* 1: a Python frame */
    int library;         /* 1: not the program's own code (common/tp_libpath): in a Python
                            program's stack, a native frame or a Python frame of the standard
                            library or an installed package; elsewhere a frame of a system or
                            CUDA library */
    uint32_t skipped;    /* in a prefix (tp_an_frames_prefix): library frames left out just
                            inner to this one, between the call and the program's own
                            code; 0 elsewhere */
    const char *symbols; /* static: "ok", "python", or why there are no names ("off",
                            "module file not found", "build-id differs from the trace", ...) */
} tp_an_frame;

typedef struct tp_an_frames tp_an_frames;

/* Frames of rank `r` of `m`. no_symbols: never open a module's file (names stay
 * module+offset, symbols "off"). max_native_above: in a Python program's stack, keep at most
 * this many raw native frames above (inner to) its innermost Python frame, the call itself
 * and its closest callers (0: keep all). Never NULL. */
tp_an_frames *tp_an_frames_open(const tp_model *m, const tp_rank *r, int no_symbols,
                                size_t max_native_above);

/* The same, symbolizing with `shared` (borrowed: it must outlive the handle and the frames
 * it returned, whose names it owns) so that every reader of one report resolves each address
 * once; NULL: the handle opens its own on first use. */
tp_an_frames *tp_an_frames_open_shared(const tp_model *m, const tp_rank *r, tp_symbolizer *shared,
                                       int no_symbols, size_t max_native_above);

/* Frees the handle and every frame it returned. NULL: no-op. */
void tp_an_frames_close(tp_an_frames *fx);

/* The frames of stack `stack`, innermost first: returns their count (0 for stack 0 or an
 * unknown id) and points *out at them (owned by the handle). */
size_t tp_an_frames_get(tp_an_frames *fx, uint32_t stack, const tp_an_frame **out);

/* The frames of stack `stack` a person reads it by, at most `depth`: what a table grouping
 * stacks by their prefix shows and a finding's source names. A Python program's stack reads
 * by its Python frames from the innermost one (the call being made: its native frames, ATen
 * and the driver, are the same for every line of the program); where that frame is a
 * library's and the program's own code comes further out, the library frames between are
 * left out (counted in the next frame's `skipped`), so the call is followed by the program's
 * line that led to it and that line's callers: "functional.py:2846 in batch_norm < ... <
 * train.py:59 in step". A stack without Python frames reads from the caller of the CUDA
 * libraries (from its innermost frame when all are theirs). The same frames as
 * tp_an_frames_get's, but only the raw frames they come from are symbolized (a stack's outer
 * frames, libc's start among them, never are). *out points at them (owned by the handle,
 * valid until it closes; a later call for the same stack with another depth replaces them).
 * Returns their count, 0 for stack 0 or an unknown id. */
size_t tp_an_frames_prefix(tp_an_frames *fx, uint32_t stack, int depth, const tp_an_frame **out);

/* Index of the first Python frame among `n` frames, n when none: a Python program's stack
 * reads from there, the frames before it being the native call that was being made. */
size_t tp_an_frames_first_python(const tp_an_frame *f, size_t n);

/* One frame as a line of text into buf (n bytes, truncated): "train.py:42 in step" (Python),
 * "func (file.c:12)", "func (libx.so)", "libx.so+0x1a2b" or "0x7f00..." (raw address). The
 * source file is shown without its folder. Returns buf. Not terminal-safe: names come from
 * the trace, so text front ends print it through tp_text. */
const char *tp_an_frame_label(const tp_an_frame *f, char *buf, size_t n);

/* Frames f[0..n) (a prefix, innermost first) as one line: "functional.py:2846 in batch_norm <
 * ... < train.py:59 in step < train.py:90 in main" (" < ... < " where a frame's `skipped`
 * says library frames were left out before it), as a finding's source and `diff` print a
 * stack. A new string (free it); "" for n = 0. Not terminal-safe (names from the trace). */
char *tp_an_frames_text(const tp_an_frame *f, size_t n);

/* The line that stands for the library frames a prefix left out just inner to frame f
 * ("... 6 library frames") into buf; "" when it left none out. Returns buf. */
const char *tp_an_frame_gap(const tp_an_frame *f, char *buf, size_t n);

#endif
