/* tp_diag_ctx: building the shared state of a diagnosis (see the header): threads, steps,
 * window, interval sets, idle split; and the row predicates and finding helpers the rules
 * share. */
#include "tp_diag_ctx.h"

#include "tp_an_samples.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_an_enclosing.h"
#include "tp_an_host.h"
#include "tp_an_stats.h"
#include "tp_mem.h"

/* ---------------------------------------------------------------- names */

unsigned tp_diag_name_class_new(const tp_diag_ctx *d, size_t row) {
    uint32_t id = d->ev->name[row];
    if (!d->ncls[id]) {
        const char *s = tp_model_str(d->v->m, id);
        d->ncls[id] = (uint8_t)(TP_DIAG_NC_KNOWN | (tp_an_is_step_name(s) ? TP_DIAG_NC_STEP : 0) |
                                (tp_an_host_data_name(s) ? TP_DIAG_NC_DATA : 0) |
                                (strstr(s, "Synchronize") ? TP_DIAG_NC_SYNC : 0) |
                                (strstr(s, "Wait") ? TP_DIAG_NC_WAIT : 0));
    }
    return d->ncls[id];
}

/* ---------------------------------------------------------------- rows */

static int cmp_thread(const tp_diag_thread *t, int64_t pid, int64_t tid) {
    if (t->pid != pid)
        return t->pid < pid ? -1 : 1;
    return (t->tid > tid) - (t->tid < tid);
}

/* Index of the first thread >= (pid, tid) in the sorted list. */
static size_t thread_pos(const tp_diag_ctx *d, int64_t pid, int64_t tid) {
    size_t lo = 0, hi = d->n_th;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cmp_thread(&d->th[mid], pid, tid) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int tp_diag_launch_thread(const tp_diag_ctx *d, int64_t pid, int64_t tid) {
    if (!d->n_th)
        return 1;
    size_t k = thread_pos(d, pid, tid);
    return k < d->n_th && cmp_thread(&d->th[k], pid, tid) == 0;
}

static void note_launch_thread(tp_diag_ctx *d, int64_t pid, int64_t tid, size_t launches) {
    size_t k = thread_pos(d, pid, tid);
    if (k < d->n_th && cmp_thread(&d->th[k], pid, tid) == 0) {
        d->th[k].launches += launches;
        return;
    }
    tp_an_grow((void **)&d->th, &d->cap_th, d->n_th + 1, sizeof *d->th);
    memmove(d->th + k + 1, d->th + k, (d->n_th - k) * sizeof *d->th);
    d->th[k] = (tp_diag_thread){pid, tid, launches, d->n_th};
    d->n_th++;
}

/* The launches counted per place (many rows share one), noted per thread in the order each
 * place was first seen: the threads' counts and first-seen order are those of noting each
 * launch on its own, at one thread search per place instead of per kernel. `first` is the
 * view row of the place's first launch (SIZE_MAX: none yet): the order of first sight in a
 * pass in view order, whatever order the launches are tallied in. */
typedef struct {
    size_t *count, *first, seen; /* per place; seen: places with a launch */
} place_tally;

static void tally_open(place_tally *t, size_t n_places) {
    t->count = tp_an_alloc(n_places + 1, sizeof *t->count);
    t->first = tp_an_alloc(n_places + 1, sizeof *t->first);
    memset(t->first, 0xff, (n_places + 1) * sizeof *t->first);
    t->seen = 0;
}

static void tally_add(place_tally *t, size_t place, size_t at) {
    if (t->first[place] == SIZE_MAX)
        t->seen++;
    if (at < t->first[place])
        t->first[place] = at;
    t->count[place]++;
}

static void tally_note(tp_diag_ctx *d, place_tally *t) {
    size_t np = d->ev->places.n, n = 0;
    size_t *by_first = tp_an_alloc(t->seen + 1, sizeof *by_first);
    for (size_t p = 0; p < np; p++)
        if (t->first[p] != SIZE_MAX) { /* by first sight (a few places: insertion) */
            size_t k = n++;
            for (; k > 0 && t->first[by_first[k - 1]] > t->first[p]; k--)
                by_first[k] = by_first[k - 1];
            by_first[k] = p;
        }
    for (size_t k = 0; k < n; k++) {
        const tp_ev_place *pl = &d->ev->places.v[by_first[k]];
        note_launch_thread(d, pl->pid, pl->tid, t->count[by_first[k]]);
    }
    free(by_first), free(t->count), free(t->first);
}

/* d->place_launch, once the training threads are known. */
static void mark_launch_places(tp_diag_ctx *d) {
    size_t np = d->ev->places.n;
    d->place_launch = tp_an_alloc(np + 1, 1);
    for (size_t p = 0; p < np; p++)
        d->place_launch[p] =
            (uint8_t)tp_diag_launch_thread(d, d->ev->places.v[p].pid, d->ev->places.v[p].tid);
}

const tp_an_memuse *tp_diag_memuse(tp_diag_ctx *d) {
    if (d->mem_given)
        return d->mem_given;
    if (!d->mem) {
        d->mem = tp_an_alloc(1, sizeof *d->mem);
        tp_an_memuse_run(d->v, d->mem);
    }
    return d->mem;
}

const tp_an_host *tp_diag_host(tp_diag_ctx *d) {
    if (!d->host) {
        d->host = tp_an_alloc(1, sizeof *d->host);
        tp_an_host_run(d->v, d->host);
    }
    return d->host;
}

void tp_diag_clear_seen(tp_diag_ctx *d) {
    if (!d->rows_once)
        memset(d->seen, 0, d->ev->n + 1);
}

/* Whether entry e of the correlation index has the run's correlation (its code when narrow). */
static inline __attribute__((always_inline)) int
same_corr(const tp_diag_ctx *d, size_t e, int narrow, uint32_t code, int64_t corr) {
    uint32_t r = d->r->by_corr[e];
    return narrow ? d->ev->corr32[r] == code : tp_ev_corr(d->ev, r) == corr;
}

/* d->cpu_call: per run of one correlation (>= 0) in the index, its first row (in row order)
 * that is an API call on no stream, for every row of the run. When view row i is model row
 * i (identity), the kernels' launches are tallied on the way (`t`; NULL: not here): a GPU
 * kernel row with a call counts one launch for the call's place, as find_threads_and_steps's
 * pass over the rows counts it, without that pass. `narrow`: the correlations are their
 * 32-bit codes (no wide id, no high bits in a place: codes and ids map one to one), so the
 * runs are found by comparing the codes, without tp_ev_corr's tests per row. A run whose
 * first row is the call (a launch's API row precedes its kernel: nearly every run) is
 * written in one walk that finds its end on the way; another run takes two walks (its call,
 * then its rows). */
/* Row r's answer `call` into d->cpu_call, or (`sparse`) into d->call_val when r is on a
 * stream (the other rows are never asked). */
static inline __attribute__((always_inline)) void call_put(tp_diag_ctx *d, int sparse, uint32_t r,
                                                           uint32_t call) {
    if (!sparse) {
        d->cpu_call[r] = call;
        return;
    }
    uint8_t o = d->call_off[r];
    if (o != 0xff)
        d->call_val[d->call_base[r >> 6] + o] = call;
}

static inline __attribute__((always_inline)) void cpu_calls_of(tp_diag_ctx *d, place_tally *t,
                                                               int narrow, int twos, int sparse) {
/* entry e in run s's (twos: every run is two entries, tp_an_view.by_corr_twos, no compare) */
#define IN_RUN(e) (twos ? (e) < s + 2 : same_corr(d, (e), narrow, code, corr))
    const uint32_t *bc = d->r->by_corr, *c32 = d->ev->corr32;
    const uint8_t *cat = d->ev->cat, *kind = d->v->kind; /* view row r is model row r */
    for (size_t s = 0, e, n = d->r->n_by_corr; s < n; s = e) {
        if (twos) { /* a run of two whose first row is the call: no correlation read (the
                       index's ids are >= 0), no loop (lb2k: every run) */
            uint32_t a = bc[s], b = bc[s + 1];
            size_t pa = tp_ev_place_index(d->ev, a);
            if (tp_diag_is_api(cat[a]) && d->ev->places.v[pa].stream == -1) {
                call_put(d, sparse, a, a + 1), call_put(d, sparse, b, a + 1); /* a: an API row */
                if (t && (kind[b] & TP_AN_VIEW_GPU) && cat[b] == TP_CAT_KERNEL)
                    tally_add(t, pa, b);
                e = s + 2;
                continue;
            }
        }
        uint32_t r0 = bc[s], code = c32[r0];
        int64_t corr =
            narrow ? (code == TP_EV_U32_NONE ? -1 : (int64_t)code) : tp_ev_corr(d->ev, r0);
        size_t place = tp_ev_place_index(d->ev, r0); /* the call's when r0 is it: read once */
        if (corr >= 0 && tp_diag_is_api(cat[r0]) && d->ev->places.v[place].stream == -1) {
            uint32_t call = r0 + 1;
            call_put(d, sparse, r0, call); /* an API row: not a kernel */
            for (e = s + 1; e < n && IN_RUN(e); e++) {
                uint32_t r = bc[e];
                call_put(d, sparse, r, call);
                if (t && (kind[r] & TP_AN_VIEW_GPU) && cat[r] == TP_CAT_KERNEL)
                    tally_add(t, place, r);
            }
            continue;
        }
        uint32_t call = 0;
        for (e = s; e < n && (e == s || IN_RUN(e)); e++)
            if (!call && tp_diag_is_api(cat[bc[e]]) && tp_ev_stream(d->ev, bc[e]) == -1)
                call = bc[e] + 1;
        if (corr < 0)
            continue;
        if (!t || !call) {
            for (size_t k = s; k < e; k++)
                call_put(d, sparse, bc[k], call);
            continue;
        }
        place = tp_ev_place_index(d->ev, call - 1); /* the call's, for its kernels */
        for (size_t k = s; k < e; k++) { /* the run's rows: their call, the kernels' tally */
            uint32_t r = bc[k];
            call_put(d, sparse, r, call);
            if ((kind[r] & TP_AN_VIEW_GPU) && cat[r] == TP_CAT_KERNEL)
                tally_add(t, place, r);
        }
    }
#undef IN_RUN
}

/* The sparse answers' places (tp_diag_ctx.call_val): per block of 64 model rows its first
 * row on a stream's index, per row its place after it. */
static void sparse_open(tp_diag_ctx *d) {
    const tp_events *ev = d->ev;
    size_t n = ev->n, nb = (n + 63) / 64, k = 0;
    /* per place id below TP_EV_PLACE_WIDE: on a stream (a row's test is one byte read) */
    size_t np = ev->places.n < TP_EV_PLACE_WIDE ? ev->places.n : TP_EV_PLACE_WIDE;
    uint8_t *on_stream = tp_an_alloc(np + 1, 1);
    for (size_t p = 0; p < np; p++)
        on_stream[p] = ev->places.v[p].stream != -1;
    d->call_base = tp_an_alloc(nb + 1, sizeof *d->call_base);
    d->call_off = tp_an_tmp(d->v, n + 1, 1);
    for (size_t b = 0; b < nb; b++) {
        d->call_base[b] = (uint32_t)k;
        unsigned j = 0;
        for (size_t r = b * 64, e = r + 64 < n ? r + 64 : n; r < e; r++) {
            uint16_t pk = ev->place[r];
            unsigned on = pk != TP_EV_PLACE_WIDE ? on_stream[pk] : tp_ev_stream(ev, r) != -1;
            d->call_off[r] = on ? (uint8_t)j : 0xff;
            j += on;
        }
        k += j;
    }
    free(on_stream);
    d->call_val = tp_an_tmp0(d->v, k + 1, sizeof *d->call_val);
}

static void find_cpu_calls(tp_diag_ctx *d, place_tally *t) {
    /* the view's twos are of the rank's index, which is what cpu_calls_of walks */
    if (!d->identity) { /* (t: identity only) */
        sparse_open(d);
        if (!d->ev->corr_hi_any && !d->ev->wide_corr.n)
            cpu_calls_of(d, NULL, 1, 0, 1);
        else
            cpu_calls_of(d, NULL, 0, 0, 1);
        return;
    }
    d->cpu_call = tp_an_tmp0(d->v, d->ev->n + 1, sizeof *d->cpu_call); /* view scratch */
    if (d->v->by_corr == d->r->by_corr && d->v->by_corr_twos)
        cpu_calls_of(d, t, 1, 1, 0);
    else if (!d->ev->corr_hi_any && !d->ev->wide_corr.n)
        cpu_calls_of(d, t, 1, 0, 0);
    else
        cpu_calls_of(d, t, 0, 0, 0);
}

int tp_diag_host_sync(const tp_diag_ctx *d, size_t row) {
    if (tp_diag_is_api(d->ev->cat[row]) || tp_ev_stream(d->ev, row) == -1)
        return tp_diag_row_launch_thread(d, row);
    return tp_diag_cpu_call(d, row) < 0;
}

/* ---------------------------------------------------------------- threads, steps, window */

/* The r->threads bucket of the thread that launched the most kernels (the first seen among
 * equals), -1 when none has one. */
static long main_bucket(const tp_diag_ctx *d) {
    const tp_diag_thread *best = NULL;
    long bucket = -1;
    for (size_t t = 0; t < d->n_th; t++) {
        const tp_diag_thread *x = &d->th[t];
        if (best && (x->launches < best->launches ||
                     (x->launches == best->launches && x->first > best->first)))
            continue;
        for (size_t b = 0; b < d->r->threads.n; b++)
            if (d->r->threads.key[b] == x->tid && d->r->threads.key2[b] == x->pid) {
                best = x, bucket = (long)b;
                break;
            }
    }
    return bucket;
}

/* The training threads are those that launch kernels (loader workers that only copy or wait
 * on events are not); without correlated kernels, only the thread of the first launch call in
 * the view (what the reports have always done; the comment here used to say every launching
 * thread, which would also take a loader worker whose copies are launch calls).
 * `t`: the kernels' launches, tallied by find_cpu_calls unless t->count is NULL. */
static void find_threads(tp_diag_ctx *d, place_tally *t) {
    if (!t->count) {
        tally_open(t, d->ev->places.n);
        tp_diag_clear_seen(d);
        TP_DIAG_FOR_ROWS(d, i, row) {
            long c = tp_an_view_gpu(d->v, i) && d->ev->cat[row] == TP_CAT_KERNEL
                         ? tp_diag_cpu_call(d, row)
                         : -1;
            if (c >= 0)
                tally_add(t, tp_ev_place_index(d->ev, (size_t)c), i);
        }
    }
    if (!t->seen) { /* the first launching row's thread, counted with 1 launch */
        for (size_t i = 0; i < d->v->n; i++)
            if (!tp_an_view_gpu(d->v, i) &&
                (d->ev->flags[tp_an_view_row(d->v, i)] & TP_EVF_LAUNCH)) {
                tally_add(t, tp_ev_place_index(d->ev, tp_an_view_row(d->v, i)), i);
                break;
            }
    }
    tally_note(d, t);
    mark_launch_places(d);
    d->main_bucket = main_bucket(d);
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Steps nested in a step (a "step" range inside ProfilerStep#N) are the same step: only the
 * outermost count, and their ends are the sample points for memory growth. */
static void count_steps(tp_diag_ctx *d) {
    int64_t *start, *end;
    size_t n = tp_an_outer_steps(d->steps.a, d->steps.b, d->steps.n, &start, &end);
    double *dur = tp_an_alloc(n + 1, sizeof *dur), sum = 0;
    for (size_t i = 0; i < n; i++) {
        dur[i] = (double)(end[i] - start[i]);
        sum += dur[i];
    }
    /* The step time distribution: one definition for the report, diff and the cross-rank
     * table (stragglers are judged on the median, which one slow first step cannot move). */
    d->out->step_mean_ns = n ? sum / (double)n : NAN;
    tp_an_percentile2(dur, n, 50, 90, &d->out->step_p50_ns, &d->out->step_p90_ns);
    free(dur);
    /* Warm-up: a leading run of steps far over the median, at most a tenth of them (one of
     * under 20 steps), leaving at least 3. */
    double med = d->out->step_p50_ns;
    size_t most = n >= 20 ? n / 10 : 1, k = 0;
    while (n >= 4 && k < most && n - k > 3 && med > 0 &&
           (double)(end[k] - start[k]) > TP_DIAG_WARMUP_RATIO * med)
        k++;
    d->out->n_warmup = k;
    /* the steps by start, kept in the result (the step-time breakdown reads them) */
    d->out->step_start = start;
    d->out->step_end = tp_an_alloc(n + 1, sizeof *end);
    memcpy(d->out->step_end, end, n * sizeof *end);
    d->step_end = end;
    d->n_step_end = n;
    tp_an_qsort(d->step_end, d->n_step_end, sizeof *d->step_end, cmp_i64);
    d->out->n_steps = d->n_step_end;
}

/* The window: the union of the steps' span, else the GPU span [g0, g1). */
static void set_window(tp_diag_ctx *d, int64_t g0, int64_t g1) {
    count_steps(d);
    tp_an_ivset_norm(&d->steps, INT64_MIN, INT64_MAX);
    if (d->steps.n) {
        d->w0 = d->steps.a[0], d->w1 = d->steps.b[d->steps.n - 1];
        if (d->out->n_warmup) /* from the first steady step on */
            d->w0 = d->out->step_start[d->out->n_warmup];
    } else if (g0 < g1) {
        d->w0 = g0, d->w1 = g1;
    }
    if (g0 >= g1) /* no device activity: nothing to judge in time */
        d->w0 = d->w1 = 0;
    d->win = d->w1 - d->w0;
    d->out->window_ns = d->win;
}

/* ---------------------------------------------------------------- interval sets */

/* A launch call of a training thread (launch-bound counts those in the window). */
static inline int training_launch(const tp_diag_ctx *d, size_t i, size_t row) {
    return !tp_an_view_gpu(d->v, i) && (d->ev->flags[row] & TP_EVF_LAUNCH) &&
           tp_diag_row_launch_thread(d, row);
}

/* Appends [a, b) to a set fed in start order while the pass's rows come in time order: an
 * interval that starts inside or at the end of the last run widens it (the union is the
 * same), else it opens a run. With every start in order the runs are then the set's
 * normalized form, unclipped (clip_ordered clips it); else tp_an_ivset_norm sorts and
 * merges the runs as it would the intervals (same union, same normalized set). */
static inline void add_ordered(tp_an_ivset *s, int64_t a, int64_t b) {
    if (b <= a)
        return;
    size_t l = s->n - 1;
    if (s->n && a <= s->b[l] && a >= s->a[l]) {
        if (b > s->b[l])
            s->b[l] = b;
    } else {
        tp_an_ivset_push(s, a, b);
    }
}

/* A normalized set clipped to [lo, hi) (lo < hi): the runs wholly outside dropped from each
 * end, the two end runs cut (runs neither touch nor overlap before, nor after); what
 * tp_an_ivset_norm makes of it, without its pass over every run. The runs before the window
 * stay where they are: the clipped set is runs [k, s->n) with k returned (clip_ordered moves
 * them to the front). */
static size_t clip_ordered_at(tp_an_ivset *s, int64_t lo, int64_t hi) {
    size_t k = 0, m = s->n;
    while (k < m && s->b[k] <= lo)
        k++;
    while (m > k && s->a[m - 1] >= hi)
        m--;
    if (m > k) {
        s->a[k] = s->a[k] > lo ? s->a[k] : lo;
        s->b[m - 1] = s->b[m - 1] < hi ? s->b[m - 1] : hi;
    }
    s->n = m;
    return k;
}

static void clip_ordered(tp_an_ivset *s, int64_t lo, int64_t hi) {
    size_t k = clip_ordered_at(s, lo, hi);
    if (k && s->n > k) {
        memmove(s->a, s->a + k, (s->n - k) * sizeof *s->a);
        memmove(s->b, s->b + k, (s->n - k) * sizeof *s->b);
    }
    s->n -= k;
    tp_an_ivset_fit(s);
}

/* One pass over the rows, before the window is known: the steps, the GPU span, and the sets
 * (unclipped: clip_sets clips them to the window after), the host syncs, the training
 * threads' launch calls (all of them: *n_launch) and whether the rows visited come in time
 * order (*asc). A GPU row's duplicates in an HTA-compatible view have its times, so the span
 * over the rows visited is the span over every view row. The tests are those of
 * tp_diag_is_sync_row and the data-loading test, split by side: on a GPU row only a sync
 * category can hold (no data-loading set), and a CPU row's name class is read once. */
typedef struct {
    int64_t lo, hi, prev; /* the GPU span; the last start */
    size_t nl;            /* the training threads' launch calls */
    int up;               /* the starts ascend */
    int64_t ka, kb;       /* the kernels' run being merged, not yet in d->kernels (none yet:
                             INT64_MIN twice, which a first kernel widens into its own) */
    int64_t chi;          /* the latest end of a copy so far */
    size_t kc;            /* the first copy run that may overlap it (copies_near's cursor) */
} collect_state;

/* Whether the kernels' run [ka, kb), closed (no later start falls inside it), overlaps a copy
 * run, while the rows come in time order: every copy that starts before kb has been seen
 * then, and the copies' runs so far are disjoint and sorted, so the first run ending after ka
 * decides. The cursor stops at the last run, which a later copy may still widen. */
static inline int copies_near(const tp_diag_ctx *d, collect_state *st, int64_t ka, int64_t kb) {
    const tp_an_ivset *c = &d->copies;
    while (st->kc + 1 < c->n && c->b[st->kc] <= ka)
        st->kc++;
    return st->kc < c->n && c->b[st->kc] > ka && c->a[st->kc] < kb;
}

/* A kernel row [a, b) in time order, merged as add_ordered would merge it into d->kernels,
 * but a run is kept only when it overlaps a copy: the kernels set is read only as "copies
 * less kernels" (copy-not-overlapped), which a run that overlaps no copy does not change
 * (clipped to the window or not). On a launch-bound trace that keeps a few thousand runs of
 * millions (16 bytes each: 38 MB of fresh pages on 20,000 steps, at the report's peak). A run
 * that starts after every copy's end so far (chi: the usual case, tested in registers) needs
 * no look at the copies. Out of time order the runs kept mean nothing (a start before ka is
 * merged as if it were not): collect_sets merges every kernel again. */
static inline void add_kernel(tp_diag_ctx *d, collect_state *st, int64_t a, int64_t b) {
    if (b <= a)
        return;
    if (a <= st->kb) {
        st->kb = b > st->kb ? b : st->kb;
        return;
    }
    if (st->chi > st->ka && copies_near(d, st, st->ka, st->kb))
        tp_an_ivset_push(&d->kernels, st->ka, st->kb);
    st->ka = a, st->kb = b;
}

/* A host sync row: its interval in d->sync, view row i in d->sync_at. */
static inline void add_sync(tp_diag_ctx *d, size_t i, int64_t a, int64_t b) {
    add_ordered(&d->sync, a, b);
    tp_an_grow((void **)&d->sync_at, &d->cap_sync_at, d->n_sync_at + 1, sizeof *d->sync_at);
    d->sync_at[d->n_sync_at++] = i;
}

/* collect_sets' work for a CPU row: its times are read only where a set takes them (a step,
 * data loading, a sync: a few rows), not for every row. */
static inline __attribute__((always_inline)) void
collect_cpu_row(tp_diag_ctx *d, collect_state *st, size_t i, size_t row, uint8_t cat) {
    const tp_an_view *v = d->v;
    unsigned nc = tp_diag_name_class(d, row);
    int api = tp_diag_is_api(cat);
    if ((nc & (TP_DIAG_NC_STEP | TP_DIAG_NC_DATA)) && tp_an_is_range(cat, TP_AN_RANGES_ALL) &&
        tp_diag_row_launch_thread(d, row)) {
        if (nc & TP_DIAG_NC_STEP)
            tp_an_ivset_add(&d->steps, tp_an_view_ts(v, i), tp_diag_vend(v, i));
        if (nc & TP_DIAG_NC_DATA) {
            tp_an_grow((void **)&d->data_at, &d->cap_data_at, d->n_data_at + 1, sizeof *d->data_at);
            d->data_at[d->n_data_at++] = i;
        }
    }
    st->nl += (d->ev->flags[row] & TP_EVF_LAUNCH) && tp_diag_row_launch_thread(d, row);
    int sync =
        api ? (nc & TP_DIAG_NC_SYNC) != 0 : cat == TP_CAT_CUDA_SYNC && !(nc & TP_DIAG_NC_WAIT);
    if (!api && cat != TP_CAT_CUDA_SYNC && (nc & TP_DIAG_NC_DATA) && /* not a sync row */
        tp_diag_row_launch_thread(d, row))
        add_ordered(&d->data, tp_an_view_ts(v, i), tp_diag_vend(v, i));
    if (sync && tp_diag_host_sync(d, row))
        add_sync(d, i, tp_an_view_ts(v, i), tp_diag_vend(v, i));
}

/* collect_sets' work for view row i, model row `row`; `track`: test that the starts ascend
 * (0: known). */
static inline __attribute__((always_inline)) void collect_row(tp_diag_ctx *d, collect_state *st,
                                                              size_t i, size_t row, int track) {
    uint8_t cat = d->ev->cat[row];
    if (track) {
        int64_t a = tp_an_view_ts(d->v, i);
        st->up &= a >= st->prev;
        st->prev = a;
    }
    if (!tp_an_view_gpu(d->v, i)) {
        collect_cpu_row(d, st, i, row, cat);
        return;
    }
    int64_t a = tp_an_view_ts(d->v, i), b = a + tp_diag_vdur(d->v, i); /* tp_diag_vend */
    st->lo = a < st->lo ? a : st->lo;
    st->hi = b > st->hi ? b : st->hi;
    add_ordered(&d->busy, a, b);
    if (cat == TP_CAT_KERNEL)
        add_kernel(d, st, a, b);
    else if (cat == TP_CAT_MEMCPY) {
        add_ordered(&d->copies, a, b);
        st->chi = b > st->chi ? b : st->chi;
    }
    if ((tp_diag_is_api(cat) || cat == TP_CAT_CUDA_SYNC) && tp_diag_is_sync_row(d, row) &&
        tp_diag_host_sync(d, row))
        add_sync(d, i, a, b);
}

static void collect_sets(tp_diag_ctx *d, int64_t *g0, int64_t *g1, size_t *n_launch, int *asc) {
    collect_state st = {INT64_MAX, INT64_MIN, INT64_MIN, 0, 1, INT64_MIN, INT64_MIN, INT64_MIN, 0};
    /* busy takes at most a run per GPU row: its room at once, not doubled from 16 (each
     * step's block below 256 KiB given back into the heap, resident beside the next) */
    tp_an_ivset_bound(&d->busy, d->v->n_gpu + 1);
    if (d->identity && tp_an_view_ts_model(d->v)) { /* every model row at its own time: they
                                                     ascend (tp_model_finish sorts them) */
        for (size_t i = 0, n = d->v->n; i < n; i++)
            collect_row(d, &st, i, i, 0);
    } else if (d->rows_once) { /* no seen test: the loop of TP_DIAG_FOR_ROWS without it */
        for (size_t i = 0, n = d->v->n; i < n; i++)
            collect_row(d, &st, i, tp_an_view_row(d->v, i), 1);
    } else {
        tp_diag_clear_seen(d);
        TP_DIAG_FOR_ROWS(d, i, row) {
            collect_row(d, &st, i, row, 1);
        }
    }
    if (st.up) { /* the last run: later copies cannot come, kept as it is */
        add_ordered(&d->kernels, st.ka, st.kb);
    } else { /* add_kernel's runs assumed time order: every kernel that overlaps a copy, as
                add_ordered takes them (tp_an_ivset_norm then sorts and merges them); the
                others do not change "copies less kernels" (add_kernel), and all of them were
                the diagnosis's largest set on a compat view (16 bytes a kernel, and the
                norm's copy: ~0.35 MiB on hta_df_index_resolver) */
        d->kernels.n = 0;
        tp_an_ivset_norm(&d->copies, INT64_MIN, INT64_MAX); /* clip_sets' norm: the same */
        tp_diag_clear_seen(d);
        TP_DIAG_FOR_ROWS(d, i, row) {
            if (tp_an_view_gpu(d->v, i) && d->ev->cat[row] == TP_CAT_KERNEL &&
                tp_an_ivset_overlaps(&d->copies, tp_an_view_ts(d->v, i), tp_diag_vend(d->v, i)))
                add_ordered(&d->kernels, tp_an_view_ts(d->v, i), tp_diag_vend(d->v, i));
        }
    }
    *g0 = st.lo, *g1 = st.hi, *n_launch = st.nl, *asc = st.up;
}

/* The training threads' launch calls that start in the window, of the n_launch of them in
 * all: with the rows in time order (asc), those before it and after it are left out by a
 * walk from each end, over the rows outside the window only; else a pass over every row. */
static size_t launches_in_window(const tp_diag_ctx *d, size_t n_launch, int asc) {
    size_t n = 0;
    if (asc && d->rows_once) {
        size_t lo = 0, hi = d->v->n;
        for (; lo < hi && tp_an_view_ts(d->v, lo) < d->w0; lo++)
            n_launch -= training_launch(d, lo, tp_an_view_row(d->v, lo));
        for (; hi > lo && tp_an_view_ts(d->v, hi - 1) >= d->w1; hi--)
            n_launch -= training_launch(d, hi - 1, tp_an_view_row(d->v, hi - 1));
        return n_launch;
    }
    tp_diag_clear_seen((tp_diag_ctx *)d);
    TP_DIAG_FOR_ROWS(d, i, row) {
        n += tp_an_view_ts(d->v, i) >= d->w0 && tp_an_view_ts(d->v, i) < d->w1 &&
             training_launch(d, i, row);
    }
    return n;
}

/* The sets to the window, the idle time, the launches in the window; without a window
 * (win <= 0) nothing is kept of the pass. */
static void clip_sets(tp_diag_ctx *d, size_t n_launch, int asc) {
    if (d->win <= 0) {
        d->busy.n = d->kernels.n = d->copies.n = d->sync.n = d->data.n = 0;
        d->n_sync_at = d->n_data_at = 0;
        return;
    }
    d->n_launch_win = launches_in_window(d, n_launch, asc);
    tp_an_ivset *sets[] = {&d->kernels, &d->copies, &d->sync, &d->data};
    for (size_t k = 0; k < sizeof sets / sizeof *sets; k++)
        if (asc) /* the pass merged them in order: normalized already */
            clip_ordered(sets[k], d->w0, d->w1);
        else
            tp_an_ivset_norm(sets[k], d->w0, d->w1);
    /* busy, read once by split_idle, from its first run in the window: a run per GPU row
     * (millions) is not moved to the front for the few before the window */
    if (asc)
        d->busy_from = clip_ordered_at(&d->busy, d->w0, d->w1);
    else
        tp_an_ivset_norm(&d->busy, d->w0, d->w1);
}

/* A normalized set read by split_idle's walk, with its cursor, and the split's sums and
 * other_set's runs as they are written: locals, not the context's fields, so that the walk
 * keeps them in registers (each store of a run may alias a set's int64 fields or size_t
 * counts, which made the compiler read them again per idle gap). The two helpers below are
 * always inline: with two call sites each GCC called them (+6 M instructions on lb2k). */
typedef struct {
    const int64_t *a, *b;
    size_t n, k; /* runs; the first that may overlap (kept across calls, a ascending) */
} split_runs;

typedef struct {
    int64_t sync, data, shortg, other;
    int64_t *oa, *ob; /* other_set's arrays, with room for every piece (bounded before) */
    size_t on;
} split_acc;

/* One piece of idle time outside syncs and data loading: in shortg when its idle run is a
 * short gap, else a run of other_set. */
static inline __attribute__((always_inline)) void rest_piece(split_acc *s, int short_gap, int64_t a,
                                                             int64_t b) {
    if (short_gap) {
        s->shortg = tp_an_add(s->shortg, b - a);
    } else { /* other: other_set's length, summed in its run order (tp_an_ivset_len's) */
        s->oa[s->on] = a, s->ob[s->on] = b, s->on++;
        s->other = tp_an_add(s->other, b - a);
    }
}

/* [a, b) (idle, outside syncs) minus the data-loading runs: their overlap counted in
 * s->data, the pieces left to rest_piece, as tp_an_ivset_minus walks it. */
static inline __attribute__((always_inline)) void
nosync_piece(split_runs *data, split_acc *s, int short_gap, int64_t a, int64_t b) {
    if (data->k == data->n) { /* no data-loading run left (most traces have none) */
        rest_piece(s, short_gap, a, b);
        return;
    }
    while (data->k < data->n && data->b[data->k] <= a)
        data->k++;
    for (size_t x = data->k; x < data->n && data->a[x] < b; x++) {
        int64_t ya = data->a[x] > a ? data->a[x] : a, yb = data->b[x] < b ? data->b[x] : b;
        if (yb > ya)
            s->data = tp_an_add(s->data, yb - ya);
        if (ya > a)
            rest_piece(s, short_gap, a, ya);
        a = yb;
    }
    if (b > a)
        rest_piece(s, short_gap, a, b);
}

/* Idle that began while the host was blocked in a sync, for gap [a, b) (sync-stall's drain):
 * when a sync run holds its start (sync.a <= a <= sync.b; *k: the first sync run ending at or
 * after a), the gap less its data loading (*j: the first data run ending after a), at most
 * that sync's length. The same walk and sums as the rule's own pass over a stored idle set. */
static inline __attribute__((always_inline)) int64_t drain_of(const split_runs *sync, size_t *k,
                                                              const split_runs *data, size_t *j,
                                                              int64_t a, int64_t b) {
    while (*k < sync->n && sync->b[*k] < a)
        (*k)++;
    if (*k == sync->n || sync->a[*k] > a)
        return 0;
    int64_t len = b - a;
    while (*j < data->n && data->b[*j] <= a)
        (*j)++;
    for (size_t q = *j; q < data->n && data->a[q] < b; q++)
        len -= (data->b[q] < b ? data->b[q] : b) - (data->a[q] > a ? data->a[q] : a);
    int64_t sl = sync->b[*k] - sync->a[*k];
    return len < sl ? len : sl;
}

/* The start of the first sync or data run that ends after b (INT64_MAX: none): no run
 * reaches into (b, that start), so an idle gap inside it is all "rest" (no sync, data nor
 * drain). From the cursors on: every run before them ends at or before b. */
static inline int64_t quiet_until(const split_runs *sync, const split_runs *data, int64_t b) {
    size_t x = sync->k, y = data->k;
    while (x < sync->n && sync->b[x] <= b)
        x++;
    while (y < data->n && data->b[y] <= b)
        y++;
    int64_t hs = x < sync->n ? sync->a[x] : INT64_MAX, hd = y < data->n ? data->a[y] : INT64_MAX;
    return hs < hd ? hs : hd;
}

/* idle = the window less busy (tp_an_ivset_minus of [w0, w1): busy's gaps, busy being
 * normalized inside the window), its length (in run order, as tp_an_ivset_len), and the
 * idle split in the same walk, as the set algebra defines it (idle ∩ sync; (idle - sync) ∩
 * data; the rest in short idle gaps; other_set: what remains), and sync-stall's drain (its
 * one use of idle as a set): neither idle nor the intermediate sets (idle - sync, minus data)
 * are built, a run per idle gap each (one per GPU row on a launch-bound trace: 38 MB on
 * 20,000 steps); busy, read once here, goes back to the scratch. */
static void split_idle(tp_diag_ctx *d, tp_diag_idle *s) {
    memset(s, 0, sizeof *s);
    s->other_set.sc = d->v->scratch;
    size_t nb = d->busy.n - d->busy_from;
    tp_an_ivset_bound(&s->other_set, nb + 1 + d->sync.n + d->data.n);
    tp_an_ivset_push(&d->busy, d->w1, d->w1); /* the last gap ends where this one starts: every
                                                 gap's end is read from ba, no test per gap */
    const int64_t *ba = d->busy.a + d->busy_from, *bb = d->busy.b + d->busy_from;
    split_runs sync = {d->sync.a, d->sync.b, d->sync.n, 0};
    split_runs data = {d->data.a, d->data.b, d->data.n, 0};
    split_acc acc = {0, 0, 0, 0, s->other_set.a, s->other_set.b, 0};
    int64_t idle = 0, drain = 0, wait = d->v->opts.kernel_wait_ns;
    size_t dk = 0, dj = 0; /* the drain's cursors into sync and data */
    /* (quiet_lo, quiet_hi]: no sync or data run touches it (a later gap starts after the last
     * one walked, quiet_lo: its end); empty until a first gap is walked */
    int64_t quiet_lo = INT64_MAX, quiet_hi = INT64_MIN, next_a = d->w0;
    for (size_t i = 0; i <= nb; i++) {
        int64_t a = next_a, b = ba[i];
        next_a = bb[i];
        if (b <= a)
            continue;
        idle = tp_an_add(idle, b - a);
        int short_gap = b - a < wait;
        if (a > quiet_lo && b <= quiet_hi) { /* between syncs and data loading (most gaps): the
                                                walks below would find nothing to cut */
            rest_piece(&acc, short_gap, a, b);
            continue;
        }
        drain += drain_of(&sync, &dk, &data, &dj, a, b);
        while (sync.k < sync.n && sync.b[sync.k] <= a) /* idle minus sync, as tp_an_ivset_minus */
            sync.k++;
        for (size_t x = sync.k; x < sync.n && sync.a[x] < b; x++) {
            int64_t ya = sync.a[x] > a ? sync.a[x] : a, yb = sync.b[x] < b ? sync.b[x] : b;
            if (yb > ya)
                acc.sync = tp_an_add(acc.sync, yb - ya);
            if (ya > a)
                nosync_piece(&data, &acc, short_gap, a, ya);
            a = yb;
        }
        if (b > a)
            nosync_piece(&data, &acc, short_gap, a, b);
        quiet_lo = b, quiet_hi = quiet_until(&sync, &data, b);
    }
    s->idle = idle, s->sync = acc.sync, s->data = acc.data, s->shortg = acc.shortg;
    s->other = acc.other, s->other_set.n = acc.on;
    d->drain = drain;
    tp_an_ivset_free(&d->busy);
    d->busy_from = 0;
    tp_an_ivset_fit(&s->other_set);
}

void tp_diag_ctx_init(tp_diag_ctx *d, const tp_an_view *v, tp_diagnosis *out) {
    if (v->r->corr_dropped) /* find_cpu_calls walks it (tp_rank_drop_corr_index) */
        abort();
    memset(out, 0, sizeof *out);
    out->utilization = NAN;
    memset(d, 0, sizeof *d);
    d->v = v, d->r = v->r, d->ev = &v->r->ev, d->out = out;
    d->launch_verdict = -1;
    tp_an_ivset *sets[] = {&d->steps, &d->busy, &d->sync, &d->data, &d->kernels, &d->copies};
    for (size_t k = 0; k < sizeof sets / sizeof *sets; k++)
        sets[k]->sc = v->scratch; /* the diagnosis's sets reuse what other analyses gave back */
    if (v->by_corr) {             /* the model's rows in its order (tp_an_view): no pass to tell */
        d->rows_once = d->identity = 1;
    } else {
        int asc_rows = 1;
        for (size_t i = 1; i < v->n && asc_rows; i++)
            asc_rows = tp_an_view_row(v, i) > tp_an_view_row(v, i - 1);
        d->identity =
            asc_rows && v->n == d->ev->n && (!v->n || tp_an_view_row(v, v->n - 1) == v->n - 1);
        /* an untrimmed view admits each model row at most once (tp_an_view.c admit_rows),
         * ascending or not: a compat view in load order needs no seen marks either (their
         * memset and a test per row in every pass) */
        d->rows_once = asc_rows || !v->trimmed;
    }
    d->seen = d->rows_once ? NULL : tp_an_tmp0(v, d->ev->n + 1, 1);
    /* the classes by name id: every id is below the pool's count, which bounds the name
     * ids for the rules too (n_names; their tables by name are zero past the ids used) */
    d->n_names = (size_t)tp_model_n_strings(v->m);
    d->ncls = tp_an_alloc(d->n_names + 1, 1);
    place_tally t = {0};
    if (d->identity)
        tally_open(&t, d->ev->places.n);
    find_cpu_calls(d, d->identity ? &t : NULL);
    find_threads(d, &t);
    int64_t g0, g1;
    size_t n_launch;
    int asc;
    collect_sets(d, &g0, &g1, &n_launch, &asc);
    d->gpu_by_time = d->rows_once && asc && v->gpu_order; /* distinct starts: one time order */
    set_window(d, g0, g1);
    clip_sets(d, n_launch, asc);
    if (d->win > 0) {
        split_idle(d, &d->split);
        out->utilization = 1.0 - tp_diag_share(d->split.idle, d->win);
    }
}

void tp_diag_ctx_free(tp_diag_ctx *d) {
    tp_an_ivset_free(&d->steps), tp_an_ivset_free(&d->busy);
    tp_an_ivset_free(&d->sync), tp_an_ivset_free(&d->data), tp_an_ivset_free(&d->kernels);
    tp_an_ivset_free(&d->copies), tp_an_ivset_free(&d->split.other_set);
    free(d->step_end), free(d->ncls), free(d->th), free(d->place_launch), free(d->sync_at);
    free(d->data_at);
    tp_scratch *sc = d->v ? d->v->scratch : NULL;
    tp_scratch_put(sc, d->seen), tp_scratch_put(sc, d->cpu_call);
    tp_scratch_put(sc, d->call_val), tp_scratch_put(sc, d->call_off), free(d->call_base);
    if (d->mem)
        tp_an_memuse_free(d->mem), free(d->mem);
    if (d->host)
        tp_an_host_free(d->host), free(d->host);
    if (d->samples)
        tp_an_samples_free(d->samples), free(d->samples);
    tp_an_frames_close(d->fx);
    memset(d, 0, sizeof *d);
}

/* ---------------------------------------------------------------- findings */

double tp_diag_share(int64_t a, int64_t b) {
    return b > 0 ? (double)a / (double)b : 0.0;
}

const char *tp_diag_window_words(const tp_diag_ctx *d) {
    return d->out->n_steps ? "of step time" : "of the GPU span";
}

void tp_diag_cat(char **s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n <= 0) {
        if (!*s)
            *s = tp_an_alloc(1, 1);
        return;
    }
    size_t len = *s ? strlen(*s) : 0;
    char *p = tp_mem_xrealloc(*s, len + (size_t)n + 1, 1);
    va_start(ap, fmt);
    vsnprintf(p + len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    *s = p;
}

tp_finding *tp_diag_add(tp_diag_ctx *d, const tp_diag_rule *rule, double severity) {
    tp_diagnosis *o = d->out;
    size_t cap = o->n;
    tp_an_grow((void **)&o->f, &cap, o->n + 1, sizeof *o->f);
    tp_finding *f = &o->f[o->n++];
    memset(f, 0, sizeof *f);
    f->id = rule->id;
    f->severity = severity < 0 ? 0 : severity > 1 ? 1 : severity;
    f->range_row = f->op_row = -1;
    d->cur = f;
    tp_diag_cat(&f->title, "%s", "");
    tp_diag_cat(&f->evidence, "%s", "");
    tp_diag_cat(&f->advice, "%s", "");
    tp_diag_cat(&f->source, "%s", "");
    return f;
}

void tp_diag_put_metric(tp_finding *f, const char *key, double value) {
    size_t cap = f->n_metrics;
    tp_an_grow((void **)&f->metrics, &cap, f->n_metrics + 1, sizeof *f->metrics);
    f->metrics[f->n_metrics++] = (tp_diag_metric){key, value};
}
