/* tp_ostream: an output stream for exports, plain or gzip-compressed on several cores.
 *
 * A gzip file may hold several members one after the other, and every gzip reader (gzip -dc,
 * zlib's gzread, Python's gzip module) reads them as one stream. So the compressed stream
 * cuts its input into blocks of 1 MiB, deflates each block into a member of its own
 * (libdeflate) on a pool of worker threads, and writes the members in input order: the
 * decompressed bytes are exactly the bytes written, and compression runs on every core while
 * the caller keeps formatting. The plain stream is a buffered write(2). What it promises:
 * bytes reach the file in the order they were written; the first failure (a write error, out
 * of memory) sticks, later writes do nothing, and close reports it with its errno. */
#ifndef TP_OSTREAM_H
#define TP_OSTREAM_H

#include <stddef.h>

#include "tp_status.h"

typedef struct tp_ostream tp_ostream;

/* Opens a stream over the open file descriptor `fd`, which it owns from now on (closed by
 * tp_ostream_close, also on failure here). `gzip`: compress (gzip members, compression level
 * 6). `threads`: compressing threads, 0 for one per online CPU (at most 16); 1 compresses on
 * the caller's thread. TP_ERR_NOMEM when the buffers or threads cannot be had. */
tp_status tp_ostream_open(tp_ostream **out, int fd, int gzip, int threads);

/* Appends n bytes. Returns the stream's state: TP_OK, or the first failure (sticky). */
tp_status tp_ostream_write(tp_ostream *s, const void *p, size_t n);

/* Writes what is buffered, waits for the compressing threads, closes the descriptor and frees
 * the stream. Returns TP_OK or the first failure, with its errno in *err_no (may be NULL; 0
 * when there is none). NULL is a no-op returning TP_OK. */
tp_status tp_ostream_close(tp_ostream *s, int *err_no);

#endif
