/* test_collector_threads: the collector core in-process, driven through the real NVTX v3
 * headers by static injection, from several threads at once. Built normally it checks exact
 * counts; built with -DTP_SANITIZE=thread it is the collector's TSan test (per-thread state,
 * rings, string cache, domain table, stack interning, start/end ranges across threads).
 * A registered client's tap must see every record the drain writes, in file order. */
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtMem.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "tp_collector.h"
#include "tp_hash.h"
#include "tp_nvtx_hooks.h"
#include "tp_reader.h"
#include "tp_test.h"

/* Static injection: NVTX calls these instead of dlopen'ing NVTX_INJECTION64_PATH. */
NvtxInitializeInjectionNvtxFunc_t InitializeInjectionNvtx2_fnptr = tp_nvtx_init_core;
NvtxExtInitializeInjectionFunc_t InitializeInjectionNvtxExtension_fnptr = tp_nvtx_init_ext;

#define THREADS 4
#define ITERS 2000

static char g_path[256];
static _Atomic nvtxRangeId_t g_ranges[THREADS];
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static int g_done;

/* What the tap saw: each record's type and a hash of its bytes, in the order seen. The tap
 * runs under the writer's drain lock, so these need no lock of their own. */
#define TAP_MAX (THREADS * ITERS * 6)
typedef struct {
    uint16_t type;
    uint64_t hash;
} tapped;
static tapped g_tap[TAP_MAX];
static size_t g_ntap;
static uint64_t g_tap_types[TP_REC_TYPE_LIMIT];

static uint64_t rec_hash(const tp_rec_hdr *r) {
    return tp_hash_bytes(r, r->size, 1);
}

static void tap(void *ctx, const tp_rec_hdr *r) {
    (void)ctx;
    if (r->type < TP_REC_TYPE_LIMIT)
        g_tap_types[r->type]++;
    if (g_ntap < TAP_MAX)
        g_tap[g_ntap++] = (tapped){r->type, rec_hash(r)};
}

/* Every data record of the file, in file order, is among the tapped ones in the same order;
 * per type, the tap saw as many records as the file holds (metadata included). */
static void check_tap(tp_reader *rd) {
    CHECK(g_ntap < TAP_MAX);
    const tp_trace_info *in = tp_reader_info(rd);
    for (int t = 0; t < TP_REC_TYPE_LIMIT; t++)
        CHECK_EQ_U(g_tap_types[t], in->records[t]);
    tp_cursor *c;
    CHECK_OK(tp_cursor_open(rd, NULL, &c));
    size_t at = 0, data = 0;
    int in_order = 1;
    for (const tp_rec_hdr *h; (h = tp_cursor_next(c)) && in_order; data++) {
        uint64_t hh = rec_hash(h);
        while (at < g_ntap && (g_tap[at].type != h->type || g_tap[at].hash != hh))
            at++;
        in_order = at++ < g_ntap;
    }
    tp_cursor_close(c);
    CHECK(in_order);
    CHECK(data > (size_t)THREADS * ITERS * 5);
}

/* Workers never exit: libunwind's per-thread cache destructor crashes under TSan (an
 * uninstrumented library's TSD destructor after TSan tore the thread down). Thread exit is
 * covered by the process-level tests. */
static void park(void) {
    pthread_mutex_lock(&g_mu);
    g_done++;
    pthread_cond_broadcast(&g_cv);
    for (;;)
        pthread_cond_wait(&g_cv, &g_mu);
}

static void *worker(void *arg) {
    int id = (int)(intptr_t)arg;
    char name[16], msg[32];
    snprintf(name, sizeof name, "t%d", id);
    nvtxNameOsThreadA((uint32_t)gettid(), name);
    nvtxDomainHandle_t d = nvtxDomainCreateA("shared-domain");
    snprintf(msg, sizeof msg, "range-%d", id);
    g_ranges[id] = nvtxRangeStartA("cross-thread");
    for (int i = 0; i < ITERS; i++) {
        nvtxRangePushA(msg);      /* per-thread text at a per-thread address */
        nvtxRangePushA("common"); /* one literal, every thread's cache */
        nvtxMarkA("tick");
        nvtxRangePop();
        nvtxRangePop();
    }
    nvtxEventAttributes_t a = {0};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = "in-domain";
    nvtxDomainRangePushEx(d, &a);
    nvtxDomainRangePop(d);
    nvtxMemVirtualRangeDesc_t r = {4096, msg};
    nvtxMemHeapDesc_t h = {0};
    h.extCompatID = NVTX_EXT_COMPATID_MEM;
    h.structSize = sizeof h;
    h.usage = NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR;
    h.type = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
    h.typeSpecificDescSize = sizeof r;
    h.typeSpecificDesc = &r;
    nvtxMemHeapUnregister(d, nvtxMemHeapRegister(d, &h)); /* stacks from every thread */
    nvtxRangeEnd(g_ranges[(id + 1) % THREADS] ? g_ranges[(id + 1) % THREADS] : g_ranges[id]);
    park();
    return NULL;
}

static void test_threads(void) {
    tp_collector_config cfg;
    tp_collector_config_load(&cfg, NULL);
    snprintf(g_path, sizeof g_path, "/tmp/tp-threads-%d.tprof", (int)getpid());
    snprintf(cfg.output, sizeof cfg.output, "%s", g_path);
    cfg.target_pid = getpid();
    cfg.flush_ms = 20; /* drain often, so the drain races the producers */
    tp_collector_client client = {.name = "test-tap", .on_drain = tap};
    CHECK_OK(tp_collector_add_client(&client));
    CHECK_OK(tp_collector_start(&cfg));
    /* NVTX's header fills its function slots with plain stores while other threads read
     * them (its own benign race, not the collector's): initialise it before the threads. */
    nvtxInitialize(NULL);
    nvtxMemRegionsNameBatch_t none = {0}; /* same for the memory extension (names: ignored) */
    none.extCompatID = NVTX_EXT_COMPATID_MEM;
    none.structSize = sizeof none;
    nvtxMemRegionsName(NULL, &none);
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
    for (int i = 0; i < THREADS; i++)
        pthread_detach(th[i]);
    pthread_mutex_lock(&g_mu);
    while (g_done < THREADS)
        pthread_cond_wait(&g_cv, &g_mu);
    pthread_mutex_unlock(&g_mu);
    tp_collector_finish();
    tp_collector_finish(); /* exactly once: the second is a no-op */

    tp_reader *rd;
    CHECK_OK(tp_reader_open(g_path, &rd));
    const tp_trace_info *in = tp_reader_info(rd);
    CHECK_EQ_U(in->records[TP_REC_NVTX_PUSH], THREADS * (2 * ITERS + 1));
    CHECK_EQ_U(in->records[TP_REC_NVTX_POP], THREADS * (2 * ITERS + 1));
    CHECK_EQ_U(in->records[TP_REC_NVTX_MARK], THREADS * ITERS);
    CHECK_EQ_U(in->records[TP_REC_NVTX_START], THREADS);
    CHECK_EQ_U(in->records[TP_REC_HEAP], 2 * THREADS);
    CHECK_EQ_U(in->dropped_total, 0);
    const tp_rec_hdr *const *recs;
    CHECK_EQ_U(tp_reader_meta(rd, TP_REC_DOMAIN, &recs), 1); /* deduplicated by name */
    check_tap(rd);
    tp_reader_close(rd);
    unlink(g_path);
}

int main(void) {
    TP_RUN(test_threads);
    return tp_test_summary();
}
