/* tp_merge: the reduce step of a job too large for one machine (`trainprof merge`).
 *
 * `trainprof report --format json` run per rank, where each trace lives, is the map step:
 * each rank's object carries its summary row ("cross_rank_row", docs/report-schema.md). The
 * merge reads those reports back (yajl's tree: they are small), gathers the rows of every
 * rank and judges them with the report's own code (tp_an_ranks_judge, rendered by
 * tp_report_ranks), so its cross-rank section is the one `report` gives on all the traces
 * at once, without loading a trace. What needs the traces side by side (clock alignment,
 * merged timelines) is not the merge's to do.
 *
 * Input is checked: a file that is not a trainprof report, a report of another schema
 * version, a rank without a row (a report older than the row), reports of different modes
 * (native and --compat hta figures differ) or a rank given twice each fail with one line
 * naming the file. */
#ifndef TP_MERGE_H
#define TP_MERGE_H

#include <stddef.h>
#include <stdio.h>

#include "tp_status.h"

typedef struct tp_merge tp_merge;

/* A merge with no rank yet; never NULL (aborts on out of memory, like the analyzer). */
tp_merge *tp_merge_open(void);

/* Frees `mg`; NULL is a no-op. */
void tp_merge_close(tp_merge *mg);

/* Adds the ranks of the report JSON `json` (NUL-terminated), read from `name` (for
 * messages). Returns TP_OK, or TP_ERR_PARSE (not JSON, or not a trainprof report),
 * TP_ERR_VERSION (another schema), TP_ERR_NOT_FOUND (a rank without cross_rank_row),
 * TP_ERR_ARG (another mode, or a rank already added) with one line in `err`; `mg` then holds
 * none of this file's ranks. */
tp_status tp_merge_add_json(tp_merge *mg, const char *name, const char *json, char *err,
                            size_t err_size);

/* tp_merge_add_json on the contents of file `path`; TP_ERR_OPEN / TP_ERR_IO when it cannot
 * be read (the reason in `err`). */
tp_status tp_merge_add_file(tp_merge *mg, const char *path, char *err, size_t err_size);

/* The number of ranks added so far. */
size_t tp_merge_n_ranks(const tp_merge *mg);

/* Judges the ranks added and writes the cross-rank section to `out`: text (the `Ranks` table
 * and `Cross-rank findings`, as `report` prints them) or, with `json`, an object
 * {"schema": "trainprof-merge/v1", "mode", "n_files", "n_ranks", "cross_rank"} whose
 * cross_rank is the report's. Returns TP_OK, TP_ERR_EMPTY with no rank, TP_ERR_IO when
 * writing fails. */
tp_status tp_merge_write(tp_merge *mg, FILE *out, int json);

#endif
