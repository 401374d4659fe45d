/* tp_tui_live: `trainprof top`, the live view of a running job, and its headless snapshot.
 *
 * Every refresh asks the job for its status and for a window of its recent past (the last N
 * steps, or seconds), which arrives as a trace and is loaded into a model like any file; the
 * figures on screen are then tp_tui_data's, i.e. tp_rank_analysis's on that model: the same
 * definitions `trainprof report` prints for a capture of the same window (its diagnosis
 * too). What only a running job knows (steps so far, steps/s over time, what the collector
 * dropped and spent) comes from the status. Drawing reuses the TUI's grid, table and
 * sparkline helpers; the offline views (Summary, Timeline, ...) can be opened on the current
 * window with `v`. A key captures the next N steps to a file and says where it went. */
#ifndef TP_TUI_LIVE_H
#define TP_TUI_LIVE_H

#include <stdio.h>

#include "tp_an_view.h"
#include "tp_status.h"
#include "tp_tui_grid.h"

typedef struct tp_tui_live tp_tui_live;

typedef struct {
    long pid;
    int by_steps;      /* 1: the window is the last `n` steps; 0: the last `n` seconds */
    double n;          /* default 20 steps */
    int capture_steps; /* what the capture key captures (default 10) */
    const char *dir;   /* where captures go (default ".") */
    int width, height; /* default 120x40 */
    int ascii;
    const char *save; /* non-NULL: also write each window's trace there (snapshots, tests) */
    int fresh; /* 1: this watch started the job (top -- CMD): a snapshot waits for its window */
    tp_an_opts an;
} tp_tui_live_opts;

void tp_tui_live_opts_init(tp_tui_live_opts *o);

/* Connects to job o->pid. TP_ERR_NOT_FOUND / TP_ERR_STATE / TP_ERR_OPEN with one line in err. */
tp_status tp_tui_live_open(tp_tui_live **out, const tp_tui_live_opts *o, char *err, size_t errlen);

void tp_tui_live_close(tp_tui_live *t); /* NULL: no-op */

/* Fetches the status and the window and rebuilds the figures; polls a capture in progress.
 * TP_ERR_IO (err says why) when the job is gone. */
tp_status tp_tui_live_refresh(tp_tui_live *t, char *err, size_t errlen);

/* For a snapshot of a job under --idle, which records only from the first request on, or of
 * a job this watch just started (o->fresh): keeps refreshing (every 400 ms, at most
 * `timeout_ms`) until the window holds what was asked (N recorded steps, or S seconds since
 * the first refresh). Any other job returns at once. */
tp_status tp_tui_live_settle(tp_tui_live *t, int timeout_ms, char *err, size_t errlen);

void tp_tui_live_resize(tp_tui_live *t, int w, int h);

/* One key: q quits (returns 1); c captures; + - change the window; w switches steps and
 * seconds; v opens the offline views on the window (their keys apply, v or l comes back). */
int tp_tui_live_key(tp_tui_live *t, int key);

/* The current frame (owned by t, valid until the next call). */
const tp_tui_grid *tp_tui_live_render(tp_tui_live *t);

/* Writes the current frame as text. TP_ERR_IO when writing fails. */
tp_status tp_tui_live_snapshot(tp_tui_live *t, FILE *out);

/* Runs on the terminal, refreshing every 500 ms, until q. TP_ERR_STATE without a terminal. */
tp_status tp_tui_live_run(tp_tui_live *t);

#endif
