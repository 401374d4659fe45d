/* tp_planes: the byte-plane layout of filter 2 (see tp_planes.h).
 *
 * Body words are moved in blocks: an 8x8 byte transpose turns eight words into one 8-byte
 * piece of each plane, and back. SSE2 (every x86-64) does it in 12 unpacks, reading does 16
 * words at a time in 24 and writing 16 at a time in 32 (with whole 16-byte stores);
 * elsewhere, or with TP_PLANES_NO_SIMD defined (the tests build it), 12 masked swaps of u64
 * words. The last few body words go byte by byte.
 *
 * Both directions are also compiled a second time with AVX2 (tp_planes_avx2.c includes this
 * file), which moves 32 words per transpose and four lanes per add or subtract, and is
 * chosen at run time when the CPU has AVX2 (TP_PLANES_AVX2 is set by the build on x86-64;
 * TP_PLANES_NO_AVX2, or a CPU without it, keeps SSE2; the tests build both). */
#include "tp_planes.h"

#include "tp_chunk.h"

#include <assert.h>
#include <string.h>

#if defined(__SSE2__) && !defined(TP_PLANES_NO_SIMD)
#define PLANES_SSE2 1
#endif

#ifndef PLANES_SSE2
/* Swaps the bytes of a and b selected by `mask` (in b) and `mask << shift` (in a). */
#define SWAP_BLOCKS(a, b, shift, mask)                                                             \
    do {                                                                                           \
        uint64_t t_ = (((a) >> (shift)) ^ (b)) & (mask);                                           \
        (a) ^= t_ << (shift);                                                                      \
        (b) ^= t_;                                                                                 \
    } while (0)

/* Transposes the 8x8 byte matrix held in w (row i = the bytes of w[i], little-endian):
 * afterwards byte i of w[k] is what byte k of w[i] was. Three rounds of swapping blocks
 * across the diagonal: 4x4, then 2x2, then single bytes (written out: the compiler does not
 * unroll a loop of this at -O2, and this is a third of the codec's cost). */
static inline void transpose8(uint64_t w[8]) {
    const uint64_t m32 = 0x00000000ffffffffull, m16 = 0x0000ffff0000ffffull,
                   m8 = 0x00ff00ff00ff00ffull;
    SWAP_BLOCKS(w[0], w[4], 32, m32);
    SWAP_BLOCKS(w[1], w[5], 32, m32);
    SWAP_BLOCKS(w[2], w[6], 32, m32);
    SWAP_BLOCKS(w[3], w[7], 32, m32);
    SWAP_BLOCKS(w[0], w[2], 16, m16);
    SWAP_BLOCKS(w[1], w[3], 16, m16);
    SWAP_BLOCKS(w[4], w[6], 16, m16);
    SWAP_BLOCKS(w[5], w[7], 16, m16);
    SWAP_BLOCKS(w[0], w[1], 8, m8);
    SWAP_BLOCKS(w[2], w[3], 8, m8);
    SWAP_BLOCKS(w[4], w[5], 8, m8);
    SWAP_BLOCKS(w[6], w[7], 8, m8);
}
#endif

#ifdef PLANES_SSE2
#include <emmintrin.h>
#endif
#if defined(PLANES_SSE2) && defined(__AVX2__)
#include <immintrin.h>
#define PLANES_AVX2_CODE 1 /* this is the AVX2 compilation (tp_planes_avx2.c) */
#endif
#if defined(PLANES_SSE2) && defined(TP_PLANES_AVX2) && !defined(TP_PLANES_NO_AVX2) &&              \
    !defined(PLANES_AVX2_CODE)
#define PLANES_DISPATCH 1 /* tp_planes_decode picks the AVX2 compilation when the CPU can */
#endif

#ifdef PLANES_SSE2

/* The 8x8 byte transpose in SSE2 registers, used both ways. In four registers of 16 bytes,
 * a byte's index has 2 register bits and 4 byte bits; unpack{lo,hi}_epi8 of two registers
 * that differ in register bit X moves X into byte bit 0, shifts the byte bits up and sends
 * byte bit 3 into register bit X. Three such rounds (X = 1, 0, 1) turn "register j = words
 * 2j, 2j+1" into "register j = planes 2m, 2m+1" with m = {0, 2, 1, 3}[j], and the same
 * rounds turn planes loaded that way back into words stored that way. */
static inline void unpack_rounds(__m128i x[4]) {
    __m128i y[4];
    y[0] = _mm_unpacklo_epi8(x[0], x[2]);
    y[2] = _mm_unpackhi_epi8(x[0], x[2]);
    y[1] = _mm_unpacklo_epi8(x[1], x[3]);
    y[3] = _mm_unpackhi_epi8(x[1], x[3]);
    x[0] = _mm_unpacklo_epi8(y[0], y[1]);
    x[1] = _mm_unpackhi_epi8(y[0], y[1]);
    x[2] = _mm_unpacklo_epi8(y[2], y[3]);
    x[3] = _mm_unpackhi_epi8(y[2], y[3]);
    y[0] = _mm_unpacklo_epi8(x[0], x[2]);
    y[2] = _mm_unpackhi_epi8(x[0], x[2]);
    y[1] = _mm_unpacklo_epi8(x[1], x[3]);
    y[3] = _mm_unpackhi_epi8(x[1], x[3]);
    /* register j now holds pair m = {0, 2, 1, 3}[j]: put pair m in x[m] */
    x[0] = y[0];
    x[2] = y[1];
    x[1] = y[2];
    x[3] = y[3];
}

/* Eight body words at `words` to bytes 0..7 of each of the 8 planes (nw bytes apart). */
static inline void block_to_planes(const uint8_t *words, uint8_t *planes, size_t nw) {
    __m128i x[4];
    for (int j = 0; j < 4; j++)
        x[j] = _mm_loadu_si128((const __m128i *)(words + 16 * j));
    unpack_rounds(x);
    for (int m = 0; m < 4; m++) {
        _mm_storel_epi64((__m128i *)(planes + 2 * (size_t)m * nw), x[m]);
        _mm_storel_epi64((__m128i *)(planes + (2 * (size_t)m + 1) * nw),
                         _mm_unpackhi_epi64(x[m], x[m]));
    }
}

static inline void block_from_planes(const uint8_t *planes, size_t nw, uint8_t *words) {
    __m128i x[4];
    for (int j = 0; j < 4; j++)
        x[j] = _mm_unpacklo_epi64(
            _mm_loadl_epi64((const __m128i *)(planes + 2 * (size_t)j * nw)),
            _mm_loadl_epi64((const __m128i *)(planes + (2 * (size_t)j + 1) * nw)));
    unpack_rounds(x);
    for (int m = 0; m < 4; m++)
        _mm_storeu_si128((__m128i *)(words + 16 * m), x[m]);
}

/* One round of the encoder's 16-word transpose: registers a and b (which differ in one bit X
 * of their index) become their bytes interleaved, low halves into x[a], high halves into
 * x[b]. In 16-byte registers, a byte's position has 4 bits; the round shifts them up by one,
 * puts X into bit 0 and sends the old bit 3 into index bit X. */
#define ENC_ROUND(T, LO, HI, x, y, a, b)                                                           \
    do {                                                                                           \
        T lo_ = LO(y[a], y[b]), hi_ = HI(y[a], y[b]);                                              \
        x[a] = lo_;                                                                                \
        x[b] = hi_;                                                                                \
    } while (0)

/* Registers r[0..7] = words (2j, 2j + 1) of a block: word bits (w3 w2 w1) index the register,
 * (w0 b2 b1 b0) the byte. Four rounds on index bits w3, w2, w1, w0 leave the position =
 * (w3 w2 w1 w0) and the index = (b0 b2 b1): plane b is in r[{0, 4, 1, 5, 2, 6, 3, 7}[b]]. 32
 * unpacks for 16 words, against 24 plus 8 unpackhi_epi64 and 16 half stores for two 8-word
 * blocks. Written out for the same reason as block16_from_planes. */
#define ENC_ROUNDS(T, LO, HI, r)                                                                   \
    do {                                                                                           \
        T s_[8];                                                                                   \
        ENC_ROUND(T, LO, HI, s_, r, 0, 4);                                                         \
        ENC_ROUND(T, LO, HI, s_, r, 1, 5);                                                         \
        ENC_ROUND(T, LO, HI, s_, r, 2, 6);                                                         \
        ENC_ROUND(T, LO, HI, s_, r, 3, 7);                                                         \
        ENC_ROUND(T, LO, HI, r, s_, 0, 2);                                                         \
        ENC_ROUND(T, LO, HI, r, s_, 1, 3);                                                         \
        ENC_ROUND(T, LO, HI, r, s_, 4, 6);                                                         \
        ENC_ROUND(T, LO, HI, r, s_, 5, 7);                                                         \
        ENC_ROUND(T, LO, HI, s_, r, 0, 1);                                                         \
        ENC_ROUND(T, LO, HI, s_, r, 2, 3);                                                         \
        ENC_ROUND(T, LO, HI, s_, r, 4, 5);                                                         \
        ENC_ROUND(T, LO, HI, s_, r, 6, 7);                                                         \
        ENC_ROUND(T, LO, HI, r, s_, 0, 4);                                                         \
        ENC_ROUND(T, LO, HI, r, s_, 1, 5);                                                         \
        ENC_ROUND(T, LO, HI, r, s_, 2, 6);                                                         \
        ENC_ROUND(T, LO, HI, r, s_, 3, 7);                                                         \
    } while (0)

/* Sixteen body words at `words` to bytes 0..15 of each of the 8 planes (nw bytes apart). */
static inline void block16_to_planes(const uint8_t *words, uint8_t *planes, size_t nw) {
    __m128i r[8];
    r[0] = _mm_loadu_si128((const __m128i *)words + 0);
    r[1] = _mm_loadu_si128((const __m128i *)words + 1);
    r[2] = _mm_loadu_si128((const __m128i *)words + 2);
    r[3] = _mm_loadu_si128((const __m128i *)words + 3);
    r[4] = _mm_loadu_si128((const __m128i *)words + 4);
    r[5] = _mm_loadu_si128((const __m128i *)words + 5);
    r[6] = _mm_loadu_si128((const __m128i *)words + 6);
    r[7] = _mm_loadu_si128((const __m128i *)words + 7);
    ENC_ROUNDS(__m128i, _mm_unpacklo_epi8, _mm_unpackhi_epi8, r);
#define STORE_PLANE(k, j) _mm_storeu_si128((__m128i *)(planes + (size_t)(k)*nw), r[j])
    STORE_PLANE(0, 0);
    STORE_PLANE(1, 4);
    STORE_PLANE(2, 1);
    STORE_PLANE(3, 5);
    STORE_PLANE(4, 2);
    STORE_PLANE(5, 6);
    STORE_PLANE(6, 3);
    STORE_PLANE(7, 7);
#undef STORE_PLANE
}

#ifdef PLANES_AVX2_CODE
/* block16_to_planes on 32 words: register j holds words (2j, 2j + 1) in its low half and
 * (16 + 2j, 17 + 2j) in its high half (8 permutes), the unpacks work within each half, and
 * plane b comes out as 32 bytes in order. */
static inline void block32_to_planes(const uint8_t *words, uint8_t *planes, size_t nw) {
    const __m256i *w = (const __m256i *)words;
    __m256i r[8];
#define LOAD_PAIR(j)                                                                               \
    do {                                                                                           \
        __m256i lo_ = _mm256_loadu_si256(w + (j)), hi_ = _mm256_loadu_si256(w + 4 + (j));          \
        r[2 * (j)] = _mm256_permute2x128_si256(lo_, hi_, 0x20);                                    \
        r[2 * (j) + 1] = _mm256_permute2x128_si256(lo_, hi_, 0x31);                                \
    } while (0)
    LOAD_PAIR(0); /* written out: GCC kept the loop of four */
    LOAD_PAIR(1);
    LOAD_PAIR(2);
    LOAD_PAIR(3);
#undef LOAD_PAIR
    ENC_ROUNDS(__m256i, _mm256_unpacklo_epi8, _mm256_unpackhi_epi8, r);
#define STORE_PLANE(k, j) _mm256_storeu_si256((__m256i *)(planes + (size_t)(k)*nw), r[j])
    STORE_PLANE(0, 0);
    STORE_PLANE(1, 4);
    STORE_PLANE(2, 1);
    STORE_PLANE(3, 5);
    STORE_PLANE(4, 2);
    STORE_PLANE(5, 6);
    STORE_PLANE(6, 3);
    STORE_PLANE(7, 7);
#undef STORE_PLANE
}
#endif

/* Sixteen body words from 16 bytes of each plane: 8 loads, 24 unpacks, 8 stores, against 56
 * instructions for two calls of block_from_planes. Round 1 interleaves the bytes of planes
 * (0,1) (2,3) (4,5) (6,7) into u16 pairs, round 2 those into u32 quads, round 3 those into
 * whole words. Written out: GCC at -O2 keeps loops over register arrays as loops, on the
 * stack. */
static inline void block16_from_planes(const uint8_t *planes, size_t nw, uint8_t *words) {
#define LOAD_PLANE(k) _mm_loadu_si128((const __m128i *)(planes + (size_t)(k)*nw))
    __m128i p0 = LOAD_PLANE(0), p1 = LOAD_PLANE(1), p2 = LOAD_PLANE(2), p3 = LOAD_PLANE(3);
    __m128i p4 = LOAD_PLANE(4), p5 = LOAD_PLANE(5), p6 = LOAD_PLANE(6), p7 = LOAD_PLANE(7);
#undef LOAD_PLANE
    /* aXY_L: bytes X and Y of words 0-7 (L = 0) or 8-15 (L = 1) */
    __m128i a01_0 = _mm_unpacklo_epi8(p0, p1), a01_1 = _mm_unpackhi_epi8(p0, p1);
    __m128i a23_0 = _mm_unpacklo_epi8(p2, p3), a23_1 = _mm_unpackhi_epi8(p2, p3);
    __m128i a45_0 = _mm_unpacklo_epi8(p4, p5), a45_1 = _mm_unpackhi_epi8(p4, p5);
    __m128i a67_0 = _mm_unpacklo_epi8(p6, p7), a67_1 = _mm_unpackhi_epi8(p6, p7);
    /* bX_m: bytes X..X+3 of words 4m .. 4m + 3 */
    __m128i b0_0 = _mm_unpacklo_epi16(a01_0, a23_0), b0_1 = _mm_unpackhi_epi16(a01_0, a23_0);
    __m128i b0_2 = _mm_unpacklo_epi16(a01_1, a23_1), b0_3 = _mm_unpackhi_epi16(a01_1, a23_1);
    __m128i b4_0 = _mm_unpacklo_epi16(a45_0, a67_0), b4_1 = _mm_unpackhi_epi16(a45_0, a67_0);
    __m128i b4_2 = _mm_unpacklo_epi16(a45_1, a67_1), b4_3 = _mm_unpackhi_epi16(a45_1, a67_1);
    __m128i *w = (__m128i *)words;
    _mm_storeu_si128(w + 0, _mm_unpacklo_epi32(b0_0, b4_0));
    _mm_storeu_si128(w + 1, _mm_unpackhi_epi32(b0_0, b4_0));
    _mm_storeu_si128(w + 2, _mm_unpacklo_epi32(b0_1, b4_1));
    _mm_storeu_si128(w + 3, _mm_unpackhi_epi32(b0_1, b4_1));
    _mm_storeu_si128(w + 4, _mm_unpacklo_epi32(b0_2, b4_2));
    _mm_storeu_si128(w + 5, _mm_unpackhi_epi32(b0_2, b4_2));
    _mm_storeu_si128(w + 6, _mm_unpacklo_epi32(b0_3, b4_3));
    _mm_storeu_si128(w + 7, _mm_unpackhi_epi32(b0_3, b4_3));
}

#ifdef PLANES_AVX2_CODE
/* block16_from_planes on 32 words: the unpacks work within each 16-byte half, so the low
 * halves hold words 0-15 and the high halves words 16-31, put in order by 8 permutes. */
static inline void block32_from_planes(const uint8_t *planes, size_t nw, uint8_t *words) {
#define LOAD_PLANE(k) _mm256_loadu_si256((const __m256i *)(planes + (size_t)(k)*nw))
    __m256i p0 = LOAD_PLANE(0), p1 = LOAD_PLANE(1), p2 = LOAD_PLANE(2), p3 = LOAD_PLANE(3);
    __m256i p4 = LOAD_PLANE(4), p5 = LOAD_PLANE(5), p6 = LOAD_PLANE(6), p7 = LOAD_PLANE(7);
#undef LOAD_PLANE
    __m256i a01_0 = _mm256_unpacklo_epi8(p0, p1), a01_1 = _mm256_unpackhi_epi8(p0, p1);
    __m256i a23_0 = _mm256_unpacklo_epi8(p2, p3), a23_1 = _mm256_unpackhi_epi8(p2, p3);
    __m256i a45_0 = _mm256_unpacklo_epi8(p4, p5), a45_1 = _mm256_unpackhi_epi8(p4, p5);
    __m256i a67_0 = _mm256_unpacklo_epi8(p6, p7), a67_1 = _mm256_unpackhi_epi8(p6, p7);
    __m256i b0_0 = _mm256_unpacklo_epi16(a01_0, a23_0), b0_1 = _mm256_unpackhi_epi16(a01_0, a23_0);
    __m256i b0_2 = _mm256_unpacklo_epi16(a01_1, a23_1), b0_3 = _mm256_unpackhi_epi16(a01_1, a23_1);
    __m256i b4_0 = _mm256_unpacklo_epi16(a45_0, a67_0), b4_1 = _mm256_unpackhi_epi16(a45_0, a67_0);
    __m256i b4_2 = _mm256_unpacklo_epi16(a45_1, a67_1), b4_3 = _mm256_unpackhi_epi16(a45_1, a67_1);
    /* rM: words 2M, 2M + 1 (low half) and 16 + 2M, 17 + 2M (high half) */
    __m256i r0 = _mm256_unpacklo_epi32(b0_0, b4_0), r1 = _mm256_unpackhi_epi32(b0_0, b4_0);
    __m256i r2 = _mm256_unpacklo_epi32(b0_1, b4_1), r3 = _mm256_unpackhi_epi32(b0_1, b4_1);
    __m256i r4 = _mm256_unpacklo_epi32(b0_2, b4_2), r5 = _mm256_unpackhi_epi32(b0_2, b4_2);
    __m256i r6 = _mm256_unpacklo_epi32(b0_3, b4_3), r7 = _mm256_unpackhi_epi32(b0_3, b4_3);
    __m256i *w = (__m256i *)words;
    _mm256_storeu_si256(w + 0, _mm256_permute2x128_si256(r0, r1, 0x20));
    _mm256_storeu_si256(w + 1, _mm256_permute2x128_si256(r2, r3, 0x20));
    _mm256_storeu_si256(w + 2, _mm256_permute2x128_si256(r4, r5, 0x20));
    _mm256_storeu_si256(w + 3, _mm256_permute2x128_si256(r6, r7, 0x20));
    _mm256_storeu_si256(w + 4, _mm256_permute2x128_si256(r0, r1, 0x31));
    _mm256_storeu_si256(w + 5, _mm256_permute2x128_si256(r2, r3, 0x31));
    _mm256_storeu_si256(w + 6, _mm256_permute2x128_si256(r4, r5, 0x31));
    _mm256_storeu_si256(w + 7, _mm256_permute2x128_si256(r6, r7, 0x31));
}
#endif
#else
static inline void block_to_planes(const uint8_t *words, uint8_t *planes, size_t nw) {
    uint64_t w[8];
    memcpy(w, words, sizeof w);
    transpose8(w);
    for (int k = 0; k < 8; k++)
        memcpy(planes + (size_t)k * nw, &w[k], 8);
}

static inline void block_from_planes(const uint8_t *planes, size_t nw, uint8_t *words) {
    uint64_t w[8];
    for (int k = 0; k < 8; k++)
        memcpy(&w[k], planes + (size_t)k * nw, 8);
    transpose8(w);
    memcpy(words, w, sizeof w);
}

static inline void block16_from_planes(const uint8_t *planes, size_t nw, uint8_t *words) {
    block_from_planes(planes, nw, words);
    block_from_planes(planes + 8, nw, words + 64);
}
#endif

/* Body words (nw u64, contiguous at `words`) to the planes at `out`: plane k, nw bytes long,
 * at out + k * nw holds byte k of every word. */
static void words_to_planes(const uint8_t *words, size_t nw, uint8_t *out) {
    size_t b = 0;
#ifdef PLANES_AVX2_CODE
    for (; b + 32 <= nw; b += 32)
        block32_to_planes(words + 8 * b, out + b, nw);
#endif
#ifdef PLANES_SSE2
    for (; b + 16 <= nw; b += 16)
        block16_to_planes(words + 8 * b, out + b, nw);
#endif
    for (; b + 8 <= nw; b += 8)
        block_to_planes(words + 8 * b, out + b, nw);
    for (; b < nw; b++)
        for (int k = 0; k < 8; k++)
            out[(size_t)k * nw + b] = words[8 * b + (size_t)k];
}

/* The inverse of words_to_planes. */
static void planes_to_words(const uint8_t *in, size_t nw, uint8_t *words) {
    size_t b = 0;
#ifdef PLANES_AVX2_CODE
    for (; b + 32 <= nw; b += 32)
        block32_from_planes(in + b, nw, words + 8 * b);
#endif
    for (; b + 16 <= nw; b += 16)
        block16_from_planes(in + b, nw, words + 8 * b);
    for (; b + 8 <= nw; b += 8)
        block_from_planes(in + b, nw, words + 8 * b);
    for (; b < nw; b++)
        for (int k = 0; k < 8; k++)
            words[8 * b + (size_t)k] = in[(size_t)k * nw + b];
}

/* The lane delta of one record's body: `words` u64 of `cur` minus those of `old` (the previous
 * record of its type, same size) when there is one, else copied, to `out`. In pieces of 32
 * bytes (AVX2), then 16 (SSE2), then 8, none past the record: the last record ends where the
 * chunk does. Inline pieces rather than a memcpy call per record: bodies are 1 to 12 words
 * on the writer's usual mix, where the call cost more than the copy. */
static inline void body_delta(uint64_t *out, const uint64_t *cur, const uint64_t *old,
                              size_t words) {
    size_t j = 0;
#ifdef PLANES_AVX2_CODE
    for (; j + 4 <= words; j += 4) {
        __m256i x = _mm256_loadu_si256((const __m256i *)(cur + j));
        if (old)
            x = _mm256_sub_epi64(x, _mm256_loadu_si256((const __m256i *)(old + j)));
        _mm256_storeu_si256((__m256i *)(out + j), x);
    }
#endif
#ifdef PLANES_SSE2
    for (; j + 2 <= words; j += 2) {
        __m128i x = _mm_loadu_si128((const __m128i *)(cur + j));
        if (old)
            x = _mm_sub_epi64(x, _mm_loadu_si128((const __m128i *)(old + j)));
        _mm_storeu_si128((__m128i *)(out + j), x);
    }
#endif
    for (; j < words; j++)
        out[j] = cur[j] - (old ? old[j] : 0);
}

/* body_delta for a record followed by at least 32 more bytes of the chunk: whole pieces of 32
 * (AVX2) or 16 bytes (SSE2) that may run up to 24 bytes past the body. What they read past it
 * lies within the chunk (the next record's bytes, or for `old` the records after it), and
 * what they write past it lies within scratch (which holds n bytes, the bodies n - 8k) and is
 * overwritten by the next bodies or never read. Unlike decoding, nothing read here was
 * written by the pass, so running over costs no store forwarding; it saves the 2- and 1-word
 * tails of each body (bench_trace's bodies are 7 words on average). */
static inline void body_delta_over(uint64_t *out, const uint64_t *cur, const uint64_t *old,
                                   size_t words) {
#if defined(PLANES_AVX2_CODE)
    if (old)
        for (size_t j = 0; j < words; j += 4)
            _mm256_storeu_si256((__m256i *)(out + j),
                                _mm256_sub_epi64(_mm256_loadu_si256((const __m256i *)(cur + j)),
                                                 _mm256_loadu_si256((const __m256i *)(old + j))));
    else
        for (size_t j = 0; j < words; j += 4)
            _mm256_storeu_si256((__m256i *)(out + j),
                                _mm256_loadu_si256((const __m256i *)(cur + j)));
#elif defined(PLANES_SSE2)
    if (old)
        for (size_t j = 0; j < words; j += 2)
            _mm_storeu_si128((__m128i *)(out + j),
                             _mm_sub_epi64(_mm_loadu_si128((const __m128i *)(cur + j)),
                                           _mm_loadu_si128((const __m128i *)(old + j))));
    else
        for (size_t j = 0; j < words; j += 2)
            _mm_storeu_si128((__m128i *)(out + j), _mm_loadu_si128((const __m128i *)(cur + j)));
#else
    body_delta(out, cur, old, words);
#endif
}

/* One pass over the records: each header to the front of dst, each body's lane delta in
 * order into scratch, the sizes checked on the way (the record count is only known at the
 * end, and with it where the planes start); then scratch's words to the planes behind the
 * headers. */
static void encode(const uint8_t *src, uint8_t *dst, uint8_t *scratch, size_t n) {
    const uint64_t *prev[TP_REC_TYPE_LIMIT] = {0}; /* previous record of each type (source) */
    uint64_t *body = (uint64_t *)scratch, *hdrs = (uint64_t *)dst;
    size_t off = 0, k = 0;
    while (off < n) {
        const tp_rec_hdr *h = (const tp_rec_hdr *)(src + off);
        if (n - off < sizeof *h || !tp_rec_size_ok(h, n - off)) {
            /* never from the writer; keeps the bytes, which then fail to decode */
            memcpy(dst, src, n);
            return;
        }
        const uint64_t *cur = (const uint64_t *)h, *old = NULL;
        size_t words = h->size / 8 - 1;
        hdrs[k++] = cur[0];
        if (tp_filter_applies(h->type)) {
            old = prev[h->type];
            prev[h->type] = cur;
            if (old && ((const tp_rec_hdr *)old)->size != h->size)
                old = NULL;
        }
        if (n - off >= (size_t)h->size + 32) /* not one of the last records: see body_delta_over */
            body_delta_over(body, cur + 1, old ? old + 1 : NULL, words);
        else
            body_delta(body, cur + 1, old ? old + 1 : NULL, words);
        body += words;
        off += h->size;
    }
    words_to_planes(scratch, n / 8 - k, dst + 8 * k);
}

#ifdef PLANES_AVX2_CODE
void tp_planes__encode_avx2(const uint8_t *src, uint8_t *dst, uint8_t *scratch, size_t n) {
    encode(src, dst, scratch, n);
}
#else
void tp_planes_encode(const uint8_t *src, uint8_t *dst, uint8_t *scratch, size_t n) {
#ifdef PLANES_DISPATCH
    if (__builtin_cpu_supports("avx2")) {
        tp_planes__encode_avx2(src, dst, scratch, n);
        return;
    }
#endif
    encode(src, dst, scratch, n);
}
#endif

/* Records whose headers lie at the front of a layout of `n` bytes of which the first `m` are
 * there to read (m = n but in filter 4's form), or 0 when the headers do not describe exactly
 * n bytes of well-formed records or would lie past m. Header k is at 8k. */
static size_t count_headers_in(const uint8_t *src, size_t m, size_t n) {
    size_t total = 0, k = 0;
    while (total < n) {
        uint32_t size;
        if (8 * k + 8 > m)
            return 0;
        memcpy(&size, src + 8 * k + offsetof(tp_rec_hdr, size), 4);
        /* size >= 8 and a multiple of 8, in one test: size - 8 wraps for 0..7 */
        if ((size - 8) & (0x80000000u | 7u))
            return 0;
        total += size;
        k++;
    }
    return total == n ? k : 0;
}

static size_t count_headers(const uint8_t *src, size_t n) {
    return count_headers_in(src, n, n);
}

/* count_headers_in that also takes filter 3's census of the headers (reset here) in the same
 * walk: filter 4's decoder needs both, and a second walk over ~15 k headers a chunk cost it
 * ~12 instructions a record (loop, load, census) where the census alone adds ~8. */
static size_t census_headers_in(const uint8_t *src, size_t m, size_t n, tp_planes_census *c) {
    size_t total = 0, k = 0, kmax = m / 8; /* 8k + 8 > m exactly when k >= m / 8 */
    uint32_t bad = 0; /* count_headers_in's test of each size, its bits gathered for one test at
                       * the end (a size under 8 stops the walk at kmax or past n): -1 a record */
    tp_planes_census_reset(c);
    while (total < n) {
        tp_rec_hdr h;
        if (k >= kmax)
            return 0;
        memcpy(&h, src + 8 * k, 8);
        bad |= h.size - 8;
        tp_planes_census_add(c, h.type, h.size);
        total += h.size;
        k++;
    }
    return total == n && !(bad & (0x80000000u | 7u)) ? k : 0;
}

/* One piece of a record's body: `out` = `body` (+ `old`), 32 or 16 bytes; loaded before it is
 * stored. */
#ifdef PLANES_AVX2_CODE
static inline void piece32(uint64_t *out, const uint64_t *body, const uint64_t *old) {
    __m256i x = _mm256_loadu_si256((const __m256i *)body);
    if (old)
        x = _mm256_add_epi64(x, _mm256_loadu_si256((const __m256i *)old));
    _mm256_storeu_si256((__m256i *)out, x);
}
#endif
#ifdef PLANES_SSE2
static inline void piece16(uint64_t *out, const uint64_t *body, const uint64_t *old) {
    __m128i x = _mm_loadu_si128((const __m128i *)body);
    if (old)
        x = _mm_add_epi64(x, _mm_loadu_si128((const __m128i *)old));
    _mm_storeu_si128((__m128i *)out, x);
}
#endif

/* The body of one record: `words` u64 from `body` to `out`, plus the lanes of `old` (the
 * previous decoded record of its type, same size) when there is one: the lane delta undone.
 * In pieces of 32 bytes (AVX2), then 16 (SSE2), then 8, each loaded before it is stored, so
 * `body` may lie at or after `out` (the layout is undone in place). No piece reaches past the
 * record: `old` was split the same way, so each piece of it is read back from exactly one
 * earlier store, which the CPU can forward. (Steps of 4 words that ran past the record's end
 * took fewer instructions, 170 against 187 per event, but were slower: their reads of `old`
 * straddled the next record's first stores; docs/PERFORMANCE.md, "Reading, second round".) */
static inline void body_put(uint64_t *out, const uint64_t *body, const uint64_t *old,
                            size_t words) {
    size_t j = 0;
#ifdef PLANES_AVX2_CODE
    for (; j + 4 <= words; j += 4)
        piece32(out + j, body + j, old ? old + j : NULL);
#endif
#ifdef PLANES_SSE2
    for (; j + 2 <= words; j += 2)
        piece16(out + j, body + j, old ? old + j : NULL);
#endif
    for (; j < words; j++)
        out[j] = body[j] + (old ? old[j] : 0);
}

/* Puts the next record together at `cur` from its header `hdr` and the words at *body;
 * returns where the record after it goes. */
static inline uint64_t *record_put(uint64_t *cur, const uint8_t *hdr, const uint64_t **body,
                                   const uint64_t **prev) {
    tp_rec_hdr h;
    memcpy(&h, hdr, 8);
    size_t words = h.size / 8 - 1;
    const uint64_t *old = NULL;
    if (tp_filter_applies(h.type)) {
        old = prev[h.type];
        prev[h.type] = cur;
    }
    if (old && ((const tp_rec_hdr *)old)->size != h.size)
        old = NULL;
    body_put(cur + 1, *body, old ? old + 1 : NULL, words);
    memcpy(cur, &h, 8);
    *body += words;
    return cur + 1 + words;
}

static size_t decode(const uint8_t *src, uint8_t *dst, size_t n) {
    if (n % 8)
        return 0;
    size_t k = count_headers(src, n);
    if (!k)
        return 0;
    /* The body words, in order, to the end of dst; then each record takes its header from
     * src and its words from there, adding back the lanes of the previous decoded record of
     * its type. The words of record i lie 8 (k - i - 1) bytes after where record i ends, so
     * nothing is overwritten before it is read and decoded records stay as they are. */
    size_t nw = n / 8 - k;
    const uint64_t *body = (const uint64_t *)(dst + 8 * k);
    planes_to_words(src + 8 * k, nw, dst + 8 * k);
    const uint64_t *prev[TP_REC_TYPE_LIMIT] = {0}; /* previous decoded record of each type */
    uint64_t *cur = (uint64_t *)dst;
    for (size_t i = 0; i < k; i++)
        cur = record_put(cur, src + 8 * i, &body, prev);
    return n;
}

#ifdef PLANES_AVX2_CODE
size_t tp_planes__decode_avx2(const uint8_t *src, uint8_t *dst, size_t n) {
    return decode(src, dst, n);
}
#else
size_t tp_planes_decode(const uint8_t *src, uint8_t *dst, size_t n) {
#ifdef PLANES_DISPATCH
    if (__builtin_cpu_supports("avx2"))
        return tp_planes__decode_avx2(src, dst, n);
#endif
    return decode(src, dst, n);
}
#endif

/* ------------------------------------------------------------------ filter 3: columns */

/* Where each type's body words go in filter 3's word order: a type is a column group when the
 * lane delta applies to it and all its records in the chunk have one size (its census's `any`
 * equals its `all`); its words start at col[type] (lane 1 of each record in order, then lane 2,
 * ...), `count[type]` records apart. The other records' bodies follow all groups, in record
 * order, from `rest`. */
typedef struct {
    tp_planes_census n;
    uint64_t *col[TP_REC_TYPE_LIMIT]; /* next word of the group; NULL: not a group */
    uint64_t *rest;
} col_plan;

/* The encoder's state of one type's group: where its next word goes, `count` words between
 * lanes, its body size in words, and the previous record (NULL before the first, or `zeros`). */
typedef struct {
    uint64_t *col;
    size_t stride, words, reach; /* reach: stride * words, the lanes' span */
    const uint64_t *prev;
} col_slot;

/* Compiled twice like the rest (tp_planes_avx2.c), so defined in the one compilation only. */
#ifndef PLANES_AVX2_CODE
void tp_planes_census_reset(tp_planes_census *c) {
    memset(c->count, 0, sizeof c->count);
    memset(c->any, 0, sizeof c->any);
    memset(c->all, 0xff, sizeof c->all);
}
#endif

/* Lays the groups out from `words` on, in increasing type order, and the rest after them. */
static void plan_place(col_plan *p, uint64_t *words) {
    for (unsigned t = 0; t < TP_REC_TYPE_LIMIT; t++) {
        p->col[t] = NULL;
        if (!p->n.count[t] || p->n.any[t] != p->n.all[t] || !tp_filter_applies((uint16_t)t))
            continue;
        p->col[t] = words;
        words += (size_t)p->n.count[t] * (p->n.any[t] / 8 - 1);
    }
    p->rest = words;
}

/* Lane j of a group's record: `*q` moves `stride` words per lane. Written out from the last lane
 * down, falling through (bodies of up to 12 words, every record type but the variable ones):
 * four instructions a word, where a loop took ~8 with its counter and address. */
#define COL_LANES(CASE)                                                                            \
    CASE(11)                                                                                       \
    CASE(10) CASE(9) CASE(8) CASE(7) CASE(6) CASE(5) CASE(4) CASE(3) CASE(2) CASE(1) CASE(0)

#ifdef PLANES_SSE2
/* Lanes j and j + 1 (going down: *q moves back a lane before each store): one subtraction for
 * both, the low half stored to lane j's place, the high half to lane j + 1's. */
#define SCATTER_PAIR(j)                                                                            \
    do {                                                                                           \
        __m128i x_ = _mm_sub_epi64(_mm_loadu_si128((const __m128i *)(cur + (j))),                  \
                                   _mm_loadu_si128((const __m128i *)(old + (j))));                 \
        q -= stride;                                                                               \
        _mm_storeh_pd((double *)q, _mm_castsi128_pd(x_));                                          \
        q -= stride;                                                                               \
        _mm_storel_epi64((__m128i *)q, x_);                                                        \
    } while (0)
#define SCATTER_ONE(j)                                                                             \
    do {                                                                                           \
        q -= stride;                                                                               \
        *q = cur[j] - old[j];                                                                      \
    } while (0)
#endif

/* `q` is the place of lane `words` (one past the last lane's: the caller has stride * words). */
static inline void col_scatter(uint64_t *q, size_t stride, const uint64_t *cur, const uint64_t *old,
                               size_t words) {
    if (words > 12) {
        q -= stride * words;
        for (size_t j = 0; j < words; j++, q += stride)
            *q = cur[j] - old[j];
        return;
    }
#ifdef PLANES_SSE2
    /* Two lanes a step, from the last pair down; an odd body stores its last lane alone first.
     * Three instructions a word where one at a time took four (the body's 16-byte loads stay
     * within the record: lanes j, j + 1 < words). */
    switch (words) {
    case 11:
        SCATTER_ONE(10);
        goto pairs10;
    case 9:
        SCATTER_ONE(8);
        goto pairs8;
    case 7:
        SCATTER_ONE(6);
        goto pairs6;
    case 5:
        SCATTER_ONE(4);
        goto pairs4;
    case 3:
        SCATTER_ONE(2);
        goto pairs2;
    case 1:
        SCATTER_ONE(0);
        return;
    case 12:
        SCATTER_PAIR(10);
        __attribute__((fallthrough));
    case 10:
    pairs10:
        SCATTER_PAIR(8);
        __attribute__((fallthrough));
    case 8:
    pairs8:
        SCATTER_PAIR(6);
        __attribute__((fallthrough));
    case 6:
    pairs6:
        SCATTER_PAIR(4);
        __attribute__((fallthrough));
    case 4:
    pairs4:
        SCATTER_PAIR(2);
        __attribute__((fallthrough));
    case 2:
    pairs2:
        SCATTER_PAIR(0);
        __attribute__((fallthrough));
    default:
        break;
    }
#else
    switch (words) {
#define SCATTER(j)                                                                                 \
    case (j) + 1:                                                                                  \
        q -= stride;                                                                               \
        *q = cur[j] - old[j];                                                                      \
        __attribute__((fallthrough));
        COL_LANES(SCATTER)
#undef SCATTER
    default:
        break;
    }
#endif
}

#ifdef PLANES_SSE2
/* col_scatter's pairs undone: lanes j and j + 1 loaded from their places into one register
 * (movq, then movhpd into its high half), the previous record's pair added with one 16-byte
 * load (that record was put together in the same pieces, so the load is served by one earlier
 * store) and stored as one. */
static inline __m128i lanes2(const uint64_t *q, size_t stride) {
    __m128d lo = _mm_castsi128_pd(_mm_loadl_epi64((const __m128i *)q));
    return _mm_castpd_si128(_mm_loadh_pd(lo, (const double *)(q + stride)));
}
#define GATHER_PAIR(j)                                                                             \
    do {                                                                                           \
        q -= 2 * stride;                                                                           \
        __m128i x_ =                                                                               \
            _mm_add_epi64(lanes2(q, stride), _mm_loadu_si128((const __m128i *)(old + (j))));       \
        _mm_storeu_si128((__m128i *)(out + (j)), x_);                                              \
    } while (0)
#define GATHER_ONE(j)                                                                              \
    do {                                                                                           \
        q -= stride;                                                                               \
        out[j] = *q + old[j];                                                                      \
    } while (0)
#endif
#ifdef PLANES_AVX2_CODE
/* Four lanes j .. j + 3: two pairs joined into one 32-byte register, one add and one store for
 * four words (the previous record's quad again served by one earlier store). */
#define GATHER_QUAD(j)                                                                             \
    do {                                                                                           \
        q -= 4 * stride;                                                                           \
        __m256i x_ = _mm256_inserti128_si256(_mm256_castsi128_si256(lanes2(q, stride)),            \
                                             lanes2(q + 2 * stride, stride), 1);                   \
        x_ = _mm256_add_epi64(x_, _mm256_loadu_si256((const __m256i *)(old + (j))));               \
        _mm256_storeu_si256((__m256i *)(out + (j)), x_);                                           \
    } while (0)
#endif

/* The lanes of a group's record put back: `q` is the place of lane `words`, as in col_scatter;
 * `old` the previous record's body, or NULL (only for bodies over 12 words: the others start
 * from zeros). The cases go from the last lane down: an odd lane alone, then pairs (with AVX2:
 * an odd pair, then quads), so that every record of a type is put together in the same pieces.
 * Always inline: in decode_records' two copies GCC called it (~8 instructions a record more). */
static inline __attribute__((always_inline)) void
col_gather(uint64_t *out, const uint64_t *q, size_t stride, const uint64_t *old, size_t words) {
#ifdef PLANES_AVX2_CODE
    switch (words) {
    case 11:
        GATHER_ONE(10);
        GATHER_PAIR(8);
        goto quads4;
    case 10:
        GATHER_PAIR(8);
        goto quads4;
    case 9:
        GATHER_ONE(8);
        goto quads4;
    case 7:
        GATHER_ONE(6);
        GATHER_PAIR(4);
        goto quads0;
    case 6:
        GATHER_PAIR(4);
        goto quads0;
    case 5:
        GATHER_ONE(4);
        goto quads0;
    case 3:
        GATHER_ONE(2);
        GATHER_PAIR(0);
        return;
    case 2:
        GATHER_PAIR(0);
        return;
    case 1:
        GATHER_ONE(0);
        return;
    case 12:
        GATHER_QUAD(8);
        __attribute__((fallthrough));
    case 8:
    quads4:
        GATHER_QUAD(4);
        __attribute__((fallthrough));
    case 4:
    quads0:
        GATHER_QUAD(0);
        return;
    case 0:
        return;
    default:
        break;
    }
#elif defined(PLANES_SSE2)
    switch (words) { /* as col_scatter's */
    case 11:
        GATHER_ONE(10);
        goto pairs10;
    case 9:
        GATHER_ONE(8);
        goto pairs8;
    case 7:
        GATHER_ONE(6);
        goto pairs6;
    case 5:
        GATHER_ONE(4);
        goto pairs4;
    case 3:
        GATHER_ONE(2);
        goto pairs2;
    case 1:
        GATHER_ONE(0);
        return;
    case 12:
        GATHER_PAIR(10);
        __attribute__((fallthrough));
    case 10:
    pairs10:
        GATHER_PAIR(8);
        __attribute__((fallthrough));
    case 8:
    pairs8:
        GATHER_PAIR(6);
        __attribute__((fallthrough));
    case 6:
    pairs6:
        GATHER_PAIR(4);
        __attribute__((fallthrough));
    case 4:
    pairs4:
        GATHER_PAIR(2);
        __attribute__((fallthrough));
    case 2:
    pairs2:
        GATHER_PAIR(0);
        __attribute__((fallthrough));
    case 0:
        return;
    default:
        break;
    }
#else
    switch (words) {
#define GATHER(j)                                                                                  \
    case (j) + 1:                                                                                  \
        q -= stride;                                                                               \
        out[j] = *q + old[j];                                                                      \
        __attribute__((fallthrough));
        COL_LANES(GATHER)
#undef GATHER
    case 0:
        return;
    default:
        break;
    }
#endif
    /* over 12 words: a lane at a time */
    q -= stride * words;
    for (size_t j = 0; j < words; j++, q += stride)
        out[j] = *q + (old ? old[j] : 0);
}

#ifdef PLANES_AVX2_CODE
/* col_gather in the AVX2 compilation, from the record's lane 0 (`p0`) with the lanes `sb` bytes
 * apart: lane j is read at p_(j % 4) + (j / 4) * 4 * sb with p_r = p0 + r * sb, one load with
 * one addressing mode each (scale 1, 2, 4 or 8 on sb) once p1 .. p3 are set (three lea). The
 * same pieces as col_gather's (an odd lane alone at the top, then an odd pair, then quads), so
 * each piece of `old` is still read back from one earlier store. col_gather walked a pointer
 * down the lanes, a subtraction per pair or quad on one chain, and GCC kept that pointer on the
 * stack around the quads (a store and a reload a record). */
#define LANE0(j)                                                                                   \
    ((const void *)(((j) % 4 == 0   ? p0                                                           \
                     : (j) % 4 == 1 ? p1                                                           \
                     : (j) % 4 == 2 ? p2                                                           \
                                    : p3) +                                                        \
                    (j) / 4 * 4 * sb))
#define PAIR0(j)                                                                                   \
    _mm_castpd_si128(_mm_loadh_pd(_mm_castsi128_pd(_mm_loadl_epi64((const __m128i *)LANE0(j))),    \
                                  (const double *)LANE0((j) + 1)))
#define GATHER0_ONE(j) (out[j] = *(const uint64_t *)LANE0(j) + old[j])
#define GATHER0_PAIR(j)                                                                            \
    _mm_storeu_si128((__m128i *)(out + (j)),                                                       \
                     _mm_add_epi64(PAIR0(j), _mm_loadu_si128((const __m128i *)(old + (j)))))
#define GATHER0_QUAD(j)                                                                            \
    _mm256_storeu_si256((__m256i *)(out + (j)),                                                    \
                        _mm256_add_epi64(_mm256_inserti128_si256(_mm256_castsi128_si256(PAIR0(j)), \
                                                                 PAIR0((j) + 2), 1),               \
                                         _mm256_loadu_si256((const __m256i *)(old + (j)))))
static inline __attribute__((always_inline)) void
col_gather0(uint64_t *out, const uint64_t *col, size_t sb, const uint64_t *old, size_t words) {
    const char *p0 = (const char *)col, *p1 = p0 + sb, *p2 = p0 + 2 * sb, *p3 = p1 + 2 * sb;
    switch (words) {
    case 11:
        GATHER0_ONE(10);
        GATHER0_PAIR(8);
        goto quads4;
    case 10:
        GATHER0_PAIR(8);
        goto quads4;
    case 9:
        GATHER0_ONE(8);
        goto quads4;
    case 7:
        GATHER0_ONE(6);
        GATHER0_PAIR(4);
        goto quads0;
    case 6:
        GATHER0_PAIR(4);
        goto quads0;
    case 5:
        GATHER0_ONE(4);
        goto quads0;
    case 3:
        GATHER0_ONE(2);
        GATHER0_PAIR(0);
        return;
    case 2:
        GATHER0_PAIR(0);
        return;
    case 1:
        GATHER0_ONE(0);
        return;
    case 12:
        GATHER0_QUAD(8);
        __attribute__((fallthrough));
    case 8:
    quads4:
        GATHER0_QUAD(4);
        __attribute__((fallthrough));
    case 4:
    quads0:
        GATHER0_QUAD(0);
        return;
    case 0:
        return;
    default:
        break;
    }
    /* over 12 words: a lane at a time */
    for (size_t j = 0; j < words; j++, p0 += sb)
        out[j] = *(const uint64_t *)p0 + (old ? old[j] : 0);
}
#undef GATHER0_QUAD
#undef GATHER0_PAIR
#undef GATHER0_ONE
#undef PAIR0
#undef LANE0
#endif

/* Filter 3's encoder: unless the caller has the census (the writer counts while it copies the
 * records in), a first walk checks the sizes and counts the records of each type; then one walk
 * writes the headers to the front of dst and puts each body's lane delta where its group (or the
 * rest) has it in scratch; then scratch's words to the planes, as filter 2. The scattered stores
 * are one word each: the lanes of one record go `count` words apart. */
static void encode_columns(const uint8_t *src, uint8_t *dst, uint8_t *scratch, size_t n,
                           const tp_planes_census *census) {
    col_plan p;
    if (census) {
        p.n = *census;
    } else {
        tp_planes_census_reset(&p.n);
        for (size_t off = 0; off < n;) {
            const tp_rec_hdr *h = (const tp_rec_hdr *)(src + off);
            if (n - off < sizeof *h || !tp_rec_size_ok(h, n - off)) {
                memcpy(dst, src, n); /* never from the writer, as in encode */
                return;
            }
            tp_planes_census_add(&p.n, h->type, h->size);
            off += h->size;
        }
    }
    plan_place(&p, (uint64_t *)scratch);
    /* Each group's state in one slot (col_slot), found with one index: a group's record costs
     * no size arithmetic and no multiply. A group of bodies up to 12 words starts from `zeros`,
     * so its first record (stored whole: minus zeros) goes through col_scatter as the others. */
    static const uint64_t zeros[12];
    col_slot slot[TP_REC_TYPE_LIMIT];
    const uint64_t *prev[TP_REC_TYPE_LIMIT] = {0};
    for (unsigned t = 0; t < TP_REC_TYPE_LIMIT; t++) {
        size_t words = p.n.any[t] / 8 - 1;
        slot[t] = (col_slot){p.col[t], p.n.count[t], words, p.n.count[t] * words,
                             p.col[t] && words <= 12 ? zeros : NULL};
    }
    uint64_t *hdrs = (uint64_t *)dst;
    size_t k = 0;
    for (size_t off = 0; off < n;) {
        const tp_rec_hdr *h = (const tp_rec_hdr *)(src + off);
        const uint64_t *cur = (const uint64_t *)h + 1, *old = NULL;
        uint32_t size = h->size;
        uint16_t type = h->type;
        hdrs[k++] = *(const uint64_t *)h;
        off += size;
        col_slot *g = type < TP_REC_TYPE_LIMIT ? &slot[type] : NULL;
        /* a group: all of one size, so every record but the first has an `old` */
        if (g && g->col) {
            uint64_t *col = g->col++;
            old = g->prev;
            g->prev = cur;
            if (old)
                col_scatter(col + g->reach, g->stride, cur, old, g->words);
            else
                for (size_t j = 0; j < g->words; j++)
                    col[j * g->stride] = cur[j];
        } else {
            size_t words = size / 8 - 1;
            if (tp_filter_applies(type)) {
                old = prev[type];
                prev[type] = cur;
                if (old && ((const tp_rec_hdr *)(old - 1))->size != size)
                    old = NULL;
            }
            body_delta(p.rest, cur, old, words);
            p.rest += words;
        }
    }
    words_to_planes(scratch, n / 8 - k, dst + 8 * k);
}

/* The decoder's state of one type's group (col_slot's twin): its next record's lane 0 and
 * `stride` words between lanes, `reach` = stride * words (col_gather's start, no multiply per
 * record), and the previous record's body, `zeros` before the first (NULL for bodies over 12
 * words). One slot found with one index per record, where three arrays were read before.
 * With `times` (decode_records), also where the type's time words are: word t1 and t2 of the
 * record (0: none, the header read and masked off by m1 / m2, so nothing past the record is
 * read). 64 bytes: a slot's address is the type shifted, where 56 took a multiply's worth of
 * instructions per record. */
typedef struct {
    const uint64_t *col; /* the next record's lane 0; NULL: not a group */
    size_t stride, reach;
    size_t sb; /* stride * 8: col_gather0's lanes are sb bytes apart */
    const uint64_t *prev;
    uint64_t m1, m2;
    uint8_t t1, t2;
    uint8_t pad[6];
} col_src;
static_assert(sizeof(col_src) == 64, "col_src: 64 bytes, see above");

/* The word indexes and masks of the time words of a record of `words` body words whose type
 * has `nt` of them (0, 1 or 2: ts, then end), as tp_planes_decode_sparse_t reads them. */
static inline void time_words(col_src *g, unsigned nt, size_t words) {
    g->t1 = nt >= 1 && words >= 1 ? 1 : 0;
    g->t2 = nt >= 2 && words >= 2 ? 2 : 0;
    g->m1 = g->t1 ? ~0ull : 0;
    g->m2 = g->t2 ? ~0ull : 0;
}

/* The records put together from the headers at src and the words in scratch (decode_columns_plan's
 * loop); with `times`, the OR of their time words in *t_hi. `wide`: some record's type is
 * past the table (slot[TP_REC_TYPE_LIMIT] takes them); without, a record's slot is its type as
 * it is, no bound and no clamp (-3 instructions a record). Always inline, so that each copy
 * (`times` a constant NULL or not, `wide` a constant) has no test for either. */
static inline __attribute__((always_inline)) void decode_records(const uint8_t *src, uint8_t *dst,
                                                                 size_t k, col_plan *p,
                                                                 const uint8_t *times,
                                                                 uint64_t *t_hi, const int wide) {
    static const uint64_t zeros[12];
    /* slot[TP_REC_TYPE_LIMIT]: the types past the table, never a group, no time words */
    col_src slot[TP_REC_TYPE_LIMIT + 1];
    for (unsigned t = 0; t < TP_REC_TYPE_LIMIT; t++) {
        size_t words = p->n.any[t] / 8 - 1;
        slot[t] = (col_src){.col = p->col[t],
                            .stride = p->n.count[t],
                            .reach = p->n.count[t] * words,
                            .sb = 8 * (size_t)p->n.count[t],
                            .prev = p->col[t] && words <= 12 ? zeros : NULL};
        if (times)
            time_words(&slot[t], times[t], words);
    }
    slot[TP_REC_TYPE_LIMIT] = (col_src){.col = NULL};
    const uint64_t *prev[TP_REC_TYPE_LIMIT] = {0}; /* the other records' */
    const uint64_t *rest = p->rest;
    uint64_t *cur = (uint64_t *)dst, hi = 0;
    for (const uint8_t *hp = src, *hend = src + 8 * k; hp != hend; hp += 8) {
        tp_rec_hdr h;
        memcpy(&h, hp, 8);
        size_t words = h.size / 8 - 1;
        col_src *g = &slot[!wide || h.type < TP_REC_TYPE_LIMIT ? h.type : TP_REC_TYPE_LIMIT];
        memcpy(cur, &h, 8);
        if (g->col) { /* a group: all of one size, so each record's pieces are its predecessor's */
#ifdef PLANES_AVX2_CODE
            col_gather0(cur + 1, g->col, g->sb, g->prev, words);
#else
            col_gather(cur + 1, g->col + g->reach, g->stride, g->prev, words);
#endif
            g->prev = cur + 1;
            g->col++;
        } else {
            const uint64_t *old = NULL;
            if (tp_filter_applies(h.type)) {
                old = prev[h.type];
                prev[h.type] = cur;
                if (old && ((const tp_rec_hdr *)old)->size != h.size)
                    old = NULL;
            }
            body_put(cur + 1, rest, old ? old + 1 : NULL, words);
            rest += words;
            if (times) /* this record's size, not the group's */
                time_words(g, h.type < TP_REC_TYPE_LIMIT ? times[h.type] : 0, words);
        }
        if (times) {
            /* an OR, not the max: 2 instructions a record where the two max took 5 (lb2k's
             * decoding thread 117.0 -> 115.1 M), and no less safe for the cursor, which only
             * tests it against its limit (tp_planes_decode_sparse_t) */
            hi |= (cur[g->t1] & g->m1) | (cur[g->t2] & g->m2);
        }
        cur += 1 + words;
    }
    if (times)
        *t_hi = hi;
}

/* Filter 3's decoder, given the k headers at src's front checked as filter 2's decoder checks
 * them and their census (census_headers_in, in decode_columns or filter 4's unsparse): the
 * planes to words in scratch, then each record put together from its header and its lanes,
 * gathered from its group (or taken from the rest in order), plus the lanes of the previous
 * decoded record of its type. */
static size_t decode_columns_plan(const uint8_t *src, uint8_t *dst, uint8_t *scratch, size_t n,
                                  size_t k, col_plan *p, const uint8_t *times, uint64_t *t_hi) {
    planes_to_words(src + 8 * k, n / 8 - k, scratch);
    plan_place(p, (uint64_t *)scratch);
    /* the census leaves out the records of types past the table: none when it counts all k */
    size_t counted = 0;
    for (unsigned t = 0; t < TP_REC_TYPE_LIMIT; t++)
        counted += p->n.count[t];
    if (counted != k) {
        if (times)
            decode_records(src, dst, k, p, times, t_hi, 1);
        else
            decode_records(src, dst, k, p, NULL, NULL, 1);
    } else if (times) {
        decode_records(src, dst, k, p, times, t_hi, 0);
    } else {
        decode_records(src, dst, k, p, NULL, NULL, 0);
    }
    return n;
}

static size_t decode_columns(const uint8_t *src, uint8_t *dst, uint8_t *scratch, size_t n) {
    col_plan p;
    if (n % 8)
        return 0;
    size_t k = census_headers_in(src, n, n, &p.n);
    return k ? decode_columns_plan(src, dst, scratch, n, k, &p, NULL, NULL) : 0;
}

#ifdef PLANES_AVX2_CODE
void tp_planes__encode_columns_avx2(const uint8_t *src, uint8_t *dst, uint8_t *scratch, size_t n,
                                    const tp_planes_census *census) {
    encode_columns(src, dst, scratch, n, census);
}

size_t tp_planes__decode_columns_avx2(const uint8_t *src, uint8_t *dst, uint8_t *scratch,
                                      size_t n) {
    return decode_columns(src, dst, scratch, n);
}

#else
void tp_planes_encode_columns_census(const uint8_t *src, uint8_t *dst, uint8_t *scratch, size_t n,
                                     const tp_planes_census *census) {
#ifdef PLANES_DISPATCH
    if (__builtin_cpu_supports("avx2")) {
        tp_planes__encode_columns_avx2(src, dst, scratch, n, census);
        return;
    }
#endif
    encode_columns(src, dst, scratch, n, census);
}

void tp_planes_encode_columns(const uint8_t *src, uint8_t *dst, uint8_t *scratch, size_t n) {
    tp_planes_encode_columns_census(src, dst, scratch, n, NULL);
}

size_t tp_planes_decode_columns(const uint8_t *src, uint8_t *dst, uint8_t *scratch, size_t n) {
#ifdef PLANES_DISPATCH
    if (__builtin_cpu_supports("avx2"))
        return tp_planes__decode_columns_avx2(src, dst, scratch, n);
#endif
    return decode_columns(src, dst, scratch, n);
}
#endif

/* ------------------------------------------------------------------ filter 4: sparse planes */

/* Filter 4 leaves out the all-zero pieces of this many bytes of filter 3's planes. 128: over
 * half the record bytes go (launch-bound trainer: 59 -> 26-35 bytes a record) and the files get
 * smaller; 64 left out a few bytes more but broke up more of LZ4's matches (files as large or
 * 1 % larger), 16 and 32 more so (docs/PERFORMANCE.md, "Writing, fifth round"). */
#define SPARSE_PIECE 128

/* The bitmap's bytes for planes of `p` bytes: a bit a piece, in whole u64 words. */
static size_t sparse_bitmap_bytes(size_t p) {
    size_t pieces = (p + SPARSE_PIECE - 1) / SPARSE_PIECE;
    return 8 * ((pieces + 63) / 64);
}

/* Copies the SPARSE_PIECE bytes at `p` to `out`; 1 when they are not all zero. The caller
 * moves its cursor past the copy only then: no branch on the data. (Each part is loaded
 * before it is stored, so `out` may lie at `p`.) */
static inline int piece_put(uint8_t *out, const uint8_t *p) {
#if defined(PLANES_AVX2_CODE)
    __m256i o = _mm256_setzero_si256();
#pragma GCC unroll 8 /* -O2 keeps a loop of 4 otherwise: 38 instructions a piece against 18 */
    for (int j = 0; j < SPARSE_PIECE; j += 32) {
        __m256i x = _mm256_loadu_si256((const __m256i *)(p + j));
        _mm256_storeu_si256((__m256i *)(out + j), x);
        o = _mm256_or_si256(o, x);
    }
    return !_mm256_testz_si256(o, o);
#elif defined(PLANES_SSE2)
    __m128i o = _mm_setzero_si128();
#pragma GCC unroll 8
    for (int j = 0; j < SPARSE_PIECE; j += 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(p + j));
        _mm_storeu_si128((__m128i *)(out + j), x);
        o = _mm_or_si128(o, x);
    }
    return _mm_movemask_epi8(_mm_cmpeq_epi8(o, _mm_setzero_si128())) != 0xffff;
#else
    uint64_t o = 0;
#pragma GCC unroll 16
    for (int j = 0; j < SPARSE_PIECE; j += 8) {
        uint64_t x;
        memcpy(&x, p + j, 8);
        memcpy(out + j, &x, 8);
        o |= x;
    }
    return o != 0;
#endif
}

/* In place: the stored pieces move down over the left-out ones (a piece goes to a multiple of
 * SPARSE_PIECE bytes at or before where it was read, so never part over itself), then the bitmap,
 * kept in `map` meanwhile, after them; the headers stay where they are. */
static size_t sparse(uint8_t *layout, size_t n, size_t k, uint64_t *map) {
    size_t p = n - 8 * k, full = p / SPARSE_PIECE;
    const uint8_t *in = layout + 8 * k;
    uint8_t *out = layout + 8 * k;
    /* A bitmap word per 64 pieces, the pieces in an inner loop: no test of the position for
     * the word's end at every piece. */
    for (size_t w0 = 0; w0 < full; w0 += 64) {
        size_t end = full - w0 < 64 ? full - w0 : 64;
        const uint8_t *q = in + SPARSE_PIECE * w0;
        uint64_t word = 0;
        for (size_t j = 0; j < end; j++) {
            uint64_t nz = (uint64_t)piece_put(out, q + SPARSE_PIECE * j);
            word |= nz << j;
            out += SPARSE_PIECE * nz;
        }
        map[w0 / 64] = word;
    }
    if (p % SPARSE_PIECE) { /* the last piece, shorter */
        const uint8_t *q = in + SPARSE_PIECE * full;
        uint8_t nz = 0;
        for (size_t j = 0; j < p % SPARSE_PIECE; j++)
            nz |= q[j];
        if (full % 64 == 0)
            map[full / 64] = 0;
        if (nz) {
            map[full / 64] |= (uint64_t)1 << (full % 64);
            memmove(out, q, p % SPARSE_PIECE);
            out += p % SPARSE_PIECE;
        }
    }
    size_t bb = sparse_bitmap_bytes(p);
    memcpy(out, map, bb);
    return (size_t)(out + bb - layout);
}

/* Moves a piece from `src` to `dst` (the same place or not overlapping): all of it loaded
 * before any of it is stored, in registers. And zeroes one. Written with vector stores: GCC
 * made the 128-byte memcpy and memset `rep movsq` / `rep stosq` (or a call), which start slowly
 * and which callgrind counts at ~30 instructions a piece. */
static inline void piece_move(uint8_t *dst, const uint8_t *src) {
#if defined(PLANES_AVX2_CODE)
    __m256i x0 = _mm256_loadu_si256((const __m256i *)src + 0),
            x1 = _mm256_loadu_si256((const __m256i *)src + 1),
            x2 = _mm256_loadu_si256((const __m256i *)src + 2),
            x3 = _mm256_loadu_si256((const __m256i *)src + 3);
    _mm256_storeu_si256((__m256i *)dst + 0, x0);
    _mm256_storeu_si256((__m256i *)dst + 1, x1);
    _mm256_storeu_si256((__m256i *)dst + 2, x2);
    _mm256_storeu_si256((__m256i *)dst + 3, x3);
#elif defined(PLANES_SSE2)
    __m128i x[SPARSE_PIECE / 16];
#pragma GCC unroll 8
    for (int j = 0; j < SPARSE_PIECE / 16; j++)
        x[j] = _mm_loadu_si128((const __m128i *)src + j);
#pragma GCC unroll 8
    for (int j = 0; j < SPARSE_PIECE / 16; j++)
        _mm_storeu_si128((__m128i *)dst + j, x[j]);
#else
    uint8_t t[SPARSE_PIECE];
    memcpy(t, src, SPARSE_PIECE);
    memcpy(dst, t, SPARSE_PIECE);
#endif
}

static inline void piece_zero(uint8_t *dst) {
#if defined(PLANES_AVX2_CODE)
    __m256i z = _mm256_setzero_si256();
    _mm256_storeu_si256((__m256i *)dst + 0, z);
    _mm256_storeu_si256((__m256i *)dst + 1, z);
    _mm256_storeu_si256((__m256i *)dst + 2, z);
    _mm256_storeu_si256((__m256i *)dst + 3, z);
#elif defined(PLANES_SSE2)
#pragma GCC unroll 8
    for (int j = 0; j < SPARSE_PIECE / 16; j++)
        _mm_storeu_si128((__m128i *)dst + j, _mm_setzero_si128());
#else
    memset(dst, 0, SPARSE_PIECE);
#endif
}

/* tp_planes_unsparse, returning the number of records (0: refused), with the headers' census
 * taken in their walk when `census` is not NULL (filter 4's decoder). In place, from the last
 * piece back: a stored piece moves up by a multiple of SPARSE_PIECE bytes (or stays), and a
 * left-out piece is zeroed where no piece still to be moved lies (those are all below it).
 * Compiled in both compilations: with AVX2 a piece's move and a left-out piece's zeroing are
 * four 32-byte stores each (two in three pieces are left out on the launch-bound trainer). */
static size_t unsparse(uint8_t *buf, size_t m, size_t n, uint8_t *map, tp_planes_census *census) {
    if (n % 8 || !n)
        return 0;
    size_t k = census ? census_headers_in(buf, m, n, census) : count_headers_in(buf, m, n);
    if (!k)
        return 0;
    size_t p = n - 8 * k, bb = sparse_bitmap_bytes(p),
           pieces = (p + SPARSE_PIECE - 1) / SPARSE_PIECE;
    if (8 * k + bb > m)
        return 0;
    memcpy(map, buf + m - bb, bb); /* the pieces may move over it */
    /* The bitmap must give exactly the m bytes there are, and no piece past the planes. */
    size_t stored = 0;
    for (size_t j = 0; j < bb / 8; j++) {
        uint64_t word;
        memcpy(&word, map + 8 * j, 8);
        if (j == bb / 8 - 1 && pieces % 64 && word >> (pieces % 64))
            return 0;
        stored += (size_t)__builtin_popcountll(word);
    }
    size_t last = p % SPARSE_PIECE, body = SPARSE_PIECE * stored;
    if (last && map[(pieces - 1) / 8] >> ((pieces - 1) % 8) & 1)
        body -= SPARSE_PIECE - last;
    if (8 * k + body + bb != m)
        return 0;
    uint8_t *planes = buf + 8 * k, *in = planes + body;
    size_t i = pieces;
    if (last) { /* the last piece, shorter */
        i--;
        if (map[i / 8] >> (i % 8) & 1) {
            in -= last;
            memmove(planes + SPARSE_PIECE * i, in, last);
        } else {
            memset(planes + SPARSE_PIECE * i, 0, last);
        }
    }
    /* A bitmap word at a time (bit j % 64 of word j / 64 is piece j, as sparse writes them),
     * from its highest stored piece down: the left-out pieces above it are a run zeroed in a
     * loop of their own. A bit test per piece (the byte's load, shift and branch) took ~6
     * instructions of the ~14 a piece outside the stores. Every run is zeroed before the
     * stored piece below it moves, and no piece still to be moved lies in it (the stored
     * pieces below s take at most s pieces' bytes). */
    while (i > 0) {
        size_t lo = (i - 1) & ~(size_t)63;
        uint64_t word;
        memcpy(&word, map + lo / 8, 8);
        word &= ~(uint64_t)0 >> (64 - (i - lo)); /* pieces lo .. i - 1 */
        for (;;) {
            size_t s = word ? lo + 63 - (size_t)__builtin_clzll(word) : lo - 1;
            for (size_t j = s + 1; j < i; j++) /* s = lo - 1 (wraps) when none is stored */
                piece_zero(planes + SPARSE_PIECE * j);
            if (!word)
                break;
            uint8_t *out = planes + SPARSE_PIECE * s;
            in -= SPARSE_PIECE;
            if (in == out) /* every piece below is stored too: all in place */
                return k;
            piece_move(out, in);
            word &= ~((uint64_t)1 << (s - lo));
            i = s;
        }
        i = lo;
    }
    return k;
}

/* tp_planes_decode_sparse_t in this compilation: the census taken in unsparse's header walk. */
static size_t decode_sparse(uint8_t *buf, size_t m, uint8_t *dst, uint8_t *scratch, size_t n,
                            const uint8_t *times, uint64_t *t_hi) {
    col_plan p;
    size_t k = unsparse(buf, m, n, scratch, &p.n);
    return k ? decode_columns_plan(buf, dst, scratch, n, k, &p, times, t_hi) : 0;
}

#ifdef PLANES_AVX2_CODE
size_t tp_planes__sparse_avx2(uint8_t *layout, size_t n, size_t k, uint64_t *map) {
    return sparse(layout, n, k, map);
}

size_t tp_planes__decode_sparse_avx2(uint8_t *buf, size_t m, uint8_t *dst, uint8_t *scratch,
                                     size_t n, const uint8_t *times, uint64_t *t_hi) {
    return decode_sparse(buf, m, dst, scratch, n, times, t_hi);
}
#else
size_t tp_planes_sparse_bound(size_t n, size_t k) {
    return n + sparse_bitmap_bytes(n - 8 * k);
}

size_t tp_planes_sparse(uint8_t *layout, size_t n, size_t k, uint64_t *map) {
#ifdef PLANES_DISPATCH
    if (__builtin_cpu_supports("avx2"))
        return tp_planes__sparse_avx2(layout, n, k, map);
#endif
    return sparse(layout, n, k, map);
}

size_t tp_planes_unsparse(uint8_t *buf, size_t m, size_t n, uint8_t *map) {
    return unsparse(buf, m, n, map, NULL) ? n : 0;
}

size_t tp_planes_decode_sparse_t(uint8_t *buf, size_t m, uint8_t *dst, uint8_t *scratch, size_t n,
                                 const uint8_t *times, uint64_t *t_hi) {
#ifdef PLANES_DISPATCH
    if (__builtin_cpu_supports("avx2"))
        return tp_planes__decode_sparse_avx2(buf, m, dst, scratch, n, times, t_hi);
#endif
    return decode_sparse(buf, m, dst, scratch, n, times, t_hi);
}

size_t tp_planes_decode_sparse(uint8_t *buf, size_t m, uint8_t *dst, uint8_t *scratch, size_t n) {
    return tp_planes_decode_sparse_t(buf, m, dst, scratch, n, NULL, NULL);
}
#endif
