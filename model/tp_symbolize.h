/* tp_symbolize: offline symbolization of the collector's stack frames.
 *
 * The collector records a frame as (module, ELF virtual address) and never looks up a name in
 * the profiled process. This module does it afterwards, in the analyzer: it opens the module's
 * file with elfutils' libdwfl (offline reporting), checks that the file on disk still has the
 * build-id the MODULE record saw, and turns the address into the function that contains it,
 * its source file:line, and the chain of functions inlined at that address. Separate debug
 * files are found the standard way (.gnu_debuglink, /usr/lib/debug/.build-id/xx/rest.debug).
 *
 * Promises: a file that is missing, not ELF, damaged or rebuilt since the trace was recorded
 * gives a status saying so and no names (the caller falls back to module+offset), never a
 * crash and never a name from the wrong binary. Each module is opened once and each
 * (module, address) resolved once; results live until tp_symbolizer_close. C++ linkage names
 * are demangled (tp_demangle), as Nsight Systems and py-spy show them. */
#ifndef TP_SYMBOLIZE_H
#define TP_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

#include "tp_status.h"

typedef struct tp_symbolizer tp_symbolizer;

#define TP_SYM_STATUS_TABLE(X)                                                                     \
    X(TP_SYM_OK, "ok")                                    /* a function name is known */           \
    X(TP_SYM_NO_FILE, "module file not found")            /* missing or unreadable */              \
    X(TP_SYM_NOT_ELF, "not a valid ELF file")             /* not ELF, or truncated/damaged */      \
    X(TP_SYM_MISMATCH, "build-id differs from the trace") /* rebuilt since the recording */        \
    X(TP_SYM_NO_SYMBOL, "no symbol at this address")      /* outside every function known */

typedef enum {
#define TP_SYM_ENUM(name, text) name,
    TP_SYM_STATUS_TABLE(TP_SYM_ENUM)
#undef TP_SYM_ENUM
} tp_sym_status;

/* Static text for `s` ("build-id differs from the trace"), never NULL. */
const char *tp_sym_status_str(tp_sym_status s);

/* Inlined functions kept per address; deeper chains keep the innermost ones and the owner. */
#define TP_SYM_MAX_INLINE 8

typedef struct {
    const char *func; /* never NULL */
    const char *file; /* source file as the debug info names it (often absolute); NULL: unknown */
    int line;         /* 0: unknown */
} tp_sym_frame;

/* What one address resolves to. With status TP_SYM_OK, n >= 1: f[0] is the innermost
 * function (inlined into f[1] when n > 1, whose file:line is then the call site), f[n-1] the
 * function whose code holds the address. Otherwise n == 0. */
typedef struct {
    tp_sym_status status;
    size_t n;
    tp_sym_frame f[TP_SYM_MAX_INLINE];
} tp_sym;

/* Creates an empty symbolizer (*out; close with tp_symbolizer_close). TP_ERR_NOMEM only. */
tp_status tp_symbolizer_open(tp_symbolizer **out);

/* Frees every module and result. NULL: no-op. */
void tp_symbolizer_close(tp_symbolizer *s);

/* Resolves ELF virtual address `vaddr` of the module at `path` whose recorded build-id is
 * `build_id` (`build_id_len` bytes; 0: unknown, not checked). Never NULL; the result and its
 * strings are owned by `s` and stay valid until tp_symbolizer_close. */
const tp_sym *tp_symbolize(tp_symbolizer *s, const char *path, const uint8_t *build_id,
                           size_t build_id_len, uint64_t vaddr);

/* The name of the function holding `vaddr` from the module's symbol table only, without
 * reading its DWARF (decompressing a library's debug info costs more than everything else in
 * a report): lets a caller skip addresses it will leave out (libc's program start). NULL when
 * unknown or the module is unusable. Owned by `s` (valid until tp_symbolizer_close). */
const char *tp_symbolize_func(tp_symbolizer *s, const char *path, const uint8_t *build_id,
                              size_t build_id_len, uint64_t vaddr);

/* How the module at (path, build_id) opened: TP_SYM_OK when its file is usable (it may still
 * lack symbols for some address). Opens it when not yet open. */
tp_sym_status tp_symbolizer_module_status(tp_symbolizer *s, const char *path,
                                          const uint8_t *build_id, size_t build_id_len);

/* What a symbolizer has done so far: how many module files it opened (each once, whatever
 * their status) and how many addresses it resolved (each (module, address) once; repeated
 * lookups are cache hits). Lets a test check that a report symbolizes a frame at most once
 * and only the frames it shows. */
typedef struct {
    size_t modules;  /* module files opened */
    size_t resolved; /* addresses resolved in an open module */
    size_t lookups;  /* tp_symbolize calls, hits included */
} tp_symbolizer_stats;

/* Fills *out with `s`'s counts (zeros for NULL). */
void tp_symbolizer_get_stats(const tp_symbolizer *s, tp_symbolizer_stats *out);

#endif
