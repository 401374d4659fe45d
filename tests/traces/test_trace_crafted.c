/* Crafted footers: a valid trace whose INDEX chunk is rewritten with lies and resealed (both
 * CRCs recomputed), so only the reader's cross-checks can notice. The reader must ignore such
 * an index, say so, and count the records by scanning; `trainprof info` (argv[1], optional)
 * must print the true counts and no "integrity: ok". A resealed but unchanged index is kept. */
#include <fcntl.h>
#include <sys/wait.h>

#include "tp_chunk.h"
#include "tp_codec.h"
#include "tp_reader.h"
#include "tp_test.h"
#include "tp_writer.h"
#include "trace_testutil.h"

#define NREC 300

static uint8_t *file;
static size_t file_size;
static const char *prog;

/* NREC kernels and NREC/2 API calls over several chunks. */
static void write_trace(const char *path) {
    tp_writer_opts o;
    tp_writer_opts_default(&o);
    o.chunk_bytes = 4096;
    tp_writer *w;
    CHECK_OK(tp_writer_open(path, &o, &w));
    tp_stage *s;
    CHECK_OK(tp_writer_stage_open(w, 9, &s));
    uint64_t seed = 5;
    for (int i = 0; i < NREC; i++) {
        tp_rec_kernel k;
        tt_fill(&k, TP_REC_KERNEL, 1000000u + 1000u * (uint64_t)i, &seed);
        CHECK(tp_stage_write(s, &k));
        if (i % 2 == 0) {
            tp_rec_api a;
            tt_fill(&a, TP_REC_API, 1000000u + 1000u * (uint64_t)i, &seed);
            CHECK(tp_stage_write(s, &a));
        }
    }
    CHECK_OK(tp_writer_close(w));
}

/* The raw payload of the file's INDEX chunk (decompressed when the writer compressed it). */
typedef struct {
    uint8_t *payload;
    size_t len;
    tp_index_head head;
} index_view;

/* Address of records[type] (dropped = 0) or dropped[type] (dropped = 1) in the payload. */
static uint8_t *total_at(const index_view *v, int dropped, int type) {
    size_t at = sizeof v->head + (size_t)v->head.entry_count * v->head.entry_size;
    return v->payload + at + (dropped ? 8u * TP_REC_TYPE_LIMIT : 0) + 8u * (size_t)type;
}

static uint64_t get64(const uint8_t *p) {
    uint64_t x;
    memcpy(&x, p, 8);
    return x;
}

static void put64(uint8_t *p, uint64_t x) {
    memcpy(p, &x, 8);
}

typedef void (*patch_fn)(index_view *v);

/* An unchanged index, rewritten uncompressed: still trusted (the forging itself is sound). */
static void patch_nothing(index_view *v) {
    (void)v;
}

/* Sum of all totals wraps to 2^64 - 64 (what `info` printed as its record count). */
static void patch_wrap(index_view *v) {
    uint64_t total = 0;
    for (int t = 0; t < TP_REC_TYPE_LIMIT; t++)
        total += get64(total_at(v, 0, t));
    uint8_t *k = total_at(v, 0, TP_REC_KERNEL);
    put64(k, get64(k) + (UINT64_MAX - 63 - total));
}

/* Records moved to a type no chunk holds (the sum still matches). */
static void patch_phantom_type(index_view *v) {
    uint8_t *k = total_at(v, 0, TP_REC_KERNEL), *m = total_at(v, 0, TP_REC_MEMSET);
    put64(k, get64(k) - 10);
    put64(m, get64(m) + 10);
}

/* Drops claimed without a single DROPPED record. */
static void patch_drops(index_view *v) {
    put64(total_at(v, 1, TP_REC_KERNEL), 1000000);
}

/* An entry whose time range is not its chunk's (a window query would skip real data). */
static void patch_entry_time(index_view *v) {
    tp_index_entry e;
    uint8_t *at = v->payload + sizeof v->head + v->head.entry_size; /* the second entry */
    memcpy(&e, at, sizeof e);
    e.t_max += 1000000000u;
    memcpy(at, &e, sizeof e);
}

/* The file with its index replaced by a patched copy, stored uncompressed and resealed
 * (payload CRC, header CRC, trailer) as a careful forger would. NULL when the file's own
 * footer cannot be read. */
static uint8_t *craft(patch_fn patch, size_t *size) {
    tp_trailer tr;
    memcpy(&tr, file + file_size - sizeof tr, sizeof tr);
    if (tr.magic != TP_TRAILER_MAGIC || tr.index_offset + sizeof(tp_chunk_header) > file_size)
        return NULL;
    tp_chunk_header h;
    memcpy(&h, file + tr.index_offset, sizeof h);
    const uint8_t *stored = file + tr.index_offset + sizeof h;
    index_view v = {malloc(h.raw_bytes), h.raw_bytes, {0, 0}};
    tp_codec_ctx *cx = tp_codec_ctx_open();
    int ok = tp_codec_decompress(cx, h.codec, v.payload, v.len, stored, h.payload_bytes);
    tp_codec_ctx_close(cx);
    if (!ok) {
        free(v.payload);
        return NULL;
    }
    memcpy(&v.head, v.payload, sizeof v.head);
    patch(&v);
    h.codec = TP_CODEC_NONE;
    h.payload_bytes = (uint32_t)v.len;
    h.payload_crc = tp_chunk_crc(v.payload, v.len);
    tp_chunk_header_seal(&h);
    size_t pad = TP_REC_ALIGN(v.len) - v.len;
    *size = tr.index_offset + sizeof h + v.len + pad + sizeof tr;
    uint8_t *out = calloc(1, *size), *p = out + tr.index_offset;
    memcpy(out, file, tr.index_offset);
    memcpy(p, &h, sizeof h);
    memcpy(p + sizeof h, v.payload, v.len);
    tr.index_bytes = (uint32_t)(sizeof h + v.len + pad);
    memcpy(p + tr.index_bytes, &tr, sizeof tr);
    free(v.payload);
    return out;
}

/* Opens a patched copy and checks that the lie was caught and the true counts reported. */
static void check_patch(patch_fn patch) {
    size_t size;
    uint8_t *buf = craft(patch, &size);
    CHECK(buf != NULL);
    tp_reader *r;
    CHECK_OK(tp_reader_open_mem(buf, size, &r));
    const tp_integrity *g = tp_reader_integrity(r);
    CHECK_EQ_U(g->index_ok, 0);
    CHECK_EQ_U(g->index_bad, 1);
    CHECK_EQ_U(g->chunks_bad, 0);
    CHECK(strstr(g->message, "index") != NULL);
    const tp_trace_info *in = tp_reader_info(r);
    CHECK_EQ_U(in->records[TP_REC_KERNEL], NREC);
    CHECK_EQ_U(in->records[TP_REC_API], NREC / 2);
    CHECK_EQ_U(in->records[TP_REC_MEMSET], 0);
    CHECK_EQ_U(in->dropped_total, 0);
    CHECK(in->records_total >= NREC + NREC / 2 && in->records_total < 2 * NREC);
    tp_reader_close(r);
    free(buf);
}

static void test_wrapping_totals(void) {
    check_patch(patch_wrap);
}

static void test_phantom_type(void) {
    check_patch(patch_phantom_type);
}

static void test_phantom_drops(void) {
    check_patch(patch_drops);
}

static void test_entry_time(void) {
    check_patch(patch_entry_time);
}

/* The same index resealed unchanged: trusted, same counts, no message. */
static void test_intact(void) {
    size_t size;
    uint8_t *buf = craft(patch_nothing, &size);
    CHECK(buf != NULL);
    tp_reader *r;
    CHECK_OK(tp_reader_open_mem(buf, size, &r));
    const tp_integrity *g = tp_reader_integrity(r);
    CHECK_EQ_U(g->index_ok, 1);
    CHECK_EQ_U(g->index_bad, 0);
    CHECK_STR(g->message, "");
    CHECK_EQ_U(tp_reader_info(r)->records[TP_REC_KERNEL], NREC);
    tp_reader_close(r);
    free(buf);
}

static void slurp(const char *path, char *buf, size_t n) {
    FILE *f = fopen(path, "r");
    size_t k = f ? fread(buf, 1, n - 1, f) : 0;
    buf[k] = '\0';
    if (f)
        fclose(f);
}

/* `trainprof info` on the wrapped-totals file: true count, the damage said once on stderr. */
static void test_info_cli(void) {
    if (!prog)
        TP_FAIL_("%s", "no trainprof binary given");
    char path[256], out[256], err[256];
    tt_temp_path(path, sizeof path, "crafted");
    tt_temp_path(out, sizeof out, "crafted_out");
    tt_temp_path(err, sizeof err, "crafted_err");
    size_t size;
    uint8_t *buf = craft(patch_wrap, &size);
    CHECK(buf != NULL);
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(buf, 1, size, f) == size);
    fclose(f);
    free(buf);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644), 1);
        dup2(open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644), 2);
        execl(prog, prog, "info", path, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    static char o[65536], e[4096];
    slurp(out, o, sizeof o);
    slurp(err, e, sizeof e);
    unlink(path), unlink(out), unlink(err);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK(strstr(o, "18446744073709551552") == NULL);
    CHECK(strstr(o, "integrity:    ok") == NULL);
    CHECK(strstr(o, "index:        present but wrong (ignored)") != NULL);
    char want[64];
    snprintf(want, sizeof want, "  KERNEL           %12d\n", NREC);
    CHECK(strstr(o, want) != NULL);
    const char *w = strstr(e, "index disagrees");
    CHECK(w != NULL && strstr(w + 1, "index disagrees") == NULL); /* said once */
}

int main(int argc, char **argv) {
    prog = argc > 1 ? argv[1] : NULL;
    char path[256];
    tt_temp_path(path, sizeof path, "crafted_src");
    write_trace(path);
    file = tt_read_file(path, &file_size);
    unlink(path);
    if (!file)
        return 1;
    TP_RUN(test_intact);
    TP_RUN(test_wrapping_totals);
    TP_RUN(test_phantom_type);
    TP_RUN(test_phantom_drops);
    TP_RUN(test_entry_time);
    TP_RUN(test_info_cli);
    free(file);
    return tp_test_summary();
}
