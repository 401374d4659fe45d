/* tp_capture: a capture of a live job as a whole recording. The job writes the capture of its
 * main process (the process `record` started serves the live socket); its other processes
 * (DataLoader workers, the processes it started) write their own traces beside its main trace,
 * still open. Their records of the capture's span are cut from those (traces/tp_cut) and
 * written beside the capture under the names a recording's processes have (traces/tp_layout),
 * so `trainprof report CAPTURE` reads them as one job, workers included. For `trainprof
 * capture` and top's `c`, through the live client. */
#ifndef TP_CAPTURE_H
#define TP_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

/* The records of [t0, t1) (t1 > t0) of each trace of the recording whose main trace is
 * `trace`, other than it, written beside `capture` ("cap.<pid>.tprof" for "run.<pid>.tprof"),
 * each one that holds records in the span; one not readable yet, whose name is taken or that
 * holds nothing there is left out. `replace`: the traces beside `capture` that read as its
 * recording's are removed first (`top --save` writes its file anew at each refresh). Returns
 * how many it wrote. */
size_t tp_capture_members(const char *trace, const char *capture, uint64_t t0, uint64_t t1,
                          int replace);

#endif
