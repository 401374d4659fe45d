/* tp_export_sqlite: writes a .tprof trace as an SQLite database for offline queries.
 *
 * One table per record kind with typed columns, the metadata (strings, threads, process,
 * devices, modules, stacks, their frames symbolized, NVTX domains) as tables, and views that
 * join names in (kernels_named, ...). A recording of several processes is one database, each
 * row tagged with its process' pid.
 * Everything is inserted in one transaction through prepared statements; the schema is
 * specified in docs/export.md. An existing file at the path is replaced. */
#ifndef TP_EXPORT_SQLITE_H
#define TP_EXPORT_SQLITE_H

#include <stddef.h>
#include <stdint.h>

#include "tp_reader.h"
#include "tp_status.h"

/* Inlined functions kept per native address in the frames table. */
#define TP_EXPORT_MAX_INLINE 8

/* What a symbolizer says about one address: a function (never NULL), its source file (NULL:
 * unknown) and line (0: unknown). */
typedef struct {
    const char *func, *file;
    int line;
} tp_export_frame;

/* Resolves ELF virtual address `vaddr` of the module at `path` (recorded build-id: `build_id`,
 * `len` bytes) into at most `max` frames, the innermost inlined function first and the
 * function whose code holds the address last; returns how many, or 0 and points *why at a
 * static reason ("module file not found", ...). The strings must live until the export ends.
 * traces/ cannot symbolize (the symbolizer lives in model/, above it in the folder order), so
 * whoever can passes one in: `trainprof export` gives model/'s tp_symbolize. */
typedef size_t (*tp_export_symbolize_fn)(void *ctx, const char *path, const uint8_t *build_id,
                                         size_t len, uint64_t vaddr, tp_export_frame *out,
                                         size_t max, const char **why);

typedef struct {
    tp_export_symbolize_fn symbolize; /* NULL: frames keep module+offset (symbols "off") */
    void *ctx;
} tp_export_sqlite_opts;

/* Writes the traces `r[0..n)` (the processes of one recording: TRACE and those beside it,
 * tp_layout) into one SQLite database at `path`: every table has a pid column (process and
 * threads their own), and ids are per process, so keys and the views' joins are (pid, id).
 * `o` may be NULL. Returns and reports as tp_export_sqlite does. */
tp_status tp_export_sqlite_set(tp_reader *const *r, size_t n, const char *path,
                               const tp_export_sqlite_opts *o, uint64_t *rows, char *err,
                               size_t err_size);

/* Writes reader `r`'s trace to the SQLite database `path`; *rows (may be NULL) gets the
 * number of rows inserted. On failure returns TP_ERR_OPEN (cannot create `path`) or
 * TP_ERR_IO (an SQLite error), puts a one-line message in `err` (may be NULL) and removes
 * the partial file. */
tp_status tp_export_sqlite(tp_reader *r, const char *path, uint64_t *rows, char *err,
                           size_t err_size);

#endif
