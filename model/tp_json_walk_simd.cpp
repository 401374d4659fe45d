/* tp_json_walk_simd.cpp: the C++ side of tp_json_walk, simdjson On-Demand behind three
 * extern "C" functions that tp_json_walk.c (C) calls.
 *
 * On x86-64 this file is compiled for haswell (AVX2, BMI, PCLMUL, LZCNT) so that On-Demand,
 * whose code is chosen at compile time, uses its SIMD stage 1; tp_json_walk.c calls it only
 * when the CPU has those. It is the program's only C++ translation unit using simdjson, so
 * no inline function compiled here for AVX2 can be picked for code that runs without it. */
#include <simdjson.h>

#include <cstring>
#include <new>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include <utility>
#include <string_view>

#include "tp_json_walk.h"

static_assert(TP_JSON_WALK_PADDING >= simdjson::SIMDJSON_PADDING, "padding below simdjson's");

namespace {

namespace od = simdjson::ondemand;

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

const uint64_t pow10[9] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000};

/* JSON's number grammar, which On-Demand's raw token does not check:
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
__attribute__((always_inline)) inline bool json_number(std::string_view raw, std::string_view &num,
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
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        if (Val)
            *kind = NUM_OTHER;
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        size_t d = i;
        while (i < n && is_digit(s[i]))
            i++;
        if (i == d)
            return false;
    }
    size_t end = i;
    while (i < n && is_ws(s[i]))
        i++;
    if (i != n)
        return false;
    num = std::string_view(s, end);
    return true;
}

const unsigned char *bytes(std::string_view s) {
    return reinterpret_cast<const unsigned char *>(s.data());
}

/* Skip: the walk of a value whose key's map_key returned 2 (nobody wants its tokens): it is
 * validated as any other, but no callback is called (they were do-nothing ones, called through
 * pointers) and no number's value is computed. */
template <bool Skip> bool walk_object(od::value &v, const tp_json_walk_cb *cb, void *ctx);
template <bool Skip> bool walk_array(od::value &v, const tp_json_walk_cb *cb, void *ctx);
template <bool Skip>
__attribute__((always_inline)) inline bool walk(od::value &v, const tp_json_walk_cb *cb, void *ctx);

/* A key or string without a backslash is its raw text up to the closing quote (stage 1
 * found that quote, and checked the UTF-8): `text` is that text, no copy. unescaped_key() and
 * get_string() copied each into the parser's string buffer through a call into libsimdjson,
 * the walk's largest cost after its own code (parse_string: 3.7 % of `report`'s CPU time on a
 * 14 MB trace; the walk's functions together 13.0 -> 10.4 % with keys alone, by perf). */
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

bool plain_key(od::field &f, std::string_view &key) {
    return plain_text(f.key().raw(), key);
}

/* Fields and elements are used in place (value_unsafe() after the error check): copying
 * them out (get(), values passed by value) cost store-forwarding stalls on their 16-byte
 * parts, most of the walk's time by perf. */
/* Only containers recurse (walk_object, walk_array: out of line); a scalar is handled in the
 * loop that met it (walk, walk_scalar: inline), since a call per value, with its saved
 * registers, cost ~20 instructions of the walk's ~170 per token. */
template <bool Skip>
__attribute__((noinline)) bool walk_object(od::value &v, const tp_json_walk_cb *cb, void *ctx) {
    od::object o;
    if (v.get_object().get(o) || (!Skip && !cb->start_map(ctx)))
        return false;
    for (auto res : o) {
        if (res.error())
            return false;
        od::field &f = res.value_unsafe();
        std::string_view key;
        if (!plain_key(f, key) && f.unescaped_key().get(key))
            return false;
        int go = Skip ? 2 : cb->map_key(ctx, bytes(key), key.size());
        if (!go || !(go == 2 ? walk<true>(f.value(), cb, ctx) : walk<false>(f.value(), cb, ctx)))
            return false;
    }
    return Skip || cb->end_map(ctx);
}

template <bool Skip>
__attribute__((noinline)) bool walk_array(od::value &v, const tp_json_walk_cb *cb, void *ctx) {
    od::array a;
    if (v.get_array().get(a) || (!Skip && !cb->start_array(ctx)))
        return false;
    for (auto elem : a) {
        if (elem.error() || !walk<Skip>(elem.value_unsafe(), cb, ctx))
            return false;
    }
    return Skip || cb->end_array(ctx);
}

template <bool Skip>
__attribute__((always_inline)) inline bool walk_scalar(od::value &v, od::json_type t,
                                                       const tp_json_walk_cb *cb, void *ctx) {
    if (t == od::json_type::string) {
        std::string_view s; /* the raw token starts at the opening quote */
        if (!plain_text(v.raw_json_token().data() + 1, s) && v.get_string().get(s))
            return false;
        return Skip || cb->on_string(ctx, bytes(s), s.size());
    }
    if (t == od::json_type::number) {
        std::string_view s;
        int64_t val = 0;
        int kind = NUM_OTHER;
        if (!json_number<!Skip>(v.raw_json_token(), s, &val, &kind))
            return false;
        if (Skip)
            return true;
        if (kind == NUM_INT && cb->on_integer)
            return cb->on_integer(ctx, s.data(), s.size(), val);
        if (kind == NUM_MILLI && cb->on_milli)
            return cb->on_milli(ctx, s.data(), s.size(), val);
        return cb->on_number(ctx, s.data(), s.size());
    }
    if (t == od::json_type::boolean) {
        bool b;
        return !v.get_bool().get(b) && (Skip || cb->on_bool(ctx, b));
    }
    bool null = false;
    return !v.is_null().get(null) && null && (Skip || cb->on_null(ctx));
}

template <bool Skip>
__attribute__((always_inline)) inline bool walk(od::value &v, const tp_json_walk_cb *cb,
                                                void *ctx) {
    od::json_type t;
    if (v.type().get(t))
        return false;
    if (t == od::json_type::object)
        return walk_object<Skip>(v, cb, ctx);
    if (t == od::json_type::array)
        return walk_array<Skip>(v, cb, ctx);
    return walk_scalar<Skip>(v, t, cb, ctx);
}

} // namespace

extern "C" void *tp_json_walk_simd_new(void) {
    return new (std::nothrow) od::parser();
}

extern "C" void tp_json_walk_simd_free(void *parser) {
    delete static_cast<od::parser *>(parser);
}

extern "C" const char *tp_json_walk_simd_impl(void) {
    return SIMDJSON_STRINGIFY(SIMDJSON_BUILTIN_IMPLEMENTATION);
}

/* Catches nothing: simdjson's On-Demand API reports errors as values, and the callbacks are C. */
extern "C" int tp_json_walk_simd_run(void *parser, const char *text, size_t len,
                                     const tp_json_walk_cb *cb, void *ctx) {
    od::parser *p = static_cast<od::parser *>(parser);
    simdjson::padded_string_view in(text, len, len + TP_JSON_WALK_PADDING);
    /* iterate() reallocates the parser's buffers for each text longer than every one before
     * (the import's pieces: ~128 KiB, each a little over or under), and the new buffers (mapped:
     * over 256 KiB) were faulted in again each time; half again as much room makes that rare.
     * Their pages that are never written cost no memory. */
    if (p->capacity() < len && len <= p->max_capacity() - len / 2 && p->allocate(len + len / 2))
        return 0;
    od::document doc;
    if (p->iterate(in).get(doc))
        return 0;
    od::array a;
    if (doc.get_array().get(a))
        return 0;
    for (auto elem : a) {
        if (elem.error() || !walk<false>(elem.value_unsafe(), cb, ctx))
            return 0;
    }
    const char *rest; /* anything after the array is an error: OUT_OF_BOUNDS says none */
    return doc.current_location().get(rest) == simdjson::OUT_OF_BOUNDS ? 1 : 0;
}
