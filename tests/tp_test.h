/* tp_test: a tiny assert header for trainprof's tests.
 *
 * Each check prints both values and file:line on failure and the test exits 1; a test that
 * cannot run here calls TP_SKIP (exit 77, which ctest reports as skipped). Tests are plain
 * programs: main() calls TP_RUN(test_fn) for each case and returns tp_test_summary(). */
#ifndef TP_TEST_H
#define TP_TEST_H

#include <dirent.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tp_test_failures;
static int tp_test_count;

#define TP_FAIL_(fmt, ...)                                                                         \
    do {                                                                                           \
        fprintf(stderr, "%s:%d: " fmt "\n", __FILE__, __LINE__, __VA_ARGS__);                      \
        tp_test_failures++;                                                                        \
        return;                                                                                    \
    } while (0)

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            TP_FAIL_("CHECK(%s) failed", #cond);                                                   \
    } while (0)

#define CHECK_EQ_U(a, b)                                                                           \
    do {                                                                                           \
        uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                                           \
        if (a_ != b_)                                                                              \
            TP_FAIL_("%s == %s failed: %" PRIu64 " != %" PRIu64, #a, #b, a_, b_);                  \
    } while (0)

#define CHECK_EQ_I(a, b)                                                                           \
    do {                                                                                           \
        int64_t a_ = (int64_t)(a), b_ = (int64_t)(b);                                              \
        if (a_ != b_)                                                                              \
            TP_FAIL_("%s == %s failed: %" PRId64 " != %" PRId64, #a, #b, a_, b_);                  \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                                      \
    do {                                                                                           \
        double a_ = (double)(a), b_ = (double)(b);                                                 \
        if (!(fabs(a_ - b_) <= (double)(tol)))                                                     \
            TP_FAIL_("%s ~= %s failed: %.9g vs %.9g (tol %g)", #a, #b, a_, b_, (double)(tol));     \
    } while (0)

#define CHECK_STR(a, b)                                                                            \
    do {                                                                                           \
        const char *a_ = (a), *b_ = (b);                                                           \
        if (!a_ || !b_ || strcmp(a_, b_) != 0)                                                     \
            TP_FAIL_("%s == %s failed: \"%s\" != \"%s\"", #a, #b, a_ ? a_ : "(null)",              \
                     b_ ? b_ : "(null)");                                                          \
    } while (0)

#define CHECK_OK(expr)                                                                             \
    do {                                                                                           \
        int s_ = (int)(expr);                                                                      \
        if (s_ != 0)                                                                               \
            TP_FAIL_("%s returned status %d", #expr, s_);                                          \
    } while (0)

#define TP_SKIP(why)                                                                               \
    do {                                                                                           \
        printf("SKIP: %s\n", why);                                                                 \
        exit(77);                                                                                  \
    } while (0)

#define TP_RUN(fn)                                                                                 \
    do {                                                                                           \
        int before_ = tp_test_failures;                                                            \
        tp_test_count++;                                                                           \
        fn();                                                                                      \
        printf("%s %s\n", tp_test_failures == before_ ? "ok  " : "FAIL", #fn);                     \
    } while (0)

/* Reads the whole file at `path` into a NUL-terminated malloc'ed buffer the caller frees;
 * NULL when it cannot be opened or read. */
static inline char *tp_test_read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (buf)
        buf[n] = 0;
    fclose(f);
    return buf;
}

/* A growing text, for tests that write their input (a crafted trace): tp_test_put appends
 * printf-style, the buffer doubling (a realloc per piece made a TSan run 10x slower). Start
 * from {NULL, 0, 0}; free .p. */
typedef struct {
    char *p;
    size_t len, cap;
} tp_test_text;

static inline void tp_test_put(tp_test_text *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static inline void tp_test_put(tp_test_text *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        abort();
    if (t->len + (size_t)n + 1 > t->cap) {
        t->cap = 2 * (t->len + (size_t)n + 1);
        t->p = realloc(t->p, t->cap);
        if (!t->p)
            abort();
    }
    va_start(ap, fmt);
    vsnprintf(t->p + t->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

/* The peer traces (../shared/peer_traces, passed as $TP_PEER_TRACES): traces/<set>/ holds one
 * trace set each, expected/<set>.json the answers of HTA for those that have them. Tests
 * over them must not pass on none, so the counts are part of the contract. */
#define TP_PEER_SETS 30
#define TP_PEER_HTA_SETS 18

/* Entries of folder `dir` (not starting with '.') whose names end with `suffix` ("" for
 * all); -1 when the folder cannot be opened. */
static inline long tp_test_count_dir(const char *dir, const char *suffix) {
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    long n = 0;
    size_t k = strlen(suffix);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t len = strlen(e->d_name);
        n += e->d_name[0] != '.' && len > k && strcmp(e->d_name + len - k, suffix) == 0;
    }
    closedir(d);
    return n;
}

/* The peer-trace root, checked: when it is missing the test is skipped (exit 77), except
 * under CI=true, where it must be there and its absence fails (exit 1); when it holds
 * another number of sets than TP_PEER_SETS / TP_PEER_HTA_SETS it fails everywhere. */
static inline const char *tp_test_peer_root(void) {
    const char *root = getenv("TP_PEER_TRACES");
    const char *ci = getenv("CI");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/traces", root ? root : "");
    long sets = root && *root ? tp_test_count_dir(dir, "") : -1;
    if (sets < 0) {
        if (ci && !strcmp(ci, "true")) {
            fprintf(stderr, "FAIL: peer traces missing (TP_PEER_TRACES=%s) and CI=true\n",
                    root ? root : "(unset)");
            exit(1);
        }
        TP_SKIP("peer traces not found (TP_PEER_TRACES; ../shared/peer_traces)");
    }
    snprintf(dir, sizeof dir, "%s/expected", root);
    long answers = tp_test_count_dir(dir, ".json");
    if (sets != TP_PEER_SETS || answers != TP_PEER_HTA_SETS) {
        fprintf(stderr,
                "FAIL: %s holds %ld trace sets and %ld with HTA answers, expected %d and %d\n",
                root, sets, answers, TP_PEER_SETS, TP_PEER_HTA_SETS);
        exit(1);
    }
    return root;
}

static inline int tp_test_summary(void) {
    printf("%d tests, %d failed\n", tp_test_count, tp_test_failures);
    return tp_test_failures ? 1 : 0;
}

#endif
