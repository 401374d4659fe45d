/* Damaged traces: a small trace cut at every byte offset, and with random bytes flipped
 * (fixed seed). Each either opens with exactly the records of the chunks that survived
 * intact, every one byte-identical to what was written, or fails with a clear status.
 * Each trial reads from a malloc'ed copy of exactly the damaged length, so ASan sees any
 * read past the end. Run under -DTP_SANITIZE=address,undefined too. */
#include "tp_chunk.h"
#include "tp_reader.h"
#include "tp_test.h"
#include "tp_writer.h"
#include "trace_testutil.h"

#define NREC 250
#define MAXCHUNKS 256

typedef struct {
    uint64_t off, payload_end, end;
    uint16_t kind;
    uint32_t count;
} chunk_info;

static tp_rec_kernel kernels[NREC];
static tp_rec_api apis[NREC];
static uint8_t *file;
static size_t file_size;
static chunk_info chunks[MAXCHUNKS];
static size_t nchunks;

/* Kernels and API calls with unique correlation ids; names interned as the trace goes, so
 * META chunks are interleaved with the data ones. */
static void write_small_trace(const char *path) {
    tp_writer_opts o;
    tp_writer_opts_default(&o);
    o.chunk_bytes = 1024;
    tp_writer *w;
    CHECK_OK(tp_writer_open(path, &o, &w));
    tp_stage *s;
    CHECK_OK(tp_writer_stage_open(w, 7, &s));
    uint64_t seed = 77;
    for (int i = 0; i < NREC; i++) {
        char name[32];
        int n = snprintf(name, sizeof name, "kernel_%d", i / 20);
        uint32_t sid;
        CHECK_OK(tp_writer_intern_string(w, name, (size_t)n, &sid));
        tt_fill(&apis[i], TP_REC_API, 1000u * (uint64_t)i, &seed);
        apis[i].correlation = (uint32_t)i;
        apis[i].name_sid = sid;
        tt_fill(&kernels[i], TP_REC_KERNEL, 1000u * (uint64_t)i + 400, &seed);
        kernels[i].correlation = (uint32_t)i;
        kernels[i].name_sid = sid;
        CHECK(tp_stage_write(s, &apis[i]));
        CHECK(tp_stage_write(s, &kernels[i]));
        if (i % 41 == 0)
            CHECK_OK(tp_writer_flush(w));
    }
    CHECK_OK(tp_writer_close(w));
}

/* Lists the chunks of the intact file (the test's own reading of the layout). */
static void map_chunks(void) {
    uint64_t pos = TP_FILE_HEADER_SIZE;
    nchunks = 0;
    while (pos + sizeof(tp_chunk_header) <= file_size - sizeof(tp_trailer) && nchunks < MAXCHUNKS) {
        tp_chunk_header h;
        memcpy(&h, file + pos, sizeof h);
        CHECK(tp_chunk_header_ok(&h));
        chunk_info *c = &chunks[nchunks++];
        c->off = pos;
        c->payload_end = pos + sizeof h + h.payload_bytes;
        c->end = pos + tp_chunk_span(&h);
        c->kind = h.kind;
        c->count = h.record_count;
        pos = c->end;
    }
    CHECK_EQ_U(pos, file_size - sizeof(tp_trailer));
}

/* Reads every record; checks each against the original; returns the count or -1. */
static long read_all(tp_reader *r, int check_names) {
    tp_cursor *c;
    if (tp_cursor_open(r, NULL, &c) != TP_OK)
        return -1;
    long n = 0;
    for (const tp_rec_hdr *h; (h = tp_cursor_next(c)); n++) {
        const void *want = NULL;
        if (h->type == TP_REC_API && ((const tp_rec_api *)h)->correlation < NREC)
            want = &apis[((const tp_rec_api *)h)->correlation];
        if (h->type == TP_REC_KERNEL && ((const tp_rec_kernel *)h)->correlation < NREC)
            want = &kernels[((const tp_rec_kernel *)h)->correlation];
        if (!want || memcmp(h, want, h->size) != 0) {
            n = -1;
            break;
        }
        uint32_t sid = h->type == TP_REC_API ? ((const tp_rec_api *)h)->name_sid
                                             : ((const tp_rec_kernel *)h)->name_sid;
        if (check_names && !tp_reader_string(r, sid)) {
            n = -2;
            break;
        }
    }
    tp_cursor_close(c);
    return n;
}

static int is_boundary(size_t len) {
    if (len == TP_FILE_HEADER_SIZE || len == file_size)
        return 1;
    for (size_t i = 0; i < nchunks; i++)
        if (chunks[i].end == len)
            return 1;
    return 0;
}

static uint64_t expected_cut(size_t len) {
    uint64_t n = 0;
    for (size_t i = 0; i < nchunks; i++)
        if (chunks[i].kind == TP_CHUNK_DATA && chunks[i].end <= len)
            n += chunks[i].count;
    return n;
}

static void check_cut(size_t len) {
    uint8_t *copy = malloc(len ? len : 1);
    memcpy(copy, file, len);
    tp_reader *r;
    tp_status st = tp_reader_open_mem(copy, len, &r);
    if (len < TP_FILE_HEADER_SIZE) {
        CHECK_EQ_I(st, len == 0 ? TP_ERR_EMPTY : TP_ERR_TRUNCATED);
        free(copy);
        return;
    }
    CHECK_OK(st);
    if (st != TP_OK) {
        free(copy);
        return;
    }
    long n = read_all(r, 1);
    if ((uint64_t)n != expected_cut(len))
        fprintf(stderr, "cut at %zu: %ld records, want %" PRIu64 "\n", len, n, expected_cut(len));
    CHECK_EQ_I(n, (long)expected_cut(len));
    const tp_trace_info *in = tp_reader_info(r);
    CHECK_EQ_U(in->records[TP_REC_API] + in->records[TP_REC_KERNEL], expected_cut(len));
    const tp_integrity *g = tp_reader_integrity(r);
    CHECK_EQ_U(g->truncated, !is_boundary(len));
    CHECK_EQ_U(g->index_ok, len == file_size);
    if (g->truncated)
        CHECK(strstr(g->message, "file cut off") != NULL);
    tp_reader_close(r);
    free(copy);
}

static void test_every_cut(void) {
    for (size_t len = 0; len <= file_size; len++) {
        int before = tp_test_failures;
        check_cut(len);
        if (tp_test_failures != before) {
            fprintf(stderr, "  (cut at %zu of %zu)\n", len, file_size);
            return;
        }
    }
}

/* Records of data chunks whose checked bytes (header and payload) no flip touched. */
static uint64_t expected_flips(const size_t *at, int nflips, int *meta_hit) {
    uint64_t n = 0;
    *meta_hit = 0;
    for (size_t i = 0; i < nchunks; i++) {
        int hit = 0;
        for (int k = 0; k < nflips; k++)
            hit |= at[k] >= chunks[i].off && at[k] < chunks[i].payload_end;
        if (chunks[i].kind == TP_CHUNK_DATA && !hit)
            n += chunks[i].count;
        if (chunks[i].kind == TP_CHUNK_META && hit)
            *meta_hit = 1;
    }
    return n;
}

static void flip_trial(uint64_t *seed) {
    uint8_t *copy = malloc(file_size);
    memcpy(copy, file, file_size);
    size_t at[3];
    int nflips = 1 + (int)(tt_rand(seed) % 3), header_hit = 0;
    for (int k = 0; k < nflips; k++) {
        at[k] = tt_rand(seed) % file_size;
        copy[at[k]] ^= (uint8_t)(1 + tt_rand(seed) % 255);
        header_hit |= at[k] < TP_FILE_HEADER_SIZE;
    }
    tp_reader *r;
    tp_status st = tp_reader_open_mem(copy, file_size, &r);
    if (header_hit) {
        CHECK(st == TP_ERR_CORRUPT || st == TP_ERR_FORMAT || st == TP_ERR_VERSION);
    } else {
        CHECK_OK(st);
    }
    if (st == TP_OK) {
        int meta_hit;
        uint64_t want = expected_flips(at, nflips, &meta_hit);
        long n = read_all(r, !meta_hit);
        CHECK_EQ_I(n, (long)want);
        const tp_trace_info *in = tp_reader_info(r);
        CHECK_EQ_U(in->records[TP_REC_API] + in->records[TP_REC_KERNEL], want);
        const tp_integrity *g = tp_reader_integrity(r);
        CHECK(want == 2 * NREC || g->chunks_bad > 0);
        CHECK(g->chunks_bad == 0 || g->message[0] != '\0');
        tp_reader_close(r);
    }
    free(copy);
}

static void test_random_flips(void) {
    uint64_t seed = 0x5eed;
    for (int i = 0; i < 3000; i++) {
        int before = tp_test_failures;
        flip_trial(&seed);
        if (tp_test_failures != before) {
            fprintf(stderr, "  (flip trial %d)\n", i);
            return;
        }
    }
}

/* Not traces at all: each fails with its own status, never a crash. */
static void test_not_traces(void) {
    tp_reader *r;
    static const char text[] = "TPROF is not a trace, this is text that is long enough to pass "
                               "the header length check easily.";
    CHECK_EQ_I(tp_reader_open_mem(text, sizeof text, &r), TP_ERR_FORMAT);
    CHECK_EQ_I(tp_reader_open_mem(file, 5, &r), TP_ERR_TRUNCATED);
    CHECK_EQ_I(tp_reader_open_mem("", 0, &r), TP_ERR_EMPTY);
    uint8_t *copy = malloc(file_size);
    memcpy(copy, file, file_size);
    copy[12] = 9; /* version_major 9: a future format */
    CHECK_EQ_I(tp_reader_open_mem(copy, file_size, &r), TP_ERR_VERSION);
    memcpy(copy, file, file_size);
    copy[8] = 1; /* byte-order mark as a big-endian writer would store it */
    copy[9] = 2;
    copy[10] = 3;
    copy[11] = 4;
    CHECK_EQ_I(tp_reader_open_mem(copy, file_size, &r), TP_ERR_FORMAT);
    free(copy);
    CHECK_EQ_I(tp_reader_open("/nonexistent/x.tprof", &r), TP_ERR_OPEN);
    CHECK_EQ_I(tp_reader_open("/", &r), TP_ERR_OPEN);
}

/* A window of a trace still being written (no index: the file ends after some chunk), one
 * data chunk outside the window damaged: tp_reader_open_window passes over that chunk unread
 * (no damage seen) and returns exactly the window's records; a whole open sees the damage. */
static void test_window(void) {
    size_t bad = nchunks, last = 0; /* the first data chunk; the last chunk before the index */
    for (size_t i = 0; i < nchunks; i++) {
        if (chunks[i].kind == TP_CHUNK_DATA && bad == nchunks)
            bad = i;
        if (chunks[i].kind != TP_CHUNK_INDEX)
            last = i;
    }
    CHECK(bad < last);
    tp_chunk_header h;
    memcpy(&h, file + chunks[bad].off, sizeof h);
    uint64_t t0 = h.t_max + 1, t1 = 1000u * (NREC - 20); /* past the damaged chunk */
    size_t len = (size_t)chunks[last].end;
    uint8_t *copy = malloc(len);
    memcpy(copy, file, len);
    copy[chunks[bad].off + sizeof h + 3] ^= 0x5a; /* its payload: the header still checks */
    char path[256];
    tt_temp_path(path, sizeof path, "window");
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(copy, 1, len, f) == len);
    if (f)
        fclose(f);
    /* every data chunk is in the file (the index and trailer are not), the damaged one outside
     * the window: the records that overlap [t0, t1), as a cursor's time query keeps them */
    uint64_t want = 0;
    for (size_t i = 0; i < NREC; i++) {
        const tp_rec_hdr *both[] = {&apis[i].h, &kernels[i].h};
        for (size_t k = 0; k < 2; k++) {
            uint64_t ts = tp_record_ts(both[k]), end = tp_record_end(both[k]);
            want += ts < t1 && (end > t0 || ts >= t0);
        }
    }
    tp_reader *r;
    CHECK_OK(tp_reader_open_window(path, t0, t1, &r));
    if (r) {
        CHECK_EQ_U(tp_reader_integrity(r)->chunks_bad, 0);
        tp_query q = {0, t0, t1};
        tp_cursor *c;
        CHECK_OK(tp_cursor_open(r, &q, &c));
        uint64_t n = 0;
        for (const tp_rec_hdr *rec; c && (rec = tp_cursor_next(c));)
            n++;
        tp_cursor_close(c);
        CHECK_EQ_U(n, want);
        tp_reader_close(r);
    }
    CHECK_OK(tp_reader_open(path, &r));
    if (r) {
        CHECK_EQ_U(tp_reader_integrity(r)->chunks_bad, 1);
        tp_reader_close(r);
    }
    unlink(path);
    free(copy);
}

int main(void) {
    char path[256];
    tt_temp_path(path, sizeof path, "damage");
    write_small_trace(path);
    file = tt_read_file(path, &file_size);
    unlink(path);
    if (!file)
        return 1;
    map_chunks();
    printf("trace: %zu bytes, %zu chunks\n", file_size, nchunks);
    TP_RUN(test_every_cut);
    TP_RUN(test_random_flips);
    TP_RUN(test_not_traces);
    TP_RUN(test_window);
    free(file);
    return tp_test_summary();
}
