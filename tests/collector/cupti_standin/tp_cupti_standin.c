/* tp_cupti_standin: libcupti.so.13 STAND-IN for tests (see tp_cupti_standin.h). Single
 * process, driven by one test thread; buffers complete on a thread of its own. */
#include "tp_cupti_standin.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define MAX_QUEUED 64

typedef struct {
    uint8_t *buf;
    size_t used;
} buffer;

static struct {
    pthread_once_t once;
    uint32_t version;
    int busy;
    int no_api_records;
    int system_tids; /* cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM) */
    int refuse_kind;
    pid_t pid;
    CUpti_CallbackFunc cb;
    void *ud;
    int subscribed;
    uint32_t domains;
    uint64_t kinds;
    CUpti_BuffersCallbackRequestFunc request;
    CUpti_BuffersCallbackCompleteFunc complete;
    CUpti_TimestampCallbackFunc clock;
    uint32_t next_corr;
    buffer cur;
    size_t cur_size;
    buffer queued[MAX_QUEUED], held[MAX_QUEUED];
    int nqueued, nheld;
    size_t dropped;
    int torn_down;
    tp_standin_stats stats;
} S = {.once = PTHREAD_ONCE_INIT};

static int env_int(const char *name, int dflt) {
    const char *v = getenv(name);
    return v && *v ? atoi(v) : dflt;
}

static void init(void) {
    S.version = (uint32_t)env_int("TP_STANDIN_VERSION", CUPTI_API_VERSION);
    S.busy = env_int("TP_STANDIN_BUSY", 0);
    S.refuse_kind = env_int("TP_STANDIN_REFUSE_KIND", -1);
    S.pid = getpid();
}

static void setup(void) {
    pthread_once(&S.once, init);
}

uint64_t tp_standin_now(void) {
    if (S.clock)
        return S.clock();
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---------------------------------------------------------------- records and buffers */

static size_t record_size(CUpti_ActivityKind kind) {
    switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY:
        return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
        return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_DEVICE:
        return sizeof(CUpti_ActivityDevice5);
    default:
        return 8; /* INVALID: the incomplete-record marker */
    }
}

static size_t align8(size_t n) {
    return (n + 7) & ~(size_t)7;
}

static void close_into(buffer *list, int *n) {
    if (S.cur.buf && *n < MAX_QUEUED)
        list[(*n)++] = S.cur;
    S.cur.buf = NULL;
}

/* Room for `size` bytes in the current buffer, asking the collector for one when needed;
 * NULL (the record dropped and counted) when it refuses. */
static uint8_t *room(size_t size) {
    if (S.cur.buf && S.cur.used + size > S.cur_size)
        close_into(S.queued, &S.nqueued);
    if (!S.cur.buf) {
        uint8_t *b = NULL;
        size_t bytes = 0, max = 0;
        if (S.request)
            S.request(&b, &bytes, &max);
        if (!b || bytes < size) {
            S.dropped++;
            return NULL;
        }
        S.cur = (buffer){b, 0};
        S.cur_size = bytes;
    }
    uint8_t *p = S.cur.buf + S.cur.used;
    S.cur.used += align8(size);
    return p;
}

static void store(const void *rec, int always) {
    CUpti_ActivityKind kind = ((const CUpti_Activity *)rec)->kind;
    if (!always && !(S.kinds >> kind & 1))
        return;
    size_t size = record_size(kind);
    uint8_t *p = room(size);
    if (p)
        memcpy(p, rec, size);
}

typedef struct {
    buffer list[MAX_QUEUED];
    int n, reversed;
} delivery;

static void *deliver_main(void *arg) {
    delivery *d = arg;
    for (int i = 0; i < d->n; i++) {
        buffer b = d->list[d->reversed ? d->n - 1 - i : i];
        if (S.complete)
            S.complete(NULL, 0, b.buf, S.cur_size, b.used);
    }
    return NULL;
}

/* Completes `list` on a thread of its own, as CUPTI's worker does, and waits for it. */
static void deliver(buffer *list, int *n, int reversed) {
    static delivery d;
    memcpy(d.list, list, sizeof d.list);
    d.n = *n;
    d.reversed = reversed;
    *n = 0;
    pthread_t t;
    if (pthread_create(&t, NULL, deliver_main, &d) == 0)
        pthread_join(t, NULL);
}

void tp_standin_close_buffer(void) {
    close_into(S.queued, &S.nqueued);
}

void tp_standin_hold_buffer(void) {
    close_into(S.held, &S.nheld);
}

void tp_standin_complete(int reversed) {
    deliver(S.queued, &S.nqueued, reversed);
}

void tp_standin_teardown(void) {
    S.torn_down = 1;
}

void tp_standin_kernel(uint32_t correlation, const char *name, uint32_t stream, uint64_t start,
                       uint64_t end) {
    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof k);
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.start = start;
    k.end = end;
    k.correlationId = correlation;
    k.streamId = stream;
    k.contextId = 1;
    k.name = name;
    k.gridX = 8, k.gridY = 1, k.gridZ = 1;
    k.blockX = 128, k.blockY = 1, k.blockZ = 1;
    k.registersPerThread = 32;
    store(&k, 0);
}

void tp_standin_memcpy(uint32_t correlation, uint32_t runtime_correlation, uint8_t copy_kind,
                       uint64_t bytes, uint64_t start, uint64_t end) {
    CUpti_ActivityMemcpy6 m;
    memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m.copyKind = copy_kind;
    m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
    m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m.flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
    m.bytes = bytes;
    m.start = start;
    m.end = end;
    m.correlationId = correlation;
    m.runtimeCorrelationId = runtime_correlation;
    m.contextId = 1;
    m.streamId = 7;
    store(&m, 0);
}

void tp_standin_incomplete(void) {
    CUpti_Activity a = {CUPTI_ACTIVITY_KIND_INVALID};
    store(&a, 1);
}

/* ---------------------------------------------------------------- callbacks */

static void callback(CUpti_CallbackDomain domain, uint32_t cbid, const void *data) {
    if (!S.subscribed || !S.cb || !(S.domains >> domain & 1))
        return;
    S.stats.callbacks++;
    S.cb(S.ud, domain, cbid, data);
}

void tp_standin_enter(tp_standin_call *c) {
    setup();
    c->correlation = ++S.next_corr;
    c->start = tp_standin_now();
    CUpti_CallbackData d;
    memset(&d, 0, sizeof d);
    d.callbackSite = CUPTI_API_ENTER;
    d.functionName = c->name;
    d.functionParams = c->params;
    d.symbolName = c->symbol;
    d.correlationId = c->correlation;
    callback(c->domain, c->cbid, &d);
}

void tp_standin_exit(tp_standin_call *c, int32_t result) {
    CUpti_CallbackData d;
    memset(&d, 0, sizeof d);
    d.callbackSite = CUPTI_API_EXIT;
    d.functionName = c->name;
    d.functionParams = c->params;
    d.functionReturnValue = &result;
    d.symbolName = c->symbol;
    d.correlationId = c->correlation;
    callback(c->domain, c->cbid, &d);
    CUpti_ActivityAPI a;
    memset(&a, 0, sizeof a);
    a.kind = c->domain == CUPTI_CB_DOMAIN_DRIVER_API ? CUPTI_ACTIVITY_KIND_DRIVER
                                                     : CUPTI_ACTIVITY_KIND_RUNTIME;
    a.cbid = c->cbid;
    a.start = c->start;
    a.end = tp_standin_now();
    a.processId = (uint32_t)getpid();
    /* as CUPTI: pthread_self() unless cuptiSetThreadIdType asked for the kernel's tid */
    a.threadId = S.system_tids ? (uint32_t)gettid() : (uint32_t)(uintptr_t)pthread_self();
    a.correlationId = c->correlation;
    a.returnValue = (uint32_t)result;
    if (!S.no_api_records)
        store(&a, 0);
}

void tp_standin_set_api_records(int on) {
    S.no_api_records = !on;
}

/* Contexts and streams are small ids passed as handles: cuptiGetContextId and
 * cuptiGetStreamIdEx give them back. */
void tp_standin_resource(uint32_t cbid, uint32_t context, uint32_t stream) {
    setup();
    CUpti_ResourceData r;
    memset(&r, 0, sizeof r);
    r.context = (CUcontext)(uintptr_t)context;
    r.resourceHandle.stream = (CUstream)(uintptr_t)stream;
    callback(CUPTI_CB_DOMAIN_RESOURCE, cbid, &r);
}

void tp_standin_get_stats(tp_standin_stats *out) {
    *out = S.stats;
    out->subscribed = S.subscribed;
    out->domains = S.domains;
    out->kinds = S.kinds;
}

/* ---------------------------------------------------------------- the CUPTI API */

EXPORT CUptiResult CUPTIAPI cuptiGetVersion(uint32_t *version) {
    setup();
    *version = S.version;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc cb,
                                           void *ud) {
    setup();
    if (S.busy || S.subscribed)
        return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    S.cb = cb;
    S.ud = ud;
    S.subscribed = 1;
    *sub = (CUpti_SubscriberHandle)&S;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle sub) {
    if (sub != (CUpti_SubscriberHandle)&S || !S.subscribed)
        return CUPTI_ERROR_INVALID_PARAMETER;
    S.subscribed = 0;
    S.cb = NULL;
    S.domains = 0;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle sub,
                                              CUpti_CallbackDomain domain) {
    if (sub != (CUpti_SubscriberHandle)&S || !S.subscribed || domain >= 32)
        return CUPTI_ERROR_INVALID_PARAMETER;
    S.domains = enable ? S.domains | 1u << domain : S.domains & ~(1u << domain);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
                                                           CUpti_BuffersCallbackCompleteFunc done) {
    S.request = req;
    S.complete = done;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc f) {
    S.clock = f;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiSetThreadIdType(CUpti_ActivityThreadIdType type) {
    setup();
    S.system_tids = type == CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) {
    setup();
    if ((int)kind == S.refuse_kind)
        return CUPTI_ERROR_NOT_COMPATIBLE;
    if (kind >= 64)
        return CUPTI_ERROR_INVALID_KIND;
    S.kinds |= 1ull << kind;
    return CUPTI_SUCCESS;
}

/* The device exists since the driver initialized: only a dump reports it now (a plain
 * enable would wait for a device created later, which never comes). */
EXPORT CUptiResult CUPTIAPI cuptiActivityEnableAndDump(CUpti_ActivityKind kind) {
    CUptiResult r = cuptiActivityEnable(kind);
    if (r != CUPTI_SUCCESS || kind != CUPTI_ACTIVITY_KIND_DEVICE)
        return r;
    CUpti_ActivityDevice5 d;
    memset(&d, 0, sizeof d);
    d.kind = CUPTI_ACTIVITY_KIND_DEVICE;
    d.id = 0;
    d.name = "Stand-in GPU (not a device)";
    d.globalMemorySize = 80ull << 30;
    d.numMultiprocessors = 132;
    d.computeCapabilityMajor = 9;
    d.computeCapabilityMinor = 0;
    store(&d, 0);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) {
    if (kind >= 64)
        return CUPTI_ERROR_INVALID_KIND;
    S.kinds &= ~(1ull << kind);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *buf, size_t valid,
                                                       CUpti_Activity **rec) {
    if (!buf)
        return CUPTI_ERROR_INVALID_PARAMETER;
    size_t off = *rec ? (size_t)((uint8_t *)*rec - buf) + align8(record_size((*rec)->kind)) : 0;
    if (off >= valid)
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    CUpti_Activity *a = (CUpti_Activity *)(buf + off);
    if (a->kind == CUPTI_ACTIVITY_KIND_INVALID)
        return CUPTI_ERROR_INVALID_KIND; /* incomplete: the walk ends here */
    *rec = a;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext ctx, uint32_t stream,
                                                              size_t *dropped) {
    (void)ctx, (void)stream;
    *dropped = S.dropped;
    S.dropped = 0;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag) {
    setup();
    if (getpid() != S.pid) {
        fprintf(stderr, "cupti-standin: flush in a fork child\n");
        return CUPTI_ERROR_NOT_INITIALIZED;
    }
    S.stats.flushes++;
    if (flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)
        S.stats.forced_flushes++;
    if (S.torn_down)
        return CUPTI_ERROR_NOT_INITIALIZED;
    close_into(S.queued, &S.nqueued);
    deliver(S.queued, &S.nqueued, 0);
    if (flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)
        deliver(S.held, &S.nheld, 0);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityFlushPeriod(uint32_t ms) {
    (void)ms;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult r, const char **s) {
    switch (r) {
    case CUPTI_SUCCESS:
        *s = "CUPTI_SUCCESS";
        break;
    case CUPTI_ERROR_NOT_COMPATIBLE:
        *s = "CUPTI_ERROR_NOT_COMPATIBLE";
        break;
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
        *s = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
        break;
    default:
        *s = "CUPTI_ERROR_UNKNOWN";
    }
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid,
                                                 const char **name) {
    static const struct {
        CUpti_CallbackDomain domain;
        uint32_t cbid;
        const char *name;
    } names[] = {
        {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
         "cudaLaunchKernel"},
        {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
         "cudaMemcpyAsync"},
        {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, "cudaMalloc"},
        {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020,
         "cudaMallocHost"},
        {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel"},
        {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2,
         "cuMemcpyHtoDAsync_v2"},
        {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemCreate, "cuMemCreate"},
    };
    *name = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].domain == domain && names[i].cbid == cbid)
            *name = names[i].name;
    return *name ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}

EXPORT CUptiResult CUPTIAPI cuptiGetContextId(CUcontext ctx, uint32_t *id) {
    *id = (uint32_t)(uintptr_t)ctx;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiGetDeviceId(CUcontext ctx, uint32_t *id) {
    (void)ctx;
    *id = 0;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiGetStreamIdEx(CUcontext ctx, CUstream stream, uint8_t per_thread,
                                               uint32_t *id) {
    (void)ctx, (void)per_thread;
    *id = (uint32_t)(uintptr_t)stream;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t *ts) {
    *ts = tp_standin_now();
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiFinalize(void) {
    S.subscribed = 0;
    S.cb = NULL;
    S.kinds = 0;
    return CUPTI_SUCCESS;
}
