/* tp_an_namememo: per pool id answers of a name test (see the header). */
#include "tp_an_namememo.h"

#include <stdlib.h>
#include <string.h>

#include "tp_mem.h"

void tp_an_namememo_open(tp_an_namememo *mm, const tp_model *m, tp_an_name_test test) {
    mm->m = m;
    mm->test = test;
    mm->n = tp_model_n_strings(m);
    mm->value = tp_mem_xalloc(mm->n ? mm->n : 1, 1);
    memset(mm->value, 255, mm->n);
}

void tp_an_namememo_close(tp_an_namememo *mm) {
    if (!mm)
        return;
    free(mm->value);
    memset(mm, 0, sizeof *mm);
}
