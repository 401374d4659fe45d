/* tp_cmd_export_mem: what `trainprof export` adds about device memory, computed here because
 * traces/ (the exporters) cannot reach the analyzer: the allocator replay's timeline as
 * Chrome counter samples, and its live blocks at the peak and at the first failed allocation
 * as rows of the SQLite table memory_live_blocks. Both load the trace's recording
 * (tp_load) and run tp_an_memuse on every rank, the figures the report and the TUI show. */
#ifndef TP_CMD_EXPORT_MEM_H
#define TP_CMD_EXPORT_MEM_H

#include <stddef.h>

#include "tp_export_chrome.h"
#include "tp_export_sqlite_mem.h"

/* Counter samples of trace `path`'s recording (every rank's allocated/reserved after each
 * change) into *out (malloc'ed; free() it); returns their count, 0 when the trace has no
 * memory events or cannot be loaded. */
size_t tp_cmd_export_mem_counters(const char *path, tp_export_counter **out);

/* Adds the live blocks at the peak and at the failed allocation of trace `path` to the SQLite
 * export `db`. TP_OK also when there is nothing to add; errors as
 * tp_export_sqlite_live_blocks. */
tp_status tp_cmd_export_mem_blocks(const char *path, const char *db, char *err, size_t err_len);

#endif
