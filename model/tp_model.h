/* tp_model: the analyzer's in-memory model of one job (one or more ranks).
 *
 * Every loader (native .tprof, Kineto JSON) fills the same model, so every analysis runs on
 * both. The model promises:
 *   - times are int64 nanoseconds (Kineto µs text is converted exactly, never via double);
 *   - per rank, all events with a duration live in one columnar table (tp_events), sorted by
 *     ts (ties by longer dur first, so an enclosing range precedes what it encloses);
 *   - names and raw category strings are interned in one per-model pool (tp_model_str);
 *   - after tp_model_finish: indexes by correlation, stream, thread and kind exist, and the
 *     nesting of CPU-side ranges (ops, annotations, runtime calls) on each thread is
 *     resolved once (parent row and depth per row);
 *   - native ranks carry the call stacks their rows refer to (frames and modules, tp_stacks),
 *     so nothing after loading needs the trace file again.
 * The model is read-only for analyses: they read it through the tp_ev_* accessors (struct
 * of arrays, row i of every column is event i; several columns are stored narrower than they
 * read, see tp_events). Loaders and tests build one through tp_model_new,
 * tp_model_add_rank, tp_events_push / tp_memev_push and tp_model_finish. */
#ifndef TP_MODEL_H
#define TP_MODEL_H

#include <assert.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "tp_scratch.h"
#include "tp_status.h"

/* Event categories. Kineto's current and 2021 names map onto these (gpu_memcpy and Memcpy
 * -> TP_CAT_MEMCPY, cuda_runtime and Runtime -> TP_CAT_CUDA_RUNTIME, cpu_op and Operator ->
 * TP_CAT_CPU_OP, ...); anything else is TP_CAT_OTHER and keeps its text in cat_raw. */
#define TP_CAT_TABLE(X)                                                                            \
    X(TP_CAT_KERNEL, "kernel")                                                                     \
    X(TP_CAT_MEMCPY, "gpu_memcpy")                                                                 \
    X(TP_CAT_MEMSET, "gpu_memset")                                                                 \
    X(TP_CAT_CUDA_SYNC, "cuda_sync")                                                               \
    X(TP_CAT_CUDA_RUNTIME, "cuda_runtime")                                                         \
    X(TP_CAT_CUDA_DRIVER, "cuda_driver")                                                           \
    X(TP_CAT_CPU_OP, "cpu_op")                                                                     \
    X(TP_CAT_USER_ANNOTATION, "user_annotation")                                                   \
    X(TP_CAT_GPU_USER_ANNOTATION, "gpu_user_annotation")                                           \
    X(TP_CAT_PYTHON_FUNCTION, "python_function")                                                   \
    X(TP_CAT_OVERHEAD, "overhead")                                                                 \
    X(TP_CAT_OTHER, "other")

typedef enum {
#define TP_CAT_ENUM(name, text) name,
    TP_CAT_TABLE(TP_CAT_ENUM)
#undef TP_CAT_ENUM
        TP_CAT_COUNT
} tp_cat;

/* Canonical (current Kineto) name of `c`, never NULL. */
const char *tp_cat_name(tp_cat c);

/* Record types of a .tprof trace are below this (tp_rank.n_kept_kind, n_lost_kind). */
#define TP_MODEL_REC_KINDS 64

/* Times beyond this (2^62 ns, the year 2116 from 1970) cannot be true: loaders skip events
 * that reach past it, so ts + dur never overflows an int64 anywhere in the analyzer. */
#define TP_NS_LIMIT (INT64_C(1) << 62)

/* Why a loader skipped an event instead of trusting it (tp_rank.n_skipped); the report says
 * how many and why, and no analysis ever sees them. */
#define TP_SKIP_TABLE(X)                                                                           \
    X(TP_SKIP_NEG_DUR, "negative_duration", "a negative duration")                                 \
    X(TP_SKIP_NEG_TS, "negative_timestamp", "a negative timestamp")                                \
    X(TP_SKIP_TIME_RANGE, "time_out_of_range", "a time past 2^62 ns")

typedef enum {
#define TP_SKIP_ENUM(name, key, text) name,
    TP_SKIP_TABLE(TP_SKIP_ENUM)
#undef TP_SKIP_ENUM
        TP_SKIP_COUNT
} tp_skip;

/* "a negative duration": why events were skipped, for messages; never NULL. */
const char *tp_skip_reason(tp_skip s);

/* "negative_duration": the same as a JSON key; never NULL. */
const char *tp_skip_key(tp_skip s);

/* Per-row flags (tp_events.flags). */
#define TP_EVF_LAUNCH                                                                              \
    0x01u                          /* a CPU call that launches GPU work (cudaLaunchKernel,         \
                                      cuLaunchKernel, cudaMemcpyAsync, hipLaunchKernel, a native   \
                                      TP_API_DEVICE launch, ...) */
#define TP_EVF_PROFILER_STEP 0x02u /* name starts with "ProfilerStep#" */
#define TP_EVF_NCCL 0x04u          /* kernel name contains "nccl" (case-sensitive) */
#define TP_EVF_ASYNC 0x08u         /* native: memcpy issued by an async API */
#define TP_EVF_MARK                                                                                \
    0x10u /* native: an NVTX mark (nvtxMarkA): an instant, dur 0,                                  \
             category OTHER, with its domain (tp_ev_domain) */

/* All events of one rank that have a duration. Columns have n rows; optional columns hold
 * the "none" value noted. Kineto: `stream` follows HTA's int(args.stream) rule (-1 when the
 * event has none or it is not an integer), so "GPU event" == stream != -1.
 *
 * Memory (issue 13): every value is read through the tp_ev_* accessors below (static inline:
 * they cost about what an array access does), never through the arrays, because most are
 * not stored as the type they are read as:
 *   - *narrow columns*: dur, correlation, External id and Sequence number are 32-bit codes
 *     (TP_EV_U32_*): the value itself when it fits below TP_EV_U32_WIDE, -1 as
 *     TP_EV_U32_NONE, else TP_EV_U32_WIDE with the value in the column's side table of wide
 *     values (tp_ev_wide, by row: the rare duration over 4.29 s, a negative id). A
 *     correlation keeps its high 32 bits in its row's place (tp_ev_place.corr_hi: the
 *     per-process offset of a merged rank, tp_model_merge_rank), so only its low half is per
 *     row;
 *   - *places*: pid, tid, stream, device, Fwd thread id and NVTX domain take few values per
 *     rank (its threads and streams), so each distinct combination is one tp_ev_place and a
 *     row holds a 2-byte index into them (TP_EV_PLACE_WIDE: the index is in wide_place, past
 *     65,534 places). Several places may share one thread (pid, tid);
 *   - *derived columns* (parent, depth, load order: tp_model_finish) hold small codes, the
 *     rare value that does not fit in a side table (tp_ev_wide) as the narrow ones do;
 *   - *optional columns* (the `*_opt` fields: Kineto args, the category text)
 *     stay NULL until a row sets a value other than "none", so a trace that never has one
 *     pays nothing for it; tp_model_finish stores the External id, Input Dims and Sequence
 *     number columns sparsely (tp_ev_sparse: their `*_sp` field, the array then NULL) when
 *     that is smaller, as on most Kineto traces, where only the ops and runtime calls have
 *     them (xdit: 13.6-32.9 % of the rows);
 *   - copy facts sit in a side table of the rows that have them (tp_ev_copy).
 * Tests that edit a model in place use tp_events_set_*. After tp_model_finish every array
 * holds exactly n rows (no growth slack) and every side table exactly its entries.
 * tp_model_mem_account (tp_model_mem.h) says where the bytes go. */
/* One row's copy facts (tp_events.copies). */
typedef struct {
    uint32_t row;
    uint8_t copy_kind; /* tp_copy_kind (memcpy rows), else 0 */
    uint8_t src_kind;  /* tp_mem_kind (memcpy src, memset target), else 0 */
    uint8_t dst_kind;  /* tp_mem_kind (memcpy dst), else 0 */
    int64_t bytes;     /* copies and memsets; -1: unknown */
    double bw_gbps;    /* Kineto args "memory bandwidth (GB/s)"; NaN: absent */
} tp_ev_copy;

/* Where a row ran, shared by the rows that have the same (tp_events.places). */
typedef struct {
    int64_t pid;      /* Kineto pid (GPU events: device id); native: process id */
    int64_t tid;      /* Kineto tid (GPU events: stream); native: thread id */
    int64_t stream;   /* -1: none */
    int64_t fwd_tid;  /* Kineto args "Fwd thread id" (a backward op's forward thread); -1:
                         none */
    int32_t device;   /* -1: none */
    uint32_t corr_hi; /* the high 32 bits of the rows' correlation ids (0 for rows without) */
    uint32_t domain;  /* tp_ev_domain: native NVTX ranges: string pool id of their domain's
                         name (nvtxDomainCreate); 0: the default domain (and every other row).
                         A thread's ranges use a few domains: here it costs no byte per row */
} tp_ev_place;

/* Distinct places in the order first seen, and an open-addressing table of their indexes + 1
 * (0: empty) by hash, to find a row's place while loading. */
typedef struct {
    size_t n, cap;
    tp_ev_place *v;
    uint32_t *slots;
    size_t mask;
    size_t last, prev; /* the place found last and the one before it (rows of one thread come
                          in runs; a thread's NVTX ranges in a domain of their own alternate
                          with its calls) */
} tp_ev_places;

/* The values of a narrow column that do not fit its 32-bit codes, by row (ascending). */
typedef struct {
    size_t n, cap;
    uint32_t *row;
    int64_t *val;
} tp_ev_wide;

/* A 32-bit column of mostly "none" rows, stored as the rows that hold a value (a bit each) and
 * those values: bit (row & 63) of bits[row >> 6] is set when row `row` holds one, and its value
 * is val[rank[row >> 6] + the set bits below it in that word]. 12 bytes per 64 rows plus 4 per
 * value, against 4 a row dense: smaller below ~95 % fill (xdit's External id column at
 * 32.9 %: 0.30 MB against 0.80). A read is a load, a bit test and a popcount. */
typedef struct {
    uint64_t *bits; /* NULL: the column is not stored sparsely (dense, or absent) */
    uint32_t *rank; /* per word: the values of the rows before it */
    uint32_t *val;  /* the values, in row order; never the column's "none" */
    size_t n_val;
    size_t val_cap;  /* room in val */
    size_t n_ranked; /* words whose rank is set: all of them after finish; while a table
                        grows sparsely (TP_EV_SPARSE's `grows`), those up to the last value's
                        (a word past it has no bit set, so its rank is never read) */
} tp_ev_sparse;

/* Row `row`'s value in sparse column `s`, `none` when it holds none (or `s` is empty). */
static inline uint32_t tp_ev_sparse_get(const tp_ev_sparse *s, size_t row, uint32_t none) {
    if (!s->bits)
        return none;
    uint64_t w = s->bits[row >> 6], bit = UINT64_C(1) << (row & 63);
    if (!(w & bit))
        return none;
    return s->val[s->rank[row >> 6] + (uint32_t)__builtin_popcountll(w & (bit - 1))];
}

/* Bytes of sparse column `s` of `n` rows (0 when not sparse). */
static inline size_t tp_ev_sparse_bytes(const tp_ev_sparse *s, size_t n) {
    size_t words = (n + 63) / 64;
    return s->bits ? words * (sizeof *s->bits + sizeof *s->rank) + s->n_val * sizeof *s->val : 0;
}

#define TP_EV_U32_NONE UINT32_MAX        /* a narrow column's code for -1 */
#define TP_EV_U32_WIDE (UINT32_MAX - 1u) /* the value is in the column's tp_ev_wide */
#define TP_EV_PLACE_WIDE UINT16_MAX      /* the place index is in tp_events.wide_place */
#define TP_EV_PARENT_WIDE UINT16_MAX     /* the parent row is in tp_events.wide_parent */
#define TP_EV_DEPTH_WIDE UINT8_MAX       /* the depth is in tp_events.wide_depth */
#define TP_EV_LOAD_WIDE INT16_MIN        /* the load position is in tp_events.wide_load */

typedef struct {
    size_t n, cap;
    int64_t *ts;      /* ns, sorted ascending after tp_model_finish */
    uint32_t *dur32;  /* tp_ev_dur: ns, >= 0 (narrow, wide_dur) */
    uint32_t *name;   /* string pool id (0 = "") */
    uint8_t *cat;     /* tp_cat */
    uint8_t *flags;   /* TP_EVF_* */
    uint16_t *place;  /* index into places (tp_ev_pid, tp_ev_tid, tp_ev_stream, tp_ev_device,
                         tp_ev_fwd_tid) */
    uint32_t *corr32; /* tp_ev_corr: the low 32 bits of the correlation id (narrow,
                         wide_corr; the high ones in the place); -1: none */
    uint32_t *stack;  /* tp_ev_stack: native stack id (tp_rank_stack_copy); 0: none. API
                         calls: the call site; NVTX ranges: the push (recorded with --stacks
                         all); Kineto: the Python stack. Optional: made (rows before it 0)
                         at the first row with a stack (tp_events_stack_col; a native load
                         makes it at once); tp_model_finish frees it when all are 0 */
    /* derived by finish, each narrower than its value (read through the accessors): */
    uint16_t *parent16;    /* tp_ev_parent: row of the innermost enclosing CPU-side range on the
                              same (pid, tid), -1: none or a GPU-side row. Stored as row - parent
                              (a parent sorts before its rows): 0: none; TP_EV_PARENT_WIDE: the
                              parent row is in wide_parent (a range over 65,534 rows away) */
    uint8_t *depth8;       /* tp_ev_depth: nesting depth (0 = outermost; at most 65,535);
                              TP_EV_DEPTH_WIDE: in wide_depth */
    int16_t *load_d16;     /* the row's position in load order (Kineto: traceEvents order among
                              kept rows); HTA's tie order needs it. Stored as position - row (a
                              trace's rows load nearly in time order); TP_EV_LOAD_WIDE: the
                              position is in wide_load. Read through tp_ev_load_rows */
    uint32_t *load_rows32; /* instead of load_d16 where that is cheaper: the rows in load order
                              (the row loaded k-th at k). A Kineto file is written thread by
                              thread, so its rows' positions are far from their time order's
                              (xdit: 32.6 % of the rows wide, 2 + 3.9 bytes a row against 4),
                              and a --compat hta view in load order reads its rows from here
                              (tp_an_view.row: 4 bytes a row not copied). NULL: load_d16 */
    /* optional columns: NULL while every row is "none"; read through the tp_ev_* accessors */
    uint32_t *cat_raw_opt;       /* tp_ev_cat_raw: string pool id of the category text as
                                    written ("Kernel"); absent while each category was written
                                    one way only (cat_raw_dflt) */
    uint32_t *external_id32_opt; /* tp_ev_external_id: Kineto "External id" (narrow,
                                    wide_external_id); -1: none */
    uint32_t *shapes_opt;        /* tp_ev_shapes: Kineto args "Input Dims" as text ("[[2, 3],
                                    []]"), string pool id; 0: none (--group-by shapes) */
    uint32_t *seq32_opt;         /* tp_ev_seq: Kineto args "Sequence number" (narrow,
                                    wide_seq); -1: none */
    /* the sparse forms of three of them (TP_EV_SPARSE), set by tp_model_finish instead of the
       array when smaller; a push after it makes the array again. Those of the Input Dims and
       the Sequence number (`grows`) from their first value instead, the arrays only where
       finish finds them smaller */
    tp_ev_sparse external_id_sp, shapes_sp, seq_sp;
    uint64_t *external_id_corr; /* with external_id_sp: bit (row & 63) of word row >> 6 set when
                                   the row's External id is its correlation id (an older
                                   Kineto trace's calls and kernels: df_index_resolver, 64,663 of
                                   123,378 rows), kept as that bit instead of a value; NULL:
                                   no such row */
    tp_ev_places places;        /* the distinct places of the rows */
    int corr_hi_any;            /* a place has corr_hi != 0 (else tp_ev_corr skips the place) */
    /* narrow columns' values that do not fit their codes (TP_EV_WIDES) */
    tp_ev_wide wide_dur, wide_corr, wide_external_id, wide_seq, wide_place;
    tp_ev_wide wide_parent, wide_depth, wide_load; /* the derived columns' (finish) */
    /* copies and memsets (well under 1 % of the rows): a side table of the rows that have any
     * of bytes / copy_kind / src_kind / dst_kind, ascending by row; read through tp_ev_bytes,
     * tp_ev_copy_kind, tp_ev_src_kind, tp_ev_dst_kind */
    size_t n_copies, copies_cap;
    tp_ev_copy *copies;
    uint32_t cat_raw_dflt[TP_CAT_COUNT]; /* the text each category was first written as */
    uint32_t cat_raw_seen;               /* bit c: cat_raw_dflt[c] is set */
    unsigned dropped; /* TP_EV_DROP_* bits: columns freed for good (tp_rank_drop_columns) */
} tp_events;

/* Columns of tp_events that a caller which never reads them again may free for good
 * (tp_rank_drop_columns, tp_model_drop_columns), as `trainprof report` does with those no
 * analysis, rule or writer of its reads: each is a few bytes a row of the model, resident
 * through the analyses' peak otherwise. Their accessors abort afterwards (a dropped column
 * read as "none" would be a wrong answer, not an error); a push or a second tp_model_finish
 * after a drop aborts too (the rows would lose the column's values). */
#define TP_EV_DROP_EXTERNAL_ID 1u /* tp_ev_external_id: its array, sparse form, bits, wides */
#define TP_EV_DROP_SHAPES 2u      /* tp_ev_shapes, tp_ev_any_shapes (--group-by shapes) */
#define TP_EV_DROP_DEPTH 4u       /* tp_ev_depth (the TUI's lanes) and wide_depth */
#define TP_EV_DROP_LOAD_ORDER                                                                      \
    8u /* tp_ev_has_load_ord, tp_ev_load_rows: load_d16 and                                        \
          wide_load, or load_rows32 (a --compat hta view's order) */

/* The columns of tp_events as tables, X(column, none): the ones every row has, grown by push;
 * the optional ones; the ones tp_model_finish derives; TP_EV_SPARSE, X(column, sparse form,
 * none, by_corr, grows): the optional ones that finish may store sparsely (by_corr: a row's value
 * that is its correlation id is a bit of external_id_corr instead; grows: sparse from its first
 * value while the table grows, an array only where finish finds that smaller, instead of an array
 * until finish). `none` is the value that means
 * "nothing" (TP_EV_ALWAYS: every row carries one); tp_model_mem counts the rows that hold something
 * else. One list, so growing, permuting, fitting, freeing and accounting never miss a column. (Laid
 * out by hand: clang-format reflows these tables differently on each run.) TP_EV_WIDES: the
 * side tables of the narrow columns. */
#define TP_EV_ALWAYS INT64_MIN
/* clang-format off */
#define TP_EV_DENSE(X)                                                                             \
    X(ts, TP_EV_ALWAYS) X(dur32, TP_EV_ALWAYS) X(name, 0) X(cat, TP_EV_ALWAYS) X(flags, 0)         \
    X(place, TP_EV_ALWAYS) X(corr32, TP_EV_U32_NONE)
#define TP_EV_OPTIONAL(X)                                                                          \
    X(stack, 0) X(cat_raw_opt, TP_EV_ALWAYS) X(external_id32_opt, TP_EV_U32_NONE)                  \
    X(shapes_opt, 0) X(seq32_opt, TP_EV_U32_NONE)
#define TP_EV_DERIVED(X)                                                                           \
    X(parent16, 0) X(depth8, TP_EV_ALWAYS) X(load_d16, TP_EV_ALWAYS) X(load_rows32, TP_EV_ALWAYS)
#define TP_EV_ALL(X) TP_EV_DENSE(X) TP_EV_OPTIONAL(X) TP_EV_DERIVED(X)
#define TP_EV_SPARSE(X)                                                                            \
    X(external_id32_opt, external_id_sp, TP_EV_U32_NONE, 1, 0)                                     \
    X(shapes_opt, shapes_sp, 0, 0, 1) X(seq32_opt, seq_sp, TP_EV_U32_NONE, 0, 1)
#define TP_EV_WIDES(X) X(wide_dur) X(wide_corr) X(wide_external_id) X(wide_seq) X(wide_place)     \
    X(wide_parent) X(wide_depth) X(wide_load)
/* clang-format on */

/* The wide value of row `row` (present: its code says so). Out of line: the accessors stay
 * a load and a compare, small enough to inline everywhere, and wide values are rare. */
int64_t tp_ev_wide_get(const tp_ev_wide *w, size_t row);

/* The value a narrow column's code `v` of row `row` stands for. */
static inline int64_t tp_ev_u32_value(uint32_t v, const tp_ev_wide *w, size_t row) {
    if (v < TP_EV_U32_WIDE)
        return v;
    return v == TP_EV_U32_NONE ? -1 : tp_ev_wide_get(w, row);
}

/* Row `row`'s place (tp_ev_place). */
static inline size_t tp_ev_place_index(const tp_events *e, size_t row) {
    uint16_t k = e->place[row];
    return k != TP_EV_PLACE_WIDE ? k : (size_t)tp_ev_wide_get(&e->wide_place, row);
}
static inline const tp_ev_place *tp_ev_place_of(const tp_events *e, size_t row) {
    return &e->places.v[tp_ev_place_index(e, row)];
}

/* Row `row`'s duration, stream, device, pid, tid and correlation (see tp_events). Every read
 * goes through these, never through the arrays: the model keeps them narrower than the value
 * they hold. Static inline, so a read costs about what an array access does. */
static inline int64_t tp_ev_dur(const tp_events *e, size_t row) {
    uint32_t v = e->dur32[row];
    return v < TP_EV_U32_WIDE ? v : tp_ev_wide_get(&e->wide_dur, row);
}
static inline int64_t tp_ev_stream(const tp_events *e, size_t row) {
    return tp_ev_place_of(e, row)->stream;
}
static inline int32_t tp_ev_device(const tp_events *e, size_t row) {
    return tp_ev_place_of(e, row)->device;
}
static inline int64_t tp_ev_pid(const tp_events *e, size_t row) {
    return tp_ev_place_of(e, row)->pid;
}
static inline int64_t tp_ev_tid(const tp_events *e, size_t row) {
    return tp_ev_place_of(e, row)->tid;
}
static inline int64_t tp_ev_corr(const tp_events *e, size_t row) {
    uint32_t v = e->corr32[row];
    if (v >= TP_EV_U32_WIDE)
        return v == TP_EV_U32_NONE ? -1 : tp_ev_wide_get(&e->wide_corr, row);
    if (!e->corr_hi_any)
        return v;
    return (int64_t)(((uint64_t)tp_ev_place_of(e, row)->corr_hi << 32) | v);
}

/* The optional columns' values of row `row` (see tp_events). */
static inline uint32_t tp_ev_cat_raw(const tp_events *e, size_t row) {
    unsigned c = e->cat[row] < TP_CAT_COUNT ? e->cat[row] : TP_CAT_OTHER;
    return e->cat_raw_opt ? e->cat_raw_opt[row] : e->cat_raw_dflt[c];
}
static inline int64_t tp_ev_external_id(const tp_events *e, size_t row) {
    if (e->dropped & TP_EV_DROP_EXTERNAL_ID) /* no answer is right */
        abort();
    if (e->external_id32_opt)
        return tp_ev_u32_value(e->external_id32_opt[row], &e->wide_external_id, row);
    if (e->external_id_corr && (e->external_id_corr[row >> 6] >> (row & 63) & 1))
        return tp_ev_corr(e, row);
    uint32_t v = tp_ev_sparse_get(&e->external_id_sp, row, TP_EV_U32_NONE);
    return tp_ev_u32_value(v, &e->wide_external_id, row);
}
static inline uint32_t tp_ev_stack(const tp_events *e, size_t row) {
    return e->stack ? e->stack[row] : 0;
}
static inline uint32_t tp_ev_shapes(const tp_events *e, size_t row) {
    if (e->shapes_opt)
        return e->shapes_opt[row];
    if (e->dropped & TP_EV_DROP_SHAPES)
        abort();
    return tp_ev_sparse_get(&e->shapes_sp, row, 0);
}
static inline int64_t tp_ev_seq(const tp_events *e, size_t row) {
    uint32_t v =
        e->seq32_opt ? e->seq32_opt[row] : tp_ev_sparse_get(&e->seq_sp, row, TP_EV_U32_NONE);
    return tp_ev_u32_value(v, &e->wide_seq, row);
}
/* 1 when some row has a Sequence number (else tp_ev_seq is -1 on every row), Input Dims
 * (else tp_ev_shapes is 0): a loop over every row tests this once instead of the two forms per
 * row (a native trace has neither). */
static inline int tp_ev_any_seq(const tp_events *e) {
    return e->seq32_opt || e->seq_sp.bits;
}
static inline int tp_ev_any_shapes(const tp_events *e) {
    if (e->dropped & TP_EV_DROP_SHAPES)
        abort();
    return e->shapes_opt || e->shapes_sp.bits;
}
static inline int64_t tp_ev_fwd_tid(const tp_events *e, size_t row) {
    return tp_ev_place_of(e, row)->fwd_tid;
}
static inline uint32_t tp_ev_domain(const tp_events *e, size_t row) {
    return tp_ev_place_of(e, row)->domain;
}

/* The derived columns' values of row `row` (after tp_model_finish; see tp_events). */
static inline int32_t tp_ev_parent(const tp_events *e, size_t row) {
    uint16_t d = e->parent16[row];
    if (d == 0)
        return -1;
    return d != TP_EV_PARENT_WIDE ? (int32_t)(row - d)
                                  : (int32_t)tp_ev_wide_get(&e->wide_parent, row);
}
static inline int tp_ev_depth(const tp_events *e, size_t row) {
    if (e->dropped & TP_EV_DROP_DEPTH)
        abort();
    uint8_t d = e->depth8[row];
    return d != TP_EV_DEPTH_WIDE ? d : (int)tp_ev_wide_get(&e->wide_depth, row);
}
/* 1: the rows have their load order (after tp_model_finish). */
static inline int tp_ev_has_load_ord(const tp_events *e) {
    if (e->dropped & TP_EV_DROP_LOAD_ORDER)
        abort();
    return e->load_d16 || e->load_rows32;
}

/* The rows in load order (tp_ev_has_load_ord): the model's load_rows32 when it keeps them so
 * (`buf` untouched; never write through the result), else `buf` (e->n entries) filled. */
const uint32_t *tp_ev_load_rows(const tp_events *e, uint32_t *buf);

/* The copy facts of row `row`, NULL when it has none (tp_events.copies). */
static inline const tp_ev_copy *tp_ev_copy_of(const tp_events *e, size_t row) {
    size_t lo = 0, hi = e->n_copies;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (e->copies[mid].row < row)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < e->n_copies && e->copies[lo].row == row ? &e->copies[lo] : NULL;
}
static inline int64_t tp_ev_bytes(const tp_events *e, size_t row) {
    const tp_ev_copy *c = tp_ev_copy_of(e, row);
    return c ? c->bytes : -1;
}
static inline double tp_ev_bw_gbps(const tp_events *e, size_t row) {
    const tp_ev_copy *c = tp_ev_copy_of(e, row);
    return c ? c->bw_gbps : (double)NAN;
}
static inline uint8_t tp_ev_copy_kind(const tp_events *e, size_t row) {
    const tp_ev_copy *c = tp_ev_copy_of(e, row);
    return c ? c->copy_kind : 0;
}
static inline uint8_t tp_ev_src_kind(const tp_events *e, size_t row) {
    const tp_ev_copy *c = tp_ev_copy_of(e, row);
    return c ? c->src_kind : 0;
}
static inline uint8_t tp_ev_dst_kind(const tp_events *e, size_t row) {
    const tp_ev_copy *c = tp_ev_copy_of(e, row);
    return c ? c->dst_kind : 0;
}

/* Reorders rows[0..n) stably by (pid, tid, ts): rows by thread, each thread's in time order
 * (a thread pass's order). `s` may be NULL. */
void tp_events_sort_rows_by_thread(const tp_events *e, uint32_t *rows, size_t n, tp_scratch *s);

/* Sets the copy facts of row `row` (< n) in place (test fixtures). */
void tp_events_set_copy(tp_events *e, size_t row, int64_t bytes, uint8_t copy_kind,
                        uint8_t src_kind, uint8_t dst_kind);

/* Sets an optional column of row `row` (< n) in place, creating the column when needed
 * (tests and fixtures that edit a loaded model; loaders push whole rows instead). */
void tp_events_set_domain(tp_events *e, size_t row, uint32_t domain);
/* Moves row `row` (< n) to thread `tid` of process `pid` (test fixtures). */
void tp_events_set_thread(tp_events *e, size_t row, int64_t pid, int64_t tid);
void tp_events_set_bw_gbps(tp_events *e, size_t row, double bw_gbps);

/* One row to append (tp_events_push); tp_event_row_init fills the "none" values. */
typedef struct {
    int64_t ts, dur;
    uint32_t name, cat_raw;
    uint8_t cat, flags, copy_kind, src_kind, dst_kind;
    int64_t stream;
    int32_t device;
    int64_t pid, tid, correlation, external_id, bytes;
    double bw_gbps;
    uint32_t stack;
    uint32_t shapes;
    int64_t seq, fwd_tid;
    uint32_t domain; /* tp_ev_domain */
} tp_event_row;

/* Memory events: Kineto "[memory]" instant events, native DEVICE_MEM/HEAP/REGION/ALLOC_FAIL. */
typedef enum {
    TP_MEMEV_ALLOC = 1,     /* bytes > 0 (Kineto: positive "Bytes"; native: cudaMalloc/region) */
    TP_MEMEV_FREE = 2,      /* bytes < 0 */
    TP_MEMEV_HEAP = 3,      /* native NVTX heap register/unregister/reset (bytes = size or -size) */
    TP_MEMEV_ALLOC_FAIL = 4 /* native: bytes = requested; total_reserved; total_allocated =
                               reserved - free */
} tp_memev_kind;

/* What a native NVTX memory record did (tp_memev_op). */
typedef enum {
    TP_MEMEV_OP_NONE = 0,
    TP_MEMEV_OP_HEAP_REGISTER = 1,
    TP_MEMEV_OP_HEAP_UNREGISTER = 2,
    TP_MEMEV_OP_HEAP_RESET = 3,
    TP_MEMEV_OP_REGION_REGISTER = 4,
    TP_MEMEV_OP_REGION_RESIZE = 5,
    TP_MEMEV_OP_REGION_UNREGISTER = 6
} tp_memev_op;

/* One row's allocator totals (tp_memevents.totals). */
typedef struct {
    int64_t total_allocated; /* -1: unknown */
    int64_t total_reserved;  /* -1: unknown */
    int64_t largest_free;    /* ALLOC_FAIL: the allocator's largest free block; -1: unknown;
                                0 on other rows */
    uint32_t row;
} tp_memev_totals;

/* Bits of tp_memevents.op_flags above the tp_memev_op. */
#define TP_MEMEV_OP_MASK 0x07u
#define TP_MEMEV_F_SIZE 0x40u         /* the row's size is in wide_size (else derived, see below) */
#define TP_MEMEV_F_TOTALS 0x80u       /* the row has an entry in totals */
#define TP_MEMEV_BYTES_WIDE INT32_MIN /* bytes32's code: the value is in wide_bytes */

/* Memory events, as tp_events keeps its rows (issue 13: 28 B a row on a native trace, was
 * 52): every value is read through the tp_memev_* accessors below, never through the arrays,
 * because several are not stored as the type they are read as:
 *   - bytes (the signed delta) is a 32-bit code (bytes32): the value when it fits, else
 *     TP_MEMEV_BYTES_WIDE with the value in wide_bytes (an allocation of 2 GiB or more);
 *   - the calling process and thread, the device and the heap handle take few values per
 *     rank, so each distinct (pid, tid, device, heap) is one tp_ev_place (the heap handle in
 *     its `stream` field: a memory row has no stream) and a row holds a 2-byte index into
 *     them (TP_EV_PLACE_WIDE: the index is in wide_place);
 *   - the size of a HEAP or REGION record is nearly always what the row's op and bytes say
 *     (a register's size is its delta, every other op's 0), so only the rows where it is not
 *     (a resize, a register over a live region) keep it in wide_size, marked TP_MEMEV_F_SIZE;
 *   - the allocator totals (native: ALLOC_FAIL rows only; Kineto: its rows that carry them)
 *     sit in a side table of the rows that have any (totals), marked TP_MEMEV_F_TOTALS.
 * After tp_model_finish every array holds exactly n rows and every side table its entries. */
typedef struct {
    size_t n, cap;
    int64_t *ts;       /* ns, sorted after finish */
    uint8_t *kind;     /* tp_memev_kind */
    uint64_t *addr;    /* 0: unknown */
    int32_t *bytes32;  /* tp_memev_bytes: signed delta (narrow, wide_bytes) */
    uint32_t *stack;   /* native stack id (tp_rank_stack_copy); 0: none */
    uint8_t *op_flags; /* tp_memev_op (TP_MEMEV_OP_NONE on Kineto rows and DEVICE_MEM) and
                          TP_MEMEV_F_*: read through tp_memev_op_of */
    uint16_t *place;   /* index into places: tp_memev_pid, tp_memev_tid (-1: unknown),
                          tp_memev_device (-1: CPU / unknown), tp_memev_heap (HEAP: its handle;
                          REGION register: the heap it is carved from; else 0) */
    tp_ev_places places;
    size_t place_alt; /* the place found before places.last: a region's rows alternate
                         between two (its register names its heap, its unregister none) */
    tp_ev_wide wide_place, wide_bytes;
    tp_ev_wide wide_size; /* tp_memev_size: HEAP register: its size; REGION register/resize:
                             the (new) size; else 0 (the rows marked TP_MEMEV_F_SIZE) */
    size_t n_totals, totals_cap;
    tp_memev_totals *totals; /* ascending by row */
} tp_memevents;

/* The totals of row `row`, NULL when it has none (out of line: rare on native traces). */
const tp_memev_totals *tp_memev_totals_find(const tp_memevents *e, size_t row);

static inline const tp_memev_totals *tp_memev_totals_of(const tp_memevents *e, size_t row) {
    return e->op_flags[row] & TP_MEMEV_F_TOTALS ? tp_memev_totals_find(e, row) : NULL;
}
static inline int64_t tp_memev_total_allocated(const tp_memevents *e, size_t row) {
    const tp_memev_totals *t = tp_memev_totals_of(e, row);
    return t ? t->total_allocated : -1;
}
static inline int64_t tp_memev_total_reserved(const tp_memevents *e, size_t row) {
    const tp_memev_totals *t = tp_memev_totals_of(e, row);
    return t ? t->total_reserved : -1;
}
static inline int64_t tp_memev_largest_free(const tp_memevents *e, size_t row) {
    const tp_memev_totals *t = tp_memev_totals_of(e, row);
    return t ? t->largest_free : 0;
}
/* Row `row`'s place: its calling process and thread, device and heap (see tp_memevents);
 * read through these, never through the arrays. */
static inline const tp_ev_place *tp_memev_place_of(const tp_memevents *e, size_t row) {
    uint16_t k = e->place[row];
    return &e->places.v[k != TP_EV_PLACE_WIDE ? k : (size_t)tp_ev_wide_get(&e->wide_place, row)];
}
static inline int64_t tp_memev_pid(const tp_memevents *e, size_t row) {
    return tp_memev_place_of(e, row)->pid;
}
static inline int64_t tp_memev_tid(const tp_memevents *e, size_t row) {
    return tp_memev_place_of(e, row)->tid;
}
static inline int32_t tp_memev_device(const tp_memevents *e, size_t row) {
    return tp_memev_place_of(e, row)->device;
}
/* The heap handle of a memory row's place (tp_memev_place_of): for a caller that reads
 * several fields of one row's place with one lookup. */
static inline uint64_t tp_memev_place_heap(const tp_ev_place *p) {
    return (uint64_t)p->stream;
}
static inline uint64_t tp_memev_heap(const tp_memevents *e, size_t row) {
    return tp_memev_place_heap(tp_memev_place_of(e, row));
}
static inline int64_t tp_memev_bytes(const tp_memevents *e, size_t row) {
    int32_t v = e->bytes32[row];
    return v != TP_MEMEV_BYTES_WIDE ? v : tp_ev_wide_get(&e->wide_bytes, row);
}
static inline tp_memev_op tp_memev_op_of(const tp_memevents *e, size_t row) {
    return (tp_memev_op)(e->op_flags[row] & TP_MEMEV_OP_MASK);
}
/* The size a row of op `op` and delta `bytes` has unless wide_size says otherwise. */
static inline uint64_t tp_memev_size_derived(unsigned op, int64_t bytes) {
    return op == TP_MEMEV_OP_HEAP_REGISTER || op == TP_MEMEV_OP_REGION_REGISTER ? (uint64_t)bytes
                                                                                : 0;
}
static inline uint64_t tp_memev_size(const tp_memevents *e, size_t row) {
    uint8_t f = e->op_flags[row];
    if (f & TP_MEMEV_F_SIZE)
        return (uint64_t)tp_ev_wide_get(&e->wide_size, row);
    return tp_memev_size_derived(f & TP_MEMEV_OP_MASK, tp_memev_bytes(e, row));
}

/* The columns of tp_memevents as tables (see TP_EV_DENSE); none optional today (the rare
 * values are side tables), the empty table kept so the loader's prefaulting counts them. */
/* clang-format off */
#define TP_MEMEV_DENSE(X)                                                                          \
    X(ts, TP_EV_ALWAYS) X(kind, TP_EV_ALWAYS) X(addr, 0) X(bytes32, TP_EV_ALWAYS) X(stack, 0)       \
    X(op_flags, 0) X(place, TP_EV_ALWAYS)
#define TP_MEMEV_OPTIONAL(X)
#define TP_MEMEV_ALL(X) TP_MEMEV_DENSE(X) TP_MEMEV_OPTIONAL(X)
#define TP_MEMEV_WIDES(X) X(wide_place) X(wide_bytes) X(wide_size)
/* clang-format on */

typedef struct {
    int64_t ts, bytes, total_allocated, total_reserved;
    uint64_t addr;
    int32_t device;
    uint8_t kind;
    uint32_t stack;
    int64_t largest_free; /* ALLOC_FAIL only (see tp_memevents) */
    uint8_t op;           /* see tp_memevents; a zeroed row is "none" except pid/tid, which */
    uint64_t heap, size;  /* tp_memev_push stores as given: loaders set -1 when unknown */
    int64_t pid, tid;
} tp_memev_row;

typedef enum {
    TP_DEVTYPE_CPU_ONLY = 0, /* no GPU-side event at all */
    TP_DEVTYPE_NVIDIA = 1,
    TP_DEVTYPE_AMD = 2,
    TP_DEVTYPE_CPU_DEVICE = 3 /* native: the devices are CPU accelerators written through the
                                 device-activity API (the trainer's CPU backend) */
} tp_devtype;

/* "NVIDIA GPU", "AMD GPU", "CPU device", "CPU only" (HTA's words for the first two). */
const char *tp_devtype_name(tp_devtype d);

/* Kineto "deviceProperties" entries / native DEVICE records. */
typedef struct {
    int32_t id;
    uint32_t name; /* string pool id */
    int64_t total_global_mem;
    int32_t compute_major, compute_minor;
    int32_t num_sms;
} tp_device_info;

/* One fact about the environment a rank was recorded in (native ENV records, a Kineto trace's
 * deviceProperties / distributedInfo / version fields): key and value as string pool ids, keys
 * as traces/tp_env_keys.h spells them ("cuda.runtime", "gpu.name", "env.CUDA_LAUNCH_BLOCKING").
 * `device` is -1 for the process or host, else the GPU ordinal. */
typedef struct {
    uint32_t key, value;
    int32_t device;
} tp_env_entry;

/* A module (ELF file) that stack frames point into, with the build-id recorded with it, so
 * frames can be symbolized offline and a file rebuilt since the recording recognized. */
typedef struct {
    uint32_t id;           /* the trace's module id (tp_stacks.frame_module) */
    uint32_t path;         /* string pool id of the file's path; 0: unknown */
    uint32_t build_id_len; /* bytes of build_id used; 0: unknown */
    uint8_t build_id[32];
} tp_stack_module;

#define TP_STACK_NO_MODULE UINT32_MAX /* frame_module of a frame that is a raw address */
/* frame_module of a Python frame; its frame_addr packs the code id (bits 24-47, a
 * tp_stack_pycode id) and the line (bits 0-23, 0: unknown), as the trace's frames do. */
#define TP_STACK_PYTHON (UINT32_MAX - 1)
#define TP_STACK_PY_CODE(addr) ((uint32_t)((addr) >> 24))
#define TP_STACK_PY_LINE(addr) ((uint32_t)((addr)&0xffffffu))

/* A Python code object that Python frames point at: function and file, as string pool ids. */
typedef struct {
    uint32_t id;
    uint32_t file; /* string pool id of co_filename; 0: unknown */
    uint32_t name; /* string pool id of the (qualified) function name; 0: unknown */
    uint32_t first_line;
} tp_stack_pycode;

/* One interned stack: its n frames from frame `first` of tp_stacks' frame columns on, the
 * next (outer) one of frame i at i + 1, or at frame_next[i] where that column exists. */
typedef struct {
    uint32_t id;
    uint32_t n;
    size_t first;
} tp_stack;

/* The CPU call stacks of a rank (native traces; Kineto traces: Python stacks from their
 * python_function events and "Call stack" args, tp_kineto_stacks): stacks by id, as
 * rows refer to them (tp_events.stack, tp_memevents.stack), innermost frame first, and the
 * modules their frames point into. Read them with tp_rank_stack_copy / tp_rank_stack_module. */
typedef struct {
    size_t n, cap;
    tp_stack *v; /* sorted by id after finish */
    size_t n_frames, frames_cap;
    uint32_t *frame_module; /* tp_stack_module id; TP_STACK_NO_MODULE: a raw address. NULL
                               while every frame is TP_STACK_PYTHON (Kineto traces' stacks):
                               4 of a frame's 12 bytes that would all say the same */
    uint64_t *frame_addr;   /* ELF virtual address in the module (or the raw address) */
    uint32_t *frame_next;   /* the frame outer to frame i (UINT32_MAX: none). NULL while
                               every stack's frames are contiguous; a tree of stacks
                               (tp_rank_add_frame_on: Kineto's Python stacks) stores each
                               stack's own frame once, on its caller's */
    size_t n_modules, modules_cap;
    tp_stack_module *modules; /* sorted by id after finish */
    size_t n_pycodes, pycodes_cap;
    tp_stack_pycode *pycodes; /* sorted by id after finish */
} tp_stacks;

/* What a process was in its recording: the one `trainprof record` started (or the root of
 * the process tree when that is unknown), or one it started (a DataLoader or multiprocessing
 * worker, a subprocess, ...); a launcher is a process without a rank of its own that started
 * the ranked ones (torchrun, mpirun, a wrapper script): the rank's main is then the ranked
 * process it started. */
typedef enum { TP_PROC_MAIN = 0, TP_PROC_WORKER = 1, TP_PROC_LAUNCHER = 2 } tp_proc_role;

/* "main", "worker", "launcher". */
const char *tp_proc_role_name(tp_proc_role r);

/* One process (one process image: an exec starts another) whose events a rank holds. A
 * native trace is one process; tp_load gathers the processes of one recording that share a
 * rank into one rank (docs/analyzer.md, "Processes"). Kineto ranks have none. */
typedef struct {
    int64_t pid, ppid;
    uint32_t exec_gen;   /* exec generation of this image (0: as forked or started) */
    uint64_t job_id;     /* the recording's id; 0: unknown (traces before format 1.3) */
    int64_t root_pid;    /* the process the recording started; 0: unknown */
    int32_t rank;        /* the rank its PROCESS record named; -1: none */
    uint32_t command;    /* string pool id of its command line */
    const char *file;    /* its trace (owned by the model) */
    int64_t start_ns;    /* wall-clock start (ns since 1970); 0: unknown */
    int parent;          /* index in the rank's procs of the image it came from; -1: none */
    tp_proc_role role;   /* set when the rank's processes are gathered (main when alone) */
    size_t n_events;     /* rows it contributed to the rank */
    int64_t corr_offset; /* added to its correlation ids in the rank (0 for the first) */
} tp_process;

/* native: the sampler's SAMPLE records (`record --sample`; docs/trace-format.md): one per
 * sampled thread and round (Python threads, and native ones: TP_SAMPLE_F_NATIVE), in file order.
 * `stack`: the rank's stack id of the thread's Python frames (0: none); flags: TP_SAMPLE_F_*;
 * cpu_ns: the thread's CPU time since its previous sample; period_ns: the wall time since then. */
#define TP_SAMPLE_F_ON_CPU 1u    /* the thread was on a CPU at the sample */
#define TP_SAMPLE_F_HOLDS_GIL 2u /* it held its interpreter's GIL then */
#define TP_SAMPLE_F_NATIVE 4u    /* not a Python thread: no frames read (stack 0) */
typedef struct {
    size_t n, cap;
    int64_t *ts;
    uint32_t *pid, *tid, *stack;
    uint8_t *flags;
    uint64_t *cpu_ns, *period_ns;
} tp_samples;

/* Appends one sample. */
void tp_samples_push(tp_samples *s, int64_t ts, uint32_t pid, uint32_t tid, uint32_t stack,
                     unsigned flags, uint64_t cpu_ns, uint64_t period_ns);

/* A (pid, tid) or stream bucket of row numbers, sorted by ts (CSR layout). */
typedef struct {
    size_t n;       /* buckets */
    int64_t *key;   /* streams: stream id; threads: tid */
    int64_t *key2;  /* streams: device of the first row; threads: pid */
    uint32_t *off;  /* n + 1 offsets into rows */
    uint32_t *rows; /* event rows */
    int dropped;    /* 1: freed for good (tp_model_drop_stream_index): asking it aborts */
} tp_buckets;

/* Where a rank's shift onto the job clock comes from (model/tp_align). */
typedef enum {
    TP_CLOCK_NONE = 0,    /* not aligned: the rank or the reference has no clock pair */
    TP_CLOCK_REFERENCE,   /* the reference rank: its clock is the job clock */
    TP_CLOCK_SYNC,        /* native: the first CLOCK_SYNC realtime pair */
    TP_CLOCK_KINETO_BASE, /* Kineto: baseTimeNanoseconds */
    TP_CLOCK_AS_RECORDED  /* Kineto without baseTimeNanoseconds: ts are wall-clock already */
} tp_clock_source;

/* How the offset left after alignment was estimated (model/tp_align). */
typedef enum {
    TP_RESIDUAL_NONE = 0,    /* no estimate */
    TP_RESIDUAL_REFERENCE,   /* the reference rank (0 by definition) */
    TP_RESIDUAL_COLLECTIVES, /* median of matched communication kernels' end times */
    TP_RESIDUAL_SYNC_PAIRS   /* the last CLOCK_SYNC pairs against the first, + uncertainty */
} tp_clock_residual;

/* A rank on the job clock (tp_align_ranks; docs/analyzer.md, "Ranks on one clock"). */
typedef struct {
    int aligned;            /* 1 once tp_align_ranks ran over a job of several ranks */
    int ref_rank;           /* the rank whose clock is the job clock (the lowest) */
    int64_t shift_ns;       /* add to this rank's ts to read them on the job clock */
    tp_clock_source source; /* where shift_ns comes from */
    int64_t residual_ns;    /* estimated offset left after the shift (>= 0); -1: unknown */
    tp_clock_residual method;
    size_t n_matched; /* communication kernels matched (TP_RESIDUAL_COLLECTIVES) */
} tp_rank_clock;

typedef struct {
    int rank;          /* distributedInfo.rank when present, else HTA's inference, else the
                          file's position in the job */
    int rank_hta;      /* HTA quirk 11: first `"rank":\s+(\d+)` in the raw text, else 0 */
    int world_size;    /* -1: unknown */
    int has_dist_info; /* 1 when distributedInfo was present */
    const char *file;  /* path as given to the loader (owned by the model) */
    int native;        /* 1: .tprof; 0: Kineto JSON */
    tp_devtype device_type;
    int has_fractional_ts;         /* some ts had a fractional µs part (HTA ns rounding applies) */
    int has_fractional_dur;        /* some dur had a fractional µs part */
    int64_t base_time_ns;          /* Kineto baseTimeNanoseconds, native realtime - ts of the first
                                      CLOCK_SYNC pair (tp_clocksync); 0: absent */
    int64_t base_time_end_ns;      /* native: realtime - ts of the last CLOCK_SYNC pair */
    uint64_t clock_uncertainty_ns; /* native: the CLOCK_SYNC pairs' uncertainty */
    size_t n_clock_pairs;          /* native: CLOCK_SYNC pairs in the trace */
    tp_rank_clock clock;           /* on the job clock (tp_align_ranks, tp_load_paths) */
    uint32_t dist_backend;         /* string id of distributedInfo.backend; 0: absent */
    tp_device_info *devices;
    size_t n_devices;
    tp_events ev;
    tp_memevents mem;
    /* counts of what the importer saw but did not keep as rows */
    uint64_t n_json_events;     /* every traceEvents entry */
    uint64_t n_flow;            /* ph s/f/t (ac2g etc.) */
    uint64_t n_instant;         /* ph i/I that are not memory events */
    uint64_t n_meta;            /* ph M */
    uint64_t n_dropped;         /* no dur or no cat, or cat "Trace" (HTA admission rule) */
    uint64_t n_dropped_records; /* native: DROPPED record counts */
    /* native: why CUDA tracing was off or stopped (the collector's `trainprof.cuda_off`
     * COUNTER, docs/collector.md), string pool id; 0: it was on throughout or never tried */
    uint32_t cuda_off;
    /* native: the collector's `trainprof.cupti_refused` counter, what it said when another
     * CUPTI client of the process (torch.profiler) was refused CUPTI because the recording
     * held it: that client's own trace has no CUDA activity; 0 when none was */
    uint32_t cupti_refused;
    /* native: what the collector kept and lost, by .tprof record type (docs/trace-format.md;
     * TP_REC_*); n_lost_kind[0]: drops of an unknown kind. Read through tp_an_drops. */
    uint64_t n_kept_kind[TP_MODEL_REC_KINDS];
    uint64_t n_lost_kind[TP_MODEL_REC_KINDS];

    /* events the loader skipped as impossible, by reason (TP_SKIP_TABLE) */
    uint64_t n_skipped[TP_SKIP_COUNT];
    /* indexes (tp_model_finish) */
    uint32_t *by_corr; /* rows with correlation != -1 sorted by (correlation, ts) */
    size_t n_by_corr;
    /* a directory over by_corr for tp_rank_corr_rows (finish): entries of correlation c lie
     * in [corr_dir[j], corr_dir[j + 1]) with j = (c - corr_lo) >> corr_shift */
    int64_t corr_lo, corr_hi;
    int corr_shift;
    uint32_t *corr_dir; /* NULL: no correlated rows, or dropped (tp_model_drop_corr_dir) */
    int corr_dropped;   /* 1: by_corr freed for good (tp_rank_drop_corr_index): asking aborts */
    tp_buckets streams; /* rows with stream != -1, per stream id */
    tp_buckets threads; /* rows with stream == -1, per (pid, tid) */
    tp_buckets cats;    /* every row, per tp_cat (key; key2 = 0): per-kind row lists */
    /* thread names (native THREAD records, Kineto "thread_name" metadata events), in the
     * order first named; use tp_rank_thread_name / tp_rank_set_thread_name */
    size_t n_thread_names;
    int64_t *tn_pid, *tn_tid;
    uint32_t *tn_name;  /* string pool id */
    tp_stacks stacks;   /* call stacks the rows refer to (tp_rank_add_stack) */
    tp_samples samples; /* native, `record --sample`: every thread's stack HZ times a second */
    /* the processes whose events these are, main first then in tree order (tp_process) */
    size_t n_procs;
    tp_process *procs;
    /* the environment, in the order first set (tp_rank_set_env / tp_rank_env) */
    size_t n_env;
    tp_env_entry *env;
} tp_rank;

typedef struct tp_strpool tp_strpool;

typedef struct {
    tp_rank *ranks; /* sorted by rank after finish */
    size_t n_ranks;
    tp_strpool *strings;
    struct tp_progress *progress; /* while loading: where loaders report how far they got
                                     (tp_progress; NULL: nowhere). Not owned. */
    tp_scratch *scratch; /* tp_model_finish's sort blocks, kept (up to 24 bytes a row of the
                            largest rank) for the first analyses' view to take over
                            (tp_an_view_build, tp_scratch_move): it then writes into pages the
                            finish has already faulted instead of mapping fresh ones (~25 k page
                            faults on a 10 M-record report). Empty once taken; freed with the
                            model or by tp_model_trim_scratch. A cache, so analyses may take
                            from it through a const model (it has its own mutex). */

    /* TP_FINISH_NO_* bits: the indexes tp_model_finish leaves unbuilt (0: all) */
    unsigned finish_skip;
} tp_model;

/* What tp_model_finish need not build or keep (tp_model.finish_skip, set before the finish: the
 * loader's `skip`), for a caller that would drop it right after: each index as if dropped by the
 * function named, and the TP_EV_DROP_* columns of TP_FINISH_DROP(cols) as by tp_model_drop_columns
 * when the finish returns. The External ids and input shapes go before the sort, which then
 * neither permutes nor fits them; the derived ones (depth, load order) after. Not building them
 * lowers the finish's own high water, the model build's top on 25-35 MB Kineto sets (the indexes
 * are made while the sorted columns are all resident): `report --compat hta`'s finish on
 * hta_negative_queue_length 8.5 -> 7.9 MiB, trace_diff_test 8.8 -> 8.1 (gdb phases, with its
 * drops). */
enum {
    TP_FINISH_NO_CAT_INDEX = 1u << 0,    /* tp_model_drop_cat_index: 4 bytes a row */
    TP_FINISH_NO_STREAM_INDEX = 1u << 1, /* tp_model_drop_stream_index: 4 bytes a GPU row */
    TP_FINISH_NO_CORR_DIR = 1u << 2,     /* tp_model_drop_corr_dir: 1-2 bytes a correlated row */
};
#define TP_FINISH_DROP_SHIFT 8
#define TP_FINISH_DROP(cols) ((unsigned)(cols) << TP_FINISH_DROP_SHIFT)

/* ---- building (loaders, tests) ---- */

tp_model *tp_model_new(void); /* aborts on out of memory, like the rest of the analyzer */

/* Frees everything. NULL: no-op. */
void tp_model_close(tp_model *m);

/* Appends an empty rank for `file` (copied) and returns it; rank = -1 until set. The pointer
 * stays valid until the next tp_model_add_rank. */
tp_rank *tp_model_add_rank(tp_model *m, const char *file);

/* Removes the rank added last (a loader that failed half way). */
void tp_model_pop_rank(tp_model *m);

/* Interns `len` bytes of `s` and returns the id (0 only for the empty string). */
uint32_t tp_model_intern(tp_model *m, const char *s, size_t len);

/* The pool's hash of `len` bytes of `s` (never 0), for tp_model_intern_hashed: a loader can
 * hash on a thread of its own and intern on the model's. */
uint64_t tp_model_str_hash(const char *s, size_t len);

/* tp_model_intern with h = tp_model_str_hash(s, len) computed before. */
uint32_t tp_model_intern_hashed(tp_model *m, const char *s, size_t len, uint64_t h);

/* Looks up an interned string without adding it; 0 when absent (or empty). */
uint32_t tp_model_find_str(const tp_model *m, const char *s);

/* The string with `id` (NUL-terminated, owned by the model); "" for 0 or unknown ids. */
const char *tp_model_str(const tp_model *m, uint32_t id);

/* The pool's ids run from 0 (the empty string) to tp_model_n_strings(m) - 1, in the order
 * the strings were first interned. */
uint32_t tp_model_n_strings(const tp_model *m);

/* Bytes the string pool holds (blocks, ids, hash table), for tp_model_mem. */
size_t tp_model_strings_bytes(const tp_model *m);

/* The length of string `id` (it may hold NUL bytes); 0 for 0 or unknown ids. */
size_t tp_model_str_len(const tp_model *m, uint32_t id);

/* Moves every rank of `from` (loaded, not finished) to the end of `into`, in order, and
 * interns every string of `from`'s pool into `into`'s in id order first (tp_model_move.c).
 * So loading files into models of their own, each on its own thread, and moving them into
 * one in file order gives the ids, and so the bytes of every output, of loading them into
 * one model one after the other. `from` keeps no rank; close it. */
void tp_model_move_ranks(tp_model *into, tp_model *from);

/* TP_EVF_LAUNCH | TP_EVF_PROFILER_STEP | TP_EVF_NCCL as implied by an event name alone
 * (loaders keep TP_EVF_LAUNCH only on runtime/driver rows). */
uint8_t tp_model_name_flags(const char *name);

/* Resets `r` to an event with every optional field unknown (-1, bw_gbps NaN), category
 * OTHER. */
void tp_event_row_init(tp_event_row *r);
/* Append a copy of row `r` to the columns, which own their arrays (freed with the model).
 * Abort on out of memory. */
void tp_events_push(tp_events *ev, const tp_event_row *r);
/* The stack column of `ev`, made (every row 0) when absent: for a loader that writes the rows'
 * stacks itself (the Kineto Python stacks, a native load's rows). */
uint32_t *tp_events_stack_col(tp_events *ev);
/* tp_events_push for a plain row (tp_events_plain: no copy facts, no Kineto External id or
 * Sequence number, its category's usual text, into a table never finished), without the
 * tests for those: a native load's API, kernel and NVTX rows, millions of them. */
void tp_events_push_plain(tp_events *ev, const tp_event_row *r);
/* 1 when tp_events_push_plain may take `r`: what it skips would leave `ev` as
 * tp_events_push does (its category's text is the one the table saw first for it). */
int tp_events_plain(const tp_events *ev, const tp_event_row *r);
/* tp_events_push_plain of a row given as its stored codes, for a loader that knows the row's
 * place already: `place`, the index (below TP_EV_PLACE_WIDE) that an earlier row with the
 * same place fields got (tp_ev_place_index of that row; the correlation's high half 0), and
 * `corr32`, the correlation id when below TP_EV_U32_WIDE, TP_EV_U32_NONE for none. The row
 * must be plain (tp_events_plain). Writes the columns and returns 1 when the table has room,
 * `dur` fits its 32-bit code and no optional column would need a value; else writes nothing
 * and returns 0 (push the row with tp_events_push_plain then). Static inline: a native load's
 * API, kernel and NVTX rows come here from their handlers without building a tp_event_row
 * or finding the place again (tp_events_push_plain's place test was ~20 instructions a row). */
static inline int tp_events_append_plain(tp_events *ev, int64_t ts, uint64_t dur, uint32_t name,
                                         uint8_t cat, uint8_t flags, uint32_t stack,
                                         uint32_t corr32, uint16_t place) {
    assert(place < ev->places.n && !ev->parent16 && !ev->cat_raw_opt && !ev->external_id32_opt &&
           !ev->seq32_opt && ev->stack); /* plain, never finished; stack: made by the loader */
    size_t i = ev->n;
    if (i >= ev->cap || dur >= TP_EV_U32_WIDE || ev->shapes_opt)
        return 0;
    ev->n = i + 1;
    ev->ts[i] = ts, ev->dur32[i] = (uint32_t)dur, ev->name[i] = name;
    ev->cat[i] = cat, ev->flags[i] = flags, ev->stack[i] = stack;
    ev->corr32[i] = corr32, ev->place[i] = place;
    return 1;
}
void tp_memev_push(tp_memevents *mem, const tp_memev_row *r);
/* tp_memev_push of a row given as its stored values, for a loader that knows the row's place:
 * `place`, the index (below TP_EV_PLACE_WIDE) an earlier row with the same pid, tid, device and
 * heap got. The row carries no allocator totals and its size is tp_memev_size_derived(op,
 * bytes). Writes the columns and returns 1 when the table has room, `bytes` fits its 32-bit
 * code and `op` is at most TP_MEMEV_OP_MASK; else writes nothing and returns 0 (push the row
 * with tp_memev_push then). Static inline, as tp_events_append_plain. */
static inline int tp_memev_append(tp_memevents *mem, int64_t ts, uint8_t kind, uint64_t addr,
                                  int64_t bytes, uint32_t stack, uint8_t op, uint16_t place) {
    assert(place < mem->places.n);
    size_t i = mem->n;
    if (i >= mem->cap || bytes <= INT32_MIN || bytes > INT32_MAX || op > TP_MEMEV_OP_MASK)
        return 0;
    mem->n = i + 1;
    mem->ts[i] = ts, mem->kind[i] = kind, mem->addr[i] = addr, mem->stack[i] = stack;
    mem->bytes32[i] = (int32_t)bytes, mem->op_flags[i] = op, mem->place[i] = place;
    return 1;
}
/* Room for `rows` rows in every allocated column at once (a loader that knows how many will
 * come: no regrowth, and the columns stay where they are while they fill); never shrinks.
 * Abort on out of memory. */
void tp_events_reserve(tp_events *ev, size_t rows);
void tp_memev_reserve(tp_memevents *mem, size_t rows);

/* Sorts every rank's events and memory events by time, derives device_type, builds the
 * indexes and resolves nesting; ranks without a rank number get their position. Call once
 * after loading; idempotent. */
void tp_model_finish(tp_model *m);

/* Frees the blocks finish kept for the first view (m->scratch), for a caller that builds no
 * view or loads another model first. */
void tp_model_trim_scratch(tp_model *m);

/* Frees every rank's category index (tp_rank.cats: 4 bytes a row), for a caller whose views
 * never read it: a view in load order (--compat hta) has no category rows
 * (tp_an_view_cat_rows), and a view of a rank without the index walks its rows instead. */
void tp_model_drop_cat_index(tp_model *m);

/* Frees the columns of `r`'s events named by `cols` (TP_EV_DROP_* bits) for good, for a caller
 * that never reads them again (see TP_EV_DROP_EXTERNAL_ID); a column absent or dropped
 * already is no error. tp_model_drop_columns: every rank's. */
void tp_rank_drop_columns(tp_rank *r, unsigned cols);
void tp_model_drop_columns(tp_model *m, unsigned cols);

/* Frees every rank's stream index (tp_rank.streams: 4 bytes a GPU row), for a caller that
 * never asks it: no analysis, report or export reads it (the TUI's lanes do). A later
 * tp_rank_stream_index aborts (the rank has streams still: -1 would be a wrong answer); a
 * second tp_model_finish builds it again. */
void tp_model_drop_stream_index(tp_model *m);

/* Frees every rank's directory over its correlation index (tp_rank.corr_dir: 1-2 bytes a
 * correlated row), for a caller that asks tp_rank_corr_rows seldom or never: the index stays,
 * and a lookup then bisects all of it instead of one slice (same answer, ~15 steps more). */
void tp_model_drop_corr_dir(tp_model *m);

/* Frees rank `r`'s correlation index (by_corr, 4 bytes a correlated row, and its directory)
 * for good, for a caller that never reads it again: `report --compat hta` once the rank's
 * diagnosis has run (tp_report_opts.diagnosed). tp_rank_corr_rows, a view build and a
 * diagnosis of the rank abort afterwards (no correlated rows would be a wrong answer). */
void tp_rank_drop_corr_index(tp_rank *r);

/* Names thread `tid` of process `pid` in rank `r` (`len` bytes of `name`, interned); a later
 * name for the same (pid, tid) replaces the earlier one. An empty name is ignored. */
void tp_rank_set_thread_name(tp_model *m, tp_rank *r, int64_t pid, int64_t tid, const char *name,
                             size_t len);

/* The name of thread (pid, tid) of `r` (owned by the model): the exact (pid, tid) when named,
 * else the first thread `tid` named in any process (pid -1 always asks that); NULL when the
 * thread was never named. Works before and after finish. */
const char *tp_rank_thread_name(const tp_model *m, const tp_rank *r, int64_t pid, int64_t tid);

/* Adds stack `id` (> 0; each id once per rank) of `n` frames, innermost first: frame i is
 * address addr[i] in module module[i] (TP_STACK_NO_MODULE: a raw address). Copies both. */
void tp_rank_add_stack(tp_rank *r, uint32_t id, const uint32_t *module, const uint64_t *addr,
                       size_t n);

/* The same in two steps, for stacks that share frames (a caller's Python stack is the tail
 * of each of its callees'): tp_rank_add_frames appends `n` frames and returns the index of
 * the first; tp_rank_add_stack_frames adds stack `id` over frames [first, first + n) added
 * before. */
size_t tp_rank_add_frames(tp_rank *r, const uint32_t *module, const uint64_t *addr, size_t n);
void tp_rank_add_stack_frames(tp_rank *r, uint32_t id, size_t first, size_t n);

/* Appends one frame whose outer frame is frame `outer` (added before; SIZE_MAX: none) and
 * returns its index: a stack over it (tp_rank_add_stack_frames) reads its frame, then its
 * caller's, ... (a tree: each stack's frames are its own and its caller's stack's). */
size_t tp_rank_add_frame_on(tp_rank *r, uint32_t module, uint64_t addr, size_t outer);

/* Makes room for `stacks` more stacks of `frames` more frames in all, so that adding them
 * regrows nothing (a caller that knows the total: no doubling slack, no freed copies). */
void tp_rank_reserve_stacks(tp_rank *r, size_t stacks, size_t frames);

/* Adds module `id` (each id once per rank): its file's path (`path` interned; NULL:
 * unknown) and the build-id recorded with it (`len` bytes of `build_id`, at most 32 kept;
 * 0: unknown). */
void tp_rank_add_stack_module(tp_model *m, tp_rank *r, uint32_t id, const char *path,
                              const uint8_t *build_id, size_t len);

/* Adds Python code object `id` (each id once per rank) that Python frames point at:
 * function `name` and `file` (interned; NULL: unknown), first line `first_line`. */
void tp_rank_add_stack_pycode(tp_model *m, tp_rank *r, uint32_t id, const char *file,
                              const char *name, uint32_t first_line);

/* Sets environment fact `key` = `value` of `device` (-1: process) in `r` (both interned). An
 * existing key of that device is replaced when `replace`, else kept. Empty values are ignored. */
void tp_rank_set_env(tp_model *m, tp_rank *r, int32_t device, const char *key, const char *value,
                     int replace);

/* The value of environment fact `key` of `device` (-1: process) in `r` (owned by the model),
 * NULL when not recorded. */
const char *tp_rank_env(const tp_model *m, const tp_rank *r, int32_t device, const char *key);

/* Adds process `p` (copied; its file is copied too, NULL: the rank's) to rank `r`. */
void tp_rank_add_process(tp_rank *r, const tp_process *p);

/* Moves every event, memory event, thread name, device and count of rank `from` into rank
 * `into` (both of `m`, loaded, not finished) and removes `from` (ranks after it move down one
 * place). The processes of `from` follow those of `into`; so that ids from two processes never
 * meet, their correlation ids are offset (tp_process.corr_offset) and, on GPU-side rows, their
 * stream ids too (by the same offset; the first process keeps its own); its stacks, modules
 * and Python code objects come along under ids past the rank's own, and its rows refer to
 * them by those. */
void tp_model_merge_rank(tp_model *m, size_t into, size_t from);

/* The process of `r` with pid `pid` (the latest image when it exec'd), or NULL. */
const tp_process *tp_rank_process(const tp_rank *r, int64_t pid);

/* ---- queries (after finish) ---- */

/* Events of `r` its loader skipped as impossible, all reasons together. */
uint64_t tp_rank_skipped(const tp_rank *r);

/* Rows with correlation `corr`, sorted by ts: returns the count and sets *rows to the first
 * entry in r->by_corr (NULL when none). */
size_t tp_rank_corr_rows(const tp_rank *r, int64_t corr, const uint32_t **rows);

/* Bucket index of stream `stream` in r->streams, -1 when absent; aborts when the index was
 * dropped (tp_model_drop_stream_index). */
long tp_rank_stream_index(const tp_rank *r, int64_t stream);

/* Frames of stack `id` of `r`, innermost first: returns their count (0 when the stack is
 * unknown, or id 0) and copies the first min(count, cap) of them into module[] and addr[]
 * (a tree of stacks shares its frames, so they are not contiguous in the model). */
size_t tp_rank_stack_copy(const tp_rank *r, uint32_t id, uint32_t *module, uint64_t *addr,
                          size_t cap);

/* Module `id` of `r`'s stacks, NULL when unknown (or TP_STACK_NO_MODULE). */
const tp_stack_module *tp_rank_stack_module(const tp_rank *r, uint32_t id);

/* Python code object `id` of `r`'s stacks (TP_STACK_PY_CODE of a Python frame), NULL when
 * unknown. */
const tp_stack_pycode *tp_rank_stack_pycode(const tp_rank *r, uint32_t id);

/* The rank with number `rank`, or NULL. */
const tp_rank *tp_model_rank(const tp_model *m, int rank);

/* 1 when the row is GPU-side (HTA's rule: stream != -1). */
static inline int tp_events_is_gpu(const tp_events *ev, size_t row) {
    return tp_ev_stream(ev, row) != -1;
}

#endif
