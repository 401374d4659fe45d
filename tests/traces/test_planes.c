/* test_planes: filter 2 (lane delta + byte planes, traces/tp_planes.c), filter 3 (the same
 * with the words grouped by type and lane first) and filter 4 (filter 3 without its zero
 * pieces) against reference layouts built here byte by byte from the lane-delta filter's output;
 * every test runs once per filter; round trips over record mixes of every shape (filtered and
 * unfiltered types, one type in two sizes, unknown types, bodies of fewer than 8 words and not a
 * multiple of 8), and layouts that must be refused. The encoder is also checked differentially: on
 * random and crafted mixes (body word counts on each side of the 8/16/32-word transpose blocks,
 * header-only records, one type in two sizes, long bodies, malformed input), its bytes must equal
 * the reference's (filter 3's also when given the census of the records, as the writer does),
 * encoding from and into heap buffers of exactly n bytes (ASan sees any read past the last record).
 * Built three times: as the library runs it (AVX2 where the CPU has it), with TP_PLANES_NO_AVX2
 * (SSE2) and with TP_PLANES_NO_SIMD (the portable code). */
#include "tp_chunk.h"
#include "tp_planes.h"
#include "tp_test.h"
#include "trace_testutil.h"

#define MAXB (64u << 10)

static uint8_t src[MAXB], filt[MAXB], want[MAXB], got[MAXB], scratch[MAXB];
static int columns; /* the filter under test: 0 = filter 2, 1 = filter 3 */

static void encode(const uint8_t *in, uint8_t *out, uint8_t *tmp, size_t n) {
    if (columns)
        tp_planes_encode_columns(in, out, tmp, n);
    else
        tp_planes_encode(in, out, tmp, n);
}

/* tp_planes_decode into a heap buffer of exactly n bytes (malloc(0) aside), so that ASan
 * sees any read or write past the chunk. Returns the decoded length; the bytes are left in
 * *out (freed by the next call). */
static size_t decode(const uint8_t *layout, size_t n, uint8_t **out) {
    static uint8_t *buf;
    free(buf);
    buf = malloc(n ? n : 1);
    memset(buf, 0xee, n);
    *out = buf;
    if (!columns)
        return tp_planes_decode(layout, buf, n);
    uint8_t *words = malloc(n ? n : 1); /* exactly n bytes, too */
    size_t d = tp_planes_decode_columns(layout, buf, words, n);
    free(words);
    return d;
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
        if (shape == 4 && i % 3 == 0)
            t = types[i % 2]; /* runs of API, KERNEL */
        /* 3: bodies of many pieces; 4: each type in one size (filter 3's groups) */
        static const uint32_t max_words[] = {12, 12, 2, 80, 12};
        uint32_t size = 8 * (1 + (uint32_t)(tt_rand(seed) % max_words[shape]));
        if (shape == 0)
            size = t == TP_REC_API ? 64 : 96;
        if (shape == 4)
            size = 8 * (1 + t % 13);
        if (n + size > MAXB)
            break;
        n += put(src + n, t, size, seed, i);
    }
    return n;
}

/* Filter 3's grouping (docs/trace-format.md 4.2): the size of every record of `type` in the
 * chunk when the lane delta applies to it and they all have one size; else 0. */
static uint32_t group_size(size_t n, uint16_t type) {
    uint32_t size = 0;
    if (!tp_filter_applies(type))
        return 0;
    for (size_t off = 0; off < n; off += ((tp_rec_hdr *)(filt + off))->size) {
        const tp_rec_hdr *h = (const tp_rec_hdr *)(filt + off);
        if (h->type != type)
            continue;
        if (size && h->size != size)
            return 0;
        size = h->size;
    }
    return size;
}

/* The layout as docs/trace-format.md section 4.1 (4.2 for filter 3) says, from the lane-delta
 * filter's output. */
static void reference(size_t n) {
    tp_filter_encode(src, filt, n);
    size_t k = 0, nw = 0;
    static uint64_t words[MAXB / 8];
    for (size_t off = 0; off < n; off += ((tp_rec_hdr *)(filt + off))->size)
        memcpy(want + 8 * k++, filt + off, 8);
    for (uint16_t t = 0; columns && t < 64; t++) { /* the groups, lane by lane */
        uint32_t size = group_size(n, t);
        for (uint32_t lane = 1; lane < size / 8; lane++)
            for (size_t off = 0; off < n; off += ((tp_rec_hdr *)(filt + off))->size)
                if (((tp_rec_hdr *)(filt + off))->type == t)
                    memcpy(words + nw++, filt + off + 8 * lane, 8);
    }
    for (size_t off = 0; off < n; off += ((tp_rec_hdr *)(filt + off))->size) {
        const tp_rec_hdr *h = (const tp_rec_hdr *)(filt + off);
        if (columns && h->type < 64 && group_size(n, h->type))
            continue;
        memcpy(words + nw, filt + off + 8, h->size - 8);
        nw += h->size / 8 - 1;
    }
    for (size_t b = 0; b < 8; b++)
        for (size_t j = 0; j < nw; j++)
            want[8 * k + b * nw + j] = (uint8_t)(words[j] >> (8 * b));
}

static void round_trip(int shape, size_t records, uint64_t seed) {
    size_t n = make_mix(shape, records, &seed);
    reference(n);
    encode(src, got, scratch, n);
    CHECK(memcmp(got, want, n) == 0);
    uint8_t *back;
    CHECK_EQ_U(decode(got, n, &back), n);
    CHECK(memcmp(back, src, n) == 0);
}

static void test_round_trips(void) {
    for (size_t records = 1; records < 40; records++)
        for (int shape = 0; shape < 5; shape++)
            round_trip(shape, records, 7 + records);
    round_trip(0, 600, 1);
    round_trip(1, 3000, 2);
    round_trip(2, 5000, 3);
    round_trip(3, 400, 4);
    round_trip(4, 3000, 5);
}

/* tp_planes_encode of src[0..n) from and into heap buffers of exactly n bytes, against the
 * reference (or, for input that is not well-formed records, against the bytes unchanged). */
static void differential(size_t n, int well_formed) {
    if (well_formed)
        reference(n);
    else
        memcpy(want, src, n);
    uint8_t *in = malloc(n ? n : 1), *out = malloc(n ? n : 1), *tmp = malloc(n ? n : 1);
    memcpy(in, src, n);
    memset(out, 0xee, n);
    encode(in, out, tmp, n);
    CHECK(memcmp(out, want, n) == 0);
    CHECK(memcmp(in, src, n) == 0); /* the source is left as it was */
    if (well_formed) {
        uint8_t *back;
        CHECK_EQ_U(decode(out, n, &back), n);
        CHECK(memcmp(back, src, n) == 0);
    }
    if (columns && well_formed) { /* the writer's way: the census counted as records came in */
        tp_planes_census census;
        tp_planes_census_reset(&census);
        for (size_t off = 0; off < n;) {
            tp_rec_hdr h;
            memcpy(&h, src + off, sizeof h);
            tp_planes_census_add(&census, h.type, h.size);
            off += h.size;
        }
        memset(out, 0xee, n);
        tp_planes_encode_columns_census(in, out, tmp, n, &census);
        CHECK(memcmp(out, want, n) == 0);
    }
    free(in);
    free(out);
    free(tmp);
}

/* Records of `type` (and `size`), `count` of them, appended at src + n; returns the new n. */
static size_t append_run(size_t n, uint16_t type, uint32_t size, size_t count, uint64_t *seed) {
    for (size_t i = 0; i < count && n + size <= MAXB; i++)
        n += put(src + n, type, size, seed, i);
    return n;
}

static void test_encode_differential(void) {
    uint64_t seed = 11;
    /* Random mixes: every shape, lengths from one record to a full buffer. */
    for (int r = 0; r < 400; r++) {
        size_t records = 1 + tt_rand(&seed) % (r < 300 ? 70 : 3000);
        differential(make_mix((int)(tt_rand(&seed) % 5), records, &seed), 1);
    }
    /* Body word counts 0..200, so that every tail of the 32-, 16- and 8-word blocks occurs:
     * one-word records of a filtered type (deltas), of an unknown one (copies), and words
     * spread over records of 3 and 5 words, with header-only records between them. */
    static const uint16_t kinds[] = {TP_REC_API, 200, TP_REC_KERNEL};
    for (size_t nw = 0; nw <= 200; nw++)
        for (int kind = 0; kind < 3; kind++) {
            size_t n = 0;
            if (kind < 2)
                n = append_run(0, kinds[kind], 16, nw, &seed);
            else {
                size_t left = nw;
                n = append_run(n, TP_REC_NVTX_POP, 8, 1, &seed);
                for (size_t i = 0; left; i++) {
                    uint32_t words = left >= 5 && i % 2 ? 5 : left >= 3 ? 3 : (uint32_t)left;
                    n = append_run(n, kinds[2], 8 * (words + 1), 1, &seed);
                    n = append_run(n, TP_REC_NVTX_POP, 8, i % 3 == 0, &seed);
                    left -= words;
                }
            }
            differential(n, 1);
        }
    /* One type in two sizes, alternating (the delta applies only between equal sizes), and
     * bodies of 31..34 words (AVX2 and SSE2 pieces and their tails). */
    for (uint32_t w = 1; w <= 34; w++) {
        size_t n = 0;
        for (int i = 0; i < 20; i++)
            n = append_run(n, TP_REC_API, 8 * (1 + (i % 3 ? w : 2)), 1, &seed);
        differential(n, 1);
    }
    /* Filter 3's groups of every body length from 0 to 20 words (its lanes are written out up to
     * 12, looped past that), with another group and an unfiltered type between them. */
    for (uint32_t w = 0; w <= 20; w++) {
        size_t n = 0;
        for (int i = 0; i < 7; i++) {
            n = append_run(n, TP_REC_KERNEL, 8 * (w + 1), 1 + (size_t)i % 2, &seed);
            n = append_run(n, i % 3 ? TP_REC_API : 200, 8 * (1 + (w + 3) % 7), 1, &seed);
        }
        differential(n, 1);
    }
    /* A chunk of header-only records, and the empty chunk. */
    differential(append_run(0, TP_REC_NVTX_POP, 8, 100, &seed), 1);
    differential(0, 1);
    /* Not well-formed: a size of 0, one not a multiple of 8, one past the end. The encoder
     * keeps the bytes as they are (the writer never passes such input). */
    static const uint32_t bad[] = {0, 4, 20, 1u << 20};
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++)
        for (int at = 0; at < 3; at++) {
            size_t n = make_mix(1, 30, &seed), off = 0;
            for (int i = 0; i < 10 * at; i++)
                off += ((tp_rec_hdr *)(src + off))->size;
            ((tp_rec_hdr *)(src + off))->size = bad[b];
            differential(n, 0);
        }
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
    encode(src, got, scratch, n);
    size_t k = 200, nw = n / 8 - k, zeros = 0;
    for (size_t j = 3 * nw; j < 8 * nw; j++)
        zeros += got[8 * k + j] == 0;
    CHECK(zeros > 5 * nw - 5 * 14); /* only the first record of each type is stored whole */
}

/* Headers that do not describe the chunk exactly: refused, never read out of bounds. */
static void test_refused(void) {
    uint64_t seed = 9;
    size_t n = make_mix(1, 50, &seed);
    encode(src, got, scratch, n);
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

/* ------------------------------------------------------------------ filter 4 */

#define PIECE 128 /* docs/trace-format.md 4.3 */

/* Filter 4's form of filter 3's layout `want` (n bytes, k headers) as docs/trace-format.md
 * section 4.3 says: the headers, the planes' PIECE-byte pieces that are not all zero in order
 * (the last one as long as it is), then one bit a piece, in u64 words. Returns its length. */
static size_t sparse_reference(const uint8_t *layout, size_t n, size_t k, uint8_t *out) {
    size_t p = n - 8 * k, pieces = (p + PIECE - 1) / PIECE, m = 8 * k;
    memcpy(out, layout, 8 * k);
    static uint8_t bits[MAXB / PIECE / 8 + 8];
    memset(bits, 0, sizeof bits);
    for (size_t i = 0; i < pieces; i++) {
        size_t len = p - PIECE * i < PIECE ? p - PIECE * i : PIECE, z = 1;
        for (size_t j = 0; j < len; j++)
            z &= layout[8 * k + PIECE * i + j] == 0;
        if (z)
            continue;
        memcpy(out + m, layout + 8 * k + PIECE * i, len);
        m += len;
        bits[i / 8] |= (uint8_t)(1u << (i % 8));
    }
    size_t bb = 8 * ((pieces + 63) / 64);
    memcpy(out + m, bits, bb);
    return m + bb;
}

static size_t records_in(size_t n) {
    size_t k = 0;
    for (size_t off = 0; off < n; off += ((tp_rec_hdr *)(src + off))->size)
        k++;
    return k;
}

/* tp_planes_unsparse of form[0..m) in a heap buffer of exactly max(m, n) bytes, with a bitmap
 * scratch of exactly its size (ASan sees any access past either); the layout to `layout`. */
static size_t unsparse(const uint8_t *form, size_t m, size_t n, uint8_t *layout) {
    size_t room = m > n ? m : n, mapb = tp_planes_sparse_bound(n, 0) - n;
    uint8_t *buf = malloc(room ? room : 1), *map = malloc(mapb ? mapb : 1);
    memcpy(buf, form, m);
    size_t d = tp_planes_unsparse(buf, m, n, map);
    if (d)
        memcpy(layout, buf, n);
    free(buf);
    free(map);
    return d;
}

/* The bound of the records' times src[0..n) as tp_planes_decode_sparse_t defines it, the OR of
 * per record the first times[type] body words (none for types past the table), those within
 * the record. */
static uint64_t t_hi_reference(size_t n, const uint8_t *times) {
    uint64_t hi = 0;
    for (size_t off = 0; off < n; off += ((tp_rec_hdr *)(src + off))->size) {
        const tp_rec_hdr *h = (const tp_rec_hdr *)(src + off);
        unsigned nt = h->type < TP_REC_TYPE_LIMIT ? times[h->type] : 0;
        for (unsigned j = 0; j < nt && 8 * (j + 2) <= h->size; j++) {
            uint64_t v;
            memcpy(&v, src + off + 8 * (j + 1), 8);
            hi |= v;
        }
    }
    return hi;
}

static size_t sparse_len; /* the form's length from the last sparse_check */
static uint8_t form_got[MAXB + MAXB / 512 + 64], back_layout[MAXB];

/* The encoder's form of src[0..n) against the reference; then back to the layout and the
 * records. Leaves the form in `got` and its length in sparse_len. */
static void sparse_check(size_t n) {
    sparse_len = 0;
    size_t k = records_in(n);
    reference(n); /* filter 3's layout, in want */
    static uint8_t ref[MAXB + MAXB / 512 + 64];
    size_t mref = sparse_reference(want, n, k, ref);
    size_t bound = tp_planes_sparse_bound(n, k);
    CHECK(mref <= bound);
    uint8_t *buf = malloc(bound ? bound : 1), *map = malloc(bound - n ? bound - n : 1);
    uint8_t *tmp = malloc(n ? n : 1);
    tp_planes_encode_columns(src, buf, tmp, n);
    size_t m = tp_planes_sparse(buf, n, k, (uint64_t *)map);
    CHECK_EQ_U(m, mref);
    CHECK(memcmp(buf, ref, m) == 0);
    memcpy(form_got, buf, m);
    sparse_len = m;
    if (n) {
        uint8_t *back;
        CHECK_EQ_U(unsparse(form_got, m, n, back_layout), n);
        CHECK(memcmp(back_layout, want, n) == 0);
        CHECK_EQ_U(decode(back_layout, n, &back), n);
        CHECK(memcmp(back, src, n) == 0);
        /* the reader's way: both steps in one */
        uint8_t *in = malloc(m > n ? m : n), *words = malloc(n), *recs = malloc(n);
        memcpy(in, form_got, m);
        CHECK_EQ_U(tp_planes_decode_sparse(in, m, recs, words, n), n);
        CHECK(memcmp(recs, src, n) == 0);
        /* and with the latest time (the reader's late limit), each type with 0, 1 and 2 time
         * words in turn; ASan sees a time word read past the last record */
        for (unsigned variant = 0; variant < 3; variant++) {
            uint8_t times[TP_REC_TYPE_LIMIT];
            for (unsigned t = 0; t < TP_REC_TYPE_LIMIT; t++)
                times[t] = (uint8_t)((t + variant) % 3);
            uint64_t t_hi = ~0ull;
            memcpy(in, form_got, m);
            CHECK_EQ_U(tp_planes_decode_sparse_t(in, m, recs, words, n, times, &t_hi), n);
            CHECK(memcmp(recs, src, n) == 0);
            CHECK(t_hi == t_hi_reference(n, times));
        }
        free(in);
        free(words);
        free(recs);
    }
    free(buf);
    free(map);
    free(tmp);
}

static void test_sparse(void) {
    uint64_t seed = 21;
    columns = 1;
    /* Random mixes, every shape; the planes of these lengths end in pieces of every length. */
    for (int r = 0; r < 300; r++) {
        size_t records = 1 + tt_rand(&seed) % (r < 200 ? 70 : 3000);
        sparse_check(make_mix((int)(tt_rand(&seed) % 5), records, &seed));
    }
    /* Steady lanes (most pieces zero), runs of 0..300 records: every count of pieces and of
     * bitmap words up to 2, stored and left-out last pieces. */
    size_t saw_short = 0;
    for (size_t count = 1; count <= 300; count++) {
        size_t n = 0;
        for (size_t i = 0; i < count; i++) {
            uint64_t v[4] = {1000 * i, 1000 * i + 500, i, count % 3 ? 7 : i * i};
            tp_rec_hdr h = {i % 4 ? TP_REC_KERNEL : TP_REC_API, 0, i % 4 ? 40 : 24};
            memcpy(src + n, &h, 8);
            memcpy(src + n + 8, v, h.size - 8);
            n += h.size;
        }
        sparse_check(n);
        CHECK(sparse_len < n || count < 8);
        saw_short += (n - 8 * count) % PIECE != 0;
    }
    CHECK(saw_short > 200);
    sparse_check(append_run(0, TP_REC_NVTX_POP, 8, 100, &seed)); /* headers only: no planes */
    /* Refused: every length but the right one, a stored piece dropped from the bitmap, a bit
     * past the last piece, a record size that no longer adds up. */
    size_t n = make_mix(4, 400, &seed), k = records_in(n);
    sparse_check(n);
    size_t m = sparse_len;
    CHECK(m > 0);
    static uint8_t form[MAXB + MAXB / 512 + 64];
    memcpy(form, form_got, m);
    for (size_t d = 8; d <= 64; d += 8) {
        CHECK_EQ_U(unsparse(form, m - d, n, back_layout), 0);
        CHECK_EQ_U(unsparse(form, m + d < sizeof form ? m + d : m - 8, n, back_layout), 0);
    }
    size_t pieces = (n - 8 * k + PIECE - 1) / PIECE, bb = 8 * ((pieces + 63) / 64);
    uint8_t *bits = form + m - bb;
    for (size_t i = 0; i < pieces; i++)
        if (bits[i / 8] >> (i % 8) & 1) {
            bits[i / 8] ^= (uint8_t)(1u << (i % 8));
            CHECK_EQ_U(unsparse(form, m, n, back_layout), 0);
            bits[i / 8] ^= (uint8_t)(1u << (i % 8));
            break;
        }
    if (pieces % 64) {
        bits[bb - 1] |= 0x80;
        CHECK_EQ_U(unsparse(form, m, n, back_layout), 0);
        bits[bb - 1] &= 0x7f;
    }
    CHECK_EQ_U(unsparse(form, m, n, back_layout), n);
    CHECK_EQ_U(unsparse(form, m, n + 8, back_layout), 0);
    CHECK_EQ_U(unsparse(form, m, n - 4, back_layout), 0);
    /* Random bytes: taken whole or refused, within bounds (ASan watches). */
    for (int r = 0; r < 2000; r++) {
        size_t len = 8 * (1 + tt_rand(&seed) % 64), want_n = 8 * (1 + tt_rand(&seed) % 80);
        for (size_t j = 0; j < len; j++)
            form[j] = (uint8_t)(tt_rand(&seed) % 4 ? 0 : tt_rand(&seed));
        for (size_t j = 0; j < len; j += 8) /* plausible sizes, sometimes */
            if (tt_rand(&seed) % 2)
                form[j + 4] = (uint8_t)(8 * (1 + tt_rand(&seed) % 4)), form[j + 5] = 0;
        size_t d = unsparse(form, len, want_n, back_layout);
        CHECK(d == 0 || d == want_n);
    }
}

int main(void) {
    TP_RUN(test_sparse);
    for (columns = 0; columns < 2; columns++) {
        TP_RUN(test_round_trips);
        TP_RUN(test_encode_differential);
        TP_RUN(test_high_planes_zero);
        TP_RUN(test_refused);
    }
    return tp_test_summary();
}
