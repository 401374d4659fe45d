/* test_collector_intern: the collector's per-thread string cache (tp_collector_intern),
 * in-process. A hit needs the same pointer and the same bytes: a buffer reused for other text
 * (as Python does) must get that text's id, for every length the cache keeps, whichever byte
 * differs. The inline word compare must never read past the string when the cached text was
 * longer: a shorter string now at the same address, ending just before an unmapped page, is
 * compared without touching that page (the test dies with SIGSEGV otherwise). */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tp_collector.h"
#include "tp_test.h"

static char g_path[256];

static tp_tstate *g_t;

static void start(void) {
    tp_collector_config cfg;
    tp_collector_config_load(&cfg, NULL);
    snprintf(g_path, sizeof g_path, "/tmp/tp-intern-%d.tprof", (int)getpid());
    snprintf(cfg.output, sizeof cfg.output, "%s", g_path);
    cfg.target_pid = getpid();
    CHECK_OK(tp_collector_start(&cfg));
    g_t = tp_collector_thread();
    CHECK(g_t != NULL);
}

/* The id the writer gives these bytes (what a correct cache must return). */
static uint32_t truth(const char *s) {
    return tp_collector_intern_n(s, strlen(s));
}

/* One buffer, every length up to the cache's inline limit, the text changed in its first,
 * middle or last byte between calls. */
static void test_reused_buffer(void) {
    tp_tstate *t = g_t;
    static char buf[64];
    for (size_t n = 0; n < TP_STR_INLINE; n++) {
        memset(buf, 'x', n);
        buf[n] = 0;
        uint32_t same = tp_collector_intern(t, buf);
        CHECK_EQ_U(same, truth(buf));
        CHECK_EQ_U(tp_collector_intern(t, buf), same); /* a hit */
        for (size_t at = 0; n && at < n; at += (n > 2 ? n / 2 : 1)) {
            buf[at] = 'y';
            CHECK_EQ_U(tp_collector_intern(t, buf), truth(buf));
            buf[at] = 'x';
            CHECK_EQ_U(tp_collector_intern(t, buf), same);
        }
        if (n) {
            buf[n - 1] = 'z';
            CHECK_EQ_U(tp_collector_intern(t, buf), truth(buf));
            buf[n - 1] = 'x';
        }
        buf[n] = 'w', buf[n + 1] = 0; /* longer by one at the same address */
        CHECK_EQ_U(tp_collector_intern(t, buf), truth(buf));
        buf[n] = 0;
        CHECK_EQ_U(tp_collector_intern(t, buf), same);
    }
}

static void test_page_end(void) {
    tp_tstate *t = g_t;
    long page = sysconf(_SC_PAGESIZE);
    char *base =
        mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(base != MAP_FAILED);
    char *p = base + page - 5; /* "abcdefghij" runs into the second page */
    strcpy(p, "abcdefghij");
    uint32_t long_id = tp_collector_intern(t, p);
    CHECK_EQ_U(long_id, truth("abcdefghij"));
    CHECK(mprotect(base + page, (size_t)page, PROT_NONE) == 0);
    strcpy(p, "abc"); /* now ends inside the first page */
    uint32_t short_id = tp_collector_intern(t, p);
    CHECK(short_id != long_id);
    CHECK_EQ_U(short_id, truth("abc"));
    CHECK_EQ_U(tp_collector_intern(t, p), short_id);
    munmap(base, (size_t)page * 2);
}

int main(void) {
    TP_RUN(start);
    if (g_t) {
        TP_RUN(test_reused_buffer);
        TP_RUN(test_page_end);
    }
    tp_collector_finish();
    unlink(g_path);
    return tp_test_summary();
}
