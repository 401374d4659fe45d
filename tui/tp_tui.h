/* tp_tui: the interactive terminal UI over a loaded trace, and its headless snapshot mode.
 *
 * A tp_tui holds one rank's data (tp_tui_data) and one panel per view, from a table: Summary,
 * Timeline, Kernels, Ranges, Copies, Diagnosis, Memory. It is driven by keys (tp_tui_key) and drawn
 * into a character grid (tp_tui_render); the ncurses front end (tp_tui_run) only moves keys in and
 * the grid out, and --snapshot prints the same grid as text, so everything but the terminal itself
 * runs headless in tests. Keys are this header's TP_TUI_KEY_* codes or plain characters. The model
 * must outlive the tp_tui; the library never exits and never prints to stdout except in
 * tp_tui_snapshot onto the FILE it is given. */
#ifndef TP_TUI_H
#define TP_TUI_H

#include <stddef.h>
#include <stdio.h>

#include "tp_an_view.h"
#include "tp_model.h"
#include "tp_status.h"
#include "tp_tui_grid.h"

typedef struct tp_tui tp_tui;

typedef struct {
    int rank;         /* rank number to show; -1: the first */
    const char *view; /* starting view by name (tp_tui_view_index); NULL: summary */
    int width, height;
    int ascii;      /* 1: draw with ASCII only (non-UTF-8 terminals) */
    int background; /* 1: compute the views' data on a thread of the TUI's own, the view's
                       first frame saying "computing" until it is there (the interactive UI:
                       a big trace's first frame comes at once); 0: when a view is first drawn
                       (--snapshot, tests: the frame is always the finished one) */
    tp_an_opts an;  /* the analyses' options, as `trainprof report` takes them (native mode;
                       no_symbols: stacks in the diagnosis as module+offset) */
} tp_tui_opts;

/* Special keys (plain characters are passed as themselves). */
enum {
    TP_TUI_KEY_UP = 0x1000,
    TP_TUI_KEY_DOWN,
    TP_TUI_KEY_LEFT,
    TP_TUI_KEY_RIGHT,
    TP_TUI_KEY_PGUP,
    TP_TUI_KEY_PGDN,
    TP_TUI_KEY_HOME,
    TP_TUI_KEY_END,
    TP_TUI_KEY_BACKSPACE,
    TP_TUI_KEY_BTAB,
    TP_TUI_KEY_ESC = 27,
    TP_TUI_KEY_ENTER = '\n',
    TP_TUI_KEY_TAB = '\t'
};

#define TP_TUI_N_VIEWS 10

/* Fills the defaults: the first rank, Summary, 120x40, tp_an_opts_init's analyses. */
void tp_tui_opts_init(tp_tui_opts *o);

/* 0..9 for "summary", "timeline", "kernels", "ranges", "copies", "diagnosis", "stacks",
 * "memory", "cpuops", "ranks" (or their keys "1".."9", "R"); -1 else. */
int tp_tui_view_index(const char *name);

/* The key that shows view i: '1'..'9', then 'R' for the tenth (Ranks); 0 for no view. */
int tp_tui_view_key(int i);

/* The --view name of view i (0 <= i < TP_TUI_N_VIEWS), else NULL. */
const char *tp_tui_view_name(int i);

/* Opens the UI state over a finished model. TP_ERR_NOT_FOUND (message in err) when
 * opts->rank names no rank, TP_ERR_EMPTY when the model has no rank, TP_ERR_ARG for a bad
 * view name. */
tp_status tp_tui_open(tp_tui **out, const tp_model *m, const tp_tui_opts *o, char *err,
                      size_t errlen);

/* Frees everything. NULL: no-op. */
void tp_tui_close(tp_tui *t);

/* New terminal size (any size; below 40x10 the frame says "terminal too small"). */
void tp_tui_resize(tp_tui *t, int w, int h);

/* Handles one key. Returns 1 when it asks to quit (q), else 0. */
int tp_tui_key(tp_tui *t, int key);

/* 1 while the background thread (tp_tui_opts.background) is computing data a view waits for,
 * 0 when the current view is drawn from its data. For tests and the terminal's redraws. */
int tp_tui_computing(tp_tui *t);

/* Waits until the background thread has computed every part of the rank's data (at once
 * without one). For tests and benchmarks. */
void tp_tui_wait_all(tp_tui *t);

/* The parts of the rank's data computed so far (TP_RA_* analyses, TP_TUI_LANES of
 * tp_tui_data.h): what the views shown so far needed, each computed on a view's first frame,
 * so that the first frame of a big trace costs only what its view draws. For tests. */
unsigned tp_tui_computed(tp_tui *t);

/* Index of the current view (0..TP_TUI_N_VIEWS - 1). */
int tp_tui_current_view(const tp_tui *t);

/* Draws the current frame and returns it (owned by t, valid until the next call). */
const tp_tui_grid *tp_tui_render(tp_tui *t);

/* Draws the current frame and writes it as text lines to out (trailing blanks trimmed).
 * TP_ERR_ARG, writing nothing, when the size is below TP_TUI_MIN_W x TP_TUI_MIN_H (a frame
 * that only says "terminal too small" is no snapshot).
 * TP_ERR_IO when writing fails, errno set to the system's reason (0 when unknown). */
tp_status tp_tui_snapshot(tp_tui *t, FILE *out);

/* Runs the interactive ncurses UI on the terminal until q. TP_ERR_STATE when stdin/stdout
 * is not a terminal or curses cannot start. */
tp_status tp_tui_run(tp_tui *t);

#endif
