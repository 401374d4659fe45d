/* trainprof tui: the interactive terminal UI over traces (.tprof or PyTorch-profiler JSON),
 * or with --snapshot one frame of a view printed as text (no terminal needed).
 * Exit status: 0 quit normally / snapshot written, 1 load or terminal failure, 2 usage. */
#include "tp_cmd.h"

#include <errno.h>
#include <langinfo.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_load.h"
#include "tp_tui.h"

typedef struct {
    const char **paths;
    size_t n_paths;
    int snapshot;
    tp_tui_opts o;
} tui_args;

static void usage(FILE *f) {
    fprintf(f, "usage: trainprof tui TRACE... [--rank N] [--view NAME]\n"
               "       trainprof tui TRACE... --snapshot [--width W] [--height H] [--view NAME]\n"
               "TRACE is a .tprof file, a PyTorch-profiler JSON (.json, .json.gz), or a folder of\n"
               "per-rank files. Views: summary, timeline, kernels, ranges, copies (or 1-5).\n"
               "--snapshot prints one frame of the view as text instead of starting the UI.\n");
}

static int parse_num(const char *s, int lo, int hi, int *out) {
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || errno || *end || end == s || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

/* Returns 0 ok, 1 --help, 2 usage error (message printed). */
static int parse_args(int argc, char **argv, tui_args *a) {
    memset(a, 0, sizeof *a);
    tp_tui_opts_init(&a->o);
    a->paths = calloc((size_t)argc, sizeof *a->paths);
    if (!a->paths)
        abort();
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(s, "-h") || !strcmp(s, "--help"))
            return 1;
        if (!strcmp(s, "--snapshot")) {
            a->snapshot = 1;
        } else if (!strcmp(s, "--rank") || !strcmp(s, "--width") || !strcmp(s, "--height")) {
            int *dst = s[2] == 'r' ? &a->o.rank : s[2] == 'w' ? &a->o.width : &a->o.height;
            if (parse_num(val, s[2] == 'r' ? 0 : 1, s[2] == 'r' ? 1000000 : 1000, dst))
                return fprintf(stderr, "trainprof tui: %s takes a number%s\n", s,
                               s[2] == 'r' ? "" : " from 1 to 1000"),
                       2;
            i++;
        } else if (!strcmp(s, "--view")) {
            if (tp_tui_view_index(val) < 0)
                return fprintf(stderr, "trainprof tui: --view takes summary, timeline, kernels, "
                                       "ranges or copies\n"),
                       2;
            a->o.view = val, i++;
        } else if (s[0] == '-' && s[1]) {
            return fprintf(stderr, "trainprof tui: unknown option '%s'\n", s), 2;
        } else {
            a->paths[a->n_paths++] = s;
        }
    }
    if (a->n_paths == 0)
        return fprintf(stderr, "trainprof tui: no trace given\n"), 2;
    return 0;
}

static int show(tp_model *m, tui_args *a) {
    char err[256];
    tp_tui *t;
    if (!a->snapshot) { /* draw UTF-8 only where the terminal's locale can show it */
        setlocale(LC_ALL, "");
        a->o.ascii = strcmp(nl_langinfo(CODESET), "UTF-8") != 0;
    }
    if (tp_tui_open(&t, m, &a->o, err, sizeof err) != TP_OK) {
        fprintf(stderr, "trainprof tui: %s\n", err);
        return 1;
    }
    tp_status st = a->snapshot ? tp_tui_snapshot(t, stdout) : tp_tui_run(t);
    int why = errno; /* why a write failed (TP_ERR_IO) */
    tp_tui_close(t);
    if (st == TP_ERR_STATE)
        fprintf(stderr, "trainprof tui: needs a terminal (use --snapshot for text output)\n");
    else if (st != TP_OK)
        fprintf(stderr, "trainprof tui: %s\n", tp_status_why(st, why));
    return st == TP_OK ? 0 : 1;
}

int tp_cmd_tui(int argc, char **argv) {
    tui_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc != 0) {
        usage(rc == 1 ? stdout : stderr);
        free(a.paths);
        return rc == 1 ? 0 : 2;
    }
    tp_model *m;
    rc = tp_cmd_load("tui", a.paths, a.n_paths, &m);
    free(a.paths);
    if (rc != 0)
        return rc;
    rc = show(m, &a);
    tp_model_close(m);
    return rc;
}
