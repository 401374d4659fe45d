/* tp_export_sqlite: writes a .tprof trace as an SQLite database for offline queries.
 *
 * One table per record kind with typed columns, the metadata (strings, threads, process,
 * devices, modules, stacks) as tables, and views that join names in (kernels_named, ...).
 * Everything is inserted in one transaction through prepared statements; the schema is
 * specified in docs/export.md. An existing file at the path is replaced. */
#ifndef TP_EXPORT_SQLITE_H
#define TP_EXPORT_SQLITE_H

#include <stddef.h>
#include <stdint.h>

#include "tp_reader.h"
#include "tp_status.h"

/* Writes reader `r`'s trace to the SQLite database `path`; *rows (may be NULL) gets the
 * number of rows inserted. On failure returns TP_ERR_OPEN (cannot create `path`) or
 * TP_ERR_IO (an SQLite error), puts a one-line message in `err` (may be NULL) and removes
 * the partial file. */
tp_status tp_export_sqlite(tp_reader *r, const char *path, uint64_t *rows, char *err,
                           size_t err_size);

#endif
