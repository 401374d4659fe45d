/* test_import_kineto: the Kineto importer and tp_load on hand-written fixtures
 * (tests/analyzer/data): every field the model keeps, both category generations, exact ns
 * from decimal µs, indexes and nesting, and every class of bad input -- through the library
 * (error text names the file and a byte offset) and through the real `trainprof report`
 * binary (exit status 1, message on stderr). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "tp_import_kineto.h"
#include "tp_load.h"
#include "tp_model.h"
#include "tp_record.h"
#include "tp_test.h"

static char data_dir[1024];

static const char *data(const char *name) {
    static char buf[4][1200];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", data_dir, name);
    return buf[k];
}

static tp_model *load1(const char *path, tp_load_result *res) {
    tp_model *m = NULL;
    const char *paths[] = {path};
    tp_status st = tp_load_paths(paths, 1, &m, res);
    return st == TP_OK ? m : NULL;
}

/* Row of the first event named `name` (and category `cat`, or any when -1); -1 if none. */
static long find_row(const tp_model *m, const tp_rank *r, const char *name, int cat) {
    for (size_t i = 0; i < r->ev.n; i++)
        if (!strcmp(tp_model_str(m, r->ev.name[i]), name) && (cat < 0 || r->ev.cat[i] == cat))
            return (long)i;
    return -1;
}

static void test_current_format(void) {
    tp_load_result res;
    tp_model *m = load1(data("kineto_current.json"), &res);
    CHECK(m != NULL);
    CHECK_EQ_U(m->n_ranks, 1);
    const tp_rank *r = &m->ranks[0];
    CHECK_EQ_I(r->rank, 3);
    CHECK_EQ_I(r->rank_hta, 3);
    CHECK_EQ_I(r->world_size, 8);
    CHECK_STR(tp_model_str(m, r->dist_backend), "nccl");
    CHECK_EQ_I(r->base_time_ns, 1751410836000000000LL);
    CHECK_EQ_I(r->device_type, TP_DEVTYPE_NVIDIA);
    CHECK(r->has_fractional_ts);
    CHECK_EQ_U(r->n_devices, 1);
    CHECK_STR(tp_model_str(m, r->devices[0].name), "NVIDIA H100 80GB HBM3");
    CHECK_EQ_I(r->devices[0].total_global_mem, 84929216512LL);
    CHECK_EQ_I(r->devices[0].compute_major, 9);
    CHECK_EQ_I(r->devices[0].num_sms, 132);
    /* 13 rows: the event without cat and the "Trace" event are not admitted (HTA rule) */
    CHECK_EQ_U(r->ev.n, 13);
    CHECK_EQ_U(r->n_dropped, 2);
    CHECK_EQ_U(r->n_flow, 2);
    CHECK_EQ_U(r->n_meta, 1);
    CHECK_EQ_U(r->n_json_events, 21);
    /* sorted by ts */
    for (size_t i = 1; i < r->ev.n; i++)
        CHECK(r->ev.ts[i] >= r->ev.ts[i - 1]);

    long k = find_row(m, r, "void add_kernel<float>(float*)", TP_CAT_KERNEL);
    CHECK(k >= 0);
    CHECK_EQ_I(r->ev.ts[k], 1030123);
    CHECK_EQ_I(tp_ev_dur(&r->ev, k), 3500);
    CHECK_EQ_I(tp_ev_stream(&r->ev, k), 7);
    CHECK_EQ_I(tp_ev_device(&r->ev, k), 0);
    CHECK_EQ_I(tp_ev_corr(&r->ev, k), 77);
    CHECK_EQ_I(tp_ev_external_id(&r->ev, k), 2);
    CHECK_STR(tp_model_str(m, tp_ev_cat_raw(&r->ev, k)), "kernel");

    long l = find_row(m, r, "cudaLaunchKernel", TP_CAT_CUDA_RUNTIME);
    CHECK(l >= 0);
    CHECK_EQ_I(r->ev.ts[l], 1012001);
    CHECK_EQ_I(tp_ev_dur(&r->ev, l), 5250);
    CHECK(r->ev.flags[l] & TP_EVF_LAUNCH);
    CHECK_EQ_I(tp_ev_stream(&r->ev, l), -1);

    long c = find_row(m, r, "Memcpy HtoD (Pageable -> Device)", TP_CAT_MEMCPY);
    CHECK(c >= 0);
    CHECK_EQ_I(tp_ev_bytes(&r->ev, c), 4096);
    CHECK_EQ_I(tp_ev_copy_kind(&r->ev, c), TP_COPY_HTOD);
    CHECK_EQ_I(tp_ev_src_kind(&r->ev, c), TP_MEM_PAGEABLE);
    CHECK_EQ_I(tp_ev_dst_kind(&r->ev, c), TP_MEM_DEVICE);
    CHECK_NEAR(tp_ev_bw_gbps(&r->ev, c), 0.4096, 1e-12);
    long d = find_row(m, r, "Memcpy DtoH (Device -> Pinned)", TP_CAT_MEMCPY);
    CHECK(d >= 0);
    CHECK_EQ_I(tp_ev_stream(&r->ev, d), 20); /* "20" as a string: int("20") */
    CHECK_EQ_I(tp_ev_copy_kind(&r->ev, d), TP_COPY_DTOH);
    CHECK_EQ_I(tp_ev_dst_kind(&r->ev, d), TP_MEM_PINNED);
    CHECK(isnan(tp_ev_bw_gbps(&r->ev, d)));
    long s = find_row(m, r, "Memset (Device)", TP_CAT_MEMSET);
    CHECK(s >= 0);
    CHECK_EQ_I(tp_ev_src_kind(&r->ev, s), TP_MEM_DEVICE);
    CHECK_EQ_I(tp_ev_bytes(&r->ev, s), 128);
    CHECK(find_row(m, r, "Stream Sync", TP_CAT_CUDA_SYNC) >= 0);
    long cu = find_row(m, r, "cuLaunchKernel", TP_CAT_CUDA_DRIVER);
    CHECK(cu >= 0);
    CHECK_EQ_I(tp_ev_stream(&r->ev, cu), -1); /* "0x0": int() fails -> -1 */
    CHECK(r->ev.flags[cu] & TP_EVF_LAUNCH);
    long o = find_row(m, r, "mine", TP_CAT_OTHER);
    CHECK(o >= 0);
    CHECK_STR(tp_model_str(m, tp_ev_cat_raw(&r->ev, o)), "custom_thing");
    long step = find_row(m, r, "ProfilerStep#7", TP_CAT_USER_ANNOTATION);
    CHECK(step >= 0);
    CHECK_EQ_I(r->ev.ts[step], 1000500);
    CHECK(r->ev.flags[step] & TP_EVF_PROFILER_STEP);
    CHECK(find_row(m, r, "ProfilerStep#7", TP_CAT_GPU_USER_ANNOTATION) >= 0);

    /* nesting on thread 101: step > python_function > aten::add > cudaLaunchKernel */
    long py = find_row(m, r, "train.py(12): step", TP_CAT_PYTHON_FUNCTION);
    long add = find_row(m, r, "aten::add", TP_CAT_CPU_OP);
    CHECK_EQ_I(tp_ev_parent(&r->ev, (size_t)step), -1);
    CHECK_EQ_I(tp_ev_parent(&r->ev, (size_t)py), step);
    CHECK_EQ_I(tp_ev_parent(&r->ev, (size_t)add), py);
    CHECK_EQ_I(tp_ev_parent(&r->ev, (size_t)l), add);
    CHECK_EQ_I(tp_ev_depth(&r->ev, l), 3);
    CHECK_EQ_I(tp_ev_parent(&r->ev, (size_t)k), -1); /* GPU rows are not nested */

    /* correlation index: 77 = launch + kernel, in time order */
    const uint32_t *rows;
    CHECK_EQ_U(tp_rank_corr_rows(r, 77, &rows), 2);
    CHECK_EQ_I(rows[0], l);
    CHECK_EQ_I(rows[1], k);
    CHECK_EQ_U(tp_rank_corr_rows(r, 12345, &rows), 0);
    CHECK(rows == NULL);
    /* streams: 7 (kernel, memcpy, memset, sync) and 20 */
    CHECK_EQ_U(r->streams.n, 2);
    long si = tp_rank_stream_index(r, 7);
    CHECK(si >= 0);
    CHECK_EQ_U(r->streams.off[si + 1] - r->streams.off[si], 4);
    CHECK_EQ_I(tp_rank_stream_index(r, 99), -1);
    /* threads: (100,101) and (100,102), plus the GPU annotation on (0,7) */
    CHECK_EQ_U(r->threads.n, 3);
    /* per-kind row lists: 1 kernel; 2 memcpys in time order */
    size_t kinds = 0;
    for (size_t j = 0; j < r->cats.n; j++) {
        size_t n = r->cats.off[j + 1] - r->cats.off[j];
        const uint32_t *rows_j = r->cats.rows + r->cats.off[j];
        kinds += n;
        if (r->cats.key[j] == TP_CAT_KERNEL)
            CHECK_EQ_U(n, 1);
        if (r->cats.key[j] == TP_CAT_MEMCPY) {
            CHECK_EQ_U(n, 2);
            CHECK_EQ_I(rows_j[0], c);
            CHECK(r->ev.ts[rows_j[0]] < r->ev.ts[rows_j[1]]);
        }
    }
    CHECK_EQ_U(kinds, r->ev.n);

    /* memory events */
    CHECK_EQ_U(r->mem.n, 2);
    CHECK_EQ_I(r->mem.ts[0], 1011000);
    CHECK_EQ_I(r->mem.kind[0], TP_MEMEV_ALLOC);
    CHECK_EQ_I(tp_memev_bytes(&r->mem, 0), 512);
    CHECK_EQ_I(tp_memev_device(&r->mem, 0), 0);
    CHECK_EQ_U(r->mem.addr[0], 140000000000000ULL);
    CHECK_EQ_I(tp_memev_total_allocated(&r->mem, 0), 1536);
    CHECK_EQ_I(tp_memev_total_reserved(&r->mem, 0), 2097152);
    CHECK_EQ_I(r->mem.kind[1], TP_MEMEV_FREE);
    CHECK_EQ_I(tp_memev_bytes(&r->mem, 1), -512);
    tp_model_close(m);
}

static void test_gzip_equals_plain(void) {
    tp_load_result res;
    tp_model *a = load1(data("kineto_current.json"), &res);
    tp_model *b = load1(data("kineto_current.json.gz"), &res);
    CHECK(a && b);
    CHECK_EQ_U(a->ranks[0].ev.n, b->ranks[0].ev.n);
    for (size_t i = 0; i < a->ranks[0].ev.n; i++) {
        CHECK_EQ_I(a->ranks[0].ev.ts[i], b->ranks[0].ev.ts[i]);
        CHECK_EQ_I(tp_ev_dur(&a->ranks[0].ev, i), tp_ev_dur(&b->ranks[0].ev, i));
    }
    tp_model_close(a);
    tp_model_close(b);
}

static void test_old_format(void) {
    tp_load_result res;
    tp_model *m = load1(data("kineto_oldfmt.json"), &res);
    CHECK(m != NULL);
    const tp_rank *r = &m->ranks[0];
    CHECK_EQ_I(r->rank, 0);
    CHECK_EQ_I(r->has_dist_info, 0);
    CHECK(!r->has_fractional_ts);
    CHECK_EQ_U(r->ev.n, 5);
    long c = find_row(m, r, "Memcpy HtoD (Pinned -> Device)", TP_CAT_MEMCPY);
    CHECK(c >= 0);
    CHECK_STR(tp_model_str(m, tp_ev_cat_raw(&r->ev, c)), "Memcpy");
    CHECK_EQ_I(tp_ev_src_kind(&r->ev, c), TP_MEM_PINNED);
    CHECK_EQ_I(tp_ev_tid(&r->ev, c), 7); /* "stream 7" */
    CHECK_EQ_I(tp_ev_external_id(&r->ev, c), 537);
    CHECK_EQ_I(r->ev.ts[c], 1623142623529248000LL);
    long rt = find_row(m, r, "cudaMemcpyAsync", TP_CAT_CUDA_RUNTIME);
    CHECK(rt >= 0);
    CHECK(r->ev.flags[rt] & TP_EVF_LAUNCH);
    CHECK_EQ_I(tp_ev_tid(&r->ev, rt), 25738); /* "25738" */
    CHECK(find_row(m, r, "volta_sgemm_128x64_nn", TP_CAT_KERNEL) >= 0);
    CHECK(find_row(m, r, "aten::empty", TP_CAT_CPU_OP) >= 0);
    CHECK(find_row(m, r, "Memset (Device)", TP_CAT_MEMSET) >= 0);
    CHECK_EQ_U(r->mem.n, 1); /* [memory] without a category */
    CHECK_EQ_I(tp_memev_device(&r->mem, 0), -1);
    CHECK_EQ_I(tp_memev_bytes(&r->mem, 0), 4);
    tp_model_close(m);
}

static void test_array_and_exponents(void) {
    tp_load_result res;
    tp_model *m = load1(data("kineto_array.json"), &res);
    CHECK(m != NULL);
    const tp_rank *r = &m->ranks[0];
    CHECK_EQ_U(r->ev.n, 2);
    CHECK_EQ_I(r->ev.ts[0], 1500);          /* 1.5e0 µs */
    CHECK_EQ_I(tp_ev_dur(&r->ev, 0), 2001); /* 2.0005 µs rounds half up to 2001 ns */
    CHECK_EQ_I(r->ev.ts[1], 5000);
    CHECK_EQ_I(tp_ev_dur(&r->ev, 1), 1000);
    CHECK_EQ_I(r->device_type, TP_DEVTYPE_AMD); /* a hip* runtime call */
    tp_model_close(m);
}

/* The exact-µs conversion on numbers a double cannot hold exactly. */
static void test_exact_ns(void) {
    const char *json =
        "[{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":1712195495505582.988,"
        "\"dur\":4.928,\"args\":{\"stream\":7}},"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":3.0000001,"
        "\"dur\":0.0004,\"args\":{\"stream\":7}}]";
    tp_model *m = tp_model_new();
    char err[256];
    CHECK_OK(tp_import_kineto_mem(m, "mem", json, strlen(json), err, sizeof err));
    tp_model_finish(m);
    const tp_rank *r = &m->ranks[0];
    CHECK_EQ_I(r->ev.ts[1], 1712195495505582988LL);
    CHECK_EQ_I(tp_ev_dur(&r->ev, 1), 4928);
    CHECK_EQ_I(r->ev.ts[0], 3000); /* negative times are skipped (test_odd_input) */
    CHECK_EQ_I(tp_ev_dur(&r->ev, 0), 0);
    tp_model_close(m);
}

/* Errors give line:column too, counted across the importer's 1 MiB chunks: a 2.4 MB file
 * whose last event (line 20002) has a string ts. */
static void test_error_line_column(void) {
    char path[256];
    snprintf(path, sizeof path, "/tmp/tp_test_import_lines_%d.json", (int)getpid());
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fprintf(f, "{\"traceEvents\": [\n");
    for (int i = 0; i < 20000; i++)
        fprintf(f,
                "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k%d\", \"ts\": %d, "
                "\"dur\": 1, \"args\": {\"stream\": 7, \"correlation\": %d}},\n",
                i % 97, i * 10, i);
    fprintf(f, "  {\"ph\": \"X\", \"ts\": \"late\"}\n]}\n");
    fclose(f);
    tp_model *m = tp_model_new();
    char err[512], want[600];
    CHECK_EQ_I(tp_import_kineto_file(m, path, err, sizeof err), TP_ERR_PARSE);
    snprintf(want, sizeof want, "%s:20002:27: byte ", path); /* just after "late" */
    if (strncmp(err, want, strlen(want)) || !strstr(err, "traceEvents[20000]: field 'ts'")) {
        fprintf(stderr, "got: %s\n", err);
        CHECK(0);
    }
    CHECK_EQ_U(m->n_ranks, 0);
    tp_model_close(m);
    unlink(path);
}

/* The in-memory importer inflates gzip images too (the fuzz target goes through it). */
static void test_mem_gzip(void) {
    FILE *f = fopen(data("kineto_current.json.gz"), "rb");
    CHECK(f != NULL);
    static unsigned char buf[8192];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    tp_model *m = tp_model_new();
    char err[256];
    CHECK_OK(tp_import_kineto_mem(m, "gz", buf, n, err, sizeof err));
    CHECK_EQ_U(m->ranks[0].ev.n, 13);
    CHECK_EQ_I(tp_import_kineto_mem(m, "half.gz", buf, n / 2, err, sizeof err), TP_ERR_TRUNCATED);
    CHECK(!strncmp(err, "half.gz:", 8) && strstr(err, ": byte ") && strstr(err, "truncated gzip"));
    buf[n / 2] ^= 0x55; /* damage inside the deflate data */
    CHECK(tp_import_kineto_mem(m, "bad.gz", buf, n, err, sizeof err) != TP_OK);
    CHECK_EQ_U(m->n_ranks, 1);
    tp_model_close(m);
}

/* Writes `n` bytes to a new file at `path`. */
static void put_file(const char *path, const void *d, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    CHECK_EQ_U(fwrite(d, 1, n, f), n);
    fclose(f);
}

/* The file importer reads gzip as gzread did: every member in turn, what follows the last
 * one ignored; a member whose trailer (CRC-32 of the text, its length) does not match is an
 * error in zlib's words (the importer checks the trailer itself: zlib's check is off). */
static void test_gzip_members(void) {
    FILE *f = fopen(data("kineto_current.json"), "rb");
    CHECK(f != NULL);
    static char text[65536];
    size_t n = fread(text, 1, sizeof text, f);
    fclose(f);
    char path[64];
    snprintf(path, sizeof path, "/tmp/tp_gzm_%d.json.gz", (int)getpid());
    static unsigned char gz[65536 * 2];
    size_t len = 0;
    for (int half = 0; half < 2; half++) { /* two members: the text's two halves */
        z_stream z;
        memset(&z, 0, sizeof z);
        CHECK(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
        z.next_in = (unsigned char *)text + (half ? n / 2 : 0);
        z.avail_in = (unsigned)(half ? n - n / 2 : n / 2);
        z.next_out = gz + len;
        z.avail_out = (unsigned)(sizeof gz - len);
        CHECK(deflate(&z, Z_FINISH) == Z_STREAM_END);
        len += z.total_out;
        deflateEnd(&z);
    }
    static const struct {
        int flip; /* byte from the end to change; 0: none */
        const char *tail, *needle;
        tp_status st;
    } cases[] = {
        {0, "", NULL, TP_OK},
        {0, "trailing bytes, not gzip", NULL, TP_OK},
        {8, "", "gzip stream damaged: incorrect data check", TP_ERR_PARSE},
        {2, "", "gzip stream damaged: incorrect length check", TP_ERR_PARSE},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        static unsigned char img[65536 * 2 + 64];
        memcpy(img, gz, len);
        if (cases[c].flip)
            img[len - (size_t)cases[c].flip] ^= 1;
        memcpy(img + len, cases[c].tail, strlen(cases[c].tail));
        put_file(path, img, len + strlen(cases[c].tail));
        tp_model *m = tp_model_new();
        char err[256];
        CHECK_EQ_I(tp_import_kineto_file(m, path, err, sizeof err), cases[c].st);
        if (cases[c].st == TP_OK)
            CHECK_EQ_U(m->ranks[0].ev.n, 13); /* both halves */
        else if (!strstr(err, cases[c].needle))
            fprintf(stderr, "got: %s\n", err);
        if (cases[c].st != TP_OK)
            CHECK(strstr(err, cases[c].needle) != NULL);
        tp_model_close(m);
    }
    unlink(path);
}

/* The file's result (status, message, events) with TP_IMPORT_INFLATE=`how` (NULL: default). */
static tp_status import_with(const char *path, const char *how, char *err, size_t n,
                             size_t *events) {
    if (how)
        setenv("TP_IMPORT_INFLATE", how, 1);
    else
        unsetenv("TP_IMPORT_INFLATE");
    tp_model *m = tp_model_new();
    tp_status st = tp_import_kineto_file(m, path, err, n);
    *events = m->n_ranks ? m->ranks[0].ev.n : 0;
    tp_model_close(m);
    unsetenv("TP_IMPORT_INFLATE");
    return st;
}

/* Damaged gzip (truncated anywhere, a bit flipped anywhere) reads as with zlib alone: the
 * same status, message (zlib's words, the same position) and events, whichever inflates
 * (igzip accepts some code tables zlib refuses and sees errors a few bytes further on: a
 * failed import is done again with zlib). */
static void test_gzip_damage_as_zlib(void) {
    FILE *f = fopen(data("kineto_current.json.gz"), "rb");
    CHECK(f != NULL);
    static unsigned char gz[8192], img[8192];
    size_t n = fread(gz, 1, sizeof gz, f);
    fclose(f);
    char path[64];
    snprintf(path, sizeof path, "/tmp/tp_gzd_%d.json.gz", (int)getpid());
    int differ = 0, cases = 0;
    for (size_t k = 0; k < n + 3 * n; k++) {
        size_t len = n;
        memcpy(img, gz, n);
        if (k < n)
            len = k; /* truncated after k bytes */
        else
            img[10 + (k - n) / 3 % (n - 10)] ^= (unsigned char)(1u << (k * 5 % 8));
        put_file(path, img, len);
        char e1[512], e2[512];
        size_t ev1, ev2;
        tp_status s1 = import_with(path, NULL, e1, sizeof e1, &ev1);
        tp_status s2 = import_with(path, "zlib", e2, sizeof e2, &ev2);
        cases++;
        if (s1 != s2 || ev1 != ev2 || (s1 != TP_OK && strcmp(e1, e2))) {
            if (differ++ < 3)
                fprintf(stderr, "case %zu: %s [%s] vs zlib %s [%s]\n", k, tp_status_name(s1), e1,
                        tp_status_name(s2), e2);
        }
    }
    CHECK_EQ_I(differ, 0);
    CHECK(cases > 4000);
    unlink(path);
}

/* HTA's `"rank":\s+(\d+)` inference: needs a space; the first match wins. */
static void test_rank_inference(void) {
    const char *json = "{\"x\": {\"rank\":5}, \"y\": {\"rank\": 12},\n"
                       "\"traceEvents\": []}";
    tp_model *m = tp_model_new();
    char err[256];
    CHECK_OK(tp_import_kineto_mem(m, "mem", json, strlen(json), err, sizeof err));
    CHECK_EQ_I(m->ranks[0].rank_hta, 12);
    CHECK_EQ_I(m->ranks[0].rank, 12);
    CHECK_EQ_I(m->ranks[0].has_dist_info, 0);
    tp_model_close(m);
}

typedef struct {
    const char *file;
    const char *needle; /* expected in the message */
    tp_status st;
} bad_case;

static const bad_case bad_cases[] = {
    {"bad_empty.json", "empty file", TP_ERR_EMPTY},
    {"bad_whitespace.json", "no JSON value", TP_ERR_EMPTY},
    {"bad_truncated.json", "bad_truncated.json:1:95: byte 94: traceEvents[1]: truncated JSON",
     TP_ERR_TRUNCATED},
    {"bad_truncated.json.gz", "truncated gzip", TP_ERR_TRUNCATED},
    {"bad_syntax.json", "byte 79: invalid JSON", TP_ERR_PARSE},
    {"bad_type_ts.json", "traceEvents[0]: field 'ts': expected a number", TP_ERR_PARSE},
    {"bad_type_name.json", "field 'name': expected a string", TP_ERR_PARSE},
    {"bad_type_events.json", "traceEvents: expected an array", TP_ERR_PARSE},
    {"bad_event_not_object.json", "traceEvents[1]: expected an object", TP_ERR_PARSE},
    {"bad_absurd_ts.json", "field 'ts': number 1e300 out of range", TP_ERR_PARSE},
    {"bad_absurd_dur.json", "field 'dur': number 99999999999999999999999 out of range",
     TP_ERR_PARSE},
    {"bad_utf8.json", "invalid bytes in UTF8", TP_ERR_PARSE},
    {"bad_no_events.json", "no traceEvents array", TP_ERR_PARSE},
    {"bad_missing_ts.json", "traceEvents[0]: event with dur has no ts", TP_ERR_PARSE},
};

static void test_bad_inputs_library(void) {
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        const bad_case *b = &bad_cases[i];
        tp_load_result res;
        tp_model *m = NULL;
        const char *paths[] = {data(b->file)};
        tp_status st = tp_load_paths(paths, 1, &m, &res);
        if (st != b->st || m != NULL || !strstr(res.error, b->needle) ||
            !strstr(res.error, b->file)) {
            fprintf(stderr, "%s: status %s, message \"%s\"\n", b->file, tp_status_name(st),
                    res.error);
            CHECK(0);
        }
        if (strcmp(b->file, "bad_empty.json") && strcmp(b->file, "bad_truncated.json.gz"))
            CHECK(strstr(res.error, ": byte ") != NULL);
    }
}

/* Runs `trainprof report ARGS`, returns its exit status; stderr goes to `errfile`. */
static int run_report(const char *args, const char *errfile) {
    const char *bin_dir = getenv("TP_BUILD_DIR");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s/cli/trainprof report %s >/dev/null 2>%s", bin_dir, args, errfile);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    static char buf[8192];
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    buf[n] = 0;
    if (f)
        fclose(f);
    return buf;
}

static void test_bad_inputs_binary(void) {
    if (!getenv("TP_BUILD_DIR"))
        return;
    char errfile[256], args[2048];
    snprintf(errfile, sizeof errfile, "/tmp/tp_test_import_%d.err", (int)getpid());
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        snprintf(args, sizeof args, "'%s'", data(bad_cases[i].file));
        CHECK_EQ_I(run_report(args, errfile), 1);
        const char *msg = slurp(errfile);
        if (!strstr(msg, bad_cases[i].file) || !strstr(msg, bad_cases[i].needle)) {
            fprintf(stderr, "stderr was: %s\n", msg);
            CHECK(0);
        }
    }
    snprintf(args, sizeof args, "'%s' --format yaml", data("kineto_current.json"));
    CHECK_EQ_I(run_report(args, errfile), 2);
    CHECK_EQ_I(run_report("/nonexistent/trace.json", errfile), 1);
    CHECK(strstr(slurp(errfile), "/nonexistent/trace.json") != NULL);
    snprintf(args, sizeof args, "'%s' --rank 9", data("kineto_current.json"));
    CHECK_EQ_I(run_report(args, errfile), 1);
    CHECK(strstr(slurp(errfile), "no rank 9") != NULL);
    snprintf(args, sizeof args, "'%s' --rank 3", data("kineto_current.json"));
    CHECK_EQ_I(run_report(args, errfile), 0);
    unlink(errfile);
}

static void copy_file(const char *from, const char *to) {
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    char buf[4096];
    size_t n;
    while (a && b && (n = fread(buf, 1, sizeof buf, a)) > 0)
        fwrite(buf, 1, n, b);
    if (a)
        fclose(a);
    if (b)
        fclose(b);
}

/* Folders: per-rank files load together; non-trace names are skipped with a note; a bad
 * trace in the folder fails naming that file; a folder with no trace fails. */
static void test_folders(void) {
    char dir[256], p[512];
    snprintf(dir, sizeof dir, "/tmp/tp_test_import_dir_%d", (int)getpid());
    mkdir(dir, 0755);
    snprintf(p, sizeof p, "%s/README.txt", dir);
    copy_file(data("kineto_oldfmt.json"), p);
    tp_load_result res;
    tp_model *m = load1(dir, &res);
    CHECK(m == NULL);
    CHECK(strstr(res.error, "no trace files") != NULL);

    snprintf(p, sizeof p, "%s/a_rank3.json", dir);
    copy_file(data("kineto_current.json"), p);
    snprintf(p, sizeof p, "%s/b_rank0.json.gz", dir);
    copy_file(data("kineto_current.json.gz"), p);
    m = load1(dir, &res);
    CHECK(m != NULL);
    if (m) {
        CHECK_EQ_U(m->n_ranks, 2); /* both say rank 3: the second is renumbered to 0 */
        CHECK_EQ_I(m->ranks[0].rank, 0);
        CHECK_EQ_I(m->ranks[1].rank, 3);
        CHECK(strstr(res.notes, "README.txt: skipped") != NULL);
        CHECK(strstr(res.notes, "using rank 0") != NULL);
    }
    tp_model_close(m);

    snprintf(p, sizeof p, "%s/c_bad.json", dir);
    copy_file(data("bad_syntax.json"), p);
    m = load1(dir, &res);
    CHECK(m == NULL);
    CHECK(strstr(res.error, "c_bad.json:1:80: byte 79: invalid JSON") != NULL);
    snprintf(p, sizeof p, "rm -rf '%s'", dir);
    CHECK_EQ_I(system(p), 0);
}

/* Bytes of every fixture, cut at every length, never crash the importer. */
static void test_all_prefixes(void) {
    const char *files[] = {"kineto_current.json", "kineto_oldfmt.json"};
    for (size_t f = 0; f < 2; f++) {
        FILE *fp = fopen(data(files[f]), "rb");
        CHECK(fp != NULL);
        static char buf[8192];
        size_t n = fread(buf, 1, sizeof buf, fp);
        fclose(fp);
        for (size_t len = 0; len < n; len++) {
            tp_model *m = tp_model_new();
            char err[512];
            tp_status st = tp_import_kineto_mem(m, files[f], buf, len, err, sizeof err);
            CHECK(st != TP_OK || len >= n - 1); /* only the final newline may go */
            CHECK(st == TP_OK || (err[0] && m->n_ranks == 0));
            tp_model_finish(m);
            tp_model_close(m);
        }
    }
}

int main(void) {
    const char *src = getenv("TP_SOURCE_DIR");
    snprintf(data_dir, sizeof data_dir, "%s/tests/analyzer/data", src ? src : ".");
    TP_RUN(test_current_format);
    TP_RUN(test_gzip_equals_plain);
    TP_RUN(test_old_format);
    TP_RUN(test_array_and_exponents);
    TP_RUN(test_exact_ns);
    TP_RUN(test_mem_gzip);
    TP_RUN(test_gzip_members);
    TP_RUN(test_gzip_damage_as_zlib);
    TP_RUN(test_error_line_column);
    TP_RUN(test_rank_inference);
    TP_RUN(test_bad_inputs_library);
    TP_RUN(test_bad_inputs_binary);
    TP_RUN(test_folders);
    TP_RUN(test_all_prefixes);
    return tp_test_summary();
}
