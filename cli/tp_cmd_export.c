/* trainprof export: a .tprof trace as Chrome/Kineto trace JSON or an SQLite database.
 *
 * `trainprof export TRACE --format chrome|sqlite [-o FILE]`, the formats being rows of a
 * table {name, extension, writer, recording}. Chrome JSON holds TRACE's whole recording: the
 * traces of its other processes beside it (docs/collector.md, "One recording") come along,
 * each process under its pid; SQLite holds TRACE alone. The default output is TRACE with .tprof
 * replaced by the format's extension (.json, .sqlite); an -o ending in .gz gets gzip-compressed
 * JSON. A damaged trace exports what is readable, with a warning on stderr. Exit status: 0 done, 1
 * the trace cannot be read or the output cannot be written, 2 usage error. */
#include "tp_cmd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_export_chrome.h"
#include "tp_export_sqlite.h"
#include "tp_layout.h"
#include "tp_reader.h"
#include "tp_text.h"

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

/* Each writer exports the `n` traces of a recording (r[0] the main one; a writer of one trace
 * at a time takes r[0]) to `out`; on success `done` says what was written ("1234 events"), on
 * failure `err` why (may stay "": then the status says it). */
typedef tp_status (*export_fn)(tp_reader *const *r, size_t n, const char *out, char *done,
                               size_t done_len, char *err, size_t err_len);

static tp_status write_chrome(tp_reader *const *r, size_t n, const char *out, char *done,
                              size_t done_len, char *err, size_t err_len) {
    tp_export_stats s = {0};
    tp_status st = tp_export_chrome_set(r, n, out, ends_with(out, ".gz"), &s, err, err_len);
    snprintf(done, done_len, "%llu events", (unsigned long long)s.events);
    return st;
}

static tp_status write_sqlite(tp_reader *const *r, size_t n, const char *out, char *done,
                              size_t done_len, char *err, size_t err_len) {
    uint64_t rows = 0;
    (void)n;
    tp_status st = tp_export_sqlite(r[0], out, &rows, err, err_len);
    snprintf(done, done_len, "%llu rows", (unsigned long long)rows);
    return st;
}

/* The export formats: --format name, default extension (in place of .tprof), writer, whether
 * it writes a whole recording into one file (else the trace named only), and what the format
 * is for (the usage text). */
static const struct {
    const char *name, *ext;
    export_fn write;
    int recording;
    const char *help;
} formats[] = {
    {"chrome", ".json", write_chrome, 1,
     "Chrome trace JSON in PyTorch-profiler (Kineto) form: opens in Perfetto UI,\n"
     "                   chrome://tracing, HTA and `trainprof report`; -o FILE.gz: "
     "gzip-compressed; the\n"
     "                   traces of the recording's other processes beside TRACE come along"},
    {"sqlite", ".sqlite", write_sqlite, 0,
     "an SQLite database: typed tables, named views (schema: docs/export.md); TRACE\n"
     "                   only (export a recording's other processes one by one)"},
};
#define N_FORMATS (sizeof formats / sizeof formats[0])

/* "chrome|sqlite" (sep "|") or "chrome or sqlite" (sep " or ") */
static const char *format_names(char *buf, size_t n, const char *sep) {
    size_t used = 0;
    buf[0] = 0;
    for (size_t i = 0; i < N_FORMATS && used < n; i++) {
        int w = snprintf(buf + used, n - used, "%s%s", i ? sep : "", formats[i].name);
        used += w > 0 ? (size_t)w : 0;
    }
    return buf;
}

static void usage(FILE *out) {
    char names[64];
    fprintf(out,
            "usage: trainprof export TRACE --format %s [-o FILE]\n\n"
            "Writes a .tprof trace in another format. Default FILE: TRACE with the format's\n"
            "extension in place of .tprof.\n",
            format_names(names, sizeof names, "|"));
    for (size_t i = 0; i < N_FORMATS; i++)
        fprintf(out, "  %-7s %-8s %s\n", formats[i].name, formats[i].ext, formats[i].help);
}

/* The row of format `name`, or -1. */
static int format_index(const char *name) {
    for (size_t i = 0; name && i < N_FORMATS; i++)
        if (!strcmp(name, formats[i].name))
            return (int)i;
    return -1;
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
    if (format_index(a->format) < 0) {
        char names[64];
        fprintf(stderr, "trainprof export: unknown format '%s' (%s)\n", a->format,
                format_names(names, sizeof names, " or "));
        return 2;
    }
    return -1;
}

static int run_export(tp_reader *const *r, size_t n, const export_args *a, const char *out) {
    char err[512] = "", done[64], safe[4096];
    tp_status st =
        formats[format_index(a->format)].write(r, n, out, done, sizeof done, err, sizeof err);
    /* The output's name comes from the trace's, the error may quote the trace: both are
     * printed terminal-safe (tp_text). */
    if (st == TP_OK)
        fprintf(stderr, "trainprof export: wrote %s (%s)\n", tp_text_safe(safe, sizeof safe, out),
                done);
    else
        fprintf(stderr, "trainprof export: %s\n",
                tp_text_safe(safe, sizeof safe, err[0] ? err : tp_status_str(st)));
    return st == TP_OK ? 0 : 1;
}

/* The recording id of trace `r` (its PROCESS record's job_id), 0 when unknown. */
static uint64_t job_of(const tp_reader *r) {
    const tp_rec_hdr *const *recs;
    tp_rec_process p = {0};
    if (tp_reader_meta(r, TP_REC_PROCESS, &recs) > 0)
        tp_record_get(recs[0], &p, sizeof p);
    return p.job_id;
}

/* After r[0] (TRACE), the traces of its recording's other processes beside it (tp_layout),
 * those that carry its recording id; returns how many readers r holds in all (at most cap).
 * A format that writes one trace only says that the others are not in its output. */
static size_t open_recording(const export_args *a, tp_reader **r, size_t cap) {
    char **paths, safe[4096];
    size_t n = 1, found = 0;
    uint64_t job = job_of(r[0]);
    if (!job || tp_layout_members(a->trace, &paths, &found) != TP_OK)
        return 1;
    for (size_t i = 0; i < found && n < cap; i++) {
        tp_reader *m;
        if (tp_reader_open(paths[i], &m) != TP_OK)
            continue;
        if (job_of(m) == job)
            r[n++] = m;
        else
            tp_reader_close(m);
    }
    tp_layout_free(paths, found);
    if (n > 1 && !formats[format_index(a->format)].recording) {
        fprintf(stderr,
                "trainprof export: note: %zu other process%s of this recording (%s) %s not in "
                "this file; export %s one by one, or use --format chrome for one file\n",
                n - 1, n > 2 ? "es" : "", tp_text_safe(safe, sizeof safe, a->trace),
                n > 2 ? "are" : "is", n > 2 ? "them" : "it");
        for (size_t i = 1; i < n; i++)
            tp_reader_close(r[i]);
        n = 1;
    }
    return n;
}

#define MAX_PROCESSES 4096 /* traces of one recording written into one file */

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
    tp_reader **set = calloc(MAX_PROCESSES, sizeof *set);
    if (!set)
        abort();
    set[0] = r;
    size_t n = open_recording(&a, set, MAX_PROCESSES);
    char *dflt = a.output ? NULL : default_output(a.trace, formats[format_index(a.format)].ext);
    rc = (a.output || dflt) ? run_export(set, n, &a, a.output ? a.output : dflt) : 1;
    free(dflt);
    for (size_t i = 0; i < n; i++)
        tp_reader_close(set[i]);
    free(set);
    return rc;
}
