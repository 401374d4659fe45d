/* trainprof merge: the reduce step of a multi-node job. Reads the JSON reports that
 * `trainprof report --format json` wrote per rank (or per node) and prints the cross-rank
 * section (analyzer/tp_merge: the report's own rows and rules) without loading any trace.
 *
 * `trainprof merge REPORT.json... [--format text|json] [-o FILE [--force]]`. Exit status: 0 done, 1
 * a report cannot be read or is not one the merge takes (one line on stderr), 2 usage. */
#include "tp_cmd.h"

#include <string.h>

#include "tp_merge.h"

static void usage(FILE *f) {
    fprintf(f, "usage: trainprof merge REPORT.json... [--format text|json] [-o FILE [--force]]\n"
               "Each REPORT.json is `trainprof report --format json` of one rank (or several),\n"
               "run where its trace lives; the merge prints the cross-rank section of them all\n"
               "(per-rank step time, utilization, communication, memory peak, data wait;\n"
               "stragglers, ranks waiting in collectives, memory imbalance) without the traces.\n"
               "Each rank once; every report from one trainprof schema and mode.\n");
}

typedef struct {
    int json;
    const char *out;
    int force; /* --force: -o may replace a trace */
    size_t n_in;
    char **in;
} merge_args;

/* Options and REPORT paths into `a`; 0, -1 for a usage error, 1 after --help. */
static int parse(int argc, char **argv, merge_args *a) {
    a->in = argv + 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return 1;
        if (!strcmp(argv[i], "--format") || !strcmp(argv[i], "-o")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "trainprof merge: %s takes a value\n", argv[i]);
                return -1;
            }
            if (argv[i][1] == 'o') {
                a->out = argv[++i];
                continue;
            }
            const char *v = argv[++i];
            if (strcmp(v, "text") && strcmp(v, "json")) {
                fprintf(stderr, "trainprof merge: --format takes text or json\n");
                return -1;
            }
            a->json = !strcmp(v, "json");
        } else if (!strcmp(argv[i], "--force")) {
            a->force = 1;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "trainprof merge: unknown option %s\n", argv[i]);
            return -1;
        } else {
            a->in[a->n_in++] = argv[i]; /* paths compacted in place, before i */
        }
    }
    if (!a->n_in)
        fprintf(stderr, "trainprof merge: no report given\n");
    return a->n_in ? 0 : -1;
}

static int run(const merge_args *a) {
    if (tp_cmd_check_output("merge", a->out, (const char *const *)a->in, a->n_in, a->force))
        return 1;
    tp_merge *mg = tp_merge_open();
    char err[1024];
    for (size_t i = 0; i < a->n_in; i++)
        if (tp_merge_add_file(mg, a->in[i], err, sizeof err) != TP_OK) {
            fprintf(stderr, "trainprof merge: %s\n", err);
            tp_merge_close(mg);
            return 1;
        }
    FILE *out = tp_cmd_output_open("merge", a->out);
    if (!out) {
        tp_merge_close(mg);
        return 1;
    }
    tp_status st = tp_merge_write(mg, out, a->json);
    tp_merge_close(mg);
    int rc = tp_cmd_output_close("merge", out, a->out, 0);
    if (st != TP_OK && st != TP_ERR_IO && !rc) {
        fprintf(stderr, "trainprof merge: %s\n", tp_status_str(st));
        rc = 1;
    }
    return rc;
}

int tp_cmd_merge(int argc, char **argv) {
    merge_args a = {0};
    int p = parse(argc, argv, &a);
    if (p != 0) {
        usage(p > 0 ? stdout : stderr);
        return p > 0 ? 0 : 2;
    }
    return run(&a);
}
