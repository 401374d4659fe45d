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
    tp_prefault_col cols[TP_PREFAULT_MAX_COLS];
    size_t n, slices;
    atomic_int stop;
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

static void *prefault_main(void *arg) {
    tp_prefault *f = arg;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    for (size_t s = 0; s < f->slices && !atomic_load_explicit(&f->stop, memory_order_relaxed);
         s++) {
        for (size_t i = 0; i < f->n; i++) {
            const tp_prefault_col *c = &f->cols[i];
            size_t from = c->rows / f->slices * s, to = c->rows / f->slices * (s + 1);
            if (s + 1 == f->slices)
                to = c->rows;
            if (!populate(c, from, to, page))
                return NULL; /* not supported (an old kernel): stop quietly */
        }
    }
    return NULL;
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
    atomic_init(&f->stop, 0);
    if (pthread_create(&f->th, NULL, prefault_main, f) != 0) {
        free(f);
        return NULL;
    }
    return f;
#else
    (void)cols, (void)n;
    return NULL;
#endif
}

void tp_prefault_stop(tp_prefault *f) {
    if (!f)
        return;
    atomic_store_explicit(&f->stop, 1, memory_order_relaxed);
    pthread_join(f->th, NULL);
    free(f);
}
