/* tp_diagnose: the findings of one rank (see tp_diagnose.h for what each promises).
 *
 * Everything is computed with merged interval sets clipped to the analysis window: the
 * device's busy time, the host's synchronization calls and data-loading ranges on the
 * launching threads, copies and kernels. Each detector reads those sets and appends at most
 * one finding; the list is then sorted by severity. Rows are visited once each even when
 * the view repeats them (HTA compatibility mode), so sums are not inflated. */
#include "tp_diagnose.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_units.h"
#include "tp_an_stats.h"
#include "tp_reader.h"
#include "tp_record.h"
#include "tp_symbolize.h"

#define MIN_SEVERITY 0.03
#define MIB (1024.0 * 1024.0)

/* ---------------------------------------------------------------- interval sets */

typedef struct {
    int64_t *a, *b;
    size_t n, cap;
} ivl;

static void ivl_add(ivl *s, int64_t a, int64_t b) {
    if (b <= a)
        return;
    if (s->n == s->cap) {
        size_t cap = s->cap;
        tp_an_grow((void **)&s->a, &cap, s->n + 1, sizeof *s->a);
        tp_an_grow((void **)&s->b, &s->cap, s->n + 1, sizeof *s->b);
    }
    s->a[s->n] = a, s->b[s->n] = b, s->n++;
}

static void ivl_free(ivl *s) {
    free(s->a), free(s->b);
    memset(s, 0, sizeof *s);
}

typedef struct {
    int64_t a, b;
} pair;

static int cmp_pair(const void *x, const void *y) {
    const pair *p = x, *q = y;
    return (p->a > q->a) - (p->a < q->a);
}

/* Sorts and merges in place, keeping only the part inside [w0, w1). */
static void ivl_norm(ivl *s, int64_t w0, int64_t w1) {
    pair *p = tp_an_alloc(s->n + 1, sizeof *p);
    for (size_t i = 0; i < s->n; i++)
        p[i] = (pair){s->a[i] > w0 ? s->a[i] : w0, s->b[i] < w1 ? s->b[i] : w1};
    qsort(p, s->n, sizeof *p, cmp_pair);
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (p[i].b <= p[i].a)
            continue;
        if (k && p[i].a <= s->b[k - 1]) {
            if (p[i].b > s->b[k - 1])
                s->b[k - 1] = p[i].b;
            continue;
        }
        s->a[k] = p[i].a, s->b[k] = p[i].b, k++;
    }
    s->n = k;
    free(p);
}

static int64_t ivl_len(const ivl *s) {
    int64_t t = 0;
    for (size_t i = 0; i < s->n; i++)
        t = tp_an_add(t, s->b[i] - s->a[i]);
    return t;
}

/* out = x AND y (keep = 1) or x AND NOT y (keep = 0); x, y normalized; out fresh. */
static void ivl_combine(const ivl *x, const ivl *y, int keep, ivl *out) {
    memset(out, 0, sizeof *out);
    size_t j = 0;
    for (size_t i = 0; i < x->n; i++) {
        int64_t a = x->a[i], b = x->b[i];
        while (j < y->n && y->b[j] <= a)
            j++;
        for (size_t k = j; k < y->n && y->a[k] < b; k++) {
            int64_t ya = y->a[k] > a ? y->a[k] : a, yb = y->b[k] < b ? y->b[k] : b;
            if (keep)
                ivl_add(out, ya, yb);
            else
                ivl_add(out, a, ya);
            a = yb;
        }
        if (!keep)
            ivl_add(out, a, b);
    }
}

static int64_t ivl_and_len(const ivl *x, const ivl *y) {
    ivl t;
    ivl_combine(x, y, 1, &t);
    int64_t n = ivl_len(&t);
    ivl_free(&t);
    return n;
}

/* ---------------------------------------------------------------- context */

typedef struct {
    int64_t pid, tid;
    size_t launches;
} thr;

typedef struct {
    const tp_an_view *v;
    const tp_rank *r;
    const tp_events *ev;
    tp_diagnosis *out;
    uint8_t *seen; /* model row visited */
    thr th[64];
    size_t n_th;
    long main_bucket; /* r->threads bucket of the busiest launching thread; -1: none */
    int64_t w0, w1, win;
    ivl steps, busy, idle, sync, data, kernels, copies;
    int64_t *step_end; /* every step's end, ascending (steps.* are merged) */
    size_t n_step_end;
    uint8_t *ncls; /* NC_* class of each name id, 0 until first asked */
    tp_reader *rd; /* opened on demand for stacks */
    int rd_tried;
    tp_symbolizer *sym; /* opened on demand, unless opts.no_symbols */
    int sym_tried;
} dctx;

static int icontains(const char *s, const char *needle) {
    size_t n = strlen(needle);
    for (; *s; s++)
        if (strncasecmp(s, needle, n) == 0)
            return 1;
    return 0;
}

static int is_step_name(const char *s) {
    return strncmp(s, "ProfilerStep#", 13) == 0 || strcasecmp(s, "step") == 0 ||
           strcasecmp(s, "train_step") == 0 || strcasecmp(s, "training_step") == 0 ||
           strcasecmp(s, "train step") == 0;
}

/* Host time spent getting the next batch: NVTX/user ranges and ops named like data loading
 * ("dataloader wait", PyTorch's "enumerate(DataLoader)#...__next__", "get_batch"). */
static int is_data_name(const char *s) {
    static const char *const k[] = {"dataloader", "data loader", "data_loader", "data wait",
                                    "data_wait",  "next_data",   "get_batch",   "input pipeline",
                                    "load batch", "fetch batch"};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (icontains(s, k[i]))
            return 1;
    return 0;
}

static int is_api(uint8_t cat) {
    return cat == TP_CAT_CUDA_RUNTIME || cat == TP_CAT_CUDA_DRIVER;
}

/* Name classes, computed once per name id: the string tests are the costly part of a pass. */
#define NC_KNOWN 1u
#define NC_STEP 2u
#define NC_DATA 4u
#define NC_SYNC 8u /* "...Synchronize..." */
#define NC_WAIT 16u

static unsigned name_class(const dctx *d, size_t row) {
    uint32_t id = d->ev->name[row];
    if (!d->ncls[id]) {
        const char *s = tp_model_str(d->v->m, id);
        d->ncls[id] =
            (uint8_t)(NC_KNOWN | (is_step_name(s) ? NC_STEP : 0) | (is_data_name(s) ? NC_DATA : 0) |
                      (strstr(s, "Synchronize") ? NC_SYNC : 0) | (strstr(s, "Wait") ? NC_WAIT : 0));
    }
    return d->ncls[id];
}

/* Host blocked until the device catches up: *Synchronize API calls, CPU-side SYNC records
 * and Kineto's cuda_sync events ("Stream Wait Event" is a device-side wait: left out). */
static int is_sync_row(const dctx *d, size_t row) {
    if (is_api(d->ev->cat[row]))
        return (name_class(d, row) & NC_SYNC) != 0;
    return d->ev->cat[row] == TP_CAT_CUDA_SYNC && !(name_class(d, row) & NC_WAIT);
}

static int is_range_cat(uint8_t cat) {
    return cat == TP_CAT_USER_ANNOTATION || cat == TP_CAT_CPU_OP || cat == TP_CAT_PYTHON_FUNCTION;
}

static int launch_thread(const dctx *d, int64_t pid, int64_t tid) {
    if (!d->n_th)
        return 1;
    for (size_t i = 0; i < d->n_th; i++)
        if (d->th[i].pid == pid && d->th[i].tid == tid)
            return 1;
    return 0;
}

static void note_launch_thread(dctx *d, int64_t pid, int64_t tid) {
    for (size_t i = 0; i < d->n_th; i++)
        if (d->th[i].pid == pid && d->th[i].tid == tid) {
            d->th[i].launches++;
            return;
        }
    if (d->n_th < sizeof d->th / sizeof d->th[0])
        d->th[d->n_th++] = (thr){pid, tid, 1};
}

/* Calls f(d, view index, model row) once per model row. */
#define FOR_ROWS(d, i, row)                                                                        \
    for (size_t i = 0, row = 0; i < (d)->v->n; i++)                                                \
        if ((row = (d)->v->row[i]), !(d)->seen[row] && ((d)->seen[row] = 1))

static void clear_seen(dctx *d) {
    memset(d->seen, 0, d->ev->n + 1);
}

static int64_t vend(const tp_an_view *v, size_t i) {
    return v->end[i] > v->ts[i] ? v->end[i] : v->ts[i];
}

/* The CPU row that launched GPU row `row` (same correlation, not on a stream), or -1. */
static long cpu_call(const dctx *d, size_t row) {
    const uint32_t *rows;
    int64_t corr = d->ev->correlation[row];
    size_t n = corr >= 0 ? tp_rank_corr_rows(d->r, corr, &rows) : 0;
    for (size_t k = 0; k < n; k++)
        if (d->ev->stream[rows[k]] == -1 && is_api(d->ev->cat[rows[k]]))
            return rows[k];
    return -1;
}

/* The training threads are those that launch kernels (loader workers that only copy or wait
 * on events are not); without correlated kernels, every thread that launches anything. */
static void find_threads_and_steps(dctx *d) {
    clear_seen(d);
    FOR_ROWS(d, i, row) {
        long c = d->v->gpu[i] && d->ev->cat[row] == TP_CAT_KERNEL ? cpu_call(d, row) : -1;
        if (c >= 0)
            note_launch_thread(d, d->ev->pid[c], d->ev->tid[c]);
    }
    clear_seen(d);
    FOR_ROWS(d, i, row) {
        if (!d->n_th && !d->v->gpu[i] && (d->ev->flags[row] & TP_EVF_LAUNCH))
            note_launch_thread(d, d->ev->pid[row], d->ev->tid[row]);
    }
    size_t best = 0;
    d->main_bucket = -1;
    for (size_t t = 0; t < d->n_th; t++)
        for (size_t b = 0; b < d->r->threads.n; b++)
            if (d->r->threads.key[b] == d->th[t].tid && d->r->threads.key2[b] == d->th[t].pid &&
                d->th[t].launches > best)
                best = d->th[t].launches, d->main_bucket = (long)b;
    clear_seen(d);
    FOR_ROWS(d, i, row) {
        if (!d->v->gpu[i] && is_range_cat(d->ev->cat[row]) && (name_class(d, row) & NC_STEP) &&
            launch_thread(d, d->ev->pid[row], d->ev->tid[row]))
            ivl_add(&d->steps, d->v->ts[i], vend(d->v, i));
    }
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_pair_nest(const void *x, const void *y) {
    const pair *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    return (p->b < q->b) - (p->b > q->b); /* the enclosing one first */
}

/* Steps nested in a step (a "step" range inside ProfilerStep#N) are the same step: only the
 * outermost count, and their ends are the sample points for memory growth. */
static void count_steps(dctx *d) {
    pair *p = tp_an_alloc(d->steps.n + 1, sizeof *p);
    for (size_t i = 0; i < d->steps.n; i++)
        p[i] = (pair){d->steps.a[i], d->steps.b[i]};
    qsort(p, d->steps.n, sizeof *p, cmp_pair_nest);
    d->step_end = tp_an_alloc(d->steps.n + 1, sizeof *d->step_end);
    int64_t last_end = INT64_MIN;
    for (size_t i = 0; i < d->steps.n; i++) {
        if (p[i].b <= last_end && d->n_step_end)
            continue;
        d->step_end[d->n_step_end++] = p[i].b;
        last_end = p[i].b;
    }
    qsort(d->step_end, d->n_step_end, sizeof *d->step_end, cmp_i64);
    d->out->n_steps = d->n_step_end;
    free(p);
}

/* The window: the union of the steps' span, else the GPU span. */
static void set_window(dctx *d) {
    int64_t g0 = INT64_MAX, g1 = INT64_MIN;
    for (size_t i = 0; i < d->v->n; i++)
        if (d->v->gpu[i]) {
            g0 = d->v->ts[i] < g0 ? d->v->ts[i] : g0;
            g1 = vend(d->v, i) > g1 ? vend(d->v, i) : g1;
        }
    count_steps(d);
    ivl_norm(&d->steps, INT64_MIN, INT64_MAX);
    if (d->steps.n) {
        d->w0 = d->steps.a[0], d->w1 = d->steps.b[d->steps.n - 1];
    } else if (g0 < g1) {
        d->w0 = g0, d->w1 = g1;
    }
    if (g0 >= g1) /* no device activity: nothing to judge in time */
        d->w0 = d->w1 = 0;
    d->win = d->w1 - d->w0;
    d->out->window_ns = d->win;
}

/* A sync row that blocked a training thread. A SYNC record correlated with its API call
 * is the same wait seen from the device: the API row (with its thread) stands for both. */
static int host_sync(const dctx *d, size_t row) {
    if (is_api(d->ev->cat[row]) || d->ev->stream[row] == -1)
        return launch_thread(d, d->ev->pid[row], d->ev->tid[row]);
    return cpu_call(d, row) < 0;
}

static void collect_sets(dctx *d) {
    clear_seen(d);
    FOR_ROWS(d, i, row) {
        uint8_t cat = d->ev->cat[row];
        int64_t a = d->v->ts[i], b = vend(d->v, i);
        if (d->v->gpu[i]) {
            ivl_add(&d->busy, a, b);
            if (cat == TP_CAT_KERNEL)
                ivl_add(&d->kernels, a, b);
            else if (cat == TP_CAT_MEMCPY)
                ivl_add(&d->copies, a, b);
        }
        if (is_sync_row(d, row) && host_sync(d, row))
            ivl_add(&d->sync, a, b);
        else if (!d->v->gpu[i] && !is_api(cat) && cat != TP_CAT_CUDA_SYNC &&
                 (name_class(d, row) & NC_DATA) &&
                 launch_thread(d, d->ev->pid[row], d->ev->tid[row]))
            ivl_add(&d->data, a, b);
    }
    ivl_norm(&d->busy, d->w0, d->w1);
    ivl_norm(&d->kernels, d->w0, d->w1);
    ivl_norm(&d->copies, d->w0, d->w1);
    ivl_norm(&d->sync, d->w0, d->w1);
    ivl_norm(&d->data, d->w0, d->w1);
    ivl win = {0};
    ivl_add(&win, d->w0, d->w1);
    ivl_combine(&win, &d->busy, 0, &d->idle);
    ivl_free(&win);
}

/* ---------------------------------------------------------------- formatting */

static double share(int64_t a, int64_t b) {
    return b > 0 ? (double)a / (double)b : 0.0;
}

static tp_finding *add_finding(dctx *d, const char *id, double severity) {
    tp_diagnosis *o = d->out;
    size_t cap = o->n;
    tp_an_grow((void **)&o->f, &cap, o->n + 1, sizeof *o->f);
    tp_finding *f = &o->f[o->n++];
    memset(f, 0, sizeof *f);
    f->id = id;
    f->severity = severity < 0 ? 0 : severity > 1 ? 1 : severity;
    return f;
}

static void metric(tp_finding *f, const char *key, double value) {
    if (f->n_metrics < TP_DIAG_MAX_METRICS)
        f->metrics[f->n_metrics++] = (tp_diag_metric){key, value};
}

/* ---------------------------------------------------------------- sources */

/* Innermost range (annotation, op, Python function) enclosing model row `row`, or -1. */
static long enclosing(const tp_events *ev, long row) {
    long p = ev->parent[row];
    while (p >= 0 && !is_range_cat(ev->cat[p]))
        p = ev->parent[p];
    return p;
}

/* "'forward conv1' in 'step'" for range row `p` (innermost two levels). */
static void range_label(const dctx *d, long p, char *buf, size_t n) {
    const tp_model *m = d->v->m;
    long q = enclosing(d->ev, p);
    while (q >= 0 && d->ev->name[q] == d->ev->name[p]) /* recursion: name the caller */
        q = enclosing(d->ev, q);
    if (q >= 0)
        snprintf(buf, n, "range '%s' in '%s'", tp_model_str(m, d->ev->name[p]),
                 tp_model_str(m, d->ev->name[q]));
    else
        snprintf(buf, n, "range '%s'", tp_model_str(m, d->ev->name[p]));
}

/* Innermost range on the main launching thread that contains time t (model times), or -1.
 * The last row starting at or before t either contains t or has an ancestor that does. */
static long range_at(const dctx *d, int64_t t) {
    if (d->main_bucket < 0)
        return -1;
    const tp_buckets *b = &d->r->threads;
    uint32_t lo = b->off[d->main_bucket], hi = b->off[d->main_bucket + 1];
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (d->ev->ts[b->rows[mid]] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == b->off[d->main_bucket])
        return -1;
    long p = b->rows[lo - 1];
    while (p >= 0 && !(is_range_cat(d->ev->cat[p]) && d->ev->ts[p] + d->ev->dur[p] > t))
        p = d->ev->parent[p];
    return p;
}

/* Accumulates time per range name to name the range behind an offender. */
typedef struct {
    long row[32]; /* a representative range row per name */
    uint32_t name[32];
    int64_t ns[32];
    size_t n;
} blame;

static void blame_add(blame *bl, const tp_events *ev, long range_row, int64_t ns) {
    if (range_row < 0)
        return;
    uint32_t name = ev->name[range_row];
    for (size_t i = 0; i < bl->n; i++)
        if (bl->name[i] == name) {
            bl->ns[i] = tp_an_add(bl->ns[i], ns);
            return;
        }
    if (bl->n < 32)
        bl->row[bl->n] = range_row, bl->name[bl->n] = name, bl->ns[bl->n++] = ns;
}

static int64_t blame_sum(const blame *bl) {
    int64_t t = 0;
    for (size_t i = 0; i < bl->n; i++)
        t = tp_an_add(t, bl->ns[i]);
    return t;
}

/* Writes "range 'x' in 'y' (62% of it)" for the top name, then up to two runners-up as
 * "'z' (20%)"; "" when nothing was blamed. */
static void blame_source(const dctx *d, const blame *bl, int64_t total, const char *what, char *buf,
                         size_t n) {
    buf[0] = 0;
    uint8_t used[32] = {0};
    for (int k = 0; k < 3; k++) {
        long best = -1;
        for (size_t i = 0; i < bl->n; i++)
            if (!used[i] && (best < 0 || bl->ns[i] > bl->ns[best]))
                best = (long)i;
        if (best < 0 || (k && 10.0 * (double)bl->ns[best] < (double)total))
            return;
        used[best] = 1;
        size_t len = strlen(buf);
        char lab[256];
        if (k == 0 && 5.0 * (double)bl->ns[best] < (double)total) { /* no dominant range: say so */
            int w = snprintf(buf, n, "spread over %zu ranges; most in ", bl->n);
            len = w > 0 && (size_t)w < n ? (size_t)w : 0;
        }
        if (k == 0)
            range_label(d, bl->row[best], lab, sizeof lab);
        else
            snprintf(lab, sizeof lab, ", '%s'", tp_model_str(d->v->m, bl->name[best]));
        snprintf(buf + len, n - len, "%s (%.0f%%%s%s)", lab, 100.0 * share(bl->ns[best], total),
                 k ? "" : " ", k ? "" : what);
    }
}

static tp_reader *reader(dctx *d) {
    if (!d->rd_tried && d->r->native && d->r->file) {
        d->rd_tried = 1;
        if (tp_reader_open(d->r->file, &d->rd) != TP_OK)
            d->rd = NULL;
    }
    return d->rd;
}

static tp_symbolizer *symbolizer(dctx *d) {
    if (!d->sym_tried && !d->v->opts.no_symbols) {
        d->sym_tried = 1;
        if (tp_symbolizer_open(&d->sym) != TP_OK)
            d->sym = NULL;
    }
    return d->sym;
}

/* libc's program start (_start, __libc_start_main, __libc_start_call_main): in every stack,
 * so it says nothing about this one. */
static int is_start_func(const char *func) {
    return !strcmp(func, "_start") || !strncmp(func, "__libc_start", 12);
}

static tp_diag_frame *add_frame(tp_finding *f, const char *module, uint64_t off,
                                const char *symbols) {
    if (f->n_frames == TP_DIAG_MAX_FRAMES)
        return NULL;
    tp_diag_frame *fr = &f->frames[f->n_frames++];
    memset(fr, 0, sizeof *fr);
    snprintf(fr->module, sizeof fr->module, "%s", module ? module : "");
    fr->offset = off;
    fr->symbols = symbols;
    return fr;
}

/* One raw frame -> one frame per function at that address (inlined ones first). */
static void add_symbolized(dctx *d, tp_finding *f, const tp_rec_module *mo, const char *path,
                           const char *base, uint64_t off) {
    tp_symbolizer *sy = symbolizer(d);
    if (!sy || !path) {
        add_frame(f, base, off, sy ? tp_sym_status_str(TP_SYM_NO_FILE) : "off");
        return;
    }
    size_t bl = mo->build_id_len < sizeof mo->build_id ? mo->build_id_len : sizeof mo->build_id;
    const tp_sym *sym = tp_symbolize(sy, path, mo->build_id, bl, off);
    if (sym->status != TP_SYM_OK) {
        add_frame(f, base, off, tp_sym_status_str(sym->status));
        return;
    }
    for (size_t k = 0; k < sym->n; k++) {
        if (k + 1 == sym->n && is_start_func(sym->f[k].func))
            break;
        tp_diag_frame *fr = add_frame(f, base, off, "ok");
        if (!fr)
            return;
        snprintf(fr->func, sizeof fr->func, "%s", sym->f[k].func);
        snprintf(fr->file, sizeof fr->file, "%s", sym->f[k].file ? sym->f[k].file : "");
        fr->line = sym->f[k].line;
        fr->inlined = k + 1 < sym->n;
    }
}

/* The frames of native stack `stack` (innermost first) into f->frames. Frames inside
 * trainprof's own collector are skipped: they are the same in every stack. */
static void collect_frames(dctx *d, uint32_t stack, tp_finding *f) {
    uint32_t nf = 0;
    tp_reader *rd = stack ? reader(d) : NULL;
    const uint64_t *fr = rd ? tp_reader_stack(rd, stack, &nf) : NULL;
    f->n_frames = 0;
    for (uint32_t i = 0; fr && i < nf && f->n_frames < TP_DIAG_MAX_FRAMES; i++) {
        uint32_t mod = TP_FRAME_MODULE(fr[i]);
        uint64_t off = TP_FRAME_OFFSET(fr[i]);
        const tp_rec_module *mo = mod == TP_FRAME_NO_MODULE ? NULL : tp_reader_module(rd, mod);
        const char *path = mo ? tp_reader_string(rd, mo->path_sid) : NULL;
        const char *base = path ? strrchr(path, '/') : NULL;
        base = base ? base + 1 : path;
        if (base && strstr(base, "trainprof") && strstr(base, ".so"))
            continue;
        if (!mo)
            add_frame(f, NULL, off, "no module");
        else
            add_symbolized(d, f, mo, path, base, off);
    }
}

static const char *file_base(const char *path) {
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

/* "; stack: func (file.c:12) < libx.so+0x1a2b < ..." (at most 6 frames) from f->frames, and
 * why frames are not symbolized when a module's file changed since the recording. */
static void append_stack(dctx *d, uint32_t stack, tp_finding *f) {
    collect_frames(d, stack, f);
    char *buf = f->source;
    size_t n = sizeof f->source, len = strlen(buf);
    const char *changed = NULL;
    for (size_t i = 0; i < f->n_frames && i < 6 && len + 2 < n; i++) {
        const tp_diag_frame *x = &f->frames[i];
        const char *sep = i ? " < " : "; stack: ";
        int w;
        if (x->func[0] && x->line > 0)
            w = snprintf(buf + len, n - len, "%s%s (%s:%d)", sep, x->func, file_base(x->file),
                         x->line);
        else if (x->func[0])
            w = snprintf(buf + len, n - len, "%s%s (%s)", sep, x->func, x->module);
        else if (x->module[0])
            w = snprintf(buf + len, n - len, "%s%s+0x%llx", sep, x->module,
                         (unsigned long long)x->offset);
        else
            w = snprintf(buf + len, n - len, "%s0x%llx", sep, (unsigned long long)x->offset);
        if (w < 0 || (size_t)w >= n - len)
            return;
        len += (size_t)w;
        if (!changed && !strcmp(x->symbols, tp_sym_status_str(TP_SYM_MISMATCH)))
            changed = x->module;
    }
    if (changed && len + 2 < n)
        snprintf(buf + len, n - len,
                 " (%s changed since the recording: build-id differs, "
                 "not symbolized)",
                 changed);
}

/* ---------------------------------------------------------------- device idle */

typedef struct {
    int64_t idle, sync, data, shortg, other;
    ivl other_set; /* idle with no sync, no data range and not a short gap */
} idle_split;

static void split_idle(dctx *d, idle_split *s) {
    ivl nosync, rest, shortg = {0};
    memset(s, 0, sizeof *s);
    s->idle = ivl_len(&d->idle);
    s->sync = ivl_and_len(&d->idle, &d->sync);
    ivl_combine(&d->idle, &d->sync, 0, &nosync);
    s->data = ivl_and_len(&nosync, &d->data);
    ivl_combine(&nosync, &d->data, 0, &rest);
    for (size_t i = 0; i < d->idle.n; i++)
        if (d->idle.b[i] - d->idle.a[i] < d->v->opts.kernel_wait_ns)
            ivl_add(&shortg, d->idle.a[i], d->idle.b[i]);
    s->shortg = ivl_and_len(&rest, &shortg);
    ivl_combine(&rest, &shortg, 0, &s->other_set);
    s->other = ivl_len(&s->other_set);
    ivl_free(&nosync), ivl_free(&rest), ivl_free(&shortg);
}

static const char *window_words(const dctx *d) {
    return d->out->n_steps ? "of step time" : "of the GPU span";
}

static void find_input_bound(dctx *d, const idle_split *s) {
    double sev = share(s->data, d->win);
    if (sev < MIN_SEVERITY)
        return;
    blame bl = {0};
    clear_seen(d);
    FOR_ROWS(d, i, row) {
        if (!d->v->gpu[i] && is_range_cat(d->ev->cat[row]) && (name_class(d, row) & NC_DATA) &&
            launch_thread(d, d->ev->pid[row], d->ev->tid[row]) && d->v->ts[i] >= d->w0 &&
            d->v->ts[i] < d->w1)
            blame_add(&bl, d->ev, (long)row, vend(d->v, i) - d->v->ts[i]);
    }
    size_t best = 0;
    for (size_t i = 1; i < bl.n; i++)
        if (bl.ns[i] > bl.ns[best])
            best = i;
    tp_finding *f = add_finding(d, "input-bound", sev);
    snprintf(f->title, sizeof f->title, "input-bound: the device waits for the input pipeline");
    char b1[32];
    const char *rn = bl.n ? tp_model_str(d->v->m, bl.name[best]) : "data loading";
    double per_step = d->out->n_steps ? (double)bl.ns[best] / (double)d->out->n_steps : NAN;
    snprintf(f->evidence, sizeof f->evidence,
             "device idle %.1f%% %s; %.1f%% of that idle is host wait inside data-loading "
             "ranges; the '%s' range takes %.1f%% %s%s%s",
             100 * share(s->idle, d->win), window_words(d), 100 * share(s->data, s->idle), rn,
             100 * share(bl.n ? bl.ns[best] : 0, d->win), window_words(d),
             d->out->n_steps ? ", mean per step " : "",
             d->out->n_steps ? tp_units_dur(b1, sizeof b1, per_step) : "");
    snprintf(f->advice, sizeof f->advice,
             "add DataLoader workers / prefetch (num_workers, prefetch_factor, "
             "persistent_workers); move augmentation and decoding off the training thread (or "
             "onto the GPU); cache preprocessed data");
    if (bl.n)
        range_label(d, bl.row[best], f->source, sizeof f->source);
    metric(f, "idle_ns", (double)s->idle);
    metric(f, "data_wait_idle_ns", (double)s->data);
    metric(f, "range_ns", bl.n ? (double)bl.ns[best] : 0);
    metric(f, "window_ns", (double)d->win);
}

static void find_low_util(dctx *d, const idle_split *s) {
    double util = 1.0 - share(s->idle, d->win), sev = share(s->other, d->win);
    if (util >= 0.6 || sev < 0.10)
        return;
    blame bl = {0};
    for (size_t i = 0; i < s->other_set.n; i++) {
        int64_t mid = s->other_set.a[i] + (s->other_set.b[i] - s->other_set.a[i]) / 2;
        blame_add(&bl, d->ev, range_at(d, mid), s->other_set.b[i] - s->other_set.a[i]);
    }
    tp_finding *f = add_finding(d, "low-utilization", sev);
    snprintf(f->title, sizeof f->title,
             "low-utilization: the device is busy only %.0f%% %s, waiting on host work", 100 * util,
             window_words(d));
    snprintf(f->evidence, sizeof f->evidence,
             "device idle %.1f%% %s: %.1f%% of it while the host was blocked in sync calls, "
             "%.1f%% in data-loading ranges, %.1f%% in gaps under %lld \u00b5s between ops, %.1f%% "
             "while the host did other work (CPU busy between launches)",
             100 * share(s->idle, d->win), window_words(d), 100 * share(s->sync, s->idle),
             100 * share(s->data, s->idle), 100 * share(s->shortg, s->idle),
             (long long)(d->v->opts.kernel_wait_ns / 1000), 100 * share(s->other, s->idle));
    snprintf(f->advice, sizeof f->advice,
             "profile the host side of the step (CPU ops, Python) between launches; move work "
             "off the training thread, batch small operations, or capture the step with CUDA "
             "graphs / torch.compile");
    blame_source(d, &bl, s->other, "of it", f->source, sizeof f->source);
    metric(f, "idle_ns", (double)s->idle);
    metric(f, "host_other_idle_ns", (double)s->other);
    metric(f, "window_ns", (double)d->win);
}

/* ---------------------------------------------------------------- synchronization */

static void find_sync(dctx *d) {
    size_t n_api = 0, n_rec = 0;
    long worst = -1;
    blame bl = {0};
    clear_seen(d);
    FOR_ROWS(d, i, row) {
        if (d->v->ts[i] < d->w0 || d->v->ts[i] >= d->w1 || !is_sync_row(d, row))
            continue;
        if (!host_sync(d, row))
            continue;
        if (!is_api(d->ev->cat[row])) {
            n_rec++;
            continue;
        }
        n_api++;
        blame_add(&bl, d->ev, enclosing(d->ev, (long)row), d->ev->dur[row]);
        if (worst < 0 || d->ev->dur[row] > d->ev->dur[worst])
            worst = (long)row;
    }
    size_t n_sync = n_api ? n_api : n_rec;
    /* Drain: idle gaps that began while the host was blocked (the sync emptied the queue),
     * less what a data-loading range explains, and at most as long as that sync: had the
     * host not blocked, it would have been ahead by no more than that. */
    int64_t host = ivl_len(&d->sync), drain = 0;
    for (size_t g = 0, k = 0, j = 0; g < d->idle.n; g++) {
        while (k < d->sync.n && d->sync.b[k] < d->idle.a[g])
            k++;
        if (k == d->sync.n || d->sync.a[k] > d->idle.a[g])
            continue;
        int64_t len = d->idle.b[g] - d->idle.a[g];
        while (j < d->data.n && d->data.b[j] <= d->idle.a[g])
            j++;
        for (size_t q = j; q < d->data.n && d->data.a[q] < d->idle.b[g]; q++)
            len -= (d->data.b[q] < d->idle.b[g] ? d->data.b[q] : d->idle.b[g]) -
                   (d->data.a[q] > d->idle.a[g] ? d->data.a[q] : d->idle.a[g]);
        drain += len < d->sync.b[k] - d->sync.a[k] ? len : d->sync.b[k] - d->sync.a[k];
    }
    double per_step = d->out->n_steps ? (double)n_sync / (double)d->out->n_steps : NAN;
    int frequent = d->out->n_steps ? per_step >= 0.5 : n_sync >= 10;
    double sev = share(frequent ? (host > drain ? host : drain) : drain, d->win);
    if (!n_sync || sev < MIN_SEVERITY)
        return;
    tp_finding *f = add_finding(d, "sync-stall", sev);
    char b1[32], b2[32], b3[32];
    snprintf(f->title, sizeof f->title, "sync-stall: the host blocks on device synchronization%s",
             frequent && d->out->n_steps ? " every step (like loss.item() every step)" : "");
    int nw = snprintf(
        f->evidence, sizeof f->evidence, "host blocked %s (%.1f%% %s) in %zu sync calls",
        tp_units_dur(b1, 32, (double)host), 100 * share(host, d->win), window_words(d), n_sync);
    if (d->out->n_steps && nw > 0 && (size_t)nw < sizeof f->evidence)
        nw += snprintf(f->evidence + nw, sizeof f->evidence - (size_t)nw, " (%.2f per step)",
                       per_step);
    if (nw > 0 && (size_t)nw < sizeof f->evidence)
        snprintf(f->evidence + nw, sizeof f->evidence - (size_t)nw,
                 ", mean %s each; the device ran dry during them and idled %s (%.1f%%) until the "
                 "host launched again (outside data loading)",
                 tp_units_dur(b2, 32, n_sync ? (double)host / (double)n_sync : 0),
                 tp_units_dur(b3, 32, (double)drain), 100 * share(drain, d->win));
    snprintf(f->advice, sizeof f->advice,
             "do not read device values back every step (loss.item(), .cpu(), print(tensor), "
             "torch.cuda.synchronize()): accumulate on the device and read every N steps; use "
             "non_blocking copies and events instead of full synchronization");
    blame_source(d, &bl, blame_sum(&bl), "of it", f->source, sizeof f->source);
    if (worst >= 0)
        append_stack(d, d->ev->stack[worst], f);
    metric(f, "host_blocked_ns", (double)host);
    metric(f, "syncs", (double)n_sync);
    metric(f, "syncs_per_step", per_step);
    metric(f, "drain_idle_ns", (double)drain);
    metric(f, "window_ns", (double)d->win);
}

/* ---------------------------------------------------------------- launch overhead */

static int cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, size_t n) {
    if (!n)
        return NAN;
    qsort(v, n, sizeof *v, cmp_dbl);
    return tp_an_percentile_sorted(v, n, 50);
}

/* Launch calls of the training threads inside the window. */
static size_t count_launches(dctx *d) {
    size_t n = 0;
    clear_seen(d);
    FOR_ROWS(d, i, row) {
        n += !d->v->gpu[i] && (d->ev->flags[row] & TP_EVF_LAUNCH) && d->v->ts[i] >= d->w0 &&
             d->v->ts[i] < d->w1 && launch_thread(d, d->ev->pid[row], d->ev->tid[row]);
    }
    return n;
}

/* Launch-bound: tiny kernels (median under 10 us) that the device finishes faster than the
 * host issues them: the median kernel is shorter than the host time per launch (the window
 * less the time in syncs and data loading, over the launches), which is itself at most
 * 100 us. The idle that neither a sync nor a data range explains is then the host's
 * per-launch cost. */
static int find_launch_bound(dctx *d, const idle_split *s) {
    double *gd = tp_an_alloc(d->v->n_gpu + 1, sizeof *gd);
    size_t nk = 0, n_short = 0;
    blame bl = {0};
    clear_seen(d);
    FOR_ROWS(d, i, row) {
        if (!d->v->gpu[i] || d->ev->cat[row] != TP_CAT_KERNEL || d->v->ts[i] < d->w0 ||
            d->v->ts[i] >= d->w1)
            continue;
        gd[nk++] = (double)(vend(d->v, i) - d->v->ts[i]);
        long c = cpu_call(d, row);
        if (c < 0)
            continue;
        blame_add(&bl, d->ev, enclosing(d->ev, c), 1);
        n_short +=
            d->ev->dur[c] <= d->v->opts.runtime_cutoff_ns && gd[nk - 1] < (double)d->ev->dur[c];
    }
    ivl sync_only;
    ivl_combine(&d->sync, &d->data, 0, &sync_only);
    int64_t host_free = d->win - ivl_len(&sync_only) - ivl_len(&d->data);
    ivl_free(&sync_only);
    size_t nl = count_launches(d);
    double mk = median(gd, nk), gap = nl ? (double)host_free / (double)nl : NAN;
    free(gd);
    int64_t cost = s->shortg + s->other;
    double sev = share(cost, d->win);
    /* Over 100 us of host time per launch is not launch overhead but other host work
     * (low-utilization then says so). */
    if (!nk || !(mk < 10000.0) || !(mk < gap) ||
        !(gap <= (double)d->v->opts.launch_delay_cutoff_ns) || sev < MIN_SEVERITY)
        return 0;
    tp_finding *f = add_finding(d, "launch-bound", sev);
    char b1[32], b2[32];
    snprintf(f->title, sizeof f->title,
             "launch-bound: many tiny kernels; the device waits on per-launch host overhead");
    char per[48] = "";
    if (d->out->n_steps)
        snprintf(per, sizeof per, " (%.0f per step)", (double)nk / (double)d->out->n_steps);
    snprintf(f->evidence, sizeof f->evidence,
             "%zu kernels%s; median kernel %s while the host spends %s per launch (time outside "
             "syncs and data loading over %zu launches); %zu (%.0f%%) kernels are shorter than "
             "their launch call; the device is busy %.1f%% %s and idles %.1f%% between launches "
             "with the host neither syncing nor loading data",
             nk, per, tp_units_dur(b1, 32, mk), tp_units_dur(b2, 32, gap), nl, n_short,
             100 * share((int64_t)n_short, (int64_t)nk), 100 - 100 * share(s->idle, d->win),
             window_words(d), 100 * sev);
    snprintf(f->advice, sizeof f->advice,
             "fuse small kernels (torch.compile, fused/foreach optimizers), capture the step in a "
             "CUDA graph, use larger batches or fewer, wider layers; cut per-op Python overhead");
    blame_source(d, &bl, blame_sum(&bl), "of the launches", f->source, sizeof f->source);
    metric(f, "kernels", (double)nk);
    metric(f, "short_kernels", (double)n_short);
    metric(f, "median_kernel_ns", mk);
    metric(f, "host_ns_per_launch", gap);
    metric(f, "launch_idle_ns", (double)cost);
    metric(f, "window_ns", (double)d->win);
    return 1;
}

/* ---------------------------------------------------------------- copies */

typedef struct {
    size_t n;
    int64_t bytes, dev_ns;
    ivl dev, host; /* device copy time, host time in the calls */
    blame bl;
    long worst; /* CPU call with the longest host time */
    uint32_t api_name;
} copy_group;

static void group_add(dctx *d, copy_group *g, size_t i, size_t row, long call) {
    g->n++;
    g->bytes += d->ev->bytes[row] > 0 ? d->ev->bytes[row] : 0;
    g->dev_ns += vend(d->v, i) - d->v->ts[i];
    ivl_add(&g->dev, d->v->ts[i], vend(d->v, i));
    if (call < 0)
        return;
    ivl_add(&g->host, d->ev->ts[call], d->ev->ts[call] + d->ev->dur[call]);
    blame_add(&g->bl, d->ev, enclosing(d->ev, call), d->ev->dur[call]);
    if (g->worst < 0 || d->ev->dur[call] > d->ev->dur[g->worst])
        g->worst = call, g->api_name = d->ev->name[call];
}

/* Time the group explains: device copy time or host time blocked in its calls (the larger),
 * inside the window. */
static int64_t group_cost(dctx *d, copy_group *g) {
    ivl_norm(&g->dev, d->w0, d->w1);
    ivl_norm(&g->host, d->w0, d->w1);
    int64_t a = ivl_len(&g->dev), b = ivl_len(&g->host);
    return a > b ? a : b;
}

static int copy_is_async(const dctx *d, size_t row, long call) {
    if (d->ev->flags[row] & TP_EVF_ASYNC)
        return 1;
    if (d->r->native)
        return 0;
    return call < 0 || strstr(tp_model_str(d->v->m, d->ev->name[call]), "Async") != NULL;
}

static void find_pageable(dctx *d, copy_group *pg, const copy_group *pin) {
    int64_t cost = group_cost(d, pg);
    double sev = share(cost, d->win);
    if (!pg->n || sev < MIN_SEVERITY)
        return;
    tp_finding *f = add_finding(d, "pageable-h2d", sev);
    char b1[32], b2[32], b3[32], b4[32];
    double gbps = pg->dev_ns ? (double)pg->bytes / (double)pg->dev_ns : NAN;
    double pin_gbps = pin->dev_ns && pin->bytes ? (double)pin->bytes / (double)pin->dev_ns : NAN;
    snprintf(f->title, sizeof f->title,
             "pageable-h2d: host-to-device copies from pageable memory stall the step");
    int nw = snprintf(f->evidence, sizeof f->evidence,
                      "%zu H2D copies from pageable memory (%s), device copy time %s at %.2f GB/s; "
                      "the host was blocked %s (%.1f%% %s) in the copy calls",
                      pg->n, tp_units_bytes(b1, 32, (double)pg->bytes),
                      tp_units_dur(b2, 32, (double)pg->dev_ns), gbps,
                      tp_units_dur(b3, 32, (double)ivl_len(&pg->host)),
                      100 * share(ivl_len(&pg->host), d->win), window_words(d));
    if (pg->api_name && nw > 0 && (size_t)nw < sizeof f->evidence)
        nw += snprintf(f->evidence + nw, sizeof f->evidence - (size_t)nw, " (%s)",
                       tp_model_str(d->v->m, pg->api_name));
    if (!isnan(pin_gbps) && pin_gbps > gbps && nw > 0 && (size_t)nw < sizeof f->evidence)
        snprintf(f->evidence + nw, sizeof f->evidence - (size_t)nw,
                 "; pinned H2D copies in this trace reach %.2f GB/s: the same bytes would take "
                 "%s on the device",
                 pin_gbps, tp_units_dur(b4, 32, (double)pg->bytes / pin_gbps));
    snprintf(f->advice, sizeof f->advice,
             "page-lock the host buffers (DataLoader(pin_memory=True), cudaHostAlloc / "
             "cudaHostRegister) and copy with non_blocking=True so the copy is asynchronous and "
             "can overlap compute");
    blame_source(d, &pg->bl, blame_sum(&pg->bl), "of it", f->source, sizeof f->source);
    if (pg->worst >= 0)
        append_stack(d, d->ev->stack[pg->worst], f);
    metric(f, "copies", (double)pg->n);
    metric(f, "bytes", (double)pg->bytes);
    metric(f, "device_ns", (double)pg->dev_ns);
    metric(f, "host_blocked_ns", (double)ivl_len(&pg->host));
    metric(f, "gbps", gbps);
    metric(f, "pinned_gbps", pin_gbps);
    metric(f, "window_ns", (double)d->win);
}

static void find_sync_h2d(dctx *d, copy_group *sg) {
    int64_t cost = group_cost(d, sg);
    double sev = share(cost, d->win);
    if (!sg->n || sev < MIN_SEVERITY)
        return;
    tp_finding *f = add_finding(d, "sync-h2d", sev);
    char b1[32], b2[32];
    snprintf(f->title, sizeof f->title,
             "sync-h2d: synchronous host-to-device copies block the host");
    snprintf(f->evidence, sizeof f->evidence,
             "%zu synchronous H2D copies (%s) from non-pageable memory; the host was blocked %s "
             "(%.1f%% %s) in %s",
             sg->n, tp_units_bytes(b1, 32, (double)sg->bytes),
             tp_units_dur(b2, 32, (double)ivl_len(&sg->host)),
             100 * share(ivl_len(&sg->host), d->win), window_words(d),
             sg->api_name ? tp_model_str(d->v->m, sg->api_name) : "the copy calls");
    snprintf(f->advice, sizeof f->advice,
             "use cudaMemcpyAsync / tensor.to(device, non_blocking=True) from pinned memory on a "
             "side stream, and synchronize with events only where the data is needed");
    blame_source(d, &sg->bl, blame_sum(&sg->bl), "of it", f->source, sizeof f->source);
    if (sg->worst >= 0)
        append_stack(d, d->ev->stack[sg->worst], f);
    metric(f, "copies", (double)sg->n);
    metric(f, "bytes", (double)sg->bytes);
    metric(f, "host_blocked_ns", (double)ivl_len(&sg->host));
    metric(f, "window_ns", (double)d->win);
}

static void find_copy_overlap(dctx *d) {
    ivl alone;
    ivl_combine(&d->copies, &d->kernels, 0, &alone);
    int64_t total = ivl_len(&d->copies), solo = ivl_len(&alone);
    double sev = share(solo, d->win);
    blame bl = {0};
    clear_seen(d);
    FOR_ROWS(d, i, row) {
        if (!d->v->gpu[i] || d->ev->cat[row] != TP_CAT_MEMCPY || d->v->ts[i] >= d->w1 ||
            vend(d->v, i) <= d->w0)
            continue;
        long c = cpu_call(d, row);
        if (c >= 0)
            blame_add(&bl, d->ev, enclosing(d->ev, c), vend(d->v, i) - d->v->ts[i]);
    }
    ivl_free(&alone);
    if (sev < MIN_SEVERITY)
        return;
    tp_finding *f = add_finding(d, "copy-not-overlapped", sev);
    char b1[32], b2[32];
    snprintf(f->title, sizeof f->title,
             "copy-not-overlapped: copies run while no kernel runs on any stream");
    snprintf(f->evidence, sizeof f->evidence,
             "copies occupy %s (%.1f%% %s); during %s of it (%.1f%% of the copy time) no kernel "
             "ran on any stream",
             tp_units_dur(b1, 32, (double)total), 100 * share(total, d->win), window_words(d),
             tp_units_dur(b2, 32, (double)solo), 100 * share(solo, total));
    snprintf(f->advice, sizeof f->advice,
             "prefetch the next batch: issue its copy on a separate stream from pinned memory "
             "(non_blocking=True) while the current step computes");
    blame_source(d, &bl, blame_sum(&bl), "of it", f->source, sizeof f->source);
    metric(f, "copy_ns", (double)total);
    metric(f, "not_overlapped_ns", (double)solo);
    metric(f, "window_ns", (double)d->win);
}

static void find_copies(dctx *d) {
    copy_group pg, pin, sg;
    memset(&pg, 0, sizeof pg), memset(&pin, 0, sizeof pin), memset(&sg, 0, sizeof sg);
    pg.worst = pin.worst = sg.worst = -1;
    clear_seen(d);
    FOR_ROWS(d, i, row) {
        if (!d->v->gpu[i] || d->ev->cat[row] != TP_CAT_MEMCPY ||
            d->ev->copy_kind[row] != TP_COPY_HTOD || d->v->ts[i] >= d->w1 || vend(d->v, i) <= d->w0)
            continue;
        long call = cpu_call(d, row);
        if (d->ev->src_kind[row] == TP_MEM_PAGEABLE)
            group_add(d, &pg, i, row, call);
        else if (d->ev->src_kind[row] == TP_MEM_PINNED)
            group_add(d, &pin, i, row, call);
        if (d->ev->src_kind[row] != TP_MEM_PAGEABLE && !copy_is_async(d, row, call))
            group_add(d, &sg, i, row, call);
    }
    find_pageable(d, &pg, &pin);
    find_sync_h2d(d, &sg);
    find_copy_overlap(d);
    ivl_free(&pg.dev), ivl_free(&pg.host), ivl_free(&pin.dev), ivl_free(&pin.host);
    ivl_free(&sg.dev), ivl_free(&sg.host);
}

/* ---------------------------------------------------------------- memory */

typedef struct {
    int64_t *t, *v;
    size_t n;
    int64_t peak;
} series;

static void series_push(series *s, size_t cap, int64_t t, int64_t v) {
    (void)cap;
    s->t[s->n] = t, s->v[s->n++] = v;
    s->peak = v > s->peak ? v : s->peak;
}

/* Allocated (which = 0) or reserved (1) bytes over time. Native: running sums of NVTX
 * regions (allocated), heaps (reserved) and device allocations (reserved when regions exist,
 * else allocated). Kineto: the device's "Total Allocated" / "Total Reserved" values. */
static void build_series(const tp_rank *r, int which, series *s) {
    const tp_memevents *m = &r->mem;
    int has_region = 0, has_heap = 0;
    for (size_t i = 0; i < m->n; i++) {
        has_region |=
            (m->kind[i] == TP_MEMEV_ALLOC || m->kind[i] == TP_MEMEV_FREE) && m->device[i] < 0;
        has_heap |= m->kind[i] == TP_MEMEV_HEAP;
    }
    s->t = tp_an_alloc(m->n + 1, sizeof *s->t);
    s->v = tp_an_alloc(m->n + 1, sizeof *s->v);
    s->n = 0, s->peak = 0;
    int64_t sum = 0;
    for (size_t i = 0; i < m->n; i++) {
        int ab = m->kind[i] == TP_MEMEV_ALLOC || m->kind[i] == TP_MEMEV_FREE;
        if (!r->native) {
            int64_t val = which ? m->total_reserved[i] : m->total_allocated[i];
            if (ab && m->device[i] >= 0 && val >= 0)
                series_push(s, m->n, m->ts[i], val);
            continue;
        }
        int take = which == 0 ? ab && (has_region ? m->device[i] < 0 : m->device[i] >= 0)
                   : has_heap ? m->kind[i] == TP_MEMEV_HEAP
                              : ab && has_region && m->device[i] >= 0;
        if (take)
            sum += m->bytes[i], series_push(s, m->n, m->ts[i], sum);
    }
}

/* Value at time t (after the last event at or before t); -1 when none yet. */
static int64_t series_at(const series *s, int64_t t) {
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->t[mid] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? s->v[lo - 1] : -1;
}

/* Samples at every step end, or at 8 even points over the series when there are < 4 steps. */
static size_t sample(const dctx *d, const series *s, int64_t *out, size_t cap) {
    size_t k = 0;
    if (d->n_step_end >= 4) {
        for (size_t i = 0; i < d->n_step_end && k < cap; i++)
            if (series_at(s, d->step_end[i]) >= 0)
                out[k++] = series_at(s, d->step_end[i]);
        return k;
    }
    if (s->n < 2)
        return 0;
    int64_t span = s->t[s->n - 1] - s->t[0]; /* up to 2^62: span * i could overflow */
    for (int i = 1; i <= 8 && k < cap; i++)
        out[k++] = series_at(s, s->t[0] + span / 8 * i + span % 8 * i / 8);
    return k;
}

static void find_growth(dctx *d) {
    series al, re;
    build_series(d->r, 0, &al);
    build_series(d->r, 1, &re);
    size_t cap = d->n_step_end > 8 ? d->n_step_end : 8;
    int64_t *sa = tp_an_alloc(cap, sizeof *sa), *sr = tp_an_alloc(cap, sizeof *sr);
    size_t ka = sample(d, &al, sa, cap), kr = sample(d, &re, sr, cap), rises = 0;
    for (size_t i = 1; i < ka; i++)
        rises += sa[i] > sa[i - 1];
    int64_t growth = ka >= 4 ? sa[ka - 1] - sa[0] : 0;
    double thresh = 0.1 * (double)al.peak > MIB ? 0.1 * (double)al.peak : MIB;
    if (ka >= 4 && (double)growth >= thresh && 2 * rises >= ka - 1) {
        tp_finding *f = add_finding(d, "memory-growth", share(growth, al.peak));
        char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32];
        snprintf(f->title, sizeof f->title,
                 "memory-growth: allocated device memory keeps rising across %s",
                 d->n_step_end >= 4 ? "steps" : "the trace");
        int nw = snprintf(f->evidence, sizeof f->evidence,
                          "allocated grew from %s to %s (+%s per %s) and rose in %zu of %zu "
                          "intervals; peak allocated %s",
                          tp_units_bytes(b1, 32, (double)sa[0]),
                          tp_units_bytes(b2, 32, (double)sa[ka - 1]),
                          tp_units_bytes(b3, 32, (double)growth / (double)(ka - 1)),
                          d->n_step_end >= 4 ? "step" : "interval", rises, ka - 1,
                          tp_units_bytes(b4, 32, (double)al.peak));
        if (kr >= 2 && nw > 0 && (size_t)nw < sizeof f->evidence)
            snprintf(f->evidence + nw, sizeof f->evidence - (size_t)nw,
                     "; reserved went from %s to %s", tp_units_bytes(b5, 32, (double)sr[0]),
                     tp_units_bytes(b6, 32, (double)sr[kr - 1]));
        snprintf(f->advice, sizeof f->advice,
                 "look for tensors kept across steps (losses or outputs appended to a list "
                 "without .detach()/.item(), hooks storing activations, growing caches); "
                 "torch.cuda.memory_snapshot() shows who holds them");
        metric(f, "growth_bytes", (double)growth);
        metric(f, "first_bytes", (double)sa[0]);
        metric(f, "last_bytes", (double)sa[ka - 1]);
        metric(f, "peak_allocated_bytes", (double)al.peak);
        metric(f, "peak_reserved_bytes", (double)re.peak);
    }
    free(sa), free(sr), free(al.t), free(al.v), free(re.t), free(re.v);
}

static void find_oom(dctx *d) {
    const tp_memevents *m = &d->r->mem;
    size_t first = m->n, fails = 0;
    for (size_t i = 0; i < m->n; i++)
        if (m->kind[i] == TP_MEMEV_ALLOC_FAIL)
            first = fails++ ? first : i;
    if (!fails)
        return;
    int64_t req = m->bytes[first], res = m->total_reserved[first];
    int64_t fr = res >= 0 && m->total_allocated[first] >= 0 ? res - m->total_allocated[first] : -1;
    int64_t big = m->largest_free[first];
    if (res <= 0) /* nothing reserved: the reporter did not know (a failed cudaMalloc via CUPTI) */
        res = fr = big = -1;
    int frag = fr >= 0 && fr >= req && (big < 0 || big < req);
    tp_finding *f = add_finding(d, frag ? "fragmentation-oom" : "oom", 1.0);
    snprintf(f->title, sizeof f->title, "%s",
             frag ? "fragmentation-oom: an allocation failed although enough memory was free, "
                    "in pieces too small"
                  : "oom: the device ran out of memory");
    char b1[32], b2[32], b3[32], b4[32];
    snprintf(f->evidence, sizeof f->evidence,
             "allocation of %s (%lld bytes) failed: %s reserved, %s free in cached blocks, "
             "largest free block %s%s; %zu failed allocation(s)",
             tp_units_bytes(b1, 32, (double)req), (long long)req,
             res >= 0 ? tp_units_bytes(b2, 32, (double)res) : "?",
             fr >= 0 ? tp_units_bytes(b3, 32, (double)fr) : "?",
             big >= 0 ? tp_units_bytes(b4, 32, (double)big) : "?",
             frag ? " (free memory exceeds the request but no free block fits)" : "", fails);
    snprintf(f->advice, sizeof f->advice, "%s",
             frag ? "set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (or max_split_size_mb); "
                    "do not keep activations or outputs alive across steps; keep batch shapes "
                    "stable (pad or bucket) so freed blocks fit the next request"
                  : "reduce memory per step: smaller batch with gradient accumulation, "
                    "activation checkpointing, mixed precision; free tensors kept across steps");
    long rg = range_at(d, m->ts[first]);
    if (rg >= 0)
        range_label(d, rg, f->source, sizeof f->source);
    append_stack(d, m->stack[first], f);
    if (f->source[0] == ';') /* no range: drop the separator */
        memmove(f->source, f->source + 2, strlen(f->source + 2) + 1);
    metric(f, "requested_bytes", (double)req);
    metric(f, "reserved_bytes", (double)res);
    metric(f, "free_bytes", (double)fr);
    metric(f, "largest_free_bytes", (double)big);
    metric(f, "failures", (double)fails);
    metric(f, "ts_ns", (double)m->ts[first]);
}

/* ---------------------------------------------------------------- entry */

static const char *const order[] = {
    "fragmentation-oom", "oom",      "input-bound",         "pageable-h2d",    "sync-stall",
    "launch-bound",      "sync-h2d", "copy-not-overlapped", "low-utilization", "memory-growth"};

static size_t order_of(const char *id) {
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
        if (strcmp(order[i], id) == 0)
            return i;
    return sizeof order / sizeof order[0];
}

static int cmp_finding(const void *a, const void *b) {
    const tp_finding *x = a, *y = b;
    if (x->severity != y->severity)
        return x->severity > y->severity ? -1 : 1;
    size_t p = order_of(x->id), q = order_of(y->id);
    return (p > q) - (p < q);
}

void tp_diagnose_run(const tp_an_view *v, tp_diagnosis *out) {
    memset(out, 0, sizeof *out);
    out->utilization = NAN;
    dctx d;
    memset(&d, 0, sizeof d);
    d.v = v, d.r = v->r, d.ev = &v->r->ev, d.out = out;
    d.seen = tp_an_alloc(d.ev->n + 1, 1);
    uint32_t max_name = 0;
    for (size_t i = 0; i < d.ev->n; i++)
        max_name = d.ev->name[i] > max_name ? d.ev->name[i] : max_name;
    d.ncls = tp_an_alloc((size_t)max_name + 1, 1);
    find_threads_and_steps(&d);
    set_window(&d);
    if (d.win > 0) {
        idle_split s;
        collect_sets(&d);
        split_idle(&d, &s);
        out->utilization = 1.0 - share(s.idle, d.win);
        find_input_bound(&d, &s);
        find_sync(&d);
        int launch = find_launch_bound(&d, &s);
        find_copies(&d);
        if (!launch) /* it already owns the unexplained idle */
            find_low_util(&d, &s);
        ivl_free(&s.other_set);
    }
    find_oom(&d);
    find_growth(&d);
    if (out->n > 1)
        qsort(out->f, out->n, sizeof *out->f, cmp_finding);
    ivl_free(&d.steps), ivl_free(&d.busy), ivl_free(&d.idle), ivl_free(&d.sync);
    ivl_free(&d.data), ivl_free(&d.kernels), ivl_free(&d.copies);
    free(d.step_end), free(d.seen), free(d.ncls);
    tp_reader_close(d.rd);
    tp_symbolizer_close(d.sym);
}

void tp_diagnose_free(tp_diagnosis *d) {
    if (!d)
        return;
    free(d->f);
    memset(d, 0, sizeof *d);
}

const char *tp_diag_level(double severity) {
    return severity >= 0.25 ? "high" : severity >= 0.10 ? "medium" : "low";
}

const tp_finding *tp_diagnosis_find(const tp_diagnosis *d, const char *id) {
    for (size_t i = 0; d && i < d->n; i++)
        if (strcmp(d->f[i].id, id) == 0)
            return &d->f[i];
    return NULL;
}

double tp_finding_metric(const tp_finding *f, const char *key) {
    for (size_t i = 0; f && i < f->n_metrics; i++)
        if (strcmp(f->metrics[i].key, key) == 0)
            return f->metrics[i].value;
    return NAN;
}
