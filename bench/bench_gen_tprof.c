/* bench_gen_tprof: a big .tprof trace made of a recorded one's records.
 *
 * usage: bench_gen_tprof SRC.tprof OUT.tprof N_RECORDS
 *
 * Copies SRC's metadata (strings, stacks, modules, threads, process, ...) once, then its data
 * records again and again until OUT holds about N_RECORDS records: copy k is shifted by k
 * times SRC's span (plus 1 ms) -- every timed record's ts, and end for intervals, which the
 * record format places right after the header for every type -- and its correlation ids
 * (API, kernels, copies, memsets, syncs) and NVTX start/end range ids move past the previous
 * copy's, so launches still find their kernels. Clock syncs stay those of the first copy. The
 * records are real: a trace of the trainer recorded by the collector (`trainprof record`),
 * e.g. the launch-bound scenario. Used by the big-trace benchmarks in docs/PERFORMANCE.md;
 * OUT belongs in /tmp. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_reader.h"
#include "tp_record.h"
#include "tp_writer.h"

/* Where a record type keeps its correlation id (0: none). */
static size_t corr_offset(uint16_t type) {
    switch (type) {
    case TP_REC_API:
        return offsetof(tp_rec_api, correlation);
    case TP_REC_KERNEL:
        return offsetof(tp_rec_kernel, correlation);
    case TP_REC_MEMCPY:
        return offsetof(tp_rec_memcpy, correlation);
    case TP_REC_MEMSET:
        return offsetof(tp_rec_memset, correlation);
    case TP_REC_SYNC:
        return offsetof(tp_rec_sync, correlation);
    default:
        return 0;
    }
}

/* Shifts a copy of record `h` (in buf) by `dt` ns, correlation ids by `did` and NVTX range ids
 * into the space of copy `rid`. */
static void shift(unsigned char *buf, uint64_t dt, uint32_t did, uint32_t rid) {
    tp_rec_hdr *h = (tp_rec_hdr *)buf;
    if (h->flags & TP_RF_TIMED) {
        uint64_t ts;
        memcpy(&ts, buf + sizeof *h, 8);
        ts += dt;
        memcpy(buf + sizeof *h, &ts, 8);
        if (h->flags & TP_RF_INTERVAL) {
            memcpy(&ts, buf + sizeof *h + 8, 8);
            ts += dt;
            memcpy(buf + sizeof *h + 8, &ts, 8);
        }
    }
    size_t off = corr_offset(h->type);
    if (off && off + 4 <= h->size) {
        uint32_t c;
        memcpy(&c, buf + off, 4);
        c = c ? c + did : 0;
        memcpy(buf + off, &c, 4);
    }
    if (h->type == TP_REC_NVTX_START || h->type == TP_REC_NVTX_END) {
        uint64_t id;
        size_t o = offsetof(tp_rec_nvtx_start, range_id);
        memcpy(&id, buf + o, 8);
        id += (uint64_t)rid << 40; /* range ids are 64-bit: each copy in a space of its own */
        memcpy(buf + o, &id, 8);
    }
}

/* The largest correlation / range id of SRC's data records. */
static uint32_t max_id(tp_reader *r) {
    tp_cursor *c;
    uint32_t mx = 0;
    if (tp_cursor_open(r, NULL, &c) != TP_OK)
        return 0;
    for (const tp_rec_hdr *h; (h = tp_cursor_next(c));) {
        size_t off = corr_offset(h->type);
        uint32_t v = 0;
        if (off && off + 4 <= h->size)
            memcpy(&v, (const unsigned char *)h + off, 4);
        mx = v > mx ? v : mx;
    }
    tp_cursor_close(c);
    return mx;
}

/* Strings and stacks live in the reader's tables, not as records: interned again in id order,
 * they get the same ids (the writer numbers from 1), which is checked. */
static int copy_tables(tp_reader *r, tp_writer *w) {
    const tp_trace_info *info = tp_reader_info(r);
    for (uint32_t id = 1; id <= info->records[TP_REC_STRING]; id++) {
        const char *s = tp_reader_string(r, id);
        uint32_t got = 0;
        if (!s || tp_writer_intern_string(w, s, strlen(s), &got) != TP_OK || got != id)
            return fprintf(stderr, "string %u: not reproduced (got %u)\n", id, got), -1;
    }
    for (uint32_t id = 1; id <= info->records[TP_REC_STACK]; id++) {
        uint32_t n = 0, got = 0;
        const uint64_t *f = tp_reader_stack(r, id, &n);
        if (!f || tp_writer_intern_stack(w, f, n, &got) != TP_OK || got != id)
            return fprintf(stderr, "stack %u: not reproduced (got %u)\n", id, got), -1;
    }
    return 0;
}

static int copy_meta(tp_reader *r, tp_writer *w) {
    if (copy_tables(r, w))
        return -1;
    for (uint16_t t = 1; t < TP_REC_CLOCK_SYNC; t++) {
        if (t == TP_REC_STRING || t == TP_REC_STACK)
            continue;
        const tp_rec_hdr *const *recs;
        size_t n = tp_reader_meta(r, t, &recs);
        for (size_t i = 0; i < n; i++)
            if (tp_writer_write_meta(w, recs[i]) != TP_OK)
                return fprintf(stderr, "cannot write metadata record type %u\n", t), -1;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 4)
        return fprintf(stderr, "usage: %s SRC.tprof OUT.tprof N_RECORDS\n", argv[0]), 2;
    uint64_t want = strtoull(argv[3], NULL, 10);
    tp_reader *r;
    if (tp_reader_open(argv[1], &r) != TP_OK)
        return fprintf(stderr, "cannot open %s\n", argv[1]), 1;
    const tp_trace_info *info = tp_reader_info(r);
    uint64_t span = info->t_max - info->t_min + 1000000;
    uint32_t did = max_id(r) + 1;
    tp_writer_opts o;
    tp_writer_opts_default(&o);
    o.block_when_full = 1;
    o.producer = "bench_gen_tprof";
    tp_writer *w;
    if (tp_writer_open(argv[2], &o, &w) != TP_OK)
        return fprintf(stderr, "cannot create %s\n", argv[2]), 1;
    int rc = copy_meta(r, w);
    uint64_t n = 0, copies = 0;
    unsigned char *buf = malloc(1 << 16);
    while (!rc && n < want) {
        tp_cursor *c;
        if (tp_cursor_open(r, NULL, &c) != TP_OK)
            break;
        for (const tp_rec_hdr *h; !rc && (h = tp_cursor_next(c));) {
            if (h->size > (1 << 16) || (copies && h->type == TP_REC_CLOCK_SYNC))
                continue;
            memcpy(buf, h, h->size);
            shift(buf, copies * span, (uint32_t)(copies * did), (uint32_t)copies);
            if (tp_writer_write(w, buf) != TP_OK)
                rc = 1, fprintf(stderr, "cannot write a record of type %u\n", h->type);
            n++;
        }
        tp_cursor_close(c);
        copies++;
    }
    free(buf);
    if (tp_writer_close(w) != TP_OK)
        rc = 1, fprintf(stderr, "cannot finish %s\n", argv[2]);
    tp_reader_close(r);
    printf("%s: %llu copies of %s, %llu records\n", argv[2], (unsigned long long)copies, argv[1],
           (unsigned long long)n);
    return rc;
}
