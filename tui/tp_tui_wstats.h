/* tp_tui_wstats: statistics of a window of time on the Timeline (a marked range, a step).
 *
 * The figures are the analyzer's, run on the window: tp_rank_analysis over the rank with
 * tp_an_opts' window set, so only the rows that start inside it count, as if the trace had
 * been cut to that window; `trainprof report` on such a cut trace gives the same numbers
 * (tests/tui/test_tui_window). Shown: the window, device busy time and the GPU span inside
 * it, copies, and per-kernel and per-range totals; for a rank recorded with --sample, the CPU
 * time by line of the samples in the window (tp_an_samples over the window's view: what the
 * threads did in that step). */
#ifndef TP_TUI_WSTATS_H
#define TP_TUI_WSTATS_H

#include "tp_an_samples.h"
#include "tp_rank_analysis.h"
#include "tp_tui_data.h"
#include "tp_tui_grid.h"

/* The analyses a window runs. */
#define TP_TUI_WSTATS_ANALYSES (TP_RA_TEMPORAL | TP_RA_KERNELS | TP_RA_MEMORY | TP_RA_NVTX)

typedef struct {
    int set;        /* 1: a window is marked and analyzed */
    int64_t lo, hi; /* model ns, [lo, hi) */
    long step;      /* the step row it is (`w`, `[`, `]`); -1: marked by hand */
    tp_rank_analysis a;
    int has_sa;       /* 1: the rank has samples, sa holds the window's */
    tp_an_samples sa; /* the samples in the window, by stack */
} tp_tui_wstats;

/* Analyzes [lo, hi) of d's rank (lo > hi are swapped; an empty window is widened to 1 ns)
 * under d's options. Replaces what w held. */
void tp_tui_wstats_set(tp_tui_wstats *w, const tp_tui_data *d, int64_t lo, int64_t hi);

/* Forgets the window (w->set = 0). */
void tp_tui_wstats_clear(tp_tui_wstats *w);

/* Draws the statistics into rows [y, y + h) of g; times relative to d->t_first. */
void tp_tui_wstats_draw(const tp_tui_wstats *w, const tp_tui_data *d, tp_tui_grid *g, int y, int h);

#endif
