/* tp_export_sqlite: a .tprof trace as an SQLite database (schema: docs/export.md).
 *
 * The schema lives in one table (`tables` below): each record kind's table, its typed
 * columns and the insert statement prepared for it. Strings and stacks are written once
 * each, for the ids the exported rows refer to (the reader looks them up by id; it does
 * not list them). Everything goes in one transaction. */
#include "tp_export_sqlite.h"

#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum {
    T_PROCESS,
    T_THREADS,
    T_DEVICES,
    T_MODULES,
    T_STACKS,
    T_STRINGS,
    T_KERNELS,
    T_MEMCPY,
    T_MEMSET,
    T_SYNC,
    T_API,
    T_NVTX_RANGES,
    T_NVTX_MARKS,
    T_DEVICE_MEM,
    T_HEAPS,
    T_REGIONS,
    T_ALLOC_FAILURES,
    T_COUNTERS,
    T_DROPPED,
    T_OVERHEAD,
    T_COUNT
};

static const struct {
    const char *name, *columns; /* columns: "name TYPE, ..." */
} tables[T_COUNT] = {
    [T_PROCESS] = {"process", "pid INTEGER, ppid INTEGER, rank INTEGER, world_size INTEGER, "
                              "local_rank INTEGER, host TEXT, cmdline TEXT, exe TEXT, "
                              "start_realtime_ns INTEGER, producer TEXT"},
    [T_THREADS] = {"threads", "tid INTEGER PRIMARY KEY, pid INTEGER, name TEXT"},
    [T_DEVICES] = {"devices", "id INTEGER PRIMARY KEY, name TEXT, global_memory_bytes INTEGER, "
                              "sm_count INTEGER, compute_capability INTEGER, kind TEXT"},
    [T_MODULES] = {"modules", "module_id INTEGER PRIMARY KEY, path TEXT, load_bias INTEGER, "
                              "lo INTEGER, hi INTEGER, build_id TEXT"},
    [T_STACKS] = {"stacks", "stack_id INTEGER, depth INTEGER, module_id INTEGER, "
                            "offset INTEGER, PRIMARY KEY (stack_id, depth)"},
    [T_STRINGS] = {"strings", "id INTEGER PRIMARY KEY, text TEXT"},
    [T_KERNELS] = {"kernels",
                   "start INTEGER, end INTEGER, correlation INTEGER, name_id INTEGER, "
                   "device INTEGER, context INTEGER, stream INTEGER, grid_x INTEGER, "
                   "grid_y INTEGER, grid_z INTEGER, block_x INTEGER, block_y INTEGER, "
                   "block_z INTEGER, registers_per_thread INTEGER, static_shared_bytes INTEGER, "
                   "dynamic_shared_bytes INTEGER, graph_id INTEGER, graph_node_id INTEGER"},
    [T_MEMCPY] = {"memcpy", "start INTEGER, end INTEGER, bytes INTEGER, correlation INTEGER, "
                            "device INTEGER, context INTEGER, stream INTEGER, copy_kind TEXT, "
                            "src_kind TEXT, dst_kind TEXT, src_device INTEGER, dst_device "
                            "INTEGER, runtime_correlation INTEGER, graph_id INTEGER, "
                            "async INTEGER"},
    [T_MEMSET] = {"memset", "start INTEGER, end INTEGER, bytes INTEGER, correlation INTEGER, "
                            "device INTEGER, context INTEGER, stream INTEGER, value INTEGER, "
                            "mem_kind TEXT"},
    [T_SYNC] = {"sync", "start INTEGER, end INTEGER, correlation INTEGER, type TEXT, "
                        "device INTEGER, context INTEGER, stream INTEGER, tid INTEGER, "
                        "event INTEGER"},
    [T_API] = {"api", "start INTEGER, end INTEGER, tid INTEGER, correlation INTEGER, "
                      "cbid INTEGER, name_id INTEGER, stack_id INTEGER, result INTEGER, "
                      "kind TEXT"},
    [T_NVTX_RANGES] = {"nvtx_ranges",
                       "start INTEGER, end INTEGER, tid INTEGER, domain INTEGER, "
                       "name_id INTEGER, category INTEGER, color INTEGER, kind TEXT, "
                       "closed INTEGER"},
    [T_NVTX_MARKS] = {"nvtx_marks", "ts INTEGER, tid INTEGER, domain INTEGER, name_id INTEGER, "
                                    "category INTEGER, color INTEGER"},
    [T_DEVICE_MEM] = {"device_mem", "ts INTEGER, op TEXT, address INTEGER, bytes INTEGER, "
                                    "device INTEGER, context INTEGER, stream INTEGER, "
                                    "mem_kind TEXT, correlation INTEGER, stack_id INTEGER, "
                                    "tid INTEGER"},
    [T_HEAPS] = {"heaps", "ts INTEGER, op TEXT, heap INTEGER, address INTEGER, size INTEGER, "
                          "tid INTEGER, domain INTEGER, usage INTEGER, mem_type INTEGER, "
                          "stack_id INTEGER, name_id INTEGER"},
    [T_REGIONS] = {"regions", "ts INTEGER, op TEXT, heap INTEGER, address INTEGER, "
                              "size INTEGER, tid INTEGER, domain INTEGER, stack_id INTEGER, "
                              "name_id INTEGER"},
    [T_ALLOC_FAILURES] = {"alloc_failures",
                          "ts INTEGER, requested INTEGER, reserved_bytes INTEGER, "
                          "free_bytes INTEGER, largest_free_block INTEGER, tid INTEGER, "
                          "device INTEGER, stack_id INTEGER"},
    [T_COUNTERS] = {"counters", "ts INTEGER, name_id INTEGER, tid INTEGER, value NUMERIC"},
    [T_DROPPED] = {"dropped", "ts INTEGER, count INTEGER, what TEXT, reason TEXT"},
    [T_OVERHEAD] = {"overhead", "start INTEGER, end INTEGER, tid INTEGER, kind INTEGER, "
                                "name_id INTEGER"},
};

/* Views that join names in. */
static const char *const views =
    "CREATE VIEW kernels_named AS SELECT k.*, s.text AS name FROM kernels k "
    "LEFT JOIN strings s ON s.id = k.name_id;"
    "CREATE VIEW api_named AS SELECT a.*, s.text AS name FROM api a "
    "LEFT JOIN strings s ON s.id = a.name_id;"
    "CREATE VIEW nvtx_ranges_named AS SELECT n.*, s.text AS name FROM nvtx_ranges n "
    "LEFT JOIN strings s ON s.id = n.name_id;"
    "CREATE VIEW nvtx_marks_named AS SELECT n.*, s.text AS name FROM nvtx_marks n "
    "LEFT JOIN strings s ON s.id = n.name_id;"
    "CREATE VIEW counters_named AS SELECT c.*, s.text AS name FROM counters c "
    "LEFT JOIN strings s ON s.id = c.name_id;"
    "CREATE VIEW overhead_named AS SELECT o.*, s.text AS name FROM overhead o "
    "LEFT JOIN strings s ON s.id = o.name_id;"
    "CREATE VIEW stacks_named AS SELECT st.*, m.path AS module_path FROM stacks st "
    "LEFT JOIN modules m ON m.module_id = st.module_id;"
    "CREATE VIEW memcpy_named AS SELECT m.*, 'Memcpy ' || m.copy_kind || ' (' || m.src_kind "
    "|| ' -> ' || m.dst_kind || ')' AS name FROM memcpy m;";

/* One bound value. */
typedef struct {
    char t; /* 'i' int, 'd' double, 's' text (NULL text binds NULL), 'n' NULL */
    int64_t i;
    double d;
    const char *s;
} val;

#define VI(x) ((val){'i', (int64_t)(x), 0, NULL})
#define VS(x) ((val){'s', 0, 0, (x)})

/* A growable bit set of the ids (strings, stacks) rows refer to. */
typedef struct {
    uint8_t *bits;
    size_t n; /* bytes */
} idset;

typedef struct {
    tp_reader *r;
    sqlite3 *db;
    sqlite3_stmt *ins[T_COUNT];
    idset sids, stacks;
    int failed; /* an SQLite or allocation error; the first message is in err */
    char err[256];
    uint64_t rows;
    struct range_stack {
        struct open_range {
            uint64_t key, ts;
            uint32_t tid, domain, msg_sid, category, color, kind;
        } * v;
        size_t n, cap;
    } pushes, starts;
    uint64_t t_last;
} sctx;

typedef struct open_range open_range;
typedef struct range_stack range_stack;

static void db_fail(sctx *c, const char *what) {
    if (!c->failed)
        snprintf(c->err, sizeof c->err, "%s: %s", what, sqlite3_errmsg(c->db));
    c->failed = 1;
}

static uint32_t mark(sctx *c, idset *s, uint32_t id) {
    if (!id)
        return 0;
    if (id / 8 >= s->n) {
        size_t n = (size_t)id / 8 * 2 + 64;
        uint8_t *b = realloc(s->bits, n);
        if (!b) {
            c->failed = 1, snprintf(c->err, sizeof c->err, "out of memory");
            return id;
        }
        memset(b + s->n, 0, n - s->n);
        s->bits = b, s->n = n;
    }
    s->bits[id / 8] |= (uint8_t)(1u << (id % 8));
    return id;
}

static val sid(sctx *c, uint32_t id) {
    return VI(mark(c, &c->sids, id));
}

static val stk(sctx *c, uint32_t id) {
    return VI(mark(c, &c->stacks, id));
}

static void insert(sctx *c, int table, const val *v, int n) {
    sqlite3_stmt *st = c->ins[table];
    if (c->failed)
        return;
    for (int i = 0; i < n; i++) {
        if (v[i].t == 'i')
            sqlite3_bind_int64(st, i + 1, v[i].i);
        else if (v[i].t == 'd')
            sqlite3_bind_double(st, i + 1, v[i].d);
        else if (v[i].t == 's' && v[i].s)
            sqlite3_bind_text(st, i + 1, v[i].s, -1, SQLITE_TRANSIENT);
        else
            sqlite3_bind_null(st, i + 1);
    }
    if (sqlite3_step(st) != SQLITE_DONE)
        db_fail(c, tables[table].name);
    sqlite3_reset(st);
    c->rows++;
}

#define INSERT(c, table, ...)                                                                      \
    do {                                                                                           \
        const val v_[] = {__VA_ARGS__};                                                            \
        insert((c), (table), v_, (int)(sizeof v_ / sizeof v_[0]));                                 \
    } while (0)

/* ---------------------------------------------------------------- enum names */

static const char *pick(const char *const *names, size_t n, unsigned i) {
    return i < n ? names[i] : "unknown";
}
#define PICK(names, i) pick((names), sizeof(names) / sizeof(names)[0], (i))

/* ---------------------------------------------------------------- records */

static void on_gpu(sctx *c, const tp_rec_hdr *h) {
    static const char *const sync_types[] = {"unknown", "event", "stream_wait_event", "stream",
                                             "context"};
    if (h->type == TP_REC_KERNEL) {
        tp_rec_kernel k;
        tp_record_get(h, &k, sizeof k);
        INSERT(c, T_KERNELS, VI(k.ts), VI(k.end), VI(k.correlation), sid(c, k.name_sid),
               VI(k.device), VI(k.context), VI(k.stream), VI(k.grid_x), VI(k.grid_y), VI(k.grid_z),
               VI(k.block_x), VI(k.block_y), VI(k.block_z), VI(k.registers_per_thread),
               VI(k.static_shared_bytes), VI(k.dynamic_shared_bytes), VI(k.graph_id),
               VI(k.graph_node_id));
    } else if (h->type == TP_REC_MEMCPY) {
        tp_rec_memcpy m;
        tp_record_get(h, &m, sizeof m);
        INSERT(c, T_MEMCPY, VI(m.ts), VI(m.end), VI(m.bytes), VI(m.correlation), VI(m.device),
               VI(m.context), VI(m.stream), VS(tp_copy_kind_name(m.copy_kind)),
               VS(tp_mem_kind_name(m.src_kind)), VS(tp_mem_kind_name(m.dst_kind)), VI(m.src_device),
               VI(m.dst_device), VI(m.runtime_correlation), VI(m.graph_id),
               VI((h->flags & TP_MEMCPY_ASYNC) != 0));
    } else if (h->type == TP_REC_MEMSET) {
        tp_rec_memset m;
        tp_record_get(h, &m, sizeof m);
        INSERT(c, T_MEMSET, VI(m.ts), VI(m.end), VI(m.bytes), VI(m.correlation), VI(m.device),
               VI(m.context), VI(m.stream), VI(m.value), VS(tp_mem_kind_name(m.mem_kind)));
    } else {
        tp_rec_sync s;
        tp_record_get(h, &s, sizeof s);
        INSERT(c, T_SYNC, VI(s.ts), VI(s.end), VI(s.correlation), VS(PICK(sync_types, s.type)),
               VI(s.device), VI(s.context), s.stream == 0xffffffffu ? VI(-1) : VI(s.stream),
               VI(s.tid), VI(s.event));
    }
}

static void on_api(sctx *c, const tp_rec_hdr *h) {
    static const char *const kinds[] = {"unknown", "runtime", "driver", "device"};
    tp_rec_api a;
    tp_record_get(h, &a, sizeof a);
    INSERT(c, T_API, VI(a.ts), VI(a.end), VI(a.tid), VI(a.correlation), VI(a.cbid),
           sid(c, a.name_sid), stk(c, a.stack_id), VI(a.result),
           VS(PICK(kinds, h->flags & TP_RF_TYPE_MASK)));
}

static void range_row(sctx *c, const open_range *o, uint64_t end, int closed) {
    INSERT(c, T_NVTX_RANGES, VI(o->ts), VI(end), VI(o->tid), VI(o->domain), sid(c, o->msg_sid),
           VI(o->category), VI(o->color), VS(o->kind ? "start_end" : "push_pop"), VI(closed));
}

static void range_push(sctx *c, range_stack *s, const open_range *o) {
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        open_range *v = realloc(s->v, cap * sizeof *v);
        if (!v) {
            c->failed = 1, snprintf(c->err, sizeof c->err, "out of memory");
            return;
        }
        s->v = v, s->cap = cap;
    }
    s->v[s->n++] = *o;
}

/* Innermost open range with `key` (the analyzer's native loader pairs the same way). */
static void range_close(sctx *c, range_stack *s, uint64_t key, uint64_t end) {
    for (size_t i = s->n; i-- > 0;) {
        if (s->v[i].key != key)
            continue;
        range_row(c, &s->v[i], end, 1);
        memmove(s->v + i, s->v + i + 1, (s->n - i - 1) * sizeof *s->v);
        s->n--;
        return;
    }
}

static void on_nvtx(sctx *c, const tp_rec_hdr *h) {
    if (h->type == TP_REC_NVTX_PUSH || h->type == TP_REC_NVTX_MARK) {
        tp_rec_nvtx n;
        tp_record_get(h, &n, sizeof n);
        uint32_t color = (n.h.flags & TP_NVTX_HAS_COLOR) ? n.color : 0;
        if (h->type == TP_REC_NVTX_MARK) {
            INSERT(c, T_NVTX_MARKS, VI(n.ts), VI(n.tid), VI(n.domain), sid(c, n.msg_sid),
                   VI(n.category), VI(color));
            return;
        }
        open_range o = {((uint64_t)n.tid << 32) | n.domain,
                        n.ts,
                        n.tid,
                        n.domain,
                        n.msg_sid,
                        n.category,
                        color,
                        0};
        range_push(c, &c->pushes, &o);
    } else if (h->type == TP_REC_NVTX_START) {
        tp_rec_nvtx_start n;
        tp_record_get(h, &n, sizeof n);
        uint32_t color = (n.h.flags & TP_NVTX_HAS_COLOR) ? n.color : 0;
        open_range o = {n.range_id, n.ts, n.tid, n.domain, n.msg_sid, n.category, color, 1};
        range_push(c, &c->starts, &o);
    } else if (h->type == TP_REC_NVTX_POP) {
        tp_rec_nvtx_pop n;
        tp_record_get(h, &n, sizeof n);
        range_close(c, &c->pushes, ((uint64_t)n.tid << 32) | n.domain, n.ts);
    } else {
        tp_rec_nvtx_end n;
        tp_record_get(h, &n, sizeof n);
        range_close(c, &c->starts, n.range_id, n.ts);
    }
}

static void on_memory(sctx *c, const tp_rec_hdr *h) {
    static const char *const mem_ops[] = {"unknown", "alloc", "free"};
    static const char *const heap_ops[] = {"unknown", "register", "unregister", "reset"};
    static const char *const region_ops[] = {"unknown", "register", "resize", "unregister"};
    if (h->type == TP_REC_DEVICE_MEM) {
        tp_rec_device_mem d;
        tp_record_get(h, &d, sizeof d);
        INSERT(c, T_DEVICE_MEM, VI(d.ts), VS(PICK(mem_ops, d.op)), VI(d.address), VI(d.bytes),
               VI(d.device), VI(d.context), VI(d.stream), VS(tp_mem_kind_name(d.mem_kind)),
               VI(d.correlation), stk(c, d.stack_id), VI(d.tid));
    } else if (h->type == TP_REC_HEAP) {
        tp_rec_heap p;
        tp_record_get(h, &p, sizeof p);
        INSERT(c, T_HEAPS, VI(p.ts), VS(PICK(heap_ops, p.op)), VI(p.heap), VI(p.address),
               VI(p.size), VI(p.tid), VI(p.domain), VI(p.usage), VI(p.mem_type), stk(c, p.stack_id),
               sid(c, p.name_sid));
    } else if (h->type == TP_REC_REGION) {
        tp_rec_region g;
        tp_record_get(h, &g, sizeof g);
        INSERT(c, T_REGIONS, VI(g.ts), VS(PICK(region_ops, g.op)), VI(g.heap), VI(g.address),
               VI(g.size), VI(g.tid), VI(g.domain), stk(c, g.stack_id), sid(c, g.name_sid));
    } else {
        tp_rec_alloc_fail f;
        tp_record_get(h, &f, sizeof f);
        INSERT(c, T_ALLOC_FAILURES, VI(f.ts), VI(f.requested), VI(f.reserved_bytes),
               VI(f.free_bytes), VI(f.largest_free_block), VI(f.tid), VI(f.device),
               stk(c, f.stack_id));
    }
}

static void on_other(sctx *c, const tp_rec_hdr *h) {
    static const char *const reasons[] = {"unknown", "ring_full", "no_buffer", "cupti", "convert"};
    if (h->type == TP_REC_COUNTER) {
        tp_rec_counter k;
        tp_record_get(h, &k, sizeof k);
        double d;
        memcpy(&d, &k.value, sizeof d);
        val v = (h->flags & TP_COUNTER_F64) ? (val){'d', 0, d, NULL} : VI(k.value);
        INSERT(c, T_COUNTERS, VI(k.ts), sid(c, k.name_sid), VI(k.tid), v);
    } else if (h->type == TP_REC_DROPPED) {
        tp_rec_dropped d;
        tp_record_get(h, &d, sizeof d);
        const char *what = d.what ? tp_record_name((uint16_t)d.what) : "any";
        INSERT(c, T_DROPPED, VI(d.ts), VI(d.count), VS(what ? what : "unknown"),
               VS(PICK(reasons, d.reason)));
    } else if (h->type == TP_REC_OVERHEAD) {
        tp_rec_overhead o;
        tp_record_get(h, &o, sizeof o);
        INSERT(c, T_OVERHEAD, VI(o.ts), VI(o.end), VI(o.tid), VI(o.kind), sid(c, o.name_sid));
    }
}

static void on_record(sctx *c, const tp_rec_hdr *h) {
    uint64_t end = tp_record_end(h);
    if (end > c->t_last && h->type != TP_REC_CLOCK_SYNC)
        c->t_last = end;
    switch (h->type) {
    case TP_REC_KERNEL:
    case TP_REC_MEMCPY:
    case TP_REC_MEMSET:
    case TP_REC_SYNC:
        on_gpu(c, h);
        break;
    case TP_REC_API:
        on_api(c, h);
        break;
    case TP_REC_NVTX_PUSH:
    case TP_REC_NVTX_POP:
    case TP_REC_NVTX_START:
    case TP_REC_NVTX_END:
    case TP_REC_NVTX_MARK:
        on_nvtx(c, h);
        break;
    case TP_REC_DEVICE_MEM:
    case TP_REC_HEAP:
    case TP_REC_REGION:
    case TP_REC_ALLOC_FAIL:
        on_memory(c, h);
        break;
    default:
        on_other(c, h);
        break;
    }
}

/* ---------------------------------------------------------------- metadata */

static const char *str(sctx *c, uint32_t id) {
    return tp_reader_string(c->r, id);
}

static void meta_process(sctx *c) {
    const tp_rec_hdr *const *recs;
    size_t n = tp_reader_meta(c->r, TP_REC_PROCESS, &recs);
    for (size_t i = 0; i < n; i++) {
        tp_rec_process p;
        tp_record_get(recs[i], &p, sizeof p);
        INSERT(c, T_PROCESS, VI(p.pid), VI(p.ppid), VI(p.rank), VI(p.world_size), VI(p.local_rank),
               VS(str(c, p.host_sid)), VS(str(c, p.cmdline_sid)), VS(str(c, p.exe_sid)),
               VI(p.start_realtime_ns), VS(str(c, p.producer_sid)));
    }
    uint32_t pid = n ? ((const tp_rec_process *)recs[0])->pid : 0;
    n = tp_reader_meta(c->r, TP_REC_THREAD, &recs);
    for (size_t i = 0; i < n; i++) {
        tp_rec_thread t;
        tp_record_get(recs[i], &t, sizeof t);
        int later = 0; /* a rename: one row per thread, with its latest name */
        for (size_t j = i + 1; j < n && !later; j++)
            later = ((const tp_rec_thread *)recs[j])->tid == t.tid;
        if (!later)
            INSERT(c, T_THREADS, VI(t.tid), VI(t.pid ? t.pid : pid),
                   VS(tp_reader_thread_name(c->r, t.tid)));
    }
}

static void meta_devices(sctx *c) {
    const tp_rec_hdr *const *recs;
    size_t n = tp_reader_meta(c->r, TP_REC_DEVICE, &recs);
    for (size_t i = 0; i < n; i++) {
        tp_rec_device d;
        tp_record_get(recs[i], &d, sizeof d);
        INSERT(c, T_DEVICES, VI(d.id), VS(str(c, d.name_sid)), VI(d.global_memory_bytes),
               VI(d.sm_count), VI(d.compute_capability),
               VS(d.kind == TP_DEVICE_GPU         ? "gpu"
                  : d.kind == TP_DEVICE_CPU_ACCEL ? "cpu"
                                                  : "?"));
    }
    n = tp_reader_meta(c->r, TP_REC_MODULE, &recs);
    for (size_t i = 0; i < n; i++) {
        tp_rec_module m;
        tp_record_get(recs[i], &m, sizeof m);
        char hex[65] = "";
        for (uint32_t b = 0; b < m.build_id_len && b < 32; b++)
            snprintf(hex + 2 * b, 3, "%02x", m.build_id[b]);
        INSERT(c, T_MODULES, VI(m.id), VS(str(c, m.path_sid)), VI(m.load_bias), VI(m.lo), VI(m.hi),
               VS(hex));
    }
}

/* The strings and stacks rows referred to (ids collected while inserting). */
static void meta_ids(sctx *c) {
    for (size_t id = 1; id < c->stacks.n * 8; id++) {
        if (!(c->stacks.bits[id / 8] & (1u << (id % 8))))
            continue;
        uint32_t nf;
        const uint64_t *f = tp_reader_stack(c->r, (uint32_t)id, &nf);
        for (uint32_t d = 0; d < nf; d++)
            INSERT(c, T_STACKS, VI(id), VI(d), VI(TP_FRAME_MODULE(f[d])),
                   VI(TP_FRAME_OFFSET(f[d])));
    }
    for (size_t id = 1; id < c->sids.n * 8; id++)
        if (c->sids.bits[id / 8] & (1u << (id % 8)))
            INSERT(c, T_STRINGS, VI(id), VS(str(c, (uint32_t)id)));
}

/* ---------------------------------------------------------------- database */

static int exec(sctx *c, const char *sql) {
    if (sqlite3_exec(c->db, sql, NULL, NULL, NULL) != SQLITE_OK) {
        db_fail(c, "schema");
        return 0;
    }
    return 1;
}

static int create_schema(sctx *c) {
    char sql[1024];
    if (!exec(c, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; BEGIN;"))
        return 0;
    for (int t = 0; t < T_COUNT; t++) {
        snprintf(sql, sizeof sql, "CREATE TABLE %s (%s);", tables[t].name, tables[t].columns);
        if (!exec(c, sql))
            return 0;
        int ncol = 1; /* one '?' per column: count the commas outside PRIMARY KEY (...) */
        for (const char *p = tables[t].columns; *p && strncmp(p, ", PRIMARY", 9); p++)
            ncol += *p == ',';
        int len = snprintf(sql, sizeof sql, "INSERT OR REPLACE INTO %s VALUES (?", tables[t].name);
        for (int i = 1; i < ncol; i++)
            len += snprintf(sql + len, sizeof sql - (size_t)len, ",?");
        snprintf(sql + len, sizeof sql - (size_t)len, ")");
        if (sqlite3_prepare_v2(c->db, sql, -1, &c->ins[t], NULL) != SQLITE_OK) {
            db_fail(c, tables[t].name);
            return 0;
        }
    }
    return exec(c, views);
}

/* Python code objects (traces of CPython programs, v1.2): a table of their names and a view
 * of the stacks with Python frames resolved (module 65534 = TP_FRAME_PYTHON; its offset holds
 * code id << 24 | line). Only in exports of traces that have them, so the schema of other
 * traces' exports stays as it was. */
static void meta_python(sctx *c) {
    const tp_rec_hdr *const *recs;
    size_t n = tp_reader_meta(c->r, TP_REC_PYCODE, &recs);
    char sql[768];
    sqlite3_stmt *st = NULL;
    if (!n || c->failed)
        return;
    snprintf(sql, sizeof sql,
             "CREATE TABLE python_code (code_id INTEGER PRIMARY KEY, function TEXT, file TEXT, "
             "first_line INTEGER);"
             "CREATE VIEW stacks_python AS SELECT st.stack_id, st.depth, st.module_id, "
             "st.offset, m.path AS module_path, c.function, c.file, CASE WHEN st.module_id = %u "
             "THEN st.offset & %u END AS line FROM stacks st LEFT JOIN modules m ON "
             "m.module_id = st.module_id LEFT JOIN python_code c ON st.module_id = %u AND "
             "c.code_id = st.offset >> 24;",
             TP_FRAME_PYTHON, TP_PYLINE_MAX, TP_FRAME_PYTHON);
    if (!exec(c, sql) ||
        sqlite3_prepare_v2(c->db, "INSERT OR REPLACE INTO python_code VALUES (?,?,?,?)", -1, &st,
                           NULL) != SQLITE_OK) {
        db_fail(c, "python_code");
        return;
    }
    for (size_t i = 0; i < n && !c->failed; i++) {
        tp_rec_pycode p;
        tp_record_get(recs[i], &p, sizeof p);
        sqlite3_bind_int64(st, 1, p.id);
        sqlite3_bind_text(st, 2, str(c, p.name_sid), -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 3, str(c, p.file_sid), -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 4, p.first_line);
        if (sqlite3_step(st) != SQLITE_DONE)
            db_fail(c, "python_code");
        sqlite3_reset(st);
        c->rows++;
    }
    sqlite3_finalize(st);
}

static tp_status export_all(sctx *c) {
    if (!create_schema(c))
        return TP_ERR_IO;
    meta_process(c);
    meta_devices(c);
    tp_cursor *cur;
    tp_status st = tp_cursor_open(c->r, NULL, &cur);
    if (st != TP_OK)
        return st;
    for (const tp_rec_hdr *h; !c->failed && (h = tp_cursor_next(cur));)
        on_record(c, h);
    tp_cursor_close(cur);
    for (size_t i = c->pushes.n; i-- > 0;) /* never closed: end where the trace ends */
        range_row(c, &c->pushes.v[i], c->t_last, 0);
    for (size_t i = c->starts.n; i-- > 0;)
        range_row(c, &c->starts.v[i], c->t_last, 0);
    meta_ids(c);
    meta_python(c);
    if (!c->failed)
        exec(c, "COMMIT;");
    return c->failed ? TP_ERR_IO : TP_OK;
}

/* Removes `path` when it is a regular file: never a device or a directory (as root, unlink
 * would delete /dev/full itself). */
static void remove_file(const char *path) {
    struct stat sb;
    if (lstat(path, &sb) == 0 && S_ISREG(sb.st_mode))
        unlink(path);
}

tp_status tp_export_sqlite(tp_reader *r, const char *path, uint64_t *rows, char *err,
                           size_t err_size) {
    sctx *c = calloc(1, sizeof *c);
    if (!c)
        return TP_ERR_NOMEM;
    c->r = r;
    remove_file(path); /* replace, never append to an old export */
    tp_status st = TP_ERR_OPEN;
    if (sqlite3_open_v2(path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
        SQLITE_OK) {
        snprintf(c->err, sizeof c->err, "cannot create file (%s)",
                 c->db ? sqlite3_errmsg(c->db) : "out of memory");
    } else {
        st = export_all(c);
    }
    for (int t = 0; t < T_COUNT; t++)
        sqlite3_finalize(c->ins[t]);
    if (sqlite3_close(c->db) != SQLITE_OK && st == TP_OK)
        st = TP_ERR_IO;
    if (st != TP_OK) {
        if (err && err_size)
            snprintf(err, err_size, "%s: %s", path, c->err[0] ? c->err : tp_status_str(st));
        remove_file(path);
    } else if (rows) {
        *rows = c->rows;
    }
    free(c->sids.bits), free(c->stacks.bits), free(c->pushes.v), free(c->starts.v);
    free(c);
    return st;
}
