/* tp_export_sqlite_nsys: a .tprof recording as an SQLite database in the schema of Nsight
 * Systems' `nsys export --type sqlite`, so SQL written for nsys exports runs on ours.
 *
 * The tables and column names are nsys's where our data fits (CUPTI_ACTIVITY_KIND_KERNEL,
 * _MEMCPY, _MEMSET, _RUNTIME, _SYNCHRONIZATION, NVTX_EVENTS, StringIds, ThreadNames,
 * PROCESSES, TARGET_INFO_GPU, TARGET_INFO_SYSTEM_ENV, CUDA_GPU_MEMORY_USAGE_EVENTS,
 * CUDA_CALLCHAINS, the ENUM_* tables of the enum columns filled, META_DATA_EXPORT,
 * ANALYSIS_DETAILS), with nsys's conventions: timestamps in ns, globalPid = pid << 24 and
 * globalTid = globalPid | tid, every name a StringIds id. Columns we cannot know are NULL. The
 * file is specified column by column in docs/export.md (what we fill, how, and how it differs
 * from nsys). Everything goes in one transaction; an existing file at the path is replaced; a
 * failed export removes its partial file. */
#ifndef TP_EXPORT_SQLITE_NSYS_H
#define TP_EXPORT_SQLITE_NSYS_H

#include <stddef.h>
#include <stdint.h>

#include "tp_export_sqlite.h"
#include "tp_reader.h"
#include "tp_status.h"

/* The nsys export schema version whose tables and columns the file follows (written into
 * META_DATA_EXPORT as EXPORT_SCHEMA_VERSION). */
#define TP_NSYS_SCHEMA_VERSION "3.16.1"

/* Writes the traces `r[0..n)` (the processes of one recording: TRACE and those beside it,
 * tp_layout) into one nsys-schema SQLite database at `path`. The k-th trace's correlation
 * ids are offset by k << 32, so a join on correlationId alone never meets another process's
 * call. The API calls' stacks become CUDA_CALLCHAINS, their native frames named by `o`'s
 * symbolizer (`o` or its symbolizer NULL: every native frame unresolved, named by its
 * address). *rows (may be NULL) gets the rows inserted. Returns TP_OK, TP_ERR_OPEN (cannot
 * create `path`), TP_ERR_IO (an SQLite error) or TP_ERR_NOMEM, with a one-line message in
 * `err` (may be NULL) on failure. */
tp_status tp_export_sqlite_nsys(tp_reader *const *r, size_t n, const char *path,
                                const tp_export_sqlite_opts *o, uint64_t *rows, char *err,
                                size_t err_size);

/* nsys's shortName of kernel `name`: the function's base name without scope, template
 * arguments, parameters or return type ("gemm" for "void ns::gemm<float>(float *, int)",
 * for the mangled "_ZN2ns4gemmIfEEvPfi" and for "gemm"). Writes it NUL-terminated into
 * `out` (cut to out_size - 1 bytes) and returns its length; a name it cannot read comes
 * back whole. */
size_t tp_export_nsys_short_name(const char *name, char *out, size_t out_size);

#endif
