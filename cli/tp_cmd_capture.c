/* `trainprof capture PID --steps N | --seconds S [-o FILE]`: a complete, indexed trace of
 * the next N whole steps (from the next step boundary) or S seconds of a live or idle job,
 * written while the job goes on. This program creates the file (never over an existing
 * one) and hands its descriptor to the job, which writes the trace into it. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tp_cmd.h"
#include "tp_live_client.h"
#include "tp_outfile.h"
#include "tp_text.h"

typedef struct {
    long pid;
    int by_steps;
    double n;
    const char *output;
} capture_opts;

static void usage(FILE *f) {
    fprintf(f, "usage: trainprof capture PID --steps N | --seconds S [-o FILE]\n"
               "Writes a trace of the next N whole steps (from the next step boundary) or the\n"
               "next S seconds of job PID (started with `trainprof record --live` or `--idle`)\n"
               "while it goes on. Default FILE: ./<program>-<pid>-capture-<k>.tprof.\n");
}

static int parse(int argc, char **argv, capture_opts *o) {
    memset(o, 0, sizeof *o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end;
        if (a[0] != '-') {
            long pid = strtol(a, &end, 10);
            if (o->pid || *end || pid <= 0) {
                fprintf(stderr, "trainprof capture: '%s' is not a process id\n", a);
                return 2;
            }
            o->pid = pid;
            continue;
        }
        if (!v) {
            fprintf(stderr, "trainprof capture: %s needs a value\n", a);
            return 2;
        }
        i++;
        if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            o->output = v;
            continue;
        }
        int steps = !strcmp(a, "--steps");
        if (!steps && strcmp(a, "--seconds")) {
            fprintf(stderr, "trainprof capture: unknown option '%s'\n", a);
            return 2;
        }
        double n = strtod(v, &end);
        if (*end || !(n > 0) || (steps && (n != (long)n || n > 4096)) || (!steps && n > 3600) ||
            o->n) {
            fprintf(stderr, "trainprof capture: %s takes %s, not '%s'\n", a,
                    steps ? "a whole number of steps from 1 to 4096"
                          : "seconds from more than 0 to 3600",
                    v);
            return 2;
        }
        o->by_steps = steps;
        o->n = n;
    }
    if (!o->pid || !o->n) {
        fprintf(stderr, "trainprof capture: %s\n",
                !o->pid ? "give the job's process id" : "give --steps N or --seconds S");
        return 2;
    }
    return 0;
}

/* Creates the output file: -o, or the first free default name. */
static int create_output(const capture_opts *o, char *path, size_t len, int *fd, tp_file_id *id) {
    if (o->output) {
        snprintf(path, len, "%s", o->output);
        tp_status s = tp_outfile_create(path, 0, fd, id);
        if (s == TP_OK)
            return 0;
        fprintf(stderr, "trainprof capture: cannot create %s: %s\n", path,
                s == TP_ERR_EXISTS ? "the file exists" : strerror(errno));
        return 1;
    }
    char comm[64] = "job", pf[64];
    snprintf(pf, sizeof pf, "/proc/%ld/comm", o->pid);
    FILE *f = fopen(pf, "r");
    if (f && fgets(comm, sizeof comm, f))
        comm[strcspn(comm, "\n/")] = 0;
    if (f)
        fclose(f);
    for (int k = 1; k < 1000; k++) {
        snprintf(path, len, "%s-%ld-capture-%d.tprof", comm, o->pid, k);
        tp_status s = tp_outfile_create(path, 0, fd, id);
        if (s == TP_OK)
            return 0;
        if (s != TP_ERR_EXISTS)
            break;
    }
    fprintf(stderr, "trainprof capture: cannot create %s: %s\n", path, strerror(errno));
    return 1;
}

/* Removes the file this command created when it is still that file. */
static void remove_output(const char *path, const tp_file_id *id) {
    tp_file_id now;
    if (tp_outfile_id(path, &now) == 0 && now.dev == id->dev && now.ino == id->ino)
        unlink(path);
}

int tp_cmd_capture(int argc, char **argv) {
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return 0;
    }
    capture_opts o;
    if (parse(argc, argv, &o) != 0) {
        usage(stderr);
        return 2;
    }
    char err[512], path[4096];
    tp_live_client *c;
    if (tp_live_client_open(o.pid, &c, err, sizeof err) != TP_OK) {
        fprintf(stderr, "trainprof capture: %s\n", err);
        return 1;
    }
    int fd;
    tp_file_id id;
    if (create_output(&o, path, sizeof path, &fd, &id) != 0) {
        tp_live_client_close(c);
        return 1;
    }
    tp_live_msg *m = malloc(sizeof *m);
    tp_status s =
        m ? tp_live_client_capture(c, o.by_steps, o.n, fd, err, sizeof err) : TP_ERR_NOMEM;
    close(fd); /* the job holds its own copy now */
    if (s == TP_OK)
        s = tp_live_client_capture_wait(c, -1, m, err, sizeof err);
    size_t others = s == TP_OK ? tp_live_client_capture_members(c, path, m) : 0;
    tp_live_client_close(c);
    if (s != TP_OK) {
        fprintf(stderr, "trainprof capture: %s\n", s == TP_ERR_NOMEM ? "out of memory" : err);
        remove_output(path, &id);
        free(m);
        return 1;
    }
    printf("trainprof capture: wrote ");
    tp_text_fputs(path, stdout);
    printf(" (%s %g %s, %.0f records", o.by_steps ? "the next" : "the next", o.n,
           o.by_steps ? "steps" : "seconds", tp_live_get_num(m->text, "records", 0));
    if (others) /* the same span of its DataLoader workers and the processes it started */
        printf("; with %zu other process%s of the job beside it", others, others == 1 ? "" : "es");
    printf(")\n");
    printf("next: trainprof report ");
    tp_text_fputs(path, stdout);
    printf("\n");
    free(m);
    return tp_cmd_flush("capture", stdout, "standard output");
}
