/* tp_an_cpuops: the CPU operators table (see the header). */
#include "tp_an_cpuops.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "tp_an_stats.h"

/* The table's groups by (cat, name, shapes), found through a dense index by name id (the ids
 * are below the pool's count): per name its first group (index + 1; 0: none), per group the
 * next one of its name (other shapes or category). The calls are added in view order, one at
 * a time: a group's sums and its first forward name come out as a stable sort of all the
 * calls by (cat, name, shapes) gave them, without the per-call array and its sort (up to ~70
 * bytes a CPU call at once: the analysis's peak, docs/PERFORMANCE.md). */
typedef struct {
    tp_an_cpuops *out;
    size_t cap_ops;
    uint32_t *first; /* per name id */
    uint32_t *next;  /* per group */
} groups;

/* A new group (out of line: group_of, inline, is mostly a hit of one step). */
static tp_an_cpuop *new_group(groups *g, uint32_t name, uint32_t shapes, uint8_t cat) {
    tp_an_cpuops *out = g->out;
    size_t cap = g->cap_ops;
    tp_an_grow((void **)&out->op, &g->cap_ops, out->n + 1, sizeof *out->op);
    tp_an_grow((void **)&g->next, &cap, out->n + 1, sizeof *g->next);
    out->op[out->n] = (tp_an_cpuop){.name = name, .shapes = shapes, .cat = cat};
    g->next[out->n] = g->first[name];
    g->first[name] = (uint32_t)(++out->n);
    return &out->op[out->n - 1];
}

static inline tp_an_cpuop *group_of(groups *g, uint32_t name, uint32_t shapes, uint8_t cat) {
    for (uint32_t k = g->first[name]; k; k = g->next[k - 1]) {
        tp_an_cpuop *o = &g->out->op[k - 1];
        if (o->shapes == shapes && o->cat == cat)
            return o;
    }
    return new_group(g, name, shapes, cat);
}

typedef struct {
    int64_t seq;
    uint16_t depth;
    uint32_t row;
} fwd_op;

static int cmp_fwd(const void *a, const void *b) {
    const fwd_op *x = a, *y = b;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    if (x->depth != y->depth)
        return x->depth < y->depth ? -1 : 1;
    return (x->row < y->row) - (x->row > y->row);
}

static int is_table_cat(uint8_t c) {
    return c == TP_CAT_CPU_OP || c == TP_CAT_USER_ANNOTATION;
}

/* Sum of the durations of each row's direct children (model nesting), by model row; the
 * view's scratch (give it back with tp_an_tmp_put). */
static int64_t *child_sums(const tp_an_view *v, const tp_events *ev) {
    int64_t *sum = tp_an_tmp0(v, ev->n + 1, sizeof *sum);
    for (size_t j = 0; j < ev->n; j++) {
        int32_t p = tp_ev_parent(ev, j);
        if (p >= 0)
            sum[p] = tp_an_add(sum[p], tp_ev_dur(ev, j));
    }
    return sum;
}

/* Ops above `row` on its thread (Python functions and other ranges do not count, so a trace
 * with and without with_stack rank the same ops outermost). */
static uint16_t op_depth(const tp_events *ev, size_t row) {
    uint16_t d = 0;
    for (int32_t p = tp_ev_parent(ev, row); p >= 0 && d < UINT16_MAX;
         p = tp_ev_parent(ev, (size_t)p))
        d += ev->cat[p] == TP_CAT_CPU_OP;
    return d;
}

typedef struct {
    int64_t pid, tid;
} thread_key;

static int cmp_thread(const void *a, const void *b) {
    const thread_key *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return (x->tid > y->tid) - (x->tid < y->tid);
}

/* The threads that run backward ops (autograd engine threads), sorted, each once: kept
 * sorted as they are found (a trace has a few: a look at the last one found, else a search
 * and an insert), not one entry per backward row and their sort (16 bytes a model row
 * allocated, and a qsort copy of the backward rows': the analysis's high water on
 * hta_df_index_resolver 16.3 -> 16.2 MiB with one analysis thread). */
static thread_key *backward_threads(const tp_events *ev, size_t *n) {
    size_t cap = 16;
    thread_key *t = tp_an_alloc(cap, sizeof *t), last = {0, 0};
    *n = 0;
    for (size_t j = 0; j < ev->n; j++) {
        if (tp_ev_fwd_tid(ev, j) <= 0)
            continue;
        thread_key k = {tp_ev_pid(ev, j), tp_ev_tid(ev, j)};
        if (*n && !cmp_thread(&k, &last))
            continue;
        last = k;
        size_t lo = 0, hi = *n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (cmp_thread(&t[mid], &k) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < *n && !cmp_thread(&t[lo], &k))
            continue;
        tp_an_grow((void **)&t, &cap, *n + 1, sizeof *t);
        memmove(t + lo + 1, t + lo, (*n - lo) * sizeof *t);
        t[lo] = k;
        (*n)++;
    }
    return t;
}

/* The forward ops: cpu_op rows with a sequence number and forward thread 0 or none, on a
 * thread that runs no backward op (sequence numbers count per thread: an autograd thread's
 * own ops, such as a checkpoint's recomputation, number apart from the forward's). */
static fwd_op *forward_ops(const tp_events *ev, size_t *n) {
    *n = 0;
    if (!tp_ev_any_seq(ev)) /* no row has a sequence number (native traces): no forward op */
        return tp_an_alloc(1, sizeof(fwd_op));
    size_t nb;
    thread_key *bt = backward_threads(ev, &nb);
    fwd_op *f = tp_an_alloc(ev->n + 1, sizeof *f);
    *n = 0;
    for (size_t j = 0; j < ev->n; j++) {
        thread_key k = {tp_ev_pid(ev, j), tp_ev_tid(ev, j)};
        if (ev->cat[j] == TP_CAT_CPU_OP && tp_ev_seq(ev, j) >= 0 && tp_ev_fwd_tid(ev, j) <= 0 &&
            !(nb && bsearch(&k, bt, nb, sizeof k, cmp_thread)))
            f[(*n)++] = (fwd_op){tp_ev_seq(ev, j), op_depth(ev, j), (uint32_t)j};
    }
    if (*n)
        qsort(f, *n, sizeof *f, cmp_fwd);
    free(bt);
    return f;
}

/* Name of the forward op of backward row `row`, 0 when it is none or unknown. */
static uint32_t forward_name(const tp_events *ev, const fwd_op *f, size_t n, size_t row) {
    if (tp_ev_fwd_tid(ev, row) <= 0 || tp_ev_seq(ev, row) < 0)
        return 0;
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (f[mid].seq < tp_ev_seq(ev, row))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && f[lo].seq == tp_ev_seq(ev, row) ? ev->name[f[lo].row] : 0;
}

/* The groups of the table rows seen last, by row: a row's parent was seen shortly before it,
 * mostly (a direct-mapped cache; a miss looks the group up by name again). */
#define PARENT_SLOTS 512u

typedef struct {
    uint32_t row, op; /* op: index in out->op; row UINT32_MAX: empty */
} parent_slot;

/* collect's self times on a view that may hold a model row twice or not at all (trimmed, or
 * a window), without child_sums' sum per model row: each model row whose parent is a table
 * row held mult[parent] times in the view takes its duration off that group's self time (and
 * the table's) that many times; the calls added their whole durations. Exact sums, so the
 * same as each call's duration less its children's sum added call by call, when no partial
 * sum can wrap: 0 (figures not kept) when the terms' magnitudes, all summed, could pass
 * INT64_MAX (`mag`: the calls' part, as collect_in bounds it). Every parent's group exists
 * already (its call was added). */
static int children_off(const tp_an_view *v, groups *g, const uint8_t *mult, uint64_t mag,
                        int64_t *self_sum) {
    const tp_events *ev = &v->r->ev;
    const int by_shapes = v->opts.ops_by_shapes && tp_ev_any_shapes(ev);
    int ok = 1;
    parent_slot slot[PARENT_SLOTS];
    for (size_t k = 0; k < PARENT_SLOTS; k++)
        slot[k].row = UINT32_MAX;
    int64_t ss = *self_sum;
    for (size_t j = 0; j < ev->n && ok; j++) {
        int32_t p = tp_ev_parent(ev, j);
        if (p < 0 || !mult[p] || !is_table_cat(ev->cat[p]))
            continue;
        int64_t dur = tp_ev_dur(ev, j), off;
        uint64_t m;
        if (dur == INT64_MIN || __builtin_mul_overflow(dur, (int64_t)mult[p], &off) ||
            __builtin_mul_overflow((uint64_t)(dur < 0 ? -dur : dur), mult[p], &m) ||
            __builtin_add_overflow(mag, m, &mag)) {
            ok = 0;
            break;
        }
        parent_slot *ps = &slot[(uint32_t)p % PARENT_SLOTS];
        if (ps->row != (uint32_t)p) {
            uint32_t pr = (uint32_t)p;
            tp_an_cpuop *po =
                group_of(g, ev->name[pr], by_shapes ? tp_ev_shapes(ev, pr) : 0, ev->cat[pr]);
            *ps = (parent_slot){pr, (uint32_t)(po - g->out->op)};
        }
        __builtin_sub_overflow(g->out->op[ps->op].self, off, &g->out->op[ps->op].self);
        __builtin_sub_overflow(ss, off, &ss);
    }
    *self_sum = ss;
    return ok && mag <= (uint64_t)INT64_MAX;
}

/* Adds the table's calls, one per view row, to their groups; sets out->span, out->self_sum
 * and out->has_shapes. `sum`: each model row's children's durations (child_sums), or NULL
 * when the view holds every model row once (every_row_once): then a call adds its duration
 * to its group's self time as it comes, and each row whose parent is a table row takes its
 * own off the parent's group (in the model's order a parent precedes its children, the model
 * nests each thread's rows in start order, so the slot cache mostly hits; in load order it
 * misses more). Returns 0 (figures not kept) when the sums could pass INT64_MAX: tp_an_add
 * saturates, and only exact sums are the same in either order; else 1. `mapped`: the view
 * has a row column; without one (native) view row i is model row i, read as such (no load
 * of v->row per row). Always inlined into collect, once per case. */
static inline __attribute__((always_inline)) int collect_in(const tp_an_view *view,
                                                            tp_an_cpuops *out, const int64_t *sum,
                                                            int mapped, uint8_t *mult) {
    /* the view and the rank's columns copied: the loop's stores to the groups (int64 and
     * uint32) could otherwise be to their fields, reloaded each row (tp_an_view.h) */
    const tp_an_view lv = *view, *v = &lv;
    const tp_events lev = v->r->ev, *ev = &lev;
    size_t nf;
    fwd_op *f = forward_ops(ev, &nf);
    groups g = {.out = out};
    g.first = tp_an_alloc((size_t)tp_model_n_strings(v->m) + 1, sizeof *g.first);
    int64_t t0 = INT64_MAX, t1 = INT64_MIN;
    parent_slot slot[PARENT_SLOTS];
    for (size_t k = 0; k < PARENT_SLOTS; k++)
        slot[k].row = UINT32_MAX;
    int mult_full = 0;    /* a row more than 255 times in the view: mult does not hold it */
    uint64_t n_terms = 0; /* sum == NULL: durations added or taken off, each at most the span */
    /* the table's self time and shapes flag kept here, stored once: in out, each store could
     * be to any int64 the loop reads (the model's columns), so each row reloaded them */
    int64_t self_sum = out->self_sum;
    int has_shapes = out->has_shapes;
    /* else no row reads them (native traces; without --group-by shapes `report` frees them,
     * TP_EV_DROP_SHAPES) */
    const int by_shapes = v->opts.ops_by_shapes && tp_ev_any_shapes(ev);
    for (size_t i = 0; i < v->n; i++) {
        size_t row = sum || mapped ? tp_an_view_row(v, i) : i;
        if (tp_an_view_gpu(
                v, i)) /* never a parent nor a child: those are a thread's rows (no stream) */
            continue;
        if (mult) { /* counted here, the one pass over the view (255 times at most) */
            mult_full |= mult[row] == UINT8_MAX;
            mult[row]++;
        }
        int64_t dur = tp_ev_dur(ev, row);
        t0 = ev->ts[row] < t0 ? ev->ts[row] : t0;
        t1 = ev->ts[row] + dur > t1 ? ev->ts[row] + dur : t1;
        int32_t p = tp_ev_parent(ev, row);
        if (!sum && !mult && p >= 0 && is_table_cat(ev->cat[p])) { /* p: in the view */
            parent_slot *ps = &slot[(uint32_t)p % PARENT_SLOTS];
            if (ps->row != (uint32_t)p) {
                uint32_t pr = (uint32_t)p;
                uint32_t shapes = by_shapes ? tp_ev_shapes(ev, pr) : 0;
                tp_an_cpuop *po = group_of(&g, ev->name[pr], shapes, ev->cat[pr]);
                *ps = (parent_slot){pr, (uint32_t)(po - out->op)};
            }
            /* wrapping, never undefined: the figures are kept only when nothing could wrap */
            __builtin_sub_overflow(out->op[ps->op].self, dur, &out->op[ps->op].self);
            __builtin_sub_overflow(self_sum, dur, &self_sum);
            n_terms++;
        }
        if (!is_table_cat(ev->cat[row]))
            continue;
        uint32_t shapes = by_shapes ? tp_ev_shapes(ev, row) : 0;
        has_shapes |= shapes != 0;
        tp_an_cpuop *o = group_of(&g, ev->name[row], shapes, ev->cat[row]);
        o->count++;
        o->total = tp_an_add(o->total, dur);
        if (sum) {
            int64_t self = dur - sum[row];
            o->self = tp_an_add(o->self, self);
            self_sum = tp_an_add(self_sum, self);
        } else {
            __builtin_add_overflow(o->self, dur, &o->self);
            __builtin_add_overflow(self_sum, dur, &self_sum);
            n_terms++;
            slot[row % PARENT_SLOTS] = (parent_slot){(uint32_t)row, (uint32_t)(o - out->op)};
        }
        if (!o->fwd_name && nf) /* (no forward op, as in native traces: the name is 0) */
            o->fwd_name = forward_name(ev, f, nf, row);
    }
    out->has_shapes = has_shapes;
    out->span = t1 > t0 ? t1 - t0 : 0;
    uint64_t calls;
    int exact = !mult_full && !__builtin_mul_overflow(n_terms, (uint64_t)out->span, &calls);
    if (mult && exact) /* each model row's duration off its parent's group, once per view row */
        exact = children_off(v, &g, mult, calls, &self_sum);
    out->self_sum = self_sum;
    free(f), free(g.first), free(g.next);
    if (mult)
        return exact;
    /* Each term is a CPU row's duration, at most the span: with n_terms x span within
     * INT64_MAX no partial sum of either order overflows (nor saturates), so the figures are
     * those of each call's duration less its children's sum, added call by call. */
    uint64_t most;
    return sum || (!__builtin_mul_overflow(n_terms, (uint64_t)out->span, &most) &&
                   most <= (uint64_t)INT64_MAX);
}

static int collect(const tp_an_view *v, tp_an_cpuops *out, const int64_t *sum) {
    if (sum)
        return collect_in(v, out, sum, 1, NULL);
    return v->row ? collect_in(v, out, NULL, 1, NULL) : collect_in(v, out, NULL, 0, NULL);
}

/* collect on any view through children_off: the times each model row is a CPU row of the
 * view, counted by collect_in (1 byte a model row, where child_sums took 8, zeroed: the
 * analysis's high water on hta_df_index_resolver 15.2 -> 14.5 MiB with one analysis thread).
 * 0 when a row is there more than 255 times or the sums could wrap (then child_sums). */
static int collect_mult(const tp_an_view *v, tp_an_cpuops *out) {
    uint8_t *mult = tp_an_tmp0(v, v->r->ev.n + 1, 1);
    int ok = collect_in(v, out, NULL, 1, mult);
    tp_an_tmp_put(v, mult);
    return ok;
}

/* Does the view hold every model row exactly once (in any order)? Then collect needs no
 * child_sums: each row's parent is a view row too, so taking each child's duration off its
 * parent's group as it comes gives the same exact sums in any order (a parent after its
 * children only misses the slot cache and finds its group by name). Nothing trimmed (a
 * trimmed view can hold a row twice) and no window; untrimmed, each row is admitted at most
 * once, so n rows are all of them. */
static int every_row_once(const tp_an_view *v) {
    return !v->trimmed && !(v->opts.window_hi > v->opts.window_lo) && v->n == v->r->ev.n;
}

static int cmp_op(const void *a, const void *b, int by_total) {
    const tp_an_cpuop *x = a, *y = b;
    int64_t p = by_total ? x->total : x->self, q = by_total ? y->total : y->self;
    if (p != q)
        return p > q ? -1 : 1;
    if (x->name != y->name)
        return x->name < y->name ? -1 : 1;
    if (x->shapes != y->shapes)
        return x->shapes < y->shapes ? -1 : 1;
    return (x->cat > y->cat) - (x->cat < y->cat);
}
static int cmp_self(const void *a, const void *b) {
    return cmp_op(a, b, 0);
}
static int cmp_total(const void *a, const void *b) {
    return cmp_op(a, b, 1);
}

void tp_an_cpuops_run(const tp_an_view *v, tp_an_cpuops *out) {
    memset(out, 0, sizeof *out);
    out->by_shapes = v->opts.ops_by_shapes != 0;
    out->by_total = v->opts.ops_by_total != 0;
    /* The view holds every model row once (native; compat untrimmed): the self times without
     * a sum per model row (8 bytes a row, zeroed, written at every parent: a page fault per
     * 512 rows when the view's scratch had no kept pages for it; on a compat view it was the
     * report's peak: tracelens_xdit_sd35 +1.4 MiB over the steady model and view) */
    if (every_row_once(v) ? !collect(v, out, NULL) : !collect_mult(v, out)) {
        tp_an_cpuops_free(out);
        out->by_shapes = v->opts.ops_by_shapes != 0;
        out->by_total = v->opts.ops_by_total != 0;
        int64_t *sum = child_sums(v, &v->r->ev);
        collect(v, out, sum);
        tp_an_tmp_put(v, sum);
    }
    for (size_t k = 0; k < out->n; k++)
        out->op[k].mean = (double)out->op[k].total / (double)out->op[k].count;
    if (out->n)
        qsort(out->op, out->n, sizeof *out->op, out->by_total ? cmp_total : cmp_self);
}

void tp_an_cpuops_free(tp_an_cpuops *out) {
    if (!out)
        return;
    free(out->op);
    memset(out, 0, sizeof *out);
}

const char *tp_an_cpuop_kind(const tp_an_cpuop *op) {
    return op->cat == TP_CAT_CPU_OP ? "op" : "range";
}
