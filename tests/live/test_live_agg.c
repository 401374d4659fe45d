/* tp_live_agg, wired to tp_live_store as the live server wires them (the store's step edges
 * cut the aggregator's segments): device records that arrive after the next step began are
 * attributed to their own step; a window is provisional until the watermark passes its end,
 * then final with exactly the figures of its records (counts, totals, the busy union across
 * streams, ranges paired); a record older than the watermark counts as late; the allocator's
 * memory is carried from before the window (and from steps evicted long ago); the kept steps are
 * bounded while the memory state still carries what the oldest ones did. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_live_agg.h"
#include "tp_live_store.h"
#include "tp_liveproto.h"
#include "tp_test.h"

typedef struct {
    tp_live_store *s;
    tp_live_agg *a;
} live;

static void on_edge(void *ctx, uint64_t ts) {
    tp_live_agg_edge(ctx, ts);
}

static void add(live *L, const tp_rec_hdr *r) {
    tp_live_store_add(L->s, r);
    tp_live_agg_add(L->a, r);
}

static void add_string(live *L, uint32_t id, const char *text) {
    uint8_t buf[128] = {0};
    tp_rec_string *r = (tp_rec_string *)buf;
    size_t len = strlen(text);
    tp_record_init_hdr(&r->h, TP_REC_STRING, (uint32_t)TP_REC_ALIGN(sizeof *r + len + 1));
    r->id = id;
    r->len = (uint32_t)len;
    memcpy(r->text, text, len);
    add(L, &r->h);
}

static void push(live *L, uint64_t ts, uint32_t sid) {
    tp_rec_nvtx r;
    TP_REC_CLEAR(&r, TP_REC_NVTX_PUSH);
    r.ts = ts, r.tid = 1, r.msg_sid = sid;
    add(L, &r.h);
}

static void pop(live *L, uint64_t ts) {
    tp_rec_nvtx_pop r;
    TP_REC_CLEAR(&r, TP_REC_NVTX_POP);
    r.ts = ts, r.tid = 1;
    add(L, &r.h);
}

static void kernel_c(live *L, uint64_t ts, uint64_t end, uint32_t sid, uint32_t stream,
                     uint32_t corr) {
    tp_rec_kernel r;
    TP_REC_CLEAR(&r, TP_REC_KERNEL);
    r.ts = ts, r.end = end, r.name_sid = sid, r.stream = stream, r.correlation = corr;
    add(L, &r.h);
}

static void kernel(live *L, uint64_t ts, uint64_t end, uint32_t sid, uint32_t stream) {
    kernel_c(L, ts, end, sid, stream, 0);
}

static void launch(live *L, uint64_t ts, uint32_t corr) {
    tp_rec_api r;
    TP_REC_CLEAR(&r, TP_REC_API);
    r.ts = ts, r.end = ts + 1, r.tid = 1, r.correlation = corr;
    add(L, &r.h);
}

static void copy(live *L, uint64_t ts, uint64_t end) {
    tp_rec_memcpy r;
    TP_REC_CLEAR(&r, TP_REC_MEMCPY);
    r.ts = ts, r.end = end, r.copy_kind = 1, r.src_kind = 2, r.dst_kind = 3;
    add(L, &r.h);
}

static void region(live *L, uint64_t ts, uint64_t addr, uint64_t size, uint32_t op) {
    tp_rec_region r;
    TP_REC_CLEAR(&r, TP_REC_REGION);
    r.ts = ts, r.heap = 1, r.address = addr, r.size = size, r.op = op;
    add(L, &r.h);
}

static void heap(live *L, uint64_t ts, uint64_t size) {
    tp_rec_heap r;
    TP_REC_CLEAR(&r, TP_REC_HEAP);
    r.ts = ts, r.heap = 1, r.size = size, r.op = TP_HEAP_REGISTER;
    add(L, &r.h);
}

/* Device work of the step starting at t, launched in its "work" range (correlation ids
 * 10t + 1..3): kernel A on stream 0, kernel B on stream 1 overlapping it (busy union 180 ns,
 * not 200), a copy on stream 0 (10 ns), and kernel D (12 ns) that runs in the next step. */
static void device_work(live *L, uint64_t t) {
    uint32_t c = (uint32_t)(10 * t);
    kernel_c(L, t + 20, t + 60, 3, 0, c + 1);
    kernel_c(L, t + 40, t + 200, 4, 1, c + 2);
    copy(L, t + 300, t + 310);
    kernel_c(L, t + 1250, t + 1262, 5, 0, c + 3);
}

/* Steps k = first..first+n-1 at [1000k + 100, 1000k + 1000], a "work" range in each, a region
 * of 64 bytes alive during each. A step's device records arrive after the next step began
 * (late, as CUPTI delivers them). */
static void feed(live *L, int first, int n) {
    for (int k = first; k < first + n; k++) {
        uint64_t t = 1000u * (uint64_t)k + 100;
        push(L, t, 1);
        push(L, t + 10, 2);
        for (uint32_t c = 1; c <= 3; c++)
            launch(L, t + 10 + c, (uint32_t)(10 * t) + c);
        region(L, t + 15, 0x9000, 64, TP_REGION_REGISTER);
        if (k == 5) /* kept from step 5 on */
            region(L, t + 20, 0x2000, 500, TP_REGION_REGISTER);
        pop(L, t + 100);
        region(L, t + 800, 0x9000, 0, TP_REGION_UNREGISTER);
        pop(L, t + 900);
        if (k > first)
            device_work(L, t - 1000);
    }
    device_work(L, 1000u * (uint64_t)(first + n - 1) + 100);
}

static void open_live(live *out) {
    live L;
    CHECK_OK(tp_live_agg_open(&L.a));
    tp_live_store_opts o = {0};
    o.edge = on_edge;
    o.edge_ctx = L.a;
    CHECK_OK(tp_live_store_open(&o, &L.s));
    add_string(&L, 1, "step");
    add_string(&L, 2, "work");
    add_string(&L, 3, "kernA");
    add_string(&L, 4, "kernB");
    add_string(&L, 5, "kernD");
    heap(&L, 10, 4096);                               /* before any step */
    region(&L, 20, 0x1000, 1000, TP_REGION_REGISTER); /* kept all along */
    *out = L;
}

static void close_live(live *L) {
    tp_live_store_close(L->s);
    tp_live_agg_close(L->a);
}

static char g_text[TP_LIVE_REPLY_MAX];

static const char *window(live *L, uint64_t t0, uint64_t t1) {
    g_text[0] = 0;
    tp_live_agg_window(L->a, t0, t1, g_text, sizeof g_text);
    return g_text;
}

static double num(const char *text, const char *key) {
    return tp_live_get_num(text, key, -1);
}

/* Row `key` ("k0", "r1", ...) must be `name` with `count` and total `sum`. */
static void check_row(const char *text, const char *key, const char *name, double count,
                      double sum) {
    char v[512];
    CHECK(tp_live_get(text, key, v, sizeof v));
    char *p;
    CHECK_EQ_U(strtoull(v, &p, 10), (unsigned long long)count);
    CHECK_EQ_I((long long)strtod(p + 1, &p), (long long)sum);
    const char *tail = strrchr(v, ',');
    CHECK(tail && !strcmp(tail + 1, name));
}

static void test_window(void) {
    live L;
    open_live(&L);
    feed(&L, 0, 10);
    /* steps 2..5: [2100, 6000]; nothing has passed the watermark yet: provisional, but the
     * pending records are in the figures already */
    const char *w = window(&L, 2100, 6000);
    CHECK_EQ_I((long long)num(w, "agg_final"), 0);
    CHECK_EQ_I((long long)num(w, "agg_busy_ns"), 4 * 202);
    tp_live_agg_advance(L.a, 20000);
    w = window(&L, 2100, 6000);
    CHECK_EQ_I((long long)num(w, "agg_final"), 1);
    CHECK_EQ_I((long long)num(w, "agg_busy_ns"), 4 * 202);
    check_row(w, "k0", "kernB", 4, 4 * 160);
    check_row(w, "k1", "kernA", 4, 4 * 40);
    check_row(w, "k2", "kernD", 4, 4 * 12);
    check_row(w, "k3", "Memcpy HtoD (Pinned -> Device)", 4, 4 * 10);
    check_row(w, "r0", "step", 4, 4 * 900);
    check_row(w, "r1", "work", 4, 4 * 90);
    /* launch/kernel pairing: "work" gets A and B of steps 2..5 and D of steps 2..4 (D of
     * step 1 runs in the window but was launched before it; D of step 5 runs after it) */
    char v[512];
    CHECK(tp_live_get(w, "r1", v, sizeof v));
    long long f[6];
    CHECK_EQ_I(sscanf(v, "%lld,%lld,%lld,%lld,%lld,%lld", &f[0], &f[1], &f[2], &f[3], &f[4], &f[5]),
               6);
    CHECK_EQ_I(f[4], 4 * 200 + 3 * 12);
    CHECK_EQ_I(f[5], 4 * 2 + 3);
    /* per stream: stream 0 has A, the copy and a D (62 ns a step), stream 1 has B (160) */
    CHECK(tp_live_get(w, "s0", v, sizeof v));
    CHECK_EQ_I(atoll(v), 4 * 62);
    CHECK(tp_live_get(w, "s1", v, sizeof v));
    CHECK_EQ_I(atoll(v), 4 * 160);
    /* memory: the 1000-byte region and the heap from before the first step are there at the
     * window's start; the per-step region comes and goes inside it */
    CHECK_EQ_I((long long)num(w, "agg_alloc0"), 1000);
    CHECK_EQ_I((long long)num(w, "agg_alloc1"), 1500);
    CHECK_EQ_I((long long)num(w, "agg_reserved0"), 4096);
    CHECK_EQ_I((long long)num(w, "agg_mem_events"), 4 * 2 + 1);
    /* a device record of step 3 that arrives after the watermark passed: late, and counted */
    kernel(&L, 3500, 3520, 3, 0);
    w = window(&L, 2100, 6000);
    CHECK_EQ_I((long long)num(w, "agg_late"), 1);
    check_row(w, "k1", "kernA", 5, 4 * 40 + 20);
    CHECK_EQ_I((long long)num(w, "agg_busy_ns"), 4 * 202 + 20);
    close_live(&L);
}

/* Many more steps than are kept: memory stays bounded, the state carries the evicted steps. */
static void test_bounded(void) {
    live L;
    open_live(&L);
    int n = 3 * TP_LIVE_AGG_STEPS;
    for (int k = 0; k < n; k += 100) {
        feed(&L, k, 100);
        tp_live_agg_advance(L.a, 1000u * (uint64_t)(k + 100));
    }
    tp_live_agg_stats st;
    tp_live_agg_get_stats(L.a, &st);
    CHECK(st.segments <= 2 * TP_LIVE_AGG_STEPS + 2);
    CHECK(st.pending < 1000);
    uint64_t t0 = 1000u * (uint64_t)(n - 2) + 100, t1 = 1000u * (uint64_t)(n - 1) + 1000;
    tp_live_agg_advance(L.a, t1 + 5000);
    const char *w = window(&L, t0, t1);
    CHECK_EQ_I((long long)num(w, "agg_final"), 1);
    check_row(w, "r0", "step", 2, 2 * 900);
    CHECK_EQ_I((long long)num(w, "agg_alloc0"), 1500); /* step 5's region, long evicted */
    CHECK_EQ_I((long long)num(w, "agg_reserved0"), 4096);
    close_live(&L);
}

int main(void) {
    TP_RUN(test_window);
    TP_RUN(test_bounded);
    return tp_test_summary();
}
