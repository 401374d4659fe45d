/* tp_import_kineto: a yajl callback parser for Kineto Chrome traces.
 *
 * The parser keeps a small stack of frame kinds (top object, traceEvents array, one event,
 * its args, deviceProperties, distributedInfo); anything else is skipped. An event's fields
 * are buffered until its closing brace, then it becomes a row, a memory event or a count.
 * Numbers arrive as text (yajl_number) so µs with fractions convert exactly to ns.
 * Big texts are parsed by two threads (parse_split, below); small ones and huge ones stream. */
#include "tp_import_kineto.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <libdeflate.h>
#include <limits.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yajl/yajl_parse.h>
#include <zlib.h>
#if TP_HAVE_ISAL
#include <isa-l/crc.h>
#include <isa-l/igzip_lib.h>
#endif
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define TP_WALK_AVX2 1
#endif

#include "tp_env_keys.h"
#include "tp_hash.h"
#include "tp_json_walk.h"
#include "tp_kineto_names.h"
#include "tp_kineto_stacks.h"
#include "tp_mem.h"
#include "tp_par.h"
#include "tp_progress.h"
#include "tp_record.h"
#include "tp_sysinfo.h"

#define MAX_FRAMES 64
/* Text per read: 256 KiB (NBUF of them; 1 MiB cost up to 3 MiB of peak RSS). */
#define CHUNK (1u << 18)
#define NS_LIMIT TP_NS_LIMIT /* |ts| and dur beyond this are absurd (year 2116+) */

typedef enum {
    F_SKIP,
    F_TOP,
    F_EVENTS,
    F_EVENT,
    F_ARGS,
    F_DEVPROPS,
    F_DEVPROP,
    F_DIST,
    F_ENVS, /* trainprofEnvironment[] (trainprof's own export) */
    F_ENV,
    F_DIMS /* args "Input Dims" and the arrays inside it, kept as text */
} frame;

typedef enum {
    K_NONE,
    /* top */
    K_TRACE_EVENTS,
    K_DEVPROPS,
    K_DIST,
    K_BASETIME,
    K_CUPTI_VER,   /* top-level "cupti_version" (newer Kineto) */
    K_RUNTIME_VER, /* "cuda_runtime_version" */
    K_DRIVER_VER,  /* "cuda_driver_version" */
    K_TP_ENV,      /* "trainprofEnvironment": a native trace's ENV records, exported */
    /* event */
    K_PH,
    K_CAT,
    K_NAME,
    K_TS,
    K_DUR,
    K_PID,
    K_TID,
    K_ARGS,
    /* args */
    K_STREAM,
    K_CORR,
    K_EXTID,
    K_BYTES,
    K_BW,
    K_DEVICE,
    K_DEV_TYPE,
    K_DEV_ID,
    K_ADDR,
    K_MEM_BYTES,
    K_TOTAL_ALLOC,
    K_TOTAL_RES,
    K_ARG_NAME,  /* args.name of "thread_name" / "process_name" metadata events */
    K_DIMS,      /* "Input Dims" / "Input dims" (record_shapes) */
    K_SEQ,       /* "Sequence number" (autograd) */
    K_FWD_TID,   /* "Fwd thread id" (a backward op's forward thread) */
    K_CALLSTACK, /* "Call stack" (with_stack in PyTorch <= 1.10): "file(line): func;..." */
    /* deviceProperties[] */
    K_ID,
    K_DP_NAME,
    K_GLOBALMEM,
    K_CMAJOR,
    K_CMINOR,
    K_NUMSMS,
    /* distributedInfo */
    K_RANK,
    K_WORLD,
    K_BACKEND,
    K_NCCL_VER,
    /* trainprofEnvironment[] */
    K_ENV_DEVICE,
    K_ENV_KEY,
    K_ENV_VALUE
} key;

typedef struct {
    char *p;
    size_t len, cap;
} strbuf;

/* Bits of what an event had (cur.have). */
enum {
    H_TS = 1 << 0,
    H_DUR = 1 << 1,
    H_CAT = 1 << 2,
    H_NAME = 1 << 3,
    H_MEM_BYTES = 1 << 4,
    H_PH = 1 << 5
};

typedef struct {
    unsigned have;
    char ph;
    strbuf name, cat;
    /* A walk's name and cat (kparse.borrow): the walked text itself, which outlives the
     * event's defer_event (its only reader there), so not copied into name.p and cat.p
     * first: buf_set's copies were ~15 M instructions of a report of hta_df_index_resolver.
     * Their lengths are name.len and cat.len. */
    const char *name_s, *cat_s;
    strbuf arg_name;         /* args.name (ph "M" metadata events) */
    strbuf dims;             /* args "Input Dims" as text, "[[2, 3], []]" */
    strbuf callstack;        /* args "Call stack", innermost frame first */
    const char *callstack_s; /* a walk's (as name_s): its length is callstack.len */
    /* The 8-byte words from ts to addr in the groups a deferred event keeps (drec): the
     * first DEFER_HOT words always (every row has most of them), each group after them only
     * when a word of it differs from event_reset's (the GPU side, a CPU op's, the rest). */
    int64_t ts, dur, pid, tid;
    /* tp_model_str_hash of name, cat and dims, 0: not computed. A deferred event gets them on
     * the thread that parsed it (defer_event), so the thread that commits only looks them up. */
    uint64_t name_h, cat_h;
    int ts_frac, dur_frac;
    int64_t external_id;
    int64_t stream, device, correlation; /* group 0 */
    int64_t seq, fwd_tid;                /* group 1, with dims_h */
    uint64_t dims_h;
    int64_t bytes; /* group 2: the rest */
    double bw;
    int64_t dev_type, dev_id, mem_bytes, total_alloc, total_res;
    uint64_t addr;
} event;

/* What a name implies, computed once per interned name. */
typedef struct {
    uint8_t done, flags, copy_kind, src_kind, dst_kind;
} name_info;

typedef struct {
    tp_model *m;
    tp_rank *r;
    yajl_handle h;
    const char *file;
    uint64_t base_off; /* decompressed bytes fed before the current chunk */
    uint64_t lines;    /* newlines before the current chunk */
    uint64_t col0;     /* bytes after the last of them, at the start of the current chunk */
    const unsigned char *chunk; /* the chunk yajl is parsing; NULL between chunks */
    size_t chunk_len;
    tp_load_error *e; /* the first error, in parts */
    tp_status st;
    frame kind[MAX_FRAMES];
    int depth; /* frames open; kind[depth-1] is the innermost when depth <= MAX_FRAMES */
    frame top; /* that innermost kind, F_SKIP at depth 0 or past MAX_FRAMES (top_frame: every
                  callback asks; set by push, pop and frames_set) */
    key k;     /* key of the value about to come, in the innermost map */
    int saw_events;
    uint64_t event_idx;
    event ev;
    tp_device_info dev;
    strbuf env_key, env_val; /* the trainprofEnvironment entry being read */
    int64_t env_dev;
    int have_tp_env; /* the trace holds trainprof's own environment: nothing to derive */
    uint8_t *cat_of; /* tp_cat by cat_raw id, 0xff = not computed */
    size_t n_cat_of;
    name_info *names; /* by name id */
    size_t n_names;
    /* HTA's rank regex `"rank":\s+(\d+)` over the raw text */
    tp_kineto_stacks *stacks; /* Python frames and call stacks of the rank (Call stack args,
                                 python_function events) */
    int threads;    /* 2: the import ran on two threads, so may its Python pass (kparse_done) */
    int rank_state; /* 0 searching, 1 after "rank":, 2 in spaces, 3 in digits, 4 done */
    int64_t rank_val;
    char rank_tail[8];
    size_t rank_tail_len;
    uint64_t ev_end; /* offset just after the closing brace of the last event */
    /* The second parser of a split parse (parse_split) touches no model: it keeps its events
     * in `defer` for the first one to commit in order, and notes where the array ends. */
    struct deferred *defer;
    int borrow; /* a walk's parser (tp_json_walk): its strings stay until the walk ends */
    /* The piece a walk's parser walks, without its brackets (walk_slot): a deferred event's
     * name and cat found in it are kept as their index there, not copied (defer_event). */
    const char *walk_text;
    size_t walk_len;
    int defer_depth;    /* depth of its traceEvents frame */
    uint64_t array_end; /* offset just after the array's ']'; 0 until seen */
} kparse;

/* ---------------------------------------------------------------- errors */

static uint64_t cur_offset(const kparse *p) {
    return p->base_off + (p->h && p->chunk ? yajl_get_bytes_consumed(p->h) : 0);
}

/* Newlines in s[0..n) (this runs over every byte of the input); *last: index of the last
 * one, untouched when there is none. A newline byte becomes a 1 in its byte lane of an
 * accumulator (byte-wise sums, flushed before a lane can pass 255), so no popcount is needed:
 * built without -mpopcnt, __builtin_popcountll was a libgcc call per word (3 % of import CPU).
 * SSE2 (every x86-64) takes 16 bytes a step; elsewhere eight bytes in a 64-bit word. */
static uint64_t count_lines(const unsigned char *s, size_t n, size_t *last) {
    uint64_t k = 0;
    size_t i = 0;
#ifdef __SSE2__
    const __m128i nl = _mm_set1_epi8('\n'), zero = _mm_setzero_si128();
    /* 64 bytes a step in four accumulators: the loop's own counting and branch per 16 bytes
     * were as many instructions as the compares (2 % of `report`'s instructions) */
    while (i + 64 <= n) {
        __m128i a0 = zero, a1 = zero, a2 = zero, a3 = zero;
        for (int r = 0; r < 255 && i + 64 <= n; r++, i += 64) {
            a0 = _mm_sub_epi8(a0, _mm_cmpeq_epi8(_mm_loadu_si128((const void *)(s + i)), nl));
            a1 = _mm_sub_epi8(a1, _mm_cmpeq_epi8(_mm_loadu_si128((const void *)(s + i + 16)), nl));
            a2 = _mm_sub_epi8(a2, _mm_cmpeq_epi8(_mm_loadu_si128((const void *)(s + i + 32)), nl));
            a3 = _mm_sub_epi8(a3, _mm_cmpeq_epi8(_mm_loadu_si128((const void *)(s + i + 48)), nl));
        }
        __m128i sum = _mm_add_epi64(_mm_add_epi64(_mm_sad_epu8(a0, zero), _mm_sad_epu8(a1, zero)),
                                    _mm_add_epi64(_mm_sad_epu8(a2, zero), _mm_sad_epu8(a3, zero)));
        k += (uint64_t)_mm_cvtsi128_si64(sum) +
             (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(sum, sum));
    }
    while (i + 16 <= n) {
        __m128i acc = zero;
        for (int r = 0; r < 255 && i + 16 <= n; r++, i += 16)
            acc = _mm_sub_epi8(acc, _mm_cmpeq_epi8(_mm_loadu_si128((const void *)(s + i)), nl));
        __m128i sum = _mm_sad_epu8(acc, zero); /* two 64-bit sums of eight lanes */
        k += (uint64_t)_mm_cvtsi128_si64(sum) +
             (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(sum, sum));
    }
#else
    const uint64_t ones = 0x0101010101010101ull, low7 = 0x7f7f7f7f7f7f7f7full;
    const uint64_t even = 0x00ff00ff00ff00ffull;
    while (i + 8 <= n) {
        uint64_t acc = 0;
        for (int r = 0; r < 255 && i + 8 <= n; r++, i += 8) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            uint64_t x = w ^ (ones * '\n');       /* newline bytes become zero */
            uint64_t y = ((x & low7) + low7) | x; /* high bit clear exactly in zero bytes */
            acc += (~y & (ones << 7)) >> 7;
        }
        uint64_t pairs = (acc & even) + ((acc >> 8) & even); /* four 16-bit sums */
        k += (pairs * 0x0001000100010001ull) >> 48;
    }
#endif
    for (; i < n; i++)
        k += s[i] == '\n';
    const unsigned char *q = k ? memrchr(s, '\n', n) : NULL;
    if (q)
        *last = (size_t)(q - s);
    return k;
}

#if TP_WALK_AVX2
/* count_lines 128 bytes a step, for the walking threads where the CPU has AVX2 (pieces.avx2;
 * the walk itself needs it on x86-64): 22.8 M instructions of owlv2's import with SSE2. */
__attribute__((target("avx2"))) static uint64_t count_lines_avx2(const unsigned char *s, size_t n,
                                                                 size_t *last) {
    uint64_t k = 0;
    size_t i = 0;
    const __m256i nl = _mm256_set1_epi8('\n'), zero = _mm256_setzero_si256();
    while (i + 128 <= n) {
        __m256i a0 = zero, a1 = zero, a2 = zero, a3 = zero;
        for (int r = 0; r < 255 && i + 128 <= n; r++, i += 128) {
            a0 = _mm256_sub_epi8(
                a0, _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(s + i)), nl));
            a1 = _mm256_sub_epi8(
                a1, _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(s + i + 32)), nl));
            a2 = _mm256_sub_epi8(
                a2, _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(s + i + 64)), nl));
            a3 = _mm256_sub_epi8(
                a3, _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(s + i + 96)), nl));
        }
        __m256i sum = _mm256_add_epi64(
            _mm256_add_epi64(_mm256_sad_epu8(a0, zero), _mm256_sad_epu8(a1, zero)),
            _mm256_add_epi64(_mm256_sad_epu8(a2, zero), _mm256_sad_epu8(a3, zero)));
        __m128i h = _mm_add_epi64(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
        k += (uint64_t)_mm_cvtsi128_si64(h) + (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(h, h));
    }
    size_t rest_last = 0;
    uint64_t rest = count_lines(s + i, n - i, &rest_last);
    if (rest)
        *last = i + rest_last;
    else if (k)
        *last = (size_t)((const unsigned char *)memrchr(s, '\n', i) - s);
    return k + rest;
}
#else
#define count_lines_avx2 count_lines
#endif

/* 1-based line and column (in bytes) of the current position, for editors. */
static void cur_line_col(const kparse *p, uint64_t *line, uint64_t *col) {
    size_t off = (size_t)(cur_offset(p) - p->base_off), last = 0;
    if (off > p->chunk_len)
        off = p->chunk_len;
    uint64_t k = p->chunk ? count_lines(p->chunk, off, &last) : 0;
    *line = p->lines + k + 1;
    *col = (k ? off - last - 1 : p->col0 + off) + 1;
}

/* Carries the line count over n bytes that hold k newlines, the last at index `last`. */
static void advance_counted(kparse *p, size_t n, uint64_t k, size_t last) {
    p->lines += k;
    p->col0 = k ? n - last - 1 : p->col0 + n;
}

/* After a chunk parsed: carries the line count over to the next one. */
static void advance_lines(kparse *p, const unsigned char *buf, size_t n) {
    size_t last = 0;
    uint64_t k = count_lines(buf, n, &last);
    advance_counted(p, n, k, last);
}

/* Records the first error with its position: line, column and byte (from 0) in the
 * decompressed text, and the event it is in ("traceEvents[i]"). Returns 0 so callbacks can
 * `return fail(...)` and stop yajl. */
static int fail(kparse *p, tp_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(kparse *p, tp_status st, const char *fmt, ...) {
    if (p->st != TP_OK)
        return 0;
    p->st = st;
    tp_load_error *e = p->e;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->reason, sizeof e->reason, fmt, ap);
    va_end(ap);
    e->status = st;
    int in_event = 0;
    for (int i = 0; i < p->depth && i < MAX_FRAMES; i++)
        in_event |= p->kind[i] == F_EVENT;
    cur_line_col(p, &e->line, &e->col);
    e->byte = cur_offset(p);
    if (in_event)
        snprintf(e->where, sizeof e->where, "traceEvents[%llu]", (unsigned long long)p->event_idx);
    return 0;
}

static const char *key_name(key k) {
    static const char *const names[] = {
        [K_TS] = "ts",     [K_DUR] = "dur", [K_PH] = "ph",   [K_CAT] = "cat",
        [K_NAME] = "name", [K_PID] = "pid", [K_TID] = "tid", [K_TRACE_EVENTS] = "traceEvents"};
    return (size_t)k < sizeof names / sizeof names[0] && names[k] ? names[k] : "value";
}

/* ---------------------------------------------------------------- numbers */

/* Kineto µs text ("123", "123.456", "-1.5e3") to ns, exactly: the digits are scaled by
 * powers of ten as integers, never through a double. *frac is set when the value is not a
 * whole number of µs. Sub-ns digits round to nearest. Returns 0, or -1 when out of range
 * or not a number. */
static int parse_us_slow(const char *s, size_t n, int64_t *out, int *frac) {
    size_t i = 0;
    int neg = 0, exp10 = 3, digits = 0, lost = 0;
    uint64_t mant = 0;
    if (i < n && (s[i] == '-' || s[i] == '+'))
        neg = s[i++] == '-';
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, digits++) {
        if (mant <= (UINT64_MAX - 9) / 10)
            mant = mant * 10 + (uint64_t)(s[i] - '0');
        else
            exp10++, lost |= s[i] != '0';
    }
    if (i < n && s[i] == '.')
        for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++, digits++) {
            if (mant <= (UINT64_MAX - 9) / 10)
                mant = mant * 10 + (uint64_t)(s[i] - '0'), exp10--;
            else
                lost |= s[i] != '0';
        }
    if (digits == 0)
        return -1;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        int eneg = 0, e = 0, ed = 0;
        if (++i < n && (s[i] == '-' || s[i] == '+'))
            eneg = s[i++] == '-';
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, ed++)
            e = e < 100000 ? e * 10 + (s[i] - '0') : e;
        if (ed == 0)
            return -1;
        exp10 += eneg ? -e : e;
    }
    if (i != n)
        return -1;
    uint64_t v = mant;
    int fraction = 0;
    if (mant != 0 && exp10 > 0) {
        for (int k = 0; k < exp10; k++) {
            if (v > (uint64_t)NS_LIMIT / 10)
                return -1;
            v *= 10;
        }
    } else if (exp10 < 0) {
        if (exp10 < -19) {
            fraction = mant != 0;
            v = 0;
        } else {
            uint64_t div = 1;
            for (int k = 0; k < -exp10; k++)
                div *= 10;
            uint64_t rem = mant % div;
            v = mant / div + (rem >= div - rem); /* round half up */
            fraction = rem != 0;
        }
    }
    if (v > (uint64_t)NS_LIMIT)
        return -1;
    *frac = fraction || lost || v % 1000 != 0;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return 0;
}

/* parse_us for what Kineto writes, -?D{1,16}(.D{1,3})? ("2915995397672.546",
 * "1669783687464181"): whole µs and the ns digits as two integers (< 10^19 ns: no overflow),
 * the same value and flag as parse_us_slow, which is exact for up to 19 digits; anything else,
 * and values past NS_LIMIT, go the slow way. Its per-digit overflow checks and its division
 * cost ~280 instructions per ts, 5 % of an import. */
/* s[0..8) as a decimal number into *v when all eight are digits (SWAR, little-endian: the
 * first digit is the lowest byte). A Kineto ts has 13-16 digits before its point: two steps
 * of this in place of 16 of the byte loop's multiply-add chain. */
static int digits8(const char *s, uint64_t *v) {
    uint64_t w;
    memcpy(&w, s, 8);
    if ((w & 0xf0f0f0f0f0f0f0f0ull) != 0x3030303030303030ull ||
        ((w + 0x0606060606060606ull) & 0xf0f0f0f0f0f0f0f0ull) != 0x3030303030303030ull)
        return 0;
    w -= 0x3030303030303030ull;
    w = (w * 10 + (w >> 8)) & 0x00ff00ff00ff00ffull;
    w = (w * 100 + (w >> 16)) & 0x0000ffff0000ffffull;
    *v = (w * 10000 + (w >> 32)) & 0xffffffffull;
    return 1;
}

static int parse_us(const char *s, size_t n, int64_t *out, int *frac) {
    static const uint64_t ns_per_digit[] = {1000, 100, 10, 1};
    size_t i = n && s[0] == '-', d = i, f;
    uint64_t us = 0, ns = 0, v8;
    for (; n - i >= 8 && i - d < 16 && digits8(s + i, &v8); i += 8)
        us = us * 100000000 + v8;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
        us = us * 10 + (uint64_t)(s[i] - '0');
    if (i == d || i - d > 16)
        return parse_us_slow(s, n, out, frac);
    if (i < n && s[i] == '.') {
        for (f = ++i; i < n && s[i] >= '0' && s[i] <= '9'; i++)
            ns = ns * 10 + (uint64_t)(s[i] - '0');
        if (i == f || i - f > 3)
            return parse_us_slow(s, n, out, frac);
        ns *= ns_per_digit[i - f];
    }
    uint64_t v = us * 1000 + ns;
    if (i != n || v > (uint64_t)NS_LIMIT)
        return parse_us_slow(s, n, out, frac);
    *frac = ns != 0;
    *out = s[0] == '-' ? -(int64_t)v : (int64_t)v;
    return 0;
}

/* Python int() of a JSON number: integers exactly, decimals truncated toward zero. Plain
 * integers of up to 18 digits (nearly all of them) take a loop, not strtoll. */
static int parse_int_slow(const char *s, size_t n, int64_t *out) {
    char buf[64];
    if (n == 0 || n >= sizeof buf)
        return -1;
    memcpy(buf, s, n);
    buf[n] = 0;
    char *end;
    errno = 0;
    if (!memchr(buf, '.', n) && !memchr(buf, 'e', n) && !memchr(buf, 'E', n)) {
        long long v = strtoll(buf, &end, 10);
        if (errno == ERANGE) { /* addresses may exceed INT64_MAX: keep their bits */
            errno = 0;
            unsigned long long u = strtoull(buf, &end, 10);
            if (errno || *end)
                return -1;
            *out = (int64_t)u;
            return 0;
        }
        if (*end)
            return -1;
        *out = v;
        return 0;
    }
    double d = strtod(buf, &end);
    if (*end || !(d > -9.2e18 && d < 9.2e18))
        return -1;
    *out = (int64_t)d;
    return 0;
}

static int parse_int(const char *s, size_t n, int64_t *out) {
    size_t i = n > 0 && s[0] == '-';
    if (n - i == 0 || n - i > 18)
        return parse_int_slow(s, n, out);
    int64_t v = 0;
    for (size_t j = i; j < n; j++) {
        if (s[j] < '0' || s[j] > '9')
            return parse_int_slow(s, n, out);
        v = v * 10 + (s[j] - '0');
    }
    *out = i ? -v : v;
    return 0;
}

/* Python int() of a string: optional spaces, sign, decimal digits. -1 return when not. */
static int parse_int_str(const char *s, size_t n, int64_t *out) {
    while (n && (*s == ' ' || *s == '\t'))
        s++, n--;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    size_t i = (n && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
    if (i == n)
        return -1;
    for (size_t j = i; j < n; j++)
        if (s[j] < '0' || s[j] > '9')
            return -1;
    return parse_int(s, n, out);
}

/* pid/tid as text: "25738" -> 25738, "stream 7" -> 7 (the 2021 format), other labels
 * ("Spans", "PyTorch Profiler") -> a stable negative id below -1. */
static int64_t id_from_text(const char *s, size_t n) {
    int64_t v;
    if (parse_int_str(s, n, &v) == 0)
        return v;
    size_t j = n;
    while (j > 0 && s[j - 1] >= '0' && s[j - 1] <= '9')
        j--;
    if (j < n && j > 0 && s[j - 1] == ' ' && n - j < 18 && parse_int(s + j, n - j, &v) == 0)
        return v;
    return -2 - (int64_t)(tp_hash_bytes(s, n, 1) >> 2);
}

/* ---------------------------------------------------------------- names and categories */

static tp_cat cat_from_text(const char *s) {
    static const struct {
        const char *text;
        tp_cat cat;
    } map[] = {
        {"kernel", TP_CAT_KERNEL},
        {"Kernel", TP_CAT_KERNEL},
        {"gpu_memcpy", TP_CAT_MEMCPY},
        {"Memcpy", TP_CAT_MEMCPY},
        {"gpu_memset", TP_CAT_MEMSET},
        {"Memset", TP_CAT_MEMSET},
        {"cuda_sync", TP_CAT_CUDA_SYNC},
        {"cuda_runtime", TP_CAT_CUDA_RUNTIME},
        {"Runtime", TP_CAT_CUDA_RUNTIME},
        {"cuda_driver", TP_CAT_CUDA_DRIVER},
        {"Driver", TP_CAT_CUDA_DRIVER},
        {"cpu_op", TP_CAT_CPU_OP},
        {"Operator", TP_CAT_CPU_OP},
        {"user_annotation", TP_CAT_USER_ANNOTATION},
        {"gpu_user_annotation", TP_CAT_GPU_USER_ANNOTATION},
        {"python_function", TP_CAT_PYTHON_FUNCTION},
        {"overhead", TP_CAT_OVERHEAD},
        {"Overhead", TP_CAT_OVERHEAD},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(s, map[i].text))
            return map[i].cat;
    return TP_CAT_OTHER;
}

static tp_cat cat_of(kparse *p, uint32_t id) {
    if (id >= p->n_cat_of) {
        size_t n = p->n_cat_of;
        TP_MEM_XGROW(p->cat_of, p->n_cat_of, (size_t)id + 1);
        memset(p->cat_of + n, 0xff, p->n_cat_of - n);
    }
    if (p->cat_of[id] == 0xff)
        p->cat_of[id] = (uint8_t)cat_from_text(tp_model_str(p->m, id));
    return (tp_cat)p->cat_of[id];
}

static const name_info *name_info_of(kparse *p, uint32_t id) {
    if (id >= p->n_names) {
        size_t n = p->n_names;
        TP_MEM_XGROW(p->names, p->n_names, (size_t)id + 1);
        memset(p->names + n, 0, (p->n_names - n) * sizeof *p->names);
    }
    name_info *ni = &p->names[id];
    if (!ni->done) {
        const char *s = tp_model_str(p->m, id);
        ni->done = 1;
        ni->flags = tp_model_name_flags(s);
        if (tp_kineto_is_memcpy(s) || tp_kineto_is_memset(s))
            tp_kineto_parse_copy_name(s, &ni->copy_kind, &ni->src_kind, &ni->dst_kind);
    }
    return ni;
}

/* ---------------------------------------------------------------- event commit */

static void event_reset(event *e) {
    e->have = 0;
    e->ph = 0;
    e->name.len = e->cat.len = e->arg_name.len = e->dims.len = e->callstack.len = 0;
    e->seq = e->fwd_tid = -1;
    e->ts = e->dur = 0;
    e->pid = e->tid = 0;
    e->ts_frac = e->dur_frac = 0;
    e->stream = e->device = e->correlation = e->external_id = e->bytes = -1;
    e->bw = NAN;
    e->dev_type = e->dev_id = -1;
    e->mem_bytes = 0;
    e->total_alloc = e->total_res = -1;
    e->addr = 0;
    e->name_h = e->cat_h = e->dims_h = 0;
}

/* Frees an event's text buffers (event_reset keeps them for the next event). */
static void event_free(event *e) {
    free(e->name.p);
    free(e->cat.p);
    free(e->arg_name.p);
    free(e->dims.p);
    free(e->callstack.p);
}

/* Why an event's times cannot be true, or TP_SKIP_COUNT when they can. Kineto writes times
 * since the epoch or since baseTimeNanoseconds, never before it, and no negative length:
 * such an event is skipped and counted rather than clamped into a span or a finding. */
static tp_skip bad_times(const event *e, int has_dur) {
    if (has_dur && e->dur < 0)
        return TP_SKIP_NEG_DUR;
    if (e->ts < 0)
        return TP_SKIP_NEG_TS;
    if (has_dur && e->ts > TP_NS_LIMIT - e->dur)
        return TP_SKIP_TIME_RANGE;
    return TP_SKIP_COUNT;
}

/* `len` bytes of `s` interned; `h`: their tp_model_str_hash, 0 when not computed. */
static uint32_t intern(kparse *p, const char *s, size_t len, uint64_t h) {
    return h ? tp_model_intern_hashed(p->m, s, len, h) : tp_model_intern(p->m, s, len);
}

static int commit_row(kparse *p, event *e) {
    if (!(e->have & H_TS))
        return fail(p, TP_ERR_PARSE, "event with dur has no ts");
    tp_skip why = bad_times(e, 1);
    if (why != TP_SKIP_COUNT) {
        p->r->n_skipped[why]++;
        return 1;
    }
    tp_event_row row;
    tp_event_row_init(&row);
    row.ts = e->ts;
    row.dur = e->dur;
    row.name = intern(p, e->name.p, e->name.len, e->name_h);
    row.cat_raw = intern(p, e->cat.p, e->cat.len, e->cat_h);
    row.cat = (uint8_t)cat_of(p, row.cat_raw);
    const name_info *ni = name_info_of(p, row.name);
    row.flags = ni->flags;
    if (row.cat != TP_CAT_CUDA_RUNTIME && row.cat != TP_CAT_CUDA_DRIVER)
        row.flags &= (uint8_t)~TP_EVF_LAUNCH;
    if (row.cat == TP_CAT_MEMCPY || row.cat == TP_CAT_MEMSET) {
        row.copy_kind = ni->copy_kind;
        row.src_kind = ni->src_kind;
        row.dst_kind = ni->dst_kind;
    }
    row.stream = e->stream;
    row.device = e->device >= INT32_MIN && e->device <= INT32_MAX ? (int32_t)e->device : -1;
    row.pid = e->pid, row.tid = e->tid;
    row.correlation = e->correlation, row.external_id = e->external_id;
    row.bytes = e->bytes, row.bw_gbps = e->bw;
    if (e->dims.len)
        row.shapes = intern(p, e->dims.p, strlen(e->dims.p), e->dims_h);
    row.seq = e->seq, row.fwd_tid = e->fwd_tid;
    if (e->callstack.len)
        row.stack = tp_kineto_stacks_call_stack(p->stacks, e->callstack.p, e->callstack.len);
    tp_events_push(&p->r->ev, &row);
    p->r->has_fractional_ts |= e->ts_frac;
    p->r->has_fractional_dur |= e->dur_frac;
    return 1;
}

static void commit_memory(kparse *p, event *e) {
    tp_skip why = bad_times(e, 0);
    if (why != TP_SKIP_COUNT) {
        p->r->n_skipped[why]++;
        return;
    }
    tp_memev_row row = {0};
    row.ts = e->ts;
    row.kind = e->mem_bytes < 0 ? TP_MEMEV_FREE : TP_MEMEV_ALLOC;
    row.bytes = e->mem_bytes;
    /* Kineto Device Type: 0 = CPU, 1 = CUDA (HIP too). */
    row.device =
        e->dev_type > 0 && e->dev_id >= 0 && e->dev_id <= INT32_MAX ? (int32_t)e->dev_id : -1;
    row.addr = e->addr;
    row.total_allocated = e->total_alloc;
    row.total_reserved = e->total_res;
    row.pid = e->pid, row.tid = e->tid; /* the thread whose op allocated: the cpu_op around it */
    tp_memev_push(&p->r->mem, &row);
}

static int is_memory_name(const strbuf *b) {
    return b->len == 8 && !memcmp(b->p, "[memory]", 8);
}

/* Metadata events: only thread names are kept ({"ph":"M","name":"thread_name",
 * "args":{"name":"..."}}), for timeline lanes and reports. */
static void commit_meta(kparse *p, const event *e) {
    p->r->n_meta++;
    if (e->name.len == 11 && !memcmp(e->name.p, "thread_name", 11) && e->arg_name.len)
        tp_rank_set_thread_name(p->m, p->r, e->pid, e->tid, e->arg_name.p, e->arg_name.len);
}

static int commit_event(kparse *p, event *e) {
    tp_rank *r = p->r;
    r->n_json_events++;
    int trace_cat = e->cat.len == 5 && !memcmp(e->cat.p, "Trace", 5);
    if ((e->have & H_DUR) && (e->have & H_CAT) && !trace_cat)
        return commit_row(p, e);
    if ((e->ph == 'i' || e->ph == 'I') && is_memory_name(&e->name) && (e->have & H_TS))
        commit_memory(p, e);
    else if (e->ph == 's' || e->ph == 'f' || e->ph == 't')
        r->n_flow++;
    else if (e->ph == 'M')
        commit_meta(p, e);
    else if (e->ph == 'i' || e->ph == 'I')
        r->n_instant++;
    else
        r->n_dropped++;
    return 1;
}

static void commit_device(kparse *p) {
    tp_rank *r = p->r;
    r->devices = tp_mem_xrealloc(r->devices, r->n_devices + 1, sizeof *r->devices);
    r->devices[r->n_devices++] = p->dev;
}

/* ---------------------------------------------------------------- deferred events */

/* Events parsed ahead by the second thread of a split parse, or by a walk of a piece, in
 * order, packed: an event is 304 bytes, most of them fields still at event_reset's values
 * (2.4x the text it came from, ~1,000 events per 128 KiB piece, held by every piece in
 * flight), so each is kept as a drec (its strings' place and lengths, which groups follow)
 * and its 8-byte words, those of a group only when one differs from event_reset's: 104-128
 * bytes. Their strings live in `text`, each NUL-terminated, one event's in a row; but a
 * walked piece's name and cat, where the walk found them in the piece (not unescaped), are
 * their index in it: the piece stays in the window until it is committed (replay). Copied,
 * they were 0.36 MiB of the import's high water on tracelens_xdit_sd35 (long kernel names,
 * in the ~6 pieces' buffers written), 0.16 on hta_df_index_resolver. */
typedef struct deferred {
    unsigned char *rec; /* the packed events: a drec and its words each */
    size_t rec_len, rec_cap;
    size_t n;
    char *text;
    size_t text_len, text_cap;
} deferred;

#define DREC_COPIED UINT32_MAX /* drec.name_at, cat_at: the string is in deferred.text */
#define DREC_CS_AT (1u << 8)   /* drec.mask: the callstack is in the piece (defer_event) */

typedef struct {
    /* offset in deferred.text of the copied strings, in the order name, cat (unless
     * referenced), arg_name, dims, callstack (< 4 GiB: a piece is < WINDOW_MAX, the split
     * parse's second range < TEXT_MAX) */
    uint32_t text;
    uint32_t name_at, cat_at; /* index in the walked piece, or DREC_COPIED */
    uint32_t len[5];          /* their lengths (dims: to its NUL, as commit_event reads it) */
    /* bit g: group g's words follow (some differ from event_reset's); DREC_CS_AT: the
     * callstack is in the walked piece, its index (4 bytes) in the text in its place */
    uint32_t mask;
    uint8_t have;
    char ph;
} drec;

_Static_assert(H_PH < 256, "event.have fits a drec's byte");
_Static_assert(sizeof(drec) % 8 == 0, "a drec keeps the values after it aligned");
_Static_assert(sizeof(drec) == 40, "name_at and cat_at cost a drec nothing (text is 32 bits)");
_Static_assert(offsetof(event, dur_frac) == offsetof(event, ts_frac) + 4,
               "ts_frac and dur_frac: one 8-byte field of a drec");

/* A drec's words: the block from ts to addr (ts_frac and dur_frac one word), the first
 * DEFER_HOT always, then each group's when its mask bit is set (DEFER_G, UNDEFER_G: `src`,
 * `dst` the event's block, `val` the drec's words, `nv` their count, `h` the drec). Per group
 * and unrolled, not a loop over the words: a test and a copy per word cost ~12 instructions,
 * ~6 % of a report's. */
#define DEFER_AT offsetof(event, ts)
#define DEFER_WORDS ((offsetof(event, addr) + 8 - DEFER_AT) / 8)
#define DEFER_HOT 8
#define DEFER_GROUPS 3    /* words [8, 11), [11, 14), [14, 22) */
#define DEFER_G(g, lo, n) /* group g: its first word, its count; unrolled with constant bounds */  \
    do {                                                                                           \
        uint64_t x_ = 0, v_;                                                                       \
        for (unsigned f_ = (lo); f_ < (lo) + (n); f_++)                                            \
            memcpy(&v_, src + 8 * f_, 8), x_ |= v_ ^ defer_blank_w[f_];                            \
        if (x_) {                                                                                  \
            memcpy(val + nv, src + 8 * (lo), 8 * (n));                                             \
            nv += (n), h.mask |= 1u << (g);                                                        \
        }                                                                                          \
    } while (0)
#define UNDEFER_G(g, lo, n)                                                                        \
    do {                                                                                           \
        if (h.mask >> (g)&1)                                                                       \
            memcpy(dst + 8 * (lo), val + nv, 8 * (n)), nv += (n);                                  \
        else                                                                                       \
            memcpy(dst + 8 * (lo), defer_blank_w + (lo), 8 * (n));                                 \
    } while (0)
_Static_assert(DEFER_WORDS == 22 && offsetof(event, ts_frac) == DEFER_AT + 6 * 8 &&
                   offsetof(event, external_id) == DEFER_AT + 7 * 8 &&
                   offsetof(event, stream) == DEFER_AT + DEFER_HOT * 8 &&
                   offsetof(event, seq) == DEFER_AT + (DEFER_HOT + 3) * 8 &&
                   offsetof(event, bytes) == DEFER_AT + (DEFER_HOT + 6) * 8,
               "a drec's words: ts to addr without holes, in their groups");

/* event_reset's values of the words, DEFER_AT on, as constants (the tests fold into
 * immediates). A group whose words all equal these is left out and replayed as these, so
 * were one to differ from event_reset's (bw's NaN), it would only cost the group's bytes. */
/* clang-format off */
static const uint64_t defer_blank_w[DEFER_WORDS] = {
    0, 0, 0, 0, 0, 0, 0, UINT64_MAX,               /* ts .. ts_frac, external_id */
    UINT64_MAX, UINT64_MAX, UINT64_MAX,            /* stream, device, correlation */
    UINT64_MAX, UINT64_MAX, 0,                     /* seq, fwd_tid, dims_h */
    UINT64_MAX, 0x7ff8000000000000ull, UINT64_MAX, /* bytes, bw, dev_type */
    UINT64_MAX, 0, UINT64_MAX, UINT64_MAX, 0};     /* dev_id, mem_bytes, total_*, addr */
/* clang-format on */

#define DEFER_REC_FIRST (256u << 10) /* first size of a drec and a text buffer (~2,000 events) */

static void deferred_free(deferred *d) {
    free(d->rec);
    free(d->text);
}

/* Empties d, keeping its buffers for the next piece. */
static void deferred_clear(deferred *d) {
    d->n = d->rec_len = d->text_len = 0;
}

/* Copies n bytes of s and a NUL to d's text, which has room (defer_event grows it once for
 * all five). */
static inline void defer_str(deferred *d, const char *s, size_t n) {
    char *t = d->text + d->text_len;
    if (n)
        memcpy(t, s, n);
    t[n] = 0;
    d->text_len += n + 1;
}

/* defer_event's callstack (old Kineto's with_stack: not on most traces, out of line): its
 * index in the walked piece when it is there, else a copy; DREC_CS_AT or 0 for drec.mask. */
static __attribute__((noinline)) uint32_t defer_callstack(const kparse *p, deferred *d,
                                                          const event *e) {
    const char *cs = p->borrow ? e->callstack_s : e->callstack.p;
    uintptr_t at = (uintptr_t)cs - (uintptr_t)p->walk_text;
    if (p->walk_text && at < p->walk_len) {
        uint32_t at32 = (uint32_t)at;
        memcpy(d->text + d->text_len, &at32, 4);
        d->text_len += 4;
        return DREC_CS_AT;
    }
    defer_str(d, cs, e->callstack.len);
    return 0;
}

/* Keeps the current event for later. The one way commit_event can fail (a row without ts) is
 * checked here, so a replay never fails and the first parser's error positions stay its own. */
static int defer_event(kparse *p) {
    event *e = &p->ev;
    const char *name = p->borrow ? e->name_s : e->name.p, *cat = p->borrow ? e->cat_s : e->cat.p;
    int trace_cat = e->cat.len == 5 && !memcmp(cat, "Trace", 5);
    int row = (e->have & H_DUR) && (e->have & H_CAT) && !trace_cat; /* commit_event's test */
    if (row && !(e->have & H_TS))
        return fail(p, TP_ERR_PARSE, "event with dur has no ts");
    size_t dn = e->dims.len ? strlen(e->dims.p) : 0; /* commit_event reads it to its NUL */
    if (row) {                                       /* only rows intern their strings */
        e->name_h = e->name.len ? tp_model_str_hash(name, e->name.len) : 0;
        e->cat_h = e->cat.len ? tp_model_str_hash(cat, e->cat.len) : 0;
        e->dims_h = dn ? tp_model_str_hash(e->dims.p, dn) : 0;
    }
    deferred *d = p->defer;
    drec h = {.text = (uint32_t)d->text_len,
              .name_at = DREC_COPIED,
              .cat_at = DREC_COPIED,
              .len = {(uint32_t)e->name.len, (uint32_t)e->cat.len, (uint32_t)e->arg_name.len,
                      (uint32_t)dn, (uint32_t)e->callstack.len},
              .have = (uint8_t)e->have,
              .ph = e->ph};
    size_t copy = e->name.len + e->cat.len;
    if (p->walk_text) { /* in the piece: its index (the piece is < 4 GiB, see WINDOW_MAX) */
        uintptr_t b = (uintptr_t)p->walk_text;
        if ((uintptr_t)name - b < p->walk_len)
            h.name_at = (uint32_t)((uintptr_t)name - b), copy -= e->name.len;
        if ((uintptr_t)cat - b < p->walk_len)
            h.cat_at = (uint32_t)((uintptr_t)cat - b), copy -= e->cat.len;
    }
    if (!d->text_cap) { /* as d->rec below: grown from small, the copies left holes in the
                           heap, +0.2-0.7 MiB after the import (df_index_resolver) */
        d->text_cap = DEFER_REC_FIRST;
        d->text = tp_mem_xalloc(d->text_cap, 1);
    }
    /* the five NULs, or four and a callstack's index */
    TP_MEM_XGROW(d->text, d->text_cap,
                 d->text_len + copy + e->arg_name.len + dn + e->callstack.len + 8);
    if (h.name_at == DREC_COPIED)
        defer_str(d, name, e->name.len);
    if (h.cat_at == DREC_COPIED)
        defer_str(d, cat, e->cat.len);
    defer_str(d, e->arg_name.p, e->arg_name.len);
    defer_str(d, e->dims.p, dn);
    if (e->callstack.len)
        h.mask = defer_callstack(p, d, e);
    else
        defer_str(d, NULL, 0);
    if (!d->rec_cap) { /* one mapping (over malloc's mmap threshold), touched only as used
                          and given back whole, rather than copies grown from small */
        d->rec_cap = DEFER_REC_FIRST;
        d->rec = tp_mem_xalloc(d->rec_cap, 1);
    }
    TP_MEM_XGROW(d->rec, d->rec_cap, d->rec_len + sizeof h + 8 * DEFER_WORDS);
    uint64_t *val = (uint64_t *)(void *)(d->rec + d->rec_len + sizeof h);
    const unsigned char *src = (const unsigned char *)e + DEFER_AT;
    memcpy(val, src, 8 * DEFER_HOT);
    size_t nv = DEFER_HOT;
    DEFER_G(0, 8, 3);
    DEFER_G(1, 11, 3);
    DEFER_G(2, 14, 8);
    memcpy(d->rec + d->rec_len, &h, sizeof h);
    d->rec_len += sizeof h + 8 * nv;
    d->n++;
    e->name_h = e->cat_h = e->dims_h = 0; /* the parser's own event computes none */
    return 1;
}

/* Commits the deferred events in order, as if the first parser had read them: each unpacked
 * into one event (its drec's words, event_reset's for the others; the strings' caps, which
 * commit_event does not read, left as they are), its strings pointed at in place: in d's
 * text, or in `piece`, the text the walk walked (drec.name_at; NULL: none). commit_event
 * reads a name and a cat by their lengths, not to a NUL. */
static void replay(kparse *p, deferred *d, const char *piece) {
    event e;
    const unsigned char *at = d->rec;
    for (size_t i = 0; i < d->n; i++) {
        drec h;
        memcpy(&h, at, sizeof h);
        const uint64_t *val = (const uint64_t *)(const void *)(at + sizeof h);
        unsigned char *dst = (unsigned char *)&e + DEFER_AT;
        memcpy(dst, val, 8 * DEFER_HOT);
        size_t nv = DEFER_HOT;
        UNDEFER_G(0, 8, 3);
        UNDEFER_G(1, 11, 3);
        UNDEFER_G(2, 14, 8);
        e.have = h.have, e.ph = h.ph;
        at += sizeof h + 8 * nv;
        char *t = d->text + h.text;
        e.name.len = h.len[0], e.cat.len = h.len[1];
        if (h.name_at != DREC_COPIED)
            e.name.p = (char *)(uintptr_t)(piece + h.name_at);
        else
            e.name.p = t, t += h.len[0] + 1;
        if (h.cat_at != DREC_COPIED)
            e.cat.p = (char *)(uintptr_t)(piece + h.cat_at);
        else
            e.cat.p = t, t += h.len[1] + 1;
        e.arg_name.p = t, e.arg_name.len = h.len[2], t += h.len[2] + 1;
        e.dims.p = t, e.dims.len = h.len[3], t += h.len[3] + 1;
        e.callstack.len = h.len[4];
        if (h.mask & DREC_CS_AT) {
            uint32_t cs_at;
            memcpy(&cs_at, t, 4);
            e.callstack.p = (char *)(uintptr_t)(piece + cs_at);
        } else {
            e.callstack.p = t;
        }
        commit_event(p, &e);
        p->event_idx++;
    }
}

/* ---------------------------------------------------------------- yajl callbacks */

static frame top_frame(const kparse *p) {
    return p->top;
}

/* p->top after p->depth or p->kind changed. */
static void frames_set(kparse *p) {
    p->top = p->depth == 0 || p->depth > MAX_FRAMES ? F_SKIP : p->kind[p->depth - 1];
}

static void push(kparse *p, frame f) {
    p->top = p->depth < MAX_FRAMES ? f : F_SKIP;
    if (p->depth < MAX_FRAMES)
        p->kind[p->depth] = f;
    p->depth++;
    p->k = K_NONE;
}

static void pop(kparse *p) {
    p->depth--;
    frames_set(p);
    p->k = K_NONE;
}

static int type_error(kparse *p, const char *what) {
    return fail(p, TP_ERR_PARSE, "field '%s': expected %s", key_name(p->k), what);
}

/* A scalar where the current frame expects something else? Returns 0 after failing. */
static int check_scalar_slot(kparse *p) {
    frame f = top_frame(p);
    if (f == F_EVENTS)
        return fail(p, TP_ERR_PARSE, "traceEvents[%llu]: expected an object",
                    (unsigned long long)p->event_idx);
    if (f == F_TOP && p->k == K_TRACE_EVENTS)
        return fail(p, TP_ERR_PARSE, "traceEvents: expected an array");
    if (p->depth == 0)
        return fail(p, TP_ERR_PARSE, "top level: expected an object or array of events");
    return 1;
}

static void buf_set(strbuf *b, const unsigned char *s, size_t len) {
    TP_MEM_XGROW(b->p, b->cap, len + 1);
    memcpy(b->p, s, len);
    b->p[len] = 0;
    b->len = len;
}

/* Appends `n` bytes to the "Input Dims" text, after ", " unless it follows an opening
 * bracket. Texts past DIMS_MAX bytes end in "..." (a shape label, not data). */
#define DIMS_MAX 480
static void dims_put(strbuf *b, const char *s, size_t n) {
    if (b->len >= DIMS_MAX)
        return;
    int sep = b->len && b->p[b->len - 1] != '[', cut = b->len + n + 2 > DIMS_MAX;
    if (cut)
        s = "...", n = 3, sep = 0;
    TP_MEM_XGROW(b->p, b->cap, b->len + n + 3);
    if (sep)
        memcpy(b->p + b->len, ", ", 2), b->len += 2;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
    if (cut)
        b->len = DIMS_MAX; /* nothing more; the text ends at its NUL */
}

static void dims_close(strbuf *b) {
    if (b->len >= DIMS_MAX)
        return;
    TP_MEM_XGROW(b->p, b->cap, b->len + 2);
    b->p[b->len++] = ']';
    b->p[b->len] = 0;
}

static int cb_null(void *ctx) {
    kparse *p = ctx;
    return check_scalar_slot(p); /* null fields count as absent */
}

static int cb_bool(void *ctx, int v) {
    kparse *p = ctx;
    if (!check_scalar_slot(p))
        return 0;
    if (top_frame(p) == F_EVENT && p->k != K_NONE && p->k != K_ARGS && p->k != K_PID &&
        p->k != K_TID)
        return type_error(p, p->k == K_TS || p->k == K_DUR ? "a number" : "a string");
    return 1;
}

static int event_number(kparse *p, event *e, const char *s, size_t n) {
    switch (p->k) {
    case K_TS:
        if (parse_us(s, n, &e->ts, &e->ts_frac))
            return fail(p, TP_ERR_PARSE, "field 'ts': number %.*s out of range",
                        (int)(n > 40 ? 40 : n), s);
        e->have |= H_TS;
        return 1;
    case K_DUR:
        if (parse_us(s, n, &e->dur, &e->dur_frac))
            return fail(p, TP_ERR_PARSE, "field 'dur': number %.*s out of range",
                        (int)(n > 40 ? 40 : n), s);
        e->have |= H_DUR;
        return 1;
    case K_PID:
    case K_TID: {
        int64_t v;
        if (parse_int(s, n, &v))
            return fail(p, TP_ERR_PARSE, "field '%s': number out of range", key_name(p->k));
        *(p->k == K_PID ? &e->pid : &e->tid) = v;
        return 1;
    }
    case K_PH:
    case K_CAT:
    case K_NAME:
        return type_error(p, "a string");
    default:
        return 1;
    }
}

static int args_int(kparse *p, event *e, int64_t v);

static int args_number(kparse *p, event *e, const char *s, size_t n) {
    int64_t v;
    if (p->k == K_BW) {
        char buf[64];
        size_t m = n < sizeof buf - 1 ? n : sizeof buf - 1;
        memcpy(buf, s, m);
        buf[m] = 0;
        e->bw = strtod(buf, NULL);
        return 1;
    }
    if (p->k == K_NONE || parse_int(s, n, &v))
        return 1; /* unknown args are skipped; bad numbers in args count as absent */
    return args_int(p, e, v);
}

/* An args number's value `v` (parsed) into the event. */
static int args_int(kparse *p, event *e, int64_t v) {
    switch (p->k) {
    case K_STREAM:
        e->stream = v;
        break;
    case K_CORR:
        e->correlation = v;
        break;
    case K_EXTID:
        e->external_id = v;
        break;
    case K_BYTES:
        e->bytes = v;
        break;
    case K_DEVICE:
        e->device = v;
        break;
    case K_DEV_TYPE:
        e->dev_type = v;
        break;
    case K_DEV_ID:
        e->dev_id = v;
        break;
    case K_ADDR:
        e->addr = (uint64_t)v;
        break;
    case K_MEM_BYTES:
        e->mem_bytes = v;
        e->have |= H_MEM_BYTES;
        break;
    case K_TOTAL_ALLOC:
        e->total_alloc = v;
        break;
    case K_TOTAL_RES:
        e->total_res = v;
        break;
    case K_SEQ:
        e->seq = v;
        break;
    case K_FWD_TID:
        e->fwd_tid = v;
        break;
    default:
        break;
    }
    return 1;
}

/* Kineto's version fields are the numbers the CUDA APIs return (12060 = 12.6); CUPTI's is its
 * API version. */
static void env_version(kparse *p, key k, int64_t v) {
    char b[32];
    if (v <= 0 || v > INT_MAX)
        return;
    if (k == K_CUPTI_VER && v >= 10000) /* CUDA 13: 130001 = 13.0.1 */
        snprintf(b, sizeof b, "%lld.%lld.%lld", (long long)(v / 10000),
                 (long long)(v % 10000 / 100), (long long)(v % 100));
    else if (k == K_CUPTI_VER)
        snprintf(b, sizeof b, "API %lld", (long long)v);
    else
        tp_sysinfo_cuda_version_str((int)v, b, sizeof b);
    tp_env_key e = k == K_CUPTI_VER     ? TP_ENVK_CUPTI
                   : k == K_RUNTIME_VER ? TP_ENVK_RUNTIME
                                        : TP_ENVK_DRIVER_API;
    tp_rank_set_env(p->m, p->r, -1, tp_env_key_str(e), b, 1);
}

/* deviceProperties and distributedInfo as environment facts, the keys a native trace has.
 * Not for trainprof's own export, which carries the native trace's facts as they were. */
static void kineto_env(kparse *p) {
    tp_rank *r = p->r;
    char b[64];
    if (p->have_tp_env)
        return;
    for (size_t i = 0; i < r->n_devices; i++) {
        const tp_device_info *d = &r->devices[i];
        int32_t dev = d->id;
        tp_rank_set_env(p->m, r, dev, tp_env_key_str(TP_ENVK_GPU_NAME), tp_model_str(p->m, d->name),
                        1);
        if (d->num_sms > 0) {
            snprintf(b, sizeof b, "%d", d->num_sms);
            tp_rank_set_env(p->m, r, dev, tp_env_key_str(TP_ENVK_GPU_SMS), b, 1);
        }
        if (d->compute_major > 0) {
            snprintf(b, sizeof b, "%d.%d", d->compute_major, d->compute_minor);
            tp_rank_set_env(p->m, r, dev, tp_env_key_str(TP_ENVK_GPU_CC), b, 1);
        }
        if (d->total_global_mem > 0) {
            snprintf(b, sizeof b, "%lld", (long long)d->total_global_mem);
            tp_rank_set_env(p->m, r, dev, tp_env_key_str(TP_ENVK_GPU_MEMORY), b, 1);
        }
        tp_rank_set_env(p->m, r, dev, tp_env_key_str(TP_ENVK_GPU_SOURCE), "kineto", 1);
    }
    if (r->dist_backend)
        tp_rank_set_env(p->m, r, -1, tp_env_key_str(TP_ENVK_DIST_BACKEND),
                        tp_model_str(p->m, r->dist_backend), 1);
    if (r->world_size > 0) {
        snprintf(b, sizeof b, "%d", r->world_size);
        tp_rank_set_env(p->m, r, -1, tp_env_key_str(TP_ENVK_DIST_WORLD), b, 1);
    }
}

static int meta_number(kparse *p, frame f, const char *s, size_t n) {
    int64_t v;
    if (f == F_SKIP || p->k == K_NONE || parse_int(s, n, &v))
        return 1;
    if (f == F_TOP && p->k == K_BASETIME)
        p->r->base_time_ns = v;
    else if (f == F_TOP && (p->k == K_CUPTI_VER || p->k == K_RUNTIME_VER || p->k == K_DRIVER_VER))
        env_version(p, p->k, v);
    else if (f == F_ENV && p->k == K_ENV_DEVICE)
        p->env_dev = v;
    else if (f == F_DIST && p->k == K_RANK && v >= 0 && v <= INT_MAX)
        p->r->rank = (int)v, p->r->has_dist_info = 1;
    else if (f == F_DIST && p->k == K_WORLD && v >= 0 && v <= INT_MAX)
        p->r->world_size = (int)v;
    else if (f == F_DEVPROP) {
        int32_t v32 = v >= INT32_MIN && v <= INT32_MAX ? (int32_t)v : -1;
        switch (p->k) {
        case K_ID:
            p->dev.id = v32;
            break;
        case K_GLOBALMEM:
            p->dev.total_global_mem = v;
            break;
        case K_CMAJOR:
            p->dev.compute_major = v32;
            break;
        case K_CMINOR:
            p->dev.compute_minor = v32;
            break;
        case K_NUMSMS:
            p->dev.num_sms = v32;
            break;
        default:
            break;
        }
    }
    return 1;
}

/* cb_number and cb_string: an event's, its args' and its dims' frames come first, where
 * check_scalar_slot always passes (it fails only in F_EVENTS, F_TOP or at depth 0), and it
 * runs for the rest: one frame lookup for nearly every scalar of a trace, not two. */
static int cb_number(void *ctx, const char *s, size_t n) {
    kparse *p = ctx;
    frame f = top_frame(p);
    if (f == F_EVENT)
        return event_number(p, &p->ev, s, n);
    if (f == F_ARGS)
        return args_number(p, &p->ev, s, n);
    if (f == F_DIMS) {
        dims_put(&p->ev.dims, s, n);
        return 1;
    }
    if (!check_scalar_slot(p))
        return 0;
    return meta_number(p, f, s, n);
}

/* cb_number for an integer of at most 18 digits whose value the walker read (tp_json_walk's
 * on_integer): what parse_int and parse_us would make of its text, without reading it again
 * (they were ~4 % of an import's instructions). */
static int cb_integer(void *ctx, const char *s, size_t n, int64_t v) {
    kparse *p = ctx;
    frame f = top_frame(p);
    event *e = &p->ev;
    if (f == F_EVENT && (p->k == K_PID || p->k == K_TID)) {
        *(p->k == K_PID ? &e->pid : &e->tid) = v;
        return 1;
    }
    if (f == F_EVENT && (p->k == K_TS || p->k == K_DUR) && v >= -NS_LIMIT / 1000 &&
        v <= NS_LIMIT / 1000) { /* parse_us: whole µs, no fraction (its fast path) */
        *(p->k == K_TS ? &e->ts : &e->dur) = v * 1000;
        *(p->k == K_TS ? &e->ts_frac : &e->dur_frac) = 0;
        e->have |= p->k == K_TS ? H_TS : H_DUR;
        return 1;
    }
    if (f == F_ARGS && p->k != K_BW)
        return p->k == K_NONE || args_int(p, e, v);
    return cb_number(ctx, s, n);
}

/* cb_number for a number whose value times 1000 the walker read (tp_json_walk's on_milli:
 * at most 15 digits, a point and 1-3 more): an event's ts or dur as parse_us would make it
 * (its fast path); anything else as before. */
static int cb_milli(void *ctx, const char *s, size_t n, int64_t milli) {
    kparse *p = ctx;
    event *e = &p->ev;
    if (top_frame(p) == F_EVENT && (p->k == K_TS || p->k == K_DUR) && milli >= -NS_LIMIT &&
        milli <= NS_LIMIT) {
        *(p->k == K_TS ? &e->ts : &e->dur) = milli;
        *(p->k == K_TS ? &e->ts_frac : &e->dur_frac) = milli % 1000 != 0;
        e->have |= p->k == K_TS ? H_TS : H_DUR;
        return 1;
    }
    return cb_number(ctx, s, n);
}

static int event_string(kparse *p, event *e, const unsigned char *s, size_t n) {
    switch (p->k) {
    case K_PH:
        e->ph = n ? (char)s[0] : 0;
        e->have |= H_PH;
        return 1;
    case K_CAT:
        if (p->borrow)
            e->cat_s = (const char *)s, e->cat.len = n;
        else
            buf_set(&e->cat, s, n);
        e->have |= H_CAT;
        return 1;
    case K_NAME:
        if (p->borrow)
            e->name_s = (const char *)s, e->name.len = n;
        else
            buf_set(&e->name, s, n);
        e->have |= H_NAME;
        return 1;
    case K_PID:
        e->pid = id_from_text((const char *)s, n);
        return 1;
    case K_TID:
        e->tid = id_from_text((const char *)s, n);
        return 1;
    case K_TS:
    case K_DUR:
        return type_error(p, "a number");
    default:
        return 1;
    }
}

static int cb_string(void *ctx, const unsigned char *s, size_t n) {
    kparse *p = ctx;
    frame f = top_frame(p);
    if (f == F_EVENT)
        return event_string(p, &p->ev, s, n);
    if (f != F_ARGS && f != F_DIMS && !check_scalar_slot(p))
        return 0;
    if (f == F_ARGS && p->k == K_STREAM) { /* HTA: int("7") works, int("0x0") is -1 */
        int64_t v;
        p->ev.stream = parse_int_str((const char *)s, n, &v) == 0 ? v : -1;
    } else if (f == F_ARGS && p->k == K_ARG_NAME) {
        buf_set(&p->ev.arg_name, s, n);
    } else if (f == F_ARGS && p->k == K_CALLSTACK) {
        if (p->borrow) /* as a name (event.name_s) */
            p->ev.callstack_s = (const char *)s, p->ev.callstack.len = n;
        else
            buf_set(&p->ev.callstack, s, n);
    } else if (f == F_DIMS) {
        dims_put(&p->ev.dims, (const char *)s, n);
    } else if (f == F_DEVPROP && p->k == K_DP_NAME) {
        p->dev.name = tp_model_intern(p->m, (const char *)s, n);
    } else if (f == F_DIST && p->k == K_BACKEND) {
        p->r->dist_backend = tp_model_intern(p->m, (const char *)s, n);
    } else if (f == F_ENV && (p->k == K_ENV_KEY || p->k == K_ENV_VALUE)) {
        buf_set(p->k == K_ENV_KEY ? &p->env_key : &p->env_val, s, n);
    } else if (f == F_DIST && p->k == K_NCCL_VER) {
        char v[64];
        snprintf(v, sizeof v, "%.*s", (int)(n < sizeof v ? n : sizeof v - 1), (const char *)s);
        tp_rank_set_env(p->m, p->r, -1, tp_env_key_str(TP_ENVK_NCCL), v, 1);
    }
    return 1;
}

#define KEY_IS(lit) (n == sizeof(lit) - 1 && !memcmp(s, lit, n))

static key event_key(const unsigned char *s, size_t n) {
    if (n == 2)
        return KEY_IS("ph") ? K_PH : KEY_IS("ts") ? K_TS : K_NONE;
    if (n == 3)
        return KEY_IS("cat")   ? K_CAT
               : KEY_IS("dur") ? K_DUR
               : KEY_IS("pid") ? K_PID
               : KEY_IS("tid") ? K_TID
                               : K_NONE;
    return KEY_IS("name") ? K_NAME : KEY_IS("args") ? K_ARGS : K_NONE;
}

/* By length first: most keys of a trace's args are ones nobody reads ("Input type",
 * "Profiler Event Index", "registers per thread"...), and a chain of the 19 names compared
 * each of them with every name of its length in turn. */
static key args_key(const unsigned char *s, size_t n) {
    switch (n) {
    case 4:
        return KEY_IS("Addr") ? K_ADDR : KEY_IS("name") ? K_ARG_NAME : K_NONE;
    case 5:
        return KEY_IS("bytes") ? K_BYTES : KEY_IS("Bytes") ? K_MEM_BYTES : K_NONE;
    case 6:
        return KEY_IS("stream") ? K_STREAM : KEY_IS("device") ? K_DEVICE : K_NONE;
    case 9:
        return KEY_IS("Device Id") ? K_DEV_ID : K_NONE;
    case 10:
        return KEY_IS("Input Dims") || KEY_IS("Input dims") ? K_DIMS
               : KEY_IS("Call stack")                       ? K_CALLSTACK
                                                            : K_NONE;
    case 11:
        return KEY_IS("correlation")                            ? K_CORR
               : KEY_IS("External id") || KEY_IS("external id") ? K_EXTID
               : KEY_IS("Device Type")                          ? K_DEV_TYPE
                                                                : K_NONE;
    case 13:
        return KEY_IS("Fwd thread id") ? K_FWD_TID : K_NONE;
    case 14:
        return KEY_IS("Total Reserved") ? K_TOTAL_RES : K_NONE;
    case 15:
        return KEY_IS("Total Allocated")   ? K_TOTAL_ALLOC
               : KEY_IS("Sequence number") ? K_SEQ
                                           : K_NONE;
    case 23:
        return KEY_IS("memory bandwidth (GB/s)") ? K_BW : K_NONE;
    default:
        return K_NONE;
    }
}

static key other_key(frame f, const unsigned char *s, size_t n) {
    switch (f) {
    case F_TOP:
        return KEY_IS("traceEvents")            ? K_TRACE_EVENTS
               : KEY_IS("deviceProperties")     ? K_DEVPROPS
               : KEY_IS("distributedInfo")      ? K_DIST
               : KEY_IS("baseTimeNanoseconds")  ? K_BASETIME
               : KEY_IS("cupti_version")        ? K_CUPTI_VER
               : KEY_IS("cuda_runtime_version") ? K_RUNTIME_VER
               : KEY_IS("cuda_driver_version")  ? K_DRIVER_VER
               : KEY_IS("trainprofEnvironment") ? K_TP_ENV
                                                : K_NONE;
    case F_DEVPROP:
        return KEY_IS("id")               ? K_ID
               : KEY_IS("name")           ? K_DP_NAME
               : KEY_IS("totalGlobalMem") ? K_GLOBALMEM
               : KEY_IS("computeMajor")   ? K_CMAJOR
               : KEY_IS("computeMinor")   ? K_CMINOR
               : KEY_IS("numSms")         ? K_NUMSMS
                                          : K_NONE;
    case F_DIST:
        return KEY_IS("rank")           ? K_RANK
               : KEY_IS("world_size")   ? K_WORLD
               : KEY_IS("backend")      ? K_BACKEND
               : KEY_IS("nccl_version") ? K_NCCL_VER
                                        : K_NONE;
    case F_ENV:
        return KEY_IS("device")  ? K_ENV_DEVICE
               : KEY_IS("key")   ? K_ENV_KEY
               : KEY_IS("value") ? K_ENV_VALUE
                                 : K_NONE;
    default:
        return K_NONE;
    }
}

/* Returns 2 (the walker's "skip": yajl takes it as 1) for a key whose value every callback
 * ignores, K_NONE in an event, its args or a skipped value: scalars there are dropped (see
 * event_number, args_number, meta_number, event_string, cb_string) and objects and arrays
 * become F_SKIP frames, whose contents are dropped the same way.
 * ~20 instructions a key, the call included (48.6 M for 2.42 M keys of report --compat hta on
 * hta_df_index_resolver, one import thread): recognising the keys in the walker instead, and
 * handing an id to a callback that only looks it up, cost 1,301 M against 1,182 M there (the
 * lookup alone was ~17 a key; the walker's compare ~33). Only a walk that also skips the value
 * callbacks of an event's keys could pay (issue 13, measured at 3a81d4e). */
static int cb_map_key(void *ctx, const unsigned char *s, size_t n) {
    kparse *p = ctx;
    frame f = top_frame(p);
    p->k = f == F_EVENT ? event_key(s, n) : f == F_ARGS ? args_key(s, n) : other_key(f, s, n);
    return p->k == K_NONE && (f == F_EVENT || f == F_ARGS || f == F_SKIP) ? 2 : 1;
}

static int cb_start_map(void *ctx) {
    kparse *p = ctx;
    frame f = top_frame(p), nf = F_SKIP;
    if (p->depth == 0)
        nf = F_TOP;
    else if (f == F_EVENTS)
        nf = F_EVENT, event_reset(&p->ev);
    else if (f == F_EVENT && p->k == K_ARGS)
        nf = F_ARGS;
    else if (f == F_EVENT && p->k != K_NONE)
        return type_error(p, p->k == K_TS || p->k == K_DUR ? "a number" : "a string");
    else if (f == F_TOP && p->k == K_TRACE_EVENTS)
        return fail(p, TP_ERR_PARSE, "traceEvents: expected an array");
    else if (f == F_TOP && p->k == K_DIST)
        nf = F_DIST;
    else if (f == F_DEVPROPS)
        nf = F_DEVPROP, memset(&p->dev, 0, sizeof p->dev), p->dev.id = -1;
    else if (f == F_ENVS) {
        nf = F_ENV, p->env_dev = -1;
        buf_set(&p->env_key, (const unsigned char *)"", 0);
        buf_set(&p->env_val, (const unsigned char *)"", 0);
    }
    push(p, nf);
    return 1;
}

static int cb_start_array(void *ctx) {
    kparse *p = ctx;
    frame f = top_frame(p), nf = F_SKIP;
    if (p->depth == 0 || (f == F_TOP && p->k == K_TRACE_EVENTS))
        nf = F_EVENTS, p->saw_events = 1;
    else if (f == F_TOP && p->k == K_DEVPROPS)
        nf = F_DEVPROPS;
    else if (f == F_TOP && p->k == K_TP_ENV)
        nf = F_ENVS, p->have_tp_env = 1;
    else if ((f == F_ARGS && p->k == K_DIMS) || f == F_DIMS)
        nf = F_DIMS, dims_put(&p->ev.dims, "[", 1);
    else if (f == F_EVENT && p->k != K_NONE && p->k != K_ARGS)
        return type_error(p, p->k == K_TS || p->k == K_DUR ? "a number" : "a string");
    else if (f == F_EVENTS)
        return fail(p, TP_ERR_PARSE, "traceEvents[%llu]: expected an object",
                    (unsigned long long)p->event_idx);
    push(p, nf);
    return 1;
}

static int cb_end_map(void *ctx) {
    kparse *p = ctx;
    frame f = top_frame(p);
    int ok = 1;
    if (f == F_EVENT) {
        ok = p->defer ? defer_event(p) : commit_event(p, &p->ev);
        p->event_idx++;
        p->ev_end = cur_offset(p);
    } else if (f == F_DEVPROP) {
        commit_device(p);
    } else if (f == F_ENV && p->env_dev >= -1 && p->env_dev <= INT32_MAX) {
        tp_rank_set_env(p->m, p->r, (int32_t)p->env_dev, p->env_key.p, p->env_val.p, 1);
    }
    pop(p);
    return ok;
}

static int cb_end_array(void *ctx) {
    kparse *p = ctx;
    if (top_frame(p) == F_DIMS)
        dims_close(&p->ev.dims);
    if (p->defer && p->depth == p->defer_depth)
        p->array_end = cur_offset(p);
    pop(p);
    return 1;
}

static const yajl_callbacks callbacks = {cb_null,    cb_bool,        NULL,         NULL,
                                         cb_number,  cb_string,      cb_start_map, cb_map_key,
                                         cb_end_map, cb_start_array, cb_end_array};

/* ---------------------------------------------------------------- HTA rank regex */

static int is_regex_space(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

/* Continues the `\s+(\d+)` part from state 1-3 over s[0..n). */
static void rank_continue(kparse *p, const char *s, size_t n) {
    for (size_t i = 0; i < n && p->rank_state != 0 && p->rank_state != 4; i++) {
        char c = s[i];
        if (p->rank_state == 1 || p->rank_state == 2) {
            if (is_regex_space(c))
                p->rank_state = 2;
            else if (p->rank_state == 2 && c >= '0' && c <= '9')
                p->rank_state = 3, p->rank_val = c - '0';
            else
                p->rank_state = 0;
        } else if (c >= '0' && c <= '9') {
            p->rank_val = p->rank_val < INT_MAX / 10 ? p->rank_val * 10 + (c - '0') : INT_MAX;
        } else {
            p->rank_state = 4;
        }
    }
}

/* The first `"rank":` in s[0..n), NULL when none. This runs over every byte of a trace
 * without one (most): glibc's memmem took 5 % of the import's CPU, so SSE2 tests three of
 * the pattern's bytes (`"` at 0, `k` at 4, `:` at 6) for 16 starts at once. */
static const char *find_rank_key(const char *s, size_t n) {
    size_t i = 0;
#ifdef __SSE2__
    const __m128i q = _mm_set1_epi8('"'), k = _mm_set1_epi8('k'), c = _mm_set1_epi8(':');
    for (; i + 22 <= n; i += 16) {
        __m128i a = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(s + i)), q);
        __m128i b = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(s + i + 4)), k);
        __m128i d = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(s + i + 6)), c);
        unsigned m = (unsigned)_mm_movemask_epi8(_mm_and_si128(_mm_and_si128(a, b), d));
        for (; m; m &= m - 1) {
            const char *at = s + i + __builtin_ctz(m);
            if (!memcmp(at, "\"rank\":", 7))
                return at;
        }
    }
#endif
    return memmem(s + i, n - i, "\"rank\":", 7);
}

#define RANK_NONE SIZE_MAX /* no `"rank":` starts in the text searched */

#if TP_WALK_AVX2
/* find_rank_key 32 starts at a time, for the walking threads where the CPU has AVX2
 * (pieces.avx2). The search of every piece of a trace without a rank was 62.8 M instructions
 * of owlv2's 914 M import with SSE2. */
__attribute__((target("avx2"))) static const char *find_rank_key_avx2(const char *s, size_t n) {
    size_t i = 0;
    const __m256i q = _mm256_set1_epi8('"'), k = _mm256_set1_epi8('k'), c = _mm256_set1_epi8(':');
    for (; i + 38 <= n; i += 32) {
        __m256i a = _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(s + i)), q);
        __m256i b = _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(s + i + 4)), k);
        __m256i d = _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(s + i + 6)), c);
        unsigned m = (unsigned)_mm256_movemask_epi8(_mm256_and_si256(_mm256_and_si256(a, b), d));
        for (; m; m &= m - 1) {
            const char *at = s + i + __builtin_ctz(m);
            if (!memcmp(at, "\"rank\":", 7))
                return at;
        }
    }
    return find_rank_key(s + i, n - i);
}
#else
#define find_rank_key_avx2 find_rank_key
#endif

/* Scans one chunk for the first `"rank":\s+(\d+)` as HTA does (a line-wise regex; the
 * whitespace class excludes the newline). Matches split across chunks are found. `first`:
 * the index in s of the first `"rank":` (RANK_NONE: none), when the caller knows it (a walked
 * piece: pass_slot), else RANK_UNKNOWN. */
#define RANK_UNKNOWN (SIZE_MAX - 1)
static void rank_scan_known(kparse *p, const char *s, size_t n, size_t first) {
    static const char pat[] = "\"rank\":";
    const size_t plen = sizeof pat - 1;
    if (p->rank_state == 4)
        return;
    if (p->rank_state != 0)
        rank_continue(p, s, n);
    if (p->rank_state == 0 && p->rank_tail_len) { /* the pattern split across chunks */
        char both[16];
        size_t take = n < plen ? n : plen;
        memcpy(both, p->rank_tail, p->rank_tail_len);
        memcpy(both + p->rank_tail_len, s, take);
        const char *hit = memmem(both, p->rank_tail_len + take, pat, plen);
        if (hit && (size_t)(hit - both) + plen > p->rank_tail_len) {
            size_t skip = (size_t)(hit - both) + plen - p->rank_tail_len;
            p->rank_state = 1;
            rank_continue(p, s + skip, n - skip);
        }
    }
    for (const char *q = s; p->rank_state == 0 && q < s + n;) {
        const char *hit = q == s && first != RANK_UNKNOWN ? (first == RANK_NONE ? NULL : s + first)
                                                          : find_rank_key(q, (size_t)(s + n - q));
        if (!hit)
            break;
        p->rank_state = 1;
        rank_continue(p, hit + plen, (size_t)(s + n - hit - plen));
        q = hit + 1;
    }
    size_t keep = n < plen - 1 ? n : plen - 1;
    memcpy(p->rank_tail, s + n - keep, keep);
    p->rank_tail_len = keep;
}

static void rank_scan(kparse *p, const char *s, size_t n) {
    rank_scan_known(p, s, n, RANK_UNKNOWN);
}

/* ---------------------------------------------------------------- driving yajl */

static tp_status feed(kparse *p, const unsigned char *buf, size_t n) {
    rank_scan(p, (const char *)buf, n);
    p->chunk = buf;
    p->chunk_len = n;
    yajl_status ys = yajl_parse(p->h, buf, n);
    if (ys == yajl_status_ok) {
        p->base_off += n;
        advance_lines(p, buf, n);
        p->chunk = NULL;
        p->chunk_len = 0;
    } else if (ys == yajl_status_error) {
        unsigned char *msg = yajl_get_error(p->h, 0, buf, n);
        const char *m = (const char *)msg;
        if (m && !strncmp(m, "lexical error: ", 15))
            m += 15;
        size_t len = m ? strlen(m) : 0;
        while (len && (m[len - 1] == '\n' || m[len - 1] == ' ' || m[len - 1] == '.'))
            len--; /* yajl ends its messages with ".\n" */
        fail(p, TP_ERR_PARSE, "invalid JSON: %.*s", (int)len, m ? m : "");
        yajl_free_error(p->h, msg);
    } else {
        fail(p, TP_ERR_PARSE, "parse stopped");
    }
    return p->st;
}

static tp_status finish(kparse *p) {
    if (p->st == TP_OK && yajl_complete_parse(p->h) != yajl_status_ok) {
        if (p->depth == 0 && !p->saw_events)
            fail(p, TP_ERR_EMPTY, "no JSON value (empty or only whitespace)");
        else
            fail(p, TP_ERR_TRUNCATED, "truncated JSON (input ends inside a value)");
    }
    if (p->st == TP_OK && !p->saw_events)
        fail(p, TP_ERR_PARSE, "no traceEvents array: not a Chrome/Kineto trace");
    if (p->rank_state == 3)
        p->rank_state = 4;
    return p->st;
}

static void kparse_init(kparse *p, tp_model *m, const char *file, tp_load_error *e) {
    memset(p, 0, sizeof *p);
    p->m = m;
    p->file = file;
    p->e = e;
    tp_load_error_init(e, file);
    p->r = tp_model_add_rank(m, file);
    p->h = yajl_alloc(&callbacks, NULL, p);
    if (!p->h)
        abort();
    p->stacks = tp_kineto_stacks_open(m, p->r);
    event_reset(&p->ev);
}

/* Frees the parser and its yajl handle `h`; on failure drops the half-built rank, else fills
 * in the rank numbers. */
static tp_status kparse_done(kparse *p, yajl_handle h) {
    yajl_free(h);
    event_free(&p->ev);
    free(p->env_key.p);
    free(p->env_val.p);
    free(p->cat_of);
    free(p->names);
    if (p->st == TP_OK)
        tp_kineto_stacks_python(p->stacks, p->threads);
    tp_kineto_stacks_close(p->stacks);
    if (p->st != TP_OK) {
        tp_model_pop_rank(p->m);
        return p->st;
    }
    kineto_env(p);
    p->r->rank_hta = p->rank_state == 4 ? (int)p->rank_val : 0;
    if (p->r->rank < 0 && p->rank_state == 4)
        p->r->rank = (int)p->rank_val;
    return TP_OK;
}

int tp_import_kineto_sniff(const void *head, size_t len) {
    const unsigned char *s = head;
    if (len >= 2 && s[0] == 0x1f && s[1] == 0x8b)
        return 1;
    size_t i = 0;
    if (len >= 3 && s[0] == 0xef && s[1] == 0xbb && s[2] == 0xbf)
        i = 3; /* UTF-8 byte order mark */
    while (i < len && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t'))
        i++;
    return i == len || s[i] == '{' || s[i] == '['; /* only whitespace: let JSON say why */
}

/* ---------------------------------------------------------------- split parse
 *
 * With two threads the text must be in memory whole: the second thread parses the
 * traceEvents array from an event boundary near SPLIT_AT of the text while the first parses
 * up to it. The boundary is a guess (`}`, `,`, `{` with only whitespace between could sit in
 * a string), so it counts only when the first parser, having read exactly up to that `}`,
 * is between two events of the array. The second parser commits nothing: it keeps its events
 * (defer_event), and the first commits them in order after its own, then reads on after the
 * array's `]`. Any doubt (no boundary, a guess that was wrong, an error in the second range)
 * and the first parser simply reads on through the text itself, as a serial parse does, so
 * the model, its string ids and every error message are those of the serial parse. */
#define SPLIT_MIN (4u << 20)       /* smaller texts: one thread (a thread and a copy cost more) */
#define TEXT_MAX (1ull << 30)      /* larger texts stream through zlib in bounded memory */
#define SPLIT_AT(n) ((n) / 20 * 9) /* the first thread also commits the second's events */

/* Threads for an import: TP_IMPORT_THREADS when set (1 = the streaming serial parse), else 2
 * when the machine has two cores online. */
/* The split parse is opt-in (TP_IMPORT_THREADS=2): measured on the quiet 2-core machine
 * (docs/PERFORMANCE.md, Kineto JSON import) it was 0.82-1.19x the serial wall time while
 * holding the whole text (2.5-3x the peak memory); the streaming path stays the default. */
static int import_threads(void) {
    const char *s = getenv("TP_IMPORT_THREADS");
    return s && *s && atoi(s) >= 2 ? 2 : 1;
}

static int is_ws(unsigned char c) {
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/* The first `}` ws `,` ws `{` at or after `from`: *brace at the `}`, *open at the `{`. */
static int find_boundary(const unsigned char *t, size_t n, size_t from, size_t *brace,
                         size_t *open) {
    for (size_t i = from; i < n;) {
        const unsigned char *q = memchr(t + i, '}', n - i);
        if (!q)
            return 0;
        size_t j = (size_t)(q - t) + 1;
        while (j < n && is_ws(t[j]))
            j++;
        if (j < n && t[j] == ',') {
            for (j++; j < n && is_ws(t[j]);)
                j++;
            if (j < n && t[j] == '{') {
                *brace = (size_t)(q - t);
                *open = j;
                return 1;
            }
        }
        i = (size_t)(q - t) + 1;
    }
    return 0;
}

typedef struct {
    kparse q;
    deferred d;
    tp_load_error e;
    const unsigned char *t;
    size_t from, n;
    int ok;
} second;

/* The second thread: "[" and then the text from the event boundary on, until the array's
 * `]` (yajl stops there: the rest is trailing garbage to it). */
static void *second_main(void *arg) {
    second *s = arg;
    kparse *q = &s->q;
    yajl_status ys = yajl_parse(q->h, (const unsigned char *)"[", 1);
    if (ys == yajl_status_ok) {
        q->chunk = s->t + s->from;
        q->chunk_len = s->n - s->from;
        q->base_off = s->from;
        ys = yajl_parse(q->h, q->chunk, q->chunk_len);
    }
    s->ok = ys == yajl_status_ok && q->st == TP_OK && q->array_end > s->from &&
            s->t[q->array_end - 1] == ']';
    return NULL;
}

/* Sets up the second parser at depth `depth` (2: the array is the top object's traceEvents;
 * 1: the text is the array). */
static void second_init(second *s, const unsigned char *t, size_t from, size_t n, int depth) {
    memset(s, 0, sizeof *s);
    s->t = t, s->from = from, s->n = n;
    kparse *q = &s->q;
    q->e = &s->e;
    tp_load_error_init(&s->e, "");
    q->defer = &s->d;
    q->defer_depth = depth;
    if (depth == 2)
        q->kind[0] = F_TOP, q->depth = 1, q->k = K_TRACE_EVENTS, frames_set(q);
    event_reset(&q->ev);
    q->h = yajl_alloc(&callbacks, NULL, q);
    if (!q->h)
        abort();
    yajl_config(q->h, yajl_allow_trailing_garbage, 1);
}

static void second_free(second *s) {
    yajl_free(s->q.h);
    event_free(&s->q.ev);
    deferred_free(&s->d);
}

/* Text the first parser passes over (the second parser read it): positions and the rank
 * regex carry on as if it had been fed. */
static void pass_over(kparse *p, const unsigned char *buf, size_t n) {
    rank_scan(p, (const char *)buf, n);
    p->base_off += n;
    advance_lines(p, buf, n);
}

/* Parses the whole text `t` with two threads; returns 0 (nothing read) when it has no event
 * boundary past SPLIT_AT or no thread could start, 2 when the second thread's events were
 * used, 1 when the first parser read on alone. */
static int parse_split(kparse *p, const unsigned char *t, size_t n) {
    size_t i = 0, brace, open;
    while (i < n && is_ws(t[i]))
        i++;
    if (i == n || (t[i] != '{' && t[i] != '[') || !find_boundary(t, n, SPLIT_AT(n), &brace, &open))
        return 0;
    int depth = t[i] == '{' ? 2 : 1;
    second *s = malloc(sizeof *s);
    if (!s)
        abort();
    second_init(s, t, open, n, depth);
    pthread_t th;
    if (pthread_create(&th, NULL, second_main, s) != 0) {
        second_free(s);
        free(s);
        return 0;
    }
    feed(p, t, brace + 1);
    pthread_join(th, NULL);
    p->threads = 2;
    int between =
        p->st == TP_OK && p->ev_end == brace + 1 && p->depth == depth && top_frame(p) == F_EVENTS;
    int used = between && s->ok;
    if (used) {
        size_t close = (size_t)s->q.array_end - 1;
        pass_over(p, t + brace + 1, close - (brace + 1));
        replay(p, &s->d, NULL);
        if (feed(p, t + close, n - close) == TP_OK)
            finish(p);
    } else if (p->st == TP_OK && feed(p, t + brace + 1, n - brace - 1) == TP_OK) {
        finish(p); /* the guess was no boundary, or the second range has an error: serially */
    }
    second_free(s);
    free(s);
    return used ? 2 : 1;
}

/* Parses the text in memory, split in two when it is at least `split_min` bytes. Returns 1
 * when the split was used. */
static int parse_text(kparse *p, const unsigned char *t, size_t n, size_t split_min) {
    int r = n >= split_min ? parse_split(p, t, n) : 0;
    if (r == 0 && feed(p, t, n) == TP_OK)
        finish(p);
    return r == 2;
}

/* A gzip image inflated whole by libdeflate (about twice zlib's speed), into *out (malloc'd).
 * 0 when it is not one intact gzip member of split_min..TEXT_MAX bytes: the streaming path
 * takes it then, and says what is wrong with it. */
static int inflate_whole(const unsigned char *in, size_t len, size_t split_min, unsigned char **out,
                         size_t *out_len) {
    if (len < 18 || in[0] != 0x1f || in[1] != 0x8b)
        return 0;
    size_t isize = (size_t)in[len - 4] | (size_t)in[len - 3] << 8 | (size_t)in[len - 2] << 16 |
                   (size_t)in[len - 1] << 24; /* the size mod 2^32: checked by inflating */
    if (isize == 0 || isize < split_min || isize > TEXT_MAX)
        return 0;
    struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
    unsigned char *buf = malloc(isize);
    if (!d || !buf)
        abort();
    size_t used = 0, got = 0;
    enum libdeflate_result r = libdeflate_gzip_decompress_ex(d, in, len, buf, isize, &used, &got);
    libdeflate_free_decompressor(d);
    if (r != LIBDEFLATE_SUCCESS || used != len || got != isize) {
        free(buf);
        return 0;
    }
    *out = buf;
    *out_len = got;
    return 1;
}

/* The whole file in memory: read (plain) or inflated (gzip). 0 when it cannot be, or is
 * smaller than split_min or larger than TEXT_MAX. */
static int read_whole(const char *path, size_t split_min, unsigned char **out, size_t *out_len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0)
        return 0;
    unsigned char *buf = NULL;
    size_t n = 0;
    if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0 &&
        (uint64_t)sb.st_size <= TEXT_MAX && (buf = malloc((size_t)sb.st_size)) != NULL) {
        while (n < (size_t)sb.st_size) {
            ssize_t k = read(fd, buf + n, (size_t)sb.st_size - n);
            if (k <= 0)
                break;
            n += (size_t)k;
        }
    }
    close(fd);
    int ok = buf && n == (size_t)sb.st_size;
    if (ok && n >= 2 && buf[0] == 0x1f && buf[1] == 0x8b) {
        ok = inflate_whole(buf, n, split_min, out, out_len);
        free(buf);
        return ok;
    }
    if (!ok || n < split_min) {
        free(buf);
        return 0;
    }
    *out = buf;
    *out_len = n;
    return 1;
}

/* Imports `path` from memory with a split parse; 0 (nothing done) when read_whole says no. */
static int load_whole(tp_model *m, const char *path, tp_load_error *e, size_t split_min,
                      tp_status *st) {
    unsigned char *t;
    size_t n;
    if (!read_whole(path, split_min, &t, &n))
        return 0;
    kparse p;
    kparse_init(&p, m, path, e);
    yajl_handle h = p.h;
    parse_text(&p, t, n, split_min);
    free(t);
    *st = kparse_done(&p, h);
    return 1;
}

/* ---------------------------------------------------------------- the file's text
 *
 * What gzread gives, read here with zlib's inflate directly: a gzip file's members one after
 * another (what follows the last member and is no gzip header is ignored), a file that does
 * not start with a gzip header as it is. The difference: zlib checks each member's header
 * (and its header CRC) itself, but its CRC-32 of the text is turned off after the header
 * (inflateValidate) and computed here by libdeflate, ~20x faster than zlib 1.2's (which was
 * 46 % of the reading thread's instructions); the trailer is compared here, with zlib's words.
 * Reads fill the caller's buffer whole but at the end, and an error drops the text of the
 * read it happened in, as gzread does, so the parser sees the same chunks and the same
 * errors.
 *
 * With ISA-L (TP_HAVE_ISAL) a member's deflate data is inflated by igzip, ~3x zlib's speed
 * (zlib was 15 % of `report`'s CPU time on a gzip trace: 46 of ~210 ms on a 62 MB one):
 * zlib still reads the header (its checks, its words) and stops before the first block
 * (Z_BLOCK), and the trailer is checked here as before. On an intact file both give the
 * same text (a valid deflate stream has one decoding). They differ on damaged ones: where
 * the error is seen (igzip a few bytes further on; a truncated stream ends a few bytes
 * earlier), and igzip accepts some invalid code tables zlib refuses. So an import that fails
 * after igzip inflated is done again with zlib alone (tp_import_kineto_load), and every
 * error, its words and its position are zlib's. TP_IMPORT_INFLATE=zlib: zlib alone. */
#define ZIN (64u << 10) /* compressed bytes per read() */

typedef enum { ZF_LOOK, ZF_GZIP, ZF_COPY, ZF_END } zf_how;

typedef struct {
    int fd;
    zf_how how;
    int direct; /* no gzip member seen yet (a file without one is copied) */
    int eof;    /* read() said end of file */
    z_stream z;
    gz_header head;        /* head.done: this member's header is read (validation then off) */
    int validating;        /* zlib still computes the member's check */
    uint32_t crc;          /* of the member's text */
    uint32_t isize;        /* its length, mod 2^32 */
    unsigned char tail[8]; /* the last 8 input bytes consumed before z.next_in's buffer */
    uint64_t offset;       /* compressed bytes read */
    int err;               /* Z_OK, Z_BUF_ERROR (truncated), Z_DATA_ERROR, Z_ERRNO, ... */
    char msg[128];
#if TP_HAVE_ISAL
    struct inflate_state *is; /* igzip's state; NULL: zlib inflates the members too */
    int in_body;              /* the member's header is read: igzip inflates */
    int isal_used;            /* igzip inflated some text (a failed import is done again) */
#endif
    unsigned char in[ZIN];
} zfile;

/* The CRC-32 of inflated text: ISA-L's (VPCLMULQDQ where the CPU has it) checks ~58 GB/s on
 * this VM against libdeflate 1.14's 13 GB/s, which was 2.4 % of `report`'s CPU time on a 62 MB
 * gzip trace; the same value (zlib's crc32, reflected, pre- and post-inverted). */
static uint32_t zf_crc32(uint32_t crc, const unsigned char *p, size_t n) {
#if TP_HAVE_ISAL
    return crc32_gzip_refl(crc, p, (uint64_t)n);
#else
    return (uint32_t)libdeflate_crc32(crc, p, n);
#endif
}

static void zf_error(zfile *f, int err, const char *msg) {
    f->err = err;
    snprintf(f->msg, sizeof f->msg, "%s", msg);
}

/* More input after what z.next_in holds: 1 with some, 0 at the end of the file, -1 on a read
 * error. Consumed bytes go; the last 8 of them are kept (a trailer may end there). */
static int zf_fill(zfile *f) {
    if (f->eof)
        return 0;
    size_t used = (size_t)(f->z.next_in - f->in);
    if (used >= 8) {
        memcpy(f->tail, f->z.next_in - 8, 8);
    } else if (used) {
        memmove(f->tail, f->tail + used, 8 - used);
        memcpy(f->tail + 8 - used, f->in, used);
    }
    memmove(f->in, f->z.next_in, f->z.avail_in);
    f->z.next_in = f->in;
    ssize_t n;
    do
        n = read(f->fd, f->in + f->z.avail_in, ZIN - f->z.avail_in);
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        zf_error(f, Z_ERRNO, strerror(errno));
        return -1;
    }
    f->eof = n == 0;
    f->z.avail_in += (unsigned)n;
    f->offset += (uint64_t)n;
    return n > 0;
}

/* The little-endian word at `k` bytes before z.next_in (k <= 8: in the buffer or the tail). */
static uint32_t zf_word_before(const zfile *f, size_t k) {
    unsigned char b[4];
    size_t used = (size_t)(f->z.next_in - f->in);
    for (size_t i = 0; i < 4; i++) {
        size_t back = k - i; /* byte i of the word is `back` bytes before next_in */
        b[i] = back <= used ? f->z.next_in[-(ptrdiff_t)back] : f->tail[8 - (back - used)];
    }
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

/* gz_look: at the start and after each member, a gzip header starts a member; anything else
 * is the text itself at the start, and ignored after a member. -1 on a read error. */
static int zf_look(zfile *f) {
    if (f->z.avail_in < 2 && zf_fill(f) < 0)
        return -1;
    if (f->z.avail_in > 1 && f->z.next_in[0] == 31 && f->z.next_in[1] == 139) {
        inflateReset(&f->z);
        inflateValidate(&f->z, 1); /* the header's CRC is zlib's to check */
        memset(&f->head, 0, sizeof f->head);
        inflateGetHeader(&f->z, &f->head);
        f->validating = 1;
        f->crc = 0, f->isize = 0;
        f->how = ZF_GZIP, f->direct = 0;
#if TP_HAVE_ISAL
        f->in_body = 0;
#endif
    } else if (!f->direct) {
        f->how = ZF_END;
    } else {
        f->how = f->z.avail_in ? ZF_COPY : ZF_END;
    }
    return 0;
}

/* zlib's return `ret` as zf's error: -1 after recording it, 0 when it is none. */
static int zf_zlib_error(zfile *f, int ret) {
    if (ret == Z_STREAM_ERROR || ret == Z_NEED_DICT) {
        zf_error(f, Z_STREAM_ERROR, "internal error: inflate stream corrupt");
        return -1;
    }
    if (ret == Z_MEM_ERROR) {
        zf_error(f, Z_MEM_ERROR, "out of memory");
        return -1;
    }
    if (ret == Z_DATA_ERROR) {
        zf_error(f, Z_DATA_ERROR, f->z.msg ? f->z.msg : "compressed data error");
        return -1;
    }
    return 0;
}

/* The member's trailer against its text's CRC-32 and length; the trailer ends at z.next_in.
 * 0 (the next member may follow), or -1. */
static int zf_trailer(zfile *f) {
    if (zf_word_before(f, 8) != f->crc) {
        zf_error(f, Z_DATA_ERROR, "incorrect data check");
        return -1;
    }
    if (zf_word_before(f, 4) != f->isize) {
        zf_error(f, Z_DATA_ERROR, "incorrect length check");
        return -1;
    }
    f->how = ZF_LOOK;
    return 0;
}

/* The input ended inside a member: what was inflated is the text, then Z_BUF_ERROR. */
static int zf_truncated(zfile *f) {
    zf_error(f, Z_BUF_ERROR, "unexpected end of file");
    f->how = ZF_END;
    return 0;
}

#if TP_HAVE_ISAL
/* zf_inflate with igzip for the deflate data (zlib reads the header up to the first block).
 * igzip's errors are not worded: the import is done again with zlib (tp_import_kineto_load). */
static int zf_inflate_isal(zfile *f, unsigned char *out, size_t *n) {
    size_t room = *n;
    *n = 0;
    while (!f->in_body) {
        if (f->z.avail_in == 0 && zf_fill(f) < 0)
            return -1;
        if (f->z.avail_in == 0)
            return zf_truncated(f);
        f->z.next_out = out;
        f->z.avail_out = (unsigned)room;
        int ret = inflate(&f->z, Z_BLOCK); /* returns after the header, before any block */
        if (zf_zlib_error(f, ret) < 0)
            return -1;
        if (f->head.done == 1) {
            isal_inflate_init(f->is); /* raw deflate: the trailer is read here */
            f->in_body = 1;
            f->isal_used = 1;
        }
    }
    struct inflate_state *s = f->is;
    while (*n < room) {
        s->next_in = f->z.next_in;
        s->avail_in = f->z.avail_in;
        s->next_out = out + *n;
        s->avail_out = (uint32_t)(room - *n);
        int ret = isal_inflate(s);
        size_t got = room - *n - s->avail_out;
        int moved = s->next_in != f->z.next_in;
        f->z.next_in = s->next_in;
        f->z.avail_in = s->avail_in;
        f->crc = zf_crc32(f->crc, out + *n, got);
        f->isize += (uint32_t)got;
        *n += got;
        if (ret < 0 || (!got && !moved && f->z.avail_in && s->block_state != ISAL_BLOCK_FINISH)) {
            zf_error(f, Z_DATA_ERROR, "compressed data error");
            return -1;
        }
        if (s->block_state == ISAL_BLOCK_FINISH) {
            /* igzip keeps up to 8 bytes read ahead in its bit buffer (whole bytes past the
             * data's last bit): the trailer starts that far before z.next_in. */
            size_t back = (size_t)s->read_in_length >> 3, need = 8 - back;
            while (f->z.avail_in < need) {
                int k = zf_fill(f);
                if (k < 0)
                    return -1;
                if (k == 0)
                    return zf_truncated(f);
            }
            f->z.next_in += need, f->z.avail_in -= (unsigned)need;
            return zf_trailer(f);
        }
        if (*n < room && f->z.avail_in == 0) {
            int k = zf_fill(f);
            if (k < 0)
                return -1;
            if (k == 0)
                return zf_truncated(f);
        }
    }
    return 0;
}
#endif

/* Inflates into out[0..*n) until it is full or the member ends; *n: what it produced. 0, or
 * -1 on an error (zlib's, or this member's trailer). */
static int zf_inflate(zfile *f, unsigned char *out, size_t *n) {
#if TP_HAVE_ISAL
    if (f->is)
        return zf_inflate_isal(f, out, n);
#endif
    size_t room = *n;
    *n = 0;
    while (*n < room) {
        if (f->z.avail_in == 0 && zf_fill(f) < 0)
            return -1;
        if (f->z.avail_in == 0)
            return zf_truncated(f);
        f->z.next_out = out + *n;
        f->z.avail_out = (unsigned)(room - *n);
        int ret = inflate(&f->z, Z_NO_FLUSH);
        if (zf_zlib_error(f, ret) < 0)
            return -1;
        size_t got = room - *n - f->z.avail_out;
        f->crc = zf_crc32(f->crc, out + *n, got);
        f->isize += (uint32_t)got;
        *n += got;
        if (f->validating && f->head.done == 1) {
            inflateValidate(&f->z, 0);
            f->validating = 0;
        }
        if (ret == Z_STREAM_END)
            return zf_trailer(f);
    }
    return 0;
}

/* gzread(f, buf, len): the bytes read (len but at the end), 0 at the end, -1 on an error
 * (zf_err says which; a truncated stream ends with what it gave and Z_BUF_ERROR). */
static long zf_read(zfile *f, unsigned char *buf, size_t len) {
    if (f->err != Z_OK && f->err != Z_BUF_ERROR)
        return -1;
    size_t got = 0;
    while (got < len && f->how != ZF_END) {
        if (f->how == ZF_LOOK) {
            if (zf_look(f) < 0)
                return -1;
        } else if (f->how == ZF_COPY) {
            if (f->z.avail_in == 0 && zf_fill(f) < 0)
                return -1;
            if (f->z.avail_in == 0) {
                f->how = ZF_END;
                break;
            }
            size_t k = f->z.avail_in < len - got ? f->z.avail_in : len - got;
            memcpy(buf + got, f->z.next_in, k);
            f->z.next_in += k, f->z.avail_in -= (unsigned)k;
            got += k;
        } else {
            size_t k = len - got;
            if (zf_inflate(f, buf + got, &k) < 0)
                return -1;
            got += k;
        }
    }
    return (long)got;
}

/* Opens `path` for zf_read, with igzip for the deflate data when `isal` (and built with
 * it); NULL with errno set when it cannot be opened. */
static zfile *zf_open(const char *path, int isal) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    zfile *f = tp_mem_xcalloc(1, sizeof *f);
    f->fd = fd;
    f->direct = 1;
    f->how = ZF_LOOK;
    f->z.next_in = f->in;
    if (inflateInit2(&f->z, 15 + 16) != Z_OK)
        abort(); /* out of memory only */
#if TP_HAVE_ISAL
    if (isal)
        f->is = tp_mem_xcalloc(1, sizeof *f->is);
#else
    (void)isal;
#endif
    return f;
}

static void zf_close(zfile *f) {
#if TP_HAVE_ISAL
    free(f->is);
#endif
    inflateEnd(&f->z);
    close(f->fd);
    free(f);
}

/* The decompressed text as a sequence of chunks. For gzip input a reader thread inflates
 * ahead while the parser works, so the wall time of an import is about max(inflate, parse)
 * instead of their sum (zlib inflates these traces at ~400 MB/s, about the parser's own
 * speed). Plain files are read inline: that costs little. The reader inflates into NBUF
 * buffers (READ_BUFS: yajl alone), or into the region of the walker's window that the parser
 * grants it, after the text it parses meanwhile (READ_WINDOW): the buffers were 0.5 MiB and
 * the window's copy of every byte (the import's high water, -0.4..-0.5 MiB on the 14-18 MB
 * peer traces; -2.4 % of a report's instructions on hta_ns_resolution). Two buffers, one
 * filled while the parser holds the other: 4 (1 MiB) gave the same instructions and wall time
 * for 0.4-0.5 MiB more peak RSS, which the import is on several peer traces of 15-35 MB. */
#define NBUF 2

typedef struct {
    zfile *zf;
    unsigned char *buf[NBUF];
    long len[NBUF];
    uint64_t off[NBUF];          /* compressed bytes read when the chunk was (progress) */
    uint64_t cur_off;            /* off of the chunk the consumer holds */
    unsigned produced, consumed; /* chunk counters; the reader runs at most NBUF ahead */
    int holding;                 /* the consumer still uses chunk `consumed` */
    int stop, threaded;
    /* Asleep on cv (under mu). Each side wakes the other only when it sleeps, and after
     * unlocking: a signal under the lock woke the reader only to block it on the mutex
     * (~450 context switches a report of a 33 MB trace, ~290 now; a 3rd or 4th buffer with a
     * wake at 2 free saved ~50 more for +256-512 KiB and more page faults). */
    int reader_waits, consumer_waits;
    /* READ_WINDOW: no buffers; the consumer grants the reader a region of its window
     * (source_grant) and takes it back filled (source_next) */
    int win;
    unsigned char *want; /* the granted region, want_room bytes; NULL: none */
    size_t want_room;
    int got_done;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
} gzsource;

static void *reader_main(void *arg) {
    gzsource *s = arg;
    for (long n = 1; n > 0;) {
        pthread_mutex_lock(&s->mu);
        while ((s->win ? !s->want || s->got_done : s->produced - s->consumed == NBUF) && !s->stop) {
            s->reader_waits = 1;
            pthread_cond_wait(&s->cv, &s->mu);
            s->reader_waits = 0;
        }
        int stop = s->stop;
        unsigned slot = s->win ? 0 : s->produced % NBUF;
        unsigned char *to = s->win ? s->want : s->buf[slot];
        size_t room = s->win ? s->want_room : CHUNK;
        pthread_mutex_unlock(&s->mu);
        if (stop)
            break;
        n = zf_read(s->zf, to, room);
        pthread_mutex_lock(&s->mu);
        s->len[slot] = n;
        s->off[slot] = s->zf->offset;
        s->produced++;
        s->got_done = 1;
        int wake = s->consumer_waits;
        pthread_mutex_unlock(&s->mu);
        if (wake)
            pthread_cond_signal(&s->cv);
    }
    return NULL;
}

/* source_open's `reader`: none (each chunk is read when asked for, source_next, where the
 * caller says), into the source's NBUF buffers, or into the regions of the caller's window
 * that it grants (source_grant). */
enum { READ_INLINE, READ_BUFS, READ_WINDOW };

/* `reader`: a gzip file is inflated ahead by a reader thread (READ_BUFS, READ_WINDOW); else
 * each chunk is read when asked for. */
static void source_open(gzsource *s, zfile *zf, int reader) {
    memset(s, 0, sizeof *s);
    s->zf = zf;
    s->win = reader == READ_WINDOW;
    for (int i = 0; i < NBUF && !s->win; i++)
        if (!(s->buf[i] = malloc(CHUNK))) /* pages never written cost nothing */
            abort();
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    if (zf->how == ZF_LOOK && zf_look(zf) < 0)
        zf->how = ZF_END; /* the read error is zf's, reported after the (empty) text */
    s->threaded = reader != READ_INLINE && zf->how == ZF_GZIP &&
                  pthread_create(&s->th, NULL, reader_main, s) == 0;
    if (s->win && !s->threaded)
        s->win = 0; /* read inline, where the caller says */
}

/* READ_WINDOW: the reader inflates the next chunk into buf[0..room) while the caller works
 * on the text before it; source_next waits for it. The caller neither reads nor moves that
 * region until then. */
static void source_grant(gzsource *s, unsigned char *buf, size_t room) {
    pthread_mutex_lock(&s->mu);
    s->want = buf, s->want_room = room, s->got_done = 0;
    int wake = s->reader_waits;
    pthread_mutex_unlock(&s->mu);
    if (wake)
        pthread_cond_signal(&s->cv);
}

/* The next chunk (releasing the previous one): its length, 0 at the end, < 0 on error. `*buf`
 * on entry: where to read up to `room` bytes when there is no reader thread (NULL: CHUNK
 * bytes into a buffer of the source's); on return, where it is. */
static long source_next(gzsource *s, unsigned char **buf, size_t room) {
    if (!s->threaded) {
        if (!*buf)
            *buf = s->buf[0], room = CHUNK;
        long n = zf_read(s->zf, *buf, room);
        s->cur_off = s->zf->offset;
        return n;
    }
    pthread_mutex_lock(&s->mu);
    if (s->win) { /* the granted region, once filled */
        while (!s->got_done) {
            s->consumer_waits = 1;
            pthread_cond_wait(&s->cv, &s->mu);
            s->consumer_waits = 0;
        }
        *buf = s->want;
        s->want = NULL;
        long n = s->len[0];
        s->cur_off = s->off[0];
        pthread_mutex_unlock(&s->mu);
        return n;
    }
    int wake = 0;
    if (s->holding) {
        s->consumed++;
        s->holding = 0;
        wake = s->reader_waits;
    }
    if (wake) {
        pthread_mutex_unlock(&s->mu);
        pthread_cond_signal(&s->cv);
        pthread_mutex_lock(&s->mu);
    }
    while (s->produced == s->consumed) {
        s->consumer_waits = 1;
        pthread_cond_wait(&s->cv, &s->mu);
        s->consumer_waits = 0;
    }
    unsigned slot = s->consumed % NBUF;
    long n = s->len[slot];
    s->cur_off = s->off[slot];
    s->holding = 1;
    pthread_mutex_unlock(&s->mu);
    *buf = s->buf[slot];
    return n;
}

/* Ends a worker that waits on `cv` for work or `*stop` (the gz reader, the walker): tells
 * it to stop and joins it when it was started, then destroys the pair. */
static void worker_end(pthread_mutex_t *mu, pthread_cond_t *cv, int *stop, int started,
                       const pthread_t *th) {
    if (started) {
        pthread_mutex_lock(mu);
        *stop = 1;
        pthread_cond_broadcast(cv);
        pthread_mutex_unlock(mu);
        pthread_join(*th, NULL);
    }
    pthread_mutex_destroy(mu);
    pthread_cond_destroy(cv);
}

/* Stops and joins the reader; afterwards zf's error may be read. */
static void source_close(gzsource *s) {
    worker_end(&s->mu, &s->cv, &s->stop, s->threaded, &s->th);
    for (int i = 0; i < NBUF; i++)
        free(s->buf[i]);
}

/* ---------------------------------------------------------------- simdjson pieces
 *
 * The default import: the text streams through a window of a few MiB; yajl reads it up to
 * the `[` of the traceEvents array, then simdjson (tp_json_walk) walks the array in pieces
 * that end at an event boundary, the last one (`}` ws `,` ws `{`) in the window, and the
 * rest of the text (the last event, `]` and what follows) goes to yajl again. A piece ends at
 * the last boundary within PIECE bytes, or the first one after when there is none. Each is
 * walked as the array `[piece]` by a parser that keeps its events (defer_event, as the split
 * parse's second thread does); they are committed in order (replay) only when the whole piece
 * was valid JSON. A piece that starts at an event boundary and is one valid array ends at a
 * boundary too, so a guessed boundary inside a string fails the walk instead of misleading it.
 * A failed walk commits nothing: yajl reads that piece itself, and on to the next boundary
 * until it stands between two events, where the walk resumes (an error: yajl words it, with
 * its position). So the model, its string ids and every error are yajl's. */
/* Text per walk: 128 KiB (1 MiB: +5 MiB of peak on a 35 MB text, no faster; 256 KiB: +0.4-1.3
 * MiB, the same CPU time). */
#define PIECE (1u << 17)
/* With the helper (texts >= 20 MB), 64 KiB: the window (WINDOW), the pieces' deferred events
 * and walk indexes in flight and the helper's copy are about halved: the import's high water
 * -0.6 MiB (hta_trace_diff_test 10.1 -> 9.5, trace_diff_control 10.4 -> 9.8 MiB, gdb), the
 * same or fewer instructions (xdit 1,504.9 -> 1,495.3 M, df_index_resolver 1,182.3 -> 1,177.6
 * M), but twice the hand-overs between the two walking threads (voluntary context switches of
 * a report of trace_diff_test 225 -> 483; wall min/p25 of 40 runs +1-1.5 ms of ~62, load ~7).
 * Without the helper 64 KiB cost instructions (WINDOW_ONE's moves: +2.1 % on ns_resolution). */
#define PIECE2 (1u << 16)
#define WINDOW_MAX (64u << 20) /* an event larger than this: yajl reads on */
#define WIN_PAD TP_JSON_WALK_PADDING
/* Text held: pieces in flight and read ahead. When the room left at the end is under
 * FILL_MIN, the text not yet committed moves to the front: with 6 pieces' room and whole
 * chunks that moved ~0.8 byte per byte read (51 M of xdit's 62 MB); with 10, ~0.4 (-1.3 % of
 * `report`'s instructions, +0.4-0.8 MiB of peak RSS on the 14-62 MB sets). Less moves now: a
 * read inflated in place fills the room there is (FILL_MIN to CHUNK bytes, pump_pieces), where
 * a whole chunk left up to one unused at the end, and the pieces walked at the head of the
 * flight are committed before a move (commit_walked), where they moved with the rest. So 5
 * pieces and a chunk (0.875 MiB) move about what 10 and a chunk did (xdit 25.9 -> 16.7-19.5 MB,
 * df_index_resolver 21.8 -> 15.5-22.1 MB, by which pieces the helper has walked at a move;
 * under callgrind, which counts memmove's rep movsb by the byte, window_room 25.6 -> 25.9-27.2
 * M and 21.3 -> 24.2-27.2 M instructions); 4 and a chunk: +6-9 M instructions more. (Those
 * figures are for pieces of 128 KiB; of PIECE2, 5 and a chunk are 0.56 MiB, and window_room
 * moved no more: the report's instructions went down, see PIECE2.) */
#define WINDOW (5 * PIECE2 + CHUNK)
#define FILL_MIN (CHUNK / 4)
/* Without the helper one piece at most is in flight, and less than a piece (and WIN_PAD) is
 * left unwalked when a chunk comes (events_step reads on only then): room for that, the chunk
 * and the next one, which the reader inflates into the window (READ_WINDOW) while this thread
 * walks the one before. WINDOW there was 0.9 MiB of pages written and never needed (the
 * import's high water on the 14-18 MB sets, which import with one walking thread). The text
 * moves at most once a chunk, ~0.4 byte per byte read (hta_ns_resolution: 6.5 of 15.4 MB;
 * the reader's own buffers cost a copy of every byte and 0.5 MiB). */
#define WINDOW_ONE (PIECE + 2 * CHUNK)

/* The next chunk of text: its length, 0 at the end, < 0 on a read or inflate error. *buf on
 * entry: where a source that makes its text (pull_gzmem, pull_file) may write up to `room`
 * (<= CHUNK) bytes (NULL: in a buffer of its own, CHUNK bytes at most); on return, where the
 * chunk is. */
typedef long (*pull_fn)(void *src, const unsigned char **buf, size_t room);

/* The import's mode (pump_source): TP_IMPORT_PARSER=yajl reads with yajl alone (the import
 * before simdjson; bench and tests compare); else the walker, on this thread and a helper
 * thread when the process may use two CPUs (tp_par_cpus: its affinity) and TP_IMPORT_THREADS is
 * not 1. */
static int walker_mode(void) {
    const char *s = getenv("TP_IMPORT_PARSER"), *t = getenv("TP_IMPORT_THREADS");
    if (s && !strcmp(s, "yajl"))
        return 0;
    return (t && *t && atoi(t) == 1) || tp_par_cpus() < 2 ? 1 : 2;
}

typedef enum { PH_PREFIX, PH_EVENTS, PH_SERIAL } phase;

/* What one walk writes: its parser and its deferred events. The walking threads share NSLOT
 * of them (pieces.bufs), one per piece in flight, and each takes one it walked into before
 * when it can (owner): a walk writes ~2-3 times its text's size, and into memory that another
 * core last wrote (the other thread's walk) it ran 1.3x slower. A pool of NSLOT per thread
 * (before) had 5-6 of its 8 written on the sets of >= 20 MB, ~90 KiB each. */
typedef struct {
    kparse q;
    deferred d;
    tp_load_error qe;
    int owner;      /* the thread that walked into it last (pieces.bufs), -1: none yet */
    uint64_t nl;    /* newlines in the piece, counted by the walk's thread (walk_slot) */
    size_t nl_last; /* index from the piece's start of the last of them */
    /* index from the piece's start of its first `"rank":` (RANK_NONE: none), found by the
     * walk's thread when the rank is still sought (slot.want_rank): that scan over every byte
     * was 7 % of the import's instructions on the importing thread alone on a trace without
     * a rank (tracelens_h100_owlv2) */
    size_t rank_at;
    int ok;
    int busy; /* holds a piece in flight (under pieces.mu when the helper runs) */
} wbuf;

/* A piece in flight: its bounds in the window, copied out of it by the thread that walks it
 * (so the window may move). */
typedef enum { S_FREE, S_QUEUED, S_WALKING, S_DONE } slot_state;

typedef struct {
    size_t start, brace, open; /* window indexes of its first `{`, last `}`, the next `{` */
    size_t len;                /* of `[piece]` */
    uint64_t event_idx;        /* of its first event */
    int want_rank;             /* the rank was still sought when it was queued (rank_at) */
    wbuf *b;                   /* the walk's buffers, from the pool once taken */
    /* Under pieces.mu when the helper runs: */
    slot_state state;
    int reading; /* the helper is copying it out of the window */
} slot;

/* Pieces in flight with a helper: the one the helper walks, one this thread walks, and one or
 * two walked and waiting to be committed in order or queued. 6 was ~2 % faster by wall and
 * +1.6-2.3 MiB of peak RSS on the small sets (then each walking thread had NSLOT buffers;
 * now they share NSLOT, one per piece in flight: pieces.bufs). */
#define NSLOT 4

/* With two cores the import has two walking threads, the importing one and one helper:
 * both walk the pieces in the order they were queued (each takes the next one), and the
 * importing thread also commits them in order (replay) and reads on. Two helpers and an
 * importing thread that only committed (before) made three threads for two cores: the
 * helpers had two thirds of the work, the importing thread one third, and it waited for
 * them, or they for it and for a core (wall 1.22-1.48x one thread's). */
typedef struct pieces {
    kparse *p;
    tp_json_walk *w;  /* the importing thread's walker */
    size_t piece;     /* text per walk (tests use tiny pieces) */
    unsigned char *t; /* the window: t[lo..hi) not yet handed on */
    size_t lo, hi, cap;
    int borrowed;    /* t is the source's own text (whole in memory): chunks extend hi, no copy */
    int in_place;    /* the source writes its chunks at t[hi] (pull_fn), not copied there */
    gzsource *ahead; /* a reader thread inflates into the window (READ_WINDOW) */
    int granted;     /* ahead writes the region after hi: walks end WIN_PAD before it */
    phase ph;
    int ev_depth;   /* p->depth inside the traceEvents array */
    int comma_owed; /* yajl saw an event, and the `,` after the last one it saw was passed over */
    int resync;     /* yajl reads until it stands between two events again */
    slot slots[NSLOT]; /* pieces in flight, oldest first from `head` */
    int head, inflight;
    int depth;  /* pieces in flight at most: NSLOT with a helper, else 1 */
    wbuf *bufs; /* walks' buffers (NSLOT), shared by the walking threads */
    /* `[` piece `]` and padding, by walking thread (this one, the helper): the walk keeps no
     * pointer into it (defer_event: into the window's piece), so the text is dead once walked
     * and a thread walks one piece at a time. One per buffer was NSLOT * ~190 KiB of fresh
     * pages per thread (~150 of the ~3,500 page faults of a report of a 14 MB trace). */
    unsigned char *txt[2];
    size_t txt_cap[2];
    uint64_t walked; /* pieces committed */
    int want_thread; /* the helper starts with the first piece (small texts: none) */
    int avx2;        /* the walking threads' scans of their pieces may use AVX2 */
    int helper;      /* the helper runs (set and read by this thread) */
    /* Under mu: */
    int stop;                 /* the helper ends */
    int next_job;             /* slot of the next piece to walk, once it is queued */
    int helper_idle, waiting; /* the helper waits for a piece; this thread for one */
    tp_json_walk *hw;         /* the helper's walker */
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t work_cv, done_cv; /* a piece queued (or stop); a piece walked or copied */
} pieces;

static const tp_json_walk_cb walk_callbacks;

static void lock(pieces *s) {
    if (s->helper)
        pthread_mutex_lock(&s->mu);
}

static void unlock(pieces *s) {
    if (s->helper)
        pthread_mutex_unlock(&s->mu);
}

/* Copies t[start..brace] as `[piece]` (and room for the padding) into *buf. */
static const unsigned char *copy_piece(unsigned char **buf, size_t *cap, const unsigned char *t,
                                       const slot *sl) {
    size_t len = sl->len;
    if (*cap < len + WIN_PAD) {
        /* Half as much again, and no realloc: with room for just this piece, each piece a
         * little longer than all before it copied the old text into fresh pages (~10 % of
         * the report's page faults on a 33 MB trace); the text is all rewritten below. Pages
         * never written cost no memory. */
        *cap = len + len / 2 + WIN_PAD;
        free(*buf);
        *buf = tp_mem_xalloc(*cap, 1);
    }
    (*buf)[0] = '[';
    memcpy(*buf + 1, t + sl->start, len - 2);
    (*buf)[len - 1] = ']';
    return *buf;
}

/* The text buffer of thread `who`'s walks (see pieces.txt). */
static unsigned char **wtxt(pieces *s, int who, size_t **cap) {
    *cap = &s->txt_cap[who];
    return &s->txt[who];
}

/* Under mu: takes the next queued piece for walking by thread `who` (0 this one, 1 the
 * helper), with a free buffer, one it walked into before if there is one (wbuf.owner); NULL
 * when none is queued. */
static slot *take_job(pieces *s, int who) {
    slot *sl = &s->slots[s->next_job];
    if (sl->state != S_QUEUED)
        return NULL;
    s->next_job = (s->next_job + 1) % NSLOT;
    sl->state = S_WALKING;
    wbuf *b = NULL; /* NSLOT buffers for NSLOT pieces in flight: one is free */
    for (int k = 0; k < NSLOT; k++) {
        wbuf *c = &s->bufs[k];
        if (c->busy)
            continue;
        if (c->owner == who) {
            b = c;
            break;
        }
        if (!b || (b->owner >= 0 && c->owner < 0))
            b = c; /* else a fresh one, else the other thread's */
    }
    b->busy = 1;
    b->owner = who;
    sl->b = b;
    return sl;
}

/* Walks a taken slot's piece, `txt` (`[piece]`), into its buffer's deferred events; sets ok,
 * and counts the piece's newlines for the line numbers of later errors (pass_slot), here
 * rather than on the thread that commits. */
static void walk_slot(pieces *s, tp_json_walk *w, slot *sl, const unsigned char *txt) {
    wbuf *b = sl->b;
    kparse *q = &b->q;
    size_t len = sl->len;
    q->st = TP_OK;
    q->depth = s->ev_depth;
    q->kind[0] = s->ev_depth == 2 ? F_TOP : F_EVENTS;
    q->kind[1] = F_EVENTS;
    frames_set(q);
    q->k = K_NONE;
    q->event_idx = sl->event_idx;
    deferred_clear(&b->d);
    q->walk_text = (const char *)txt + 1, q->walk_len = len - 2; /* the piece: `[piece]` */
    tp_load_error_init(&b->qe, "");
    b->ok = tp_json_walk_elements(w, (const char *)txt, len, &walk_callbacks, q) &&
            q->st == TP_OK && q->depth == s->ev_depth;
    b->nl_last = 0;
    const char *piece = (const char *)txt + 1, *r = NULL;
    if (b->ok)
        b->nl = s->avx2 ? count_lines_avx2(txt + 1, len - 2, &b->nl_last)
                        : count_lines(txt + 1, len - 2, &b->nl_last);
    else
        b->nl = 0;
    if (b->ok && sl->want_rank)
        r = s->avx2 ? find_rank_key_avx2(piece, len - 2) : find_rank_key(piece, len - 2);
    b->rank_at = r ? (size_t)(r - piece) : RANK_NONE;
}

/* The index from t[lo] of the first `"rank":` in t[lo..open) of a walked slot (RANK_NONE:
 * none): the one in the piece, found by its walk (wbuf.rank_at), or one that starts before
 * the piece or in its last 6 bytes or after it (a few bytes each side, searched here). */
static size_t rank_first(const pieces *s, const slot *sl) {
    const char *t = (const char *)s->t;
    size_t lo = s->lo, n = sl->open - lo, k = sl->start - lo, tail = sl->brace - lo;
    assert(sl->want_rank);
    const char *r = find_rank_key(t + lo, k + 6 < n ? k + 6 : n); /* starts in [lo, start) */
    if (r)
        return (size_t)(r - (t + lo));
    if (sl->b->rank_at != RANK_NONE)
        return k + sl->b->rank_at;
    tail = tail > k + 5 ? tail - 5 : k; /* starts in the piece's last 6 bytes and after it */
    r = find_rank_key(t + lo + tail, n - tail);
    return r ? (size_t)(r - (t + lo)) : RANK_NONE;
}

/* pass_over for t[lo..open) of a walked slot: the piece's newlines were counted (walk_slot),
 * the text around it (`,` and whitespace) is counted here. */
static void pass_slot(pieces *s, const slot *sl) {
    kparse *p = s->p;
    if (p->rank_state != 4)
        rank_scan_known(p, (const char *)s->t + s->lo, sl->open - s->lo, rank_first(s, sl));
    p->base_off += sl->open - s->lo;
    advance_lines(p, s->t + s->lo, sl->start - s->lo);
    advance_counted(p, sl->brace + 1 - sl->start, sl->b->nl, sl->b->nl_last);
    advance_lines(p, s->t + sl->brace + 1, sl->open - sl->brace - 1);
}

/* A walking thread's NSLOT buffers. */
static wbuf *wbufs_new(void) {
    wbuf *v = tp_mem_xcalloc(NSLOT, sizeof *v);
    for (int k = 0; k < NSLOT; k++) {
        v[k].owner = -1;
        v[k].q.defer = &v[k].d;
        v[k].q.borrow = 1;
        v[k].q.e = &v[k].qe;
        event_reset(&v[k].q.ev);
    }
    return v;
}

static void wbufs_free(wbuf *v) {
    for (int k = 0; v && k < NSLOT; k++) {
        event_free(&v[k].q.ev);
        deferred_free(&v[k].d);
    }
    free(v);
}

/* The helper takes the pieces in the order they were queued, as this thread does (help). The
 * window (its pointer, read under mu) stays put while a piece is copied out of it (reading). */
static void *helper_main(void *arg) {
    pieces *s = arg;
    /* its walker, text and deferred events (the buffers it walks into first) from its own
     * malloc arena, away from this thread's data */
    tp_json_walk *w = tp_json_walk_open(); /* usable: the importing thread's opened */
    pthread_mutex_lock(&s->mu);
    s->hw = w;
    for (;;) {
        slot *sl;
        while (!(sl = take_job(s, 1)) && !s->stop) {
            s->helper_idle = 1;
            pthread_cond_wait(&s->work_cv, &s->mu);
            s->helper_idle = 0;
        }
        if (!sl)
            break;
        const unsigned char *t = s->t;
        sl->reading = 1;
        pthread_mutex_unlock(&s->mu);
        size_t *cap;
        unsigned char **buf = wtxt(s, 1, &cap);
        const unsigned char *txt = copy_piece(buf, cap, t, sl);
        pthread_mutex_lock(&s->mu);
        sl->reading = 0;
        if (s->waiting)
            pthread_cond_signal(&s->done_cv);
        pthread_mutex_unlock(&s->mu);
        walk_slot(s, s->hw, sl, txt);
        pthread_mutex_lock(&s->mu);
        sl->state = S_DONE;
        if (s->waiting)
            pthread_cond_signal(&s->done_cv);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* This thread walks the next queued piece itself; 0 when none is queued. */
static int help(pieces *s) {
    lock(s);
    slot *sl = take_job(s, 0);
    unlock(s);
    if (!sl)
        return 0;
    /* This thread is the one that writes and moves the window, so it walks the piece where
     * it lies, bracketed by the byte before its `{` and the one after its `}` (white space or
     * the `,` between two pieces: never in any piece's bounds, so never read by the helper's
     * copy_piece), and puts those two bytes back at once: copying `[piece]` out was every
     * such piece's bytes once more (copy_piece: 53.7 M of instructions on a 53.7 MB trace
     * before, all of them with one core). The bytes past the `]` up to WIN_PAD, which the
     * walk may read, are the window's own (window_room keeps that much room past hi). A
     * borrowed text is only read, and a piece at the window's start has no byte before it:
     * those are copied. */
    unsigned char *t = s->t;
    if (!s->borrowed && sl->start > 0) {
        unsigned char before = t[sl->start - 1], after = t[sl->brace + 1];
        t[sl->start - 1] = '[', t[sl->brace + 1] = ']';
        walk_slot(s, s->w, sl, t + sl->start - 1);
        t[sl->start - 1] = before, t[sl->brace + 1] = after;
    } else {
        size_t *cap;
        unsigned char **buf = wtxt(s, 0, &cap);
        walk_slot(s, s->w, sl, copy_piece(buf, cap, t, sl));
    }
    lock(s);
    sl->state = S_DONE;
    unlock(s);
    return 1;
}

/* `whole`: the text to borrow as the window (pump_source), NULL for a window of our own. */
static void pieces_init(pieces *s, kparse *p, tp_json_walk *w, size_t piece, int threaded,
                        const unsigned char *whole) {
    memset(s, 0, sizeof *s);
    s->p = p, s->w = w, s->piece = piece ? piece : w && threaded ? PIECE2 : PIECE;
    if (whole) {
        s->t = (unsigned char *)(uintptr_t)whole; /* only read */
        s->borrowed = 1;
    } else {
        s->cap = (w && threaded ? WINDOW : WINDOW_ONE) + WIN_PAD;
        s->t = tp_mem_xrealloc(NULL, s->cap, 1);
    }
    s->bufs = wbufs_new();
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->work_cv, NULL);
    pthread_cond_init(&s->done_cv, NULL);
    s->want_thread = w && threaded;
    s->depth = 1;
#if TP_WALK_AVX2
    __builtin_cpu_init();
    s->avx2 = __builtin_cpu_supports("avx2");
#endif
}

static void pieces_free(pieces *s) {
    if (s->helper) {
        pthread_mutex_lock(&s->mu);
        s->stop = 1;
        pthread_cond_signal(&s->work_cv);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->th, NULL);
        tp_json_walk_close(s->hw);
    }
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->work_cv);
    pthread_cond_destroy(&s->done_cv);
    if (!s->borrowed)
        free(s->t);
    wbufs_free(s->bufs);
    free(s->txt[0]);
    free(s->txt[1]);
}

/* Makes room for n more bytes at t[hi], moving the unread text to the front or growing the
 * window as needed. The helper reads the window's pointer and a queued piece's bounds under
 * mu, and copies the piece out with `reading` set: so with mu held and no piece being read,
 * the text moves, queued pieces and all. (Before, the queued pieces were copied out first,
 * each into a buffer of its slot: up to NSLOT x ~190 KiB more memory in the import, whose
 * high water is the report's peak on some sets; the helper waits on mu for a move of ~0.5
 * MiB at most.) */
static void window_room(pieces *s, size_t n) {
    if (s->hi + n + WIN_PAD <= s->cap)
        return;
    if (s->helper) {
        pthread_mutex_lock(&s->mu);
        for (int k = 0; k < s->inflight; k++) {
            s->waiting = 1;
            while (s->slots[(s->head + k) % NSLOT].reading)
                pthread_cond_wait(&s->done_cv, &s->mu);
            s->waiting = 0;
        }
    }
    /* one byte before lo stays: the byte before the oldest piece's `{`, where help() puts
     * its `[` (without it, the piece after each move, ~1 in 10 with one walking thread, was
     * copied out) */
    size_t shift = s->lo ? s->lo - 1 : 0;
    memmove(s->t, s->t + shift, s->hi - shift);
    s->hi -= shift, s->lo -= shift;
    for (int i = 0; i < NSLOT; i++)
        s->slots[i].start -= shift, s->slots[i].brace -= shift, s->slots[i].open -= shift;
    if (s->hi + n + WIN_PAD > s->cap) {
        s->cap = 2 * (s->hi + n + WIN_PAD);
        s->t = tp_mem_xrealloc(s->t, s->cap, 1);
    }
    if (s->helper)
        pthread_mutex_unlock(&s->mu);
}

/* Appends n bytes; a borrowed window only moves its end (the chunk follows the last one in
 * memory), as does a chunk the source wrote in place (after window_room). */
static void window_put(pieces *s, const unsigned char *buf, size_t n) {
    if (s->borrowed || buf == s->t + s->hi) {
        assert(buf == s->t + s->hi);
        s->hi += n;
        return;
    }
    window_room(s, n);
    memcpy(s->t + s->hi, buf, n);
    s->hi += n;
}

/* Hands t[lo..lo+n) to yajl (after the `,` it is owed). */
static tp_status window_feed(pieces *s, size_t n) {
    if (s->comma_owed) {
        s->comma_owed = 0;
        if (yajl_parse(s->p->h, (const unsigned char *)",", 1) != yajl_status_ok)
            return fail(s->p, TP_ERR_PARSE, "parse stopped"), s->p->st; /* ALWAYS: it is one */
    }
    tp_status st = n ? feed(s->p, s->t + s->lo, n) : s->p->st;
    s->lo += n;
    return st;
}

/* PH_PREFIX: yajl reads up to each `[` in turn until one opened the traceEvents array. */
static void prefix_step(pieces *s) {
    kparse *p = s->p;
    while (s->ph == PH_PREFIX && s->lo < s->hi && p->st == TP_OK) {
        const unsigned char *b = memchr(s->t + s->lo, '[', s->hi - s->lo);
        size_t n = b ? (size_t)(b - (s->t + s->lo)) + 1 : s->hi - s->lo;
        window_feed(s, n);
        if (b && p->st == TP_OK && top_frame(p) == F_EVENTS && p->event_idx == 0 && p->depth <= 2)
            s->ph = PH_EVENTS, s->ev_depth = p->depth;
    }
}

/* The last `}` ws `,` ws `{` in t[from..hi). */
static int last_boundary(const unsigned char *t, size_t from, size_t hi, size_t *brace,
                         size_t *open) {
    size_t end = hi;
    while (end > from) {
        const unsigned char *o = memrchr(t + from, '{', end - from);
        if (!o)
            return 0;
        size_t j = (size_t)(o - t);
        while (j > from && is_ws(t[j - 1]))
            j--;
        if (j > from && t[j - 1] == ',') {
            for (j--; j > from && is_ws(t[j - 1]);)
                j--;
            if (j > from && t[j - 1] == '}') {
                *brace = j - 1, *open = (size_t)(o - t);
                return 1;
            }
        }
        end = (size_t)(o - t);
    }
    return 0;
}

static const tp_json_walk_cb walk_callbacks = {cb_null,      cb_bool,    cb_number,  cb_string,
                                               cb_start_map, cb_map_key, cb_end_map, cb_start_array,
                                               cb_end_array, cb_integer, cb_milli};

/* Starts the helper (once, with the first piece); without it (one core, or it could not
 * start) this thread walks every piece, one in flight at a time. */
static void start_helper(pieces *s) {
    s->want_thread = 0;
    s->helper = 1; /* read by this thread only: from now on the slots' states are under mu */
    if (pthread_create(&s->th, NULL, helper_main, s) != 0) {
        s->helper = 0;
        return;
    }
    s->depth = NSLOT;
}

/* Puts t[start..brace] in flight as `[...]`: queued for the next walking thread, the helper
 * or this one (help). */
static void dispatch(pieces *s, size_t start, size_t brace, size_t open) {
    if (s->want_thread)
        start_helper(s);
    slot *sl = &s->slots[(s->head + s->inflight++) % NSLOT];
    sl->start = start, sl->brace = brace, sl->open = open;
    sl->len = brace + 3 - start;
    sl->event_idx = s->p->event_idx;
    sl->want_rank = s->p->rank_state != 4;
    sl->b = NULL;
    lock(s);
    sl->state = S_QUEUED;
    if (s->helper && s->helper_idle)
        pthread_cond_signal(&s->work_cv);
    unlock(s);
}

/* Under mu when the helper runs: whether the oldest piece in flight is walked. */
static int oldest_done(pieces *s, int *queued) {
    lock(s);
    int done = s->slots[s->head].state == S_DONE;
    *queued = 0;
    for (int k = 0; k < s->inflight; k++)
        *queued += s->slots[(s->head + k) % NSLOT].state == S_QUEUED;
    unlock(s);
    return done;
}

/* Takes the oldest piece in flight out of flight, once walked; returns its slot, whose buffer
 * (NULL: none) the caller gives back (release) when done with it. `drop`: a piece not walked
 * yet is not walked at all (after a failed walk: yajl reads its text). */
static slot *retire(pieces *s, int drop) {
    slot *sl = &s->slots[s->head];
    lock(s);
    if (sl->state == S_QUEUED && drop) { /* the next job: the ones before it were taken */
        s->next_job = (s->next_job + 1) % NSLOT;
    } else if (s->helper) {
        s->waiting = 1;
        while (sl->state != S_DONE)
            pthread_cond_wait(&s->done_cv, &s->mu);
        s->waiting = 0;
    }
    sl->state = S_FREE; /* the helper reads the states under the lock */
    unlock(s);
    s->head = (s->head + 1) % NSLOT;
    s->inflight--;
    return sl;
}

/* Gives a retired slot's buffer back to the pool. */
static void release(pieces *s, slot *sl) {
    if (!sl->b)
        return;
    lock(s);
    sl->b->busy = 0;
    unlock(s);
    sl->b = NULL;
}

/* The next piece from window index `from` in t[..hi): 1 with its bounds, 0 when there is
 * none. */
static int next_piece(pieces *s, size_t from, size_t hi, size_t *start, size_t *brace,
                      size_t *open) {
    size_t i = from;
    while (i < hi && is_ws(s->t[i]))
        i++;
    *start = i;
    if (i == hi || s->t[i] != '{')
        return 0;
    size_t lim = hi - i > s->piece ? i + s->piece : hi;
    return last_boundary(s->t, i + 1, lim, brace, open) ||
           find_boundary(s->t, hi, lim, brace, open);
}

/* yajl reads on up to the `}` at `brace`; when it then stands between two events, the walk
 * resumes at `open`, else (inside a string or a nested value: the guess was no boundary)
 * yajl goes on to the next boundary first; after the array, yajl reads the rest. */
static void yajl_to(pieces *s, size_t brace, size_t open) {
    kparse *p = s->p;
    if (window_feed(s, brace + 1 - s->lo) != TP_OK)
        return;
    if (p->ev_end == p->base_off && p->depth == s->ev_depth && top_frame(p) == F_EVENTS) {
        pass_over(p, s->t + s->lo, open - s->lo);
        s->lo = open;
        s->comma_owed = 1;
        s->resync = 0;
    } else if (p->depth < s->ev_depth) {
        s->ph = PH_SERIAL;
    }
}

/* Commits a retired slot whose walk was valid: its events, in order. */
static void commit_slot(pieces *s, slot *sl) {
    pass_slot(s, sl);
    replay(s->p, &sl->b->d, (const char *)s->t + sl->start);
    release(s, sl);
    s->lo = sl->open;
    s->walked++;
}

/* Before the window moves: commits the pieces at the head of the flight that are walked and
 * valid (as events_step would next, after reading on), so that less text moves. At a move the
 * helper has mostly walked all there is and waits for the text read after it; the importing
 * thread, which bounds the two-thread import (it inflates, commits and walks too), does the
 * same work in another order. */
static void commit_walked(pieces *s) {
    int queued;
    while (s->ph == PH_EVENTS && s->inflight && s->p->st == TP_OK && !s->resync &&
           oldest_done(s, &queued) && s->slots[s->head].b->ok)
        commit_slot(s, retire(s, 0));
}

/* PH_EVENTS: puts the next piece in flight when the window holds enough text (or all there
 * is, `eof`) and there is room; else commits the oldest one when it is walked, walks the
 * next queued one here when it is not, or waits for the helper to finish it (or reads on,
 * when there is room for a piece and no text for it). A failed walk hands its text, and all
 * after it, to yajl (yajl_to). Without a boundary and with nothing in flight: PH_SERIAL (at
 * the end, or past WINDOW_MAX). Returns 1 when it made progress, 0 when it needs more text. */
static int events_step(pieces *s, int eof) {
    size_t brace, open;
    if (s->resync) {
        if (find_boundary(s->t, s->hi, s->lo, &brace, &open))
            yajl_to(s, brace, open);
        else if (eof || s->hi - s->lo > WINDOW_MAX)
            s->ph = PH_SERIAL;
        else
            return 0;
        return 1;
    }
    size_t from = s->inflight ? s->slots[(s->head + s->inflight - 1) % NSLOT].open : s->lo;
    /* the text a piece may take: a walk reads WIN_PAD bytes past its piece, where the reader
     * may be writing (granted) */
    size_t hi = !s->granted ? s->hi : s->hi > from + WIN_PAD ? s->hi - WIN_PAD : from;
    size_t start = hi;
    if (eof && !s->walked && !s->inflight && s->hi - s->lo < s->piece) {
        s->ph = PH_SERIAL; /* less than one piece of events: yajl alone costs less */
        return 1;
    }
    int room = s->inflight < s->depth && (eof || hi - from >= s->piece);
    if (room && next_piece(s, from, hi, &start, &brace, &open)) {
        dispatch(s, start, brace, open);
        return 1;
    } else if (!s->inflight) {
        if (eof || s->hi - s->lo > WINDOW_MAX || (start < hi && s->t[start] != '{'))
            s->ph = PH_SERIAL;
        return s->ph == PH_SERIAL;
    }
    if (!eof && s->inflight < s->depth && s->hi - from < s->piece)
        return 0; /* read on first: the helper sleeps when it finds nothing queued */
    int queued;
    if (!oldest_done(s, &queued) && (queued > 1 || !s->helper)) {
        /* the next piece is the helper's when it is the only one queued: this thread has the
         * commits besides, and walking it would leave the helper idle */
        if (help(s))
            return 1;
    }
    slot *sl = retire(s, 0);
    if (sl->b->ok) {
        commit_slot(s, sl);
        return 1;
    }
    release(s, sl);
    while (s->inflight) /* walked from a boundary that yajl must confirm first */
        release(s, retire(s, 1));
    s->resync = 1; /* an error (yajl words it), or a guess that was no boundary */
    yajl_to(s, sl->brace, sl->open);
    return 1;
}

/* READ_WINDOW: grants the reader the room after hi (moving the text first when less than
 * FILL_MIN is left, while the reader waits). */
static void grant_next(pieces *s) {
    window_room(s, FILL_MIN);
    size_t room = s->cap - WIN_PAD - s->hi;
    source_grant(s->ahead, s->t + s->hi, room < CHUNK ? room : CHUNK);
    s->granted = 1;
}

/* Reads the source through the window into the parser; returns 1 when it ended cleanly
 * (the text the window still holds is read before a read error is reported, as yajl alone
 * would have read it). */
static int pump_pieces(pieces *s, pull_fn pull, void *src) {
    kparse *p = s->p;
    while (p->st == TP_OK) {
        const unsigned char *buf = NULL;
        size_t room = CHUNK;
        if (s->ahead && !s->granted)
            grant_next(s);
        if (s->in_place && s->ph != PH_SERIAL) {
            /* inflated straight into the window: its copy of every chunk was ~4 % of the
             * import's instructions (owlv2 .json.gz from memory), on the importing thread,
             * which bounds the two-thread import there; as much as there is room for (see
             * WINDOW) */
            if (s->hi + FILL_MIN + WIN_PAD > s->cap)
                commit_walked(s);
            window_room(s, FILL_MIN);
            buf = s->t + s->hi;
            room = s->cap - WIN_PAD - s->hi;
            room = room < CHUNK ? room : CHUNK;
        }
        long n = pull(src, &buf, room);
        s->granted = 0;
        if (n <= 0) {
            while (s->ph == PH_EVENTS && p->st == TP_OK)
                events_step(s, 1);
            if (p->st == TP_OK)
                window_feed(s, s->hi - s->lo);
            return n == 0 && p->st == TP_OK;
        }
        if (s->ph == PH_SERIAL) {
            feed(p, buf, (size_t)n);
            continue;
        }
        window_put(s, buf, (size_t)n);
        if (s->ahead)
            grant_next(s); /* inflated while this thread parses what it has */
        if (s->ph == PH_PREFIX)
            prefix_step(s);
        while (s->ph == PH_EVENTS && p->st == TP_OK && events_step(s, 0))
            ;
        if (s->ph == PH_SERIAL && p->st == TP_OK)
            window_feed(s, s->hi - s->lo);
    }
    if (s->granted) { /* the reader writes into the window: wait for it */
        const unsigned char *buf = NULL;
        pull(src, &buf, 0);
        s->granted = 0;
    }
    return 0;
}

/* Sources: the file (through gzsource), plain text in memory, gzip in memory. */
typedef struct {
    gzsource *g;
    kparse *p;
} filesrc;

static long pull_file(void *arg, const unsigned char **buf, size_t room) {
    filesrc *f = arg;
    unsigned char *b = (unsigned char *)(uintptr_t)*buf;
    long n = source_next(f->g, &b, room);
    *buf = b;
    if (n > 0)
        tp_progress_update(f->p->m->progress, f->g->cur_off, f->p->r ? f->p->r->ev.n : 0);
    return n;
}

typedef struct {
    const unsigned char *d;
    size_t len, off;
} memsrc;

static long pull_mem(void *arg, const unsigned char **buf, size_t room) {
    memsrc *m = arg;
    (void)room; /* the text is borrowed, never written */
    size_t n = m->len - m->off < CHUNK ? m->len - m->off : CHUNK;
    *buf = m->d + m->off;
    m->off += n;
    return (long)n;
}

typedef struct {
    z_stream z;
    unsigned char *out;
    int zr; /* Z_OK while inflating; then Z_STREAM_END, Z_BUF_ERROR (input ended) or an error */
} gzmemsrc;

static long pull_gzmem(void *arg, const unsigned char **buf, size_t room) {
    gzmemsrc *g = arg;
    unsigned char *out = *buf ? (unsigned char *)(uintptr_t)*buf : g->out;
    if (!*buf)
        room = CHUNK;
    while (g->zr == Z_OK) {
        g->z.next_out = out;
        g->z.avail_out = (unsigned)room;
        g->zr = inflate(&g->z, Z_NO_FLUSH);
        size_t n = room - g->z.avail_out;
        if (g->zr == Z_BUF_ERROR || (g->zr == Z_OK && g->z.avail_in == 0 && n < room))
            g->zr = Z_BUF_ERROR; /* input ended inside the stream */
        if (n) {
            *buf = out;
            return (long)n;
        }
    }
    return g->zr == Z_STREAM_END ? 0 : -1;
}

/* Runs the source into the parser: `mode` 0 yajl alone, 1 with the walker, 2 with the walker
 * on a thread of its own (mode 1 and 2 fall back to yajl alone where it cannot run); *walked (NULL:
 * not wanted) counts the pieces it committed. `whole`: the source's text, when it is all in
 * memory and its chunks follow one another there (pull_mem): the window borrows it instead of
 * copying every byte (the walker copies its pieces anyway, to bracket them). Returns pump's
 * result. */
static int pump_source(kparse *p, pull_fn pull, void *src, const unsigned char *whole, int mode,
                       size_t piece, uint64_t *walked) {
    tp_json_walk *w = mode ? tp_json_walk_open() : NULL;
    pieces *s = tp_mem_xrealloc(NULL, 1, sizeof *s);
    pieces_init(s, p, w, piece, mode == 2, whole);
    /* they inflate (or read) where they are told */
    s->in_place =
        !whole && (pull == pull_gzmem || (pull == pull_file && !((filesrc *)src)->g->threaded));
    if (pull == pull_file && ((filesrc *)src)->g->win)
        s->ahead = ((filesrc *)src)->g;
    if (!w)
        s->ph = PH_SERIAL;
    int clean = pump_pieces(s, pull, src);
    p->threads = s->helper ? 2 : 1;
    if (walked)
        *walked = s->walked;
    pieces_free(s);
    free(s);
    tp_json_walk_close(w);
    return clean;
}

/* Texts shorter than this are walked by the importing thread alone: the helper's thread, its
 * walker and its buffers cost more CPU time than they save (a report of the 14-18 MB peer
 * traces: 1.2-1.8 ms (~4-5 %) less CPU time, 0.4-1.6 MiB less peak RSS, the same wall time
 * within the noise of a loaded 2-core machine; see docs/PERFORMANCE.md, ninth round). */
#define HELPER_TEXT_MIN (20u * 1000 * 1000)

/* The text's length as the file says it, to choose the walker's threads only (no output
 * depends on it): a gzip file's last ISIZE (the last member's length mod 2^32: a guess for a
 * file of several members), else the file's size; SIZE_MAX when unknown. */
static size_t text_hint(const zfile *zf) {
    struct stat sb;
    unsigned char head[2], tail[4];
    if (fstat(zf->fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size < 18 ||
        pread(zf->fd, head, 2, 0) != 2)
        return SIZE_MAX;
    if (head[0] != 0x1f || head[1] != 0x8b)
        return (uint64_t)sb.st_size > SIZE_MAX ? SIZE_MAX : (size_t)sb.st_size;
    if (pread(zf->fd, tail, 4, sb.st_size - 4) != 4)
        return SIZE_MAX;
    return (size_t)tail[0] | (size_t)tail[1] << 8 | (size_t)tail[2] << 16 | (size_t)tail[3] << 24;
}

static void read_stream(kparse *p, zfile *zf) {
    int mode = walker_mode();
    if (mode == 2 && text_hint(zf) < HELPER_TEXT_MIN)
        mode = 1;
    /* With the walker's helper (mode 2, a text of >= 20 MB) the importing thread inflates
     * each chunk itself, straight into the window: a reader thread made three threads for
     * two cores, and the window's copy of each of its chunks was 4 % of a report's
     * instructions (hta_df_index_resolver: 53.7 M of 1,429 M), besides its two buffers' 0.5
     * MiB. Without the helper the reader thread stays: there it overlaps the inflate with
     * the walk on the other core (the importing thread inflating inline cost 3-7 ms of wall
     * on the 14-18 MB sets for ~1 ms of CPU, docs/PERFORMANCE.md, Kineto JSON import), and
     * inflates into the walker's window (READ_WINDOW); yajl alone (mode 0) reads from the
     * reader's buffers. */
    gzsource src;
    source_open(&src, zf, mode == 2 ? READ_INLINE : mode == 1 ? READ_WINDOW : READ_BUFS);
    filesrc f = {&src, p};
    int clean = pump_source(p, pull_file, &f, NULL, mode, 0, NULL);
    source_close(&src);
#if TP_GLIBC_MALLOC
    /* The reader's and helper's threads are gone; what their malloc arenas (and the window's
     * heap) kept would count in the RSS of everything after the import: give it back. */
    malloc_trim(0);
#endif
    if (p->st != TP_OK)
        return;
    int zerr = zf->err;
    const char *msg = zf->msg;
    if (zerr == Z_BUF_ERROR)
        fail(p, TP_ERR_TRUNCATED, "truncated gzip stream (%s)", msg);
    else if (zerr != Z_OK || !clean)
        fail(p, TP_ERR_PARSE, "gzip stream damaged: %s", msg);
    else
        finish(p);
}

/* tp_import_kineto_mem with the error in parts; `mode` 0: yajl alone, 1: with the walker
 * (pieces of `piece` bytes, 0: PIECE). */
static tp_status load_mem(tp_model *m, const char *name, const void *data, size_t len,
                          tp_load_error *e, int mode, size_t piece, uint64_t *walked) {
    kparse p;
    kparse_init(&p, m, name, e);
    yajl_handle h = p.h;
    const unsigned char *d = data;
    if (walked)
        *walked = 0;
    if (len == 0) {
        fail(&p, TP_ERR_EMPTY, "empty file");
    } else if (len >= 2 && d[0] == 0x1f && d[1] == 0x8b) {
        gzmemsrc g;
        memset(&g, 0, sizeof g);
        if (inflateInit2(&g.z, 16 + MAX_WBITS) != Z_OK)
            abort();
        g.out = tp_mem_xrealloc(NULL, CHUNK, 1);
        g.z.next_in = (unsigned char *)(uintptr_t)data;
        g.z.avail_in = len > UINT_MAX ? UINT_MAX : (unsigned)len;
        pump_source(&p, pull_gzmem, &g, NULL, mode, piece, walked);
        if (p.st == TP_OK && g.zr == Z_STREAM_END)
            finish(&p);
        else if (p.st == TP_OK && g.zr == Z_BUF_ERROR)
            fail(&p, TP_ERR_TRUNCATED, "truncated gzip stream");
        else if (p.st == TP_OK)
            fail(&p, TP_ERR_PARSE, "gzip stream damaged: %s", g.z.msg ? g.z.msg : "inflate error");
        inflateEnd(&g.z);
        free(g.out);
    } else {
        memsrc src = {d, len, 0};
        if (pump_source(&p, pull_mem, &src, d, mode, piece, walked) && p.st == TP_OK)
            finish(&p);
    }
    return kparse_done(&p, h);
}

/* Streams `path` into the model, igzip inflating when `isal`; *isal_used: igzip inflated
 * some of it. */
static tp_status load_stream(tp_model *m, const char *path, tp_load_error *e, int isal,
                             int *isal_used) {
    *isal_used = 0;
    zfile *zf = zf_open(path, isal);
    if (!zf) {
        tp_load_error_init(e, path);
        return tp_load_error_set(e, TP_ERR_OPEN, "cannot open: %s",
                                 strerror(errno ? errno : ENOENT));
    }
    kparse p;
    kparse_init(&p, m, path, e);
    yajl_handle h = p.h;
    read_stream(&p, zf);
#if TP_HAVE_ISAL
    *isal_used = zf->isal_used;
#endif
    zf_close(zf);
    return kparse_done(&p, h);
}

/* igzip for the streaming inflate unless TP_IMPORT_INFLATE=zlib (bench, tests compare). */
static int inflate_isal(void) {
    const char *s = getenv("TP_IMPORT_INFLATE");
    return !(s && !strcmp(s, "zlib"));
}

tp_status tp_import_kineto_load(tp_model *m, const char *path, tp_load_error *e) {
    tp_status st;
    int threads = import_threads();
    if (threads >= 2 && load_whole(m, path, e, SPLIT_MIN, &st))
        return st;
    int isal_used;
    st = load_stream(m, path, e, inflate_isal(), &isal_used);
    if (st != TP_OK && isal_used) /* zlib's error, words and position (see zfile) */
        st = load_stream(m, path, e, 0, &isal_used);
    return st;
}

tp_status tp_import_kineto_file(tp_model *m, const char *path, char *err, size_t err_len) {
    tp_load_error e;
    return tp_load_error_string(tp_import_kineto_load(m, path, &e), &e, err, err_len);
}

tp_status tp_import_kineto_mem(tp_model *m, const char *name, const void *data, size_t len,
                               char *err, size_t err_len) {
    tp_load_error e;
    return tp_load_error_string(load_mem(m, name, data, len, &e, walker_mode(), 0, NULL), &e, err,
                                err_len);
}

tp_status tp_import_kineto_mem_parser(tp_model *m, const char *name, const void *data, size_t len,
                                      int walker, size_t piece, uint64_t *walked, char *err,
                                      size_t err_len) {
    tp_load_error e;
    return tp_load_error_string(load_mem(m, name, data, len, &e, walker, piece, walked), &e, err,
                                err_len);
}

tp_status tp_import_kineto_mem_split(tp_model *m, const char *name, const void *data, size_t len,
                                     size_t split_min, int *split, char *err, size_t err_len) {
    tp_load_error e;
    int used = 0;
    unsigned char *inflated = NULL;
    size_t n = 0;
    const unsigned char *d = data;
    int gz = len >= 2 && d[0] == 0x1f && d[1] == 0x8b;
    /* what the split cannot take goes the serial way, which also words its errors */
    if (gz ? !inflate_whole(d, len, split_min, &inflated, &n) : len == 0 || len < split_min) {
        if (split)
            *split = 0;
        return tp_import_kineto_mem(m, name, data, len, err, err_len);
    }
    kparse p;
    kparse_init(&p, m, name, &e);
    yajl_handle h = p.h;
    if (inflated)
        used = parse_text(&p, inflated, n, split_min);
    else
        used = parse_text(&p, data, len, split_min);
    free(inflated);
    if (split)
        *split = used;
    return tp_load_error_string(kparse_done(&p, h), &e, err, err_len);
}
