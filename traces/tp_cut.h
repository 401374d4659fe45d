/* tp_cut: a window of a .tprof trace as a trace of its own. Every metadata record of the
 * source (its process, threads, strings, stacks, modules, clock pairs: the same ids), then its
 * data records of a time window, as a cursor's time query keeps them (a record overlapping the
 * window; a range's push before it and pop in it: the pop alone, which readers pass over).
 *
 * For `trainprof capture` and top's `c` of a job whose other processes (DataLoader workers,
 * the processes it started) write traces of their own, still open: the capture of the main
 * process (which the job writes) gets their records of the same span beside it, named as a
 * recording's processes are (tp_layout), so a report of the capture reads them as one job. */
#ifndef TP_CUT_H
#define TP_CUT_H

#include <stdint.h>

#include "tp_status.h"

/* Writes the records of `src` in [t0, t1) (t1 > t0), with all its metadata, into a new file
 * `dst` (never over an existing one: TP_ERR_EXISTS). *records: the data records written; 0
 * when the window holds none (the file is written all the same: the caller decides). Errors:
 * the reader's for `src` (TP_ERR_OPEN, TP_ERR_FORMAT, ...), TP_ERR_OPEN / TP_ERR_IO for `dst`
 * (errno set), TP_ERR_ARG for an empty window; on an error `dst` is removed. */
tp_status tp_cut_window(const char *src, uint64_t t0, uint64_t t1, const char *dst,
                        uint64_t *records);

#endif
