/* tp_export_perfetto: see tp_export_perfetto.h; the mapping is in docs/export.md.
 *
 * The protobuf encoding is written here by hand, for the few messages used (TracePacket,
 * TrackDescriptor, TrackEvent, InternedData and their parts): a varint writer is a page of
 * code, while protobuf-c would need the schema compiled at build time for ~15 fields
 * (docs/export.md says why). Field numbers are those of perfetto/protos (trace_packet.proto,
 * track_descriptor.proto, track_event.proto, interned_data.proto, profile_common.proto); the
 * test decodes our output with the official perfetto_trace_pb2.
 *
 * Ordering: within a track, events are written in time order, so a consumer that sorts
 * stably by timestamp sees every end after its begin. The collector writes a thread's own
 * records in time order, but CUPTI's come in buffers that complete out of order (API calls,
 * syncs, overhead, a stream's ops, cudaMalloc counters: seen on the first GPU run). So a
 * trace with GPU devices is first walked without writing (`probe`), to find the tracks whose
 * events would go back in time; in the writing walk those tracks' packets are held
 * (`spill`) and written after the process's other packets, sorted by time (ties in the
 * order they came), their interned names and frames written at once in packets of their
 * own. A trace of in-order tracks (every CPU-device recording) is written in one walk. */
#include "tp_export_perfetto.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tp_hash.h"
#include "tp_demangle.h"
#include "tp_kineto_names.h"
#include "tp_mem.h"
#include "tp_pairing.h"
#include "tp_visit.h"

/* ---------------------------------------------------------------- protobuf writer */

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2 };

typedef struct {
    uint8_t *p;
    size_t n, cap;
    int nomem;
} pbuf;

static void pb_put(pbuf *b, const void *s, size_t n) {
    if (!n)
        return;
    if (b->nomem || !tp_mem_grow((void **)&b->p, &b->cap, b->n + n, 1)) {
        b->nomem = 1;
        return;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

static void pb_varint(pbuf *b, uint64_t v) {
    uint8_t tmp[10];
    size_t n = 0;
    do {
        tmp[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    pb_put(b, tmp, n);
}

static void pb_tag(pbuf *b, unsigned field, unsigned wt) {
    pb_varint(b, ((uint64_t)field << 3) | wt);
}

/* uint32/uint64/int32 >= 0/enum/bool fields; int64 goes as its two's complement, as
 * protobuf's int64 does. */
static void pb_uint(pbuf *b, unsigned field, uint64_t v) {
    pb_tag(b, field, WT_VARINT);
    pb_varint(b, v);
}

static void pb_fixed64(pbuf *b, unsigned field, uint64_t v) {
    uint8_t le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (uint8_t)(v >> (8 * i));
    pb_tag(b, field, WT_I64);
    pb_put(b, le, 8);
}

static void pb_double(pbuf *b, unsigned field, double d) {
    uint64_t v;
    memcpy(&v, &d, sizeof v);
    pb_fixed64(b, field, v);
}

static void pb_bytes(pbuf *b, unsigned field, const void *s, size_t n) {
    pb_tag(b, field, WT_LEN);
    pb_varint(b, n);
    pb_put(b, s, n);
}

/* A string field; protobuf strings must be UTF-8, so invalid bytes become U+FFFD. */
static void pb_str(pbuf *b, unsigned field, const char *s) {
    const unsigned char *u = (const unsigned char *)s;
    size_t n = strlen(s), bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += u[i] >= 0x80; /* cheap upper bound; exact check below only when needed */
    if (!bad) {
        pb_bytes(b, field, s, n);
        return;
    }
    pbuf t = {0};
    for (size_t i = 0; i < n;) {
        unsigned c = u[i];
        size_t len = c < 0x80             ? 1
                     : (c & 0xe0) == 0xc0 ? 2
                     : (c & 0xf0) == 0xe0 ? 3
                     : (c & 0xf8) == 0xf0 ? 4
                                          : 0;
        int ok = len && i + len <= n && !(len == 2 && c < 0xc2);
        for (size_t j = 1; ok && j < len; j++)
            ok = (u[i + j] & 0xc0) == 0x80;
        if (ok) {
            pb_put(&t, u + i, len);
            i += len;
        } else {
            pb_put(&t, "\xef\xbf\xbd", 3);
            i++;
        }
    }
    pb_bytes(b, field, t.p ? (const char *)t.p : "", t.n);
    b->nomem |= t.nomem;
    free(t.p);
}

/* A nested message: `sub` written as field `field` of `b`, then emptied for reuse. */
static void pb_msg(pbuf *b, unsigned field, pbuf *sub) {
    pb_bytes(b, field, sub->p ? (const char *)sub->p : "", sub->n);
    b->nomem |= sub->nomem;
    sub->n = 0;
    sub->nomem = 0;
}

/* ---------------------------------------------------------------- u64 -> u64 map */

/* Open addressing with linear probing; key 0 is never stored (callers' keys are hashes or
 * ids offset by one). Holds the interned ids and the tracks already described. */
typedef struct {
    uint64_t *key, *val;
    size_t cap, n;
} u64map;

static uint64_t *map_find(u64map *m, uint64_t key) {
    if (!m->cap)
        return NULL;
    for (size_t i = tp_hash_mix64(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (m->key[i] == key)
            return &m->val[i];
        if (!m->key[i])
            return NULL;
    }
}

static int map_put(u64map *m, uint64_t key, uint64_t val) {
    if (2 * (m->n + 1) > m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 256;
        u64map g = {tp_mem_calloc(cap, sizeof *g.key), tp_mem_calloc(cap, sizeof *g.val), cap, 0};
        if (!g.key || !g.val) {
            free(g.key), free(g.val);
            return -1;
        }
        for (size_t i = 0; i < m->cap; i++)
            if (m->key[i])
                map_put(&g, m->key[i], m->val[i]);
        free(m->key), free(m->val);
        *m = g;
    }
    size_t i = tp_hash_mix64(key) & (m->cap - 1);
    while (m->key[i] && m->key[i] != key)
        i = (i + 1) & (m->cap - 1);
    m->n += !m->key[i];
    m->key[i] = key, m->val[i] = val;
    return 0;
}

static void map_clear(u64map *m) {
    free(m->key), free(m->val);
    memset(m, 0, sizeof *m);
}

/* ---------------------------------------------------------------- state */

/* Field numbers (perfetto/protos). */
enum {
    F_TRACE_PACKET = 1,
    /* TracePacket */
    P_TIMESTAMP = 8,
    P_SEQ_ID = 10,
    P_TRACK_EVENT = 11,
    P_INTERNED = 12,
    P_SEQ_FLAGS = 13,
    P_TRACK_DESCRIPTOR = 60,
    P_PERF_SAMPLE = 66,
    /* PerfSample (profile_packet.proto) */
    PS_PID = 2,
    PS_TID = 3,
    PS_CALLSTACK_IID = 4,
    /* TrackDescriptor */
    TD_UUID = 1,
    TD_NAME = 2,
    TD_PROCESS = 3,
    TD_THREAD = 4,
    TD_PARENT = 5,
    TD_COUNTER = 8,
    /* ProcessDescriptor / ThreadDescriptor / CounterDescriptor */
    PD_PID = 1,
    PD_CMDLINE = 2,
    PD_NAME = 6,
    THD_PID = 1,
    THD_TID = 2,
    THD_NAME = 5,
    CD_UNIT = 3,
    /* TrackEvent */
    TE_ANNOTATION = 4,
    TE_TYPE = 9,
    TE_NAME_IID = 10,
    TE_TRACK = 11,
    TE_CATEGORY = 22,
    TE_NAME = 23,
    TE_COUNTER = 30,
    TE_DCOUNTER = 44,
    TE_FLOW = 47,
    TE_FLOW_END = 48,
    TE_CALLSTACK_IID = 56,
    /* DebugAnnotation */
    DA_UINT = 3,
    DA_INT = 4,
    DA_STRING = 6,
    DA_NAME = 10,
    /* InternedData and its entries */
    ID_EVENT_NAMES = 2,
    ID_FUNCTION_NAMES = 5,
    ID_FRAMES = 6,
    ID_CALLSTACKS = 7,
    ID_BUILD_IDS = 16,
    ID_MAPPING_PATHS = 17,
    ID_MAPPINGS = 19,
    IS_IID = 1, /* InternedString, EventName, Frame, Callstack, Mapping: iid = 1 */
    IS_STR = 2, /* InternedString.str, EventName.name */
    FR_FUNCTION = 2,
    FR_MAPPING = 3,
    FR_REL_PC = 4,
    CS_FRAMES = 2,
    MP_BUILD_ID = 2,
    MP_START = 4,
    MP_END = 5,
    MP_PATHS = 7,
};

enum { TE_SLICE_BEGIN = 1, TE_SLICE_END = 2, TE_INSTANT = 3, TE_COUNTER_TYPE = 4 };
enum { SEQ_CLEARED = 1, SEQ_NEEDS_STATE = 2 };
enum { UNIT_COUNT = 2, UNIT_BYTES = 3 };

/* Kinds of track, hashed with the process index and the kind's own ids into a track uuid. */
enum {
    TK_PROCESS = 1,
    TK_THREAD,
    TK_DOMAIN,
    TK_API,
    TK_SYNC,
    TK_OVERHEAD,
    TK_LANE,
    TK_DEVICE,
    TK_STREAM,
    TK_COUNTER,
    TK_DEVMEM,
    TK_ALLOCATED,
    TK_RESERVED,
    TK_UTIL,
    TK_CPU,
};

#define MAX_DEVICES 64
#define MAX_LANES 256 /* concurrent start/end ranges of one process before they share lanes */

/* A held packet (track order, see the top): its time, its rank among the held, its bytes. */
typedef struct {
    uint64_t ts, order;
    size_t off, len;
} spill_ent;

typedef struct {
    FILE *f;
    int failed, err_no;
    pbuf out, pkt, te, sub, sub2, intern; /* scratch, reused for every packet */
    tp_reader *r;
    uint64_t k;      /* index of this process in the recording */
    uint32_t seq;    /* this process's packet sequence (k + 1) */
    int seq_started; /* its first packet carried SEQ_CLEARED */
    int64_t pid;     /* its PROCESS pid (another when that one is taken, in a job) */
    size_t n_procs;
    const tp_export_job *job; /* NULL: one recording */
    uint64_t shift;           /* added to its times (job clock) */
    uint64_t t_last;          /* its latest time seen */
    u64map tracks;            /* uuid -> 1: described */
    u64map names;             /* interned event names: string id -> 1 */
    u64map frames;            /* interned frames: frame key -> iid */
    u64map stacks;            /* interned callstacks: stack id -> 1 */
    u64map mappings;          /* interned mappings: module id + 1 -> 1 */
    uint64_t next_iid;
    uint64_t lane_end[MAX_LANES]; /* end of the last range on each start/end lane */
    tp_region_map regions;
    int64_t dev_allocated[MAX_DEVICES], region_allocated, heap_reserved;
    tp_perfetto_stats st;
    /* track order (see the top): */
    int probe;       /* this walk writes nothing: it only finds the late tracks */
    u64map last_ts;  /* probe: track uuid -> its latest event time */
    u64map late;     /* tracks whose events come out of time order: uuid -> 1 */
    uint64_t cur_ts; /* the packet being built: its time, and whether it is held */
    int cur_held;
    pbuf spill;      /* held packets, each as written to the output */
    spill_ent *held; /* their times and places in `spill` */
    size_t n_held, cap_held;
} ctx;

static tp_status status(const ctx *c) {
    if (c->out.nomem || c->pkt.nomem || c->te.nomem || c->intern.nomem || c->spill.nomem)
        return TP_ERR_NOMEM;
    return c->failed ? TP_ERR_IO : TP_OK;
}

static void flush_out(ctx *c) {
    if (c->out.n && !c->failed && fwrite(c->out.p, 1, c->out.n, c->f) != c->out.n) {
        c->failed = 1;
        c->err_no = errno;
    }
    c->out.n = 0;
}

/* Ends the packet built in c->pkt (plus c->intern when it holds interned entries) on this
 * process's sequence and appends it to the output. */
static void seq_fields(ctx *c, int uses_state) {
    pb_uint(&c->pkt, P_SEQ_ID, c->seq);
    if (!c->seq_started) {
        pb_uint(&c->pkt, P_SEQ_FLAGS, SEQ_CLEARED | (uses_state ? SEQ_NEEDS_STATE : 0));
        c->seq_started = 1;
    } else if (uses_state) {
        pb_uint(&c->pkt, P_SEQ_FLAGS, SEQ_NEEDS_STATE);
    }
}

static void packet_end(ctx *c, int uses_state) {
    if (c->probe) { /* nothing written: the buffers are only emptied */
        c->pkt.n = c->intern.n = 0;
        c->cur_held = 0;
        return;
    }
    pbuf *dst = &c->out;
    if (c->cur_held) {
        /* the interned entries go out now, before any packet (held or not) that uses them */
        if (c->intern.n) {
            pbuf ev = c->pkt; /* the event waits in its own buffer meanwhile */
            c->pkt = (pbuf){0};
            pb_msg(&c->pkt, P_INTERNED, &c->intern);
            seq_fields(c, 1);
            pb_msg(&c->out, F_TRACE_PACKET, &c->pkt);
            free(c->pkt.p);
            c->pkt = ev;
            c->intern.n = 0;
        }
        dst = &c->spill;
        if (c->n_held == c->cap_held) {
            size_t cap = c->cap_held ? 2 * c->cap_held : 1024;
            spill_ent *h = realloc(c->held, cap * sizeof *h);
            if (!h) {
                c->spill.nomem = 1;
                return;
            }
            c->held = h, c->cap_held = cap;
        }
        c->held[c->n_held] = (spill_ent){c->cur_ts, c->n_held, c->spill.n, 0};
    }
    if (c->intern.n)
        pb_msg(&c->pkt, P_INTERNED, &c->intern);
    seq_fields(c, uses_state);
    pb_msg(dst, F_TRACE_PACKET, &c->pkt);
    if (c->cur_held) {
        c->held[c->n_held].len = c->spill.n - c->held[c->n_held].off;
        c->n_held++;
        c->cur_held = 0;
    }
    c->st.packets++;
    if (c->out.n > (1u << 20))
        flush_out(c);
}

static int cmp_held(const void *a, const void *b) {
    const spill_ent *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return (x->order > y->order) - (x->order < y->order);
}

/* The held packets, by time, after the process's others (see the top). */
static void write_held(ctx *c) {
    if (!c->n_held) /* (qsort's array must not be NULL, even empty: UBSan) */
        return;
    qsort(c->held, c->n_held, sizeof *c->held, cmp_held);
    for (size_t i = 0; i < c->n_held; i++) {
        pb_put(&c->out, c->spill.p + c->held[i].off, c->held[i].len);
        if (c->out.n > (1u << 20))
            flush_out(c);
    }
    c->n_held = 0;
    c->spill.n = 0;
}

static uint64_t uuid(const ctx *c, uint64_t kind, uint64_t a, uint64_t b) {
    uint64_t w[4] = {kind, c->k, a, b};
    uint64_t u = tp_hash_u64s(w, 4, 0x7072667400000000ull);
    return u ? u : 1;
}

static const char *str(const ctx *c, uint32_t sid, const char *dflt) {
    const char *s = sid ? tp_reader_string(c->r, sid) : NULL;
    return s ? s : dflt;
}

/* ---------------------------------------------------------------- tracks */

/* Describes track `u` once: `sub` (c->sub) already holds its process/thread/counter part,
 * written as field `part` (0: none). */
static void describe(ctx *c, uint64_t u, uint64_t parent, const char *name, unsigned part) {
    pb_uint(&c->te, TD_UUID, u);
    if (parent)
        pb_uint(&c->te, TD_PARENT, parent);
    if (name)
        pb_str(&c->te, TD_NAME, name);
    if (part)
        pb_msg(&c->te, part, &c->sub);
    pb_msg(&c->pkt, P_TRACK_DESCRIPTOR, &c->te);
    packet_end(c, 0);
    c->st.tracks++;
    if (map_put(&c->tracks, u, 1) != 0)
        c->out.nomem = 1;
}

static int described(ctx *c, uint64_t u) {
    return map_find(&c->tracks, u) != NULL;
}

static uint64_t process_track(ctx *c) {
    uint64_t u = uuid(c, TK_PROCESS, 0, 0);
    if (described(c, u))
        return u;
    const tp_rec_hdr *const *recs;
    tp_rec_process p = {0};
    if (tp_reader_meta(c->r, TP_REC_PROCESS, &recs) > 0)
        tp_record_get(recs[0], &p, sizeof p);
    const char *exe = str(c, p.exe_sid, "process");
    const char *base = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
    char name[512];
    int rank = c->job && c->job->place ? c->job->place[c->k].rank : -1;
    int worker = p.root_pid && p.pid != p.root_pid;
    if (rank >= 0 && !worker)
        snprintf(name, sizeof name, "rank %d", rank);
    else if (rank >= 0)
        snprintf(name, sizeof name, "rank %d: %s (worker of %u)", rank, base, (unsigned)p.ppid);
    else if (c->n_procs > 1 && worker)
        snprintf(name, sizeof name, "%s (worker of %u)", base, (unsigned)p.ppid);
    else if (c->n_procs > 1)
        snprintf(name, sizeof name, "%s (main)", base);
    else
        snprintf(name, sizeof name, "%s", base);
    if (p.pid && (int64_t)p.pid != c->pid) { /* its pid was another rank's: say which it was */
        size_t l = strlen(name);
        snprintf(name + l, sizeof name - l, " (pid %u)", (unsigned)p.pid);
    }
    if (rank < 0 && p.rank >= 0 && p.world_size > 0) {
        size_t l = strlen(name);
        snprintf(name + l, sizeof name - l, " [rank %d]", (int)p.rank);
    }
    pb_uint(&c->sub, PD_PID, (uint64_t)c->pid);
    pb_str(&c->sub, PD_CMDLINE, exe);
    pb_str(&c->sub, PD_NAME, name);
    describe(c, u, 0, NULL, TD_PROCESS);
    return u;
}

static uint64_t thread_track(ctx *c, uint32_t tid) {
    uint64_t u = uuid(c, TK_THREAD, tid, 0);
    if (described(c, u))
        return u;
    uint64_t parent = process_track(c);
    const char *tname = tp_reader_thread_name(c->r, tid);
    pb_uint(&c->sub, THD_PID, (uint64_t)c->pid);
    pb_uint(&c->sub, THD_TID, tid);
    if (tname)
        pb_str(&c->sub, THD_NAME, tname);
    describe(c, u, parent, NULL, TD_THREAD);
    return u;
}

/* A named child of thread `tid` (CUDA API, syncs, overhead, an NVTX domain). */
static uint64_t thread_child(ctx *c, uint32_t tid, uint64_t kind, uint64_t id, const char *name) {
    uint64_t u = uuid(c, kind, tid, id);
    if (!described(c, u))
        describe(c, u, thread_track(c, tid), name, 0);
    return u;
}

static uint64_t device_track(ctx *c, uint32_t dev) {
    uint64_t u = uuid(c, TK_DEVICE, dev, 0);
    if (described(c, u))
        return u;
    char name[96];
    snprintf(name, sizeof name, "GPU %u", dev);
    if (c->job && c->job->place && c->job->place[c->k].rank >= 0) {
        size_t l = strlen(name);
        snprintf(name + l, sizeof name - l, " (rank %d, pid %lld)", c->job->place[c->k].rank,
                 (long long)c->pid);
    } else if (c->n_procs > 1) {
        size_t l = strlen(name);
        snprintf(name + l, sizeof name - l, " (pid %lld)", (long long)c->pid);
    }
    describe(c, u, 0, name, 0);
    return u;
}

static uint64_t stream_track(ctx *c, uint32_t dev, uint64_t stream) {
    uint64_t u = uuid(c, TK_STREAM, dev, stream);
    if (described(c, u))
        return u;
    char name[64];
    snprintf(name, sizeof name, "stream %llu", (unsigned long long)stream);
    describe(c, u, device_track(c, dev), name, 0);
    return u;
}

static uint64_t counter_track(ctx *c, uint64_t kind, uint64_t id, const char *name, int unit) {
    uint64_t u = uuid(c, kind, id, 0);
    if (described(c, u))
        return u;
    uint64_t parent = process_track(c); /* before c->sub is filled: it may use c->sub */
    pb_uint(&c->sub, CD_UNIT, (uint64_t)unit);
    describe(c, u, parent, name, TD_COUNTER);
    return u;
}

static tp_status counter_i(ctx *c, uint64_t ts, uint64_t track, int64_t v);

/* A sampled thread's CPU share: a counter track under the thread (`record --sample`; native
 * threads too), as Nsight Systems draws a thread's CPU utilization. */
static uint64_t cpu_track(ctx *c, uint32_t tid) {
    uint64_t u = uuid(c, TK_CPU, tid, 0);
    if (described(c, u))
        return u;
    uint64_t parent = thread_track(c, tid); /* before c->sub is filled: it uses c->sub */
    pb_uint(&c->sub, CD_UNIT, (uint64_t)UNIT_COUNT);
    describe(c, u, parent, "CPU %", TD_COUNTER);
    return u;
}

/* ---------------------------------------------------------------- interning */

/* The name of a slice: interned by string id (ids are per trace, and each trace is its own
 * sequence), or written inline for names made here. */
enum { NAME_PLAIN, NAME_API, NAME_KERNEL };

/* kind: NAME_API, a CUDA API call's name, interned as Kineto names it
 * (tp_kineto_api_name_len); NAME_KERNEL, a kernel's, demangled (tp_demangle). */
static void event_name_as(ctx *c, uint32_t sid, const char *inline_name, int kind) {
    const char *s = sid ? tp_reader_string(c->r, sid) : NULL;
    if (!s) {
        pb_str(&c->te, TE_NAME, inline_name);
        return;
    }
    if (!map_find(&c->names, sid)) {
        size_t n = strlen(s);
        char *d = kind == NAME_KERNEL ? tp_demangle(s) : NULL;
        pb_uint(&c->sub2, IS_IID, sid);
        if (d)
            pb_str(&c->sub2, IS_STR, d);
        else
            pb_bytes(&c->sub2, IS_STR, s, kind == NAME_API ? tp_kineto_api_name_len(s, n) : n);
        free(d);
        pb_msg(&c->intern, ID_EVENT_NAMES, &c->sub2);
        if (map_put(&c->names, sid, 1) != 0)
            c->out.nomem = 1;
    }
    pb_uint(&c->te, TE_NAME_IID, sid);
}

static void event_name(ctx *c, uint32_t sid, const char *inline_name) {
    event_name_as(c, sid, inline_name, NAME_PLAIN);
}

static void intern_string(ctx *c, unsigned field, uint64_t iid, const void *s, size_t n) {
    pb_uint(&c->sub2, IS_IID, iid);
    pb_bytes(&c->sub2, IS_STR, s, n);
    pb_msg(&c->intern, field, &c->sub2);
}

static void intern_mapping(ctx *c, uint32_t mod) {
    if (map_find(&c->mappings, (uint64_t)mod + 1))
        return;
    const tp_rec_module *m = tp_reader_module(c->r, mod);
    const char *path = m ? str(c, m->path_sid, "?") : "?";
    uint64_t path_iid = ++c->next_iid, build_iid = 0;
    intern_string(c, ID_MAPPING_PATHS, path_iid, path, strlen(path));
    if (m && m->build_id_len && m->build_id_len <= sizeof m->build_id) {
        build_iid = ++c->next_iid;
        intern_string(c, ID_BUILD_IDS, build_iid, m->build_id, m->build_id_len);
    }
    pb_uint(&c->sub2, IS_IID, (uint64_t)mod + 1);
    if (build_iid)
        pb_uint(&c->sub2, MP_BUILD_ID, build_iid);
    if (m) {
        pb_uint(&c->sub2, MP_START, m->lo);
        pb_uint(&c->sub2, MP_END, m->hi);
    }
    pb_uint(&c->sub2, MP_PATHS, path_iid);
    pb_msg(&c->intern, ID_MAPPINGS, &c->sub2);
    if (map_put(&c->mappings, (uint64_t)mod + 1, 1) != 0)
        c->out.nomem = 1;
}

/* The iid of frame `fr` (TP_FRAME_MAKE encoding), interning it (and its function name or
 * mapping) on first use. A Python frame's function is "name (file:line)"; a native frame is
 * its module and ELF offset, which Perfetto's offline symbolizer resolves. */
static uint64_t intern_frame(ctx *c, uint64_t fr) {
    uint64_t *have = map_find(&c->frames, fr + 1);
    if (have)
        return *have;
    uint64_t iid = ++c->next_iid, func = 0, mapping = 0, rel_pc = 0;
    if (TP_FRAME_IS_PYTHON(fr)) {
        const tp_rec_pycode *code = tp_reader_pycode(c->r, TP_FRAME_PY_CODE(fr));
        const char *fn = code ? str(c, code->name_sid, "?") : "?";
        const char *file = code ? str(c, code->file_sid, "?") : "?";
        char text[1024];
        int n = snprintf(text, sizeof text, "%s (%s:%u)", fn, file, TP_FRAME_PY_LINE(fr));
        func = ++c->next_iid;
        intern_string(c, ID_FUNCTION_NAMES, func, text,
                      n < 0                     ? 0
                      : (size_t)n < sizeof text ? (size_t)n
                                                : sizeof text - 1);
    } else if (TP_FRAME_MODULE(fr) != TP_FRAME_NO_MODULE) {
        intern_mapping(c, TP_FRAME_MODULE(fr));
        mapping = (uint64_t)TP_FRAME_MODULE(fr) + 1;
        rel_pc = TP_FRAME_OFFSET(fr);
    } else {
        rel_pc = TP_FRAME_OFFSET(fr);
    }
    pb_uint(&c->sub2, IS_IID, iid);
    if (func)
        pb_uint(&c->sub2, FR_FUNCTION, func);
    if (mapping)
        pb_uint(&c->sub2, FR_MAPPING, mapping);
    pb_uint(&c->sub2, FR_REL_PC, rel_pc);
    pb_msg(&c->intern, ID_FRAMES, &c->sub2);
    if (map_put(&c->frames, fr + 1, iid) != 0)
        c->out.nomem = 1;
    return iid;
}

/* Interns stack `id` on first use (frames root first, as Perfetto's Callstack wants them);
 * returns its iid (the stack id), 0 when the trace has no such stack. */
static uint64_t intern_callstack(ctx *c, uint32_t id) {
    uint32_t n = 0;
    const uint64_t *fr = id ? tp_reader_stack(c->r, id, &n) : NULL;
    if (!fr || !n)
        return 0;
    if (!map_find(&c->stacks, id)) {
        uint64_t iids[TP_STACK_MAX_FRAMES];
        uint32_t m = n < TP_STACK_MAX_FRAMES ? n : TP_STACK_MAX_FRAMES;
        for (uint32_t i = 0; i < m; i++)
            iids[i] = intern_frame(c, fr[m - 1 - i]);
        pbuf cs = {0};
        pb_uint(&cs, IS_IID, id);
        for (uint32_t i = 0; i < m; i++)
            pb_uint(&cs, CS_FRAMES, iids[i]);
        pb_msg(&c->intern, ID_CALLSTACKS, &cs);
        free(cs.p);
        if (map_put(&c->stacks, id, 1) != 0)
            c->out.nomem = 1;
    }
    return id;
}

/* Attaches stack `id` to the event being built, interning it on first use. */
static void callstack(ctx *c, uint32_t id) {
    if (intern_callstack(c, id))
        pb_uint(&c->te, TE_CALLSTACK_IID, id);
}

/* ---------------------------------------------------------------- events */

static void seen(ctx *c, uint64_t t) {
    if (t > c->t_last)
        c->t_last = t;
}

/* Opens a TrackEvent of `type` on `track`; the caller adds name and extras, then ev_end. */
static void ev_begin(ctx *c, uint64_t ts, int type, uint64_t track) {
    pb_uint(&c->pkt, P_TIMESTAMP, ts + c->shift);
    pb_uint(&c->te, TE_TYPE, (uint64_t)type);
    pb_uint(&c->te, TE_TRACK, track);
    seen(c, ts);
    c->cur_ts = ts + c->shift;
    if (c->probe) { /* a track whose event goes back in time is late */
        uint64_t *last = map_find(&c->last_ts, track);
        if (last && ts < *last) {
            if (map_put(&c->late, track, 1) != 0)
                c->out.nomem = 1;
        } else if (map_put(&c->last_ts, track, ts) != 0) {
            c->out.nomem = 1;
        }
    } else {
        c->cur_held = c->late.n && map_find(&c->late, track) != NULL;
    }
}

static void ev_end(ctx *c) {
    pb_msg(&c->pkt, P_TRACK_EVENT, &c->te);
    packet_end(c, 1);
}

static void annotate_uint(ctx *c, const char *name, uint64_t v) {
    pb_str(&c->sub2, DA_NAME, name);
    pb_uint(&c->sub2, DA_UINT, v);
    pb_msg(&c->te, TE_ANNOTATION, &c->sub2);
}

static void annotate_int(ctx *c, const char *name, int64_t v) {
    pb_str(&c->sub2, DA_NAME, name);
    pb_uint(&c->sub2, DA_INT, (uint64_t)v);
    pb_msg(&c->te, TE_ANNOTATION, &c->sub2);
}

static void annotate_str(ctx *c, const char *name, const char *v) {
    pb_str(&c->sub2, DA_NAME, name);
    pb_str(&c->sub2, DA_STRING, v);
    pb_msg(&c->te, TE_ANNOTATION, &c->sub2);
}

static void slice_end(ctx *c, uint64_t ts, uint64_t track) {
    ev_begin(c, ts, TE_SLICE_END, track);
    ev_end(c);
}

/* Flow ids: the process index above the correlation id, as no launch may meet another
 * process's kernel. */
static uint64_t flow_id(const ctx *c, uint32_t corr) {
    return (c->k << 32) | corr;
}

/* A device op on its stream: begin (ending the flow from its launch) and end. */
static tp_status device_op(ctx *c, uint32_t dev, uint64_t stream, uint64_t ts, uint64_t end,
                           uint32_t sid, const char *name, uint32_t corr, uint64_t bytes) {
    uint64_t track = stream_track(c, dev, stream);
    ev_begin(c, ts, TE_SLICE_BEGIN, track);
    event_name_as(c, sid, name, NAME_KERNEL);
    if (corr) {
        pb_fixed64(&c->te, TE_FLOW_END, flow_id(c, corr));
        annotate_uint(c, "correlation", corr);
    }
    if (bytes)
        annotate_uint(c, "bytes", bytes);
    ev_end(c);
    slice_end(c, end > ts ? end : ts, track);
    c->st.slices++;
    return status(c);
}

static tp_status on_kernel(void *cx, const tp_rec_hdr *h) {
    const tp_rec_kernel *k = (const void *)h;
    return device_op(cx, k->device, k->stream, k->ts, k->end, k->name_sid, "(unnamed kernel)",
                     k->correlation, 0);
}

static tp_status on_memcpy(void *cx, const tp_rec_hdr *h) {
    const tp_rec_memcpy *m = (const void *)h;
    char name[TP_KINETO_NAME_MAX];
    tp_kineto_memcpy_name(name, sizeof name, m->copy_kind, m->src_kind, m->dst_kind);
    return device_op(cx, m->device, m->stream, m->ts, m->end, 0, name, m->correlation, m->bytes);
}

static tp_status on_memset(void *cx, const tp_rec_hdr *h) {
    const tp_rec_memset *m = (const void *)h;
    char name[TP_KINETO_NAME_MAX];
    tp_kineto_memset_name(name, sizeof name, m->mem_kind);
    return device_op(cx, m->device, m->stream, m->ts, m->end, 0, name, m->correlation, m->bytes);
}

/* A sync is a host thread waiting (for the device, a stream or an event): it goes to a child
 * track of that thread, which waits for one thing at a time, with the stream it waited for as
 * an annotation (several threads may wait on one stream at once, so a stream-side track would
 * hold overlapping slices). */
static tp_status on_sync(void *cx, const tp_rec_hdr *h) {
    ctx *c = cx;
    const tp_rec_sync *s = (const void *)h;
    uint64_t track = thread_child(c, s->tid, TK_SYNC, 0, "CUDA sync");
    ev_begin(c, s->ts, TE_SLICE_BEGIN, track);
    event_name(c, 0, tp_sync_type_name(s->type));
    if (s->stream != 0xffffffffu)
        annotate_uint(c, "stream", s->stream);
    annotate_uint(c, "device", s->device);
    ev_end(c);
    slice_end(c, s->end > s->ts ? s->end : s->ts, track);
    c->st.slices++;
    return status(c);
}

/* API calls go to a child track of their thread, as Nsight Systems shows them, so they never
 * interleave with the thread's NVTX ranges. */
static tp_status on_api(void *cx, const tp_rec_hdr *h) {
    ctx *c = cx;
    const tp_rec_api *a = (const void *)h;
    int device_api = (h->flags & TP_RF_TYPE_MASK) == TP_API_DEVICE; /* activity.h launches */
    uint64_t track =
        thread_child(c, a->tid, TK_API, device_api, device_api ? "device API" : "CUDA API");
    ev_begin(c, a->ts, TE_SLICE_BEGIN, track);
    event_name_as(c, a->name_sid, "(unnamed API)", NAME_API);
    if (a->correlation) {
        pb_fixed64(&c->te, TE_FLOW, flow_id(c, a->correlation));
        annotate_uint(c, "correlation", a->correlation);
        c->st.flows++;
    }
    if (a->result)
        annotate_int(c, "result", a->result);
    callstack(c, a->stack_id);
    ev_end(c);
    slice_end(c, a->end > a->ts ? a->end : a->ts, track);
    c->st.slices++;
    return status(c);
}

/* A sample of `record --sample` that found its thread on a CPU: a PerfSample (pid, tid, its
 * Python stack), which trace_processor keeps in perf_sample and the UI shows as a thread's CPU
 * profile with its flame graph. Off-CPU samples (waiting) are not CPU samples: left out. Every
 * sample, on a CPU or not, of a Python thread or a native one, also sets its thread's "CPU %"
 * counter for its period. */
static tp_status on_sample(void *cx, const tp_rec_hdr *h) {
    ctx *c = cx;
    tp_rec_sample s;
    tp_record_get(h, &s, sizeof s);
    if (s.period_ns && s.period_ns <= s.ts) /* the share of its period the thread ran, from its
                                               start: the CPU clock over the wall time */
        counter_i(c, s.ts - s.period_ns, cpu_track(c, s.tid), tp_sample_cpu_pct(&s));
    if (!(h->flags & TP_SAMPLE_ON_CPU) || !intern_callstack(c, s.stack_id))
        return status(c);
    seen(c, s.ts);
    pb_uint(&c->pkt, P_TIMESTAMP, s.ts + c->shift);
    pbuf ps = {0};
    pb_uint(&ps, PS_PID, (uint64_t)c->pid);
    pb_uint(&ps, PS_TID, s.tid);
    pb_uint(&ps, PS_CALLSTACK_IID, s.stack_id);
    pb_msg(&c->pkt, P_PERF_SAMPLE, &ps);
    free(ps.p);
    c->cur_ts = s.ts + c->shift;
    c->cur_held = 0;
    packet_end(c, 1);
    c->st.samples++;
    return status(c);
}

static tp_status on_overhead(void *cx, const tp_rec_hdr *h) {
    ctx *c = cx;
    const tp_rec_overhead *o = (const void *)h;
    uint64_t track = thread_child(c, o->tid, TK_OVERHEAD, 0, "trainprof overhead");
    ev_begin(c, o->ts, TE_SLICE_BEGIN, track);
    event_name(c, o->name_sid, "trainprof overhead");
    ev_end(c);
    slice_end(c, o->end > o->ts ? o->end : o->ts, track);
    c->st.slices++;
    return status(c);
}

/* The track of a push/pop range: the thread's own for the default domain, a child per other
 * domain (named after it), so that ranges of two domains never interleave. */
static uint64_t range_track(ctx *c, uint32_t tid, uint32_t domain) {
    if (!domain)
        return thread_track(c, tid);
    char name[256] = "NVTX";
    const tp_rec_hdr *const *recs;
    size_t n = tp_reader_meta(c->r, TP_REC_DOMAIN, &recs);
    for (size_t i = 0; i < n; i++) {
        const tp_rec_domain *d = (const void *)recs[i];
        if (d->id == domain) {
            snprintf(name, sizeof name, "NVTX %s", str(c, d->name_sid, "domain"));
            break;
        }
    }
    return thread_child(c, tid, TK_DOMAIN, domain, name);
}

static const char *domain_name(ctx *c, uint32_t domain) {
    const tp_rec_hdr *const *recs;
    size_t n = domain ? tp_reader_meta(c->r, TP_REC_DOMAIN, &recs) : 0;
    for (size_t i = 0; i < n; i++) {
        const tp_rec_domain *d = (const void *)recs[i];
        if (d->id == domain)
            return str(c, d->name_sid, NULL);
    }
    return NULL;
}

/* A push opens its slice where it happens: a thread's records come in time order, so the
 * begins and ends of its nested ranges come out nested. */
static tp_status on_push(void *cx, const tp_rec_hdr *h) {
    ctx *c = cx;
    const tp_rec_nvtx *p = (const void *)h;
    ev_begin(c, p->ts, TE_SLICE_BEGIN, range_track(c, p->tid, p->domain));
    event_name(c, p->msg_sid, "");
    const char *dom = domain_name(c, p->domain);
    if (dom)
        pb_str(&c->te, TE_CATEGORY, dom);
    callstack(c, p->stack_id);
    ev_end(c);
    return status(c);
}

/* A start/end range may overlap others of its process in any way, so each goes whole onto the
 * first lane free at its start (lanes are child tracks of the process). */
static tp_status start_end_range(ctx *c, const tp_visit_range *r, uint64_t end) {
    size_t lane = 0;
    while (lane + 1 < MAX_LANES && c->lane_end[lane] > r->open.ts)
        lane++;
    if (end > c->lane_end[lane])
        c->lane_end[lane] = end;
    uint64_t u = uuid(c, TK_LANE, lane, 0);
    if (!described(c, u)) {
        char name[64];
        snprintf(name, sizeof name, "NVTX start/end ranges %zu", lane + 1);
        describe(c, u, process_track(c), name, 0);
    }
    ev_begin(c, r->open.ts, TE_SLICE_BEGIN, u);
    event_name(c, r->open.msg_sid, "");
    annotate_uint(c, "tid", r->open.tid);
    ev_end(c);
    slice_end(c, end, u);
    c->st.slices++;
    return status(c);
}

static tp_status on_range(void *cx, const tp_visit_range *r) {
    ctx *c = cx;
    uint64_t end = r->closed ? r->end : c->t_last;
    if (end < r->open.ts)
        end = r->open.ts;
    c->st.nvtx_unclosed += !r->closed;
    if (r->open.opened_by == TP_REC_NVTX_START)
        return start_end_range(c, r, end);
    slice_end(c, end, range_track(c, r->open.tid, r->open.domain));
    c->st.slices++;
    return status(c);
}

static tp_status instant(ctx *c, uint64_t ts, uint64_t track, uint32_t sid, const char *name) {
    ev_begin(c, ts, TE_INSTANT, track);
    event_name(c, sid, name);
    ev_end(c);
    c->st.instants++;
    return status(c);
}

static tp_status on_mark(void *cx, const tp_rec_hdr *h) {
    ctx *c = cx;
    const tp_rec_nvtx *m = (const void *)h;
    return instant(c, m->ts, range_track(c, m->tid, m->domain), m->msg_sid, "");
}

static tp_status on_alloc_fail(void *cx, const tp_rec_hdr *h) {
    ctx *c = cx;
    const tp_rec_alloc_fail *f = (const void *)h;
    ev_begin(c, f->ts, TE_INSTANT, thread_track(c, f->tid));
    event_name(c, 0, "out of memory");
    annotate_uint(c, "requested", f->requested);
    annotate_uint(c, "reserved", f->reserved_bytes);
    annotate_uint(c, "free", f->free_bytes);
    annotate_uint(c, "largest free block", f->largest_free_block);
    callstack(c, f->stack_id);
    ev_end(c);
    c->st.instants++;
    return status(c);
}

static tp_status on_dropped(void *cx, const tp_rec_hdr *h) {
    ctx *c = cx;
    const tp_rec_dropped *d = (const void *)h;
    const char *what = d->what ? tp_record_name((uint16_t)d->what) : "any";
    ev_begin(c, d->ts, TE_INSTANT, process_track(c));
    event_name(c, 0, "trainprof dropped records");
    annotate_uint(c, "count", d->count);
    annotate_str(c, "what", what ? what : "unknown");
    ev_end(c);
    c->st.instants++;
    return status(c);
}

static tp_status counter_i(ctx *c, uint64_t ts, uint64_t track, int64_t v) {
    ev_begin(c, ts, TE_COUNTER_TYPE, track);
    pb_uint(&c->te, TE_COUNTER, (uint64_t)v);
    ev_end(c);
    c->st.counters++;
    return status(c);
}

static tp_status on_device_mem(void *cx, const tp_rec_hdr *h) {
    ctx *c = cx;
    const tp_rec_device_mem *d = (const void *)h;
    if (d->device >= MAX_DEVICES)
        return TP_OK;
    c->dev_allocated[d->device] += d->op == TP_MEMOP_FREE ? -(int64_t)d->bytes : (int64_t)d->bytes;
    char name[64];
    snprintf(name, sizeof name, "GPU %u memory (cudaMalloc)", d->device);
    return counter_i(c, d->ts, counter_track(c, TK_DEVMEM, d->device, name, UNIT_BYTES),
                     c->dev_allocated[d->device]);
}

static tp_status on_heap(void *cx, const tp_rec_hdr *h) {
    ctx *c = cx;
    const tp_rec_heap *p = (const void *)h;
    int64_t d = tp_heap_reserved_delta(p->op, p->size);
    if (!d)
        return TP_OK; /* a reset frees the heap's regions, not the heap */
    c->heap_reserved += d;
    return counter_i(
        c, p->ts, counter_track(c, TK_RESERVED, 0, "allocator reserved (NVTX heaps)", UNIT_BYTES),
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
    return counter_i(
        c, g->ts,
        counter_track(c, TK_ALLOCATED, 0, "allocator allocated (NVTX regions)", UNIT_BYTES),
        c->region_allocated);
}

static tp_status on_counter(void *cx, const tp_rec_hdr *h) {
    ctx *c = cx;
    const tp_rec_counter *k = (const void *)h;
    uint64_t track =
        counter_track(c, TK_COUNTER, k->name_sid, str(c, k->name_sid, "counter"), UNIT_COUNT);
    if (!(h->flags & TP_COUNTER_F64))
        return counter_i(c, k->ts, track, (int64_t)k->value);
    double v;
    memcpy(&v, &k->value, sizeof v);
    ev_begin(c, k->ts, TE_COUNTER_TYPE, track);
    pb_double(&c->te, TE_DCOUNTER, v);
    ev_end(c);
    c->st.counters++;
    return status(c);
}

/* Threads are described where they first show up; a named thread with no event gets its
 * track here so the process lists it. */
static tp_status on_thread(void *cx, const tp_visit_thread *t) {
    ctx *c = cx;
    if (t->first)
        thread_track(c, t->rec->tid);
    return status(c);
}

static const tp_visitor events = {
    .thread = on_thread,
    .data =
        {
            [TP_REC_KERNEL] = on_kernel,
            [TP_REC_MEMCPY] = on_memcpy,
            [TP_REC_MEMSET] = on_memset,
            [TP_REC_SYNC] = on_sync,
            [TP_REC_API] = on_api,
            [TP_REC_NVTX_PUSH] = on_push,
            [TP_REC_NVTX_MARK] = on_mark,
            [TP_REC_DEVICE_MEM] = on_device_mem,
            [TP_REC_HEAP] = on_heap,
            [TP_REC_REGION] = on_region,
            [TP_REC_ALLOC_FAIL] = on_alloc_fail,
            [TP_REC_COUNTER] = on_counter,
            [TP_REC_OVERHEAD] = on_overhead,
            [TP_REC_SAMPLE] = on_sample,
            [TP_REC_DROPPED] = on_dropped,
        },
    .range = on_range,
};

/* ---------------------------------------------------------------- driver */

static void reset_process(ctx *c, size_t k) {
    c->r = NULL;
    c->k = k;
    c->seq = (uint32_t)k + 1;
    c->seq_started = 0;
    c->t_last = 0;
    map_clear(&c->names), map_clear(&c->frames);
    map_clear(&c->stacks), map_clear(&c->mappings);
    c->next_iid = 0x100000000ull; /* above every string and stack id used as an iid */
    memset(c->lane_end, 0, sizeof c->lane_end);
    tp_region_map_free(&c->regions);
    memset(c->dev_allocated, 0, sizeof c->dev_allocated);
    c->region_allocated = c->heap_reserved = 0;
}

/* The utilization samples of trace k, on a counter track per device. */
static void write_util(ctx *c) {
    const tp_export_job *j = c->job;
    for (size_t i = 0; j && i < j->n_util; i++) {
        const tp_export_util *u = &j->util[i];
        if (u->trace != c->k)
            continue;
        char name[64];
        snprintf(name, sizeof name, "GPU %d utilization (%%)", (int)u->device);
        uint64_t track = counter_track(c, TK_UTIL, (uint64_t)(uint32_t)u->device, name, UNIT_COUNT);
        ev_begin(c, u->ts, TE_COUNTER_TYPE, track);
        pb_double(&c->te, TE_DCOUNTER, 100.0 * u->util);
        ev_end(c);
        c->st.counters++;
    }
}

static void free_bufs(ctx *c) {
    reset_process(c, 0);
    map_clear(&c->tracks), map_clear(&c->last_ts), map_clear(&c->late);
    free(c->out.p), free(c->pkt.p), free(c->te.p), free(c->sub.p), free(c->sub2.p);
    free(c->intern.p), free(c->spill.p), free(c->held);
}

/* 1 when trace r has a GPU device: its CUDA records came through CUPTI's buffers. */
static int has_gpu(tp_reader *r) {
    const tp_rec_hdr *const *recs;
    size_t n = tp_reader_meta(r, TP_REC_DEVICE, &recs);
    for (size_t i = 0; i < n; i++) {
        tp_rec_device d = {0};
        tp_record_get(recs[i], &d, sizeof d);
        if (d.kind == TP_DEVICE_GPU)
            return 1;
    }
    return 0;
}

/* The tracks of process k whose events the trace has out of time order, into c->late: a
 * walk of a ctx of its own that writes nothing (see the top). */
static tp_status find_late(ctx *c, tp_reader *r, size_t k) {
    ctx *p = calloc(1, sizeof *p);
    if (!p)
        return TP_ERR_NOMEM;
    p->probe = 1;
    p->n_procs = c->n_procs, p->job = c->job;
    reset_process(p, k);
    p->r = r;
    p->pid = c->pid, p->shift = c->shift;
    process_track(p);
    tp_visit_stats vs;
    tp_status st = tp_visit_run(r, &events, p, &vs);
    if (st == TP_OK)
        st = status(p);
    map_clear(&c->late);
    c->late = p->late; /* the uuids hash the process index k: the same in both walks */
    p->late = (u64map){0};
    free_bufs(p);
    free(p);
    return st;
}

static tp_status write_all(ctx *c, tp_reader *const *r, size_t n) {
    tp_status st = TP_OK;
    int64_t *taken = calloc(n, sizeof *taken);
    if (!taken)
        return TP_ERR_NOMEM;
    for (size_t k = 0; k < n && st == TP_OK; k++) {
        reset_process(c, k);
        c->r = r[k];
        c->pid = taken[k] = tp_export_job_pid(c->job, r, k, taken);
        c->shift = tp_export_job_shift(c->job, n, k);
        map_clear(&c->late);
        if (has_gpu(c->r) && (st = find_late(c, c->r, k)) != TP_OK)
            break;
        c->st.late_tracks += c->late.n;
        process_track(c);
        tp_visit_stats vs;
        st = tp_visit_run(c->r, &events, c, &vs);
        write_util(c);
        write_held(c);
        if (st == TP_OK)
            st = status(c);
    }
    free(taken);
    flush_out(c);
    return st == TP_OK ? status(c) : st;
}

static void set_err(char *err, size_t n, const char *path, const char *what) {
    if (err && n)
        snprintf(err, n, "%s: %s", path, what);
}

tp_status tp_export_perfetto_set(tp_reader *const *r, size_t n, const char *path,
                                 tp_perfetto_stats *stats, char *err, size_t err_size) {
    return tp_export_perfetto_job(r, n, NULL, path, stats, err, err_size);
}

tp_status tp_export_perfetto_job(tp_reader *const *r, size_t n, const tp_export_job *job,
                                 const char *path, tp_perfetto_stats *stats, char *err,
                                 size_t err_size) {
    if (!r || !n || !path)
        return TP_ERR_ARG;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    struct stat sb;
    int regular = fd >= 0 && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f) {
        char what[160];
        snprintf(what, sizeof what, "cannot create file: %s", strerror(errno));
        set_err(err, err_size, path, what);
        if (fd >= 0)
            close(fd);
        return TP_ERR_OPEN;
    }
    ctx *c = calloc(1, sizeof *c);
    tp_status st = TP_ERR_NOMEM;
    if (c) {
        c->f = f;
        c->n_procs = n;
        c->job = job;
        st = write_all(c, r, n);
    }
    if (fclose(f) != 0 && st == TP_OK) {
        st = TP_ERR_IO;
        c->err_no = errno;
    }
    if (st != TP_OK) {
        set_err(err, err_size, path, tp_status_why(st, st == TP_ERR_IO && c ? c->err_no : 0));
        if (regular)
            unlink(path);
    } else if (stats) {
        *stats = c->st;
    }
    if (c)
        free_bufs(c);
    free(c);
    return st;
}
