/* tp_progress: a progress line on stderr for work that takes long (loading, building the
 * model, analyses, exports).
 *
 * The work names its phases ("loading run.json.gz", "building the model") and reports how
 * far it got (bytes of the input, events) from its loop; a thread of the reporter prints,
 * once the command has run `after_ms` (2 s for people), a line a person can read:
 *
 *     trainprof: loading run.json: 512.0 MiB of 2.0 GiB (25 %), 3.4 M events, 5.1 s
 *
 * rewritten in place (\r) on a terminal a few times a second, or printed as a plain line
 * every 10 s when stderr is a file or a pipe; when a phase ends after the line has shown,
 * its final figures stay as a line of their own, exact:
 *
 *     trainprof: loading run.json: done, 2147483648 bytes, 12345678 events, 9.8 s
 *
 * Work that ends before `after_ms` prints nothing. Every function takes NULL as "no
 * progress wanted" and does nothing, so loaders call it unconditionally; updates are two
 * relaxed atomic stores, cheap enough to make every few thousand events. */
#ifndef TP_PROGRESS_H
#define TP_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

typedef struct tp_progress tp_progress;

/* Starts a reporter printing to `out` as "<prog>: ..." once `after_ms` have passed since
 * this call; `tty`: rewrite one line in place (else plain lines). NULL when out of memory or
 * the thread cannot start (progress is never worth failing a command for). */
tp_progress *tp_progress_open(FILE *out, const char *prog, int64_t after_ms, int tty);

/* Ends the current phase (its final line, when shown) and starts phase `what` (copied),
 * whose input has `total_bytes` bytes (0: unknown or not a read). `what` NULL: the current
 * phase failed; its running line is erased, no final line, no new phase (the caller's error
 * message follows). */
void tp_progress_phase(tp_progress *p, const char *what, uint64_t total_bytes);

/* How far the current phase got: bytes of its input read, events so far. */
void tp_progress_update(tp_progress *p, uint64_t bytes, uint64_t events);

/* The same for a loop that knows only its events (bytes stay as they are). Only every
 * 16384th count is passed on, so a loader may call it once per event. */
void tp_progress_events(tp_progress *p, uint64_t events);

/* Ends the current phase with its exact figures (the final line shows them). */
void tp_progress_done(tp_progress *p, uint64_t bytes, uint64_t events);

/* Ends the current phase, stops the thread and frees the reporter. NULL: no-op. */
void tp_progress_close(tp_progress *p);

#endif
