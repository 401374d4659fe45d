/* Tests of tp_mem: n * size overflow is refused (and leaves the caller's memory alone),
 * growth keeps contents and follows the one capacity rule, and the aborting variants abort
 * with a message, checked in a real child process. */
#include "tp_mem.h"

#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tp_test.h"

static void test_mul(void) {
    size_t b = 7;
    CHECK(tp_mem_mul(3, 5, &b));
    CHECK_EQ_U(b, 15);
    CHECK(tp_mem_mul(SIZE_MAX, 1, &b));
    CHECK_EQ_U(b, SIZE_MAX);
    CHECK(tp_mem_mul(SIZE_MAX, 0, &b));
    CHECK_EQ_U(b, 0);
    b = 7;
    CHECK(!tp_mem_mul(SIZE_MAX / 2 + 1, 2, &b));
    CHECK(!tp_mem_mul((size_t)1 << 40, (size_t)1 << 40, &b));
    CHECK_EQ_U(b, 7); /* untouched on overflow */
}

/* Requests whose byte count wraps around are refused before they reach malloc. */
static void test_overflow_refused(void) {
    CHECK(tp_mem_alloc(SIZE_MAX / 8 + 1, 8) == NULL);
    CHECK(tp_mem_calloc(SIZE_MAX / 3 + 1, 3) == NULL);
    uint32_t *p = tp_mem_alloc(4, sizeof *p);
    CHECK(p != NULL);
    for (uint32_t i = 0; i < 4; i++)
        p[i] = 100 + i;
    CHECK(tp_mem_realloc(p, SIZE_MAX / 4 + 1, sizeof *p) == NULL);
    CHECK_EQ_U(p[3], 103); /* still the caller's, contents intact */
    size_t cap = 4;
    uint32_t *q = p;
    CHECK(!tp_mem_grow((void **)&q, &cap, SIZE_MAX / 2, sizeof *q));
    CHECK(q == p);
    CHECK_EQ_U(cap, 4);
    CHECK_EQ_U(q[0], 100);
    free(p);
}

static void test_zero_size(void) {
    void *a = tp_mem_alloc(0, 8), *b = tp_mem_calloc(8, 0), *c = tp_mem_realloc(NULL, 0, 0);
    CHECK(a != NULL && b != NULL && c != NULL); /* NULL only ever means failure */
    free(a), free(b), free(c);
}

static void test_calloc_zeroes(void) {
    uint64_t *z = tp_mem_calloc(1000, sizeof *z);
    CHECK(z != NULL);
    uint64_t sum = 0;
    for (size_t i = 0; i < 1000; i++)
        sum |= z[i];
    CHECK_EQ_U(sum, 0);
    free(z);
}

static void test_next_cap(void) {
    CHECK_EQ_U(tp_mem_next_cap(0, 1), 16);
    CHECK_EQ_U(tp_mem_next_cap(0, 16), 16);
    CHECK_EQ_U(tp_mem_next_cap(0, 17), 32);
    CHECK_EQ_U(tp_mem_next_cap(16, 17), 32);
    CHECK_EQ_U(tp_mem_next_cap(100, 50), 100);  /* already enough */
    CHECK_EQ_U(tp_mem_next_cap(3, 1000), 1536); /* doubles from what is there */
    size_t half = SIZE_MAX / 2 + 1;
    CHECK_EQ_U(tp_mem_next_cap(half, half + 5), half + 5); /* no wrap: exactly need */
}

/* 100k appends through tp_mem_grow: every value written is read back after all the moves. */
static void test_grow_keeps_contents(void) {
    uint64_t *v = NULL;
    size_t cap = 0, grows = 0;
    for (uint64_t i = 0; i < 100000; i++) {
        size_t before = cap;
        CHECK(TP_MEM_GROW(v, cap, i + 1));
        grows += cap != before;
        CHECK(cap >= i + 1);
        v[i] = i * 2654435761u;
    }
    for (uint64_t i = 0; i < 100000; i++)
        if (v[i] != i * 2654435761u) {
            CHECK_EQ_U(v[i], i * 2654435761u);
            break;
        }
    CHECK_EQ_U(cap, 131072); /* 16 doubled 13 times */
    CHECK_EQ_U(grows, 14);
    free(v);
    char *s = NULL;
    size_t scap = 0;
    tp_mem_xgrow((void **)&s, &scap, 3, 1);
    memcpy(s, "ab", 3);
    tp_mem_xgrow((void **)&s, &scap, 5000, 1);
    CHECK_STR(s, "ab");
    CHECK_EQ_U(scap, 8192);
    s = tp_mem_xrealloc(s, 3, 1);
    CHECK_STR(s, "ab");
    free(s);
}

/* Runs `fn` in a child with stderr on a pipe; returns the signal that ended it (0: exited)
 * and what it printed in `out`. */
static int run_child(void (*fn)(void), char *out, size_t n) {
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 2);
        close(fd[0]);
        fn();
        _exit(0);
    }
    close(fd[1]);
    ssize_t got = read(fd[0], out, n - 1);
    out[got > 0 ? got : 0] = 0;
    close(fd[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFSIGNALED(st) ? WTERMSIG(st) : 0;
}

static void xalloc_overflow(void) {
    free(tp_mem_xalloc(SIZE_MAX / 16 + 1, 16));
}

static void xgrow_overflow(void) {
    char *p = NULL;
    size_t cap = 0;
    tp_mem_xgrow((void **)&p, &cap, SIZE_MAX / 2, 4);
}

static void test_x_variants_abort(void) {
    char msg[256];
    CHECK_EQ_I(run_child(xalloc_overflow, msg, sizeof msg), SIGABRT);
    CHECK(strstr(msg, "trainprof: out of memory") != NULL);
    CHECK_EQ_I(run_child(xgrow_overflow, msg, sizeof msg), SIGABRT);
    CHECK(strstr(msg, "out of memory") != NULL);
}

int main(void) {
    TP_RUN(test_mul);
    TP_RUN(test_overflow_refused);
    TP_RUN(test_zero_size);
    TP_RUN(test_calloc_zeroes);
    TP_RUN(test_next_cap);
    TP_RUN(test_grow_keeps_contents);
    TP_RUN(test_x_variants_abort);
    return tp_test_summary();
}
