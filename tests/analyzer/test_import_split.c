/* test_import_split: the Kineto importer's split parse (two threads over the traceEvents
 * array, tp_import_kineto_mem_split; what `trainprof report` does on files of 4 MiB or more)
 * gives exactly what the serial parse gives: the same status and error line, the same rows
 * with the same string ids, and byte-identical report JSON (native and --compat hta).
 *   - crafted texts whose strings hold what looks like an event boundary (`}, {`), escaped
 *     quotes and backslashes, \u escapes, nested args and Input Dims arrays, keys after the
 *     traceEvents array, a top-level array; the split must be taken on some and refused
 *     (a guessed boundary inside a string) on others;
 *   - every prefix of a crafted text (errors in the first range, the second, the trailer);
 *   - a bad value in the second range: the same line, column, byte and event index;
 *   - gzip images (inflated whole by libdeflate) and damaged ones (the streaming path words
 *     the error);
 *   - the real peer traces ($TP_PEER_TRACES, skipped when absent): every file of 4 MiB or
 *     more is split, and `trainprof report` prints the same JSON with TP_IMPORT_THREADS=1
 *     and 2. argv[1] is the trainprof binary.
 * The default import (the traceEvents array walked by simdjson in pieces) is compared with
 * yajl alone on every text above too (tp_import_kineto_mem_parser), with pieces of one event
 * and of a few. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "tp_import_kineto.h"
#include "tp_model.h"
#include "tp_report.h"
#include "tp_test.h"

#define SPLIT_FILE_MIN (4u << 20) /* tp_import_kineto_load splits texts from this size on */

typedef tp_test_text text;

/* The report JSON of `m` (finished), native or HTA rules, malloc'd. */
static char *report_json(const tp_model *m, int hta) {
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    tp_report_opts o;
    tp_report_opts_init(&o);
    o.format = TP_REPORT_JSON;
    o.an.compat_hta = hta;
    tp_report_write(f, m, &o);
    fclose(f);
    return buf;
}

/* Columns that carry string ids and times, rank by rank, equal in both models. */
static int same_rows(const tp_model *a, const tp_model *b) {
    if (a->n_ranks != b->n_ranks)
        return 0;
    for (size_t r = 0; r < a->n_ranks; r++) {
        const tp_events *x = &a->ranks[r].ev, *y = &b->ranks[r].ev;
        size_t n = x->n;
        if (n != y->n || a->ranks[r].mem.n != b->ranks[r].mem.n ||
            a->ranks[r].n_json_events != b->ranks[r].n_json_events)
            return 0;
        for (size_t i = 0; i < n; i++)
            if (tp_ev_cat_raw(x, i) != tp_ev_cat_raw(y, i) ||
                tp_ev_shapes(x, i) != tp_ev_shapes(y, i) || tp_ev_dur(x, i) != tp_ev_dur(y, i) ||
                tp_ev_stream(x, i) != tp_ev_stream(y, i))
                return 0;
        if (n && (memcmp(x->name, y->name, n * sizeof *x->name) ||
                  memcmp(x->ts, y->ts, n * sizeof *x->ts)))
            return 0;
    }
    return 1;
}

static uint64_t walked_total; /* pieces the simdjson walker committed (compare_opt) */

/* A walker mode (1: here, 2: on a thread) and piece size (0: the import's) to compare. */
typedef struct {
    int mode;
    size_t piece;
} walk_kind;

/* The walks the default import (simdjson pieces) is compared in against yajl alone:
 * crafted texts with pieces of one event (every boundary a piece's end) and of a few events,
 * walked here and on a thread; prefixes (thousands of texts) here only. The peer files (tens
 * of MB, which one-event pieces would take minutes to walk under ASan) only as the default
 * import reads them (default pieces on a thread), which every comparison checks. */
static const walk_kind fine[] = {{1, 1}, {2, 1}, {2, 300}}, here[] = {{1, 1}};
#define WALKS(w) (w), sizeof(w) / sizeof(w)[0]

/* Imports `t` serially and split (split_min 0), and with `walks`; checks all agree (with
 * `reports`, their report JSON too). Returns 1 when the split was taken, 0 when not, -1
 * when they differ. */
static int compare_opt(const char *name, const void *data, size_t len, int reports,
                       const walk_kind *walks, size_t n_walks) {
    tp_model *a = tp_model_new(), *b = tp_model_new(), *y = tp_model_new();
    char ea[600] = "", eb[600] = "", ey[600] = "";
    int split = -1, ok = 1;
    tp_status sa = tp_import_kineto_mem(a, name, data, len, ea, sizeof ea);
    tp_status sb = tp_import_kineto_mem_split(b, name, data, len, 0, &split, eb, sizeof eb);
    if (sa != sb || strcmp(ea, eb)) {
        fprintf(stderr, "%s (%zu bytes): serial %d '%s', split %d '%s'\n", name, len, sa, ea, sb,
                eb);
        ok = 0;
    }
    tp_status sy = tp_import_kineto_mem_parser(y, name, data, len, 0, 0, NULL, ey, sizeof ey);
    if (ok && (sy != sa || strcmp(ey, ea) || !same_rows(a, y))) { /* the default import */
        fprintf(stderr, "%s (%zu bytes): yajl %d '%s', default %d '%s'\n", name, len, sy, ey, sa,
                ea);
        ok = 0;
    }
    for (size_t i = 0; i < n_walks && ok; i++) {
        tp_model *c = tp_model_new();
        char ec[600] = "";
        uint64_t w = 0;
        tp_status sc = tp_import_kineto_mem_parser(c, name, data, len, walks[i].mode,
                                                   walks[i].piece, &w, ec, sizeof ec);
        walked_total += w;
        if (sc != sy || strcmp(ec, ey) || sy != sa || strcmp(ey, ea) || !same_rows(c, y)) {
            fprintf(stderr, "%s (%zu bytes): yajl %d '%s', simdjson (mode %d piece %zu) %d '%s'\n",
                    name, len, sy, ey, walks[i].mode, walks[i].piece, sc, ec);
            ok = 0;
        }
        tp_model_close(c);
    }
    tp_model_close(y);
    if (ok && sa == TP_OK) {
        tp_model_finish(a);
        tp_model_finish(b);
        for (int hta = 0; reports && hta < 2 && ok; hta++) {
            char *ja = report_json(a, hta), *jb = report_json(b, hta);
            ok = ja && jb && !strcmp(ja, jb);
            free(ja);
            free(jb);
        }
        if (!ok || !same_rows(a, b)) {
            fprintf(stderr, "%s (%zu bytes): models differ\n", name, len);
            ok = 0;
        }
    }
    tp_model_close(a);
    tp_model_close(b);
    return ok ? split : -1;
}

static int compare(const char *name, const void *data, size_t len) {
    return compare_opt(name, data, len, 1, WALKS(fine));
}

/* A trace of `n` events of every kind; names, keys and args hold boundary look-alikes,
 * escapes and nesting. `tricky` puts `}, {` (and `},\n{`) in every kernel name; `array`: a
 * top-level array instead of an object. `bad`: the index of an event whose ts is a string
 * (-1: none). */
static text craft(int n, int tricky, int array, int bad) {
    text t = {NULL, 0, 0};
    tp_test_put(&t, array ? "[\n" : "{\"schemaVersion\": 1, \"traceEvents\": [\n");
    for (int i = 0; i < n; i++) {
        const char *sep = i + 1 < n ? "," : "";
        if (i == bad) {
            tp_test_put(&t, "  {\"ph\": \"X\", \"cat\": \"kernel\", \"ts\": \"late\"}%s\n", sep);
            continue;
        }
        switch (i % 5) {
        case 0:
            tp_test_put(
                &t,
                "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"%s%d\\\"q\\\\\", \"pid\": 0, "
                "\"tid\": 7, \"ts\": %d.5, \"dur\": 3, \"args\": {\"stream\": 7, "
                "\"correlation\": %d, \"note\": {\"x\": [1, {\"y\": \"}, {\"}]}}}%s\n",
                tricky ? "k}, {\\\"a\\\": 1},\\n{" : "k", i % 13, i * 10, i, sep);
            break;
        case 1:
            tp_test_put(
                &t,
                "  {\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", "
                "\"pid\": 1, \"tid\": 2, \"ts\": %d, \"dur\": 2, \"args\": {\"correlation\": "
                "%d, \"External id\": %d}}%s\n",
                i * 10 - 5, i + 1, i, sep);
            break;
        case 2:
            tp_test_put(
                &t,
                "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\\u00e9 }, {%d\", "
                "\"pid\": 1, \"tid\": 2, \"ts\": %d, \"dur\": 4, \"args\": {\"Input Dims\": "
                "[[2, 3], [], [%d]], \"Sequence%snumber\": %d}}%s\n",
                i % 7, i * 10 - 8, i, i % 4 == 2 ? "\\u0020" : " ", i, sep); /* escaped keys too */
            break;
        case 3:
            tp_test_put(
                &t,
                "  {\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"name\": \"[memory]\", "
                "\"pid\": 1, \"tid\": 2, \"ts\": %d, \"args\": {\"Device Type\": 1, "
                "\"Device Id\": 0, \"Addr\": %d, \"Bytes\": %d, \"Total Allocated\": %d}}%s\n",
                i * 10, 4096 + i, (i % 2 ? -512 : 512), i * 8, sep);
            break;
        default:
            tp_test_put(&t,
                        "  {\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 1, \"tid\": %d, "
                        "\"args\": {\"name\": \"worker\\\\%d\"}}%s\n",
                        i % 3, i % 3, sep);
        }
    }
    if (array)
        tp_test_put(&t, "]\n");
    else
        tp_test_put(
            &t, "],\n\"deviceProperties\": [{\"id\": 0, \"name\": \"GPU }, {\", \"numSms\": 132}],"
                "\n\"distributedInfo\": {\"rank\": 3, \"world_size\": 8},\n"
                "\"baseTimeNanoseconds\": 1700000000000000000}\n");
    return t;
}

/* Crafted texts of many sizes: always the serial result; the split taken on plain names,
 * and both taken and refused with boundary look-alikes in every kernel name. */
static void test_crafted(void) {
    int taken = 0, refused = 0, taken_tricky = 0;
    for (int array = 0; array < 2; array++)
        for (int tricky = 0; tricky < 2; tricky++)
            for (int n = 2; n < 90; n++) {
                text t = craft(n, tricky, array, -1);
                int r = compare("crafted", t.p, t.len);
                free(t.p);
                CHECK(r >= 0);
                taken += r == 1;
                refused += r == 0 && tricky;
                taken_tricky += r == 1 && tricky;
            }
    CHECK(taken > 100);
    CHECK(walked_total > 1000); /* the simdjson walker read most pieces itself */
    CHECK(refused > 5);         /* a guess inside a string was caught */
    CHECK(taken_tricky > 5);    /* and a real boundary after look-alikes was used */
}

/* Every prefix: errors (truncated strings, objects, the array, the trailer) read the same. */
static void test_prefixes(void) {
    for (int array = 0; array < 2; array++) {
        text t = craft(12, 1, array, -1);
        for (size_t len = 0; len <= t.len; len++)
            if (len % 16 ? compare_opt("prefix", t.p, len, 1, WALKS(here)) < 0
                         : compare("prefix", t.p, len) < 0) {
                CHECK(0);
                break;
            }
        free(t.p);
    }
}

/* A bad value late in the text (in the second thread's range): the same message, with its
 * line, column, byte and event index; one early (the first range) too. */
static void test_error_positions(void) {
    int bads[] = {5, 60, 70, 79};
    for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++) {
        text t = craft(80, 1, 0, bads[i]);
        CHECK(compare("bad", t.p, t.len) >= 0);
        tp_model *m = tp_model_new();
        char err[600];
        CHECK_EQ_I(tp_import_kineto_mem_split(m, "bad", t.p, t.len, 0, NULL, err, sizeof err),
                   TP_ERR_PARSE);
        char want[64];
        snprintf(want, sizeof want, "traceEvents[%d]: field 'ts'", bads[i]);
        CHECK(strstr(err, want) != NULL);
        CHECK_EQ_U(m->n_ranks, 0);
        tp_model_close(m);
        free(t.p);
    }
}

static text gzip_text(const text *t) {
    text g = {NULL, 0, 0};
    uLongf cap = compressBound(t->len) + 64;
    g.p = malloc(cap);
    z_stream z;
    memset(&z, 0, sizeof z);
    deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
    z.next_in = (unsigned char *)t->p;
    z.avail_in = (uInt)t->len;
    z.next_out = (unsigned char *)g.p;
    z.avail_out = (uInt)cap;
    deflate(&z, Z_FINISH);
    g.len = z.total_out;
    deflateEnd(&z);
    return g;
}

/* gzip images: split after a whole inflate; a cut or damaged image gets the streaming
 * path's message (truncated / damaged), the same as the serial import. */
static void test_gzip(void) {
    text t = craft(80, 1, 0, -1);
    text g = gzip_text(&t);
    CHECK_EQ_I(compare("gz", g.p, g.len), 1);
    CHECK_EQ_I(compare("cut.gz", g.p, g.len / 2), 0);
    g.p[g.len / 2] ^= 0x55;
    CHECK_EQ_I(compare("damaged.gz", g.p, g.len), 0);
    free(g.p);
    free(t.p);
}

/* HTA's rank (`"rank":\s+(\d+)`, first match in the raw text) found inside events, where the
 * walking threads search their pieces for it: look-alikes that fail (`"rank":9`, no space;
 * a string) before the match, at every event index, with pieces of one event and of a few,
 * here and on a thread; the rank the same as yajl's alone. */
static void test_rank_in_events(void) {
    static const char *const fake[] = {"\"rank\":9", "\"rank\": \"a\"", "\"rank\":\t\"b\""};
    static const walk_kind walks[] = {{1, 1}, {1, 300}, {2, 1}, {2, 300}, {2, 0}};
    int found = 0;
    for (int at = 0; at < 40; at += 3) {
        text t = {NULL, 0, 0};
        tp_test_put(&t, "{\"traceEvents\": [\n");
        for (int i = 0; i < 40; i++)
            tp_test_put(&t,
                        "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"op%d\", \"pid\": 1, "
                        "\"tid\": 2, \"ts\": %d, \"dur\": 1, \"args\": {%s%s\"x\": 1}}%s\n",
                        i, i * 10,
                        i == at      ? "\"rank\":  \t42"
                        : i % 4 == 1 ? fake[i % 3]
                                     : "",
                        i == at || i % 4 == 1 ? ", " : "", i + 1 < 40 ? "," : "");
        tp_test_put(&t, "]}\n");
        tp_model *y = tp_model_new();
        char ey[600] = "";
        CHECK_EQ_I(tp_import_kineto_mem_parser(y, "rank", t.p, t.len, 0, 0, NULL, ey, sizeof ey),
                   TP_OK);
        found += y->ranks[0].rank_hta == 42;
        for (size_t k = 0; k < sizeof walks / sizeof walks[0]; k++) {
            tp_model *c = tp_model_new();
            char ec[600] = "";
            CHECK_EQ_I(tp_import_kineto_mem_parser(c, "rank", t.p, t.len, walks[k].mode,
                                                   walks[k].piece, NULL, ec, sizeof ec),
                       TP_OK);
            CHECK_EQ_I(c->ranks[0].rank_hta, y->ranks[0].rank_hta);
            CHECK(same_rows(c, y));
            tp_model_close(c);
        }
        tp_model_close(y);
        free(t.p);
    }
    CHECK_EQ_I(found, 14); /* every text, past the look-alikes */
}

/* ------------------------------------------------------------------ peer traces */

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc(len > 0 ? (size_t)len : 1);
    if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *n = (size_t)len;
    return buf;
}

/* Decompressed size of a file (gzip: its trailer's ISIZE). */
static size_t text_size(const char *data, size_t n) {
    const unsigned char *d = (const unsigned char *)data;
    if (n >= 18 && d[0] == 0x1f && d[1] == 0x8b)
        return (size_t)d[n - 4] | (size_t)d[n - 3] << 8 | (size_t)d[n - 2] << 16 |
               (size_t)d[n - 1] << 24;
    return n;
}

/* `trainprof report SET --format json [--compat hta]` with TP_IMPORT_THREADS=`threads`,
 * stdout into `out`. Returns the exit status. */
static int report_cli(const char *prog, const char *set, int threads, int hta, const char *out) {
    fflush(stdout); /* else the child's freopen writes our buffered lines into `out` */
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        char v[8];
        snprintf(v, sizeof v, "%d", threads);
        setenv("TP_IMPORT_THREADS", v, 1);
        if (!freopen(out, "w", stdout) || !freopen("/dev/null", "w", stderr))
            _exit(126);
        if (hta)
            execl(prog, prog, "report", set, "--format", "json", "--compat", "hta", (char *)0);
        else
            execl(prog, prog, "report", set, "--format", "json", (char *)0);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static int same_file(const char *a, const char *b) {
    size_t na, nb;
    char *x = slurp(a, &na), *y = slurp(b, &nb);
    int same = x && y && na == nb && na > 0 && !memcmp(x, y, na);
    free(x);
    free(y);
    return same;
}

static const char *prog;

/* One set: its big files split (and equal to the serial import); the CLI's report JSON the
 * same with one and two threads. Returns the number of files split. */
static int peer_set(const char *root, const char *set) {
    char dir[1536], path[2048];
    snprintf(dir, sizeof dir, "%s/%s", root, set);
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int split = 0, big = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        size_t n;
        char *data = slurp(path, &n);
        if (!data || text_size(data, n) < SPLIT_FILE_MIN) {
            free(data);
            continue;
        }
        big = 1;
        int r = compare_opt(path, data, n, 0, NULL, 0); /* reports: the CLI's, below */
        if (r != 1)
            fprintf(stderr, "%s: split %d (want 1)\n", path, r);
        split += r == 1;
        free(data);
    }
    closedir(d);
    for (int hta = 0; big && hta < 2; hta++) {
        char one[300], two[300];
        snprintf(one, sizeof one, "/tmp/tp_test_split_%d_1.json", (int)getpid());
        snprintf(two, sizeof two, "/tmp/tp_test_split_%d_2.json", (int)getpid());
        int a = report_cli(prog, dir, 1, hta, one), b = report_cli(prog, dir, 2, hta, two);
        if (a != 0 || b != 0 || !same_file(one, two)) {
            fprintf(stderr, "%s: report JSON (hta %d) differs with 1 and 2 threads\n", set, hta);
            split = -1000;
        }
        unlink(one);
        unlink(two);
    }
    return split;
}

static void test_peer_traces(void) {
    const char *peer = getenv("TP_PEER_TRACES");
    char root[1024];
    snprintf(root, sizeof root, "%s/traces", peer ? peer : "");
    DIR *d = peer ? opendir(root) : NULL;
    if (!d) {
        if (getenv("CI") && !strcmp(getenv("CI"), "true"))
            CHECK(!"peer traces missing under CI");
        fprintf(stderr, "no peer traces: skipping that part\n");
        return;
    }
    int files = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (de->d_name[0] != '.') {
            int k = peer_set(root, de->d_name);
            CHECK(k >= 0);
            files += k;
        }
    closedir(d);
    CHECK(files >= 10); /* the sets of 4 MiB or more */
}

int main(int argc, char **argv) {
    prog = argc > 1 ? argv[1] : "trainprof";
    TP_RUN(test_crafted);
    TP_RUN(test_prefixes);
    TP_RUN(test_error_positions);
    TP_RUN(test_gzip);
    TP_RUN(test_rank_in_events);
    TP_RUN(test_peer_traces);
    return tp_test_summary();
}
