/* tp_test_recorder: a tiny tool library for the trainer tests.
 *
 * Loaded two ways at once: as an NVTX injection library (NVTX_INJECTION64_PATH; exports
 * InitializeInjectionNvtx2 and InitializeInjectionNvtxExtension and records the memory
 * extension calls, domain creation and thread names), and as a trainprof collector stand-in
 * (TRAINPROF_COLLECTOR; exports tp_activity_get_table and records every activity call).
 * Records are text lines in one in-memory log that tests fetch with tp_rec_log() through
 * dlsym on the already-loaded library, or, for a child process, from the file named by
 * $TP_REC_OUT, written at exit. Thread-safe (one mutex); never prints. */
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtMem.h>

#include "trainprof/activity.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char *log_buf;
static size_t log_len, log_cap;
static uint32_t next_corr = 100;

EXPORT const char *tp_rec_log(void);
EXPORT void tp_rec_clear(void);
EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get);
EXPORT int InitializeInjectionNvtxExtension(nvtxExtModuleInfo_t *mi);
EXPORT const tp_activity_table *tp_activity_get_table(uint32_t version);

__attribute__((format(printf, 1, 2))) static void rec(const char *fmt, ...) {
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if (n > (int)sizeof line - 2)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    pthread_mutex_lock(&mu);
    if (log_len + (size_t)n + 1 > log_cap) {
        size_t cap = (log_cap + (size_t)n + 1) * 2;
        char *nb = realloc(log_buf, cap);
        if (!nb) {
            pthread_mutex_unlock(&mu);
            return;
        }
        log_buf = nb;
        log_cap = cap;
    }
    memcpy(log_buf + log_len, line, (size_t)n);
    log_len += (size_t)n;
    log_buf[log_len] = 0;
    pthread_mutex_unlock(&mu);
}

/* The log so far (a copy the caller frees). */
const char *tp_rec_log(void) {
    pthread_mutex_lock(&mu);
    char *copy = strdup(log_buf ? log_buf : "");
    pthread_mutex_unlock(&mu);
    return copy;
}

void tp_rec_clear(void) {
    pthread_mutex_lock(&mu);
    log_len = 0;
    if (log_buf)
        log_buf[0] = 0;
    pthread_mutex_unlock(&mu);
}

/* ---- NVTX core: domains (named, so the log can show which), thread names ---- */

/* Handles live for the whole process, so they come from fixed pools (nothing to free,
 * nothing for a leak checker to report); a full pool hands out its last entry again. */
typedef struct {
    char name[64];
} dom;

static dom domains[64];
static char strings[1024][64];
static int ndomains, nstrings;

static nvtxDomainHandle_t DomainCreateA(const char *name) {
    pthread_mutex_lock(&mu);
    dom *d = &domains[ndomains < 64 ? ndomains++ : 63];
    snprintf(d->name, sizeof d->name, "%s", name);
    pthread_mutex_unlock(&mu);
    rec("domain_create %s", name);
    return (nvtxDomainHandle_t)d;
}

static void DomainDestroy(nvtxDomainHandle_t d) {}

static const char *dname(nvtxDomainHandle_t d) {
    return d ? ((dom *)d)->name : "(default)";
}

static nvtxStringHandle_t RegisterStringA(nvtxDomainHandle_t d, const char *s) {
    pthread_mutex_lock(&mu);
    char *h = strings[nstrings < 1024 ? nstrings++ : 1023];
    snprintf(h, 64, "%s", s);
    pthread_mutex_unlock(&mu);
    return (nvtxStringHandle_t)h;
}

static int PushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
    if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED)
        rec("push %s %s", dname(d), (const char *)a->message.registered);
    return 0;
}

static int Pop(nvtxDomainHandle_t d) {
    return 0;
}

static void NameOsThreadA(uint32_t tid, const char *name) {
    rec("thread_name %s", name);
}

#define SET(tbl, n, id, fn)                                                                        \
    do {                                                                                           \
        if ((unsigned)(id) < (n) && (tbl)[id])                                                     \
            *(tbl)[id] = (NvtxFunctionPointer)(fn);                                                \
    } while (0)

int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get) {
    const NvtxExportTableCallbacks *cb = get(NVTX_ETID_CALLBACKS);
    if (!cb || cb->struct_size < sizeof(NvtxExportTableCallbacks))
        return 0;
    NvtxFunctionTable t;
    unsigned int n;
    if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &n))
        SET(t, n, NVTX_CBID_CORE_NameOsThreadA, NameOsThreadA);
    if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &t, &n)) {
        SET(t, n, NVTX_CBID_CORE2_DomainCreateA, DomainCreateA);
        SET(t, n, NVTX_CBID_CORE2_DomainDestroy, DomainDestroy);
        SET(t, n, NVTX_CBID_CORE2_DomainRegisterStringA, RegisterStringA);
        SET(t, n, NVTX_CBID_CORE2_DomainRangePushEx, PushEx);
        SET(t, n, NVTX_CBID_CORE2_DomainRangePop, Pop);
    }
    return 1;
}

/* ---- NVTX memory extension ---- */

static nvtxMemHeapHandle_t HeapRegister(nvtxDomainHandle_t d, const nvtxMemHeapDesc_t *h) {
    const nvtxMemVirtualRangeDesc_t *r = h->typeSpecificDesc;
    rec("heap_register %s usage=%u type=%u ptr=%p size=%zu", dname(d), h->usage, h->type,
        r ? r->ptr : NULL, r ? r->size : 0);
    return (nvtxMemHeapHandle_t)(r ? r->ptr : NULL); /* the heap's address is its handle */
}

static void HeapUnregister(nvtxDomainHandle_t d, nvtxMemHeapHandle_t h) {
    rec("heap_unregister %s heap=%p", dname(d), (void *)h);
}

static void HeapReset(nvtxDomainHandle_t d, nvtxMemHeapHandle_t h) {
    rec("heap_reset %s heap=%p", dname(d), (void *)h);
}

static void RegionsRegister(nvtxDomainHandle_t d, const nvtxMemRegionsRegisterBatch_t *b) {
    for (size_t i = 0; i < b->regionCount; i++) {
        const nvtxMemVirtualRangeDesc_t *r =
            (const void *)((const char *)b->regionDescElements + i * b->regionDescElementSize);
        rec("region_register %s heap=%p ptr=%p size=%zu", dname(d), (void *)b->heap, r->ptr,
            r->size);
    }
}

static void RegionsResize(nvtxDomainHandle_t d, const nvtxMemRegionsResizeBatch_t *b) {
    for (size_t i = 0; i < b->regionDescCount; i++) {
        const nvtxMemVirtualRangeDesc_t *r =
            (const void *)((const char *)b->regionDescElements + i * b->regionDescElementSize);
        rec("region_resize %s ptr=%p size=%zu", dname(d), r->ptr, r->size);
    }
}

static void RegionsUnregister(nvtxDomainHandle_t d, const nvtxMemRegionsUnregisterBatch_t *b) {
    for (size_t i = 0; i < b->refCount; i++) {
        const nvtxMemRegionRef_t *r =
            (const void *)((const char *)b->refElements + i * b->refElementSize);
        rec("region_unregister %s ptr=%p", dname(d), r->pointer);
    }
}

int InitializeInjectionNvtxExtension(nvtxExtModuleInfo_t *mi) {
    if (!mi || !mi->segmentsCount || mi->moduleId != NVTX_EXT_MODULEID_MEM)
        return 1;
    nvtxExtModuleSegment_t *s = &mi->segments[0];
    intptr_t *f = s->functionSlots;
#define MSLOT(id, fn)                                                                              \
    if ((id) < s->slotCount)                                                                       \
    f[id] = (intptr_t)(fn)
    MSLOT(NVTX3EXT_CBID_nvtxMemHeapRegister, HeapRegister);
    MSLOT(NVTX3EXT_CBID_nvtxMemHeapUnregister, HeapUnregister);
    MSLOT(NVTX3EXT_CBID_nvtxMemHeapReset, HeapReset);
    MSLOT(NVTX3EXT_CBID_nvtxMemRegionsRegister, RegionsRegister);
    MSLOT(NVTX3EXT_CBID_nvtxMemRegionsResize, RegionsResize);
    MSLOT(NVTX3EXT_CBID_nvtxMemRegionsUnregister, RegionsUnregister);
#undef MSLOT
    return 1;
}

/* ---- activity table (collector stand-in) ---- */

static uint64_t a_now(void) {
    static uint64_t t;
    return __atomic_add_fetch(&t, 10, __ATOMIC_RELAXED);
}

static uint32_t a_next_corr(void) {
    return __atomic_add_fetch(&next_corr, 1, __ATOMIC_RELAXED);
}

static uint32_t a_device(const char *name, uint64_t bytes) {
    rec("act_device %s %llu", name, (unsigned long long)bytes);
    return 7;
}

static void a_api(const char *name, uint64_t s, uint64_t e, uint32_t corr, int32_t res) {
    rec("act_api %s corr=%u ok=%d", name, corr, s <= e);
}

static void a_kernel(const char *name, uint32_t dev, uint32_t stream, uint64_t s, uint64_t e,
                     uint32_t corr, const uint32_t g[3], const uint32_t b[3]) {
    rec("act_kernel %s dev=%u stream=%u corr=%u ok=%d", name, dev, stream, corr, s <= e);
}

static void a_memcpy(uint32_t kind, uint32_t sk, uint32_t dk, uint64_t bytes, uint32_t dev,
                     uint32_t stream, uint64_t s, uint64_t e, uint32_t corr, int async) {
    rec("act_memcpy kind=%u src=%u dst=%u bytes=%llu dev=%u corr=%u async=%d", kind, sk, dk,
        (unsigned long long)bytes, dev, corr, async);
}

static void a_memset(uint32_t mk, uint64_t bytes, uint32_t v, uint32_t dev, uint32_t stream,
                     uint64_t s, uint64_t e, uint32_t corr) {
    rec("act_memset bytes=%llu value=%u dev=%u corr=%u", (unsigned long long)bytes, v, dev, corr);
}

static void a_sync(uint32_t type, uint32_t dev, uint32_t stream, uint64_t s, uint64_t e,
                   uint32_t corr) {
    rec("act_sync type=%u dev=%u stream=%u corr=%u", type, dev, stream, corr);
}

static void a_device_mem(int is_alloc, uint64_t addr, uint64_t bytes, uint32_t dev) {
    rec("act_device_mem %s addr=%p bytes=%llu", is_alloc ? "alloc" : "free", (void *)addr,
        (unsigned long long)bytes);
}

static void a_alloc_fail(uint64_t req, uint64_t reserved, uint64_t free_b, uint64_t largest,
                         uint32_t dev) {
    rec("act_alloc_fail requested=%llu reserved=%llu free=%llu largest=%llu",
        (unsigned long long)req, (unsigned long long)reserved, (unsigned long long)free_b,
        (unsigned long long)largest);
}

static const tp_activity_table table = {sizeof(tp_activity_table),
                                        TP_ACTIVITY_TABLE_VERSION,
                                        a_now,
                                        a_next_corr,
                                        a_device,
                                        a_api,
                                        a_kernel,
                                        a_memcpy,
                                        a_memset,
                                        a_sync,
                                        a_device_mem,
                                        a_alloc_fail};

const tp_activity_table *tp_activity_get_table(uint32_t version) {
    return version == TP_ACTIVITY_TABLE_VERSION ? &table : NULL;
}

/* For runs of the real binary: the log goes to $TP_REC_OUT when the process exits. */
__attribute__((destructor)) static void dump_log(void) {
    const char *path = getenv("TP_REC_OUT");
    if (!path || !*path)
        return;
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    pthread_mutex_lock(&mu);
    if (log_buf)
        fputs(log_buf, f);
    pthread_mutex_unlock(&mu);
    fclose(f);
}
