/* tp_live_figs: the live aggregator's figures of a window (collector/tp_live_agg), read
 * back from a job's reply (the keys of docs/live-protocol.md) for `trainprof top`.
 *
 * The job computes them incrementally as records arrive, with the analyses' own definitions
 * (busy: common/tp_interval's union; kernel groups: traces/tp_kgroup; ranges paired by
 * traces/tp_pairing), so the live view redraws them every refresh without cutting and loading
 * a trace. Plain struct, no allocation. */
#ifndef TP_LIVE_FIGS_H
#define TP_LIVE_FIGS_H

#include <stddef.h>

#define TP_LIVE_FIGS_ROWS 14
#define TP_LIVE_FIGS_STREAMS 6
#define TP_LIVE_FIGS_CELLS 64

typedef struct {
    unsigned long long count;
    double sum, min, max;   /* ns */
    int group;              /* kernels: tp_kgroup */
    double gpu_ns, gpu_ops; /* ranges: device time and operations launched inside (innermost) */
    char name[161];
} tp_live_figs_row;

typedef struct {
    double busy_ns;
    unsigned device, stream;
    int n_cells;
    double cells[TP_LIVE_FIGS_CELLS]; /* busy share of equal parts of the window, 0-1 */
} tp_live_figs_stream;

typedef struct {
    int have;  /* 0: the reply held no figures */
    int final; /* 0: provisional (device records may still arrive for part of the window) */
    double t0, t1, busy_ns;
    size_t steps;
    int have_mem;
    double alloc0, alloc1, reserved0, reserved1, mem_events; /* at the start and the end */
    double late, pending;
    size_t n_streams;
    tp_live_figs_stream streams[TP_LIVE_FIGS_STREAMS];
    size_t n_kernels, n_ranges;
    tp_live_figs_row kernels[TP_LIVE_FIGS_ROWS], ranges[TP_LIVE_FIGS_ROWS];
} tp_live_figs;

/* Reads the figures of reply `text` into *f (overwritten; f->have = 0 when there are none). */
void tp_live_figs_parse(const char *text, tp_live_figs *f);

#endif
