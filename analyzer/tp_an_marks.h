/* tp_an_marks: NVTX marks (nvtxMarkA: instants, no duration), per name and domain.
 *
 * The native loader keeps each mark as a row with TP_EVF_MARK (dur 0, on its thread, with its
 * domain); this analysis counts them per (name, domain) with their first and last time, so a
 * mark of one name in two domains is two rows, as ranges are (tp_an_nvtx). Kineto traces have
 * none. */
#ifndef TP_AN_MARKS_H
#define TP_AN_MARKS_H

#include "tp_an_view.h"

typedef struct {
    uint32_t name, domain; /* string pool ids; domain 0: NVTX's default domain */
    size_t count;
    int64_t first, last; /* ns, the view's times */
} tp_an_mark;

typedef struct {
    size_t n;
    tp_an_mark *m; /* by count, descending, then by first time */
} tp_an_marks;

/* Counts the marks of view `v` into *out (overwritten). Aborts on out of memory. */
void tp_an_marks_run(const tp_an_view *v, tp_an_marks *out);

/* Frees what tp_an_marks_run allocated; a zeroed result or NULL is a no-op. */
void tp_an_marks_free(tp_an_marks *out);

#endif
