/* tp_cmd_export_mem: memory figures for the exports (see the header). */
#include "tp_cmd_export_mem.h"

#include <stdlib.h>
#include <string.h>

#include "tp_an_memuse.h"
#include "tp_load.h"
#include "tp_mem.h"

static tp_model *load(const char *path) {
    tp_model *m = NULL;
    tp_load_result res;
    return tp_load_paths(&path, 1, &m, &res) == TP_OK ? m : NULL;
}

/* The device a rank's memory belongs to: its one device, else unknown. */
static int32_t rank_device(const tp_rank *r) {
    return r->n_devices == 1 ? r->devices[0].id : -1;
}

size_t tp_cmd_export_mem_counters(const char *path, tp_export_counter **out) {
    tp_model *m = load(path);
    size_t n = 0, cap = 0;
    *out = NULL;
    for (size_t k = 0; m && k < m->n_ranks; k++) {
        const tp_rank *r = &m->ranks[k];
        tp_an_view v;
        tp_an_view_build(&v, m, r, NULL);
        tp_an_memuse u;
        tp_an_memuse_run(&v, &u);
        uint32_t pid = r->n_procs ? (uint32_t)r->procs[0].pid : 0;
        for (size_t i = 0; i < u.n_points; i++) {
            tp_mem_xgrow((void **)out, &cap, n + 1, sizeof **out);
            (*out)[n++] =
                (tp_export_counter){pid, rank_device(r), (uint64_t)tp_an_memuse_pt_ts(&u, i),
                                    u.pt_alloc[i], tp_an_memuse_pt_res(&u, i)};
        }
        tp_an_memuse_free(&u);
        tp_an_view_free(&v);
    }
    tp_model_close(m);
    return n;
}

/* Steps begun in (from, to]. */
static int64_t steps_alive(const tp_an_memuse *u, int64_t from, int64_t to) {
    int64_t k = 0;
    for (size_t i = 0; i < u->n_steps; i++)
        k += u->steps[i].start > from && u->steps[i].start <= to;
    return k;
}

/* The live blocks after the first `ev` events, as rows; labels are kept in *labels. */
static void add_moment(const tp_model *m, const tp_an_memuse *u, const char *name, size_t ev,
                       tp_export_mblock **rows, size_t *n, size_t *cap, char ***labels,
                       size_t *n_labels) {
    tp_an_memmoment mo;
    tp_an_memuse_moment(u, ev, 0, &mo);
    size_t nb;
    const tp_an_mblock *b = tp_an_memstate_blocks(u->state, &nb);
    for (size_t i = 0; i < nb; i++) {
        char lb[256];
        tp_an_memuse_site_label(u, m, b[i].site, lb, sizeof lb);
        *labels = tp_mem_xrealloc(*labels, *n_labels + 1, sizeof **labels);
        char *s = (*labels)[(*n_labels)++] = strdup(lb);
        if (!s)
            abort();
        tp_mem_xgrow((void **)rows, cap, *n + 1, sizeof **rows);
        (*rows)[(*n)++] = (tp_export_mblock){name,
                                             (uint64_t)mo.ts,
                                             b[i].addr,
                                             b[i].size,
                                             (uint64_t)b[i].ts,
                                             s,
                                             tp_an_memstate_site(u->state, b[i].site)->stack,
                                             steps_alive(u, b[i].ts, mo.ts),
                                             b[i].device};
    }
    tp_an_memmoment_free(&mo);
}

tp_status tp_cmd_export_mem_blocks(const char *path, const char *db, char *err, size_t err_len) {
    tp_model *m = load(path);
    tp_export_mblock *rows = NULL;
    char **labels = NULL;
    size_t n = 0, cap = 0, n_labels = 0;
    for (size_t k = 0; m && k < m->n_ranks; k++) {
        tp_an_view v;
        tp_an_view_build(&v, m, &m->ranks[k], NULL);
        tp_an_memuse u;
        tp_an_memuse_run(&v, &u);
        if (u.peak.valid)
            add_moment(m, &u, "peak", u.peak.ev, &rows, &n, &cap, &labels, &n_labels);
        if (u.has_oom)
            add_moment(m, &u, "oom", u.oom.row, &rows, &n, &cap, &labels, &n_labels);
        tp_an_memuse_free(&u);
        tp_an_view_free(&v);
    }
    tp_status st = n ? tp_export_sqlite_live_blocks(db, rows, n, err, err_len) : TP_OK;
    for (size_t i = 0; i < n_labels; i++)
        free(labels[i]);
    free(labels), free(rows);
    tp_model_close(m);
    return st;
}
