/* `trainprof top -- CMD` and `trainprof top PID [--snapshot]`: the live view of a job
 * (tui/tp_tui_live). With a command, it starts `trainprof record --live` on it (the program's
 * output goes to a log file, the terminal is the view's) and watches it; quitting the view
 * leaves the job running. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tp_cmd.h"
#include "tp_live_client.h"
#include "tp_tui_live.h"

typedef struct {
    tp_tui_live_opts lo;
    int snapshot;
    char **cmd;    /* after "--": top -- CMD */
    char *rec[64]; /* options passed on to `record` */
    int n_rec;
} top_opts;

static void usage(FILE *f) {
    fprintf(
        f, "usage: trainprof top [record options] -- CMD ARGS...\n"
           "       trainprof top PID [--snapshot] [--steps N | --seconds S] [--save FILE]\n"
           "                     [--capture-steps N] [--dir DIR] [--width W --height H] [--ascii]\n"
           "Watches a job started with `trainprof record --live` or `--idle` (or starts one on\n"
           "CMD): steps, device use per stream, top kernels and ranges, copies, memory, drops\n"
           "and the diagnosis of the last N steps (default 20) or S seconds, refreshed twice a\n"
           "second; for a job recorded with --sample, the window's CPU time by line.\n"
           "Keys: q quit (the job goes on), c capture the next steps to a file, +/- window\n"
           "size, w steps/seconds, v the offline views on the window.\n"
           "--snapshot prints one frame as text; --save also writes the window's trace.\n");
}

/* Top's own options; returns 1 when argv[*i] was one (value consumed), 0 when not, -1 bad. */
static int own_option(int argc, char **argv, int *i, top_opts *o) {
    const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    if (!strcmp(a, "--snapshot") || !strcmp(a, "--ascii")) {
        *(a[2] == 's' ? &o->snapshot : &o->lo.ascii) = 1;
        return 1;
    }
    static const char *const valued[] = {"--steps", "--seconds", "--save",  "--capture-steps",
                                         "--dir",   "--width",   "--height"};
    size_t k;
    for (k = 0; k < sizeof valued / sizeof *valued && strcmp(a, valued[k]); k++)
        ;
    if (k == sizeof valued / sizeof *valued)
        return 0;
    char *end = "";
    double n = v ? strtod(v, &end) : 0;
    if (!v || (k != 2 && k != 4 && (*end || !(n > 0)))) {
        fprintf(stderr, "trainprof top: %s needs %s\n", a,
                k == 2 || k == 4 ? "a path" : "a number above 0");
        return -1;
    }
    ++*i;
    if (k <= 1)
        o->lo.by_steps = k == 0, o->lo.n = n;
    else if (k == 2)
        o->lo.save = v;
    else if (k == 3)
        o->lo.capture_steps = (int)n;
    else if (k == 4)
        o->lo.dir = v;
    else
        *(k == 5 ? &o->lo.width : &o->lo.height) = (int)n;
    return 1;
}

static int parse(int argc, char **argv, top_opts *o) {
    memset(o, 0, sizeof *o);
    tp_tui_live_opts_init(&o->lo);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--")) {
            o->cmd = argv + i + 1;
            if (i + 1 >= argc) {
                fprintf(stderr, "trainprof top: no command after --\n");
                return 2;
            }
            return o->lo.pid ? (fprintf(stderr, "trainprof top: give a PID or a command\n"), 2) : 0;
        }
        int r = own_option(argc, argv, &i, o);
        if (r < 0)
            return 2;
        if (r)
            continue;
        char *end;
        long pid = argv[i][0] != '-' ? strtol(argv[i], &end, 10) : 0;
        if (pid > 0 && !*end && !o->lo.pid) {
            o->lo.pid = pid;
        } else if (argv[i][0] == '-' && o->n_rec < 60) {
            o->rec[o->n_rec++] = argv[i]; /* record's: checked by record itself */
            if (i + 1 < argc && argv[i + 1][0] != '-')
                o->rec[o->n_rec++] = argv[++i];
        } else {
            fprintf(stderr, "trainprof top: unexpected argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (!o->lo.pid) {
        fprintf(stderr, "trainprof top: give a PID, or -- CMD\n");
        return 2;
    }
    if (o->n_rec) {
        fprintf(stderr, "trainprof top: '%s' is a record option: use it with top -- CMD\n",
                o->rec[0]);
        return 2;
    }
    return 0;
}

static int watch(top_opts *o) {
    char err[512];
    tp_tui_live *t;
    if (tp_tui_live_open(&t, &o->lo, err, sizeof err) != TP_OK) {
        fprintf(stderr, "trainprof top: %s\n", err);
        return 1;
    }
    tp_status s = tp_tui_live_refresh(t, err, sizeof err);
    if (s == TP_OK && o->snapshot) /* an --idle job records from this request on; a job
                                      just started has no window yet */
        s = tp_tui_live_settle(t, 60000, err, sizeof err);
    if (s == TP_OK && o->snapshot) {
        s = tp_tui_live_snapshot(t, stdout);
        tp_tui_live_close(t);
        return s == TP_OK ? 0 : 1;
    }
    if (s == TP_OK)
        s = tp_tui_live_run(t);
    tp_tui_live_close(t);
    if (s == TP_ERR_STATE)
        fprintf(stderr, "trainprof top: not a terminal (use --snapshot)\n");
    else if (s != TP_OK)
        fprintf(stderr, "trainprof top: %s\n", err);
    return s == TP_OK ? 0 : 1;
}

/* Starts `trainprof record --live [options] -- CMD` with its output in `log`. */
static pid_t launch(top_opts *o, const char *log) {
    char *argv[256];
    int n = 0;
    argv[n++] = "trainprof";
    argv[n++] = "record";
    argv[n++] = "--live";
    for (int i = 0; i < o->n_rec; i++)
        argv[n++] = o->rec[i];
    argv[n++] = "--";
    for (char **c = o->cmd; *c && n < 254; c++)
        argv[n++] = *c;
    argv[n] = NULL;
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0); /* the terminal's Ctrl-C belongs to the view, not the job */
        dup2(fd, 1);
        dup2(fd, 2);
        int in = open("/dev/null", O_RDONLY);
        if (in >= 0)
            dup2(in, 0);
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    close(fd);
    return pid;
}

/* The job `record` (pid `rec`) started: the live job whose parent it is. */
static long find_job(pid_t rec) {
    for (int tries = 0; tries < 600; tries++) { /* 60 s: a program may take long to load */
        tp_live_job *jobs;
        size_t n;
        long found = 0;
        if (tp_live_jobs(&jobs, &n) == TP_OK) {
            for (size_t i = 0; i < n && !found; i++)
                if ((long)tp_live_get_num(jobs[i].status, "ppid", 0) == (long)rec)
                    found = jobs[i].pid;
            free(jobs);
        }
        if (found || waitpid(rec, NULL, WNOHANG) == rec)
            return found;
        usleep(100000);
    }
    return 0;
}

int tp_cmd_top(int argc, char **argv) {
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return 0;
    }
    top_opts o;
    if (parse(argc, argv, &o) != 0) {
        usage(stderr);
        return 2;
    }
    if (!o.cmd)
        return watch(&o);
    char log[PATH_MAX];
    snprintf(log, sizeof log, "trainprof-top-%ld.log", (long)getpid());
    pid_t rec = launch(&o, log);
    long job = rec > 0 ? find_job(rec) : 0;
    if (!job) {
        fprintf(stderr, "trainprof top: the job did not start serving (see %s)\n", log);
        return 1;
    }
    o.lo.pid = job, o.lo.fresh = 1;
    int rc = watch(&o);
    fprintf(stderr, "trainprof top: job %ld goes on; its output: %s\n", job, log);
    return rc;
}
