/* tp_live_client: the client side of a live job's control socket, for `trainprof ps`,
 * `capture` and `top` (protocol: docs/live-protocol.md).
 *
 * It finds this user's jobs (cleaning sockets whose job is gone: SIGKILL leaves them
 * behind), asks a job for its status, fetches a window of its recent past as a finished
 * tp_model (the job writes the window as a .tprof into a memory file and hands the
 * descriptor over; it is loaded by the one loader every trace goes through, so a window is
 * analyzed exactly as `trainprof report` analyzes a file), and starts and waits for
 * captures. Every call has a timeout; none exits or prints. */
#ifndef TP_LIVE_CLIENT_H
#define TP_LIVE_CLIENT_H

#include <stddef.h>

#include "tp_liveproto.h"
#include "tp_model.h"
#include "tp_status.h"

typedef struct tp_live_client tp_live_client;

/* Connects to the job `pid` of this user. TP_ERR_NOT_FOUND (no such job: no socket, or a
 * stale one, which is removed), TP_ERR_STATE (the folder is unsafe, or the job refused us),
 * TP_ERR_OPEN (errno set). `err` gets one line. */
tp_status tp_live_client_open(long pid, tp_live_client **out, char *err, size_t errlen);

void tp_live_client_close(tp_live_client *c); /* NULL: no-op */

/* The job's STATUS reply ("key=value" lines) into *m. */
tp_status tp_live_client_status(tp_live_client *c, tp_live_msg *m, char *err, size_t errlen);

/* What a window holds (from the job's reply). */
typedef struct {
    unsigned long long t0, t1, records;
    size_t steps;
    const char *reply; /* the job's reply text (with the aggregator's figures of a window of
                          steps); valid until the next call on any client */
} tp_live_window;

/* The last `n` steps (by_steps) or seconds as a finished model (*out; tp_model_close).
 * `save` (NULL: none) also gets the window's trace, replacing that file, and the job's other
 * processes' span beside it (tp_capture_members), replacing those. TP_ERR_EMPTY when
 * the job has no complete step yet (by_steps). */
tp_status tp_live_client_window(tp_live_client *c, int by_steps, double n, const char *save,
                                tp_model **out, tp_live_window *w, char *err, size_t errlen);

/* After a capture into `path` is done (`done`: its DONE reply): the capture's span of the job's
 * other processes (DataLoader workers, the processes it started), cut from their traces beside
 * the job's main trace (tp_cut_window), each written beside the capture under the name it has
 * in the capture's recording (tp_layout_member_as: "cap.<pid>.tprof"), so `report` of the
 * capture reads them as one job. Those with nothing in the span, not readable yet or whose
 * name is taken are left out. Returns how many it wrote. */
size_t tp_live_client_capture_members(tp_live_client *c, const char *path, const tp_live_msg *done);

/* The job's aggregator figures of the last `n` steps (no trace is cut): the reply text in
 * *m (keys in docs/live-protocol.md). TP_ERR_EMPTY when no step has completed yet. */
tp_status tp_live_client_figures(tp_live_client *c, double n, tp_live_msg *m, char *err,
                                 size_t errlen);

/* Asks for a capture of the next `n` whole steps (by_steps) or seconds into `fd` (an empty
 * file opened for writing; the job writes it, the caller still closes its own copy).
 * Returns when the job accepted it. */
tp_status tp_live_client_capture(tp_live_client *c, int by_steps, double n, int fd, char *err,
                                 size_t errlen);

/* Waits up to `timeout_ms` (-1: until the job ends) for the capture's outcome: TP_OK with
 * the DONE text in *m; TP_ERR_STATE when still running at the timeout; TP_ERR_IO with the
 * job's reason in err. */
tp_status tp_live_client_capture_wait(tp_live_client *c, int timeout_ms, tp_live_msg *m, char *err,
                                      size_t errlen);

/* One job of this user, from its STATUS reply. */
typedef struct {
    long pid;
    char status[TP_LIVE_REPLY_MAX + 1]; /* the STATUS text */
} tp_live_job;

/* Lists this user's jobs (ascending pid) into a new array (*out, free()), removing stale
 * sockets. *n may be 0. */
tp_status tp_live_jobs(tp_live_job **out, size_t *n);

#endif
