/* tp_export_sqlite_nsys: a .tprof recording in nsys's SQLite export schema (docs/export.md,
 * "SQLite in nsys's schema").
 *
 * The schema is data: `tables` holds each table as nsys declares it and the columns we fill
 * (the others stay NULL), `enums` the rows of the ENUM_* tables our enum columns refer to.
 * One visitor (traces/tp_visit.h) turns records into rows. Names go through one interner that
 * gives every distinct text one StringIds id for the whole file: nsys's ids are per file,
 * the trace's per process, and shortName is text the trace does not hold. */
#include "tp_export_sqlite_nsys.h"

#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tp_env_keys.h"
#include "tp_hash.h"
#include "tp_demangle.h"
#include "tp_kineto_names.h"
#include "tp_mem.h"
#include "tp_visit.h"

enum {
    N_STRINGS,
    N_THREADS,
    N_PROCESSES,
    N_ANALYSIS,
    N_SESSION,
    N_GPU,
    N_META,
    N_KERNEL,
    N_MEMCPY,
    N_MEMSET,
    N_RUNTIME,
    N_SYNC,
    N_NVTX,
    N_GPU_MEM,
    N_CHAINS,
    N_SYSTEM_ENV,
    N_COUNT
};

/* Columns as nsys 2024.6 (export schema 3.16.1) declares them, except that NOT NULL is
 * dropped where we write NULL (docs/export.md lists those). `fill`: the columns we insert, in
 * the order the handlers bind them. */
static const struct {
    const char *name, *columns, *fill;
} tables[N_COUNT] = {
    [N_STRINGS] = {"StringIds", "id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL",
                   "id, value"},
    [N_THREADS] = {"ThreadNames", "nameId INTEGER NOT NULL, priority INTEGER, globalTid INTEGER",
                   "nameId, globalTid"},
    [N_PROCESSES] = {"PROCESSES", "globalPid INTEGER, pid INTEGER, name TEXT",
                     "globalPid, pid, name"},
    [N_ANALYSIS] = {"ANALYSIS_DETAILS",
                    "globalVid INTEGER NOT NULL, duration INTEGER NOT NULL, "
                    "startTime INTEGER NOT NULL, stopTime INTEGER NOT NULL",
                    "globalVid, duration, startTime, stopTime"},
    [N_SESSION] = {"TARGET_INFO_SESSION_START_TIME",
                   "utcEpochNs INTEGER, utcTime TEXT, localTime TEXT", "utcEpochNs"},
    [N_GPU] = {"TARGET_INFO_GPU",
               "vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT, busLocation TEXT, "
               "isDiscrete INTEGER, l2CacheSize INTEGER, totalMemory INTEGER, "
               "memoryBandwidth INTEGER, clockRate INTEGER, smCount INTEGER, pwGpuId INTEGER, "
               "uuid TEXT, luid INTEGER, chipName TEXT, cuDevice INTEGER, ctxswDevPath TEXT, "
               "ctrlDevPath TEXT, revision INTEGER, nodeMask INTEGER, constantMemory INTEGER, "
               "maxIPC INTEGER, maxRegistersPerBlock INTEGER, maxShmemPerBlock INTEGER, "
               "maxShmemPerBlockOptin INTEGER, maxShmemPerSm INTEGER, maxRegistersPerSm INTEGER, "
               "threadsPerWarp INTEGER, asyncEngines INTEGER, maxWarpsPerSm INTEGER, "
               "maxBlocksPerSm INTEGER, maxThreadsPerBlock INTEGER, maxBlockDimX INTEGER, "
               "maxBlockDimY INTEGER, maxBlockDimZ INTEGER, maxGridDimX INTEGER, "
               "maxGridDimY INTEGER, maxGridDimZ INTEGER, computeMajor INTEGER, "
               "computeMinor INTEGER, smMajor INTEGER, smMinor INTEGER",
               "vmId, id, name, totalMemory, smCount, cuDevice, computeMajor, computeMinor"},
    [N_META] = {"META_DATA_EXPORT", "name TEXT NOT NULL, value TEXT", "name, value"},
    [N_KERNEL] = {"CUPTI_ACTIVITY_KIND_KERNEL",
                  "start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, "
                  "contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, "
                  "correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL, "
                  "shortName INTEGER NOT NULL, mangledName INTEGER, launchType INTEGER, "
                  "cacheConfig INTEGER, registersPerThread INTEGER NOT NULL, "
                  "gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL, "
                  "blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL, "
                  "staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL, "
                  "localMemoryPerThread INTEGER, localMemoryTotal INTEGER, gridId INTEGER, "
                  "sharedMemoryExecuted INTEGER, graphNodeId INTEGER, "
                  "sharedMemoryLimitConfig INTEGER",
                  "start, end, deviceId, contextId, streamId, correlationId, globalPid, "
                  "demangledName, shortName, mangledName, registersPerThread, gridX, gridY, "
                  "gridZ, blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory, "
                  "graphNodeId"},
    [N_MEMCPY] = {"CUPTI_ACTIVITY_KIND_MEMCPY",
                  "start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, "
                  "contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, "
                  "correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL, "
                  "copyKind INTEGER NOT NULL, deprecatedSrcId INTEGER, srcKind INTEGER, "
                  "dstKind INTEGER, srcDeviceId INTEGER, srcContextId INTEGER, "
                  "dstDeviceId INTEGER, dstContextId INTEGER, migrationCause INTEGER, "
                  "graphNodeId INTEGER, virtualAddress INTEGER",
                  "start, end, deviceId, contextId, streamId, correlationId, globalPid, bytes, "
                  "copyKind, srcKind, dstKind, srcDeviceId, dstDeviceId"},
    [N_MEMSET] = {"CUPTI_ACTIVITY_KIND_MEMSET",
                  "start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, "
                  "contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, "
                  "correlationId INTEGER, globalPid INTEGER, value INTEGER NOT NULL, "
                  "bytes INTEGER NOT NULL, graphNodeId INTEGER, memKind INTEGER",
                  "start, end, deviceId, contextId, streamId, correlationId, globalPid, value, "
                  "bytes, memKind"},
    [N_RUNTIME] = {"CUPTI_ACTIVITY_KIND_RUNTIME",
                   "start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL, "
                   "globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, "
                   "returnValue INTEGER NOT NULL, callchainId INTEGER",
                   "start, end, eventClass, globalTid, correlationId, nameId, returnValue, "
                   "callchainId"},
    [N_SYNC] = {"CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
                "start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, "
                "contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, "
                "correlationId INTEGER, globalPid INTEGER, syncType INTEGER NOT NULL, "
                "eventId INTEGER NOT NULL",
                "start, end, deviceId, contextId, streamId, correlationId, globalPid, syncType, "
                "eventId"},
    [N_NVTX] = {"NVTX_EVENTS",
                "start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, "
                "rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, "
                "endGlobalTid INTEGER, textId INTEGER, domainId INTEGER, uint64Value INTEGER, "
                "int64Value INTEGER, doubleValue REAL, uint32Value INTEGER, int32Value INTEGER, "
                "floatValue REAL, jsonTextId INTEGER, jsonText TEXT, binaryData TEXT",
                "start, end, eventType, rangeId, category, color, text, globalTid, "
                "endGlobalTid, textId, domainId, uint64Value, int64Value, doubleValue, "
                "uint32Value, int32Value, floatValue"},
    [N_GPU_MEM] = {"CUDA_GPU_MEMORY_USAGE_EVENTS",
                   "start INTEGER NOT NULL, globalPid INTEGER NOT NULL, deviceId INTEGER NOT NULL, "
                   "contextId INTEGER NOT NULL, address INTEGER NOT NULL, pc INTEGER, "
                   "bytes INTEGER NOT NULL, memKind INTEGER NOT NULL, "
                   "memoryOperationType INTEGER NOT NULL, name TEXT, correlationId INTEGER, "
                   "streamId INTEGER, localMemoryPoolAddress INTEGER, "
                   "localMemoryPoolReleaseThreshold INTEGER, localMemoryPoolSize INTEGER, "
                   "localMemoryPoolUtilizedSize INTEGER, importedMemoryPoolAddress INTEGER, "
                   "importedMemoryPoolProcessId INTEGER",
                   "start, globalPid, deviceId, contextId, address, bytes, memKind, "
                   "memoryOperationType, correlationId, streamId"},
    [N_CHAINS] = {"CUDA_CALLCHAINS",
                  "id INTEGER NOT NULL, symbol INTEGER NOT NULL, module INTEGER NOT NULL, "
                  "unresolved INTEGER, originalIP INTEGER, stackDepth INTEGER NOT NULL, "
                  "PRIMARY KEY (id, stackDepth)",
                  "id, symbol, module, unresolved, originalIP, stackDepth"},
    [N_SYSTEM_ENV] = {"TARGET_INFO_SYSTEM_ENV",
                      "globalVid INTEGER, devStateName TEXT, name TEXT NOT NULL, "
                      "nameEnum INTEGER, value TEXT NOT NULL",
                      "globalVid, name, value"},
};

/* nsys's event types and classes we write (ENUM_NSYS_EVENT_TYPE, ENUM_NSYS_EVENT_CLASS). */
enum { EV_NVTX_CATEGORY = 33, EV_NVTX_MARK = 34, EV_NVTX_PUSHPOP = 59, EV_NVTX_STARTEND = 60 };
enum { EV_NVTX_DOMAIN = 75, CLASS_CUDA_RUNTIME = 0, CLASS_CUDA_DRIVER = 1 };
#define MEM_KIND_UNKNOWN 7 /* ENUM_CUDA_MEM_KIND's "Unknown" */

typedef struct {
    int id;
    const char *name, *label;
} enum_row;

/* The ENUM_* tables of the enum columns we fill, each whole as nsys writes it (the event
 * types: those of the rows we write). Values are nsys's, which for copy kinds and sync types
 * are CUPTI's; memory kinds are CUPTI's minus one, with Unknown last (mem_kind()). */
static const enum_row memcpy_oper[] = {
    {0, "CUDA_MEMCPY_KIND_UNKNOWN", "Unknown"},
    {1, "CUDA_MEMCPY_KIND_HTOD", "Host-to-Device"},
    {2, "CUDA_MEMCPY_KIND_DTOH", "Device-to-Host"},
    {3, "CUDA_MEMCPY_KIND_HTOA", "Host-to-Array"},
    {4, "CUDA_MEMCPY_KIND_ATOH", "Array-to-Host"},
    {5, "CUDA_MEMCPY_KIND_ATOA", "Array-to-Array"},
    {6, "CUDA_MEMCPY_KIND_ATOD", "Array-to-Device"},
    {7, "CUDA_MEMCPY_KIND_DTOA", "Device-to-Array"},
    {8, "CUDA_MEMCPY_KIND_DTOD", "Device-to-Device"},
    {9, "CUDA_MEMCPY_KIND_HTOH", "Host-to-Host"},
    {10, "CUDA_MEMCPY_KIND_PTOP", "Peer-to-Peer"},
    {11, "CUDA_MEMCPY_KIND_UVM_HTOD", "Unified Host-to-Device"},
    {12, "CUDA_MEMCPY_KIND_UVM_DTOH", "Unified Device-to-Host"},
    {13, "CUDA_MEMCPY_KIND_UVM_DTOD", "Unified Device-to-Device"},
    {-1, NULL, NULL}};
static const enum_row mem_kinds[] = {
    {0, "CUDA_MEMOPR_MEMORY_KIND_PAGEABLE", "Pageable"},
    {1, "CUDA_MEMOPR_MEMORY_KIND_PINNED", "Pinned"},
    {2, "CUDA_MEMOPR_MEMORY_KIND_DEVICE", "Device"},
    {3, "CUDA_MEMOPR_MEMORY_KIND_ARRAY", "Array"},
    {4, "CUDA_MEMOPR_MEMORY_KIND_MANAGED", "Managed"},
    {5, "CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC", "Device Static"},
    {6, "CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC", "Managed Static"},
    {MEM_KIND_UNKNOWN, "CUDA_MEMOPR_MEMORY_KIND_UNKNOWN", "Unknown"},
    {-1, NULL, NULL}};
static const enum_row sync_types[] = {
    {0, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN", "Unknown"},
    {1, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE", "Event sync"},
    {2, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT", "Stream wait sync"},
    {3, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE", "Stream sync"},
    {4, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE", "Context sync"},
    {-1, NULL, NULL}};
static const enum_row event_types[] = {{EV_NVTX_CATEGORY, "NvtxCategory", "NvtxCategory"},
                                       {EV_NVTX_MARK, "NvtxMark", "NvtxMark"},
                                       {EV_NVTX_PUSHPOP, "NvtxPushPopRange", "NvtxPushPopRange"},
                                       {EV_NVTX_STARTEND, "NvtxStartEndRange", "NvtxStartEndRange"},
                                       {EV_NVTX_DOMAIN, "NvtxDomainCreate", "NvtxDomainCreate"},
                                       {-1, NULL, NULL}};
static const enum_row event_classes[] = {
    {CLASS_CUDA_RUNTIME, "TRACE_PROCESS_EVENT_CUDA_RUNTIME", "CUDA runtime"},
    {CLASS_CUDA_DRIVER, "TRACE_PROCESS_EVENT_CUDA_DRIVER", "CUDA driver"},
    {-1, NULL, NULL}};
static const enum_row dev_mem_ops[] = {{0, "CUDA_DEV_MEM_EVENT_OPR_ALLOCATION", "Allocation"},
                                       {1, "CUDA_DEV_MEM_EVENT_OPR_DEALLOCATION", "Deallocation"},
                                       {-1, NULL, NULL}};

/* The GPU facts of ENV records (traces/tp_env_keys.h) that have a TARGET_INFO_GPU column:
 * the value as text, or as an integer times `scale`. */
static const struct {
    tp_env_key key;
    const char *column;
    int64_t scale; /* 0: text */
} gpu_facts[] = {
    {TP_ENVK_GPU_PCI, "busLocation", 0}, {TP_ENVK_GPU_CLOCK, "clockRate", 1000000}, /* MHz -> Hz */
};
#define N_GPU_FACTS (sizeof gpu_facts / sizeof gpu_facts[0])

/* Process facts under nsys's TARGET_INFO_SYSTEM_ENV names where we know them (nsys-recipes
 * read `name = 'Hostname'`); the other facts keep trainprof's key (docs/export.md). */
static const struct {
    tp_env_key key;
    const char *name;
} system_names[] = {
    {TP_ENVK_HOST, "Hostname"},
    {TP_ENVK_CPU_CORES, "CpuCores"},
};

static const struct {
    const char *table;
    const enum_row *rows;
} enums[] = {
    {"ENUM_CUDA_MEMCPY_OPER", memcpy_oper},   {"ENUM_CUDA_MEM_KIND", mem_kinds},
    {"ENUM_CUPTI_SYNC_TYPE", sync_types},     {"ENUM_NSYS_EVENT_TYPE", event_types},
    {"ENUM_NSYS_EVENT_CLASS", event_classes}, {"ENUM_CUDA_DEV_MEM_EVENT_OPER", dev_mem_ops},
};

/* One bound value. */
typedef struct {
    char t; /* 'i' int, 'd' double, 's' text, 'n' NULL */
    int64_t i;
    double d;
    const char *s;
} val;

#define VI(x) ((val){'i', (int64_t)(x), 0, NULL})
#define VD(x) ((val){'d', 0, (double)(x), NULL})
#define VS(x) ((val){(x) ? 's' : 'n', 0, 0, (x)})
#define VN ((val){'n', 0, 0, NULL})

/* Every distinct text once: open addressing over ids, text[id] owning a copy. */
typedef struct {
    uint32_t *slot; /* 0: empty, else the string's id */
    size_t cap;     /* power of two */
    char **text;    /* by id; text[0] unused */
    size_t n, text_cap;
} interner;

/* An NVTX domain's or category's name, written once the process's first time is known. */
typedef struct {
    int is_domain;
    uint32_t domain, category, name_sid;
} late_name;

typedef struct {
    tp_reader *r;
    sqlite3 *db;
    sqlite3_stmt *ins[N_COUNT];
    interner strings;
    uint32_t *gid, *short_gid, *dem_gid; /* this process's string id -> StringIds id (0: not
                                            yet): the string, its shortName, demangled */
    size_t gid_cap, short_cap, dem_cap;
    uint32_t *chain; /* this process's stack id -> CUDA_CALLCHAINS id (0: not yet) */
    size_t chain_cap;
    uint32_t n_chains;
    const tp_export_sqlite_opts *o; /* the frames' symbolizer */
    int failed;
    char err[256];
    uint64_t rows;
    uint32_t pid;             /* the process being exported */
    uint64_t corr_hi;         /* its correlation offset: process index << 32 */
    uint64_t t_first, t_last; /* this process's first and last times (unclosed ranges end) */
    uint64_t all_first, all_last;
    int have_session;
    sqlite3_stmt *gpu_fact[N_GPU_FACTS]; /* UPDATE TARGET_INFO_GPU SET column */
    uint32_t *gpus;                      /* device ids already in TARGET_INFO_GPU */
    size_t n_gpus, gpus_cap;
    late_name *late; /* DOMAIN / CATEGORY names: rows once t_first is known */
    size_t n_late, late_cap;
} nctx;

static void fail(nctx *c, const char *what) {
    if (!c->failed)
        snprintf(c->err, sizeof c->err, "%s: %s", what,
                 c->db ? sqlite3_errmsg(c->db) : "out of memory");
    c->failed = 1;
}

static void nomem(nctx *c) {
    if (!c->failed)
        snprintf(c->err, sizeof c->err, "out of memory");
    c->failed = 1;
}

static void insert(nctx *c, int table, const val *v, int n) {
    sqlite3_stmt *st = c->ins[table];
    if (c->failed)
        return;
    for (int i = 0; i < n; i++) {
        if (v[i].t == 'i')
            sqlite3_bind_int64(st, i + 1, v[i].i);
        else if (v[i].t == 'd')
            sqlite3_bind_double(st, i + 1, v[i].d);
        else if (v[i].t == 's')
            sqlite3_bind_text(st, i + 1, v[i].s, -1, SQLITE_TRANSIENT);
        else
            sqlite3_bind_null(st, i + 1);
    }
    if (sqlite3_step(st) != SQLITE_DONE)
        fail(c, tables[table].name);
    sqlite3_reset(st);
    c->rows++;
}

#define INSERT(c, t, ...)                                                                          \
    do {                                                                                           \
        const val v_[] = {__VA_ARGS__};                                                            \
        insert((c), (t), v_, (int)(sizeof v_ / sizeof v_[0]));                                     \
    } while (0)

/* ---------------------------------------------------------------- strings */

static int rehash(interner *in) {
    size_t cap = in->cap ? in->cap * 2 : 1024;
    uint32_t *slot = tp_mem_calloc(cap, sizeof *slot);
    if (!slot)
        return 0;
    for (size_t id = 1; id <= in->n; id++) {
        size_t i = tp_hash_bytes(in->text[id], strlen(in->text[id]), 0) & (cap - 1);
        while (slot[i])
            i = (i + 1) & (cap - 1);
        slot[i] = (uint32_t)id;
    }
    free(in->slot);
    in->slot = slot, in->cap = cap;
    return 1;
}

/* The StringIds id of text `s` (NULL: ""), inserting the row the first time. 0 on failure. */
static uint32_t intern(nctx *c, const char *s) {
    interner *in = &c->strings;
    if (!s)
        s = "";
    if ((in->n + 1) * 2 > in->cap && !rehash(in)) {
        nomem(c);
        return 0;
    }
    size_t i = tp_hash_bytes(s, strlen(s), 0) & (in->cap - 1);
    for (; in->slot[i]; i = (i + 1) & (in->cap - 1))
        if (!strcmp(in->text[in->slot[i]], s))
            return in->slot[i];
    uint32_t id = (uint32_t)in->n + 1;
    char *copy = strdup(s);
    if (!copy || !TP_MEM_GROW(in->text, in->text_cap, (size_t)id + 1)) {
        free(copy);
        nomem(c);
        return 0;
    }
    in->text[id] = copy;
    in->slot[i] = id;
    in->n = id;
    INSERT(c, N_STRINGS, VI(id), VS(copy));
    return id;
}

/* Makes the per-process cache *a (indexed by the trace's string id) hold `sid`. */
static int cache_room(nctx *c, uint32_t **a, size_t *cap, uint32_t sid) {
    size_t old = *cap;
    if (sid < old)
        return 1;
    if (!tp_mem_grow((void **)a, cap, (size_t)sid + 1, sizeof **a)) {
        nomem(c);
        return 0;
    }
    memset(*a + old, 0, (*cap - old) * sizeof **a);
    return 1;
}

/* The StringIds id of this process's string `sid` (an unknown id reads as "", and is not
 * cached: the caches grow to the largest id the trace holds, never to a damaged one). */
static uint32_t gid_of(nctx *c, uint32_t sid) {
    const char *s = sid ? tp_reader_string(c->r, sid) : NULL;
    if (!s)
        return intern(c, NULL);
    if (!cache_room(c, &c->gid, &c->gid_cap, sid))
        return 0;
    if (!c->gid[sid])
        c->gid[sid] = intern(c, s);
    return c->gid[sid];
}

/* The StringIds id of kernel name `sid` demangled (tp_demangle; the name itself when
 * it is not a mangled one), as nsys's demangledName holds it. */
static uint32_t demangled_of(nctx *c, uint32_t sid) {
    const char *s = sid ? tp_reader_string(c->r, sid) : NULL;
    char *d = tp_demangle(s);
    if (!d)
        return gid_of(c, sid);
    if (!cache_room(c, &c->dem_gid, &c->dem_cap, sid)) {
        free(d);
        return 0;
    }
    if (!c->dem_gid[sid])
        c->dem_gid[sid] = intern(c, d);
    free(d);
    return c->dem_gid[sid];
}

/* The StringIds id of the shortName of kernel name `sid`. */
static uint32_t short_of(nctx *c, uint32_t sid) {
    const char *s = sid ? tp_reader_string(c->r, sid) : NULL;
    if (!s)
        return intern(c, NULL);
    if (!cache_room(c, &c->short_gid, &c->short_cap, sid))
        return 0;
    if (!c->short_gid[sid]) {
        char buf[1024];
        tp_export_nsys_short_name(s, buf, sizeof buf);
        c->short_gid[sid] = intern(c, buf);
    }
    return c->short_gid[sid];
}

/* ---------------------------------------------------------------- short names */

/* Past the template arguments at `p` ('I' ... 'E', nested), or NULL when cut short. Source
 * names inside are skipped by their length, so their letters never count as I, N, X, L, E. */
static const char *skip_template(const char *p) {
    int depth = 0;
    while (*p) {
        if (*p >= '0' && *p <= '9') {
            char *e;
            unsigned long len = strtoul(p, &e, 10);
            if (memchr(e, 0, len))
                return NULL;
            p = e + len;
            continue;
        }
        if (strchr("INXL", *p))
            depth++;
        else if (*p == 'E' && --depth == 0)
            return p + 1;
        p++;
    }
    return NULL;
}

/* The last source name of a mangled name after its "_Z" ("_ZN2ns4gemmIfEEvPfi" -> gemm):
 * the nested name's last component (scopes' template arguments skipped), or the plain
 * name's. */
static size_t short_mangled(const char *p, const char **out) {
    const char *best = NULL;
    size_t best_len = 0;
    int nested = *p == 'N';
    if (nested)
        for (p++; *p == 'r' || *p == 'V' || *p == 'K';)
            p++;
    for (;;) {
        if (p[0] == 'S' && p[1] == 't') {
            p += 2;
            continue;
        }
        if (nested && *p == 'I' && best) {
            if (!(p = skip_template(p)))
                return 0;
            continue;
        }
        if (*p < '0' || *p > '9')
            break;
        char *e;
        unsigned long len = strtoul(p, &e, 10);
        if (!len || memchr(e, 0, len))
            return 0;
        best = e, best_len = len;
        p = e + len;
        if (!nested)
            break;
    }
    *out = best;
    return best_len;
}

/* The base name of a demangled or plain name: before its parameters, without a trailing
 * template argument list, after its last scope or return type. */
static size_t short_plain(const char *s, const char **out) {
    size_t n = strlen(s), end = n, stop, start = 0;
    int depth = 0;
    for (size_t i = 0; i < n && end == n; i++) {
        if (s[i] == '<')
            depth++;
        else if (s[i] == '>' && depth > 0)
            depth--;
        else if (s[i] == '(' && !depth && strncmp(s + i, "(anonymous namespace)", 21) != 0)
            end = i;
    }
    stop = end;
    if (stop > 0 && s[stop - 1] == '>') {
        int d = 0;
        size_t i = stop;
        while (i-- > 0)
            if (s[i] == '>')
                d++;
            else if (s[i] == '<' && --d == 0)
                break;
        if (!d && i < stop)
            stop = i;
    }
    depth = 0;
    for (size_t i = 0; i < stop; i++) {
        if (s[i] == '<')
            depth++;
        else if (s[i] == '>' && depth > 0)
            depth--;
        else if (!depth && (s[i] == ':' || s[i] == ' '))
            start = i + 1;
    }
    *out = s + start;
    return start < stop ? stop - start : 0;
}

size_t tp_export_nsys_short_name(const char *name, char *out, size_t out_size) {
    const char *p = NULL;
    size_t len = 0;
    if (!out_size)
        return 0;
    if (!name)
        name = "";
    if (!strncmp(name, "_Z", 2))
        len = short_mangled(name + 2, &p);
    else
        len = short_plain(name, &p);
    if (!len)
        p = name, len = strlen(name);
    if (len > out_size - 1)
        len = out_size - 1;
    memcpy(out, p, len);
    out[len] = 0;
    return len;
}

/* ---------------------------------------------------------------- rows */

static int64_t global_pid(uint32_t pid) {
    return (int64_t)pid << 24;
}

/* nsys's serialized thread id: pid in bits 24-47, tid in bits 0-23. */
static val global_tid(uint32_t pid, uint32_t tid) {
    return VI(global_pid(pid) | (tid & 0xffffffu));
}

/* A correlation id, offset by the process's index (NULL for none). */
static val corr(const nctx *c, uint32_t id) {
    return id ? VI(c->corr_hi | id) : VN;
}

/* ENUM_CUDA_MEM_KIND: CUPTI's memory kinds (ours) less one, Unknown (CUPTI's 0) last. */
static int mem_kind(uint8_t k) {
    return k >= 1 && k <= 7 ? k - 1 : MEM_KIND_UNKNOWN;
}

static tp_status ok(const nctx *c) {
    return c->failed ? TP_ERR_IO : TP_OK;
}

/* One frame of a call chain: a native frame named by the symbolizer (the innermost function
 * inlined at the address) or by its address when it cannot be (unresolved 1); a Python
 * frame as "function (file.py:LINE)" in the module of its file. */
static void chain_frame(nctx *c, uint32_t id, uint32_t depth, uint64_t f) {
    char buf[512];
    if (TP_FRAME_IS_PYTHON(f)) {
        const tp_rec_pycode *py = tp_reader_pycode(c->r, TP_FRAME_PY_CODE(f));
        const char *fn = py ? tp_reader_string(c->r, py->name_sid) : NULL;
        const char *file = py ? tp_reader_string(c->r, py->file_sid) : NULL;
        snprintf(buf, sizeof buf, "%s (%s:%u)", fn ? fn : "?", file ? file : "?",
                 (unsigned)TP_FRAME_PY_LINE(f));
        INSERT(c, N_CHAINS, VI(id), VI(intern(c, buf)), VI(intern(c, file)), VI(!fn), VN,
               VI(depth));
        return;
    }
    uint32_t mod = TP_FRAME_MODULE(f);
    uint64_t off = TP_FRAME_OFFSET(f);
    const tp_rec_module *m = mod == TP_FRAME_NO_MODULE ? NULL : tp_reader_module(c->r, mod);
    const char *path = m ? tp_reader_string(c->r, m->path_sid) : NULL, *why = NULL;
    tp_export_frame fr[TP_EXPORT_MAX_INLINE];
    size_t n = 0;
    uint64_t ip = m ? m->load_bias + off : off; /* the runtime address, as nsys's originalIP */
    if (m && path && c->o && c->o->symbolize)
        n = c->o->symbolize(c->o->ctx, path, m->build_id,
                            m->build_id_len < 32 ? m->build_id_len : 32, off, fr,
                            TP_EXPORT_MAX_INLINE, &why);
    snprintf(buf, sizeof buf, "0x%" PRIx64, ip);
    INSERT(c, N_CHAINS, VI(id), VI(intern(c, n ? fr[0].func : buf)), VI(intern(c, path)), VI(!n),
           VI(ip), VI(depth));
}

/* The CUDA_CALLCHAINS id of this process's stack `stack`, its rows written the first time;
 * NULL for no stack. Depth 0 is the innermost frame, as in nsys. */
static val chain_of(nctx *c, uint32_t stack) {
    uint32_t nf = 0;
    const uint64_t *f = stack ? tp_reader_stack(c->r, stack, &nf) : NULL;
    if (!f || !nf || !cache_room(c, &c->chain, &c->chain_cap, stack))
        return VN; /* no stack, or one the trace does not hold */
    if (!c->chain[stack]) {
        c->chain[stack] = ++c->n_chains;
        for (uint32_t d = 0; d < nf; d++)
            chain_frame(c, c->chain[stack], d, f[d]);
    }
    return VI(c->chain[stack]);
}

static tp_status on_kernel(void *cx, const tp_rec_hdr *h) {
    nctx *c = cx;
    const tp_rec_kernel *k = (const void *)h;
    uint32_t name = gid_of(c, k->name_sid);
    const char *text = tp_reader_string(c->r, k->name_sid);
    INSERT(c, N_KERNEL, VI(k->ts), VI(k->end), VI(k->device), VI(k->context), VI(k->stream),
           corr(c, k->correlation), VI(global_pid(c->pid)), VI(demangled_of(c, k->name_sid)),
           VI(short_of(c, k->name_sid)), text && !strncmp(text, "_Z", 2) ? VI(name) : VN,
           VI(k->registers_per_thread), VI(k->grid_x), VI(k->grid_y), VI(k->grid_z), VI(k->block_x),
           VI(k->block_y), VI(k->block_z), VI(k->static_shared_bytes), VI(k->dynamic_shared_bytes),
           k->graph_node_id ? VI(k->graph_node_id) : VN);
    return ok(c);
}

static tp_status on_memcpy(void *cx, const tp_rec_hdr *h) {
    nctx *c = cx;
    const tp_rec_memcpy *m = (const void *)h;
    INSERT(c, N_MEMCPY, VI(m->ts), VI(m->end), VI(m->device), VI(m->context), VI(m->stream),
           corr(c, m->correlation), VI(global_pid(c->pid)), VI(m->bytes), VI(m->copy_kind),
           VI(mem_kind(m->src_kind)), VI(mem_kind(m->dst_kind)), VI(m->src_device),
           VI(m->dst_device));
    return ok(c);
}

static tp_status on_memset(void *cx, const tp_rec_hdr *h) {
    nctx *c = cx;
    const tp_rec_memset *m = (const void *)h;
    INSERT(c, N_MEMSET, VI(m->ts), VI(m->end), VI(m->device), VI(m->context), VI(m->stream),
           corr(c, m->correlation), VI(global_pid(c->pid)), VI(m->value), VI(m->bytes),
           VI(mem_kind(m->mem_kind)));
    return ok(c);
}

/* Runtime and driver calls share nsys's RUNTIME table, told apart by eventClass; calls of a
 * device API (trainprof/activity.h) count as runtime calls. */
static tp_status on_api(void *cx, const tp_rec_hdr *h) {
    nctx *c = cx;
    const tp_rec_api *a = (const void *)h;
    int cls =
        (h->flags & TP_RF_TYPE_MASK) == TP_API_DRIVER ? CLASS_CUDA_DRIVER : CLASS_CUDA_RUNTIME;
    INSERT(c, N_RUNTIME, VI(a->ts), VI(a->end), VI(cls), global_tid(c->pid, a->tid),
           corr(c, a->correlation), VI(gid_of(c, a->name_sid)), VI(a->result),
           chain_of(c, a->stack_id));
    return ok(c);
}

static tp_status on_sync(void *cx, const tp_rec_hdr *h) {
    nctx *c = cx;
    const tp_rec_sync *s = (const void *)h;
    INSERT(c, N_SYNC, VI(s->ts), VI(s->end), VI(s->device), VI(s->context),
           s->stream == 0xffffffffu ? VI(-1) : VI(s->stream), corr(c, s->correlation),
           VI(global_pid(c->pid)), VI(s->type), VI(s->event));
    return ok(c);
}

static tp_status on_device_mem(void *cx, const tp_rec_hdr *h) {
    nctx *c = cx;
    const tp_rec_device_mem *d = (const void *)h;
    INSERT(c, N_GPU_MEM, VI(d->ts), VI(global_pid(c->pid)), VI(d->device), VI(d->context),
           VI(d->address), VI(d->bytes), VI(mem_kind(d->mem_kind)),
           VI(d->op == TP_MEMOP_FREE ? 1 : 0), corr(c, d->correlation), VI(d->stream));
    return ok(c);
}

/* One NVTX_EVENTS row. */
typedef struct {
    int type;
    uint64_t start;
    val end, range_id, color, end_tid;
    uint32_t category, sid, tid, domain;
    uint32_t payload_type;
    uint64_t payload;
} nvtx_row;

/* The text goes into both `text` and `textId`: SQL written for nsys reads either (or
 * COALESCE(text, value)), depending on whether the program registered its strings. */
static void write_nvtx(nctx *c, const nvtx_row *n) {
    val v[17] = {VI(n->start),
                 n->end,
                 VI(n->type),
                 n->range_id,
                 VI(n->category),
                 n->color,
                 VS(n->sid ? tp_reader_string(c->r, n->sid) : NULL),
                 global_tid(c->pid, n->tid),
                 n->end_tid,
                 n->sid ? VI(gid_of(c, n->sid)) : VN,
                 VI(n->domain),
                 VN,
                 VN,
                 VN,
                 VN,
                 VN,
                 VN};
    double d;
    float f;
    uint32_t lo = (uint32_t)n->payload;
    switch (n->payload_type) {
    case TP_PAYLOAD_U64:
        v[11] = VI(n->payload);
        break;
    case TP_PAYLOAD_I64:
        v[12] = VI((int64_t)n->payload);
        break;
    case TP_PAYLOAD_F64:
        memcpy(&d, &n->payload, sizeof d);
        v[13] = VD(d);
        break;
    case TP_PAYLOAD_U32:
        v[14] = VI(lo);
        break;
    case TP_PAYLOAD_I32:
        v[15] = VI((int32_t)lo);
        break;
    case TP_PAYLOAD_F32:
        memcpy(&f, &lo, sizeof f);
        v[16] = VD(f);
        break;
    }
    insert(c, N_NVTX, v, 17);
}

static tp_status on_mark(void *cx, const tp_rec_hdr *h) {
    nctx *c = cx;
    const tp_rec_nvtx *m = (const void *)h;
    nvtx_row n = {EV_NVTX_MARK,
                  m->ts,
                  VN,
                  VN,
                  (h->flags & TP_NVTX_HAS_COLOR) ? VI(m->color) : VN,
                  VN,
                  m->category,
                  m->msg_sid,
                  m->tid,
                  m->domain,
                  m->payload_type,
                  m->payload};
    write_nvtx(c, &n);
    return ok(c);
}

static void write_range(nctx *c, const tp_visit_range *r, val end_tid) {
    const tp_open_range *o = &r->open;
    int start_end = o->opened_by == TP_REC_NVTX_START;
    nvtx_row n = {start_end ? EV_NVTX_STARTEND : EV_NVTX_PUSHPOP,
                  o->ts,
                  VI(r->closed ? r->end : c->t_last),
                  start_end ? VI(o->key) : VN,
                  o->color ? VI(o->color) : VN,
                  end_tid,
                  o->category,
                  o->msg_sid,
                  o->tid,
                  o->domain,
                  TP_PAYLOAD_NONE,
                  0};
    write_nvtx(c, &n);
}

/* An NVTX range, paired by the visitor as the model's loader pairs them; one never closed
 * ends where the process's last record does. A closed start/end range says the thread it
 * ended on (endGlobalTid). */
static tp_status on_range(void *cx, const tp_visit_range *r) {
    nctx *c = cx;
    int ended = r->open.opened_by == TP_REC_NVTX_START && r->closed;
    write_range(c, r, ended ? global_tid(c->pid, r->end_tid) : VN);
    return ok(c);
}

/* The span of the data records (clock syncs bracket the run and are left out). */
static tp_status note_times(void *cx, const tp_rec_hdr *h) {
    nctx *c = cx;
    if (h->type == TP_REC_CLOCK_SYNC || !(h->flags & TP_RF_TIMED))
        return TP_OK;
    uint64_t ts = tp_record_ts(h), end = tp_record_end(h);
    if (ts < c->t_first)
        c->t_first = ts;
    if (end > c->t_last)
        c->t_last = end;
    return TP_OK;
}

/* ---------------------------------------------------------------- metadata */

static tp_status on_process(void *cx, const tp_rec_hdr *h) {
    nctx *c = cx;
    const tp_rec_process *p = (const void *)h;
    const char *exe = tp_reader_string(c->r, p->exe_sid), *slash = exe ? strrchr(exe, '/') : NULL;
    INSERT(c, N_PROCESSES, VI(global_pid(p->pid)), VI(p->pid), VS(slash ? slash + 1 : exe));
    return ok(c);
}

/* One ThreadNames row per named thread, with its latest name. */
static tp_status on_thread(void *cx, const tp_visit_thread *t) {
    nctx *c = cx;
    if (t->last && t->name)
        INSERT(c, N_THREADS, VI(intern(c, t->name)),
               global_tid(t->rec->pid ? t->rec->pid : c->pid, t->rec->tid));
    return ok(c);
}

/* Devices once each, whichever process's trace names them first. */
static tp_status on_device(void *cx, const tp_rec_hdr *h) {
    nctx *c = cx;
    const tp_rec_device *d = (const void *)h;
    for (size_t i = 0; i < c->n_gpus; i++)
        if (c->gpus[i] == d->id)
            return ok(c);
    if (!TP_MEM_GROW(c->gpus, c->gpus_cap, c->n_gpus + 1)) {
        nomem(c);
        return ok(c);
    }
    c->gpus[c->n_gpus++] = d->id;
    int cc = d->kind == TP_DEVICE_GPU && d->compute_capability;
    INSERT(c, N_GPU, VI(0), VI(d->id), VS(tp_reader_string(c->r, d->name_sid)),
           VI(d->global_memory_bytes), VI(d->sm_count), VI(d->id),
           cc ? VI(d->compute_capability / 10) : VN, cc ? VI(d->compute_capability % 10) : VN);
    return ok(c);
}

/* An ENV record: a GPU fact into its device's TARGET_INFO_GPU row (ENV records come after
 * DEVICE ones), a process fact into TARGET_INFO_SYSTEM_ENV; the latest record of a key wins,
 * as everywhere. */
static tp_status on_env(void *cx, const tp_rec_hdr *h) {
    nctx *c = cx;
    const tp_rec_env *e = (const void *)h;
    const char *key = tp_reader_string(c->r, e->key_sid), *value;
    if (!key || tp_env_superseded(c->r, h) || !(value = tp_reader_string(c->r, e->value_sid)))
        return ok(c);
    if (e->device == TP_ENV_PROCESS) {
        if (c->corr_hi) /* the recording's first process speaks for the machine */
            return ok(c);
        const char *name = key;
        for (size_t i = 0; i < sizeof system_names / sizeof system_names[0]; i++)
            if (!strcmp(key, tp_env_key_str(system_names[i].key)))
                name = system_names[i].name;
        INSERT(c, N_SYSTEM_ENV, VI(0), VS(name), VS(value));
        return ok(c);
    }
    for (size_t i = 0; i < N_GPU_FACTS && !c->failed; i++) {
        sqlite3_stmt *st = c->gpu_fact[i];
        if (strcmp(key, tp_env_key_str(gpu_facts[i].key)) != 0)
            continue;
        if (gpu_facts[i].scale)
            sqlite3_bind_int64(st, 1, strtoll(value, NULL, 10) * gpu_facts[i].scale);
        else
            sqlite3_bind_text(st, 1, value, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 2, e->device);
        if (sqlite3_step(st) != SQLITE_DONE)
            fail(c, "TARGET_INFO_GPU");
        sqlite3_reset(st);
    }
    return ok(c);
}

/* nsys's session start: the wall clock at trace-clock 0, so utcEpochNs + start is an
 * event's wall-clock time (as the Chrome export's baseTimeNanoseconds). First trace only. */
static tp_status on_clock_sync(void *cx, const tp_rec_hdr *h) {
    nctx *c = cx;
    const tp_rec_clock_sync *s = (const void *)h;
    if (!c->have_session && s->realtime_ns) {
        INSERT(c, N_SESSION, VI((int64_t)(s->realtime_ns - s->ts)));
        c->have_session = 1;
    }
    return ok(c);
}

/* Domain and category names become NVTX_EVENTS rows (NvtxDomainCreate, NvtxCategory) dated
 * at the process's first record, once the data walk has found it: kept until then. */
static tp_status on_late(void *cx, const tp_rec_hdr *h) {
    nctx *c = cx;
    if (h->type == TP_REC_DOMAIN && (h->flags & 1u))
        return ok(c); /* the domain's destruction (flags bit 0): one creation row is enough */
    if (!TP_MEM_GROW(c->late, c->late_cap, c->n_late + 1)) {
        nomem(c);
        return ok(c);
    }
    late_name *l = &c->late[c->n_late++];
    if (h->type == TP_REC_DOMAIN) {
        const tp_rec_domain *d = (const void *)h;
        for (size_t i = 0; i + 1 < c->n_late; i++)
            if (c->late[i].is_domain && c->late[i].domain == d->id) {
                c->n_late--; /* named again: the first name stays */
                return ok(c);
            }
        *l = (late_name){1, d->id, 0, d->name_sid};
    } else {
        const tp_rec_category *k = (const void *)h;
        *l = (late_name){0, k->domain, k->category, k->name_sid};
    }
    return ok(c);
}

static void write_late(nctx *c) {
    for (size_t i = 0; i < c->n_late; i++) {
        const late_name *l = &c->late[i];
        nvtx_row n = {l->is_domain ? EV_NVTX_DOMAIN : EV_NVTX_CATEGORY,
                      c->t_first,
                      VN,
                      VN,
                      VN,
                      VN,
                      l->category,
                      l->name_sid,
                      0,
                      l->domain,
                      TP_PAYLOAD_NONE,
                      0};
        write_nvtx(c, &n);
    }
    c->n_late = 0;
}

static const tp_visitor exporter = {
    .meta =
        {
            [TP_REC_PROCESS] = on_process,
            [TP_REC_DOMAIN] = on_late,
            [TP_REC_CATEGORY] = on_late,
            [TP_REC_DEVICE] = on_device,
            [TP_REC_ENV] = on_env,
            [TP_REC_CLOCK_SYNC] = on_clock_sync,
        },
    .thread = on_thread,
    .each = note_times,
    .data =
        {
            [TP_REC_KERNEL] = on_kernel,
            [TP_REC_MEMCPY] = on_memcpy,
            [TP_REC_MEMSET] = on_memset,
            [TP_REC_SYNC] = on_sync,
            [TP_REC_API] = on_api,
            [TP_REC_NVTX_MARK] = on_mark,
            [TP_REC_DEVICE_MEM] = on_device_mem,
        },
    .range = on_range,
};

/* ---------------------------------------------------------------- database */

/* Runs `sql`; on failure says `what` failed. */
static int exec(nctx *c, const char *sql, const char *what) {
    if (sqlite3_exec(c->db, sql, NULL, NULL, NULL) != SQLITE_OK) {
        fail(c, what);
        return 0;
    }
    return 1;
}

static int create_enums(nctx *c) {
    char sql[256];
    for (size_t e = 0; e < sizeof enums / sizeof enums[0]; e++) {
        sqlite3_stmt *st = NULL;
        snprintf(sql, sizeof sql,
                 "CREATE TABLE %s (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);",
                 enums[e].table);
        if (!exec(c, sql, "schema"))
            return 0;
        snprintf(sql, sizeof sql, "INSERT INTO %s VALUES (?,?,?)", enums[e].table);
        if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK) {
            fail(c, enums[e].table);
            return 0;
        }
        for (const enum_row *r = enums[e].rows; r->name && !c->failed; r++) {
            sqlite3_bind_int(st, 1, r->id);
            sqlite3_bind_text(st, 2, r->name, -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 3, r->label, -1, SQLITE_STATIC);
            if (sqlite3_step(st) != SQLITE_DONE)
                fail(c, enums[e].table);
            sqlite3_reset(st);
            c->rows++;
        }
        sqlite3_finalize(st);
    }
    return !c->failed;
}

static int create_schema(nctx *c) {
    char sql[4096];
    if (!exec(c, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; BEGIN;", "schema"))
        return 0;
    for (int t = 0; t < N_COUNT; t++) {
        snprintf(sql, sizeof sql, "CREATE TABLE %s (%s);", tables[t].name, tables[t].columns);
        if (!exec(c, sql, "schema"))
            return 0;
        int len = snprintf(sql, sizeof sql, "INSERT INTO %s (%s) VALUES (?", tables[t].name,
                           tables[t].fill);
        for (const char *p = tables[t].fill; *p; p++)
            if (*p == ',')
                len += snprintf(sql + len, sizeof sql - (size_t)len, ",?");
        snprintf(sql + len, sizeof sql - (size_t)len, ")");
        if (sqlite3_prepare_v2(c->db, sql, -1, &c->ins[t], NULL) != SQLITE_OK) {
            fail(c, tables[t].name);
            return 0;
        }
    }
    for (size_t i = 0; i < N_GPU_FACTS; i++) {
        snprintf(sql, sizeof sql, "UPDATE TARGET_INFO_GPU SET %s = ? WHERE id = ?",
                 gpu_facts[i].column);
        if (sqlite3_prepare_v2(c->db, sql, -1, &c->gpu_fact[i], NULL) != SQLITE_OK) {
            fail(c, "TARGET_INFO_GPU");
            return 0;
        }
    }
    return create_enums(c);
}

/* The pid of trace `r`'s process (its PROCESS record's) and what recorded it. */
static uint32_t pid_of(const tp_reader *r, const char **producer) {
    const tp_rec_hdr *const *recs;
    tp_rec_process p = {0};
    if (tp_reader_meta(r, TP_REC_PROCESS, &recs) > 0)
        tp_record_get(recs[0], &p, sizeof p);
    *producer = tp_reader_string(r, p.producer_sid);
    return p.pid;
}

/* Process `k` of the recording into the open transaction. */
static tp_status export_one(nctx *c, tp_reader *r, size_t k) {
    c->r = r;
    c->corr_hi = (uint64_t)k << 32;
    c->t_first = UINT64_MAX, c->t_last = 0;
    if (c->gid_cap)
        memset(c->gid, 0, c->gid_cap * sizeof *c->gid);
    if (c->short_cap)
        memset(c->short_gid, 0, c->short_cap * sizeof *c->short_gid);
    if (c->dem_cap)
        memset(c->dem_gid, 0, c->dem_cap * sizeof *c->dem_gid);
    if (c->chain_cap)
        memset(c->chain, 0, c->chain_cap * sizeof *c->chain);
    tp_status st = tp_visit_run(r, &exporter, c, NULL);
    if (st != TP_OK && !c->failed)
        return st; /* the visitor's own failure (out of memory), not a row's */
    if (c->t_first == UINT64_MAX)
        c->t_first = 0;
    write_late(c);
    if (c->t_last > c->t_first) {
        c->all_first = c->all_first < c->t_first ? c->all_first : c->t_first;
        c->all_last = c->all_last > c->t_last ? c->all_last : c->t_last;
    }
    return ok(c);
}

static tp_status export_all(nctx *c, tp_reader *const *r, size_t n) {
    const char *producer = NULL;
    if (!create_schema(c))
        return TP_ERR_IO;
    c->all_first = UINT64_MAX;
    for (size_t i = 0; i < n; i++) {
        const char *by;
        c->pid = pid_of(r[i], &by);
        if (!i)
            producer = by;
        tp_status st = export_one(c, r[i], i);
        if (st != TP_OK)
            return st;
    }
    if (c->all_first == UINT64_MAX)
        c->all_first = 0;
    INSERT(c, N_ANALYSIS, VI(0), VI(c->all_last - c->all_first), VI(c->all_first), VI(c->all_last));
    INSERT(c, N_META, VS("EXPORT_SCHEMA_VERSION"), VS(TP_NSYS_SCHEMA_VERSION));
    INSERT(c, N_META, VS("EXPORT_PRODUCER"), VS("trainprof export --schema nsys"));
    INSERT(c, N_META, VS("TRAINPROF_RECORDED_BY"), VS(producer));
    exec(c, "COMMIT;", "write");
    return ok(c);
}

/* Removes `path` when it is a regular file: never a device or a directory. */
static void remove_file(const char *path) {
    struct stat sb;
    if (lstat(path, &sb) == 0 && S_ISREG(sb.st_mode))
        unlink(path);
}

static void free_ctx(nctx *c) {
    for (int t = 0; t < N_COUNT; t++)
        sqlite3_finalize(c->ins[t]);
    for (size_t id = 1; id <= c->strings.n; id++)
        free(c->strings.text[id]);
    free(c->strings.text), free(c->strings.slot);
    free(c->gid), free(c->short_gid), free(c->dem_gid), free(c->chain), free(c->gpus),
        free(c->late);
    free(c);
}

tp_status tp_export_sqlite_nsys(tp_reader *const *r, size_t n, const char *path,
                                const tp_export_sqlite_opts *o, uint64_t *rows, char *err,
                                size_t err_size) {
    nctx *c = calloc(1, sizeof *c);
    if (!c)
        return TP_ERR_NOMEM;
    c->o = o;
    remove_file(path); /* replace, never append to an old export */
    tp_status st = TP_ERR_OPEN;
    if (sqlite3_open_v2(path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
        SQLITE_OK)
        snprintf(c->err, sizeof c->err, "cannot create file (%s)",
                 c->db ? sqlite3_errmsg(c->db) : "out of memory");
    else
        st = export_all(c, r, n);
    for (int t = 0; t < N_COUNT; t++)
        sqlite3_finalize(c->ins[t]), c->ins[t] = NULL;
    for (size_t i = 0; i < N_GPU_FACTS; i++)
        sqlite3_finalize(c->gpu_fact[i]), c->gpu_fact[i] = NULL;
    if (sqlite3_close(c->db) != SQLITE_OK && st == TP_OK)
        st = TP_ERR_IO;
    if (st != TP_OK) {
        if (err && err_size)
            snprintf(err, err_size, "%s: %s", path, c->err[0] ? c->err : tp_status_str(st));
        remove_file(path);
    } else if (rows) {
        *rows = c->rows;
    }
    free_ctx(c);
    return st;
}
