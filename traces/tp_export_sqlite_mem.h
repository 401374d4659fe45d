/* tp_export_sqlite_mem: the live memory blocks at chosen moments (the peak, a failed
 * allocation) added to an SQLite export as the table `memory_live_blocks`.
 *
 * The blocks come from the caller: which blocks are live is the allocator replay
 * (analyzer/tp_an_memstate), which this library, below the analyzer, cannot run; `trainprof
 * export` computes them and calls this after tp_export_sqlite (docs/export.md). */
#ifndef TP_EXPORT_SQLITE_MEM_H
#define TP_EXPORT_SQLITE_MEM_H

#include <stddef.h>
#include <stdint.h>

#include "tp_status.h"

/* One live block at a moment. Strings are the caller's (copied by SQLite). */
typedef struct {
    const char *moment; /* "peak", "oom" */
    uint64_t moment_ts; /* the moment, trace ns */
    uint64_t addr;
    int64_t size;
    uint64_t ts;      /* allocated at, trace ns */
    const char *site; /* "range 'forward conv1' in 'step'" */
    uint32_t stack;   /* the allocating call's stack id (table stacks); 0: none */
    int64_t steps_alive;
    int32_t device; /* -1: unknown */
} tp_export_mblock;

/* Creates table memory_live_blocks in the SQLite database `path` (an export) and inserts the
 * `n` blocks in one transaction. TP_ERR_IO with a one-line message in `err` (may be NULL) on
 * an SQLite error. */
tp_status tp_export_sqlite_live_blocks(const char *path, const tp_export_mblock *b, size_t n,
                                       char *err, size_t err_size);

#endif
