/* tp_text: UTF-8 decoding and terminal-safe text (see tp_text.h). */
#include "tp_text.h"

#include <stdlib.h>
#include <string.h>

int tp_utf8_next(const char *s, size_t n, uint32_t *cp) {
    const unsigned char *u = (const unsigned char *)s;
    static const uint32_t min_cp[] = {0, 0, 0x80, 0x800, 0x10000};
    int len = u[0] < 0x80         ? 1
              : (u[0] >> 5) == 6  ? 2
              : (u[0] >> 4) == 14 ? 3
              : (u[0] >> 3) == 30 ? 4
                                  : 0;
    *cp = len == 1 ? u[0] : TP_UTF8_INVALID;
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

int tp_text_cp_is_control(uint32_t cp) {
    return cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp < 0xA0) || cp == TP_UTF8_INVALID;
}

/* The safe form of the character of `k` bytes at `s` with code point `cp`: a pointer to its
 * bytes (the input itself, or the escape written into `esc`) and their count in *n. */
static const char *safe_char(const char *s, int k, uint32_t cp, char esc[8], size_t *n) {
    static const char hex[] = "0123456789abcdef";
    if (!tp_text_cp_is_control(cp)) {
        *n = (size_t)k;
        return s;
    }
    if (cp >= 0x80 && cp < 0xA0) { /* a C1 control, valid UTF-8: name the code point */
        memcpy(esc, "\\u00", 4);
        esc[4] = hex[cp >> 4], esc[5] = hex[cp & 15];
        *n = 6;
        return esc;
    }
    unsigned char b = (unsigned char)s[0]; /* a C0 control, DEL, or an invalid byte */
    esc[0] = '\\', esc[1] = 'x', esc[2] = hex[b >> 4], esc[3] = hex[b & 15];
    *n = 4;
    return esc;
}

/* Calls put(ctx, bytes, n) for each character's safe form, in order; stops when put returns
 * nonzero and returns that. */
static int walk(const char *s, int (*put)(void *, const char *, size_t), void *ctx) {
    size_t left = s ? strlen(s) : 0;
    while (left) {
        uint32_t cp;
        char esc[8];
        size_t n;
        int k = tp_utf8_next(s, left, &cp);
        const char *b = safe_char(s, k, cp, esc, &n);
        int r = put(ctx, b, n);
        if (r)
            return r;
        s += k, left -= (size_t)k;
    }
    return 0;
}

int tp_text_is_safe(const char *s) {
    size_t left = s ? strlen(s) : 0;
    while (left) {
        uint32_t cp;
        int k = tp_utf8_next(s, left, &cp);
        if (tp_text_cp_is_control(cp))
            return 0;
        s += k, left -= (size_t)k;
    }
    return 1;
}

static int count(void *ctx, const char *b, size_t n) {
    (void)b;
    *(size_t *)ctx += n;
    return 0;
}

size_t tp_text_safe_size(const char *s) {
    size_t n = 1;
    walk(s, count, &n);
    return n;
}

typedef struct {
    char *out;
    size_t used, cap;
} sink;

static int append(void *ctx, const char *b, size_t n) {
    sink *k = ctx;
    if (k->used + n + 1 > k->cap)
        return 1; /* whole characters only */
    memcpy(k->out + k->used, b, n);
    k->used += n;
    return 0;
}

const char *tp_text_safe(char *out, size_t cap, const char *s) {
    sink k = {out, 0, cap};
    walk(s, append, &k);
    out[k.used] = 0;
    return out;
}

char *tp_text_safe_dup(const char *s) {
    size_t n = tp_text_safe_size(s);
    char *out = malloc(n);
    return out ? (char *)tp_text_safe(out, n, s) : NULL;
}

static int to_file(void *ctx, const char *b, size_t n) {
    return fwrite(b, 1, n, (FILE *)ctx) == n ? 0 : EOF;
}

int tp_text_fputs(const char *s, FILE *f) {
    return walk(s, to_file, f) ? EOF : 0;
}

const char *tp_text_utf8_fix(const char *s, size_t len, size_t *out_len) {
    size_t bad = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        int k = tp_utf8_next(s + i, len - i, &cp);
        bad += cp == TP_UTF8_INVALID;
        i += (size_t)k;
    }
    *out_len = len;
    if (!bad)
        return s;
    char *out = malloc(len + 2 * bad + 1); /* each bad byte becomes 3 bytes */
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        int k = tp_utf8_next(s + i, len - i, &cp);
        if (cp == TP_UTF8_INVALID)
            memcpy(out + o, "\xef\xbf\xbd", 3), o += 3;
        else
            memcpy(out + o, s + i, (size_t)k), o += (size_t)k;
        i += (size_t)k;
    }
    out[o] = 0;
    *out_len = o;
    return out;
}
