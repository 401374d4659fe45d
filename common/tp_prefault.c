/* tp_prefault: faulting in arrays' pages ahead of their writer (see the header). */
#include "tp_prefault.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tp_par.h"

/* Rows per slice of the longest column: each column's part of a slice is at most a few
 * hundred KiB, one madvise call, and the writer (~60 ns a row) takes a few ms for it, so the
 * thread stays well ahead. */
#define SLICE_ROWS ((size_t)1 << 16)

struct tp_prefault {
    tp_prefault_col cols[TP_PREFAULT_MAX_COLS]; /* [0, n): n under mu; each entry fixed once in */
    size_t done[TP_PREFAULT_MAX_COLS];          /* rows faulted in (the thread's own) */
    size_t step[TP_PREFAULT_MAX_COLS];          /* rows per slice (the thread's own) */
    size_t n, slices;
    int stop; /* under mu */
    atomic_int stopping;
    pthread_mutex_t mu;
    pthread_cond_t more; /* a column added, or stop */
    pthread_t th;
};

#ifdef MADV_POPULATE_WRITE
/* Elements [from, to) of column c, from the start of the page that holds `from`. */
static int populate(const tp_prefault_col *c, size_t from, size_t to, uintptr_t page) {
    if (to <= from)
        return 1;
    uintptr_t a = ((uintptr_t)c->p + from * c->elem) & ~(page - 1);
    uintptr_t b = (uintptr_t)c->p + to * c->elem;
    return b <= a || madvise((void *)a, b - a, MADV_POPULATE_WRITE) == 0;
}

/* Each column advances by its own share of a slice (the same fraction of every column at a
 * time: tables filled at their own pace, row by row), a column added late from the row it
 * came at; when every column is done the thread waits for another or for the stop. */
static void *prefault_main(void *arg) {
    tp_prefault *f = arg;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    size_t known = 0;
    for (;;) {
        int left = 0;
        for (size_t i = 0; i < known && !atomic_load_explicit(&f->stopping, memory_order_relaxed);
             i++) {
            const tp_prefault_col *c = &f->cols[i];
            if (f->done[i] >= c->rows)
                continue;
            size_t to = c->rows - f->done[i] < 2 * f->step[i] ? c->rows : f->done[i] + f->step[i];
            if (!populate(c, f->done[i], to, page))
                return NULL; /* not supported (an old kernel): stop quietly */
            f->done[i] = to;
            left |= to < c->rows;
        }
        pthread_mutex_lock(&f->mu);
        while (!f->stop && !left && known == f->n)
            pthread_cond_wait(&f->more, &f->mu);
        for (; known < f->n; known++) /* a slice's share of the rows still to come */
            f->step[known] = (f->cols[known].rows - f->done[known]) / f->slices + 1;
        int stop = f->stop;
        pthread_mutex_unlock(&f->mu);
        if (stop)
            return NULL;
    }
}
#endif

tp_prefault *tp_prefault_start(const tp_prefault_col *cols, size_t n) {
#ifdef MADV_POPULATE_WRITE
    size_t most = 0;
    for (size_t i = 0; i < n && n <= TP_PREFAULT_MAX_COLS; i++)
        most = cols[i].rows > most ? cols[i].rows : most;
    if (n > TP_PREFAULT_MAX_COLS || most < 4 * SLICE_ROWS || !tp_par_two_threads())
        return NULL; /* a small table faults in within a few ms anyway */
    tp_prefault *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    memcpy(f->cols, cols, n * sizeof *cols);
    f->n = n, f->slices = (most + SLICE_ROWS - 1) / SLICE_ROWS;
    atomic_init(&f->stopping, 0);
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->more, NULL);
    if (pthread_create(&f->th, NULL, prefault_main, f) != 0) {
        pthread_cond_destroy(&f->more);
        pthread_mutex_destroy(&f->mu);
        free(f);
        return NULL;
    }
    return f;
#else
    (void)cols, (void)n;
    return NULL;
#endif
}

int tp_prefault_add(tp_prefault *f, const tp_prefault_col *col, size_t from) {
    if (!f)
        return 0;
    pthread_mutex_lock(&f->mu);
    int added = f->n < TP_PREFAULT_MAX_COLS && !f->stop;
    if (added) {
        f->cols[f->n] = *col;
        f->done[f->n] = from;
        f->n++;
        pthread_cond_signal(&f->more);
    }
    pthread_mutex_unlock(&f->mu);
    return added;
}

void tp_prefault_stop(tp_prefault *f) {
    if (!f)
        return;
    atomic_store_explicit(&f->stopping, 1, memory_order_relaxed);
    pthread_mutex_lock(&f->mu);
    f->stop = 1;
    pthread_cond_signal(&f->more);
    pthread_mutex_unlock(&f->mu);
    pthread_join(f->th, NULL);
    pthread_cond_destroy(&f->more);
    pthread_mutex_destroy(&f->mu);
    free(f);
}
