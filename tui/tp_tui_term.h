/* tp_tui_term: the one ncurses loop of the TUIs. An app draws into a grid and takes keys;
 * the loop moves keys in (as TP_TUI_KEY_* codes) and the grid out, and with tick_ms > 0
 * calls tick whenever that long passes without a key (the live view refreshes there). */
#ifndef TP_TUI_TERM_H
#define TP_TUI_TERM_H

#include "tp_status.h"
#include "tp_tui_grid.h"

typedef struct {
    void *ctx;
    const tp_tui_grid *(*render)(void *ctx);
    void (*resize)(void *ctx, int w, int h);
    int (*key)(void *ctx, int key); /* 1: quit */
    void (*tick)(void *ctx);        /* NULL: none */
    int tick_ms;                    /* 0: wait for keys only */
} tp_tui_term_app;

/* Runs `app` on the terminal until its key handler asks to quit. TP_ERR_STATE when stdin or
 * stdout is not a terminal or curses cannot start. */
tp_status tp_tui_term_run(const tp_tui_term_app *app);

#endif
