/* trace_testutil: helpers shared by the trace-format tests (temp files, record factories). */
#ifndef TRACE_TESTUTIL_H
#define TRACE_TESTUTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tp_record.h"

/* A path for a scratch file in $TMPDIR, unique per process and `tag`. */
static inline void tt_temp_path(char *buf, size_t n, const char *tag) {
    const char *dir = getenv("TMPDIR");
    snprintf(buf, n, "%s/tp_test_%d_%s.tprof", dir && *dir ? dir : "/tmp", (int)getpid(), tag);
}

/* xorshift64*: deterministic pseudo-random numbers for fixed-seed tests. */
static inline uint64_t tt_rand(uint64_t *s) {
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545f4914f6cdd1dull;
}

/* Reads a whole file into malloc'ed memory; NULL on error. */
static inline uint8_t *tt_read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return buf;
}

/* Fills a fixed-size record of `type` with random field bytes and a valid header; timed
 * records get ts = `ts` and intervals end = ts + a random duration. */
static inline void tt_fill(void *rec, uint16_t type, uint64_t ts, uint64_t *seed) {
    uint32_t size = tp_record_info(type)->min_size;
    uint8_t *p = rec;
    for (uint32_t i = 8; i < size; i++)
        p[i] = (uint8_t)tt_rand(seed);
    tp_record_init_hdr(rec, type, size);
    tp_rec_hdr *h = rec;
    uint64_t *lanes = (uint64_t *)(h + 1);
    if (h->flags & TP_RF_TIMED)
        lanes[0] = ts;
    if (h->flags & TP_RF_INTERVAL)
        lanes[1] = ts + tt_rand(seed) % 100000;
}

#endif
