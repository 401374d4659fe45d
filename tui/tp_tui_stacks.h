/* tp_tui_stacks: the Stacks view: GPU time by launching stack (tp_an_stacks, the report's
 * "GPU time by launching stack" section, under the same options, --stack-depth included).
 * A table of the groups (innermost frame, GPU time, share, ops, kernels), sortable and
 * searchable like the other tables; under it the selected group's frames, innermost first
 * (Python frames as file:line in function), and the kernels it launched. For a rank with
 * samples (`record --sample`), key c switches the table to the CPU samples (tp_an_samples,
 * the report's "CPU time by line, sampled": on-CPU time, share, waiting, samples per stack)
 * and back; a rank with samples and no launching stack opens on them. */
#ifndef TP_TUI_STACKS_H
#define TP_TUI_STACKS_H

#include "tp_an_samples.h"
#include "tp_tui_data.h"
#include "tp_tui_panel.h"
#include "tp_tui_table.h"

/* A new Stacks panel over d (which must outlive it); it runs tp_an_stacks on d's view. */
tp_tui_panel *tp_tui_stacks_new(tp_tui_data *d);

/* A stack's row label, as the Stacks view's tables read it: its innermost frame and that
 * frame's caller, or, where library frames lead to that call from the program's own code, the
 * program's line then the call ("train.py:59 in step -> functional.py:2846 in batch_norm").
 * f: tp_an_frames_prefix's frames, innermost first. */
void tp_tui_stacks_label(const tp_an_frame *f, size_t n_frames, char *buf, size_t n);

/* The CPU samples' table, the Stacks view's and `trainprof top`'s for a sampled job: a row per
 * stack of sa (your line -> the call; on-CPU time, its share of sa's, waiting, samples) sorted
 * by on-CPU time, and a note for the samples without Python frames. Initializes *t
 * (tp_tui_table_free frees it); sa must outlive nothing: the texts are copied. */
void tp_tui_samples_table(tp_tui_table *t, const tp_an_samples *sa);

#endif
