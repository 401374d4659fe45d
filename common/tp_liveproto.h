/* tp_liveproto: the control socket of live and idle jobs, both ends (docs/live-protocol.md).
 *
 * A job started by `trainprof record --live/--idle` serves a SOCK_SEQPACKET Unix socket
 * named <pid>.sock in a per-user folder (tp_live_dir). Every message is one packet: a
 * 16-byte header {magic "TPLV", u16 version, u16 type, u32 len, u32 reserved} then `len` bytes
 * of text, "key=value" lines. A reply may carry one file descriptor (SCM_RIGHTS): a window is
 * handed over as a memfd holding a complete .tprof trace; a capture request brings the file
 * the trace is written into. This module frames, sends and receives; it knows nothing of
 * what the keys mean. Plain functions, no global state. */
#ifndef TP_LIVEPROTO_H
#define TP_LIVEPROTO_H

#include <stddef.h>
#include <stdint.h>

#include "tp_status.h"

#define TP_LIVE_MAGIC 0x564c5054u /* "TPLV" little-endian */
#define TP_LIVE_VERSION 1u
#define TP_LIVE_REQ_MAX 1024u    /* payload bytes of a request; longer ones are refused */
#define TP_LIVE_REPLY_MAX 16384u /* payload bytes of a reply */

/* Message types: requests below 0x80, replies from 0x80. Values never change. */
typedef enum {
    TP_LIVE_STATUS = 1,  /* -> OK: pid, mode, uptime, steps, trace path, ... */
    TP_LIVE_WINDOW = 2,  /* steps=N | seconds=S -> OK with a memfd holding the window's trace */
    TP_LIVE_CAPTURE = 3, /* steps=N | seconds=S, the output file attached -> OK, later DONE */
    TP_LIVE_FIGURES = 4, /* steps=N -> OK: the aggregator's figures of the last N steps */
    TP_LIVE_OK = 0x81,
    TP_LIVE_ERROR = 0x82, /* error=<one line> */
    TP_LIVE_DONE = 0x83   /* a capture was written: steps=, records=, t0=, t1= */
} tp_live_type;

typedef struct {
    uint32_t magic;
    uint16_t version;
    uint16_t type;
    uint32_t len;
    uint32_t reserved;
} tp_live_hdr;

/* A received message: the payload is NUL-terminated text; fd is -1 when none came. */
typedef struct {
    uint16_t type;
    uint16_t version;
    size_t len;
    int fd;
    char text[TP_LIVE_REPLY_MAX + 1];
} tp_live_msg;

/* The folder of this user's sockets: "$XDG_RUNTIME_DIR/trainprof" when that variable names
 * an absolute path, else "<$TMPDIR or /tmp>/trainprof-<uid>". Returns 0, -1 when it does not
 * fit. */
int tp_live_dir(char *buf, size_t len);

/* Checks that `dir` is a directory (not a link) owned by the effective uid with no access
 * for group or others. Creates it (mode 0700) first when `create` and it is missing.
 * TP_OK, TP_ERR_NOT_FOUND (missing), TP_ERR_STATE (wrong owner, type or mode: why in
 * `why`), TP_ERR_OPEN (mkdir failed, errno set). */
tp_status tp_live_dir_check(const char *dir, int create, char *why, size_t whylen);

/* "<dir>/<pid>.sock". Returns 0, -1 when it does not fit. */
int tp_live_sock_path(const char *dir, long pid, char *buf, size_t len);

/* Sends one message of `type` with `len` bytes of `text` and, when fd >= 0, that
 * descriptor. `nonblock`: never wait for room (TP_ERR_FULL when the peer's queue is full).
 * TP_ERR_IO on any other failure (errno set). */
tp_status tp_live_send(int sock, uint16_t type, const char *text, size_t len, int fd, int nonblock);

/* Receives one message into *m, at most `max` payload bytes (a longer one is refused:
 * TP_ERR_ARG, the packet is gone). TP_ERR_EMPTY when the peer closed, TP_ERR_FORMAT for a
 * bad magic, version or length (any descriptor that came is closed), TP_ERR_FULL when
 * `nonblock` and nothing is there, TP_ERR_IO else. A received descriptor is close-on-exec. */
tp_status tp_live_recv(int sock, tp_live_msg *m, size_t max, int nonblock);

/* Connects to the socket at `path`. *out is the descriptor. TP_ERR_OPEN (errno set: ENOENT,
 * ECONNREFUSED for a socket nobody serves, ...). */
tp_status tp_live_connect(const char *path, int *out);

/* Sends a request and waits up to `timeout_ms` for one reply (other replies are not
 * skipped: the caller owns the conversation). TP_ERR_STATE on timeout. */
tp_status tp_live_call(int sock, uint16_t type, const char *text, int fd, tp_live_msg *reply,
                       int timeout_ms);

/* Copies the value of `key` in "key=value" lines into out (cap bytes, truncated). Returns
 * 1 when found, else 0 (out set to ""). */
int tp_live_get(const char *text, const char *key, char *out, size_t cap);

/* The value of `key` as a number; `dflt` when absent or not a number. */
double tp_live_get_num(const char *text, const char *key, double dflt);

#endif
