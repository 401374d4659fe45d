/* tp_clocksync: see tp_clocksync.h. */
#include "tp_clocksync.h"

#include <string.h>

#include "tp_record.h"

void tp_clocksync_read(const tp_reader *r, tp_clocksync *out) {
    memset(out, 0, sizeof *out);
    const tp_rec_hdr *const *recs;
    size_t n = tp_reader_meta(r, TP_REC_CLOCK_SYNC, &recs);
    for (size_t i = 0; i < n; i++) {
        tp_rec_clock_sync c = {0};
        tp_record_get(recs[i], &c, sizeof c);
        int64_t off = (int64_t)(c.realtime_ns - c.ts); /* wraps like the loader always did */
        if (!out->n_pairs)
            out->first_ns = off;
        out->last_ns = off;
        if (c.uncertainty_ns > out->uncertainty_ns)
            out->uncertainty_ns = c.uncertainty_ns;
        out->n_pairs++;
    }
}
