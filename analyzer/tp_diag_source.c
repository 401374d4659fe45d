/* tp_diag_source: naming the range behind a finding (see the header). */
#include "tp_diag_source.h"

#include <stdlib.h>
#include <string.h>

#include "tp_an_enclosing.h"
#include "tp_an_stats.h"

long tp_diag_range_at(const tp_diag_ctx *d, int64_t t) {
    if (d->main_bucket < 0)
        return -1;
    return tp_an_enclosing_at(d->r, (size_t)d->main_bucket, t, TP_AN_RANGES_ALL);
}

void tp_diag_range_label(const tp_diag_ctx *d, long p, char **buf) {
    const tp_model *m = d->v->m;
    if (d->cur && d->cur->range_row < 0) /* the range the source names first */
        d->cur->range_row = p;
    long q = tp_diag_enclosing(d, p);
    while (q >= 0 && d->ev->name[q] == d->ev->name[p]) /* recursion: name the caller */
        q = tp_diag_enclosing(d, q);
    if (q >= 0)
        tp_diag_cat(buf, "range '%s' in '%s'", tp_model_str(m, d->ev->name[p]),
                    tp_model_str(m, d->ev->name[q]));
    else
        tp_diag_cat(buf, "range '%s'", tp_model_str(m, d->ev->name[p]));
}

void tp_diag_blame_new(const tp_diag_ctx *d, tp_diag_blame *bl, long range_row, int64_t ns) {
    uint32_t name = d->ev->name[range_row];
    if (!bl->slot)
        bl->slot = tp_an_alloc(d->n_names, sizeof *bl->slot);
    if (bl->slot[name]) {
        bl->ns[bl->slot[name] - 1] = tp_an_add(bl->ns[bl->slot[name] - 1], ns);
        return;
    }
    if (bl->n == bl->cap) {
        size_t c1 = bl->cap, c2 = bl->cap;
        tp_an_grow((void **)&bl->row, &c1, bl->n + 1, sizeof *bl->row);
        tp_an_grow((void **)&bl->name, &c2, bl->n + 1, sizeof *bl->name);
        tp_an_grow((void **)&bl->ns, &bl->cap, bl->n + 1, sizeof *bl->ns);
    }
    bl->row[bl->n] = range_row, bl->name[bl->n] = name, bl->ns[bl->n] = ns;
    bl->slot[name] = (uint32_t)++bl->n;
}

int64_t tp_diag_blame_sum(const tp_diag_blame *bl) {
    int64_t t = 0;
    for (size_t i = 0; i < bl->n; i++)
        t = tp_an_add(t, bl->ns[i]);
    return t;
}

size_t tp_diag_blame_top(const tp_diag_blame *bl) {
    size_t best = 0;
    for (size_t i = 1; i < bl->n; i++)
        if (bl->ns[i] > bl->ns[best])
            best = i;
    return best;
}

/* The name with the most time not among chosen[0..k), first blamed among equals; -1. */
static long next_best(const tp_diag_blame *bl, const long *chosen, int k) {
    long best = -1;
    for (size_t i = 0; i < bl->n; i++) {
        int used = 0;
        for (int j = 0; j < k; j++)
            used |= chosen[j] == (long)i;
        if (!used && (best < 0 || bl->ns[i] > bl->ns[best]))
            best = (long)i;
    }
    return best;
}

void tp_diag_blame_source(const tp_diag_ctx *d, const tp_diag_blame *bl, int64_t total,
                          const char *what, char **buf) {
    long chosen[3];
    for (int k = 0; k < 3; k++) {
        long best = next_best(bl, chosen, k);
        if (best < 0 || (k && 10.0 * (double)bl->ns[best] < (double)total))
            break;
        chosen[k] = best;
        if (k == 0 && 5.0 * (double)bl->ns[best] < (double)total) /* no dominant range */
            tp_diag_cat(buf, "spread over %zu ranges; most in ", bl->n);
        if (k == 0)
            tp_diag_range_label(d, bl->row[best], buf);
        else
            tp_diag_cat(buf, ", '%s'", tp_model_str(d->v->m, bl->name[best]));
        tp_diag_cat(buf, " (%.0f%%%s%s)", 100.0 * tp_diag_share(bl->ns[best], total), k ? "" : " ",
                    k ? "" : what);
    }
}

void tp_diag_blame_free(tp_diag_blame *bl) {
    free(bl->row), free(bl->name), free(bl->ns), free(bl->slot);
    memset(bl, 0, sizeof *bl);
}
