/* tp_chunk: header checksums and the lane-delta filter of trace format v1.
 *
 * The filter subtracts, lane by lane (u64 after the 8-byte record header), the previous
 * record of the same type and size in the chunk. Records of one type written in a row differ
 * in little (a timestamp, a correlation id that grows by one), so the output is mostly zero
 * bytes and small deltas, which the codec (tp_codec.h) shrinks to a few bytes per record. The
 * header lane is left as it is, so the decoder can walk the records and undo the deltas in
 * place. */
#include "tp_chunk.h"

#include <string.h>
#include <libdeflate.h>

/* libdeflate's crc32 is the same CRC-32 as zlib's (values equal byte for byte), and on x86-64
 * it folds 16-64 bytes per step with PCLMULQDQ (chosen at run time, with a portable fallback),
 * where zlib 1.2.13 runs a table per 8 bytes: ~4 instructions per byte, 12 % of the reader's
 * instructions before (docs/PERFORMANCE.md, "Chunk codec"). */
uint32_t tp_chunk_crc(const void *p, size_t n) {
    return libdeflate_crc32(0, p, n);
}

uint32_t tp_chunk_crc_skip(const void *p, size_t n, size_t crc_off) {
    static const uint8_t zero[4];
    const uint8_t *b = p;
    uint32_t c = libdeflate_crc32(0, b, crc_off);
    c = libdeflate_crc32(c, zero, 4);
    return libdeflate_crc32(c, b + crc_off + 4, n - crc_off - 4);
}

int tp_chunk_header_ok(const tp_chunk_header *h) {
    return h->magic == TP_CHUNK_MAGIC &&
           TP_CRC_EQ(tp_chunk_crc_skip(h, sizeof *h, offsetof(tp_chunk_header, header_crc)),
                     h->header_crc);
}

void tp_chunk_header_seal(tp_chunk_header *h) {
    h->header_crc = tp_chunk_crc_skip(h, sizeof *h, offsetof(tp_chunk_header, header_crc));
}

static inline int filtered(uint16_t type) {
    return tp_filter_applies(type);
}

void tp_filter_encode(const uint8_t *src, uint8_t *dst, size_t n) {
    const uint64_t *prev[TP_REC_TYPE_LIMIT] = {0}; /* previous record of each type (source) */
    size_t off = 0;
    while (off + sizeof(tp_rec_hdr) <= n) {
        const tp_rec_hdr *h = (const tp_rec_hdr *)(src + off);
        if (!tp_rec_size_ok(h, n - off))
            break;
        const uint64_t *cur = (const uint64_t *)h, *old = NULL;
        if (filtered(h->type)) {
            old = prev[h->type];
            prev[h->type] = cur;
        }
        if (old && ((const tp_rec_hdr *)old)->size == h->size) {
            uint64_t *out = (uint64_t *)(dst + off);
            out[0] = cur[0];
            for (size_t i = 1; i < h->size / 8; i++)
                out[i] = cur[i] - old[i];
        } else {
            memcpy(dst + off, cur, h->size);
        }
        off += h->size;
    }
    if (off < n) /* malformed tail: the caller never passes one; keep bytes as they are */
        memcpy(dst + off, src + off, n - off);
}

size_t tp_filter_decode(uint8_t *buf, size_t n) {
    uint64_t *prev[TP_REC_TYPE_LIMIT] = {0}; /* previous decoded record of each type */
    size_t off = 0;
    while (off + sizeof(tp_rec_hdr) <= n) {
        tp_rec_hdr *h = (tp_rec_hdr *)(buf + off);
        uint32_t size = h->size;
        if (!tp_rec_size_ok(h, n - off))
            return off;
        if (filtered(h->type)) {
            uint64_t *cur = (uint64_t *)h, *old = prev[h->type];
            if (old && ((const tp_rec_hdr *)old)->size == size)
                for (size_t i = 1; i < size / 8; i++)
                    cur[i] += old[i];
            prev[h->type] = cur;
        }
        off += size;
    }
    return off;
}

size_t tp_filter_decode_none(const uint8_t *buf, size_t n) {
    size_t off = 0;
    while (off + sizeof(tp_rec_hdr) <= n &&
           tp_rec_size_ok((const tp_rec_hdr *)(buf + off), n - off))
        off += ((const tp_rec_hdr *)(buf + off))->size;
    return off;
}
