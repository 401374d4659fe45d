/* tp_an_temporal: GPU span, idle, compute and non-compute time of one rank (HTA's
 * get_temporal_breakdown, in ns). */
#include "tp_an_temporal.h"

#include <stdlib.h>
#include <string.h>

#include "tp_an_ivset.h"
#include "tp_an_stats.h"

void tp_an_gpu_merge(const tp_an_view *v, unsigned kt_mask, tp_an_ivset *out) {
    if (v->gpu_order) { /* distinct starts: the subset's sorted order is gpu_order filtered */
        tp_an_ivmerge m;
        tp_an_ivset_bound(out, v->n_gpu);
        tp_an_ivmerge_start(&m, out);
        for (size_t k = 0; k < v->n_gpu; k++) {
            uint32_t i = v->gpu_order[k];
            if (kt_mask & (1u << v->ktype[i]))
                tp_an_ivmerge_add(&m, v->ts[i], v->end[i]);
        }
        tp_an_ivset_fit(out);
        return;
    }
    int64_t *ts = tp_an_tmp(v, v->n_gpu, sizeof *ts), *end = tp_an_tmp(v, v->n_gpu, sizeof *end);
    size_t k = 0;
    for (size_t i = 0; i < v->n; i++) {
        if (!v->gpu[i] || !(kt_mask & (1u << v->ktype[i])))
            continue;
        ts[k] = v->ts[i];
        end[k] = v->end[i];
        k++;
    }
    tp_an_ivset_merge_hta(ts, end, k, out, v->scratch);
    tp_an_tmp_put(v, ts);
    tp_an_tmp_put(v, end);
}

int64_t tp_an_gpu_union(const tp_an_view *v, unsigned kt_mask, int64_t *first, int64_t *last) {
    tp_an_ivset m = {0};
    tp_an_gpu_merge(v, kt_mask, &m);
    int64_t len = tp_an_ivset_len(&m);
    if (first)
        *first = m.n ? m.a[0] : 0;
    if (last)
        *last = m.n ? m.b[m.n - 1] : 0;
    tp_an_ivset_free(&m);
    return len;
}

void tp_an_temporal_run(const tp_an_view *v, tp_an_temporal *out) {
    memset(out, 0, sizeof *out);
    if (v->n_gpu == 0)
        return;
    out->has_gpu = 1;
    out->busy = tp_an_gpu_union(v, ~0u, &out->first_ts, &out->last_end);
    out->span = out->last_end - out->first_ts;
    out->idle = out->span - out->busy;
    out->compute = tp_an_gpu_union(v, 1u << TP_KT_COMPUTATION, NULL, NULL);
    out->non_compute = out->span - out->compute - out->idle;
}
