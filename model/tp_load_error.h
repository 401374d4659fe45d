/* tp_load_error: why loading a trace file failed (or what to note about it), in parts.
 *
 * The loaders fill the parts and never format a message; whoever shows the error puts them
 * together with tp_load_error_format into the one line users see:
 *   "FILE:LINE:COL: byte N: WHERE: REASON"  (a position in the file's text; Kineto JSON)
 *   "FILE: REASON"                          (no position)
 *   "REASON"                                (no file: "no trace given")
 * so that no caller has to cut a message apart to drop or add a part. */
#ifndef TP_LOAD_ERROR_H
#define TP_LOAD_ERROR_H

#include <stddef.h>
#include <stdint.h>

#include "tp_status.h"

typedef struct {
    tp_status status; /* TP_OK: no error (reason may still hold a note) */
    char file[512];   /* the path (or in-memory name) the loader was given (cut if longer) */
    uint64_t line;    /* 1-based line of the position in the (decompressed) text; 0: none */
    uint64_t col;     /* 1-based column in bytes */
    uint64_t byte;    /* offset of the position from the start of the text, from 0 */
    char where[48];   /* the element at the position: "traceEvents[12]"; "" */
    char reason[416]; /* what is wrong, or the note, without the file or the position */
} tp_load_error;

/* Clears *e for loading `file`: TP_OK, no position, no reason. */
void tp_load_error_init(tp_load_error *e, const char *file);

/* Sets the status and the reason (printf-style); keeps the position. Returns `status`. */
tp_status tp_load_error_set(tp_load_error *e, tp_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The one-line message of *e into buf (n bytes, NUL-terminated, cut when too long); "" when
 * *e holds no reason. Returns buf. */
char *tp_load_error_format(const tp_load_error *e, char *buf, size_t n);

/* For the loaders' string forms: formats *e into err (when err and err_len) and returns st. */
tp_status tp_load_error_string(tp_status st, const tp_load_error *e, char *err, size_t err_len);

#endif
