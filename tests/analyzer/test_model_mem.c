/* test_model_mem: the model's memory layout (issue 13) keeps every value while paying only
 * for what a trace uses.
 *
 * - Optional columns (Kineto args, NVTX domains, the category text) stay absent while no row
 *   sets them; the accessors then answer "none". The first row that sets one creates it with
 *   the earlier rows "none", and after finish's sort every value is still on its own row.
 * - Copy facts (bytes, copy/src/dst kind, bandwidth) live in a side table that follows its rows
 *   through the sort.
 * - After finish no column has growth slack: tp_model_mem counts exactly n rows of each
 *   column that is there, and the bytes per event of a trace without Kineto args are the
 *   dense and derived columns' sum (33) plus 24 per copy and the places, not the 137 of every
 * column.
 * - Narrow columns (dur, correlation, External id, Sequence number: 32-bit codes) keep every
 *   64-bit value: the ones that do not fit go to side tables that follow their rows through
 *   the sort; a merged process's correlation ids (high half set) keep theirs in the place.
 * - Places (pid, tid, stream, device, Fwd thread id, NVTX domain) are shared by the rows that
 *   have the same; past 65,534 of them a row's place index goes to a side table, values intact.
 * - The derived columns (parent, depth, load order) are small codes: a parent over 65,534 rows
 *   back, a depth past 254 and a load position over 32,767 rows from the row's sorted place
 *   go to side tables, read back exactly, and a second finish carries the load order along.
 * - A real recording (the committed sample traces) loads with the optional Kineto columns
 *   absent and at most 48 bytes of event columns per event.
 * Every check is on values and counts, never on time. */
#include "tp_test.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tp_load.h"
#include "tp_model.h"
#include "tp_model_mem.h"

/* Bytes per row of the columns every row has plus the derived ones (tp_model.h). */
static size_t dense_row_bytes(const tp_events *e) {
    size_t b = 0;
#define ADD(c, none) b += e->c ? sizeof *e->c : 0;
    TP_EV_DENSE(ADD)
    ADD(stack, 0) /* optional: made at the first row with a stack, dropped when unused */
#undef ADD
#define ADD_DERIVED(c, none) b += e->c ? sizeof *e->c : 0; /* one of the load order's forms */
    TP_EV_DERIVED(ADD_DERIVED)
#undef ADD_DERIVED
    return b;
}

/* Each row's load position (tp_ev_load_rows inverted); free() it. */
static size_t *load_positions(const tp_events *e) {
    uint32_t *buf = malloc((e->n + 1) * sizeof *buf);
    size_t *pos = malloc((e->n + 1) * sizeof *pos);
    const uint32_t *rows = tp_ev_load_rows(e, buf);
    for (size_t k = 0; k < e->n; k++)
        pos[rows[k]] = k;
    free(buf);
    return pos;
}

/* Row `row`'s load position. */
static long load_ord(const tp_events *e, size_t row) {
    size_t *pos = load_positions(e);
    long p = (long)pos[row];
    free(pos);
    return p;
}

/* Bytes of the places and their hash table. */
static size_t places_bytes(const tp_events *e) {
    return e->places.n * sizeof *e->places.v + (e->places.mask + 1) * sizeof *e->places.slots;
}

/* n rows pushed in reverse time order (so finish must permute), none of them setting an
 * optional column; every 10th a copy with bytes = 1000 + its ts. */
static tp_model *native_like(size_t n) {
    tp_model *m = tp_model_new();
    tp_rank *r = tp_model_add_rank(m, "native-like");
    uint32_t name = tp_model_intern(m, "cudaLaunchKernel", 16);
    uint32_t cat = tp_model_intern(m, "cuda_runtime", 12);
    for (size_t i = 0; i < n; i++) {
        tp_event_row row;
        tp_event_row_init(&row);
        row.ts = (int64_t)(n - i) * 10;
        row.dur = 5;
        row.name = name;
        row.cat = TP_CAT_CUDA_RUNTIME;
        row.cat_raw = cat;
        row.pid = 1, row.tid = 2;
        if (i % 10 == 0) {
            row.cat = TP_CAT_MEMCPY, row.bytes = 1000 + row.ts;
            row.copy_kind = 1, row.src_kind = 2, row.dst_kind = 3;
            row.stream = 7, row.device = 0;
        }
        tp_events_push(&r->ev, &row);
    }
    tp_model_finish(m);
    return m;
}

static void test_optional_absent(void) {
    tp_model *m = native_like(1000);
    const tp_events *e = &m->ranks[0].ev;
    CHECK_EQ_U(e->n, 1000);
    CHECK(e->external_id32_opt == NULL && e->shapes_opt == NULL);
    CHECK(e->seq32_opt == NULL);
    CHECK_EQ_U(e->places.n, 2); /* thread (1, 2) and stream 7 */
    CHECK_EQ_I(tp_ev_fwd_tid(e, 3), -1);
    CHECK(e->cat_raw_opt == NULL); /* each category written one way */
    CHECK_EQ_I(tp_ev_seq(e, 3), -1);
    CHECK_EQ_I(tp_ev_external_id(e, 3), -1);
    CHECK(isnan(tp_ev_bw_gbps(e, 3)));
    CHECK_EQ_U(tp_ev_domain(e, 3), 0);
    CHECK_STR(tp_model_str(m, tp_ev_cat_raw(e, 500)), "cuda_runtime");
    /* copies follow their rows: bytes = 1000 + ts, kinds kept, others none */
    CHECK_EQ_U(e->n_copies, 100);
    size_t copies = 0;
    for (size_t i = 0; i < e->n; i++) {
        if (e->cat[i] == TP_CAT_MEMCPY) {
            copies++;
            CHECK_EQ_I(tp_ev_bytes(e, i), 1000 + e->ts[i]);
            CHECK_EQ_U(tp_ev_copy_kind(e, i), 1);
            CHECK_EQ_U(tp_ev_src_kind(e, i), 2);
            CHECK_EQ_U(tp_ev_dst_kind(e, i), 3);
        } else {
            CHECK_EQ_I(tp_ev_bytes(e, i), -1);
            CHECK_EQ_U(tp_ev_copy_kind(e, i), 0);
        }
        if (i)
            CHECK(e->ts[i] > e->ts[i - 1]);
    }
    CHECK_EQ_U(copies, 100);
    /* no slack: exactly n rows of each column, the side table exactly its entries */
    tp_model_mem a;
    tp_model_mem_account(m, &a);
    CHECK_EQ_U(e->cap, e->n);
    CHECK_EQ_U(a.events_bytes,
               1000 * dense_row_bytes(e) + 100 * sizeof(tp_ev_copy) + places_bytes(e));
    CHECK_EQ_U(dense_row_bytes(e), 29); /* no row has a stack: no stack column */
    CHECK(e->stack == NULL && tp_ev_stack(e, 3) == 0);
    /* a push after the finish makes the column again, its earlier rows none */
    tp_rank *r = &m->ranks[0];
    tp_event_row row;
    tp_event_row_init(&row);
    row.ts = 5, row.dur = 1, row.pid = 1, row.tid = 1, row.stack = 42;
    tp_events_push(&r->ev, &row);
    CHECK(e->stack != NULL && tp_ev_stack(e, 3) == 0 && tp_ev_stack(e, 1000) == 42);
    tp_model_finish(m);
    CHECK(e->stack != NULL);
    CHECK_EQ_U(tp_ev_stack(e, 0), 42); /* ts 5: the first row now */
    tp_model_close(m);
}

/* Kineto-like rows: args appear from row 3 on, a category written two ways. */
static void test_optional_created(void) {
    tp_model *m = tp_model_new();
    tp_rank *r = tp_model_add_rank(m, "kineto-like");
    uint32_t op = tp_model_intern(m, "cpu_op", 6), Op = tp_model_intern(m, "Operator", 8);
    uint32_t dims = tp_model_intern(m, "[[2, 3]]", 8);
    for (int i = 0; i < 8; i++) {
        tp_event_row row;
        tp_event_row_init(&row);
        row.ts = (8 - i) * 100; /* reversed: finish permutes */
        row.dur = 10;
        row.cat = TP_CAT_CPU_OP;
        row.cat_raw = i == 5 ? Op : op;
        row.pid = 1, row.tid = 1;
        if (i >= 3) {
            row.seq = 40 + i, row.fwd_tid = i == 4 ? 9 : -1, row.external_id = 500 + i;
            row.shapes = dims, row.bw_gbps = 1.5 * i;
        }
        tp_events_push(&r->ev, &row);
    }
    tp_model_finish(m);
    const tp_events *e = &r->ev;
    CHECK(e->seq32_opt && e->external_id32_opt && e->shapes_opt);
    CHECK_EQ_U(e->places.n, 2); /* (1, 1) with and without a Fwd thread id */
    CHECK_EQ_U(e->n_copies, 5); /* the rows with a bandwidth */
    CHECK(e->cat_raw_opt != NULL);
    for (size_t k = 0; k < e->n; k++) {
        int i = 8 - (int)(e->ts[k] / 100); /* the push that made row k */
        CHECK_EQ_I(tp_ev_seq(e, k), i >= 3 ? 40 + i : -1);
        CHECK_EQ_I(tp_ev_external_id(e, k), i >= 3 ? 500 + i : -1);
        CHECK_EQ_I(tp_ev_fwd_tid(e, k), i == 4 ? 9 : -1);
        CHECK_EQ_U(tp_ev_shapes(e, k), i >= 3 ? dims : 0);
        if (i >= 3)
            CHECK_NEAR(tp_ev_bw_gbps(e, k), 1.5 * i, 0);
        else
            CHECK(isnan(tp_ev_bw_gbps(e, k)));
        CHECK_STR(tp_model_str(m, tp_ev_cat_raw(e, k)), i == 5 ? "Operator" : "cpu_op");
    }
    tp_model_close(m);
}

/* Memory events: the allocator totals are a side table of the rows that have them, a size
 * other than the one the row's op and bytes imply goes to wide_size, the calling thread,
 * device and heap handle are places; all follow their rows through the sort. */
static void test_memev_optional(void) {
    tp_model *m = tp_model_new();
    tp_rank *r = tp_model_add_rank(m, "mem");
    for (int i = 0; i < 5; i++) {
        tp_memev_row row = {0};
        row.ts = 100 - i, row.bytes = 64, row.kind = TP_MEMEV_ALLOC, row.device = 0;
        row.total_allocated = row.total_reserved = -1;
        row.pid = i == 4 ? -1 : 100 + i % 2, row.tid = i == 4 ? -1 : 7;
        if (i == 3)
            row.total_allocated = 4096, row.total_reserved = 8192, row.largest_free = 77;
        tp_memev_push(&r->mem, &row);
    }
    tp_model_finish(m);
    const tp_memevents *e = &r->mem;
    CHECK_EQ_U(e->n_totals, 1);
    CHECK_EQ_U(e->wide_size.n, 0);
    CHECK_EQ_U(e->places.n, 3);
    for (size_t k = 0; k < e->n; k++) {
        int i = 100 - (int)e->ts[k];
        CHECK_EQ_I(tp_memev_pid(e, k), i == 4 ? -1 : 100 + i % 2);
        CHECK_EQ_I(tp_memev_tid(e, k), i == 4 ? -1 : 7);
        CHECK_EQ_U(tp_memev_heap(e, k), 0);
        CHECK_EQ_I(tp_memev_total_allocated(e, k), i == 3 ? 4096 : -1);
        CHECK_EQ_I(tp_memev_total_reserved(e, k), i == 3 ? 8192 : -1);
        CHECK_EQ_I(tp_memev_largest_free(e, k), i == 3 ? 77 : 0);
    }
    CHECK_EQ_U(e->cap, e->n);
    tp_model_close(m);
    m = tp_model_new(); /* a heap and size on a row of op NONE: a place and a wide size */
    r = tp_model_add_rank(m, "heap");
    for (int i = 0; i < 3; i++) {
        tp_memev_row row = {0};
        row.ts = 10 - i, row.kind = TP_MEMEV_HEAP, row.pid = row.tid = 1;
        row.total_allocated = row.total_reserved = -1;
        if (i == 1)
            row.heap = 0xabc, row.size = 1 << 20;
        tp_memev_push(&r->mem, &row);
    }
    tp_model_finish(m);
    e = &r->mem;
    CHECK_EQ_U(e->places.n, 2);
    CHECK_EQ_U(e->wide_size.n, 1);
    for (size_t k = 0; k < e->n; k++) {
        CHECK_EQ_U(tp_memev_heap(e, k), e->ts[k] == 9 ? 0xabc : 0);
        CHECK_EQ_U(tp_memev_size(e, k), e->ts[k] == 9 ? 1 << 20 : 0);
    }
    CHECK_EQ_U(e->cap, e->n);
    tp_model_close(m);
}

/* The memory events' side paths read back exactly after finish's sort (rows pushed in
 * reverse): deltas that do not fit 32 bits (wide_bytes, INT32_MIN itself included), sizes
 * the op and delta do not imply (a resize; a register over a live region) against those they
 * do (no entry), totals on a few rows, and a heap handle and device per place. */
static void test_memev_side(void) {
    static const int64_t big[] = {INT64_C(3) << 31, INT32_MIN, -(INT64_C(5) << 32),
                                  INT64_MAX,        INT32_MAX, INT32_MIN + 1};
    enum { N = 60 };
    tp_model *m = tp_model_new();
    tp_rank *r = tp_model_add_rank(m, "side");
    tp_memev_row want[N];
    for (int i = 0; i < N; i++) {
        tp_memev_row row = {0};
        row.ts = 1000 - i, row.kind = TP_MEMEV_ALLOC, row.addr = 0x7000 + (uint64_t)i;
        row.total_allocated = row.total_reserved = -1;
        row.pid = 5, row.tid = 6 + i % 2, row.device = i % 3 == 0 ? -1 : 1;
        row.bytes = i % 10 == 0 ? big[i / 10] : i * 100 - 2000;
        row.op = (uint8_t)(i % 7), row.stack = (uint32_t)i;
        row.heap = row.op ? 0xbeef0000u + (uint64_t)(i % 4) : 0;
        row.size = tp_memev_size_derived(row.op, row.bytes);
        if (row.op == TP_MEMEV_OP_REGION_RESIZE || i % 9 == 4) /* not the derived size */
            row.size = (uint64_t)i * 4096 + 1;
        if (i % 13 == 3)
            row.total_allocated = i * 7, row.total_reserved = i * 11, row.largest_free = -1;
        want[i] = row;
        tp_memev_push(&r->mem, &row);
    }
    tp_model_finish(m);
    const tp_memevents *e = &r->mem;
    CHECK_EQ_U(e->n, N);
    CHECK_EQ_U(e->wide_bytes.n, 4); /* big[0..3]; INT32_MAX and INT32_MIN + 1 fit */
    CHECK_EQ_U(e->n_totals, 5);     /* i = 3, 16, 29, 42, 55 */
    size_t odd_size = 0;
    for (int i = 0; i < N; i++)
        odd_size += want[i].size != tp_memev_size_derived(want[i].op, want[i].bytes);
    CHECK(odd_size > 0);
    CHECK_EQ_U(e->wide_size.n, odd_size);
    int ok = 1;
    for (size_t k = 0; k < e->n; k++) {
        const tp_memev_row *w = &want[1000 - e->ts[k]];
        ok &= e->addr[k] == w->addr && e->stack[k] == w->stack && e->kind[k] == w->kind;
        ok &= tp_memev_bytes(e, k) == w->bytes && tp_memev_op_of(e, k) == w->op;
        ok &= tp_memev_heap(e, k) == w->heap && tp_memev_size(e, k) == w->size;
        ok &= tp_memev_pid(e, k) == w->pid && tp_memev_tid(e, k) == w->tid;
        ok &= tp_memev_device(e, k) == w->device;
        ok &= tp_memev_total_allocated(e, k) == w->total_allocated;
        ok &= tp_memev_total_reserved(e, k) == w->total_reserved;
        ok &= tp_memev_largest_free(e, k) == w->largest_free;
    }
    CHECK(ok);
    tp_model_mem a;
    tp_model_mem_account(m, &a);
    CHECK(a.memev_bytes >= N * 28); /* the columns, plus the side tables and places */
    tp_model_close(m);
}

/* A recording of the trainer (committed sample): the Kineto columns absent, <= 80 B/event. */
static void test_sample_trace(void) {
    const char *src = getenv("TP_SOURCE_DIR");
    if (!src)
        TP_SKIP("TP_SOURCE_DIR not set");
    char path[1024];
    snprintf(path, sizeof path, "%s/traces/samples/cpu-trainer-pageable-copies.tprof", src);
    const char *paths[] = {path};
    tp_model *m = NULL;
    tp_load_result res;
    CHECK_OK(tp_load_paths(paths, 1, &m, &res));
    if (!m)
        return;
    const tp_events *e = &m->ranks[0].ev;
    CHECK(e->n > 500);
    CHECK(e->seq32_opt == NULL && e->external_id32_opt == NULL && e->shapes_opt == NULL);
    CHECK(e->cat_raw_opt == NULL);
    CHECK(e->n_copies > 0); /* the pageable-copies scenario copies */
    tp_model_mem a;
    tp_model_mem_account(m, &a);
    CHECK_EQ_U(a.n_events, e->n);
    CHECK(a.events_bytes <= 48 * a.n_events);
    tp_model_close(m);
}

/* Rows already in time order: finish does not permute, and still frees the growth slack. */
static void test_sorted_fit(void) {
    tp_model *m = tp_model_new();
    tp_rank *r = tp_model_add_rank(m, "sorted");
    for (int i = 0; i < 1500; i++) { /* the columns grow to 2048 rows */
        tp_event_row row;
        tp_event_row_init(&row);
        row.ts = i, row.dur = 1, row.pid = 1, row.tid = 1;
        tp_events_push(&r->ev, &row);
    }
    CHECK(r->ev.cap > r->ev.n);
    tp_model_finish(m);
    CHECK_EQ_U(r->ev.cap, 1500);
    tp_model_mem a;
    tp_model_mem_account(m, &a);
    CHECK_EQ_U(a.events_bytes, 1500 * dense_row_bytes(&r->ev) + places_bytes(&r->ev));
    tp_model_close(m);
}

/* Finish's order, on rows shaped to reach every path of its sort (buckets finished by
 * insertion, by the radix sort past TS_INSERTION_MAX rows, runs of equal ts, equal (ts, dur)
 * that keep load order, a wide duration): rows by ts, longer first on ties, then in load
 * order, each row's columns moved with it, the correlation index by (correlation, row). */
static void test_sort_order(void) {
    static const int shapes[][2] = {{100000, 3}, {50, 1000}, {1 << 20, 2000}, {7, 0}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        tp_model *m = tp_model_new();
        tp_rank *r = tp_model_add_rank(m, "order");
        uint64_t x = 88172645463325252ull + k; /* xorshift: the same rows every run */
        int n = 6000;
        for (int i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            tp_event_row row;
            tp_event_row_init(&row);
            /* a time spread (shape 0), a crowd at one time with some later (1, 3), or a few
             * far-off rows (2) */
            row.ts = (int64_t)(x % (uint64_t)shapes[k][0]) + (i % 97 == 0 ? shapes[k][1] : 0);
            row.dur = i % 501 == 0 ? (INT64_C(1) << 33) : (int64_t)(x >> 40) % 4;
            row.name = (uint32_t)i + 1; /* the load position, to follow the row */
            row.correlation = (int64_t)(x >> 20) % 50 - 1;
            row.pid = 1, row.tid = 1 + i % 3;
            tp_events_push(&r->ev, &row);
        }
        tp_model_finish(m);
        const tp_events *e = &r->ev;
        CHECK_EQ_U(e->n, (size_t)n);
        int ok = 1;
        size_t *pos = load_positions(e);
        for (size_t i = 0; i < e->n; i++) {
            ok &= e->name[i] == pos[i] + 1;
            if (i == 0)
                continue;
            int64_t t0 = e->ts[i - 1], t1 = e->ts[i], d0 = tp_ev_dur(e, i - 1),
                    d1 = tp_ev_dur(e, i);
            ok &= t0 < t1 || (t0 == t1 && (d0 > d1 || (d0 == d1 && e->name[i - 1] < e->name[i])));
        }
        free(pos);
        CHECK(ok);
        for (size_t j = 1; j < r->n_by_corr; j++) {
            int64_t c0 = tp_ev_corr(e, r->by_corr[j - 1]), c1 = tp_ev_corr(e, r->by_corr[j]);
            ok &= c0 < c1 || (c0 == c1 && r->by_corr[j - 1] < r->by_corr[j]);
        }
        CHECK(ok);
        tp_model_close(m);
    }
}

/* Few copies among many rows (finish then finds their new rows by a search, not by a test of
 * every row), with ties on ts and on (ts, dur): each copy's facts follow its row, and rows
 * with equal ts and dur keep their push order. The stack id holds the push's index. */
static void test_sparse_copies_ties(void) {
    tp_model *m = tp_model_new();
    tp_rank *r = tp_model_add_rank(m, "sparse");
    const uint32_t n = 2000;
    for (uint32_t i = 0; i < n; i++) {
        tp_event_row row;
        tp_event_row_init(&row);
        row.ts = (int64_t)((n - i) / 4) * 10; /* runs of 4 equal ts, reversed */
        row.dur = i % 3;                      /* some of a run share their dur */
        row.stack = i;
        row.pid = 1, row.tid = 2;
        if (i % 97 == 0)
            row.cat = TP_CAT_MEMCPY, row.bytes = 1000 + i, row.copy_kind = 1;
        tp_events_push(&r->ev, &row);
    }
    tp_model_finish(m);
    const tp_events *e = &r->ev;
    CHECK_EQ_U(e->n, n);
    CHECK_EQ_U(e->n_copies, (n + 96) / 97);
    for (size_t k = 0; k < e->n; k++) {
        uint32_t i = e->stack[k];
        CHECK_EQ_I(tp_ev_bytes(e, k), i % 97 == 0 ? 1000 + (int64_t)i : -1);
        CHECK_EQ_U(tp_ev_copy_kind(e, k), i % 97 == 0 ? 1 : 0);
        if (k && e->ts[k] == e->ts[k - 1]) { /* longer first, then push order */
            CHECK(tp_ev_dur(e, k) <= tp_ev_dur(e, k - 1));
            if (tp_ev_dur(e, k) == tp_ev_dur(e, k - 1))
                CHECK(e->stack[k] > e->stack[k - 1]);
        }
    }
    tp_model_close(m);
}

/* The value of push i in test_wide_values: some fit 32 bits, some do not. */
static int64_t wide_dur(int i) {
    return i % 3 == 0 ? (INT64_C(5) << 32) + i : i % 3 == 1 ? 4294967294 + i % 2 : 1000 + i;
}
static int64_t wide_corr(int i) {
    static const int64_t v[] = {-1, 7, (INT64_C(1) << 32) + 7, -5, 4294967295, 4294967294, 0};
    return v[i % 7];
}
static int64_t wide_id(int i) {
    return i % 4 == 0 ? -1 : i % 4 == 1 ? INT64_C(1) << 40 : i % 4 == 2 ? -7 : 12345;
}

/* Values past 32 bits in the narrow columns: kept exactly, through the sort, by the
 * correlation index, and through an edit in place. */
static void test_wide_values(void) {
    tp_model *m = tp_model_new();
    tp_rank *r = tp_model_add_rank(m, "wide");
    const int n = 700;
    for (int i = 0; i < n; i++) {
        tp_event_row row;
        tp_event_row_init(&row);
        row.ts = (n - i) * 10; /* reversed: finish permutes */
        row.dur = wide_dur(i), row.correlation = wide_corr(i);
        row.external_id = wide_id(i), row.seq = wide_id(i + 1);
        row.fwd_tid = i % 5 == 0 ? 77 : -1;
        row.pid = 1, row.tid = i % 2 ? 2 : INT64_C(1) << 50;
        row.stream = i % 7 == 3 ? 9 : -1, row.device = row.stream == 9 ? 1 : -1;
        tp_events_push(&r->ev, &row);
    }
    tp_model_finish(m);
    const tp_events *e = &r->ev;
    CHECK(e->wide_dur.n > 0 && e->wide_corr.n > 0 && e->wide_external_id.n > 0);
    CHECK(e->wide_seq.n > 0 && e->corr_hi_any);
    for (size_t k = 0; k < e->n; k++) {
        int i = n - (int)(e->ts[k] / 10); /* the push that made row k */
        CHECK_EQ_I(tp_ev_dur(e, k), wide_dur(i));
        CHECK_EQ_I(tp_ev_corr(e, k), wide_corr(i));
        CHECK_EQ_I(tp_ev_external_id(e, k), wide_id(i));
        CHECK_EQ_I(tp_ev_seq(e, k), wide_id(i + 1));
        CHECK_EQ_I(tp_ev_fwd_tid(e, k), i % 5 == 0 ? 77 : -1);
        CHECK_EQ_I(tp_ev_tid(e, k), i % 2 ? 2 : INT64_C(1) << 50);
        CHECK_EQ_I(tp_ev_stream(e, k), i % 7 == 3 ? 9 : -1);
        CHECK_EQ_I(tp_ev_device(e, k), i % 7 == 3 ? 1 : -1);
    }
    for (int j = 0; j < 7; j++) { /* the index finds each correlation id, (1 << 32) + 7 too */
        const uint32_t *rows;
        size_t c = tp_rank_corr_rows(r, wide_corr(j), &rows);
        CHECK_EQ_U(c, wide_corr(j) == -1 ? 0 : 100);
        for (size_t k = 0; k < c; k++)
            CHECK_EQ_I(tp_ev_corr(e, rows[k]), wide_corr(j));
    }
    /* an edit in place: a row whose place index is narrow and one moved to a new place */
    tp_events_set_thread(&r->ev, 5, 3, 4);
    CHECK_EQ_I(tp_ev_pid(e, 5), 3);
    CHECK_EQ_I(tp_ev_tid(e, 5), 4);
    tp_model_close(m);
}

/* More places than a 2-byte index holds: the rows past 65,534 places keep theirs exactly. */
static void test_many_places(void) {
    tp_model *m = tp_model_new();
    tp_rank *r = tp_model_add_rank(m, "places");
    const int n = 70000;
    for (int i = 0; i < n; i++) {
        tp_event_row row;
        tp_event_row_init(&row);
        row.ts = n - i, row.dur = 1, row.pid = 1, row.tid = 1000 + i;
        tp_events_push(&r->ev, &row);
    }
    tp_model_finish(m);
    const tp_events *e = &r->ev;
    CHECK_EQ_U(e->places.n, (size_t)n);
    CHECK_EQ_U(e->wide_place.n, (size_t)n - TP_EV_PLACE_WIDE);
    for (size_t k = 0; k < e->n; k++)
        CHECK_EQ_I(tp_ev_tid(e, k), 1000 + n - e->ts[k]);
    CHECK_EQ_U(r->threads.n, (size_t)n); /* one thread bucket each, in tid order */
    for (size_t j = 1; j < r->threads.n; j++)
        CHECK(r->threads.key[j] > r->threads.key[j - 1]);
    tp_model_close(m);
}

/* The categories' index (r->cats): every row once, in its category's bucket (a cat byte past
 * the categories counts as TP_CAT_OTHER), rows ascending, whether such bytes are in neither
 * half of the rows, the first, the second or both (each half of the index is made on its own
 * thread, which tests its half for them). */
static void test_cat_index(void) {
    static const int past_in[][2] = {{0, 0}, {1, 0}, {0, 1}, {1, 1}};
    for (size_t k = 0; k < sizeof past_in / sizeof past_in[0]; k++) {
        tp_model *m = tp_model_new();
        tp_rank *r = tp_model_add_rank(m, "cats");
        const int n = 5001;
        for (int i = 0; i < n; i++) {
            tp_event_row row;
            tp_event_row_init(&row);
            row.ts = n - i, row.dur = 1, row.pid = 1, row.tid = 1; /* reversed: finish permutes */
            row.cat = (uint8_t)(i % 7 == 0 ? TP_CAT_KERNEL
                                : i % 3    ? TP_CAT_CUDA_RUNTIME
                                           : TP_CAT_OTHER);
            int second = n - i > n / 2; /* rows end up in ts order: this one's half */
            if (i % 11 == 5 && past_in[k][second])
                row.cat = (uint8_t)(i % 2 ? 200 : 255);
            tp_events_push(&r->ev, &row);
        }
        tp_model_finish(m);
        const tp_events *e = &r->ev;
        const tp_buckets *b = &r->cats;
        size_t seen = 0;
        int ok = 1;
        for (size_t j = 0; j < b->n; j++) {
            ok &= j == 0 || b->key[j] > b->key[j - 1];
            for (uint32_t q = b->off[j]; q < b->off[j + 1]; q++) {
                uint32_t row = b->rows[q];
                unsigned c = e->cat[row] < TP_CAT_COUNT ? e->cat[row] : TP_CAT_OTHER;
                ok &= row < e->n && (int64_t)c == b->key[j];
                ok &= q == b->off[j] || row > b->rows[q - 1];
                seen++;
            }
        }
        CHECK(ok);
        CHECK_EQ_U(seen, e->n);
        CHECK_EQ_U(b->off[b->n], e->n);
        tp_model_close(m);
    }
}

/* Row i of test_push_paths: each of tp_events_push_plain's tests fails on some rows (a
 * duration or a correlation id past the 32-bit codes, one with a high half, a new place, the
 * shapes and domain columns appearing, the columns growing: no reserve). */
static tp_event_row path_row(int i) {
    tp_event_row row;
    tp_event_row_init(&row);
    row.ts = 1000 - i, row.name = 1 + (uint32_t)(i % 3), row.stack = (uint32_t)(i % 4);
    int gpu = i / 10 % 2; /* runs of ten rows on one place */
    row.cat = gpu ? TP_CAT_KERNEL : TP_CAT_CUDA_RUNTIME, row.flags = (uint8_t)(i % 2);
    row.dur = i % 37 == 5 ? (INT64_C(1) << 33) + i : i % 41 == 7 ? INT64_C(4294967294) : i % 50;
    row.correlation = i % 9 == 4    ? -1
                      : i % 43 == 3 ? (INT64_C(1) << 32) + i
                      : i % 47 == 2 ? INT64_C(4294967294)
                                    : i;
    row.pid = 1, row.tid = i / 100 % 2 ? 2 : 3;
    if (gpu)
        row.stream = 7, row.device = 0;
    row.shapes = i >= 200 && i % 5 == 0 ? 9 : 0;
    row.domain = i >= 300 && i % 3 == 0 ? 11 : 0;
    return row;
}

/* tp_events_push_plain and tp_memev_push write their common rows in one step after testing
 * them (push_plain_fast, tp_memev_push) and hand the rest to the general path: the same
 * values either way. Plain pushes against tp_events_push of the same rows, before and after
 * finish; memory rows read back as pushed, through every case of tp_memev_push. */
static void test_push_paths(void) {
    tp_model *m[2];
    tp_rank *rk[2];
    const int n = 700;
    for (int w = 0; w < 2; w++) {
        m[w] = tp_model_new();
        tp_rank *r = rk[w] = tp_model_add_rank(m[w], "paths");
        for (int i = 0; i < n; i++) {
            tp_event_row row = path_row(i);
            if (w && tp_events_plain(&r->ev, &row))
                tp_events_push_plain(&r->ev, &row);
            else
                tp_events_push(&r->ev, &row);
        }
    }
    const tp_events *a = &rk[0]->ev, *b = &rk[1]->ev;
    for (int pass = 0; pass < 2; pass++) {
        CHECK_EQ_U(a->n, b->n);
        /* the shapes (10 % of the rows): sparse while loading and after the finish */
        CHECK(b->shapes_sp.bits != NULL && !b->shapes_opt && b->wide_dur.n && b->wide_corr.n);
        int ok = 1;
        for (size_t k = 0; k < a->n && k < b->n; k++) {
            tp_event_row want = path_row(pass ? 1000 - (int)b->ts[k] : (int)k);
            ok &= a->ts[k] == b->ts[k] && b->ts[k] == want.ts && b->name[k] == want.name;
            ok &= b->cat[k] == want.cat && b->flags[k] == want.flags &&
                  tp_ev_stack(b, k) == want.stack;
            ok &= tp_ev_dur(b, k) == want.dur && tp_ev_corr(b, k) == want.correlation;
            ok &= tp_ev_pid(b, k) == want.pid && tp_ev_tid(b, k) == want.tid;
            ok &= tp_ev_stream(b, k) == want.stream && tp_ev_device(b, k) == want.device;
            ok &= tp_ev_shapes(b, k) == want.shapes && tp_ev_domain(b, k) == want.domain;
            ok &= a->place[k] == b->place[k] && a->corr32[k] == b->corr32[k];
        }
        CHECK(ok);
        CHECK_EQ_U(a->places.n, b->places.n);
        CHECK_EQ_U(a->wide_dur.n, b->wide_dur.n);
        CHECK_EQ_U(a->wide_corr.n, b->wide_corr.n);
        CHECK_EQ_I(a->corr_hi_any, b->corr_hi_any);
        tp_model_finish(m[0]);
        tp_model_finish(m[1]);
    }
    tp_model_close(m[0]);
    tp_model_close(m[1]);

    tp_model *mm = tp_model_new();
    tp_rank *r = tp_model_add_rank(mm, "mem paths");
    for (int i = 0; i < n; i++) {
        tp_memev_row row = {0};
        row.ts = i, row.bytes = i * 8, row.addr = (uint64_t)i * 64, row.device = i % 2;
        row.kind = TP_MEMEV_ALLOC, row.stack = (uint32_t)(i % 5), row.op = (uint8_t)(i % 3);
        row.total_allocated = row.total_reserved = -1;
        row.pid = 1, row.tid = i / 100 % 3;
        row.heap = i >= 100 && i % 7 == 0 ? 0x1000 + (uint64_t)i : 0;
        row.size = i >= 250 && i % 11 == 0 ? (uint64_t)i : 0;
        if (i == 690 || i == 695) /* the allocator totals: every row after takes the general path */
            row.total_allocated = i, row.largest_free = 3;
        tp_memev_push(&r->mem, &row);
    }
    const tp_memevents *e = &r->mem;
    CHECK_EQ_U(e->n, (size_t)n);
    int ok = 1;
    for (int i = 0; i < n; i++) {
        size_t k = (size_t)i;
        ok &= e->ts[k] == i && tp_memev_bytes(e, k) == i * 8 && e->addr[k] == (uint64_t)i * 64;
        ok &= tp_memev_device(e, k) == i % 2 && e->stack[k] == (uint32_t)(i % 5) &&
              (int)tp_memev_op_of(e, k) == i % 3;
        ok &= tp_memev_pid(e, k) == 1 && tp_memev_tid(e, k) == i / 100 % 3;
        ok &= tp_memev_heap(e, k) == (i >= 100 && i % 7 == 0 ? 0x1000 + (uint64_t)i : 0);
        ok &= tp_memev_size(e, k) == (i >= 250 && i % 11 == 0 ? (uint64_t)i : 0);
        ok &= tp_memev_total_allocated(e, k) == (i == 690 || i == 695 ? i : -1);
        ok &= tp_memev_total_reserved(e, k) == -1;
        ok &= tp_memev_largest_free(e, k) == (i == 690 || i == 695 ? 3 : 0);
    }
    CHECK(ok);
    size_t heaps = 0; /* places: (tid, device) with heap 0, and one per row with its own heap */
    for (int i = 100; i < n; i++)
        heaps += i % 7 == 0;
    CHECK_EQ_U(e->places.n, 3 * 2 + heaps);
    tp_model_close(mm);
}

/* 1 when tp_rank_corr_rows finds exactly the rows of each correlation id in [lo, hi), in row
 * order (brute force over the rows). */
static int corr_rows_ok(const tp_rank *r, int64_t lo, int64_t hi) {
    const tp_events *e = &r->ev;
    int ok = 1;
    for (int64_t c = lo; c < hi; c++) {
        size_t want = 0;
        for (size_t k = 0; k < e->n; k++)
            want += tp_ev_corr(e, k) == c;
        const uint32_t *rows;
        size_t got = tp_rank_corr_rows(r, c, &rows);
        ok &= got == want;
        for (size_t k = 0; k < got; k++)
            ok &= tp_ev_corr(e, rows[k]) == c && (k == 0 || rows[k] > rows[k - 1]);
    }
    return ok;
}

/* The correlation index's directory when finish makes it from the counting sort's counts
 * (every id its own 32-bit code, a few per row): each slice starts at the first entry whose
 * id falls in it, and every id finds exactly its rows; ids repeat, some rows have none. */
static void test_corr_directory(void) {
    static const int sizes[] = {3, 64, 5000};
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
        tp_model *m = tp_model_new();
        tp_rank *r = tp_model_add_rank(m, "corr");
        const int n = sizes[z];
        for (int i = 0; i < n; i++) {
            tp_event_row row;
            tp_event_row_init(&row);
            row.ts = n - i, row.dur = 1, row.pid = 1, row.tid = 1; /* reversed: finish permutes */
            row.correlation = i % 3 == 0 ? -1 : 100 + i / 2 + (i % 7 == 1 ? i : 0);
            tp_events_push(&r->ev, &row);
        }
        tp_model_finish(m);
        const tp_events *e = &r->ev;
        CHECK(r->corr_dir != NULL);
        size_t slices = 1;
        while (slices < (1u << 16) && slices * 4 < r->n_by_corr)
            slices *= 2;
        int ok = 1;
        for (size_t j = 0, at = 0; j <= slices; j++) {
            while (at < r->n_by_corr &&
                   ((uint64_t)tp_ev_corr(e, r->by_corr[at]) - (uint64_t)r->corr_lo) >>
                       r->corr_shift < j)
                at++;
            ok &= r->corr_dir[j] == at;
        }
        CHECK(ok);
        CHECK(corr_rows_ok(r, 95, 100 + 4 * n));
        /* without the directory (a report drops it): the same answers, the index bisected */
        tp_model_mem with, without;
        tp_model_mem_account(m, &with);
        tp_model_drop_corr_dir(m);
        tp_model_mem_account(m, &without);
        CHECK(r->corr_dir == NULL);
        CHECK_EQ_U(with.index_bytes - without.index_bytes,
                   (size_t)((((uint64_t)r->corr_hi - (uint64_t)r->corr_lo) >> r->corr_shift) + 2) *
                       sizeof *r->corr_dir);
        CHECK(corr_rows_ok(r, 95, 100 + 4 * n));
        tp_model_drop_stream_index(m); /* no GPU rows: its empty offsets, and its mark */
        tp_model_mem_account(m, &with);
        CHECK_EQ_U(without.index_bytes - with.index_bytes, sizeof *r->streams.off);
        CHECK(r->streams.dropped && !r->streams.off);
        tp_model_close(m);
    }
}

/* Checks every row of `r` (one thread, finished) against what nesting and load order say:
 * the name is the load position + 1; a row's parent is the innermost earlier row of the
 * thread that encloses it; depth is the parent's + 1. Brute force over a stack. */
static int derived_ok(const tp_rank *r) {
    const tp_events *e = &r->ev;
    int ok = 1;
    size_t *open = malloc((e->n + 1) * sizeof *open), depth = 0, *pos = load_positions(e);
    for (size_t i = 0; i < e->n; i++) {
        ok &= pos[i] + 1 == e->name[i];
        if (tp_ev_stream(e, i) != -1) {
            ok &= tp_ev_parent(e, i) == -1 && tp_ev_depth(e, i) == 0;
            continue;
        }
        int64_t end = e->ts[i] + tp_ev_dur(e, i);
        while (depth && e->ts[open[depth - 1]] + tp_ev_dur(e, open[depth - 1]) < end)
            depth--;
        ok &= tp_ev_parent(e, i) == (depth ? (int32_t)open[depth - 1] : -1);
        ok &= tp_ev_depth(e, i) == (int)depth;
        open[depth++] = i;
    }
    free(open);
    free(pos);
    return ok;
}

/* One range over 70,000 short rows (their parent is over 65,534 rows back past row 65,534),
 * then 300 nested ranges (depth past 254), and the outer range loaded last (as a native
 * range is written when it ends: its load position 70,300 rows from its sorted one). */
static void test_derived_wide(void) {
    tp_model *m = tp_model_new();
    tp_rank *r = tp_model_add_rank(m, "derived");
    const int flat = 70000, deep = 300;
    uint32_t name = 1; /* load position + 1 */
    tp_event_row row;
    tp_event_row_init(&row);
    row.cat = TP_CAT_USER_ANNOTATION, row.pid = 1, row.tid = 1;
    for (int i = 0; i < flat; i++) {
        row.ts = 1 + 10 * (int64_t)i, row.dur = 5, row.name = name++;
        tp_events_push(&r->ev, &row);
    }
    for (int j = 0; j < deep; j++) {
        row.ts = 800000 + j, row.dur = 2 * (deep - j), row.name = name++;
        row.domain = 7 + (uint32_t)j % 2; /* two domains on one thread: two places */
        tp_events_push(&r->ev, &row);
    }
    row.ts = 0, row.dur = 10000000, row.name = name++, row.domain = 0;
    tp_events_push(&r->ev, &row);
    tp_model_finish(m);
    const tp_events *e = &r->ev;
    CHECK_EQ_U(e->n, (size_t)(flat + deep + 1));
    CHECK_EQ_I(load_ord(e, 0), flat + deep);
    CHECK_EQ_I(tp_ev_parent(e, (size_t)flat), 0); /* 70,000 rows back */
    CHECK_EQ_I(tp_ev_depth(e, e->n - 1), deep);
    CHECK_EQ_U(e->wide_load.n, 1);
    CHECK_EQ_U(e->wide_parent.n, (size_t)(flat - 65534) + 1); /* and the first deep range */
    CHECK_EQ_U(e->wide_depth.n, (size_t)(deep + 1 - 255));
    CHECK_EQ_U(e->places.n, 3);
    CHECK_EQ_U(r->threads.n, 1); /* the domains' places are one thread */
    CHECK_EQ_U(tp_ev_domain(e, (size_t)flat + 1), 7);
    CHECK_EQ_U(tp_ev_domain(e, (size_t)flat + 2), 8);
    CHECK_EQ_U(tp_ev_domain(e, 0), 0);
    CHECK(derived_ok(r));
    /* a GPU row at the front and a second finish: every row moves one down, its load
     * position with it */
    tp_event_row_init(&row);
    row.ts = 0, row.dur = 1, row.stream = 3, row.device = 0, row.pid = 0, row.tid = 3;
    row.cat = TP_CAT_KERNEL, row.name = name++;
    tp_events_push(&r->ev, &row);
    tp_model_finish(m);
    CHECK_EQ_I(load_ord(e, 0), flat + deep);
    CHECK_EQ_I(load_ord(e, 1), flat + deep + 1); /* ts 0: the longer first */
    CHECK_EQ_I(tp_ev_parent(e, 1), -1);
    CHECK(derived_ok(r));
    tp_events_set_domain(&m->ranks[0].ev, 5, 9);
    CHECK_EQ_U(tp_ev_domain(e, 5), 9);
    CHECK_EQ_I(tp_ev_tid(e, 5), 1);
    tp_model_close(m);
}

/* Two threads' rows loaded one thread after the other (as a Kineto file is written), each
 * thread's in time order, their times interleaved: half the rows sit over 32,767 positions
 * from their sorted ones, so the load order is kept as load_rows32; a row pushed after the finish
 * and a second finish carry every position along. */
static void test_load32(void) {
    tp_model *m = tp_model_new();
    tp_rank *r = tp_model_add_rank(m, "by-thread");
    const int per = 40000;
    uint32_t name = 1; /* load position + 1 */
    tp_event_row row;
    tp_event_row_init(&row);
    row.cat = TP_CAT_CPU_OP, row.pid = 1;
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < per; i++) {
            row.tid = 1 + t, row.ts = 10 * (int64_t)i + t, row.dur = 1, row.name = name++;
            tp_events_push(&r->ev, &row);
        }
    tp_model_finish(m);
    const tp_events *e = &r->ev;
    CHECK(e->load_rows32 != NULL && e->load_d16 == NULL && e->wide_load.n == 0);
    CHECK_EQ_I(load_ord(e, 1), per); /* the second thread's first row */
    CHECK(derived_ok(r));
    row.tid = 3, row.ts = 5, row.name = name++;
    tp_events_push(&r->ev, &row);
    tp_model_finish(m);
    CHECK(e->load_rows32 != NULL);
    CHECK_EQ_I(load_ord(e, 1), per);
    CHECK_EQ_I(load_ord(e, 2), 2 * per); /* ts 5, after ts 1 and before ts 10 */
    CHECK(derived_ok(r));
    tp_model_close(m);
}

/* Push i of test_sparse: External id on a third of the rows (some past the 32-bit codes, two
 * that are the codes' own bits, one row in twelve its correlation id as an older Kineto trace's
 * calls and kernels have, and one wide id equal to its wide correlation), Input Dims on a
 * quarter, Sequence number on one row in ten (a few wide), each "none" elsewhere; pushes
 * 930-940 all set (after the sort rows 59-69, across a word of the bitmap). */
static void sparse_row(tp_event_row *row, int i) {
    static const int64_t ids[] = {12345, INT64_C(1) << 40, -7, 4294967294, 4294967295, 0};
    tp_event_row_init(row);
    row->ts = 10000 - i, row->dur = 1, row->pid = 1, row->tid = 1, row->cat = TP_CAT_CPU_OP;
    int all = i >= 930 && i <= 940;
    int64_t id = ids[(i % 3 == 0 ? i / 3 : i) % 6];
    row->external_id = !all && i % 3 ? -1 : id == 12345 || id == 0 ? id + i : id;
    row->correlation = i % 2 ? -1 : 7000 + i;
    if (i % 12 == 0)
        row->external_id = row->correlation;
    if (i == 501) /* a correlation with a high half (corr_hi_any) */
        row->correlation = row->external_id = (INT64_C(1) << 33) + 1;
    if (i == 504) /* the External id is the correlation's low half only: a value of its own */
        row->correlation += INT64_C(1) << 33;
    row->shapes = all || i % 4 == 1 ? 100 + (uint32_t)i : 0;
    row->seq = all || i % 10 == 7 ? (i % 20 == 7 ? (INT64_C(1) << 35) + i : i) : -1;
}

/* Every row of test_sparse's table reads back its push. */
static int sparse_ok(const tp_events *e, int n) {
    int ok = e->n == (size_t)n;
    for (size_t k = 0; k < e->n; k++) {
        tp_event_row want;
        sparse_row(&want, 10000 - (int)e->ts[k]);
        ok &= tp_ev_external_id(e, k) == want.external_id && tp_ev_shapes(e, k) == want.shapes;
        ok &= tp_ev_seq(e, k) == want.seq && tp_ev_corr(e, k) == want.correlation;
    }
    return ok;
}

/* The External id, Input Dims and Sequence number columns, mostly "none" on a Kineto trace,
 * are stored sparsely after finish (tp_ev_sparse), the Input Dims and Sequence number from
 * their first value while the table grows: every row reads back exactly its value or "none",
 * wide values too, while loading, through the sort, a push after the finish (the External id's
 * array again) and a second finish; tp_model_mem counts their bitmaps, ranks and values. A column
 * that is nearly full stays (or becomes) an array (its sparse form would be larger). */
static void test_sparse(void) {
    tp_model *m = tp_model_new();
    tp_rank *r = tp_model_add_rank(m, "sparse");
    const int n = 1001; /* not a multiple of 64: the last word is partial */
    for (int i = 0; i < n - 1; i++) {
        tp_event_row row;
        sparse_row(&row, i);
        tp_events_push(&r->ev, &row);
    }
    const tp_events *e = &r->ev; /* loading: the Sequence number sparse already */
    CHECK(e->external_id32_opt && !e->shapes_opt && !e->seq32_opt);
    CHECK(e->shapes_sp.bits && e->seq_sp.bits);
    CHECK(sparse_ok(e, n - 1));
    tp_model_finish(m);
    CHECK(!e->external_id32_opt && !e->shapes_opt && !e->seq32_opt);
    CHECK(e->external_id_sp.bits && e->shapes_sp.bits && e->seq_sp.bits && tp_ev_any_seq(e));
    CHECK(e->wide_external_id.n > 0 && e->wide_seq.n > 0);
    CHECK(sparse_ok(e, n - 1));
    size_t ids = 0, dims = 0, seqs = 0, same = 0;
    for (int i = 0; i < n - 1; i++) {
        tp_event_row row;
        sparse_row(&row, i);
        ids += row.external_id != -1, dims += row.shapes != 0, seqs += row.seq != -1;
        same += i % 12 == 0 && i != 504; /* the External ids that are their correlation ids */
    }
    CHECK(e->external_id_corr && e->corr_hi_any);
    CHECK_EQ_U(e->external_id_sp.n_val, ids - same); /* those a bit of external_id_corr */
    CHECK_EQ_U(e->shapes_sp.n_val, dims);
    CHECK_EQ_U(e->seq_sp.n_val, seqs);
    tp_model_mem a;
    tp_model_mem_account(m, &a);
    size_t words = (1000 + 63) / 64, sparse = 0;
    for (size_t c = 0; c < a.n_cols; c++) {
        const tp_model_mem_col *col = &a.cols[c];
        size_t used = !strcmp(col->name, "external_id32_opt") ? ids
                      : !strcmp(col->name, "shapes_opt")      ? dims
                      : !strcmp(col->name, "seq32_opt")       ? seqs
                                                              : 0;
        if (!used)
            continue;
        sparse++;
        CHECK_EQ_U(col->used, used);
        if (used == ids)
            CHECK_EQ_U(col->bytes, words * 20 + (used - same) * 4);
        else
            CHECK_EQ_U(col->bytes, words * 12 + used * 4);
    }
    CHECK_EQ_U(sparse, 3);
    /* a push after the finish: the arrays again, every value kept; sparse after the next */
    tp_event_row row;
    sparse_row(&row, n - 1);
    tp_events_push(&r->ev, &row);
    CHECK(e->external_id32_opt && !e->external_id_sp.bits);
    CHECK(!e->shapes_opt && e->shapes_sp.bits && !e->seq32_opt && e->seq_sp.bits); /* grow so */
    CHECK(!e->external_id_corr);
    CHECK(sparse_ok(e, n));
    tp_model_finish(m);
    CHECK(!e->external_id32_opt && e->external_id_sp.bits && e->seq_sp.bits);
    CHECK(e->external_id_corr);
    CHECK(sparse_ok(e, n));
    tp_model_close(m);

    /* nearly every row with a Sequence number: 4 bytes a row as an array, less than 0.19 + 4 */
    m = tp_model_new();
    r = tp_model_add_rank(m, "dense");
    for (int i = 0; i < 640; i++) {
        tp_event_row_init(&row);
        row.ts = i, row.dur = 1, row.pid = 1, row.tid = 1, row.seq = i % 64 ? i : -1;
        tp_events_push(&r->ev, &row);
    }
    tp_model_finish(m);
    CHECK(r->ev.seq32_opt && !r->ev.seq_sp.bits);
    for (int i = 0; i < 640; i++)
        CHECK_EQ_I(tp_ev_seq(&r->ev, (size_t)i), i % 64 ? i : -1);
    tp_model_close(m);
}

/* 1 when `f(e)` aborts the process (run in a child without a core file). */
static int aborts(void (*f)(tp_model *m), tp_model *m) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        setrlimit(RLIMIT_CORE, &(struct rlimit){0, 0});
        f(m);
        _exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT;
}
static volatile int64_t sink;
static void read_external_id(tp_model *m) {
    sink = tp_ev_external_id(&m->ranks[0].ev, 1);
}
static void read_shapes(tp_model *m) {
    sink = tp_ev_shapes(&m->ranks[0].ev, 1);
}
static void ask_any_shapes(tp_model *m) {
    sink = tp_ev_any_shapes(&m->ranks[0].ev);
}
static void read_depth(tp_model *m) {
    sink = tp_ev_depth(&m->ranks[0].ev, 1);
}
static void ask_load_order(tp_model *m) {
    sink = tp_ev_has_load_ord(&m->ranks[0].ev);
}
static void push_row(tp_model *m) {
    tp_event_row row;
    sparse_row(&row, 7);
    tp_events_push(&m->ranks[0].ev, &row);
}
static void finish_again(tp_model *m) {
    tp_model_finish(m);
}
static void ask_corr_rows(tp_model *m) {
    const uint32_t *rows;
    sink = (int64_t)tp_rank_corr_rows(&m->ranks[0], 7000, &rows);
}

/* tp_rank_drop_columns frees the columns it names and nothing else: tp_model_mem's total
 * falls by exactly their bytes, the other columns read back every value, and each dropped
 * column's accessors (and a push or a second finish, which would lose its values) abort
 * instead of answering "none" (what `report` relies on: a reader it missed fails loudly). */
static void test_drop_columns(void) {
    tp_model *m = tp_model_new();
    tp_rank *r = tp_model_add_rank(m, "drop");
    const int n = 1000;
    for (int i = 0; i < n; i++) {
        tp_event_row row;
        sparse_row(&row, i);
        row.ts = 10000 - (i / 2) * 10, row.dur = i % 2 ? 1 : 3; /* pairs: a parent, a child */
        tp_events_push(&r->ev, &row);
    }
    tp_model_finish(m);
    const tp_events *e = &r->ev;
    CHECK(e->external_id_sp.bits && e->shapes_sp.bits && e->depth8 && tp_ev_has_load_ord(e));
    CHECK(tp_ev_depth(e, 1) == 1 && tp_ev_parent(e, 1) == 0);
    tp_model_mem before, after;
    tp_model_mem_account(m, &before);
    size_t gone = 0;
    for (size_t c = 0; c < before.n_cols; c++) {
        const char *name = before.cols[c].name;
        if (!strcmp(name, "external_id32_opt") || !strcmp(name, "shapes_opt") ||
            !strcmp(name, "depth8") || !strcmp(name, "load_d16") || !strcmp(name, "load_rows32") ||
            !strcmp(name, "wide_external_id (side)") || !strcmp(name, "wide_depth (side)") ||
            !strcmp(name, "wide_load (side)"))
            gone += before.cols[c].bytes;
    }
    CHECK(gone > 0);
    tp_model_drop_columns(m, TP_EV_DROP_EXTERNAL_ID | TP_EV_DROP_SHAPES | TP_EV_DROP_DEPTH |
                                 TP_EV_DROP_LOAD_ORDER);
    tp_model_mem_account(m, &after);
    CHECK_EQ_U(before.total_bytes - after.total_bytes, gone);
    CHECK(!e->external_id_sp.bits && !e->external_id_corr && !e->shapes_sp.bits && !e->depth8);
    CHECK(!e->load_d16 && !e->load_rows32 && !e->wide_external_id.n);
    int ok = 1;
    for (size_t k = 0; k < e->n; k++) { /* rows by ts: push 998 (the parent), 999, 996, ... */
        tp_event_row want;
        sparse_row(&want, k % 2 ? n - (int)k : n - 2 - (int)k);
        ok &= tp_ev_seq(e, k) == want.seq && tp_ev_corr(e, k) == want.correlation;
        ok &= tp_ev_parent(e, k) == (k % 2 ? (int32_t)k - 1 : -1);
    }
    CHECK(ok);
    tp_model_drop_columns(m, TP_EV_DROP_DEPTH); /* again: no error */
    CHECK(aborts(read_external_id, m));
    CHECK(aborts(read_shapes, m));
    CHECK(aborts(ask_any_shapes, m));
    CHECK(aborts(read_depth, m));
    CHECK(aborts(ask_load_order, m));
    CHECK(aborts(push_row, m));
    CHECK(aborts(finish_again, m));
    /* the correlation index (report --compat hta, once the diagnosis ran): its bytes, and
     * tp_rank_corr_rows aborts after */
    const uint32_t *rows;
    CHECK_EQ_U(tp_rank_corr_rows(r, 7000, &rows), 1);
    size_t idx = (size_t)r->n_by_corr * sizeof *r->by_corr;
    tp_model_mem_account(m, &before);
    tp_rank_drop_corr_index(r);
    tp_model_mem_account(m, &after);
    CHECK(!r->by_corr && r->corr_dropped);
    CHECK(before.index_bytes - after.index_bytes >= idx);
    CHECK(aborts(ask_corr_rows, m));
    tp_model_close(m);
}

static void ask_stream_index(tp_model *m) {
    (void)tp_rank_stream_index(&m->ranks[0], 0);
}

/* tp_model.finish_skip: the model the finish leaves is the one a plain finish and the drops
 * leave (the same rows, columns, correlation rows and bytes), with the indexes never built. */
static void test_finish_skip(void) {
    tp_model *m[2];
    const int n = 1000;
    for (int k = 0; k < 2; k++) {
        m[k] = tp_model_new();
        tp_rank *r = tp_model_add_rank(m[k], "skip");
        for (int i = 0; i < n; i++) {
            tp_event_row row;
            sparse_row(&row, i);
            row.ts = 10000 - (i / 2) * 10, row.dur = i % 2 ? 1 : 3;
            row.stream = i % 3 ? -1 : 7; /* some GPU rows: a stream index to skip */
            tp_events_push(&r->ev, &row);
        }
    }
    unsigned cols = TP_EV_DROP_EXTERNAL_ID | TP_EV_DROP_SHAPES | TP_EV_DROP_DEPTH;
    tp_model_finish(m[0]);
    tp_model_drop_cat_index(m[0]);
    tp_model_drop_stream_index(m[0]);
    tp_model_drop_corr_dir(m[0]);
    tp_model_drop_columns(m[0], cols);
    m[1]->finish_skip = TP_FINISH_NO_CAT_INDEX | TP_FINISH_NO_STREAM_INDEX | TP_FINISH_NO_CORR_DIR |
                        TP_FINISH_DROP(cols);
    tp_model_finish(m[1]);
    const tp_rank *a = &m[0]->ranks[0], *b = &m[1]->ranks[0];
    CHECK(b->ev.dropped == cols && a->ev.dropped == cols);
    CHECK(!b->cats.rows && !b->cats.n && b->streams.dropped && !b->streams.rows && !b->corr_dir);
    CHECK(b->n_by_corr == a->n_by_corr && b->n_by_corr > 0);
    int ok = b->ev.n == a->ev.n;
    for (size_t k = 0; ok && k < a->ev.n; k++) {
        ok &= a->ev.ts[k] == b->ev.ts[k] && tp_ev_seq(&a->ev, k) == tp_ev_seq(&b->ev, k);
        ok &= tp_ev_corr(&a->ev, k) == tp_ev_corr(&b->ev, k);
        ok &= tp_ev_parent(&a->ev, k) == tp_ev_parent(&b->ev, k);
        ok &= tp_ev_stream(&a->ev, k) == tp_ev_stream(&b->ev, k);
    }
    for (size_t k = 0; ok && k < a->n_by_corr; k++)
        ok &= a->by_corr[k] == b->by_corr[k];
    CHECK(ok);
    const uint32_t *ra, *rb;
    CHECK_EQ_U(tp_rank_corr_rows(b, 7000, &rb), tp_rank_corr_rows(a, 7000, &ra));
    CHECK(ra[0] == rb[0]);
    tp_model_mem ma, mb;
    tp_model_mem_account(m[0], &ma);
    tp_model_mem_account(m[1], &mb);
    CHECK_EQ_U(mb.total_bytes, ma.total_bytes);
    CHECK(aborts(ask_stream_index, m[1]));
    CHECK(aborts(read_external_id, m[1]));
    CHECK(aborts(read_depth, m[1]));
    CHECK(aborts(finish_again, m[1]));
    tp_model_close(m[0]);
    tp_model_close(m[1]);
}

int main(void) {
    TP_RUN(test_optional_absent);
    TP_RUN(test_drop_columns);
    TP_RUN(test_finish_skip);
    TP_RUN(test_sorted_fit);
    TP_RUN(test_sort_order);
    TP_RUN(test_optional_created);
    TP_RUN(test_memev_optional);
    TP_RUN(test_memev_side);
    TP_RUN(test_sample_trace);
    TP_RUN(test_wide_values);
    TP_RUN(test_sparse_copies_ties);
    TP_RUN(test_many_places);
    TP_RUN(test_cat_index);
    TP_RUN(test_push_paths);
    TP_RUN(test_corr_directory);
    TP_RUN(test_derived_wide);
    TP_RUN(test_load32);
    TP_RUN(test_sparse);
    return tp_test_summary();
}
