/* tp_an_env: the environment a rank was recorded in (tp_rank.env: the collector's ENV records
 * or a Kineto trace's metadata), read for the report, the TUI and the diagnosis: which GPUs,
 * one line per GPU, and the settings that change what a finding means (CUDA_LAUNCH_BLOCKING,
 * the caching allocator's expandable_segments). One reading for every front end. */
#ifndef TP_AN_ENV_H
#define TP_AN_ENV_H

#include <stddef.h>
#include <stdint.h>

#include "tp_model.h"

/* The GPU ordinals `r` has facts about, ascending, into out[cap]; returns how many there are
 * (possibly more than cap). */
size_t tp_an_env_gpus(const tp_rank *r, int32_t *out, size_t cap);

/* One line for GPU `dev`: "NVIDIA H200, 132 SMs, cc 9.0, 139.8 GiB, 1980 MHz, PCI
 * 0000:19:00.0" (what is known of it). Returns buf. */
const char *tp_an_env_gpu_line(const tp_model *m, const tp_rank *r, int32_t dev, char *buf,
                               size_t n);

/* 1 when the program ran with CUDA_LAUNCH_BLOCKING set to a non-zero value: every kernel launch
 * then waits for the kernel, so synchronous launches are the setting, not the code. */
int tp_an_env_launch_blocking(const tp_model *m, const tp_rank *r);

/* 1 when PyTorch's caching allocator ran with expandable_segments:True (PYTORCH_CUDA_ALLOC_CONF
 * or PYTORCH_ALLOC_CONF): segments grow in place, so fragmentation advice that recommends it
 * must say something else. */
int tp_an_env_expandable_segments(const tp_model *m, const tp_rank *r);

/* The CPUs the rank's process could use: the fewest of the machine's cores, its affinity mask
 * and its control group's quota (cpu.cores, cpu.allowed, cpu.quota), into *cpus, with what
 * bounds it (`what`: "cores", "allowed to the process" or "its cgroup's quota") when not NULL.
 * Returns 0, or -1 when the cores are unknown (a Kineto trace, an older recording). */
int tp_an_env_cpus(const tp_model *m, const tp_rank *r, double *cpus, const char **what);

/* 1 when the rank's sampler read its processes' native threads too (ENV `sample.threads`,
 * written since trace format 1.9): then a run without native samples had none busy, where an
 * older recording could not tell. */
int tp_an_env_samples_native(const tp_model *m, const tp_rank *r);

#endif
