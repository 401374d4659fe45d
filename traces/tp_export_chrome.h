/* tp_export_chrome: writes a .tprof trace as Chrome trace JSON in PyTorch-profiler (Kineto)
 * dialect, for Perfetto UI / chrome://tracing, Holistic Trace Analysis and our own importer.
 *
 * The output is streamed record by record (memory stays bounded by what is open at once:
 * NVTX ranges not yet closed, live NVTX regions), timestamps are microseconds with three
 * decimals printed from integer nanoseconds (exact), strings are JSON-escaped and invalid
 * UTF-8 becomes U+FFFD. The mapping of each record kind is specified in docs/export.md. */
#ifndef TP_EXPORT_CHROME_H
#define TP_EXPORT_CHROME_H

#include <stddef.h>
#include <stdint.h>

#include "tp_export_job.h"
#include "tp_reader.h"
#include "tp_status.h"

typedef struct {
    uint64_t events;        /* JSON events written (metadata included) */
    uint64_t flows;         /* ac2g flow pairs' halves written */
    uint64_t nvtx_unclosed; /* ranges still open at the end, closed at the trace's last time */
    uint64_t nvtx_unpaired; /* pops/ends with no open range (dropped) */
} tp_export_stats;

/* Writes reader `r`'s trace to `path` as Chrome JSON, gzip-compressed when `gzip` is set.
 * `stats` may be NULL. On failure returns TP_ERR_OPEN (cannot create `path`) or TP_ERR_IO
 * (a write failed), and when `err` is not NULL puts a one-line message there; the partial
 * file is removed. */
tp_status tp_export_chrome(tp_reader *r, const char *path, int gzip, tp_export_stats *stats,
                           char *err, size_t err_size);

/* The same for the `n` >= 1 traces of one recording (docs/collector.md, "One recording"),
 * `r[0]` the main process's, into one file: each process's events under its own pid, named
 * with its role ("python3 (main)", "python3 (worker of 4100)") and sorted in the order given;
 * the k-th trace's correlation and flow ids offset by k * 2^32 so that no launch meets another
 * process's kernel; the header (distributedInfo, baseTimeNanoseconds) from `r[0]`, the
 * devices of all, the drops summed. With n == 1 the output is tp_export_chrome's, byte for
 * byte. */
tp_status tp_export_chrome_set(tp_reader *const *r, size_t n, const char *path, int gzip,
                               tp_export_stats *stats, char *err, size_t err_size);

/* One sample of a memory counter track: allocated and reserved bytes (reserved < 0:
 * unknown) of process `pid`'s device memory at trace time `ts` (ns), for `device` (-1: the
 * device is not known, e.g. NVTX regions). The caller computes them (the allocator replay is
 * analyzer/tp_an_memstate, above this library); see tp_export_chrome_counters. */
typedef struct {
    uint32_t pid;
    int32_t device;
    uint64_t ts;
    int64_t allocated, reserved;
} tp_export_counter;

/* tp_export_chrome_set, plus `n_counters` counter samples written as Chrome counter events
 * ("ph": "C", name "device N memory" or "device memory", args allocated and reserved) after
 * the trace's events. counters may be NULL when n_counters is 0 (then the output is
 * tp_export_chrome_set's, byte for byte). */
tp_status tp_export_chrome_counters(tp_reader *const *r, size_t n, const char *path, int gzip,
                                    const tp_export_counter *counters, size_t n_counters,
                                    tp_export_stats *stats, char *err, size_t err_size);

/* The traces of a job of several ranks into one file (`job` NULL: tp_export_chrome_counters):
 * each trace's process named "rank N" (a worker "rank N: EXE (worker of PID)") under its pid
 * (another when two ranks' processes share one), its devices as processes of their own
 * ("GPU D (rank N)", pid 2^30 + trace * 2^12 + device: every rank has its own GPU 0), its
 * times shifted onto the job clock (baseTimeNanoseconds follows), no distributedInfo (the
 * file is no one rank's); `job->util` as "GPU D utilization (%)" counter events. */
tp_status tp_export_chrome_job(tp_reader *const *r, size_t n, const tp_export_job *job,
                               const tp_export_counter *counters, size_t n_counters,
                               const char *path, int gzip, tp_export_stats *stats, char *err,
                               size_t err_size);

#endif
