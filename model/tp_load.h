/* tp_load: the one entry from paths on the command line to a finished tp_model.
 *
 * Each path is a trace file or a folder of per-rank files; any mix of native .tprof and
 * Kineto JSON (.json, .json.gz) is fine, one file per rank. In a folder, files whose names do
 * not look like traces (README.md, *.txt, ...) are skipped; a named file is loaded by its
 * content whatever its name. Ranks come from each file (distributedInfo, PROCESS record);
 * files that bring no rank, or a rank already taken, get the next free number and a note.
 * The formats are rows of a table (file names, a sniff of the first bytes, a loader). Errors
 * name the file and the position (tp_load_error), in parts and as one line. */
#ifndef TP_LOAD_H
#define TP_LOAD_H

#include <stddef.h>
#include <stdint.h>

#include "tp_load_error.h"
#include "tp_model.h"
#include "tp_progress.h"
#include "tp_status.h"

typedef struct {
    tp_load_error failure; /* the first error in parts (status TP_OK on success) */
    char error[1024];      /* the first error, one line naming the file; "" on success */
    char notes[1024];      /* non-fatal remarks (skipped files, renumbered ranks), lines */
    size_t n_files;        /* trace files loaded */
} tp_load_result;

/* Loads `n` paths into a new finished model (*out, free with tp_model_close). On error *out
 * is NULL and res->error says why. TP_ERR_OPEN (missing path), TP_ERR_EMPTY (a folder with
 * no trace), TP_ERR_PARSE / TP_ERR_TRUNCATED (bad JSON), reader errors for .tprof. */
tp_status tp_load_paths(const char *const *paths, size_t n, tp_model **out, tp_load_result *res);

/* The same, reporting on `progress` (NULL: none): a phase per file ("loading NAME", its
 * bytes and events as the loader reads) and one for tp_model_finish ("building the model");
 * `skip`: the TP_FINISH_NO_* indexes the finish leaves unbuilt (tp_model.finish_skip), for a
 * caller that would drop them at once (0: all built). */
tp_status tp_load_paths_progress(const char *const *paths, size_t n, tp_progress *progress,
                                 unsigned skip, tp_model **out, tp_load_result *res);

/* The trace files of folder `dir` as a load takes them (names of a trace format, sorted by
 * name), "dir/name" each, into *files (*n of them; free with tp_load_files_free): for a front
 * end that reads files one by one (trainprof info). On error (TP_ERR_OPEN: not a readable
 * folder; TP_ERR_EMPTY: no trace file in it) nothing is allocated and res->error says why. */
tp_status tp_load_folder_files(const char *dir, char ***files, size_t *n, tp_load_result *res);
void tp_load_files_free(char **files, size_t n);

/* A live job's window as one recording: `window` (the trace of [t0, t1) the job's main process
 * cut, loaded whole) and, from the traces of the recording's other processes beside its main
 * trace `trace` (tp_layout: its DataLoader workers and the processes it started, whose files
 * are being written), the data records of [t0, t1) (tp_load_native_window), gathered into its
 * ranks as a load of the whole recording gathers them (tp_job_gather). A file of another
 * recording, one not readable yet or with nothing in the window is left out. `trace` NULL or
 * "": the window alone. */
tp_status tp_load_live_window(const char *window, const char *trace, uint64_t t0, uint64_t t1,
                              tp_model **out, tp_load_result *res);

#endif
