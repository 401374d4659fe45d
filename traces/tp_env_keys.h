/* tp_env_keys: the keys of ENV records (trace format 1.4) that trainprof writes and shows,
 * one table, so the collector that writes them, the loaders that fill the model from them (or
 * from a Kineto trace's metadata), `trainprof info` and the report all spell and order them
 * alike. Readers keep keys they do not know; these are the ones with a label.
 *
 * Also the table of environment variables worth keeping (stored as "env.NAME"): the ones
 * that change what a GPU training job does (CUDA_LAUNCH_BLOCKING, PYTORCH_CUDA_ALLOC_CONF,
 * ...), never the whole environment, which may hold secrets. */
#ifndef TP_ENV_KEYS_H
#define TP_ENV_KEYS_H

#include <stddef.h>

#include "tp_reader.h"
#include "tp_record.h"

/* X(ID, key, label, per_gpu): in display order. */
#define TP_ENV_KEY_TABLE(X)                                                                        \
    X(HOST, "host", "host", 0)                                                                     \
    X(OS, "os", "OS", 0)                                                                           \
    X(CPU_MODEL, "cpu.model", "CPU", 0)                                                            \
    X(CPU_CORES, "cpu.cores", "CPU cores", 0)                                                      \
    X(CPU_ALLOWED, "cpu.allowed", "CPUs allowed", 0)                                               \
    X(CPU_QUOTA, "cpu.quota", "CPU quota (cgroup)", 0)                                             \
    X(DRIVER, "cuda.driver", "NVIDIA driver", 0)                                                   \
    X(DRIVER_API, "cuda.driver_api", "driver CUDA API", 0)                                         \
    X(RUNTIME, "cuda.runtime", "CUDA runtime", 0)                                                  \
    X(CUPTI, "cupti", "CUPTI", 0)                                                                  \
    X(CUDNN, "cudnn", "cuDNN", 0)                                                                  \
    X(NCCL, "nccl", "NCCL", 0)                                                                     \
    X(PYTHON, "python", "Python", 0)                                                               \
    X(TORCH, "torch", "PyTorch", 0)                                                                \
    X(TORCH_CUDA, "torch.cuda", "PyTorch built for CUDA", 0)                                       \
    X(DIST_BACKEND, "dist.backend", "distributed backend", 0)                                      \
    X(DIST_WORLD, "dist.world_size", "world size", 0)                                              \
    X(SAMPLED, "sample.threads", "sampled threads", 0)                                             \
    X(GPU_NAME, "gpu.name", "name", 1)                                                             \
    X(GPU_SMS, "gpu.sms", "SMs", 1)                                                                \
    X(GPU_CC, "gpu.cc", "compute capability", 1)                                                   \
    X(GPU_MEMORY, "gpu.memory", "memory bytes", 1)                                                 \
    X(GPU_CLOCK, "gpu.clock_mhz", "SM clock MHz", 1)                                               \
    X(GPU_MEM_CLOCK, "gpu.mem_clock_mhz", "memory clock MHz", 1)                                   \
    X(GPU_PCI, "gpu.pci", "PCI", 1)                                                                \
    X(GPU_SOURCE, "gpu.source", "from", 1)

typedef enum {
#define TP_ENVK_ENUM(id, key, label, per_gpu) TP_ENVK_##id,
    TP_ENV_KEY_TABLE(TP_ENVK_ENUM)
#undef TP_ENVK_ENUM
        TP_ENVK_COUNT
} tp_env_key;

typedef struct {
    const char *key;   /* "cuda.driver" */
    const char *label; /* "NVIDIA driver" */
    int per_gpu;       /* 1: recorded per GPU (the record's device is its ordinal) */
} tp_env_key_info;

/* The row of `k` (k < TP_ENVK_COUNT). */
const tp_env_key_info *tp_env_key_get(tp_env_key k);

/* The key's string, as the records spell it. */
#define tp_env_key_str(k) (tp_env_key_get(k)->key)

/* Key prefix of environment variables: "env.CUDA_LAUNCH_BLOCKING". */
#define TP_ENV_VAR_PREFIX "env."

/* 1 when variable `name` (`len` bytes) is one trainprof records: CUDA_VISIBLE_DEVICES,
 * CUDA_LAUNCH_BLOCKING, PYTORCH_CUDA_ALLOC_CONF, OMP_NUM_THREADS, NCCL_* and a few more
 * (tp_env_keys.c lists them). */
int tp_env_var_wanted(const char *name, size_t len);

/* 1 when ENV record `h` of reader `r` (one of tp_reader_meta's) is replaced by a later one
 * with the same key and device (the latest wins), so consumers show each fact once. */
int tp_env_superseded(const tp_reader *r, const tp_rec_hdr *h);

#endif
