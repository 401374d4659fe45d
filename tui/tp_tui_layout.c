/* tp_tui_layout: pure layout and time-mapping functions (see the header). Cell boundaries
 * use 128-bit products so a window of any int64 span maps exactly, with no rounding drift
 * between a cell's end and the next cell's start. */
#include "tp_tui_layout.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

typedef __int128 tp_i128;

tp_tui_window tp_tui_window_make(int64_t t0, int64_t span, int width) {
    tp_tui_window w = {t0, span, width < 1 ? 1 : width};
    if (w.span < w.width)
        w.span = w.width;
    return w;
}

int64_t tp_tui_cell_start(const tp_tui_window *w, int cell) {
    assert(w->width >= 1 && w->span >= w->width);
    return w->t0 + (int64_t)((tp_i128)w->span * cell / w->width);
}

int tp_tui_time_cell(const tp_tui_window *w, int64_t t) {
    if (t < w->t0)
        return -1;
    /* The largest c with floor(span * c / width) <= t - t0, so this inverts cell_start
     * exactly even when cells are uneven. */
    tp_i128 c = ((tp_i128)(t - w->t0 + 1) * w->width - 1) / w->span;
    return c >= w->width ? w->width : (int)c;
}

tp_tui_window tp_tui_zoom(const tp_tui_window *w, int anchor, int in, int64_t max_span) {
    int64_t at = tp_tui_cell_start(w, anchor);
    int64_t span = in > 0 ? w->span / 2 : (w->span > INT64_MAX / 2 ? INT64_MAX : w->span * 2);
    if (max_span < w->width)
        max_span = w->width;
    if (span > max_span)
        span = max_span;
    if (span < w->width)
        span = w->width;
    tp_tui_window z = {0, span, w->width};
    z.t0 = at - (int64_t)((tp_i128)span * anchor / w->width);
    return z;
}

tp_tui_window tp_tui_clamp(const tp_tui_window *w, int64_t lo, int64_t hi) {
    tp_tui_window c = *w;
    if (hi - lo <= c.span || c.t0 < lo)
        c.t0 = lo;
    else if (c.t0 > hi - c.span)
        c.t0 = hi - c.span;
    return c;
}

/* Adds the coverage of the merged interval [s, e) to acc (ns per cell). */
static void cover(const tp_tui_window *w, int64_t s, int64_t e, double *acc) {
    int64_t t1 = tp_tui_cell_start(w, w->width);
    if (s < w->t0)
        s = w->t0;
    if (e > t1)
        e = t1;
    if (e <= s)
        return;
    int c1 = tp_tui_time_cell(w, e - 1);
    for (int c = tp_tui_time_cell(w, s); c <= c1 && c < w->width; c++) {
        int64_t a = tp_tui_cell_start(w, c), b = tp_tui_cell_start(w, c + 1);
        acc[c] += (double)((b < e ? b : e) - (a > s ? a : s));
    }
}

/* Counts one interval in every cell it overlaps (a zero-length one in the cell of its ts). */
static void touch(const tp_tui_window *w, int64_t s, int64_t e, uint32_t *touched) {
    int64_t t1 = tp_tui_cell_start(w, w->width);
    if (e < w->t0 || s >= t1 || (e == w->t0 && s < e))
        return;
    int c0 = tp_tui_time_cell(w, s), c1 = tp_tui_time_cell(w, e > s ? e - 1 : s);
    for (int c = c0 < 0 ? 0 : c0; c <= c1 && c < w->width; c++)
        touched[c]++;
}

void tp_tui_busy_cells(const tp_tui_window *w, const int64_t *ts, const int64_t *dur,
                       const uint32_t *rows, size_t n, double *frac, uint32_t *touched) {
    for (int c = 0; c < w->width; c++)
        frac[c] = 0;
    if (touched)
        memset(touched, 0, (size_t)w->width * sizeof *touched);
    int64_t cs = 0, ce = 0, t1 = tp_tui_cell_start(w, w->width);
    int open = 0;
    for (size_t i = 0; i < n; i++) {
        size_t r = rows ? rows[i] : i;
        int64_t s = ts[r], e = ts[r] + (dur[r] > 0 ? dur[r] : 0);
        if (s >= t1)
            break; /* sorted by ts: nothing after this reaches into the window */
        if (touched)
            touch(w, s, e, touched);
        if (open && s <= ce) {
            ce = e > ce ? e : ce;
            continue;
        }
        if (open)
            cover(w, cs, ce, frac);
        cs = s, ce = e, open = 1;
    }
    if (open)
        cover(w, cs, ce, frac);
    for (int c = 0; c < w->width; c++)
        frac[c] /= (double)(tp_tui_cell_start(w, c + 1) - tp_tui_cell_start(w, c));
}

int tp_tui_busy_level(double frac, uint32_t touched) {
    if (!(frac > 0))
        return touched ? 1 : 0;
    int l = (int)ceil(frac * 8 - 1e-9);
    return l < 1 ? 1 : l > 8 ? 8 : l;
}

const char *tp_tui_busy_glyph(int level, int ascii) {
    static const char *const blocks[] = {" ",      "\u2581", "\u2582", "\u2583", "\u2584",
                                         "\u2585", "\u2586", "\u2587", "\u2588"};
    static const char *const plain[] = {" ", ".", ":", "-", "=", "+", "*", "#", "@"};
    level = level < 0 ? 0 : level > 8 ? 8 : level;
    return ascii ? plain[level] : blocks[level];
}

/* ------------------------------------------------------------------ UTF-8 */

int tp_tui_utf8_next(const char *s, size_t n, uint32_t *cp) {
    const unsigned char *u = (const unsigned char *)s;
    static const uint32_t min_cp[] = {0, 0, 0x80, 0x800, 0x10000};
    int len = u[0] < 0x80         ? 1
              : (u[0] >> 5) == 6  ? 2
              : (u[0] >> 4) == 14 ? 3
              : (u[0] >> 3) == 30 ? 4
                                  : 0;
    *cp = 0xFFFD;
    if (len == 1)
        *cp = u[0];
    if (len <= 1 || (size_t)len > n)
        return 1;
    uint32_t c = u[0] & (0x7Fu >> len);
    for (int i = 1; i < len; i++) {
        if ((u[i] & 0xC0) != 0x80)
            return 1;
        c = (c << 6) | (u[i] & 0x3Fu);
    }
    if (c < min_cp[len] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return 1; /* overlong, out of range, or a surrogate */
    *cp = c;
    return len;
}

typedef struct {
    uint32_t lo, hi;
} cp_range;

static int in_ranges(uint32_t cp, const cp_range *r, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (cp >= r[i].lo && cp <= r[i].hi)
            return 1;
    return 0;
}

int tp_tui_cp_width(uint32_t cp) {
    /* A short table rather than wcwidth(): wcwidth depends on the process locale, and the
     * snapshot and the tests must not. The common cases are covered; rare scripts count 1. */
    static const cp_range zero[] = {{0x0300, 0x036F}, {0x0483, 0x0489}, {0x0591, 0x05BD},
                                    {0x0610, 0x061A}, {0x064B, 0x065F}, {0x200B, 0x200F},
                                    {0x20D0, 0x20FF}, {0xFE00, 0xFE0F}, {0xFE20, 0xFE2F}};
    static const cp_range wide[] = {{0x1100, 0x115F},   {0x2E80, 0x303E},   {0x3041, 0x33FF},
                                    {0x3400, 0x4DBF},   {0x4E00, 0x9FFF},   {0xA000, 0xA4CF},
                                    {0xAC00, 0xD7A3},   {0xF900, 0xFAFF},   {0xFE30, 0xFE4F},
                                    {0xFF00, 0xFF60},   {0xFFE0, 0xFFE6},   {0x1F300, 0x1F64F},
                                    {0x1F900, 0x1F9FF}, {0x20000, 0x2FFFD}, {0x30000, 0x3FFFD}};
    if (in_ranges(cp, zero, sizeof zero / sizeof zero[0]))
        return 0;
    return in_ranges(cp, wide, sizeof wide / sizeof wide[0]) ? 2 : 1;
}

int tp_tui_str_width(const char *s) {
    int w = 0;
    size_t n = strlen(s);
    while (n) {
        uint32_t cp;
        int k = tp_tui_utf8_next(s, n, &cp);
        w += tp_tui_cp_width(cp);
        s += k, n -= (size_t)k;
    }
    return w;
}

static int is_control(uint32_t cp) {
    return cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp < 0xA0) || cp == 0xFFFD;
}

int tp_tui_fit(char *out, size_t cap, const char *s, int cols) {
    assert(cap >= 1);
    int cut = tp_tui_str_width(s) > cols, room = cut ? cols - 1 : cols, w = 0;
    size_t o = 0, n = strlen(s);
    while (n) {
        uint32_t cp;
        int k = tp_tui_utf8_next(s, n, &cp), cw = tp_tui_cp_width(cp);
        int bad = is_control(cp);
        size_t need = bad ? 1 : (size_t)k;
        if (w + cw > room || o + need + 4 > cap)
            break;
        memcpy(out + o, bad ? "?" : s, need);
        o += need, w += cw, s += k, n -= (size_t)k;
    }
    if (cut && cols >= 1 && o + 4 <= cap) {
        memcpy(out + o, "\u2026", 3);
        o += 3, w++;
    }
    out[o] = 0;
    return w;
}

/* Display columns of s[0..n), and in *fit the bytes of its longest prefix of at most `cols`
 * columns (at least one character). */
static int span_width(const char *s, size_t n, int cols, size_t *fit) {
    size_t o = 0;
    int w = 0;
    *fit = 0;
    while (o < n) {
        uint32_t cp;
        int k = tp_tui_utf8_next(s + o, n - o, &cp);
        w += tp_tui_cp_width(cp), o += (size_t)k;
        if (w <= cols || *fit == 0)
            *fit = o;
    }
    return w;
}

size_t tp_tui_wrap(const char *s, int cols, const char **next) {
    size_t end = 0, at = 0; /* end: bytes of the words placed; at: where the next one starts */
    int w = 0;
    for (;;) {
        size_t ws = at + strspn(s + at, " "), we = ws + strcspn(s + ws, " "), fit;
        if (we == ws)
            break;
        int ww = span_width(s + ws, we - ws, cols, &fit), gap = end ? (int)(ws - end) : 0;
        if (end && w + gap + ww > cols)
            break;
        if (!end && ww > cols) { /* a word wider than the line: cut it */
            end = ws + fit;
            break;
        }
        w += gap + ww, end = we, at = we;
    }
    *next = s + end + strspn(s + end, " ");
    return end;
}

/* ------------------------------------------------------------------ screen */

tp_tui_screen tp_tui_screen_split(int w, int h) {
    tp_tui_screen s = {0};
    s.w = w, s.h = h;
    s.ok = w >= TP_TUI_MIN_W && h >= TP_TUI_MIN_H;
    s.title_row = 0;
    s.body_top = 1;
    s.body_h = h - 2 > 0 ? h - 2 : 0;
    s.help_row = h - 1;
    return s;
}

tp_tui_timeline_cols tp_tui_timeline_split(int w) {
    tp_tui_timeline_cols c;
    c.label_w = w / 6 < 10 ? 10 : w / 6 > 20 ? 20 : w / 6;
    c.plot_w = w - c.label_w;
    if (c.plot_w < 1)
        c.plot_w = 1;
    return c;
}

int tp_tui_scroll_to(int top, int sel, int vis, int n) {
    if (vis < 1 || n <= vis)
        return 0;
    if (sel < top)
        top = sel;
    if (sel >= top + vis)
        top = sel - vis + 1;
    if (top > n - vis)
        top = n - vis;
    return top < 0 ? 0 : top;
}

int tp_tui_name_width(int w, const int *fixed, int n_fixed, int min_w) {
    int rest = w;
    for (int i = 0; i < n_fixed; i++)
        rest -= fixed[i] + 1;
    return rest < min_w ? min_w : rest;
}
