/* tp_cmd: the subcommands of the `trainprof` program, one file each.
 * Each takes the arguments after its name (argv[0] is the subcommand) and returns the
 * process exit status: 0 success, 1 failure (message on stderr), 2 usage error. */
#ifndef TP_CMD_H
#define TP_CMD_H

int tp_cmd_info(int argc, char **argv);
int tp_cmd_record(int argc, char **argv);
int tp_cmd_report(int argc, char **argv);
int tp_cmd_tui(int argc, char **argv);

#endif
