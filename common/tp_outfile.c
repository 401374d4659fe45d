/* tp_outfile: exclusive creation, claiming and atomic publishing of output files. */
#include "tp_outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Each try removes the name someone else created since the last one; give up after a few. */
#define CREATE_TRIES 8

static void id_of(const struct stat *sb, tp_file_id *id) {
    if (id)
        *id = (tp_file_id){(uint64_t)sb->st_dev, (uint64_t)sb->st_ino};
}

/* 1 when `path` names a directory itself (a link to one is not). */
static int is_dir(const char *path) {
    struct stat sb;
    return lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* Only a regular file or a symbolic link may be replaced: never a device, FIFO or socket
 * (as root, `-o /dev/full --force` must not unlink /dev/full). */
static int replaceable(const char *path) {
    struct stat sb;
    return lstat(path, &sb) != 0 || S_ISREG(sb.st_mode) || S_ISLNK(sb.st_mode);
}

tp_status tp_outfile_create(const char *path, int replace, int *fd, tp_file_id *id) {
    *fd = -1;
    for (int i = 0; i < CREATE_TRIES; i++) {
        int f = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (f >= 0) {
            struct stat sb;
            if (fstat(f, &sb) != 0) {
                int e = errno;
                close(f);
                errno = e;
                return TP_ERR_OPEN;
            }
            id_of(&sb, id);
            *fd = f;
            return TP_OK;
        }
        if (errno != EEXIST)
            return TP_ERR_OPEN;
        if (is_dir(path)) {
            errno = EISDIR;
            return TP_ERR_OPEN;
        }
        if (!replace || !replaceable(path))
            return TP_ERR_EXISTS;
        if (unlink(path) != 0 && errno != ENOENT) /* the name itself, never a link's target */
            return TP_ERR_OPEN;
    }
    errno = EEXIST;
    return TP_ERR_EXISTS;
}

tp_status tp_outfile_claim(const char *path, const tp_file_id *id, int *fd) {
    *fd = -1;
    /* O_NONBLOCK: a FIFO put in its place must not block the open. */
    int f = open(path, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (f < 0) {
        if (errno == ENOENT)
            return TP_ERR_NOT_FOUND;
        return errno == ELOOP ? TP_ERR_EXISTS : TP_ERR_OPEN; /* ELOOP: now a link */
    }
    struct stat sb;
    tp_file_id got = {0, 0};
    if (fstat(f, &sb) == 0)
        id_of(&sb, &got);
    if (got.dev != id->dev || got.ino != id->ino || !S_ISREG(sb.st_mode) || sb.st_size != 0 ||
        fcntl(f, F_SETFL, 0) != 0) {
        close(f);
        errno = EEXIST;
        return TP_ERR_EXISTS;
    }
    *fd = f;
    return TP_OK;
}

tp_status tp_outfile_mkdirs(const char *dir) {
    char buf[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof buf) {
        errno = n ? ENAMETOOLONG : ENOENT;
        return TP_ERR_OPEN;
    }
    memcpy(buf, dir, n + 1);
    for (char *p = buf + 1;; p++) { /* each prefix that ends before a '/', then the whole */
        char c = *p;
        if (c != '/' && c != 0)
            continue;
        *p = 0;
        int made = mkdir(buf, 0755) == 0 || errno == EEXIST;
        *p = c;
        if (!made)
            return TP_ERR_OPEN;
        if (!c)
            break;
    }
    struct stat sb;
    if (stat(buf, &sb) != 0)
        return TP_ERR_OPEN;
    if (!S_ISDIR(sb.st_mode)) {
        errno = ENOTDIR;
        return TP_ERR_OPEN;
    }
    return TP_OK;
}

int tp_outfile_dirname(const char *path, char *dir, size_t len) {
    const char *slash = strrchr(path, '/');
    size_t n = !slash ? 1 : slash == path ? 1 : (size_t)(slash - path);
    if (n >= len)
        return -1;
    memcpy(dir, slash ? path : ".", n);
    dir[n] = 0;
    return 0;
}

tp_status tp_outfile_publish(const char *tmp, const char *path, int replace) {
    if (replace)
        return rename(tmp, path) == 0 ? TP_OK : TP_ERR_IO;
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0)
        return TP_OK;
    if (errno == EEXIST)
        return TP_ERR_EXISTS;
    if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
        return TP_ERR_IO;
    /* A file system without RENAME_NOREPLACE: link() refuses an existing name as well. */
    if (link(tmp, path) != 0)
        return errno == EEXIST ? TP_ERR_EXISTS : TP_ERR_IO;
    unlink(tmp);
    return TP_OK;
}

int tp_outfile_id(const char *path, tp_file_id *id) {
    struct stat sb;
    if (stat(path, &sb) != 0)
        return -1;
    id_of(&sb, id);
    return 0;
}
