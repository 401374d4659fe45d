/* tp_cmd_io: what several subcommands say the same way (see tp_cmd.h): a failed write of
 * their output, once and with the system's reason, and a PyTorch-profiler JSON file given
 * where a .tprof trace was expected. */
#include "tp_cmd.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "tp_import_kineto.h"
#include "tp_load.h"
#include "tp_load_native.h"
#include "tp_outfile.h"

int tp_cmd_flush(const char *cmd, FILE *out, const char *name) {
    errno = 0; /* a failed fflush sets it; an error flag from an earlier write does not */
    if (fflush(out) == 0 && !ferror(out))
        return 0;
    fprintf(stderr, "trainprof %s: cannot write %s: %s\n", cmd, name,
            tp_status_why(TP_ERR_IO, errno));
    return 1;
}

static int is_stdout(const char *out) {
    return !out || !strcmp(out, "-");
}

FILE *tp_cmd_output_open(const char *cmd, const char *out) {
    if (is_stdout(out))
        return stdout;
    FILE *f = fopen(out, "w");
    if (!f)
        fprintf(stderr, "trainprof %s: %s: %s\n", cmd, out, strerror(errno));
    return f;
}

int tp_cmd_output_close(const char *cmd, FILE *f, const char *out, int rc) {
    int flushed = tp_cmd_flush(cmd, f, is_stdout(out) ? "standard output" : out);
    rc = rc ? rc : flushed;
    if (!is_stdout(out) && fclose(f) != 0 && rc == 0) {
        fprintf(stderr, "trainprof %s: cannot write %s: %s\n", cmd, out, strerror(errno));
        rc = 1;
    }
    return rc;
}

int tp_cmd_check_output(const char *cmd, const char *out, const char *const *inputs, size_t n,
                        int force) {
    tp_file_id o, in;
    struct stat st;
    if (!out || !strcmp(out, "-") || tp_outfile_id(out, &o) != 0)
        return 0; /* standard output, or a file still to be made */
    for (size_t i = 0; i < n; i++) {
        /* a folder: the trace files a load takes from it */
        char **files = NULL, *one[1] = {(char *)inputs[i]};
        size_t nf = 0;
        tp_load_result res;
        int dir = stat(inputs[i], &st) == 0 && S_ISDIR(st.st_mode) &&
                  tp_load_folder_files(inputs[i], &files, &nf, &res) == TP_OK;
        char **paths = dir ? files : one;
        nf = dir ? nf : 1;
        const char *same = NULL;
        for (size_t k = 0; k < nf && !same; k++)
            if (tp_outfile_id(paths[k], &in) == 0 && in.dev == o.dev && in.ino == o.ino)
                same = paths[k];
        if (same)
            fprintf(stderr, "trainprof %s: -o %s is %s, which it reads; choose another -o\n", cmd,
                    out, same);
        if (dir)
            tp_load_files_free(files, nf);
        if (same)
            return 1;
    }
    if (stat(out, &st) == 0 && S_ISDIR(st.st_mode)) {
        fprintf(stderr, "trainprof %s: -o %s is a folder; name a file\n", cmd, out);
        return 1;
    }
    unsigned char head[16];
    FILE *f = force ? NULL : fopen(out, "rb");
    size_t len = f ? fread(head, 1, sizeof head, f) : 0;
    if (f)
        fclose(f);
    if (len && tp_load_native_sniff(head, len)) {
        fprintf(stderr, "trainprof %s: -o %s is a trainprof trace; use --force to replace it\n",
                cmd, out);
        return 1;
    }
    return 0;
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
