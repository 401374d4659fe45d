/* tp_export_perfetto: writes the traces of one recording as a Perfetto trace (the native
 * protobuf format, `perfetto.protos.Trace`), which ui.perfetto.dev and trace_processor open
 * without conversion and which stays far smaller than Chrome JSON.
 *
 * Layout (docs/export.md, "Perfetto"): one process per traced process, each thread a track
 * holding its NVTX push/pop ranges as nested slices (a non-default NVTX domain gets a child
 * track of its own, so ranges of two domains never interleave), child tracks for the CUDA
 * API calls, CPU-side syncs and the collector's own overhead, start/end ranges on lanes of a
 * process track; one track per device with a child per stream for kernels, copies and
 * memsets; a flow from each API call to the device work it launched; counter tracks for
 * device memory (cudaMalloc), the allocator's NVTX heaps/regions and user counters; marks,
 * out-of-memory events and drops as instants. Names and callstacks are interned per process
 * (one packet sequence each); Python frames read "function (file:line)", native frames carry
 * their module and ELF offset for offline symbolization.
 *
 * The output is streamed record by record through the record visitor: memory stays bounded
 * by the open ranges, the live NVTX regions and the interned names and frames. */
#ifndef TP_EXPORT_PERFETTO_H
#define TP_EXPORT_PERFETTO_H

#include <stddef.h>
#include <stdint.h>

#include "tp_export_job.h"
#include "tp_reader.h"
#include "tp_status.h"

typedef struct {
    uint64_t packets; /* TracePackets written */
    uint64_t tracks;  /* TrackDescriptors written */
    uint64_t slices;  /* slices (begin/end pairs) */
    uint64_t flows;   /* API call -> device work flows */
    uint64_t counters;
    uint64_t instants;
    uint64_t nvtx_unclosed; /* ranges still open at the end, closed at the process's last time */
    uint64_t late_tracks;   /* tracks whose events the trace had out of time order (CUPTI's
                               buffers), written sorted after the rest of their process */
    uint64_t samples;       /* PerfSamples: `record --sample`'s on-CPU samples */
} tp_perfetto_stats;

/* Writes the `n` >= 1 traces of one recording, r[0] the main process's, to `path`.
 * `stats` may be NULL. On failure returns TP_ERR_OPEN (cannot create `path`), TP_ERR_IO or
 * TP_ERR_NOMEM, puts a one-line message in `err` when not NULL, and removes the partial file
 * when it is a regular file. */
tp_status tp_export_perfetto_set(tp_reader *const *r, size_t n, const char *path,
                                 tp_perfetto_stats *stats, char *err, size_t err_size);

/* The same for the traces of a job of several ranks (`job` NULL: tp_export_perfetto_set):
 * each trace one process, named "rank N" (a worker "rank N: EXE (worker of PID)"), under its
 * pid (another pid when two ranks' processes share one, the real one in the name), its times
 * shifted onto the job clock; a counter track "GPU D utilization (%)" per device with
 * samples. */
tp_status tp_export_perfetto_job(tp_reader *const *r, size_t n, const tp_export_job *job,
                                 const char *path, tp_perfetto_stats *stats, char *err,
                                 size_t err_size);

#endif
