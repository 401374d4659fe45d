/* tp_liveproto: framing and transport of the live control socket (see tp_liveproto.h). */
#include "tp_liveproto.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

int tp_live_dir(char *buf, size_t len) {
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    const char *tmp = getenv("TMPDIR");
    int n;
    if (xdg && xdg[0] == '/')
        n = snprintf(buf, len, "%s/trainprof", xdg);
    else
        n = snprintf(buf, len, "%s/trainprof-%ld", tmp && tmp[0] == '/' ? tmp : "/tmp",
                     (long)geteuid());
    return n > 0 && (size_t)n < len ? 0 : -1;
}

tp_status tp_live_dir_check(const char *dir, int create, char *why, size_t whylen) {
    struct stat st;
    if (lstat(dir, &st) != 0) {
        if (errno != ENOENT)
            return TP_ERR_OPEN;
        if (!create)
            return TP_ERR_NOT_FOUND;
        if (mkdir(dir, 0700) != 0 && errno != EEXIST)
            return TP_ERR_OPEN;
        if (lstat(dir, &st) != 0)
            return TP_ERR_OPEN;
    }
    /* Another user's folder, or one others can write to, could hold a socket that
     * impersonates a job: refuse it rather than trust what is inside. */
    const char *bad = !S_ISDIR(st.st_mode)      ? "is not a directory"
                      : st.st_uid != geteuid()  ? "belongs to another user"
                      : (st.st_mode & 077) != 0 ? "is accessible to other users"
                                                : NULL;
    if (!bad)
        return TP_OK;
    if (why)
        snprintf(why, whylen, "%s %s", dir, bad);
    return TP_ERR_STATE;
}

int tp_live_sock_path(const char *dir, long pid, char *buf, size_t len) {
    int n = snprintf(buf, len, "%s/%ld.sock", dir, pid);
    return n > 0 && (size_t)n < len && (size_t)n < sizeof(((struct sockaddr_un *)0)->sun_path) ? 0
                                                                                               : -1;
}

tp_status tp_live_send(int sock, uint16_t type, const char *text, size_t len, int fd,
                       int nonblock) {
    tp_live_hdr h = {TP_LIVE_MAGIC, TP_LIVE_VERSION, type, (uint32_t)len, 0};
    struct iovec iov[2] = {{&h, sizeof h}, {(void *)text, len}};
    union {
        struct cmsghdr c;
        char buf[CMSG_SPACE(sizeof(int))];
    } ctl;
    struct msghdr msg = {.msg_iov = iov, .msg_iovlen = len ? 2 : 1};
    if (fd >= 0) {
        memset(&ctl, 0, sizeof ctl);
        msg.msg_control = ctl.buf;
        msg.msg_controllen = sizeof ctl.buf;
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof fd);
    }
    ssize_t n;
    do
        n = sendmsg(sock, &msg, MSG_NOSIGNAL | (nonblock ? MSG_DONTWAIT : 0));
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return errno == EAGAIN || errno == EWOULDBLOCK ? TP_ERR_FULL : TP_ERR_IO;
    return TP_OK;
}

/* The descriptor a message brought, -1 when none (extra ones are closed). */
static int take_fd(struct msghdr *msg) {
    int fd = -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < n; i++) {
            int x;
            memcpy(&x, CMSG_DATA(c) + i * sizeof(int), sizeof x);
            if (fd < 0)
                fd = x;
            else
                close(x);
        }
    }
    return fd;
}

tp_status tp_live_recv(int sock, tp_live_msg *m, size_t max, int nonblock) {
    if (max > TP_LIVE_REPLY_MAX)
        max = TP_LIVE_REPLY_MAX;
    tp_live_hdr h;
    struct iovec iov[2] = {{&h, sizeof h}, {m->text, max}};
    union {
        struct cmsghdr c;
        char buf[CMSG_SPACE(4 * sizeof(int))];
    } ctl;
    struct msghdr msg = {
        .msg_iov = iov, .msg_iovlen = 2, .msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf};
    ssize_t n;
    m->fd = -1;
    do
        n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | (nonblock ? MSG_DONTWAIT : 0));
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return errno == EAGAIN || errno == EWOULDBLOCK ? TP_ERR_FULL : TP_ERR_IO;
    if (n == 0) {
        m->text[0] = 0;
        return TP_ERR_EMPTY;
    }
    m->fd = take_fd(&msg);
    tp_status s = TP_OK;
    if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
        s = TP_ERR_ARG;
    else if ((size_t)n < sizeof h || h.magic != TP_LIVE_MAGIC || h.version != TP_LIVE_VERSION ||
             h.len != (size_t)n - sizeof h)
        s = TP_ERR_FORMAT;
    if (s != TP_OK) {
        if (m->fd >= 0)
            close(m->fd);
        m->fd = -1;
        m->text[0] = 0;
        return s;
    }
    m->type = h.type;
    m->version = h.version;
    m->len = h.len;
    m->text[h.len] = 0;
    return TP_OK;
}

tp_status tp_live_connect(const char *path, int *out) {
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof a.sun_path) {
        errno = ENAMETOOLONG;
        return TP_ERR_OPEN;
    }
    strcpy(a.sun_path, path);
    int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (s < 0)
        return TP_ERR_OPEN;
    if (connect(s, (struct sockaddr *)&a, sizeof a) != 0) {
        int e = errno;
        close(s);
        errno = e;
        return TP_ERR_OPEN;
    }
    *out = s;
    return TP_OK;
}

tp_status tp_live_call(int sock, uint16_t type, const char *text, int fd, tp_live_msg *reply,
                       int timeout_ms) {
    tp_status s = tp_live_send(sock, type, text, text ? strlen(text) : 0, fd, 0);
    if (s != TP_OK)
        return s;
    struct pollfd p = {sock, POLLIN, 0};
    int r;
    do
        r = poll(&p, 1, timeout_ms);
    while (r < 0 && errno == EINTR);
    if (r == 0)
        return TP_ERR_STATE;
    if (r < 0)
        return TP_ERR_IO;
    return tp_live_recv(sock, reply, TP_LIVE_REPLY_MAX, 0);
}

int tp_live_get(const char *text, const char *key, char *out, size_t cap) {
    size_t kl = strlen(key);
    for (const char *p = text; p && *p;) {
        const char *eol = strchr(p, '\n');
        size_t ll = eol ? (size_t)(eol - p) : strlen(p);
        if (ll > kl && !strncmp(p, key, kl) && p[kl] == '=') {
            size_t vl = ll - kl - 1;
            if (cap) {
                vl = vl < cap - 1 ? vl : cap - 1;
                memcpy(out, p + kl + 1, vl);
                out[vl] = 0;
            }
            return 1;
        }
        p = eol ? eol + 1 : NULL;
    }
    if (cap)
        out[0] = 0;
    return 0;
}

double tp_live_get_num(const char *text, const char *key, double dflt) {
    char v[64], *end;
    if (!tp_live_get(text, key, v, sizeof v) || !v[0])
        return dflt;
    double d = strtod(v, &end);
    return *end ? dflt : d;
}
