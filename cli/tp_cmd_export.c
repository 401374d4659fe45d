/* trainprof export: a .tprof trace as Chrome/Kineto trace JSON or an SQLite database.
 *
 * `trainprof export TRACE --format chrome|sqlite [-o FILE]`. The default output is TRACE
 * with .tprof replaced by .json or .sqlite; an -o ending in .gz gets gzip-compressed JSON.
 * A damaged trace exports what is readable, with a warning on stderr. Exit status: 0 done,
 * 1 the trace cannot be read or the output cannot be written, 2 usage error. */
#include "tp_cmd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_export_chrome.h"
#include "tp_export_sqlite.h"
#include "tp_reader.h"

static void usage(FILE *out) {
    fprintf(out, "usage: trainprof export TRACE --format chrome|sqlite [-o FILE]\n\n"
                 "Writes a .tprof trace as Chrome trace JSON in PyTorch-profiler (Kineto) form\n"
                 "(opens in Perfetto UI, chrome://tracing, HTA and `trainprof report`) or as an\n"
                 "SQLite database (schema: docs/export.md). Default FILE: TRACE with .json or\n"
                 ".sqlite in place of .tprof; a FILE ending in .gz is gzip-compressed JSON.\n");
}

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

/* TRACE minus ".tprof", plus `ext`; caller frees. */
static char *default_output(const char *trace, const char *ext) {
    size_t n = strlen(trace);
    if (ends_with(trace, ".tprof"))
        n -= 6;
    char *out = malloc(n + strlen(ext) + 1);
    if (out) {
        memcpy(out, trace, n);
        strcpy(out + n, ext);
    }
    return out;
}

typedef struct {
    const char *trace, *format, *output;
} export_args;

/* Returns -1 when parsed, else the exit status (0 for --help). */
static int parse_args(int argc, char **argv, export_args *a) {
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
            usage(stdout);
            return 0;
        } else if ((!strcmp(s, "--format") || !strcmp(s, "-o")) && i + 1 < argc) {
            *(s[1] == 'o' ? &a->output : &a->format) = argv[++i];
        } else if (!strncmp(s, "--format=", 9)) {
            a->format = s + 9;
        } else if (s[0] == '-' && s[1]) {
            fprintf(stderr, "trainprof export: unknown or incomplete option '%s'\n", s);
            usage(stderr);
            return 2;
        } else if (a->trace) {
            fprintf(stderr, "trainprof export: one TRACE at a time\n");
            return 2;
        } else {
            a->trace = s;
        }
    }
    if (!a->trace || !a->format) {
        usage(stderr);
        return 2;
    }
    if (strcmp(a->format, "chrome") && strcmp(a->format, "sqlite")) {
        fprintf(stderr, "trainprof export: unknown format '%s' (chrome or sqlite)\n", a->format);
        return 2;
    }
    return -1;
}

static int run_export(tp_reader *r, const export_args *a, const char *out) {
    char err[512] = "";
    tp_status st;
    if (!strcmp(a->format, "chrome")) {
        tp_export_stats s;
        st = tp_export_chrome(r, out, ends_with(out, ".gz"), &s, err, sizeof err);
        if (st == TP_OK)
            fprintf(stderr, "trainprof export: wrote %s (%llu events)\n", out,
                    (unsigned long long)s.events);
    } else {
        uint64_t rows = 0;
        st = tp_export_sqlite(r, out, &rows, err, sizeof err);
        if (st == TP_OK)
            fprintf(stderr, "trainprof export: wrote %s (%llu rows)\n", out,
                    (unsigned long long)rows);
    }
    if (st != TP_OK)
        fprintf(stderr, "trainprof export: %s\n", err[0] ? err : tp_status_str(st));
    return st == TP_OK ? 0 : 1;
}

int tp_cmd_export(int argc, char **argv) {
    export_args a = {0};
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0)
        return rc;
    tp_reader *r;
    tp_status st = tp_reader_open(a.trace, &r);
    if (st == TP_ERR_FORMAT && tp_cmd_not_native("export", a.trace))
        return 1;
    if (st != TP_OK) {
        fprintf(stderr, "trainprof export: %s: %s%s%s\n", a.trace, tp_status_str(st),
                st == TP_ERR_OPEN ? ": " : "", st == TP_ERR_OPEN ? strerror(errno) : "");
        return 1;
    }
    const char *msg = tp_reader_integrity(r)->message;
    if (msg[0])
        fprintf(stderr, "trainprof export: warning: %s: %s (exporting what is readable)\n", a.trace,
                msg);
    char *dflt =
        a.output ? NULL : default_output(a.trace, a.format[0] == 'c' ? ".json" : ".sqlite");
    rc = (a.output || dflt) ? run_export(r, &a, a.output ? a.output : dflt) : 1;
    free(dflt);
    tp_reader_close(r);
    return rc;
}
