/* tp_collector_env: writes the environment a trace is recorded in as ENV records (trace
 * format 1.4; keys in traces/tp_env_keys.h): host, OS, CPU, selected environment variables,
 * and the versions of the CUDA driver, runtime, CUPTI, cuDNN and NCCL *as loaded* into the
 * process, each GPU (from the driver API when the program has initialised it, else from
 * /proc/driver/nvidia), and the Python and PyTorch versions of a Python program.
 *
 * It never loads a library (dlopen with RTLD_NOLOAD only: asking a non-CUDA process for CUDA
 * versions must not bring CUDA in), never initialises the driver (GPUs come from the driver
 * API only when cuDeviceGetCount already works) and never runs Python code (Py_GetVersion is
 * a C function returning a constant; PyTorch's version is read from torch/version.py next to
 * the loaded libtorch_python.so). What is known at start is written then; everything again
 * before the trace closes, when the program has loaded what it uses (the latest record of a
 * key wins). */
#ifndef TP_COLLECTOR_ENV_H
#define TP_COLLECTOR_ENV_H

#include "tp_env_keys.h"

/* Registers the environment writer as a collector client (once per image). */
void tp_env_register(void);

/* Writes the loaded libraries' versions and the GPUs now. CUPTI's exit handler calls it while
 * the driver is still up (after CUDA's teardown it answers CUDA_ERROR_DEINITIALIZED, and the
 * GPUs' SMs, capability and memory were lost on the first GPU run); the look before the trace
 * closes then keeps every answer found here. */
void tp_env_write_loaded(void);

/* Writes one ENV fact of the process (key `k`, a non-empty value) into the trace: for the
 * collector's clients that know one (the sampler: which threads it reads). */
void tp_env_put(tp_env_key k, const char *value);

#endif
