/* trainprof export: a .tprof trace as Chrome/Kineto trace JSON or an SQLite database.
 *
 * `trainprof export TRACE --format chrome|sqlite [-o FILE]`, the formats being rows of a
 * table {name, extension, writer}. The default output is TRACE with .tprof replaced by the
 * format's extension (.json, .sqlite); an -o ending in .gz gets gzip-compressed JSON.
 * A damaged trace exports what is readable, with a warning on stderr. An existing output file
 * is kept unless --force; the trace itself is never an output. The export is written into a
 * private folder next to the output and renamed into place when complete, so a failed or
 * concurrent export never leaves half a file under the name and a symbolic link is replaced,
 * never followed; a device or pipe (/dev/stdout) is written in place. Exit status: 0 done,
 * 1 the trace cannot be read or the output cannot be written, 2 usage error. */
#include "tp_cmd.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tp_export_chrome.h"
#include "tp_export_sqlite.h"
#include "tp_outfile.h"
#include "tp_reader.h"

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

/* Each writer exports reader `r` to `out`; on success `done` says what was written ("1234
 * events"), on failure `err` why (may stay "": then the status says it). */
typedef tp_status (*export_fn)(tp_reader *r, const char *out, char *done, size_t done_len,
                               char *err, size_t err_len);

static tp_status write_chrome(tp_reader *r, const char *out, char *done, size_t done_len, char *err,
                              size_t err_len) {
    tp_export_stats s = {0};
    tp_status st = tp_export_chrome(r, out, ends_with(out, ".gz"), &s, err, err_len);
    snprintf(done, done_len, "%llu events", (unsigned long long)s.events);
    return st;
}

static tp_status write_sqlite(tp_reader *r, const char *out, char *done, size_t done_len, char *err,
                              size_t err_len) {
    uint64_t rows = 0;
    tp_status st = tp_export_sqlite(r, out, &rows, err, err_len);
    snprintf(done, done_len, "%llu rows", (unsigned long long)rows);
    return st;
}

/* The export formats: --format name, default extension (in place of .tprof), writer, and
 * what the format is for (the usage text). */
static const struct {
    const char *name, *ext;
    export_fn write;
    const char *help;
} formats[] = {
    {"chrome", ".json", write_chrome,
     "Chrome trace JSON in PyTorch-profiler (Kineto) form: opens in Perfetto UI,\n"
     "                   chrome://tracing, HTA and `trainprof report`; -o FILE.gz: "
     "gzip-compressed"},
    {"sqlite", ".sqlite", write_sqlite,
     "an SQLite database: typed tables, named views (schema: docs/export.md)"},
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
            "usage: trainprof export TRACE --format %s [-o FILE] [--force]\n\n"
            "Writes a .tprof trace in another format. Default FILE: TRACE with the format's\n"
            "extension in place of .tprof. An existing FILE is kept unless --force.\n",
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
    int force;
} export_args;

/* Returns -1 when parsed, else the exit status (0 for --help). */
static int parse_args(int argc, char **argv, export_args *a) {
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(s, "--force")) {
            a->force = 1;
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

/* Says `err` ("PATH: what"), naming `shown` where the exporter wrote `path`. */
static void say_error(const char *err, const char *path, const char *shown) {
    size_t n = strlen(path);
    if (!strncmp(err, path, n))
        fprintf(stderr, "trainprof export: %s%s\n", shown, err + n);
    else
        fprintf(stderr, "trainprof export: %s\n", err);
}

/* Exports into `path`; messages name `shown`, the file the user asked for (the same name
 * as `path` but for the folder, so the chrome writer's .gz test sees the same suffix). */
static int run_export(tp_reader *r, const export_args *a, const char *path, const char *shown) {
    char err[512] = "", done[64];
    tp_status st =
        formats[format_index(a->format)].write(r, path, done, sizeof done, err, sizeof err);
    if (st == TP_OK)
        fprintf(stderr, "trainprof export: wrote %s (%s)\n", shown, done);
    else
        say_error(err[0] ? err : tp_status_str(st), path, shown);
    return st == TP_OK ? 0 : 1;
}

typedef enum { OUT_NEW, OUT_REPLACE, OUT_STREAM } out_kind;

/* How `out` is written: as a new file, replacing one (--force), or in place when it is a
 * device or pipe. Returns -1 after saying why it may not be written at all. */
static int classify_output(const char *trace, const char *out, int force, out_kind *k) {
    struct stat l, t;
    tp_file_id in, at;
    if (tp_outfile_id(out, &at) == 0 && tp_outfile_id(trace, &in) == 0 && in.dev == at.dev &&
        in.ino == at.ino) {
        fprintf(stderr, "trainprof export: %s is the trace being exported; choose another -o\n",
                out);
        return -1;
    }
    *k = OUT_NEW;
    if (lstat(out, &l) != 0)
        return 0;
    int is_link = S_ISLNK(l.st_mode), target = stat(out, &t) == 0;
    if (S_ISDIR(l.st_mode) || (is_link && target && S_ISDIR(t.st_mode))) {
        fprintf(stderr, "trainprof export: %s: is a directory\n", out);
        return -1;
    }
    if (!S_ISREG(l.st_mode) && !is_link) {
        *k = OUT_STREAM;
        return 0;
    }
    if (is_link && target && !S_ISREG(t.st_mode)) { /* /dev/stdout and the like */
        *k = OUT_STREAM;
        return 0;
    }
    if (!force) {
        fprintf(stderr, "trainprof export: %s already exists; use --force to replace it\n", out);
        return -1;
    }
    *k = OUT_REPLACE;
    return 0;
}

/* Exports into DIR/.trainprof-export-XXXXXX/NAME and renames that to `out` when complete. */
static int export_via_temp(tp_reader *r, const export_args *a, const char *out, int replace) {
    char dir[PATH_MAX], tmpdir[PATH_MAX + 32], tmp[2 * PATH_MAX + 64];
    const char *slash = strrchr(out, '/');
    const char *name = slash ? slash + 1 : out;
    if (tp_outfile_dirname(out, dir, sizeof dir) != 0 ||
        (size_t)snprintf(tmpdir, sizeof tmpdir, "%s/.trainprof-export-XXXXXX", dir) >=
            sizeof tmpdir) {
        fprintf(stderr, "trainprof export: output path too long: %s\n", out);
        return 1;
    }
    if (!mkdtemp(tmpdir)) {
        fprintf(stderr, "trainprof export: cannot create %s: %s\n", out, strerror(errno));
        return 1;
    }
    snprintf(tmp, sizeof tmp, "%s/%s", tmpdir, name);
    int rc = run_export(r, a, tmp, out);
    if (rc == 0) {
        tp_status st = tp_outfile_publish(tmp, out, replace);
        if (st == TP_ERR_EXISTS)
            fprintf(stderr, "trainprof export: %s appeared meanwhile; use --force to replace it\n",
                    out);
        else if (st != TP_OK)
            fprintf(stderr, "trainprof export: cannot create %s: %s\n", out, strerror(errno));
        rc = st == TP_OK ? 0 : 1;
    }
    unlink(tmp); /* what is left when the export or the rename failed */
    snprintf(tmp, sizeof tmp, "%s/%s-journal", tmpdir, name);
    unlink(tmp);
    rmdir(tmpdir);
    return rc;
}

static int export_to(tp_reader *r, const export_args *a, const char *out) {
    out_kind k;
    if (classify_output(a->trace, out, a->force, &k) != 0)
        return 1;
    if (k == OUT_STREAM)
        return run_export(r, a, out, out);
    return export_via_temp(r, a, out, k == OUT_REPLACE);
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
    char *dflt = a.output ? NULL : default_output(a.trace, formats[format_index(a.format)].ext);
    rc = (a.output || dflt) ? export_to(r, &a, a.output ? a.output : dflt) : 1;
    free(dflt);
    tp_reader_close(r);
    return rc;
}
