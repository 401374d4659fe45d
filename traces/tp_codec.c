/* tp_codec: the chunk codec table (see tp_codec.h). The codecs are libzstd and liblz4 from
 * Debian; this file only adapts their calls to one shape and checks sizes. */
#include "tp_codec.h"

#include "tp_chunk.h"

#include <lz4.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

struct tp_codec_ctx {
    ZSTD_CCtx *zc;
    ZSTD_DCtx *zd;
    LZ4_stream_t *lz; /* kept between chunks: see lz4_compress */
};

typedef struct {
    tp_codec_info info;
    size_t (*bound)(size_t n);
    size_t (*compress)(tp_codec_ctx *x, uint8_t *dst, size_t cap, const uint8_t *src, size_t n,
                       int level);
    /* the bytes decoded into dst (at most cap), or -1 for a damaged payload */
    long (*decompress)(tp_codec_ctx *x, uint8_t *dst, size_t cap, const uint8_t *src, size_t n);
} codec;

/* ------------------------------------------------------------------ none */

static size_t none_bound(size_t n) {
    return n;
}

static size_t none_compress(tp_codec_ctx *x, uint8_t *dst, size_t cap, const uint8_t *src, size_t n,
                            int level) {
    (void)x, (void)level;
    if (n > cap)
        return 0;
    memcpy(dst, src, n);
    return n;
}

static long none_decompress(tp_codec_ctx *x, uint8_t *dst, size_t cap, const uint8_t *src,
                            size_t n) {
    (void)x;
    if (n > cap || n > TP_CHUNK_RAW_MAX)
        return -1;
    memcpy(dst, src, n);
    return (long)n;
}

/* ------------------------------------------------------------------ zstd */

static size_t zstd_bound(size_t n) {
    return ZSTD_compressBound(n);
}

static size_t zstd_compress(tp_codec_ctx *x, uint8_t *dst, size_t cap, const uint8_t *src, size_t n,
                            int level) {
    if (!x->zc && !(x->zc = ZSTD_createCCtx()))
        return 0;
    size_t k = ZSTD_compressCCtx(x->zc, dst, cap, src, n, level);
    return ZSTD_isError(k) ? 0 : k;
}

/* The frame must declare its content size, and one that fits: checked before decoding. */
static long zstd_decompress(tp_codec_ctx *x, uint8_t *dst, size_t cap, const uint8_t *src,
                            size_t n) {
    if (!x->zd && !(x->zd = ZSTD_createDCtx()))
        return -1;
    unsigned long long want = ZSTD_getFrameContentSize(src, n);
    if (want == ZSTD_CONTENTSIZE_UNKNOWN || want == ZSTD_CONTENTSIZE_ERROR || want > cap ||
        want > TP_CHUNK_RAW_MAX)
        return -1;
    size_t k = ZSTD_decompressDCtx(x->zd, dst, (size_t)want, src, n);
    return !ZSTD_isError(k) && k == want ? (long)k : -1;
}

/* ------------------------------------------------------------------ lz4 */

/* LZ4's acceleration per layout. Filter 3's (long runs of each lane; filter 4's too while chunks
 * were 256 KiB, see LZ4_ACCEL_SPARSE): 4, which takes 22 % fewer of LZ4's instructions than
 * LZ4's default of 1 for 4 % more bytes (bench_trace's mix: 4.76 against 4.59 B/event, zstd
 * -1's size); 8 saved 8 % more for as many bytes again (on filter 4 with 256 KiB chunks, 6 and 8
 * give back the bytes it saves: "Writing, fifth round"). Filter 2's
 * (lz4-planes, format 1.5's layout): 1, as in 1.5; its short runs lose more to acceleration
 * (4: 9.89 against 8.81 B/event). docs/PERFORMANCE.md, "Chunk codec". */
#define LZ4_ACCEL_COLUMNS 4
#define LZ4_ACCEL_PLANES 1
/* Filter 4's (the default "lz4"): 6 since the writer's chunks are 1 MiB, whose longer matches
 * more than pay for it: on the launch-bound trainer's records 175.0 drain instructions and
 * 2.69 B a record, against 177.6 and 2.64 at 4 and 183.1 and 2.97 with 256 KiB chunks at 4
 * (8: 173.3 and 2.73; docs/PERFORMANCE.md, "Collector on the trainer, tenth round"). */
#define LZ4_ACCEL_SPARSE 6

static size_t lz4_bound(size_t n) {
    return n <= TP_CHUNK_RAW_MAX ? (size_t)LZ4_compressBound((int)n) : 0;
}

/* One independent block per chunk, as LZ4_compress_fast writes it, from a stream state kept in
 * the context and reset the fast way (no dictionary): LZ4_compress_fast builds a 16 KiB state
 * on the stack and clears it for every call (a 16 KiB memset per chunk: 14 instructions per
 * record in callgrind's count, and 16 KiB of L1 written), where LZ4_resetStream_fast only
 * moves the state's offset on. (LZ4_compress_fast_extState_fastReset would say the same
 * directly, but liblz4.so does not export it.) */
static size_t lz4_compress_at(tp_codec_ctx *x, uint8_t *dst, size_t cap, const uint8_t *src,
                              size_t n, int acceleration) {
    if (n > TP_CHUNK_RAW_MAX || cap > INT32_MAX)
        return 0;
    if (!x->lz && !(x->lz = LZ4_createStream()))
        return 0;
    LZ4_resetStream_fast(x->lz);
    int k = LZ4_compress_fast_continue(x->lz, (const char *)src, (char *)dst, (int)n, (int)cap,
                                       acceleration);
    return k > 0 ? (size_t)k : 0;
}

static size_t lz4_columns_compress(tp_codec_ctx *x, uint8_t *dst, size_t cap, const uint8_t *src,
                                   size_t n, int level) {
    (void)level;
    return lz4_compress_at(x, dst, cap, src, n, LZ4_ACCEL_COLUMNS);
}

static size_t lz4_sparse_compress(tp_codec_ctx *x, uint8_t *dst, size_t cap, const uint8_t *src,
                                  size_t n, int level) {
    (void)level;
    return lz4_compress_at(x, dst, cap, src, n, LZ4_ACCEL_SPARSE);
}

static size_t lz4_planes_compress(tp_codec_ctx *x, uint8_t *dst, size_t cap, const uint8_t *src,
                                  size_t n, int level) {
    (void)level;
    return lz4_compress_at(x, dst, cap, src, n, LZ4_ACCEL_PLANES);
}

/* LZ4_decompress_safe never writes past `cap` nor reads past `n`, whatever the payload. */
static long lz4_decompress(tp_codec_ctx *x, uint8_t *dst, size_t cap, const uint8_t *src,
                           size_t n) {
    (void)x;
    if (cap > TP_CHUNK_RAW_MAX + (TP_CHUNK_RAW_MAX >> 8) || n > INT32_MAX)
        return -1;
    int k = LZ4_decompress_safe((const char *)src, (char *)dst, (int)n, (int)cap);
    return k;
}

/* ------------------------------------------------------------------ the table */

static const codec codecs[] = {
    {{"none", TP_CODEC_NONE, TP_FILTER_LANE_DELTA}, none_bound, none_compress, none_decompress},
    {{"zstd", TP_CODEC_ZSTD, TP_FILTER_LANE_DELTA}, zstd_bound, zstd_compress, zstd_decompress},
    {{"lz4", TP_CODEC_LZ4, TP_FILTER_LANE_SPARSE}, lz4_bound, lz4_sparse_compress, lz4_decompress},
    /* format 1.6's default layout, which 1.6 readers read (they skip filter 4 chunks) */
    {{"lz4-columns", TP_CODEC_LZ4, TP_FILTER_LANE_COLUMNS},
     lz4_bound,
     lz4_columns_compress,
     lz4_decompress},
    /* format 1.5's default layout, which 1.5 readers read (they skip filter 3 chunks) */
    {{"lz4-planes", TP_CODEC_LZ4, TP_FILTER_LANE_PLANES},
     lz4_bound,
     lz4_planes_compress,
     lz4_decompress},
};
#define NCODECS (sizeof codecs / sizeof codecs[0])

static const codec *codec_of(const tp_codec_info *c) {
    return (const codec *)c; /* info is the first member of every row */
}

const tp_codec_info *tp_codec_by_name(const char *name) {
    if (!name)
        name = TP_CODEC_DEFAULT_NAME;
    for (size_t i = 0; i < NCODECS; i++)
        if (!strcmp(codecs[i].info.name, name))
            return &codecs[i].info;
    return NULL;
}

const tp_codec_info *tp_codec_by_id(unsigned id) {
    for (size_t i = 0; i < NCODECS; i++)
        if (codecs[i].info.id == id)
            return &codecs[i].info;
    return NULL;
}

tp_codec_ctx *tp_codec_ctx_open(void) {
    return calloc(1, sizeof(tp_codec_ctx));
}

void tp_codec_ctx_close(tp_codec_ctx *x) {
    if (!x)
        return;
    ZSTD_freeCCtx(x->zc);
    ZSTD_freeDCtx(x->zd);
    LZ4_freeStream(x->lz);
    free(x);
}

size_t tp_codec_bound(const tp_codec_info *c, size_t n) {
    return codec_of(c)->bound(n);
}

size_t tp_codec_compress(tp_codec_ctx *x, const tp_codec_info *c, uint8_t *dst, size_t cap,
                         const uint8_t *src, size_t n, int level) {
    return codec_of(c)->compress(x, dst, cap, src, n, level);
}

int tp_codec_decompress(tp_codec_ctx *x, unsigned id, uint8_t *dst, size_t raw, const uint8_t *src,
                        size_t n) {
    const tp_codec_info *c = tp_codec_by_id(id);
    return c && codec_of(c)->decompress(x, dst, raw, src, n) == (long)raw;
}

int tp_codec_decompress_upto(tp_codec_ctx *x, unsigned id, uint8_t *dst, size_t cap,
                             const uint8_t *src, size_t n, size_t *got) {
    const tp_codec_info *c = tp_codec_by_id(id);
    long k = c ? codec_of(c)->decompress(x, dst, cap, src, n) : -1;
    *got = k < 0 ? 0 : (size_t)k;
    return k >= 0;
}
