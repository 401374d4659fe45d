/* tp_export_chrome: a .tprof trace as Kineto-dialect Chrome trace JSON (spec: docs/export.md).
 *
 * Two visitors (traces/tp_visit.h): `header` over the metadata, then `events` over the
 * metadata and every record in file order. GPU activity goes to pid = device id, tid =
 * stream (as Kineto does); CPU-side records go to the PROCESS record's pid and the thread
 * id. NVTX ranges come paired by the visitor, exactly as the model's native loader gets
 * them, so a report of the export and one of the trace agree. */
#include "tp_export_chrome.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include "tp_env_keys.h"
#include "tp_demangle.h"
#include "tp_kineto_names.h"
#include "tp_ostream.h"
#include "tp_pairing.h"
#include "tp_visit.h"

/* ---------------------------------------------------------------- output */

typedef struct {
    tp_ostream *os;
    int failed;
    int err_no; /* errno of the failed write (from the stream, at close) */
    size_t n;
    char buf[1 << 16];
} jout;

static void out_flush(jout *w) {
    if (w->n && !w->failed && tp_ostream_write(w->os, w->buf, w->n) != TP_OK)
        w->failed = 1; /* the stream keeps the errno; close reports it */
    w->n = 0;
}

static void out_raw(jout *w, const char *s, size_t n) {
    if (n > sizeof w->buf - w->n)
        out_flush(w);
    if (n > sizeof w->buf) { /* larger than the buffer: write through */
        if (!w->failed && tp_ostream_write(w->os, s, n) != TP_OK)
            w->failed = 1;
        return;
    }
    memcpy(w->buf + w->n, s, n);
    w->n += n;
}

static void out_str(jout *w, const char *s) {
    out_raw(w, s, strlen(s));
}

__attribute__((format(printf, 2, 3))) static void out_fmt(jout *w, const char *fmt, ...) {
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0)
        out_raw(w, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* Microseconds with three decimals from integer ns: exact, no double involved. */
static void out_us(jout *w, uint64_t ns) {
    out_fmt(w, "%" PRIu64 ".%03u", ns / 1000u, (unsigned)(ns % 1000u));
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when it is not one. */
static size_t utf8_len(const unsigned char *s) {
    unsigned c = s[0];
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n < 2)
        return n;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    uint32_t cp = c & (0x7fu >> n);
    for (size_t i = 1; i < n; i++)
        cp = (cp << 6) | (s[i] & 0x3fu);
    static const uint32_t min_cp[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0; /* overlong, out of range or a surrogate */
    return n;
}

/* A JSON string literal; control characters escaped, invalid UTF-8 bytes -> U+FFFD. */
static void out_jstr(jout *w, const char *s) {
    out_raw(w, "\"", 1);
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        size_t n = utf8_len(p);
        if (n == 0) {
            out_raw(w, "\xef\xbf\xbd", 3);
            p++;
        } else if (*p == '"' || *p == '\\') {
            out_raw(w, "\\", 1);
            out_raw(w, (const char *)p++, 1);
        } else if (*p < 0x20) {
            out_fmt(w, "\\u%04x", *p++);
        } else {
            out_raw(w, (const char *)p, n);
            p += n;
        }
    }
    out_raw(w, "\"", 1);
}

/* ---------------------------------------------------------------- state */

#define MAX_DEVICES 64

#define KNAME_CACHE 1024 /* demangled kernel names kept (a power of two) */

typedef struct {
    jout *w;
    tp_reader *r;
    int64_t pid;      /* its PROCESS pid (in a job, another when that one is taken) */
    uint64_t id_base; /* added to correlation and flow ids: 0, or k << 32 for the k-th
                         process of a recording (each process numbers its own from 1) */
    size_t n_procs;   /* processes written into this one file (a recording: several) */
    int first;
    uint64_t t_last;
    tp_region_map regions;
    int64_t dev_allocated[MAX_DEVICES]; /* DEVICE_MEM running totals per device */
    int64_t region_allocated, heap_reserved;
    tp_export_stats st;
    /* from the header's pass over the metadata */
    tp_rec_process process; /* the first PROCESS record; valid when have_process */
    int have_process, have_clock, n_devices;
    int64_t base_time_ns;             /* first CLOCK_SYNC: realtime - trace clock */
    uint32_t device_ids[MAX_DEVICES]; /* those in deviceProperties (a recording: once each) */
    const tp_export_counter *cnt;     /* memory counter samples from the caller */
    size_t n_cnt;
    const tp_export_job *job; /* a job of several ranks; NULL: one recording */
    size_t k;                 /* the trace being written */
    uint64_t shift;           /* added to its times (the job clock) */
    /* its kernels' demangled names by string id (kernel_name); NULL: not cached */
    uint32_t kname_sid[KNAME_CACHE];
    char *kname[KNAME_CACHE];
} ctx;

/* The demangled names cached for the trace being written are its string ids': emptied for
 * each trace and at the end. */
static void kname_reset(ctx *c) {
    for (size_t i = 0; i < KNAME_CACHE; i++) {
        free(c->kname[i]);
        c->kname[i] = NULL;
        c->kname_sid[i] = 0;
    }
}

/* The rank of the trace being written; -1 outside a job. */
static int job_rank(const ctx *c) {
    return c->job && c->job->place ? c->job->place[c->k].rank : -1;
}

/* The pid of device `dev`'s events: the device id (Kineto's rule), or in a job one per rank
 * and device (every rank has its own GPU 0), above any Linux pid. */
static int64_t dev_pid(const ctx *c, uint32_t dev) {
    int rank = job_rank(c);
    return rank < 0 ? (int64_t)dev : 0x50000000 + (int64_t)rank * 4096 + (dev & 0xfff);
}

/* A handler's verdict: a failed write ends the walk (the export is removed). */
static tp_status written(const ctx *c) {
    return c->w->failed ? TP_ERR_IO : TP_OK;
}

static const char *sid_or(ctx *c, uint32_t sid, const char *dflt) {
    const char *s = tp_reader_string(c->r, sid);
    return s ? s : dflt;
}

/* Kernel `sid`'s name as Kineto writes it (demangled: tp_demangle), remembered per
 * string id in a direct-mapped cache: millions of kernels name a few hundred strings. */
static const char *kernel_name(ctx *c, uint32_t sid) {
    const char *s = sid_or(c, sid, "(unnamed kernel)");
    if (s[0] != '_' || s[1] != 'Z')
        return s;
    size_t i = sid & (KNAME_CACHE - 1);
    if (c->kname_sid[i] != sid || !c->kname[i]) {
        free(c->kname[i]);
        c->kname[i] = tp_demangle(s);
        c->kname_sid[i] = sid;
    }
    return c->kname[i] ? c->kname[i] : s;
}

/* Starts one event object: the separator, then `{"ph":"X","cat":...,"name":...`. */
static void ev_begin(ctx *c, char ph, const char *cat, const char *name) {
    out_str(c->w, c->first ? "\n" : ",\n");
    c->first = 0;
    c->st.events++;
    out_fmt(c->w, "  {\"ph\": \"%c\", \"cat\": ", ph);
    out_jstr(c->w, cat);
    out_str(c->w, ", \"name\": ");
    out_jstr(c->w, name);
}

/* `, "pid": P, "tid": T, "ts": TS[, "dur": D]` for a span [ts, end) (dur only when end). */
static void ev_where(ctx *c, int64_t pid, int64_t tid, uint64_t ts, const uint64_t *end) {
    out_fmt(c->w, ", \"pid\": %" PRId64 ", \"tid\": %" PRId64 ", \"ts\": ", pid, tid);
    out_us(c->w, ts + c->shift);
    if (end) {
        out_str(c->w, ", \"dur\": ");
        out_us(c->w, *end > ts ? *end - ts : 0);
        if (*end > c->t_last)
            c->t_last = *end;
    }
}

/* ---------------------------------------------------------------- GPU records */

/* ac2g flow half: "s" at the launch, "f" (binding to the enclosing slice) at the GPU op. */
static void flow(ctx *c, char ph, uint32_t corr, int64_t pid, int64_t tid, uint64_t ts) {
    if (!corr)
        return;
    ev_begin(c, ph, "ac2g", "ac2g");
    out_fmt(c->w, ", \"id\": %" PRIu64, c->id_base + corr);
    ev_where(c, pid, tid, ts, NULL);
    out_str(c->w, ph == 'f' ? ", \"bp\": \"e\"}" : "}");
    c->st.flows++;
}

static void gpu_args(ctx *c, uint32_t dev, uint32_t context, int64_t stream, uint32_t corr) {
    out_fmt(c->w,
            ", \"args\": {\"device\": %" PRIu32 ", \"context\": %" PRIu32 ", \"stream\": %" PRId64
            ", \"correlation\": %" PRIu64,
            dev, context, stream, corr ? c->id_base + corr : 0);
}

static void bytes_args(ctx *c, uint64_t bytes, uint64_t ts, uint64_t end) {
    double gbps = end > ts ? (double)bytes / (double)(end - ts) : 0.0; /* bytes/ns = GB/s */
    out_fmt(c->w, ", \"bytes\": %" PRIu64 ", \"memory bandwidth (GB/s)\": %.6g}}", bytes, gbps);
}

static tp_status on_kernel(void *cx, const tp_rec_hdr *h) {
    ctx *c = cx;
    const tp_rec_kernel *k = (const void *)h;
    ev_begin(c, 'X', "kernel", kernel_name(c, k->name_sid));
    ev_where(c, dev_pid(c, k->device), k->stream, k->ts, &k->end);
    gpu_args(c, k->device, k->context, k->stream, k->correlation);
    out_fmt(c->w,
            ", \"registers per thread\": %u, \"shared memory\": %" PRIu32 ", \"grid\": [%" PRIu32
            ", %" PRIu32 ", %" PRIu32 "], \"block\": [%u, %u, %u]}}",
            k->registers_per_thread, k->static_shared_bytes + k->dynamic_shared_bytes, k->grid_x,
            k->grid_y, k->grid_z, k->block_x, k->block_y, k->block_z);
    flow(c, 'f', k->correlation, dev_pid(c, k->device), k->stream, k->ts);
    return written(c);
}

static tp_status on_memcpy(void *cx, const tp_rec_hdr *h) {
    ctx *c = cx;
    const tp_rec_memcpy *m = (const void *)h;
    char name[TP_KINETO_NAME_MAX];
    ev_begin(c, 'X', "gpu_memcpy",
             tp_kineto_memcpy_name(name, sizeof name, m->copy_kind, m->src_kind, m->dst_kind));
    ev_where(c, dev_pid(c, m->device), m->stream, m->ts, &m->end);
    gpu_args(c, m->device, m->context, m->stream, m->correlation);
    bytes_args(c, m->bytes, m->ts, m->end);
    flow(c, 'f', m->correlation, dev_pid(c, m->device), m->stream, m->ts);
    return written(c);
}

static tp_status on_memset(void *cx, const tp_rec_hdr *h) {
    ctx *c = cx;
    const tp_rec_memset *m = (const void *)h;
    char name[TP_KINETO_NAME_MAX];
    ev_begin(c, 'X', "gpu_memset", tp_kineto_memset_name(name, sizeof name, m->mem_kind));
    ev_where(c, dev_pid(c, m->device), m->stream, m->ts, &m->end);
    gpu_args(c, m->device, m->context, m->stream, m->correlation);
    bytes_args(c, m->bytes, m->ts, m->end);
    flow(c, 'f', m->correlation, dev_pid(c, m->device), m->stream, m->ts);
    return written(c);
}

/* A sync on no stream is a CPU-side wait and goes to the waiting thread's row (as the
 * native loader does). */
static tp_status on_sync(void *cx, const tp_rec_hdr *h) {
    ctx *c = cx;
    const tp_rec_sync *s = (const void *)h;
    int cpu = s->stream == 0xffffffffu;
    int64_t stream = cpu ? -1 : (int64_t)s->stream;
    ev_begin(c, 'X', "cuda_sync", tp_sync_type_name(s->type));
    ev_where(c, cpu ? c->pid : dev_pid(c, s->device), cpu ? s->tid : stream, s->ts, &s->end);
    gpu_args(c, s->device, s->context, stream, s->correlation);
    out_fmt(c->w, ", \"event\": %" PRIu64 "}}", s->event);
    return written(c);
}

/* ---------------------------------------------------------------- CPU records */

static tp_status on_api(void *cx, const tp_rec_hdr *h) {
    ctx *c = cx;
    const tp_rec_api *a = (const void *)h;
    unsigned kind = h->flags & TP_RF_TYPE_MASK;
    const char *name = sid_or(c, a->name_sid, "(unnamed API)");
    char cut[256]; /* "cudaLaunchKernel_v7000" as Kineto writes it (tp_kineto_api_name_len) */
    size_t n = strlen(name), m = tp_kineto_api_name_len(name, n);
    if (m < n && m < sizeof cut) {
        memcpy(cut, name, m);
        cut[m] = 0;
        name = cut;
    }
    ev_begin(c, 'X', kind == TP_API_DRIVER ? "cuda_driver" : "cuda_runtime", name);
    ev_where(c, c->pid, a->tid, a->ts, &a->end);
    out_fmt(c->w,
            ", \"args\": {\"cbid\": %" PRIu32 ", \"correlation\": %" PRIu64 ", \"result\": %" PRId32
            "}}",
            a->cbid, a->correlation ? c->id_base + a->correlation : 0, a->result);
    flow(c, 's', a->correlation, c->pid, a->tid, a->ts);
    return written(c);
}

/* An NVTX range, paired by the visitor; one never closed ends where the trace ends, as in
 * the native loader. */
static tp_status on_range(void *cx, const tp_visit_range *r) {
    ctx *c = cx;
    uint64_t end = r->closed ? r->end : c->t_last;
    ev_begin(c, 'X', "user_annotation", sid_or(c, r->open.msg_sid, ""));
    ev_where(c, c->pid, r->open.tid, r->open.ts, &end);
    out_str(c->w, "}");
    return written(c);
}

static tp_status on_mark(void *cx, const tp_rec_hdr *h) {
    ctx *c = cx;
    const tp_rec_nvtx *n = (const void *)h;
    ev_begin(c, 'i', "user_annotation", sid_or(c, n->msg_sid, ""));
    ev_where(c, c->pid, n->tid, n->ts, NULL);
    out_str(c->w, ", \"s\": \"t\"}");
    return written(c);
}

/* ---------------------------------------------------------------- memory */

/* Kineto's "[memory]" instant; Device Type 1 = CUDA; device -1 for allocator-level events. */
static tp_status mem_instant(ctx *c, const char *name, uint64_t ts, uint32_t tid, int64_t dev,
                             uint64_t addr, int64_t bytes, int64_t allocated, int64_t reserved) {
    ev_begin(c, 'i', "cpu_instant_event", name);
    ev_where(c, c->pid, tid, ts, NULL);
    out_fmt(c->w,
            ", \"s\": \"t\", \"args\": {\"Total Reserved\": %" PRId64
            ", \"Total Allocated\": %" PRId64 ", \"Bytes\": %" PRId64 ", \"Addr\": %" PRIu64
            ", \"Device Type\": 1, \"Device Id\": %" PRId64 "}}",
            reserved, allocated, bytes, addr, dev);
    return written(c);
}

static tp_status on_device_mem(void *cx, const tp_rec_hdr *h) {
    ctx *c = cx;
    const tp_rec_device_mem *d = (const void *)h;
    int64_t bytes = d->op == TP_MEMOP_FREE ? -(int64_t)d->bytes : (int64_t)d->bytes;
    int64_t total = 0;
    if (d->device < MAX_DEVICES)
        total = c->dev_allocated[d->device] += bytes;
    /* cudaMalloc'd memory is both allocated and reserved from the driver's point of view */
    return mem_instant(c, "[memory]", d->ts, d->tid, d->device, d->address, bytes, total, total);
}

static tp_status on_heap(void *cx, const tp_rec_hdr *h) {
    ctx *c = cx;
    const tp_rec_heap *p = (const void *)h;
    c->heap_reserved += tp_heap_reserved_delta(p->op, p->size);
    /* A pool changes what is reserved, not what is allocated: Bytes 0 (see docs/export.md). */
    return mem_instant(c, "[memory]", p->ts, p->tid, -1, p->address, 0, c->region_allocated,
                       c->heap_reserved);
}

static tp_status on_region(void *cx, const tp_rec_hdr *h) {
    ctx *c = cx;
    const tp_rec_region *g = (const void *)h;
    int64_t delta;
    if (!tp_region_map_apply(&c->regions, g->address, g->size, g->op == TP_REGION_UNREGISTER,
                             &delta))
        return TP_ERR_NOMEM;
    c->region_allocated += delta;
    return mem_instant(c, "[memory]", g->ts, g->tid, -1, g->address, delta, c->region_allocated,
                       c->heap_reserved);
}

static tp_status on_alloc_fail(void *cx, const tp_rec_hdr *h) {
    const tp_rec_alloc_fail *f = (const void *)h;
    return mem_instant(cx, "[OutOfMemory]", f->ts, f->tid, f->device, 0, (int64_t)f->requested,
                       (int64_t)(f->reserved_bytes - f->free_bytes), (int64_t)f->reserved_bytes);
}

/* ---------------------------------------------------------------- other records */

static tp_status on_counter(void *cx, const tp_rec_hdr *h) {
    ctx *c = cx;
    const tp_rec_counter *k = (const void *)h;
    const char *name = sid_or(c, k->name_sid, "counter");
    ev_begin(c, 'C', "counter", name);
    ev_where(c, c->pid, k->tid, k->ts, NULL);
    out_str(c->w, ", \"args\": {");
    out_jstr(c->w, name);
    if (h->flags & TP_COUNTER_F64) {
        double v;
        memcpy(&v, &k->value, sizeof v);
        out_fmt(c->w, ": %.17g}}", v == v && v - v == 0 ? v : 0.0); /* no NaN/inf in JSON */
    } else {
        out_fmt(c->w, ": %" PRId64 "}}", (int64_t)k->value);
    }
    return written(c);
}

/* A sample of `record --sample` (a Python thread's or a native one's): its thread's CPU share
 * over its period, a counter event at the period's start ("CPU % TID NAME": Chrome's counters
 * are per process, one track per name). */
static tp_status on_sample(void *cx, const tp_rec_hdr *h) {
    ctx *c = cx;
    tp_rec_sample s;
    tp_record_get(h, &s, sizeof s);
    if (!s.period_ns || s.period_ns > s.ts)
        return TP_OK;
    const char *tname = tp_reader_thread_name(c->r, s.tid);
    char name[96];
    snprintf(name, sizeof name, "CPU %% %u %s", s.tid, tname ? tname : "");
    ev_begin(c, 'C', "cpu", name);
    ev_where(c, c->pid, s.tid, s.ts - s.period_ns, NULL);
    out_fmt(c->w, ", \"args\": {\"cpu\": %" PRId64 "}}", tp_sample_cpu_pct(&s));
    return written(c);
}

static tp_status on_overhead(void *cx, const tp_rec_hdr *h) {
    ctx *c = cx;
    const tp_rec_overhead *o = (const void *)h;
    ev_begin(c, 'X', "overhead", sid_or(c, o->name_sid, "trainprof overhead"));
    ev_where(c, c->pid, o->tid, o->ts, &o->end);
    out_fmt(c->w, ", \"args\": {\"kind\": %" PRIu32 "}}", o->kind);
    return written(c);
}

static tp_status on_dropped(void *cx, const tp_rec_hdr *h) {
    ctx *c = cx;
    const tp_rec_dropped *d = (const void *)h;
    const char *what = d->what ? tp_record_name((uint16_t)d->what) : "any";
    ev_begin(c, 'i', "trainprof", "trainprof dropped records");
    ev_where(c, c->pid, 0, d->ts, NULL);
    out_fmt(c->w, ", \"s\": \"p\", \"args\": {\"count\": %" PRIu64 ", \"what\": ", d->count);
    out_jstr(c->w, what ? what : "unknown");
    out_fmt(c->w, ", \"reason\": %" PRIu32 "}}", d->reason);
    return written(c);
}

/* ---------------------------------------------------------------- metadata events */

static tp_status meta(ctx *c, const char *what, int64_t pid, int64_t tid, const char *name) {
    ev_begin(c, 'M', "__metadata", what);
    out_fmt(c->w,
            ", \"pid\": %" PRId64 ", \"tid\": %" PRId64 ", \"ts\": 0, \"args\": {\"name\": ", pid,
            tid);
    out_jstr(c->w, name);
    out_str(c->w, "}}");
    return written(c);
}

/* A process of a recording written with others is named with its role, "python3 (main)" /
 * "python3 (worker of 4100)", and sorted in the order given (the main process first). */
static tp_status on_process(void *cx, const tp_rec_hdr *h) {
    ctx *c = cx;
    tp_rec_process p;
    tp_record_get(h, &p, sizeof p);
    const char *exe = tp_reader_string(c->r, p.exe_sid);
    const char *base = exe && strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
    if (c->n_procs < 2)
        return meta(c, "process_name", p.pid, 0, base ? base : "process");
    char name[512];
    int rank = job_rank(c), worker = p.root_pid && p.pid != p.root_pid;
    if (rank >= 0 && !worker)
        snprintf(name, sizeof name, "rank %d", rank);
    else if (rank >= 0)
        snprintf(name, sizeof name, "rank %d: %s (worker of %" PRIu32 ")", rank,
                 base ? base : "process", p.ppid);
    else if (worker)
        snprintf(name, sizeof name, "%s (worker of %" PRIu32 ")", base ? base : "process", p.ppid);
    else
        snprintf(name, sizeof name, "%s (main)", base ? base : "process");
    if (p.pid && (int64_t)p.pid != c->pid) { /* another rank had its pid: say which it was */
        size_t l = strlen(name);
        snprintf(name + l, sizeof name - l, " (pid %" PRIu32 ")", p.pid);
    }
    tp_status st = meta(c, "process_name", c->pid, 0, name);
    if (st != TP_OK)
        return st;
    ev_begin(c, 'M', "__metadata", "process_sort_index");
    out_fmt(c->w,
            ", \"pid\": %" PRId64 ", \"tid\": 0, \"ts\": 0, \"args\": {\"sort_index\": %" PRIu64
            "}}",
            c->pid, c->id_base >> 32);
    return written(c);
}

/* A renamed thread is written once, under its latest name, where its last record was. */
static tp_status on_thread(void *cx, const tp_visit_thread *t) {
    return t->last && t->name ? meta(cx, "thread_name", ((ctx *)cx)->pid, t->rec->tid, t->name)
                              : TP_OK;
}

static tp_status on_device(void *cx, const tp_rec_hdr *h) {
    const tp_rec_device *d = (const void *)h;
    char buf[64];
    snprintf(buf, sizeof buf, "%s %" PRIu32, d->kind == TP_DEVICE_GPU ? "GPU" : "Device", d->id);
    if (job_rank(cx) >= 0) {
        size_t l = strlen(buf);
        snprintf(buf + l, sizeof buf - l, " (rank %d)", job_rank(cx));
    }
    return meta(cx, "process_name", dev_pid(cx, d->id), 0, buf);
}

static tp_status on_stream(void *cx, const tp_rec_hdr *h) {
    const tp_rec_stream *s = (const void *)h;
    char buf[64];
    snprintf(buf, sizeof buf, "stream %" PRIu32, s->stream);
    return meta(cx, "thread_name", dev_pid(cx, s->device), s->stream, buf);
}

/* The trace: metadata events, then every record, then the ranges left open. */
static const tp_visitor events = {
    .meta =
        {
            [TP_REC_PROCESS] = on_process,
            [TP_REC_DEVICE] = on_device,
            [TP_REC_STREAM] = on_stream,
        },
    .thread = on_thread,
    .data =
        {
            [TP_REC_KERNEL] = on_kernel,
            [TP_REC_MEMCPY] = on_memcpy,
            [TP_REC_MEMSET] = on_memset,
            [TP_REC_SYNC] = on_sync,
            [TP_REC_API] = on_api,
            [TP_REC_NVTX_MARK] = on_mark,
            [TP_REC_DEVICE_MEM] = on_device_mem,
            [TP_REC_HEAP] = on_heap,
            [TP_REC_REGION] = on_region,
            [TP_REC_ALLOC_FAIL] = on_alloc_fail,
            [TP_REC_COUNTER] = on_counter,
            [TP_REC_SAMPLE] = on_sample,
            [TP_REC_OVERHEAD] = on_overhead,
            [TP_REC_DROPPED] = on_dropped,
        }, /* CLOCK_SYNC goes to baseTimeNanoseconds; unknown types are skipped */
    .range = on_range,
};

/* ---------------------------------------------------------------- header and footer */

static tp_status head_process(void *cx, const tp_rec_hdr *h) {
    ctx *c = cx;
    if (!c->have_process)
        c->process = *(const tp_rec_process *)(const void *)h;
    c->have_process = 1;
    return TP_OK;
}

static tp_status head_device(void *cx, const tp_rec_hdr *h) {
    ctx *c = cx;
    const tp_rec_device *d = (const void *)h;
    for (int i = 0; i < c->n_devices && i < MAX_DEVICES; i++)
        if (c->device_ids[i] == d->id) /* a recording's processes share their devices */
            return TP_OK;
    if (c->n_devices < MAX_DEVICES)
        c->device_ids[c->n_devices] = d->id;
    out_fmt(c->w, "%s\n    {\"id\": %" PRIu32 ", \"name\": ", c->n_devices++ ? "," : "", d->id);
    out_jstr(c->w, sid_or(c, d->name_sid, ""));
    out_fmt(c->w,
            ", \"totalGlobalMem\": %" PRIu64 ", \"computeMajor\": %" PRIu32
            ", \"computeMinor\": %" PRIu32 ", \"numSms\": %" PRIu32 "}",
            d->global_memory_bytes, d->compute_capability / 10, d->compute_capability % 10,
            d->sm_count);
    return written(c);
}

/* Kineto: wall-clock ns of an event = baseTimeNanoseconds + ts * 1000. */
static tp_status head_clock(void *cx, const tp_rec_hdr *h) {
    ctx *c = cx;
    const tp_rec_clock_sync *s = (const void *)h;
    if (!c->have_clock)
        c->base_time_ns = (int64_t)(s->realtime_ns - s->ts);
    c->have_clock = 1;
    return TP_OK;
}

/* What the header and footer need: devices, the first process and the first clock sync. */
static const tp_visitor header = {
    .meta =
        {
            [TP_REC_PROCESS] = head_process,
            [TP_REC_DEVICE] = head_device,
            [TP_REC_CLOCK_SYNC] = head_clock,
        },
};

/* The environment of the main trace (ENV records, the latest of each key) as
 * "trainprofEnvironment": [{"device", "key", "value"}], device -1 for the process; trainprof's
 * Kineto importer reads it back as it was (other tools ignore an unknown top-level key). */
static void write_env(ctx *c, const tp_reader *r) {
    const tp_rec_hdr *const *v;
    size_t n = tp_reader_meta(r, TP_REC_ENV, &v), k = 0;
    for (size_t i = 0; i < n; i++) {
        const tp_rec_env *e = (const void *)v[i];
        if (tp_env_superseded(r, v[i]))
            continue;
        out_fmt(c->w,
                "%s\n    {\"device\": %lld, \"key\": ", k++ ? "," : "  \"trainprofEnvironment\": [",
                e->device == TP_ENV_PROCESS ? -1LL : (long long)e->device);
        out_jstr(c->w, sid_or(c, e->key_sid, ""));
        out_str(c->w, ", \"value\": ");
        out_jstr(c->w, sid_or(c, e->value_sid, ""));
        out_str(c->w, "}");
    }
    if (k)
        out_str(c->w, "\n  ],\n");
}

/* The header: the devices of every trace of the set, the main (first) one's process and
 * clock, and its environment. */
static tp_status write_header(ctx *c, tp_reader *const *r, size_t n) {
    out_str(c->w, "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [");
    tp_status st = TP_OK;
    for (size_t k = 0; k < n && st == TP_OK; k++) {
        c->r = r[k];
        st = tp_visit_run(c->r, &header, c, NULL);
    }
    c->r = r[0];
    out_str(c->w, c->n_devices ? "\n  ],\n" : "],\n");
    write_env(c, r[0]);
    if (c->have_process) {
        c->pid = c->process.pid;
        /* `"rank": N` with one space: HTA finds the rank with a regex over the text; a job's
         * file is no one rank's */
        if (c->process.rank >= 0 && !c->job)
            out_fmt(c->w,
                    "  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": %" PRId32
                    ", \"world_size\": %" PRId32 "},\n",
                    c->process.rank, c->process.world_size);
    }
    out_str(c->w, "  \"traceEvents\": [");
    return st;
}

static void write_footer(ctx *c, tp_reader *const *r, size_t n) {
    uint64_t dropped = 0;
    for (size_t k = 0; k < n; k++)
        dropped += tp_reader_info(r[k])->dropped_total;
    out_str(c->w, "\n  ],\n  \"displayTimeUnit\": \"ms\"");
    if (c->have_clock) /* the first trace's wall clock, less what its times were moved by */
        out_fmt(c->w, ",\n  \"baseTimeNanoseconds\": %" PRId64,
                c->base_time_ns - (int64_t)tp_export_job_shift(c->job, n, 0));
    out_fmt(c->w, ",\n  \"trainprof\": {\"dropped\": %" PRIu64 "}\n}\n", dropped);
}

/* The events of every trace of the set, each under its own process (its PROCESS pid), with
 * its correlation and flow ids moved past those of the ones before (id_base). */
/* The job's utilization samples of trace c->k, as counter events on its devices' pids. */
static void write_util(ctx *c) {
    for (size_t i = 0; c->job && i < c->job->n_util; i++) {
        const tp_export_util *u = &c->job->util[i];
        if (u->trace != c->k)
            continue;
        char name[48];
        snprintf(name, sizeof name, "GPU %d utilization (%%)", (int)u->device);
        ev_begin(c, 'C', "utilization", name);
        ev_where(c, dev_pid(c, (uint32_t)u->device), 0, u->ts, NULL);
        out_fmt(c->w, ", \"args\": {\"utilization\": %.17g}}", 100.0 * u->util);
    }
}

static tp_status write_events(ctx *c, tp_reader *const *r, size_t n) {
    tp_status st = TP_OK;
    int64_t *taken = calloc(n, sizeof *taken);
    if (!taken)
        return TP_ERR_NOMEM;
    for (size_t k = 0; k < n && st == TP_OK; k++) {
        const tp_rec_hdr *const *recs;
        c->r = r[k];
        c->k = k;
        c->shift = tp_export_job_shift(c->job, n, k);
        c->id_base = (uint64_t)k << 32;
        if (tp_reader_meta(c->r, TP_REC_PROCESS, &recs) > 0)
            c->pid = ((const tp_rec_process *)(const void *)recs[0])->pid;
        if (c->job)
            c->pid = taken[k] = tp_export_job_pid(c->job, r, k, taken);
        c->t_last = 0; /* state of one process: its last time, its memory totals */
        tp_region_map_free(&c->regions);
        kname_reset(c);
        memset(c->dev_allocated, 0, sizeof c->dev_allocated);
        c->region_allocated = c->heap_reserved = 0;
        tp_visit_stats vs;
        st = tp_visit_run(c->r, &events, c, &vs);
        c->st.nvtx_unclosed += vs.nvtx_unclosed;
        c->st.nvtx_unpaired += vs.nvtx_unpaired;
        write_util(c);
    }
    free(taken);
    return st;
}

/* The caller's memory counters, one Chrome counter event each (Perfetto draws a track per
 * name and a series per argument). */
static void write_counters(ctx *c) {
    for (size_t i = 0; i < c->n_cnt; i++) {
        const tp_export_counter *k = &c->cnt[i];
        char name[48];
        if (k->device >= 0)
            snprintf(name, sizeof name, "device %d memory", (int)k->device);
        else
            snprintf(name, sizeof name, "device memory");
        ev_begin(c, 'C', "memory", name);
        ev_where(c, k->pid, 0, k->ts, NULL);
        out_fmt(c->w, ", \"args\": {\"allocated\": %" PRId64, k->allocated);
        if (k->reserved >= 0)
            out_fmt(c->w, ", \"reserved\": %" PRId64, k->reserved);
        out_str(c->w, "}}");
    }
}

static void set_err(char *err, size_t n, const char *path, const char *what) {
    if (err && n)
        snprintf(err, n, "%s: %s", path, what);
}

/* Opens `path` as a plain or parallel-gzip stream (tp_ostream); *regular says whether it is
 * a regular file, the only kind a failed export may remove (never a device such as /dev/full,
 * which root could otherwise delete). */
static tp_ostream *open_output(const char *path, int gzip, int *regular) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    struct stat sb;
    *regular = fd >= 0 && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode);
    tp_ostream *os = NULL;
    if (fd >= 0 && tp_ostream_open(&os, fd, gzip, 0) != TP_OK)
        errno = ENOMEM;
    return os;
}

tp_status tp_export_chrome(tp_reader *r, const char *path, int gzip, tp_export_stats *stats,
                           char *err, size_t err_size) {
    return tp_export_chrome_set(&r, 1, path, gzip, stats, err, err_size);
}

tp_status tp_export_chrome_set(tp_reader *const *r, size_t n, const char *path, int gzip,
                               tp_export_stats *stats, char *err, size_t err_size) {
    return tp_export_chrome_counters(r, n, path, gzip, NULL, 0, stats, err, err_size);
}

tp_status tp_export_chrome_counters(tp_reader *const *r, size_t n, const char *path, int gzip,
                                    const tp_export_counter *counters, size_t n_counters,
                                    tp_export_stats *stats, char *err, size_t err_size) {
    return tp_export_chrome_job(r, n, NULL, counters, n_counters, path, gzip, stats, err, err_size);
}

tp_status tp_export_chrome_job(tp_reader *const *r, size_t n, const tp_export_job *job,
                               const tp_export_counter *counters, size_t n_counters,
                               const char *path, int gzip, tp_export_stats *stats, char *err,
                               size_t err_size) {
    int regular;
    tp_ostream *os = open_output(path, gzip, &regular);
    if (!os) {
        char what[160];
        snprintf(what, sizeof what, "cannot create file: %s", strerror(errno));
        set_err(err, err_size, path, what);
        return TP_ERR_OPEN;
    }
    jout *w = malloc(sizeof *w);
    ctx *c = calloc(1, sizeof *c);
    tp_status st = TP_ERR_NOMEM;
    if (!w || !c)
        goto done;
    w->os = os, w->failed = 0, w->err_no = 0, w->n = 0;
    c->w = w, c->r = r[0], c->first = 1, c->n_procs = n;
    c->cnt = counters, c->n_cnt = n_counters, c->job = job;
    st = write_header(c, r, n);
    if (st == TP_OK)
        st = write_events(c, r, n);
    if (st == TP_OK)
        write_counters(c);
    write_footer(c, r, n);
    out_flush(w);
    if (st == TP_OK && w->failed)
        st = TP_ERR_IO;
done:;
    int err_no;
    tp_status cst = tp_ostream_close(os, &err_no);
    if (cst != TP_OK && (st == TP_OK || (w && w->failed)))
        st = cst; /* the stream's failure says why (errno) */
    if (w)
        w->err_no = err_no;
    if (st != TP_OK) {
        set_err(err, err_size, path, tp_status_why(st, st == TP_ERR_IO && w ? w->err_no : 0));
        if (regular)
            unlink(path);
    } else if (stats) {
        *stats = c->st;
    }
    if (c) {
        tp_region_map_free(&c->regions);
        kname_reset(c);
    }
    free(c), free(w);
    return st;
}
