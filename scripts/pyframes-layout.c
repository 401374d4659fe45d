/* pyframes-layout: prints the CPython struct offsets collector/tp_pyframes.c reads, for the
 * CPython whose headers are on the include path, in the format tp_pyframes_layout_format
 * writes, so the two can be compared (tests/collector/test_pyframes_layout.sh).
 *
 * Headers only: compiled with -DPy_BUILD_CORE against <prefix>/include/python3.X, never
 * linked with libpython, never run inside it:
 *   cc -DPy_BUILD_CORE -I$PREFIX/include/python3.11 scripts/pyframes-layout.c -o layout
 * Bit positions of the str state bit-field are found by setting each field in a zeroed
 * object and looking at which bit changed (offsetof cannot name a bit-field). */
#include <Python.h>
#include <frameobject.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#if PY_VERSION_HEX >= 0x030B0000
#include <internal/pycore_code.h>
#include <internal/pycore_frame.h>
#endif
#if PY_VERSION_HEX >= 0x03090000
#include <internal/pycore_runtime.h>
#endif
#if PY_VERSION_HEX < 0x03090000
#include <internal/pycore_pystate.h>
#else
#include <internal/pycore_interp.h>
#endif

#define OFF(type, field) ((long)offsetof(type, field))

/* Index of the lowest set bit of the 32-bit state word, or -1. */
static int state_bit(const PyASCIIObject *o) {
    unsigned w;
    memcpy(&w, (const char *)o + offsetof(PyASCIIObject, state), sizeof w);
    for (int b = 0; b < 32; b++)
        if (w >> b & 1)
            return b;
    return -1;
}

static void print_state_bits(void) {
    PyASCIIObject o;
    memset(&o, 0, sizeof o);
    o.state.kind = 1;
    int kind = state_bit(&o);
    memset(&o, 0, sizeof o);
    o.state.compact = 1;
    int compact = state_bit(&o);
    memset(&o, 0, sizeof o);
    o.state.ascii = 1;
    printf(" str_kind_bit=%d str_compact_bit=%d str_ascii_bit=%d", kind, compact, state_bit(&o));
}

int main(void) {
    long ts_cframe = -1, ts_frame, back, code, instr, owner = -1, entry = -1, name, adaptive = -1;
#if PY_VERSION_HEX < 0x030B0000
    ts_frame = OFF(PyThreadState, frame);
    back = OFF(PyFrameObject, f_back);
    code = OFF(PyFrameObject, f_code);
    instr = OFF(PyFrameObject, f_lasti);
    name = OFF(PyCodeObject, co_name);
#else
    back = OFF(_PyInterpreterFrame, previous);
    owner = OFF(_PyInterpreterFrame, owner);
    name = OFF(PyCodeObject, co_qualname);
    adaptive = OFF(PyCodeObject, co_code_adaptive);
#if PY_VERSION_HEX < 0x030D0000
    ts_cframe = OFF(PyThreadState, cframe);
    ts_frame = OFF(_PyCFrame, current_frame);
    code = OFF(_PyInterpreterFrame, f_code);
    instr = OFF(_PyInterpreterFrame, prev_instr);
#else
    ts_frame = OFF(PyThreadState, current_frame);
    code = OFF(_PyInterpreterFrame, f_executable);
    instr = OFF(_PyInterpreterFrame, instr_ptr);
#endif
#if PY_VERSION_HEX < 0x030C0000
    entry = OFF(_PyInterpreterFrame, is_entry);
#endif
#endif
    printf("python 3.%d: ts_cframe=%ld ts_frame=%ld fr_back=%ld fr_code=%ld fr_instr=%ld "
           "fr_owner=%ld fr_entry=%ld",
           PY_MINOR_VERSION, ts_cframe, ts_frame, back, code, instr, owner, entry);
    printf(" co_filename=%ld co_name=%ld co_firstlineno=%ld co_code=%ld",
           OFF(PyCodeObject, co_filename), name, OFF(PyCodeObject, co_firstlineno), adaptive);
    printf(" ob_type=%ld str_length=%ld str_state=%ld str_ascii_data=%ld str_compact_data=%ld",
           OFF(PyObject, ob_type), OFF(PyASCIIObject, length), OFF(PyASCIIObject, state),
           (long)sizeof(PyASCIIObject), (long)sizeof(PyCompactUnicodeObject));
    print_state_bits();
    /* what the sampler reads: the interpreter's thread list, each state's OS thread, and
     * the code's line table */
#if PY_VERSION_HEX < 0x030B0000
    long threads = OFF(PyInterpreterState, tstate_head), tid = OFF(PyThreadState, thread_id);
#else
    long threads = OFF(PyInterpreterState, threads.head),
         tid = OFF(PyThreadState, native_thread_id);
#endif
#if PY_VERSION_HEX < 0x030A0000
    long lines = OFF(PyCodeObject, co_lnotab);
#else
    long lines = OFF(PyCodeObject, co_linetable);
#endif
    printf(" is_threads=%ld ts_next=%ld ts_tid=%ld co_lines=%ld bytes_size=%ld bytes_data=%ld",
           threads, OFF(PyThreadState, next), tid, lines, OFF(PyVarObject, ob_size),
           OFF(PyBytesObject, ob_sval));
    /* the GIL's holder and lock word: in _PyRuntime up to 3.11 (gil_ptr -1), from 3.12
     * behind the interpreter's ceval.gil pointer (gil_ptr its offset in the interpreter) */
#if PY_VERSION_HEX < 0x030C0000
    long gil_ptr = -1, gil_holder = OFF(_PyRuntimeState, ceval.gil.last_holder),
         gil_locked = OFF(_PyRuntimeState, ceval.gil.locked);
#else
    long gil_ptr = OFF(PyInterpreterState, ceval.gil),
         gil_holder = OFF(struct _gil_runtime_state, last_holder),
         gil_locked = OFF(struct _gil_runtime_state, locked);
#endif
    printf(" gil_ptr=%ld gil_holder=%ld gil_locked=%ld", gil_ptr, gil_holder, gil_locked);
#if PY_VERSION_HEX >= 0x030D0000
    printf(" dbg_ts_frame=%ld dbg_fr_back=%ld dbg_fr_code=%ld dbg_fr_instr=%ld dbg_fr_owner=%ld"
           " dbg_co_filename=%ld dbg_co_name=%ld dbg_co_firstlineno=%ld dbg_co_code=%ld",
           OFF(_Py_DebugOffsets, thread_state.current_frame),
           OFF(_Py_DebugOffsets, interpreter_frame.previous),
           OFF(_Py_DebugOffsets, interpreter_frame.executable),
           OFF(_Py_DebugOffsets, interpreter_frame.instr_ptr),
           OFF(_Py_DebugOffsets, interpreter_frame.owner),
           OFF(_Py_DebugOffsets, code_object.filename), OFF(_Py_DebugOffsets, code_object.qualname),
           OFF(_Py_DebugOffsets, code_object.firstlineno),
           OFF(_Py_DebugOffsets, code_object.co_code_adaptive));
    printf(" dbg_is_threads=%ld dbg_ts_next=%ld dbg_ts_tid=%ld dbg_co_lines=%ld",
           OFF(_Py_DebugOffsets, interpreter_state.threads_head),
           OFF(_Py_DebugOffsets, thread_state.next),
           OFF(_Py_DebugOffsets, thread_state.native_thread_id),
           OFF(_Py_DebugOffsets, code_object.linetable));
#endif
    printf("\n");
    return 0;
}
