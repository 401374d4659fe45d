/* tp_cut: a window of a trace as a trace (see the header). */
#include "tp_cut.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "tp_reader.h"
#include "tp_writer.h"

typedef struct {
    tp_writer *w;
    tp_status st;
} meta_copy;

static void copy_meta(void *ctx, const tp_rec_hdr *rec) {
    meta_copy *m = ctx;
    tp_status st = m->st == TP_OK ? tp_writer_write_meta(m->w, rec) : TP_OK;
    if (st != TP_OK && st != TP_ERR_ARG) /* a record the writer does not take: left out */
        m->st = st;
}

static tp_status copy_data(tp_reader *r, tp_writer *w, uint64_t t0, uint64_t t1,
                           uint64_t *records) {
    tp_query q = {0, t0, t1};
    tp_cursor *c;
    tp_status st = tp_cursor_open(r, &q, &c);
    for (const tp_rec_hdr *h; st == TP_OK && (h = tp_cursor_next(c)) != NULL;)
        if ((st = tp_writer_write(w, h)) == TP_OK)
            ++*records;
    tp_cursor_close(c);
    return st;
}

tp_status tp_cut_window(const char *src, uint64_t t0, uint64_t t1, const char *dst,
                        uint64_t *records) {
    *records = 0;
    if (t1 <= t0)
        return TP_ERR_ARG;
    tp_reader *r;
    tp_status st = tp_reader_open_window(src, t0, t1, &r);
    if (st != TP_OK)
        return st;
    int fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        tp_reader_close(r);
        return errno == EEXIST ? TP_ERR_EXISTS : TP_ERR_OPEN;
    }
    tp_writer_opts o;
    tp_writer_opts_default(&o);
    o.background = 0;
    o.block_when_full = 1;
    o.buffer_bytes = (size_t)4 << 20;
    o.producer = tp_reader_info(r)->producer;
    tp_writer *w;
    st = tp_writer_open_fd(fd, dst, &o, &w);
    if (st == TP_OK) {
        /* the metadata first, interned records by id, then each kind in file order */
        meta_copy m = {w, TP_OK};
        tp_reader_each_interned(r, TP_REC_STRING, copy_meta, &m);
        tp_reader_each_interned(r, TP_REC_STACK, copy_meta, &m);
        for (uint16_t t = 0; t < TP_REC_TYPE_LIMIT && m.st == TP_OK; t++) {
            const tp_rec_hdr *const *recs;
            size_t n = t == TP_REC_STRING || t == TP_REC_STACK ? 0 : tp_reader_meta(r, t, &recs);
            for (size_t i = 0; i < n; i++)
                copy_meta(&m, recs[i]);
        }
        st = m.st == TP_OK ? copy_data(r, w, t0, t1, records) : m.st;
        tp_status cs = tp_writer_close(w);
        st = st != TP_OK ? st : cs;
    }
    tp_reader_close(r);
    if (st != TP_OK)
        unlink(dst);
    return st;
}
