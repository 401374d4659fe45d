/* tp_activity_impl: the collector's side of include/trainprof/activity.h.
 *
 * Runtimes with their own device (the trainer's CPU device) report kernels, copies, memsets,
 * syncs, launches and allocations through this table; each call becomes the same trace
 * record the CUPTI path writes for CUDA (API records carry TP_API_DEVICE in their flags).
 * Correlation ids come from a range CUPTI does not use (from 0x80000000) and device ids from
 * 0x100, so they never collide with CUDA's. */
#ifndef TP_ACTIVITY_IMPL_H
#define TP_ACTIVITY_IMPL_H

#include <stdint.h>

#include "trainprof/activity.h"

#define TP_ACTIVITY_FIRST_CORRELATION 0x80000000u
#define TP_ACTIVITY_FIRST_DEVICE 0x100u

/* The table for `version` (TP_ACTIVITY_TABLE_VERSION), or NULL for an unknown version. */
const tp_activity_table *tp_activity_impl_table(uint32_t version);

#endif
