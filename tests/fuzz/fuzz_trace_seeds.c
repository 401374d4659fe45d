/* Writes seed traces for fuzz_trace_reader into the directory given: a small trace with
 * every record type, the same without an index, cut in half, one with records from a
 * "newer writer" (an unknown type, an appended tail), and the first one again with zstd
 * chunks, with lz4 over byte planes (filter 2, format 1.5's layout) and with lz4 over columns
 * and byte planes (filter 3, format 1.6's; the default codec is lz4 over filter 4, the same
 * without the planes' zero pieces; committed seeds in corpus/trace are older zstd traces). Small,
 * so libFuzzer can mutate them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../traces/trace_testutil.h"
#include "tp_writer.h"

static const uint16_t types[] = {
    TP_REC_NVTX_PUSH,  TP_REC_NVTX_POP, TP_REC_NVTX_START, TP_REC_NVTX_END,   TP_REC_NVTX_MARK,
    TP_REC_API,        TP_REC_KERNEL,   TP_REC_MEMCPY,     TP_REC_MEMSET,     TP_REC_SYNC,
    TP_REC_DEVICE_MEM, TP_REC_HEAP,     TP_REC_REGION,     TP_REC_ALLOC_FAIL, TP_REC_COUNTER,
    TP_REC_OVERHEAD,   TP_REC_DROPPED,  TP_REC_SAMPLE};
static const uint16_t meta[] = {
    TP_REC_PROCESS,    TP_REC_THREAD, TP_REC_MODULE, TP_REC_DOMAIN,
    TP_REC_CATEGORY,   TP_REC_DEVICE, TP_REC_STREAM, TP_REC_EXT_CORRELATION,
    TP_REC_CLOCK_SYNC, TP_REC_PYCODE, TP_REC_ENV};

/* Small ids so that record fields hit real strings, stacks and modules when fuzzed. */
static void small_ids(uint8_t *rec) {
    tp_rec_hdr *h = (tp_rec_hdr *)rec;
    for (uint32_t off = 8; off + 4 <= h->size; off += 4)
        if ((h->flags & TP_RF_TIMED) == 0 || off >= (h->flags & TP_RF_INTERVAL ? 24u : 16u))
            rec[off + 1] = rec[off + 2] = rec[off + 3] = 0, rec[off] %= 4;
}

static int write_seed(const char *path, int variant) {
    tp_writer_opts o;
    tp_writer_opts_default(&o);
    o.chunk_bytes = 512;
    o.producer = "fuzz-seed";
    static const char *const codecs[] = {[4] = "zstd", [5] = "lz4-planes", [6] = "lz4-columns"};
    o.codec = codecs[variant]; /* NULL: the default */
    tp_writer *w;
    if (tp_writer_open(path, &o, &w) != TP_OK)
        return 0;
    uint32_t id;
    tp_writer_intern_string(w, "kernel", 6, &id);
    tp_writer_intern_string(w, "main", 4, &id);
    uint64_t frames[4] = {TP_FRAME_MAKE(1, 0x400), TP_FRAME_PY_MAKE(1, 12), TP_FRAME_MAKE(1, 0x800),
                          0x1234};
    tp_writer_intern_stack(w, frames, 4, &id);
    uint64_t seed = 42 + (uint64_t)variant;
    uint8_t rec[128];
    for (size_t i = 0; i < sizeof meta / sizeof meta[0]; i++) {
        tt_fill(rec, meta[i], 100, &seed);
        small_ids(rec);
        tp_writer_write_meta(w, rec);
    }
    tp_stage *s;
    tp_writer_stage_open(w, 1, &s);
    for (int i = 0; i < 40; i++) {
        tt_fill(rec, types[i % (sizeof types / sizeof types[0])], 1000 + 100 * (uint64_t)i, &seed);
        small_ids(rec);
        if (variant == 3 && i % 10 == 0)
            ((tp_rec_hdr *)rec)->type = (uint16_t)(i == 0 ? 60 : 300);
        if (variant == 3 && i % 10 == 5)
            ((tp_rec_hdr *)rec)->size += 8;
        tp_stage_write(s, rec);
    }
    tp_writer_count_drop(w, TP_REC_KERNEL, TP_DROP_CUPTI, 3);
    if (variant == 1) {
        tp_writer_flush(w);
        tp_writer_abandon(w);
        return 1;
    }
    return tp_writer_close(w) == TP_OK;
}

static int cut_half(const char *from, const char *to) {
    size_t n;
    uint8_t *b = tt_read_file(from, &n);
    FILE *f = b ? fopen(to, "wb") : NULL;
    int ok = f && fwrite(b, 1, n / 2, f) == n / 2;
    if (f)
        fclose(f);
    free(b);
    return ok;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: fuzz_trace_seeds DIR\n");
        return 2;
    }
    mkdir(argv[1], 0755); /* may exist already */
    char p[7][4096];
    const char *names[7] = {"seed_full", "seed_noindex",    "seed_cut",        "seed_newer",
                            "seed_zstd", "seed_lz4_planes", "seed_lz4_columns"};
    for (int i = 0; i < 7; i++)
        snprintf(p[i], sizeof p[i], "%s/%s", argv[1], names[i]);
    int ok = write_seed(p[0], 0) && write_seed(p[1], 1) && cut_half(p[0], p[2]) &&
             write_seed(p[3], 3) && write_seed(p[4], 4) && write_seed(p[5], 5) &&
             write_seed(p[6], 6);
    return ok ? 0 : 1;
}
