/* trainprof report: load traces (.tprof or PyTorch-profiler JSON; files or folders of
 * per-rank files) into one model and write the analyzer's report.
 * Exit status: 0 report written, 1 load or write failure (message on stderr), 2 usage. */
#include "tp_cmd.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "tp_model.h"
#include "tp_rank_analysis.h"
#include "tp_report.h"

typedef struct {
    tp_report_opts o;
    const char *out; /* -o FILE; NULL: stdout */
    int force;       /* --force: -o may replace a trace */
} report_args;

static void usage(FILE *f) {
    fprintf(f,
            "usage: trainprof report TRACE... [--rank N] [--format text|json|html] [--compat hta]\n"
            "                        [--include-last-step] [--no-ns-rounding] [--top N]\n"
            "                        [--no-symbols] [--stack-depth N] [--group-by name|shapes]\n"
            "                        [--sort-ops self|total] [-o FILE [--force]] [--quiet]\n"
            "TRACE is a .tprof file, a PyTorch-profiler JSON (.json, .json.gz), or a folder of\n"
            "per-rank files. --compat hta reproduces Holistic Trace Analysis' rules.\n"
            "--format html writes one self-contained page (charts, no script; use -o).\n"
            "CPU stacks are symbolized from the recorded modules' files (function, file:line);\n"
            "--no-symbols keeps them as module+offset. --stack-depth N: frames per launching\n"
            "stack in \"GPU time by launching stack\" (default 5, at most 64).\n"
            "The CPU-operator table (framework ops and annotation ranges, self and total\n"
            "time) has one row per name, or per name and input shapes with --group-by\n"
            "shapes; --sort-ops total sorts it by total instead of self time.\n"
            "-o FILE replaces an earlier report (-o -: standard output); it never writes over a\n"
            "trace being read, nor over another .tprof trace unless --force.\n"
            "Work that takes more than 2 s shows its progress on stderr (bytes read, events,\n"
            "elapsed); --quiet (-q) turns it off.\n");
}

static int parse_format(const char *v, void *field) {
    static const struct {
        const char *name;
        tp_report_format format;
    } formats[] = {{"text", TP_REPORT_TEXT}, {"json", TP_REPORT_JSON}, {"html", TP_REPORT_HTML}};
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
        if (!strcmp(v, formats[i].name))
            return *(tp_report_format *)field = formats[i].format, 0;
    return -1;
}

static int parse_compat(const char *v, void *field) {
    return strcmp(v, "hta") ? -1 : (*(int *)field = 1, 0);
}

#define OPT(name, kind, field, ...)                                                                \
    { name, kind, offsetof(report_args, field), __VA_ARGS__ }
static const tp_cmd_opt options[] = {
    OPT("--rank", TP_OPT_INT, o.rank, 0, 1000000, NULL, "takes a number"),
    OPT("--top", TP_OPT_INT, o.top, 0, 1000000, NULL, "takes a number"),
    OPT("--format", TP_OPT_PARSE, o.format, 0, 0, parse_format, "takes text, json or html"),
    OPT("--compat", TP_OPT_PARSE, o.an.compat_hta, 0, 0, parse_compat, "takes 'hta'"),
    OPT("--include-last-step", TP_OPT_FLAG, o.an.include_last_step, 0, 0, NULL, ""),
    OPT("--no-ns-rounding", TP_OPT_FLAG, o.an.no_ns_rounding, 0, 0, NULL, ""),
    OPT("--no-symbols", TP_OPT_FLAG, o.an.no_symbols, 0, 0, NULL, ""),
    OPT("--group-by", TP_OPT_PARSE, o.an.ops_by_shapes, 0, 0, tp_cmd_parse_group_by,
        "takes name or shapes"),
    OPT("--sort-ops", TP_OPT_PARSE, o.an.ops_by_total, 0, 0, tp_cmd_parse_sort_ops,
        "takes self or total"),
    OPT("--stack-depth", TP_OPT_INT, o.an.stack_depth, 1, 64, NULL, "takes a number from 1 to 64"),
    OPT("-o", TP_OPT_STR, out, 0, 0, NULL, "takes a file name"),
    OPT("--force", TP_OPT_FLAG, force, 0, 0, NULL, ""),
};
#undef OPT

static int write_report(FILE *out, const tp_model *m, const tp_report_opts *o) {
    if (o->rank >= 0 && !tp_model_rank(m, o->rank)) {
        fprintf(stderr, "trainprof report: no rank %d in the trace (ranks:", o->rank);
        for (size_t i = 0; i < m->n_ranks; i++)
            fprintf(stderr, " %d", m->ranks[i].rank);
        fprintf(stderr, ")\n");
        return 1;
    }
    tp_status st = tp_report_write(out, m, o);
    if (st == TP_ERR_IO)
        return 0; /* a write failed: tp_cmd_flush, next, says why */
    if (st != TP_OK) {
        fprintf(stderr, "trainprof report: %s\n", tp_status_str(st));
        return 1;
    }
    return 0;
}

static int run(const tp_model *m, void *args) {
    report_args *a = args;
    FILE *out = tp_cmd_output_open("report", a->out);
    if (!out)
        return 1;
    return tp_cmd_output_close("report", out, a->out, write_report(out, m, &a->o));
}

/* Frees what only a rank's view build read (the load order of a --compat hta view, the
 * view's row order: 2-4 bytes a row) once the view is built, before its analyses (the
 * report builds no other view of the rank after it) */
static void view_built(void *arg, const tp_an_view *v) {
    tp_model *m = arg;
    tp_rank_drop_columns(&m->ranks[v->r - m->ranks], tp_an_view_build_only_columns(v));
}

/* Frees the rank's correlation index once its diagnosis, the only reader left, has run (a
 * --compat hta view: 4 bytes a correlated row, off the later analyses' and the render's
 * base); the rank's other analyses never touch it, on either thread */
static void diagnosed(void *arg, const tp_an_view *v) {
    tp_model *m = arg;
    if (tp_rank_analysis_corr_index_done(v))
        tp_rank_drop_corr_index(&m->ranks[v->r - m->ranks]);
}

/* What the report never reads, not built or kept by the model's finish (built and freed right
 * after, they were resident at the finish's high water: hta_negative_queue_length's 8.5 -> 7.9
 * MiB): the streams' index (no analysis reads it: 4 bytes a GPU row), the correlation lookups'
 * directory (the analyses walk the index itself; a trimmed view counts its rows' partners in one
 * pass: 1-2 bytes a correlated row), --compat hta the categories' index (every view is in load
 * order, so none reads it: 4 bytes a row, 0.8 MB of xdit's model); the External ids (no analysis
 * reads them: 1.5-4 bytes a Kineto row, 0.3 MB of xdit's), the nesting depths (the TUI's lanes
 * read them, the analyses the parents: 1 byte a row), the input shapes unless the CPU-op table
 * groups by them (--group-by shapes: 1.6-2.5 bytes a Kineto row) and, without --compat hta, the
 * load order (only a --compat hta view reads it; with it, view_built frees it once the view is
 * built). */
static unsigned finish_skip(const void *args) {
    const report_args *a = args;
    unsigned skip = TP_FINISH_NO_STREAM_INDEX | TP_FINISH_NO_CORR_DIR;
    unsigned cols = TP_EV_DROP_EXTERNAL_ID | TP_EV_DROP_DEPTH;
    if (!a->o.an.ops_by_shapes)
        cols |= TP_EV_DROP_SHAPES;
    if (a->o.an.compat_hta)
        skip |= TP_FINISH_NO_CAT_INDEX;
    else
        cols |= TP_EV_DROP_LOAD_ORDER;
    return skip | TP_FINISH_DROP(cols);
}

/* --compat hta: the hooks that free the load order once the views are built and each rank's
 * correlation index once its diagnosis has run */
static void prepare(tp_model *m, void *args) {
    report_args *a = args;
    if (a->o.an.compat_hta) {
        a->o.view_built = view_built;
        a->o.view_built_arg = m;
        a->o.diagnosed = diagnosed;
        a->o.diagnosed_arg = m;
    }
}

static const char *output(const void *args, int *force) {
    const report_args *a = args;
    *force = a->force;
    return a->out;
}

int tp_cmd_report(int argc, char **argv) {
    static const tp_cmd_traces cmd = {.name = "report",
                                      .usage = usage,
                                      .opts = options,
                                      .n_opts = sizeof options / sizeof options[0],
                                      .run = run,
                                      .progress_in_run = 1,
                                      .prepare = prepare,
                                      .finish_skip = finish_skip,
                                      .output = output};
    report_args a = {.out = NULL};
    tp_report_opts_init(&a.o);
    return tp_cmd_traces_main(&cmd, &a, argc, argv);
}
