/* tp_status: the one error type of trainprof.
 *
 * Every fallible function returns a tp_status; results travel through out-parameters.
 * The table below is the only list of codes; tp_status_str() names each for messages. */
#ifndef TP_STATUS_H
#define TP_STATUS_H

#define TP_STATUS_TABLE(X)                                                                         \
    X(TP_OK, "ok")                                                                                 \
    X(TP_ERR_NOMEM, "out of memory")                                                               \
    X(TP_ERR_IO, "input/output error")                                                             \
    X(TP_ERR_OPEN, "cannot open file")                                                             \
    X(TP_ERR_FORMAT, "not a trainprof trace (bad magic or header)")                                \
    X(TP_ERR_VERSION, "unsupported trace format version")                                          \
    X(TP_ERR_CORRUPT, "corrupt data")                                                              \
    X(TP_ERR_TRUNCATED, "file is truncated")                                                       \
    X(TP_ERR_ARG, "invalid argument")                                                              \
    X(TP_ERR_FULL, "buffer full")                                                                  \
    X(TP_ERR_NOT_FOUND, "not found")                                                               \
    X(TP_ERR_UNSUPPORTED, "unsupported")                                                           \
    X(TP_ERR_PARSE, "parse error")                                                                 \
    X(TP_ERR_STATE, "invalid state")                                                               \
    X(TP_ERR_EMPTY, "no data")                                                                     \
    X(TP_ERR_EXISTS, "file exists")

typedef enum {
#define TP_STATUS_ENUM(name, text) name,
    TP_STATUS_TABLE(TP_STATUS_ENUM)
#undef TP_STATUS_ENUM
        TP_STATUS_COUNT
} tp_status;

/* Returns a static, human-readable description of `s` (never NULL). */
const char *tp_status_str(tp_status s);

/* Returns the symbolic name ("TP_ERR_IO") of `s` (never NULL). */
const char *tp_status_name(tp_status s);

/* What to tell a person about `s`. For TP_ERR_IO and TP_ERR_OPEN, functions that fail on a
 * system call leave errno set (documented where they do); pass it as `err` and this returns
 * the system's reason ("No space left on device"), which says more than "input/output
 * error". Otherwise, or when `err` is 0, tp_status_str(s). Never NULL. */
const char *tp_status_why(tp_status s, int err);

#endif
