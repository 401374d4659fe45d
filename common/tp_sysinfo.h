/* tp_sysinfo: facts about this machine read from files, for the collector (the environment a
 * trace was recorded in) and `trainprof doctor`: CPU model and cores, the NVIDIA kernel
 * module's version and its GPUs from /proc/driver/nvidia, versions from library file names,
 * and the CUDA compatibility table (which driver a CUDA runtime needs).
 *
 * Every reader takes a `root` prefix ("" or NULL: the real filesystem) so tests point it at
 * a folder of fake /proc files. Nothing allocates; nothing loads a library or runs a program,
 * so the collector may call any of it from inside a training process. */
#ifndef TP_SYSINFO_H
#define TP_SYSINFO_H

#include <stddef.h>

/* The CPU's model name (first "model name" of ROOT/proc/cpuinfo) into `model` and the number
 * of logical CPUs into *cores. Returns 0, or -1 when the file could not be read. */
int tp_sysinfo_cpu(const char *root, char *model, size_t cap, int *cores);

/* How many CPUs this process may run on (its affinity mask: taskset, a cpuset, a scheduler's
 * CPU binding); -1 when it cannot be read. Reads no file, so it takes no root. */
int tp_sysinfo_cpu_allowed(void);

/* The CPU time this process's control group may use, in CPUs (a quota of 200 ms per 100 ms
 * period is 2.0: a container's or a job's CPU limit), into *cpus: the smallest quota of its
 * group and the groups above it, cgroup v2 (cpu.max) or v1 (cpu.cfs_quota_us over
 * cpu.cfs_period_us), as ROOT/proc/self/cgroup names them under ROOT/sys/fs/cgroup. Returns
 * 0, or -1 when no quota limits it (or none could be read). */
int tp_sysinfo_cpu_quota(const char *root, double *cpus);

/* The NVIDIA kernel module's version ("580.95.05") from ROOT/proc/driver/nvidia/version.
 * Returns 0, or -1 when there is no NVIDIA driver loaded (no such file). */
int tp_sysinfo_nvidia_driver(const char *root, char *ver, size_t cap);

/* One GPU as /proc/driver/nvidia/gpus/BUS/information describes it. */
typedef struct {
    char model[128]; /* "NVIDIA H200" */
    char bus[32];    /* "0000:19:00.0" */
    int minor;       /* /dev/nvidiaN; -1 unknown (not necessarily the CUDA ordinal) */
} tp_sysinfo_gpu;

/* Fills up to `cap` GPUs from ROOT/proc/driver/nvidia/gpus, sorted by bus id; returns how
 * many were found (0 without a driver). */
int tp_sysinfo_gpus(const char *root, tp_sysinfo_gpu *out, int cap);

/* The version a library file's name carries after ".so." ("libcuda.so.580.95.05" ->
 * "580.95.05", "libcudnn.so.9" -> "9"); "" when none. `path` may be a full path. */
void tp_sysinfo_so_version(const char *path, char *ver, size_t cap);

/* CUDA version numbers as the APIs give them (13000 = 13.0): "13.0". */
void tp_sysinfo_cuda_version_str(int v, char *buf, size_t cap);

/* What a CUDA runtime needs of the driver (Linux x86_64, from the CUDA Toolkit release notes):
 * `minimum`, the oldest driver that runs it at all (minor-version compatibility: every 12.x
 * runs on >= 525.60.13, every 13.x on >= 580), and `toolkit`, the driver its toolkit shipped
 * with: older drivers run it but cannot JIT its PTX (cudaErrorUnsupportedPtxVersion) and lack
 * its newer features. */
typedef struct {
    int cuda;            /* 13000 = 13.0 */
    const char *minimum; /* "580.65.06" */
    const char *toolkit; /* "580.65.06" */
} tp_cuda_driver_req;

/* The requirement row for runtime `cuda_version` (the newest row not newer than it, within
 * its major); NULL when the runtime is older than 10.0 or unknown. */
const tp_cuda_driver_req *tp_sysinfo_driver_req(int cuda_version);

/* Compares dotted versions numerically ("580.95.05" vs "575.57.08"): <0, 0, >0. */
int tp_sysinfo_version_cmp(const char *a, const char *b);

#endif
