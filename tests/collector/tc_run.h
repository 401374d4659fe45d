/* tc_run: helpers for the collector's process-level tests: run `trainprof record` on a test
 * program in a fresh directory, find the traces it wrote, and read them back. Header-only
 * (static functions); each test program includes it once. */
#ifndef TC_RUN_H
#define TC_RUN_H

#include <dirent.h>
#include <limits.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tp_reader.h"

typedef struct {
    char dir[256]; /* fresh working directory of the run */
    char trainprof[PATH_MAX];
    char app[PATH_MAX];
    pid_t pid;       /* the `trainprof record` process */
    int out_fd;      /* read end of its stdout */
    int own_group;   /* 1: the run leads its own process group (pid == pgid), to be signalled
                        as a terminal signals a job */
    int ignore_sig;  /* a signal the run starts with ignored (`trap '' TERM`), 0 for none */
    const char *tty; /* a pseudo-terminal's slave: the run gets it as controlling terminal
                        and stdin, in a session of its own (Ctrl-C through the terminal) */
} tc_run;

/* Paths come from the command line: argv[1] = trainprof, argv[2] = test program. */
static inline void tc_init(tc_run *r, int argc, char **argv) {
    memset(r, 0, sizeof *r);
    if (argc < 3) {
        fprintf(stderr, "usage: %s TRAINPROF APP\n", argv[0]);
        exit(2);
    }
    /* Absolute: the runs chdir into their own directory. */
    if (!realpath(argv[1], r->trainprof) || !realpath(argv[2], r->app)) {
        fprintf(stderr, "cannot find %s or %s\n", argv[1], argv[2]);
        exit(2);
    }
    r->out_fd = -1;
}

static inline void tc_fresh_dir(tc_run *r) {
    snprintf(r->dir, sizeof r->dir, "/tmp/tp-collector-test-XXXXXX");
    if (!mkdtemp(r->dir)) {
        perror("mkdtemp");
        exit(1);
    }
}

/* Starts `trainprof record [opts...] -- APP [app_args...]` in r->dir; `opts` and `app_args`
 * are NULL-terminated. `env` is "NAME=VALUE" pairs (NULL-terminated) added for the run.
 * stdout comes back through r->out_fd; stderr goes to r->dir/stderr.txt. */
static inline void tc_start(tc_run *r, const char *const *env, const char *const *opts,
                            const char *const *app_args) {
    int p[2];
    if (pipe(p) != 0)
        exit(1);
    fflush(NULL);
    r->pid = fork();
    if (r->pid == 0) {
        char err[300];
        snprintf(err, sizeof err, "%s/stderr.txt", r->dir);
        int fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 2);
        dup2(p[1], 1);
        close(p[0]);
        if (chdir(r->dir) != 0)
            _exit(126);
        if (r->own_group)
            setpgid(0, 0);
        if (r->tty) { /* a session leader's first terminal becomes its controlling one */
            setsid();
            int t = open(r->tty, O_RDWR);
            if (t < 0)
                _exit(125);
            dup2(t, 0);
        }
        if (r->ignore_sig)
            signal(r->ignore_sig, SIG_IGN);
        for (int i = 0; env && env[i]; i++)
            putenv((char *)env[i]);
        /* Sanitizer builds: the collector comes in through LD_PRELOAD, ahead of the
         * program's own libasan; that order is fine here (both are instrumented). */
        setenv("ASAN_OPTIONS", "verify_asan_link_order=0", 0);
        const char *argv[64];
        int n = 0;
        argv[n++] = r->trainprof;
        argv[n++] = "record";
        for (int i = 0; opts && opts[i]; i++)
            argv[n++] = opts[i];
        argv[n++] = "--";
        argv[n++] = r->app;
        for (int i = 0; app_args && app_args[i]; i++)
            argv[n++] = app_args[i];
        argv[n] = NULL;
        execv(r->trainprof, (char **)argv);
        _exit(127);
    }
    close(p[1]);
    r->out_fd = p[0];
}

/* Waits for the record process; returns its exit status (128+sig when killed). */
static inline int tc_wait(tc_run *r) {
    int st;
    if (waitpid(r->pid, &st, 0) < 0)
        return -1;
    if (r->out_fd >= 0)
        close(r->out_fd);
    r->out_fd = -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static inline int tc_record(tc_run *r, const char *const *env, const char *const *opts,
                            const char *const *app_args) {
    tc_fresh_dir(r);
    tc_start(r, env, opts, app_args);
    /* Drain stdout so the program never blocks on a full pipe. */
    char buf[4096];
    while (read(r->out_fd, buf, sizeof buf) > 0)
        ;
    return tc_wait(r);
}

/* Reads the rest of the program's stdout into `buf` (NUL-terminated, cut to fit). */
static inline void tc_read_all(tc_run *r, char *buf, size_t len) {
    size_t n = 0;
    ssize_t k;
    while (n + 1 < len && (k = read(r->out_fd, buf + n, len - 1 - n)) > 0)
        n += (size_t)k;
    buf[n] = 0;
    char sink[4096];
    while (read(r->out_fd, sink, sizeof sink) > 0)
        ;
}

/* Occurrences of `needle` in `hay`. */
static inline int tc_occurrences(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* Reads one line of the program's stdout (blocking). Returns 0 on success. */
static inline int tc_read_line(tc_run *r, char *line, size_t len) {
    size_t n = 0;
    while (n + 1 < len) {
        char c;
        if (read(r->out_fd, &c, 1) != 1)
            return -1;
        if (c == '\n')
            break;
        line[n++] = c;
    }
    line[n] = 0;
    return 0;
}

/* The n-th (0-based, sorted by name) *.tprof in r->dir into `path`; returns how many exist. */
static inline int tc_trace(const tc_run *r, int n, char *path, size_t len) {
    DIR *d = opendir(r->dir);
    char names[16][256];
    int count = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t l = strlen(e->d_name);
        if (l > 6 && !strcmp(e->d_name + l - 6, ".tprof") && count < 16)
            snprintf(names[count++], sizeof names[0], "%s", e->d_name);
    }
    if (d)
        closedir(d);
    qsort(names, (size_t)count, sizeof names[0], (int (*)(const void *, const void *))strcmp);
    if (n < count)
        snprintf(path, len, "%s/%s", r->dir, names[n]);
    return count;
}

/* The contents of r->dir/stderr.txt (static buffer). */
static inline const char *tc_stderr(const tc_run *r) {
    static char buf[16384];
    char p[300];
    snprintf(p, sizeof p, "%s/stderr.txt", r->dir);
    FILE *f = fopen(p, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    buf[n] = 0;
    if (f)
        fclose(f);
    return buf;
}

/* Removes r->dir and its files. */
static inline void tc_cleanup(const tc_run *r) {
    DIR *d = opendir(r->dir);
    char p[600];
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(p, sizeof p, "%s/%s", r->dir, e->d_name);
        unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(r->dir);
}

/* Counts data records of `type` whose message string (NVTX) equals `msg` (NULL: any). */
static inline int tc_count(tp_reader *rd, uint16_t type, const char *msg) {
    tp_query q = {TP_REC_BIT(type), 0, 0};
    tp_cursor *c;
    int n = 0;
    if (tp_cursor_open(rd, &q, &c) != TP_OK)
        return -1;
    for (const tp_rec_hdr *h; (h = tp_cursor_next(c));) {
        if (msg && (type == TP_REC_NVTX_PUSH || type == TP_REC_NVTX_MARK)) {
            tp_rec_nvtx v;
            tp_record_get(h, &v, sizeof v);
            const char *s = tp_reader_string(rd, v.msg_sid);
            if (!s || strcmp(s, msg))
                continue;
        }
        n++;
    }
    tp_cursor_close(c);
    return n;
}

/* Sum of DROPPED counts for records of `what` (0: all). */
static inline uint64_t tc_dropped(tp_reader *rd, uint32_t what) {
    tp_query q = {TP_REC_BIT(TP_REC_DROPPED), 0, 0};
    tp_cursor *c;
    uint64_t n = 0;
    if (tp_cursor_open(rd, &q, &c) != TP_OK)
        return 0;
    for (const tp_rec_hdr *h; (h = tp_cursor_next(c));) {
        tp_rec_dropped d;
        tp_record_get(h, &d, sizeof d);
        if (!what || d.what == what)
            n += d.count;
    }
    tp_cursor_close(c);
    return n;
}

#endif
