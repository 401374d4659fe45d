/* test_alloc: the caching allocator's bookkeeping and the exact NVTX memory calls it makes.
 *
 * argv[1] is the recording tool library (tp_test_recorder); it is installed as the NVTX
 * injection library and as the activity collector before the first NVTX call, then its
 * log is read back through dlsym. Segments come from aligned_alloc, so addresses are real
 * and distinct. */
#include "tp_alloc.h"
#include "tp_test.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>

#define MiB (1024u * 1024u)

static const char *(*rec_log)(void);
static void (*rec_clear)(void);
static int seg_allocs, seg_frees, seg_refuse;

static tp_status seg_alloc(void *ctx, size_t bytes, void **out) {
    if (seg_refuse)
        return TP_ERR_NOMEM;
    *out = aligned_alloc(4096, bytes);
    seg_allocs += *out != NULL;
    return *out ? TP_OK : TP_ERR_NOMEM;
}

static void seg_free(void *ctx, void *p, size_t bytes) {
    seg_frees++;
    free(p);
}

static tp_alloc *open_alloc(uint64_t limit) {
    tp_alloc_opts o = {seg_alloc, seg_free, NULL, limit, 0, "test.alloc", 1};
    tp_alloc *a = NULL;
    if (tp_alloc_open(&o, &a) != TP_OK)
        return NULL;
    return a;
}

/* 1 when the recorder's log contains the formatted line. */
static int logged(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int logged(const char *fmt, ...) {
    char want[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(want, sizeof want, fmt, ap);
    va_end(ap);
    char *log = (char *)rec_log();
    int found = strstr(log, want) != NULL;
    if (!found)
        fprintf(stderr, "not in NVTX log: \"%s\"\nlog:\n%s", want, log);
    free(log);
    return found;
}

static int count_lines(const char *prefix) {
    char *log = (char *)rec_log();
    int n = 0;
    for (char *p = log; (p = strstr(p, prefix)); p++)
        n++;
    free(log);
    return n;
}

static void test_rounding(void) {
    CHECK_EQ_U(tp_alloc_round(0), 512);
    CHECK_EQ_U(tp_alloc_round(1), 512);
    CHECK_EQ_U(tp_alloc_round(512), 512);
    CHECK_EQ_U(tp_alloc_round(513), 1024);
    CHECK_EQ_U(tp_alloc_round(SIZE_MAX), 0);
    CHECK_EQ_U(tp_alloc_segment_size(512), 2 * MiB);
    CHECK_EQ_U(tp_alloc_segment_size(1 * MiB), 2 * MiB);
    CHECK_EQ_U(tp_alloc_segment_size(1 * MiB + 512), 20 * MiB);
    CHECK_EQ_U(tp_alloc_segment_size(10 * MiB), 10 * MiB);
    CHECK_EQ_U(tp_alloc_segment_size(11 * MiB), 12 * MiB);
}

static void test_split_merge_reuse(void) {
    tp_alloc *a = open_alloc(0);
    void *p1, *p2, *p3, *p4;
    int segs0 = seg_allocs;
    CHECK_OK(tp_alloc_malloc(a, 1000, &p1));
    CHECK_OK(tp_alloc_malloc(a, 2000, &p2));
    CHECK_EQ_I(seg_allocs - segs0, 1);         /* both from one 2 MiB segment */
    CHECK_EQ_U((char *)p2 - (char *)p1, 1024); /* split: p2 follows p1's 1024 bytes */
    CHECK_EQ_U(tp_alloc_block_size(a, p2), 2048);
    tp_alloc_free(a, p1);
    CHECK_OK(tp_alloc_malloc(a, 700, &p3)); /* best fit: p1's hole, not the tail */
    CHECK(p3 == p1);
    CHECK_OK(tp_alloc_malloc(a, 3 * MiB, &p4)); /* large pool: its own 20 MiB segment */
    CHECK_EQ_I(seg_allocs - segs0, 2);
    tp_alloc_stats st;
    tp_alloc_get_stats(a, &st);
    CHECK_EQ_U(st.reserved, 22 * MiB);
    CHECK_EQ_U(st.allocated, 1024 + 2048 + 3 * MiB);
    CHECK_EQ_U(st.cache_hits, 2);
    tp_alloc_free(a, p2);
    tp_alloc_free(a, p3);
    tp_alloc_free(a, p4);
    tp_alloc_get_stats(a, &st);
    CHECK_EQ_U(st.allocated, 0);
    CHECK_EQ_U(st.free_cached, 22 * MiB); /* everything merged back */
    CHECK_EQ_U(st.largest_free, 20 * MiB);
    CHECK_EQ_U(st.peak_allocated, 1024 + 2048 + 3 * MiB);
    int frees0 = seg_frees;
    tp_alloc_empty_cache(a);
    tp_alloc_get_stats(a, &st);
    CHECK_EQ_U(st.reserved, 0);
    CHECK_EQ_I(seg_frees - frees0, 2);
    tp_alloc_free(a, (void *)0x1234); /* unknown pointer: ignored */
    tp_alloc_close(a);
}

static void test_limit(void) {
    tp_alloc *a = open_alloc(4 * MiB);
    void *p;
    CHECK_OK(tp_alloc_malloc(a, 1 * MiB, &p)); /* small pool, 2 MiB segment fits */
    tp_alloc_free(a, p);
    CHECK_EQ_I(tp_alloc_malloc(a, 1536 * 1024, &p), TP_ERR_NOMEM); /* 20 MiB segment > limit */
    CHECK(p == NULL);
    tp_alloc_failure f;
    CHECK(tp_alloc_last_failure(a, &f));
    CHECK_EQ_U(f.requested, 1536 * 1024);
    CHECK_EQ_U(f.limit, 4 * MiB);
    CHECK_EQ_U(f.reserved, 0); /* the free 2 MiB segment was released before giving up */
    CHECK(strstr(f.message, "tried to allocate 1.50 MiB") != NULL);
    CHECK(strstr(f.message, "fragmentation") == NULL);
    CHECK(strstr(f.message, "no room") == NULL); /* the limit refused, not the device */
    tp_alloc_close(a);
}

/* Holes between live blocks add up to more than the request, but none fits it. */
static void test_fragmentation_failure(void) {
    tp_alloc *a = open_alloc(40 * MiB);
    void *p[6], *q;
    for (int i = 0; i < 6; i++)
        CHECK_OK(tp_alloc_malloc(a, 6 * MiB, &p[i])); /* two 20 MiB segments, 3 blocks each */
    tp_alloc_free(a, p[1]);
    tp_alloc_free(a, p[4]);
    rec_clear();
    CHECK_EQ_I(tp_alloc_malloc(a, 8 * MiB, &q), TP_ERR_NOMEM);
    tp_alloc_failure f;
    CHECK(tp_alloc_last_failure(a, &f));
    CHECK_EQ_U(f.requested, 8 * MiB);
    CHECK_EQ_U(f.reserved, 40 * MiB);
    CHECK_EQ_U(f.free_cached, 16 * MiB); /* two 6 MiB holes + two 2 MiB tails */
    CHECK_EQ_U(f.largest_free, 6 * MiB);
    CHECK(strstr(f.message, "fragmentation") != NULL);
    CHECK(logged("act_alloc_fail requested=%u reserved=%u free=%u largest=%u", 8 * MiB, 40 * MiB,
                 16 * MiB, 6 * MiB));
    tp_alloc_stats st;
    tp_alloc_get_stats(a, &st);
    CHECK_EQ_U(st.failures, 1);
    tp_alloc_close(a);
}

static void test_device_refusal_retries_after_release(void) {
    tp_alloc *a = open_alloc(0);
    void *p;
    CHECK_OK(tp_alloc_malloc(a, 4096, &p));
    tp_alloc_free(a, p);
    seg_refuse = 1; /* the device refuses every new segment */
    CHECK_EQ_I(tp_alloc_malloc(a, 4 * MiB, &p), TP_ERR_NOMEM);
    seg_refuse = 0;
    tp_alloc_stats st;
    tp_alloc_get_stats(a, &st);
    CHECK_EQ_U(st.reserved, 0); /* the cached segment was given back before failing */
    tp_alloc_failure f;
    CHECK(tp_alloc_last_failure(a, &f));
    CHECK(strstr(f.message, "the device has no room for a new 20.00 MiB segment") != NULL);
    tp_alloc_close(a);
}

static void test_resize(void) {
    tp_alloc *a = open_alloc(0);
    void *p, *q;
    CHECK_OK(tp_alloc_malloc(a, 4096, &p));
    CHECK_OK(tp_alloc_resize(a, p, 10000)); /* grows into the free tail */
    CHECK_EQ_U(tp_alloc_block_size(a, p), 10240);
    CHECK_OK(tp_alloc_malloc(a, 512, &q));
    CHECK(q == (char *)p + 10240);
    CHECK_EQ_I(tp_alloc_resize(a, p, 20000), TP_ERR_FULL); /* q is in the way */
    CHECK_OK(tp_alloc_resize(a, p, 1000));                 /* shrink: tail becomes free */
    CHECK_EQ_U(tp_alloc_block_size(a, p), 1024);
    void *r;
    CHECK_OK(tp_alloc_malloc(a, 9000, &r)); /* best fit takes the freed 9216-byte hole */
    CHECK(r == (char *)p + 1024);
    CHECK_EQ_I(tp_alloc_resize(a, (void *)0x10, 5), TP_ERR_NOT_FOUND);
    tp_alloc_stats st;
    tp_alloc_get_stats(a, &st);
    CHECK_EQ_U(st.allocated, 1024 + 512 + 9216);
    tp_alloc_close(a);
}

/* The exact calls for one segment's life: register heap, register/resize/unregister a
 * region, then unregister the heap on release (reset first only when blocks are live). */
static void test_nvtx_calls(void) {
    rec_clear();
    tp_alloc *a = open_alloc(0);
    void *p, *q;
    CHECK_OK(tp_alloc_malloc(a, 1000, &p));
    /* usage 1 = SUB_ALLOCATOR, type 1 = VIRTUAL_ADDRESS */
    CHECK(logged("heap_register test.alloc usage=1 type=1 ptr=%p size=%u", p, 2 * MiB));
    CHECK(logged("region_register test.alloc heap=%p ptr=%p size=1024", p, p));
    CHECK(logged("act_device_mem alloc addr=%p bytes=%u", p, 2 * MiB));
    CHECK_OK(tp_alloc_resize(a, p, 3000));
    CHECK(logged("region_resize test.alloc ptr=%p size=3072", p));
    tp_alloc_free(a, p);
    CHECK(logged("region_unregister test.alloc ptr=%p", p));
    tp_alloc_empty_cache(a);
    CHECK(logged("heap_unregister test.alloc heap=%p", p));
    CHECK(logged("act_device_mem free addr=%p bytes=%u", p, 2 * MiB));
    CHECK_EQ_I(count_lines("heap_reset"), 0);
    CHECK_EQ_I(count_lines("region_register"), 1);
    CHECK_EQ_I(count_lines("region_unregister"), 1);
    CHECK_OK(tp_alloc_malloc(a, 5000, &q)); /* a live block at close: reset, then unregister */
    rec_clear();
    tp_alloc_close(a);
    CHECK(logged("heap_reset test.alloc heap=%p", q));
    CHECK(logged("heap_unregister test.alloc heap=%p", q));
    CHECK_EQ_I(count_lines("heap_"), 2);
}

int main(int argc, char **argv) {
    if (argc < 2)
        TP_SKIP("usage: test_alloc RECORDER.so");
    /* Before the first NVTX or activity call: both read these lazily. */
    setenv("NVTX_INJECTION64_PATH", argv[1], 1);
    setenv("TRAINPROF_COLLECTOR", argv[1], 1);
    void *h = dlopen(argv[1], RTLD_NOW);
    if (!h) {
        fprintf(stderr, "cannot load %s: %s\n", argv[1], dlerror());
        return 1;
    }
    rec_log = (const char *(*)(void))dlsym(h, "tp_rec_log");
    rec_clear = (void (*)(void))dlsym(h, "tp_rec_clear");
    if (!rec_log || !rec_clear)
        return 1;
    TP_RUN(test_rounding);
    TP_RUN(test_split_merge_reuse);
    TP_RUN(test_limit);
    TP_RUN(test_fragmentation_failure);
    TP_RUN(test_device_refusal_retries_after_release);
    TP_RUN(test_resize);
    TP_RUN(test_nvtx_calls);
    return tp_test_summary();
}
