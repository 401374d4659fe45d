/* tp_prefault: a thread that maps in the pages of arrays the calling thread is about to fill.
 *
 * Loading a 10 M-record trace writes ~250 MB of fresh columns row by row: a page fault every
 * 4 KiB (~70 k), each with the kernel's zeroing and accounting, all on the loading thread
 * while the second core is mostly idle (the reader's decoding takes a third of it). With the
 * columns sized at once for the rows to come, this thread faults their pages in ahead of the
 * writes (madvise MADV_POPULATE_WRITE, slice by slice across the columns in row order), so
 * the loader mostly finds them there. The work is the same, on the other core; nothing is
 * read or written through the arrays here, so the filling thread needs no lock.
 *
 * The arrays must stay where they are until tp_prefault_stop returns: stop it before any of
 * them may move (a realloc). Not started (NULL) with one CPU, TP_ANALYSIS_THREADS=1
 * (tp_par_two_threads), where the kernel lacks MADV_POPULATE_WRITE, or for little work. */
#ifndef TP_PREFAULT_H
#define TP_PREFAULT_H

#include <stddef.h>

typedef struct {
    void *p;     /* the array */
    size_t elem; /* bytes per element */
    size_t rows; /* elements to fault in */
} tp_prefault_col;

typedef struct tp_prefault tp_prefault;

#define TP_PREFAULT_MAX_COLS 32

/* Starts faulting in the first cols[i].rows elements of each of cols[0..n) (n <=
 * TP_PREFAULT_MAX_COLS; the descriptions are copied), the same fraction of each at a time
 * (tables filled at their own pace, row by row); NULL when it does not start (see above). */
tp_prefault *tp_prefault_start(const tp_prefault_col *cols, size_t n);

/* Adds column *col (copied) whose rows before `from` are written already: an array the writer
 * created after the start (a table's optional column, at its first value). 1 when it will be
 * faulted in; 0 for f NULL, stopped, or with TP_PREFAULT_MAX_COLS columns. */
int tp_prefault_add(tp_prefault *f, const tp_prefault_col *col, size_t from);

/* Stops the thread at its next slice and waits for it; NULL is a no-op. Until then it waits
 * for columns to add once it has faulted in every one. */
void tp_prefault_stop(tp_prefault *p);

#endif
