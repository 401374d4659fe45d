/* tp_live_client: talking to live jobs (see tp_live_client.h). */
#include "tp_live_client.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tp_capture.h"
#include "tp_load.h"
#include "tp_mem.h"
#include "tp_outfile.h"

#define CALL_MS 10000 /* a job answers from its own thread; this only catches a hung one */

struct tp_live_client {
    int fd;
    long pid;
    int trace_asked; /* trace: the job's trace path (its STATUS), asked once */
    char trace[4200];
};

static tp_live_msg g_scratch; /* replies nobody keeps (the CLI and TUI are single-threaded) */

/* 1 when the socket at `path` is certainly dead: nobody listens there (the job was killed
 * with SIGKILL, or its pid is another program now). A job binds then listens at once, so
 * a refusal is asked twice, a moment apart, before the socket is taken for dead. */
static int stale(const char *path) {
    for (int k = 0; k < 2; k++) {
        int fd;
        if (tp_live_connect(path, &fd) == TP_OK) {
            close(fd);
            return 0;
        }
        if (errno != ECONNREFUSED)
            return 0;
        if (!k)
            usleep(200000);
    }
    return 1;
}

static tp_status find_dir(char *dir, size_t len, char *err, size_t errlen) {
    char why[400];
    if (tp_live_dir(dir, len) != 0) {
        snprintf(err, errlen, "the folder of live jobs' sockets has too long a name");
        return TP_ERR_ARG;
    }
    tp_status s = tp_live_dir_check(dir, 0, why, sizeof why);
    if (s == TP_ERR_STATE)
        snprintf(err, errlen, "refusing to use %.300s", why);
    else if (s != TP_OK)
        snprintf(err, errlen, "no live jobs (%s does not exist)", dir);
    return s;
}

tp_status tp_live_client_open(long pid, tp_live_client **out, char *err, size_t errlen) {
    char dir[256], path[400];
    tp_status s = find_dir(dir, sizeof dir, err, errlen);
    if (s != TP_OK)
        return s == TP_ERR_STATE ? s : TP_ERR_NOT_FOUND;
    if (tp_live_sock_path(dir, pid, path, sizeof path) != 0)
        return TP_ERR_ARG;
    int fd;
    if (tp_live_connect(path, &fd) != TP_OK) {
        int e = errno;
        if (e == ENOENT || (e == ECONNREFUSED && stale(path))) {
            if (e == ECONNREFUSED)
                unlink(path);
            snprintf(err, errlen,
                     "no live job with pid %ld (start one with trainprof record --live or "
                     "--idle)",
                     pid);
            return TP_ERR_NOT_FOUND;
        }
        snprintf(err, errlen, "cannot connect to job %ld: %s", pid, strerror(e));
        errno = e;
        return TP_ERR_OPEN;
    }
    tp_live_client *c = tp_mem_xalloc(1, sizeof *c);
    c->fd = fd;
    c->pid = pid;
    *out = c;
    return TP_OK;
}

void tp_live_client_close(tp_live_client *c) {
    if (!c)
        return;
    close(c->fd);
    free(c);
}

/* A request and its reply; an ERROR reply becomes TP_ERR_IO with the job's words. */
static tp_status call(tp_live_client *c, uint16_t type, const char *text, int fd, tp_live_msg *m,
                      char *err, size_t errlen) {
    tp_status s = tp_live_call(c->fd, type, text, fd, m, CALL_MS);
    if (s == TP_ERR_STATE) {
        snprintf(err, errlen, "job %ld did not answer within %d s", c->pid, CALL_MS / 1000);
        return s;
    }
    if (s != TP_OK) {
        snprintf(err, errlen, "job %ld: %s", c->pid,
                 s == TP_ERR_EMPTY ? "the job ended" : tp_status_why(s, errno));
        return s;
    }
    if (m->type == TP_LIVE_ERROR) {
        char why[300];
        tp_live_get(m->text, "error", why, sizeof why);
        snprintf(err, errlen, "job %ld: %s", c->pid, why);
        if (m->fd >= 0)
            close(m->fd);
        return TP_ERR_IO;
    }
    return TP_OK;
}

tp_status tp_live_client_status(tp_live_client *c, tp_live_msg *m, char *err, size_t errlen) {
    return call(c, TP_LIVE_STATUS, "", -1, m, err, errlen);
}

static void span_text(char *buf, size_t len, int by_steps, double n) {
    if (by_steps)
        snprintf(buf, len, "steps=%.0f\n", n);
    else
        snprintf(buf, len, "seconds=%.3f\n", n);
}

/* Copies the window's memory file to `path`. Returns 0, or -1 (errno set). */
static int save_copy(int from, const char *path) {
    int to;
    if (tp_outfile_create(path, 1, &to, NULL) != TP_OK)
        return -1;
    char buf[65536];
    off_t off = 0;
    ssize_t n;
    while ((n = pread(from, buf, sizeof buf, off)) > 0) {
        if (write(to, buf, (size_t)n) != n) {
            close(to);
            return -1;
        }
        off += n;
    }
    return close(to) == 0 && n == 0 ? 0 : -1;
}

/* The job's trace path, for the traces of its other processes beside it (its DataLoader
 * workers'): asked once; relative to the job's folder when it is not absolute; "" when not
 * known. */
static const char *job_trace(tp_live_client *c) {
    if (c->trace_asked)
        return c->trace;
    c->trace_asked = 1;
    char err[512], path[4096];
    if (tp_live_client_status(c, &g_scratch, err, sizeof err) != TP_OK ||
        !tp_live_get(g_scratch.text, "trace", path, sizeof path) || !path[0])
        return c->trace;
    if (path[0] == '/')
        snprintf(c->trace, sizeof c->trace, "%s", path);
    else
        snprintf(c->trace, sizeof c->trace, "/proc/%ld/cwd/%s", c->pid, path);
    return c->trace;
}

tp_status tp_live_client_window(tp_live_client *c, int by_steps, double n, const char *save,
                                tp_model **out, tp_live_window *w, char *err, size_t errlen) {
    char req[64];
    span_text(req, sizeof req, by_steps, n);
    const char *trace = job_trace(c); /* before the window: the reply is in g_scratch */
    tp_live_msg *m = &g_scratch;
    tp_status s = call(c, TP_LIVE_WINDOW, req, -1, m, err, errlen);
    if (s != TP_OK)
        return strstr(err, "no step has completed") ? TP_ERR_EMPTY : s;
    if (m->fd < 0) {
        snprintf(err, errlen, "job %ld sent no window", c->pid);
        return TP_ERR_FORMAT;
    }
    w->t0 = (unsigned long long)tp_live_get_num(m->text, "t0", 0);
    w->t1 = (unsigned long long)tp_live_get_num(m->text, "t1", 0);
    w->records = (unsigned long long)tp_live_get_num(m->text, "records", 0);
    w->steps = (size_t)tp_live_get_num(m->text, "steps", 0);
    w->reply = m->text;
    if (save && save_copy(m->fd, save) != 0) {
        snprintf(err, errlen, "cannot write %s: %s", save, strerror(errno));
        close(m->fd);
        return TP_ERR_IO;
    }
    /* with the recording's other processes' records of the same time (their traces on disk,
     * written as they go): a DataLoader's workers are where an input-bound job's time goes.
     * Saved, they are cut beside the saved window, and the saved recording is what loads
     * (each trace read once) */
    tp_load_result res;
    if (save) {
        tp_capture_members(trace, save, w->t0, w->t1 + 1, 1);
        s = tp_load_paths(&save, 1, out, &res);
    } else {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", m->fd);
        s = tp_load_live_window(path, trace, w->t0, w->t1 + 1, out, &res);
    }
    close(m->fd);
    if (s != TP_OK)
        snprintf(err, errlen, "job %ld's window: %s", c->pid, res.error);
    return s;
}

size_t tp_live_client_capture_members(tp_live_client *c, const char *path,
                                      const tp_live_msg *done) {
    uint64_t t0 = (uint64_t)tp_live_get_num(done->text, "t0", 0),
             t1 = (uint64_t)tp_live_get_num(done->text, "t1", 0);
    return tp_capture_members(job_trace(c), path, t0, t1 + 1, 0);
}

tp_status tp_live_client_figures(tp_live_client *c, double n, tp_live_msg *m, char *err,
                                 size_t errlen) {
    char req[64];
    span_text(req, sizeof req, 1, n);
    tp_status s = call(c, TP_LIVE_FIGURES, req, -1, m, err, errlen);
    if (s != TP_OK)
        return strstr(err, "no step has completed") ? TP_ERR_EMPTY : s;
    if (m->fd >= 0)
        close(m->fd);
    return TP_OK;
}

tp_status tp_live_client_capture(tp_live_client *c, int by_steps, double n, int fd, char *err,
                                 size_t errlen) {
    char req[64];
    span_text(req, sizeof req, by_steps, n);
    return call(c, TP_LIVE_CAPTURE, req, fd, &g_scratch, err, errlen);
}

tp_status tp_live_client_capture_wait(tp_live_client *c, int timeout_ms, tp_live_msg *m, char *err,
                                      size_t errlen) {
    struct pollfd p = {c->fd, POLLIN, 0};
    int r;
    do
        r = poll(&p, 1, timeout_ms);
    while (r < 0 && errno == EINTR);
    if (r == 0)
        return TP_ERR_STATE;
    tp_status s = r < 0 ? TP_ERR_IO : tp_live_recv(c->fd, m, TP_LIVE_REPLY_MAX, 0);
    if (s != TP_OK) {
        snprintf(err, errlen, "job %ld ended before the capture was complete", c->pid);
        return TP_ERR_IO;
    }
    if (m->type != TP_LIVE_DONE) {
        char why[300];
        if (!tp_live_get(m->text, "error", why, sizeof why))
            snprintf(why, sizeof why, "unexpected reply");
        snprintf(err, errlen, "job %ld: %s", c->pid, why);
        return TP_ERR_IO;
    }
    return TP_OK;
}

static int by_pid(const void *a, const void *b) {
    long x = ((const tp_live_job *)a)->pid, y = ((const tp_live_job *)b)->pid;
    return (x > y) - (x < y);
}

/* Adds job `pid` to the list when it answers; removes its socket when it is stale. */
static void probe(const char *dir, long pid, tp_live_job **v, size_t *n, size_t *cap) {
    char path[400], err[300];
    if (tp_live_sock_path(dir, pid, path, sizeof path) != 0)
        return;
    tp_live_client *c;
    if (tp_live_client_open(pid, &c, err, sizeof err) != TP_OK)
        return; /* gone (stale socket removed), or not ours to ask */
    tp_live_msg *m = &g_scratch;
    if (tp_live_client_status(c, m, err, sizeof err) == TP_OK) {
        TP_MEM_XGROW(*v, *cap, *n + 1);
        (*v)[*n].pid = pid;
        memcpy((*v)[*n].status, m->text, m->len + 1);
        ++*n;
    }
    tp_live_client_close(c);
}

tp_status tp_live_jobs(tp_live_job **out, size_t *n) {
    char dir[256], err[400];
    *out = NULL;
    *n = 0;
    tp_status s = find_dir(dir, sizeof dir, err, sizeof err);
    if (s == TP_ERR_NOT_FOUND)
        return TP_OK;
    if (s != TP_OK)
        return s;
    DIR *d = opendir(dir);
    if (!d)
        return TP_OK;
    size_t cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (pid > 0 && !strcmp(end, ".sock"))
            probe(dir, pid, out, n, &cap);
    }
    closedir(d);
    if (*n)
        qsort(*out, *n, sizeof **out, by_pid);
    return TP_OK;
}
