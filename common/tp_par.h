/* tp_par: two independent pieces of work on the two cores of a small machine.
 *
 * The report's serial phases (the model's finish, the analyses' view) are each a few
 * independent passes over the whole table: on a 2-core machine one core idled while the
 * other ran them one after the other. tp_par_both runs two such pieces at once, each on its
 * own thread, and returns when both are done; the caller makes sure they write disjoint
 * memory (a shared tp_scratch is fine: its mutex guards it). Results never depend on whether
 * they ran at once.
 *
 * One CPU for this process (its affinity), or TP_ANALYSIS_THREADS=1 in the environment (the
 * analyses' switch too, tp_rank_analysis), and the pieces run one after the other on the calling
 * thread, as they do when a thread cannot be created. */
#ifndef TP_PAR_H
#define TP_PAR_H

#include <stddef.h>

/* Tables of fewer rows keep to one thread: their pieces take a few ms, and a second thread's
 * malloc arena and the blocks alive at once in both raised the peer sets' peak RSS (up to
 * 0.6 MiB of ~27 on the largest, ~200 k rows). 512 Ki, not 1 Mi: the 2,000-step launch-bound
 * recording (~0.63 M rows) ran its model finish and view build on one thread, 74 M
 * instructions more on the main thread's path (578.9 -> 504.6 M, callgrind
 * --separate-threads=yes --fair-sched=yes) for pieces of ~5-30 ms each. */
#define TP_PAR_MIN_ROWS ((size_t)1 << 19)

/* The CPUs this process may run on (its affinity mask: taskset, a cpuset), at least 1; the
 * cores online when the mask cannot be read. */
int tp_par_cpus(void);

/* 1 when work may go to a second thread: two CPUs or more for this process (tp_par_cpus) and
 * TP_ANALYSIS_THREADS is not 1. */
int tp_par_two_threads(void);

/* TP_PAR_MIN_ROWS, or the environment's TP_PAR_MIN_ROWS when set (a number: tests set 1 so
 * that small tables take the two-thread paths too, under TSan). */
size_t tp_par_min_rows(void);

/* Runs a(a_arg) on the calling thread and b(b_arg) on a second one, and returns when both
 * have, for work over a table of `rows` rows; or a then b on this thread when `rows` is under
 * tp_par_min_rows() (see the header's comment). */
void tp_par_both(size_t rows, void (*a)(void *), void *a_arg, void (*b)(void *), void *b_arg);

#endif
