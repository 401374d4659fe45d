/* tp_pyframes: the calling thread's CPython frames (file, line, function), for the stacks the
 * collector captures.
 *
 * When the profiled process runs CPython 3.8 to 3.14 (found at run time with dlsym, never
 * linked), a capture reads the calling thread's own frame chain: its thread state comes from
 * the GIL-state thread-local (PyGILState_GetThisThreadState), never from the GIL holder, so a
 * thread that released the GIL around a C call (PyTorch does around every ATen op, ctypes.CDLL
 * does around every call) still gets its frames. Only that thread changes its chain, and it
 * is inside this call. The walk reads the interpreter's structs at per-version offsets (3.13+:
 * checked against the build's own _Py_DebugOffsets); it calls nothing that allocates, takes a
 * lock or can run Python code, and touches no reference count.
 *
 * Promises: nothing is read before Py_Initialize or once finalization has begun; a thread
 * without a Python thread state gets no Python frames; a process that is not CPython (or an
 * unknown version, a free-threaded or otherwise unexpected build) costs one failed look-up,
 * repeated only when a new library was loaded; the first walk in a process reads every
 * pointer through a checked copy (process_vm_readv), so a layout that does not match the
 * running interpreter turns Python frames off instead of crashing. Pointers are checked for
 * plausibility and code and str objects for their type at every step; depth is bounded.
 *
 * Frames go into the trace as TP_FRAME_PY_MAKE(code id, line), each code object written once
 * as a PYCODE record; tp_pyframes_merge places them among the native frames, each group just
 * before the frame of the evaluation loop (_PyEval_EvalFrameDefault) that ran it. */
#ifndef TP_PYFRAMES_H
#define TP_PYFRAMES_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "tp_writer.h"

#define TP_PYFRAMES_MAX 128

/* One Python frame as the walk saw it: the identity of the code and where it was. */
typedef struct {
    uintptr_t code; /* the PyCodeObject */
    uintptr_t name; /* its name object: part of the cache key, a guard against address reuse */
    int32_t lasti;  /* instruction offset in the unit PyCode_Addr2Line takes; -1: not started */
    int32_t entry;  /* 1: the outermost frame its evaluation-loop C frame runs */
} tp_pyframe;

/* Walks the calling thread's Python frames, innermost first, into `out` (at most `max`).
 * Returns how many; 0 when this is not CPython, Python is not running, or the thread has no
 * Python state. *hash is set to a hash of the frames (code, name, offset), for the caller's
 * stack cache. Lock-free except for the first call in a process (resolution, checked walk). */
uint32_t tp_pyframes_walk(tp_pyframe *out, uint32_t max, uint64_t *hash);

/* 1 while tp_pyframes_walk returns 0 without looking (the process was looked at and has no
 * CPython whose frames it can walk: not CPython, or a version or build it does not support;
 * looked at again after a library is loaded), so a capture can skip the call: ~25
 * instructions of a ~100-instruction cached capture. The flag is tp_pyframes.c's. */
extern _Atomic int tp_pyframes__none __attribute__((visibility("hidden")));
static inline int tp_pyframes_none(void) {
    return atomic_load_explicit(&tp_pyframes__none, memory_order_relaxed);
}

/* Merges `n_py` walked frames into the `n_native` native frames (TP_FRAME_MAKE, innermost
 * first, with `pcs` their return addresses), writing at most `max` frames to `out`: each
 * group of Python frames goes just before the evaluation-loop frame that runs it; groups left
 * when those frames run out (the native stack was cut, or a loop frame was not recognised)
 * follow the last placed group, so Python frames always keep their order. Writes a PYCODE
 * record (and its strings) through `w` for every code object not seen before. Locked; the
 * slow path of a capture. Returns the number of frames written. */
uint32_t tp_pyframes_merge(tp_writer *w, void *const *pcs, const uint64_t *native,
                           uint32_t n_native, const tp_pyframe *py, uint32_t n_py, uint64_t *out,
                           uint32_t max);

/* ---- other threads: the sampler (tp_sampler.c) reads every Python thread's frames from a
 * thread of its own, while they run. Every read goes through a checked copy: a frame, state
 * or code object may go at any moment, so a walk can see a torn chain but never fault. */

#define TP_PYTHREADS_MAX 256

typedef struct {
    uintptr_t ts; /* the PyThreadState */
    uint32_t tid; /* its OS thread id; 0: unknown */
} tp_pythread;

/* The main interpreter's thread states, at most `max` (TP_PYTHREADS_MAX); 0 when Python
 * frames are off, Python is not initialized or is finalizing. Call it from the sampler's own
 * thread, which runs no Python (up to 3.10 it finds glibc's thread-id offset from it). */
uint32_t tp_pyframes_threads(tp_pythread *out, uint32_t max);

/* The thread state that holds the GIL now (tp_pythread.ts), 0 when it is free or not known
 * (3.14, a build without the symbols): read through checked copies, from any thread. */
uintptr_t tp_pyframes_gil_holder(void);

/* Walks the frames of thread state `ts` (from tp_pyframes_threads) innermost first, as
 * tp_pyframes_walk does for the calling thread. 0 with *torn set when the chain changed under
 * the walk (an unreadable address, a name that is not a str). */
uint32_t tp_pyframes_walk_other(uintptr_t ts, tp_pyframe *out, uint32_t max, uint64_t *hash,
                                int *torn);

/* The trace frames (TP_FRAME_PY_MAKE) of `n` frames tp_pyframes_walk_other gave, writing the
 * PYCODE records of new code objects through `w`; names and lines read through checked
 * copies (the line decoded from a copy of the code's line table, never PyCode_Addr2Line).
 * Locked. Returns n, or 0 when a frame's code no longer reads as a live code object (a
 * module's code, freed once imported): the walk is stale, write nothing. */
uint32_t tp_pyframes_encode_other(tp_writer *w, const tp_pyframe *py, uint32_t n, uint64_t *out);

/* Forgets every code id (a fork child records into a new writer). Only while no thread
 * captures. Symbols and the verified layout are kept: the image is the same. */
void tp_pyframes_reset(void);

/* A library was loaded: a process found not to be CPython is looked at again at the next
 * walk (an embedder may dlopen libpython late). */
void tp_pyframes_modules_changed(void);

/* Describes the layout used for CPython 3.`minor` in the format of
 * scripts/pyframes-layout.c ("python 3.11: ts_cframe=56 ..."). Returns 0 when that version
 * is not supported (nothing written), else 1. For tests. */
int tp_pyframes_layout_format(unsigned minor, char *buf, size_t n);

/* Why the last resolution found no usable CPython: "" when Python frames are on (or not yet
 * looked for), else a static phrase ("not CPython", "unsupported version 3.7", ...). */
const char *tp_pyframes_status(void);

#endif
