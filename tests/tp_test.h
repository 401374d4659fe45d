/* tp_test: a tiny assert header for trainprof's tests.
 *
 * Each check prints both values and file:line on failure and the test exits 1; a test that
 * cannot run here calls TP_SKIP (exit 77, which ctest reports as skipped). Tests are plain
 * programs: main() calls TP_RUN(test_fn) for each case and returns tp_test_summary(). */
#ifndef TP_TEST_H
#define TP_TEST_H

#include <inttypes.h>
#include <math.h>
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

static inline int tp_test_summary(void) {
    printf("%d tests, %d failed\n", tp_test_count, tp_test_failures);
    return tp_test_failures ? 1 : 0;
}

#endif
