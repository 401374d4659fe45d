/* tp_cuda_standin: a STAND-IN for libcuda.so.1, for tests only (not a driver). Its cuInit
 * does the one thing of the real driver's the collector relies on: it loads the library named
 * by CUDA_INJECTION64_PATH and calls its InitializeInjection, once. TP_STANDIN_NO_INJECTION=1
 * makes it a driver that ignores the variable (an old driver, a sandbox). */
#include <dlfcn.h>
#include <stdlib.h>

#include <cuda.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT CUresult CUDAAPI cuInit(unsigned int flags) {
    static int done;
    (void)flags;
    if (done++)
        return CUDA_SUCCESS;
    const char *path = getenv("CUDA_INJECTION64_PATH");
    const char *no = getenv("TP_STANDIN_NO_INJECTION");
    if (!path || !*path || (no && *no == '1'))
        return CUDA_SUCCESS;
    void *h = dlopen(path, RTLD_NOW);
    int (*init)(void) = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;
    return init && init() == 1 ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}
