/* trainprof tui: the interactive terminal UI over traces (.tprof or PyTorch-profiler JSON),
 * or with --snapshot one frame of a view printed as text (no terminal needed).
 * Exit status: 0 quit normally / snapshot written, 1 load or terminal failure, 2 usage. */
#include "tp_cmd.h"

#include <errno.h>
#include <langinfo.h>
#include <locale.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "tp_tui.h"
#include "tp_tui_layout.h"

typedef struct {
    int snapshot;
    tp_tui_opts o;
} tui_args;

static void usage(FILE *f) {
    fprintf(f, "usage: trainprof tui TRACE... [--rank N] [--view NAME] [--no-symbols]\n"
               "                      [--stack-depth N] [--group-by name|shapes]\n"
               "                      [--sort-ops self|total]\n"
               "       trainprof tui TRACE... --snapshot [--width W] [--height H] [--view NAME]\n"
               "TRACE is a .tprof file, a PyTorch-profiler JSON (.json, .json.gz), or a folder of\n"
               "per-rank files. Views:");
    for (int i = 0; i < TP_TUI_N_VIEWS; i++)
        fprintf(f, "%s %s", i ? "," : "", tp_tui_view_name(i));
    fprintf(f,
            " (or 1-%d).\n"
            "--snapshot prints one frame of the view as text instead of starting the UI.\n"
            "--no-symbols shows the diagnosis' CPU stacks as module+offset.\n"
            "--stack-depth N: frames per launching stack in the Stacks view (default 5).\n"
            "--group-by and --sort-ops arrange the CPU ops view as `trainprof report` does.\n",
            TP_TUI_N_VIEWS);
}

static int parse_view(const char *v, void *field) {
    return tp_tui_view_index(v) < 0 ? -1 : (*(const char **)field = v, 0);
}

static int show(const tp_model *m, void *args) {
    tui_args *a = args;
    char err[256];
    tp_tui *t;
    if (!a->snapshot) { /* draw UTF-8 only where the terminal's locale can show it */
        setlocale(LC_ALL, "");
        a->o.ascii = strcmp(nl_langinfo(CODESET), "UTF-8") != 0;
        a->o.background = 1; /* a big trace's first frame at once, "computing" until ready */
    }
    if (tp_tui_open(&t, m, &a->o, err, sizeof err) != TP_OK) {
        fprintf(stderr, "trainprof tui: %s\n", err);
        return 1;
    }
    tp_status st = a->snapshot ? tp_tui_snapshot(t, stdout) : tp_tui_run(t);
    int why = errno; /* why a write failed (TP_ERR_IO) */
    tp_tui_close(t);
    if (st == TP_ERR_ARG) { /* only --snapshot says this: its frame cannot be drawn */
        fprintf(stderr, "trainprof tui: --snapshot needs at least %dx%d, got %dx%d\n", TP_TUI_MIN_W,
                TP_TUI_MIN_H, a->o.width, a->o.height);
        return 2;
    }
    if (st == TP_ERR_STATE)
        fprintf(stderr, "trainprof tui: needs a terminal (use --snapshot for text output)\n");
    else if (st != TP_OK)
        fprintf(stderr, "trainprof tui: %s\n", tp_status_why(st, why));
    return st == TP_OK ? 0 : 1;
}

int tp_cmd_tui(int argc, char **argv) {
    /* The --view error lists the views from the TUI's table. */
    char views[256] = "takes";
    for (int i = 0, n = 5; i < TP_TUI_N_VIEWS && n > 0 && (size_t)n < sizeof views; i++)
        n += snprintf(views + n, sizeof views - (size_t)n, "%s %s",
                      !i                       ? ""
                      : i + 1 < TP_TUI_N_VIEWS ? ","
                                               : " or",
                      tp_tui_view_name(i));
#define OPT(name, kind, field, ...)                                                                \
    { name, kind, offsetof(tui_args, field), __VA_ARGS__ }
    const tp_cmd_opt options[] = {
        OPT("--snapshot", TP_OPT_FLAG, snapshot, 0, 0, NULL, ""),
        OPT("--rank", TP_OPT_INT, o.rank, 0, 1000000, NULL, "takes a number"),
        OPT("--width", TP_OPT_INT, o.width, 1, 1000, NULL, "takes a number from 1 to 1000"),
        OPT("--height", TP_OPT_INT, o.height, 1, 1000, NULL, "takes a number from 1 to 1000"),
        OPT("--view", TP_OPT_PARSE, o.view, 0, 0, parse_view, views),
        OPT("--no-symbols", TP_OPT_FLAG, o.an.no_symbols, 0, 0, NULL, ""),
        OPT("--group-by", TP_OPT_PARSE, o.an.ops_by_shapes, 0, 0, tp_cmd_parse_group_by,
            "takes name or shapes"),
        OPT("--sort-ops", TP_OPT_PARSE, o.an.ops_by_total, 0, 0, tp_cmd_parse_sort_ops,
            "takes self or total"),
        OPT("--stack-depth", TP_OPT_INT, o.an.stack_depth, 1, 64, NULL,
            "takes a number from 1 to 64"),
    };
#undef OPT
    const tp_cmd_traces cmd = {.name = "tui",
                               .usage = usage,
                               .opts = options,
                               .n_opts = sizeof options / sizeof options[0],
                               .run = show};
    tui_args a = {0};
    tp_tui_opts_init(&a.o);
    return tp_cmd_traces_main(&cmd, &a, argc, argv);
}
