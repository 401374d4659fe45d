/* trainprof report: load traces (.tprof or PyTorch-profiler JSON; files or folders of
 * per-rank files) into one model and write the analyzer's report.
 * Exit status: 0 report written, 1 load or write failure (message on stderr), 2 usage. */
#include "tp_cmd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_load.h"
#include "tp_model.h"
#ifdef TP_HAVE_REPORT
#include "tp_report.h"
#endif

typedef struct {
    const char **paths;
    size_t n_paths;
    int rank; /* -1: all */
    int json;
    int compat_hta, include_last_step, no_ns_rounding;
    int top;
    int no_symbols;
    const char *out;
} report_args;

static void usage(FILE *f) {
    fprintf(f, "usage: trainprof report TRACE... [--rank N] [--format text|json] [--compat hta]\n"
               "                        [--include-last-step] [--no-ns-rounding] [--top N]\n"
               "                        [--no-symbols] [-o FILE]\n"
               "TRACE is a .tprof file, a PyTorch-profiler JSON (.json, .json.gz), or a folder of\n"
               "per-rank files. --compat hta reproduces Holistic Trace Analysis' rules.\n"
               "CPU stacks are symbolized from the recorded modules' files (function, file:line);\n"
               "--no-symbols keeps them as module+offset.\n");
}

static int parse_int_arg(const char *s, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < 0 || v > 1000000)
        return -1;
    *out = (int)v;
    return 0;
}

/* Returns 0 ok, 1 --help given, 2 usage error (message printed). */
static int parse_args(int argc, char **argv, report_args *a) {
    memset(a, 0, sizeof *a);
    a->rank = -1;
    a->paths = calloc((size_t)argc, sizeof *a->paths);
    if (!a->paths)
        abort();
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(s, "-h") || !strcmp(s, "--help"))
            return 1;
        if (!strcmp(s, "--compat")) {
            if (!val || strcmp(val, "hta"))
                return fprintf(stderr, "trainprof report: --compat takes 'hta'\n"), 2;
            a->compat_hta = 1, i++;
        } else if (!strcmp(s, "--format")) {
            if (!val || (strcmp(val, "text") && strcmp(val, "json")))
                return fprintf(stderr, "trainprof report: --format takes text or json\n"), 2;
            a->json = !strcmp(val, "json"), i++;
        } else if (!strcmp(s, "--rank") || !strcmp(s, "--top")) {
            if (!val || parse_int_arg(val, !strcmp(s, "--rank") ? &a->rank : &a->top))
                return fprintf(stderr, "trainprof report: %s takes a number\n", s), 2;
            i++;
        } else if (!strcmp(s, "-o")) {
            if (!val)
                return fprintf(stderr, "trainprof report: -o takes a file name\n"), 2;
            a->out = val, i++;
        } else if (!strcmp(s, "--include-last-step")) {
            a->include_last_step = 1;
        } else if (!strcmp(s, "--no-ns-rounding")) {
            a->no_ns_rounding = 1;
        } else if (!strcmp(s, "--no-symbols")) {
            a->no_symbols = 1;
        } else if (s[0] == '-' && s[1]) {
            return fprintf(stderr, "trainprof report: unknown option '%s'\n", s), 2;
        } else {
            a->paths[a->n_paths++] = s;
        }
    }
    if (a->n_paths == 0)
        return fprintf(stderr, "trainprof report: no trace given\n"), 2;
    return 0;
}

#ifndef TP_HAVE_REPORT
/* Until the analyses land: what was loaded, per rank. */
static int write_summary(FILE *out, const tp_model *m, const report_args *a) {
    for (size_t i = 0; i < m->n_ranks; i++) {
        const tp_rank *r = &m->ranks[i];
        if (a->rank >= 0 && r->rank != a->rank)
            continue;
        size_t gpu = 0;
        for (size_t j = 0; j < r->ev.n; j++)
            gpu += r->ev.stream[j] != -1;
        fprintf(out, "rank %d (%s): %zu events, %zu on GPU streams, %zu memory events\n", r->rank,
                r->file, r->ev.n, gpu, r->mem.n);
        if (r->device_type == TP_DEVTYPE_CPU_ONLY)
            fprintf(out, "  no GPU activity in this trace\n");
    }
    return ferror(out) ? 1 : 0;
}
#endif

static int write_report(FILE *out, const tp_model *m, const report_args *a) {
    if (a->rank >= 0 && !tp_model_rank(m, a->rank)) {
        fprintf(stderr, "trainprof report: no rank %d in the trace (ranks:", a->rank);
        for (size_t i = 0; i < m->n_ranks; i++)
            fprintf(stderr, " %d", m->ranks[i].rank);
        fprintf(stderr, ")\n");
        return 1;
    }
#ifdef TP_HAVE_REPORT
    tp_report_opts o;
    tp_report_opts_init(&o);
    o.format = a->json ? TP_REPORT_JSON : TP_REPORT_TEXT;
    o.compat_hta = a->compat_hta;
    o.include_last_step = a->include_last_step;
    o.no_ns_rounding = a->no_ns_rounding;
    o.rank = a->rank;
    o.no_symbols = a->no_symbols;
    if (a->top)
        o.top = a->top;
    tp_status st = tp_report_write(out, m, &o);
    if (st == TP_ERR_IO)
        return 0; /* a write failed: tp_cmd_flush, next, says why */
    if (st != TP_OK) {
        fprintf(stderr, "trainprof report: %s\n", tp_status_str(st));
        return 1;
    }
    return 0;
#else
    return write_summary(out, m, a);
#endif
}

int tp_cmd_report(int argc, char **argv) {
    report_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc != 0) {
        usage(rc == 1 ? stdout : stderr);
        free(a.paths);
        return rc == 1 ? 0 : 2;
    }
    tp_model *m;
    rc = tp_cmd_load("report", a.paths, a.n_paths, &m);
    free(a.paths);
    if (rc != 0)
        return rc;
    FILE *out = a.out ? fopen(a.out, "w") : stdout;
    if (!out) {
        fprintf(stderr, "trainprof report: %s: %s\n", a.out, strerror(errno));
        tp_model_close(m);
        return 1;
    }
    rc = write_report(out, m, &a);
    if (rc == 0)
        rc = tp_cmd_flush("report", out, a.out ? a.out : "standard output");
    if (a.out && fclose(out) != 0 && rc == 0) {
        fprintf(stderr, "trainprof report: cannot write %s: %s\n", a.out, strerror(errno));
        rc = 1;
    }
    tp_model_close(m);
    return rc;
}
