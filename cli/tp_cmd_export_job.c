/* tp_cmd_export_job: see tp_cmd_export_job.h. */
#include "tp_cmd_export_job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_an_util.h"
#include "tp_an_view.h"
#include "tp_load.h"
#include "tp_mem.h"

/* Rank `r`'s device utilization samples, attached to reader `trace` (its main process, whose
 * clock the rank's rows are on). */
static void add_util(tp_cmd_job *j, const tp_model *m, const tp_rank *r, size_t trace) {
    tp_an_view v;
    tp_an_view_build(&v, m, r, NULL);
    tp_an_util_point *p;
    size_t n = tp_an_util_series(&v, &p);
    tp_an_view_free(&v);
    j->util = tp_mem_xrealloc(j->util, j->n_util + n + 1, sizeof *j->util);
    for (size_t i = 0; i < n; i++)
        if (p[i].ts >= 0)
            j->util[j->n_util++] =
                (tp_export_util){(uint32_t)trace, p[i].device, (uint64_t)p[i].ts, p[i].util};
    free(p);
}

static tp_status open_rank(tp_cmd_job *j, const tp_model *m, const tp_rank *r, char *err,
                           size_t err_len) {
    if (!r->native) {
        snprintf(err, err_len, "%s: a Kineto trace; export reads .tprof traces", r->file);
        return TP_ERR_FORMAT;
    }
    size_t first = j->n;
    for (size_t k = 0; k < (r->n_procs ? r->n_procs : 1); k++) {
        const char *file = r->n_procs && r->procs[k].file ? r->procs[k].file : r->file;
        tp_status st = tp_reader_open(file, &j->r[j->n]);
        if (st != TP_OK) {
            snprintf(err, err_len, "%s: %s", file, tp_status_str(st));
            return st;
        }
        j->place[j->n++] = (tp_export_place){r->rank, r->clock.shift_ns};
    }
    add_util(j, m, r, first);
    return TP_OK;
}

tp_status tp_cmd_job_open(const char *const *paths, size_t n, tp_cmd_job *j, char *err,
                          size_t err_len) {
    memset(j, 0, sizeof *j);
    tp_model *m = NULL;
    tp_load_result res;
    tp_status st = tp_load_paths(paths, n, &m, &res);
    if (st != TP_OK) {
        snprintf(err, err_len, "%s", res.error);
        return st;
    }
    size_t procs = 0;
    for (size_t i = 0; i < m->n_ranks; i++)
        procs += m->ranks[i].n_procs ? m->ranks[i].n_procs : 1;
    j->r = tp_mem_xcalloc(procs + 1, sizeof *j->r);
    j->place = tp_mem_xcalloc(procs + 1, sizeof *j->place);
    j->n_ranks = m->n_ranks;
    for (size_t i = 0; i < m->n_ranks && st == TP_OK; i++)
        st = open_rank(j, m, &m->ranks[i], err, err_len);
    tp_model_close(m);
    return st;
}

void tp_cmd_job_close(tp_cmd_job *j) {
    for (size_t i = 0; i < j->n; i++)
        tp_reader_close(j->r[i]);
    free(j->r), free(j->place), free(j->util);
    memset(j, 0, sizeof *j);
}
