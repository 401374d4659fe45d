/* tp_an_host: steps, step filling and threads of a rank's host side (see the header). */
#include "tp_an_host.h"

#include <ctype.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tp_an_enclosing.h"
#include "tp_an_ivset.h"
#include "tp_an_namememo.h"
#include "tp_an_stats.h"
#include "tp_mem.h"
#include "tp_sort.h"

int tp_an_host_step_name(const char *s) {
    return tp_an_is_step_name(s); /* the one step test (tp_an_enclosing) */
}

/* Host time spent getting the next batch: NVTX/user ranges and ops named like data loading
 * ("dataloader wait", PyTorch's "enumerate(DataLoader)#...__next__", "get_batch"). Matched
 * case-insensitively as strncasecmp would (tolower on both sides; the keys are lower case),
 * on one lowered copy: a strncasecmp at every position for every key took 3 % of a report's
 * instructions on a trace with many distinct Python function names. */
int tp_an_host_data_name(const char *s) {
    static const char *const k[] = {"dataloader", "data loader", "data_loader", "data wait",
                                    "data_wait",  "next_data",   "get_batch",   "input pipeline",
                                    "load batch", "fetch batch"};
    char buf[256];
    size_t n = strlen(s);
    char *low = n < sizeof buf ? buf : tp_mem_xalloc(n + 1, 1);
    for (size_t i = 0; i <= n; i++)
        low[i] = (char)tolower((unsigned char)s[i]);
    int found = 0;
    for (size_t i = 0; i < sizeof k / sizeof k[0] && !found; i++)
        found = strstr(low, k[i]) != NULL;
    if (low != buf)
        free(low);
    return found;
}

/* The CPU-side rows of a view that are ranges (annotations, ops, Python functions). Always
 * inlined: since the view's reads became accessors GCC stopped inlining it into the host
 * analysis's per-row loops (+9 M instructions on tracelens_xdit_sd35 --compat hta). */
static inline __attribute__((always_inline)) int is_range(const tp_an_view *v, size_t i) {
    return !tp_an_view_gpu(v, i) &&
           tp_an_is_range(v->r->ev.cat[tp_an_view_row(v, i)], TP_AN_RANGES_ALL);
}

/* The range categories, and the view's rows of the k-th of them (tp_an_view_cat_rows); NULL
 * (walk the whole view, in one pass: n_range_lists() == 1) when the view has no such lists.
 * What find_steps and fill_window find does not depend on the order of their rows: steps are
 * sorted, the intervals' unions and the data names' sums (of lengths >= 0) are the same in any
 * order. */
static const tp_cat range_cats[] = {TP_CAT_CPU_OP, TP_CAT_USER_ANNOTATION, TP_CAT_PYTHON_FUNCTION};

static size_t n_range_lists(const tp_an_view *v) {
    size_t n;
    return tp_an_view_cat_rows(v, range_cats[0], &n) ? sizeof range_cats / sizeof range_cats[0] : 1;
}

static const uint32_t *range_list(const tp_an_view *v, size_t lists, size_t k, size_t *n) {
    if (lists == 1) {
        *n = v->n;
        return NULL;
    }
    return tp_an_view_cat_rows(v, range_cats[k], n);
}

/* is_range of view row i from range_list's `rows`: of a range category when listed. */
static inline int in_range_list(const tp_an_view *v, const uint32_t *rows, size_t i) {
    return rows ? !tp_an_view_gpu(v, i) : is_range(v, i);
}

static int64_t row_end(const tp_events *ev, size_t row) {
    return ev->ts[row] + tp_ev_dur(ev, row);
}

typedef struct {
    int64_t pid, tid;
} thread_id;

/* Threads that hold a step, sorted (pid, tid), and the steps' intervals. */
typedef struct {
    thread_id *t;
    size_t n, cap;
    tp_an_ivset steps;    /* every step range, not merged */
    int64_t *os_a, *os_b; /* the outermost steps (tp_an_outer_steps), by start; their ends
                             ascend too (a step inside another is not one of them) */
    size_t n_os;
    uint32_t first_name; /* the name of the step that starts first (at first_ts) */
    int64_t first_ts;
    int64_t first_pid, first_tid; /* its thread */
} step_info;

static int cmp_tid(const void *a, const void *b) {
    const thread_id *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return (x->tid > y->tid) - (x->tid < y->tid);
}

static int on_step_thread(const step_info *s, int64_t pid, int64_t tid) {
    thread_id k = {pid, tid};
    return !s->n || bsearch(&k, s->t, s->n, sizeof k, cmp_tid) != NULL;
}

/* Calls fn(arg, row) for each CPU-side range row of view `v` whose name `is` takes. */
static void named_ranges(const tp_an_view *v, int (*is)(const char *),
                         void (*fn)(void *arg, size_t row), void *arg) {
    const tp_events *ev = &v->r->ev;
    tp_an_namememo memo;
    tp_an_namememo_open(&memo, v->m, is);
    for (size_t l = 0, lists = n_range_lists(v); l < lists; l++) {
        size_t n;
        const uint32_t *rows = range_list(v, lists, l, &n);
        for (size_t k = 0; k < n; k++) {
            size_t i = rows ? rows[k] : k, row = tp_an_view_row(v, i);
            if (in_range_list(v, rows, i) && tp_an_namememo_get(&memo, ev->name[row]))
                fn(arg, row);
        }
    }
    tp_an_namememo_close(&memo);
}

typedef struct {
    const tp_events *ev;
    step_info *s;
} step_walk;

static void add_step(void *arg, size_t row) {
    const tp_events *ev = ((step_walk *)arg)->ev;
    step_info *s = ((step_walk *)arg)->s;
    tp_an_ivset_add(&s->steps, ev->ts[row], row_end(ev, row));
    if (!s->n || ev->ts[row] < s->first_ts)
        s->first_name = ev->name[row], s->first_ts = ev->ts[row], s->first_pid = tp_ev_pid(ev, row),
        s->first_tid = tp_ev_tid(ev, row);
    tp_an_grow((void **)&s->t, &s->cap, s->n + 1, sizeof *s->t);
    s->t[s->n++] = (thread_id){tp_ev_pid(ev, row), tp_ev_tid(ev, row)};
}

static void find_steps(const tp_an_view *v, step_info *s) {
    memset(s, 0, sizeof *s); /* s->t grown as steps come: sized by the view's rows it was 16
                                bytes a row, zeroed by calloc (fresh mapped pages cost
                                nothing until used, a reused heap block all of them) */
    step_walk w = {&v->r->ev, s};
    named_ranges(v, tp_an_host_step_name, add_step, &w);
    if (s->n)
        tp_an_qsort(s->t, s->n, sizeof *s->t, cmp_tid); /* a thread per step: mostly one */
}

/* Step lengths: a step inside another (a "step" range in ProfilerStep#N) is the same step,
 * so only the outermost count (kept in s); the window runs from the first start to the last
 * end. */
static void describe_steps(step_info *s, tp_an_host *out) {
    int64_t *start, *end;
    size_t n = tp_an_outer_steps(s->steps.a, s->steps.b, s->steps.n, &start, &end);
    double *d = tp_an_alloc(n + 1, sizeof *d);
    for (size_t i = 0; i < n; i++) {
        d[i] = (double)(end[i] - start[i]);
        out->w1 = end[i] > out->w1 || i == 0 ? end[i] : out->w1;
    }
    out->n_steps = n;
    if (n)
        out->w0 = start[0];
    tp_an_describe(d, n, &out->step_ns);
    free(d);
    s->os_a = start, s->os_b = end, s->n_os = n;
}

/* Without steps the window is the CPU span: first start to last end of any CPU-side row. */
static void cpu_span(const tp_an_view *v, tp_an_host *out) {
    const tp_events *ev = &v->r->ev;
    int64_t t0 = INT64_MAX, t1 = INT64_MIN;
    for (size_t i = 0; i < v->n; i++)
        if (!tp_an_view_gpu(v, i)) {
            t0 = ev->ts[tp_an_view_row(v, i)] < t0 ? ev->ts[tp_an_view_row(v, i)] : t0;
            t1 = row_end(ev, tp_an_view_row(v, i)) > t1 ? row_end(ev, tp_an_view_row(v, i)) : t1;
        }
    if (t0 < t1)
        out->w0 = t0, out->w1 = t1;
}

int tp_an_host_window_data_name(const char *name) {
    return tp_an_host_data_name(name) || strcasecmp(name, "data") == 0;
}

/* Per data-loading name: its time in the window (the name that takes most is reported). */
typedef struct {
    uint32_t name;
    int64_t ns;
} name_ns;

static int cmp_name_ns(const void *a, const void *b) {
    const name_ns *x = a, *y = b;
    return (x->name > y->name) - (x->name < y->name);
}

static uint32_t top_name(name_ns *a, size_t n) {
    if (n)
        qsort(a, n, sizeof *a, cmp_name_ns);
    uint32_t best = 0;
    int64_t best_ns = -1, run = 0;
    for (size_t i = 0; i < n; i++) {
        run = tp_an_add(i && a[i].name == a[i - 1].name ? run : 0, a[i].ns);
        if (run > best_ns || (run == best_ns && a[i].name < best))
            best = a[i].name, best_ns = run;
    }
    return best;
}

/* fill_window's sets and tallies while it walks the rows */
typedef struct {
    const tp_events *ev;
    tp_an_host *out;
    const uint8_t *on_step; /* on_step_thread per place (a rank has a few) */
    tp_an_namememo data_name, step;
    tp_an_ivset data, ops, rec; /* rec: the ranges on the step threads but those that hold
                                   steps (holds_steps) */
    const step_info *s;
    name_ns *names; /* grown as data-loading rows come (as find_steps' threads) */
    size_t nn, cap;
} window_acc;

/* 1 when [a, b) overlaps two outermost steps or more: a range that holds the loop ("epoch",
 * "train") rather than work between its steps, which leaves the time between them unrecorded
 * still. The first step that ends after a, and the next. */
static inline int holds_steps(const step_info *s, int64_t a, int64_t b) {
    size_t k = tp_sort_upper_i64(s->os_b, 0, s->n_os, a);
    return k + 1 < s->n_os && s->os_a[k] < b && s->os_a[k + 1] < b;
}

/* Model row `row`, a range of the view, into the window's sets. */
static inline __attribute__((always_inline)) void window_row(window_acc *w, size_t row) {
    const tp_events *ev = w->ev;
    int64_t a = ev->ts[row], b = row_end(ev, row);
    if (b <= w->out->w0 || a >= w->out->w1 || !w->on_step[tp_ev_place_index(ev, row)])
        return;
    a = a < w->out->w0 ? w->out->w0 : a, b = b > w->out->w1 ? w->out->w1 : b;
    if (!holds_steps(w->s, a, b))
        tp_an_ivset_add_union(&w->rec, a, b);
    if (tp_an_namememo_get(&w->data_name, ev->name[row])) {
        tp_an_ivset_add_union(&w->data, a, b);
        tp_an_grow((void **)&w->names, &w->cap, w->nn + 1, sizeof *w->names);
        w->names[w->nn++] = (name_ns){ev->name[row], b - a};
    } else if (ev->cat[row] == TP_CAT_CPU_OP && b > a &&
               !tp_an_namememo_get(&w->step, ev->name[row])) {
        tp_an_ivset_add_union(&w->ops, a, b);
        w->out->n_ops++;
    }
}

/* The view's range rows as model rows in the model's (time) order, each once, when the view
 * is not the model's rows in that order: a --compat hta view is in file order, which a
 * Kineto file writes thread by thread, so the ops' union came in ~16 k runs that only
 * norm's sorted copy joined (kineto_resnet50_autograd_oldfmt: 16 B a run, the copy and the
 * sort's scratch, beside the diagnosis's peak); in time order tp_an_ivset_add_union keeps a
 * run per busy stretch. The sets, the op count (each row once: a view row repeated is an
 * interval repeated, nothing more to the union, and the rows the trimming repeats are GPU
 * rows) and the names' sums do not depend on the order (see range_cats). Where the view
 * holds only some model rows (trimmed, a window), a bit per model row says which. */
static void window_model_order(const tp_an_view *v, window_acc *w) {
    const tp_events *ev = w->ev;
    int every = !v->trimmed && !(v->opts.window_hi > v->opts.window_lo) && v->n == ev->n;
    uint64_t *in = NULL;
    if (!every) {
        in = tp_an_tmp0(v, ev->n / 64 + 1, sizeof *in);
        for (size_t i = 0; i < v->n; i++) {
            size_t row = tp_an_view_row(v, i);
            in[row >> 6] |= UINT64_C(1) << (row & 63);
        }
    }
    for (size_t row = 0; row < ev->n; row++) {
        if (in && !(in[row >> 6] >> (row & 63) & 1))
            continue;
        if (tp_an_is_range(ev->cat[row], TP_AN_RANGES_ALL) && !tp_an_view_model_gpu(v, row))
            window_row(w, row);
    }
    if (in)
        tp_an_tmp_put(v, in);
}

/* Data loading, framework ops and the time with no range open in the window, on the step
 * threads. */
static void fill_window(const tp_an_view *v, const step_info *s, tp_an_host *out) {
    const tp_events *ev = &v->r->ev;
    window_acc w = {.ev = ev, .out = out, .s = s};
    tp_an_namememo_open(&w.data_name, v->m, tp_an_host_window_data_name);
    tp_an_namememo_open(&w.step, v->m, tp_an_host_step_name);
    /* on_step_thread per place (a rank has a few): a load per row, not a search */
    uint8_t *on_step = tp_an_alloc(ev->places.n + 1, 1);
    for (size_t p = 0; p < ev->places.n; p++)
        on_step[p] = (uint8_t)on_step_thread(s, ev->places.v[p].pid, ev->places.v[p].tid);
    w.on_step = on_step;
    if (v->row) {
        window_model_order(v, &w);
    } else { /* the model's rows in its order (native) */
        for (size_t l = 0, lists = n_range_lists(v); l < lists; l++) {
            size_t n;
            const uint32_t *rows = range_list(v, lists, l, &n);
            for (size_t k = 0; k < n; k++) {
                size_t i = rows ? rows[k] : k;
                if (in_range_list(v, rows, i)) /* first: most rows are not ranges */
                    window_row(&w, tp_an_view_row(v, i));
            }
        }
    }
    tp_an_namememo_close(&w.data_name), tp_an_namememo_close(&w.step);
    free(on_step);
    tp_an_ivset rest = {0};
    tp_an_ivset_norm(&w.data, out->w0, out->w1);
    tp_an_ivset_norm(&w.ops, out->w0, out->w1);
    tp_an_ivset_norm(&w.rec, out->w0, out->w1);
    tp_an_ivset_minus(&w.ops, &w.data, &rest);
    out->data_ns = tp_an_ivset_len(&w.data);
    out->ops_ns = tp_an_ivset_len(&rest);
    out->unrecorded_ns = out->w1 - out->w0 - tp_an_ivset_len(&w.rec);
    out->data_name = top_name(w.names, w.nn);
    free(w.names);
    tp_an_ivset_free(&w.data), tp_an_ivset_free(&w.ops), tp_an_ivset_free(&w.rec);
    tp_an_ivset_free(&rest);
}

typedef struct {
    int64_t pid, tid, a, b;
} thread_row;

static int cmp_thread_row(const void *x, const void *y) {
    const thread_row *p = x, *q = y;
    if (p->pid != q->pid)
        return p->pid < q->pid ? -1 : 1;
    if (p->tid != q->tid)
        return p->tid < q->tid ? -1 : 1;
    return (p->a > q->a) - (p->a < q->a);
}

static int cmp_busy(const void *x, const void *y) {
    const tp_an_host_thread *p = x, *q = y;
    if (p->busy != q->busy)
        return p->busy > q->busy ? -1 : 1;
    return cmp_thread_row(&(thread_row){p->pid, p->tid, 0, 0}, &(thread_row){q->pid, q->tid, 0, 0});
}

/* The model rows of the view's CPU rows in (pid, tid, start) order, stably, by a radix sort
 * over row numbers (sorting 32-byte structs of the same fields moved and faulted in 2.7 times
 * the bytes; a pass per key took three sorts). Returns how many. */
/* A host thread's row: a CPU row on no stream. A sync record on a stream (CUPTI's
 * cudaStreamSynchronize, Kineto's "Stream Sync") belongs to the device's stream, not to a
 * host thread: counted, it made a host thread of the stream ("pid 0, tid 13" on the first GPU
 * run's traces). */
static inline int host_row(const tp_an_view *v, size_t i) {
    return !tp_an_view_gpu(v, i) && tp_ev_stream(&v->r->ev, tp_an_view_row(v, i)) == -1;
}

static size_t cpu_rows_by_thread(const tp_an_view *v, uint32_t *rows) {
    size_t n = 0;
    const tp_events *ev = &v->r->ev;
    for (size_t i = 0; i < v->n; i++)
        if (host_row(v, i))
            rows[n++] = tp_an_view_row(v, i);
    tp_events_sort_rows_by_thread(ev, rows, n, v->scratch);
    return n;
}

/* Adds row r (start a, end b) of its thread to the last entry of out->th, or opens one. */
static void thread_add(const tp_events *ev, tp_an_host *out, uint32_t r, int first_of_thread,
                       int64_t *open_end) {
    int64_t a = ev->ts[r], b = row_end(ev, r);
    if (first_of_thread) {
        out->th[out->n_threads++] =
            (tp_an_host_thread){.pid = tp_ev_pid(ev, r), .tid = tp_ev_tid(ev, r), .first = a};
        *open_end = a;
    }
    tp_an_host_thread *h = &out->th[out->n_threads - 1];
    h->n_events++;
    h->last = b > h->last ? b : h->last;
    if (b > *open_end) { /* the part past what is already counted */
        h->busy = tp_an_add(h->busy, b - (a > *open_end ? a : *open_end));
        *open_end = b;
    }
}

/* How many times listed row r is a host row of the view: mult[r], or with mult NULL (the
 * identity view) once unless it is a GPU row (`kind`: the view's tp_an_view.kind). */
static inline __attribute__((always_inline)) unsigned row_mult(const uint8_t *mult,
                                                               const uint8_t *kind, uint32_t r) {
    return mult ? mult[r] : !(kind[r] & TP_AN_VIEW_GPU);
}

/* One thread's entry from its rows in start order, each taken row_mult times: the running
 * union of thread_add, with the entry's figures in locals (a call per row, and stores through
 * out->th, took two thirds of the host analysis's instructions). 0 when no row of the bucket
 * counts. Always inlined: its caller passes mult NULL or not as a constant (no test per row). */
static inline __attribute__((always_inline)) int
thread_of_bucket(const tp_events *ev, const uint32_t *rows, size_t n, const uint8_t *mult,
                 const uint8_t *kind, tp_an_host_thread *h) {
    size_t j = 0;
    while (j < n && !row_mult(mult, kind, rows[j]))
        j++;
    if (j == n)
        return 0;
    int64_t first = ev->ts[rows[j]], open_end = first, last = 0, busy = 0;
    *h = (tp_an_host_thread){
        .pid = tp_ev_pid(ev, rows[j]), .tid = tp_ev_tid(ev, rows[j]), .first = first};
    size_t n_events = 0;
    for (; j < n; j++) {
        uint32_t r = rows[j];
        unsigned c = row_mult(mult, kind, r);
        if (!c)
            continue;
        int64_t a = ev->ts[r], b = row_end(ev, r);
        n_events += c; /* the row's repeats add nothing to the union */
        last = b > last ? b : last;
        if (b > open_end) { /* the part past what is already counted */
            busy = tp_an_add(busy, b - (a > open_end ? a : open_end));
            open_end = b;
        }
    }
    h->n_events = n_events, h->last = last, h->busy = busy;
    return 1;
}

/* Every bucket's entry (thread_of_bucket), for mult NULL or not. */
static inline __attribute__((always_inline)) void
threads_of_buckets(const tp_events *ev, const tp_buckets *t, const uint8_t *mult,
                   const uint8_t *kind, tp_an_host *out) {
    for (size_t k = 0; k < t->n; k++)
        out->n_threads += thread_of_bucket(ev, t->rows + t->off[k], t->off[k + 1] - t->off[k], mult,
                                           kind, &out->th[out->n_threads]);
}

/* fill_threads from the model's per-thread row lists (rows with stream -1, by start), each
 * row taken as often as it is a host row of the view; 0 when one is more than 255 times. A thread's
 * entry does not depend on the order of rows that start together (its busy time is their union), so
 * this gives the sort's figures without the sort (24 bytes a CPU row at once: the host analysis was
 * the report's peak on the larger peer traces, docs/PERFORMANCE.md). When the view's rows are the
 * model's, in order (by_corr set), a listed row is a host row once unless it is a GPU row: no
 * count per row, nor its pass over the view. */
static int threads_from_index(const tp_an_view *v, tp_an_host *out) {
    const tp_events *ev = &v->r->ev;
    const tp_buckets *t = &v->r->threads;
    uint8_t *mult = NULL;
    int ok = 1;
    if (!v->by_corr) {
        mult = tp_an_tmp0(v, ev->n, 1);
        for (size_t i = 0; i < v->n && ok; i++)
            if (host_row(v, i)) { /* the lists hold the rows with stream -1 only */
                uint32_t r = tp_an_view_row(v, i);
                ok = mult[r] < UINT8_MAX;
                mult[r]++;
            }
    }
    if (ok) {
        size_t nt = 0;
        for (size_t k = 0; k < t->n; k++) /* entries: at most one per bucket */
            nt += t->off[k + 1] > t->off[k];
        out->th = tp_an_alloc(nt + 1, sizeof *out->th);
        if (mult)
            threads_of_buckets(ev, t, mult, v->kind, out);
        else
            threads_of_buckets(ev, t, NULL, v->kind, out);
    }
    tp_an_tmp_put(v, mult);
    return ok;
}

typedef struct {
    thread_id t; /* first: cmp_tid orders these too */
    uint32_t place;
} place_thread;

/* fill_threads in one pass over the view, when its CPU rows come in time order (native: the
 * model's order): each thread's rows are then in start order too, so a running union per
 * thread gives the figures of the sort by (thread, start) without it. Entries in (pid, tid)
 * order, as the sort leaves them. 0 (out untouched) when the rows are not in time order. */
static int threads_in_time_order(const tp_an_view *v, tp_an_host *out) {
    const tp_events *ev = &v->r->ev;
    int64_t prev = INT64_MIN; /* the order is checked on the way: the pass is left at the
                                 first row out of it (no pass of its own to tell first) */
    size_t np = ev->places.n, nt = 0;
    place_thread *pt = tp_an_alloc(np + 1, sizeof *pt);
    for (size_t k = 0; k < np; k++)
        pt[k] = (place_thread){{ev->places.v[k].pid, ev->places.v[k].tid}, (uint32_t)k};
    qsort(pt, np, sizeof *pt, cmp_tid);
    uint32_t *thread_of = tp_an_alloc(np + 1, sizeof *thread_of); /* per place */
    for (size_t k = 0; k < np; k++) {
        nt += k == 0 || cmp_tid(&pt[k - 1], &pt[k]) != 0;
        thread_of[pt[k].place] = (uint32_t)(nt - 1);
    }
    free(pt);
    tp_an_host_thread *th = tp_an_alloc(nt + 1, sizeof *th);
    int64_t *open_end = tp_an_alloc(nt + 1, sizeof *open_end);
    for (size_t i = 0; i < v->n; i++) {
        if (!host_row(v, i))
            continue;
        uint32_t r = tp_an_view_row(v, i), t = thread_of[tp_ev_place_index(ev, r)];
        tp_an_host_thread *h = &th[t];
        int64_t *oe = &open_end[t]; /* (by t: h - th divided by the entry's size) */
        int64_t a = ev->ts[r], b = row_end(ev, r);
        if (a < prev) {
            free(th), free(open_end), free(thread_of);
            return 0;
        }
        prev = a;
        if (!h->n_events) {
            *h = (tp_an_host_thread){.pid = tp_ev_pid(ev, r), .tid = tp_ev_tid(ev, r), .first = a};
            *oe = a;
        }
        h->n_events++; /* then as thread_add */
        h->last = b > h->last ? b : h->last;
        if (b > *oe) {
            h->busy = tp_an_add(h->busy, b - (a > *oe ? a : *oe));
            *oe = b;
        }
    }
    out->th = tp_an_alloc(nt + 1, sizeof *out->th);
    for (size_t t = 0; t < nt; t++)
        if (th[t].n_events)
            out->th[out->n_threads++] = th[t];
    free(th), free(open_end), free(thread_of);
    return 1;
}

/* One entry per (pid, tid): rows, busy time (rows sorted by start: a running union). */
static void fill_threads(const tp_an_view *v, tp_an_host *out) {
    const tp_events *ev = &v->r->ev;
    if (!threads_from_index(v, out) && !threads_in_time_order(v, out)) {
        uint32_t *rows = tp_an_tmp(v, v->n, sizeof *rows);
        size_t n = cpu_rows_by_thread(v, rows), nt = 0;
        for (size_t i = 0; i < n; i++) /* the threads: an entry each, not one a CPU row */
            nt += !i || tp_ev_pid(ev, rows[i]) != tp_ev_pid(ev, rows[i - 1]) ||
                  tp_ev_tid(ev, rows[i]) != tp_ev_tid(ev, rows[i - 1]);
        out->th = tp_an_alloc(nt + 1, sizeof *out->th);
        int64_t open_end = 0;
        for (size_t i = 0; i < n; i++)
            thread_add(ev, out, rows[i],
                       !i || tp_ev_pid(ev, rows[i]) != tp_ev_pid(ev, rows[i - 1]) ||
                           tp_ev_tid(ev, rows[i]) != tp_ev_tid(ev, rows[i - 1]),
                       &open_end);
        tp_an_tmp_put(v, rows);
    }
    if (out->n_threads)
        qsort(out->th, out->n_threads, sizeof *out->th, cmp_busy);
}

void tp_an_host_run(const tp_an_view *v, tp_an_host *out) {
    memset(out, 0, sizeof *out);
    step_info s;
    find_steps(v, &s);
    describe_steps(&s, out);
    out->step_name = s.first_name;
    out->step_pid = s.first_pid, out->step_tid = s.first_tid;
    if (!out->n_steps)
        cpu_span(v, out);
    if (out->w1 > out->w0)
        fill_window(v, &s, out);
    fill_threads(v, out);
    free(s.t), free(s.os_a), free(s.os_b);
    tp_an_ivset_free(&s.steps);
}

typedef struct {
    const tp_events *ev;
    int64_t pid, tid;
    tp_an_ivset *set;
} data_walk;

static void add_data(void *arg, size_t row) {
    const data_walk *w = arg;
    if (tp_ev_pid(w->ev, row) == w->pid && tp_ev_tid(w->ev, row) == w->tid)
        tp_an_ivset_add(w->set, w->ev->ts[row], row_end(w->ev, row));
}

size_t tp_an_host_data_ranges(const tp_an_view *v, int64_t pid, int64_t tid, int64_t **lo,
                              int64_t **hi) {
    tp_an_ivset set = {0};
    data_walk w = {&v->r->ev, pid, tid, &set};
    named_ranges(v, tp_an_host_window_data_name, add_data, &w);
    tp_an_ivset_norm(&set, INT64_MIN, INT64_MAX);
    *lo = tp_an_alloc(set.n + 1, sizeof **lo), *hi = tp_an_alloc(set.n + 1, sizeof **hi);
    for (size_t k = 0; k < set.n; k++)
        (*lo)[k] = set.a[k], (*hi)[k] = set.b[k];
    size_t n = set.n;
    tp_an_ivset_free(&set);
    return n;
}

void tp_an_host_free(tp_an_host *out) {
    if (!out)
        return;
    free(out->th);
    memset(out, 0, sizeof *out);
}
