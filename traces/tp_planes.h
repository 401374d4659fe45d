/* tp_planes: filter 2 of trace format 1.5: the lane-delta filter, then a byte-plane layout;
 * what the writer applies before LZ4.
 *
 * After the lane delta most u64 lanes are small numbers: a few low bytes that change, six or
 * seven zero bytes, interleaved record by record. An LZ-only codec such as LZ4 (no entropy
 * stage) pays a token and an offset for every short match between them (14 B/event on
 * bench_trace's mix). This layout puts the 8-byte record headers first, in order, then the
 * remaining u64 words ("body") as eight planes: byte 0 of every body word, then byte 1, ...
 * byte 7. The high planes are long runs of zeros, which LZ4 stores in a few bytes and copies
 * fast (docs/PERFORMANCE.md, "Chunk codec").
 *
 * Both directions take `n` bytes of well-formed records (or their layout) and write the other
 * form, same length, to a distinct buffer. Spec: docs/trace-format.md, section 4.1. */
#ifndef TP_PLANES_H
#define TP_PLANES_H

#include "tp_record.h"

#include <stddef.h>
#include <stdint.h>

/* Applies the lane-delta filter (tp_chunk.h) to the `n` bytes of records at `src` and writes
 * the plane layout of the result to `dst`; `scratch` holds n bytes (its contents are garbage
 * afterwards). The caller passes well-formed records only (sizes >= 8, multiples of 8,
 * summing to n), as the writer does. All buffers 8-byte aligned, distinct. */
void tp_planes_encode(const uint8_t *src, uint8_t *dst, uint8_t *scratch, size_t n);

/* Undoes tp_planes_encode, lane delta included: writes the records to `dst` (8-byte aligned,
 * distinct from src). The layout has no boundaries to resynchronise on, so the chunk is
 * decoded whole or not at all: returns n when the headers describe exactly n bytes of
 * well-formed records, else 0 (dst then holds garbage). */
size_t tp_planes_decode(const uint8_t *src, uint8_t *dst, size_t n);

/* Filter 3 (format 1.6): as tp_planes_encode, but the body words are in column order first:
 * the records of each type that the lane delta applies to, when all of one size in the chunk,
 * give their lane 1 words in record order, then their lane 2 words, ...; types in increasing
 * order; then the bodies of all other records, in record order (docs/trace-format.md, 4.2).
 * A lane of one type changes in the same way record after record (a correlation id by 1, a
 * stream not at all), so each plane gets long runs where filter 2 had them interleaved with
 * the other lanes: LZ4 finds fewer, longer matches (docs/PERFORMANCE.md, "Chunk codec"). */
void tp_planes_encode_columns(const uint8_t *src, uint8_t *dst, uint8_t *scratch, size_t n);

/* Filter 3's census of a chunk: per record type (below TP_REC_TYPE_LIMIT), how many records
 * and their sizes or-ed and and-ed (equal exactly when all are one size). The encoder needs it
 * to place each type's columns before it can put any body there; a writer that keeps one while
 * it copies the records in (tp_planes_census_add per record, after tp_planes_census_reset)
 * spares the encoder its first walk over the chunk. */
typedef struct {
    uint32_t count[TP_REC_TYPE_LIMIT];
    uint32_t any[TP_REC_TYPE_LIMIT], all[TP_REC_TYPE_LIMIT];
} tp_planes_census;

void tp_planes_census_reset(tp_planes_census *c);

/* Counts one record (from its header) into the census, without a branch on its size. */
static inline void tp_planes_census_add(tp_planes_census *c, uint16_t type, uint32_t size) {
    if (type >= TP_REC_TYPE_LIMIT)
        return;
    c->count[type]++;
    c->any[type] |= size;
    c->all[type] &= size;
}

/* tp_planes_encode_columns with the census of exactly these `n` bytes of well-formed records
 * (the writer's chunk): same output, one walk over the records fewer. */
void tp_planes_encode_columns_census(const uint8_t *src, uint8_t *dst, uint8_t *scratch, size_t n,
                                     const tp_planes_census *census);

/* Undoes tp_planes_encode_columns into `dst`, with `scratch` (n bytes, distinct) for the
 * words; returns n or 0 as tp_planes_decode. */
size_t tp_planes_decode_columns(const uint8_t *src, uint8_t *dst, uint8_t *scratch, size_t n);

/* Filter 4 (format 1.7): filter 3's layout of `n` bytes (k headers, then the planes) with the
 * planes' all-zero 128-byte pieces left out: the k headers, the stored pieces in order (the
 * last piece may be shorter), then a bitmap of the pieces (bit i of u64 word i / 64 set: piece
 * i is stored) (docs/trace-format.md, 4.3). Most of filter 3's plane bytes are long zero runs
 * (the high bytes of small deltas), on which LZ4 still spends about an instruction a byte;
 * without them it reads about half the bytes (docs/PERFORMANCE.md, "Writing, fifth round"). */

/* The most bytes filter 4's form of a layout of n bytes with k headers can take. */
size_t tp_planes_sparse_bound(size_t n, size_t k);

/* Turns the filter-3 layout at `layout` (n bytes, its first k words the headers) into filter
 * 4's form in place (the buffer holds tp_planes_sparse_bound(n, k) bytes); `map` holds
 * tp_planes_sparse_bound(n, k) - n bytes (8-byte aligned) for the bitmap meanwhile. Returns
 * the form's length. */
size_t tp_planes_sparse(uint8_t *layout, size_t n, size_t k, uint64_t *map);

/* Undoes tp_planes_sparse in place: `buf` holds the m bytes of filter 4's form of a chunk of
 * n bytes of records and has room for max(m, n); afterwards its first n bytes are filter 3's
 * layout. `map` holds tp_planes_sparse_bound(n, 0) - n bytes (the bitmap is copied there
 * first). Returns n, or 0 when the headers do not describe n bytes of well-formed records or
 * the pieces and the bitmap do not make exactly m bytes (then `buf` holds garbage). */
size_t tp_planes_unsparse(uint8_t *buf, size_t m, size_t n, uint8_t *map);

/* tp_planes_unsparse of `buf`, then tp_planes_decode_columns of it into `dst` with `scratch`
 * (n bytes, distinct; also the bitmap's copy): the records' headers walked once, not twice.
 * Returns n or 0. */
size_t tp_planes_decode_sparse(uint8_t *buf, size_t m, uint8_t *dst, uint8_t *scratch, size_t n);

/* tp_planes_decode_sparse that also finds the latest time of the records, when `times` is not
 * NULL: times[type] (types below TP_REC_TYPE_LIMIT; the others have none) is how many of a
 * record's first body words are times, 0, 1 (ts) or 2 (ts, end), those past the record's size
 * counting as 0; *t_hi is the OR of all of them over the chunk (0: none), set when n is returned:
 * at least the largest, and under a power of two exactly when the largest is. The reader's
 * late-record limit needs a bound per chunk (a chunk whose bound passes the limit has each
 * record tested, so a bound over the largest costs time, never a record); found as each record
 * is put together it costs ~11 instructions a record (~14 for the exact largest), where a walk
 * of its own over the records cost ~21. */
size_t tp_planes_decode_sparse_t(uint8_t *buf, size_t m, uint8_t *dst, uint8_t *scratch, size_t n,
                                 const uint8_t *times, uint64_t *t_hi);

/* Internal: tp_planes_decode and tp_planes_encode compiled for AVX2 (tp_planes_avx2.c); call
 * them only on a CPU with AVX2. The public functions choose them by themselves. */
size_t tp_planes__decode_avx2(const uint8_t *src, uint8_t *dst, size_t n);
void tp_planes__encode_avx2(const uint8_t *src, uint8_t *dst, uint8_t *scratch, size_t n);
void tp_planes__encode_columns_avx2(const uint8_t *src, uint8_t *dst, uint8_t *scratch, size_t n,
                                    const tp_planes_census *census);
size_t tp_planes__decode_columns_avx2(const uint8_t *src, uint8_t *dst, uint8_t *scratch, size_t n);
size_t tp_planes__sparse_avx2(uint8_t *layout, size_t n, size_t k, uint64_t *map);
size_t tp_planes__decode_sparse_avx2(uint8_t *buf, size_t m, uint8_t *dst, uint8_t *scratch,
                                     size_t n, const uint8_t *times, uint64_t *t_hi);

#endif
