/* test_load_errors: tp_load picks a loader per file from its table of formats by the first
 * bytes, and a failure comes back in parts (status, file, line, column, byte, element,
 * reason) as well as the one line the commands print; the line is made of the parts, never
 * cut from another message. Real files written into a temporary folder. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tp_import_kineto.h"
#include "tp_load.h"
#include "tp_load_native.h"
#include "tp_test.h"

static char dir[256];

static const char *write_file(const char *name, const void *data, size_t n) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(data, 1, n, f);
        fclose(f);
    }
    return path;
}

static tp_status load(const char *path, tp_load_result *res) {
    const char *paths[] = {path};
    tp_model *m = NULL;
    tp_status st = tp_load_paths(paths, 1, &m, res);
    tp_model_close(m);
    return st;
}

/* The parts and the line agree: the line is the parts put together. */
static void check_line(const tp_load_result *res) {
    char line[1024];
    CHECK_STR(tp_load_error_format(&res->failure, line, sizeof line), res->error);
}

/* A bad value inside an event: its line, column, byte and event index, in parts. */
static void test_kineto_position(void) {
    const char json[] = "{\"traceEvents\": [\n"
                        "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": 1, "
                        "\"dur\": 2},\n"
                        "  {\"ph\": \"X\", \"ts\": \"late\"}\n]}\n";
    const char *path = write_file("bad.json", json, strlen(json));
    tp_load_result res;
    CHECK_EQ_I(load(path, &res), TP_ERR_PARSE);
    const tp_load_error *e = &res.failure;
    CHECK_EQ_I(e->status, TP_ERR_PARSE);
    CHECK_STR(e->file, path);
    CHECK_EQ_U(e->line, 3);
    const char *late = strstr(json, "\"late\"") + 6; /* just after the bad value */
    CHECK_EQ_U(e->byte, (size_t)(late - json));
    CHECK_EQ_U(e->col, (size_t)(late - strrchr(json, '{')) + 3);
    CHECK_STR(e->where, "traceEvents[1]");
    CHECK(strstr(e->reason, "field 'ts'") == e->reason);
    check_line(&res);
    char want[600];
    snprintf(want, sizeof want, "%s:3:%llu: byte %llu: traceEvents[1]: field 'ts'", path,
             (unsigned long long)e->col, (unsigned long long)e->byte);
    CHECK(strncmp(res.error, want, strlen(want)) == 0);
}

/* Bytes no format recognizes: no loader is tried. */
static void test_unknown_format(void) {
    const char *path = write_file("notes.tprof", "hello, world\n", 13);
    tp_load_result res;
    CHECK_EQ_I(load(path, &res), TP_ERR_FORMAT);
    CHECK_STR(res.failure.file, path);
    CHECK_EQ_U(res.failure.line, 0);
    CHECK_STR(res.failure.reason, "not a trace: neither Kineto JSON nor .tprof");
    check_line(&res);
}

/* The start of a .tprof magic goes to the native loader, which says what is wrong. */
static void test_cut_magic(void) {
    const char *path = write_file("cut.tprof", "TPROF", 5);
    tp_load_result res;
    CHECK_EQ_I(load(path, &res), TP_ERR_TRUNCATED);
    CHECK_STR(res.failure.reason, tp_status_str(TP_ERR_TRUNCATED));
    check_line(&res);
    CHECK(tp_load_native_sniff("TPROF\r\n\x1a", 8) && tp_load_native_sniff("TP", 2));
    CHECK(!tp_load_native_sniff("{\"traceEvents\"", 14) && !tp_load_native_sniff("", 0));
    CHECK(!tp_import_kineto_sniff("TPROF\r\n\x1a", 8));
}

/* Errors about no file in particular, or about a folder. */
static void test_folder_and_nothing(void) {
    tp_load_result res;
    char sub[300];
    snprintf(sub, sizeof sub, "%s/empty", dir);
    mkdir(sub, 0700);
    CHECK_EQ_I(load(sub, &res), TP_ERR_EMPTY);
    CHECK_STR(res.failure.file, sub);
    CHECK(strstr(res.failure.reason, "no trace files in this folder (") == res.failure.reason);
    check_line(&res);
    rmdir(sub);
    tp_model *m = NULL;
    CHECK_EQ_I(tp_load_paths(NULL, 0, &m, &res), TP_ERR_ARG);
    CHECK_STR(res.failure.file, "");
    CHECK_STR(res.error, "no trace given");
    check_line(&res);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/tp_test_load_errors_%d", (int)getpid());
    mkdir(dir, 0700);
    TP_RUN(test_kineto_position);
    TP_RUN(test_unknown_format);
    TP_RUN(test_cut_magic);
    TP_RUN(test_folder_and_nothing);
    const char *names[] = {"bad.json", "notes.tprof", "cut.tprof"};
    for (size_t i = 0; i < 3; i++) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
    }
    rmdir(dir);
    return tp_test_summary();
}
