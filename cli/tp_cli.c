/* trainprof: the command-line front end. Dispatches to one tp_cmd_* per subcommand. */
#include "tp_cmd.h"
#include "tp_mem.h"

#include <stdio.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

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
#if TP_GLIBC_MALLOC
    /* Blocks from 256 KiB up are mapped on their own and unmapped when freed. glibc's default
     * raises that threshold to the size of each such block freed (up to 32 MiB), after which
     * the import's and the analyses' arrays of a few MiB came from the heap, whose freed
     * room stayed resident and whose calloc clears every page: `report --compat hta` peaked
     * 2-7 MiB higher on every peer trace of >= 10 MB (43.1 against 37.0 MiB on a 62 MB one),
     * for ~30 % fewer page faults (~2 % of its CPU time). */
    mallopt(M_MMAP_THRESHOLD, 256 * 1024);
    /* Free room at the top of a heap (the main one, and each walking thread's arena) is given
     * back above 1 MiB instead of glibc's 128 KiB: the import's pieces and small arrays are
     * freed and allocated again all along, and each return cost a trim (brk or madvise) and
     * then a page fault per page reused: `report --compat hta` had 6-9 % fewer page faults on
     * the 54-62 MB peer traces, its peak RSS the same within the runs' spread. */
    mallopt(M_TRIM_THRESHOLD, 1024 * 1024);
    /* One arena for every thread: a second analysis thread's own arena kept the free room at
     * its top (up to the trim threshold above) resident for the rest of the report, which
     * malloc_trim does not give back for an arena other than the main one (glibc's mtrim
     * trims only the main arena's top): `report --compat hta`'s later analyses then ran
     * ~0.9 MiB above the view's base, and hta_df_index_resolver peaked 0.74 MiB higher
     * (median of 5, 17.27 against 16.53 MiB; tracelens_xdit_sd35 -0.25, hta_trace_diff_control
     * -0.12). Small blocks come from each thread's tcache without the arena's lock; CPU time
     * and wall time the same within the runs' spread (8 alternating runs, three sets). */
    mallopt(M_ARENA_MAX, 1);
#endif
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
