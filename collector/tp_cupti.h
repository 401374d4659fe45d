/* tp_cupti: CUDA tracing through CUPTI, started by the driver's InitializeInjection.
 *
 * libcupti is dlopen'ed here (never a DT_NEEDED of the collector), so CPU-only runs do not
 * load it. One subscriber: the callback API takes the launch-site stack at runtime-API entry
 * (driver calls made inside a runtime call reuse it; direct driver launches take their own)
 * keyed by correlation id, and the activity API delivers kernels, copies, memsets, memory,
 * API intervals, syncs and overhead into a preallocated buffer pool; a completed buffer is
 * converted (tp_cupti_convert) on CUPTI's thread and written through the writer's shared
 * path. Buffers are flushed every flush period and forced at exit. When CUPTI refuses (no
 * GPU, another profiler holds the subscriber slot) the reason is recorded and said once. */
#ifndef TP_CUPTI_H
#define TP_CUPTI_H

/* Starts CUDA tracing; returns 1 always (a failure only turns CUDA tracing off). */
int tp_cupti_start(void);

#endif
