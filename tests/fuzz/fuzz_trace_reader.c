/* Fuzz target for the trace reader: open an arbitrary image, ask for its integrity and info,
 * iterate every record (all of them, then a filtered query), resolve every value that could
 * be an id, and touch every byte the reader hands out so ASan sees any overread. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tp_reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink; /* keeps the reads from being optimised away */

static void touch(const void *p, size_t n) {
    const uint8_t *b = p;
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++)
        s += b[i];
    sink += s;
}

/* Looks every u32 of a record up as each kind of id. */
static void resolve_all(const tp_reader *r, const tp_rec_hdr *h) {
    const uint8_t *p = (const uint8_t *)h;
    for (uint32_t off = sizeof *h; off + 4 <= h->size; off += 4) {
        uint32_t id;
        memcpy(&id, p + off, 4);
        const char *s = tp_reader_string(r, id);
        if (s)
            touch(s, strlen(s));
        uint32_t n;
        const uint64_t *f = tp_reader_stack(r, id, &n);
        if (f)
            touch(f, n * sizeof *f);
        const tp_rec_module *m = tp_reader_module(r, id);
        if (m)
            touch(m, sizeof *m);
        const tp_rec_pycode *pc = tp_reader_pycode(r, id);
        if (pc)
            touch(pc, sizeof *pc);
        s = tp_reader_thread_name(r, id);
        if (s)
            touch(s, strlen(s));
    }
}

static void iterate(tp_reader *r, const tp_query *q) {
    tp_cursor *c;
    if (tp_cursor_open(r, q, &c) != TP_OK)
        return;
    for (const tp_rec_hdr *h; (h = tp_cursor_next(c));) {
        touch(h, h->size);
        resolve_all(r, h);
    }
    tp_cursor_close(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tp_reader *r;
    if (tp_reader_open_mem(data, size, &r) != TP_OK)
        return 0;
    const tp_integrity *g = tp_reader_integrity(r);
    touch(g->message, strlen(g->message));
    const tp_trace_info *in = tp_reader_info(r);
    touch(in, sizeof *in);
    for (uint16_t t = 0; t < TP_REC_TYPE_LIMIT + 2; t++) {
        const tp_rec_hdr *const *recs;
        size_t n = tp_reader_meta(r, t, &recs);
        for (size_t i = 0; i < n; i++) {
            touch(recs[i], recs[i]->size > tp_record_info(t)->min_size
                               ? recs[i]->size
                               : tp_record_info(t)->min_size);
            resolve_all(r, recs[i]);
        }
    }
    iterate(r, NULL);
    tp_query q = {TP_REC_BIT(TP_REC_KERNEL) | TP_REC_BIT(TP_REC_API), in->t_min + 1,
                  in->t_min / 2 + in->t_max / 2};
    iterate(r, &q);
    tp_reader_close(r);
    return 0;
}
