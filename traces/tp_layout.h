/* tp_layout: how one recording lies on disk, defined once for the collector that writes it
 * and the loader that reads it back (docs/collector.md, "One recording").
 *
 * The process `trainprof record` starts writes STEM.tprof (-o, or ./<program>-<pid>.tprof).
 * Every other process of the recording (fork children, the programs it runs, their own
 * children) writes STEM.<pid>.tprof in the same folder, and an image that exec'd and had
 * recorded events is kept as <its name without .tprof>.exec<N>.tprof. So the traces of one
 * recording are STEM.tprof and the files whose names start with "STEM." followed by a digit
 * or by "exec" and a digit, and end in ".tprof": `report STEM.tprof` finds them all, and two
 * recordings in one folder never share a name. */
#ifndef TP_LAYOUT_H
#define TP_LAYOUT_H

#include <stddef.h>

#include "tp_status.h"

/* The trace of process `pid` of the recording whose main trace is `main_path`:
 * "<main_path without .tprof>.<pid>.tprof" into buf. Returns 0, or -1 when it does not fit. */
int tp_layout_process_path(const char *main_path, long pid, char *buf, size_t len);

/* The name an image's trace `path` is kept under when the image exec'd (the next image, same
 * pid, may reuse the name): "<path without .tprof>.exec<k>.tprof" into buf. Returns 0, or -1
 * when it does not fit. */
int tp_layout_exec_path(const char *path, int k, char *buf, size_t len);

/* The name member `member_path` of the recording whose main trace is `main_path` takes in the
 * recording whose main trace is `to_main` ("run.4242.tprof" of "run.tprof" is
 * "cap.4242.tprof" of "cap.tprof"; folders as `to_main` has it): a capture's other processes.
 * Returns 0, or -1 when it is no member or the name does not fit. */
int tp_layout_member_as(const char *member_path, const char *main_path, const char *to_main,
                        char *buf, size_t len);

/* 1 when `name` (a file name, no folder) is the trace of another process or image of the
 * recording whose main trace's file name is `main_name`, else 0. */
int tp_layout_is_member(const char *main_name, const char *name);

/* The traces of the recording whose main trace is `main_path`, other than it: the files beside
 * it (same folder) whose names tp_layout_is_member accepts, as paths (the folder part of
 * `main_path` kept as written), sorted by name, into *out (*n of them; free with
 * tp_layout_free). TP_OK (none: *n = 0; a folder that cannot be read has none), or
 * TP_ERR_NOMEM with nothing to free. */
tp_status tp_layout_members(const char *main_path, char ***out, size_t *n);

/* Frees what tp_layout_members returned (NULL: no-op). */
void tp_layout_free(char **v, size_t n);

#endif
