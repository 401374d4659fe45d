/* trainprof info: what a trace holds and whether it is intact.
 *
 * Prints the file header, processes, threads, devices, record counts by kind, drops, the
 * time span and the file's integrity, as aligned text or (--json) as one JSON object with
 * the same content. Exit status: 0 for a readable trace, damaged or not (damage is also
 * reported on stderr); 1 when the file is not a trace or cannot be read; 2 for usage errors. */
#include "tp_cmd.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tp_an_drops.h"
#include "tp_reader.h"
#include "tp_text.h"

static void usage(FILE *out) {
    fprintf(out, "usage: trainprof info FILE [--json]\n\n"
                 "Shows a trace's header, processes, threads, devices, record counts, drops,\n"
                 "time span and integrity. --json prints the same as one JSON object.\n");
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

/* Drops by (type, reason), read from the DROPPED records. */
typedef struct {
    uint64_t count[TP_REC_TYPE_LIMIT][5];
} drop_table;

static void count_drops(tp_reader *r, drop_table *d) {
    memset(d, 0, sizeof *d);
    tp_query q = {TP_REC_BIT(TP_REC_DROPPED), 0, 0};
    tp_cursor *c;
    if (tp_cursor_open(r, &q, &c) != TP_OK)
        return;
    for (const tp_rec_hdr *h; (h = tp_cursor_next(c));) {
        tp_rec_dropped rec;
        tp_record_get(h, &rec, sizeof rec);
        d->count[rec.what < TP_REC_TYPE_LIMIT ? rec.what : 0][rec.reason < 5 ? rec.reason : 0] +=
            rec.count;
    }
    tp_cursor_close(c);
}

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

/* ------------------------------------------------------------------ text */

/* Every string from the trace goes through here: terminal-safe (tp_text), never raw. */
static const char *safe(char *buf, size_t n, const char *s) {
    return tp_text_safe(buf, n, s);
}

static void text_processes(const tp_reader *r) {
    const tp_rec_hdr *const *recs;
    size_t n = tp_reader_meta(r, TP_REC_PROCESS, &recs);
    printf("processes:    %zu\n", n);
    for (size_t i = 0; i < n; i++) {
        const tp_rec_process *p = (const tp_rec_process *)recs[i];
        char host[1024], cmd[8192];
        printf("  pid %-8" PRIu32 " rank %" PRId32 "/%" PRId32 " (local %" PRId32 ")  host %s\n",
               p->pid, p->rank, p->world_size, p->local_rank,
               safe(host, sizeof host, str_or(r, p->host_sid, "?")));
        printf("  %-12s %s\n", "command:", safe(cmd, sizeof cmd, str_or(r, p->cmdline_sid, "?")));
        tp_rec_process x;
        tp_record_get(recs[i], &x, sizeof x);
        if (x.job_id) /* written by `trainprof record` (format 1.3 on) */
            printf("  %-12s %016" PRIx64 ", started pid %" PRIu32 ", parent pid %" PRIu32
                   ", exec generation %" PRIu32 "\n",
                   "recording:", x.job_id, x.root_pid, x.ppid, x.exec_gen);
    }
}

/* 1 when an earlier THREAD record has the same tid (a rename: shown once, latest name). */
static int seen_before(const tp_rec_hdr *const *recs, size_t i) {
    for (size_t j = 0; j < i; j++)
        if (((const tp_rec_thread *)recs[j])->tid == ((const tp_rec_thread *)recs[i])->tid)
            return 1;
    return 0;
}

static void text_threads(const tp_reader *r) {
    const tp_rec_hdr *const *recs;
    size_t n = tp_reader_meta(r, TP_REC_THREAD, &recs), unique = 0;
    for (size_t i = 0; i < n; i++)
        unique += !seen_before(recs, i);
    printf("threads:      %zu\n", unique);
    for (size_t i = 0; i < n; i++) {
        uint32_t tid = ((const tp_rec_thread *)recs[i])->tid;
        const char *name = tp_reader_thread_name(r, tid);
        char buf[256];
        if (!seen_before(recs, i))
            printf("  tid %-10" PRIu32 " %s\n", tid,
                   name ? safe(buf, sizeof buf, name) : "(unnamed)");
    }
}

static void text_devices(const tp_reader *r) {
    const tp_rec_hdr *const *recs;
    size_t n = tp_reader_meta(r, TP_REC_DEVICE, &recs);
    printf("devices:      %zu\n", n);
    for (size_t i = 0; i < n; i++) {
        const tp_rec_device *d = (const tp_rec_device *)recs[i];
        char name[512];
        printf("  device %-4" PRIu32 " %s  %.1f GiB  %" PRIu32 " SMs  cc %" PRIu32 ".%" PRIu32 "\n",
               d->id, safe(name, sizeof name, str_or(r, d->name_sid, "?")),
               (double)d->global_memory_bytes / (1 << 30), d->sm_count, d->compute_capability / 10,
               d->compute_capability % 10);
    }
}

/* The analyzer's reading of the drops (tp_an_drops), the same line the report says. */
static void drops_of(const tp_trace_info *in, const drop_table *d, tp_an_drops *out) {
    uint64_t lost[TP_MODEL_REC_KINDS] = {0};
    for (int t = 0; t < TP_REC_TYPE_LIMIT && t < TP_MODEL_REC_KINDS; t++)
        for (int k = 0; k < 5; k++)
            lost[t] += d->count[t][k];
    tp_an_drops_from_counts(in->records, lost, out);
}

static void text_records(const tp_trace_info *in, const drop_table *d) {
    char buf[16];
    printf("records:      %" PRIu64 "\n", in->records_total);
    for (int t = 0; t < TP_REC_TYPE_LIMIT; t++)
        if (in->records[t])
            printf("  %-16s %12" PRIu64 "\n", type_name(t, buf, sizeof buf), in->records[t]);
    printf("dropped:      %" PRIu64 "\n", in->dropped_total);
    for (int t = 0; t < TP_REC_TYPE_LIMIT; t++)
        for (int k = 0; k < 5; k++)
            if (d->count[t][k])
                printf("  %-16s %12" PRIu64 "  (%s)\n", t ? type_name(t, buf, sizeof buf) : "any",
                       d->count[t][k], reason_name(k));
    tp_an_drops dr;
    drops_of(in, d, &dr);
    char line[1024];
    if (dr.lost)
        printf("  %s\n", tp_an_drops_line(&dr, line, sizeof line));
}

static void print_text(const char *path, tp_reader *r) {
    const tp_trace_info *in = tp_reader_info(r);
    const tp_integrity *g = tp_reader_integrity(r);
    char created[64], span[32];
    utc_time(in->created_realtime_ns, created, sizeof created);
    drop_table d;
    count_drops(r, &d);
    char file[8192], producer[512], integrity[1024];
    printf("file:         %s (%" PRIu64 " bytes)\n", safe(file, sizeof file, path), g->file_bytes);
    printf("format:       v%u.%u\n", in->version_major, in->version_minor);
    printf("producer:     %s\n",
           in->producer[0] ? safe(producer, sizeof producer, in->producer) : "?");
    printf("created:      %s\n", created);
    text_processes(r);
    text_threads(r);
    text_devices(r);
    text_records(in, &d);
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
    if (s && s != raw && raw)
        free((void *)s);
}

static void json_processes(const tp_reader *r) {
    const tp_rec_hdr *const *recs;
    size_t n = tp_reader_meta(r, TP_REC_PROCESS, &recs);
    printf("\"processes\":[");
    for (size_t i = 0; i < n; i++) {
        const tp_rec_process *p = (const tp_rec_process *)recs[i];
        printf("%s{\"pid\":%" PRIu32 ",\"ppid\":%" PRIu32 ",\"rank\":%" PRId32
               ",\"world_size\":%" PRId32 ",\"local_rank\":%" PRId32 ",\"host\":",
               i ? "," : "", p->pid, p->ppid, p->rank, p->world_size, p->local_rank);
        json_str(str_or(r, p->host_sid, ""));
        printf(",\"command\":");
        json_str(str_or(r, p->cmdline_sid, ""));
        printf(",\"exe\":");
        json_str(str_or(r, p->exe_sid, ""));
        tp_rec_process x;
        tp_record_get(recs[i], &x, sizeof x);
        printf(",\"job_id\":\"%016" PRIx64 "\",\"root_pid\":%" PRIu32 ",\"exec_gen\":%" PRIu32 "}",
               x.job_id, x.root_pid, x.exec_gen);
    }
    printf("],");
}

static void json_threads(const tp_reader *r) {
    const tp_rec_hdr *const *recs;
    size_t n = tp_reader_meta(r, TP_REC_THREAD, &recs);
    printf("\"threads\":[");
    int first = 1;
    for (size_t i = 0; i < n; i++) {
        const tp_rec_thread *t = (const tp_rec_thread *)recs[i];
        if (seen_before(recs, i))
            continue;
        printf("%s{\"tid\":%" PRIu32 ",\"pid\":%" PRIu32 ",\"name\":", first ? "" : ",", t->tid,
               t->pid);
        const char *name = tp_reader_thread_name(r, t->tid);
        if (name)
            json_str(name);
        else
            printf("null");
        printf("}");
        first = 0;
    }
    printf("],");
}

static void json_devices(const tp_reader *r) {
    const tp_rec_hdr *const *recs;
    size_t n = tp_reader_meta(r, TP_REC_DEVICE, &recs);
    printf("\"devices\":[");
    for (size_t i = 0; i < n; i++) {
        const tp_rec_device *d = (const tp_rec_device *)recs[i];
        printf("%s{\"id\":%" PRIu32 ",\"name\":", i ? "," : "", d->id);
        json_str(str_or(r, d->name_sid, ""));
        printf(",\"memory_bytes\":%" PRIu64 ",\"sm_count\":%" PRIu32
               ",\"compute_capability\":%" PRIu32 ",\"kind\":%" PRIu32 "}",
               d->global_memory_bytes, d->sm_count, d->compute_capability, d->kind);
    }
    printf("],");
}

static void json_records(const tp_trace_info *in, const drop_table *d) {
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
    drops_of(in, d, &dr);
    printf("},\"records_total\":%" PRIu64 ",\"dropped_total\":%" PRIu64
           ",\"dropped_share\":%.17g,\"dropped\":[",
           in->records_total, in->dropped_total, dr.share);
    first = 1;
    for (int t = 0; t < TP_REC_TYPE_LIMIT; t++)
        for (int k = 0; k < 5; k++)
            if (d->count[t][k]) {
                printf("%s{\"type\":\"%s\",\"reason\":\"%s\",\"count\":%" PRIu64 "}",
                       first ? "" : ",", t ? type_name(t, buf, sizeof buf) : "any", reason_name(k),
                       d->count[t][k]);
                first = 0;
            }
    printf("],");
}

static void print_json(const char *path, tp_reader *r) {
    const tp_trace_info *in = tp_reader_info(r);
    const tp_integrity *g = tp_reader_integrity(r);
    char created[64];
    utc_time(in->created_realtime_ns, created, sizeof created);
    drop_table d;
    count_drops(r, &d);
    printf("{\"file\":");
    json_str(path);
    printf(",\"file_bytes\":%" PRIu64 ",\"version\":\"%u.%u\",\"producer\":", g->file_bytes,
           in->version_major, in->version_minor);
    json_str(in->producer);
    printf(",\"created_realtime_ns\":%" PRIu64 ",\"created\":\"%s\",", in->created_realtime_ns,
           created);
    json_processes(r);
    json_threads(r);
    json_devices(r);
    json_records(in, &d);
    printf("\"t_min\":%" PRIu64 ",\"t_max\":%" PRIu64 ",\"span_ns\":%" PRIu64 ",", in->t_min,
           in->t_max, in->t_max - in->t_min);
    printf("\"integrity\":{\"chunks_ok\":%" PRIu64 ",\"chunks_bad\":%" PRIu64
           ",\"bytes_lost\":%" PRIu64 ",\"truncated\":%s,\"index_present\":%s,"
           "\"unknown_records\":%" PRIu64 ",\"message\":",
           g->chunks_ok, g->chunks_bad, g->bytes_lost, g->truncated ? "true" : "false",
           g->index_ok ? "true" : "false", g->unknown_records);
    json_str(g->message);
    printf("}}\n");
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

int tp_cmd_info(int argc, char **argv) {
    const char *path = NULL;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "trainprof info: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        } else if (path) {
            fprintf(stderr, "trainprof info: one FILE at a time\n");
            return 2;
        } else {
            path = argv[i];
        }
    }
    if (!path) {
        usage(stderr);
        return 2;
    }
    tp_reader *r;
    tp_status s = tp_reader_open(path, &r);
    if (s != TP_OK)
        return open_error(path, s, errno);
    if (json)
        print_json(path, r);
    else
        print_text(path, r);
    const char *msg = tp_reader_integrity(r)->message;
    if (msg[0])
        fprintf(stderr, "trainprof info: warning: %s: %s\n", path, msg);
    int rc = tp_cmd_flush("info", stdout, "standard output");
    tp_reader_close(r);
    return rc;
}
