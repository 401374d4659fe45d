/* tp_merge: see tp_merge.h. */
#include "tp_merge.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "tp_an_ranks.h"
#include "tp_mem.h"
#include "tp_report_fmt.h"
#include "tp_report_ranks.h"

#define SCHEMA "trainprof-report/v1"
#define SCHEMA_FAMILY "trainprof-report/"

struct tp_merge {
    tp_an_ranks x;
    size_t *file_of; /* per row of x: the index in `files` of the file it came from */
    size_t n_files;
    char **files;
    char mode[16]; /* "native" / "hta" of the first file; "" before it */
};

/* The fields of a cross_rank_row the merge reads; own_p50_ns and overlapped_comm_ns are
 * derived from them (tp_an_ranks_judge, tp_report_ranks), as the report derives them. */
typedef enum { F_INT, F_SIZE, F_I64, F_NUM, F_STR } field_kind;
typedef struct {
    const char *key;
    field_kind kind;
    size_t off;
    int optional; /* absent: -1 (a field a report writes only when it measured it) */
} row_field;

#define FIELD(key, kind, member)                                                                   \
    { key, kind, offsetof(tp_an_rank_row, member), 0 }
#define OPTIONAL(key, kind, member)                                                                \
    { key, kind, offsetof(tp_an_rank_row, member), 1 }
static const row_field fields[] = {
    FIELD("rank", F_INT, rank),
    FIELD("steps", F_SIZE, n_steps),
    FIELD("step_p50_ns", F_NUM, step_p50_ns),
    FIELD("step_p90_ns", F_NUM, step_p90_ns),
    FIELD("span_ns", F_I64, span_ns),
    FIELD("busy_ns", F_I64, busy_ns),
    FIELD("compute_ns", F_I64, compute_ns),
    FIELD("comm_ns", F_I64, comm_ns),
    FIELD("exposed_comm_ns", F_I64, exposed_comm_ns),
    FIELD("mem_peak_bytes", F_I64, mem_peak_bytes),
    FIELD("data_wait_ns", F_I64, data_wait_ns),
    OPTIONAL("host_wait_ns", F_I64, host_wait_ns),
    OPTIONAL("cpu_demand", F_NUM, cpu_demand),
    OPTIONAL("host", F_STR, host),
    OPTIONAL("cores", F_I64, cores),
    OPTIONAL("cpus", F_NUM, cpus),
};
#undef FIELD
#undef OPTIONAL

static char *dup(const char *s) {
    size_t n = strlen(s) + 1;
    return memcpy(tp_mem_xalloc(n, 1), s, n);
}

tp_merge *tp_merge_open(void) {
    return tp_mem_xcalloc(1, sizeof(tp_merge));
}

void tp_merge_close(tp_merge *mg) {
    if (!mg)
        return;
    for (size_t i = 0; i < mg->n_files; i++)
        free(mg->files[i]);
    free(mg->files), free(mg->file_of);
    tp_an_ranks_free(&mg->x);
    free(mg);
}

size_t tp_merge_n_ranks(const tp_merge *mg) {
    return mg->x.n;
}

/* Stores the value `v` of field `fd` into `row`; 0, or -1 when it has the wrong type. */
static int put_field(tp_an_rank_row *row, const row_field *fd, yajl_val v) {
    char *p = (char *)row + fd->off;
    if (fd->kind == F_STR) { /* the row's host name (cut to its size) */
        if (!YAJL_IS_STRING(v))
            return -1;
        snprintf(p, TP_AN_HOST_MAX, "%s", YAJL_GET_STRING(v));
        return 0;
    }
    if (fd->kind == F_NUM) {
        if (!YAJL_IS_NULL(v) && !YAJL_IS_DOUBLE(v))
            return -1;
        *(double *)p = YAJL_IS_NULL(v) ? NAN : YAJL_GET_DOUBLE(v);
        return 0;
    }
    if (!YAJL_IS_INTEGER(v))
        return -1;
    long long n = YAJL_GET_INTEGER(v);
    if (fd->kind == F_INT && (n < -2147483647LL - 1 || n > 2147483647LL))
        return -1;
    if (fd->kind == F_SIZE && n < 0)
        return -1;
    if (fd->kind == F_INT)
        *(int *)p = (int)n;
    else if (fd->kind == F_SIZE)
        *(size_t *)p = (size_t)n;
    else
        *(int64_t *)p = (int64_t)n;
    return 0;
}

/* 1 when `r` could come from a report: no negative time or count (the memory peak is -1 when
 * unknown), the exposed part of the communication within it, step times finite or absent.
 * The section's arithmetic (overlapped = comm - exposed) then cannot overflow. */
static int row_possible(const tp_an_rank_row *r) {
    int64_t t[] = {r->span_ns, r->busy_ns, r->compute_ns, r->comm_ns, r->data_wait_ns};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (t[i] < 0)
            return 0;
    double s[] = {r->step_p50_ns, r->step_p90_ns};
    for (size_t i = 0; i < 2; i++)
        if (!isnan(s[i]) && (isinf(s[i]) || s[i] < 0))
            return 0;
    if (!isnan(r->cpu_demand) && (isinf(r->cpu_demand) || r->cpu_demand < 0 || isnan(r->cpus) ||
                                  isinf(r->cpus) || r->cpus < 0))
        return 0;
    return r->mem_peak_bytes >= -1 && r->host_wait_ns >= -1 && r->cores >= -1 &&
           r->exposed_comm_ns >= 0 && r->exposed_comm_ns <= r->comm_ns;
}

/* The row of rank object `rank` (an element of the report's "ranks"). */
static tp_status read_row(yajl_val rank, size_t i, tp_an_rank_row *row, const char *name, char *err,
                          size_t err_size) {
    const char *path[] = {"cross_rank_row", NULL};
    yajl_val o = YAJL_IS_OBJECT(rank) ? yajl_tree_get(rank, path, yajl_t_object) : NULL;
    if (!o) {
        snprintf(err, err_size,
                 "%s: ranks[%zu] has no cross_rank_row (a report from an older trainprof? run "
                 "`trainprof report --format json` again)",
                 name, i);
        return TP_ERR_NOT_FOUND;
    }
    memset(row, 0, sizeof *row);
    for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++) {
        const char *fp[] = {fields[k].key, NULL};
        yajl_val v = yajl_tree_get(o, fp, yajl_t_any);
        if (!v && fields[k].optional) { /* not measured: NaN, -1 or "" */
            char *p = (char *)row + fields[k].off;
            if (fields[k].kind == F_NUM)
                *(double *)p = NAN;
            else if (fields[k].kind == F_STR)
                *p = 0;
            else
                *(int64_t *)p = -1;
            continue;
        }
        if (!v || put_field(row, &fields[k], v) < 0) {
            snprintf(err, err_size, "%s: ranks[%zu].cross_rank_row.%s is missing or not %s", name,
                     i, fields[k].key,
                     fields[k].kind == F_NUM   ? "a number"
                     : fields[k].kind == F_STR ? "a string"
                                               : "an integer in range");
            return TP_ERR_PARSE;
        }
    }
    if (!row_possible(row)) {
        snprintf(err, err_size,
                 "%s: ranks[%zu].cross_rank_row holds impossible values (a negative time or "
                 "count, exposed communication above all communication)",
                 name, i);
        return TP_ERR_PARSE;
    }
    return TP_OK;
}

/* The report's schema and mode are those the merge reads, and the same as the files before. */
static tp_status check_head(tp_merge *mg, yajl_val top, const char *name, char *err,
                            size_t err_size) {
    const char *sp[] = {"schema", NULL}, *mp[] = {"mode", NULL};
    yajl_val s = YAJL_IS_OBJECT(top) ? yajl_tree_get(top, sp, yajl_t_string) : NULL;
    const char *schema = s ? YAJL_GET_STRING(s) : NULL;
    if (!schema || strncmp(schema, SCHEMA_FAMILY, strlen(SCHEMA_FAMILY))) {
        snprintf(err, err_size,
                 "%s: not a trainprof report (want the output of `trainprof report --format "
                 "json`)",
                 name);
        return TP_ERR_PARSE;
    }
    if (strcmp(schema, SCHEMA)) {
        snprintf(err, err_size, "%s: report schema %.40s, this trainprof merges %s", name, schema,
                 SCHEMA);
        return TP_ERR_VERSION;
    }
    yajl_val m = yajl_tree_get(top, mp, yajl_t_string);
    const char *mode = m ? YAJL_GET_STRING(m) : NULL;
    mode = mode ? mode : "native";
    if (mg->mode[0] && strcmp(mg->mode, mode)) {
        snprintf(err, err_size,
                 "%s: a %.15s report among %s ones (their figures differ: make "
                 "every report in one mode)",
                 name, mode, mg->mode);
        return TP_ERR_ARG;
    }
    snprintf(mg->mode, sizeof mg->mode, "%s", mode);
    return TP_OK;
}

/* The file that holds rank `rank` among the rows added, or NULL. */
static const char *holder(const tp_merge *mg, int rank) {
    long i = tp_an_ranks_find(&mg->x, rank);
    return i < 0 ? NULL : mg->files[mg->file_of[i]];
}

/* Reads every rank's row of report `top` and adds them all, or none. */
static tp_status add_ranks(tp_merge *mg, yajl_val top, const char *name, char *err,
                           size_t err_size) {
    const char *rp[] = {"ranks", NULL};
    yajl_val ranks = yajl_tree_get(top, rp, yajl_t_array);
    if (!ranks || !YAJL_GET_ARRAY(ranks)->len) {
        snprintf(err, err_size, "%s: the report has no ranks", name);
        return TP_ERR_PARSE;
    }
    size_t n = YAJL_GET_ARRAY(ranks)->len, first = mg->x.n;
    tp_status st = TP_OK;
    for (size_t i = 0; i < n && st == TP_OK; i++) {
        tp_an_rank_row row;
        st = read_row(YAJL_GET_ARRAY(ranks)->values[i], i, &row, name, err, err_size);
        const char *other = st == TP_OK ? holder(mg, row.rank) : NULL;
        if (other) {
            snprintf(err, err_size, "%s: rank %d is also in %s (each rank once)", name, row.rank,
                     other);
            st = TP_ERR_ARG;
        }
        if (st == TP_OK) {
            tp_an_ranks_add(&mg->x, &row);
            mg->file_of = tp_mem_xrealloc(mg->file_of, mg->x.n, sizeof *mg->file_of);
            mg->file_of[mg->x.n - 1] = mg->n_files;
        }
    }
    if (st != TP_OK)
        mg->x.n = first; /* none of this file's rows */
    return st;
}

/* The deepest nesting of arrays and objects in `json` (outside strings), counted up to
 * MAX_DEPTH + 1: yajl's tree is built and freed by recursion, so input nested deeper than any
 * report would overflow the stack instead of failing. */
#define MAX_DEPTH 64
static int too_deep(const char *json) {
    int depth = 0, in_str = 0;
    for (const char *c = json; *c; c++) {
        if (in_str) {
            if (*c == '\\' && c[1])
                c++;
            else if (*c == '"')
                in_str = 0;
        } else if (*c == '"') {
            in_str = 1;
        } else if (*c == '[' || *c == '{') {
            if (++depth > MAX_DEPTH)
                return 1;
        } else if (*c == ']' || *c == '}') {
            depth--;
        }
    }
    return 0;
}

tp_status tp_merge_add_json(tp_merge *mg, const char *name, const char *json, char *err,
                            size_t err_size) {
    char perr[256] = "";
    if (too_deep(json)) {
        snprintf(err, err_size, "%s: not a trainprof report (nested deeper than %d levels)", name,
                 MAX_DEPTH);
        return TP_ERR_PARSE;
    }
    yajl_val top = yajl_tree_parse(json, perr, sizeof perr);
    if (!top) {
        char *nl = strchr(perr, '\n'); /* yajl's message spans lines: keep the first */
        if (nl)
            *nl = '\0';
        snprintf(err, err_size, "%s: not JSON (%s)", name, perr[0] ? perr : "parse error");
        return TP_ERR_PARSE;
    }
    char mode[sizeof mg->mode];
    memcpy(mode, mg->mode, sizeof mode);
    mg->files = tp_mem_xrealloc(mg->files, mg->n_files + 1, sizeof *mg->files);
    mg->files[mg->n_files] = dup(name);
    tp_status st = check_head(mg, top, name, err, err_size);
    if (st == TP_OK)
        st = add_ranks(mg, top, name, err, err_size);
    yajl_tree_free(top);
    if (st != TP_OK) {
        free(mg->files[mg->n_files]);
        memcpy(mg->mode, mode, sizeof mode);
        return st;
    }
    mg->n_files++;
    return TP_OK;
}

/* Refuses from the file's first bytes (`head`, NUL-terminated, `len` bytes read) what is
 * plainly not a report, before reading the rest: a binary file (a .tprof) or a trace, either
 * of which may be gigabytes. 0 when it may be a report. */
static int plainly_not_a_report(const char *head, size_t len, const char *path, char *err,
                                size_t err_size) {
    if (strlen(head) != len) /* JSON text holds no NUL byte */
        snprintf(err, err_size,
                 "%s: not JSON (a binary file: a .tprof trace? run `trainprof "
                 "report --format json` on it first)",
                 path);
    else if (!strstr(head, SCHEMA_FAMILY) && strstr(head, "\"traceEvents\""))
        snprintf(err, err_size,
                 "%s: a PyTorch-profiler trace, not a report (run `trainprof "
                 "report --format json` on it first)",
                 path);
    else
        return 0;
    return 1;
}

tp_status tp_merge_add_file(tp_merge *mg, const char *path, char *err, size_t err_size) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        return TP_ERR_OPEN;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = tp_mem_xalloc(cap, 1);
    int refused = 0;
    for (size_t got; !refused && (got = fread(buf + len, 1, cap - len - 1, f)) > 0;) {
        int first = len == 0;
        len += got;
        buf[len] = '\0';
        refused = first && plainly_not_a_report(buf, len, path, err, err_size);
        if (cap - len - 1 == 0)
            buf = tp_mem_xrealloc(buf, cap *= 2, 1);
    }
    int bad = ferror(f);
    fclose(f);
    buf[len] = '\0';
    tp_status st = refused ? TP_ERR_PARSE : TP_ERR_IO;
    if (bad && !refused)
        snprintf(err, err_size, "%s: cannot read it", path);
    else if (!refused)
        st = tp_merge_add_json(mg, path, buf, err, err_size);
    free(buf);
    return st;
}

static void json_print(void *ctx, const char *s, size_t len) {
    fwrite(s, 1, len, (FILE *)ctx);
}

tp_status tp_merge_write(tp_merge *mg, FILE *out, int json) {
    if (!mg->x.n)
        return TP_ERR_EMPTY;
    tp_an_ranks_judge(&mg->x);
    if (!json) {
        fprintf(out, "trainprof merge: %zu rank(s) from %zu report(s), %s mode\n\n", mg->x.n,
                mg->n_files, strcmp(mg->mode, "hta") ? "native (exact ns)" : "HTA-compatible");
        tp_report_ranks_text(out, &mg->x);
        return ferror(out) ? TP_ERR_IO : TP_OK;
    }
    yajl_gen g = yajl_gen_alloc(NULL);
    yajl_gen_config(g, yajl_gen_beautify, 1);
    yajl_gen_config(g, yajl_gen_print_callback, json_print, (void *)out);
    yajl_gen_map_open(g);
    tp_rj_kv(g, "schema", "trainprof-merge/v1");
    tp_rj_kv(g, "mode", mg->mode);
    tp_rj_int(g, "n_files", (long long)mg->n_files);
    tp_rj_int(g, "n_ranks", (long long)mg->x.n);
    tp_report_ranks_json(g, &mg->x);
    yajl_gen_map_close(g);
    yajl_gen_free(g);
    fputc('\n', out);
    return ferror(out) ? TP_ERR_IO : TP_OK;
}
