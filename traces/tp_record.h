/* tp_record: the records of trace format v1 (spec: docs/trace-format.md).
 *
 * Every record starts with tp_rec_hdr {u16 type, u16 flags, u32 size}; `size` counts the
 * header and is a multiple of 8, so records stay 8-byte aligned and readers skip types they
 * do not know. Fields are only ever appended: a reader given a shorter (older) record
 * zero-fills the missing tail (tp_record_get), a longer (newer) one is cut to what it knows.
 *
 * Timed records carry TP_RF_TIMED and begin with `u64 ts` (trace-clock nanoseconds) right
 * after the header; interval records also carry TP_RF_INTERVAL and an `u64 end` next. This
 * lets any reader compute time ranges, even of record types it does not know.
 *
 * Strings, call stacks, modules, threads and other metadata are written once and referred
 * to by 32-bit ids; id 0 always means "none". Enumerations that mirror CUPTI use CUPTI's
 * numeric values so conversion is a copy and the spec can point at the CUPTI headers. */
#ifndef TP_RECORD_H
#define TP_RECORD_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    uint16_t type;
    uint16_t flags;
    uint32_t size; /* bytes, header included, multiple of 8 */
} tp_rec_hdr;

/* Flags common to all records (high bits); low bits are per type. */
#define TP_RF_TIMED 0x8000u    /* u64 ts follows the header */
#define TP_RF_INTERVAL 0x4000u /* u64 end follows ts */
#define TP_RF_TYPE_MASK 0x00ffu

/* X(name, value, struct, timed, interval): the record types. Values never change. */
#define TP_RECORD_TABLE(X)                                                                         \
    X(PAD, 0, tp_rec_hdr, 0, 0)                                                                    \
    X(PROCESS, 1, tp_rec_process, 0, 0)                                                            \
    X(THREAD, 2, tp_rec_thread, 0, 0)                                                              \
    X(STRING, 3, tp_rec_string, 0, 0)                                                              \
    X(MODULE, 4, tp_rec_module, 0, 0)                                                              \
    X(STACK, 5, tp_rec_stack, 0, 0)                                                                \
    X(DOMAIN, 6, tp_rec_domain, 0, 0)                                                              \
    X(CATEGORY, 7, tp_rec_category, 0, 0)                                                          \
    X(DEVICE, 8, tp_rec_device, 0, 0)                                                              \
    X(STREAM, 9, tp_rec_stream, 0, 0)                                                              \
    X(EXT_CORRELATION, 10, tp_rec_ext_correlation, 0, 0)                                           \
    X(PYCODE, 11, tp_rec_pycode, 0, 0)                                                             \
    X(ENV, 12, tp_rec_env, 0, 0)                                                                   \
    X(CLOCK_SYNC, 16, tp_rec_clock_sync, 1, 0)                                                     \
    X(NVTX_PUSH, 17, tp_rec_nvtx, 1, 0)                                                            \
    X(NVTX_POP, 18, tp_rec_nvtx_pop, 1, 0)                                                         \
    X(NVTX_START, 19, tp_rec_nvtx_start, 1, 0)                                                     \
    X(NVTX_END, 20, tp_rec_nvtx_end, 1, 0)                                                         \
    X(NVTX_MARK, 21, tp_rec_nvtx, 1, 0)                                                            \
    X(API, 22, tp_rec_api, 1, 1)                                                                   \
    X(KERNEL, 23, tp_rec_kernel, 1, 1)                                                             \
    X(MEMCPY, 24, tp_rec_memcpy, 1, 1)                                                             \
    X(MEMSET, 25, tp_rec_memset, 1, 1)                                                             \
    X(SYNC, 26, tp_rec_sync, 1, 1)                                                                 \
    X(DEVICE_MEM, 27, tp_rec_device_mem, 1, 0)                                                     \
    X(HEAP, 28, tp_rec_heap, 1, 0)                                                                 \
    X(REGION, 29, tp_rec_region, 1, 0)                                                             \
    X(ALLOC_FAIL, 30, tp_rec_alloc_fail, 1, 0)                                                     \
    X(COUNTER, 31, tp_rec_counter, 1, 0)                                                           \
    X(DROPPED, 32, tp_rec_dropped, 1, 0)                                                           \
    X(OVERHEAD, 33, tp_rec_overhead, 1, 1)                                                         \
    X(SAMPLE, 34, tp_rec_sample, 1, 0)

typedef enum {
#define TP_REC_ENUM(name, value, st, timed, interval) TP_REC_##name = value,
    TP_RECORD_TABLE(TP_REC_ENUM)
#undef TP_REC_ENUM
} tp_rec_type;

/* Types are < 64 so a u64 bit mask can select kinds (tp_query.type_mask). */
#define TP_REC_TYPE_LIMIT 64
#define TP_REC_BIT(t) (1ull << (t))

/* ---------------------------------------------------------------- metadata records */

typedef struct {
    tp_rec_hdr h;
    uint32_t pid, ppid;
    int32_t rank, world_size; /* -1 when not a distributed job */
    int32_t local_rank;
    uint32_t host_sid;    /* string ids */
    uint32_t cmdline_sid; /* argv joined with spaces */
    uint32_t exe_sid;     /* real path of the executable */
    uint64_t start_realtime_ns;
    uint32_t producer_sid; /* e.g. "trainprof-collector 0.1.0" */
    uint32_t reserved;
    /* appended in v1.3: which recording the process belongs to, and where in it */
    uint64_t job_id;   /* one id for every process of one `trainprof record`; 0: unknown */
    uint32_t root_pid; /* the process `trainprof record` started; 0: unknown */
    uint32_t exec_gen; /* images this pid ran before this one in the recording (0: as
                          forked or started; n: after its n-th exec) */
} tp_rec_process;

typedef struct {
    tp_rec_hdr h;
    uint32_t tid;
    uint32_t name_sid; /* 0: unnamed; a later THREAD record for the same tid renames */
    uint32_t pid;
    uint32_t reserved;
} tp_rec_thread;

/* Variable size: `len` bytes of UTF-8 then a NUL, padded to 8. */
typedef struct {
    tp_rec_hdr h;
    uint32_t id;
    uint32_t len;
    char text[]; /* NUL-terminated */
} tp_rec_string;

/* A loaded ELF object, so stacks can be symbolized offline (addr2line -e path offset). */
typedef struct {
    tp_rec_hdr h;
    uint32_t id;        /* < 0xffff: frames store it in 16 bits */
    uint32_t path_sid;  /* real path */
    uint64_t load_bias; /* dlpi_addr: runtime address = bias + ELF vaddr */
    uint64_t lo, hi;    /* runtime address range of its PT_LOAD segments */
    uint32_t build_id_len;
    uint8_t build_id[32];
    uint32_t reserved;
} tp_rec_module;

/* Frame encoding: module id in the top 16 bits, ELF virtual address (pc - load_bias) in the
 * low 48. Module TP_FRAME_NO_MODULE means the low 48 bits are the raw address. Frame 0 is the
 * innermost; return addresses of frames > 0 already have 1 subtracted. */
#define TP_FRAME_NO_MODULE 0xffffu
#define TP_FRAME_MAKE(mod, off) (((uint64_t)(mod) << 48) | ((uint64_t)(off)&0xffffffffffffull))
#define TP_FRAME_MODULE(f) ((uint32_t)((f) >> 48))
#define TP_FRAME_OFFSET(f) ((f)&0xffffffffffffull)
#define TP_STACK_MAX_FRAMES 128

/* A Python frame (v1.2): module TP_FRAME_PYTHON, then the PYCODE id in bits 24-47 and the
 * line in bits 0-23 (0: unknown). Python frames sit in the stack where the interpreter ran
 * them: innermost first, each group just before the native frame of the evaluation loop
 * that ran it, as `py-spy --native` shows them. */
#define TP_FRAME_PYTHON 0xfffeu
#define TP_PYCODE_MAX_ID 0xffffffu
#define TP_PYLINE_MAX 0xffffffu
#define TP_FRAME_PY_MAKE(code, line)                                                               \
    TP_FRAME_MAKE(TP_FRAME_PYTHON, ((uint64_t)(code) << 24) | ((uint64_t)(line)&TP_PYLINE_MAX))
#define TP_FRAME_IS_PYTHON(f) (TP_FRAME_MODULE(f) == TP_FRAME_PYTHON)
#define TP_FRAME_PY_CODE(f) ((uint32_t)(TP_FRAME_OFFSET(f) >> 24))
#define TP_FRAME_PY_LINE(f) ((uint32_t)((f)&TP_PYLINE_MAX))

/* Variable size: nframes frames. */
typedef struct {
    tp_rec_hdr h;
    uint32_t id;
    uint32_t nframes;
    uint64_t frames[];
} tp_rec_stack;

/* A Python code object (a function, a module body, a class body), written once and referred
 * to by Python frames (TP_FRAME_PY_MAKE). Code objects with the same file, name and first
 * line share one id. */
typedef struct {
    tp_rec_hdr h;
    uint32_t id;         /* 1 .. TP_PYCODE_MAX_ID */
    uint32_t file_sid;   /* co_filename, as the interpreter has it */
    uint32_t name_sid;   /* co_qualname ("Model.forward"; 3.11+), co_name before */
    uint32_t first_line; /* co_firstlineno */
} tp_rec_pycode;

/* One fact about the environment the trace was recorded in (v1.4): a key such as
 * "cuda.driver" or "gpu.name" and its value, both strings (traces/tp_env_keys.h lists the keys
 * trainprof writes; readers keep unknown keys too). `device` is TP_ENV_PROCESS for facts about
 * the process or host, else the GPU ordinal the fact is about. The latest record with the same
 * key and device wins, so a writer may record what it knows at start and again at the end. */
#define TP_ENV_PROCESS 0xffffffffu
typedef struct {
    tp_rec_hdr h;
    uint32_t key_sid;
    uint32_t value_sid;
    uint32_t device; /* TP_ENV_PROCESS, or the GPU ordinal */
    uint32_t reserved;
} tp_rec_env;

/* NVTX domain (id 0 is the default domain and needs no record). flags bit 0: destroyed. */
typedef struct {
    tp_rec_hdr h;
    uint32_t id;
    uint32_t name_sid;
} tp_rec_domain;

typedef struct {
    tp_rec_hdr h;
    uint32_t domain;
    uint32_t category;
    uint32_t name_sid;
    uint32_t reserved;
} tp_rec_category;

typedef enum { TP_DEVICE_GPU = 1, TP_DEVICE_CPU_ACCEL = 2 } tp_device_kind;

typedef struct {
    tp_rec_hdr h;
    uint32_t id;
    uint32_t name_sid;
    uint64_t global_memory_bytes;
    uint32_t sm_count;
    uint32_t compute_capability; /* major * 10 + minor; 0 for non-GPU devices */
    uint32_t kind;               /* tp_device_kind */
    uint32_t reserved;
} tp_rec_device;

/* A stream (or a CPU device's queue). flags bit 0: destroyed. */
typedef struct {
    tp_rec_hdr h;
    uint32_t device, context, stream;
    int32_t priority;
} tp_rec_stream;

/* CUPTI external correlation: ties a correlation id to an id of another layer. */
typedef struct {
    tp_rec_hdr h;
    uint32_t correlation;
    uint32_t external_kind;
    uint64_t external_id;
} tp_rec_ext_correlation;

/* ---------------------------------------------------------------- timed records */

/* Pairs the trace clock with system clocks; one at start and one at end of a trace. */
typedef struct {
    tp_rec_hdr h;
    uint64_t ts; /* trace clock */
    uint64_t monotonic_ns;
    uint64_t realtime_ns;
    uint64_t uncertainty_ns;
    uint64_t tsc_hz; /* 0 when the trace clock is CLOCK_MONOTONIC itself */
} tp_rec_clock_sync;

/* NVTX payload types mirror nvtxPayloadType_t. */
typedef enum {
    TP_PAYLOAD_NONE = 0,
    TP_PAYLOAD_U64 = 1,
    TP_PAYLOAD_I64 = 2,
    TP_PAYLOAD_F64 = 3,
    TP_PAYLOAD_U32 = 4,
    TP_PAYLOAD_I32 = 5,
    TP_PAYLOAD_F32 = 6
} tp_payload_type;

/* Push (flags bit 0 unused) and mark. color is ARGB, valid when flags & TP_NVTX_HAS_COLOR. */
#define TP_NVTX_HAS_COLOR 0x1u
typedef struct {
    tp_rec_hdr h;
    uint64_t ts;
    uint32_t tid;
    uint32_t domain;
    uint32_t msg_sid;
    uint32_t category;
    uint32_t color;
    uint32_t payload_type; /* tp_payload_type */
    uint64_t payload;      /* raw bits */
    uint32_t stack_id;     /* push only, with --stacks all; 0: none (appended in v1.1) */
    uint32_t reserved1;
} tp_rec_nvtx;

typedef struct {
    tp_rec_hdr h;
    uint64_t ts;
    uint32_t tid;
    uint32_t domain;
} tp_rec_nvtx_pop;

/* Start/end ranges may end on another thread; they pair by range_id. */
typedef struct {
    tp_rec_hdr h;
    uint64_t ts;
    uint64_t range_id;
    uint32_t tid;
    uint32_t domain;
    uint32_t msg_sid;
    uint32_t category;
    uint32_t color;
    uint32_t payload_type;
    uint64_t payload;
    uint32_t stack_id; /* with --stacks all; 0: none (appended in v1.1) */
    uint32_t reserved1;
} tp_rec_nvtx_start;

typedef struct {
    tp_rec_hdr h;
    uint64_t ts;
    uint64_t range_id;
    uint32_t tid;
    uint32_t reserved;
} tp_rec_nvtx_end;

/* API kinds (flags low byte). */
typedef enum { TP_API_RUNTIME = 1, TP_API_DRIVER = 2, TP_API_DEVICE = 3 } tp_api_kind;

/* A CPU-side API call (CUDA runtime/driver, or a device-activity-API launch). */
typedef struct {
    tp_rec_hdr h;
    uint64_t ts, end;
    uint32_t tid;
    uint32_t correlation;
    uint32_t cbid;     /* CUPTI callback id; 0 for non-CUDA */
    uint32_t name_sid; /* function name */
    uint32_t stack_id; /* 0: no stack taken */
    int32_t result;    /* return value (0 = success) */
} tp_rec_api;

typedef struct {
    tp_rec_hdr h;
    uint64_t ts, end;
    uint32_t correlation;
    uint32_t name_sid;
    uint32_t device, context, stream;
    uint32_t grid_x, grid_y, grid_z;
    uint16_t block_x, block_y, block_z;
    uint16_t registers_per_thread;
    uint32_t static_shared_bytes;
    uint32_t dynamic_shared_bytes;
    uint32_t graph_id;
    uint32_t reserved;
    uint64_t graph_node_id;
} tp_rec_kernel;

/* Copy kinds mirror CUpti_ActivityMemcpyKind; memory kinds mirror CUpti_ActivityMemoryKind. */
typedef enum {
    TP_COPY_UNKNOWN = 0,
    TP_COPY_HTOD = 1,
    TP_COPY_DTOH = 2,
    TP_COPY_HTOA = 3,
    TP_COPY_ATOH = 4,
    TP_COPY_ATOA = 5,
    TP_COPY_ATOD = 6,
    TP_COPY_DTOA = 7,
    TP_COPY_DTOD = 8,
    TP_COPY_HTOH = 9,
    TP_COPY_PTOP = 10
} tp_copy_kind;

typedef enum {
    TP_MEM_UNKNOWN = 0,
    TP_MEM_PAGEABLE = 1,
    TP_MEM_PINNED = 2,
    TP_MEM_DEVICE = 3,
    TP_MEM_ARRAY = 4,
    TP_MEM_MANAGED = 5,
    TP_MEM_DEVICE_STATIC = 6,
    TP_MEM_MANAGED_STATIC = 7
} tp_mem_kind;

#define TP_MEMCPY_ASYNC 0x1u /* flags: issued by an async API */

typedef struct {
    tp_rec_hdr h;
    uint64_t ts, end;
    uint64_t bytes;
    uint32_t correlation;
    uint32_t device, context, stream;
    uint8_t copy_kind; /* tp_copy_kind */
    uint8_t src_kind;  /* tp_mem_kind */
    uint8_t dst_kind;  /* tp_mem_kind */
    uint8_t reserved0;
    uint32_t src_device, dst_device; /* peer copies; else == device */
    uint32_t runtime_correlation;    /* CUPTI's runtimeCorrelationId, 0 if none */
    uint32_t graph_id;
    uint32_t reserved1;
} tp_rec_memcpy;

typedef struct {
    tp_rec_hdr h;
    uint64_t ts, end;
    uint64_t bytes;
    uint32_t correlation;
    uint32_t device, context, stream;
    uint32_t value;
    uint8_t mem_kind; /* tp_mem_kind */
    uint8_t reserved[3];
} tp_rec_memset;

/* Mirrors CUpti_ActivitySynchronizationType. */
typedef enum {
    TP_SYNC_UNKNOWN = 0,
    TP_SYNC_EVENT = 1,
    TP_SYNC_STREAM_WAIT_EVENT = 2,
    TP_SYNC_STREAM = 3,
    TP_SYNC_CONTEXT = 4
} tp_sync_type;

typedef struct {
    tp_rec_hdr h;
    uint64_t ts, end;
    uint32_t correlation;
    uint32_t type; /* tp_sync_type */
    uint32_t device, context;
    uint32_t stream; /* 0xffffffff when not stream-specific */
    uint32_t tid;
    uint64_t event;
} tp_rec_sync;

typedef enum { TP_MEMOP_ALLOC = 1, TP_MEMOP_FREE = 2 } tp_mem_op;

/* Device memory obtained from or returned to the driver (cudaMalloc / cudaFree). */
typedef struct {
    tp_rec_hdr h;
    uint64_t ts;
    uint64_t address;
    uint64_t bytes;
    uint32_t correlation;
    uint32_t device, context, stream;
    uint8_t op;       /* tp_mem_op */
    uint8_t mem_kind; /* tp_mem_kind */
    uint16_t reserved0;
    uint32_t stack_id;
    uint32_t tid;
    uint32_t reserved1;
} tp_rec_device_mem;

typedef enum { TP_HEAP_REGISTER = 1, TP_HEAP_UNREGISTER = 2, TP_HEAP_RESET = 3 } tp_heap_op;

/* NVTX memory API heaps (a pool an allocator carves regions from). */
typedef struct {
    tp_rec_hdr h;
    uint64_t ts;
    uint64_t heap;    /* handle */
    uint64_t address; /* pool base */
    uint64_t size;
    uint32_t tid;
    uint32_t domain;
    uint32_t op;       /* tp_heap_op */
    uint32_t usage;    /* nvtxMemHeapUsage */
    uint32_t mem_type; /* nvtxMemType */
    uint32_t stack_id;
    uint32_t name_sid;
    uint32_t reserved;
} tp_rec_heap;

typedef enum {
    TP_REGION_REGISTER = 1,
    TP_REGION_RESIZE = 2,
    TP_REGION_UNREGISTER = 3
} tp_region_op;

typedef struct {
    tp_rec_hdr h;
    uint64_t ts;
    uint64_t heap;
    uint64_t address;
    uint64_t size; /* new size for RESIZE; 0 for UNREGISTER */
    uint32_t tid;
    uint32_t domain;
    uint32_t op; /* tp_region_op */
    uint32_t stack_id;
    uint32_t name_sid;
    uint32_t reserved;
} tp_rec_region;

/* An allocation that failed: `requested` could not be served although `free_bytes` were free
 * in `reserved_bytes` held by the allocator (fragmentation when free_bytes >= requested). */
typedef struct {
    tp_rec_hdr h;
    uint64_t ts;
    uint64_t requested;
    uint64_t reserved_bytes;
    uint64_t free_bytes;
    uint64_t largest_free_block;
    uint32_t tid;
    uint32_t device;
    uint32_t stack_id;
    uint32_t reserved;
} tp_rec_alloc_fail;

#define TP_COUNTER_F64 0x1u /* flags: value is a double; else int64 */
typedef struct {
    tp_rec_hdr h;
    uint64_t ts;
    uint32_t name_sid;
    uint32_t tid;   /* or device; 0 when process-wide */
    uint64_t value; /* int64 or double bits */
} tp_rec_counter;

typedef enum {
    TP_DROP_RING_FULL = 1, /* a thread's staging ring was full */
    TP_DROP_NO_BUFFER = 2, /* memory budget exhausted: thread had no ring */
    TP_DROP_CUPTI = 3,     /* CUPTI reported dropped activity records */
    TP_DROP_CONVERT = 4    /* a record could not be converted */
} tp_drop_reason;

typedef struct {
    tp_rec_hdr h;
    uint64_t ts;
    uint64_t count;
    uint32_t what;   /* record type lost; 0 = unknown/all */
    uint32_t reason; /* tp_drop_reason */
} tp_rec_dropped;

typedef enum {
    TP_OVERHEAD_COLLECTOR_FLUSH = 1, /* writer drained/compressed/wrote */
    TP_OVERHEAD_CUPTI_BUFFER = 2,    /* CUPTI buffer processing */
    TP_OVERHEAD_CUPTI = 3,           /* CUPTI's own overhead records */
    TP_OVERHEAD_UNWIND = 4
} tp_overhead_kind;

typedef struct {
    tp_rec_hdr h;
    uint64_t ts, end;
    uint32_t tid;
    uint32_t kind; /* tp_overhead_kind */
    uint32_t name_sid;
    uint32_t reserved;
} tp_rec_overhead;

/* A sample of one thread (v1.8, `record --sample`): the collector's sampler thread reads the
 * Python frames of every thread of the interpreter HZ times a second (and, v1.9, the state and
 * CPU clock of the process's other threads: TP_SAMPLE_NATIVE), while they run, whether
 * the thread was on a CPU at that instant (flags TP_SAMPLE_ON_CPU: its scheduler state was
 * running or runnable), and the CPU time it used since its previous sample (its CPU clock).
 * A thread's first sample opens its count and is not written. */
#define TP_SAMPLE_ON_CPU 0x1u
/* flags bit 1: the thread held its interpreter's GIL at the sample (CPython 3.8-3.13) */
#define TP_SAMPLE_HOLDS_GIL 0x2u
/* flags bit 2 (v1.9): not a thread of the interpreter (an OpenMP or intra-op pool's, a CUDA or
 * NCCL library's): its state and CPU clock only, stack_id 0 (its frames are not read) */
#define TP_SAMPLE_NATIVE 0x4u
typedef struct {
    tp_rec_hdr h;
    uint64_t ts;
    uint32_t tid;
    uint32_t stack_id;  /* its Python frames, innermost first (TP_FRAME_PYTHON); 0: it ran no
                           Python code then */
    uint64_t cpu_ns;    /* CPU time of the thread since its previous sample */
    uint64_t period_ns; /* wall time since its previous sample */
} tp_rec_sample;

/* The share of its period a sampled thread ran, in whole percent (0-100): its CPU clock over
 * the wall time; the exports' "CPU %" of a thread. */
static inline int64_t tp_sample_cpu_pct(const tp_rec_sample *s) {
    if (!s->period_ns)
        return 0;
    uint64_t p = (s->cpu_ns * 100 + s->period_ns / 2) / s->period_ns;
    return p > 100 ? 100 : (int64_t)p;
}

/* The most samples a second `record --sample-hz` takes (TRAINPROF_SAMPLE_HZ): each round
 * walks every Python thread, on the sampler's own thread (docs/collector.md, "Sampling"). */
#define TP_SAMPLE_HZ_MAX 1000

/* ---------------------------------------------------------------- helpers */

#define TP_REC_ALIGN(n) (((n) + 7u) & ~(size_t)7u)

/* Fills a header for a fixed-size record of `type` (flags from the table). */
#define TP_REC_INIT(rec, type_) tp_record_init_hdr(&(rec)->h, (type_), (uint32_t)sizeof(*(rec)))

/* Zeroes a fixed-size record, then fills its header: records are written byte for byte, so
 * reserved fields and padding must not carry stale stack bytes into the trace. */
#define TP_REC_CLEAR(rec, type_) (memset((rec), 0, sizeof(*(rec))), TP_REC_INIT((rec), (type_)))

/* Static description of a record type; NULL name for unknown types. */
typedef struct {
    const char *name;  /* "KERNEL" */
    uint32_t min_size; /* sizeof the v1 struct (variable records: fixed part) */
    uint16_t flags;    /* TP_RF_TIMED / TP_RF_INTERVAL */
} tp_rec_info;

/* Returns the description of `type` (a zeroed struct for unknown types). */
const tp_rec_info *tp_record_info(uint16_t type);

/* Name of a type ("KERNEL"), or NULL when unknown. */
const char *tp_record_name(uint16_t type);

/* Looks a type up by name, case-insensitively; returns -1 when unknown. */
int tp_record_type_from_name(const char *name);

/* Sets h's type and size and the TP_RF_* flags the table gives `type`; the fixed-size record
 * helpers TP_REC_INIT and TP_REC_CLEAR call it. */
void tp_record_init_hdr(tp_rec_hdr *h, uint16_t type, uint32_t size);

/* Copies record `r` into `dst` of `dst_size` bytes, zero-filling what an older writer did
 * not write and dropping what a newer one appended. Returns r->size. */
uint32_t tp_record_get(const tp_rec_hdr *r, void *dst, size_t dst_size);

/* Start time of a timed record, 0 otherwise; end = start for instants. */
static inline uint64_t tp_record_ts(const tp_rec_hdr *r) {
    return (r->flags & TP_RF_TIMED) && r->size >= 16 ? ((const uint64_t *)(r + 1))[0] : 0;
}
static inline uint64_t tp_record_end(const tp_rec_hdr *r) {
    if ((r->flags & TP_RF_INTERVAL) && r->size >= 24)
        return ((const uint64_t *)(r + 1))[1];
    return tp_record_ts(r);
}

#endif
