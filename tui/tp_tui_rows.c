/* tp_tui_rows: a lane's events by nesting level (see the header). */
#include "tp_tui_rows.h"

#include <stdlib.h>

#include "tp_mem.h"

/* Greedy levels of a stream: the first level whose last end is at or before the row's
 * start; a stream that serializes its work needs one. At most MAX_STREAM_LEVELS, the
 * last taking whatever overlaps more. */
#define MAX_STREAM_LEVELS 8

static int stream_level(const tp_events *ev, uint32_t r, int64_t *last_end, int *n) {
    int k = 0;
    while (k < *n && last_end[k] > ev->ts[r])
        k++;
    if (k == MAX_STREAM_LEVELS)
        k = MAX_STREAM_LEVELS - 1;
    if (k == *n)
        (*n)++;
    last_end[k] = ev->ts[r] + tp_ev_dur(ev, r);
    return k;
}

static void push(tp_tui_level *l, const tp_events *ev, uint32_t r) {
    int64_t end = ev->ts[r] + tp_ev_dur(ev, r);
    l->rows[l->n] = r;
    l->maxend[l->n] = l->n && l->maxend[l->n - 1] > end ? l->maxend[l->n - 1] : end;
    l->cumdur[l->n + 1] = l->cumdur[l->n] + tp_ev_dur(ev, r);
    l->n++;
}

void tp_tui_levels_build(const tp_events *ev, const uint32_t *rows, size_t n, int is_stream,
                         tp_tui_level **out, int *n_out) {
    int *lev = tp_mem_xalloc(n ? n : 1, sizeof *lev), nl = 1;
    int64_t last_end[MAX_STREAM_LEVELS];
    int ns = 0;
    for (size_t i = 0; i < n; i++) {
        lev[i] = is_stream ? stream_level(ev, rows[i], last_end, &ns) : tp_ev_depth(ev, rows[i]);
        nl = lev[i] + 1 > nl ? lev[i] + 1 : nl;
    }
    size_t *count = tp_mem_xcalloc((size_t)nl, sizeof *count);
    for (size_t i = 0; i < n; i++)
        count[lev[i]]++;
    tp_tui_level *lv = tp_mem_xcalloc((size_t)nl, sizeof *lv);
    for (int k = 0; k < nl; k++) {
        lv[k].rows = tp_mem_xalloc(count[k] ? count[k] : 1, sizeof *lv[k].rows);
        lv[k].maxend = tp_mem_xalloc(count[k] ? count[k] : 1, sizeof *lv[k].maxend);
        lv[k].cumdur = tp_mem_xcalloc(count[k] + 1, sizeof *lv[k].cumdur);
    }
    for (size_t i = 0; i < n; i++)
        push(&lv[lev[i]], ev, rows[i]);
    free(count);
    free(lev);
    *out = lv;
    *n_out = nl;
}

void tp_tui_levels_free(tp_tui_level *lv, int n) {
    for (int k = 0; lv && k < n; k++) {
        free(lv[k].rows);
        free(lv[k].maxend);
        free(lv[k].cumdur);
    }
    free(lv);
}

size_t tp_tui_level_seek(const tp_tui_level *lv, int64_t t) {
    size_t lo = 0, hi = lv->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (lv->maxend[mid] >= t)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* First i with ts[rows[i]] > t. */
static size_t upper(const tp_tui_level *lv, const tp_events *ev, int64_t t) {
    size_t lo = 0, hi = lv->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ev->ts[lv->rows[mid]] > t)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

size_t tp_tui_level_until(const tp_tui_level *lv, const tp_events *ev, int64_t t) {
    size_t lo = 0, hi = lv->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ev->ts[lv->rows[mid]] >= t)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

int64_t tp_tui_level_busy(const tp_tui_level *lv, const tp_events *ev, int64_t a, int64_t b,
                          size_t *touched) {
    size_t i0 = tp_tui_level_seek(lv, a), i1 = tp_tui_level_until(lv, ev, b);
    while (i0 < i1 && ev->ts[lv->rows[i0]] + tp_ev_dur(ev, lv->rows[i0]) < a)
        i0++; /* reached by maxend only: an earlier long row */
    *touched = i1 > i0 ? i1 - i0 : 0;
    if (i1 <= i0)
        return 0;
    int64_t busy = lv->cumdur[i1] - lv->cumdur[i0];
    uint32_t f = lv->rows[i0], l = lv->rows[i1 - 1];
    if (ev->ts[f] < a)
        busy -= a - ev->ts[f];
    if (ev->ts[l] + tp_ev_dur(ev, l) > b)
        busy -= ev->ts[l] + tp_ev_dur(ev, l) - b;
    return busy < 0 ? 0 : busy > b - a ? b - a : busy;
}

long tp_tui_level_at(const tp_tui_level *lv, const tp_events *ev, int64_t t) {
    if (!lv->n)
        return -1;
    size_t u = upper(lv, ev, t); /* rows before u start at or before t */
    for (size_t i = u; i-- > 0;) {
        uint32_t r = lv->rows[i];
        if (ev->ts[r] + tp_ev_dur(ev, r) >= t)
            return r; /* contains t (a zero-length row at t too) */
        if (lv->maxend[i] < t)
            break; /* nothing earlier reaches t */
    }
    long best = -1;
    int64_t best_d = 0;
    if (u > 0) {
        uint32_t r = lv->rows[u - 1];
        best = r, best_d = t - (ev->ts[r] + tp_ev_dur(ev, r));
    }
    if (u < lv->n && (best < 0 || ev->ts[lv->rows[u]] - t < best_d))
        best = lv->rows[u];
    return best;
}

long tp_tui_level_find(const tp_tui_level *lv, const tp_events *ev, uint32_t row) {
    size_t lo = 0, hi = lv->n;
    int64_t ts = ev->ts[row];
    while (lo < hi) { /* first i with ts >= the row's */
        size_t mid = lo + (hi - lo) / 2;
        if (ev->ts[lv->rows[mid]] >= ts)
            hi = mid;
        else
            lo = mid + 1;
    }
    for (size_t i = lo; i < lv->n && ev->ts[lv->rows[i]] == ts; i++)
        if (lv->rows[i] == row)
            return (long)i;
    return -1;
}
