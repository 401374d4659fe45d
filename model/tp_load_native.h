/* tp_load_native: a .tprof trace (traces/tp_reader.h) -> one rank of a tp_model.
 *
 * GPU activity (KERNEL, MEMCPY, MEMSET, SYNC) becomes GPU-side rows with their stream (pid =
 * device, tid = stream, as Kineto lays them out); API records become CUDA_RUNTIME or
 * CUDA_DRIVER rows, device-API launches (TP_API_DEVICE) count as runtime launches
 * (TP_EVF_LAUNCH) and keep their name; NVTX push/pop and start/end pair into USER_ANNOTATION
 * rows (ranges still open at the end close at the trace's last timestamp); DEVICE_MEM, HEAP,
 * REGION and ALLOC_FAIL become memory events. Copies get Kineto-style names ("Memcpy HtoD
 * (Pageable -> Device)") so name-based analyses treat both sources alike. */
#ifndef TP_LOAD_NATIVE_H
#define TP_LOAD_NATIVE_H

#include <stddef.h>
#include <stdint.h>

#include "tp_load_error.h"
#include "tp_model.h"
#include "tp_status.h"

/* 1 when the first `len` bytes of a file are (a prefix of) a .tprof file's magic; used by
 * tp_load to pick a loader. */
int tp_load_native_sniff(const void *head, size_t len);

/* Loads `path` as a new rank of `m`. On error the model is unchanged and *e (always set)
 * holds the reason. Damage the reader could skip is not an error: TP_OK, with the damage
 * as the note in e->reason ("" otherwise). */
tp_status tp_load_native_load(tp_model *m, const char *path, tp_load_error *e);

/* The same for the data records of [t0, t1) only (t1 > t0; every metadata record): a window of
 * a trace, still being written or not, as the live client takes the job's other processes'
 * (tp_load_live_window); chunks outside it are skipped unread. */
tp_status tp_load_native_window(tp_model *m, const char *path, uint64_t t0, uint64_t t1,
                                tp_load_error *e);

/* The same with the error or note as one line ("FILE: reason") in `err` ("" when none; NULL
 * or 0: not wanted). */
tp_status tp_load_native_file(tp_model *m, const char *path, char *err, size_t err_len);

/* Same over an in-memory image (tests, fuzzing); `name` labels the rank. */
tp_status tp_load_native_mem(tp_model *m, const char *name, const void *data, size_t size,
                             char *err, size_t err_len);

#endif
