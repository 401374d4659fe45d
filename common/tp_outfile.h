/* tp_outfile: creating output files (traces, exports) without overwriting anyone's data.
 *
 * What it promises: an existing file is never opened for writing by accident, a symbolic
 * link is never followed into the file it names (a link is replaced itself, when replacing
 * is asked for), and two programs racing for one name never write into one file: creation
 * is O_CREAT|O_EXCL|O_NOFOLLOW, and a finished file is put in place with one atomic rename
 * that refuses an existing name unless replacing is asked for. Errors keep errno. Used by
 * `trainprof record` (reserving -o before the program starts), the collector (creating or
 * claiming that reservation) and `trainprof export`. */
#ifndef TP_OUTFILE_H
#define TP_OUTFILE_H

#include <stddef.h>
#include <stdint.h>

#include "tp_status.h"

/* A file's identity: device and inode. */
typedef struct {
    uint64_t dev, ino;
} tp_file_id;

/* Creates `path` as a new, empty regular file (mode 0644 less the umask) and returns it open
 * for writing (O_CLOEXEC) in *fd, its identity in *id (may be NULL). When `path` exists (a
 * symbolic link too, even a dangling one): TP_ERR_EXISTS, unless `replace`, which removes
 * the existing name first (the link itself, never its target; a directory is never
 * removed: TP_ERR_OPEN with errno EISDIR). Other failures: TP_ERR_OPEN with errno set. */
tp_status tp_outfile_create(const char *path, int replace, int *fd, tp_file_id *id);

/* Opens `path` for writing when it is still the empty regular file `id` (a reservation made
 * by tp_outfile_create in another process); never follows a symbolic link. TP_ERR_NOT_FOUND
 * when the name is gone, TP_ERR_EXISTS when it names another file or is no longer empty. */
tp_status tp_outfile_claim(const char *path, const tp_file_id *id, int *fd);

/* Creates directory `dir` and its missing parents, like `mkdir -p` (0755 less the umask).
 * TP_ERR_OPEN with errno set when a part cannot be made or is not a directory. */
tp_status tp_outfile_mkdirs(const char *dir);

/* Writes the directory part of `path` into `dir` ("." when there is none). Returns 0, or -1
 * when it does not fit. */
int tp_outfile_dirname(const char *path, char *dir, size_t len);

/* Moves the finished file `tmp` to `path` in one step (both in one file system). Without
 * `replace` an existing `path` is left alone: TP_ERR_EXISTS, `tmp` kept. With it, `path` is
 * replaced (a symbolic link itself, not its target). TP_ERR_IO with errno otherwise. */
tp_status tp_outfile_publish(const char *tmp, const char *path, int replace);

/* Fills *id with the identity of the file `path` names (following links); 0, or -1. */
int tp_outfile_id(const char *path, tp_file_id *id);

#endif
