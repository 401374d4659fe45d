/* tp_stepname: which range names a training step, one definition for every reader: the
 * analyses and the diagnosis (tp_an_is_step_name), the collector's --idle step count and the
 * live store's step boundaries (unless --step-range names another).
 *
 * A step is "ProfilerStep#N" (torch.profiler's), or "step", "train_step", "training_step",
 * "train step" in any case. */
#ifndef TP_STEPNAME_H
#define TP_STEPNAME_H

#include <stddef.h>

/* 1 when the `len` bytes at `s` (no NUL needed) name a step, else 0. */
int tp_step_name_n(const char *s, size_t len);

/* The same for a NUL-terminated name; NULL is none. */
int tp_step_name(const char *s);

#endif
