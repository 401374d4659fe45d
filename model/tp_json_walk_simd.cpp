/* tp_json_walk_simd.cpp: the C++ side of tp_json_walk, simdjson's stage 1 (its SIMD index of
 * a text's structural characters) and a walk of that index of our own, behind three extern "C"
 * functions that tp_json_walk.c (C) calls.
 *
 * On x86-64 this file is compiled for haswell (AVX2, BMI, PCLMUL, LZCNT); tp_json_walk.c
 * calls it only when the CPU has those. Stage 1 is libsimdjson's, the code it picks for the
 * CPU at run time (as On-Demand's parser did). */
#include <simdjson.h>

#include <cstring>
#include <memory>
#include <new>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#ifdef __AVX2__
#include <immintrin.h>
#endif
#include <string_view>

#include "tp_json_walk.h"

static_assert(TP_JSON_WALK_PADDING >= simdjson::SIMDJSON_PADDING, "padding below simdjson's");

namespace {

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

bool is_ws(char c) {
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/* The digits that s[0..8) starts with: their count (0-8) and, with Val, their value into *v
 * (SWAR, little-endian: the first digit is the lowest byte). The eight bytes may run past the
 * number's token, into the text after it or its padding (tp_json_walk_elements' contract):
 * the digits stop before the token's end, which is a structural character or whitespace. */
template <bool Val>
__attribute__((always_inline)) inline unsigned lead_digits(const char *s, uint64_t *v) {
    uint64_t w;
    memcpy(&w, s, 8);
    /* a byte is a digit when its high nibble is 3 and adding 6 leaves it so (no carry comes
     * into a byte from the digits before it) */
    uint64_t bad = ((w & 0xf0f0f0f0f0f0f0f0ull) ^ 0x3030303030303030ull) |
                   (((w + 0x0606060606060606ull) & 0xf0f0f0f0f0f0f0f0ull) ^ 0x3030303030303030ull);
    unsigned k = bad ? (unsigned)__builtin_ctzll(bad) >> 3 : 8;
    if (Val) {
        if (k == 0) {
            *v = 0;
            return 0;
        }
        w = (w - 0x3030303030303030ull) << (8 * (8 - k)); /* the k digits, zeros before them */
        w = (w * 10 + (w >> 8)) & 0x00ff00ff00ff00ffull;
        w = (w * 100 + (w >> 16)) & 0x0000ffff0000ffffull;
        *v = (w * 10000 + (w >> 32)) & 0xffffffffull;
    }
    return k;
}

/* Where a number whose mantissa ends at s[i] ends, after its optional exponent, when only
 * whitespace follows it up to the token's end n; 0 otherwise (a number has a digit). Both
 * number readers below end with it. */
__attribute__((always_inline)) inline size_t number_end(const char *s, size_t i, size_t n) {
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        size_t d = i;
        while (i < n && is_digit(s[i]))
            i++;
        if (i == d)
            return 0;
    }
    size_t end = i;
    while (i < n && is_ws(s[i]))
        i++;
    return i == n ? end : 0;
}

const uint64_t pow10[9] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000};

/* JSON's number grammar, which stage 1 does not check:
 * -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
 * The raw token ends at the next structural character, so it may carry whitespace after the
 * number: the grammar's longest match must be followed by whitespace alone, and `num` is that
 * match (one pass: trimming first, then matching, read the token twice). With `Val`, *kind
 * says whether the value came too (the digits are read here anyway, and the importer's
 * callbacks read them again to convert them): NUM_INT, an integer of at most 18 digits, *v its
 * value; NUM_MILLI, at most 15 digits, a point and 1-3 more, no exponent (Kineto's µs times),
 * *v its value times 1000, exact; NUM_OTHER, none. */
enum { NUM_OTHER, NUM_INT, NUM_MILLI };

template <bool Val>
__attribute__((noinline)) bool json_number_slow(std::string_view raw, std::string_view &num,
                                                int64_t *v, int *kind) {
    const char *s = raw.data();
    size_t i = 0, n = raw.size();
    uint64_t u = 0;
    if (i < n && s[i] == '-')
        i++;
    size_t d = i;
    if (i < n && s[i] == '0')
        i++;
    else if (i < n && is_digit(s[i])) {
        /* up to eight at a time (a ts has 13-16 digits, ids 7-10): with the value, a loop of
         * ~10 instructions a digit was the walk's largest part */
        for (unsigned k = 8; k == 8;) {
            uint64_t v8 = 0;
            k = lead_digits<Val>(s + i, &v8);
            if (i + k > n)
                return false; /* ALWAYS: the token ends at a structural character */
            if (Val)
                u = u * pow10[k] + v8; /* wraps past 19 digits: not used then */
            i += k;
        }
    } else
        return false;
    if (Val)
        *kind = i - d <= 18 ? NUM_INT : NUM_OTHER; /* |u| < 10^18 when used */
    if (i < n && s[i] == '.') {
        static const uint64_t scale[] = {1000, 100, 10, 1};
        size_t id = i - d, f = ++i;
        uint64_t fv = 0;
        for (unsigned k = 8; k == 8;) {
            uint64_t v8 = 0;
            k = lead_digits<Val>(s + i, &v8);
            if (i + k > n)
                return false; /* ALWAYS, as above */
            if (Val)
                fv = fv * pow10[k] + v8;
            i += k;
        }
        if (i == f)
            return false;
        if (Val && id <= 15 && i - f <= 3) {
            *kind = NUM_MILLI;
            u = u * 1000 + fv * scale[i - f]; /* < 10^18 */
        } else if (Val) {
            *kind = NUM_OTHER;
        }
    }
    if (Val)
        *v = s[0] == '-' ? -(int64_t)u : (int64_t)u;
    if (Val && i < n && (s[i] == 'e' || s[i] == 'E'))
        *kind = NUM_OTHER;
    size_t end = number_end(s, i, n);
    if (!end)
        return false;
    num = std::string_view(s, end);
    return true;
}

#ifdef __AVX2__
/* The count of decimal digits that s[0..16) starts with (16: all of them), and with Val their
 * value into *v (0 for none): 16 bytes compared and converted at once (pmaddubsw and
 * pmaddwd), in place of lead_digits' steps of 8 and their multiply-adds: numbers were ~70
 * instructions each, most of the walk's own on traces of 16-digit µs times. s[0..16) may run
 * past the number, into the text after it or its padding, as lead_digits'. */
template <bool Val>
__attribute__((always_inline)) inline unsigned digits16(const char *s, uint64_t *v) {
    /* lane j of a shuffle by `align + k` moves lane j + k - 16 to j, zero below: the k
     * digits to the top lanes */
    alignas(16) static const int8_t align[32] = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                                 -1, -1, -1, -1, -1, 0,  1,  2,  3,  4,  5,
                                                 6,  7,  8,  9,  10, 11, 12, 13, 14, 15};
    __m128i d =
        _mm_sub_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i *>(s)), _mm_set1_epi8('0'));
    unsigned digit =
        (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(9)), d));
    unsigned k = (unsigned)__builtin_ctz(~digit); /* bit 16 of ~digit is set */
    if (Val) {
        __m128i x =
            _mm_shuffle_epi8(d, _mm_loadu_si128(reinterpret_cast<const __m128i *>(align + k)));
        x = _mm_maddubs_epi16(
            x, _mm_setr_epi8(10, 1, 10, 1, 10, 1, 10, 1, 10, 1, 10, 1, 10, 1, 10, 1));
        x = _mm_madd_epi16(x, _mm_setr_epi16(100, 1, 100, 1, 100, 1, 100, 1));
        x = _mm_packus_epi32(x, x); /* four-digit groups, < 10^4 */
        x = _mm_madd_epi16(x, _mm_setr_epi16(10000, 1, 10000, 1, 0, 0, 0, 0));
        *v = (uint64_t)(uint32_t)_mm_cvtsi128_si32(x) * 100000000u +
             (uint32_t)_mm_extract_epi32(x, 1);
    }
    return k;
}

/* json_number for what nearly every number is: at most 16 digits, and 1-16 after a point
 * (Kineto's µs times, ids); the rest (17 digits or more on either side) json_number_slow,
 * which gives the same results for all. */
template <bool Val>
__attribute__((always_inline)) inline bool json_number(std::string_view raw, std::string_view &num,
                                                       int64_t *v, int *kind) {
    const char *s = raw.data();
    size_t n = raw.size(), i = s[0] == '-';
    uint64_t u = 0, fv = 0;
    unsigned k = digits16<Val>(s + i, &u);
    if (k == 16 && is_digit(s[i + 16]))
        return json_number_slow<Val>(raw, num, v, kind);
    if (k == 0 || i + k > n) /* ALWAYS: i + k <= n */
        return false;
    if (s[i] == '0' && k > 1)
        return false; /* a leading zero */
    size_t id = k;
    i += k;
    int kd = NUM_INT;
    if (i < n && s[i] == '.') {
        unsigned f = digits16<Val>(s + i + 1, &fv);
        if (f == 16 && is_digit(s[i + 17]))
            return json_number_slow<Val>(raw, num, v, kind);
        if (f == 0 || i + 1 + f > n)
            return false;
        static const uint64_t scale[] = {1000, 100, 10, 1};
        i += 1 + f;
        kd = NUM_OTHER;
        if (Val && id <= 15 && f <= 3) {
            kd = NUM_MILLI;
            u = u * 1000 + fv * scale[f]; /* < 10^18 */
        }
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E'))
        kd = NUM_OTHER;
    size_t end = number_end(s, i, n);
    if (!end)
        return false;
    if (Val) {
        *kind = kd;
        *v = s[0] == '-' ? -(int64_t)u : (int64_t)u;
    }
    num = std::string_view(s, end);
    return true;
}
#else
template <bool Val>
__attribute__((always_inline)) inline bool json_number(std::string_view raw, std::string_view &num,
                                                       int64_t *v, int *kind) {
    return json_number_slow<Val>(raw, num, v, kind);
}
#endif

const unsigned char *bytes(std::string_view s) {
    return reinterpret_cast<const unsigned char *>(s.data());
}

/* A key or string without a backslash is its raw text up to the closing quote (stage 1
 * found that quote, and checked the UTF-8): `text` is that text, no copy. Unescaping each
 * into a buffer through a call into libsimdjson was the walk's largest cost after its own
 * code (parse_string: 3.7 % of `report`'s CPU time on a 14 MB trace, by perf). */
bool plain_text(const char *k, std::string_view &text) {
    size_t n = 0;
#ifdef __SSE2__
    /* 16 bytes at a time: the text's padding covers reads past the closing quote */
    const __m128i q = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\');
    for (;; n += 16) {
        __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i *>(k + n));
        unsigned m =
            (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(c, q), _mm_cmpeq_epi8(c, bs)));
        if (m) {
            n += (size_t)__builtin_ctz(m);
            break;
        }
    }
#else
    while (k[n] != '"' && k[n] != '\\')
        n++;
#endif
    if (k[n] != '"')
        return false;
    text = std::string_view(k, n);
    return true;
}

/* The walk proper, over stage 1's structural indexes (simdjson's own stage 2s are not used):
 * the grammar checked token by token, each token's text read once. On-Demand's iteration
 * (its token iterator, type peeks, depth bookkeeping and skips of values not consumed) and
 * the walk over it were ~424 M of the 1,369 M instructions of `report --compat hta` on
 * hta_df_index_resolver (one import thread); this walk, with digits16 below, ~279 M. It
 * checks the same structure (every container closed by its own bracket, `:` after each key,
 * `,` between members, nothing after the array) and stops at the first surprise, as before:
 * the importer then reads the text with yajl, which words the error.
 *
 * Stage 1 leaves an index per structural character (`{}[]:,`), per string (its opening
 * quote) and per other scalar (its first byte); it has checked the UTF-8, that every string
 * is closed and has no control character. A scalar's text runs to the next index (trailing
 * whitespace included); a string's ends at its closing quote, and stage 1 makes anything
 * other than whitespace after it an index of its own, which the grammar then refuses. */
struct env {
    const char *buf;
    const uint32_t *end; /* past the last token: the array's `]` */
    uint8_t *str;        /* where the next unescaped string goes (they stay until the walk ends) */
    const simdjson::internal::dom_parser_implementation *impl; /* its parse_string */
    const tp_json_walk_cb *cb;
    void *ctx;
};

/* simdjson's default; deeper texts go to yajl */
constexpr unsigned MAX_DEPTH = simdjson::DEFAULT_MAX_DEPTH;

/* The string whose opening quote is at `at`: its text in place, or unescaped into e.str. */
__attribute__((always_inline)) inline bool string_at(env &e, const char *buf, uint32_t at,
                                                     std::string_view &s) {
    if (plain_text(buf + at + 1, s))
        return true;
    uint8_t *end = e.impl->parse_string(reinterpret_cast<const uint8_t *>(buf + at + 1), e.str);
    if (!end)
        return false;
    s = std::string_view(reinterpret_cast<const char *>(e.str), (size_t)(end - e.str));
    e.str = end;
    return true;
}

/* The literal `lit` (n bytes) and whitespace alone in buf[at..end). */
bool literal(const char *buf, uint32_t at, uint32_t end, const char *lit, size_t n) {
    if (end - at < n || memcmp(buf + at, lit, n))
        return false;
    for (at += (uint32_t)n; at < end; at++)
        if (!is_ws(buf[at]))
            return false;
    return true;
}

/* The token positions are read without a bound: the last token is the array's `]`, and every
 * place that reads one more token after a `]` is an error but the array's own end (a `]` where
 * a key, a `:`, a value or an object's `,`/`}` is due), so only walk_array, when a `]` ends a
 * nested array, checks that tokens remain. A scalar, never the last token, ends where the next
 * one starts.
 *
 * Each function takes the position of its first token and returns the one after what it
 * walked, NULL to stop: the position and the text stay in registers across the callbacks
 * (through a struct in memory they were reloaded after each: ~60 M of a report's
 * instructions on hta_df_index_resolver). */
template <bool Skip> const uint32_t *walk_object(const uint32_t *ip, env &e, unsigned depth);
template <bool Skip> const uint32_t *walk_array(const uint32_t *ip, env &e, unsigned depth);

/* Skip: the walk of a value whose key's map_key returned 2 (nobody wants its tokens): it is
 * validated as any other, but no callback is called and no number's value is computed.
 * Only containers recurse (out of line); a scalar is handled in the loop that met it, since a
 * call per value, with its saved registers, cost ~20 instructions of the walk's ~170 a token. */
template <bool Skip>
__attribute__((always_inline)) inline const uint32_t *walk(const uint32_t *ip, env &e,
                                                           unsigned depth) {
    const char *buf = e.buf;
    uint32_t at = *ip;
    char ch = buf[at];
    if ((unsigned char)(ch - '0') <= 9 || ch == '-') { /* the most common value first */
        std::string_view s;
        int64_t val = 0;
        int kind = NUM_OTHER;
        if (!json_number<!Skip>(std::string_view(buf + at, ip[1] - at), s, &val, &kind))
            return nullptr;
        bool ok = true;
        if (!Skip) {
            const tp_json_walk_cb *cb = e.cb;
            if (kind == NUM_INT && cb->on_integer)
                ok = cb->on_integer(e.ctx, s.data(), s.size(), val);
            else if (kind == NUM_MILLI && cb->on_milli)
                ok = cb->on_milli(e.ctx, s.data(), s.size(), val);
            else
                ok = cb->on_number(e.ctx, s.data(), s.size());
        }
        return ok ? ip + 1 : nullptr;
    }
    if (ch == '"') {
        std::string_view s;
        if (!string_at(e, buf, at, s) || (!Skip && !e.cb->on_string(e.ctx, bytes(s), s.size())))
            return nullptr;
        return ip + 1;
    }
    if (ch == '{')
        return walk_object<Skip>(ip, e, depth);
    if (ch == '[')
        return walk_array<Skip>(ip, e, depth);
    uint32_t end = ip[1];
    bool ok;
    if (ch == 't')
        ok = literal(buf, at, end, "true", 4) && (Skip || e.cb->on_bool(e.ctx, 1));
    else if (ch == 'f')
        ok = literal(buf, at, end, "false", 5) && (Skip || e.cb->on_bool(e.ctx, 0));
    else
        ok = ch == 'n' && literal(buf, at, end, "null", 4) && (Skip || e.cb->on_null(e.ctx));
    return ok ? ip + 1 : nullptr;
}

template <bool Skip>
__attribute__((noinline)) const uint32_t *walk_object(const uint32_t *ip, env &e, unsigned depth) {
    const char *buf = e.buf;
    if (++depth > MAX_DEPTH || (!Skip && !e.cb->start_map(e.ctx)))
        return nullptr;
    ip++; /* the `{` */
    if (buf[*ip] == '}') {
        ip++;
    } else {
        for (;;) {
            std::string_view key;
            if (buf[*ip] != '"' || !string_at(e, buf, *ip, key) || buf[ip[1]] != ':')
                return nullptr;
            ip += 2;
            int go = Skip ? 2 : e.cb->map_key(e.ctx, bytes(key), key.size());
            if (!go || !(ip = go == 2 ? walk<true>(ip, e, depth) : walk<false>(ip, e, depth)))
                return nullptr;
            char ch = buf[*ip++];
            if (ch == '}')
                break;
            if (ch != ',')
                return nullptr;
        }
    }
    return Skip || e.cb->end_map(e.ctx) ? ip : nullptr;
}

template <bool Skip>
__attribute__((noinline)) const uint32_t *walk_array(const uint32_t *ip, env &e, unsigned depth) {
    const char *buf = e.buf;
    if (++depth > MAX_DEPTH || (!Skip && !e.cb->start_array(e.ctx)))
        return nullptr;
    ip++; /* the `[` */
    if (buf[*ip] == ']') {
        ip++;
    } else {
        for (;;) {
            if (!(ip = walk<Skip>(ip, e, depth)))
                return nullptr;
            char ch = buf[*ip++];
            if (ch == ']')
                break;
            if (ch != ',')
                return nullptr;
        }
    }
    if (ip == e.end) /* the last `]` closed this array: the outer one is left open */
        return nullptr;
    return Skip || e.cb->end_array(e.ctx) ? ip : nullptr;
}

/* What a walker holds: stage 1's buffers (grown to the largest text walked) and the buffer
 * of unescaped strings. */
struct walker {
    std::unique_ptr<simdjson::internal::dom_parser_implementation> impl;
    std::unique_ptr<uint8_t[]> str;
    size_t str_cap = 0;
};

} // namespace

extern "C" void *tp_json_walk_simd_new(void) {
    return new (std::nothrow) walker();
}

extern "C" void tp_json_walk_simd_free(void *parser) {
    delete static_cast<walker *>(parser);
}

/* The code of stage 1, the walk's only SIMD part: the one libsimdjson picks for this CPU. */
extern "C" const char *tp_json_walk_simd_impl(void) {
    return simdjson::get_active_implementation()->name().c_str();
}

/* Catches nothing: simdjson reports errors as values, and the callbacks are C. */
extern "C" int tp_json_walk_simd_run(void *parser, const char *text, size_t len,
                                     const tp_json_walk_cb *cb, void *ctx) {
    walker *w = static_cast<walker *>(parser);
    if (len > simdjson::SIMDJSON_MAXSIZE_BYTES / 2)
        return 0;
    /* Stage 1's buffers for each text longer than every one before (the import's pieces:
     * ~128 KiB, each a little over or under) were mapped anew and faulted in each time; half
     * again as much room makes that rare. Pages never written cost no memory. */
    size_t cap = len + len / 2;
    if (!w->impl) {
        if (simdjson::get_active_implementation()->create_dom_parser_implementation(
                cap, simdjson::DEFAULT_MAX_DEPTH, w->impl))
            return 0;
    } else if (w->impl->capacity() < len && w->impl->set_capacity(cap)) {
        return 0;
    }
    if (w->str_cap < len + 2 * simdjson::SIMDJSON_PADDING) {
        /* unescaped strings are no longer than their text; parse_string writes whole vectors */
        w->str_cap = cap + 2 * simdjson::SIMDJSON_PADDING;
        w->str.reset(new (std::nothrow) uint8_t[w->str_cap]);
        if (!w->str) {
            w->str_cap = 0;
            return 0;
        }
    }
    if (w->impl->stage1(reinterpret_cast<const uint8_t *>(text), len,
                        simdjson::stage1_mode::regular))
        return 0;
    const uint32_t *ip = w->impl->structural_indexes.get();
    uint32_t n = w->impl->n_structural_indexes; /* > 0: stage 1 said EMPTY otherwise */
    env e{text, ip + n, w->str.get(), w->impl.get(), cb, ctx};
    if (text[ip[0]] != '[' || text[ip[n - 1]] != ']')
        return 0;
    ip++;
    if (text[*ip] == ']')
        return n == 2;
    for (;;) { /* the elements: the array itself gets no callbacks */
        if (!(ip = walk<false>(ip, e, 1)))
            return 0;
        char ch = text[*ip++];
        if (ch == ']')
            return ip == e.end; /* nothing after the array */
        if (ch != ',')
            return 0;
    }
}
