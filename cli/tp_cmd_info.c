/* trainprof info: what a trace holds and whether it is intact.
 *
 * Prints the file header, processes, threads, devices, record counts by kind, drops, the
 * time span and the file's integrity, as aligned text or (--json) as one JSON object with
 * the same content. Several files, or a folder (its .tprof files, sorted by name, as a
 * recording's or a job's lie), print one such block each, blank-line separated (--json: an
 * array of the objects). Exit status: 0 when every trace is readable, damaged or not (damage
 * is also reported on stderr); 1 when one is not a trace or cannot be read (the others are
 * still shown); 2 for usage errors. */
#include "tp_cmd.h"

#include <errno.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tp_an_drops.h"
#include "tp_env_keys.h"
#include "tp_load.h"
#include "tp_reader.h"
#include "tp_text.h"
#include "tp_visit.h"

static void usage(FILE *out) {
    fprintf(out, "usage: trainprof info FILE|FOLDER... [--json]\n\n"
                 "Shows a trace's header, processes, threads, devices, record counts, drops,\n"
                 "time span and integrity. --json prints the same as one JSON object. A\n"
                 "folder (a recording's or a job's) shows each .tprof file in it, by name;\n"
                 "several traces print a block each (--json: an array of the objects).\n");
}

/* "12.3 ms": a duration for people. */
static void human_ns(uint64_t ns, char *buf, size_t n) {
    static const struct {
        double div;
        const char *unit;
    } u[] = {{1e9 * 3600, "h"}, {1e9 * 60, "min"}, {1e9, "s"}, {1e6, "ms"}, {1e3, "us"}};
    for (size_t i = 0; i < sizeof u / sizeof u[0]; i++)
        if ((double)ns >= u[i].div) {
            snprintf(buf, n, "%.3g %s", (double)ns / u[i].div, u[i].unit);
            return;
        }
    snprintf(buf, n, "%" PRIu64 " ns", ns);
}

static void utc_time(uint64_t realtime_ns, char *buf, size_t n) {
    time_t t = (time_t)(realtime_ns / 1000000000u);
    struct tm tm;
    if (!gmtime_r(&t, &tm) || !strftime(buf, n, "%Y-%m-%d %H:%M:%S UTC", &tm))
        snprintf(buf, n, "?");
}

static const char *str_or(const tp_reader *r, uint32_t sid, const char *dflt) {
    const char *s = tp_reader_string(r, sid);
    return s ? s : dflt;
}

/* ------------------------------------------------------------------ counting */

/* What info counts itself (the reader has the rest), from one visitor pass: metadata
 * records by type (THREAD: distinct threads) and drops by (type, reason) from the DROPPED
 * records. */
typedef struct {
    size_t n[TP_REC_TYPE_LIMIT];
    uint64_t drops[TP_REC_TYPE_LIMIT][5];
} info_counts;

static tp_status count_meta(void *ctx, const tp_rec_hdr *h) {
    ((info_counts *)ctx)->n[h->type]++;
    return TP_OK;
}

static tp_status count_thread(void *ctx, const tp_visit_thread *t) {
    ((info_counts *)ctx)->n[TP_REC_THREAD] += t->first;
    return TP_OK;
}

static tp_status count_drop(void *ctx, const tp_rec_hdr *h) {
    const tp_rec_dropped *d = (const void *)h;
    ((info_counts *)ctx)
        ->drops[d->what < TP_REC_TYPE_LIMIT ? d->what : 0][d->reason < 5 ? d->reason : 0] +=
        d->count;
    return TP_OK;
}

static const tp_visitor counting = {
    .meta = {[TP_REC_PROCESS] = count_meta, [TP_REC_DEVICE] = count_meta},
    .thread = count_thread,
    .data = {[TP_REC_DROPPED] = count_drop},
};

static const char *reason_name(int reason) {
    static const char *const names[] = {"other", "ring_full", "no_buffer", "cupti", "convert"};
    return names[reason];
}

static const char *type_name(int t, char *buf, size_t n) {
    const char *s = tp_record_name((uint16_t)t);
    if (s)
        return s;
    snprintf(buf, n, "type_%d", t);
    return buf;
}

/* What a section's handlers print with. */
typedef struct {
    const tp_reader *r;
    int first; /* JSON: no comma before the next element */
} printer;

/* ------------------------------------------------------------------ text */

/* Every string from the trace goes through here: terminal-safe (tp_text), never raw. */
static const char *safe(char *buf, size_t n, const char *s) {
    return tp_text_safe(buf, n, s);
}

static tp_status text_process(void *ctx, const tp_rec_hdr *h) {
    const tp_reader *r = ((printer *)ctx)->r;
    tp_rec_process p;
    tp_record_get(h, &p, sizeof p);
    char host[1024], cmd[8192];
    printf("  pid %-8" PRIu32 " rank %" PRId32 "/%" PRId32 " (local %" PRId32 ")  host %s\n", p.pid,
           p.rank, p.world_size, p.local_rank, safe(host, sizeof host, str_or(r, p.host_sid, "?")));
    printf("  %-12s %s\n", "command:", safe(cmd, sizeof cmd, str_or(r, p.cmdline_sid, "?")));
    if (p.job_id) /* written by `trainprof record` (format 1.3 on) */
        printf("  %-12s %016" PRIx64 ", started pid %" PRIu32 ", parent pid %" PRIu32
               ", exec generation %" PRIu32 "\n",
               "recording:", p.job_id, p.root_pid, p.ppid, p.exec_gen);
    return TP_OK;
}

/* A renamed thread is shown once, where it first appeared, under its latest name. */
static tp_status text_thread(void *ctx, const tp_visit_thread *t) {
    (void)ctx;
    char buf[256];
    if (t->first)
        printf("  tid %-10" PRIu32 " %s\n", t->rec->tid,
               t->name ? safe(buf, sizeof buf, t->name) : "(unnamed)");
    return TP_OK;
}

static tp_status text_device(void *ctx, const tp_rec_hdr *h) {
    const tp_reader *r = ((printer *)ctx)->r;
    const tp_rec_device *d = (const void *)h;
    char name[512];
    printf("  device %-4" PRIu32 " %s  %.1f GiB  %" PRIu32 " SMs  cc %" PRIu32 ".%" PRIu32 "\n",
           d->id, safe(name, sizeof name, str_or(r, d->name_sid, "?")),
           (double)d->global_memory_bytes / (1 << 30), d->sm_count, d->compute_capability / 10,
           d->compute_capability % 10);
    return TP_OK;
}

static size_t env_count(const tp_reader *r) {
    const tp_rec_hdr *const *v;
    size_t n = tp_reader_meta(r, TP_REC_ENV, &v), k = 0;
    for (size_t i = 0; i < n; i++)
        k += !tp_env_superseded(r, v[i]);
    return k;
}

static tp_status text_env(void *ctx, const tp_rec_hdr *h) {
    const tp_reader *r = ((printer *)ctx)->r;
    const tp_rec_env *e = (const void *)h;
    if (tp_env_superseded(r, h))
        return TP_OK;
    char key[512], val[2048], dev[32] = "";
    if (e->device != TP_ENV_PROCESS)
        snprintf(dev, sizeof dev, "gpu %" PRIu32 " ", e->device);
    printf("  %s%-*s %s\n", dev, (int)(28 - strlen(dev)),
           safe(key, sizeof key, str_or(r, e->key_sid, "?")),
           safe(val, sizeof val, str_or(r, e->value_sid, "")));
    return TP_OK;
}

/* The analyzer's reading of the drops (tp_an_drops): the same line the report says. */
static void drops_of(const tp_trace_info *in, const info_counts *c, tp_an_drops *out) {
    uint64_t lost[TP_MODEL_REC_KINDS] = {0};
    for (int t = 0; t < TP_REC_TYPE_LIMIT && t < TP_MODEL_REC_KINDS; t++)
        for (int k = 0; k < 5; k++)
            lost[t] += c->drops[t][k];
    tp_an_drops_from_counts(in->records, lost, out);
}

static void text_records(const tp_trace_info *in, const info_counts *c) {
    char buf[16];
    printf("records:      %" PRIu64 "\n", in->records_total);
    for (int t = 0; t < TP_REC_TYPE_LIMIT; t++)
        if (in->records[t])
            printf("  %-16s %12" PRIu64 "\n", type_name(t, buf, sizeof buf), in->records[t]);
    printf("dropped:      %" PRIu64 "\n", in->dropped_total);
    for (int t = 0; t < TP_REC_TYPE_LIMIT; t++)
        for (int k = 0; k < 5; k++)
            if (c->drops[t][k])
                printf("  %-16s %12" PRIu64 "  (%s)\n", t ? type_name(t, buf, sizeof buf) : "any",
                       c->drops[t][k], reason_name(k));
    tp_an_drops dr;
    drops_of(in, c, &dr);
    char line[1024];
    if (dr.lost)
        printf("  %s\n", tp_an_drops_line(&dr, line, sizeof line));
}

/* ------------------------------------------------------------------ JSON */

/* A JSON string: exact, controls escaped; bytes that are not UTF-8 (no JSON document may hold
 * them) become U+FFFD. */
static void json_str(const char *raw) {
    size_t n;
    const char *s = raw ? tp_text_utf8_fix(raw, strlen(raw), &n) : "";
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
        if (*p == '"' || *p == '\\')
            printf("\\%c", *p);
        else if (*p < 0x20)
            printf("\\u%04x", *p);
        else
            putchar(*p);
    }
    putchar('"');
    if (s && raw && s != raw)
        free((void *)s);
}

/* The separator before a JSON array element. */
static const char *sep(printer *p) {
    const char *s = p->first ? "" : ",";
    p->first = 0;
    return s;
}

static tp_status json_process(void *ctx, const tp_rec_hdr *h) {
    const tp_reader *r = ((printer *)ctx)->r;
    tp_rec_process p;
    tp_record_get(h, &p, sizeof p);
    printf("%s{\"pid\":%" PRIu32 ",\"ppid\":%" PRIu32 ",\"rank\":%" PRId32
           ",\"world_size\":%" PRId32 ",\"local_rank\":%" PRId32 ",\"host\":",
           sep(ctx), p.pid, p.ppid, p.rank, p.world_size, p.local_rank);
    json_str(str_or(r, p.host_sid, ""));
    printf(",\"command\":");
    json_str(str_or(r, p.cmdline_sid, ""));
    printf(",\"exe\":");
    json_str(str_or(r, p.exe_sid, ""));
    printf(",\"job_id\":\"%016" PRIx64 "\",\"root_pid\":%" PRIu32 ",\"exec_gen\":%" PRIu32 "}",
           p.job_id, p.root_pid, p.exec_gen);
    return TP_OK;
}

static tp_status json_thread(void *ctx, const tp_visit_thread *t) {
    if (!t->first)
        return TP_OK;
    printf("%s{\"tid\":%" PRIu32 ",\"pid\":%" PRIu32 ",\"name\":", sep(ctx), t->rec->tid,
           t->rec->pid);
    if (t->name)
        json_str(t->name);
    else
        printf("null");
    printf("}");
    return TP_OK;
}

static tp_status json_device(void *ctx, const tp_rec_hdr *h) {
    const tp_reader *r = ((printer *)ctx)->r;
    const tp_rec_device *d = (const void *)h;
    printf("%s{\"id\":%" PRIu32 ",\"name\":", sep(ctx), d->id);
    json_str(str_or(r, d->name_sid, ""));
    printf(",\"memory_bytes\":%" PRIu64 ",\"sm_count\":%" PRIu32 ",\"compute_capability\":%" PRIu32
           ",\"kind\":%" PRIu32 "}",
           d->global_memory_bytes, d->sm_count, d->compute_capability, d->kind);
    return TP_OK;
}

static tp_status json_env(void *ctx, const tp_rec_hdr *h) {
    const tp_reader *r = ((printer *)ctx)->r;
    const tp_rec_env *e = (const void *)h;
    if (tp_env_superseded(r, h))
        return TP_OK;
    printf("%s{\"key\":", sep(ctx));
    json_str(str_or(r, e->key_sid, ""));
    if (e->device == TP_ENV_PROCESS)
        printf(",\"device\":null,\"value\":");
    else
        printf(",\"device\":%" PRIu32 ",\"value\":", e->device);
    json_str(str_or(r, e->value_sid, ""));
    printf("}");
    return TP_OK;
}

static void json_records(const tp_trace_info *in, const info_counts *c) {
    char buf[16];
    printf("\"records\":{");
    int first = 1;
    for (int t = 0; t < TP_REC_TYPE_LIMIT; t++)
        if (in->records[t]) {
            printf("%s\"%s\":%" PRIu64, first ? "" : ",", type_name(t, buf, sizeof buf),
                   in->records[t]);
            first = 0;
        }
    tp_an_drops dr;
    drops_of(in, c, &dr);
    printf("},\"records_total\":%" PRIu64 ",\"dropped_total\":%" PRIu64
           ",\"dropped_share\":%.17g,\"dropped\":[",
           in->records_total, in->dropped_total, dr.share);
    first = 1;
    for (int t = 0; t < TP_REC_TYPE_LIMIT; t++)
        for (int k = 0; k < 5; k++)
            if (c->drops[t][k]) {
                printf("%s{\"type\":\"%s\",\"reason\":\"%s\",\"count\":%" PRIu64 "}",
                       first ? "" : ",", t ? type_name(t, buf, sizeof buf) : "any", reason_name(k),
                       c->drops[t][k]);
                first = 0;
            }
    printf("],");
}

/* ------------------------------------------------------------------ sections */

/* The metadata sections, in the order printed; each lists its records with one visitor. */
static const struct {
    const char *title; /* text: "processes:"; JSON: the key before the ':' */
    uint16_t type;     /* its count in info_counts.n */
    tp_visitor text, json;
    size_t (*count)(const tp_reader *r); /* when the records are not the count; NULL: n */
} sections[] = {
    {"processes:",
     TP_REC_PROCESS,
     {.meta = {[TP_REC_PROCESS] = text_process}},
     {.meta = {[TP_REC_PROCESS] = json_process}},
     NULL},
    {"threads:", TP_REC_THREAD, {.thread = text_thread}, {.thread = json_thread}, NULL},
    {"devices:",
     TP_REC_DEVICE,
     {.meta = {[TP_REC_DEVICE] = text_device}},
     {.meta = {[TP_REC_DEVICE] = json_device}},
     NULL},
    {"environment:",
     TP_REC_ENV,
     {.meta = {[TP_REC_ENV] = text_env}},
     {.meta = {[TP_REC_ENV] = json_env}},
     env_count},
};

static tp_status print_sections(tp_reader *r, const info_counts *c, int json) {
    tp_status st = TP_OK;
    for (size_t i = 0; i < sizeof sections / sizeof sections[0] && st == TP_OK; i++) {
        printer p = {r, 1};
        if (json)
            printf("\"%.*s\":[", (int)strlen(sections[i].title) - 1, sections[i].title);
        else
            printf("%-14s%zu\n", sections[i].title,
                   sections[i].count ? sections[i].count(r) : c->n[sections[i].type]);
        st = tp_visit_run(r, json ? &sections[i].json : &sections[i].text, &p, NULL);
        if (json)
            printf("],");
    }
    return st;
}

static tp_status print_text(const char *path, tp_reader *r) {
    const tp_trace_info *in = tp_reader_info(r);
    const tp_integrity *g = tp_reader_integrity(r);
    char created[64], span[32];
    utc_time(in->created_realtime_ns, created, sizeof created);
    info_counts c = {0};
    tp_status st = tp_visit_run(r, &counting, &c, NULL);
    char file[8192], producer[512], integrity[1024];
    printf("file:         %s (%" PRIu64 " bytes)\n", safe(file, sizeof file, path), g->file_bytes);
    printf("format:       v%u.%u\n", in->version_major, in->version_minor);
    printf("producer:     %s\n",
           in->producer[0] ? safe(producer, sizeof producer, in->producer) : "?");
    printf("created:      %s\n", created);
    if (st == TP_OK)
        st = print_sections(r, &c, 0);
    text_records(in, &c);
    human_ns(in->t_max - in->t_min, span, sizeof span);
    printf("time span:    %" PRIu64 " ns (%s), from %" PRIu64 " to %" PRIu64 "\n",
           in->t_max - in->t_min, span, in->t_min, in->t_max);
    printf("chunks:       %" PRIu64 " read, %" PRIu64 " bad\n", g->chunks_ok, g->chunks_bad);
    printf("index:        %s\n", g->index_ok    ? "present"
                                 : g->index_bad ? "present but wrong (ignored)"
                                                : "missing");
    printf("integrity:    %s\n",
           g->message[0] ? safe(integrity, sizeof integrity, g->message) : "ok");
    printf("bytes lost:   %" PRIu64 "\n", g->bytes_lost);
    if (g->unknown_records)
        printf("unknown:      %" PRIu64 " records of unknown types skipped\n", g->unknown_records);
    return st;
}

static tp_status print_json(const char *path, tp_reader *r) {
    const tp_trace_info *in = tp_reader_info(r);
    const tp_integrity *g = tp_reader_integrity(r);
    char created[64];
    utc_time(in->created_realtime_ns, created, sizeof created);
    info_counts c = {0};
    tp_status st = tp_visit_run(r, &counting, &c, NULL);
    printf("{\"file\":");
    json_str(path);
    printf(",\"file_bytes\":%" PRIu64 ",\"version\":\"%u.%u\",\"producer\":", g->file_bytes,
           in->version_major, in->version_minor);
    json_str(in->producer);
    printf(",\"created_realtime_ns\":%" PRIu64 ",\"created\":\"%s\",", in->created_realtime_ns,
           created);
    if (st == TP_OK)
        st = print_sections(r, &c, 1);
    json_records(in, &c);
    printf("\"t_min\":%" PRIu64 ",\"t_max\":%" PRIu64 ",\"span_ns\":%" PRIu64 ",", in->t_min,
           in->t_max, in->t_max - in->t_min);
    printf("\"integrity\":{\"chunks_ok\":%" PRIu64 ",\"chunks_bad\":%" PRIu64
           ",\"bytes_lost\":%" PRIu64 ",\"truncated\":%s,\"index_present\":%s,"
           "\"unknown_records\":%" PRIu64 ",\"message\":",
           g->chunks_ok, g->chunks_bad, g->bytes_lost, g->truncated ? "true" : "false",
           g->index_ok ? "true" : "false", g->unknown_records);
    json_str(g->message);
    printf("}}\n");
    return st;
}

/* ------------------------------------------------------------------ entry */

static int open_error(const char *path, tp_status s, int err) {
    if (s == TP_ERR_OPEN)
        fprintf(stderr, "trainprof info: cannot open '%s': %s\n", path, strerror(err));
    else if (s == TP_ERR_EMPTY)
        fprintf(stderr, "trainprof info: '%s' is empty, not a trainprof trace\n", path);
    else if (s == TP_ERR_TRUNCATED)
        fprintf(stderr, "trainprof info: '%s' is cut off inside its file header\n", path);
    else if (s == TP_ERR_FORMAT && tp_cmd_not_native("info", path))
        return 1;
    else
        fprintf(stderr, "trainprof info: '%s': %s\n", path, tp_status_str(s));
    return 1;
}

/* One trace's block (text or JSON), after a separator from the blocks before it (*shown of
 * them); 0, or 1 when it is not a trace or cannot be read (then nothing is printed: an
 * array of objects stays one). */
static int info_one(const char *path, int json, size_t *shown) {
    tp_reader *r;
    tp_status s = tp_reader_open(path, &r);
    if (s != TP_OK)
        return open_error(path, s, errno);
    if ((*shown)++)
        printf(json ? "," : "\n");
    s = json ? print_json(path, r) : print_text(path, r);
    const char *msg = tp_reader_integrity(r)->message;
    if (s != TP_OK)
        fprintf(stderr, "trainprof info: '%s': %s\n", path, tp_status_str(s));
    else if (msg[0])
        fprintf(stderr, "trainprof info: warning: %s: %s\n", path, msg);
    tp_reader_close(r);
    return s == TP_OK ? 0 : 1;
}

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

/* The .tprof files of folder `dir`, as a load lists them (tp_load_folder_files), each shown;
 * *shown counts them. 1 when the folder holds none or cannot be read. */
static int info_folder(const char *dir, int json, size_t *shown) {
    tp_load_result res;
    char **files;
    size_t n, native = 0;
    if (tp_load_folder_files(dir, &files, &n, &res) != TP_OK) {
        fprintf(stderr, "trainprof info: %s\n", res.error);
        return 1;
    }
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        if (!ends_with(files[i], ".tprof"))
            continue;
        rc |= info_one(files[i], json, shown);
        native++;
    }
    tp_load_files_free(files, n);
    if (!native) {
        fprintf(stderr,
                "trainprof info: no .tprof file in '%s' (info reads trainprof's own traces; "
                "report reads the PyTorch-profiler JSON ones too)\n",
                dir);
        return 1;
    }
    return rc;
}

int tp_cmd_info(int argc, char **argv) {
    const char **paths = calloc((size_t)argc + 1, sizeof *paths);
    size_t n = 0;
    int json = 0, folders = 0;
    if (!paths)
        abort();
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            free(paths);
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "trainprof info: unknown option '%s'\n", argv[i]);
            usage(stderr);
            free(paths);
            return 2;
        } else {
            struct stat sb;
            folders += stat(argv[i], &sb) == 0 && S_ISDIR(sb.st_mode);
            paths[n++] = argv[i];
        }
    }
    if (!n) {
        usage(stderr);
        free(paths);
        return 2;
    }
    /* one file: its object, as before; several or a folder: an array of them */
    int array = json && (n > 1 || folders);
    if (array)
        printf("[");
    int rc = 0;
    size_t shown = 0;
    for (size_t i = 0; i < n; i++) {
        struct stat sb;
        if (stat(paths[i], &sb) == 0 && S_ISDIR(sb.st_mode)) {
            rc |= info_folder(paths[i], json, &shown);
            continue;
        }
        rc |= info_one(paths[i], json, &shown);
    }
    if (array)
        printf("]\n");
    free(paths);
    int flushed = tp_cmd_flush("info", stdout, "standard output");
    return flushed == 0 && rc == 0 ? 0 : 1;
}
