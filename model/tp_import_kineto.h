/* tp_import_kineto: PyTorch-profiler (Kineto) Chrome-trace JSON -> tp_model.
 *
 * Streams the file through zlib (plain or gzip, detected by content) into yajl, so memory
 * depends on the number of events kept, not on the file size; except that a text of 4 MiB to
 * 1 GiB, when two cores are online (TP_IMPORT_THREADS, 1 or 2, overrides), is read whole (gzip
 * inflated by libdeflate) and its traceEvents array parsed by two threads, with the same
 * result as the serial parse. One file is one rank.
 * Follows HTA's admission rule (an event becomes a row when it has `dur` and `cat`, except
 * cat "Trace") and its stream rule (int(args.stream), -1 when absent or not an integer);
 * "[memory]" instant events become memory events. Timestamps in µs, integer or decimal, are
 * converted exactly to integer ns. Handles the current category names, the 2021 ones
 * (Kernel, Memcpy, Memset, Runtime, Operator) and ROCm traces.
 *
 * On bad input (not JSON, truncated gzip or JSON, wrong types, absurd numbers, invalid
 * UTF-8, an empty file, no traceEvents) it returns an error with its position (line, column
 * and byte offset in the decompressed text, the event it is in) as a tp_load_error, or as
 * that error's one line; the model is left as it was (the partial rank is removed). It never
 * crashes, prints or exits. */
#ifndef TP_IMPORT_KINETO_H
#define TP_IMPORT_KINETO_H

#include <stddef.h>
#include <stdint.h>

#include "tp_load_error.h"
#include "tp_model.h"
#include "tp_status.h"

/* Imports `path` as one new rank of `m`. Returns TP_OK, TP_ERR_OPEN, TP_ERR_EMPTY,
 * TP_ERR_TRUNCATED or TP_ERR_PARSE; *e (always set) holds the error's parts. */
tp_status tp_import_kineto_load(tp_model *m, const char *path, tp_load_error *e);

/* The same with the error as one line ("FILE:LINE:COL: byte N: ...") in `err` (err_len
 * bytes; NULL or 0: not wanted). */
tp_status tp_import_kineto_file(tp_model *m, const char *path, char *err, size_t err_len);

/* Same over `len` bytes of JSON or gzip'ed JSON at `data`; `name` labels the rank and errors. */
tp_status tp_import_kineto_mem(tp_model *m, const char *name, const void *data, size_t len,
                               char *err, size_t err_len);

/* tp_import_kineto_mem with the parser chosen: `walker` 0 reads with yajl alone (the import
 * before simdjson), 1 walks the traceEvents array with simdjson in pieces of `piece` bytes,
 * 2 the same with a helper thread walking beside this one (what the import does with two cores)
 * (0: the default, 1 MiB; tests use a few bytes so that every event boundary is a piece's)
 * where the CPU can (tp_json_walk_usable). *walked (NULL: not wanted) is set to the number of
 * pieces the walker read; the model, string ids and errors are the same either way. */
tp_status tp_import_kineto_mem_parser(tp_model *m, const char *name, const void *data, size_t len,
                                      int walker, size_t piece, uint64_t *walked, char *err,
                                      size_t err_len);

/* tp_import_kineto_mem with the traceEvents array parsed by two threads when the text (a
 * gzip image inflated whole) is at least `split_min` bytes, as tp_import_kineto_load does for
 * files of 4 MiB or more (TP_IMPORT_THREADS=1 turns that off). The model, its string ids and
 * errors are those of the serial parse: tests and the fuzz target compare the two. *split
 * (NULL: not wanted) is set to 1 when the second thread's events were used, 0 when the text
 * was read by one parser (too small, no event boundary found, or a guessed boundary that was
 * none, e.g. inside a string). */
tp_status tp_import_kineto_mem_split(tp_model *m, const char *name, const void *data, size_t len,
                                     size_t split_min, int *split, char *err, size_t err_len);

/* 1 when the first `len` bytes of a file look like Kineto JSON or gzip ('{' or '[' after
 * optional whitespace, only whitespace, or 1f 8b); used by tp_load to pick a loader. */
int tp_import_kineto_sniff(const void *head, size_t len);

#endif
