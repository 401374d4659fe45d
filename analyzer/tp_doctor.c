/* tp_doctor: the machine's CUDA stack, found by file and judged by a table of rules (see
 * tp_doctor.h). */
#include "tp_doctor.h"

#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ finding libraries */

static const char *const lib_prefix[TP_DLIB_COUNT] = {"libcuda.so", "libcudart.so", "libcupti.so",
                                                      "libcudnn.so", "libnccl.so"};

/* Folders a dynamic loader or a CUDA install uses, below the root; "*" expands to every
 * /usr/local/cuda-X.Y. */
static const char *const default_dirs[] = {
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/cuda/lib64",
    "/usr/local/cuda/lib",
    "/usr/local/cuda/targets/x86_64-linux/lib",
    "/usr/local/cuda/extras/CUPTI/lib64",
    "/usr/local/cuda/lib64/stubs",
    "/usr/local/cuda/targets/x86_64-linux/lib/stubs",
    "*/lib64",
    "*/lib",
    "*/lib64/stubs",
};

/* The value of `#define NAME <number>` in a header; 0 when absent. */
static long header_define(const char *path, const char *name) {
    FILE *f = fopen(path, "re");
    char line[512];
    long v = 0;
    size_t n = strlen(name);
    while (f && !v && fgets(line, sizeof line, f)) {
        const char *p = line + strspn(line, " \t");
        if (strncmp(p, "#define", 7))
            continue;
        p += 7 + strspn(p + 7, " \t");
        if (!strncmp(p, name, n) && (p[n] == ' ' || p[n] == '\t'))
            v = strtol(p + n, NULL, 10);
    }
    if (f)
        fclose(f);
    return v;
}

/* A library whose file name gives only the major (libcudart.so.13): the toolkit's header
 * next to it (DIR/../include) says the rest. */
static void version_from_headers(tp_doctor_lib_id id, const char *dir, char *ver, size_t cap) {
    char h[PATH_MAX];
    long v;
    if (id == TP_DLIB_CUDART) {
        snprintf(h, sizeof h, "%s/../include/cuda_runtime_api.h", dir);
        if ((v = header_define(h, "CUDART_VERSION")) > 0)
            snprintf(ver, cap, "%ld.%ld", v / 1000, v % 1000 / 10);
    } else if (id == TP_DLIB_CUDNN) {
        snprintf(h, sizeof h, "%s/../include/cudnn_version.h", dir);
        long ma = header_define(h, "CUDNN_MAJOR"), mi = header_define(h, "CUDNN_MINOR");
        if (ma > 0)
            snprintf(ver, cap, "%ld.%ld.%ld", ma, mi, header_define(h, "CUDNN_PATCHLEVEL"));
    }
}

/* Dots in a version string: more means more precise. */
static int precision(const char *v) {
    int n = 0;
    for (; *v; v++)
        n += *v == '.';
    return n;
}

/* Considers DIR/NAME for library `id`: its real file's version; keeps it when better than
 * what `cand` holds (more precise, then newer). */
static void consider(tp_doctor_lib_id id, const char *dir, const char *name, tp_doctor_lib *cand) {
    size_t k = strlen(lib_prefix[id]);
    if (strncmp(name, lib_prefix[id], k) ||
        (name[k] && (name[k] != '.' || !isdigit((unsigned char)name[k + 1]))))
        return;
    char path[PATH_MAX], real[PATH_MAX], ver[64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    tp_sysinfo_so_version(realpath(path, real) ? real : path, ver, sizeof ver);
    if (!strchr(ver, '.'))
        version_from_headers(id, dir, ver, sizeof ver);
    if (cand->path[0] && (precision(ver) < precision(cand->version) ||
                          (precision(ver) == precision(cand->version) &&
                           tp_sysinfo_version_cmp(ver, cand->version) <= 0)))
        return;
    snprintf(cand->path, sizeof cand->path, "%.1000s", path);
    snprintf(cand->version, sizeof cand->version, "%s", ver);
    cand->major = atoi(ver);
}

static int is_stub_dir(const char *dir) {
    size_t n = strlen(dir);
    while (n && dir[n - 1] == '/')
        n--;
    return n >= 6 && !strncmp(dir + n - 6, "/stubs", 6);
}

/* Looks in one folder; the first folder holding a library wins (search order). */
static void scan_dir(tp_doctor_facts *f, const char *dir, int on_ld) {
    DIR *d = opendir(dir);
    if (!d)
        return;
    tp_doctor_lib cand[TP_DLIB_COUNT];
    memset(cand, 0, sizeof cand);
    struct dirent *e;
    while ((e = readdir(d)))
        for (int i = 0; i < TP_DLIB_COUNT; i++)
            consider((tp_doctor_lib_id)i, dir, e->d_name, &cand[i]);
    closedir(d);
    int stub = is_stub_dir(dir);
    for (int i = 0; i < TP_DLIB_COUNT; i++) {
        if (!cand[i].path[0])
            continue;
        cand[i].on_ld_path = on_ld;
        cand[i].stub = i == TP_DLIB_CUDA && stub;
        if (cand[i].stub && !f->stub_cuda.path[0])
            f->stub_cuda = cand[i];
        /* a stub counts as libcuda only when nothing real is found anywhere (set later) */
        if (!f->lib[i].path[0] && !cand[i].stub)
            f->lib[i] = cand[i];
    }
}

static void scan_expanded(tp_doctor_facts *f, const char *root, const char *pattern) {
    char dir[PATH_MAX];
    if (pattern[0] != '*') {
        snprintf(dir, sizeof dir, "%s%s", root, pattern);
        scan_dir(f, dir, 0);
        return;
    }
    char base[PATH_MAX];
    snprintf(base, sizeof base, "%s/usr/local", root);
    DIR *d = opendir(base);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (!strncmp(e->d_name, "cuda-", 5)) {
            snprintf(dir, sizeof dir, "%.3000s/%.255s%.100s", base, e->d_name, pattern + 1);
            scan_dir(f, dir, 0);
        }
    if (d)
        closedir(d);
}

static void scan_ld_path(tp_doctor_facts *f, const char *ld) {
    char buf[8192];
    snprintf(buf, sizeof buf, "%s", ld ? ld : "");
    for (char *save = NULL, *p = strtok_r(buf, ":", &save); p; p = strtok_r(NULL, ":", &save))
        scan_dir(f, p, 1);
}

/* DCGM's host engine may hold the GPUs' profiling counters (CUPTI's profiling API, not its
 * activity tracing). Looked up as /proc/PID/comm under the root. */
static int process_running(const char *root, const char *comm) {
    char dir[PATH_MAX], path[PATH_MAX + 300], line[64];
    snprintf(dir, sizeof dir, "%s/proc", root);
    DIR *d = opendir(dir);
    struct dirent *e;
    int found = 0;
    while (d && !found && (e = readdir(d))) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        snprintf(path, sizeof path, "%s/%s/comm", dir, e->d_name);
        FILE *c = fopen(path, "re");
        if (c && fgets(line, sizeof line, c))
            found = !strncmp(line, comm, strlen(comm));
        if (c)
            fclose(c);
    }
    if (d)
        closedir(d);
    return found;
}

void tp_doctor_probe(const tp_doctor_opts *o, tp_doctor_facts *f) {
    const char *root = o->root ? o->root : "";
    memset(f, 0, sizeof *f);
    f->torch_cuda_available = -1;
    if (tp_sysinfo_nvidia_driver(root, f->driver, sizeof f->driver) != 0)
        f->driver[0] = 0;
    f->n_gpus = tp_sysinfo_gpus(root, f->gpus, TP_DOCTOR_MAX_GPUS);
    scan_ld_path(f, o->ld_library_path);
    for (size_t i = 0; i < o->n_lib_dirs; i++)
        scan_dir(f, o->lib_dirs[i], 0);
    for (size_t i = 0; !o->no_default_dirs && i < sizeof default_dirs / sizeof *default_dirs; i++)
        scan_expanded(f, root, default_dirs[i]);
    if (!f->lib[TP_DLIB_CUDA].path[0] && f->stub_cuda.path[0])
        f->lib[TP_DLIB_CUDA] = f->stub_cuda;
    f->runtime_cuda = tp_doctor_parse_cuda(f->lib[TP_DLIB_CUDART].version);
    const char *inj = o->cuda_injection;
    if (inj && inj[0] && !strstr(inj, "trainprof-collector"))
        snprintf(f->injection, sizeof f->injection, "%s", inj);
    f->dcgm_running = process_running(root, "nv-hostengine");
    char model[256];
    if (tp_sysinfo_cpu(root, model, sizeof model, &f->cpu_cores) != 0)
        f->cpu_cores = 0;
    if (!root[0]) /* the affinity mask is this process's own, not under a root */
        f->cpu_allowed = tp_sysinfo_cpu_allowed() > 0 ? tp_sysinfo_cpu_allowed() : 0;
    if (tp_sysinfo_cpu_quota(root, &f->cpu_quota) != 0)
        f->cpu_quota = 0;
}

/* ------------------------------------------------------------------ helpers */

int tp_doctor_parse_cuda(const char *s) {
    if (!s || !isdigit((unsigned char)s[0]))
        return 0;
    char *e;
    long ma = strtol(s, &e, 10), mi = *e == '.' ? strtol(e + 1, NULL, 10) : 0;
    return ma > 0 && ma < 100 && mi >= 0 && mi < 100 ? (int)(ma * 1000 + mi * 10) : 0;
}

void tp_doctor_cudnn_str(int v, char *buf, size_t cap) {
    if (v >= 90000)
        snprintf(buf, cap, "%d.%d.%d", v / 10000, v % 10000 / 100, v % 100);
    else
        snprintf(buf, cap, "%d.%d.%d", v / 1000, v % 1000 / 100, v % 100);
}

static int cudnn_major(int v) {
    return v >= 90000 ? v / 10000 : v / 1000;
}

static int cudnn_minor(int v) {
    return v >= 90000 ? v % 10000 / 100 : v % 1000 / 100;
}

const char *tp_doctor_level_name(tp_doctor_level l) {
    return l == TP_DOC_ERROR ? "error" : l == TP_DOC_WARN ? "warning" : "info";
}

/* The newest CUDA a driver runs (as 13000), from the requirement table; 0 when too old. */
static int newest_cuda_for(const char *driver) {
    static const int majors[] = {13000, 12000, 11000, 10000};
    for (size_t i = 0; i < sizeof majors / sizeof *majors; i++) {
        const tp_cuda_driver_req *r = tp_sysinfo_driver_req(majors[i]);
        if (r && tp_sysinfo_version_cmp(driver, r->minimum) >= 0)
            return majors[i] + 990; /* any minor of that major */
    }
    return 0;
}

/* ------------------------------------------------------------------ rules */

typedef struct {
    const tp_doctor_facts *f;
    tp_doctor_finding *out;
    size_t cap, n;
} judge;

typedef struct {
    const char *id;
    void (*run)(judge *j, const char *id);
} rule;

static tp_doctor_finding *say(judge *j, const char *id, tp_doctor_level l) {
    static tp_doctor_finding sink;
    tp_doctor_finding *x = j->n < j->cap ? &j->out[j->n] : &sink;
    j->n++;
    memset(x, 0, sizeof *x);
    x->id = id;
    x->level = l;
    return x;
}

static void r_no_gpu(judge *j, const char *id) {
    if (j->f->driver[0] || j->f->n_gpus)
        return;
    tp_doctor_finding *x = say(j, id, TP_DOC_INFO);
    snprintf(x->what, sizeof x->what,
             "no NVIDIA driver is loaded (no /proc/driver/nvidia/version): this machine has no "
             "usable GPU, so CUDA programs fail with cudaErrorNoDevice or "
             "cudaErrorInsufficientDriver and trainprof records no CUDA activity");
    snprintf(x->fix, sizeof x->fix,
             "nothing to fix for CPU work: trainprof still records NVTX ranges, CPU stacks and "
             "devices that report through trainprof/activity.h; record CUDA work on a machine "
             "with a GPU and the NVIDIA driver");
}

static void r_stub(judge *j, const char *id) {
    const tp_doctor_facts *f = j->f;
    const tp_doctor_lib *c = &f->lib[TP_DLIB_CUDA], *s = &f->stub_cuda;
    if (!s->path[0])
        return;
    if (c->stub) { /* the stub is the only libcuda */
        tp_doctor_finding *x = say(j, id, f->driver[0] ? TP_DOC_ERROR : TP_DOC_INFO);
        snprintf(x->what, sizeof x->what,
                 "the only libcuda.so is the CUDA toolkit's stub (%s), made for linking, not "
                 "running: a program that loads it gets cudaErrorStubLibrary (34, \"CUDA driver "
                 "is a stub library\"), not cudaErrorInsufficientDriver (35), which would mean "
                 "a real but too old driver",
                 s->path);
        snprintf(x->fix, sizeof x->fix, "%s",
                 f->driver[0] ? "install the NVIDIA driver's user-space libraries (libcuda.so.1 "
                                "of the same version as the kernel module)"
                              : "expected on a machine without a GPU; never put the stubs "
                                "folder on LD_LIBRARY_PATH where a real driver exists");
    } else if (s->on_ld_path) { /* a real driver exists but the stub comes first */
        tp_doctor_finding *x = say(j, id, TP_DOC_ERROR);
        snprintf(x->what, sizeof x->what,
                 "LD_LIBRARY_PATH puts the toolkit's stub %s before the real driver (%s): "
                 "programs load the stub and fail with cudaErrorStubLibrary (34)",
                 s->path, c->path);
        snprintf(x->fix, sizeof x->fix, "remove the stubs folder from LD_LIBRARY_PATH");
    }
}

/* One runtime (the system's or the framework's) against the driver. */
static void runtime_vs_driver(judge *j, const char *id, int cuda, const char *who) {
    const tp_doctor_facts *f = j->f;
    const tp_cuda_driver_req *r = tp_sysinfo_driver_req(cuda);
    char cv[16], newest[16];
    if (!cuda || !r || !f->driver[0])
        return;
    tp_sysinfo_cuda_version_str(cuda, cv, sizeof cv);
    if (tp_sysinfo_version_cmp(f->driver, r->minimum) < 0) {
        tp_doctor_finding *x = say(j, id, TP_DOC_ERROR);
        int top = newest_cuda_for(f->driver);
        snprintf(newest, sizeof newest, "%d", top / 1000);
        snprintf(x->what, sizeof x->what,
                 "%s is CUDA %s, which needs NVIDIA driver >= %s; this machine has %s: CUDA "
                 "calls fail with cudaErrorInsufficientDriver (35, \"CUDA driver version is "
                 "insufficient for CUDA runtime version\")",
                 who, cv, r->minimum, f->driver);
        snprintf(x->fix, sizeof x->fix,
                 "install driver >= %s (or the cuda-compat forward-compatibility package, on "
                 "data-center GPUs), or use a build for CUDA %s.x or older, which this driver "
                 "runs%s",
                 r->minimum, top ? newest : "?",
                 strstr(who, "PyTorch") ? " (a PyTorch wheel for that CUDA: --index-url "
                                          "https://download.pytorch.org/whl/cuXYZ)"
                                        : "");
    } else if (tp_sysinfo_version_cmp(f->driver, r->toolkit) < 0) {
        tp_doctor_finding *x = say(j, id, TP_DOC_WARN);
        snprintf(x->what, sizeof x->what,
                 "%s is CUDA %s, whose toolkit shipped driver %s; this machine's %s runs it "
                 "through minor-version compatibility, but cannot JIT-compile its PTX "
                 "(cudaErrorUnsupportedPtxVersion) and lacks features newer than the driver",
                 who, cv, r->toolkit, f->driver);
        snprintf(x->fix, sizeof x->fix,
                 "update the driver to >= %s when kernels are JIT-compiled (PTX-only builds, "
                 "Triton, torch.compile)",
                 r->toolkit);
    }
}

static void r_driver_runtime(judge *j, const char *id) {
    runtime_vs_driver(j, id, j->f->runtime_cuda, "the CUDA runtime (libcudart)");
}

static void r_driver_torch(judge *j, const char *id) {
    if (j->f->torch_version[0])
        runtime_vs_driver(j, id, j->f->torch_cuda, "PyTorch's CUDA runtime (torch.version.cuda)");
}

static void r_cudnn_abi(judge *j, const char *id) {
    const tp_doctor_facts *f = j->f;
    const tp_doctor_lib *c = &f->lib[TP_DLIB_CUDNN];
    if (!f->torch_cudnn || !c->path[0] || !c->on_ld_path || !c->major)
        return; /* a cuDNN off LD_LIBRARY_PATH does not displace the framework's own */
    char tv[32];
    tp_doctor_cudnn_str(f->torch_cudnn, tv, sizeof tv);
    int minor = atoi(strchr(c->version, '.') ? strchr(c->version, '.') + 1 : "0");
    int bad_major = c->major != cudnn_major(f->torch_cudnn);
    if (!bad_major && (!strchr(c->version, '.') || minor >= cudnn_minor(f->torch_cudnn)))
        return;
    tp_doctor_finding *x = say(j, id, TP_DOC_ERROR);
    snprintf(x->what, sizeof x->what,
             "PyTorch was built with cuDNN %s but LD_LIBRARY_PATH puts cuDNN %s (%s) first: %s", tv,
             c->version, c->path,
             bad_major ? "another major is ABI-incompatible (RuntimeError: cuDNN version "
                         "incompatibility)"
                       : "an older minor than PyTorch was built with is refused");
    snprintf(x->fix, sizeof x->fix,
             "remove that folder from LD_LIBRARY_PATH so PyTorch loads the cuDNN it ships "
             "(nvidia-cudnn-cu* wheel), or install cuDNN %d.%d or newer of major %d",
             cudnn_major(f->torch_cudnn), cudnn_minor(f->torch_cudnn), cudnn_major(f->torch_cudnn));
}

static void r_cupti(judge *j, const char *id) {
    const tp_doctor_facts *f = j->f;
    const tp_doctor_lib *c = &f->lib[TP_DLIB_CUPTI];
    int rt = f->runtime_cuda ? f->runtime_cuda / 1000 : f->torch_cuda / 1000;
    if (!c->path[0] && f->driver[0]) { /* without a GPU there is nothing to trace */
        tp_doctor_finding *x = say(j, id, TP_DOC_WARN);
        snprintf(x->what, sizeof x->what,
                 "no libcupti.so found: trainprof records NVTX and CPU data but no kernels, "
                 "copies or CUDA API calls");
        snprintf(x->fix, sizeof x->fix,
                 "install CUPTI of your CUDA major (the toolkit's extras/CUPTI or the "
                 "nvidia-cuda-cupti-cu%d wheel) and put its folder on LD_LIBRARY_PATH",
                 rt ? rt : 13);
    } else if (c->major && c->major < 100 && rt && c->major != rt) {
        tp_doctor_finding *x = say(j, id, TP_DOC_WARN);
        snprintf(x->what, sizeof x->what,
                 "CUPTI %s (%s) is of another CUDA major than the runtime (CUDA %d): CUPTI "
                 "may refuse activity kinds or report records it cannot decode",
                 c->version, c->path, rt);
        snprintf(x->fix, sizeof x->fix, "use the CUPTI of CUDA %d (same toolkit or wheel set)", rt);
    }
}

static void r_cupti_held(judge *j, const char *id) {
    const tp_doctor_facts *f = j->f;
    if (f->injection[0]) {
        tp_doctor_finding *x = say(j, id, TP_DOC_WARN);
        snprintf(x->what, sizeof x->what,
                 "CUDA_INJECTION64_PATH names another injection library (%s): CUPTI takes one "
                 "subscriber per process, so whoever starts first (Nsight Systems, another "
                 "profiler) holds it and trainprof's CUDA tracing is refused "
                 "(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)",
                 f->injection);
        snprintf(x->fix, sizeof x->fix,
                 "unset CUDA_INJECTION64_PATH for runs under trainprof record; never run "
                 "torch.profiler, nsys or another CUPTI client in the same process");
    }
    if (f->dcgm_running) {
        tp_doctor_finding *x = say(j, id, TP_DOC_INFO);
        snprintf(x->what, sizeof x->what,
                 "DCGM (nv-hostengine) runs here: it may hold the GPUs' profiling counters; "
                 "CUPTI activity tracing, which trainprof uses, is not affected");
        snprintf(x->fix, sizeof x->fix,
                 "only for hardware counter tools (ncu): pause DCGM profiling (dcgmi profile "
                 "--pause)");
    }
}

static void r_torch(judge *j, const char *id) {
    const tp_doctor_facts *f = j->f;
    if (!f->torch_checked)
        return;
    if (!f->torch_version[0]) {
        tp_doctor_finding *x = say(j, id, TP_DOC_INFO);
        snprintf(x->what, sizeof x->what, "PyTorch could not be checked: %s",
                 f->torch_error[0] ? f->torch_error : "import torch failed");
        snprintf(x->fix, sizeof x->fix,
                 "nothing to do unless you train with PyTorch; --python PATH picks the "
                 "interpreter of your environment");
    } else if (f->n_gpus && f->torch_cuda && f->torch_cuda_available == 0) {
        tp_doctor_finding *x = say(j, id, TP_DOC_WARN);
        snprintf(x->what, sizeof x->what,
                 "PyTorch %s is built for CUDA but torch.cuda.is_available() is False although "
                 "%d GPU(s) are present",
                 f->torch_version, f->n_gpus);
        snprintf(x->fix, sizeof x->fix,
                 "see the findings above (driver, stub library); check CUDA_VISIBLE_DEVICES and "
                 "the permissions of /dev/nvidia*");
    } else if (f->n_gpus && !f->torch_cuda) {
        tp_doctor_finding *x = say(j, id, TP_DOC_WARN);
        snprintf(x->what, sizeof x->what, "PyTorch %s is a CPU-only build on a machine with GPUs",
                 f->torch_version);
        snprintf(x->fix, sizeof x->fix,
                 "install a CUDA build (pip install torch --index-url "
                 "https://download.pytorch.org/whl/cuXYZ for a CUDA this driver runs)");
    }
}

/* A process limited to fewer CPUs than the machine has (an affinity mask, a container's or a
 * job's cgroup quota) while what sizes workers and thread pools looks at the machine. */
static void r_cpu_limit(judge *j, const char *id) {
    const tp_doctor_facts *f = j->f;
    int by_mask = f->cpu_allowed > 0 && f->cpu_allowed < f->cpu_cores;
    int by_quota = f->cpu_quota > 0 && f->cpu_quota < (by_mask ? f->cpu_allowed : f->cpu_cores);
    if (f->cpu_cores <= 0 || (!by_mask && !by_quota))
        return;
    tp_doctor_finding *x = say(j, id, TP_DOC_INFO);
    char may[64];
    snprintf(may, sizeof may, "%g", by_quota ? f->cpu_quota : (double)f->cpu_allowed);
    snprintf(x->what, sizeof x->what,
             "a process here may use %s of the machine's %d CPUs (%s): os.cpu_count() and "
             "multiprocessing.cpu_count() say %d, and DataLoader workers or thread pools sized "
             "from them oversubscribe it (OpenMP's and so PyTorch's intra-op threads follow the "
             "affinity mask%s); its threads then wait for a CPU",
             may, f->cpu_cores,
             by_quota ? "its cgroup's CPU quota" : "its affinity mask: taskset, a cpuset",
             f->cpu_cores, by_quota ? ", not a cgroup quota" : "");
    snprintf(x->fix, sizeof x->fix,
             "size workers and threads from what the process may use: %s; "
             "torch.set_num_threads() or OMP_NUM_THREADS, and num_workers, within it; `trainprof "
             "record --sample` shows the waits for a CPU (cpu-contention)",
             by_quota ? "the quota (cpu.max, or cpu.cfs_quota_us over cpu.cfs_period_us)"
                      : "len(os.sched_getaffinity(0))");
}

static const rule rules[] = {
    {"no-gpu", r_no_gpu},
    {"stub-libcuda", r_stub},
    {"driver-too-old", r_driver_runtime},
    {"driver-too-old-for-torch", r_driver_torch},
    {"cudnn-abi", r_cudnn_abi},
    {"cupti", r_cupti},
    {"cupti-held", r_cupti_held},
    {"torch", r_torch},
    {"cpu-limit", r_cpu_limit},
};

size_t tp_doctor_check(const tp_doctor_facts *f, tp_doctor_finding *out, size_t cap) {
    judge j = {f, out, cap, 0};
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        rules[i].run(&j, rules[i].id);
    return j.n;
}
