/* tp_doctor: checks a machine's CUDA stack for `trainprof doctor`: which NVIDIA driver, GPUs,
 * CUDA runtime, CUPTI, cuDNN and NCCL are installed (found by file, never loaded), what the
 * installed framework (PyTorch) was built for, the CPUs a process may use (cores, affinity,
 * cgroup quota), and whether they fit together: a runtime needs
 * a minimum driver (cudaErrorInsufficientDriver), the toolkit's stub libcuda is not a driver
 * (cudaErrorStubLibrary), PyTorch needs a cuDNN of its major (and at least its minor), CUPTI
 * has one subscriber per process. Each finding says what is wrong and what to do.
 *
 * Two steps, so the checks are tested without this machine's real state: tp_doctor_probe
 * fills tp_doctor_facts from a filesystem root and library folders (tests point both at a
 * temporary tree of fake files), and tp_doctor_check judges facts with a table of rules (pure).
 * The framework's facts come from the caller (the CLI runs Python; tests fill them in). */
#ifndef TP_DOCTOR_H
#define TP_DOCTOR_H

#include <stddef.h>

#include "tp_sysinfo.h"

#define TP_DOCTOR_MAX_DIRS 32
#define TP_DOCTOR_MAX_GPUS 16

typedef struct {
    const char *root;                         /* prefix for /proc and default folders */
    const char *lib_dirs[TP_DOCTOR_MAX_DIRS]; /* extra folders to search, first first */
    size_t n_lib_dirs;
    int no_default_dirs;         /* 1: only lib_dirs (and LD_LIBRARY_PATH) */
    const char *ld_library_path; /* the variable's value; NULL: none */
    const char *cuda_injection;  /* CUDA_INJECTION64_PATH; NULL: none */
} tp_doctor_opts;

/* One library found: its path and the version its file name (or its folder) gives. */
typedef struct {
    char path[1024]; /* "" when not found */
    char version[64];
    int major;      /* first number of `version`; 0 unknown */
    int stub;       /* libcuda only: found in a stubs/ folder */
    int on_ld_path; /* found in a LD_LIBRARY_PATH folder (what a process loads first) */
} tp_doctor_lib;

typedef enum {
    TP_DLIB_CUDA,
    TP_DLIB_CUDART,
    TP_DLIB_CUPTI,
    TP_DLIB_CUDNN,
    TP_DLIB_NCCL,
    TP_DLIB_COUNT
} tp_doctor_lib_id;

typedef struct {
    char driver[64]; /* the kernel module's version; "" none loaded */
    int n_gpus;
    tp_sysinfo_gpu gpus[TP_DOCTOR_MAX_GPUS];
    tp_doctor_lib lib[TP_DLIB_COUNT];
    tp_doctor_lib stub_cuda; /* a stub libcuda seen anywhere (even when a real one exists) */
    int runtime_cuda;        /* the CUDA runtime's version as 13000; 0 unknown */
    char injection[1024];    /* CUDA_INJECTION64_PATH when it names another library */
    int dcgm_running;        /* nv-hostengine (DCGM) runs: it may hold the profiling counters */
    int cpu_cores;           /* logical CPUs of the machine (/proc/cpuinfo); 0 unknown */
    int cpu_allowed;         /* CPUs in this process's affinity mask; 0 unknown (a fake root) */
    double cpu_quota;        /* its cgroup's CPU quota in CPUs; 0 none */
    /* the framework, filled by the caller */
    int torch_checked;        /* 1: the caller tried to import torch */
    char torch_version[64];   /* "" when it could not be imported */
    char torch_error[256];    /* why not, one line */
    int torch_cuda;           /* torch.version.cuda as 13000; 0 CPU build */
    int torch_cudnn;          /* torch.backends.cudnn.version(): 91002; 0 none */
    int torch_cuda_available; /* torch.cuda.is_available(); -1 unknown */
} tp_doctor_facts;

/* Fills `f` (zeroed first) from the opts' root and folders. Never loads a library. */
void tp_doctor_probe(const tp_doctor_opts *o, tp_doctor_facts *f);

typedef enum { TP_DOC_INFO = 0, TP_DOC_WARN = 1, TP_DOC_ERROR = 2 } tp_doctor_level;

typedef struct {
    const char *id; /* the rule's id: "driver-too-old" */
    tp_doctor_level level;
    char what[3072]; /* what is wrong, with the versions */
    char fix[1024];  /* what to do */
} tp_doctor_finding;

/* Judges `f`; writes up to `cap` findings into out (rule order) and returns how many there
 * are. */
size_t tp_doctor_check(const tp_doctor_facts *f, tp_doctor_finding *out, size_t cap);

/* "info", "warning", "error". */
const char *tp_doctor_level_name(tp_doctor_level l);

/* "9.10.2" from cuDNN's number (91002; 8902 for cuDNN 8). */
void tp_doctor_cudnn_str(int v, char *buf, size_t cap);

/* The CUDA version as 13000 from "13.0" / "13.0.48" / "12"; 0 when not a version. */
int tp_doctor_parse_cuda(const char *s);

#endif
