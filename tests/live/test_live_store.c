/* tp_live_store: steps followed as their ranges close, windows cut at step boundaries with
 * ranges kept whole (and those still open at the cut left out), the budget's evictions refusing
 * windows that reach into them, and the written window read back by the trace reader (index intact,
 * records as given). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "tp_live_store.h"
#include "tp_reader.h"
#include "tp_test.h"

static void add_string(tp_live_store *s, uint32_t id, const char *text) {
    uint8_t buf[128] = {0};
    tp_rec_string *r = (tp_rec_string *)buf;
    size_t len = strlen(text);
    tp_record_init_hdr(&r->h, TP_REC_STRING, (uint32_t)TP_REC_ALIGN(sizeof *r + len + 1));
    r->id = id;
    r->len = (uint32_t)len;
    memcpy(r->text, text, len);
    tp_live_store_add(s, &r->h);
}

static void push(tp_live_store *s, uint64_t ts, uint32_t tid, uint32_t sid) {
    tp_rec_nvtx r;
    TP_REC_CLEAR(&r, TP_REC_NVTX_PUSH);
    r.ts = ts, r.tid = tid, r.msg_sid = sid;
    tp_live_store_add(s, &r.h);
}

static void pop(tp_live_store *s, uint64_t ts, uint32_t tid) {
    tp_rec_nvtx_pop r;
    TP_REC_CLEAR(&r, TP_REC_NVTX_POP);
    r.ts = ts, r.tid = tid;
    tp_live_store_add(s, &r.h);
}

static void kernel(tp_live_store *s, uint64_t ts, uint64_t end) {
    tp_rec_kernel r;
    TP_REC_CLEAR(&r, TP_REC_KERNEL);
    r.ts = ts, r.end = end, r.name_sid = 3;
    tp_live_store_add(s, &r.h);
}

/* Steps k = 0..n-1 at [1000k, 1000k + 900] on thread 1, each with a "work" range and a
 * kernel inside, and a "loader" range on thread 2 crossing every step boundary. */
static void feed(tp_live_store *s, int n) {
    add_string(s, 1, "step");
    add_string(s, 2, "work");
    add_string(s, 3, "kern");
    add_string(s, 4, "loader");
    for (int k = 0; k < n; k++) {
        uint64_t t = 1000u * (uint64_t)k + 100;
        push(s, t, 1, 1);
        push(s, t + 10, 1, 2);
        kernel(s, t + 20, t + 60);
        pop(s, t + 100, 1);
        pop(s, t + 900, 1);
        push(s, t + 850, 2, 4);
        pop(s, t + 1050, 2);
    }
}

static void test_steps(void) {
    tp_live_store_opts o = {0};
    tp_live_store *s;
    CHECK_OK(tp_live_store_open(&o, &s));
    feed(s, 10);
    tp_live_store_stats st;
    tp_live_store_get_stats(s, &st);
    CHECK_EQ_U(st.steps, 10);
    tp_live_step last[3];
    CHECK_EQ_U(tp_live_store_last_steps(s, 3, last), 3);
    CHECK_EQ_U(last[0].start, 7100);
    CHECK_EQ_U(last[2].end, 9100 + 900);
    uint64_t t0, t1;
    CHECK(tp_live_store_steps_after(s, 3050, 4, &t0, &t1)); /* steps 3..6 */
    CHECK_EQ_U(t0, 3100);
    CHECK_EQ_U(t1, 6900 + 100);
    CHECK(!tp_live_store_steps_after(s, 8000, 4, &t0, &t1)); /* only 2 have completed */
    tp_live_store_close(s);
}

/* Counts records by type in the trace at `path`. */
static void count(const char *path, uint64_t *n) {
    tp_reader *r;
    CHECK_OK(tp_reader_open(path, &r));
    CHECK(tp_reader_integrity(r)->index_ok);
    tp_cursor *c;
    CHECK_OK(tp_cursor_open(r, NULL, &c));
    for (const tp_rec_hdr *h; (h = tp_cursor_next(c));)
        n[h->type]++;
    CHECK_STR(tp_reader_string(r, 1), "step");
    tp_cursor_close(c);
    tp_reader_close(r);
}

/* Writes the window [t0, t1] of `s` into a temporary file and counts its records by type into
 * n (zeroed first); the data records written into *recs (NULL: not asked). */
static void window(tp_live_store *s, uint64_t t0, uint64_t t1, uint64_t *n, uint64_t *recs) {
    uint64_t r = 0;
    char path[] = "/tmp/tp_live_store_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    memset(n, 0, TP_REC_TYPE_LIMIT * sizeof *n);
    if (tp_live_store_write(s, t0, t1, fd, &r) == TP_OK)
        count(path, n);
    else
        CHECK(!"tp_live_store_write");
    unlink(path);
    if (recs)
        *recs = r;
}

static void test_window(void) {
    tp_live_store_opts o = {0};
    tp_live_store *s;
    CHECK_OK(tp_live_store_open(&o, &s));
    feed(s, 10);
    uint64_t t0, t1, recs;
    CHECK(tp_live_store_steps_after(s, 2000, 3, &t0, &t1));
    uint64_t n[TP_REC_TYPE_LIMIT];
    window(s, t0, t1, n, &recs);
    /* 3 steps of thread 1 (step + work each, kernels inside), thread 2's loader ranges that
     * open inside the window (3, the last one closing after it, kept whole); the one open
     * at t0 is left out together with its pop. */
    CHECK_EQ_U(n[TP_REC_NVTX_PUSH], 3 * 2 + 3);
    CHECK_EQ_U(n[TP_REC_NVTX_POP], n[TP_REC_NVTX_PUSH]);
    CHECK_EQ_U(n[TP_REC_KERNEL], 3);
    CHECK_EQ_U(recs, 3 * 2 * 2 + 3 * 2 + 3);
    tp_live_store_close(s);
}

/* Steps back to back, each step's pop on the same tick as the next step's push (the clock's
 * resolution): a window of 3 steps ends where the 4th starts, and holds 3 steps, not 4. */
static void test_window_shared_tick(void) {
    tp_live_store_opts o = {0};
    tp_live_store *s;
    CHECK_OK(tp_live_store_open(&o, &s));
    add_string(s, 1, "step");
    for (uint64_t k = 0; k < 8; k++) {
        push(s, 1000 * k + 100, 1, 1);
        kernel(s, 1000 * k + 200, 1000 * k + 300);
        pop(s, 1000 * (k + 1) + 100, 1);
    }
    uint64_t t0, t1;
    CHECK(tp_live_store_steps_after(s, 2000, 3, &t0, &t1)); /* steps 2..4 */
    CHECK_EQ_U(t0, 2100);
    CHECK_EQ_U(t1, 5100); /* step 5's push is at 5100 too */
    uint64_t n[TP_REC_TYPE_LIMIT];
    window(s, t0, t1, n, NULL);
    CHECK_EQ_U(n[TP_REC_NVTX_PUSH], 3);
    CHECK_EQ_U(n[TP_REC_NVTX_POP], 3);
    CHECK_EQ_U(n[TP_REC_KERNEL], 3);
    tp_live_store_close(s);
}

/* A window cut while ranges are open (a window in seconds ends inside a step): the step still
 * running, the range started and not ended, and a range opened inside a range still open are
 * left out; ranges that opened in the window and ended (even after it) are kept whole. */
static void test_window_open_at_cut(void) {
    tp_live_store_opts o = {0};
    tp_live_store *s;
    CHECK_OK(tp_live_store_open(&o, &s));
    feed(s, 5);          /* steps 0..4; the last loader range closes at 5150 */
    push(s, 5100, 1, 1); /* step 5: still open */
    push(s, 5110, 1, 2); /* inside it, ended: kept whole, its pop matched to it */
    pop(s, 5200, 1);
    push(s, 5300, 1, 2); /* inside it, still open */
    tp_rec_nvtx_start st;
    TP_REC_CLEAR(&st, TP_REC_NVTX_START);
    st.ts = 5120, st.tid = 2, st.range_id = 77, st.msg_sid = 4;
    tp_live_store_add(s, &st.h); /* started, never ended */
    uint64_t n[TP_REC_TYPE_LIMIT];
    window(s, 2000, 5400, n, NULL);
    /* steps 2..4 with their work ranges (6), the loader ranges opened at 2950, 3950, 4950
     * (3), the work range inside step 5 (1) */
    CHECK_EQ_U(n[TP_REC_NVTX_PUSH], 3 * 2 + 3 + 1);
    CHECK_EQ_U(n[TP_REC_NVTX_POP], n[TP_REC_NVTX_PUSH]);
    CHECK_EQ_U(n[TP_REC_NVTX_START], 0);
    CHECK_EQ_U(n[TP_REC_KERNEL], 3);
    tp_live_store_close(s);
}

/* A window of the last steps of a store of many chunks: the chunks whose records all start
 * before the window are passed over, but not one holding an untimed record (an external
 * correlation, which every window takes), and the window is what a full pass writes. */
static void test_window_skips_old_chunks(void) {
    tp_live_store_opts o = {0};
    tp_live_store *s;
    CHECK_OK(tp_live_store_open(&o, &s));
    tp_rec_ext_correlation x;
    TP_REC_CLEAR(&x, TP_REC_EXT_CORRELATION);
    x.correlation = 5, x.external_id = 42;
    tp_live_store_add(s, &x.h); /* in the first chunk, with steps long before the window */
    feed(s, 5000);              /* ~ 1.7 MB: 7 chunks */
    tp_live_step last[2];
    CHECK_EQ_U(tp_live_store_last_steps(s, 2, last), 2);
    uint64_t recs;
    uint64_t n[TP_REC_TYPE_LIMIT];
    window(s, last[0].start, last[1].end, n, &recs);
    CHECK_EQ_U(n[TP_REC_EXT_CORRELATION], 1);
    CHECK_EQ_U(n[TP_REC_NVTX_PUSH], 2 * 2 + 2); /* as test_eviction's window of 2 steps */
    CHECK_EQ_U(n[TP_REC_NVTX_POP], n[TP_REC_NVTX_PUSH]);
    CHECK_EQ_U(recs, 2 * 2 * 2 + 2 * 2 + 2 + 1);
    tp_live_store_close(s);
}

static void test_eviction(void) {
    tp_live_store_opts o = {.budget = 1}; /* the minimum: 4 chunks of 256 KiB */
    tp_live_store *s;
    CHECK_OK(tp_live_store_open(&o, &s));
    feed(s, 20000); /* ~ 7 MB of records */
    tp_live_store_stats st;
    tp_live_store_get_stats(s, &st);
    CHECK(st.evicted > 0);
    CHECK(st.bytes <= (size_t)4 << 18);
    CHECK_EQ_U(st.steps, 20000);
    uint64_t recs;
    char path[] = "/tmp/tp_live_store_XXXXXX";
    int fd = mkstemp(path);
    /* The first steps are gone: a window over them is refused, not written incomplete. */
    CHECK_EQ_I(tp_live_store_write(s, 100, 5000, fd, &recs), TP_ERR_EMPTY);
    fd = open(path, O_WRONLY | O_TRUNC);
    tp_live_step last[2];
    CHECK_EQ_U(tp_live_store_last_steps(s, 2, last), 2);
    CHECK_OK(tp_live_store_write(s, last[0].start, last[1].end, fd, &recs));
    CHECK_EQ_U(recs, 2 * 2 * 2 + 2 * 2 + 2);
    unlink(path);
    tp_live_store_close(s);
}

static void test_named_step(void) {
    tp_live_store_opts o = {.step = "train_iter"};
    tp_live_store *s;
    CHECK_OK(tp_live_store_open(&o, &s));
    feed(s, 5); /* its ranges are "step": not steps under --step-range train_iter */
    add_string(s, 9, "train_iter");
    push(s, 10000, 1, 9);
    pop(s, 10500, 1);
    tp_live_store_stats st;
    tp_live_store_get_stats(s, &st);
    CHECK_EQ_U(st.steps, 1);
    tp_live_store_close(s);
}

/* A window asked for before anything reached the store (the first refresh of `top` on a job
 * that just started) is an empty but whole trace. */
static void test_empty(void) {
    tp_live_store_opts o = {0};
    tp_live_store *s;
    CHECK_OK(tp_live_store_open(&o, &s));
    char path[] = "/tmp/tp_live_store_XXXXXX";
    int fd = mkstemp(path);
    uint64_t recs = 1;
    CHECK_OK(tp_live_store_write(s, 0, 1000, fd, &recs));
    CHECK_EQ_U(recs, 0);
    tp_reader *r;
    CHECK_OK(tp_reader_open(path, &r));
    CHECK_EQ_U(tp_reader_info(r)->records_total, 0);
    tp_reader_close(r);
    unlink(path);
    tp_live_store_close(s);
}

int main(void) {
    TP_RUN(test_empty);
    TP_RUN(test_steps);
    TP_RUN(test_window);
    TP_RUN(test_window_shared_tick);
    TP_RUN(test_window_open_at_cut);
    TP_RUN(test_window_skips_old_chunks);
    TP_RUN(test_eviction);
    TP_RUN(test_named_step);
    return tp_test_summary();
}
