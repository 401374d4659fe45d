/* tp_kineto_names: the names PyTorch's profiler (Kineto) gives GPU copies, memsets and
 * synchronizations, defined once for all of trainprof.
 *
 * The model's native loader names its rows with them, so analyses that go by name (HTA's
 * memory-kernel types, the kernel-type classes) treat a .tprof trace and a Kineto trace
 * alike; the Chrome export writes them, so an export re-imports to the same report; the
 * Kineto importer reads the kinds back out of them. The kinds are the tp_copy_kind,
 * tp_mem_kind and tp_sync_type values of tp_record.h; values outside those enums read as
 * "Unknown" (copies, memory) or "Unknown Sync". All strings are static. */
#ifndef TP_KINETO_NAMES_H
#define TP_KINETO_NAMES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The first word of every copy's and every memset's name ("Memcpy HtoD (...)"). Macros, so
 * tables of name patterns can hold them. */
#define TP_KINETO_MEMCPY "Memcpy"
#define TP_KINETO_MEMSET "Memset"

/* 1 when `name` starts as a copy's / a memset's name does (HTA's test for memory kernels). */
static inline int tp_kineto_is_memcpy(const char *name) {
    return strncmp(name, TP_KINETO_MEMCPY, sizeof TP_KINETO_MEMCPY - 1) == 0;
}
static inline int tp_kineto_is_memset(const char *name) {
    return strncmp(name, TP_KINETO_MEMSET, sizeof TP_KINETO_MEMSET - 1) == 0;
}

/* The length of runtime API name `s` (n bytes) as Kineto and the CUDA docs write it:
 * cuptiGetCallbackName says "cudaLaunchKernel_v7000", Kineto "cudaLaunchKernel". Only names
 * starting "cuda" and ending "_v" and 4+ digits are cut: the driver API's "_v2" is part of
 * its symbols' names (cuMemAlloc_v2). The collector cuts them as it records; the native
 * loader cuts them on load, for traces recorded before (the first GPU run's). */
size_t tp_kineto_api_name_len(const char *s, size_t n);

/* Names of CUPTI synchronization records, by tp_sync_type. */
#define TP_KINETO_SYNC_UNKNOWN "Unknown Sync"
#define TP_KINETO_SYNC_EVENT "Event Sync"
#define TP_KINETO_SYNC_STREAM_WAIT_EVENT "Stream Wait Event"
#define TP_KINETO_SYNC_STREAM "Stream Sync"
#define TP_KINETO_SYNC_CONTEXT "Context Sync"

/* Room for any name built below, NUL included. */
#define TP_KINETO_NAME_MAX 64

/* "HtoD", "DtoH", "PtoP", ... by tp_copy_kind. */
const char *tp_copy_kind_name(unsigned kind);

/* "Pageable", "Pinned", "Device", "Managed Static", ... by tp_mem_kind. */
const char *tp_mem_kind_name(unsigned kind);

/* "Event Sync", "Stream Wait Event", ... by tp_sync_type. */
const char *tp_sync_type_name(unsigned type);

/* Writes "Memcpy HtoD (Pageable -> Device)" into buf (n bytes, TP_KINETO_NAME_MAX is always
 * enough) and returns buf. */
const char *tp_kineto_memcpy_name(char *buf, size_t n, unsigned copy_kind, unsigned src_kind,
                                  unsigned dst_kind);

/* Writes "Memset (Device)" into buf and returns buf. */
const char *tp_kineto_memset_name(char *buf, size_t n, unsigned mem_kind);

/* The kinds a copy's or memset's name spells: "Memcpy HtoD (Pageable -> Device)" gives
 * HTOD, PAGEABLE, DEVICE; "Memset (Device)" gives src = dst = DEVICE. Kinds the name does
 * not spell, or spells in a way not above (ROCm's "Host"), come out as 0 (unknown). */
void tp_kineto_parse_copy_name(const char *name, uint8_t *copy_kind, uint8_t *src_kind,
                               uint8_t *dst_kind);

#endif
