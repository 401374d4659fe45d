/* tp_cupti: CUPTI subscriber, callbacks and activity buffers (see tp_cupti.h). */
#include "tp_cupti.h"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cupti.h>

#include "tp_collector.h"
#include "tp_cupti_convert.h"

#define POOL_BUFFERS 8
#define BUFFER_BYTES (4u << 20)
#define CORR_SLOTS (1u << 18)
#define MAX_CONTEXTS 64

/* The CUPTI entry points we use, resolved from the dlopen'ed library. */
#define TP_CUPTI_FUNCS(X)                                                                          \
    X(cuptiSubscribe, (CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *))                      \
    X(cuptiEnableDomain, (uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain))                 \
    X(cuptiActivityRegisterCallbacks,                                                              \
      (CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc))                       \
    X(cuptiActivityRegisterTimestampCallback, (CUpti_TimestampCallbackFunc))                       \
    X(cuptiActivityEnable, (CUpti_ActivityKind))                                                   \
    X(cuptiActivityGetNextRecord, (uint8_t *, size_t, CUpti_Activity **))                          \
    X(cuptiActivityGetNumDroppedRecords, (CUcontext, uint32_t, size_t *))                          \
    X(cuptiActivityFlushAll, (uint32_t))                                                           \
    X(cuptiActivityFlushPeriod, (uint32_t))                                                        \
    X(cuptiGetResultString, (CUptiResult, const char **))                                          \
    X(cuptiGetCallbackName, (CUpti_CallbackDomain, uint32_t, const char **))                       \
    X(cuptiGetContextId, (CUcontext, uint32_t *))                                                  \
    X(cuptiGetDeviceId, (CUcontext, uint32_t *))                                                   \
    X(cuptiGetStreamIdEx, (CUcontext, CUstream, uint8_t, uint32_t *))

static struct {
#define TP_CUPTI_PTR(name, args) CUptiResult(*name) args;
    TP_CUPTI_FUNCS(TP_CUPTI_PTR)
#undef TP_CUPTI_PTR
} F;

static CUpti_SubscriberHandle g_sub;
static _Atomic int g_started;
static _Atomic int g_running;

/* correlation id -> launch-site stack id, direct-mapped; a newer id overwrites an older. */
static _Atomic uint64_t g_corr[CORR_SLOTS];

static struct {
    uint32_t context[MAX_CONTEXTS], device[MAX_CONTEXTS];
    _Atomic uint32_t n;
} g_ctx;

/* Preallocated activity buffers: CUPTI asks for them inside the application's CUDA calls. */
static struct {
    pthread_mutex_t mu;
    uint8_t *free[POOL_BUFFERS];
    int nfree;
    _Atomic uint64_t starved;
} g_pool = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* ---------------------------------------------------------------- helpers */

static const char *result_str(CUptiResult r) {
    const char *s = NULL;
    if (F.cuptiGetResultString)
        F.cuptiGetResultString(r, &s);
    return s ? s : "unknown CUPTI error";
}

static void corr_put(uint32_t corr, uint32_t stack) {
    atomic_store_explicit(&g_corr[corr & (CORR_SLOTS - 1)], (uint64_t)corr << 32 | stack,
                          memory_order_relaxed);
}

static uint32_t corr_get(void *ud, uint32_t corr) {
    (void)ud;
    uint64_t v = atomic_load_explicit(&g_corr[corr & (CORR_SLOTS - 1)], memory_order_relaxed);
    return (uint32_t)(v >> 32) == corr ? (uint32_t)v : 0;
}

static uint32_t device_of_context(void *ud, uint32_t context) {
    (void)ud;
    uint32_t n = atomic_load(&g_ctx.n);
    for (uint32_t i = 0; i < n; i++)
        if (g_ctx.context[i] == context)
            return g_ctx.device[i];
    return 0;
}

static uint32_t intern_cb(void *ud, const char *s) {
    (void)ud;
    return tp_collector_intern_n(s, strlen(s));
}

static uint32_t api_name_cb(void *ud, int driver, uint32_t cbid) {
    (void)ud;
    const char *name = NULL;
    F.cuptiGetCallbackName(driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, cbid,
                           &name);
    return name ? tp_collector_intern_n(name, strlen(name)) : 0;
}

static uint64_t CUPTIAPI trace_clock(void) {
    return tp_collector_now();
}

/* ---------------------------------------------------------------- callbacks */

static void on_api(tp_tstate *t, CUpti_CallbackDomain dom, CUpti_CallbackId cbid,
                   const CUpti_CallbackData *cd) {
    int runtime = dom == CUPTI_CB_DOMAIN_RUNTIME_API;
    if (cd->callbackSite == CUPTI_API_ENTER) {
        if (runtime && t->rt_depth++ > 0)
            return;
        if (!runtime && t->rt_depth > 0) {
            if (t->rt_stack)
                corr_put(cd->correlationId, t->rt_stack); /* the runtime call's stack */
            return;
        }
        uint32_t stack = tp_cupti_wants_stack(dom, cbid) ? tp_collector_stack(t, TP_STACKS_API) : 0;
        if (stack)
            corr_put(cd->correlationId, stack);
        if (runtime)
            t->rt_stack = stack;
        if (runtime && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020)
            F.cuptiActivityFlushAll(0); /* contexts die here: collect their records first */
        return;
    }
    if (runtime && t->rt_depth > 0) /* 0 here: tracing began inside this call */
        t->rt_depth--;
    if (runtime && t->rt_depth > 0)
        return;
    if (!runtime && t->rt_depth > 0)
        return;
    tp_rec_alloc_fail af;
    int32_t result = cd->functionReturnValue ? *(const int32_t *)cd->functionReturnValue : 0;
    if (tp_cupti_alloc_fail(dom, cbid, cd->functionParams, result, tp_collector_now(), t->tid, 0,
                            corr_get(NULL, cd->correlationId), &af))
        tp_collector_emit(t, &af);
    if (runtime)
        t->rt_stack = 0;
}

static void on_resource(CUpti_CallbackId cbid, const CUpti_ResourceData *rd) {
    uint32_t ctx = 0, dev = 0;
    F.cuptiGetContextId(rd->context, &ctx);
    F.cuptiGetDeviceId(rd->context, &dev);
    if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
        uint32_t n = atomic_load(&g_ctx.n);
        if (n < MAX_CONTEXTS) {
            g_ctx.context[n] = ctx;
            g_ctx.device[n] = dev;
            atomic_store(&g_ctx.n, n + 1);
        }
        return;
    }
    if (cbid != CUPTI_CBID_RESOURCE_STREAM_CREATED &&
        cbid != CUPTI_CBID_RESOURCE_STREAM_DESTROY_STARTING)
        return;
    tp_rec_stream r;
    TP_REC_CLEAR(&r, TP_REC_STREAM);
    if (cbid == CUPTI_CBID_RESOURCE_STREAM_DESTROY_STARTING)
        r.h.flags |= 1;
    r.device = dev;
    r.context = ctx;
    F.cuptiGetStreamIdEx(rd->context, rd->resourceHandle.stream, 0, &r.stream);
    tp_collector_meta(&r);
}

static void CUPTIAPI on_callback(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid,
                                 const void *data) {
    (void)ud;
    tp_tstate *t = tp_collector_thread();
    if (!t || !data)
        return;
    if (dom == CUPTI_CB_DOMAIN_RUNTIME_API || dom == CUPTI_CB_DOMAIN_DRIVER_API)
        on_api(t, dom, cbid, data);
    else if (dom == CUPTI_CB_DOMAIN_RESOURCE)
        on_resource(cbid, data);
}

/* ---------------------------------------------------------------- buffers */

static void CUPTIAPI buffer_requested(uint8_t **buf, size_t *size, size_t *max_records) {
    pthread_mutex_lock(&g_pool.mu);
    *buf = g_pool.nfree ? g_pool.free[--g_pool.nfree] : NULL;
    pthread_mutex_unlock(&g_pool.mu);
    *size = *buf ? BUFFER_BYTES : 0;
    *max_records = 0;
    if (!*buf)
        atomic_fetch_add(&g_pool.starved, 1); /* CUPTI drops and counts these records */
}

static void write_converted(const tp_cupti_rec *r) {
    tp_writer *w = tp_g.writer;
    if (!w)
        return;
    /* `record --idle`: device records only while the live server wants records (it keeps
     * the gate open until a capture's late device records are in). */
    if (tp_g.cfg.capture == TP_CAPTURE_LIVE && (r->h.flags & TP_RF_TIMED) &&
        !tp_collector_gate(tp_record_ts(&r->h)))
        return;
    if (r->h.type == TP_REC_EXT_CORRELATION || r->h.type == TP_REC_DEVICE)
        (void)tp_writer_write_meta(w, r);
    else
        (void)tp_writer_write(w, r);
}

static void write_overhead(uint64_t start, uint64_t end) {
    tp_rec_overhead o;
    TP_REC_CLEAR(&o, TP_REC_OVERHEAD);
    o.ts = start;
    o.end = end;
    o.tid = (uint32_t)gettid();
    o.kind = TP_OVERHEAD_CUPTI_BUFFER;
    if (tp_g.writer)
        (void)tp_writer_write(tp_g.writer, &o);
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
                                      size_t valid) {
    (void)size;
    tp_collector_busy_enter(); /* writes under the writer's locks, maybe on a program thread */
    uint64_t t0 = tp_collector_now();
    const tp_cupti_conv conv = {NULL, intern_cb, api_name_cb, corr_get, device_of_context};
    CUpti_Activity *rec = NULL;
    tp_cupti_rec out;
    while (F.cuptiActivityGetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS)
        if (tp_cupti_convert(&conv, rec, &out))
            write_converted(&out);
    size_t dropped = 0;
    if (F.cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped &&
        tp_g.writer)
        tp_writer_count_drop(tp_g.writer, 0, TP_DROP_CUPTI, dropped);
    write_overhead(t0, tp_collector_now());
    pthread_mutex_lock(&g_pool.mu);
    if (g_pool.nfree < POOL_BUFFERS)
        g_pool.free[g_pool.nfree++] = buf;
    pthread_mutex_unlock(&g_pool.mu);
    tp_collector_busy_leave();
}

/* ---------------------------------------------------------------- setup */

static int load_cupti(char *why, size_t len) {
    static const char *const names[] = {"libcupti.so.13", "libcupti.so",
#ifdef TP_CUPTI_DIR
                                        TP_CUPTI_DIR "/libcupti.so.13",
#endif
                                        NULL};
    void *h = NULL;
    for (int i = 0; names[i] && !h; i++)
        h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(why, len, "cannot load libcupti: %s", dlerror());
        return 0;
    }
#define TP_CUPTI_SYM(name, args)                                                                   \
    *(void **)&F.name = dlsym(h, #name);                                                           \
    if (!F.name) {                                                                                 \
        snprintf(why, len, "libcupti lacks %s", #name);                                            \
        return 0;                                                                                  \
    }
    TP_CUPTI_FUNCS(TP_CUPTI_SYM)
#undef TP_CUPTI_SYM
    return 1;
}

static int alloc_pool(void) {
    for (int i = 0; i < POOL_BUFFERS; i++) {
        uint8_t *b = aligned_alloc(8, BUFFER_BYTES);
        if (!b)
            break;
        g_pool.free[g_pool.nfree++] = b;
    }
    return g_pool.nfree > 0;
}

static void cupti_before_close(void) {
    if (atomic_exchange(&g_running, 0))
        F.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

static void record_refusal(const char *call, CUptiResult r) {
    char why[256];
    snprintf(why, sizeof why, "%s: %s (%d)", call, result_str(r), (int)r);
    tp_collector_cuda_off(why);
}

static int enable_all(void) {
    static const CUpti_ActivityKind kinds[] = {CUPTI_ACTIVITY_KIND_DEVICE,
                                               CUPTI_ACTIVITY_KIND_RUNTIME,
                                               CUPTI_ACTIVITY_KIND_DRIVER,
                                               CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                               CUPTI_ACTIVITY_KIND_MEMCPY,
                                               CUPTI_ACTIVITY_KIND_MEMCPY2,
                                               CUPTI_ACTIVITY_KIND_MEMSET,
                                               CUPTI_ACTIVITY_KIND_MEMORY2,
                                               CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
                                               CUPTI_ACTIVITY_KIND_OVERHEAD,
                                               CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION};
    CUptiResult r;
    /* The clock must be registered before any kind is enabled (cupti_activity.h). */
    if ((r = F.cuptiActivityRegisterTimestampCallback(trace_clock)) != CUPTI_SUCCESS)
        return record_refusal("cuptiActivityRegisterTimestampCallback", r), 0;
    if ((r = F.cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed)) != CUPTI_SUCCESS)
        return record_refusal("cuptiActivityRegisterCallbacks", r), 0;
    F.cuptiEnableDomain(1, g_sub, CUPTI_CB_DOMAIN_RUNTIME_API);
    F.cuptiEnableDomain(1, g_sub, CUPTI_CB_DOMAIN_DRIVER_API);
    F.cuptiEnableDomain(1, g_sub, CUPTI_CB_DOMAIN_RESOURCE);
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if ((r = F.cuptiActivityEnable(kinds[i])) != CUPTI_SUCCESS)
            return record_refusal("cuptiActivityEnable", r), 0;
    F.cuptiActivityFlushPeriod(tp_g.cfg.flush_ms ? tp_g.cfg.flush_ms : 500);
    return 1;
}

static int cupti_start(void) {
    if (atomic_exchange(&g_started, 1) || !atomic_load(&tp_g.active))
        return 1;
    if (tp_g.cfg.no_cuda) {
        tp_collector_cuda_off("--no-cuda");
        return 1;
    }
    char why[256];
    if (!load_cupti(why, sizeof why)) {
        tp_collector_cuda_off(why);
        return 1;
    }
    CUptiResult r = F.cuptiSubscribe(&g_sub, (CUpti_CallbackFunc)on_callback, NULL);
    if (r != CUPTI_SUCCESS) {
        record_refusal(r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
                           ? "cuptiSubscribe (another profiler holds CUPTI)"
                           : "cuptiSubscribe",
                       r);
        return 1;
    }
    if (!alloc_pool()) {
        tp_collector_cuda_off("no memory for CUPTI buffers");
        return 1;
    }
    if (enable_all()) {
        tp_collector_client c = {.name = "cupti", .before_close = cupti_before_close};
        tp_collector_add_client(&c);
        atomic_store(&g_running, 1);
    }
    return 1;
}

/* CUPTI starts its own threads from these calls; they inherit a mask with every signal
 * blocked, so the program's signal handlers never run (and wait for the trace) on them. */
int tp_cupti_start(void) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int r = cupti_start();
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return r;
}
