/* tp_load: expands folders, picks a loader per file by content from the table of formats,
 * then finishes the model. */
#include "tp_load.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tp_align.h"
#include "tp_import_kineto.h"
#include "tp_job.h"
#include "tp_layout.h"
#include "tp_load_native.h"
#include "tp_progress.h"
#include "tp_mem.h"
#include "tp_par.h"

typedef struct {
    char **v;
    size_t *beside; /* per path: the main trace it was found beside (an index), IN_FOLDER
                       (found in a folder named on the command line) or NONE (named itself) */
    size_t n, cap;
} pathlist;

#define NONE SIZE_MAX
#define IN_FOLDER (SIZE_MAX - 1)

static void list_add(pathlist *l, const char *dir, const char *name) {
    size_t cap = l->cap;
    TP_MEM_XGROW(l->v, l->cap, l->n + 1);
    TP_MEM_XGROW(l->beside, cap, l->n + 1);
    l->beside[l->n] = NONE;
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
    free(l->beside);
}

/* A trace format: the file names a folder scan takes for it, how its first bytes look, and
 * its loader (which fills the model's next rank, or leaves the model as it was). */
typedef struct {
    const char *name;
    const char *ext[2]; /* NULL: unused */
    int (*sniff)(const void *head, size_t len);
    tp_status (*load)(tp_model *m, const char *path, tp_load_error *e);
} trace_format;

/* The sniffs are disjoint (JSON / gzip vs the .tprof magic), so the order only sets the
 * order of the formats in messages. */
static const trace_format formats[] = {
    {"Kineto JSON", {".json", ".json.gz"}, tp_import_kineto_sniff, tp_import_kineto_load},
    {".tprof", {".tprof", NULL}, tp_load_native_sniff, tp_load_native_load},
};
#define N_FORMATS (sizeof formats / sizeof formats[0])

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

/* Names a folder scan treats as traces. */
static int trace_name(const char *name) {
    for (size_t f = 0; f < N_FORMATS; f++)
        for (size_t i = 0; i < 2 && formats[f].ext[i]; i++)
            if (ends_with(name, formats[f].ext[i]))
                return 1;
    return 0;
}

/* The extensions (or, with names, the formats' names), "a, b, c", the last separated by
 * `last` (", " or " or "). */
static const char *list_formats(char *buf, size_t n, int names, const char *last) {
    const char *items[2 * N_FORMATS];
    size_t k = 0;
    for (size_t f = 0; f < N_FORMATS; f++)
        for (size_t i = 0; i < (names ? 1 : 2) && formats[f].ext[i]; i++)
            items[k++] = names ? formats[f].name : formats[f].ext[i];
    size_t used = 0;
    buf[0] = 0;
    for (size_t i = 0; i < k && used < n; i++) {
        int w = snprintf(buf + used, n - used, "%s%s",
                         i == 0      ? ""
                         : i + 1 < k ? ", "
                                     : last,
                         items[i]);
        used += w > 0 ? (size_t)w : 0;
    }
    return buf;
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

/* Records the error of the load in parts and as its line. Returns `st`. */
static tp_status failed(tp_load_result *res, const tp_load_error *e) {
    res->failure = *e;
    tp_load_error_format(e, res->error, sizeof res->error);
    return e->status;
}

static tp_status fail(tp_load_result *res, tp_status st, const char *file, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static tp_status fail(tp_load_result *res, tp_status st, const char *file, const char *fmt, ...) {
    tp_load_error e;
    tp_load_error_init(&e, file);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.reason, sizeof e.reason, fmt, ap);
    va_end(ap);
    e.status = st;
    return failed(res, &e);
}

static int cmp_str(const void *x, const void *y) {
    return strcmp(*(char *const *)x, *(char *const *)y);
}

/* Adds the trace files of folder `dir`, sorted by name, to `l`. */
static tp_status expand_dir(const char *dir, pathlist *l, tp_load_result *res) {
    DIR *d = opendir(dir);
    if (!d) {
        return fail(res, TP_ERR_OPEN, dir, "cannot open folder: %s", strerror(errno));
    }
    pathlist found = {0};
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        if (trace_name(e->d_name)) {
            list_add(&found, dir, e->d_name);
        } else {
            char exts[128], why[160];
            snprintf(why, sizeof why, "skipped (not a %s file)",
                     list_formats(exts, sizeof exts, 0, " or "));
            note(res, e->d_name, why);
        }
    }
    closedir(d);
    if (found.n == 0) {
        char exts[128];
        list_free(&found);
        return fail(res, TP_ERR_EMPTY, dir, "no trace files in this folder (%s)",
                    list_formats(exts, sizeof exts, 0, ", "));
    }
    qsort(found.v, found.n, sizeof *found.v, cmp_str);
    for (size_t i = 0; i < found.n; i++) {
        list_add(l, "", found.v[i]);
        l->beside[l->n - 1] = IN_FOLDER;
    }
    list_free(&found);
    return TP_OK;
}

tp_status tp_load_folder_files(const char *dir, char ***files, size_t *n, tp_load_result *res) {
    memset(res, 0, sizeof *res);
    pathlist l = {0};
    tp_status st = expand_dir(dir, &l, res);
    if (st != TP_OK) {
        list_free(&l);
        *files = NULL, *n = 0;
        return st;
    }
    free(l.beside);
    *files = l.v, *n = l.n;
    return TP_OK;
}

void tp_load_files_free(char **files, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(files[i]);
    free(files);
}

/* Starts progress phase "<verb> <file's base name>". */
static void progress_phase(tp_progress *p, const char *verb, const char *path, uint64_t size) {
    const char *base = strrchr(path, '/');
    char what[256];
    snprintf(what, sizeof what, "%s %s", verb, base && base[1] ? base + 1 : path);
    tp_progress_phase(p, what, size);
}

/* Chooses the loader by the file's first bytes. The loader's error (or note) comes back in
 * parts and is written here, once, as one line. */
static tp_status load_file(tp_model *m, const char *path, tp_load_result *res) {
    unsigned char head[4096] = {0};
    FILE *f = fopen(path, "rb");
    if (!f)
        return fail(res, TP_ERR_OPEN, path, "cannot open: %s", strerror(errno));
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    if (n == 0)
        return fail(res, TP_ERR_EMPTY, path, "empty file");
    const trace_format *fmt = NULL;
    for (size_t i = 0; i < N_FORMATS && !fmt; i++)
        fmt = formats[i].sniff(head, n) ? &formats[i] : NULL;
    if (!fmt) {
        char names[64];
        return fail(res, TP_ERR_FORMAT, path, "not a trace: neither %s",
                    list_formats(names, sizeof names, 1, " nor "));
    }
    tp_load_error e;
    struct stat sb;
    uint64_t size = stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
    size_t before = m->n_ranks;
    progress_phase(m->progress, "loading", path, size);
    if (fmt->load(m, path, &e) != TP_OK)
        return failed(res, &e);
    tp_progress_done(m->progress, size, m->n_ranks > before ? m->ranks[before].ev.n : 0);
    if (e.reason[0])
        note(res, path, e.reason);
    return TP_OK;
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

static int listed(const pathlist *l, const char *path) {
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->v[i], path))
            return 1;
    return 0;
}

/* A .tprof named on the command line is the main trace of its recording: the traces of the
 * recording's other processes beside it (tp_layout) come with it, sorted by name, each
 * marked with the main's place in `files` so its recording is checked once loaded. */
static void add_recording(pathlist *files, const char *path) {
    size_t main = files->n;
    list_add(files, "", path);
    char **found;
    size_t n;
    if (tp_layout_members(path, &found, &n) != TP_OK)
        abort(); /* out of memory: the analyzer may abort */
    for (size_t i = 0; i < n; i++)
        if (!listed(files, found[i])) {
            list_add(files, "", found[i]);
            files->beside[files->n - 1] = main;
        }
    tp_layout_free(found, n);
}

/* A trace found beside a main trace belongs to its recording only when both carry the same
 * recording id; one that does not (a leftover of another run under the same name) is left
 * out with a note. Called right after loading it, while it is the model's last rank. */
/* 1 when the model's last rank is a process of the recording of rank `main` (the same
 * recording id). */
static int of_recording(const tp_model *m, size_t main) {
    const tp_rank *a = &m->ranks[main], *b = &m->ranks[m->n_ranks - 1];
    return a->n_procs == 1 && b->n_procs == 1 && a->procs[0].job_id &&
           a->procs[0].job_id == b->procs[0].job_id;
}

static void check_recording(tp_model *m, size_t main_rank, tp_load_result *res) {
    const tp_rank *a = &m->ranks[main_rank], *b = &m->ranks[m->n_ranks - 1];
    if (of_recording(m, main_rank))
        return;
    char why[256];
    snprintf(why, sizeof why, "left out: not of the same recording as %s", a->file);
    note(res, b->file, why);
    tp_model_pop_rank(m);
}

/* ---------------------------------------------------------------- parsing in parallel */

/* One file parsed into a model of its own, by whichever thread took it. */
typedef struct {
    tp_model *m;
    tp_load_result res; /* its notes and error */
    tp_status st;
    int done;
} parsed;

/* The files of a load shared by the parsing threads: each takes the next file, at most
 * `window` files ahead of the one being moved into the job's model, so a job of many files
 * holds only that many parsed and not yet moved (memory stays bounded by the window). */
typedef struct {
    const pathlist *files;
    parsed *p;
    size_t next, moved, window;
    int stop; /* an error before: parse nothing more */
    pthread_mutex_t mu;
    pthread_cond_t cv;
} load_queue;

/* `progress`: the load's, when one thread parses; parsing threads report nothing (their
 * phases would interleave): the job's thread says which file it waits for instead. */
static void parse_one(const char *path, parsed *p, tp_progress *progress) {
    p->m = tp_model_new();
    p->m->progress = progress;
    p->st = load_file(p->m, path, &p->res);
    p->m->progress = NULL;
}

static void *parse_worker(void *arg) {
    load_queue *q = arg;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        while (!q->stop && q->next < q->files->n && q->next >= q->moved + q->window)
            pthread_cond_wait(&q->cv, &q->mu);
        if (q->stop || q->next >= q->files->n)
            break;
        size_t i = q->next++;
        pthread_mutex_unlock(&q->mu);
        parse_one(q->files->v[i], &q->p[i], NULL);
        pthread_mutex_lock(&q->mu);
        q->p[i].done = 1;
        pthread_cond_broadcast(&q->cv);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

/* How many threads parse: TRAINPROF_LOAD_WORKERS when set (>= 1), else one per CPU of this process.
 */
static size_t load_workers(size_t n_files) {
    const char *env = getenv("TRAINPROF_LOAD_WORKERS");
    long w = env && *env ? strtol(env, NULL, 10) : tp_par_cpus();
    w = w < 1 ? 1 : w > 256 ? 256 : w;
    return (size_t)w < n_files ? (size_t)w : n_files;
}

/* Appends notes (lines) to res->notes, cut where note() would cut them. */
static void add_notes(tp_load_result *res, const char *notes) {
    size_t used = strlen(res->notes), k = strlen(notes), room = sizeof res->notes - 1 - used;
    k = k < room ? k : room;
    memcpy(res->notes + used, notes, k);
    res->notes[used + k] = 0;
}

/* Loads every file of `files` into `m`, in file order whatever thread parsed it: each file
 * into a model of its own, then moved into `m` (tp_model_move_ranks), so that one thread or
 * many give the same model. Stops at the first file that fails, as one thread would. */
static tp_status load_files(tp_model *m, const pathlist *files, tp_load_result *res,
                            size_t *loaded) {
    load_queue q = {files,
                    tp_mem_xcalloc(files->n + 1, sizeof *q.p),
                    0,
                    0,
                    0,
                    0,
                    PTHREAD_MUTEX_INITIALIZER,
                    PTHREAD_COND_INITIALIZER};
    size_t nw = load_workers(files->n), started = 0;
    q.window = 2 * nw;
    pthread_t *th = tp_mem_xcalloc(nw + 1, sizeof *th);
    for (size_t w = 0; nw > 1 && w < nw; w++)
        started += pthread_create(&th[started], NULL, parse_worker, &q) == 0;
    size_t *rank_of = tp_mem_xcalloc(files->n + 1, sizeof *rank_of);
    tp_status st = TP_OK;
    for (size_t i = 0; i < files->n && st == TP_OK; i++) {
        parsed *p = &q.p[i];
        if (!started) {
            parse_one(files->v[i], p, m->progress);
        } else {
            progress_phase(m->progress, "loading", files->v[i], 0);
            pthread_mutex_lock(&q.mu);
            while (!p->done)
                pthread_cond_wait(&q.cv, &q.mu);
            pthread_mutex_unlock(&q.mu);
        }
        size_t before = m->n_ranks;
        rank_of[i] = before;
        if ((st = p->st) == TP_ERR_EMPTY && files->beside[i] != NONE) {
            /* Not named by the user, and nothing in it: a process of the recording killed
             * right after it created its trace. The rest of the job is still worth a report. */
            note(res, files->v[i], "left out: empty (its process ended before it wrote anything)");
            st = TP_OK;
        } else if (st != TP_OK) {
            res->failure = p->res.failure;
            memcpy(res->error, p->res.error, sizeof res->error);
        } else {
            add_notes(res, p->res.notes);
            if (started)
                tp_progress_done(m->progress, 0, p->m->n_ranks ? p->m->ranks[0].ev.n : 0);
            tp_model_move_ranks(m, p->m);
            const tp_rank *r = m->n_ranks > before ? &m->ranks[m->n_ranks - 1] : NULL;
            if (r && files->beside[i] != NONE && r->native && !r->n_procs && !r->ev.n) {
                /* a header alone: its process was killed before its first record */
                note(res, files->v[i],
                     "left out: holds nothing (its process ended before it "
                     "recorded anything)");
                tp_model_pop_rank(m);
            } else if (r && files->beside[i] < IN_FOLDER) {
                check_recording(m, rank_of[files->beside[i]], res);
            }
            *loaded += m->n_ranks > before;
        }
        tp_model_close(p->m);
        p->m = NULL;
        pthread_mutex_lock(&q.mu);
        q.moved = i + 1, q.stop = st != TP_OK;
        pthread_cond_broadcast(&q.cv);
        pthread_mutex_unlock(&q.mu);
    }
    for (size_t w = 0; w < started; w++)
        pthread_join(th[w], NULL);
    for (size_t i = 0; i < files->n; i++) /* parsed past a failure */
        tp_model_close(q.p[i].m);
    free(th), free(q.p), free(rank_of);
    return st;
}

tp_status tp_load_paths(const char *const *paths, size_t n, tp_model **out, tp_load_result *res) {
    return tp_load_paths_progress(paths, n, NULL, 0, out, res);
}

tp_status tp_load_paths_progress(const char *const *paths, size_t n, tp_progress *progress,
                                 unsigned skip, tp_model **out, tp_load_result *res) {
    memset(res, 0, sizeof *res);
    *out = NULL;
    pathlist files = {0};
    tp_status st = TP_OK;
    for (size_t i = 0; i < n && st == TP_OK; i++) {
        struct stat sb;
        if (stat(paths[i], &sb) != 0) {
            st = fail(res, TP_ERR_OPEN, paths[i], "%s", strerror(errno));
        } else if (S_ISDIR(sb.st_mode)) {
            st = expand_dir(paths[i], &files, res);
        } else if (ends_with(paths[i], ".tprof")) {
            add_recording(&files, paths[i]);
        } else {
            list_add(&files, "", paths[i]);
        }
    }
    if (st == TP_OK && files.n == 0) {
        st = fail(res, TP_ERR_ARG, NULL, "no trace given");
    }
    tp_model *m = tp_model_new();
    m->progress = progress;
    size_t loaded = 0;
    if (st == TP_OK)
        st = load_files(m, &files, res, &loaded);
    if (st == TP_OK && !loaded) /* every file was left out: nothing to show */
        st = fail(res, TP_ERR_EMPTY, files.v[0], "no trace with anything in it (%s)",
                  res->notes[0] ? "every one was left out" : "empty");
    res->n_files = st == TP_OK ? loaded : 0;
    list_free(&files);
    if (st != TP_OK) {
        tp_progress_phase(progress, NULL, 0); /* a failed phase says nothing more */
        tp_model_close(m);
        return st;
    }
    tp_job_gather(m);
    assign_ranks(m, res);
    tp_progress_phase(progress, "building the model", 0);
    m->finish_skip = skip;
    tp_model_finish(m);
    size_t events = 0;
    for (size_t i = 0; i < m->n_ranks; i++)
        events += m->ranks[i].ev.n;
    tp_progress_done(progress, 0, events);
    m->progress = NULL; /* the caller's: it may close it while the model lives on */
    tp_align_ranks(m);
    *out = m;
    return TP_OK;
}

/* 1 when the last rank of `m` is a process of the recording of rank `main` and has something
 * in the window: rows, memory events or samples. */
static int window_member(const tp_model *m, size_t main) {
    const tp_rank *b = &m->ranks[m->n_ranks - 1];
    return of_recording(m, main) && (b->ev.n || b->mem.n || b->samples.n);
}

tp_status tp_load_live_window(const char *window, const char *trace, uint64_t t0, uint64_t t1,
                              tp_model **out, tp_load_result *res) {
    memset(res, 0, sizeof *res);
    *out = NULL;
    tp_model *m = tp_model_new();
    tp_load_error e;
    if (tp_load_native_load(m, window, &e) != TP_OK) {
        tp_model_close(m);
        return failed(res, &e);
    }
    char **found = NULL;
    size_t n = 0;
    if (trace && trace[0] && t1 > t0 && tp_layout_members(trace, &found, &n) != TP_OK)
        abort(); /* out of memory: the analyzer may abort */
    for (size_t i = 0; i < n; i++) {
        /* a file just created, one of another recording or with nothing in the window: left
         * out, silently (a live view refreshes every few seconds) */
        size_t before = m->n_ranks;
        if (tp_load_native_window(m, found[i], t0, t1, &e) == TP_OK && m->n_ranks > before &&
            !window_member(m, 0))
            tp_model_pop_rank(m);
    }
    tp_layout_free(found, n);
    res->n_files = m->n_ranks;
    tp_job_gather(m);
    assign_ranks(m, res);
    tp_model_finish(m);
    tp_align_ranks(m);
    *out = m;
    return TP_OK;
}
