/* tp_export_job: what the Perfetto and Chrome exports need to write the traces of a job of
 * several ranks into one file: each trace's place (its rank, the shift onto the job clock)
 * and device utilization samples. The caller computes them (cli/tp_cmd_export_job: the
 * model's alignment, the analyzer's utilization), as traces/ cannot reach either. */
#ifndef TP_EXPORT_JOB_H
#define TP_EXPORT_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "tp_reader.h"

/* A trace's place in a job of several ranks (tp_export_perfetto_job, tp_export_chrome_job): its
 * rank, named "rank N" as a process, and the shift that puts its times on the job clock
 * (model/tp_align; the writer adds one constant to every trace so that no time is negative). */
typedef struct {
    int rank;         /* -1: named as a process of one recording */
    int64_t shift_ns; /* added to every time of the trace */
} tp_export_place;

/* One device utilization sample: device `device` of trace `trace` (an index into the
 * readers) was busy `util` (0..1) of the window starting at `ts` (that trace's clock), until
 * the next sample of the device. The caller computes them (analyzer/tp_an_util). */
typedef struct {
    uint32_t trace;
    int32_t device;
    uint64_t ts;
    double util;
} tp_export_util;

typedef struct {
    const tp_export_place *place; /* one per trace, or NULL: one recording, no shift */
    const tp_export_util *util;   /* grouped by trace, each device's in time order */
    size_t n_util;
} tp_export_job;

/* What trace k of `n` adds to its times: its shift plus one constant for all (so that the
 * earliest trace's shift is 0 and no time is negative); 0 without a job or places. */
uint64_t tp_export_job_shift(const tp_export_job *j, size_t n, size_t k);

/* The pid trace k of a job is written under: its PROCESS pid (k + 1 when it has none),
 * unless one of the traces before it took that pid (`taken`, k entries; another rank, maybe
 * on another machine): then 2^30 + k, above any Linux pid, as viewers would make the two
 * one process. Without a job, never moved. */
int64_t tp_export_job_pid(const tp_export_job *j, tp_reader *const *r, size_t k,
                          const int64_t *taken);

/* The PROCESS pid of `r` (0 when it has no PROCESS record). */
int64_t tp_export_trace_pid(const tp_reader *r);

#endif
