/* test_ostream: the export output stream (tp_ostream), plain and parallel gzip.
 *
 * Writes a few MiB of JSON-like text in pieces of odd sizes (so blocks split inside writes),
 * compressed on 1, 2 and 4 threads, and decompresses each file with the real `gzip -dc`: the
 * bytes must equal what was written, and a stream longer than a block must be several gzip
 * members (the multi-member layout the speed comes from). An empty stream is still a valid
 * gzip file; the plain stream writes the bytes as they are; a write to /dev/full fails with
 * ENOSPC at close and not before the data reached the descriptor. */
#include "tp_ostream.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tp_test.h"

#define TOTAL ((size_t)5 * 1024 * 1024 + 12345)

/* Deterministic JSON-like text (compressible, not constant). */
static char *make_data(size_t n) {
    char *d = malloc(n);
    size_t k = 0;
    for (unsigned i = 0; k < n; i++) {
        char line[128];
        int w = snprintf(line, sizeof line,
                         "{\"ph\": \"X\", \"name\": \"kernel_%u\", \"ts\": %u, \"dur\": %u},\n",
                         (i * 2654435761u) % 97, i * 13, (i * 7) % 1000);
        for (int j = 0; j < w && k < n; j++)
            d[k++] = line[j];
    }
    return d;
}

static int open_tmp(char *path) {
    strcpy(path, "/tmp/test_ostream_XXXXXX");
    return mkstemp(path);
}

/* Writes `data` in pieces of 1..9999 bytes through a stream over a new file. */
static void write_file(char *path, const char *data, size_t n, int gzip, int threads) {
    int fd = open_tmp(path);
    CHECK(fd >= 0);
    tp_ostream *s;
    CHECK_OK(tp_ostream_open(&s, fd, gzip, threads));
    size_t off = 0, piece = 1;
    while (off < n) {
        size_t k = piece < n - off ? piece : n - off;
        CHECK_OK(tp_ostream_write(s, data + off, k));
        off += k;
        piece = (piece * 31 + 7) % 9999 + 1;
    }
    int err = -1;
    CHECK_OK(tp_ostream_close(s, &err));
    CHECK_EQ_I(err, 0);
}

/* What `gzip -dc path` prints, into *out (malloc'ed), *n bytes. */
static void gunzip_into(const char *path, char **out, size_t *n) {
    char cmd[256];
    snprintf(cmd, sizeof cmd, "gzip -dc %s", path);
    FILE *p = popen(cmd, "r");
    size_t cap = 1 << 20, len = 0;
    char *b = malloc(cap);
    size_t r;
    while (p && (r = fread(b + len, 1, cap - len, p)) > 0)
        if ((len += r) == cap)
            b = realloc(b, cap *= 2);
    CHECK(p && pclose(p) == 0);
    *n = len;
    *out = b;
}

static char *gunzip(const char *path, size_t *n) {
    char *b = NULL;
    gunzip_into(path, &b, n);
    return b;
}

/* Gzip members in the file: headers 1f 8b 08 at the start and after each member. Counted
 * loosely (any 1f 8b 08 00 sequence), enough to tell one member from several. */
static size_t members(const char *path) {
    size_t n;
    char *f = tp_test_read_text(path);
    FILE *fp = fopen(path, "rb");
    fseek(fp, 0, SEEK_END);
    n = (size_t)ftell(fp);
    fclose(fp);
    size_t c = 0;
    for (size_t i = 0; i + 4 <= n; i++)
        c += !memcmp(f + i, "\x1f\x8b\x08\x00", 4);
    free(f);
    return c;
}

static void gzip_roundtrip(int threads) {
    char *data = make_data(TOTAL), path[64];
    write_file(path, data, TOTAL, 1, threads);
    size_t n;
    char *back = gunzip(path, &n);
    CHECK_EQ_U(n, TOTAL);
    CHECK(n == TOTAL && !memcmp(back, data, TOTAL));
    CHECK(members(path) >= 5); /* 1 MiB blocks: 6 members */
    unlink(path);
    free(back), free(data);
}

static void test_gzip_one_thread(void) {
    gzip_roundtrip(1);
}

static void test_gzip_two_threads(void) {
    gzip_roundtrip(2);
}

static void test_gzip_four_threads(void) {
    gzip_roundtrip(4);
}

static void test_gzip_empty(void) {
    char path[64];
    write_file(path, "", 0, 1, 2);
    size_t n;
    char *back = gunzip(path, &n); /* gzip -dc accepts it: one empty member */
    CHECK_EQ_U(n, 0);
    unlink(path);
    free(back);
}

static void test_plain(void) {
    char *data = make_data(TOTAL), path[64];
    write_file(path, data, TOTAL, 0, 0);
    char *back = tp_test_read_text(path);
    CHECK(back && !memcmp(back, data, TOTAL) && back[TOTAL] == 0);
    unlink(path);
    free(back), free(data);
}

static void test_full_device(void) {
    for (int gzip = 0; gzip < 2; gzip++) {
        int fd = open("/dev/full", O_WRONLY);
        if (fd < 0)
            TP_SKIP("no /dev/full");
        tp_ostream *s;
        CHECK_OK(tp_ostream_open(&s, fd, gzip, 2));
        char *data = make_data(3 << 20);
        tp_ostream_write(s, data, 3 << 20);
        int err = 0;
        CHECK_EQ_I(tp_ostream_close(s, &err), TP_ERR_IO);
        CHECK_EQ_I(err, ENOSPC);
        free(data);
    }
}

int main(void) {
    TP_RUN(test_gzip_one_thread);
    TP_RUN(test_gzip_two_threads);
    TP_RUN(test_gzip_four_threads);
    TP_RUN(test_gzip_empty);
    TP_RUN(test_plain);
    TP_RUN(test_full_device);
    return tp_test_failures ? 1 : 0;
}
