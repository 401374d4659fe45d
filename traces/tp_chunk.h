/* tp_chunk: the on-disk framing of trace format v1, shared by the writer and the reader.
 *
 * A .tprof file is a 64-byte file header, then chunks (a 64-byte chunk header and its
 * payload, padded to 8 bytes), then an INDEX chunk and a 16-byte trailer. Everything is
 * little-endian; the structs below ARE the layout (checked by static_assert), so this module
 * refuses to build on a big-endian host rather than write files others cannot read.
 *
 * Also here: the lane-delta filter that turns runs of similar fixed-size records into
 * mostly-zero bytes before compression, and the crc32 helpers (libdeflate's, not hand-written).
 * Spec: docs/trace-format.md. */
#ifndef TP_CHUNK_H
#define TP_CHUNK_H

#include <stddef.h>
#include <stdint.h>

#include "tp_record.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "trace format v1 is little-endian and this code writes host structs as they are"
#endif

#define TP_FILE_MAGIC "TPROF\r\n\x1a" /* 8 bytes, no NUL: catches text-mode mangling */
#define TP_FILE_BOM 0x01020304u
#define TP_FILE_VERSION_MAJOR 1
/* 1.1: NVTX stack_id; 1.2: PYCODE and Python frames; 1.3: PROCESS job_id, root_pid, exec_gen;
 * 1.5: codec 2 (lz4) and filter 2 (lane delta, then byte planes); 1.6: filter 3 (lane delta,
 * words grouped by type and lane, then byte planes); 1.7: filter 4 (filter 3 without its
 * all-zero 128-byte pieces); 1.8: SAMPLE records; 1.9: SAMPLE flag TP_SAMPLE_NATIVE */
#define TP_FILE_VERSION_MINOR 9
#define TP_FILE_HEADER_SIZE 64u

/* 'TPCH' and 'TPIX' as the bytes appear in the file, read as little-endian u32. */
#define TP_MAGIC4(a, b, c, d)                                                                      \
    ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)
#define TP_CHUNK_MAGIC TP_MAGIC4('T', 'P', 'C', 'H')
#define TP_TRAILER_MAGIC TP_MAGIC4('T', 'P', 'I', 'X')

/* A chunk's raw (decompressed) payload may not exceed this: bounds reader memory. */
#define TP_CHUNK_RAW_MAX (64u << 20)

typedef struct {
    char magic[8];
    uint32_t bom;
    uint16_t version_major, version_minor;
    uint32_t header_size; /* chunks start here; >= 64 so later minors can append fields */
    uint32_t header_crc;  /* crc32 of header_size bytes with this field zero */
    uint64_t created_realtime_ns;
    char producer[32]; /* NUL padded, not necessarily NUL-terminated */
} tp_file_header;

typedef enum { TP_CHUNK_DATA = 1, TP_CHUNK_META = 2, TP_CHUNK_INDEX = 3 } tp_chunk_kind;
/* The codecs themselves: tp_codec.h. */
typedef enum { TP_CODEC_NONE = 0, TP_CODEC_ZSTD = 1, TP_CODEC_LZ4 = 2 } tp_chunk_codec;
/* LANE_PLANES: the lane-delta filter, then the byte-plane layout (tp_planes.h); LANE_COLUMNS:
 * the same with the body words grouped by type and lane first (1.6); LANE_SPARSE: LANE_COLUMNS
 * with the planes' all-zero 128-byte pieces left out (1.7), so the filtered bytes are fewer than
 * raw_bytes. */
typedef enum {
    TP_FILTER_NONE = 0,
    TP_FILTER_LANE_DELTA = 1,
    TP_FILTER_LANE_PLANES = 2,
    TP_FILTER_LANE_COLUMNS = 3,
    TP_FILTER_LANE_SPARSE = 4
} tp_chunk_filter;

typedef struct {
    uint32_t magic;         /* TP_CHUNK_MAGIC */
    uint16_t kind;          /* tp_chunk_kind */
    uint8_t codec;          /* tp_chunk_codec */
    uint8_t filter;         /* tp_chunk_filter */
    uint32_t payload_bytes; /* stored bytes after this header (then zero padding to 8) */
    uint32_t raw_bytes;     /* after decompression */
    uint32_t record_count;
    uint32_t payload_crc;  /* crc32 of the stored payload */
    uint64_t t_min, t_max; /* over timed records; t_min = UINT64_MAX, t_max = 0 when none */
    uint64_t type_mask;    /* TP_REC_BIT of the types present (types < 64) */
    uint64_t seq;          /* chunk number in the file, from 0 */
    uint32_t header_crc;   /* crc32 of these 64 bytes with this field zero */
    uint32_t reserved;
} tp_chunk_header;

/* INDEX payload: tp_index_head, entry_count tp_index_entry, then u64 records[64] and
 * u64 dropped[64] (per-type totals over all chunks listed). */
typedef struct {
    uint32_t entry_count;
    uint32_t entry_size; /* sizeof(tp_index_entry): later minors may append fields */
} tp_index_head;

typedef struct {
    uint64_t offset; /* of the chunk header */
    uint16_t kind;
    uint16_t reserved0;
    uint32_t record_count;
    uint64_t t_min, t_max;
    uint64_t type_mask;
} tp_index_entry;

typedef struct {
    uint64_t index_offset;
    uint32_t index_bytes; /* header + padded payload of the INDEX chunk */
    uint32_t magic;       /* TP_TRAILER_MAGIC */
} tp_trailer;

static_assert(sizeof(tp_file_header) == TP_FILE_HEADER_SIZE, "file header is 64 bytes");
static_assert(offsetof(tp_file_header, header_crc) == 20, "file header layout");
static_assert(offsetof(tp_file_header, producer) == 32, "file header layout");
static_assert(sizeof(tp_chunk_header) == 64, "chunk header is 64 bytes");
static_assert(offsetof(tp_chunk_header, t_min) == 24, "chunk header layout");
static_assert(offsetof(tp_chunk_header, header_crc) == 56, "chunk header layout");
static_assert(sizeof(tp_index_entry) == 40, "index entry");
static_assert(sizeof(tp_trailer) == 16, "trailer");

/* Compares a computed CRC with a stored one. Fuzzing builds (the libFuzzer convention
 * FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION, set by -DTP_FUZZ=ON) accept every CRC so that
 * mutated inputs reach the decoders behind the checks; never define it in a real build. */
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#define TP_CRC_EQ(computed, stored) ((void)(computed), (void)(stored), 1)
#else
#define TP_CRC_EQ(computed, stored) ((computed) == (stored))
#endif

/* crc32 (the zlib/gzip CRC-32, computed by libdeflate) of `n` bytes. */
uint32_t tp_chunk_crc(const void *p, size_t n);

/* crc32 of a header of `n` bytes whose u32 CRC field at `crc_off` counts as zero. */
uint32_t tp_chunk_crc_skip(const void *p, size_t n, size_t crc_off);

/* Bytes a chunk occupies in the file: header plus payload padded to 8. */
static inline uint64_t tp_chunk_span(const tp_chunk_header *h) {
    return sizeof(tp_chunk_header) + TP_REC_ALIGN((uint64_t)h->payload_bytes);
}

/* 1 when `h` has the chunk magic and a valid header CRC. */
int tp_chunk_header_ok(const tp_chunk_header *h);

/* Seals `h`: computes header_crc. */
void tp_chunk_header_seal(tp_chunk_header *h);

/* Types the lane-delta filter applies to: fixed-size types < 64 (not PAD, STRING, STACK). */
#define TP_FILTER_TYPES                                                                            \
    (~(TP_REC_BIT(TP_REC_PAD) | TP_REC_BIT(TP_REC_STRING) | TP_REC_BIT(TP_REC_STACK)))

/* 1 when the lane-delta filter applies to records of `type`. */
static inline int tp_filter_applies(uint16_t type) {
    return type < TP_REC_TYPE_LIMIT && (TP_FILTER_TYPES >> type & 1);
}

/* Lane-delta filter over `n` bytes of well-formed records (sizes checked by the caller):
 * writes the filtered form of `src` to `dst` (same length, no overlap). */
void tp_filter_encode(const uint8_t *src, uint8_t *dst, size_t n);

/* Undoes the filter in place. Stops at the first record whose size is < 8, not a multiple
 * of 8 or runs past `n`; returns the bytes of well-formed records decoded (== n when all). */
size_t tp_filter_decode(uint8_t *buf, size_t n);

/* Checks record framing without a filter: returns the bytes of well-formed records. */
size_t tp_filter_decode_none(const uint8_t *buf, size_t n);

/* 1 when a record header is well-formed within `avail` bytes. */
static inline int tp_rec_size_ok(const tp_rec_hdr *r, size_t avail) {
    return r->size >= sizeof(tp_rec_hdr) && r->size % 8 == 0 && r->size <= avail;
}

#endif
