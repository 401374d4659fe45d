/* tp_an_memory: copy and memset throughput.
 *
 * Bandwidth summary (HTA's get_memory_bw_summary): per memory-op type ("Memcpy HtoD",
 * "Memcpy DtoH", "Memcpy DtoD", "Memset", ...), the concurrent bandwidth is a step function
 * (+bw at each op's start, -bw at its end); the summary describes its positive values.
 * compat_hta takes bw from Kineto's "memory bandwidth (GB/s)" argument and stretches 0-length
 * ops to 1 µs like HTA; native mode uses bytes / duration and skips 0-length ops.
 * Copy statistics: per copy kind and source memory kind (pageable vs pinned): count, bytes,
 * busy time and the resulting GB/s. */
#ifndef TP_AN_MEMORY_H
#define TP_AN_MEMORY_H

#include "tp_an_stats.h"
#include "tp_an_view.h"

typedef struct {
    char type[16];       /* "Memcpy HtoD", "Memset", "Memcpy Unknown" */
    tp_an_describe_t bw; /* GB/s */
} tp_an_membw;

#define TP_AN_MEMSET_KIND 255 /* copy_kind value used for memset rows */

typedef struct {
    uint8_t copy_kind; /* tp_copy_kind, or TP_AN_MEMSET_KIND */
    uint8_t src_kind;  /* tp_mem_kind of the source (memset: target) */
    size_t count;
    int64_t bytes, dur_ns; /* totals (rows without a byte count are left out of bytes) */
    double gbps;           /* bytes / dur_ns: bytes per ns == GB/s */
    double max_gbps;       /* fastest single op */
} tp_an_copy;

typedef struct {
    size_t n_bw;
    tp_an_membw *bw; /* by type name */
    size_t n_copy;
    tp_an_copy *copy; /* by copy kind, then source kind */
} tp_an_memory;

/* Runs the analysis over view `v` and fills `out` (overwritten; it owns its arrays until
 * tp_an_memory_free). Aborts on out of memory, like the rest of the analyzer. */
void tp_an_memory_run(const tp_an_view *v, tp_an_memory *out);
/* Frees what `out` owns and zeroes it; NULL is a no-op. */
void tp_an_memory_free(tp_an_memory *out);

/* "HtoD", "DtoH", ..., "Memset" */
const char *tp_an_copy_kind_name(uint8_t copy_kind);
/* "pageable", "pinned", "device", ... */
const char *tp_an_mem_kind_name(uint8_t mem_kind);

#endif
