/* tp_an_util: device utilization over time, for counter tracks (the Perfetto export).
 *
 * The figure is the report's utilization (tp_an_temporal: the busy share of an interval,
 * busy being the union of the view's GPU rows, merged by the same rule), taken per device
 * over fixed windows that tile the rank's GPU span: window k of device d holds the part of
 * [first + k*w, first + (k+1)*w) that d's GPU rows cover, divided by the window's length (the
 * last window ends at the span's end). So the windows' busy times add up to the device's
 * busy time, and on a rank with one device to the report's busy_ns. */
#ifndef TP_AN_UTIL_H
#define TP_AN_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "tp_an_view.h"

typedef struct {
    int32_t device; /* the rows' device (-1: unknown) */
    int64_t ts;     /* window start (the view's clock); the last sample of a device, at the
                       span's end, has util 0 */
    double util;    /* busy share of the window, 0..1 */
} tp_an_util_point;

/* The window length for a GPU span of `span_ns`: 1/1000 of it, at least 1 ms. */
int64_t tp_an_util_width(int64_t span_ns);

/* Samples of every device of `v`, device by device (ascending), each in time order, in a new
 * array (*out, free()); returns their count (0 and *out NULL without GPU rows). */
size_t tp_an_util_series(const tp_an_view *v, tp_an_util_point **out);

#endif
