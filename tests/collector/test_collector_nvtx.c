/* test_collector_nvtx: `trainprof record` on nvtx_app (normal mode) writes exactly the NVTX
 * ranges, marks, names, domains, categories, heaps and regions the program made, and the
 * stacks of its allocator calls symbolize (addr2line on MODULE path + offset) to the right
 * functions. Also: default trace names, with and without a rank. */
#include "tc_run.h"
#include "tp_test.h"

static tc_run R;

typedef struct {
    char key[96];
    int n;
} pair_count;

static pair_count g_pairs[64];
static int g_npairs;

static void count_pair(const char *parent, const char *child) {
    char key[96];
    snprintf(key, sizeof key, "%s/%s", parent ? parent : "", child ? child : "?");
    for (int i = 0; i < g_npairs; i++)
        if (!strcmp(g_pairs[i].key, key)) {
            g_pairs[i].n++;
            return;
        }
    if (g_npairs < 64) {
        snprintf(g_pairs[g_npairs].key, sizeof g_pairs[0].key, "%s", key);
        g_pairs[g_npairs++].n = 1;
    }
}

static int pairs(const char *key) {
    for (int i = 0; i < g_npairs; i++)
        if (!strcmp(g_pairs[i].key, key))
            return g_pairs[i].n;
    return 0;
}

/* Rebuilds each thread's range stack from PUSH/POP records (file order is time order within
 * a thread) and counts parent/child name pairs. Returns the number of unbalanced pops. */
static int build_nesting(tp_reader *rd) {
    enum { MAXT = 8, DEPTH = 128 };
    uint32_t tids[MAXT] = {0};
    const char *stack[MAXT][DEPTH];
    int depth[MAXT] = {0}, bad = 0;
    tp_query q = {TP_REC_BIT(TP_REC_NVTX_PUSH) | TP_REC_BIT(TP_REC_NVTX_POP), 0, 0};
    tp_cursor *c;
    if (tp_cursor_open(rd, &q, &c) != TP_OK)
        return -1;
    for (const tp_rec_hdr *h; (h = tp_cursor_next(c));) {
        uint32_t tid = h->type == TP_REC_NVTX_PUSH ? ((const tp_rec_nvtx *)h)->tid
                                                   : ((const tp_rec_nvtx_pop *)h)->tid;
        int t = 0;
        while (t < MAXT && tids[t] && tids[t] != tid)
            t++;
        if (t == MAXT)
            return -1;
        tids[t] = tid;
        if (h->type == TP_REC_NVTX_PUSH) {
            const char *name = tp_reader_string(rd, ((const tp_rec_nvtx *)h)->msg_sid);
            count_pair(depth[t] ? stack[t][depth[t] - 1] : NULL, name);
            if (depth[t] < DEPTH)
                stack[t][depth[t]++] = name;
        } else if (depth[t] > 0) {
            depth[t]--;
        } else {
            bad++;
        }
    }
    tp_cursor_close(c);
    for (int t = 0; t < MAXT; t++)
        bad += depth[t];
    return bad;
}

static char g_path[1024];
static tp_reader *g_rd;

static void test_record_runs(void) {
    const char *env[] = {NULL};
    const char *opts[] = {"-o", "out.tprof", NULL};
    CHECK_EQ_I(tc_record(&R, env, opts, NULL), 0);
    CHECK_EQ_I(tc_trace(&R, 0, g_path, sizeof g_path), 1);
    CHECK(strstr(g_path, "/out.tprof") != NULL);
    CHECK(strstr(tc_stderr(&R), "next: trainprof report") != NULL);
    CHECK_OK(tp_reader_open(g_path, &g_rd));
    CHECK(tp_reader_integrity(g_rd)->index_ok);
}

static void test_process(void) {
    const tp_rec_hdr *const *recs;
    CHECK_EQ_U(tp_reader_meta(g_rd, TP_REC_PROCESS, &recs), 1);
    tp_rec_process p;
    tp_record_get(recs[0], &p, sizeof p);
    CHECK(p.pid > 0);
    CHECK_EQ_I(p.rank, -1);
    const char *exe = tp_reader_string(g_rd, p.exe_sid);
    CHECK(exe && strstr(exe, "nvtx_app"));
    CHECK(strstr(tp_reader_string(g_rd, p.cmdline_sid), "nvtx_app") != NULL);
    CHECK_EQ_U(tp_reader_meta(g_rd, TP_REC_CLOCK_SYNC, &recs), 2);
}

static void test_nesting(void) {
    CHECK_EQ_I(build_nesting(g_rd), 0);
    CHECK_EQ_I(pairs("/step"), 5);
    CHECK_EQ_I(pairs("step/forward"), 5);
    CHECK_EQ_I(pairs("forward/wide-\xc3\xbc"), 5);
    CHECK_EQ_I(pairs("step/registered-range"), 5);
    CHECK_EQ_I(pairs("/lib-range"), 1);
    CHECK_EQ_I(pairs("/worker-step"), 6);
    CHECK_EQ_I(pairs("worker-step/worker-inner"), 6);
    CHECK_EQ_I(g_npairs, 7);
    CHECK_EQ_I(tc_count(g_rd, TP_REC_NVTX_PUSH, NULL), 33);
    CHECK_EQ_I(tc_count(g_rd, TP_REC_NVTX_POP, NULL), 33);
    CHECK_EQ_I(tc_count(g_rd, TP_REC_NVTX_MARK, "mark-A"), 5);
}

static uint32_t domain_id(const char *name, int destroyed) {
    const tp_rec_hdr *const *recs;
    size_t n = tp_reader_meta(g_rd, TP_REC_DOMAIN, &recs);
    for (size_t i = 0; i < n; i++) {
        const tp_rec_domain *d = (const tp_rec_domain *)recs[i];
        if (!strcmp(tp_reader_string(g_rd, d->name_sid), name) &&
            (d->h.flags & 1) == (unsigned)destroyed)
            return d->id;
    }
    return 0;
}

static void test_attributes(void) {
    uint32_t app = domain_id("app", 0), alloc = domain_id("alloc", 0);
    CHECK(app != 0 && alloc != 0 && app != alloc);
    CHECK_EQ_U(domain_id("alloc", 1), alloc);
    tp_query q = {TP_REC_BIT(TP_REC_NVTX_PUSH), 0, 0};
    tp_cursor *c;
    CHECK_OK(tp_cursor_open(g_rd, &q, &c));
    uint64_t payload_sum = 0;
    int forward = 0, lib = 0;
    for (const tp_rec_hdr *h; (h = tp_cursor_next(c));) {
        const tp_rec_nvtx *v = (const tp_rec_nvtx *)h;
        const char *s = tp_reader_string(g_rd, v->msg_sid);
        if (!strcmp(s, "forward")) {
            forward++;
            CHECK_EQ_U(v->domain, app);
            CHECK(v->h.flags & TP_NVTX_HAS_COLOR);
            CHECK_EQ_U(v->color, 0xff00ff00u);
            CHECK_EQ_U(v->category, 1);
            CHECK_EQ_U(v->payload_type, TP_PAYLOAD_U64);
            payload_sum += v->payload;
        } else if (!strcmp(s, "lib-range")) {
            lib++;
            CHECK_EQ_U(v->domain, app); /* second NVTX instance, same domain id */
        } else if (!strcmp(s, "registered-range")) {
            CHECK_EQ_U(v->domain, app);
        } else {
            CHECK_EQ_U(v->domain, 0);
        }
    }
    tp_cursor_close(c);
    CHECK_EQ_I(forward, 5);
    CHECK_EQ_I(lib, 1);
    CHECK_EQ_U(payload_sum, 0 + 1 + 2 + 3 + 4);
    const tp_rec_hdr *const *recs;
    CHECK_EQ_U(tp_reader_meta(g_rd, TP_REC_CATEGORY, &recs), 1);
    const tp_rec_category *cat = (const tp_rec_category *)recs[0];
    CHECK_EQ_U(cat->domain, app);
    CHECK_EQ_U(cat->category, 1);
    CHECK_STR(tp_reader_string(g_rd, cat->name_sid), "compute");
}

/* Thread names, and the start/end range that ends on worker-0. */
static void test_threads_and_start_end(void) {
    tp_query q = {TP_REC_BIT(TP_REC_NVTX_PUSH) | TP_REC_BIT(TP_REC_NVTX_START) |
                      TP_REC_BIT(TP_REC_NVTX_END),
                  0, 0};
    tp_cursor *c;
    CHECK_OK(tp_cursor_open(g_rd, &q, &c));
    uint64_t start_id = 0, end_id = 0;
    uint32_t start_tid = 0, end_tid = 0;
    int named_workers = 0, named_main = 0;
    for (const tp_rec_hdr *h; (h = tp_cursor_next(c));) {
        if (h->type == TP_REC_NVTX_START) {
            const tp_rec_nvtx_start *s = (const void *)h;
            CHECK_STR(tp_reader_string(g_rd, s->msg_sid), "async-range");
            start_id = s->range_id, start_tid = s->tid;
        } else if (h->type == TP_REC_NVTX_END) {
            const tp_rec_nvtx_end *e = (const void *)h;
            end_id = e->range_id, end_tid = e->tid;
        } else {
            const tp_rec_nvtx *v = (const void *)h;
            const char *s = tp_reader_string(g_rd, v->msg_sid);
            const char *tn = tp_reader_thread_name(g_rd, v->tid);
            if (!strcmp(s, "worker-step"))
                named_workers += tn && !strncmp(tn, "worker-", 7);
            if (!strcmp(s, "step"))
                named_main += tn && !strcmp(tn, "main-thread");
        }
    }
    tp_cursor_close(c);
    CHECK_EQ_I(named_workers, 6);
    CHECK_EQ_I(named_main, 5);
    CHECK(start_id != 0);
    CHECK_EQ_U(end_id, start_id);
    CHECK(end_tid != start_tid);
    CHECK_STR(tp_reader_thread_name(g_rd, end_tid), "worker-0");
}

/* 1 when one frame symbolizes (addr2line -f -i on the module's file, so functions inlined at
 * that address count too) to function `want`. */
static int frame_is(uint64_t frame, const char *want) {
    const tp_rec_module *m = tp_reader_module(g_rd, TP_FRAME_MODULE(frame));
    if (!m)
        return 0;
    char cmd[1400], line[512];
    snprintf(cmd, sizeof cmd, "addr2line -f -i -e '%s' 0x%llx", tp_reader_string(g_rd, m->path_sid),
             (unsigned long long)TP_FRAME_OFFSET(frame));
    FILE *p = popen(cmd, "r");
    int found = 0;
    for (int i = 0; p && fgets(line, sizeof line, p); i++) {
        line[strcspn(line, "\n")] = 0;
        found |= i % 2 == 0 && !strcmp(line, want); /* name, file:line, name, ... */
    }
    if (p)
        pclose(p);
    return found;
}

/* 1 when stack `id` has a frame in function `want`. */
static int stack_has(uint32_t id, const char *want) {
    uint32_t n;
    const uint64_t *f = tp_reader_stack(g_rd, id, &n);
    for (uint32_t i = 0; f && i < n; i++)
        if (frame_is(f[i], want))
            return 1;
    return 0;
}

static void test_heaps_regions(void) {
    tp_query q = {TP_REC_BIT(TP_REC_HEAP) | TP_REC_BIT(TP_REC_REGION), 0, 0};
    tp_cursor *c;
    CHECK_OK(tp_cursor_open(g_rd, &q, &c));
    uint64_t heap = 0, reg_bytes = 0;
    int ops[8] = {0}, rops[8] = {0};
    uint32_t heap_stack = 0, region_stack = 0;
    for (const tp_rec_hdr *h; (h = tp_cursor_next(c));) {
        if (h->type == TP_REC_HEAP) {
            const tp_rec_heap *p = (const void *)h;
            ops[p->op & 7]++;
            if (p->op == TP_HEAP_REGISTER) {
                heap = p->heap;
                heap_stack = p->stack_id;
                CHECK_EQ_U(p->size, 1u << 20);
                CHECK_EQ_U(p->address, p->heap);
                CHECK_STR(tp_reader_string(g_rd, p->name_sid), "pool");
            } else {
                CHECK_EQ_U(p->heap, heap);
            }
        } else {
            const tp_rec_region *r = (const void *)h;
            rops[r->op & 7]++;
            if (r->op == TP_REGION_REGISTER) {
                CHECK_EQ_U(r->heap, heap);
                reg_bytes += r->size;
                region_stack = r->stack_id;
            }
            if (r->op == TP_REGION_RESIZE)
                CHECK_EQ_U(r->size, 16384);
        }
    }
    tp_cursor_close(c);
    CHECK_EQ_I(ops[TP_HEAP_REGISTER], 1);
    CHECK_EQ_I(ops[TP_HEAP_RESET], 1);
    CHECK_EQ_I(ops[TP_HEAP_UNREGISTER], 1);
    CHECK_EQ_I(rops[TP_REGION_REGISTER], 3);
    CHECK_EQ_I(rops[TP_REGION_RESIZE], 1);
    CHECK_EQ_I(rops[TP_REGION_UNREGISTER], 1);
    CHECK_EQ_U(reg_bytes, 4096 + 8192 + 100);
    CHECK(heap_stack != 0 && region_stack != 0 && heap_stack != region_stack);
    CHECK(stack_has(heap_stack, "suballoc_create_pool"));
    CHECK(stack_has(heap_stack, "main"));
    CHECK(stack_has(region_stack, "suballoc_alloc"));
    CHECK(stack_has(region_stack, "run_normal"));
    CHECK(!stack_has(region_stack, "suballoc_create_pool"));
}

static void test_default_names(void) {
    tc_run r2 = R;
    const char *opts[] = {NULL};
    const char *env[] = {"RANK=3", "WORLD_SIZE=8", "LOCAL_RANK=1", NULL};
    const char *args[] = {"plain", NULL};
    char path[1024];
    CHECK_EQ_I(tc_record(&r2, NULL, opts, args), 0);
    CHECK_EQ_I(tc_trace(&r2, 0, path, sizeof path), 1);
    CHECK(strstr(path, "/nvtx_app-") && !strstr(path, "rank"));
    tc_cleanup(&r2);
    CHECK_EQ_I(tc_record(&r2, env, opts, args), 0);
    CHECK_EQ_I(tc_trace(&r2, 0, path, sizeof path), 1);
    CHECK(strstr(path, "/nvtx_app-rank3-") != NULL);
    tp_reader *rd;
    CHECK_OK(tp_reader_open(path, &rd));
    const tp_rec_hdr *const *recs;
    CHECK_EQ_U(tp_reader_meta(rd, TP_REC_PROCESS, &recs), 1);
    tp_rec_process p;
    tp_record_get(recs[0], &p, sizeof p);
    CHECK_EQ_I(p.rank, 3);
    CHECK_EQ_I(p.world_size, 8);
    CHECK_EQ_I(p.local_rank, 1);
    tp_reader_close(rd);
    tc_cleanup(&r2);
}

/* --stacks all: every push carries the stack of its nvtxRangePush call site;
 * --stacks none: not even allocator calls take one. */
static void test_stack_modes(void) {
    tc_run r2 = R;
    char path[1024];
    const char *all[] = {"--stacks", "all", NULL};
    CHECK_EQ_I(tc_record(&r2, NULL, all, NULL), 0);
    CHECK_EQ_I(tc_trace(&r2, 0, path, sizeof path), 1);
    tp_reader *rd, *saved = g_rd;
    CHECK_OK(tp_reader_open(path, &rd));
    g_rd = rd;
    tp_query q = {TP_REC_BIT(TP_REC_NVTX_PUSH) | TP_REC_BIT(TP_REC_NVTX_START), 0, 0};
    tp_cursor *c;
    CHECK_OK(tp_cursor_open(rd, &q, &c));
    int with = 0, without = 0, step_ok = 0;
    for (const tp_rec_hdr *h; (h = tp_cursor_next(c));) {
        uint32_t sid = h->type == TP_REC_NVTX_PUSH ? ((const tp_rec_nvtx *)h)->stack_id
                                                   : ((const tp_rec_nvtx_start *)h)->stack_id;
        with += sid != 0;
        without += sid == 0;
        if (h->type == TP_REC_NVTX_PUSH && !step_ok &&
            !strcmp(tp_reader_string(rd, ((const tp_rec_nvtx *)h)->msg_sid), "forward"))
            step_ok = stack_has(sid, "one_step") && stack_has(sid, "run_normal");
    }
    tp_cursor_close(c);
    g_rd = saved;
    CHECK_EQ_I(with, 34);
    CHECK_EQ_I(without, 0);
    CHECK(step_ok);
    tp_reader_close(rd);
    tc_cleanup(&r2);
    const char *none[] = {"--stacks", "none", NULL};
    CHECK_EQ_I(tc_record(&r2, NULL, none, NULL), 0);
    CHECK_EQ_I(tc_trace(&r2, 0, path, sizeof path), 1);
    CHECK_OK(tp_reader_open(path, &rd));
    CHECK_EQ_U(tp_reader_info(rd)->records[TP_REC_STACK], 0);
    CHECK_EQ_I(tc_count(rd, TP_REC_HEAP, NULL), 3);
    tp_reader_close(rd);
    tc_cleanup(&r2);
}

/* The fast paths of push and pop (the default configuration): nvtx_app pairs with a budget
 * that holds every record, so that rings fill, wrap and grow (the fast paths stop at each
 * ring limit and the general path goes on) and nothing may be lost: exact counts, names
 * (a reused buffer, a string across a page end) and nesting. */
static void test_fast_paths(void) {
    enum { N = 30000 };
    tc_run r2 = R;
    char path[1024], n[16];
    snprintf(n, sizeof n, "%d", N);
    const char *env[] = {"TRAINPROF_BUFFER_KB=16384", NULL};
    const char *args[] = {"pairs", n, NULL};
    CHECK_EQ_I(tc_record(&r2, env, NULL, args), 0);
    CHECK_EQ_I(tc_trace(&r2, 0, path, sizeof path), 1);
    tp_reader *rd;
    CHECK_OK(tp_reader_open(path, &rd));
    CHECK_EQ_U(tc_dropped(rd, 0), 0);
    CHECK_EQ_I(tc_count(rd, TP_REC_NVTX_PUSH, "outer"), N);
    CHECK_EQ_I(tc_count(rd, TP_REC_NVTX_PUSH, "buf-a"), N / 2);
    CHECK_EQ_I(tc_count(rd, TP_REC_NVTX_PUSH, "buf-b"), N / 2);
    CHECK_EQ_I(tc_count(rd, TP_REC_NVTX_PUSH, "page-long"), 2);
    CHECK_EQ_I(tc_count(rd, TP_REC_NVTX_PUSH, "abc"), 2);
    CHECK_EQ_I(tc_count(rd, TP_REC_NVTX_PUSH, "deep"), 100);
    CHECK_EQ_I(tc_count(rd, TP_REC_NVTX_PUSH, NULL), 2 * N + 4 + 100);
    CHECK_EQ_I(tc_count(rd, TP_REC_NVTX_POP, NULL), 2 * N + 4 + 100);
    CHECK_EQ_I(tc_count(rd, TP_REC_NVTX_MARK, "tick"), N / 64);
    g_npairs = 0;
    CHECK_EQ_I(build_nesting(rd), 0);
    CHECK_EQ_I(pairs("outer/buf-a"), N / 2);
    CHECK_EQ_I(pairs("outer/buf-b"), N / 2);
    CHECK_EQ_I(pairs("/outer"), N);
    CHECK_EQ_I(pairs("/deep"), 1); /* every one of the 100 closed: pops past depth 63 too */
    CHECK_EQ_I(pairs("deep/deep"), 99);
    CHECK_EQ_I(g_npairs, 7);
    tp_reader_close(rd);
    tc_cleanup(&r2);
}

int main(int argc, char **argv) {
    tc_init(&R, argc, argv);
    TP_RUN(test_record_runs);
    if (!g_rd)
        return 1;
    TP_RUN(test_process);
    TP_RUN(test_nesting);
    TP_RUN(test_attributes);
    TP_RUN(test_threads_and_start_end);
    TP_RUN(test_heaps_regions);
    TP_RUN(test_default_names);
    TP_RUN(test_stack_modes);
    TP_RUN(test_fast_paths);
    tp_reader_close(g_rd);
    if (!tp_test_failures)
        tc_cleanup(&R);
    return tp_test_summary();
}
