/* tp_cmd_load: the prologue that `report` and `tui` share (see tp_cmd.h): options from the
 * command's table, trace paths, loading, and the model's lifetime. */
#include "tp_cmd.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tp_load.h"
#include "tp_progress.h"
#include "tp_text.h"

/* (parse_int below) */
static int parse_int(const char *s, int lo, int hi, int *out);

tp_progress *tp_cmd_progress_open(const char *cmd, int quiet) {
    if (quiet)
        return NULL;
    const char *env = getenv("TRAINPROF_PROGRESS_AFTER_MS");
    int after = 2000;
    if (env && *env && parse_int(env, 0, 1 << 30, &after) != 0)
        after = 2000;
    char prog[32];
    snprintf(prog, sizeof prog, "trainprof %s", cmd);
    return tp_progress_open(stderr, prog, after, isatty(STDERR_FILENO));
}

static int parse_int(const char *s, int lo, int hi, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

/* Stores `val` for option `o` into `args`. Returns 0, or -1 for a missing or bad value. */
static int set_opt(const tp_cmd_opt *o, const char *val, void *args) {
    void *field = (char *)args + o->off;
    switch (o->kind) {
    case TP_OPT_FLAG:
        *(int *)field = 1;
        return 0;
    case TP_OPT_INT:
        return val ? parse_int(val, o->lo, o->hi, field) : -1;
    case TP_OPT_STR:
        return val ? (*(const char **)field = val, 0) : -1;
    case TP_OPT_PARSE:
        return val ? o->parse(val, field) : -1;
    }
    return -1;
}

static const tp_cmd_opt *find_opt(const tp_cmd_traces *c, const char *name) {
    for (size_t i = 0; i < c->n_opts; i++)
        if (!strcmp(c->opts[i].name, name))
            return &c->opts[i];
    return NULL;
}

/* Returns 0 ok, 1 --help given, 2 usage error (message printed). */
static int parse_args(const tp_cmd_traces *c, void *args, int argc, char **argv, const char **paths,
                      size_t *n_paths, int *quiet) {
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(s, "-h") || !strcmp(s, "--help"))
            return 1;
        if (!strcmp(s, "-q") || !strcmp(s, "--quiet")) { /* every command over traces */
            *quiet = 1;
            continue;
        }
        const tp_cmd_opt *o = find_opt(c, s);
        if (o) {
            if (set_opt(o, val, args) != 0)
                return fprintf(stderr, "trainprof %s: %s %s\n", c->name, s, o->bad), 2;
            i += o->kind != TP_OPT_FLAG;
        } else if (s[0] == '-' && s[1]) {
            return fprintf(stderr, "trainprof %s: unknown option '%s'\n", c->name, s), 2;
        } else {
            paths[(*n_paths)++] = s;
        }
    }
    if (*n_paths == 0)
        return fprintf(stderr, "trainprof %s: no trace given\n", c->name), 2;
    return 0;
}

/* The loader's notes, one per line, each terminal-safe (they quote file names and the
 * trace's own messages). */
static void print_notes(const char *notes) {
    char line[1024];
    for (const char *p = notes; *p;) {
        size_t k = strcspn(p, "\n"), n = k < sizeof line ? k : sizeof line - 1;
        memcpy(line, p, n);
        line[n] = 0;
        tp_text_fputs(line, stderr);
        fputc('\n', stderr);
        p += k + (p[k] == '\n');
    }
}

/* Loads the traces: the loader's notes go to stderr, and a failure is reported there as
 * "trainprof CMD: ...". Returns 0 with *out set, or 1. */
static int load(const char *cmd, const char *const *paths, size_t n, tp_progress *progress,
                unsigned skip, tp_model **out) {
    tp_load_result res;
    tp_status st = tp_load_paths_progress(paths, n, progress, skip, out, &res);
    print_notes(res.notes);
    if (st != TP_OK) {
        fprintf(stderr, "trainprof %s: ", cmd);
        tp_text_fputs(res.error, stderr);
        fputc('\n', stderr);
        return 1;
    }
    return 0;
}

int tp_cmd_traces_main(const tp_cmd_traces *c, void *args, int argc, char **argv) {
    const char **paths = calloc((size_t)argc + 1, sizeof *paths);
    if (!paths)
        abort();
    size_t n = 0;
    int quiet = 0;
    int rc = parse_args(c, args, argc, argv, paths, &n, &quiet);
    if (rc != 0) {
        c->usage(rc == 1 ? stdout : stderr);
        free(paths);
        return rc == 1 ? 0 : 2;
    }
    int force = 0;
    const char *out = c->output ? c->output(args, &force) : NULL;
    if (tp_cmd_check_output(c->name, out, paths, n, force) != 0) {
        free(paths);
        return 1;
    }
    unsigned skip = c->finish_skip ? c->finish_skip(args) : 0;
    if (c->run_pair) {
        if (n != 2) {
            fprintf(stderr, "trainprof %s: takes exactly two traces (got %zu)\n", c->name, n);
            c->usage(stderr);
            free(paths);
            return 2;
        }
        tp_model *a, *b = NULL;
        tp_progress *pr = tp_cmd_progress_open(c->name, quiet);
        rc = load(c->name, paths, 1, pr, skip, &a);
        if (rc == 0)
            tp_model_trim_scratch(a); /* not resident beside b's load */
        if (rc == 0 && (rc = load(c->name, paths + 1, 1, pr, skip, &b)) != 0)
            tp_model_close(a);
        tp_progress_close(pr);
        free(paths);
        if (rc != 0)
            return rc;
        rc = c->run_pair(a, b, args);
        tp_model_close(a);
        tp_model_close(b);
        return rc;
    }
    tp_model *m;
    tp_progress *pr = tp_cmd_progress_open(c->name, quiet);
    rc = load(c->name, paths, n, pr, skip, &m);
    free(paths);
    if (rc != 0 || !c->progress_in_run) {
        tp_progress_close(pr); /* before the TUI takes the terminal */
        pr = NULL;
    }
    if (rc != 0)
        return rc;
    if (c->prepare)
        c->prepare(m, args);
    tp_progress_phase(pr, "analysing", 0);
    rc = c->run(m, args);
    tp_progress_close(pr);
    tp_model_close(m);
    return rc;
}
