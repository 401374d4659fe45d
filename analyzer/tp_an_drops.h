/* tp_an_drops: what the collector lost while recording, the one figure every front end
 * shows beside its numbers.
 *
 * When the collector's budget is spent it drops events and counts them (DROPPED records,
 * docs/collector.md); everything computed from the trace is then a lower bound: a span, a
 * busy time, a count, a finding. This module reads a rank's counts (tp_rank.n_kept_kind,
 * n_lost_kind, native traces only) into shares per kind, and says it in one line, the same
 * line for the report, the diagnosis, the TUI and `info`. A Kineto rank has no drops. */
#ifndef TP_AN_DROPS_H
#define TP_AN_DROPS_H

#include <stddef.h>
#include <stdint.h>

#include "tp_model.h"

/* One kind of record that lost some. */
typedef struct {
    unsigned kind;    /* .tprof record type; 0: drops of an unknown kind */
    const char *name; /* "KERNEL", "API", ...; "unknown" for kind 0 (static) */
    uint64_t lost;    /* dropped */
    uint64_t kept;    /* written (0 for kind 0) */
    double share;     /* lost / (lost + kept); for kind 0, of every event record */
} tp_an_drop_kind;

typedef struct {
    uint64_t lost; /* every dropped record */
    uint64_t kept; /* every event record written (metadata and the collector's own not
                      counted) */
    double share;  /* lost / (lost + kept); 0 when nothing was lost */
    double worst;  /* the largest share of one kind (what the diagnosis ranks by) */
    size_t n;      /* kinds that lost records, most lost first */
    tp_an_drop_kind k[TP_MODEL_REC_KINDS];
} tp_an_drops;

/* Fills *out from rank `r` (plain values, nothing to free). */
void tp_an_drops_compute(const tp_rank *r, tp_an_drops *out);

/* The same from counts by record type (TP_MODEL_REC_KINDS each): records written and records
 * lost (lost[0]: of an unknown kind); what `info` has, reading a trace without a model. */
void tp_an_drops_from_counts(const uint64_t *kept, const uint64_t *lost, tp_an_drops *out);

/* The records of the kinds in `mask` (bits TP_AN_DROP_BIT(kind)) that were lost, drops of an
 * unknown kind included (they may be any kind). */
#define TP_AN_DROP_BIT(kind) (1ull << (kind))
/* The mask of the device's kinds (KERNEL, MEMCPY, MEMSET): what "device activity" is made of. */
uint64_t tp_an_drops_device_kinds(void);
uint64_t tp_an_drops_lost(const tp_an_drops *d, uint64_t mask);

/* "1,234 KERNEL and 56 API records": the kinds of `mask` that lost records (all kinds for
 * mask 0), most lost first, into buf; "" when none. Returns buf. */
const char *tp_an_drops_kinds(const tp_an_drops *d, uint64_t mask, char *buf, size_t n);

/* The one line said wherever figures are shown, e.g. "123,005 of 1,245,883 event records
 * (9.87 %) lost while recording (109,895 API and 13,076 KERNEL records); every figure is a
 * lower bound"; "" when nothing was lost. Returns buf. */
const char *tp_an_drops_line(const tp_an_drops *d, char *buf, size_t n);

#endif
