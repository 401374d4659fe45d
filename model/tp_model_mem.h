/* tp_model_mem: where a model's bytes go (issue 13), for bench_model_mem and tests.
 *
 * Counts what the model holds after tp_model_finish: each event column (allocated rows times
 * element size, whether it is there at all: optional columns may be absent; one stored sparsely,
 * tp_ev_sparse, its bitmap, ranks and values under the column's name), the memory
 * events, the indexes, the call stacks and the string pool; and, per event category, how many
 * rows there are and how many bytes of each row hold something other than "none" (the
 * columns' TP_EV_* none values), which says which columns a kind of event really uses. The
 * figures are computed from the arrays' sizes, not measured: allocator overhead is not in
 * them (it is small next to arrays of millions of rows). */
#ifndef TP_MODEL_MEM_H
#define TP_MODEL_MEM_H

#include <stdio.h>

#include "tp_model.h"

#define TP_MODEL_MEM_MAX_COLS 32

typedef struct {
    const char *name; /* the tp_events field */
    size_t elem;      /* bytes per row */
    size_t bytes;     /* allocated, all ranks; 0: absent in every rank */
    uint64_t used;    /* rows, all ranks, whose value is not the column's "none" */
} tp_model_mem_col;

typedef struct {
    uint64_t n_events, n_memev;
    size_t events_bytes;  /* every event column */
    size_t memev_bytes;   /* memory events' columns */
    size_t index_bytes;   /* by_corr, its directory, the stream/thread/category buckets */
    size_t stacks_bytes;  /* frames, stacks, modules, Python code objects */
    size_t strings_bytes; /* the string pool */
    size_t total_bytes;   /* all of the above */
    size_t n_cols;
    tp_model_mem_col cols[TP_MODEL_MEM_MAX_COLS];
    uint64_t cat_rows[TP_CAT_COUNT];
    uint64_t cat_used_bytes[TP_CAT_COUNT]; /* sum over the category's rows of the bytes of
                                              the columns that hold a value on that row */
} tp_model_mem;

/* Accounts for the memory of finished model `m`. */
void tp_model_mem_account(const tp_model *m, tp_model_mem *out);

/* Prints `a` as a table (per column, per category, totals, bytes per event). */
void tp_model_mem_print(const tp_model_mem *a, FILE *f);

#endif
