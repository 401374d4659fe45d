/* fake_cudalibs: stand-ins for the CUDA libraries' *version functions only*, built as
 * libcuda.so.580.65.06, libcudart.so.13.0.48, libcudnn.so.9.10.2, libnccl.so.2.27.3,
 * libcupti.so.13.2.20 and a libtorch_python.so (one source, one FAKE_* define each), for
 * test_collector_env: a program loads them and the collector must report exactly these
 * versions and this one GPU. They are not CUDA; nothing here launches or allocates anything. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

#ifdef FAKE_CUDA
EXPORT int cuDriverGetVersion(int *v);
EXPORT int cuDeviceGetCount(int *n);
EXPORT int cuDeviceGet(int *dev, int ordinal);
EXPORT int cuDeviceGetName(char *name, int len, int dev);
EXPORT int cuDeviceTotalMem_v2(size_t *bytes, int dev);
EXPORT int cuDeviceGetAttribute(int *v, int attr, int dev);
EXPORT int cuDeviceGetPCIBusId(char *bus, int len, int dev);

int cuDriverGetVersion(int *v) {
    *v = 13000;
    return 0;
}
int cuDeviceGetCount(int *n) {
    *n = 1;
    return 0;
}
int cuDeviceGet(int *dev, int ordinal) {
    *dev = ordinal;
    return ordinal == 0 ? 0 : 101; /* CUDA_ERROR_INVALID_DEVICE */
}
int cuDeviceGetName(char *name, int len, int dev) {
    (void)dev;
    strncpy(name, "Fake GPU H200", (size_t)len);
    return 0;
}
int cuDeviceTotalMem_v2(size_t *bytes, int dev) {
    (void)dev;
    *bytes = (size_t)150000000000ull;
    return 0;
}
int cuDeviceGetAttribute(int *v, int attr, int dev) {
    (void)dev;
    switch (attr) {
    case 13: /* CU_DEVICE_ATTRIBUTE_CLOCK_RATE, kHz */
        *v = 1980000;
        return 0;
    case 16: /* MULTIPROCESSOR_COUNT */
        *v = 132;
        return 0;
    case 36: /* MEMORY_CLOCK_RATE, kHz */
        *v = 3201000;
        return 0;
    case 75: /* COMPUTE_CAPABILITY_MAJOR */
        *v = 9;
        return 0;
    case 76:
        *v = 0;
        return 0;
    default:
        return 1; /* CUDA_ERROR_INVALID_VALUE */
    }
}
int cuDeviceGetPCIBusId(char *bus, int len, int dev) {
    (void)dev;
    strncpy(bus, "0000:19:00.0", (size_t)len);
    return 0;
}
#endif

#ifdef FAKE_CUDART
EXPORT int cudaRuntimeGetVersion(int *v);
int cudaRuntimeGetVersion(int *v) {
    *v = 13000;
    return 0;
}
#endif

#ifdef FAKE_CUDNN
EXPORT size_t cudnnGetVersion(void);
size_t cudnnGetVersion(void) {
    return 91002; /* 9.10.2 */
}
#endif

#ifdef FAKE_NCCL
EXPORT int ncclGetVersion(int *v);
int ncclGetVersion(int *v) {
    *v = 22703; /* 2.27.3 */
    return 0;
}
#endif

#ifdef FAKE_CUPTI
/* PyPI's libcupti for CUDA 13.2 overflows its stack in cuptiGetVersion when no driver is
 * loaded (seen with torch 2.15+cu132 on a machine without a GPU): a program that merely loads
 * it must not be crashed by the collector asking for its version. */
EXPORT int cuptiGetVersion(unsigned *v);
int cuptiGetVersion(unsigned *v) {
    (void)v;
    abort();
}
#endif

#ifdef FAKE_TORCH
EXPORT int fake_torch_python(void);
int fake_torch_python(void) {
    return 1;
}
#endif
