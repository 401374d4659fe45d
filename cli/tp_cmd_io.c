/* tp_cmd_io: what several subcommands say the same way (see tp_cmd.h): a failed write of
 * their output, once and with the system's reason, and a PyTorch-profiler JSON file given
 * where a .tprof trace was expected. */
#include "tp_cmd.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tp_import_kineto.h"

int tp_cmd_flush(const char *cmd, FILE *out, const char *name) {
    errno = 0; /* a failed fflush sets it; an error flag from an earlier write does not */
    if (fflush(out) == 0 && !ferror(out))
        return 0;
    fprintf(stderr, "trainprof %s: cannot write %s: %s\n", cmd, name,
            tp_status_why(TP_ERR_IO, errno));
    return 1;
}

int tp_cmd_not_native(const char *cmd, const char *path) {
    unsigned char head[4096];
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(head, 1, sizeof head, f) : 0;
    if (f)
        fclose(f);
    if (n == 0 || !tp_import_kineto_sniff(head, n))
        return 0;
    /* Read it as the report would, so a valid trace is named as one and a broken one gets
     * the importer's exact reason. */
    char err[512] = "";
    tp_model *m = tp_model_new();
    tp_status st = tp_import_kineto_file(m, path, err, sizeof err);
    if (st == TP_OK)
        fprintf(stderr,
                "trainprof %s: '%s' is a PyTorch-profiler (Kineto) JSON trace (%zu events), "
                "not a .tprof file; %s reads .tprof files: try 'trainprof report %s'\n",
                cmd, path, m->n_ranks ? m->ranks[0].ev.n : 0, cmd, path);
    else
        fprintf(stderr,
                "trainprof %s: '%s' is not a trainprof trace, nor valid PyTorch-profiler "
                "JSON: %s\n",
                cmd, path, err);
    tp_model_close(m);
    return 1;
}

int tp_cmd_parse_group_by(const char *v, void *field) {
    if (strcmp(v, "name") && strcmp(v, "shapes"))
        return -1;
    *(int *)field = !strcmp(v, "shapes");
    return 0;
}

int tp_cmd_parse_sort_ops(const char *v, void *field) {
    if (strcmp(v, "self") && strcmp(v, "total"))
        return -1;
    *(int *)field = !strcmp(v, "total");
    return 0;
}
