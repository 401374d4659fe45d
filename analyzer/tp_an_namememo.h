/* tp_an_namememo: a test on a name, decided once per string pool id.
 *
 * Analyses classify rows by their name (step ranges, data loading, kernel types) with string
 * tests that cost hundreds of instructions; a trace has millions of rows but few distinct
 * names, so the answer is kept per pool id. The memo answers exactly what the test answers on
 * tp_model_str(m, id); ids outside the pool are tested every time. One memo per test; the
 * model must outlive it. Aborts on out of memory, like the analyses. */
#ifndef TP_AN_NAMEMEMO_H
#define TP_AN_NAMEMEMO_H

#include <stdint.h>

#include "tp_model.h"

typedef int (*tp_an_name_test)(const char *name); /* returns 0..254 */

typedef struct {
    const tp_model *m;
    tp_an_name_test test;
    uint32_t n;     /* pool ids are < n */
    uint8_t *value; /* per id: the test's answer; 255: not asked yet */
} tp_an_namememo;

/* Starts an empty memo of `test` over the names of `m`. Close with tp_an_namememo_close. */
void tp_an_namememo_open(tp_an_namememo *mm, const tp_model *m, tp_an_name_test test);

/* Frees the memo's table; NULL is a no-op. */
void tp_an_namememo_close(tp_an_namememo *mm);

/* test(tp_model_str(m, id)), from the memo after the first time. */
static inline int tp_an_namememo_get(tp_an_namememo *mm, uint32_t id) {
    if (id >= mm->n)
        return mm->test(tp_model_str(mm->m, id));
    if (mm->value[id] == 255)
        mm->value[id] = (uint8_t)mm->test(tp_model_str(mm->m, id));
    return mm->value[id];
}

#endif
