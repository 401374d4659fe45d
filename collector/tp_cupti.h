/* tp_cupti: CUDA tracing through CUPTI, started by the driver's InitializeInjection.
 *
 * libcupti is dlopen'ed here (never a DT_NEEDED of the collector), so CPU-only runs do not
 * load it: TRAINPROF_CUPTI names the one to load, else the loader finds libcupti.so.13 (a
 * process that already holds one, PyTorch's, gets that one), else it is looked for next to
 * the loaded libcudart. Its API version must be CUDA 13's (the record structs converted here
 * are 13's). One subscriber: the callback API takes the launch-site stack at runtime-API
 * entry (driver calls made inside a runtime call reuse it; direct driver launches take their
 * own) keyed by correlation id, and the activity API delivers kernels, copies, memsets,
 * memory, API intervals, syncs and overhead into a preallocated buffer pool; a completed
 * buffer is converted (tp_cupti_convert) on CUPTI's thread and written through the writer's
 * shared path, drained every 256 KiB so one 4 MiB buffer never overflows it. DEVICE records
 * come from cuptiActivityEnableAndDump (the driver made them before we attached).
 *
 * What the trace is told, never silently lost:
 * - records CUPTI left without timestamps (forced flush) are dropped and counted, and so is a
 *   buffer whose record walk ended early (an incomplete record);
 * - --capture / --delay / --duration gate CUDA records (time window: by the record's time;
 *   NVTX capture: by whether the launching API call was inside the range);
 * - refused buffer requests, correlation-table overwrites of launches whose records had not
 *   arrived yet: COUNTER records "trainprof.cupti.<what>" at the end;
 * - CUPTI refusing (no GPU, another profiler holds the subscriber slot, an old libcupti, a
 *   required activity kind, named) turns CUDA off with every callback disabled, said once;
 * - another CUPTI client in the process (torch.profiler / Kineto) re-registering the
 *   activity callbacks or disabling kinds (tp_cupti_interpose.c): our buffers are flushed
 *   first, then CUDA tracing stops and the trace says from when on CUDA data is missing; a
 *   client that registered its callbacks before CUDA started keeps CUPTI (we never start);
 * - libcuda loaded but InitializeInjection never called (driver ignoring
 *   CUDA_INJECTION64_PATH, sandbox): said at the end.
 * Buffers are flushed every flush period and forced at exit by an atexit handler registered
 * when CUPTI starts (inside cuInit), so it runs before the CUDA runtime's own teardown. A fork
 * child disarms everything (its callbacks return at once, it never flushes). */
#ifndef TP_CUPTI_H
#define TP_CUPTI_H

/* Starts CUDA tracing; returns 1 always (a failure only turns CUDA tracing off). */
int tp_cupti_start(void);

/* Registers CUPTI's collector client (flush before close, counters, fork disarm, the
 * never-injected check). Once per image, before the collector starts. */
void tp_cupti_register(void);

/* Another CUPTI client of this process called `call` (one of the interposed entry points):
 * when it takes CUPTI from us (`takes` = 1), flush what we hold, stop, record and say it. */
void tp_cupti_foreign(const char *call, int takes);

/* Another CUPTI client's `call` (cuptiSubscribe) was refused because this recording holds
 * CUPTI's one subscriber: said once on stderr and kept in the trace (a COUNTER
 * "trainprof.cupti_refused: ..."), so whoever finds no GPU activity in that client's trace
 * (torch.profiler's, seen on the first GPU run) knows why and where it is. */
void tp_cupti_refused_client(const char *call);

/* 1 when `fn` is one of our activity callbacks (the interposer tells a re-registration of
 * ours from another client's). */
int tp_cupti_is_ours(void (*fn)(void));

/* The real libcupti entry point `name` (for the interposers), NULL when none is loaded. */
void *tp_cupti_real(const char *name);

/* The API version cuptiGetVersion gave when CUDA tracing loaded CUPTI (130001), 0 when it
 * never did. The environment writer asks here instead of calling CUPTI itself: some builds of
 * libcupti (PyPI's nvidia-cuda-cupti for CUDA 13.2) overflow the stack in cuptiGetVersion
 * when no driver is loaded, and at exit CUPTI's own teardown may have run. */
unsigned tp_cupti_api_version(void);

#endif
