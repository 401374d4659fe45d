/* tp_diff: two runs side by side (`trainprof diff BASE NEW`), for a person reading what
 * changed and for CI regression gates.
 *
 * Each rank present in both models is analyzed in each (tp_rank_analysis, the report's own
 * figures: nothing is computed twice) and compared: the headline figures (time per step,
 * device utilization and its split, kernel and copy totals, launch latency), kernels, NVTX
 * ranges and copies by name/kind (largest changes first), and the findings that appeared,
 * went away or changed severity. Text or JSON (schema "trainprof-diff/v1").
 *
 * Gates (`--fail-if`): "KEY>+N%", "KEY<-N%" (relative change), "KEY>+N" / "KEY<-N" (absolute
 * change in the figure's unit: ns, percentage points, count or bytes) and "finding:ID" (a
 * finding present in NEW and not in BASE). A gate whose figure is missing in either run (no
 * steps, no device activity) fails, so a gate never passes by having nothing to judge. */
#ifndef TP_DIFF_H
#define TP_DIFF_H

#include <stdio.h>

#include "tp_an_view.h"
#include "tp_model.h"
#include "tp_status.h"

typedef struct {
    char key[48];     /* a figure's key (tp_diff_figures), or the finding id for "finding:" */
    int finding;      /* 1: "finding:ID" */
    int greater;      /* 1: '>', 0: '<' */
    int relative;     /* 1: N is a percentage of the base value */
    double threshold; /* N, signed */
} tp_diff_gate;

typedef struct {
    tp_an_opts an; /* the analyses' options, for both runs */
    int rank;      /* only this rank; -1: every rank in both */
    int top;       /* rows per table; 0: 10 */
    int json;      /* 1: JSON, else text */
    const tp_diff_gate *gates;
    size_t n_gates;
} tp_diff_opts;

/* Parses one --fail-if expression into `g`. Returns TP_OK, or TP_ERR_ARG with a one-line
 * reason in `err`. */
tp_status tp_diff_parse_gate(const char *s, tp_diff_gate *g, char *err, size_t err_size);

/* The figures a gate may name, "key (unit): what", one per line, for --help. */
void tp_diff_list_figures(FILE *out);

/* Writes the comparison of `base` and `next` to `out`; *failed gets the number of gates that
 * failed (0 when none was given). Returns TP_OK, TP_ERR_NOT_FOUND when no rank is in both
 * (or opts->rank is missing from either), TP_ERR_IO when writing fails. */
tp_status tp_diff_write(FILE *out, const tp_model *base, const tp_model *next,
                        const tp_diff_opts *opts, int *failed);

#endif
