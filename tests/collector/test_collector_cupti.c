/* test_collector_cupti: the collector's CUPTI glue (collector/tp_cupti.c) through its whole
 * life, against the CUPTI STAND-IN (tests/collector/cupti_standin/): a contract test that runs
 * without a GPU, not a GPU test. cupti_app plays the CUDA runtime and driver under the real
 * `trainprof record` (so the real driver's path: CUDA_INJECTION64_PATH -> cuInit ->
 * InitializeInjection), and the assertions read the .tprof it wrote:
 * - kernels, copies and API calls with their names, each kernel bound to its launching stack
 *   by correlation id (runtime launches, direct driver launches, runtime+driver copies),
 *   device and stream metadata, allocation failures (cudaMalloc, cudaMallocHost, cuMemCreate);
 * - timestamps on the trace clock (kernels inside the NVTX ranges around their launches);
 * - buffers completed out of order, a late buffer that only the exit flush delivers before
 *   the CUDA runtime's teardown, a record without timestamps (dropped, counted), an
 *   incomplete record (the buffer's cut counted);
 * - --capture / --delay gating CUDA records; a fork child disarmed; another CUPTI client
 *   taking over (Kineto); libcuda without InitializeInjection; a 4 MiB buffer through a 1 MiB
 *   budget without drops; correlation-table overwrites counted;
 * - refusals: another subscriber, libcupti missing, an old libcupti, a refused activity kind
 *   (named, and no callback left on), a refused optional kind (CUDA stays on). */
#include "tc_run.h"
#include "tp_test.h"

#include <stdint.h>

static tc_run R;
static tp_reader *g_rd;

#define MAXREC 64

/* The records of one trace the checks look at. */
typedef struct {
    tp_rec_kernel kernel[MAXREC];
    tp_rec_api api[MAXREC];
    tp_rec_memcpy copy[MAXREC];
    tp_rec_alloc_fail fail[MAXREC];
    uint64_t push[MAXREC], pop[MAXREC];
    uint32_t push_tid; /* the thread of the last NVTX push named as asked */
    int nkernel, napi, ncopy, nfail, npush, npop;
    uint64_t api_total;
} scan;

static scan S;

static void add(void *arr, int *n, size_t size, const tp_rec_hdr *h) {
    if (*n < MAXREC)
        tp_record_get(h, (char *)arr + (size_t)*n * size, size);
    (*n)++;
}

static void scan_trace(const char *push_name) {
    memset(&S, 0, sizeof S);
    tp_query q = {TP_REC_BIT(TP_REC_KERNEL) | TP_REC_BIT(TP_REC_API) | TP_REC_BIT(TP_REC_MEMCPY) |
                      TP_REC_BIT(TP_REC_ALLOC_FAIL) | TP_REC_BIT(TP_REC_NVTX_PUSH) |
                      TP_REC_BIT(TP_REC_NVTX_POP),
                  0, 0};
    tp_cursor *c;
    if (tp_cursor_open(g_rd, &q, &c) != TP_OK)
        return;
    for (const tp_rec_hdr *h; (h = tp_cursor_next(c));) {
        if (h->type == TP_REC_KERNEL)
            add(S.kernel, &S.nkernel, sizeof S.kernel[0], h);
        else if (h->type == TP_REC_API)
            S.api_total++, add(S.api, &S.napi, sizeof S.api[0], h);
        else if (h->type == TP_REC_MEMCPY)
            add(S.copy, &S.ncopy, sizeof S.copy[0], h);
        else if (h->type == TP_REC_ALLOC_FAIL)
            add(S.fail, &S.nfail, sizeof S.fail[0], h);
        else if (h->type == TP_REC_NVTX_POP && S.npop < S.npush && S.npop < MAXREC)
            S.pop[S.npop++] = tp_record_ts(h);
        else if (h->type == TP_REC_NVTX_PUSH && S.npush < MAXREC) {
            tp_rec_nvtx v;
            tp_record_get(h, &v, sizeof v);
            const char *m = tp_reader_string(g_rd, v.msg_sid);
            if (m && push_name && !strcmp(m, push_name))
                S.push_tid = v.tid, S.push[S.npush++] = v.ts;
        }
    }
    tp_cursor_close(c);
}

static int kernels_named(const char *name) {
    int n = 0;
    for (int i = 0; i < S.nkernel && i < MAXREC; i++) {
        const char *s = tp_reader_string(g_rd, S.kernel[i].name_sid);
        n += s && !strcmp(s, name);
    }
    return n;
}

static const tp_rec_api *api_of(uint32_t corr) {
    for (int i = 0; i < S.napi && i < MAXREC; i++)
        if (S.api[i].correlation == corr)
            return &S.api[i];
    return NULL;
}

/* The value of COUNTER `name` (a prefix), -1 when absent. */
static int64_t counter(const char *name) {
    tp_query q = {TP_REC_BIT(TP_REC_COUNTER), 0, 0};
    tp_cursor *c;
    int64_t v = -1;
    if (tp_cursor_open(g_rd, &q, &c) != TP_OK)
        return -1;
    for (const tp_rec_hdr *h; (h = tp_cursor_next(c));) {
        tp_rec_counter r;
        tp_record_get(h, &r, sizeof r);
        const char *s = tp_reader_string(g_rd, r.name_sid);
        if (s && !strncmp(s, name, strlen(name)))
            v = (int64_t)r.value;
    }
    tp_cursor_close(c);
    return v;
}

/* 1 when one frame symbolizes (addr2line -f -i) to function `want`. */
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
        found |= i % 2 == 0 && !strcmp(line, want);
    }
    if (p)
        pclose(p);
    return found;
}

static int stack_has(uint32_t id, const char *want) {
    uint32_t n;
    const uint64_t *f = id ? tp_reader_stack(g_rd, id, &n) : NULL;
    for (uint32_t i = 0; f && i < n; i++)
        if (frame_is(f[i], want))
            return 1;
    return 0;
}

/* Runs cupti_app `mode` under `trainprof record` and opens trace `which` (0: the first). */
static int run(const char *const *env, const char *const *opts, const char *const *args) {
    if (tc_record(&R, env, opts, args) != 0)
        return 0;
    char path[1024];
    return tc_trace(&R, 0, path, sizeof path) >= 1 && tp_reader_open(path, &g_rd) == TP_OK;
}

static void done(void) {
    tp_reader_close(g_rd);
    g_rd = NULL;
    tc_cleanup(&R);
}

/* ---------------------------------------------------------------- the lifecycle */

static void check_launches(void) {
    CHECK_EQ_I(S.nkernel, 5);
    CHECK_EQ_I(kernels_named("gemm_kernel"), 3);
    CHECK_EQ_I(kernels_named("triton_kernel"), 1);
    CHECK_EQ_I(kernels_named("late_kernel"), 1);   /* the held buffer: the exit flush */
    CHECK_EQ_I(kernels_named("broken_kernel"), 0); /* no timestamps: dropped */
    CHECK_EQ_I(kernels_named("lost_kernel"), 0);   /* behind the incomplete record */
    CHECK_EQ_I(S.npush, 3);
    CHECK_EQ_I(S.npop, 3);
    uint64_t gemm[3];
    int ng = 0;
    for (int i = 0; i < S.nkernel; i++) {
        const tp_rec_kernel *k = &S.kernel[i];
        const char *name = tp_reader_string(g_rd, k->name_sid);
        const tp_rec_api *a = api_of(k->correlation);
        CHECK(a != NULL);
        CHECK(k->ts > 0 && k->end > k->ts);
        CHECK_EQ_U(k->stream, 7);
        if (!strcmp(name, "gemm_kernel")) {
            CHECK_EQ_U(a->h.flags & TP_RF_TYPE_MASK, TP_API_RUNTIME);
            CHECK(stack_has(a->stack_id, "launch_gemm"));
            /* the launching thread as the trace names threads (its NVTX "step" ranges'): CUPTI's
             * default thread ids are pthread_self() values, never a tid */
            CHECK_EQ_U(a->tid, S.push_tid);
            gemm[ng++ % 3] = k->ts;
        } else if (!strcmp(name, "triton_kernel")) {
            CHECK_EQ_U(a->h.flags & TP_RF_TYPE_MASK, TP_API_DRIVER);
            CHECK(stack_has(a->stack_id, "launch_triton"));
        }
    }
    CHECK_EQ_I(ng, 3);
    /* Trace clock: each gemm ran inside its NVTX "step" (CUPTI's own default clock, the
     * realtime one, would put it decades away). Buffers came reversed: sort first. */
    for (int i = 0; i < 3; i++)
        for (int j = i + 1; j < 3; j++)
            if (gemm[j] < gemm[i]) {
                uint64_t t = gemm[i];
                gemm[i] = gemm[j];
                gemm[j] = t;
            }
    for (int i = 0; i < 3; i++)
        CHECK(S.push[i] <= gemm[i] && gemm[i] <= S.pop[i]);
}

static void check_copies_and_allocs(void) {
    CHECK_EQ_I(S.ncopy, 1);
    const tp_rec_memcpy *m = &S.copy[0];
    CHECK_EQ_U(m->bytes, 1u << 20);
    CHECK_EQ_U(m->copy_kind, TP_COPY_HTOD);
    const tp_rec_api *drv = api_of(m->correlation), *rt = api_of(m->runtime_correlation);
    CHECK(drv && rt);
    CHECK_EQ_U(drv->h.flags & TP_RF_TYPE_MASK, TP_API_DRIVER);
    CHECK_EQ_U(rt->h.flags & TP_RF_TYPE_MASK, TP_API_RUNTIME);
    CHECK(drv->stack_id != 0);
    CHECK_EQ_U(drv->stack_id, rt->stack_id); /* one unwind, both ids */
    CHECK(stack_has(rt->stack_id, "copy_h2d"));
    CHECK_STR(tp_reader_string(g_rd, rt->name_sid), "cudaMemcpyAsync");
    CHECK_EQ_I(S.nfail, 3);
    static const struct {
        uint64_t bytes;
        const char *fn;
    } want[] = {
        {1ull << 40, "alloc_device"}, {3ull << 30, "alloc_pinned"}, {5ull << 30, "alloc_physical"}};
    for (int i = 0; i < 3; i++) {
        int found = 0;
        for (int j = 0; j < S.nfail; j++)
            if (S.fail[j].requested == want[i].bytes) {
                found = 1;
                CHECK(stack_has(S.fail[j].stack_id, want[i].fn));
            }
        CHECK(found);
    }
}

static void check_metadata(void) {
    const tp_rec_hdr *const *recs;
    CHECK_EQ_U(tp_reader_meta(g_rd, TP_REC_DEVICE, &recs), 1); /* cuptiActivityEnableAndDump */
    const tp_rec_device *d = (const void *)recs[0];
    CHECK_STR(tp_reader_string(g_rd, d->name_sid), "Stand-in GPU (not a device)");
    CHECK_EQ_U(d->sm_count, 132);
    CHECK_EQ_U(d->compute_capability, 90);
    CHECK_EQ_U(tp_reader_meta(g_rd, TP_REC_STREAM, &recs), 1);
    CHECK_EQ_U(((const tp_rec_stream *)(const void *)recs[0])->stream, 7);
    CHECK_EQ_U(((const tp_rec_stream *)(const void *)recs[0])->context, 1);
}

/* `trainprof report [--format json]` on the run's trace, into a static buffer ("" when it
 * failed). */
static const char *report_as(const char *format) {
    static char out[65536];
    char path[1024], cmd[PATH_MAX + 1100];
    tc_trace(&R, 0, path, sizeof path);
    snprintf(cmd, sizeof cmd, "'%s' report --format %s '%s' 2>&1", R.trainprof, format, path);
    FILE *p = popen(cmd, "r");
    size_t n = p ? fread(out, 1, sizeof out - 1, p) : 0;
    out[n] = 0;
    if (!p || pclose(p) != 0)
        out[0] = 0;
    return out;
}

static const char *report(void) {
    return report_as("text");
}

static void check_report(void) {
    const char *out = report();
    CHECK(strstr(out, "gemm_kernel") != NULL);
    CHECK(strstr(out, "CUDA: not traced") == NULL);
}

static void test_lifecycle(void) {
    const char *args[] = {"basic", NULL};
    CHECK(run(NULL, NULL, args));
    CHECK(strstr(tc_stderr(&R), "CUDA tracing off") == NULL);
    scan_trace("step");
    check_launches();
    check_copies_and_allocs();
    check_metadata();
    CHECK_EQ_U(tc_dropped(g_rd, TP_REC_KERNEL), 1); /* broken_kernel */
    CHECK_EQ_I(counter("trainprof.cupti.buffers_cut"), 1);
    CHECK_EQ_I(counter("trainprof.cupti.correlations_overwritten"), -1);
    CHECK(tp_reader_info(g_rd)->t_min > 0); /* nothing dragged the start to 0 */
    check_report();
    done();
}

/* ---------------------------------------------------------------- refusals */

static void check_refused(const char *const *env, const char *why) {
    const char *args[] = {"launch", NULL};
    CHECK(run(env, NULL, args));
    const char *err = tc_stderr(&R);
    CHECK(strstr(err, "CUDA tracing off (") != NULL);
    CHECK(strstr(err, why) != NULL);
    CHECK_EQ_I(tc_count(g_rd, TP_REC_NVTX_PUSH, "after-cuda"), 1);
    CHECK_EQ_I(tc_count(g_rd, TP_REC_KERNEL, NULL), 0);
    CHECK_EQ_I(tc_count(g_rd, TP_REC_API, NULL), 0);
    CHECK_EQ_I(counter("trainprof.cuda_off: "), 1);
    done();
}

static void test_refusals(void) {
    const char *busy[] = {"TP_STANDIN_BUSY=1", NULL};
    check_refused(busy, "cuptiSubscribe (another profiler holds CUPTI)");
    const char *old[] = {"TP_STANDIN_VERSION=120000", NULL};
    check_refused(old, "libcupti API version 120000");
    const char *missing[] = {"TRAINPROF_CUPTI=/nonexistent/libcupti.so.13", NULL};
    check_refused(missing, "cannot load libcupti (TRAINPROF_CUPTI)");
    const char *kind[] = {"TP_STANDIN_REFUSE_KIND=10", NULL}; /* CONCURRENT_KERNEL */
    check_refused(kind, "cuptiActivityEnable(CONCURRENT_KERNEL): CUPTI_ERROR_NOT_COMPATIBLE");
}

/* A refused required kind leaves nothing on: no callback reaches the collector. */
static void test_refused_kind_disarms(void) {
    const char *env[] = {"TP_STANDIN_REFUSE_KIND=10", NULL};
    const char *args[] = {"launch", NULL};
    tc_fresh_dir(&R);
    tc_start(&R, env, NULL, args);
    char out[256];
    tc_read_all(&R, out, sizeof out);
    CHECK_EQ_I(tc_wait(&R), 0);
    CHECK(strstr(out, "callbacks=0 kinds=0 subscribed=0") != NULL);
    tc_cleanup(&R);
}

/* A refused optional kind loses its records only. */
static void test_refused_optional_kind(void) {
    const char *env[] = {"TP_STANDIN_REFUSE_KIND=49", NULL}; /* MEMORY2 */
    const char *args[] = {"launch", NULL};
    CHECK(run(env, NULL, args));
    CHECK(strstr(tc_stderr(&R), "CUPTI refused activity kind MEMORY2") != NULL);
    CHECK(strstr(tc_stderr(&R), "CUDA tracing off") == NULL);
    CHECK_EQ_I(tc_count(g_rd, TP_REC_KERNEL, NULL), 1);
    CHECK_EQ_I(counter("trainprof.cupti.kind_refused: MEMORY2"), 1);
    done();
}

/* ---------------------------------------------------------------- options, processes */

static void test_capture(void) {
    const char *args[] = {"capture", NULL};
    const char *nvtx[] = {"--capture", "nvtx:capture-me", NULL};
    CHECK(run(NULL, nvtx, args));
    scan_trace(NULL);
    CHECK_EQ_I(kernels_named("inside_kernel"), 2);
    CHECK_EQ_I(kernels_named("outside_kernel"), 0);
    done();
    const char *later[] = {"--delay", "3600", NULL};
    CHECK(run(NULL, later, args));
    CHECK_EQ_I(tc_count(g_rd, TP_REC_KERNEL, NULL), 0);
    CHECK_EQ_I(tc_count(g_rd, TP_REC_API, NULL), 0);
    done();
}

static void test_fork_child_disarmed(void) {
    const char *args[] = {"fork", NULL};
    CHECK_EQ_I(tc_record(&R, NULL, NULL, args), 0);
    CHECK(strstr(tc_stderr(&R), "flush in a fork child") == NULL);
    char path[1024];
    int n = tc_trace(&R, 0, path, sizeof path), seen_child = 0, seen_parent = 0;
    CHECK_EQ_I(n, 2);
    for (int i = 0; i < n; i++) {
        tc_trace(&R, i, path, sizeof path);
        CHECK_OK(tp_reader_open(path, &g_rd));
        if (tc_count(g_rd, TP_REC_NVTX_PUSH, "child") == 1) {
            seen_child = 1;
            CHECK_EQ_I(tc_count(g_rd, TP_REC_KERNEL, NULL), 0);
            CHECK_EQ_I(tc_count(g_rd, TP_REC_API, NULL), 0);
        } else {
            seen_parent = 1;
            scan_trace(NULL);
            CHECK_EQ_I(kernels_named("parent_kernel"), 2);
            CHECK_EQ_I(kernels_named("child_kernel"), 0);
        }
        tp_reader_close(g_rd);
        g_rd = NULL;
    }
    CHECK(seen_child && seen_parent);
    tc_cleanup(&R);
}

static void test_kineto_takes_over(void) {
    const char *args[] = {"kineto", NULL};
    tc_fresh_dir(&R);
    tc_start(&R, NULL, NULL, args);
    char out[256];
    tc_read_all(&R, out, sizeof out);
    CHECK_EQ_I(tc_wait(&R), 0);
    CHECK(strstr(out, "theirs=1") != NULL); /* the other client got what came after */
    const char *err = tc_stderr(&R);
    CHECK(strstr(err, "another CUPTI client took CUDA tracing over "
                      "(cuptiActivityRegisterCallbacks") != NULL);
    char path[1024];
    CHECK_EQ_I(tc_trace(&R, 0, path, sizeof path), 1);
    CHECK_OK(tp_reader_open(path, &g_rd));
    scan_trace(NULL);
    CHECK_EQ_I(kernels_named("before_kernel"), 1); /* ours, flushed before the handover */
    CHECK_EQ_I(kernels_named("after_kernel"), 0);
    CHECK_EQ_I(counter("trainprof.cuda_off: another CUPTI client"), 1);
    CHECK(strstr(report(), "CUDA: not traced (another CUPTI client took CUDA tracing over") !=
          NULL);
    CHECK(strstr(report_as("json"),
                 "\"cuda_off\": \"another CUPTI client took CUDA tracing over") != NULL);
    done();
}

/* A client refused CUPTI while we hold it (Kineto subscribes first and gives up): said on
 * stderr and in the report; our tracing goes on. */
static void test_kineto_refused(void) {
    const char *args[] = {"kinetorefused", NULL};
    tc_fresh_dir(&R);
    tc_start(&R, NULL, NULL, args);
    char out[256];
    tc_read_all(&R, out, sizeof out);
    CHECK_EQ_I(tc_wait(&R), 0);
    CHECK(strstr(out, "refused=1") != NULL);
    const char *err = tc_stderr(&R);
    CHECK(strstr(err, "another CUPTI client (torch.profiler/Kineto?) was refused CUPTI "
                      "(cuptiSubscribe") != NULL);
    CHECK(strstr(err, "CUDA tracing off") == NULL);
    char path[1024];
    CHECK_EQ_I(tc_trace(&R, 0, path, sizeof path), 1);
    CHECK_OK(tp_reader_open(path, &g_rd));
    scan_trace(NULL);
    CHECK_EQ_I(kernels_named("before_kernel"), 1);
    CHECK_EQ_I(kernels_named("after_kernel"), 1); /* ours goes on */
    CHECK_EQ_I(counter("trainprof.cupti_refused: another CUPTI client"), 1);
    CHECK(strstr(report(), "CUDA: traced here; another CUPTI client (torch.profiler/Kineto?) "
                           "was refused CUPTI") != NULL);
    CHECK(strstr(report_as("json"), "\"cupti_refused\": \"another CUPTI client") != NULL);
    done();
}

/* A client that registered first keeps CUPTI: we never take its buffers. */
static void test_other_client_first(void) {
    const char *args[] = {"kinetofirst", NULL};
    tc_fresh_dir(&R);
    tc_start(&R, NULL, NULL, args);
    char out[256];
    tc_read_all(&R, out, sizeof out);
    CHECK_EQ_I(tc_wait(&R), 0);
    CHECK(strstr(out, "theirs=1") != NULL);
    CHECK(strstr(tc_stderr(&R), "registered its activity callbacks before CUDA started") != NULL);
    tc_cleanup(&R);
}

/* With CUDA tracing off (libcupti never opened by us), the wrappers only pass the other
 * client's calls on to the real libcupti. */
static void test_other_client_alone(void) {
    const char *args[] = {"kineto", NULL};
    const char *opts[] = {"--no-cuda", NULL};
    tc_fresh_dir(&R);
    tc_start(&R, NULL, opts, args);
    char out[256];
    tc_read_all(&R, out, sizeof out);
    CHECK_EQ_I(tc_wait(&R), 0);
    CHECK(strstr(out, "theirs=1") != NULL);
    CHECK(strstr(tc_stderr(&R), "another CUPTI client") == NULL);
    tc_cleanup(&R);
}

static void test_never_injected(void) {
    const char *env[] = {"TP_STANDIN_NO_INJECTION=1", NULL};
    const char *args[] = {"launch", NULL};
    CHECK(run(env, NULL, args));
    CHECK(strstr(tc_stderr(&R), "never called InitializeInjection") != NULL);
    CHECK_EQ_I(counter("trainprof.cuda_off: libcuda.so.1 was loaded"), 1);
    done();
}

/* 120000 API records (4.8 MB of CUPTI records, two buffers) through a 1 MiB budget drained
 * only on demand: the buffer thread drains as it goes, nothing is dropped. */
static void test_big_buffer(void) {
    const char *env[] = {"TRAINPROF_DRAIN=exit", NULL};
    const char *opts[] = {"--buffer-mb", "1", NULL};
    const char *args[] = {"bigbuf", "120000", NULL};
    CHECK(run(env, opts, args));
    CHECK_EQ_I(tc_count(g_rd, TP_REC_API, NULL), 120000);
    CHECK_EQ_U(tc_dropped(g_rd, 0), 0);
    done();
}

/* The pool's 8 buffers all held by CUPTI: the 9th launch's 3 records find no buffer. */
static void test_pool_starved(void) {
    const char *args[] = {"starve", NULL};
    CHECK(run(NULL, NULL, args));
    CHECK_EQ_I(tc_count(g_rd, TP_REC_KERNEL, NULL), 9);
    CHECK_EQ_I(counter("trainprof.cupti.buffers_refused"), 3);
    CHECK_EQ_U(tc_dropped(g_rd, 0), 3); /* CUPTI's count of what it could not store */
    done();
}

/* 2^18 + 10 launches before any record arrives: the table's overwrites are counted. */
static void test_correlation_wrap(void) {
    const char *args[] = {"wrap", "262154", NULL};
    CHECK(run(NULL, NULL, args));
    CHECK_EQ_I(counter("trainprof.cupti.correlations_overwritten"), 10);
    CHECK_EQ_I(tc_count(g_rd, TP_REC_KERNEL, NULL), 1);
    done();
}

int main(int argc, char **argv) {
    tc_init(&R, argc, argv);
    TP_RUN(test_lifecycle);
    TP_RUN(test_refusals);
    TP_RUN(test_refused_kind_disarms);
    TP_RUN(test_refused_optional_kind);
    TP_RUN(test_capture);
    TP_RUN(test_fork_child_disarmed);
    TP_RUN(test_kineto_takes_over);
    TP_RUN(test_kineto_refused);
    TP_RUN(test_other_client_first);
    TP_RUN(test_other_client_alone);
    TP_RUN(test_never_injected);
    TP_RUN(test_big_buffer);
    TP_RUN(test_correlation_wrap);
    TP_RUN(test_pool_starved);
    return tp_test_summary();
}
