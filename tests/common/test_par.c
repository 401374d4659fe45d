/* Tests of tp_par: both pieces run, each once, with its own argument, whether on two threads
 * or (TP_ANALYSIS_THREADS=1, or little work) one after the other on the caller's, and then in
 * order; the switch reads 1 only as "one thread". Never depends on timing or on the machine's
 * cores. */
#include "tp_par.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "tp_test.h"

typedef struct {
    int runs;
    int order; /* the value of *clock when it ran */
    atomic_int *clock;
    pthread_t self;
} piece_state;

static void piece(void *arg) {
    piece_state *p = arg;
    p->runs++;
    p->order = atomic_fetch_add(p->clock, 1);
    p->self = pthread_self();
}

static void test_both_run(void) {
    unsetenv("TP_ANALYSIS_THREADS");
    atomic_int clock = 0; /* taken by both */
    piece_state a = {0, -1, &clock, 0}, b = {0, -1, &clock, 0};
    tp_par_both(TP_PAR_MIN_ROWS, piece, &a, piece, &b);
    CHECK_EQ_U(a.runs, 1);
    CHECK_EQ_U(b.runs, 1);
    CHECK(pthread_equal(a.self, pthread_self()));
    if (!tp_par_two_threads()) /* one core: in order on this thread */
        CHECK(a.order == 0 && b.order == 1);
}

static void test_small_work_one_thread(void) {
    unsetenv("TP_ANALYSIS_THREADS");
    unsetenv("TP_PAR_MIN_ROWS");
    atomic_int clock = 0;
    piece_state a = {0, -1, &clock, 0}, b = {0, -1, &clock, 0};
    tp_par_both(TP_PAR_MIN_ROWS - 1, piece, &a, piece, &b);
    CHECK(a.runs == 1 && b.runs == 1);
    CHECK(a.order == 0 && b.order == 1);
    CHECK(pthread_equal(a.self, pthread_self()) && pthread_equal(b.self, pthread_self()));
}

static void test_min_rows_from_env(void) {
    unsetenv("TP_PAR_MIN_ROWS");
    CHECK_EQ_U(tp_par_min_rows(), TP_PAR_MIN_ROWS);
    setenv("TP_PAR_MIN_ROWS", "1", 1);
    CHECK_EQ_U(tp_par_min_rows(), 1);
    atomic_int clock = 0;
    piece_state a = {0, -1, &clock, 0}, b = {0, -1, &clock, 0};
    tp_par_both(1, piece, &a, piece, &b); /* one row: may run on two threads now */
    CHECK(a.runs == 1 && b.runs == 1);
    unsetenv("TP_PAR_MIN_ROWS");
}

static void test_one_thread_switch(void) {
    setenv("TP_ANALYSIS_THREADS", "1", 1);
    CHECK(!tp_par_two_threads());
    atomic_int clock = 0;
    piece_state a = {0, -1, &clock, 0}, b = {0, -1, &clock, 0};
    tp_par_both(TP_PAR_MIN_ROWS, piece, &a, piece, &b);
    CHECK(a.runs == 1 && b.runs == 1);
    CHECK(a.order == 0 && b.order == 1);
    CHECK(pthread_equal(a.self, pthread_self()) && pthread_equal(b.self, pthread_self()));
    setenv("TP_ANALYSIS_THREADS", "2", 1); /* not 1: the cores decide */
    int two = tp_par_two_threads();
    unsetenv("TP_ANALYSIS_THREADS");
    CHECK_EQ_U(two, tp_par_two_threads());
}

/* The process's affinity mask, not the cores online, says how many CPUs it has: pinned to
 * one (as taskset -c 0 would), one thread. */
static void test_affinity_one_cpu(void) {
    unsetenv("TP_ANALYSIS_THREADS");
    cpu_set_t all, one;
    CHECK(sched_getaffinity(0, sizeof all, &all) == 0);
    CHECK_EQ_U(tp_par_cpus(), CPU_COUNT(&all));
    int first = 0;
    while (first < CPU_SETSIZE && !CPU_ISSET(first, &all))
        first++;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0)
        return; /* not allowed here: nothing to check */
    CHECK_EQ_U(tp_par_cpus(), 1);
    CHECK(!tp_par_two_threads());
    atomic_int clock = 0;
    piece_state a = {0, -1, &clock, 0}, b = {0, -1, &clock, 0};
    tp_par_both(TP_PAR_MIN_ROWS, piece, &a, piece, &b);
    CHECK(a.order == 0 && b.order == 1);
    CHECK(pthread_equal(b.self, pthread_self()));
    CHECK(sched_setaffinity(0, sizeof all, &all) == 0);
}

int main(void) {
    TP_RUN(test_both_run);
    TP_RUN(test_small_work_one_thread);
    TP_RUN(test_min_rows_from_env);
    TP_RUN(test_one_thread_switch);
    TP_RUN(test_affinity_one_cpu);
    return tp_test_summary();
}
