/* tp_load_native: maps every record type of a .tprof trace onto the model. NVTX ranges are
 * paired here (push/pop per thread and domain, start/end by range id); region sizes are
 * remembered by address so an unregister can report how much it released. */
#include "tp_load_native.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_chunk.h"
#include "tp_pairing.h"
#include "tp_reader.h"
#include "tp_record.h"

typedef struct {
    tp_model *m;
    tp_rank *r;
    tp_reader *rd;
    int64_t pid;
    int64_t t_last;
    tp_range_stack pushes, starts;
    tp_region_map regions;
} nload;

static uint32_t intern_sid(nload *L, uint32_t sid) {
    const char *s = tp_reader_string(L->rd, sid);
    return s ? tp_model_intern(L->m, s, strlen(s)) : 0;
}

static uint32_t intern_lit(nload *L, const char *s) {
    return tp_model_intern(L->m, s, strlen(s));
}

static void push_row(nload *L, tp_event_row *row) {
    if (row->ts + row->dur > L->t_last)
        L->t_last = row->ts + row->dur;
    row->cat_raw = intern_lit(L, tp_cat_name((tp_cat)row->cat));
    tp_events_push(&L->r->ev, row);
}

/* ---------------------------------------------------------------- regions */

/* The loader may abort on out-of-memory (STYLE: the analyzer is not the collector). */
static void range_push(tp_range_stack *s, const tp_open_range *o) {
    if (!tp_range_stack_push(s, o))
        abort();
}

static void region_put(tp_region_map *m, uint64_t addr, uint64_t size) {
    if (!tp_region_map_put(m, addr, size))
        abort();
}

/* ---------------------------------------------------------------- records */

static void on_api(nload *L, const tp_rec_hdr *h) {
    tp_rec_api a;
    tp_record_get(h, &a, sizeof a);
    unsigned kind = h->flags & TP_RF_TYPE_MASK;
    tp_event_row row;
    tp_event_row_init(&row);
    row.ts = (int64_t)a.ts;
    row.dur = a.end > a.ts ? (int64_t)(a.end - a.ts) : 0;
    row.name = intern_sid(L, a.name_sid);
    row.cat = kind == TP_API_DRIVER ? TP_CAT_CUDA_DRIVER : TP_CAT_CUDA_RUNTIME;
    row.flags = tp_model_name_flags(tp_model_str(L->m, row.name));
    if (kind == TP_API_DEVICE)
        row.flags |= TP_EVF_LAUNCH;
    row.pid = L->pid;
    row.tid = a.tid;
    row.correlation = a.correlation ? (int64_t)a.correlation : -1;
    row.stack = a.stack_id;
    push_row(L, &row);
}

static void gpu_row(tp_event_row *row, uint64_t ts, uint64_t end, uint32_t device, uint32_t stream,
                    uint32_t corr) {
    tp_event_row_init(row);
    row->ts = (int64_t)ts;
    row->dur = end > ts ? (int64_t)(end - ts) : 0;
    row->device = (int32_t)device;
    row->stream = stream;
    row->pid = device;
    row->tid = stream;
    row->correlation = corr ? (int64_t)corr : -1;
}

static void on_kernel(nload *L, const tp_rec_hdr *h) {
    tp_rec_kernel k;
    tp_record_get(h, &k, sizeof k);
    tp_event_row row;
    gpu_row(&row, k.ts, k.end, k.device, k.stream, k.correlation);
    row.cat = TP_CAT_KERNEL;
    row.name = intern_sid(L, k.name_sid);
    row.flags = tp_model_name_flags(tp_model_str(L->m, row.name)) & (uint8_t)~TP_EVF_LAUNCH;
    push_row(L, &row);
}

static void on_memcpy(nload *L, const tp_rec_hdr *h) {
    tp_rec_memcpy c;
    tp_record_get(h, &c, sizeof c);
    tp_event_row row;
    gpu_row(&row, c.ts, c.end, c.device, c.stream, c.correlation);
    char name[96];
    snprintf(name, sizeof name, "Memcpy %s (%s -> %s)", tp_copy_kind_name(c.copy_kind),
             tp_mem_kind_name(c.src_kind), tp_mem_kind_name(c.dst_kind));
    row.cat = TP_CAT_MEMCPY;
    row.name = intern_lit(L, name);
    row.bytes = (int64_t)c.bytes;
    row.copy_kind = c.copy_kind;
    row.src_kind = c.src_kind;
    row.dst_kind = c.dst_kind;
    row.flags = (h->flags & TP_MEMCPY_ASYNC) ? TP_EVF_ASYNC : 0;
    push_row(L, &row);
}

static void on_memset(nload *L, const tp_rec_hdr *h) {
    tp_rec_memset s;
    tp_record_get(h, &s, sizeof s);
    tp_event_row row;
    gpu_row(&row, s.ts, s.end, s.device, s.stream, s.correlation);
    char name[64];
    snprintf(name, sizeof name, "Memset (%s)", tp_mem_kind_name(s.mem_kind));
    row.cat = TP_CAT_MEMSET;
    row.name = intern_lit(L, name);
    row.bytes = (int64_t)s.bytes;
    row.src_kind = row.dst_kind = s.mem_kind;
    push_row(L, &row);
}

/* Kineto's names for CUPTI synchronization records. */
static void on_sync(nload *L, const tp_rec_hdr *h) {
    static const char *const names[] = {"Unknown Sync", "Event Sync", "Stream Wait Event",
                                        "Stream Sync", "Context Sync"};
    tp_rec_sync s;
    tp_record_get(h, &s, sizeof s);
    tp_event_row row;
    gpu_row(&row, s.ts, s.end, s.device, s.stream, s.correlation);
    if (s.stream == 0xffffffffu) { /* not stream-specific: a CPU-side wait */
        row.stream = -1;
        row.pid = L->pid;
        row.tid = s.tid;
    }
    row.cat = TP_CAT_CUDA_SYNC;
    row.name = intern_lit(L, names[s.type < 5 ? s.type : 0]);
    push_row(L, &row);
}

static void annotation(nload *L, const tp_open_range *o, int64_t end) {
    tp_event_row row;
    tp_event_row_init(&row);
    row.ts = (int64_t)o->ts;
    row.dur = end > row.ts ? end - row.ts : 0;
    row.cat = TP_CAT_USER_ANNOTATION;
    row.name = intern_sid(L, o->msg_sid);
    row.flags = tp_model_name_flags(tp_model_str(L->m, row.name)) & (uint8_t)~TP_EVF_LAUNCH;
    row.pid = L->pid;
    row.tid = o->tid;
    push_row(L, &row);
}

static void on_nvtx(nload *L, const tp_rec_hdr *h) {
    tp_open_range o, got;
    if (h->type == TP_REC_NVTX_PUSH) {
        tp_rec_nvtx n;
        tp_record_get(h, &n, sizeof n);
        o = (tp_open_range){TP_PAIR_PUSH_KEY(n.tid, n.domain), n.ts, n.msg_sid, n.tid};
        range_push(&L->pushes, &o);
    } else if (h->type == TP_REC_NVTX_POP) {
        tp_rec_nvtx_pop n;
        tp_record_get(h, &n, sizeof n);
        if (tp_range_stack_take(&L->pushes, TP_PAIR_PUSH_KEY(n.tid, n.domain), &got))
            annotation(L, &got, (int64_t)n.ts);
    } else if (h->type == TP_REC_NVTX_START) {
        tp_rec_nvtx_start n;
        tp_record_get(h, &n, sizeof n);
        o = (tp_open_range){n.range_id, n.ts, n.msg_sid, n.tid};
        range_push(&L->starts, &o);
    } else if (h->type == TP_REC_NVTX_END) {
        tp_rec_nvtx_end n;
        tp_record_get(h, &n, sizeof n);
        if (tp_range_stack_take(&L->starts, n.range_id, &got))
            annotation(L, &got, (int64_t)n.ts);
    }
}

static void mem_event(nload *L, int64_t ts, uint8_t kind, int32_t dev, uint64_t addr, int64_t bytes,
                      uint32_t stack) {
    tp_memev_row row = {ts, bytes, -1, -1, addr, dev, kind, stack, 0};
    tp_memev_push(&L->r->mem, &row);
}

static void on_memory(nload *L, const tp_rec_hdr *h) {
    if (h->type == TP_REC_DEVICE_MEM) {
        tp_rec_device_mem d;
        tp_record_get(h, &d, sizeof d);
        int free_op = d.op == TP_MEMOP_FREE;
        mem_event(L, (int64_t)d.ts, free_op ? TP_MEMEV_FREE : TP_MEMEV_ALLOC, (int32_t)d.device,
                  d.address, free_op ? -(int64_t)d.bytes : (int64_t)d.bytes, d.stack_id);
    } else if (h->type == TP_REC_HEAP) {
        tp_rec_heap p;
        tp_record_get(h, &p, sizeof p);
        int64_t sz = p.op == TP_HEAP_REGISTER ? (int64_t)p.size : -(int64_t)p.size;
        mem_event(L, (int64_t)p.ts, TP_MEMEV_HEAP, -1, p.address, sz, p.stack_id);
    } else if (h->type == TP_REC_REGION) {
        tp_rec_region g;
        tp_record_get(h, &g, sizeof g);
        uint64_t old = tp_region_map_take(&L->regions, g.address);
        int64_t delta = (int64_t)(g.op == TP_REGION_UNREGISTER ? 0 : g.size) - (int64_t)old;
        if (g.op != TP_REGION_UNREGISTER)
            region_put(&L->regions, g.address, g.size);
        mem_event(L, (int64_t)g.ts, delta < 0 ? TP_MEMEV_FREE : TP_MEMEV_ALLOC, -1, g.address,
                  delta, g.stack_id);
    } else if (h->type == TP_REC_ALLOC_FAIL) {
        tp_rec_alloc_fail f;
        tp_record_get(h, &f, sizeof f);
        tp_memev_row row = {(int64_t)f.ts,
                            (int64_t)f.requested,
                            (int64_t)(f.reserved_bytes - f.free_bytes),
                            (int64_t)f.reserved_bytes,
                            0,
                            (int32_t)f.device,
                            TP_MEMEV_ALLOC_FAIL,
                            f.stack_id,
                            (int64_t)f.largest_free_block};
        tp_memev_push(&L->r->mem, &row);
    }
}

static void on_other(nload *L, const tp_rec_hdr *h) {
    if (h->type == TP_REC_DROPPED) {
        tp_rec_dropped d;
        tp_record_get(h, &d, sizeof d);
        L->r->n_dropped_records += d.count;
    } else if (h->type == TP_REC_OVERHEAD) {
        tp_rec_overhead o;
        tp_record_get(h, &o, sizeof o);
        tp_event_row row;
        tp_event_row_init(&row);
        row.ts = (int64_t)o.ts;
        row.dur = o.end > o.ts ? (int64_t)(o.end - o.ts) : 0;
        row.cat = TP_CAT_OVERHEAD;
        row.name = o.name_sid ? intern_sid(L, o.name_sid) : intern_lit(L, "trainprof overhead");
        row.pid = L->pid;
        row.tid = o.tid;
        push_row(L, &row);
    } else if (h->type == TP_REC_NVTX_MARK || h->type == TP_REC_COUNTER ||
               h->type == TP_REC_CLOCK_SYNC) {
        L->r->n_instant++;
    }
}

static void on_record(nload *L, const tp_rec_hdr *h) {
    switch (h->type) {
    case TP_REC_API:
        on_api(L, h);
        break;
    case TP_REC_KERNEL:
        on_kernel(L, h);
        break;
    case TP_REC_MEMCPY:
        on_memcpy(L, h);
        break;
    case TP_REC_MEMSET:
        on_memset(L, h);
        break;
    case TP_REC_SYNC:
        on_sync(L, h);
        break;
    case TP_REC_NVTX_PUSH:
    case TP_REC_NVTX_POP:
    case TP_REC_NVTX_START:
    case TP_REC_NVTX_END:
        on_nvtx(L, h);
        break;
    case TP_REC_DEVICE_MEM:
    case TP_REC_HEAP:
    case TP_REC_REGION:
    case TP_REC_ALLOC_FAIL:
        on_memory(L, h);
        break;
    default:
        on_other(L, h);
        break;
    }
}

/* ---------------------------------------------------------------- stacks */

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Copies the stacks the rank's rows refer to, and the modules their frames point into, from
 * the trace into the model, so the analyses never reopen the file to read a stack. Reads only
 * the rank's rows and the reader's metadata; call it once the records are loaded. */
/* Marks Python code id `id` in the set *seen (grown to the largest id met). */
static void note_code(uint8_t **seen, uint32_t *max, uint32_t id) {
    if (!id) /* ids start at 1 */
        return;
    if (id > *max) {
        uint8_t *p = realloc(*seen, (size_t)id + 1);
        if (!p)
            abort();
        memset(p + (*seen ? *max + 1 : 0), 0, (size_t)id + 1 - (*seen ? *max + 1 : 0));
        *seen = p, *max = id;
    }
    (*seen)[id] = 1;
}

static void load_stacks(nload *L) {
    const tp_events *ev = &L->r->ev;
    const tp_memevents *mem = &L->r->mem;
    uint32_t *ids = malloc((ev->n + mem->n + 1) * sizeof *ids);
    uint8_t *mod_seen = calloc(TP_FRAME_NO_MODULE + 1, 1);
    uint8_t *code_seen = NULL; /* Python code ids met, by id (TP_PYCODE_MAX_ID at most) */
    uint32_t max_code = 0;
    uint32_t *mods = NULL;
    uint64_t *addrs = NULL;
    size_t n = 0, cap = 0;
    if (!ids || !mod_seen)
        abort();
    for (size_t i = 0; i < ev->n; i++)
        if (ev->stack[i])
            ids[n++] = ev->stack[i];
    for (size_t i = 0; i < mem->n; i++)
        if (mem->stack[i])
            ids[n++] = mem->stack[i];
    qsort(ids, n, sizeof *ids, cmp_u32);
    for (size_t k = 0; k < n; k++) {
        uint32_t nf = 0;
        const uint64_t *f = k && ids[k] == ids[k - 1] ? NULL : tp_reader_stack(L->rd, ids[k], &nf);
        if (!f)
            continue;
        if (nf > cap) {
            cap = nf;
            mods = realloc(mods, cap * sizeof *mods), addrs = realloc(addrs, cap * sizeof *addrs);
            if (!mods || !addrs)
                abort();
        }
        for (uint32_t i = 0; i < nf; i++) {
            uint32_t mo = TP_FRAME_MODULE(f[i]);
            addrs[i] = TP_FRAME_OFFSET(f[i]);
            if (TP_FRAME_IS_PYTHON(f[i])) {
                mods[i] = TP_STACK_PYTHON;
                note_code(&code_seen, &max_code, TP_FRAME_PY_CODE(f[i]));
                continue;
            }
            mods[i] = mo == TP_FRAME_NO_MODULE ? TP_STACK_NO_MODULE : mo;
            mod_seen[mo] = 1;
        }
        tp_rank_add_stack(L->r, ids[k], mods, addrs, nf);
    }
    for (uint32_t id = 0; id < TP_FRAME_NO_MODULE; id++) {
        const tp_rec_module *mo = mod_seen[id] ? tp_reader_module(L->rd, id) : NULL;
        if (mo)
            tp_rank_add_stack_module(L->m, L->r, id, tp_reader_string(L->rd, mo->path_sid),
                                     mo->build_id, mo->build_id_len);
    }
    for (uint32_t id = 1; id <= max_code; id++) {
        const tp_rec_pycode *c = code_seen[id] ? tp_reader_pycode(L->rd, id) : NULL;
        if (c)
            tp_rank_add_stack_pycode(L->m, L->r, id, tp_reader_string(L->rd, c->file_sid),
                                     tp_reader_string(L->rd, c->name_sid), c->first_line);
    }
    free(ids), free(mod_seen), free(code_seen), free(mods), free(addrs);
}

/* ---------------------------------------------------------------- metadata */

/* Each named thread under its latest name; rows carry the PROCESS pid, so names do too. */
static void load_thread_names(nload *L) {
    const tp_rec_hdr *const *recs;
    size_t n = tp_reader_meta(L->rd, TP_REC_THREAD, &recs);
    for (size_t i = 0; i < n; i++) {
        tp_rec_thread t;
        tp_record_get(recs[i], &t, sizeof t);
        const char *name = tp_reader_thread_name(L->rd, t.tid);
        if (name)
            tp_rank_set_thread_name(L->m, L->r, L->pid, t.tid, name, strlen(name));
    }
}

static void load_meta(nload *L) {
    const tp_rec_hdr *const *recs;
    size_t n = tp_reader_meta(L->rd, TP_REC_PROCESS, &recs);
    for (size_t i = 0; i < n; i++) {
        tp_rec_process p;
        tp_record_get(recs[i], &p, sizeof p);
        L->pid = p.pid;
        if (p.rank >= 0 && L->r->rank < 0) {
            L->r->rank = p.rank;
            L->r->rank_hta = p.rank;
            L->r->has_dist_info = 1;
        }
        if (p.world_size > 0)
            L->r->world_size = p.world_size;
    }
    load_thread_names(L);
    n = tp_reader_meta(L->rd, TP_REC_DEVICE, &recs);
    int gpus = 0, cpu_devices = 0;
    for (size_t i = 0; i < n; i++) {
        tp_rec_device d;
        tp_record_get(recs[i], &d, sizeof d);
        gpus += d.kind == TP_DEVICE_GPU;
        cpu_devices += d.kind == TP_DEVICE_CPU_ACCEL;
        tp_device_info *v = realloc(L->r->devices, (L->r->n_devices + 1) * sizeof *v);
        if (!v)
            abort();
        L->r->devices = v;
        v[L->r->n_devices++] = (tp_device_info){(int32_t)d.id,
                                                intern_sid(L, d.name_sid),
                                                (int64_t)d.global_memory_bytes,
                                                (int32_t)(d.compute_capability / 10),
                                                (int32_t)(d.compute_capability % 10),
                                                (int32_t)d.sm_count};
    }
    if (cpu_devices && !gpus)
        L->r->device_type = TP_DEVTYPE_CPU_DEVICE;
    n = tp_reader_meta(L->rd, TP_REC_CLOCK_SYNC, &recs);
    if (n > 0) { /* realtime = trace clock + base_time_ns */
        tp_rec_clock_sync c;
        tp_record_get(recs[0], &c, sizeof c);
        L->r->base_time_ns = (int64_t)(c.realtime_ns - c.ts);
    }
}

static tp_status load_records(nload *L) {
    tp_cursor *c;
    tp_status st = tp_cursor_open(L->rd, NULL, &c);
    if (st != TP_OK)
        return st;
    for (const tp_rec_hdr *h; (h = tp_cursor_next(c)) != NULL;)
        on_record(L, h);
    tp_cursor_close(c);
    tp_open_range o;
    while (L->pushes.n && tp_range_stack_take(&L->pushes, L->pushes.v[L->pushes.n - 1].key, &o))
        annotation(L, &o, L->t_last);
    while (L->starts.n && tp_range_stack_take(&L->starts, L->starts.v[L->starts.n - 1].key, &o))
        annotation(L, &o, L->t_last);
    return TP_OK;
}

static tp_status load_from(tp_model *m, const char *name, tp_reader *rd, tp_load_error *e) {
    nload L = {0};
    L.m = m;
    L.rd = rd;
    L.r = tp_model_add_rank(m, name);
    L.r->native = 1;
    load_meta(&L);
    tp_status st = load_records(&L);
    if (st == TP_OK)
        load_stacks(&L);
    tp_range_stack_free(&L.pushes), tp_range_stack_free(&L.starts), tp_region_map_free(&L.regions);
    const tp_integrity *in = tp_reader_integrity(rd);
    if (st != TP_OK) {
        tp_model_pop_rank(m);
        tp_load_error_set(e, st, "%s", tp_status_str(st));
    } else if (in && in->message[0]) {
        tp_load_error_set(e, TP_OK, "%s", in->message); /* a note: damage skipped */
    }
    return st;
}

int tp_load_native_sniff(const void *head, size_t len) {
    size_t n = len < sizeof TP_FILE_MAGIC - 1 ? len : sizeof TP_FILE_MAGIC - 1;
    return len > 0 && memcmp(head, TP_FILE_MAGIC, n) == 0; /* a cut magic: let the reader say */
}

tp_status tp_load_native_load(tp_model *m, const char *path, tp_load_error *e) {
    tp_load_error_init(e, path);
    tp_reader *rd;
    tp_status st = tp_reader_open(path, &rd);
    if (st != TP_OK)
        return tp_load_error_set(e, st, "%s", tp_status_str(st));
    st = load_from(m, path, rd, e);
    tp_reader_close(rd);
    return st;
}

/* The string forms: the error's (or note's) one line into err. */
static tp_status formatted(tp_status st, const tp_load_error *e, char *err, size_t err_len) {
    if (err && err_len)
        tp_load_error_format(e, err, err_len);
    return st;
}

tp_status tp_load_native_file(tp_model *m, const char *path, char *err, size_t err_len) {
    tp_load_error e;
    return formatted(tp_load_native_load(m, path, &e), &e, err, err_len);
}

tp_status tp_load_native_mem(tp_model *m, const char *name, const void *data, size_t size,
                             char *err, size_t err_len) {
    tp_load_error e;
    tp_load_error_init(&e, name);
    tp_reader *rd;
    tp_status st = tp_reader_open_mem(data, size, &rd);
    if (st != TP_OK)
        return formatted(tp_load_error_set(&e, st, "%s", tp_status_str(st)), &e, err, err_len);
    st = load_from(m, name, rd, &e);
    tp_reader_close(rd);
    return formatted(st, &e, err, err_len);
}
