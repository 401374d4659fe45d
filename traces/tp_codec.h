/* tp_codec: the chunk codecs of the trace format, as one table (codec field of the chunk
 * header): none, zstd, lz4.
 *
 * Each codec names the filter the writer puts in front of it: zstd's entropy stage does best
 * on the lane-delta form itself; LZ4 has no entropy stage and needs the byte-plane layout
 * (tp_planes.h) to find long runs. Which one is the default, and why, is measured in
 * docs/PERFORMANCE.md ("Chunk codec"). The state a codec needs (zstd contexts) lives in a
 * tp_codec_ctx, one per writer, reader and cursor, so they stay independent. */
#ifndef TP_CODEC_H
#define TP_CODEC_H

#include <stddef.h>
#include <stdint.h>

typedef struct tp_codec_ctx tp_codec_ctx;

typedef struct {
    const char *name; /* "none", "zstd", "lz4": TRAINPROF_CODEC, bench_trace -C */
    uint8_t id;       /* tp_chunk_codec */
    uint8_t filter;   /* tp_chunk_filter the writer applies first */
} tp_codec_info;

/* The writer's codec when nobody chooses: LZ4 over byte planes. */
#define TP_CODEC_DEFAULT_NAME "lz4"

/* The codec called `name` (NULL = the default), or NULL when there is none of that name. */
const tp_codec_info *tp_codec_by_name(const char *name);

/* The codec with chunk-header id `id`, or NULL for an id this build does not know. */
const tp_codec_info *tp_codec_by_id(unsigned id);

/* A context for compressing and decompressing; NULL on out-of-memory. Codec state is made
 * when a codec first needs it. */
tp_codec_ctx *tp_codec_ctx_open(void);

/* Frees `x`; NULL is a no-op. */
void tp_codec_ctx_close(tp_codec_ctx *x);

/* The most bytes compressing `n` bytes with `c` may produce (the size of `dst` to pass). */
size_t tp_codec_bound(const tp_codec_info *c, size_t n);

/* Compresses `n` bytes (n <= TP_CHUNK_RAW_MAX) into `dst` of `cap` bytes; `level` is zstd's
 * (other codecs ignore it). Returns the compressed size, or 0 when the codec failed (also
 * out-of-memory for its state); the caller then stores the bytes uncompressed. */
size_t tp_codec_compress(tp_codec_ctx *x, const tp_codec_info *c, uint8_t *dst, size_t cap,
                         const uint8_t *src, size_t n, int level);

/* Decompresses a payload of `n` bytes coded with codec id `id` into `dst`, which holds `raw`
 * bytes. Returns 1 only when the payload is valid and yields exactly `raw` bytes; 0 for
 * unknown ids, damaged payloads and out-of-memory. Never reads or writes out of bounds,
 * whatever the payload holds. */
int tp_codec_decompress(tp_codec_ctx *x, unsigned id, uint8_t *dst, size_t raw, const uint8_t *src,
                        size_t n);

/* The same for a payload whose decoded length is not raw_bytes (filter 4's): decodes at most
 * `cap` bytes and sets *got to their number. Returns 1 when the payload is valid and fits. */
int tp_codec_decompress_upto(tp_codec_ctx *x, unsigned id, uint8_t *dst, size_t cap,
                             const uint8_t *src, size_t n, size_t *got);

#endif
