/* tp_cmd: the subcommands of the `trainprof` program, one file each.
 * Each takes the arguments after its name (argv[0] is the subcommand) and returns the
 * process exit status: 0 success, 1 failure (message on stderr), 2 usage error. */
#ifndef TP_CMD_H
#define TP_CMD_H

#include <stddef.h>
#include <stdio.h>

#include "tp_model.h"

int tp_cmd_info(int argc, char **argv);
int tp_cmd_record(int argc, char **argv);
int tp_cmd_report(int argc, char **argv);
int tp_cmd_tui(int argc, char **argv);
int tp_cmd_export(int argc, char **argv);

/* Loads the traces a subcommand was given (files or folders, any mix of formats) for
 * `trainprof CMD`: the loader's notes go to stderr, and a failure is reported there as
 * "trainprof CMD: ...". Returns 0 with *out set (close it with tp_model_close), or 1. */
int tp_cmd_load(const char *cmd, const char *const *paths, size_t n, tp_model **out);

/* Flushes `out`, the command's output (`name` in messages: a file, "standard output"),
 * and reports a failed write on it once, with the system's reason: "trainprof CMD: cannot
 * write NAME: No space left on device". Returns 0, or 1 after the message. */
int tp_cmd_flush(const char *cmd, FILE *out, const char *name);

/* For commands that read only .tprof: when `path` is JSON (a PyTorch-profiler trace or an
 * attempt at one), says so on stderr in one line, pointing to `trainprof report`, and
 * returns 1; returns 0, saying nothing, for anything else. */
int tp_cmd_not_native(const char *cmd, const char *path);

#endif
