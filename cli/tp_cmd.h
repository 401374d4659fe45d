/* tp_cmd: the subcommands of the `trainprof` program, one file each.
 * Each takes the arguments after its name (argv[0] is the subcommand) and returns the
 * process exit status: 0 success, 1 failure (message on stderr), 2 usage error. */
#ifndef TP_CMD_H
#define TP_CMD_H

#include <stddef.h>

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

#endif
