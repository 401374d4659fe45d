/* tp_par: two independent pieces of work at once (see the header). */
#include "tp_par.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

int tp_par_cpus(void) {
    cpu_set_t set;
    /* the process's own CPUs (taskset, a container's cpuset): a second thread on a machine
     * of many cores of which this process may use one only takes turns with the first */
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN); /* more CPUs than a cpu_set_t holds */
    return n > 0 ? (int)n : 1;
}

int tp_par_two_threads(void) {
    const char *e = getenv("TP_ANALYSIS_THREADS");
    return !(e && *e && atoi(e) == 1) && tp_par_cpus() >= 2;
}

size_t tp_par_min_rows(void) {
    const char *e = getenv("TP_PAR_MIN_ROWS");
    return e && *e ? (size_t)strtoull(e, NULL, 10) : TP_PAR_MIN_ROWS;
}

typedef struct {
    void (*fn)(void *);
    void *arg;
} piece;

static void *piece_main(void *p) {
    piece *w = p;
    w->fn(w->arg);
    return NULL;
}

void tp_par_both(size_t rows, void (*a)(void *), void *a_arg, void (*b)(void *), void *b_arg) {
    piece second = {b, b_arg};
    pthread_t th;
    if (rows >= tp_par_min_rows() && tp_par_two_threads() &&
        pthread_create(&th, NULL, piece_main, &second) == 0) {
        a(a_arg);
        pthread_join(th, NULL);
        return;
    }
    a(a_arg);
    b(b_arg);
}
