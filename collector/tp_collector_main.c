/* tp_collector_main: the entry points of libtrainprof-collector.so, the only exported
 * symbols (exports.map). Each one starts the collector first, so whichever way the library
 * got into the process (LD_PRELOAD, NVTX_INJECTION64_PATH, CUDA_INJECTION64_PATH, an
 * activity.h client's dlopen) the same singleton records. */
#include <stdint.h>
#include <stdlib.h>

#include <pthread.h>

#include "tp_activity_impl.h"
#include "tp_collector.h"
#include "tp_collector_env.h"
#include "tp_collector_guard.h"
#include "tp_collector_interpose.h"
#include "tp_live.h"
#include "tp_sampler.h"
#include "tp_nvtx_hooks.h"
#if TP_HAVE_CUPTI
#include "tp_cupti.h"
#endif

#define TP_EXPORT __attribute__((visibility("default")))

TP_EXPORT int InitializeInjection(void);
TP_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table);
TP_EXPORT int InitializeInjectionNvtxExtension(nvtxExtModuleInfo_t *info);
TP_EXPORT const tp_activity_table *tp_activity_get_table(uint32_t version);

/* The core's clients, once per image, before anything can start the collector (an entry
 * point may be called before our constructor when another library's constructor uses NVTX). */
static pthread_once_t g_setup = PTHREAD_ONCE_INIT;

static void setup(void) {
    tp_interpose_init();
    tp_nvtx_register();
    tp_guard_register();
    tp_live_register();
    tp_sampler_register();
#if TP_HAVE_CUPTI
    tp_cupti_register();
#endif
    tp_env_register();
}

static void start(void) {
    pthread_once(&g_setup, setup);
    tp_collector_start(NULL);
}

/* Called by the CUDA driver inside cuInit. Never fails the application. */
int InitializeInjection(void) {
    start();
#if TP_HAVE_CUPTI
    return tp_cupti_start();
#else
    tp_collector_cuda_off(tp_g.cfg.no_cuda ? "--no-cuda" : "collector built without CUDA");
    return 1;
#endif
}

/* Called once per NVTX instance (each DSO using the NVTX v3 headers). */
int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
    start();
    return tp_nvtx_init_core(get_export_table);
}

int InitializeInjectionNvtxExtension(nvtxExtModuleInfo_t *info) {
    start();
    return tp_nvtx_init_ext(info);
}

const tp_activity_table *tp_activity_get_table(uint32_t version) {
    start();
    return tp_activity_impl_table(version);
}

/* LD_PRELOAD: start before main so a program that never calls NVTX or CUDA still gets a
 * trace with its process metadata (other processes of the run start at their first event). */
__attribute__((constructor)) static void collector_load(void) {
    pthread_once(&g_setup, setup);
    tp_collector_load();
}

__attribute__((destructor)) static void collector_unload(void) {
    tp_collector_finish();
}
