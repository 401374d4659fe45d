/* `trainprof ps`: this user's live and idle jobs (pid, mode, uptime, steps, trace, command),
 * from each job's own STATUS reply; sockets left by killed jobs are removed on the way. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_cmd.h"
#include "tp_live_client.h"
#include "tp_text.h"

static void usage(FILE *f) {
    fprintf(f, "usage: trainprof ps\n"
               "Lists your jobs started with `trainprof record --live` or `--idle` (or\n"
               "`trainprof top -- CMD`): pid, mode, uptime, completed steps, trace, command.\n");
}

static void fmt_uptime(double s, char *buf, size_t len) {
    long t = (long)s;
    if (t >= 3600)
        snprintf(buf, len, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else
        snprintf(buf, len, "%ldm%02lds", t / 60, t % 60);
}

static void print_job(const tp_live_job *j) {
    char mode[16], trace[4096], cmd[1024], up[32];
    tp_live_get(j->status, "mode", mode, sizeof mode);
    tp_live_get(j->status, "trace", trace, sizeof trace);
    tp_live_get(j->status, "cmd", cmd, sizeof cmd);
    fmt_uptime(tp_live_get_num(j->status, "uptime_ns", 0) * 1e-9, up, sizeof up);
    printf("%-8ld %-5s %8s %8.0f  ", j->pid, mode, up, tp_live_get_num(j->status, "steps", 0));
    tp_text_fputs(trace, stdout);
    printf("  ");
    tp_text_fputs(cmd, stdout);
    printf("\n");
}

int tp_cmd_ps(int argc, char **argv) {
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return 0;
    }
    if (argc > 1) {
        fprintf(stderr, "trainprof ps: unexpected argument '%s'\n", argv[1]);
        usage(stderr);
        return 2;
    }
    tp_live_job *jobs;
    size_t n;
    if (tp_live_jobs(&jobs, &n) != TP_OK) {
        fprintf(stderr, "trainprof ps: the folder of live sockets is not safe to use\n");
        return 1;
    }
    printf("%-8s %-5s %8s %8s  %s  %s\n", "PID", "MODE", "UPTIME", "STEPS", "TRACE", "COMMAND");
    for (size_t i = 0; i < n; i++)
        print_job(&jobs[i]);
    free(jobs);
    return tp_cmd_flush("ps", stdout, "standard output");
}
