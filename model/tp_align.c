/* tp_align: see tp_align.h. */
#include "tp_align.h"

#include <stdlib.h>
#include <string.h>

#include "tp_mem.h"

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Does `r` know how its ts relate to the wall clock? Kineto always does (base or none). */
static int base_known(const tp_rank *r) {
    return r->native ? r->n_clock_pairs > 0 : 1;
}

static tp_clock_source source_of(const tp_rank *r) {
    return r->native         ? TP_CLOCK_SYNC
           : r->base_time_ns ? TP_CLOCK_KINETO_BASE
                             : TP_CLOCK_AS_RECORDED;
}

/* End times of `r`'s communication kernels (device rows flagged NCCL), sorted; a new array
 * (NULL when none) and its length in *n. */
static int64_t *comm_ends(const tp_rank *r, size_t *n) {
    const tp_events *e = &r->ev;
    int64_t *v = NULL;
    size_t k = 0, cap = 0;
    for (size_t i = 0; i < e->n; i++)
        if ((e->flags[i] & TP_EVF_NCCL) && e->cat[i] == TP_CAT_KERNEL && tp_ev_stream(e, i) != -1) {
            TP_MEM_XGROW(v, cap, k + 1);
            v[k++] = e->ts[i] + tp_ev_dur(e, i);
        }
    if (k)
        qsort(v, k, sizeof *v, cmp_i64);
    *n = k;
    return v;
}

/* The median of end_k(r) + shift - end_k(ref) over matched collectives; 0 when none match
 * (then *matched is 0). */
static int64_t collective_offset(const int64_t *ref, size_t n_ref, const int64_t *mine,
                                 size_t n_mine, int64_t shift, size_t *matched) {
    *matched = 0;
    if (!n_ref || n_ref != n_mine)
        return 0; /* different sequences: the k-th need not be the same collective */
    int64_t *d = tp_mem_xalloc(n_ref, sizeof *d);
    for (size_t k = 0; k < n_ref; k++)
        d[k] = mine[k] + shift - ref[k];
    qsort(d, n_ref, sizeof *d, cmp_i64);
    int64_t med = n_ref % 2 ? d[n_ref / 2] : d[n_ref / 2 - 1] / 2 + d[n_ref / 2] / 2;
    free(d);
    *matched = n_ref;
    return med;
}

static int64_t abs64(int64_t v) {
    return v < 0 ? -v : v;
}

/* The residual of `r` against `ref` by the last CLOCK_SYNC pairs; -1 when either has one. */
static int64_t pair_residual(const tp_rank *r, const tp_rank *ref) {
    if (!r->native || !ref->native || r->n_clock_pairs < 2 || ref->n_clock_pairs < 2)
        return -1;
    int64_t at_start = r->base_time_ns - ref->base_time_ns;
    int64_t at_end = r->base_time_end_ns - ref->base_time_end_ns;
    return abs64(at_end - at_start) + (int64_t)r->clock_uncertainty_ns +
           (int64_t)ref->clock_uncertainty_ns;
}

static void align_one(tp_rank *r, const tp_rank *ref, const int64_t *ref_ends, size_t n_ref) {
    tp_rank_clock *c = &r->clock;
    memset(c, 0, sizeof *c);
    c->aligned = 1, c->ref_rank = ref->rank, c->residual_ns = -1;
    if (r == ref) {
        c->source = TP_CLOCK_REFERENCE, c->method = TP_RESIDUAL_REFERENCE, c->residual_ns = 0;
        return;
    }
    if (base_known(r) && base_known(ref)) {
        c->source = source_of(r);
        c->shift_ns = r->base_time_ns - ref->base_time_ns;
    }
    size_t n_mine;
    int64_t *mine = comm_ends(r, &n_mine);
    int64_t off = collective_offset(ref_ends, n_ref, mine, n_mine, c->shift_ns, &c->n_matched);
    free(mine);
    if (c->n_matched) {
        c->method = TP_RESIDUAL_COLLECTIVES, c->residual_ns = abs64(off);
    } else if ((c->residual_ns = pair_residual(r, ref)) >= 0) {
        c->method = TP_RESIDUAL_SYNC_PAIRS;
    }
}

void tp_align_ranks(tp_model *m) {
    if (m->n_ranks < 2)
        return;
    const tp_rank *ref = &m->ranks[0];
    size_t n_ref;
    int64_t *ref_ends = comm_ends(ref, &n_ref);
    for (size_t i = 0; i < m->n_ranks; i++)
        align_one(&m->ranks[i], ref, ref_ends, n_ref);
    free(ref_ends);
}

const char *tp_align_source_key(tp_clock_source s) {
    static const char *const keys[] = {"none", "reference", "clock_sync", "kineto_base",
                                       "as_recorded"};
    return (unsigned)s < sizeof keys / sizeof keys[0] ? keys[s] : "none";
}

const char *tp_align_method_key(tp_clock_residual r) {
    static const char *const keys[] = {"none", "reference", "collectives", "sync_pairs"};
    return (unsigned)r < sizeof keys / sizeof keys[0] ? keys[r] : "none";
}
