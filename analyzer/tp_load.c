/* tp_load: expands folders, picks a loader per file by content, then finishes the model. */
#include "tp_load.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tp_import_kineto.h"
#include "tp_load_native.h"
#include "tp_mem.h"

typedef struct {
    char **v;
    size_t n, cap;
} pathlist;

static void list_add(pathlist *l, const char *dir, const char *name) {
    TP_MEM_XGROW(l->v, l->cap, l->n + 1);
    size_t len = strlen(dir) + strlen(name) + 2;
    char *p = malloc(len);
    if (!p)
        abort();
    snprintf(p, len, "%s%s%s", dir, *dir ? "/" : "", name);
    l->v[l->n++] = p;
}

static void list_free(pathlist *l) {
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
}

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

/* Names a folder scan treats as traces. */
static int trace_name(const char *name) {
    return ends_with(name, ".tprof") || ends_with(name, ".json") || ends_with(name, ".json.gz");
}

/* Appends "a: b\n" to the notes (silently cut when full). */
static void note(tp_load_result *res, const char *a, const char *b) {
    const char *parts[] = {a, ": ", b, "\n"};
    size_t used = strlen(res->notes);
    for (size_t i = 0; i < 4; i++) {
        size_t k = strlen(parts[i]), room = sizeof res->notes - 1 - used;
        k = k < room ? k : room;
        memcpy(res->notes + used, parts[i], k);
        used += k;
    }
    res->notes[used] = 0;
}

static int cmp_str(const void *x, const void *y) {
    return strcmp(*(char *const *)x, *(char *const *)y);
}

/* Adds the trace files of folder `dir`, sorted by name, to `l`. */
static tp_status expand_dir(const char *dir, pathlist *l, tp_load_result *res) {
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(res->error, sizeof res->error, "%s: cannot open folder: %s", dir, strerror(errno));
        return TP_ERR_OPEN;
    }
    pathlist found = {0};
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        if (trace_name(e->d_name)) {
            list_add(&found, dir, e->d_name);
        } else {
            note(res, e->d_name, "skipped (not a .tprof, .json or .json.gz file)");
        }
    }
    closedir(d);
    if (found.n == 0) {
        snprintf(res->error, sizeof res->error,
                 "%s: no trace files in this folder (.tprof, .json, .json.gz)", dir);
        list_free(&found);
        return TP_ERR_EMPTY;
    }
    qsort(found.v, found.n, sizeof *found.v, cmp_str);
    for (size_t i = 0; i < found.n; i++)
        list_add(l, "", found.v[i]);
    list_free(&found);
    return TP_OK;
}

/* Chooses the loader by the first bytes: JSON or gzip -> Kineto, else .tprof. */
static tp_status load_file(tp_model *m, const char *path, tp_load_result *res) {
    unsigned char head[4096] = {0};
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(res->error, sizeof res->error, "%s: cannot open: %s", path, strerror(errno));
        return TP_ERR_OPEN;
    }
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    if (n == 0) {
        snprintf(res->error, sizeof res->error, "%s: empty file", path);
        return TP_ERR_EMPTY;
    }
    char msg[512] = "";
    tp_status st;
    if (tp_import_kineto_sniff(head, n)) {
        st = tp_import_kineto_file(m, path, res->error, sizeof res->error);
    } else {
        st = tp_load_native_file(m, path, msg, sizeof msg);
        if (st != TP_OK)
            snprintf(res->error, sizeof res->error, "%s (neither Kineto JSON nor .tprof)", msg);
        else if (msg[0])
            note(res, path, msg + strlen(path) + (strlen(msg) > strlen(path) + 1 ? 2 : 0));
    }
    return st;
}

/* Ranks must be unique: a file without one, or with one already taken, gets the next free
 * number (and a note), in load order. */
static void assign_ranks(tp_model *m, tp_load_result *res) {
    for (size_t i = 0; i < m->n_ranks; i++) {
        tp_rank *r = &m->ranks[i];
        int taken = r->rank < 0;
        for (size_t j = 0; j < i && !taken; j++)
            taken = m->ranks[j].rank == r->rank;
        if (!taken)
            continue;
        int next = 0;
        for (int clash = 1; clash;) {
            clash = 0;
            for (size_t j = 0; j < m->n_ranks; j++)
                if (j != i && m->ranks[j].rank == next)
                    clash = 1, next++;
        }
        if (r->rank >= 0 || m->n_ranks > 1) {
            char why[96];
            snprintf(why, sizeof why, "rank missing or already taken; using rank %d", next);
            note(res, r->file, why);
        }
        r->rank = next;
    }
}

tp_status tp_load_paths(const char *const *paths, size_t n, tp_model **out, tp_load_result *res) {
    memset(res, 0, sizeof *res);
    *out = NULL;
    pathlist files = {0};
    tp_status st = TP_OK;
    for (size_t i = 0; i < n && st == TP_OK; i++) {
        struct stat sb;
        if (stat(paths[i], &sb) != 0) {
            snprintf(res->error, sizeof res->error, "%s: %s", paths[i], strerror(errno));
            st = TP_ERR_OPEN;
        } else if (S_ISDIR(sb.st_mode)) {
            st = expand_dir(paths[i], &files, res);
        } else {
            list_add(&files, "", paths[i]);
        }
    }
    if (st == TP_OK && files.n == 0) {
        snprintf(res->error, sizeof res->error, "no trace given");
        st = TP_ERR_ARG;
    }
    tp_model *m = tp_model_new();
    for (size_t i = 0; i < files.n && st == TP_OK; i++)
        st = load_file(m, files.v[i], res);
    res->n_files = st == TP_OK ? files.n : 0;
    list_free(&files);
    if (st != TP_OK) {
        tp_model_close(m);
        return st;
    }
    assign_ranks(m, res);
    tp_model_finish(m);
    *out = m;
    return TP_OK;
}
