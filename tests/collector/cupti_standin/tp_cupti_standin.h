/* tp_cupti_standin: a STAND-IN for libcupti.so.13, for tests only. It is not CUPTI and
 * proves nothing about a GPU: it is a contract test of the collector's CUPTI glue
 * (collector/tp_cupti.c) on a machine without one.
 *
 * It exports the CUPTI 13 entry points the collector resolves, built against the real CUDA 13
 * headers, and keeps what a real libcupti keeps: one subscriber, enabled callback domains and
 * activity kinds, the registered buffer callbacks and timestamp source. A test program (the
 * collector's tests/collector/cupti_app.c) links it under its soname, so the collector's
 * dlopen("libcupti.so.13") gets this one, and drives it through the functions below the way
 * the CUDA runtime and driver drive the real one: API calls with correlation ids (ENTER and
 * EXIT callbacks, then an API activity record), resource callbacks, activity records written
 * into buffers the collector hands out, and buffers completed on another thread, in order,
 * reversed, or held back until a forced flush (late).
 *
 * Records are stored back to back, 8-byte aligned, as the CUDA 13 structs; a record of kind
 * INVALID marks an incomplete record (cuptiActivityGetNextRecord then returns
 * CUPTI_ERROR_INVALID_KIND, as CUPTI does). Timestamps come from the registered timestamp
 * callback, else CLOCK_REALTIME (CUPTI's default on Linux).
 *
 * Environment (read once): TP_STANDIN_VERSION (cuptiGetVersion, default CUPTI_API_VERSION),
 * TP_STANDIN_BUSY=1 (cuptiSubscribe refuses: another subscriber), TP_STANDIN_REFUSE_KIND=K
 * (cuptiActivityEnable(K) refuses), TP_STANDIN_NO_INJECTION=1 (the libcuda stand-in's cuInit
 * does not call InitializeInjection). A flush asked for in a fork child is said on stderr
 * ("cupti-standin: flush in a fork child"). */
#ifndef TP_CUPTI_STANDIN_H
#define TP_CUPTI_STANDIN_H

#include <stdint.h>

#include <cupti.h>

/* One simulated API call (runtime or driver). */
typedef struct {
    CUpti_CallbackDomain domain;
    uint32_t cbid;
    const char *name;     /* function name, e.g. "cudaLaunchKernel" */
    const char *symbol;   /* kernel name for launches, else NULL */
    const void *params;   /* the call's <api>_params struct, or NULL */
    uint32_t correlation; /* set by tp_standin_enter */
    uint64_t start;       /* set by tp_standin_enter */
} tp_standin_call;

/* ENTER callback (when the domain is enabled); assigns the correlation id. */
void tp_standin_enter(tp_standin_call *c);

/* EXIT callback with `result`, then the API activity record (when RUNTIME/DRIVER is on). */
void tp_standin_exit(tp_standin_call *c, int32_t result);

/* 0: tp_standin_exit makes no API activity record (floods of calls that need none). */
void tp_standin_set_api_records(int on);

/* Activity records (stored when their kind is enabled). */
void tp_standin_kernel(uint32_t correlation, const char *name, uint32_t stream, uint64_t start,
                       uint64_t end);
void tp_standin_memcpy(uint32_t correlation, uint32_t runtime_correlation, uint8_t copy_kind,
                       uint64_t bytes, uint64_t start, uint64_t end);
/* An incomplete record: the walk of its buffer stops there. */
void tp_standin_incomplete(void);

/* A resource callback (CONTEXT_CREATED, STREAM_CREATED, ...) for context/stream ids. */
void tp_standin_resource(uint32_t cbid, uint32_t context, uint32_t stream);

/* The current buffer is full: queued for the next completion. */
void tp_standin_close_buffer(void);
/* The current buffer is held back: only a forced flush completes it (a late buffer). */
void tp_standin_hold_buffer(void);
/* Completes the queued buffers on another thread (waited for), `reversed` or in order. */
void tp_standin_complete(int reversed);

/* The CUDA runtime's teardown at exit: later flushes find nothing and fail. */
void tp_standin_teardown(void);

/* Now on the registered timestamp source (CLOCK_REALTIME when none). */
uint64_t tp_standin_now(void);

typedef struct {
    uint64_t callbacks;      /* subscriber callbacks delivered */
    uint64_t flushes;        /* cuptiActivityFlushAll calls */
    uint64_t forced_flushes; /* of which FORCED */
    int subscribed;
    uint32_t domains; /* bit d: domain d enabled */
    uint64_t kinds;   /* bit k: activity kind k enabled */
} tp_standin_stats;

void tp_standin_get_stats(tp_standin_stats *out);

#endif
