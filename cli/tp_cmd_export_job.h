/* tp_cmd_export_job: the traces of a multi-rank job for `trainprof export` (a folder, or
 * several files): loaded once into a model (tp_load: folders expanded, each recording's
 * processes gathered into ranks, the ranks put on one clock by model/tp_align), then a reader
 * opened for every process, rank by rank in the model's order, each with its place (rank, the
 * shift onto the job clock) and the ranks' device utilization over time (analyzer/tp_an_util,
 * the report's figure), for the merged Perfetto and Chrome files. Computed here because
 * traces/ (the exporters) cannot reach the model or the analyzer. */
#ifndef TP_CMD_EXPORT_JOB_H
#define TP_CMD_EXPORT_JOB_H

#include <stddef.h>

#include "tp_export_perfetto.h"
#include "tp_reader.h"
#include "tp_status.h"

typedef struct {
    tp_reader **r; /* n readers, rank by rank, each rank's main process first */
    size_t n;
    tp_export_place *place; /* one per reader */
    tp_export_util *util;   /* device utilization samples, by reader */
    size_t n_util;
    size_t n_ranks;
} tp_cmd_job;

/* Opens the job of `n` paths into *j (free with tp_cmd_job_close, also after a failure). On
 * failure `err` says why in one line (a load error, a Kineto trace: exports read .tprof). */
tp_status tp_cmd_job_open(const char *const *paths, size_t n, tp_cmd_job *j, char *err,
                          size_t err_len);

void tp_cmd_job_close(tp_cmd_job *j);

#endif
