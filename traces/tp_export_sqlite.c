/* tp_export_sqlite: a .tprof trace as an SQLite database (schema: docs/export.md).
 *
 * The schema lives in one table (`tables` below): each record kind's table, its typed
 * columns and the insert statement prepared for it. The rows come from one visitor
 * (traces/tp_visit.h, `exporter` below). Strings and stacks are written once each, for the
 * ids the exported rows refer to (the reader looks them up by id; it does not list them).
 * Everything goes in one transaction. */
#include "tp_export_sqlite.h"

#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tp_demangle.h"
#include "tp_kineto_names.h"
#include "tp_libpath.h"
#include "tp_mem.h"
#include "tp_visit.h"

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
    T_SAMPLES,
    T_FRAMES,
    T_DOMAINS,
    T_COUNT
};

/* Every table but process and threads (which name their pid) gets a pid column after its
 * own: a recording's processes share one database, and ids (strings, stacks, modules, code
 * objects) are per process, so a key is (pid, key). */
static const struct {
    const char *name, *columns; /* columns: "name TYPE, ..." */
    const char *key;            /* the primary key's columns after pid; NULL: none */
    int has_pid;                /* the columns name the pid already */
} tables[T_COUNT] = {
    [T_PROCESS] = {"process",
                   "pid INTEGER, ppid INTEGER, rank INTEGER, world_size INTEGER, "
                   "local_rank INTEGER, host TEXT, cmdline TEXT, exe TEXT, "
                   "start_realtime_ns INTEGER, producer TEXT",
                   NULL, 1},
    [T_THREADS] = {"threads", "tid INTEGER, pid INTEGER, name TEXT", "tid", 1},
    [T_DEVICES] = {"devices",
                   "id INTEGER, name TEXT, global_memory_bytes INTEGER, "
                   "sm_count INTEGER, compute_capability INTEGER, kind TEXT",
                   "id", 0},
    [T_MODULES] = {"modules",
                   "module_id INTEGER, path TEXT, load_bias INTEGER, "
                   "lo INTEGER, hi INTEGER, build_id TEXT",
                   "module_id", 0},
    [T_STACKS] = {"stacks", "stack_id INTEGER, depth INTEGER, module_id INTEGER, offset INTEGER",
                  "stack_id, depth", 0},
    [T_STRINGS] = {"strings", "id INTEGER, text TEXT, display TEXT", "id", 0},
    [T_KERNELS] = {"kernels",
                   "start INTEGER, end INTEGER, correlation INTEGER, name_id INTEGER, "
                   "device INTEGER, context INTEGER, stream INTEGER, grid_x INTEGER, "
                   "grid_y INTEGER, grid_z INTEGER, block_x INTEGER, block_y INTEGER, "
                   "block_z INTEGER, registers_per_thread INTEGER, static_shared_bytes INTEGER, "
                   "dynamic_shared_bytes INTEGER, graph_id INTEGER, graph_node_id INTEGER",
                   NULL, 0},
    [T_MEMCPY] = {"memcpy",
                  "start INTEGER, end INTEGER, bytes INTEGER, correlation INTEGER, "
                  "device INTEGER, context INTEGER, stream INTEGER, copy_kind TEXT, "
                  "src_kind TEXT, dst_kind TEXT, src_device INTEGER, dst_device "
                  "INTEGER, runtime_correlation INTEGER, graph_id INTEGER, "
                  "async INTEGER",
                  NULL, 0},
    [T_MEMSET] = {"memset",
                  "start INTEGER, end INTEGER, bytes INTEGER, correlation INTEGER, "
                  "device INTEGER, context INTEGER, stream INTEGER, value INTEGER, "
                  "mem_kind TEXT",
                  NULL, 0},
    [T_SYNC] = {"sync",
                "start INTEGER, end INTEGER, correlation INTEGER, type TEXT, "
                "device INTEGER, context INTEGER, stream INTEGER, tid INTEGER, "
                "event INTEGER",
                NULL, 0},
    [T_API] = {"api",
               "start INTEGER, end INTEGER, tid INTEGER, correlation INTEGER, "
               "cbid INTEGER, name_id INTEGER, stack_id INTEGER, result INTEGER, "
               "kind TEXT",
               NULL, 0},
    [T_NVTX_RANGES] = {"nvtx_ranges",
                       "start INTEGER, end INTEGER, tid INTEGER, domain INTEGER, "
                       "name_id INTEGER, category INTEGER, color INTEGER, kind TEXT, "
                       "closed INTEGER, stack_id INTEGER",
                       NULL, 0},
    [T_NVTX_MARKS] = {"nvtx_marks",
                      "ts INTEGER, tid INTEGER, domain INTEGER, name_id INTEGER, "
                      "category INTEGER, color INTEGER",
                      NULL, 0},
    [T_DEVICE_MEM] = {"device_mem",
                      "ts INTEGER, op TEXT, address INTEGER, bytes INTEGER, "
                      "device INTEGER, context INTEGER, stream INTEGER, "
                      "mem_kind TEXT, correlation INTEGER, stack_id INTEGER, "
                      "tid INTEGER",
                      NULL, 0},
    [T_HEAPS] = {"heaps",
                 "ts INTEGER, op TEXT, heap INTEGER, address INTEGER, size INTEGER, "
                 "tid INTEGER, domain INTEGER, usage INTEGER, mem_type INTEGER, "
                 "stack_id INTEGER, name_id INTEGER",
                 NULL, 0},
    [T_REGIONS] = {"regions",
                   "ts INTEGER, op TEXT, heap INTEGER, address INTEGER, "
                   "size INTEGER, tid INTEGER, domain INTEGER, stack_id INTEGER, "
                   "name_id INTEGER",
                   NULL, 0},
    [T_ALLOC_FAILURES] = {"alloc_failures",
                          "ts INTEGER, requested INTEGER, reserved_bytes INTEGER, "
                          "free_bytes INTEGER, largest_free_block INTEGER, tid INTEGER, "
                          "device INTEGER, stack_id INTEGER",
                          NULL, 0},
    [T_COUNTERS] = {"counters", "ts INTEGER, name_id INTEGER, tid INTEGER, value NUMERIC", NULL, 0},
    [T_DROPPED] = {"dropped", "ts INTEGER, count INTEGER, what TEXT, reason TEXT", NULL, 0},
    [T_OVERHEAD] = {"overhead",
                    "start INTEGER, end INTEGER, tid INTEGER, kind INTEGER, "
                    "name_id INTEGER",
                    NULL, 0},
    /* `record --sample`: a thread's Python stack, on a CPU or not, and its CPU and wall time
     * since its previous sample; native (1): not a Python thread, no stack */
    [T_SAMPLES] = {"samples",
                   "ts INTEGER, tid INTEGER, stack_id INTEGER, on_cpu INTEGER, cpu_ns INTEGER, "
                   "period_ns INTEGER, holds_gil INTEGER, native INTEGER",
                   NULL, 0},
    /* every frame of every stack, symbolized: one row per function at a native address
     * (inline_depth 0 the innermost inlined one), Python frames by their code object */
    [T_FRAMES] = {"frames",
                  "stack_id INTEGER, depth INTEGER, inline_depth INTEGER, kind TEXT, "
                  "function TEXT, file TEXT, line INTEGER, module TEXT, offset INTEGER, "
                  "symbols TEXT, library INTEGER",
                  "stack_id, depth, inline_depth", 0},
    [T_DOMAINS] = {"domains", "domain_id INTEGER, name TEXT", "domain_id", 0},
};

/* Views that join names in. */
static const char *const views =
    "CREATE VIEW kernels_named AS SELECT k.*, coalesce(s.display, s.text) AS name FROM kernels k "
    "LEFT JOIN strings s ON s.id = k.name_id AND s.pid = k.pid;"
    "CREATE VIEW api_named AS SELECT a.*, coalesce(s.display, s.text) AS name FROM api a "
    "LEFT JOIN strings s ON s.id = a.name_id AND s.pid = a.pid;"
    "CREATE VIEW nvtx_ranges_named AS SELECT n.*, s.text AS name, d.name AS domain_name "
    "FROM nvtx_ranges n LEFT JOIN strings s ON s.id = n.name_id AND s.pid = n.pid "
    "LEFT JOIN domains d ON d.domain_id = n.domain AND d.pid = n.pid;"
    "CREATE VIEW nvtx_marks_named AS SELECT n.*, s.text AS name, d.name AS domain_name "
    "FROM nvtx_marks n LEFT JOIN strings s ON s.id = n.name_id AND s.pid = n.pid "
    "LEFT JOIN domains d ON d.domain_id = n.domain AND d.pid = n.pid;"
    "CREATE VIEW counters_named AS SELECT c.*, s.text AS name FROM counters c "
    "LEFT JOIN strings s ON s.id = c.name_id AND s.pid = c.pid;"
    "CREATE VIEW overhead_named AS SELECT o.*, s.text AS name FROM overhead o "
    "LEFT JOIN strings s ON s.id = o.name_id AND s.pid = o.pid;"
    "CREATE VIEW stacks_named AS SELECT st.*, m.path AS module_path FROM stacks st "
    "LEFT JOIN modules m ON m.module_id = st.module_id AND m.pid = st.pid;"
    /* the name tp_kineto_memcpy_name gives, spelled in SQL */
    "CREATE VIEW memcpy_named AS SELECT m.*, '" TP_KINETO_MEMCPY " ' || m.copy_kind || ' (' || "
    "m.src_kind || ' -> ' || m.dst_kind || ')' AS name FROM memcpy m;";

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
    uint64_t t_last;      /* latest end of any data record: where ranges never closed end */
    uint32_t pid;         /* the process being exported: its PROCESS record's (every row's
                             pid column, and threads that carry none) */
    sqlite3_stmt *py_ins; /* python_code's insert, once a PYCODE record made the table */
    const tp_export_sqlite_opts *o; /* the frames' symbolizer */
} sctx;

static void db_fail(sctx *c, const char *what) {
    if (!c->failed)
        snprintf(c->err, sizeof c->err, "%s: %s", what, sqlite3_errmsg(c->db));
    c->failed = 1;
}

static uint32_t mark(sctx *c, idset *s, uint32_t id) {
    if (!id)
        return 0;
    size_t old = s->n;
    if (!TP_MEM_GROW(s->bits, s->n, (size_t)id / 8 + 1)) {
        c->failed = 1, snprintf(c->err, sizeof c->err, "out of memory");
        return id;
    }
    memset(s->bits + old, 0, s->n - old);
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
    if (!tables[table].has_pid)
        sqlite3_bind_int64(st, n + 1, c->pid);
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

/* A handler's verdict: after an SQLite or allocation error the walk stops (c->err says why). */
static tp_status ok(const sctx *c) {
    return c->failed ? TP_ERR_IO : TP_OK;
}

static tp_status on_kernel(void *cx, const tp_rec_hdr *h) {
    sctx *c = cx;
    const tp_rec_kernel *k = (const void *)h;
    INSERT(c, T_KERNELS, VI(k->ts), VI(k->end), VI(k->correlation), sid(c, k->name_sid),
           VI(k->device), VI(k->context), VI(k->stream), VI(k->grid_x), VI(k->grid_y),
           VI(k->grid_z), VI(k->block_x), VI(k->block_y), VI(k->block_z),
           VI(k->registers_per_thread), VI(k->static_shared_bytes), VI(k->dynamic_shared_bytes),
           VI(k->graph_id), VI(k->graph_node_id));
    return ok(c);
}

static tp_status on_memcpy(void *cx, const tp_rec_hdr *h) {
    sctx *c = cx;
    const tp_rec_memcpy *m = (const void *)h;
    INSERT(c, T_MEMCPY, VI(m->ts), VI(m->end), VI(m->bytes), VI(m->correlation), VI(m->device),
           VI(m->context), VI(m->stream), VS(tp_copy_kind_name(m->copy_kind)),
           VS(tp_mem_kind_name(m->src_kind)), VS(tp_mem_kind_name(m->dst_kind)), VI(m->src_device),
           VI(m->dst_device), VI(m->runtime_correlation), VI(m->graph_id),
           VI((h->flags & TP_MEMCPY_ASYNC) != 0));
    return ok(c);
}

static tp_status on_memset(void *cx, const tp_rec_hdr *h) {
    sctx *c = cx;
    const tp_rec_memset *m = (const void *)h;
    INSERT(c, T_MEMSET, VI(m->ts), VI(m->end), VI(m->bytes), VI(m->correlation), VI(m->device),
           VI(m->context), VI(m->stream), VI(m->value), VS(tp_mem_kind_name(m->mem_kind)));
    return ok(c);
}

static tp_status on_sync(void *cx, const tp_rec_hdr *h) {
    static const char *const sync_types[] = {"unknown", "event", "stream_wait_event", "stream",
                                             "context"};
    sctx *c = cx;
    const tp_rec_sync *s = (const void *)h;
    INSERT(c, T_SYNC, VI(s->ts), VI(s->end), VI(s->correlation), VS(PICK(sync_types, s->type)),
           VI(s->device), VI(s->context), s->stream == 0xffffffffu ? VI(-1) : VI(s->stream),
           VI(s->tid), VI(s->event));
    return ok(c);
}

static tp_status on_api(void *cx, const tp_rec_hdr *h) {
    static const char *const kinds[] = {"unknown", "runtime", "driver", "device"};
    sctx *c = cx;
    const tp_rec_api *a = (const void *)h;
    INSERT(c, T_API, VI(a->ts), VI(a->end), VI(a->tid), VI(a->correlation), VI(a->cbid),
           sid(c, a->name_sid), stk(c, a->stack_id), VI(a->result),
           VS(PICK(kinds, h->flags & TP_RF_TYPE_MASK)));
    return ok(c);
}

/* An NVTX range, paired by the visitor (as the model's native loader gets them); one
 * never closed ends where the trace's last record does. */
static tp_status on_range(void *cx, const tp_visit_range *r) {
    sctx *c = cx;
    const tp_open_range *o = &r->open;
    INSERT(c, T_NVTX_RANGES, VI(o->ts), VI(r->closed ? r->end : c->t_last), VI(o->tid),
           VI(o->domain), sid(c, o->msg_sid), VI(o->category), VI(o->color),
           VS(o->opened_by == TP_REC_NVTX_START ? "start_end" : "push_pop"), VI(r->closed),
           stk(c, o->stack_id));
    return ok(c);
}

static tp_status on_mark(void *cx, const tp_rec_hdr *h) {
    sctx *c = cx;
    const tp_rec_nvtx *n = (const void *)h;
    uint32_t color = (h->flags & TP_NVTX_HAS_COLOR) ? n->color : 0;
    INSERT(c, T_NVTX_MARKS, VI(n->ts), VI(n->tid), VI(n->domain), sid(c, n->msg_sid),
           VI(n->category), VI(color));
    return ok(c);
}

static tp_status on_device_mem(void *cx, const tp_rec_hdr *h) {
    static const char *const mem_ops[] = {"unknown", "alloc", "free"};
    sctx *c = cx;
    const tp_rec_device_mem *d = (const void *)h;
    INSERT(c, T_DEVICE_MEM, VI(d->ts), VS(PICK(mem_ops, d->op)), VI(d->address), VI(d->bytes),
           VI(d->device), VI(d->context), VI(d->stream), VS(tp_mem_kind_name(d->mem_kind)),
           VI(d->correlation), stk(c, d->stack_id), VI(d->tid));
    return ok(c);
}

static tp_status on_heap(void *cx, const tp_rec_hdr *h) {
    static const char *const heap_ops[] = {"unknown", "register", "unregister", "reset"};
    sctx *c = cx;
    const tp_rec_heap *p = (const void *)h;
    INSERT(c, T_HEAPS, VI(p->ts), VS(PICK(heap_ops, p->op)), VI(p->heap), VI(p->address),
           VI(p->size), VI(p->tid), VI(p->domain), VI(p->usage), VI(p->mem_type),
           stk(c, p->stack_id), sid(c, p->name_sid));
    return ok(c);
}

static tp_status on_region(void *cx, const tp_rec_hdr *h) {
    static const char *const region_ops[] = {"unknown", "register", "resize", "unregister"};
    sctx *c = cx;
    const tp_rec_region *g = (const void *)h;
    INSERT(c, T_REGIONS, VI(g->ts), VS(PICK(region_ops, g->op)), VI(g->heap), VI(g->address),
           VI(g->size), VI(g->tid), VI(g->domain), stk(c, g->stack_id), sid(c, g->name_sid));
    return ok(c);
}

static tp_status on_alloc_fail(void *cx, const tp_rec_hdr *h) {
    sctx *c = cx;
    const tp_rec_alloc_fail *f = (const void *)h;
    INSERT(c, T_ALLOC_FAILURES, VI(f->ts), VI(f->requested), VI(f->reserved_bytes),
           VI(f->free_bytes), VI(f->largest_free_block), VI(f->tid), VI(f->device),
           stk(c, f->stack_id));
    return ok(c);
}

static tp_status on_counter(void *cx, const tp_rec_hdr *h) {
    sctx *c = cx;
    const tp_rec_counter *k = (const void *)h;
    double d;
    memcpy(&d, &k->value, sizeof d);
    val v = (h->flags & TP_COUNTER_F64) ? (val){'d', 0, d, NULL} : VI(k->value);
    INSERT(c, T_COUNTERS, VI(k->ts), sid(c, k->name_sid), VI(k->tid), v);
    return ok(c);
}

static tp_status on_dropped(void *cx, const tp_rec_hdr *h) {
    static const char *const reasons[] = {"unknown", "ring_full", "no_buffer", "cupti", "convert"};
    sctx *c = cx;
    const tp_rec_dropped *d = (const void *)h;
    const char *what = d->what ? tp_record_name((uint16_t)d->what) : "any";
    INSERT(c, T_DROPPED, VI(d->ts), VI(d->count), VS(what ? what : "unknown"),
           VS(PICK(reasons, d->reason)));
    return ok(c);
}

static tp_status on_overhead(void *cx, const tp_rec_hdr *h) {
    sctx *c = cx;
    const tp_rec_overhead *o = (const void *)h;
    INSERT(c, T_OVERHEAD, VI(o->ts), VI(o->end), VI(o->tid), VI(o->kind), sid(c, o->name_sid));
    return ok(c);
}

static tp_status on_sample(void *cx, const tp_rec_hdr *h) {
    sctx *c = cx;
    tp_rec_sample s;
    tp_record_get(h, &s, sizeof s);
    INSERT(c, T_SAMPLES, VI(s.ts), VI(s.tid), stk(c, s.stack_id),
           VI((h->flags & TP_SAMPLE_ON_CPU) != 0), VI(s.cpu_ns), VI(s.period_ns),
           VI((h->flags & TP_SAMPLE_HOLDS_GIL) != 0), VI((h->flags & TP_SAMPLE_NATIVE) != 0));
    return ok(c);
}

/* Every data record moves the trace's end (clock syncs excepted: they bracket the run). */
static tp_status note_end(void *cx, const tp_rec_hdr *h) {
    sctx *c = cx;
    uint64_t end = tp_record_end(h);
    if (end > c->t_last && h->type != TP_REC_CLOCK_SYNC)
        c->t_last = end;
    return TP_OK;
}

/* ---------------------------------------------------------------- metadata */

static const char *str(sctx *c, uint32_t id) {
    return tp_reader_string(c->r, id);
}

static tp_status on_process(void *cx, const tp_rec_hdr *h) {
    sctx *c = cx;
    const tp_rec_process *p = (const void *)h;
    INSERT(c, T_PROCESS, VI(p->pid), VI(p->ppid), VI(p->rank), VI(p->world_size), VI(p->local_rank),
           VS(str(c, p->host_sid)), VS(str(c, p->cmdline_sid)), VS(str(c, p->exe_sid)),
           VI(p->start_realtime_ns), VS(str(c, p->producer_sid)));
    return ok(c);
}

/* One row per thread, with its latest name. */
static tp_status on_thread(void *cx, const tp_visit_thread *t) {
    sctx *c = cx;
    if (t->last)
        INSERT(c, T_THREADS, VI(t->rec->tid), VI(t->rec->pid ? t->rec->pid : c->pid), VS(t->name));
    return ok(c);
}

static tp_status on_device(void *cx, const tp_rec_hdr *h) {
    sctx *c = cx;
    const tp_rec_device *d = (const void *)h;
    INSERT(c, T_DEVICES, VI(d->id), VS(str(c, d->name_sid)), VI(d->global_memory_bytes),
           VI(d->sm_count), VI(d->compute_capability),
           VS(d->kind == TP_DEVICE_GPU         ? "gpu"
              : d->kind == TP_DEVICE_CPU_ACCEL ? "cpu"
                                               : "?"));
    return ok(c);
}

static tp_status on_module(void *cx, const tp_rec_hdr *h) {
    sctx *c = cx;
    const tp_rec_module *m = (const void *)h;
    char hex[65] = "";
    for (uint32_t b = 0; b < m->build_id_len && b < 32; b++)
        snprintf(hex + 2 * b, 3, "%02x", m->build_id[b]);
    INSERT(c, T_MODULES, VI(m->id), VS(str(c, m->path_sid)), VI(m->load_bias), VI(m->lo), VI(m->hi),
           VS(hex));
    return ok(c);
}

static tp_status on_domain(void *cx, const tp_rec_hdr *h) {
    sctx *c = cx;
    const tp_rec_domain *d = (const void *)h;
    INSERT(c, T_DOMAINS, VI(d->id), VS(str(c, d->name_sid)));
    return ok(c);
}

/* The file name of a path (the frames table's module names the whole path). */
static const char *module_path(sctx *c, uint32_t id) {
    const tp_rec_module *m = tp_reader_module(c->r, id);
    return m ? str(c, m->path_sid) : NULL;
}

/* One native frame as rows of the frames table: a function each (inlined ones first) when
 * the symbolizer knows the address, else one row saying why not. python: the stack has
 * Python frames (its native ones are the interpreter's and its extensions': a library's). */
static void native_frame(sctx *c, uint32_t id, uint32_t d, uint64_t f, int python) {
    uint32_t mod = TP_FRAME_MODULE(f);
    uint64_t off = TP_FRAME_OFFSET(f);
    if (mod == TP_FRAME_NO_MODULE) {
        INSERT(c, T_FRAMES, VI(id), VI(d), VI(0), VS("native"), VS(NULL), VS(NULL), VS(NULL),
               VS(NULL), VI(off), VS("no module"), python ? VI(1) : VS(NULL));
        return;
    }
    const tp_rec_module *m = tp_reader_module(c->r, mod);
    const char *path = module_path(c, mod), *why = "off";
    tp_export_frame fr[TP_EXPORT_MAX_INLINE];
    size_t n = 0;
    if (m && path && c->o && c->o->symbolize)
        n = c->o->symbolize(c->o->ctx, path, m->build_id,
                            m->build_id_len < 32 ? m->build_id_len : 32, off, fr,
                            TP_EXPORT_MAX_INLINE, &why);
    int lib = python || tp_libpath_native(path);
    if (!n)
        INSERT(c, T_FRAMES, VI(id), VI(d), VI(0), VS("native"), VS(NULL), VS(NULL), VS(NULL),
               VS(path), VI(off), VS(m ? why : "no module"), VI(lib));
    for (size_t k = 0; k < n; k++)
        INSERT(c, T_FRAMES, VI(id), VI(d), VI(k), VS(k + 1 < n ? "inlined" : "native"),
               VS(fr[k].func), VS(fr[k].file), fr[k].line > 0 ? VI(fr[k].line) : VS(NULL), VS(path),
               VI(off), VS("ok"), VI(lib));
}

/* The frames of stack `id`, one row per function (see tables[T_FRAMES]). */
static void stack_frames(sctx *c, uint32_t id, const uint64_t *f, uint32_t nf) {
    int python = 0;
    for (uint32_t d = 0; d < nf && !python; d++)
        python = TP_FRAME_IS_PYTHON(f[d]);
    for (uint32_t d = 0; d < nf; d++) {
        if (!TP_FRAME_IS_PYTHON(f[d])) {
            native_frame(c, id, d, f[d], python);
            continue;
        }
        const tp_rec_pycode *py = tp_reader_pycode(c->r, TP_FRAME_PY_CODE(f[d]));
        const char *file = py ? str(c, py->file_sid) : NULL;
        uint32_t line = TP_FRAME_PY_LINE(f[d]);
        INSERT(c, T_FRAMES, VI(id), VI(d), VI(0), VS("python"),
               VS(py ? str(c, py->name_sid) : NULL), VS(file), line ? VI(line) : VS(NULL), VS(NULL),
               VI(TP_FRAME_OFFSET(f[d])), VS(py ? "python" : "unknown Python code"),
               VI(tp_libpath_python(file)));
    }
}

/* The strings and stacks rows referred to (ids collected while inserting). */
/* One row of strings: the text as recorded and, when the report shows it otherwise, its
 * display spelling, Kineto's (a C++ kernel demangled, a CUDA call without CUPTI's version
 * suffix: tp_demangle, tp_kineto_api_name_len); the *_named views show that. */
static void string_row(sctx *c, uint32_t id) {
    const char *s = str(c, id);
    char *d = tp_demangle(s);
    size_t n = s ? strlen(s) : 0, m = s ? tp_kineto_api_name_len(s, n) : 0;
    if (!d && m < n) {
        d = malloc(m + 1);
        if (d) {
            memcpy(d, s, m);
            d[m] = 0;
        }
    }
    INSERT(c, T_STRINGS, VI(id), VS(s), VS(d)); /* NULL text binds NULL */
    free(d);
}

static void meta_ids(sctx *c) {
    for (size_t id = 1; id < c->stacks.n * 8; id++) {
        if (!(c->stacks.bits[id / 8] & (1u << (id % 8))))
            continue;
        uint32_t nf;
        const uint64_t *f = tp_reader_stack(c->r, (uint32_t)id, &nf);
        for (uint32_t d = 0; d < nf; d++)
            INSERT(c, T_STACKS, VI(id), VI(d), VI(TP_FRAME_MODULE(f[d])),
                   VI(TP_FRAME_OFFSET(f[d])));
        stack_frames(c, (uint32_t)id, f, nf);
    }
    for (size_t id = 1; id < c->sids.n * 8; id++)
        if (c->sids.bits[id / 8] & (1u << (id % 8)))
            string_row(c, (uint32_t)id);
}

/* Every table but strings and stacks, which meta_ids fills afterwards. */
static const tp_visitor exporter = {
    .meta =
        {
            [TP_REC_PROCESS] = on_process,
            [TP_REC_MODULE] = on_module,
            [TP_REC_DEVICE] = on_device,
            [TP_REC_DOMAIN] = on_domain,
        },
    .thread = on_thread,
    .each = note_end,
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
            [TP_REC_DROPPED] = on_dropped,
            [TP_REC_OVERHEAD] = on_overhead,
            [TP_REC_SAMPLE] = on_sample,
        },
    .range = on_range,
};

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
        int has_pid = tables[t].has_pid;
        int len = snprintf(sql, sizeof sql, "CREATE TABLE %s (%s%s", tables[t].name,
                           tables[t].columns, has_pid ? "" : ", pid INTEGER");
        if (tables[t].key)
            len += snprintf(sql + len, sizeof sql - (size_t)len, ", PRIMARY KEY (pid, %s)",
                            tables[t].key);
        snprintf(sql + len, sizeof sql - (size_t)len, ");");
        if (!exec(c, sql))
            return 0;
        int ncol = has_pid ? 1 : 2; /* one '?' per column: the commas, and pid */
        for (const char *p = tables[t].columns; *p; p++)
            ncol += *p == ',';
        len = snprintf(sql, sizeof sql, "INSERT OR REPLACE INTO %s VALUES (?", tables[t].name);
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
 * code id << 24 | line). Created at the first PYCODE record, so the schema of other traces'
 * exports stays as it was. */
static int python_schema(sctx *c) {
    char sql[1024];
    snprintf(sql, sizeof sql,
             "CREATE TABLE python_code (code_id INTEGER, function TEXT, file TEXT, "
             "first_line INTEGER, pid INTEGER, PRIMARY KEY (pid, code_id));"
             "CREATE VIEW stacks_python AS SELECT st.stack_id, st.depth, st.module_id, "
             "st.offset, m.path AS module_path, c.function, c.file, CASE WHEN st.module_id = %u "
             "THEN st.offset & %u END AS line, st.pid FROM stacks st LEFT JOIN modules m ON "
             "m.module_id = st.module_id AND m.pid = st.pid LEFT JOIN python_code c ON "
             "st.module_id = %u AND c.code_id = st.offset >> 24 AND c.pid = st.pid;",
             TP_FRAME_PYTHON, TP_PYLINE_MAX, TP_FRAME_PYTHON);
    if (!exec(c, sql) ||
        sqlite3_prepare_v2(c->db, "INSERT OR REPLACE INTO python_code VALUES (?,?,?,?,?)", -1,
                           &c->py_ins, NULL) != SQLITE_OK) {
        db_fail(c, "python_code");
        return 0;
    }
    return 1;
}

static tp_status on_pycode(void *cx, const tp_rec_hdr *h) {
    sctx *c = cx;
    const tp_rec_pycode *p = (const void *)h;
    if (!c->py_ins && !python_schema(c))
        return TP_ERR_IO;
    sqlite3_bind_int64(c->py_ins, 1, p->id);
    sqlite3_bind_text(c->py_ins, 2, str(c, p->name_sid), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(c->py_ins, 3, str(c, p->file_sid), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(c->py_ins, 4, p->first_line);
    sqlite3_bind_int64(c->py_ins, 5, c->pid);
    if (sqlite3_step(c->py_ins) != SQLITE_DONE)
        db_fail(c, "python_code");
    sqlite3_reset(c->py_ins);
    c->rows++;
    return ok(c);
}

/* After the strings and stacks: the Python code objects. */
static const tp_visitor python = {.meta = {[TP_REC_PYCODE] = on_pycode}};

/* The pid of trace `r`'s process (its PROCESS record's); 0 when it has none. */
static uint32_t pid_of(const tp_reader *r) {
    const tp_rec_hdr *const *recs;
    tp_rec_process p = {0};
    if (tp_reader_meta(r, TP_REC_PROCESS, &recs) > 0)
        tp_record_get(recs[0], &p, sizeof p);
    return p.pid;
}

/* One process's trace into the open transaction. Ids are per trace: the sets of ids its rows
 * referred to start empty. */
static tp_status export_one(sctx *c, tp_reader *r) {
    c->r = r;
    c->pid = pid_of(r);
    c->t_last = 0;
    if (c->sids.n)
        memset(c->sids.bits, 0, c->sids.n);
    if (c->stacks.n)
        memset(c->stacks.bits, 0, c->stacks.n);
    tp_status st = tp_visit_run(c->r, &exporter, c, NULL);
    if (st != TP_OK && !c->failed)
        return st; /* the visitor's own failure (out of memory), not a row's */
    meta_ids(c);
    if (!c->failed && (st = tp_visit_run(c->r, &python, c, NULL)) != TP_OK && !c->failed)
        return st;
    return c->failed ? TP_ERR_IO : TP_OK;
}

static tp_status export_all(sctx *c, tp_reader *const *r, size_t n) {
    if (!create_schema(c))
        return TP_ERR_IO;
    for (size_t i = 0; i < n; i++) {
        tp_status st = export_one(c, r[i]);
        if (st != TP_OK)
            return st;
    }
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
    return tp_export_sqlite_set(&r, 1, path, NULL, rows, err, err_size);
}

tp_status tp_export_sqlite_set(tp_reader *const *r, size_t n, const char *path,
                               const tp_export_sqlite_opts *o, uint64_t *rows, char *err,
                               size_t err_size) {
    sctx *c = calloc(1, sizeof *c);
    if (!c)
        return TP_ERR_NOMEM;
    c->o = o;
    remove_file(path); /* replace, never append to an old export */
    tp_status st = TP_ERR_OPEN;
    if (sqlite3_open_v2(path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
        SQLITE_OK) {
        snprintf(c->err, sizeof c->err, "cannot create file (%s)",
                 c->db ? sqlite3_errmsg(c->db) : "out of memory");
    } else {
        st = export_all(c, r, n);
    }
    for (int t = 0; t < T_COUNT; t++)
        sqlite3_finalize(c->ins[t]);
    sqlite3_finalize(c->py_ins);
    if (sqlite3_close(c->db) != SQLITE_OK && st == TP_OK)
        st = TP_ERR_IO;
    if (st != TP_OK) {
        if (err && err_size)
            snprintf(err, err_size, "%s: %s", path, c->err[0] ? c->err : tp_status_str(st));
        remove_file(path);
    } else if (rows) {
        *rows = c->rows;
    }
    free(c->sids.bits), free(c->stacks.bits);
    free(c);
    return st;
}
