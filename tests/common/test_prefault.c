/* Tests of tp_prefault: faulting columns in ahead changes none of their contents, whether it
 * runs alongside the writer, is given a column while it runs or is stopped early; it does not start
 * for little work, for too many columns or with TP_ANALYSIS_THREADS=1; stopping NULL is a no-op.
 * Never depends on timing (whether the thread got ahead is not checked, only that nothing changed).
 */
#include "tp_prefault.h"

#include <stdint.h>
#include <stdlib.h>

#include "tp_test.h"

#define ROWS ((size_t)1 << 20)

static void test_contents_kept(void) {
    unsetenv("TP_ANALYSIS_THREADS");
    uint64_t *a = malloc(ROWS * sizeof *a);
    uint8_t *b = malloc(ROWS / 2);
    CHECK(a && b);
    for (size_t i = 0; i < ROWS / 4; i++) /* some rows written before it starts */
        a[i] = i * 3;
    tp_prefault_col cols[] = {{a, sizeof *a, ROWS}, {b, 1, ROWS / 2}};
    tp_prefault *f = tp_prefault_start(cols, 2);
    for (size_t i = ROWS / 4; i < ROWS; i++) /* the rest while it runs (if it started) */
        a[i] = i * 3;
    for (size_t i = 0; i < ROWS / 2; i++)
        b[i] = (uint8_t)i;
    tp_prefault_stop(f);
    size_t bad = 0;
    for (size_t i = 0; i < ROWS; i++)
        bad += a[i] != i * 3;
    for (size_t i = 0; i < ROWS / 2; i++)
        bad += b[i] != (uint8_t)i;
    CHECK_EQ_U(bad, 0);
    f = tp_prefault_start(cols, 2); /* stopped at once */
    tp_prefault_stop(f);
    CHECK_EQ_U(a[ROWS - 1], (ROWS - 1) * 3);
    free(a), free(b);
}

/* A column added while it runs (from a row on, as an optional column appears at its first
 * value) keeps its contents too; adding to NULL or past the limit says no. */
static void test_added_column(void) {
    unsetenv("TP_ANALYSIS_THREADS");
    uint64_t *a = malloc(ROWS * sizeof *a);
    uint32_t *late = malloc(ROWS * sizeof *late);
    CHECK(a && late);
    tp_prefault_col col = {a, sizeof *a, ROWS};
    tp_prefault *f = tp_prefault_start(&col, 1);
    for (size_t i = 0; i < ROWS; i++) {
        a[i] = i * 5;
        if (i == ROWS / 3) { /* the rows before it written at its creation */
            for (size_t j = 0; j < i; j++)
                late[j] = (uint32_t)j;
            tp_prefault_col l = {late, sizeof *late, ROWS};
            CHECK_EQ_U(tp_prefault_add(f, &l, i), f != NULL);
        }
        if (i >= ROWS / 3)
            late[i] = (uint32_t)i;
    }
    size_t k = 1;
    while (k < TP_PREFAULT_MAX_COLS && tp_prefault_add(f, &col, ROWS)) /* nothing left to do */
        k++;
    CHECK(!tp_prefault_add(f, &col, ROWS));
    tp_prefault_stop(f);
    size_t bad = 0;
    for (size_t i = 0; i < ROWS; i++)
        bad += a[i] != i * 5 || late[i] != (uint32_t)i;
    CHECK_EQ_U(bad, 0);
    CHECK(!tp_prefault_add(NULL, &col, 0));
    free(a), free(late);
}

static void test_not_started(void) {
    static uint64_t small[1024];
    tp_prefault_col one = {small, sizeof *small, 1024};
    CHECK(tp_prefault_start(&one, 1) == NULL); /* little work */
    tp_prefault_col many[TP_PREFAULT_MAX_COLS + 1];
    for (size_t i = 0; i <= TP_PREFAULT_MAX_COLS; i++)
        many[i] = (tp_prefault_col){NULL, 8, ROWS};
    CHECK(tp_prefault_start(many, TP_PREFAULT_MAX_COLS + 1) == NULL);
    uint64_t *a = malloc(ROWS * sizeof *a);
    tp_prefault_col big = {a, sizeof *a, ROWS};
    setenv("TP_ANALYSIS_THREADS", "1", 1);
    CHECK(tp_prefault_start(&big, 1) == NULL);
    unsetenv("TP_ANALYSIS_THREADS");
    free(a);
    tp_prefault_stop(NULL);
}

int main(void) {
    TP_RUN(test_contents_kept);
    TP_RUN(test_added_column);
    TP_RUN(test_not_started);
    return tp_test_summary();
}
