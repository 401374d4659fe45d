/* trainprof diff: two runs side by side, and regression gates for CI.
 *
 * `trainprof diff BASE NEW [--rank N] [--format text|json] [--compat hta] [--top N]
 * [--fail-if EXPR]... [-o FILE]`: BASE and NEW are traces in any format `report` reads (each
 * loaded into a model of its own); the comparison is analyzer/tp_diff's. Exit status: 0 done
 * and every gate passed, 1 a gate failed or a trace cannot be read, 2 usage error, 3 no rank in
 * both runs. */
#include "tp_cmd.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "tp_diff.h"

#define MAX_GATES 64

typedef struct {
    tp_diff_opts o;
    tp_diff_gate gates[MAX_GATES];
    size_t n_gates;
    int format_json;
    const char *out;
    int force; /* --force: -o may replace a trace */
} diff_args;

static void usage(FILE *f) {
    fprintf(f, "usage: trainprof diff BASE NEW [--rank N] [--format text|json] [--compat hta]\n"
               "                      [--top N] [--fail-if EXPR]... [-o FILE [--force]]\n"
               "Compares two runs: headline figures, device ops, ranges and copies by name\n"
               "(largest changes first), findings that appeared or went away.\n"
               "--fail-if EXPR exits 1 when a change crosses a threshold (repeatable):\n"
               "  KEY>+N%%  KEY<-N%%   relative change of a figure, e.g. step_time>+5%%\n"
               "  KEY>N    KEY<-N     absolute change in the figure's unit, e.g. utilization<-5\n"
               "  finding:ID          a finding present in NEW and not in BASE\n"
               "A gate whose figure is missing in either run fails. Figures:\n");
    tp_diff_list_figures(f);
    fprintf(f, "Exit status: 0 ok, 1 a gate failed or a trace cannot be read, 2 usage error,\n"
               "3 no rank in both runs.\n");
}

static int parse_format(const char *v, void *field) {
    if (strcmp(v, "text") && strcmp(v, "json"))
        return -1;
    *(int *)field = !strcmp(v, "json");
    return 0;
}

static int parse_compat(const char *v, void *field) {
    return strcmp(v, "hta") ? -1 : (*(int *)field = 1, 0);
}

/* --fail-if: `field` is the args' gates array, followed by its count (diff_args). */
static int parse_gate(const char *v, void *field) {
    diff_args *a = (diff_args *)((char *)field - offsetof(diff_args, gates));
    char err[256];
    if (a->n_gates >= MAX_GATES) {
        fprintf(stderr, "trainprof diff: at most %d --fail-if\n", MAX_GATES);
        return -1;
    }
    if (tp_diff_parse_gate(v, &a->gates[a->n_gates], err, sizeof err) != TP_OK) {
        fprintf(stderr, "trainprof diff: --fail-if %s\n", err);
        return -1;
    }
    a->n_gates++;
    return 0;
}

#define OPT(name, kind, field, ...)                                                                \
    { name, kind, offsetof(diff_args, field), __VA_ARGS__ }
static const tp_cmd_opt options[] = {
    OPT("--rank", TP_OPT_INT, o.rank, 0, 1000000, NULL, "takes a number"),
    OPT("--top", TP_OPT_INT, o.top, 0, 1000000, NULL, "takes a number"),
    OPT("--format", TP_OPT_PARSE, format_json, 0, 0, parse_format, "takes text or json"),
    OPT("--compat", TP_OPT_PARSE, o.an.compat_hta, 0, 0, parse_compat, "takes 'hta'"),
    OPT("--fail-if", TP_OPT_PARSE, gates, 0, 0, parse_gate, "takes an expression (see --help)"),
    OPT("--no-symbols", TP_OPT_FLAG, o.an.no_symbols, 0, 0, NULL, ""),
    OPT("-o", TP_OPT_STR, out, 0, 0, NULL, "takes a file name"),
    OPT("--force", TP_OPT_FLAG, force, 0, 0, NULL, ""),
};
#undef OPT

static int run_pair(const tp_model *base, const tp_model *next, void *args) {
    diff_args *a = args;
    a->o.json = a->format_json;
    a->o.gates = a->gates;
    a->o.n_gates = a->n_gates;
    FILE *out = tp_cmd_output_open("diff", a->out);
    if (!out)
        return 1;
    int failed = 0, rc = 0;
    tp_status st = tp_diff_write(out, base, next, &a->o, &failed);
    if (st == TP_ERR_NOT_FOUND) {
        if (a->o.rank >= 0)
            fprintf(stderr, "trainprof diff: rank %d is not in both runs\n", a->o.rank);
        else
            fprintf(stderr, "trainprof diff: no rank is in both runs\n");
        rc = 3;
    } else if (st != TP_OK && st != TP_ERR_IO) {
        fprintf(stderr, "trainprof diff: %s\n", tp_status_str(st));
        rc = 1;
    }
    rc = tp_cmd_output_close("diff", out, a->out, rc);
    if (rc == 0 && failed) {
        fprintf(stderr, "trainprof diff: %d gate check(s) failed\n", failed);
        rc = 1;
    }
    return rc;
}

static const char *output(const void *args, int *force) {
    const diff_args *a = args;
    *force = a->force;
    return a->out;
}

int tp_cmd_diff(int argc, char **argv) {
    static const tp_cmd_traces cmd = {.name = "diff",
                                      .usage = usage,
                                      .opts = options,
                                      .n_opts = sizeof options / sizeof options[0],
                                      .run_pair = run_pair,
                                      .output = output};
    diff_args a = {.out = NULL};
    tp_an_opts_init(&a.o.an);
    a.o.rank = -1;
    return tp_cmd_traces_main(&cmd, &a, argc, argv);
}
