/* Concurrent producers: 4 threads x 200k records through their own stages while the
 * background drain runs. With rings big enough nothing is lost and each thread's records
 * come back in order; with small rings (and one thread denied a ring by the budget) what
 * is read plus what DROPPED records count equals what was attempted, exactly.
 * Run under -DTP_SANITIZE=thread too. */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>

#include "tp_reader.h"
#include "tp_test.h"
#include "tp_writer.h"
#include "trace_testutil.h"

#define NTHREADS 4
#define PER_THREAD 200000

typedef struct {
    tp_writer *w;
    uint32_t tid;
    uint64_t written, dropped_stage, dropped_nobuf;
    uint64_t slow_written; /* through tp_writer_write */
} producer;

/* All producers hold their stage before any starts, so the budget is contended. */
static pthread_barrier_t start_line;

static void *produce(void *arg) {
    producer *p = arg;
    tp_stage *s = NULL;
    if (tp_writer_stage_open(p->w, p->tid, &s) != TP_OK)
        s = NULL;
    pthread_barrier_wait(&start_line);
    tp_rec_api a;
    memset(&a, 0, sizeof a);
    TP_REC_INIT(&a, TP_REC_API);
    a.tid = p->tid;
    for (uint32_t i = 0; i < PER_THREAD; i++) {
        a.ts = 1000000u + (uint64_t)i * 50u;
        a.end = a.ts + 20;
        a.correlation = i;
        a.cbid = 211;
        if (!s) {
            tp_writer_count_drop(p->w, TP_REC_API, TP_DROP_NO_BUFFER, 1);
            p->dropped_nobuf++;
        } else if (tp_stage_write(s, &a)) {
            p->written++;
        }
        if (i % 8192 == 8191) /* let the drain in now and then, so rings both fill and empty */
            nanosleep(&(struct timespec){0, 200000}, NULL);
    }
    if (s) {
        p->dropped_stage = tp_stage_dropped(s);
        tp_stage_close(s);
    }
    return NULL;
}

/* Runs NTHREADS producers against a fresh writer with these options. */
static void run_producers(const char *path, const tp_writer_opts *o, producer *ps) {
    tp_writer *w;
    CHECK_OK(tp_writer_open(path, o, &w));
    pthread_t th[NTHREADS];
    pthread_barrier_init(&start_line, NULL, NTHREADS);
    for (int i = 0; i < NTHREADS; i++) {
        ps[i] = (producer){.w = w, .tid = (uint32_t)(100 + i)};
        pthread_create(&th[i], NULL, produce, &ps[i]);
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start_line);
    CHECK_OK(tp_writer_close(w));
}

typedef struct {
    uint64_t per_thread[NTHREADS];
    uint64_t dropped_ring, dropped_nobuf;
    int in_order;
} readback;

static void read_back(const char *path, readback *rb) {
    memset(rb, 0, sizeof *rb);
    rb->in_order = 1;
    tp_reader *r;
    CHECK_OK(tp_reader_open(path, &r));
    CHECK_EQ_U(tp_reader_integrity(r)->chunks_bad, 0);
    tp_cursor *c;
    CHECK_OK(tp_cursor_open(r, NULL, &c));
    int64_t last[NTHREADS] = {-1, -1, -1, -1};
    for (const tp_rec_hdr *h; (h = tp_cursor_next(c));) {
        if (h->type == TP_REC_DROPPED) {
            const tp_rec_dropped *d = (const tp_rec_dropped *)h;
            CHECK_EQ_U(d->what, TP_REC_API);
            *(d->reason == TP_DROP_NO_BUFFER ? &rb->dropped_nobuf : &rb->dropped_ring) += d->count;
            continue;
        }
        const tp_rec_api *a = (const tp_rec_api *)h;
        CHECK(h->type == TP_REC_API && a->tid >= 100 && a->tid < 100 + NTHREADS);
        uint32_t t = a->tid - 100;
        if ((int64_t)a->correlation <= last[t] || a->ts != 1000000u + a->correlation * 50u)
            rb->in_order = 0;
        last[t] = a->correlation;
        rb->per_thread[t]++;
    }
    tp_cursor_close(c);
    tp_reader_close(r);
}

/* Every record attempted is read or counted dropped, each thread's in order: what a producer
 * wrote is read, the full rings' drops are the stages' own counts. *read_out: records read. */
static void check_accounted(const readback *rb, const producer *ps, uint64_t *read_out) {
    uint64_t read = 0, stage_drops = 0;
    *read_out = 0;
    for (int i = 0; i < NTHREADS; i++) {
        CHECK_EQ_U(rb->per_thread[i], ps[i].written);
        read += rb->per_thread[i];
        stage_drops += ps[i].dropped_stage;
    }
    CHECK(rb->in_order);
    CHECK_EQ_U(rb->dropped_ring, stage_drops);
    *read_out = read;
    CHECK_EQ_U(read + rb->dropped_ring + rb->dropped_nobuf, (uint64_t)NTHREADS * PER_THREAD);
}

static void test_lossless(void) {
    char path[256];
    tt_temp_path(path, sizeof path, "conc1");
    tp_writer_opts o;
    tp_writer_opts_default(&o);
    o.ring_bytes = 16u << 20; /* holds a whole thread's records */
    o.buffer_bytes = NTHREADS * o.ring_bytes;
    o.background = 1;
    o.flush_ms = 2;
    producer ps[NTHREADS];
    run_producers(path, &o, ps);
    readback rb;
    read_back(path, &rb);
    for (int i = 0; i < NTHREADS; i++) {
        CHECK_EQ_U(ps[i].written, PER_THREAD);
        CHECK_EQ_U(rb.per_thread[i], PER_THREAD);
    }
    CHECK(rb.in_order);
    CHECK_EQ_U(rb.dropped_ring + rb.dropped_nobuf, 0);
    unlink(path);
}

/* Tiny rings but block_when_full: producers drain themselves instead of dropping. */
static void test_blocking(void) {
    char path[256];
    tt_temp_path(path, sizeof path, "conc2");
    tp_writer_opts o;
    tp_writer_opts_default(&o);
    o.ring_bytes = 4096;
    o.block_when_full = 1;
    o.background = 1;
    o.flush_ms = 1;
    producer ps[NTHREADS];
    run_producers(path, &o, ps);
    readback rb;
    read_back(path, &rb);
    for (int i = 0; i < NTHREADS; i++)
        CHECK_EQ_U(rb.per_thread[i], PER_THREAD);
    CHECK(rb.in_order);
    CHECK_EQ_U(rb.dropped_ring + rb.dropped_nobuf, 0);
    unlink(path);
}

/* Small rings, and a budget of three rings for four threads: drops, counted exactly. */
static void test_counted_drops(void) {
    char path[256];
    tt_temp_path(path, sizeof path, "conc3");
    tp_writer_opts o;
    tp_writer_opts_default(&o);
    o.ring_bytes = 64u << 10;
    o.buffer_bytes = 3 * o.ring_bytes;
    o.background = 1;
    o.flush_ms = 1;
    producer ps[NTHREADS];
    run_producers(path, &o, ps);
    readback rb;
    read_back(path, &rb);
    uint64_t read, nobuf = 0;
    check_accounted(&rb, ps, &read);
    for (int i = 0; i < NTHREADS; i++)
        nobuf += ps[i].dropped_nobuf;
    CHECK_EQ_U(nobuf, PER_THREAD); /* exactly one thread found the budget spent */
    CHECK_EQ_U(rb.dropped_nobuf, nobuf);
    printf("  read %" PRIu64 ", dropped by full rings %" PRIu64 ", without a ring %" PRIu64 "\n",
           read, rb.dropped_ring, rb.dropped_nobuf);
    unlink(path);
}

/* ---- rings follow the budget ---- */

#define FLOOD 200000 /* 48-byte API records: 9.6 MB */

/* One thread floods FLOOD records with no drain running (background off: nothing leaves the
 * rings until close), so what the rings hold is decided by the budget alone, not by timing.
 * *read gets the records read back, *dropped what DROPPED records count, *raw the data chunks
 * stored uncompressed (the drain found over 1/4 of the budget waiting). */
static void flood_one_thread(size_t budget, uint64_t *read, uint64_t *stage_drops,
                             uint64_t *dropped, uint64_t *raw) {
    *read = *stage_drops = *dropped = *raw = UINT64_MAX;
    char path[256];
    tt_temp_path(path, sizeof path, "flood");
    tp_writer_opts o;
    tp_writer_opts_default(&o);
    o.buffer_bytes = budget; /* first ring and growth from the budget alone */
    tp_writer *w;
    CHECK_OK(tp_writer_open(path, &o, &w));
    tp_stage *s;
    CHECK_OK(tp_writer_stage_open(w, 7, &s));
    tp_rec_api a;
    memset(&a, 0, sizeof a);
    TP_REC_INIT(&a, TP_REC_API);
    a.tid = 100;
    for (uint32_t i = 0; i < FLOOD; i++) {
        a.ts = 1000000u + (uint64_t)i * 50u;
        a.end = a.ts + 20;
        a.correlation = i;
        tp_stage_write(s, &a);
    }
    *stage_drops = tp_stage_dropped(s);
    tp_stage_close(s);
    CHECK_OK(tp_writer_flush(w));
    tp_writer_stats st;
    tp_writer_get_stats(w, &st);
    *raw = st.chunks_raw;
    CHECK_OK(tp_writer_close(w));
    readback rb;
    read_back(path, &rb);
    CHECK(rb.in_order);
    CHECK_EQ_U(rb.dropped_nobuf, 0);
    *dropped = rb.dropped_ring;
    *read = rb.per_thread[0];
    unlink(path);
}

/* A big budget holds the whole flood: the ring grew, across rings in order. */
static void test_budget_holds_flood(void) {
    uint64_t read, stage_drops, dropped, raw;
    flood_one_thread((size_t)64 << 20, &read, &stage_drops, &dropped, &raw);
    CHECK_EQ_U(read, FLOOD);
    CHECK_EQ_U(stage_drops, 0);
    CHECK_EQ_U(dropped, 0);
    CHECK_EQ_U(raw, 0); /* 9.6 MB waiting is under 1/4 of 64 MiB: compressed as usual */
}

/* A small budget drops, counts every drop, and still holds more than one fixed first ring
 * could: the rings used the budget. */
static void test_small_budget_counts(void) {
    size_t budget = (size_t)4 << 20;
    uint64_t read, stage_drops, dropped, raw;
    flood_one_thread(budget, &read, &stage_drops, &dropped, &raw);
    printf("  4 MiB budget: read %" PRIu64 ", dropped %" PRIu64 "\n", read, dropped);
    CHECK(dropped > 0);
    CHECK_EQ_U(dropped, stage_drops);
    CHECK_EQ_U(read + dropped, FLOOD);
    CHECK(read * sizeof(tp_rec_api) > budget / 2); /* grew past half the budget... */
    CHECK(read * sizeof(tp_rec_api) <= budget);    /* ...and never past it */
    CHECK(raw > 0); /* the full budget waiting: stored uncompressed, and read back above */
}

/* Rings that start at 4 KiB and grow while the background drain empties and frees the old
 * ones under the producers' feet (the seal/next protocol; run it under TSan too). The
 * budget is large enough to hold every record even if the drain never ran. */
static void test_growth_while_draining(void) {
    char path[256];
    tt_temp_path(path, sizeof path, "grow");
    tp_writer_opts o;
    tp_writer_opts_default(&o);
    o.ring_bytes = 4096;
    o.buffer_bytes = (size_t)256 << 20;
    o.background = 1;
    o.flush_ms = 1;
    producer ps[NTHREADS];
    run_producers(path, &o, ps);
    readback rb;
    read_back(path, &rb);
    for (int i = 0; i < NTHREADS; i++)
        CHECK_EQ_U(rb.per_thread[i], PER_THREAD);
    CHECK(rb.in_order);
    CHECK_EQ_U(rb.dropped_ring + rb.dropped_nobuf, 0);
    unlink(path);
}

/* ---- everything at once: interning, stages, the locked slow path, flushes ---- */

#define MIXED_PER_THREAD 40000

static void *produce_mixed(void *arg) {
    producer *p = arg;
    tp_stage *s;
    if (tp_writer_stage_open(p->w, p->tid, &s) != TP_OK)
        return NULL;
    uint32_t sid = 0, stack = 0;
    for (uint32_t i = 0; i < MIXED_PER_THREAD; i++) {
        if (i % 100 == 0) { /* a new name, and a shared one every thread interns too */
            char name[64];
            int n = snprintf(name, sizeof name, "t%u-name-%u", p->tid, i / 100);
            tp_writer_intern_string(p->w, name, (size_t)n, &sid);
            n = snprintf(name, sizeof name, "shared-%u", i / 100 % 10);
            uint32_t shared;
            tp_writer_intern_string(p->w, name, (size_t)n, &shared);
            uint64_t frames[2] = {TP_FRAME_MAKE(1, p->tid), TP_FRAME_MAKE(2, i / 1000)};
            tp_writer_intern_stack(p->w, frames, 2, &stack);
        }
        tp_rec_api a = {0};
        TP_REC_INIT(&a, TP_REC_API);
        a.ts = 1000u + i;
        a.end = a.ts + 1;
        a.tid = p->tid;
        a.correlation = i;
        a.name_sid = sid;
        a.stack_id = stack;
        p->written += (uint64_t)tp_stage_write(s, &a);
        if (i % 1000 == 0) {
            tp_rec_counter c = {0};
            TP_REC_INIT(&c, TP_REC_COUNTER);
            c.ts = a.ts;
            c.tid = p->tid;
            c.value = i;
            p->slow_written += tp_writer_write(p->w, &c) == TP_OK;
        }
    }
    tp_stage_close(s);
    return NULL;
}

/* Every API record names its thread's current string and stack; returns records checked,
 * or -1 at the first that does not resolve to what its thread interned. */
static long check_names(tp_reader *r, uint64_t *counters) {
    tp_cursor *c;
    if (tp_cursor_open(r, NULL, &c) != TP_OK)
        return -1;
    long n = 0;
    for (const tp_rec_hdr *h; (h = tp_cursor_next(c));) {
        if (h->type == TP_REC_COUNTER) {
            (*counters)++;
            continue;
        }
        const tp_rec_api *a = (const tp_rec_api *)h;
        char want[64];
        snprintf(want, sizeof want, "t%u-name-%u", a->tid, a->correlation / 100);
        const char *got = tp_reader_string(r, a->name_sid);
        uint32_t nf;
        const uint64_t *f = tp_reader_stack(r, a->stack_id, &nf);
        if (!got || strcmp(got, want) || !f || nf != 2 || f[0] != TP_FRAME_MAKE(1, a->tid) ||
            f[1] != TP_FRAME_MAKE(2, a->correlation / 1000)) {
            n = -1;
            break;
        }
        n++;
    }
    tp_cursor_close(c);
    return n;
}

static void test_mixed(void) {
    char path[256];
    tt_temp_path(path, sizeof path, "mixed");
    tp_writer_opts o;
    tp_writer_opts_default(&o);
    o.ring_bytes = 64u << 10;
    o.chunk_bytes = 16u << 10;
    o.block_when_full = 1;
    o.background = 1;
    o.flush_ms = 1;
    tp_writer *w;
    CHECK_OK(tp_writer_open(path, &o, &w));
    producer ps[NTHREADS];
    pthread_t th[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        ps[i] = (producer){.w = w, .tid = (uint32_t)(100 + i)};
        pthread_create(&th[i], NULL, produce_mixed, &ps[i]);
    }
    for (int k = 0; k < 50; k++) /* flushes from yet another thread, while they write */
        CHECK_OK(tp_writer_flush(w));
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    CHECK_OK(tp_writer_close(w));
    tp_reader *r;
    CHECK_OK(tp_reader_open(path, &r));
    uint64_t counters = 0, want_counters = 0;
    CHECK_EQ_I(check_names(r, &counters), NTHREADS * MIXED_PER_THREAD);
    for (int i = 0; i < NTHREADS; i++)
        want_counters += ps[i].slow_written;
    CHECK_EQ_U(counters, want_counters);
    CHECK_EQ_U(want_counters, NTHREADS * MIXED_PER_THREAD / 1000);
    /* Same number of shared names however many threads interned them. */
    CHECK_EQ_U(tp_reader_info(r)->records[TP_REC_STRING], NTHREADS * MIXED_PER_THREAD / 100 + 10);
    tp_reader_close(r);
    /* Cut anywhere, what is left still resolves every id (metadata precedes data). */
    size_t size;
    uint8_t *file = tt_read_file(path, &size);
    for (int k = 1; file && k < 40; k++) {
        size_t len = size * (size_t)k / 40;
        if (tp_reader_open_mem(file, len, &r) != TP_OK)
            continue;
        uint64_t cnt = 0;
        long n = check_names(r, &cnt);
        CHECK(n >= 0);
        tp_reader_close(r);
    }
    free(file);
    unlink(path);
}

/* The nice value of this process's thread named `name`; INT32_MIN when there is none. */
static int task_nice(const char *name) {
    int nice = INT32_MIN;
    DIR *d = opendir("/proc/self/task");
    for (struct dirent *e; d && (e = readdir(d));) {
        char path[300], buf[1024] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        int same = fgets(buf, sizeof buf, f) && !strcmp(strtok(buf, "\n"), name);
        fclose(f);
        snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
        if (!same || !(f = fopen(path, "r")))
            continue;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = 0;
        const char *p = strrchr(buf, ')'); /* then: state (field 3) ... nice (field 19) */
        int field = 2;
        for (; p && *p && field < 19; p++)
            if (*p == ' ')
                field++;
        if (p && field == 19)
            nice = atoi(p);
    }
    if (d)
        closedir(d);
    return nice;
}

/* opts.drain_nice: the drain thread runs that much nicer than the program, a second one at
 * the program's priority stands by, and with small rings (the second drain wakes whenever
 * one passes 3/4 and the nice one gives way to it) every record is read or counted dropped,
 * in order. How many are dropped depends on the machine's load, so only the sum is checked. */
static void test_nice_drain(void) {
    char path[256];
    tt_temp_path(path, sizeof path, "conc-nice");
    tp_writer_opts o;
    tp_writer_opts_default(&o);
    o.ring_bytes = 64u << 10;
    o.buffer_bytes = 64u << 20;
    o.background = 1;
    o.flush_ms = 1;
    o.drain_nice = 7;
    int base = getpriority(PRIO_PROCESS, 0);
    tp_writer *w;
    CHECK_OK(tp_writer_open(path, &o, &w));
    CHECK_EQ_I(task_nice("trainprof-drain"), base + 7 > 19 ? 19 : base + 7);
    CHECK_EQ_I(task_nice("trainprof-rush"), base);
    CHECK_OK(tp_writer_close(w));
    CHECK_EQ_I(task_nice("trainprof-rush"), INT32_MIN); /* joined */
    unlink(path);
    producer ps[NTHREADS];
    run_producers(path, &o, ps);
    readback rb;
    read_back(path, &rb);
    uint64_t read;
    check_accounted(&rb, ps, &read);
    o.drain_nice = 0; /* the default: one drain, at the program's priority */
    CHECK_OK(tp_writer_open(path, &o, &w));
    CHECK_EQ_I(task_nice("trainprof-drain"), base);
    CHECK_EQ_I(task_nice("trainprof-rush"), INT32_MIN);
    CHECK_OK(tp_writer_close(w));
    unlink(path);
}

int main(void) {
    TP_RUN(test_lossless);
    TP_RUN(test_blocking);
    TP_RUN(test_counted_drops);
    TP_RUN(test_budget_holds_flood);
    TP_RUN(test_small_budget_counts);
    TP_RUN(test_growth_while_draining);
    TP_RUN(test_mixed);
    TP_RUN(test_nice_drain);
    return tp_test_summary();
}
