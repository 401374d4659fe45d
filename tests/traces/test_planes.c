/* test_planes: filter 2 (lane delta + byte planes, traces/tp_planes.c) against a reference
 * layout built here byte by byte from the lane-delta filter's output, round trips over record
 * mixes of every shape (filtered and unfiltered types, one type in two sizes, unknown types,
 * bodies of fewer than 8 words and not a multiple of 8), and layouts that must be refused.
 * Built twice: with the SSE2 transpose and with TP_PLANES_NO_SIMD (the portable one). */
#include "tp_chunk.h"
#include "tp_planes.h"
#include "tp_test.h"
#include "trace_testutil.h"

#define MAXB (64u << 10)

static uint8_t src[MAXB], filt[MAXB], want[MAXB], got[MAXB], scratch[MAXB];

/* tp_planes_decode into a heap buffer of exactly n bytes (malloc(0) aside), so that ASan
 * sees any read or write past the chunk. Returns the decoded length; the bytes are left in
 * *out (freed by the next call). */
static size_t decode(const uint8_t *layout, size_t n, uint8_t **out) {
    static uint8_t *buf;
    free(buf);
    buf = malloc(n ? n : 1);
    memset(buf, 0xee, n);
    *out = buf;
    return tp_planes_decode(layout, buf, n);
}

/* One record of `type` and `size` at p: lanes that grow by small steps (what the filter
 * turns into small deltas) or random ones. */
static uint32_t put(uint8_t *p, uint16_t type, uint32_t size, uint64_t *seed, uint64_t i) {
    tp_rec_hdr h = {type, (uint16_t)(tt_rand(seed) & 0xff), size};
    memcpy(p, &h, sizeof h);
    for (uint32_t x = 8; x < size; x += 8) {
        uint64_t v = tt_rand(seed) % 3 ? 1000 * i + x + tt_rand(seed) % 50 : tt_rand(seed);
        memcpy(p + x, &v, 8);
    }
    return size;
}

/* `n` bytes of records, a mix chosen by `shape`. */
static size_t make_mix(int shape, size_t records, uint64_t *seed) {
    static const uint16_t types[] = {
        TP_REC_API, TP_REC_KERNEL, TP_REC_NVTX_PUSH, TP_REC_STRING, TP_REC_STACK, 63, 200};
    size_t n = 0;
    for (size_t i = 0; i < records; i++) {
        uint16_t t = types[shape == 0 ? i % 2 : tt_rand(seed) % 7];
        static const uint32_t max_words[] = {12, 12, 2, 80}; /* 3: bodies of many pieces */
        uint32_t size = 8 * (1 + (uint32_t)(tt_rand(seed) % max_words[shape]));
        if (shape == 0)
            size = t == TP_REC_API ? 64 : 96;
        if (n + size > MAXB)
            break;
        n += put(src + n, t, size, seed, i);
    }
    return n;
}

/* The layout as docs/trace-format.md section 4.1 says, from the lane-delta filter's output. */
static void reference(size_t n) {
    tp_filter_encode(src, filt, n);
    size_t k = 0, nw = 0;
    static uint64_t words[MAXB / 8];
    for (size_t off = 0; off < n; off += ((tp_rec_hdr *)(filt + off))->size) {
        uint32_t size = ((tp_rec_hdr *)(filt + off))->size;
        memcpy(want + 8 * k++, filt + off, 8);
        memcpy(words + nw, filt + off + 8, size - 8);
        nw += size / 8 - 1;
    }
    for (size_t b = 0; b < 8; b++)
        for (size_t j = 0; j < nw; j++)
            want[8 * k + b * nw + j] = (uint8_t)(words[j] >> (8 * b));
}

static void round_trip(int shape, size_t records, uint64_t seed) {
    size_t n = make_mix(shape, records, &seed);
    reference(n);
    tp_planes_encode(src, got, scratch, n);
    CHECK(memcmp(got, want, n) == 0);
    uint8_t *back;
    CHECK_EQ_U(decode(got, n, &back), n);
    CHECK(memcmp(back, src, n) == 0);
}

static void test_round_trips(void) {
    for (size_t records = 1; records < 40; records++)
        for (int shape = 0; shape < 4; shape++)
            round_trip(shape, records, 7 + records);
    round_trip(0, 600, 1);
    round_trip(1, 3000, 2);
    round_trip(2, 5000, 3);
    round_trip(3, 400, 4);
}

/* The chunk the writer sees most: API and KERNEL in turn, small deltas. The high planes are
 * zero, which is what the layout is for. */
static void test_high_planes_zero(void) {
    uint64_t seed = 5;
    size_t n = make_mix(0, 200, &seed);
    for (size_t off = 0; off < n; off += ((tp_rec_hdr *)(src + off))->size)
        for (uint32_t x = 8; x < ((tp_rec_hdr *)(src + off))->size; x += 8) {
            uint64_t v = 1000 * (off / 80) + x; /* lanes that grow steadily */
            memcpy(src + off + x, &v, 8);
        }
    tp_planes_encode(src, got, scratch, n);
    size_t k = 200, nw = n / 8 - k, zeros = 0;
    for (size_t j = 3 * nw; j < 8 * nw; j++)
        zeros += got[8 * k + j] == 0;
    CHECK(zeros > 5 * nw - 5 * 14); /* only the first record of each type is stored whole */
}

/* Headers that do not describe the chunk exactly: refused, never read out of bounds. */
static void test_refused(void) {
    uint64_t seed = 9;
    size_t n = make_mix(1, 50, &seed);
    tp_planes_encode(src, got, scratch, n);
    uint8_t *back;
    CHECK_EQ_U(decode(got, n - 4, &back), 0); /* not a multiple of 8 */
    tp_rec_hdr h;
    memcpy(&h, got, 8);
    static const uint32_t bad_sizes[] = {0, 4, 12, 0xfffffff8u};
    for (size_t i = 0; i < sizeof bad_sizes / sizeof bad_sizes[0]; i++) {
        tp_rec_hdr b = h;
        b.size = bad_sizes[i];
        memcpy(got, &b, 8);
        CHECK_EQ_U(decode(got, n, &back), 0);
    }
    memcpy(got, &h, 8);
    CHECK_EQ_U(decode(got, n + 8, &back), 0); /* headers describe 8 bytes less */
    CHECK_EQ_U(decode(got, n, &back), n);
    /* Random bytes: decoded whole or refused, within bounds (ASan watches). */
    for (int r = 0; r < 2000; r++) {
        size_t len = 8 * (1 + tt_rand(&seed) % 64);
        for (size_t j = 0; j < len; j++)
            got[j] = (uint8_t)(tt_rand(&seed) % 4 ? 0 : tt_rand(&seed));
        for (size_t j = 0; j < len; j += 8) /* plausible sizes, sometimes */
            if (tt_rand(&seed) % 2)
                got[j + 4] = (uint8_t)(8 * (1 + tt_rand(&seed) % 4)), got[j + 5] = 0;
        size_t d = decode(got, len, &back);
        CHECK(d == 0 || d == len);
    }
}

int main(void) {
    TP_RUN(test_round_trips);
    TP_RUN(test_high_planes_zero);
    TP_RUN(test_refused);
    return tp_test_summary();
}
