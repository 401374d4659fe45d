/* trainprof export: a .tprof trace as Chrome/Kineto trace JSON, a Perfetto trace, an SQLite
 * database or folded stacks.
 *
 * `trainprof export TRACE --format chrome|folded|perfetto|sqlite [-o FILE]`, the formats being
 * rows of a table {name, extension, writer, recording}. Every format holds TRACE's whole
 * recording: the traces of its other processes beside it (docs/collector.md, "One recording")
 * come along, each process under its pid (Chrome, Perfetto: its own pid; SQLite: a pid column in
 * every table; folded: loaded into one model, as `report` does). SQLite's frames and folded
 * stacks are symbolized with model/'s tp_symbolize (--no-symbols: module+offset). SQLite has
 * two schemas, rows of their own table: trainprof's (the default) and, with --schema nsys, the
 * tables of `nsys export --type sqlite` (traces/tp_export_sqlite_nsys). The default
 * output is TRACE with .tprof replaced by the format's extension (.json, .folded, .pftrace,
 * .sqlite); an -o ending in .gz gets gzip-compressed JSON. A damaged trace exports what is
 * readable, with a warning on stderr. An existing output file is kept unless --force; the trace
 * itself is never an output. The export is written into a private folder next to the output and
 * renamed into place when complete, so a failed or concurrent export never leaves half a file
 * under the name and a symbolic link is replaced, never followed; a device or pipe (/dev/stdout)
 * is written in place. Exit status: 0 done, 1 the trace cannot be read or the output cannot be
 * written, 2 usage error. */
#include "tp_cmd.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tp_cmd_export_job.h"
#include "tp_cmd_export_mem.h"
#include "tp_export_chrome.h"
#include "tp_export_perfetto.h"
#include "tp_export_sqlite.h"
#include "tp_export_sqlite_nsys.h"
#include "tp_folded.h"
#include "tp_load.h"
#include "tp_layout.h"
#include "tp_outfile.h"
#include "tp_reader.h"
#include "tp_symbolize.h"
#include "tp_progress.h"
#include "tp_text.h"

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

/* The traces to export: TRACE first, then those of its recording's other processes; and
 * what the formats that read a model instead (folded) need: TRACE's path and options. */
typedef struct {
    tp_reader **r;
    size_t n;
    const char *trace;
    const char *weight;    /* folded: --weight */
    int no_symbols;        /* folded: --no-symbols */
    const tp_cmd_job *job; /* a multi-rank job (a folder, several files); NULL: one recording */
} trace_set;

/* Each writer exports the set (a writer of one trace at a time takes r[0]) to `out`; on
 * success `done` says what was written ("1234 events"), on failure `err` why (may stay "":
 * then the status says it). */
typedef tp_status (*export_fn)(const trace_set *t, const char *out, char *done, size_t done_len,
                               char *err, size_t err_len);

static tp_status write_chrome(const trace_set *t, const char *out, char *done, size_t done_len,
                              char *err, size_t err_len) {
    tp_export_stats s = {0};
    tp_export_counter *mem = NULL; /* device memory counters: the allocator replay's timeline */
    size_t n_mem = t->job ? 0 : tp_cmd_export_mem_counters(t->trace, &mem);
    tp_export_job j = {NULL, NULL, 0};
    if (t->job)
        j = (tp_export_job){t->job->place, t->job->util, t->job->n_util};
    tp_status st = tp_export_chrome_job(t->r, t->n, t->job ? &j : NULL, mem, n_mem, out,
                                        ends_with(out, ".gz"), &s, err, err_len);
    free(mem);
    snprintf(done, done_len, "%llu events", (unsigned long long)s.events);
    return st;
}

/* The SQLite export's frames, symbolized by model/'s tp_symbolize (traces/, where the
 * exporter lives, sits below model/ in the folder order and cannot reach it). */
static size_t symbolize(void *ctx, const char *path, const uint8_t *build_id, size_t len,
                        uint64_t vaddr, tp_export_frame *out, size_t max, const char **why) {
    const tp_sym *sym = tp_symbolize(ctx, path, build_id, len, vaddr);
    if (sym->status != TP_SYM_OK) {
        *why = tp_sym_status_str(sym->status);
        return 0;
    }
    size_t n = sym->n < max ? sym->n : max;
    for (size_t k = 0; k < n; k++)
        out[k] = (tp_export_frame){sym->f[k].func, sym->f[k].file, sym->f[k].line};
    return n;
}

/* The SQLite exports' symbolizer, into *o (none with --no-symbols); close what it returns. */
static tp_symbolizer *open_symbols(const trace_set *t, tp_export_sqlite_opts *o) {
    tp_symbolizer *sym = NULL;
    *o = (tp_export_sqlite_opts){NULL, NULL};
    if (!t->no_symbols && tp_symbolizer_open(&sym) == TP_OK)
        *o = (tp_export_sqlite_opts){symbolize, sym};
    return sym;
}

static tp_status write_sqlite(const trace_set *t, const char *out, char *done, size_t done_len,
                              char *err, size_t err_len) {
    uint64_t rows = 0;
    tp_export_sqlite_opts o;
    tp_symbolizer *sym = open_symbols(t, &o);
    tp_status st = tp_export_sqlite_set(t->r, t->n, out, &o, &rows, err, err_len);
    tp_symbolizer_close(sym);
    if (st == TP_OK) /* live blocks at the peak and the OOM: the allocator replay's */
        st = tp_cmd_export_mem_blocks(t->trace, out, err, err_len);
    snprintf(done, done_len, "%llu rows, %zu process%s", (unsigned long long)rows, t->n,
             t->n == 1 ? "" : "es");
    return st;
}

/* --schema nsys: the tables and columns of `nsys export --type sqlite` (docs/export.md). */
static tp_status write_sqlite_nsys(const trace_set *t, const char *out, char *done, size_t done_len,
                                   char *err, size_t err_len) {
    uint64_t rows = 0;
    tp_export_sqlite_opts o;
    tp_symbolizer *sym = open_symbols(t, &o);
    tp_status st = tp_export_sqlite_nsys(t->r, t->n, out, &o, &rows, err, err_len);
    tp_symbolizer_close(sym);
    snprintf(done, done_len, "%llu rows, %zu process%s, nsys schema", (unsigned long long)rows,
             t->n, t->n == 1 ? "" : "es");
    return st;
}

/* Folded stacks read the model (frames symbolized, kernels linked to their launches), so
 * this writer loads TRACE (and its recording's other processes, as `report` does). */
static tp_status write_folded(const trace_set *t, const char *out, char *done, size_t done_len,
                              char *err, size_t err_len) {
    tp_model *m = NULL;
    tp_load_result res;
    tp_status st = tp_load_paths(&t->trace, 1, &m, &res);
    if (st != TP_OK) {
        snprintf(err, err_len, "%s", res.error);
        return st;
    }
    FILE *f = fopen(out, "w");
    if (!f) {
        snprintf(err, err_len, "%s: cannot create file (%s)", out, strerror(errno));
        tp_model_close(m);
        return TP_ERR_OPEN;
    }
    tp_folded_opts o = {t->weight, t->no_symbols};
    tp_folded_stats s = {0, 0, 0};
    st = tp_folded_write(f, m, &o, &s);
    if (fclose(f) != 0 && st == TP_OK)
        st = TP_ERR_IO;
    if (st == TP_ERR_IO)
        snprintf(err, err_len, "%s: %s", out, strerror(errno));
    snprintf(done, done_len, "%llu stacks, %s weight %lld ns", (unsigned long long)s.lines,
             t->weight ? t->weight : "gpu", (long long)s.total_ns);
    int sampled = t->weight && !strncmp(t->weight, "samples", 7);
    if (st == TP_OK && !s.lines && sampled) /* an empty file opens as an empty flame graph */
        fprintf(stderr, "trainprof export: note: the trace has no samples with Python frames "
                        "(record with --sample)\n");
    else if (st == TP_OK && !s.lines)
        fprintf(stderr,
                "trainprof export: note: no %s event has a recorded stack (record with "
                "--stacks api, or --stacks all for ranges)\n",
                t->weight ? t->weight : "gpu");
    tp_model_close(m);
    return st;
}

static tp_status write_perfetto(const trace_set *t, const char *out, char *done, size_t done_len,
                                char *err, size_t err_len) {
    tp_perfetto_stats s = {0};
    tp_export_job j = {NULL, NULL, 0};
    if (t->job)
        j = (tp_export_job){t->job->place, t->job->util, t->job->n_util};
    tp_status st = tp_export_perfetto_job(t->r, t->n, t->job ? &j : NULL, out, &s, err, err_len);
    snprintf(done, done_len, "%llu packets, %llu slices, %llu flows", (unsigned long long)s.packets,
             (unsigned long long)s.slices, (unsigned long long)s.flows);
    return st;
}

/* The export formats: --format name, default extension (in place of .tprof), writer, whether
 * it writes a whole recording into one file (else the trace named only), and what the format
 * is for (the usage text). */
static const struct {
    const char *name, *ext;
    export_fn write;
    int recording;
    int job;    /* writes a job of several ranks into one file (a folder, several TRACEs) */
    int stream; /* written front to back, so `-o -` can be standard output (SQLite seeks) */
    const char *help;
} formats[] = {
    {"chrome", ".json", write_chrome, 1, 1, 1,
     "Chrome trace JSON in PyTorch-profiler (Kineto) form: opens in Perfetto UI,\n"
     "                    chrome://tracing, HTA and `trainprof report`; -o FILE.gz: "
     "gzip-compressed; the\n"
     "                    traces of the recording's other processes beside TRACE come along"},
    {"folded", ".folded", write_folded, 1, 0, 1,
     "folded stacks (frame;frame;... WEIGHT, root first) for flamegraph.pl and\n"
     "                    speedscope; --weight gpu (default: GPU time of the kernels each stack\n"
     "                    launched), range (NVTX range time), cpu (API call time), samples\n"
     "                    (record --sample: on-CPU time by Python stack) or samples-wall, in ns"},
    {"perfetto", ".pftrace", write_perfetto, 1, 1, 1,
     "Perfetto's native protobuf trace: opens in ui.perfetto.dev and trace_processor;\n"
     "                    nested NVTX slices per thread, a track per stream, launch flows,\n"
     "                    memory counters, interned callstacks; the whole recording"},
    {"sqlite", ".sqlite", write_sqlite, 1, 0, 0,
     "an SQLite database: typed tables, named views, symbolized frames (schema:\n"
     "                    docs/export.md); the recording's other processes come along, each\n"
     "                    row tagged with its pid (--no-symbols: frames as module+offset)"},
};
#define N_FORMATS (sizeof formats / sizeof formats[0])

/* The schemas of --format sqlite (--schema NAME; the first is the default): name, writer,
 * what it is for (the usage text). */
static const struct {
    const char *name;
    export_fn write;
    const char *help;
} schemas[] = {
    {"trainprof", write_sqlite,
     "(default) trainprof's tables: every record kind, stacks, frames, memory"},
    {"nsys", write_sqlite_nsys,
     "the tables and columns of `nsys export --type sqlite` (CUPTI_ACTIVITY_KIND_*,\n"
     "                    NVTX_EVENTS, StringIds, ENUM_*, ...): SQL written for nsys runs on it"},
};
#define N_SCHEMAS (sizeof schemas / sizeof schemas[0])

/* The row of schema `name`, or -1. */
static int schema_index(const char *name) {
    for (size_t i = 0; name && i < N_SCHEMAS; i++)
        if (!strcmp(name, schemas[i].name))
            return (int)i;
    return -1;
}

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
            "usage: trainprof export TRACE|FOLDER... --format %s [-o FILE|-] [--force]\n"
            "                        [--weight gpu|range|cpu|samples|samples-wall]\n"
            "                        [--no-symbols] [--quiet]\n"
            "                        [--schema trainprof|nsys]\n\n"
            "Writes a .tprof trace in another format. Default FILE: TRACE with the format's\n"
            "extension in place of .tprof; -o - writes standard output (not sqlite). An\n"
            "existing FILE is kept unless --force. An export that takes more than 2 s shows\n"
            "its progress on stderr; --quiet (-q) turns it off.\n"
            "A job of several ranks (a FOLDER, or several TRACEs) goes into one file with\n"
            "--format perfetto or chrome: each rank its own process, on one clock.\n",
            format_names(names, sizeof names, "|"));
    for (size_t i = 0; i < N_FORMATS; i++)
        fprintf(out, "  %-8s %-8s %s\n", formats[i].name, formats[i].ext, formats[i].help);
    fprintf(out, "\n--schema, with --format sqlite:\n");
    for (size_t i = 0; i < N_SCHEMAS; i++)
        fprintf(out, "  %-17s %s\n", schemas[i].name, schemas[i].help);
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

#define MAX_PATHS 4096 /* TRACEs of one job on the command line */

typedef struct {
    const char *trace, *format, *output, *weight;
    const char *schema; /* --schema; NULL: the format's own writer */
    int force, no_symbols;
    int quiet;          /* --quiet: no progress line */
    const char **paths; /* every TRACE given (trace is the first) */
    size_t n_paths;
} export_args;

static int weight_known(const char *w) {
    for (int i = 0; tp_folded_weight_name(i); i++)
        if (!strcmp(w, tp_folded_weight_name(i)))
            return 1;
    return 0;
}

/* Returns -1 when parsed, else the exit status (0 for --help). */
static int parse_args(int argc, char **argv, export_args *a) {
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(s, "--force")) {
            a->force = 1;
        } else if (!strcmp(s, "--quiet") || !strcmp(s, "-q")) {
            a->quiet = 1;
        } else if (!strcmp(s, "--no-symbols")) {
            a->no_symbols = 1;
        } else if (!strcmp(s, "--weight") && i + 1 < argc) {
            a->weight = argv[++i];
        } else if ((!strcmp(s, "--format") || !strcmp(s, "-o")) && i + 1 < argc) {
            *(s[1] == 'o' ? &a->output : &a->format) = argv[++i];
        } else if (!strncmp(s, "--format=", 9)) {
            a->format = s + 9;
        } else if (!strcmp(s, "--schema") && i + 1 < argc) {
            a->schema = argv[++i];
        } else if (!strncmp(s, "--schema=", 9)) {
            a->schema = s + 9;
        } else if (s[0] == '-' && s[1]) {
            fprintf(stderr, "trainprof export: unknown or incomplete option '%s'\n", s);
            usage(stderr);
            return 2;
        } else if (a->n_paths == MAX_PATHS) {
            fprintf(stderr, "trainprof export: more than %d TRACEs\n", MAX_PATHS);
            return 2;
        } else {
            a->trace = a->trace ? a->trace : s;
            a->paths[a->n_paths++] = s;
        }
    }
    if (!a->trace || !a->format) {
        usage(stderr);
        return 2;
    }
    if (a->weight && (strcmp(a->format, "folded") || !weight_known(a->weight))) {
        fprintf(stderr,
                "trainprof export: --weight takes gpu, range or cpu, with --format folded\n");
        return 2;
    }
    if (a->schema && (strcmp(a->format, "sqlite") || schema_index(a->schema) < 0)) {
        fprintf(stderr,
                "trainprof export: --schema takes trainprof or nsys, with --format sqlite\n");
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

/* Says `err` ("PATH: what"), naming `shown` where the exporter wrote `path`; terminal-safe
 * (tp_text), as the error may quote the trace. */
static void say_error(const char *err, const char *path, const char *shown) {
    size_t n = strlen(path);
    char line[4096];
    if (!strncmp(err, path, n))
        snprintf(line, sizeof line, "%s%s", shown, err + n);
    else
        snprintf(line, sizeof line, "%s", err);
    fputs("trainprof export: ", stderr);
    tp_text_fputs(line, stderr);
    fputc('\n', stderr);
}

/* Exports into `path`; messages name `shown`, the file the user asked for (the same name
 * as `path` but for the folder, so the chrome writer's .gz test sees the same suffix). */
static int run_export(const trace_set *t, const export_args *a, const char *path,
                      const char *shown) {
    char err[512] = "", done[64], safe[4096], what[300];
    export_fn writer =
        a->schema ? schemas[schema_index(a->schema)].write : formats[format_index(a->format)].write;
    tp_progress *pr = tp_cmd_progress_open("export", a->quiet);
    snprintf(what, sizeof what, "exporting %s", tp_text_safe(safe, sizeof safe, shown));
    tp_progress_phase(pr, what, 0);
    tp_status st = writer(t, path, done, sizeof done, err, sizeof err);
    if (st != TP_OK)
        tp_progress_phase(pr, NULL, 0); /* a failure: no done line, the error says it */
    tp_progress_close(pr);
    /* The output's name comes from the trace's: printed terminal-safe (tp_text). */
    if (st == TP_OK)
        fprintf(stderr, "trainprof export: wrote %s (%s)\n", tp_text_safe(safe, sizeof safe, shown),
                done);
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
static int export_via_temp(const trace_set *t, const export_args *a, const char *out, int replace) {
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
    int rc = run_export(t, a, tmp, out);
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

static int export_to(const trace_set *t, const export_args *a, const char *out) {
    out_kind k;
    if (!strcmp(out, "-")) { /* standard output, as most tools read `-o -` */
        if (!formats[format_index(a->format)].stream) {
            fprintf(stderr, "trainprof export: --format %s needs a file (-o FILE), not -\n",
                    a->format);
            return 1;
        }
        return run_export(t, a, "/dev/stdout", "standard output");
    }
    if (classify_output(a->trace, out, a->force, &k) != 0)
        return 1;
    if (k == OUT_STREAM)
        return run_export(t, a, out, out);
    return export_via_temp(t, a, out, k == OUT_REPLACE);
}

/* The recording id of trace `r` (its PROCESS record's job_id), 0 when unknown. */
static uint64_t job_of(const tp_reader *r) {
    const tp_rec_hdr *const *recs;
    tp_rec_process p = {0};
    if (tp_reader_meta(r, TP_REC_PROCESS, &recs) > 0)
        tp_record_get(recs[0], &p, sizeof p);
    return p.job_id;
}

#define MAX_PROCESSES 4096 /* traces of one recording written into one file */

/* After t->r[0] (TRACE), the traces of its recording's other processes beside it
 * (tp_layout) that carry its recording id. A format that writes one trace only says that the
 * others are not in its output, and takes none. */
static void open_recording(const export_args *a, trace_set *t) {
    char **paths, safe[4096];
    size_t found = 0;
    uint64_t job = job_of(t->r[0]);
    if (!job || tp_layout_members(a->trace, &paths, &found) != TP_OK)
        return;
    for (size_t i = 0; i < found && t->n < MAX_PROCESSES; i++) {
        tp_reader *m;
        if (tp_reader_open(paths[i], &m) != TP_OK)
            continue;
        if (job_of(m) == job)
            t->r[t->n++] = m;
        else
            tp_reader_close(m);
    }
    tp_layout_free(paths, found);
    if (t->n > 1 && !formats[format_index(a->format)].recording) {
        fprintf(stderr,
                "trainprof export: note: %zu other process%s of this recording (%s) %s not in "
                "this file; export %s one by one, or use --format chrome for one file\n",
                t->n - 1, t->n > 2 ? "es" : "", tp_text_safe(safe, sizeof safe, a->trace),
                t->n > 2 ? "are" : "is", t->n > 2 ? "them" : "it");
        while (t->n > 1)
            tp_reader_close(t->r[--t->n]);
    }
}

static int is_dir(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* A job of several ranks (a folder, several TRACEs) into one file. */
static int export_job(const export_args *a) {
    if (!formats[format_index(a->format)].job) {
        fprintf(stderr,
                "trainprof export: --format %s takes one TRACE; a job of several ranks (a "
                "folder, several TRACEs) exports with --format perfetto or chrome\n",
                a->format);
        return 2;
    }
    tp_cmd_job job;
    char err[1200];
    tp_status st = tp_cmd_job_open(a->paths, a->n_paths, &job, err, sizeof err);
    int rc = 1;
    if (st != TP_OK) {
        say_error(err, "", "");
    } else {
        char trace[PATH_MAX]; /* the default output: the first TRACE or FOLDER, without '/' */
        snprintf(trace, sizeof trace, "%s", a->trace);
        for (size_t n = strlen(trace); n > 1 && trace[n - 1] == '/';)
            trace[--n] = 0;
        trace_set t = {job.r, job.n, trace, NULL, 0, &job};
        export_args b = *a;
        b.trace = trace;
        char *dflt = a->output ? NULL : default_output(trace, formats[format_index(a->format)].ext);
        rc = (a->output || dflt) ? export_to(&t, &b, a->output ? a->output : dflt) : 1;
        free(dflt);
    }
    tp_cmd_job_close(&job);
    return rc;
}

int tp_cmd_export(int argc, char **argv) {
    export_args a = {0};
    const char *paths[MAX_PATHS];
    a.paths = paths;
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0)
        return rc;
    if (a.n_paths > 1 || is_dir(a.trace))
        return export_job(&a);
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
    trace_set t = {calloc(MAX_PROCESSES, sizeof *t.r), 1, a.trace, a.weight, a.no_symbols, NULL};
    if (!t.r)
        abort();
    t.r[0] = r;
    open_recording(&a, &t);
    char *dflt = a.output ? NULL : default_output(a.trace, formats[format_index(a.format)].ext);
    rc = (a.output || dflt) ? export_to(&t, &a, a.output ? a.output : dflt) : 1;
    free(dflt);
    for (size_t i = 0; i < t.n; i++)
        tp_reader_close(t.r[i]);
    free(t.r);
    return rc;
}
