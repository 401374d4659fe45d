/* trainprof: the command-line front end. Dispatches to one tp_cmd_* per subcommand. */
#include "tp_cmd.h"
#include "tp_mem.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help;
} command;

static const command commands[] = {
    {"record", tp_cmd_record, "run a program under the collector and write a .tprof trace"},
    {"report", tp_cmd_report, "analyze traces (.tprof or PyTorch-profiler JSON) and explain them"},
    {"info", tp_cmd_info, "show a trace's header, contents and integrity"},
    {"export", tp_cmd_export, "write a trace as Chrome/Kineto JSON, a Perfetto trace or SQLite"},
    {"diff", tp_cmd_diff, "compare two runs (figures, kernels, ranges, findings); CI gates"},
    {"merge", tp_cmd_merge, "the cross-rank section from per-rank `report --format json` files"},
    {"tui", tp_cmd_tui, "browse a trace in the terminal (--snapshot: print one view as text)"},
    {"doctor", tp_cmd_doctor, "check this machine's driver, CUDA, CUPTI, cuDNN, NCCL and PyTorch"},
    {"top", tp_cmd_top, "watch a live job: its GPU timeline, steps and diagnosis as it runs"},
    {"capture", tp_cmd_capture, "write a trace of the next N steps or S seconds of a live job"},
    {"ps", tp_cmd_ps, "list your live and idle jobs"},
};

static void usage(FILE *out) {
    fprintf(out, "usage: trainprof <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].help);
    fprintf(out, "\n'trainprof <command> --help' shows a command's options.\n");
}

int main(int argc, char **argv) {
    tp_mem_tune_process();
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("trainprof %s\n", TP_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "trainprof: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
