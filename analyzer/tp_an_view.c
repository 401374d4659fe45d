/* tp_an_view: row admission and timing for the analyses, native or HTA-compatible. */
#include "tp_an_view.h"

#include "tp_decimal.h"

#include <assert.h>
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_an_namememo.h"
#include "tp_an_stats.h"
#include "tp_kgroup.h"
#include "tp_kineto_names.h"
#include "tp_par.h"
#include "tp_sort.h"

void tp_an_opts_init(tp_an_opts *o) {
    memset(o, 0, sizeof *o);
    o->kernel_wait_ns = 30000;
    o->runtime_cutoff_ns = 50000;
    o->launch_delay_cutoff_ns = 100000;
}

static const char *const ktype_names[TP_KT_COUNT] = {"COMPUTATION", "COMMUNICATION", "MEMORY",
                                                     "OTHER"};

const char *tp_ktype_name(tp_ktype t) {
    return (unsigned)t < TP_KT_COUNT ? ktype_names[t] : "OTHER";
}

static int starts(const char *s, const char *p) {
    return strncmp(s, p, strlen(p)) == 0;
}

/* The grouping rule is traces/tp_kgroup's (the live aggregator uses it too). */
_Static_assert((int)TP_KT_COMPUTATION == TP_KGROUP_COMPUTATION &&
                   (int)TP_KT_MEMORY == TP_KGROUP_MEMORY &&
                   (int)TP_KT_COMMUNICATION == TP_KGROUP_COMMUNICATION &&
                   (int)TP_KT_OTHER == TP_KGROUP_OTHER,
               "tp_ktype follows tp_kgroup");

tp_ktype tp_ktype_of(const char *n) {
    return (tp_ktype)tp_kgroup_of(n);
}

/* The wide rows' search is branch-free (the last row <= i, then a test): a dur8 view looks
 * up each row of over 253 µs on every read (10 k lookups on df_index_resolver), ~half the
 * instructions of tp_ev_wide_get's. */
int64_t tp_an_view_dur_slow(const uint32_t *dur32, tp_ev_wide w, size_t i) {
    if (dur32 && dur32[i] < TP_EV_U32_WIDE)
        return dur32[i];
    const uint32_t *b = w.row;
    size_t n = w.n;
    if (!n)
        return -1;
    while (n > 1) {
        size_t half = n / 2;
        b = b[half] <= i ? b + half : b;
        n -= half;
    }
    return *b == i ? w.val[b - w.row] : -1;
}

const char *tp_an_view_name(const tp_an_view *v, size_t i) {
    return tp_model_str(v->m, v->r->ev.name[tp_an_view_row(v, i)]);
}

const char *tp_an_view_cat(const tp_an_view *v, size_t i) {
    return tp_model_str(v->m, tp_ev_cat_raw(&v->r->ev, tp_an_view_row(v, i)));
}

/* ^ProfilerStep#(\d+) */
static int is_step_name(const char *n) {
    return starts(n, "ProfilerStep#") && isdigit((unsigned char)n[13]);
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

size_t tp_an_profiler_step_names(const tp_model *m) {
    uint32_t *ids = NULL;
    size_t n = 0, cap = 0;
    for (size_t k = 0; k < m->n_ranks; k++) {
        const tp_events *ev = &m->ranks[k].ev;
        for (size_t i = 0; i < ev->n; i++) {
            if (!(ev->flags[i] & TP_EVF_PROFILER_STEP) ||
                !is_step_name(tp_model_str(m, ev->name[i])))
                continue;
            tp_an_grow((void **)&ids, &cap, n + 1, sizeof *ids);
            ids[n++] = ev->name[i];
        }
    }
    if (n)
        qsort(ids, n, sizeof *ids, cmp_u32);
    size_t distinct = 0;
    for (size_t i = 0; i < n; i++)
        distinct += (i == 0 || ids[i] != ids[i - 1]);
    free(ids);
    return distinct;
}

/* Start and end of model row i in view time. */
typedef struct {
    int mode;        /* 0 exact, 1 HTA rounding, 2 HTA doubles without rounding */
    int64_t base_ns; /* mode 2: whole-µs origin */
    double base_d;
    int dur8;        /* 1: the view's durations go into dur8 (clock_dur8) */
    int ts_col;      /* the view's start column: TS_BY_ROW, TS_32 or TS_64 (clock_ts) */
    int64_t ts_base; /* TS_32's */
} tp_clockmode;

/* tp_decimal_ns_to_us with its common case inline: below 2^53 in magnitude, ns and 1000 are
 * exact doubles and the division rounds the exact quotient once, signs alike (its own first
 * branch). The call per value was ~15 of its ~26 instructions, twice a row in row_times. */
static inline double ns_to_us(int64_t ns) {
    const int64_t exact = INT64_C(1) << 53;
    return ns > -exact && ns < exact ? (double)ns / 1000.0 : tp_decimal_ns_to_us(ns);
}

/* Forced inline: out of line, its call per row cost df_index_resolver's trimmed view 2.8 M
 * instructions more than its body. */
static inline __attribute__((always_inline)) void
row_times(const tp_events *ev, size_t i, const tp_clockmode *c, int64_t *ts, int64_t *end) {
    if (c->mode == 0) {
        *ts = ev->ts[i];
        *end = ev->ts[i] + tp_ev_dur(ev, i);
        return;
    }
    /* HTA parses the JSON numbers into doubles and rounds from those, not from exact values:
     * the double Python's float() gives for the µs decimal text. */
    double t = ns_to_us(ev->ts[i]), d = ns_to_us(tp_ev_dur(ev, i));
    if (c->mode == 1) {
        *ts = (int64_t)ceil(t) * 1000;
        *end = (int64_t)floor(t + d) * 1000;
    } else {
        double rel = t - c->base_d; /* exact: same binade (Sterbenz) */
        *ts = c->base_ns + llround(rel * 1000.0);
        *end = c->base_ns + llround((rel + d) * 1000.0);
    }
}

static void clock_mode(tp_clockmode *c, const tp_rank *r, const tp_an_opts *o) {
    memset(c, 0, sizeof *c);
    if (!o->compat_hta || !r->has_fractional_ts)
        return;
    c->mode = o->no_ns_rounding ? 2 : 1;
    int64_t mn = r->ev.n ? r->ev.ts[0] : 0; /* the least: the model's rows ascend */
    c->base_ns = (mn >= 0 ? mn / 1000 : (mn - 999) / 1000) * 1000;
    c->base_d = (double)(c->base_ns / 1000);
}

/* c->dur8 for a view under `o` (clock_mode's c): compat views, whose durations are whole µs
 * (HTA's rounding, or a Kineto trace in whole µs); a duration that is not goes to dur_wide
 * (dur8_code), and a view with many (wide_dur8) is given a dur32 column instead. No pass to
 * find out first: one over the model's durations was 1.1 M instructions on
 * df_index_resolver. */
static void clock_dur8(tp_clockmode *c, const tp_an_opts *o) {
    c->dur8 = o->compat_hta && c->mode != 2;
}

enum {
    TS_BY_ROW, /* none: the model's starts through the row map (ts_by_row) */
    TS_32,     /* ts32, from ts_base */
    TS_64      /* ts64_own */
};

/* c->ts_col (and ts_base) for clock_mode's c. Exact times (mode 0: native windows, and compat
 * views of a trace in whole µs: df_index_resolver's, trace_diff_test's) are the model's
 * starts, read through the row map: no column (an int64 copy, 8 bytes a row, was the
 * largest of such a view; admit_same's views borrow the model's column instead). HTA's
 * rounded times (mode 1) are whole µs: 4 bytes a row from the least start, while no start is
 * 2^32 µs (71 min) or more past it. Else (--no-ns-rounding's ns, a longer trace) an int64
 * column. The model's rows ascend: its greatest start is its last. */
static void clock_ts(tp_clockmode *c, const tp_rank *r) {
    const tp_events *ev = &r->ev;
    c->ts_col = c->mode == 0 ? TS_BY_ROW : TS_64;
    if (c->mode != 1 || !ev->n)
        return;
    int64_t lo = c->base_ns, hi = ev->ts[ev->n - 1]; /* HTA's ceil is at or above base_ns */
    /* + 2: a rounded start is at most the greatest's ceil in µs */
    if ((hi - lo) / TP_AN_VIEW_TS32_UNIT + 2 < (int64_t)UINT32_MAX)
        c->ts_col = TS_32, c->ts_base = lo;
}

/* HTA's GPUKernelFilter: stream >= 0 and correlation >= 0, or a device-wide sync. */
typedef struct {
    uint32_t event_sync, context_sync; /* pool ids; 0: not in the pool */
    uint32_t ev_id, ctx_id; /* the same, UINT32_MAX for 0: a row's name id is never equal */
} tp_syncnames;

static int gpu_class(const tp_events *ev, size_t i, const tp_syncnames *s) {
    if (tp_ev_stream(ev, i) >= 0 && tp_ev_corr(ev, i) >= 0)
        return 1;
    return ev->name[i] && (ev->name[i] == s->event_sync || ev->name[i] == s->context_sync);
}

/* The view's duration column (dur8 or dur32_own, by c->dur8) from `old` rows to `cap` */
static void grow_dur(tp_an_view *v, const tp_clockmode *c, size_t old, size_t cap) {
    if (c->dur8) {
        tp_an_grow((void **)&v->dur8, &old, cap, sizeof *v->dur8);
    } else {
        tp_an_grow((void **)&v->dur32_own, &old, cap, sizeof *v->dur32_own);
        v->dur32 = v->dur32_own;
    }
}

/* The same, exactly n rows (n >= 1), for a view whose row count is known */
static void alloc_dur(tp_an_view *v, const tp_clockmode *c, size_t n) {
    if (c->dur8) {
        v->dur8 = tp_an_alloc(n, sizeof *v->dur8);
    } else {
        v->dur32 = v->dur32_own = tp_an_alloc(n, sizeof *v->dur32_own);
    }
}

/* The view's start column (by c->ts_col) from `old` rows to `cap` */
static void grow_ts(tp_an_view *v, const tp_clockmode *c, size_t old, size_t cap) {
    if (c->ts_col == TS_32) {
        tp_an_grow((void **)&v->ts32, &old, cap, sizeof *v->ts32);
    } else if (c->ts_col == TS_64) {
        tp_an_grow((void **)&v->ts64_own, &old, cap, sizeof *v->ts64_own);
        v->ts64 = v->ts64_own;
    }
}

/* The same, exactly n rows (n >= 1), for a view whose row count is known */
static void alloc_ts(tp_an_view *v, const tp_clockmode *c, size_t n) {
    if (c->ts_col == TS_32)
        v->ts32 = tp_an_alloc(n, sizeof *v->ts32);
    else if (c->ts_col == TS_64)
        v->ts64 = v->ts64_own = tp_an_alloc(n, sizeof *v->ts64_own);
}

/* View row k's start ts (ns, view time) into the view's column, if it has one */
static inline void set_ts(tp_an_view *v, const tp_clockmode *c, size_t k, int64_t ts) {
    if (c->ts_col == TS_32) /* whole µs (clock_ts) */
        v->ts32[k] = (uint32_t)((uint64_t)(ts - c->ts_base) / TP_AN_VIEW_TS32_UNIT);
    else if (c->ts_col == TS_64)
        v->ts64_own[k] = ts;
}

static void reserve_rows(tp_an_view *v, const tp_clockmode *c, size_t *cap, size_t need) {
    if (need > *cap) {
        size_t k = *cap;
        tp_an_grow((void **)&v->row_own, &k, need, sizeof *v->row_own);
        v->row = v->row_own;
        grow_ts(v, c, *cap, k);
        grow_dur(v, c, *cap, k);
        *cap = k;
    }
}

/* dur8's code of a duration d (ns), TP_AN_VIEW_DUR8_WIDE when it is not whole µs or out of
 * its range: the code is (d + 1000) / 1000, in 32 bits once the range is known (a multiply
 * and a shift: the 64-bit signed division was ~1 M instructions more on df_index_resolver) */
static inline unsigned dur8_code(int64_t d) {
    uint64_t x = (uint64_t)d + 1000u;
    if (x < (uint64_t)TP_AN_VIEW_DUR8_WIDE * 1000u) {
        uint32_t code = (uint32_t)x / 1000u;
        if (code * 1000u == (uint32_t)x)
            return code;
    }
    return TP_AN_VIEW_DUR8_WIDE;
}

/* Appends row k's duration d to w (rows ascending) */
static void wide_push(tp_ev_wide *w, size_t k, int64_t d) {
    if (w->n == w->cap) {
        size_t k0 = w->cap;
        tp_an_grow((void **)&w->row, &k0, w->n + 1, sizeof *w->row);
        k0 = w->cap;
        tp_an_grow((void **)&w->val, &k0, w->n + 1, sizeof *w->val);
        w->cap = k0;
    }
    w->row[w->n] = (uint32_t)k, w->val[w->n++] = d;
}

/* View row k's duration end - ts into the view's column (k: the next row of dur_wide's,
 * which stays in row order). Only HTA's rounding ends a row before its start (dur8's). */
static inline void set_dur(tp_an_view *v, const tp_clockmode *c, size_t k, int64_t ts,
                           int64_t end) {
    int64_t d = end - ts;
    if (c->dur8) {
        unsigned code = dur8_code(d);
        v->dur8[k] = (uint8_t)code;
        if (code != TP_AN_VIEW_DUR8_WIDE)
            return;
    } else {
        int fits = d >= 0 && d < TP_EV_U32_WIDE; /* < 0: never here (see above), but kept */
        v->dur32_own[k] = fits ? (uint32_t)d : TP_EV_U32_WIDE;
        if (fits)
            return;
    }
    wide_push(&v->dur_wide, k, d);
}

/* Once the rows are admitted: a dur8 view whose side table holds more than an eighth of its
 * rows (durations in ns: a trace in whole µs with fractional durations; or long ones) gets a
 * dur32 column instead (12 bytes a wide row were more than 4 a row); then dur32_narrow, when
 * no duration is wide (a window's), so that dur32 is read in one test as the model's. */
static void finish_dur(tp_an_view *v) {
    if (v->dur8 && v->dur_wide.n > v->n / 8) {
        uint32_t *d32 = tp_an_alloc(v->n ? v->n : 1, sizeof *d32);
        tp_ev_wide w = {0, 0, NULL, NULL};
        for (size_t k = 0; k < v->n; k++) {
            int64_t d = tp_an_view_dur(v, k);
            d32[k] = d >= 0 && d < TP_EV_U32_WIDE ? (uint32_t)d : TP_EV_U32_WIDE;
            if (d32[k] == TP_EV_U32_WIDE) /* HTA's -1 µs, or over 4.29 s */
                wide_push(&w, k, d);
        }
        free(v->dur8);
        free(v->dur_wide.row);
        free(v->dur_wide.val);
        v->dur8 = NULL;
        v->dur32 = v->dur32_own = d32;
        v->dur_wide = w;
    }
    if (v->dur32_own && !v->dur_wide.n)
        v->dur32_narrow = v->dur32_own;
}

static void push_row(tp_an_view *v, const tp_clockmode *c, size_t *cap, uint32_t row, int64_t ts,
                     int64_t end) {
    if (v->n + 1 > *cap) /* the test inline: the call per row was 1.6 M instructions on df */
        reserve_rows(v, c, cap, v->n + 1);
    v->row_own[v->n] = row;
    set_ts(v, c, v->n, ts);
    set_dur(v, c, v->n, ts, end);
    v->n++;
}

/* Kept CPU-class rows sharing row i's correlation (HTA's inner merge multiplicity), for a
 * GPU-class row i with a correlation: the rows of a correlation are one run of the
 * correlation index. */
static size_t kept_cpu_partners(const tp_rank *r, size_t i, const uint8_t *cls,
                                const uint8_t *keep) {
    const uint32_t *rows;
    size_t n = tp_rank_corr_rows(r, tp_ev_corr(&r->ev, i), &rows), k = 0;
    for (size_t j = 0; j < n; j++)
        k += !cls[rows[j]] && keep[rows[j]];
    return k;
}

#define KEPT_ASK UINT8_MAX /* kept_cpu_counts: ask kept_cpu_partners */

/* kept_cpu_partners of every GPU-class row with a correlation, into keep[i] (trim_cpu leaves
 * those 0 and nothing else reads them), KEPT_ASK when it is that many or more: one pass over
 * the correlation index's runs, so that no row looks its correlation up (the lookups' directory
 * over the index, 1-2 bytes a correlated row, is then not needed: the report drops it,
 * tp_model_drop_corr_dir). A run's count reads its CPU-class rows only, so it is whole before
 * its GPU-class rows are written. */
static void kept_cpu_counts(const tp_rank *r, const uint8_t *cls, uint8_t *keep) {
    const tp_events *ev = &r->ev;
    const uint32_t *bc = r->by_corr;
    size_t nb = r->n_by_corr;
    for (size_t s = 0, e; s < nb; s = e) {
        size_t k = 0;
        for (e = s; e < nb && tp_ev_corr(ev, bc[e]) == tp_ev_corr(ev, bc[s]); e++)
            k += !cls[bc[e]] && keep[bc[e]];
        uint8_t kk = k < KEPT_ASK ? (uint8_t)k : KEPT_ASK;
        for (size_t j = s; j < e; j++)
            if (cls[bc[j]])
                keep[bc[j]] = kk;
    }
}

/* The copies of GPU-class row i (pass 0 of a trimmed view), after kept_cpu_counts: rows with
 * correlation -1 share it with every other such row (kept_neg1 CPU-class ones kept). */
static size_t kept_copies(const tp_rank *r, size_t i, const uint8_t *cls, const uint8_t *keep,
                          size_t kept_neg1) {
    if (keep[i] == KEPT_ASK)
        return kept_cpu_partners(r, i, cls, keep);
    if (keep[i])
        return keep[i];
    return tp_ev_corr(&r->ev, i) == -1 ? kept_neg1 : 0;
}

/* Model rows in the order the analyses see them: load (file) order for compat_hta, since
 * HTA's sorts are unstable and their result on equal timestamps depends on the input order;
 * time order otherwise. The model's own column where it keeps the rows in load order (never
 * written through), else an array of the view's scratch in *own (give it back). */
static const uint32_t *row_order(const tp_an_view *v, uint32_t **own) {
    const tp_events *ev = &v->r->ev;
    int load = v->opts.compat_hta && tp_ev_has_load_ord(ev);
    *own = NULL;
    if (load && ev->load_rows32)
        return ev->load_rows32;
    uint32_t *order = *own = tp_an_tmp(v, ev->n, sizeof *order);
    if (load)
        return tp_ev_load_rows(ev, order);
    for (size_t i = 0; i < ev->n; i++)
        order[i] = (uint32_t)i;
    return order;
}

/* row_times' start of a row whose model start is `ts`. It never decreases as ts grows (the
 * decimal conversion is correctly rounded, ceil and llround are monotone): trim_cpu's
 * comparisons of rounded starts are comparisons of model starts with a threshold. */
static int64_t clock_start(int64_t ts, const tp_clockmode *c) {
    if (c->mode == 0)
        return ts;
    double t = ns_to_us(ts);
    if (c->mode == 1)
        return (int64_t)ceil(t) * 1000;
    return c->base_ns + llround((t - c->base_d) * 1000.0);
}

/* The least model start x in [lo, hi] whose clock_start is >= `at` (clock_start(hi) is). */
static int64_t first_start_at(int64_t lo, int64_t hi, int64_t at, const tp_clockmode *c) {
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (clock_start(mid, c) >= at)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* Profiler-step trimming (HTA quirk 8). keep[] gets 1 for kept CPU-class rows. Returns 0
 * when no CPU-class row exists (HTA then keeps everything).
 * Default: CPU rows starting before the last ProfilerStep#N starts (or before the first CPU
 * row when the rank has no step) are kept. include_last_step: HTA compares the aligned `ts`
 * with an `end` column it never aligned (absolute µs), so every CPU row passes.
 * The starts compared are view (rounded) starts; as clock_start is monotone, the latest
 * step's and the first CPU row's are those of the latest and first model starts, and a
 * rounded start is below the last one exactly when the model start is below the least model
 * start that rounds to it or later: no row's start is converted here (the view's build kept
 * every row's rounded start and end for this, 16 bytes a row at once: df_index_resolver's
 * peak). */
static int trim_cpu(const tp_an_view *v, const uint8_t *cls, const tp_clockmode *c, uint8_t *keep) {
    const tp_events *ev = &v->r->ev;
    int any = 0, steps = 0;
    int64_t smax_ts = 0, cmin_ts = 0; /* model starts */
    for (size_t i = 0; i < ev->n; i++) {
        if (cls[i])
            continue;
        if (!any || ev->ts[i] < cmin_ts)
            cmin_ts = ev->ts[i];
        any = 1;
        if ((ev->flags[i] & TP_EVF_PROFILER_STEP) &&
            is_step_name(tp_model_str(v->m, ev->name[i]))) {
            if (!steps || ev->ts[i] > smax_ts)
                smax_ts = ev->ts[i];
            steps = 1;
        }
    }
    if (!any)
        return 0;
    int64_t last = steps ? smax_ts : cmin_ts;
    int64_t below = first_start_at(cmin_ts, last, clock_start(last, c), c);
    for (size_t i = 0; i < ev->n; i++)
        keep[i] = !cls[i] && (v->opts.include_last_step || ev->ts[i] < below);
    return 1;
}

/* 1 when model row i is outside the options' time window (none: never). The window cuts
 * by the model's exact start, whatever the view's clock, as cutting the trace file would. */
static int outside_window(const tp_an_view *v, size_t i) {
    const tp_an_opts *o = &v->opts;
    if (!(o->window_hi > o->window_lo))
        return 0; /* before the row's start is read: link_rows asks for partners at random,
                     a cache miss each (an eighth of the view's build on lb20k) */
    int64_t t = v->r->ev.ts[i];
    return t < o->window_lo || t >= o->window_hi;
}

static void admit_rows(tp_an_view *v, const uint8_t *cls, const tp_clockmode *c) {
    const tp_rank *r = v->r;
    size_t n = r->ev.n, cap = 0;
    uint8_t *keep = tp_an_tmp0(v, n, 1); /* the caller saw >= 2 step names */
    v->trimmed = trim_cpu(v, cls, c, keep);
    size_t kept_neg1 = 0;
    for (size_t i = 0; v->trimmed && i < n; i++)
        kept_neg1 += !cls[i] && keep[i] && tp_ev_corr(&r->ev, i) == -1;
    if (v->trimmed)
        kept_cpu_counts(r, cls, keep);
    uint32_t *own;
    const uint32_t *order = row_order(v, &own);
    if (!v->trimmed) /* at most one copy of each row: room for all at once, never regrown */
        reserve_rows(v, c, &cap, n);
    /* HTA's trimmed frame holds the kept GPU-class rows first (pass 0), then the CPU-class
     * rows (pass 1); untrimmed, one pass in order. A row's times are found once, for its
     * copies only. */
    for (int pass = 0; pass < (v->trimmed ? 2 : 1); pass++) {
        for (size_t k = 0; k < n; k++) {
            size_t i = order[k], copies = 1;
            if ((v->trimmed && cls[i] != (pass == 0)) || outside_window(v, i))
                continue;
            if (v->trimmed)
                copies = cls[i] ? kept_copies(r, i, cls, keep, kept_neg1) : keep[i];
            if (!copies)
                continue;
            int64_t ts, end;
            row_times(&r->ev, i, c, &ts, &end);
            for (size_t j = 0; j < copies; j++)
                push_row(v, c, &cap, (uint32_t)i, ts, end);
        }
    }
    tp_an_tmp_put(v, own);
    tp_an_tmp_put(v, keep);
}

/* admit_rows without trimming: each row at most once, in row_order, its times computed
 * straight into the view's columns (not first for every row into scratch: 16 bytes a row
 * more at once, and a copy). When that is every model row in the model's order at the
 * model's times (native, no window), the view's starts are the model's column itself: 8
 * bytes a row neither copied nor resident twice; nor are its rows (i) and durations (dur32),
 * 8 more (tp_an_view_row, tp_an_view_dur). */
static int admit_same(const tp_an_view *v, const tp_clockmode *c) {
    return c->mode == 0 && !(v->opts.compat_hta && tp_ev_has_load_ord(&v->r->ev)) &&
           !(v->opts.window_hi > v->opts.window_lo);
}

/* row_times and set_dur under HTA's rounding (mode 1) into dur8, for view rows order[0, n):
 * the start and end in whole µs first, so that dur8's code is their difference, with no
 * division of the ns by 1000 and no test that it is whole (4 M instructions on xdit_sd35). */
static void times_rounded(tp_an_view *v, const tp_clockmode *c, const tp_events *ev,
                          const uint32_t *order, size_t n) {
    int64_t base_us = c->ts_base / TP_AN_VIEW_TS32_UNIT;
    for (size_t k = 0; k < n; k++) {
        size_t i = order[k];
        double t = ns_to_us(ev->ts[i]), d = ns_to_us(tp_ev_dur(ev, i));
        int64_t a = (int64_t)ceil(t), us = (int64_t)floor(t + d) - a;
        if (c->ts_col == TS_32) /* no division: the start is whole µs here */
            v->ts32[k] = (uint32_t)(a - base_us);
        else
            v->ts64_own[k] = a * 1000;
        if (us >= -1 && us < TP_AN_VIEW_DUR8_WIDE - 1) {
            v->dur8[k] = (uint8_t)(us + 1);
        } else {
            v->dur8[k] = TP_AN_VIEW_DUR8_WIDE;
            wide_push(&v->dur_wide, k, us * 1000);
        }
    }
}

static void admit_untrimmed(tp_an_view *v, const tp_clockmode *c) {
    const tp_events *ev = &v->r->ev;
    size_t n = ev->n, cap = 0;
    if (admit_same(v, c)) { /* no row column: tp_an_view_row */
        v->ts64 = ev->ts;
        v->ts_by_row = NULL;
        v->n = n;
        v->dur32 = ev->dur32;       /* nor a duration column: the model's durations */
        v->dur_wide = ev->wide_dur; /* borrowed */
        v->dur32_narrow = ev->wide_dur.n ? NULL : ev->dur32;
        return;
    }
    uint32_t *own;
    const uint32_t *order = row_order(v, &own);
    if (!own && !(v->opts.window_hi > v->opts.window_lo)) {
        /* every row, in the model's load_rows32: the view's rows are that column (borrowed) */
        v->row = order;
        alloc_ts(v, c, n ? n : 1);
        alloc_dur(v, c, n ? n : 1);
        if (c->mode == 1 && c->dur8) {
            times_rounded(v, c, ev, order, n);
        } else {
            for (size_t k = 0; k < n; k++) {
                int64_t ts, end;
                row_times(ev, order[k], c, &ts, &end);
                set_ts(v, c, k, ts);
                set_dur(v, c, k, ts, end);
            }
        }
        v->n = n;
        return;
    }
    reserve_rows(v, c, &cap, n);
    for (size_t k = 0; k < n; k++) {
        size_t i = order[k];
        if (outside_window(v, i))
            continue;
        int64_t ts, end;
        v->row_own[v->n] = (uint32_t)i;
        row_times(ev, i, c, &ts, &end);
        set_ts(v, c, v->n, ts);
        set_dur(v, c, v->n, ts, end);
        v->n++;
    }
    tp_an_tmp_put(v, own);
}

#define NO_PARTNER UINT32_MAX

/* What the rows' places say, one byte per place (few per rank), so that a row's stream
 * tests are a load, not a place record's 8-byte field: */
#define PLACE_STREAM_SET 1u /* stream >= 0 (gpu_class) */
#define PLACE_STREAM_ANY 2u /* stream != -1 (HTA's "GPU event", tp_an_view_model_gpu) */

/* Per place of `ev`, its PLACE_STREAM_* bits; NULL when a row's place is wide (then read
 * the place through tp_ev_stream). Free with free(). */
static uint8_t *place_bits(const tp_events *ev) {
    if (ev->wide_place.n)
        return NULL;
    uint8_t *b = tp_an_alloc(ev->places.n ? ev->places.n : 1, 1);
    for (size_t k = 0; k < ev->places.n; k++) {
        int64_t st = ev->places.v[k].stream;
        b[k] = (uint8_t)((st >= 0 ? PLACE_STREAM_SET : 0u) | (st != -1 ? PLACE_STREAM_ANY : 0u));
    }
    return b;
}

/* 1: row i's stream has `bit`, from `pb` (place_bits) when there is one. */
static inline int stream_is(const tp_events *ev, const uint8_t *pb, size_t i, unsigned bit) {
    if (pb)
        return (pb[ev->place[i]] & bit) != 0;
    int64_t st = tp_ev_stream(ev, i);
    return bit == PLACE_STREAM_SET ? st >= 0 : st != -1;
}

/* gpu_class of a row of the correlation index; `fast` as link_runs (2: and no sync name in
 * the pool, so no row's name needs a look: a load at random per row). */
static inline __attribute__((always_inline)) int index_row_class(const tp_events *ev,
                                                                 const uint8_t *pb,
                                                                 const tp_syncnames *s, uint32_t i,
                                                                 int fast) {
    if (!fast)
        return gpu_class(ev, i, s);
    if (fast == 2)
        return (pb[ev->place[i]] & PLACE_STREAM_SET) != 0;
    uint32_t nm = ev->name[i];
    return (pb[ev->place[i]] & PLACE_STREAM_SET) || nm == s->ev_id || nm == s->ctx_id;
}

/* link_same's runs. `fast`: every correlation id is its 32-bit code (no wide id, no high
 * half) and the places have their bits (place_bits); then a run's rows share a code,
 * compared as such, and an index row's class (gpu_class: its id is >= 0) is its place's
 * PLACE_STREAM_SET or a sync name (fast == 2: no sync name in the pool, its place's bit
 * alone). Forced inline, one copy per value of `fast`. */
static inline __attribute__((always_inline)) int link_runs(const tp_rank *r, const uint8_t *pb,
                                                           const tp_syncnames *s,
                                                           const uint32_t *restrict at,
                                                           int32_t *restrict link, int fast) {
    const tp_events *ev = &r->ev;
    const uint32_t *restrict bc = r->by_corr, *restrict c32 = ev->corr32;
    size_t nb = r->n_by_corr;
    int twos = fast != 0; /* the return: every run two rows (tp_an_view.by_corr_twos) */
#define VIEW_ROW(x) ((int32_t)(at ? at[x] : (x))) /* model row x's view row */
    for (size_t s0 = 0, e; s0 < nb; s0 = e) {
        int32_t last[2] = {-1, -1}; /* per class, as link_rows (model rows) */
        if (fast) {
            uint32_t code = c32[bc[s0]];
            for (e = s0 + 1; e < nb && c32[bc[e]] == code;)
                e++;
            if (e - s0 == 2) { /* most runs: a launch and its GPU row, each the other's
                                  partner (each found once, not again for its link) */
                uint32_t a = bc[s0], b = bc[s0 + 1];
                int two = index_row_class(ev, pb, s, a, 1) != index_row_class(ev, pb, s, b, 1);
                int32_t va = VIEW_ROW(a), vb = VIEW_ROW(b);
                link[va] = two ? vb : -1, link[vb] = two ? va : -1;
                continue;
            }
            twos = 0;
            for (size_t k = s0; k < e; k++)
                last[index_row_class(ev, pb, s, bc[k], 1)] = (int32_t)bc[k];
        } else {
            int64_t corr = tp_ev_corr(ev, bc[s0]);
            for (e = s0; e < nb && tp_ev_corr(ev, bc[e]) == corr; e++)
                last[index_row_class(ev, pb, s, bc[e], 0)] = (int32_t)bc[e];
        }
        for (size_t k = s0; k < e; k++) {
            int32_t p = last[!index_row_class(ev, pb, s, bc[k], fast)];
            link[VIEW_ROW(bc[k])] = p >= 0 ? VIEW_ROW((uint32_t)p) : -1;
        }
    }
#undef VIEW_ROW
    return twos;
}

/* link_runs's every mode, by what the rank allows; `at`: each model row's view row (NULL:
 * the row itself). The view must hold every model row once. Forced inline, so that
 * link_same's copy has no test of `at` per row (out of line: +1.2 M instructions on lb2k). */
static inline __attribute__((always_inline)) int
link_every_row(tp_an_view *v, const uint8_t *pb, const tp_syncnames *s, const uint32_t *at) {
    const tp_events *ev = &v->r->ev;
    /* a row with no correlation has no partner: only the index's rows are written again.
     * Every partner is a view row here: no TP_AN_VIEW_LINKED_OUT */
    memset(v->link, 0xff, v->n * sizeof *v->link); /* -1 */
    if (ev->wide_corr.n == 0 && !ev->corr_hi_any && pb && !s->event_sync && !s->context_sync)
        return link_runs(v->r, pb, s, at, v->link, 2);
    if (ev->wide_corr.n == 0 && !ev->corr_hi_any && pb)
        return link_runs(v->r, pb, s, at, v->link, 1);
    return link_runs(v->r, pb, s, at, v->link, 0);
}

/* link_rows when the view's rows are the model's, in order (admit_same): a row's first view
 * row is the row itself, so each partner goes straight into the link column (no map from
 * model rows to view rows, no partner array: 8 bytes a row of scratch and a pass that read
 * both at random, ~1/3 of the links' time on a 10 M-record trace). Only the correlation
 * index's rows have a partner, so only their classes are needed: found here instead of by a
 * pass classifying every model row into a scratch column (16 M instructions on lb2k). */
static int link_same(tp_an_view *v, const uint8_t *pb, const tp_syncnames *s) {
    return link_every_row(v, pb, s, NULL);
}

/* link_rows when the view holds every model row once, in load order (compat_hta, nothing
 * trimmed, no window): as link_same, each model row's view row from the view's rows
 * inverted, with neither link_rows' first view row nor partner of every model row (8 bytes a
 * row of scratch), nor the class column its build made for them. */
static void link_permuted(tp_an_view *v, const uint8_t *pb, const tp_syncnames *s) {
    uint32_t *at = tp_an_tmp(v, v->n, sizeof *at);
    for (size_t k = 0; k < v->n; k++)
        at[v->row[k]] = (uint32_t)k;
    link_every_row(v, pb, s, at);
    tp_an_tmp_put(v, at);
}

/* link_rows's link for a row whose partner the view left out (trimmed, outside the window):
 * once the kinds are written, -1 with TP_AN_VIEW_LINKED_OUT (mark_linked_out) */
#define LINK_OUT (-2)

/* Returns how many rows got LINK_OUT. A row's partner is the last row (by time) of the other
 * class sharing its correlation: per run of the correlation index (rows by correlation, then
 * time; rows with correlation -1 are not in it) the two classes' last rows, whose first view
 * rows are the links of the run's rows. One column per model row: each row's first view row
 * (-1: none), then, for a run's rows, once the run's two links are read from it, the link
 * itself; a partner column beside it took 4 bytes a model row more at the view build's peak
 * (0.27 MB on hta_trace_diff_test, 0.49 MB on hta_df_index_resolver). */
static size_t link_rows(tp_an_view *v, const uint8_t *cls) {
    const tp_rank *r = v->r;
    const tp_events *ev = &r->ev;
    const uint32_t *bc = r->by_corr;
    size_t nm = ev->n, nb = r->n_by_corr;
    int32_t *at = tp_an_tmp(v, nm, sizeof *at);
    for (size_t i = 0; i < nm; i++)
        at[i] = -1;
    for (size_t k = v->n; k-- > 0;)
        at[v->row[k]] = (int32_t)k;
    for (size_t s = 0, e; s < nb; s = e) {
        uint32_t last[2] = {NO_PARTNER, NO_PARTNER}; /* per class */
        for (e = s; e < nb && tp_ev_corr(ev, bc[e]) == tp_ev_corr(ev, bc[s]); e++)
            last[cls[bc[e]] != 0] = bc[e];
        int32_t to[2]; /* the link of a row of class c (!= 0): to the other class's last */
        for (int c = 0; c < 2; c++) {
            uint32_t p = last[c == 0];
            if (p == NO_PARTNER || outside_window(v, p))
                to[c] = -1; /* none, or cut off with the rest of the trace outside the window */
            else
                to[c] = at[p] >= 0 ? at[p] : LINK_OUT;
        }
        for (size_t k = s; k < e; k++)
            at[bc[k]] = to[cls[bc[k]] != 0];
    }
    size_t out = 0;
    for (size_t k = 0; k < v->n; k++) {
        size_t i = v->row[k];
        int32_t l = tp_ev_corr(ev, i) == -1 ? -1 : at[i]; /* in no run: its first view row */
        v->link[k] = l;
        out += l == LINK_OUT;
    }
    tp_an_tmp_put(v, at);
    return out;
}

/* link_rows's LINK_OUT rows into link -1 and their kind's TP_AN_VIEW_LINKED_OUT, after both
 * columns are written (each by its own thread) */
static void mark_linked_out(tp_an_view *v) {
    for (size_t k = 0; k < v->n; k++)
        if (v->link[k] == LINK_OUT)
            v->link[k] = -1, v->kind[k] |= TP_AN_VIEW_LINKED_OUT;
}

/* The kernel type depends on the name only, so it is decided once per pool id (the regular
 * expressions cost more than everything else the view does per row). */
static int ktype_test(const char *name) {
    return (int)tp_ktype_of(name);
}

static void classify(tp_an_view *v) {
    const tp_events *ev = &v->r->ev;
    tp_an_namememo kt;
    tp_an_namememo_open(&kt, v->m, ktype_test);
    v->n_gpu = 0;
    unsigned kinds = 0;
    for (size_t k = 0; k < v->n; k++) {
        size_t i = tp_an_view_row(v, k);
        unsigned g = (unsigned)tp_an_view_model_gpu(v, i);
        unsigned t = g ? (unsigned)tp_an_namememo_get(&kt, ev->name[i]) : TP_KT_OTHER;
        v->kind[k] = (uint8_t)((g ? TP_AN_VIEW_GPU : 0u) | t);
        kinds |= g << t;
        v->n_gpu += g;
    }
    v->gpu_kinds_absent = ~kinds & ((1u << TP_KT_COUNT) - 1);
    tp_an_namememo_close(&kt);
}

/* v->gpu_order (see the header): one radix sort of the GPU rows' starts, kept when they are
 * all distinct. */
static void order_gpu(tp_an_view *v) {
    if (v->n_gpu == 0 || v->n_gpu >= UINT32_MAX)
        return;
    uint64_t *key = tp_an_tmp(v, v->n_gpu, sizeof *key);
    uint32_t *rows = tp_an_alloc(v->n_gpu, sizeof *rows);
    for (size_t i = 0, k = 0; i < v->n; i++)
        if (tp_an_view_gpu(v, i))
            key[k] = tp_sort_key_i64(tp_an_view_ts(v, i)), rows[k++] = (uint32_t)i;
    tp_sort_pairs_s(key, rows, v->n_gpu, v->scratch);
    int distinct = 1;
    for (size_t k = 1; k < v->n_gpu && distinct; k++)
        distinct = key[k] != key[k - 1];
    tp_an_tmp_put(v, key);
    if (distinct)
        v->gpu_order = rows;
    else
        free(rows);
}

/* Merges the ascending row lists a[na] and b[nb] (no row in both) into out; b the shorter
 * (a launch-bound trace's copies and memsets beside its kernels): the rows of `a` between two
 * of b's are copied in a loop of their own. */
static void merge_rows(const uint32_t *restrict a, size_t na, const uint32_t *restrict b, size_t nb,
                       uint32_t *restrict out) {
    size_t i = 0, k = 0;
    for (size_t j = 0; j < nb; j++) {
        while (i < na && a[i] < b[j])
            out[k++] = a[i++];
        out[k++] = b[j];
    }
    while (i < na)
        out[k++] = a[i++];
}

static const tp_cat gpu_cats[] = {TP_CAT_KERNEL, TP_CAT_MEMCPY,
                                  TP_CAT_MEMSET}; /* tp_an_view_model_gpu */
#define N_GPU_CATS (sizeof gpu_cats / sizeof gpu_cats[0])

/* classify and order_gpu for a native view whose rows are the model's, in order, from the
 * rank's category index: tp_an_view_model_gpu's native rows are in its kernel, copy and memset
 * lists, so only those rows are visited (a third of a launch-bound trace's rows; classify read
 * every row's category), and those lists are each in view order, which is time order here: merged,
 * they are the GPU rows by start, no sort needed (order_gpu's radix sort of their starts gives the
 * same rows when it keeps them: no two starts alike). 0 (nothing done) when the index does not
 * cover the view. */
static int classify_same(tp_an_view *v, const uint8_t *pb) {
    const tp_events *ev = &v->r->ev;
    const tp_buckets *b = &v->r->cats;
    if (v->opts.compat_hta || !tp_an_view_ts_model(v) || !b->n || b->off[b->n] != v->n ||
        v->n >= UINT32_MAX)
        return 0;
    const uint32_t *list[N_GPU_CATS];
    size_t len[N_GPU_CATS], total = 0;
    for (size_t c = 0; c < N_GPU_CATS; c++) {
        list[c] = tp_an_view_cat_rows(v, gpu_cats[c], &len[c]);
        total += len[c];
    }
    uint8_t *restrict kind = v->kind;
    const uint32_t *restrict name = ev->name;
    memset(kind, TP_KT_OTHER, v->n);
    /* each list's GPU rows (a stream), one list after the other: sel[at[c], at[c + 1]) */
    uint32_t *restrict sel = tp_an_tmp(v, total, sizeof *sel);
    size_t at[N_GPU_CATS + 1] = {0}, k = 0;
    tp_an_namememo kt;
    tp_an_namememo_open(&kt, v->m, ktype_test);
    unsigned kinds = 0;
    for (size_t c = 0; c < N_GPU_CATS; c++) {
        for (size_t j = 0; j < len[c]; j++) {
            uint32_t i = list[c][j];
            if (!stream_is(ev, pb, i, PLACE_STREAM_ANY))
                continue;
            unsigned t = (unsigned)tp_an_namememo_get(&kt, name[i]);
            kind[i] = (uint8_t)(TP_AN_VIEW_GPU | t);
            kinds |= 1u << t;
            sel[k++] = i;
        }
        at[c + 1] = k;
    }
    tp_an_namememo_close(&kt);
    v->n_gpu = k;
    v->gpu_kinds_absent = ~kinds & ((1u << TP_KT_COUNT) - 1);
    if (k) {
        /* copies with memsets (few), then those with the kernels */
        uint32_t *rows = tp_an_alloc(k, sizeof *rows);
        size_t nk = at[1], nm = k - nk;
        uint32_t *mid = tp_an_tmp(v, nm, sizeof *mid);
        merge_rows(sel + at[1], at[2] - at[1], sel + at[2], at[3] - at[2], mid);
        merge_rows(sel, nk, mid, nm, rows);
        tp_an_tmp_put(v, mid);
        /* order_gpu's rule: kept when no two GPU rows start at the same time */
        /* the starts as an array: the model's column (tp_an_view_ts_model, above), of k > 0 rows */
        const int64_t *ts = tp_an_view_ts_array(v);
        int distinct = 1;
        for (size_t j = 1; j < k && distinct; j++)
            distinct = ts[rows[j]] != ts[rows[j - 1]];
        if (distinct)
            v->gpu_order = rows;
        else
            free(rows);
    }
    tp_an_tmp_put(v, sel);
    return 1;
}

/* Each model row's class (gpu_class) into cls[], on one thread while the other admits the
 * rows when they need no trimming (~10 and ~40 ms on a 10 M-record trace). */
typedef struct {
    const tp_events *ev;
    const tp_syncnames *s;
    uint8_t *cls;
} class_part;

static void classify_rows(void *arg) {
    const class_part *p = arg;
    for (size_t i = 0; i < p->ev->n; i++)
        p->cls[i] = (uint8_t)gpu_class(p->ev, i, p->s);
}

/* One thread's part of a `same` view (admit_same, nothing trimmed): either the GPU rows'
 * kinds and order or the partner links (each writes its own columns). */
typedef struct {
    tp_an_view *v;
    const uint8_t *pb; /* place_bits */
    const tp_syncnames *s;
    int links; /* 1: link_same; 0: the GPU rows */
    int twos;  /* out, links: link_same's (every run of by_corr two rows) */
} same_part;

static void same_piece(void *arg) {
    same_part *p = arg;
    if (p->links) {
        p->twos = link_same(p->v, p->pb, p->s);
    } else if (!classify_same(p->v, p->pb)) {
        classify(p->v);
        order_gpu(p->v);
    }
}

/* The same for a view of every model row once in another order (link_permuted) */
static void permuted_piece(void *arg) {
    const same_part *p = arg;
    if (p->links) {
        link_permuted(p->v, p->pb, p->s);
    } else {
        classify(p->v);
        order_gpu(p->v);
    }
}

/* The kinds and links of a view of every model row once (admit_untrimmed), one on each
 * thread: `piece` is same_piece (the model's order) or permuted_piece (another order). Every
 * partner is a view row, so no kind has TP_AN_VIEW_LINKED_OUT; a native view shares the
 * model's correlation index (row_order's identity, nothing cut). */
static void kinds_and_links(tp_an_view *v, const tp_rank *r, const tp_syncnames *s,
                            void (*piece)(void *)) {
    size_t n = r->ev.n, vn = n ? n : 1;
    v->kind = tp_an_alloc(vn, 1);
    v->link = tp_an_alloc(vn, sizeof *v->link);
    uint8_t *pb = place_bits(&r->ev);
    same_part kinds = {v, pb, s, 0, 0}, links = {v, pb, s, 1, 0};
    tp_par_both(n, piece, &kinds, piece, &links);
    free(pb);
    if (!v->opts.compat_hta) {
        v->by_corr = r->by_corr;
        v->n_by_corr = r->n_by_corr;
        v->by_corr_twos = links.twos; /* link_same's; permuted_piece leaves it 0 */
    }
}

typedef struct {
    tp_an_view *v;
    const tp_clockmode *c;
} admit_part;

static void admit_untrimmed_part(void *arg) {
    const admit_part *p = arg;
    admit_untrimmed(p->v, p->c);
}

typedef struct {
    tp_an_view *v;
    const uint8_t *cls;
    size_t out; /* link_part's: link_rows's */
} view_part;

/* The GPU rows, their kinds and time order on one thread while the other links the rows to
 * their partners (link_part): each writes its own columns of the view, ~40 and ~45 ms on a
 * 10 M-record trace. */
static void classify_and_order(void *arg) {
    const view_part *p = arg;
    classify(p->v);
    order_gpu(p->v);
}

static void link_part(void *arg) {
    view_part *p = arg;
    p->out = link_rows(p->v, p->cls);
}

/* The kinds are below TP_KT_COUNT, so a mask's low bits name its rows (~0u: all) */
#define GPU_MASKS (1u << TP_KT_COUNT)

struct tp_an_gpu_sums {
    pthread_mutex_t mu; /* two threads run analyses of one view at once */
    unsigned have;      /* bit m: s[m] found */
    tp_an_gpu_sum s[GPU_MASKS];
};

/* The masks that select the same rows are one union: only the kinds present count */
static unsigned gpu_sum_slot(const tp_an_view *v, unsigned kt_mask) {
    return kt_mask & ~v->gpu_kinds_absent & (GPU_MASKS - 1);
}

int tp_an_view_gpu_sum_get(const tp_an_view *v, unsigned kt_mask, tp_an_gpu_sum *out) {
    struct tp_an_gpu_sums *c = v->gpu_sums;
    unsigned m = gpu_sum_slot(v, kt_mask);
    if (!c)
        return 0;
    pthread_mutex_lock(&c->mu);
    int have = (c->have >> m) & 1;
    if (have)
        *out = c->s[m];
    pthread_mutex_unlock(&c->mu);
    return have;
}

void tp_an_view_gpu_sum_put(const tp_an_view *v, unsigned kt_mask, const tp_an_gpu_sum *s) {
    struct tp_an_gpu_sums *c = v->gpu_sums;
    unsigned m = gpu_sum_slot(v, kt_mask);
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    c->s[m] = *s;
    c->have |= 1u << m;
    pthread_mutex_unlock(&c->mu);
}

void tp_an_view_build(tp_an_view *v, const tp_model *m, const tp_rank *r, const tp_an_opts *opts) {
    if (r->corr_dropped) /* the links are found through it (tp_rank_drop_corr_index) */
        abort();
    memset(v, 0, sizeof *v);
    v->m = m;
    v->r = r;
    if (opts)
        v->opts = *opts;
    else
        tp_an_opts_init(&v->opts);
    v->rank = v->opts.compat_hta ? r->rank_hta : r->rank;
    v->gpu_sums = tp_an_alloc(1, sizeof *v->gpu_sums);
    memset(v->gpu_sums, 0, sizeof *v->gpu_sums);
    pthread_mutex_init(&v->gpu_sums->mu, NULL);
    size_t n = r->ev.n;
    /* Scratch kept between the analyses: by default up to 24 bytes per row (three columns of
     * int64): on a 10 M-record trace it took a fifth of the page faults off for 7 % more peak
     * RSS (docs/PERFORMANCE.md). Kineto ranks keep none: their peak per MB of JSON is a goal
     * of its own, and on a 2.2 GB JSON the kept blocks were 50-100 MiB of it (0.32-0.35
     * MiB/MB, 0.30 without) for 25 % more page faults and the same CPU time (Kineto report
     * peak, fourth round). */
    size_t per_row =
        v->opts.scratch_row_bytes ? v->opts.scratch_row_bytes : TP_AN_SCRATCH_ROW_BYTES;
    v->scratch = tp_scratch_open(r->n_json_events ? 0 : per_row * n);
    tp_scratch_move(v->scratch, m->scratch); /* the model finish's blocks, already faulted */
    tp_clockmode c;
    clock_mode(&c, r, &v->opts);
    clock_dur8(&c, &v->opts);
    clock_ts(&c, r);
    v->ts_base = c.ts_base;
    v->ts_by_row = c.ts_col == TS_BY_ROW ? r->ev.ts : NULL; /* (admit_same: ts64 instead) */
    tp_syncnames s = {tp_model_find_str(m, TP_KINETO_SYNC_EVENT),
                      tp_model_find_str(m, TP_KINETO_SYNC_CONTEXT), 0, 0};
    s.ev_id = s.event_sync ? s.event_sync : UINT32_MAX;
    s.ctx_id = s.context_sync ? s.context_sync : UINT32_MAX;
    int trim = v->opts.compat_hta && tp_an_profiler_step_names(m) >= 2;
    if (!trim && admit_same(v, &c)) {
        /* the model's rows in its order: one step on both threads, no class column (only
         * the correlation index's rows need a class: link_same finds theirs) */
        admit_untrimmed(v, &c); /* no row nor duration column to fill */
        kinds_and_links(v, r, &s, same_piece);
        return;
    }
    if (!trim && !(v->opts.window_hi > v->opts.window_lo)) {
        /* every model row once, in load order (compat_hta): the rows and times on one
         * thread, then the kinds and links as for admit_same, with the load order as the
         * map from model rows to view rows: no class column, no TP_AN_VIEW_LINKED_OUT */
        admit_untrimmed(v, &c);
        finish_dur(v);
        kinds_and_links(v, r, &s, permuted_piece);
        return;
    }
    uint8_t *cls = tp_an_tmp(v, n, 1);
    class_part classes = {&r->ev, &s, cls};
    if (trim) {
        classify_rows(&classes); /* trimming reads every row's class before it admits rows */
        admit_rows(v, cls, &c);
    } else {
        admit_part admit = {v, &c}; /* the rows' classes on the other thread meanwhile */
        tp_par_both(n, admit_untrimmed_part, &admit, classify_rows, &classes);
    }
    finish_dur(v);
    size_t vn = v->n ? v->n : 1;
    v->kind = tp_an_alloc(vn, 1);
    v->link = tp_an_alloc(vn, sizeof *v->link);
    view_part link = {v, cls, 0}, kinds = {v, NULL, 0}; /* see classify_and_order */
    tp_par_both(v->n, classify_and_order, &kinds, link_part, &link);
    /* link_rows's partners can be rows the view left out (trimmed, outside the window):
     * linked then differs from link >= 0 */
    if (link.out)
        mark_linked_out(v);
    if (!v->opts.compat_hta && v->n == n) { /* row_order's identity, nothing cut */
        v->by_corr = r->by_corr;
        v->n_by_corr = r->n_by_corr;
    }
    tp_an_tmp_put(v, cls);
}

const uint32_t *tp_an_view_cat_rows(const tp_an_view *v, tp_cat c, size_t *n) {
    static const uint32_t none[1];
    const tp_buckets *b = &v->r->cats;
    *n = 0;
    if (!tp_an_view_ts_model(v) || !b->rows) /* admit_same's views only, with the index */
        return NULL;
    for (size_t j = 0; j < b->n; j++)
        if (b->key[j] == (int64_t)c) {
            *n = b->off[j + 1] - b->off[j];
            return b->rows + b->off[j];
        }
    return none;
}

unsigned tp_an_view_build_only_columns(const tp_an_view *v) {
    /* row_order and admit_same are the load order's only readers */
    return v->row && v->row == v->r->ev.load_rows32 ? 0 : TP_EV_DROP_LOAD_ORDER;
}

void tp_an_view_free(tp_an_view *v) {
    if (!v)
        return;
    free(v->row_own);
    free(v->ts64_own);
    free(v->ts32);
    free(v->dur8);
    free(v->dur32_own);
    if (v->dur8 || v->dur32_own) { /* else the model's */
        free(v->dur_wide.row);
        free(v->dur_wide.val);
    }
    free(v->kind);
    free(v->link);
    free(v->gpu_order);
    if (v->gpu_sums) {
        pthread_mutex_destroy(&v->gpu_sums->mu);
        free(v->gpu_sums);
    }
    tp_scratch_close(v->scratch);
    memset(v, 0, sizeof *v);
}
