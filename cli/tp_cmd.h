/* tp_cmd: the subcommands of the `trainprof` program, one file each.
 * Each takes the arguments after its name (argv[0] is the subcommand) and returns the
 * process exit status: 0 success, 1 failure (message on stderr), 2 usage error.
 *
 * The commands that analyze traces (report, tui) share one prologue, tp_cmd_traces_main:
 * options from a table, trace paths, loading, the model's lifetime; each command only
 * declares its options and what it does with the model. */
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
int tp_cmd_doctor(int argc, char **argv);
int tp_cmd_diff(int argc, char **argv);
int tp_cmd_ps(int argc, char **argv);
int tp_cmd_capture(int argc, char **argv);
int tp_cmd_top(int argc, char **argv);
int tp_cmd_merge(int argc, char **argv);

/* How an option's value is stored into the command's argument struct. */
typedef enum {
    TP_OPT_FLAG,  /* no value: the int field becomes 1 */
    TP_OPT_INT,   /* a decimal integer in [lo, hi] into the int field */
    TP_OPT_STR,   /* the value itself into the const char * field */
    TP_OPT_PARSE, /* parse(value, field) stores it and returns 0, or -1 to refuse it */
} tp_cmd_opt_kind;

/* One option: a row of a command's table. */
typedef struct {
    const char *name; /* "--rank" */
    tp_cmd_opt_kind kind;
    size_t off; /* offsetof the field in the command's argument struct */
    int lo, hi; /* TP_OPT_INT: accepted range */
    int (*parse)(const char *value, void *field);
    const char *bad; /* the usage error after the option's name: "takes a number" */
} tp_cmd_opt;

/* A command over traces: its name (for messages), its --help text, its options, and what it
 * does with the loaded model (returns the exit status). */
typedef struct {
    const char *name;
    void (*usage)(FILE *out);
    const tp_cmd_opt *opts;
    size_t n_opts;
    int (*run)(const tp_model *m, void *args);
    /* Instead of `run`, for a command over exactly two traces, each loaded into a model of
     * its own (diff BASE NEW): both models, in the order given. */
    int (*run_pair)(const tp_model *a, const tp_model *b, void *args);
    /* The progress line (tp_progress) stays on while `run` works ("analysing"), for a command
     * whose output is not the terminal (report); 0: it ends with loading (the TUI draws). */
    int progress_in_run;
    /* Optional: shapes the loaded model for `run` (frees what its run never reads) */
    void (*prepare)(tp_model *m, void *args);
    /* Optional: the indexes its run never reads, which the model's finish then does not build
     * (TP_FINISH_NO_* bits: tp_load_paths_progress's `skip`) */
    unsigned (*finish_skip)(const void *args);
    /* Optional: the file its run writes (-o; NULL: standard output) and whether it may replace
     * a trace (--force), checked against the traces before they load (tp_cmd_check_output) */
    const char *(*output)(const void *args, int *force);
} tp_cmd_traces;

/* `trainprof NAME TRACE... [options] [--quiet]`: parses argv into `args` (the command's argument
 * struct, defaults already set; every word that is not an option is a trace: a file or a
 * folder, any mix of formats), loads the traces into one model (the loader's notes and
 * errors on stderr as "trainprof NAME: ..."; progress there after 2 s unless --quiet or -q),
 * runs c->run and frees the model. Returns 0
 * after --help (usage on stdout), 2 for a usage error (message and usage on stderr), 1 when
 * loading fails, else what c->run returns. */
int tp_cmd_traces_main(const tp_cmd_traces *c, void *args, int argc, char **argv);

/* The progress line of command `cmd` on stderr (tp_progress), or NULL when `quiet` (the
 * --quiet option). It shows after 2 s, or after TRAINPROF_PROGRESS_AFTER_MS milliseconds
 * when that is set (tests set 0); in place when stderr is a terminal. */
struct tp_progress *tp_cmd_progress_open(const char *cmd, int quiet);

/* Flushes `out`, the command's output (`name` in messages: a file, "standard output"),
 * and reports a failed write on it once, with the system's reason: "trainprof CMD: cannot
 * write NAME: No space left on device". Returns 0, or 1 after the message. */
int tp_cmd_flush(const char *cmd, FILE *out, const char *name);

/* The text output of report, diff and merge: -o FILE opened for writing, standard output for
 * NULL or "-" (as for export). NULL after "trainprof CMD: FILE: reason" on stderr. */
FILE *tp_cmd_output_open(const char *cmd, const char *out);

/* Flushes and closes what tp_cmd_output_open gave (standard output is flushed, not closed);
 * `rc` is the command's status so far. Returns rc, or 1 after one line when the output could
 * not be written and rc was 0. */
int tp_cmd_output_close(const char *cmd, FILE *f, const char *out, int rc);

/* Where a command writes its text output (-o FILE: report, diff, merge): refuses, saying why
 * on stderr in one line and returning 1, a FILE that is one of the `n` paths it reads or a
 * trace file of one of its folders (the same file, by device and inode: writing would destroy
 * what is being read) or a folder, and,
 * unless `force`, an existing .tprof trace; returns 0 for anything else (a new name, the
 * output of an earlier run: replaced, as always). NULL or "-": 0. */
int tp_cmd_check_output(const char *cmd, const char *out, const char *const *inputs, size_t n,
                        int force);

/* For commands that read only .tprof: when `path` is JSON (a PyTorch-profiler trace or an
 * attempt at one), says so on stderr in one line, pointing to `trainprof report`, and
 * returns 1; returns 0, saying nothing, for anything else. */
int tp_cmd_not_native(const char *cmd, const char *path);

/* Option parsers (tp_cmd_opt TP_OPT_PARSE) of the CPU-operator table, for report and tui:
 * --group-by name|shapes sets the int at `field` to 0|1 (tp_an_opts.ops_by_shapes),
 * --sort-ops self|total to 0|1 (ops_by_total). Return 0, or -1 for another value. */
int tp_cmd_parse_group_by(const char *v, void *field);
int tp_cmd_parse_sort_ops(const char *v, void *field);

#endif
