/* tp_nvtx_hooks: the collector's NVTX v3 tool side.
 *
 * tp_nvtx_init_core fills every CORE and CORE2 callback slot of one NVTX instance (each DSO
 * that uses the header-only NVTX has its own instance; all share this collector and its
 * domain table, deduplicated by name). tp_nvtx_init_ext fills the memory extension (heaps
 * and regions, each with the calling stack). Handles we return: a domain handle is its id,
 * a registered-string handle is its string id, so neither needs memory. Messages are ASCII,
 * registered or wide (stored as UTF-8). With --capture nvtx:NAME a range of that name opens
 * the capture and its end closes it; pops are recorded exactly when their push was, so
 * traces always nest. */
#ifndef TP_NVTX_HOOKS_H
#define TP_NVTX_HOOKS_H

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtMem.h>
#undef NVTX_NO_IMPL

/* InitializeInjectionNvtx2 body: 1 on success, 0 to make NVTX unload us. */
int tp_nvtx_init_core(NvtxGetExportTableFunc_t get_export_table);

/* InitializeInjectionNvtxExtension body: hooks the memory extension, declines others. */
int tp_nvtx_init_ext(nvtxExtModuleInfo_t *info);

/* Registers the NVTX side as a collector client: at every start it writes the DOMAIN
 * records of the domains created so far (a fork child's new trace: the program still holds
 * the handles); in a fork child it re-initialises the domain table's lock. Once, before the
 * collector starts. */
void tp_nvtx_register(void);

/* For `record --pytorch`'s start-up file (collector/python/sitecustomize.py), through the
 * library's trainprof_* exports (tp_collector_pyapi.c): a push and a pop of the calling
 * thread, as nvtxRangePushA and nvtxRangePop make them (they nest with the program's own; the
 * push records its calling stack under --stacks api, the default, as a CUDA call does), and
 * a range of the calling thread from `t0` (the trace clock, tp_collector_now, read when it
 * began) to now, written as it ends: a START at t0 and its END, for a range known to be one
 * only at its end (a training step, ended by the optimizer's update). Written when recording
 * is on at its end; under --idle a step range counts as a step there. */
int tp_nvtx_push(const char *name);
int tp_nvtx_pop(void);
void tp_nvtx_range_since(const char *name, uint64_t t0);

/* Converts a wide string to UTF-8 into `out` (always NUL-terminated, cut at a character
 * boundary when it does not fit). Returns the byte length written. */
size_t tp_nvtx_wide_to_utf8(const wchar_t *w, char *out, size_t cap);

#endif
