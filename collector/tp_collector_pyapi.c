/* The library's trainprof_* exports: what `record --pytorch`'s start-up file
 * (collector/python/sitecustomize.py) calls through ctypes to mark a PyTorch program's
 * DataLoader fetches, backward passes, optimizer steps and training steps. NVTX has no library to
 * call (v3 is header-only: a program's NVTX calls are compiled into it), and torch.cuda.nvtx is
 * missing from CPU-only builds of PyTorch, so the file calls the collector itself; the
 * records are the ones NVTX calls make (tp_nvtx_hooks.h). Each call is a no-op before the
 * collector started, on a thread it does not follow, and while recording is off. */
#include <stdint.h>

#include "tp_collector.h"
#include "tp_nvtx_hooks.h"

#define TP_EXPORT __attribute__((visibility("default")))

/* Declared here only: no C program includes them (the caller is Python, by name). */
TP_EXPORT int trainprof_push(const char *name);
TP_EXPORT int trainprof_pop(void);
TP_EXPORT uint64_t trainprof_now(void);
TP_EXPORT void trainprof_range_since(const char *name, uint64_t t0);

/* nvtxRangePushA(name); returns the depth it opened at, or < 0. */
TP_EXPORT int trainprof_push(const char *name) {
    return tp_nvtx_push(name);
}

/* nvtxRangePop(); returns the depth it closed, or < 0. */
TP_EXPORT int trainprof_pop(void) {
    return tp_nvtx_pop();
}

/* The trace clock now (ns), for trainprof_range_since. */
TP_EXPORT uint64_t trainprof_now(void) {
    return tp_collector_now();
}

/* A range named `name` of the calling thread from `t0` (trainprof_now when it began) to now. */
TP_EXPORT void trainprof_range_since(const char *name, uint64_t t0) {
    tp_nvtx_range_since(name, t0);
}
