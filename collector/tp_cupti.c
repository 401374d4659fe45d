/* tp_cupti: CUPTI subscriber, callbacks and activity buffers (see tp_cupti.h). */
#include "tp_cupti.h"

#include <dlfcn.h>
#include <link.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cupti.h>

#include "tp_collector.h"
#include "tp_collector_env.h"
#include "tp_cupti_convert.h"
#include "tp_kineto_names.h"

#define POOL_BUFFERS 8
#define BUFFER_BYTES (4u << 20)
#define CORR_SLOTS (1u << 18)
#define CORR_CAPTURED 0x80000000u /* entry flag: the call was inside the NVTX capture range */
#define MAX_CONTEXTS 64
/* Converted bytes after which the buffer thread drains the writer's shared ring: far below
 * the smallest ring it can grow to, so one 4 MiB CUPTI buffer never overflows it. */
#define DRAIN_EVERY (256u << 10)
#define CLOSE_WAIT_MS 2000 /* how long closing waits for a buffer being converted */

/* The CUPTI entry points we use, resolved from the dlopen'ed library. */
#define TP_CUPTI_FUNCS(X)                                                                          \
    X(cuptiGetVersion, (uint32_t *))                                                               \
    X(cuptiSubscribe, (CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *))                      \
    X(cuptiUnsubscribe, (CUpti_SubscriberHandle))                                                  \
    X(cuptiEnableDomain, (uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain))                 \
    X(cuptiActivityRegisterCallbacks,                                                              \
      (CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc))                       \
    X(cuptiActivityRegisterTimestampCallback, (CUpti_TimestampCallbackFunc))                       \
    X(cuptiSetThreadIdType, (CUpti_ActivityThreadIdType))                                          \
    X(cuptiActivityEnable, (CUpti_ActivityKind))                                                   \
    X(cuptiActivityEnableAndDump, (CUpti_ActivityKind))                                            \
    X(cuptiActivityDisable, (CUpti_ActivityKind))                                                  \
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

/* The activity kinds we enable, by name for messages. A refused required kind turns CUDA
 * tracing off; a refused optional one only loses its records (said once). DEVICE is not
 * here: its records were made at driver initialization, before we attached, so they come
 * from cuptiActivityEnableAndDump. */
static const struct {
    CUpti_ActivityKind kind;
    const char *name;
    int required;
} g_kinds[] = {
    {CUPTI_ACTIVITY_KIND_RUNTIME, "RUNTIME", 1},
    {CUPTI_ACTIVITY_KIND_DRIVER, "DRIVER", 1},
    {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL", 1},
    {CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY", 1},
    {CUPTI_ACTIVITY_KIND_MEMCPY2, "MEMCPY2", 0},
    {CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET", 1},
    {CUPTI_ACTIVITY_KIND_MEMORY2, "MEMORY2", 0},
    {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "SYNCHRONIZATION", 0},
    {CUPTI_ACTIVITY_KIND_OVERHEAD, "OVERHEAD", 0},
    {CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, "EXTERNAL_CORRELATION", 0},
};
#define NKINDS (sizeof g_kinds / sizeof g_kinds[0])

static const CUpti_CallbackDomain g_domains[] = {
    CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_CB_DOMAIN_RESOURCE};

static void *_Atomic g_handle;         /* the libcupti we loaded */
static _Atomic unsigned g_api_version; /* its cuptiGetVersion, read once when loaded */
static CUpti_SubscriberHandle g_sub;
static uint64_t g_enabled; /* bit k: activity kind k is enabled by us */
static pid_t g_pid;        /* the process that started CUPTI (a fork child is not it) */
static _Atomic int g_started;
static _Atomic int g_armed;   /* callbacks do their work */
static _Atomic int g_running; /* our activity buffers flow; 0 once stopped or taken over */
static _Atomic int g_accept;  /* completed buffers are written (0 once the trace closes) */
static _Atomic int g_inflight;
static _Atomic int g_exit_flushed;
static _Atomic int g_foreign_first; /* another client registered activity callbacks first */

/* correlation id -> launch-site stack id | CORR_CAPTURED, direct-mapped; a newer id
 * overwrites an older (counted when that older one's records had not arrived yet). */
static _Atomic uint64_t g_corr[CORR_SLOTS];
static _Atomic uint32_t g_corr_done; /* highest correlation id converted so far */

static struct {
    uint32_t context[MAX_CONTEXTS], device[MAX_CONTEXTS];
    _Atomic uint32_t n;
} g_ctx;

/* Preallocated activity buffers: CUPTI asks for them inside the application's CUDA calls. */
static struct {
    pthread_mutex_t mu;
    uint8_t *free[POOL_BUFFERS];
    int nfree;
} g_pool = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* What is written as COUNTER records "trainprof.cupti.<name>" when the trace closes. */
#define TP_CUPTI_COUNTERS(X)                                                                       \
    X(buffers_refused)          /* buffer requests the empty pool refused (CUPTI dropped) */       \
    X(correlations_overwritten) /* launches whose stack was overwritten before use */              \
    X(buffers_cut)              /* buffers whose record walk ended at an incomplete record */
static struct {
#define TP_CUPTI_CTR(name) _Atomic uint64_t name;
    TP_CUPTI_COUNTERS(TP_CUPTI_CTR)
#undef TP_CUPTI_CTR
} g_count;

/* ---------------------------------------------------------------- helpers */

static const char *result_str(CUptiResult r) {
    const char *s = NULL;
    if (F.cuptiGetResultString)
        F.cuptiGetResultString(r, &s);
    return s ? s : "unknown CUPTI error";
}

static void corr_put(uint32_t corr, uint32_t val) {
    uint64_t old = atomic_exchange_explicit(&g_corr[corr & (CORR_SLOTS - 1)],
                                            (uint64_t)corr << 32 | val, memory_order_relaxed);
    uint32_t was = (uint32_t)(old >> 32);
    if (old && was != corr && was > atomic_load_explicit(&g_corr_done, memory_order_relaxed))
        atomic_fetch_add_explicit(&g_count.correlations_overwritten, 1, memory_order_relaxed);
}

static uint32_t corr_entry(uint32_t corr) {
    uint64_t v = atomic_load_explicit(&g_corr[corr & (CORR_SLOTS - 1)], memory_order_relaxed);
    return (uint32_t)(v >> 32) == corr ? (uint32_t)v : 0;
}

static uint32_t corr_get(void *ud, uint32_t corr) {
    (void)ud;
    return corr_entry(corr) & ~CORR_CAPTURED;
}

static void corr_done(uint32_t corr) {
    uint32_t cur = atomic_load_explicit(&g_corr_done, memory_order_relaxed);
    while (corr > cur && !atomic_compare_exchange_weak_explicit(
                             &g_corr_done, &cur, corr, memory_order_relaxed, memory_order_relaxed))
        ;
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
    if (!name)
        return 0;
    /* "cudaLaunchKernel_v7000" -> "cudaLaunchKernel", as Kineto and the CUDA docs name it */
    size_t n = strlen(name);
    if (!driver)
        n = tp_kineto_api_name_len(name, n);
    return tp_collector_intern_n(name, n);
}

static uint64_t CUPTIAPI trace_clock(void) {
    return tp_collector_now();
}

/* The value a correlation entry gets at API entry: the stack, and whether --capture nvtx
 * had its range open (records arrive later, when the range may have closed). */
static uint32_t entry_value(tp_tstate *t, CUpti_CallbackDomain dom, CUpti_CallbackId cbid) {
    uint32_t v = tp_cupti_wants_stack(dom, cbid) ? tp_collector_stack(t, TP_STACKS_API) : 0;
    if (tp_g.cfg.capture == TP_CAPTURE_NVTX && tp_collector_gate(0))
        v |= CORR_CAPTURED;
    return v;
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
                corr_put(cd->correlationId, t->rt_stack); /* the runtime call's entry */
            return;
        }
        uint32_t v = entry_value(t, dom, cbid);
        if (v)
            corr_put(cd->correlationId, v);
        if (runtime)
            t->rt_stack = v;
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
    uint64_t now = tp_collector_now();
    int32_t result = cd->functionReturnValue ? *(const int32_t *)cd->functionReturnValue : 0;
    if (tp_collector_gate(now) &&
        tp_cupti_alloc_fail(dom, cbid, cd->functionParams, result, now, t->tid, 0,
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
    if (!atomic_load_explicit(&g_armed, memory_order_relaxed) || !data)
        return; /* disarmed: CUDA off, taken over, or a fork child */
    tp_tstate *t = tp_collector_thread();
    if (!t)
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
    if (!*buf) /* CUPTI drops these records and counts them (GetNumDroppedRecords) */
        atomic_fetch_add(&g_count.buffers_refused, 1);
}

static void pool_put(uint8_t *buf) {
    pthread_mutex_lock(&g_pool.mu);
    if (buf && g_pool.nfree < POOL_BUFFERS)
        g_pool.free[g_pool.nfree++] = buf;
    pthread_mutex_unlock(&g_pool.mu);
}

/* Whether the capture options let `r` in: a time window by the record's own time; an NVTX
 * range by its launching call (marked at API entry), else by the range now. */
static int keep(const tp_cupti_rec *r) {
    if (r->h.type == TP_REC_EXT_CORRELATION || r->h.type == TP_REC_DEVICE)
        return 1;
    if (tp_g.cfg.capture == TP_CAPTURE_ALWAYS)
        return 1;
    if (tp_g.cfg.capture != TP_CAPTURE_NVTX)
        return tp_collector_gate(tp_record_ts(&r->h));
    uint32_t corr = tp_cupti_correlation(r);
    return corr ? (corr_entry(corr) & CORR_CAPTURED) != 0 : tp_collector_gate(0);
}

static void write_converted(tp_writer *w, const tp_cupti_rec *r) {
    if (r->h.type == TP_REC_EXT_CORRELATION || r->h.type == TP_REC_DEVICE)
        (void)tp_writer_write_meta(w, r);
    else
        (void)tp_writer_write(w, r); /* a full ring counts its drop itself */
}

static void write_overhead(tp_writer *w, uint64_t start, uint64_t end) {
    tp_rec_overhead o;
    TP_REC_CLEAR(&o, TP_REC_OVERHEAD);
    o.ts = start;
    o.end = end;
    o.tid = (uint32_t)gettid();
    o.kind = TP_OVERHEAD_CUPTI_BUFFER;
    (void)tp_writer_write(w, &o);
}

/* Converts and writes one completed buffer. Records without timestamps are dropped and
 * counted (TP_DROP_CONVERT); a walk that ends before the buffer's end is counted too. */
static void convert_buffer(tp_writer *w, CUcontext ctx, uint32_t stream, uint8_t *buf,
                           size_t valid) {
    uint64_t t0 = tp_collector_now();
    const tp_cupti_conv conv = {NULL, intern_cb, api_name_cb, corr_get, device_of_context};
    CUpti_Activity *rec = NULL;
    tp_cupti_rec out;
    size_t pending = 0;
    CUptiResult r;
    while ((r = F.cuptiActivityGetNextRecord(buf, valid, &rec)) == CUPTI_SUCCESS) {
        if (!tp_cupti_convert(&conv, rec, &out))
            continue;
        corr_done(tp_cupti_correlation(&out));
        if (tp_cupti_incomplete(&out)) {
            tp_writer_count_drop(w, out.h.type, TP_DROP_CONVERT, 1);
            continue;
        }
        if (!keep(&out))
            continue;
        write_converted(w, &out);
        if ((pending += out.h.size) >= DRAIN_EVERY) {
            (void)tp_writer_flush(w);
            pending = 0;
        }
    }
    if (r != CUPTI_ERROR_MAX_LIMIT_REACHED)
        atomic_fetch_add(&g_count.buffers_cut, 1);
    size_t dropped = 0;
    if (F.cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped)
        tp_writer_count_drop(w, 0, TP_DROP_CUPTI, dropped);
    write_overhead(w, t0, tp_collector_now());
}

/* The trace may be closing on another thread: `inflight` and `accept` (both seq_cst) make
 * close_gate wait for a conversion that passed the check, and every later one skip. */
static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
                                      size_t valid) {
    (void)size;
    atomic_fetch_add(&g_inflight, 1);
    tp_writer *w = tp_g.writer;
    if (buf && w && atomic_load(&g_accept)) {
        tp_collector_busy_enter(); /* writes under the writer's locks, maybe on a program thread */
        convert_buffer(w, ctx, stream, buf, valid);
        tp_collector_busy_leave();
    }
    pool_put(buf);
    atomic_fetch_sub(&g_inflight, 1);
}

static void close_gate(void) {
    atomic_store(&g_accept, 0);
    struct timespec ms = {0, 1000000};
    for (int i = 0; atomic_load(&g_inflight) > 0 && i < CLOSE_WAIT_MS; i++)
        nanosleep(&ms, NULL);
}

/* ---------------------------------------------------------------- setup */

/* The directory of the loaded libcudart, where toolkits and wheels keep libcupti too. */
static int cudart_dir(char *dir) {
    void *h = dlopen("libcudart.so.13", RTLD_NOLOAD | RTLD_LAZY);
    int ok = h && dlinfo(h, RTLD_DI_ORIGIN, dir) == 0;
    if (h)
        dlclose(h);
    return ok;
}

static void *open_cupti(char *why, size_t len) {
    void *h;
    if (tp_g.cfg.cupti[0]) { /* the user's choice, and only it */
        if (!(h = dlopen(tp_g.cfg.cupti, RTLD_NOW | RTLD_LOCAL)))
            snprintf(why, len, "cannot load libcupti (TRAINPROF_CUPTI): %s", dlerror());
        return h;
    }
    if ((h = dlopen("libcupti.so.13", RTLD_NOW | RTLD_LOCAL)))
        return h;
    snprintf(why, len, "cannot load libcupti: %s", dlerror());
    char dir[PATH_MAX], path[PATH_MAX + 64];
    static const char *const beside[] = {"libcupti.so.13", "../extras/CUPTI/lib64/libcupti.so.13"};
    for (size_t i = 0; i < 2 && cudart_dir(dir); i++) {
        snprintf(path, sizeof path, "%s/%s", dir, beside[i]);
        if ((h = dlopen(path, RTLD_NOW | RTLD_LOCAL)))
            return h;
    }
    return NULL;
}

static int load_cupti(char *why, size_t len) {
    void *h = open_cupti(why, len);
    if (!h)
        return 0;
#define TP_CUPTI_SYM(name, args)                                                                   \
    *(void **)&F.name = dlsym(h, #name);                                                           \
    if (!F.name) {                                                                                 \
        snprintf(why, len, "libcupti lacks %s (older than CUDA 13)", #name);                       \
        return 0;                                                                                  \
    }
    TP_CUPTI_FUNCS(TP_CUPTI_SYM)
#undef TP_CUPTI_SYM
    uint32_t v = 0;
    if (F.cuptiGetVersion(&v) != CUPTI_SUCCESS || v / 10000 != CUPTI_API_VERSION / 10000) {
        snprintf(why, len, "libcupti API version %u; this collector reads CUDA %d's records", v,
                 CUPTI_API_VERSION / 10000);
        return 0;
    }
    atomic_store(&g_api_version, v);
    atomic_store(&g_handle, h);
    return 1;
}

unsigned tp_cupti_api_version(void) {
    return atomic_load(&g_api_version);
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

static void record_refusal(const char *call, CUptiResult r) {
    char why[256];
    snprintf(why, sizeof why, "%s: %s (%d)", call, result_str(r), (int)r);
    tp_collector_cuda_off(why);
}

/* Everything we turned on, off again: no callback runs and no kind is collected. */
static void disarm(void) {
    atomic_store(&g_armed, 0);
    for (size_t i = 0; i < NKINDS; i++)
        if (g_enabled >> g_kinds[i].kind & 1)
            F.cuptiActivityDisable(g_kinds[i].kind);
    g_enabled = 0;
    for (size_t i = 0; i < sizeof g_domains / sizeof g_domains[0]; i++)
        F.cuptiEnableDomain(0, g_sub, g_domains[i]);
    F.cuptiUnsubscribe(g_sub);
}

/* An optional kind refused: its records are missing, said once and kept in the trace. */
static void kind_refused(const char *name, CUptiResult r) {
    char msg[200];
    int n = snprintf(msg, sizeof msg, "trainprof.cupti.kind_refused: %s: %s (%d)", name,
                     result_str(r), (int)r);
    tp_rec_counter c;
    TP_REC_CLEAR(&c, TP_REC_COUNTER);
    c.ts = tp_collector_now();
    c.name_sid = tp_collector_intern_n(msg, n > 0 && (size_t)n < sizeof msg ? (size_t)n : 0);
    c.value = 1;
    tp_writer *w = tp_g.writer;
    if (w)
        (void)tp_writer_write(w, &c);
    fprintf(stderr, "trainprof: CUPTI refused activity kind %s (%s); those records are missing\n",
            name, result_str(r));
}

static int enable_kinds(void) {
    char call[96];
    for (size_t i = 0; i < NKINDS; i++) {
        CUptiResult r = F.cuptiActivityEnable(g_kinds[i].kind);
        if (r == CUPTI_SUCCESS) {
            g_enabled |= 1ull << g_kinds[i].kind;
        } else if (g_kinds[i].required) {
            snprintf(call, sizeof call, "cuptiActivityEnable(%s)", g_kinds[i].name);
            record_refusal(call, r);
            return 0;
        } else {
            kind_refused(g_kinds[i].name, r);
        }
    }
    CUptiResult r = F.cuptiActivityEnableAndDump(CUPTI_ACTIVITY_KIND_DEVICE);
    if (r == CUPTI_SUCCESS)
        g_enabled |= 1ull << CUPTI_ACTIVITY_KIND_DEVICE;
    else
        kind_refused("DEVICE", r);
    return 1;
}

static int enable_all(void) {
    CUptiResult r;
    /* The clock must be registered before any kind is enabled (cupti_activity.h). */
    if ((r = F.cuptiActivityRegisterTimestampCallback(trace_clock)) != CUPTI_SUCCESS)
        return record_refusal("cuptiActivityRegisterTimestampCallback", r), 0;
    if ((r = F.cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed)) != CUPTI_SUCCESS)
        return record_refusal("cuptiActivityRegisterCallbacks", r), 0;
    /* API, sync and overhead records name their thread by pthread_self() unless told otherwise;
     * the trace's threads (NVTX ranges, stacks, THREAD records) are kernel tids, and every join
     * of a launch or a sync with its thread's ranges needs the two to agree (seen on the first
     * GPU run: input-bound, sync and launch findings all lost). */
    if ((r = F.cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM)) != CUPTI_SUCCESS)
        return record_refusal("cuptiSetThreadIdType", r), 0;
    for (size_t i = 0; i < sizeof g_domains / sizeof g_domains[0]; i++)
        if ((r = F.cuptiEnableDomain(1, g_sub, g_domains[i])) != CUPTI_SUCCESS)
            return record_refusal("cuptiEnableDomain", r), 0;
    if (!enable_kinds())
        return 0;
    F.cuptiActivityFlushPeriod(tp_g.cfg.flush_ms ? tp_g.cfg.flush_ms : 500);
    return 1;
}

/* The exit flush, registered inside cuInit: after the CUDA runtime registered its own
 * teardown, so this runs first (atexit order) while CUPTI still has its buffers. */
static void cupti_at_exit(void) {
    if (getpid() != g_pid)
        return;
    tp_env_write_loaded(); /* while the driver still answers */
    if (atomic_load(&g_running) && !atomic_exchange(&g_exit_flushed, 1))
        F.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

static int cupti_start(void) {
    if (atomic_exchange(&g_started, 1) || !atomic_load(&tp_g.active))
        return 1;
    if (tp_g.cfg.no_cuda) {
        tp_collector_cuda_off("--no-cuda");
        return 1;
    }
    if (atomic_load(&g_foreign_first)) { /* taking its buffers would blind it */
        tp_collector_cuda_off("another CUPTI client (torch.profiler/Kineto?) registered its "
                              "activity callbacks before CUDA started; CUPTI is left to it");
        return 1;
    }
    char why[256];
    if (!load_cupti(why, sizeof why)) {
        tp_collector_cuda_off(why);
        return 1;
    }
    if (!alloc_pool()) {
        tp_collector_cuda_off("no memory for CUPTI buffers");
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
    g_pid = getpid();
    atomic_store(&g_armed, 1);
    atomic_store(&g_accept, 1);
    if (!enable_all()) {
        disarm();
        return 1;
    }
    atomic_store(&g_running, 1);
    atexit(cupti_at_exit);
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

/* ---------------------------------------------------------------- client */

static void write_counter(tp_writer *w, const char *name, uint64_t value) {
    char full[96];
    int n = snprintf(full, sizeof full, "trainprof.cupti.%s", name);
    tp_rec_counter c;
    TP_REC_CLEAR(&c, TP_REC_COUNTER);
    c.ts = tp_collector_now();
    c.name_sid = tp_collector_intern_n(full, (size_t)n);
    c.value = value;
    (void)tp_writer_write(w, &c);
}

static void write_counters(void) {
    tp_writer *w = tp_g.writer;
    if (!w)
        return;
#define TP_CUPTI_PUT(name)                                                                         \
    if (atomic_load(&g_count.name))                                                                \
        write_counter(w, #name, atomic_load(&g_count.name));
    TP_CUPTI_COUNTERS(TP_CUPTI_PUT)
#undef TP_CUPTI_PUT
}

/* The driver calls InitializeInjection inside cuInit when it honours CUDA_INJECTION64_PATH;
 * libcuda loaded without that call means CUDA work (if any) went untraced. Checked in the
 * process `trainprof record` started (its helpers may load libcuda and never use it). */
static void check_injected(void) {
    if (atomic_load(&g_started) || tp_g.cfg.no_cuda || getpid() != tp_g.cfg.target_pid)
        return;
    void *h = dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_LAZY);
    if (!h)
        return;
    dlclose(h);
    tp_collector_cuda_off("libcuda.so.1 was loaded but the CUDA driver never called "
                          "InitializeInjection (CUDA_INJECTION64_PATH not passed to this "
                          "process, or a driver or sandbox that ignores it); CUDA work, if any, "
                          "was not traced");
}

static void cupti_before_close(void) {
    if (getpid() == g_pid && atomic_exchange(&g_running, 0) && !atomic_exchange(&g_exit_flushed, 1))
        F.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    close_gate();
    write_counters();
    check_injected();
}

/* A fork child has none of CUPTI's threads, and the parent's records are the parent's. */
static void cupti_after_fork_child(void) {
    atomic_store(&g_armed, 0);
    atomic_store(&g_running, 0);
    atomic_store(&g_accept, 0);
    atomic_store(&g_inflight, 0);
    pthread_mutex_init(&g_pool.mu, NULL);
    memset(&g_count, 0, sizeof g_count);
}

void tp_cupti_register(void) {
    tp_collector_client c = {.name = "cupti",
                             .before_close = cupti_before_close,
                             .after_fork_child = cupti_after_fork_child};
    tp_collector_add_client(&c);
}

int tp_cupti_is_ours(void (*fn)(void)) {
    return fn == (void (*)(void))buffer_requested || fn == (void (*)(void))buffer_completed ||
           fn == (void (*)(void))trace_clock;
}

/* dl_iterate_phdr: the path of the first loaded libcupti (any version: a CUDA 12 PyTorch's
 * Kineto calls through our wrappers too). */
static int find_cupti(struct dl_phdr_info *info, size_t size, void *out) {
    (void)size;
    if (!info->dlpi_name || !strstr(info->dlpi_name, "/libcupti.so"))
        return 0;
    snprintf(out, PATH_MAX, "%s", info->dlpi_name);
    return 1;
}

void *tp_cupti_real(const char *name) {
    void *h = atomic_load(&g_handle);
    char path[PATH_MAX] = "";
    if (!h && dl_iterate_phdr(find_cupti, path)) /* the caller's (a reference is kept) */
        h = dlopen(path, RTLD_NOLOAD | RTLD_LAZY);
    return h ? dlsym(h, name) : dlsym(RTLD_NEXT, name);
}

void tp_cupti_refused_client(const char *call) {
    static atomic_int said;
    if (getpid() != g_pid || atomic_exchange(&said, 1))
        return;
    char what[256];
    int n = snprintf(what, sizeof what,
                     "another CUPTI client (torch.profiler/Kineto?) was refused CUPTI (%s: "
                     "one subscriber per process): its trace has no CUDA activity; record with "
                     "--no-cuda to leave CUPTI to it",
                     call);
    tp_collector_counter_note("trainprof.cupti_refused: ", what, n);
    fprintf(stderr, "trainprof: %s\n", what);
}

void tp_cupti_foreign(const char *call, int takes) {
    if (takes && !atomic_load(&g_started) && !strcmp(call, "cuptiActivityRegisterCallbacks"))
        atomic_store(&g_foreign_first, 1);
    if (!takes || getpid() != g_pid || !atomic_exchange(&g_running, 0))
        return;
    /* Our buffers still go to our callbacks: hand them over before the other client's. */
    if (!atomic_exchange(&g_exit_flushed, 1))
        F.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    atomic_store(&g_armed, 0);
    char why[256];
    snprintf(why, sizeof why,
             "another CUPTI client took CUDA tracing over (%s; torch.profiler/Kineto does "
             "this); CUDA records after this point are missing",
             call);
    tp_collector_cuda_off(why);
}
