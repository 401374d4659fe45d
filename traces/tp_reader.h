/* tp_reader: opens a .tprof trace and iterates its records.
 *
 * Opening maps the file, checks the header, reads the footer index when it is intact and
 * otherwise scans chunk by chunk, resynchronising after damage. Every chunk is checked
 * (header and payload CRC) before use; a damaged or cut-off chunk is skipped and counted
 * in tp_integrity, never trusted. All metadata (strings, stacks, modules, threads, ...) is
 * loaded at open; data chunks are decompressed lazily by cursors. Never crashes on bad
 * input: every length and id from the file is bounds-checked. */
#ifndef TP_READER_H
#define TP_READER_H

#include <stddef.h>
#include <stdint.h>

#include "tp_record.h"
#include "tp_status.h"

typedef struct tp_reader tp_reader;
typedef struct tp_cursor tp_cursor;

typedef struct {
    uint64_t file_bytes;
    uint64_t chunks_ok;       /* chunks read and verified */
    uint64_t chunks_bad;      /* chunks that failed a check and were skipped */
    uint64_t bytes_lost;      /* bytes of the file not covered by a good chunk */
    int index_ok;             /* 1: the footer index was intact (file closed cleanly) */
    int truncated;            /* 1: the file ends inside a chunk */
    uint64_t unknown_records; /* records of types this reader does not know (skipped);
                                 data chunks count once a cursor has decoded them */
    char message[256];        /* one line for people; empty when all is well */
    int index_bad; /* 1: an index with valid CRCs disagreed with the chunks or with itself; it
                      was ignored (index_ok is 0) and counts come from a scan */
} tp_integrity;

typedef struct {
    uint16_t version_major, version_minor;
    char producer[33];
    uint64_t created_realtime_ns;
    uint64_t records[TP_REC_TYPE_LIMIT]; /* by type, over good chunks */
    uint64_t records_total;
    uint64_t t_min, t_max;  /* trace-clock span of timed records; 0,0 when none */
    uint64_t dropped_total; /* sum of DROPPED counts */
} tp_trace_info;

/* Opens `path`. On success *out is set and must be closed; damage that still leaves a
 * readable file is reported through tp_reader_integrity, not as an error. Errors:
 * TP_ERR_OPEN and TP_ERR_IO (errno says why: tp_status_why), TP_ERR_FORMAT (not a trace),
 * TP_ERR_VERSION, TP_ERR_NOMEM. */
tp_status tp_reader_open(const char *path, tp_reader **out);

/* The same for a window [t0, t1) (t1 > t0) of a trace, as the live client reads the traces a
 * running job's other processes are writing (no index yet: an open scans every chunk): DATA
 * chunks whose header puts no timed record in it are passed over unread (nor their payload
 * checked: their records are as absent, from the cursors and every count). Metadata is read
 * whole. */
tp_status tp_reader_open_window(const char *path, uint64_t t0, uint64_t t1, tp_reader **out);

/* Same over a caller-owned memory image (fuzzing, tests). `data` must outlive the reader. */
tp_status tp_reader_open_mem(const void *data, size_t size, tp_reader **out);

void tp_reader_close(tp_reader *r); /* NULL: no-op */

const tp_integrity *tp_reader_integrity(const tp_reader *r);

/* Header fields, per-type counts and time span (from the index, or counted by a scan). */
const tp_trace_info *tp_reader_info(tp_reader *r);

/* The footer index's count of the records of types[0..n), at once: without the payload
 * checks tp_reader_info settles first (a chunk that fails one late holds records the cursors
 * skip), so an upper bound, for sizing; 0 without an intact index. At most the file's size
 * in bytes (real traces take ~2.7 bytes a record): the totals are the chunk headers' counts,
 * which nothing checks against the records before they are decoded. Call it before a
 * cursor's read-ahead thread runs (a late failed check clears the index's standing there). */
uint64_t tp_reader_index_count(const tp_reader *r, const uint16_t *types, size_t n);

/* ---- metadata ---- */

/* The string with id `sid`, or NULL when unknown (0 is never a string). Owned by the reader. */
const char *tp_reader_string(const tp_reader *r, uint32_t sid);

/* Frames of stack `id` (TP_FRAME_MAKE encoding); NULL and *n = 0 when unknown. */
const uint64_t *tp_reader_stack(const tp_reader *r, uint32_t id, uint32_t *n);

/* The MODULE record with `id`, or NULL. */
const tp_rec_module *tp_reader_module(const tp_reader *r, uint32_t id);

/* The PYCODE record with `id` (the code of a TP_FRAME_PYTHON frame), or NULL. */
const tp_rec_pycode *tp_reader_pycode(const tp_reader *r, uint32_t id);

/* The latest name of thread `tid` (NULL when never named). */
const char *tp_reader_thread_name(const tp_reader *r, uint32_t tid);

/* All metadata records of one type in file order (PROCESS, THREAD, MODULE, DOMAIN, CATEGORY,
 * DEVICE, STREAM, EXT_CORRELATION, PYCODE, CLOCK_SYNC). Returns the count; *recs owned by the
 * reader. */
size_t tp_reader_meta(const tp_reader *r, uint16_t type, const tp_rec_hdr *const **recs);

/* Calls fn with every STRING (type TP_REC_STRING) or STACK record the file holds, by id (an
 * id written twice: each, the latest last), for a writer that copies a trace (tp_cut). */
void tp_reader_each_interned(const tp_reader *r, uint16_t type,
                             void (*fn)(void *ctx, const tp_rec_hdr *rec), void *ctx);

/* ---- iteration ---- */

typedef struct {
    uint64_t type_mask;      /* TP_REC_BIT(type)s to return; 0 = every type */
    uint64_t t_begin, t_end; /* keep timed records overlapping [t_begin, t_end); 0,0 = all */
} tp_query;

/* Iterates data records in file order (ordered by time within one thread; chunks skipped by
 * their time range and type mask). `q` may be NULL for everything. */
tp_status tp_cursor_open(tp_reader *r, const tp_query *q, tp_cursor **out);

/* Next matching record, or NULL at the end. The record lives until the next call; it is
 * 8-byte aligned and at least r->size bytes long (use tp_record_get for a full struct). */
const tp_rec_hdr *tp_cursor_next(tp_cursor *c);
/* The records at the cursor that tp_cursor_next returns from its first test, for a caller
 * that walks them itself: from buf + off while off < len and each record's type is below
 * TP_REC_TYPE_LIMIT with its bit set in `fast` (its size then moves off on; it stays valid
 * until the cursor leaves the chunk), then hands the offset it stopped at back with
 * tp_cursor_run_end and takes the next record from tp_cursor_next (which does the rest: other
 * records, time limits, the next chunk). One loop a record, with no array between the cursor
 * and the caller (a batch of record pointers, its earlier form, took ~14 instructions a
 * record and its caller's loop). */
typedef struct {
    const uint8_t *buf;
    size_t off, len;
    uint64_t fast;
} tp_cursor_run;
void tp_cursor_run_begin(const tp_cursor *c, tp_cursor_run *run);
/* `off`: where the caller stopped, at or past run->off, at most run->len, on a record's start
 * (or the end): the records before it count as returned. */
void tp_cursor_run_end(tp_cursor *c, size_t off);

void tp_cursor_close(tp_cursor *c); /* NULL: no-op */

/* Decodes chunks ahead on a thread of the cursor's own while the caller reads records (a
 * chunk is a few hundred records: the caller's work on them overlaps the next one's
 * decompression). The records, their order and every count the reader keeps are the same;
 * the reader must not be used by anything else (another cursor, tp_reader_info,
 * tp_reader_integrity) until the cursor is closed. Call before the first tp_cursor_next.
 * Returns 1 when the thread runs, 0 when the cursor goes on decoding as it reads (no thread
 * could be started, or records were read already). */
int tp_cursor_read_ahead(tp_cursor *c);

/* Records of a timed type whose ts, or for an interval type whose end, lies past `t_limit`
 * (read by the type's layout, whatever the record's flags say; a short record's missing
 * fields as 0) are not returned, only counted (tp_cursor_late): a corrupt or crafted clock.
 * Each chunk's latest time is found once as it is decoded (on the read-ahead thread, when
 * there is one), so the records of a chunk within the limit cost no test. Call before
 * tp_cursor_read_ahead and the first tp_cursor_next; 0: no limit (the default). */
void tp_cursor_set_late(tp_cursor *c, uint64_t t_limit);

/* The records left out by tp_cursor_set_late's limit so far. */
uint64_t tp_cursor_late(const tp_cursor *c);

#endif
