/* tp_an_drops: the collector's losses of a rank, by kind (see tp_an_drops.h). */
#include "tp_an_drops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_record.h"
#include "tp_units.h"

uint64_t tp_an_drops_device_kinds(void) {
    return TP_REC_BIT(TP_REC_KERNEL) | TP_REC_BIT(TP_REC_MEMCPY) | TP_REC_BIT(TP_REC_MEMSET);
}

/* Records of the program's events: timed types, not the collector's own bookkeeping. */
static int is_event_kind(unsigned t) {
    const tp_rec_info *in = tp_record_info((uint16_t)t);
    return in->name && (in->flags & TP_RF_TIMED) && t != TP_REC_CLOCK_SYNC && t != TP_REC_DROPPED &&
           t != TP_REC_OVERHEAD;
}

static int most_lost_first(const void *a, const void *b) {
    const tp_an_drop_kind *x = a, *y = b;
    if (x->lost != y->lost)
        return x->lost > y->lost ? -1 : 1;
    return (x->kind > y->kind) - (x->kind < y->kind);
}

static double share(uint64_t lost, uint64_t kept) {
    return lost ? (double)lost / ((double)lost + (double)kept) : 0;
}

void tp_an_drops_compute(const tp_rank *r, tp_an_drops *out) {
    tp_an_drops_from_counts(r->n_kept_kind, r->n_lost_kind, out);
}

void tp_an_drops_from_counts(const uint64_t *kept, const uint64_t *lost, tp_an_drops *out) {
    memset(out, 0, sizeof *out);
    for (unsigned t = 0; t < TP_MODEL_REC_KINDS; t++) {
        out->lost += lost[t];
        out->kept += is_event_kind(t) ? kept[t] : 0;
    }
    out->share = share(out->lost, out->kept);
    for (unsigned t = 0; t < TP_MODEL_REC_KINDS; t++) {
        if (!lost[t])
            continue;
        tp_an_drop_kind *k = &out->k[out->n++];
        const char *name = t ? tp_record_name((uint16_t)t) : NULL;
        k->kind = t;
        k->name = name ? name : "unknown";
        k->lost = lost[t];
        k->kept = t ? kept[t] : 0;
        k->share = t ? share(k->lost, k->kept) : share(k->lost, out->kept);
        out->worst = k->share > out->worst ? k->share : out->worst;
    }
    qsort(out->k, out->n, sizeof *out->k, most_lost_first);
}

uint64_t tp_an_drops_lost(const tp_an_drops *d, uint64_t mask) {
    uint64_t n = 0;
    for (size_t i = 0; i < d->n; i++)
        if (d->k[i].kind == 0 || (mask & TP_AN_DROP_BIT(d->k[i].kind)))
            n += d->k[i].lost;
    return n;
}

const char *tp_an_drops_kinds(const tp_an_drops *d, uint64_t mask, char *buf, size_t n) {
    size_t used = 0, listed = 0, total = 0;
    uint64_t listed_lost = 0;
    for (size_t i = 0; i < d->n; i++)
        total += !mask || d->k[i].kind == 0 || (mask & TP_AN_DROP_BIT(d->k[i].kind));
    buf[0] = 0;
    for (size_t i = 0; i < d->n && used < n; i++) {
        const tp_an_drop_kind *k = &d->k[i];
        if (mask && k->kind != 0 && !(mask & TP_AN_DROP_BIT(k->kind)))
            continue;
        char c[32];
        listed++;
        listed_lost += k->lost;
        const char *sep = listed == 1 ? "" : listed == total ? " and " : ", ";
        int w = snprintf(buf + used, n - used, "%s%s %s", sep, tp_units_count(c, sizeof c, k->lost),
                         k->name);
        used += w > 0 ? (size_t)w : 0;
    }
    if (listed && used < n)
        snprintf(buf + used, n - used, " record%s", listed_lost == 1 ? "" : "s");
    return buf;
}

const char *tp_an_drops_line(const tp_an_drops *d, char *buf, size_t n) {
    char lost[32], all[32], kinds[512];
    if (!d->lost) {
        buf[0] = 0;
        return buf;
    }
    snprintf(buf, n,
             "%s of %s event records (%.2f %%) lost while recording (%s); every figure "
             "is a lower bound",
             tp_units_count(lost, sizeof lost, d->lost),
             tp_units_count(all, sizeof all, d->lost + d->kept), 100 * d->share,
             tp_an_drops_kinds(d, 0, kinds, sizeof kinds));
    return buf;
}
