/* tp_reader: opening, verifying and iterating .tprof files.
 *
 * Open walks every chunk from the end of the file header: each header's CRC, bounds and
 * payload CRC are checked, so a chunk is either used whole or skipped whole. After a bad
 * header the walk resynchronises on the next 8-aligned 'TPCH' whose header CRC holds.
 * The footer index is trusted only when its own chunk checks out and it lists exactly the
 * chunks the walk found; then per-type totals come from it, else from a scan of the data.
 * With an intact index, data chunks' payload CRCs are checked when first decoded (or when
 * info/integrity are asked for), not at open: the same checks, once, on bytes already in
 * the cache for decompression.
 * Metadata is decoded at open into sorted arrays searched by id (ids come from the file and
 * may be anything, so nothing is ever indexed by one). Data chunks are decoded per cursor. */
#include "tp_reader.h"

#include "tp_chunk.h"
#include "tp_codec.h"
#include "tp_mem.h"
#include "tp_planes.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* What decoding a chunk needs (one per reader and per cursor, so cursors are independent):
 * the codecs' state, and for byte-plane chunks the decompressed layout before it is undone. */
typedef struct {
    tp_codec_ctx *cx;
    uint8_t *planes;
    size_t planes_cap;
    uint8_t *words; /* filter 3's body words in column order */
    size_t words_cap;
} decoder;

typedef struct {
    uint64_t off;
    tp_chunk_header h;
    int visited; /* a cursor decoded it once: damage and unknown records are counted */
    int pending; /* payload CRC not checked yet (an intact index listed it; see walk) */
    int bad;     /* its payload CRC failed when checked late: skipped like a damaged chunk */
} chunk_ref;

/* One id -> value mapping from the file; sorted by (id, seq) so the latest wins. */
typedef struct {
    uint32_t id;
    uint32_t n; /* frames of a stack; name sid of a thread */
    uint64_t seq;
    const void *p;
} id_entry;

typedef struct {
    id_entry *v;
    size_t n, cap;
} id_table;

typedef struct {
    const tp_rec_hdr **v;
    size_t n, cap;
} rec_list;

struct tp_reader {
    const uint8_t *data;
    size_t size;
    int mapped;
    tp_file_header fh;
    tp_integrity integ;
    tp_trace_info info;
    int info_ready;
    chunk_ref *chunks; /* good DATA chunks in file order */
    size_t nchunks, chunks_cap;
    uint64_t meta_records[TP_REC_TYPE_LIMIT];
    uint64_t last_good_seq;
    int have_good;
    uint64_t span_min, span_max; /* over good chunks' timed records */
    /* win_hi > win_lo (tp_reader_open_window): DATA chunks with no timed record in
     * [win_lo, win_hi) are passed over unread */
    uint64_t win_lo, win_hi;
    /* footer */
    uint64_t index_off, index_bytes;
    const uint8_t *index_payload; /* decoded INDEX payload (owned) */
    uint32_t index_entries;
    size_t good_listed; /* good DATA+META chunks, in order, for the index cross-check */
    int index_matches;
    /* metadata */
    void **owned;
    size_t nowned, owned_cap;
    id_table strings, stacks, modules, threads, pycodes;
    rec_list meta[TP_REC_TYPE_LIMIT];
    uint64_t meta_seq;
    decoder dec;
};

/* One decoded chunk: its records, and whether they are counted (first decode). */
typedef struct {
    uint8_t *buf;
    size_t cap, len;
    int first_visit;
    uint64_t t_hi; /* at least the latest ts / end of its timed records (a late limit only) */
} chunk_out;

/* A cursor's read-ahead (tp_cursor_read_ahead): a thread decodes the next wanted chunk into
 * one slot while the caller reads the records of the other. Only the thread touches the
 * reader's chunk state (CRC checks, damage counts) and the decoder, in file order, so the
 * figures are those of reading alone; the caller counts unknown records, as before. */
typedef struct {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    chunk_out slot[2];
    int full[2]; /* decoded, not yet read */
    int done;    /* no wanted chunk left */
    int stop;    /* the cursor is closing */
    int cur;     /* the slot being read, -1: none */
} read_ahead;

struct tp_cursor {
    tp_reader *r;
    tp_query q;
    size_t next_chunk;
    uint8_t *buf;
    size_t cap, len, off;
    int first_visit;   /* count unknown records in this chunk (first decode by any cursor) */
    uint64_t known;    /* TP_REC_BIT of the types this reader knows */
    uint64_t want;     /* known types the query asks for */
    int timed;         /* the query has a time window */
    uint64_t fast;     /* `want` without a time window, else 0: returned without more tests;
                          also 0 for a chunk with records past late_limit */
    uint64_t fast_any; /* `fast` for a chunk within late_limit */
    uint64_t late_limit, late;            /* tp_cursor_set_late; records left out */
    uint8_t late_kind[TP_REC_TYPE_LIMIT]; /* LATE_* by type (with a late limit) */
    decoder dec;
    read_ahead *ahead; /* NULL: chunks are decoded as the records are read */
};

static int own(tp_reader *r, void *p) {
    if (!p || !TP_MEM_GROW(r->owned, r->owned_cap, r->nowned + 1)) {
        free(p);
        return 0;
    }
    r->owned[r->nowned++] = p;
    return 1;
}

/* ------------------------------------------------------------------ chunk decoding */

static int decoder_init(decoder *d) {
    d->cx = tp_codec_ctx_open();
    return d->cx != NULL;
}

static void decoder_free(decoder *d) {
    tp_codec_ctx_close(d->cx);
    free(d->planes);
    free(d->words);
}

/* Decompresses chunk `c` into *dst (grown). Returns 0 unless it yields exactly raw_bytes. */
static int decompress(decoder *d, const uint8_t *data, const chunk_ref *c, uint8_t **dst,
                      size_t *cap) {
    const tp_chunk_header *h = &c->h;
    const uint8_t *payload = data + c->off + sizeof *h;
    size_t raw = h->raw_bytes;
    if (!tp_mem_grow((void **)dst, cap, raw ? raw : 8, 1))
        return 0;
    return tp_codec_decompress(d->cx, h->codec, *dst, raw, payload, h->payload_bytes);
}

/* What a type's layout holds for tp_cursor_set_late: no time, ts, ts and end (also the
 * number of time words, as tp_planes_decode_sparse_t takes them). */
enum { LATE_NONE, LATE_TS, LATE_END };

/* The latest of h's ts (and end, for an interval type), read as the type's layout says
 * (`times`: LATE_* by type); a field past the record's size reads as 0 (tp_record_get's zero
 * extension). */
static uint64_t record_t_hi(const uint8_t *times, const tp_rec_hdr *h) {
    unsigned k = h->type < TP_REC_TYPE_LIMIT ? times[h->type] : LATE_NONE;
    uint64_t ts = 0, end = 0;
    if (k != LATE_NONE && h->size >= 16)
        memcpy(&ts, (const uint8_t *)h + 8, sizeof ts);
    if (k == LATE_END && h->size >= 24)
        memcpy(&end, (const uint8_t *)h + 16, sizeof end);
    return ts > end ? ts : end;
}

/* The latest time of the records in buf[0, len) (record_t_hi). */
static uint64_t chunk_t_hi(const uint8_t *times, const uint8_t *buf, size_t len) {
    uint64_t hi = 0;
    for (size_t off = 0; off < len;) {
        const tp_rec_hdr *h = (const tp_rec_hdr *)(buf + off);
        uint64_t t = record_t_hi(times, h);
        hi = t > hi ? t : hi;
        off += h->size;
    }
    return hi;
}

/* Decodes chunk `c` into *buf. Returns the bytes of well-formed records, or -1 when the
 * chunk cannot be decoded at all. *whole is 1 when every byte decoded into records. (Undoing
 * the filter here, in one pass, measured faster than undoing it record by record as a cursor
 * returns them.) Byte planes cannot be undone in place: their layout is decompressed into
 * d->planes and put back together into *buf. With `times` (LATE_* by type), *t_hi bounds the
 * records' times (record_t_hi): filter 4's decoder gives the OR of them as it puts them
 * together (tp_planes_decode_sparse_t), the other filters' records are walked once more for
 * the largest. chunk_fast only tests it against the limit: over it, every record is tested. */
static long chunk_decode(decoder *d, const uint8_t *data, const chunk_ref *c, uint8_t **buf,
                         size_t *cap, int *whole, const uint8_t *times, uint64_t *t_hi) {
    const tp_chunk_header *h = &c->h;
    size_t raw = h->raw_bytes, ok;
    int t_found = 0;
    *whole = 0;
    if (raw > TP_CHUNK_RAW_MAX)
        return -1;
    if (h->filter == TP_FILTER_LANE_PLANES) {
        if (!decompress(d, data, c, &d->planes, &d->planes_cap) ||
            !tp_mem_grow((void **)buf, cap, raw ? raw : 8, 1))
            return -1;
        ok = tp_planes_decode(d->planes, *buf, raw);
    } else if (h->filter == TP_FILTER_LANE_COLUMNS) {
        if (!decompress(d, data, c, &d->planes, &d->planes_cap) ||
            !tp_mem_grow((void **)buf, cap, raw ? raw : 8, 1) ||
            !tp_mem_grow((void **)&d->words, &d->words_cap, raw ? raw : 8, 1))
            return -1;
        ok = tp_planes_decode_columns(d->planes, *buf, d->words, raw);
    } else if (h->filter == TP_FILTER_LANE_SPARSE) {
        /* decompressed into d->planes, where the layout is rebuilt in place */
        size_t bound = tp_planes_sparse_bound(raw, 0), m;
        if (!tp_mem_grow((void **)&d->planes, &d->planes_cap, bound ? bound : 8, 1) ||
            !tp_codec_decompress_upto(d->cx, h->codec, d->planes, bound, data + c->off + sizeof *h,
                                      h->payload_bytes, &m) ||
            !tp_mem_grow((void **)buf, cap, raw ? raw : 8, 1) ||
            !tp_mem_grow((void **)&d->words, &d->words_cap, raw ? raw : 8, 1))
            return -1;
        ok = raw ? tp_planes_decode_sparse_t(d->planes, m, *buf, d->words, raw, times, t_hi) : 0;
        t_found = 1;
    } else if (!decompress(d, data, c, buf, cap)) {
        return -1;
    } else if (h->filter == TP_FILTER_LANE_DELTA) {
        ok = tp_filter_decode(*buf, raw);
    } else if (h->filter == TP_FILTER_NONE) {
        ok = tp_filter_decode_none(*buf, raw);
    } else {
        return -1;
    }
    *whole = ok == raw;
    if (times && !t_found)
        *t_hi = chunk_t_hi(times, *buf, ok);
    return (long)ok;
}

/* ------------------------------------------------------------------ metadata */

static int id_add(id_table *t, uint32_t id, uint32_t n, uint64_t seq, const void *p) {
    if (!TP_MEM_GROW(t->v, t->cap, t->n + 1))
        return 0;
    t->v[t->n++] = (id_entry){id, n, seq, p};
    return 1;
}

static int id_cmp(const void *a, const void *b) {
    const id_entry *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The latest entry with `id`, or NULL. */
static const id_entry *id_find(const id_table *t, uint32_t id) {
    size_t lo = 0, hi = t->n; /* first entry with id > `id` */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->v[mid].id <= id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && t->v[lo - 1].id == id ? &t->v[lo - 1] : NULL;
}

/* A record at least as long as this reader's struct: the record itself, or a zero-padded
 * copy when an older writer wrote a shorter one. */
static const tp_rec_hdr *full_record(tp_reader *r, const tp_rec_hdr *h) {
    uint32_t need = tp_record_info(h->type)->min_size;
    if (h->size >= need)
        return h;
    void *copy = calloc(1, need);
    if (!own(r, copy))
        return NULL;
    tp_record_get(h, copy, need);
    return copy;
}

static int load_string(tp_reader *r, tp_rec_hdr *h) {
    tp_rec_string *s = (tp_rec_string *)h;
    if (h->size <= sizeof *s || s->len > h->size - sizeof *s - 1 || s->id == 0)
        return 1; /* malformed: ignored, the id stays unresolved */
    s->text[s->len] = '\0';
    return id_add(&r->strings, s->id, s->len, r->meta_seq, s->text);
}

static int load_stack(tp_reader *r, tp_rec_hdr *h) {
    tp_rec_stack *s = (tp_rec_stack *)h;
    if (h->size < sizeof *s || s->nframes > (h->size - sizeof *s) / 8 || s->id == 0)
        return 1;
    return id_add(&r->stacks, s->id, s->nframes, r->meta_seq, s->frames);
}

/* Files one metadata record (its bytes stay owned by the reader). */
static int load_meta_record(tp_reader *r, tp_rec_hdr *h) {
    r->meta_seq++;
    if (h->type >= TP_REC_TYPE_LIMIT || !tp_record_name(h->type)) {
        r->integ.unknown_records++;
        return 1;
    }
    r->meta_records[h->type]++;
    if (h->type == TP_REC_STRING)
        return load_string(r, h);
    if (h->type == TP_REC_STACK)
        return load_stack(r, h);
    const tp_rec_hdr *f = full_record(r, h);
    rec_list *l = &r->meta[h->type];
    if (!f || !TP_MEM_GROW(l->v, l->cap, l->n + 1))
        return 0;
    l->v[l->n++] = f;
    if (h->type == TP_REC_MODULE)
        return id_add(&r->modules, ((const tp_rec_module *)f)->id, 0, r->meta_seq, f);
    if (h->type == TP_REC_PYCODE)
        return id_add(&r->pycodes, ((const tp_rec_pycode *)f)->id, 0, r->meta_seq, f);
    if (h->type == TP_REC_THREAD) {
        const tp_rec_thread *t = (const tp_rec_thread *)f;
        return id_add(&r->threads, t->tid, t->name_sid, r->meta_seq, f);
    }
    return 1;
}

/* Decodes a META chunk and files its records. Returns 0 on out-of-memory, else 1, with
 * *bad set when the chunk did not decode whole. */
static int load_meta_chunk(tp_reader *r, const chunk_ref *c, int *bad) {
    uint8_t *buf = NULL;
    size_t cap = 0;
    int whole;
    long n = chunk_decode(&r->dec, r->data, c, &buf, &cap, &whole, NULL, NULL);
    *bad = !whole;
    if (n < 0) {
        free(buf);
        return 1;
    }
    if (!own(r, buf))
        return 0;
    for (long off = 0; off < n; off += ((tp_rec_hdr *)(buf + off))->size)
        if (!load_meta_record(r, (tp_rec_hdr *)(buf + off)))
            return 0;
    return 1;
}

static void meta_sort(tp_reader *r) {
    id_table *t[] = {&r->strings, &r->stacks, &r->modules, &r->threads, &r->pycodes};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (t[i]->n)
            qsort(t[i]->v, t[i]->n, sizeof *t[i]->v, id_cmp);
}

/* ------------------------------------------------------------------ footer index */

/* Reads the trailer and INDEX chunk; sets index_ok when both check out. */
static void read_index(tp_reader *r, uint64_t body) {
    if (r->size < body + sizeof(tp_trailer) + sizeof(tp_chunk_header))
        return;
    tp_trailer tr;
    memcpy(&tr, r->data + r->size - sizeof tr, sizeof tr);
    uint64_t end = r->size - sizeof tr;
    if (tr.magic != TP_TRAILER_MAGIC || tr.index_offset < body || tr.index_offset > end ||
        tr.index_bytes != end - tr.index_offset || tr.index_bytes < sizeof(tp_chunk_header))
        return;
    chunk_ref c = {.off = tr.index_offset};
    memcpy(&c.h, r->data + c.off, sizeof c.h);
    if (!tp_chunk_header_ok(&c.h) || c.h.kind != TP_CHUNK_INDEX ||
        tp_chunk_span(&c.h) != tr.index_bytes ||
        !TP_CRC_EQ(tp_chunk_crc(r->data + c.off + sizeof c.h, c.h.payload_bytes), c.h.payload_crc))
        return;
    uint8_t *buf = NULL;
    size_t cap = 0;
    int whole;
    long n = chunk_decode(&r->dec, r->data, &c, &buf, &cap, &whole, NULL, NULL);
    (void)whole; /* the index payload is not records: only its length matters */
    tp_index_head ih;
    if (!own(r, buf) || n < 0 || c.h.raw_bytes < sizeof ih)
        return;
    memcpy(&ih, buf, sizeof ih);
    uint64_t need = sizeof ih + (uint64_t)ih.entry_count * ih.entry_size + 16u * TP_REC_TYPE_LIMIT;
    if (ih.entry_size < sizeof(tp_index_entry) || need != c.h.raw_bytes)
        return;
    r->index_payload = buf;
    r->index_entries = ih.entry_count;
    r->index_off = tr.index_offset;
    r->index_bytes = tr.index_bytes;
    r->integ.index_ok = 1;
}

static tp_index_entry index_entry(const tp_reader *r, size_t i) {
    tp_index_head ih;
    memcpy(&ih, r->index_payload, sizeof ih);
    tp_index_entry e;
    memcpy(&e, r->index_payload + sizeof ih + i * ih.entry_size, sizeof e);
    return e;
}

/* Index totals: u64 records[64] then u64 dropped[64] after the entries. */
static uint64_t index_total(const tp_reader *r, int dropped, size_t type) {
    tp_index_head ih;
    memcpy(&ih, r->index_payload, sizeof ih);
    size_t at = sizeof ih + (size_t)ih.entry_count * ih.entry_size;
    uint64_t v;
    memcpy(&v, r->index_payload + at + (dropped ? 8u * TP_REC_TYPE_LIMIT : 0) + type * 8, 8);
    return v;
}

/* ------------------------------------------------------------------ the walk */

/* Offset of the next 8-aligned chunk header with a valid CRC in [from, end), else end. */
static uint64_t resync(const tp_reader *r, uint64_t from, uint64_t end) {
    from = TP_REC_ALIGN(from);
    for (uint64_t p = from; p + sizeof(tp_chunk_header) <= end; p += 8) {
        uint32_t m;
        memcpy(&m, r->data + p, 4);
        if (m != TP_CHUNK_MAGIC)
            continue;
        tp_chunk_header h;
        memcpy(&h, r->data + p, sizeof h);
        if (tp_chunk_header_ok(&h))
            return p;
    }
    return end;
}

/* Cross-checks one good chunk against the next index entry: every field the entry copies
 * from the chunk header must agree, since info trusts the index instead of the chunks. */
static void index_check(tp_reader *r, const chunk_ref *c) {
    if (!r->integ.index_ok || c->h.kind == TP_CHUNK_INDEX)
        return;
    if (r->good_listed < r->index_entries) {
        tp_index_entry e = index_entry(r, r->good_listed);
        if (e.offset != c->off || e.record_count != c->h.record_count || e.kind != c->h.kind ||
            e.t_min != c->h.t_min || e.t_max != c->h.t_max || e.type_mask != c->h.type_mask)
            r->index_matches = 0;
    } else {
        r->index_matches = 0;
    }
    r->good_listed++;
}

/* 1 when the index's per-type totals are consistent with its entries: they add up (without
 * wrapping) to the records the entries list, a type has records exactly when some chunk's
 * type mask names it, and drops are counted only where DROPPED records exist. CRCs only
 * prove the index is what some writer wrote; these checks catch one that lies. */
static int index_totals_ok(const tp_reader *r) {
    uint64_t listed = 0, mask = 0, total = 0, dropped = 0;
    for (size_t i = 0; i < r->index_entries; i++) {
        tp_index_entry e = index_entry(r, i);
        listed += e.record_count; /* < 2^32 entries of < 2^32 records: cannot wrap */
        mask |= e.type_mask;
    }
    for (size_t t = 0; t < TP_REC_TYPE_LIMIT; t++) {
        uint64_t n = index_total(r, 0, t);
        if (__builtin_add_overflow(total, n, &total) ||
            __builtin_add_overflow(dropped, index_total(r, 1, t), &dropped) ||
            (n != 0) != ((mask >> t) & 1))
            return 0;
    }
    return total == listed && (dropped == 0 || index_total(r, 0, TP_REC_DROPPED) != 0);
}

static void set_message(tp_reader *r);

/* Widens the time span of the good chunks by `h`'s. */
static void add_span(tp_reader *r, const tp_chunk_header *h) {
    if (h->kind != TP_CHUNK_INDEX && h->t_min <= h->t_max) {
        r->span_min = h->t_min < r->span_min ? h->t_min : r->span_min;
        r->span_max = h->t_max > r->span_max ? h->t_max : r->span_max;
    }
}

/* Checks the payload CRC of a chunk the walk deferred (walk). A failure counts as the walk
 * would have counted it: a damaged chunk, its bytes lost, and an index that no longer lists
 * exactly the good chunks. Returns 1 when the chunk is good. */
static int settle_chunk(tp_reader *r, chunk_ref *c) {
    if (c->pending) {
        c->pending = 0;
        if (TP_CRC_EQ(tp_chunk_crc(r->data + c->off + sizeof c->h, c->h.payload_bytes),
                      c->h.payload_crc)) {
            add_span(r, &c->h);
        } else {
            c->bad = 1;
            r->integ.chunks_ok--;
            r->integ.chunks_bad++;
            r->integ.bytes_lost += tp_chunk_span(&c->h);
            r->index_matches = 0;
            r->integ.message[0] = '\0';
            set_message(r);
        }
    }
    return !c->bad;
}

/* Settles every deferred chunk (before anything reports on the whole file). */
static void settle_all(tp_reader *r) {
    for (size_t i = 0; i < r->nchunks; i++)
        settle_chunk(r, &r->chunks[i]);
}

/* Uses one verified chunk. Returns 0 on out-of-memory. */
static int take_chunk(tp_reader *r, const chunk_ref *c) {
    int bad = 0;
    if (c->h.kind == TP_CHUNK_DATA) {
        if (!TP_MEM_GROW(r->chunks, r->chunks_cap, r->nchunks + 1))
            return 0;
        r->chunks[r->nchunks++] = *c;
    } else if (c->h.kind == TP_CHUNK_META) {
        if (!load_meta_chunk(r, c, &bad))
            return 0;
    }
    if (bad) {
        r->integ.chunks_bad++;
        r->integ.bytes_lost += tp_chunk_span(&c->h);
        return 1;
    }
    r->integ.chunks_ok++;
    if (!c->pending)
        add_span(r, &c->h);
    r->last_good_seq = c->h.seq;
    r->have_good = 1;
    index_check(r, c);
    return 1;
}

static int chunk_plausible(const chunk_ref *c) {
    const tp_chunk_header *h = &c->h;
    return h->kind >= TP_CHUNK_DATA && h->kind <= TP_CHUNK_INDEX && tp_codec_by_id(h->codec) &&
           h->filter <= TP_FILTER_LANE_SPARSE && h->raw_bytes <= TP_CHUNK_RAW_MAX;
}

static int trailer_magic_at(const tp_reader *r, uint64_t pos) {
    tp_trailer tr;
    memcpy(&tr, r->data + pos, sizeof tr);
    return tr.magic == TP_TRAILER_MAGIC;
}

/* Walks all chunks between the file header and `end`. Returns 0 on out-of-memory. */
static int walk(tp_reader *r, uint64_t pos, uint64_t end) {
    while (pos < end) {
        if (end - pos == sizeof(tp_trailer) && end == r->size && trailer_magic_at(r, pos))
            break; /* the index was damaged but the file ends as a finished one does */
        if (end - pos < sizeof(tp_chunk_header)) {
            r->integ.truncated = 1;
            r->integ.bytes_lost += end - pos;
            break;
        }
        chunk_ref c = {.off = pos};
        memcpy(&c.h, r->data + pos, sizeof c.h);
        if (!tp_chunk_header_ok(&c.h)) {
            uint64_t next = resync(r, pos + 8, end);
            r->integ.chunks_bad++;
            r->integ.bytes_lost += next - pos;
            pos = next;
            continue;
        }
        uint64_t span = tp_chunk_span(&c.h);
        if (span > end - pos) {
            r->integ.truncated = 1;
            r->integ.bytes_lost += end - pos;
            break;
        }
        if (r->win_hi > r->win_lo && c.h.kind == TP_CHUNK_DATA && chunk_plausible(&c) &&
            !(c.h.t_min <= c.h.t_max && c.h.t_min < r->win_hi && c.h.t_max >= r->win_lo)) {
            /* outside the window: its header (CRC checked) says so; listed as the index
             * lists it, so the cross-check still holds, never read */
            index_check(r, &c);
            pos += span;
            continue;
        }
        /* A data chunk's payload is checked when it is first decoded, while its bytes are
         * in the cache anyway, if the footer index is intact: the index's CRC held and every
         * chunk it lists is cross-checked here. tp_reader_info and tp_reader_integrity check
         * whatever no cursor reached, so every figure is as if checked now. */
        c.pending = r->integ.index_ok && c.h.kind == TP_CHUNK_DATA && chunk_plausible(&c);
        /* The INDEX chunk's payload CRC held in read_index, or index_ok would be 0. */
        int checked = r->integ.index_ok && pos == r->index_off;
        if (!chunk_plausible(&c) ||
            (!c.pending && !checked &&
             !TP_CRC_EQ(tp_chunk_crc(r->data + pos + sizeof c.h, c.h.payload_bytes),
                        c.h.payload_crc))) {
            r->integ.chunks_bad++;
            r->integ.bytes_lost += span;
        } else if (!take_chunk(r, &c)) {
            return 0;
        }
        pos += span;
    }
    return 1;
}

static void set_message(tp_reader *r) {
    tp_integrity *g = &r->integ;
    char *m = g->message;
    size_t n = sizeof g->message;
    int k = 0;
    if (g->truncated) {
        char after[40] = "at the first chunk";
        if (r->have_good)
            snprintf(after, sizeof after, "after chunk %" PRIu64, r->last_good_seq);
        k = snprintf(m, n, "file cut off: %" PRIu64 " of %" PRIu64 " bytes lost %s", g->bytes_lost,
                     g->file_bytes, after);
    } else if (g->chunks_bad) {
        k = snprintf(m, n,
                     "%" PRIu64 " damaged chunk(s) skipped: %" PRIu64 " of %" PRIu64 " bytes lost",
                     g->chunks_bad, g->bytes_lost, g->file_bytes);
    } else if (g->index_bad) {
        k = snprintf(m, n,
                     "the index disagrees with the chunks it lists; ignored, the file was "
                     "read by scanning");
    } else if (!g->index_ok) {
        k = snprintf(m, n, "no index (the writer did not finish); the file was read by scanning");
    }
    if (g->truncated && g->chunks_bad && k > 0 && (size_t)k < n)
        snprintf(m + k, n - (size_t)k, "; %" PRIu64 " damaged chunk(s) skipped", g->chunks_bad);
}

/* ------------------------------------------------------------------ open / close */

static tp_status check_header(tp_reader *r) {
    if (r->size == 0)
        return TP_ERR_EMPTY;
    if (r->size < TP_FILE_HEADER_SIZE) {
        size_t n = r->size < 8 ? r->size : 8;
        return memcmp(r->data, TP_FILE_MAGIC, n) == 0 ? TP_ERR_TRUNCATED : TP_ERR_FORMAT;
    }
    memcpy(&r->fh, r->data, sizeof r->fh);
    const tp_file_header *fh = &r->fh;
    if (memcmp(fh->magic, TP_FILE_MAGIC, 8) != 0 || fh->bom != TP_FILE_BOM)
        return TP_ERR_FORMAT;
    if (fh->version_major != TP_FILE_VERSION_MAJOR)
        return TP_ERR_VERSION;
    if (fh->header_size < TP_FILE_HEADER_SIZE || fh->header_size % 8 || fh->header_size > r->size)
        return TP_ERR_FORMAT;
    uint32_t crc =
        tp_chunk_crc_skip(r->data, fh->header_size, offsetof(tp_file_header, header_crc));
    return TP_CRC_EQ(crc, fh->header_crc) ? TP_OK : TP_ERR_CORRUPT;
}

static tp_status reader_init(tp_reader *r) {
    r->integ.file_bytes = r->size;
    r->span_min = UINT64_MAX;
    tp_status s = check_header(r);
    if (s != TP_OK)
        return s;
    if (!decoder_init(&r->dec))
        return TP_ERR_NOMEM;
    uint64_t body = r->fh.header_size;
    read_index(r, body);
    r->index_matches = r->integ.index_ok;
    if (!walk(r, body, r->integ.index_ok ? r->index_off + r->index_bytes : r->size))
        return TP_ERR_NOMEM;
    if (r->good_listed != r->index_entries || (r->index_matches && !index_totals_ok(r)))
        r->index_matches = 0;
    /* An index that disagrees with undamaged chunks lies: say so (counts come from a scan).
     * With damaged chunks the disagreement is theirs, already reported. */
    if (r->integ.index_ok && !r->index_matches && r->integ.chunks_bad == 0) {
        r->integ.index_ok = 0;
        r->integ.index_bad = 1;
    }
    meta_sort(r);
    set_message(r);
    return TP_OK;
}

static tp_status open_common(tp_reader *r, tp_reader **out) {
    tp_status s = reader_init(r);
    if (s != TP_OK) {
        tp_reader_close(r);
        return s;
    }
    *out = r;
    return TP_OK;
}

tp_status tp_reader_open_mem(const void *data, size_t size, tp_reader **out) {
    *out = NULL;
    tp_reader *r = calloc(1, sizeof *r);
    if (!r)
        return TP_ERR_NOMEM;
    r->data = data;
    r->size = size;
    return open_common(r, out);
}

static tp_status open_file(const char *path, uint64_t win_lo, uint64_t win_hi, tp_reader **out);

tp_status tp_reader_open(const char *path, tp_reader **out) {
    return open_file(path, 0, 0, out);
}

tp_status tp_reader_open_window(const char *path, uint64_t t0, uint64_t t1, tp_reader **out) {
    return open_file(path, t0, t1, out);
}

static tp_status open_file(const char *path, uint64_t win_lo, uint64_t win_hi, tp_reader **out) {
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return TP_ERR_OPEN;
    struct stat st;
    int fst = fstat(fd, &st);
    if (fst != 0 || !S_ISREG(st.st_mode)) {
        int e = fst != 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
        close(fd);
        errno = e;
        return TP_ERR_OPEN;
    }
    tp_reader *r = calloc(1, sizeof *r);
    if (!r) {
        close(fd);
        return TP_ERR_NOMEM;
    }
    r->size = (size_t)st.st_size;
    if (r->size > 0) {
        void *p = mmap(NULL, r->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int e = errno;
            close(fd);
            free(r);
            errno = e;
            return TP_ERR_IO;
        }
        r->data = p;
        r->mapped = 1;
    }
    close(fd);
    r->win_lo = win_lo, r->win_hi = win_hi;
    return open_common(r, out);
}

void tp_reader_close(tp_reader *r) {
    if (!r)
        return;
    if (r->mapped)
        munmap((void *)r->data, r->size);
    for (size_t i = 0; i < r->nowned; i++)
        free(r->owned[i]);
    free(r->owned);
    free(r->chunks);
    free(r->strings.v);
    free(r->stacks.v);
    free(r->modules.v);
    free(r->pycodes.v);
    free(r->threads.v);
    for (int t = 0; t < TP_REC_TYPE_LIMIT; t++)
        free(r->meta[t].v);
    decoder_free(&r->dec);
    free(r);
}

const tp_integrity *tp_reader_integrity(const tp_reader *r) {
    /* the reader is the caller's to change (cursors do); const only promises no visible
     * change: the deferred checks make the figures what they would have been at open */
    settle_all((tp_reader *)r);
    return &r->integ;
}

/* ------------------------------------------------------------------ info */

/* Per-type counts by decoding every good data chunk (no usable index). */
static void info_scan(tp_reader *r, tp_trace_info *in) {
    memcpy(in->records, r->meta_records, sizeof in->records);
    uint8_t *buf = NULL;
    size_t cap = 0;
    for (size_t i = 0; i < r->nchunks; i++) {
        int whole;
        if (r->chunks[i].bad)
            continue;
        long n = chunk_decode(&r->dec, r->data, &r->chunks[i], &buf, &cap, &whole, NULL, NULL);
        for (long off = 0; off < n; off += ((tp_rec_hdr *)(buf + off))->size) {
            const tp_rec_hdr *h = (const tp_rec_hdr *)(buf + off);
            if (h->type < TP_REC_TYPE_LIMIT)
                in->records[h->type]++;
            if (h->type == TP_REC_DROPPED && h->size >= sizeof(tp_rec_dropped))
                in->dropped_total += ((const tp_rec_dropped *)h)->count;
        }
    }
    free(buf);
}

static void info_from_index(tp_reader *r, tp_trace_info *in) {
    for (size_t t = 0; t < TP_REC_TYPE_LIMIT; t++) {
        in->records[t] = index_total(r, 0, t);
        in->dropped_total += index_total(r, 1, t);
    }
}

/* Time span from the good chunks' headers (metadata chunks hold CLOCK_SYNC records). */
static void info_span(tp_reader *r, tp_trace_info *in) {
    int any = r->span_min <= r->span_max;
    in->t_min = any ? r->span_min : 0;
    in->t_max = any ? r->span_max : 0;
}

const tp_trace_info *tp_reader_info(tp_reader *r) {
    if (r->info_ready)
        return &r->info;
    settle_all(r);
    tp_trace_info *in = &r->info;
    memset(in, 0, sizeof *in);
    in->version_major = r->fh.version_major;
    in->version_minor = r->fh.version_minor;
    memcpy(in->producer, r->fh.producer, sizeof r->fh.producer);
    in->created_realtime_ns = r->fh.created_realtime_ns;
    if (r->index_matches)
        info_from_index(r, in);
    else
        info_scan(r, in);
    for (size_t t = 0; t < TP_REC_TYPE_LIMIT; t++)
        in->records_total += in->records[t];
    info_span(r, in);
    r->info_ready = 1;
    return in;
}

uint64_t tp_reader_index_count(const tp_reader *r, const uint16_t *types, size_t n) {
    uint64_t sum = 0;
    for (size_t i = 0; i < n && r->index_matches; i++)
        if (types[i] < TP_REC_TYPE_LIMIT) /* < 2^64 in all: see index_totals_ok */
            sum += index_total(r, 0, types[i]);
    return sum < r->size ? sum : r->size; /* see the header: a crafted index sizes nothing huge */
}

/* ------------------------------------------------------------------ metadata lookups */

void tp_reader_each_interned(const tp_reader *r, uint16_t type,
                             void (*fn)(void *ctx, const tp_rec_hdr *rec), void *ctx) {
    const id_table *t = type == TP_REC_STRING  ? &r->strings
                        : type == TP_REC_STACK ? &r->stacks
                                               : NULL;
    /* an entry points into its record (load_string, load_stack): the record starts before */
    size_t at =
        type == TP_REC_STRING ? offsetof(tp_rec_string, text) : offsetof(tp_rec_stack, frames);
    for (size_t i = 0; t && i < t->n; i++)
        fn(ctx, (const tp_rec_hdr *)((const uint8_t *)t->v[i].p - at));
}

const char *tp_reader_string(const tp_reader *r, uint32_t sid) {
    const id_entry *e = sid ? id_find(&r->strings, sid) : NULL;
    return e ? e->p : NULL;
}

const uint64_t *tp_reader_stack(const tp_reader *r, uint32_t id, uint32_t *n) {
    const id_entry *e = id ? id_find(&r->stacks, id) : NULL;
    *n = e ? e->n : 0;
    return e ? e->p : NULL;
}

const tp_rec_module *tp_reader_module(const tp_reader *r, uint32_t id) {
    const id_entry *e = id_find(&r->modules, id);
    return e ? e->p : NULL;
}

const tp_rec_pycode *tp_reader_pycode(const tp_reader *r, uint32_t id) {
    const id_entry *e = id ? id_find(&r->pycodes, id) : NULL;
    return e ? e->p : NULL;
}

const char *tp_reader_thread_name(const tp_reader *r, uint32_t tid) {
    const id_entry *e = id_find(&r->threads, tid);
    return e ? tp_reader_string(r, e->n) : NULL;
}

size_t tp_reader_meta(const tp_reader *r, uint16_t type, const tp_rec_hdr *const **recs) {
    if (type >= TP_REC_TYPE_LIMIT) {
        *recs = NULL;
        return 0;
    }
    *recs = r->meta[type].v;
    return r->meta[type].n;
}

/* ------------------------------------------------------------------ cursors */

static int timed_query(const tp_query *q) {
    return q->t_begin || q->t_end;
}

tp_status tp_cursor_open(tp_reader *r, const tp_query *q, tp_cursor **out) {
    *out = NULL;
    tp_cursor *c = calloc(1, sizeof *c);
    if (!c)
        return TP_ERR_NOMEM;
    c->r = r;
    if (q)
        c->q = *q;
    if (!c->q.type_mask)
        c->q.type_mask = ~0ull;
    for (uint16_t t = 1; t < TP_REC_TYPE_LIMIT; t++) /* PAD (0) is never returned */
        if (tp_record_name(t))
            c->known |= TP_REC_BIT(t);
    c->want = c->known & c->q.type_mask;
    c->timed = timed_query(&c->q);
    c->fast = c->fast_any = c->timed ? 0 : c->want;
    if (!decoder_init(&c->dec)) {
        free(c);
        return TP_ERR_NOMEM;
    }
    *out = c;
    return TP_OK;
}

static void ahead_stop(tp_cursor *c);

void tp_cursor_close(tp_cursor *c) {
    if (!c)
        return;
    if (c->ahead)
        ahead_stop(c);
    decoder_free(&c->dec);
    free(c->buf);
    free(c);
}

static int chunk_wanted(const tp_query *q, const tp_chunk_header *h) {
    if (!(h->type_mask & q->type_mask))
        return 0;
    return !timed_query(q) ||
           (h->t_min <= h->t_max && h->t_min < q->t_end && h->t_max >= q->t_begin);
}

static int in_window(const tp_query *q, const tp_rec_hdr *h) {
    if (!(h->flags & TP_RF_TIMED))
        return 0; /* untimed records have no place in a time window */
    uint64_t ts = tp_record_ts(h), end = tp_record_end(h);
    return ts < q->t_end && (end > q->t_begin || ts >= q->t_begin);
}

static __attribute__((noinline)) int record_wanted(tp_cursor *c, const tp_rec_hdr *h) {
    uint64_t bit = h->type < TP_REC_TYPE_LIMIT ? TP_REC_BIT(h->type) : 0;
    if (bit & c->want) {
        if (c->timed && !in_window(&c->q, h))
            return 0;
        if (c->late_limit && record_t_hi(c->late_kind, h) > c->late_limit) {
            c->late++;
            return 0;
        }
        return 1;
    }
    if (!(bit & c->known))
        c->r->integ.unknown_records += c->first_visit && h->type != TP_REC_PAD;
    return 0;
}

/* Decodes the next wanted chunk into *out; 0 when there is none. */
static int decode_next(tp_cursor *c, chunk_out *out) {
    tp_reader *r = c->r;
    while (c->next_chunk < r->nchunks) {
        chunk_ref *ch = &r->chunks[c->next_chunk++];
        if (!chunk_wanted(&c->q, &ch->h) || !settle_chunk(r, ch))
            continue;
        int whole;
        /* each chunk's latest time, for the late limit: with the records as they are put
         * together (filter 4), or a walk over them */
        uint64_t t_hi = 0;
        long n = chunk_decode(&c->dec, r->data, ch, &out->buf, &out->cap, &whole,
                              c->late_limit ? c->late_kind : NULL, &t_hi);
        out->first_visit = !ch->visited;
        if (!whole && !ch->visited) { /* CRC held, content did not: writer bug or crafted file */
            r->integ.chunks_bad++;
            r->integ.chunks_ok--;
        }
        ch->visited = 1;
        if (n <= 0)
            continue;
        out->len = (size_t)n;
        out->t_hi = t_hi;
        return 1;
    }
    return 0;
}

static void *ahead_main(void *arg) {
    tp_cursor *c = arg;
    read_ahead *a = c->ahead;
    for (int k = 0;; k ^= 1) {
        pthread_mutex_lock(&a->mu);
        while (a->full[k] && !a->stop)
            pthread_cond_wait(&a->cv, &a->mu);
        int stop = a->stop;
        pthread_mutex_unlock(&a->mu);
        if (stop)
            break;
        int got = decode_next(c, &a->slot[k]); /* slot k is no reader's now */
        pthread_mutex_lock(&a->mu);
        a->full[k] = got;
        a->done = !got;
        pthread_cond_broadcast(&a->cv);
        pthread_mutex_unlock(&a->mu);
        if (!got)
            break;
    }
    return NULL;
}

/* The cursor's test of the records of a chunk whose times t_hi bounds (chunk_decode): the fast
 * one when the bound is not past the late limit, so no record is. */
static void chunk_fast(tp_cursor *c, uint64_t t_hi) {
    c->fast = !c->late_limit || t_hi <= c->late_limit ? c->fast_any : 0;
}

/* The next chunk from the read-ahead thread: the slot read so far is handed back. */
static int ahead_next(tp_cursor *c) {
    read_ahead *a = c->ahead;
    pthread_mutex_lock(&a->mu);
    int k = a->cur < 0 ? 0 : a->cur ^ 1;
    if (a->cur >= 0) {
        a->full[a->cur] = 0;
        pthread_cond_broadcast(&a->cv);
    }
    while (!a->full[k] && !a->done)
        pthread_cond_wait(&a->cv, &a->mu);
    int got = a->full[k];
    a->cur = got ? k : -1;
    pthread_mutex_unlock(&a->mu);
    if (!got)
        return 0;
    c->buf = a->slot[k].buf; /* the slot's: not the cursor's to free */
    c->len = a->slot[k].len;
    c->first_visit = a->slot[k].first_visit;
    chunk_fast(c, a->slot[k].t_hi);
    c->off = 0;
    return 1;
}

static void ahead_stop(tp_cursor *c) {
    read_ahead *a = c->ahead;
    pthread_mutex_lock(&a->mu);
    a->stop = 1;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    pthread_join(a->th, NULL);
    pthread_cond_destroy(&a->cv);
    pthread_mutex_destroy(&a->mu);
    free(a->slot[0].buf), free(a->slot[1].buf);
    free(a);
    c->ahead = NULL;
    c->buf = NULL, c->cap = c->len = c->off = 0;
}

void tp_cursor_set_late(tp_cursor *c, uint64_t t_limit) {
    c->late_limit = t_limit;
    for (uint16_t t = 0; t < TP_REC_TYPE_LIMIT; t++) {
        uint16_t f = tp_record_info(t)->flags;
        c->late_kind[t] = !(f & TP_RF_TIMED)     ? LATE_NONE
                          : (f & TP_RF_INTERVAL) ? LATE_END
                                                 : LATE_TS;
    }
}

uint64_t tp_cursor_late(const tp_cursor *c) {
    return c->late;
}

int tp_cursor_read_ahead(tp_cursor *c) {
    if (c->ahead || c->buf || c->next_chunk) /* before the first record only */
        return c->ahead != NULL;
    read_ahead *a = calloc(1, sizeof *a);
    if (!a)
        return 0;
    a->cur = -1;
    if (pthread_mutex_init(&a->mu, NULL) != 0) {
        free(a);
        return 0;
    }
    if (pthread_cond_init(&a->cv, NULL) != 0) {
        pthread_mutex_destroy(&a->mu);
        free(a);
        return 0;
    }
    c->ahead = a;
    if (pthread_create(&a->th, NULL, ahead_main, c) != 0) {
        pthread_cond_destroy(&a->cv);
        pthread_mutex_destroy(&a->mu);
        free(a);
        c->ahead = NULL;
        return 0;
    }
    return 1;
}

/* Makes the next wanted chunk the cursor's; 0 when there is none. */
static int next_chunk(tp_cursor *c) {
    if (c->ahead)
        return ahead_next(c);
    chunk_out out = {c->buf, c->cap, 0, 0, 0};
    int got = decode_next(c, &out);
    c->buf = out.buf, c->cap = out.cap; /* grown or not, the cursor's */
    if (!got)
        return 0;
    c->len = out.len;
    c->first_visit = out.first_visit;
    chunk_fast(c, out.t_hi);
    c->off = 0;
    return 1;
}

/* The next record of the current chunk the cursor returns, or NULL at the chunk's end. The
 * common case (a known type the query wants, no time window) is tested first from one mask,
 * so the loop needs no call; everything else goes through record_wanted. */
static inline const tp_rec_hdr *scan_chunk(tp_cursor *c) {
    const uint8_t *buf = c->buf;
    size_t off = c->off, len = c->len;
    while (off < len) {
        const tp_rec_hdr *h = (const tp_rec_hdr *)(buf + off);
        off += h->size;
        if ((h->type < TP_REC_TYPE_LIMIT && (c->fast >> h->type & 1)) || record_wanted(c, h)) {
            c->off = off;
            return h;
        }
    }
    c->off = off;
    return NULL;
}

/* Out of line: what tp_cursor_next needs once per chunk. */
static __attribute__((noinline)) const tp_rec_hdr *next_in_next_chunks(tp_cursor *c) {
    while (next_chunk(c)) {
        const tp_rec_hdr *h = scan_chunk(c);
        if (h)
            return h;
    }
    return NULL;
}

/* The rest of tp_cursor_next: a record its first test leaves (not the fast kind, or the
 * chunk's end). */
static __attribute__((noinline)) const tp_rec_hdr *next_slow(tp_cursor *c) {
    const tp_rec_hdr *h = scan_chunk(c);
    return h ? h : next_in_next_chunks(c);
}

/* The next record at c->off, when it is of the fast kind (nearly every record), without a
 * loop or a call: then nothing lives across a call and no register is saved (scan_chunk
 * inline here cost ~22 instructions a record, ~9 of them saving and restoring two). */
const tp_rec_hdr *tp_cursor_next(tp_cursor *c) {
    size_t off = c->off;
    if (off < c->len) {
        const tp_rec_hdr *h = (const tp_rec_hdr *)(c->buf + off);
        if (h->type < TP_REC_TYPE_LIMIT && (c->fast >> h->type & 1)) {
            c->off = off + h->size;
            return h;
        }
    }
    return next_slow(c);
}

void tp_cursor_run_begin(const tp_cursor *c, tp_cursor_run *run) {
    *run = (tp_cursor_run){c->buf, c->off, c->len, c->fast};
}

void tp_cursor_run_end(tp_cursor *c, size_t off) {
    assert(off >= c->off && off <= c->len);
    c->off = off;
}
