/* tp_collector_env: the ENV records of a trace (see tp_collector_env.h). */
#include "tp_collector_env.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "tp_collector.h"
#ifdef TP_HAVE_CUPTI
#include "tp_cupti.h"
#endif
#include "tp_env_keys.h"
#include "tp_record.h"
#include "tp_sysinfo.h"

extern char **environ;

static void put_key(const char *key, const char *value, uint32_t device) {
    if (!value || !value[0])
        return;
    tp_rec_env r;
    TP_REC_CLEAR(&r, TP_REC_ENV);
    r.key_sid = tp_collector_intern_n(key, strlen(key));
    r.value_sid = tp_collector_intern_n(value, strlen(value));
    r.device = device;
    if (r.key_sid && r.value_sid)
        tp_collector_meta(&r);
}

static void put(tp_env_key k, const char *value, uint32_t device) {
    put_key(tp_env_key_str(k), value, device);
}

void tp_env_put(tp_env_key k, const char *value) {
    put(k, value, TP_ENV_PROCESS);
}

static void put_int(tp_env_key k, long long v, uint32_t device) {
    char b[32];
    snprintf(b, sizeof b, "%lld", v);
    put(k, b, device);
}

/* ------------------------------------------------------------ host, CPU, variables */

static void write_host(void) {
    char host[256] = "", cpu[256];
    struct utsname u;
    int cores = 0;
    gethostname(host, sizeof host - 1);
    put(TP_ENVK_HOST, host, TP_ENV_PROCESS);
    if (uname(&u) == 0) {
        char os[400];
        snprintf(os, sizeof os, "%s %s %s", u.sysname, u.release, u.machine);
        put(TP_ENVK_OS, os, TP_ENV_PROCESS);
    }
    if (tp_sysinfo_cpu(NULL, cpu, sizeof cpu, &cores) == 0) {
        put(TP_ENVK_CPU_MODEL, cpu, TP_ENV_PROCESS);
        put_int(TP_ENVK_CPU_CORES, cores, TP_ENV_PROCESS);
    }
    /* what the process may use of them (the analyses' CPUs: tp_an_env_cpus): an affinity
     * mask narrower than the machine, and a control group's quota */
    int allowed = tp_sysinfo_cpu_allowed();
    if (allowed > 0 && allowed < cores)
        put_int(TP_ENVK_CPU_ALLOWED, allowed, TP_ENV_PROCESS);
    double quota;
    if (tp_sysinfo_cpu_quota(NULL, &quota) == 0) {
        char b[32];
        snprintf(b, sizeof b, "%g", quota);
        put(TP_ENVK_CPU_QUOTA, b, TP_ENV_PROCESS);
    }
}

static void write_vars(void) {
    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq || !tp_env_var_wanted(*e, (size_t)(eq - *e)))
            continue;
        char key[256];
        snprintf(key, sizeof key, TP_ENV_VAR_PREFIX "%.*s", (int)(eq - *e), *e);
        put_key(key, eq[1] ? eq + 1 : "(empty)", TP_ENV_PROCESS);
    }
}

/* ------------------------------------------------------------ loaded libraries */

/* Formats a version number an API returned. */
typedef void (*fmt_fn)(long v, char *buf, size_t cap);

static void fmt_cuda(long v, char *buf, size_t cap) {
    tp_sysinfo_cuda_version_str((int)v, buf, cap);
}

/* CUPTI_API_VERSION: 130001 = 13.0.1 since CUDA 13; a small integer before. */
static void fmt_cupti(long v, char *buf, size_t cap) {
    if (v >= 10000)
        snprintf(buf, cap, "%ld.%ld.%ld", v / 10000, v % 10000 / 100, v % 100);
    else
        snprintf(buf, cap, "API %ld", v);
}

/* cuDNN 9: 91000 = 9.10.0; cuDNN 8 and older: 8902 = 8.9.2. */
static void fmt_cudnn(long v, char *buf, size_t cap) {
    if (v >= 90000)
        snprintf(buf, cap, "%ld.%ld.%ld", v / 10000, v % 10000 / 100, v % 100);
    else
        snprintf(buf, cap, "%ld.%ld.%ld", v / 1000, v % 1000 / 100, v % 100);
}

/* NCCL >= 2.9: 22105 = 2.21.5; before: 2708 = 2.7.8. */
static void fmt_nccl(long v, char *buf, size_t cap) {
    if (v >= 20900)
        snprintf(buf, cap, "%ld.%ld.%ld", v / 10000, v % 10000 / 100, v % 100);
    else
        snprintf(buf, cap, "%ld.%ld.%ld", v / 1000, v % 1000 / 100, v % 100);
}

/* A library to look for among the loaded objects, the function that says its version and how
 * it says it (`out`: int f(int *) returning 0 on success; else size_t f(void)). No function
 * (sym NULL): the version comes from elsewhere or from the file name. Every function named here
 * returns a constant and is safe to call at exit, after its library's own teardown, with or
 * without a driver; cuptiGetVersion is not (tp_cupti.h), so CUPTI's is asked of tp_cupti. */
typedef struct {
    const char *prefix; /* file name start: "libcudart.so" */
    tp_env_key key;
    const char *sym;
    int out;
    fmt_fn fmt;
    int by_name; /* the file name's version may stand in (not libcuda's: 580.x is no API) */
} lib_probe;

static const lib_probe probes[] = {
    {"libcuda.so", TP_ENVK_DRIVER_API, "cuDriverGetVersion", 1, fmt_cuda, 0},
    {"libcudart.so", TP_ENVK_RUNTIME, "cudaRuntimeGetVersion", 1, fmt_cuda, 1},
    {"libcupti.so", TP_ENVK_CUPTI, NULL, 1, fmt_cupti, 1},
    {"libcudnn.so", TP_ENVK_CUDNN, "cudnnGetVersion", 0, fmt_cudnn, 1},
    {"libnccl.so", TP_ENVK_NCCL, "ncclGetVersion", 1, fmt_nccl, 1},
};
#define N_PROBES (sizeof probes / sizeof probes[0])

/* What an earlier look (tp_env_write_loaded, before CUDA's teardown) got from the libraries
 * themselves: the look before close keeps it rather than write a fallback over it (after
 * the teardown the driver answers CUDA_ERROR_DEINITIALIZED). */
static int g_probe_answered[N_PROBES];
static int g_gpus_from_driver;

/* Paths of the loaded objects we look at; the last slot is libtorch_python. */
typedef struct {
    char path[N_PROBES + 1][1024];
} loaded_libs;

static const char *base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* dl_iterate_phdr holds the loader's lock: only copy names here, dlopen afterwards. */
static int on_object(struct dl_phdr_info *info, size_t size, void *ctx) {
    (void)size;
    loaded_libs *L = ctx;
    const char *b = info->dlpi_name ? base_name(info->dlpi_name) : "";
    for (size_t i = 0; i < N_PROBES; i++)
        if (!L->path[i][0] && !strncmp(b, probes[i].prefix, strlen(probes[i].prefix)))
            snprintf(L->path[i], sizeof L->path[i], "%s", info->dlpi_name);
    if (!L->path[N_PROBES][0] && !strncmp(b, "libtorch_python.so", 18))
        snprintf(L->path[N_PROBES], sizeof L->path[N_PROBES], "%s", info->dlpi_name);
    return 0;
}

/* The version function of a loaded library (RTLD_NOLOAD: never loads it); NULL when the
 * library is not loaded or lacks the function. A statically linked copy (cudart_static in
 * the executable) is found through the global scope. */
static void *loaded_sym(const char *path, const char *sym, void **handle) {
    *handle = path[0] ? dlopen(path, RTLD_LAZY | RTLD_NOLOAD) : NULL;
    void *f = *handle ? dlsym(*handle, sym) : NULL;
    return f ? f : dlsym(RTLD_DEFAULT, sym);
}

/* The version a library's probe gets without calling into the library; 0 when none. */
static long version_known(const lib_probe *p) {
#ifdef TP_HAVE_CUPTI
    if (p->key == TP_ENVK_CUPTI)
        return (long)tp_cupti_api_version();
#endif
    (void)p;
    return 0;
}

static void probe_lib(size_t i, const char *path) {
    const lib_probe *p = &probes[i];
    void *h = NULL;
    void *f = p->sym ? loaded_sym(path, p->sym, &h) : NULL;
    char ver[64] = "";
    long known = version_known(p);
    if (known > 0) {
        p->fmt(known, ver, sizeof ver);
    } else if (f && p->out) {
        int v = 0;
        if (((int (*)(int *))f)(&v) == 0 && v > 0)
            p->fmt(v, ver, sizeof ver);
    } else if (f) {
        size_t v = ((size_t(*)(void))f)();
        if (v)
            p->fmt((long)v, ver, sizeof ver);
    }
    if (ver[0] && (f || known > 0))
        g_probe_answered[i] = 1;
    else if (g_probe_answered[i]) { /* answered before the teardown: keep that */
        if (h)
            dlclose(h);
        return;
    }
    if (!ver[0] && path[0] && p->by_name) { /* no usable function: the file name's version */
        char real[PATH_MAX];
        tp_sysinfo_so_version(realpath(path, real) ? real : path, ver, sizeof ver);
    }
    if (h)
        dlclose(h);
    put(p->key, ver, TP_ENV_PROCESS);
}

/* The NVIDIA driver's version: libcuda's file name as loaded (libcuda.so.1 ->
 * libcuda.so.580.95.05), else the kernel module's. */
static void write_driver(const char *libcuda) {
    char ver[64] = "", real[PATH_MAX]; /* realpath writes up to PATH_MAX (fortified: checked) */
    if (libcuda[0] && realpath(libcuda, real))
        tp_sysinfo_so_version(real, ver, sizeof ver);
    if (!strchr(ver, '.') && tp_sysinfo_nvidia_driver(NULL, ver, sizeof ver) != 0)
        return; /* "1" (libcuda.so.1 not a link) says nothing */
    put(TP_ENVK_DRIVER, ver, TP_ENV_PROCESS);
}

/* ------------------------------------------------------------ GPUs */

/* CUdevice_attribute values (cuda.h), stable since CUDA 4. */
enum {
    ATTR_CLOCK_KHZ = 13,
    ATTR_SMS = 16,
    ATTR_MEM_CLOCK_KHZ = 36,
    ATTR_CC_MAJOR = 75,
    ATTR_CC_MINOR = 76
};

typedef struct {
    int (*count)(int *);
    int (*get)(int *, int);
    int (*name)(char *, int, int);
    int (*mem)(size_t *, int);
    int (*attr)(int *, int, int);
    int (*pci)(char *, int, int);
} drv_api;

static int drv_attr(const drv_api *d, int attr, int dev) {
    int v = 0;
    return d->attr && d->attr(&v, attr, dev) == 0 ? v : -1;
}

static void write_gpu_drv(const drv_api *d, int ordinal) {
    int dev = 0;
    char s[256];
    uint32_t o = (uint32_t)ordinal;
    if (d->get(&dev, ordinal) != 0)
        return;
    if (d->name && d->name(s, sizeof s, dev) == 0)
        put(TP_ENVK_GPU_NAME, s, o);
    int sms = drv_attr(d, ATTR_SMS, dev), ma = drv_attr(d, ATTR_CC_MAJOR, dev);
    int mi = drv_attr(d, ATTR_CC_MINOR, dev), clk = drv_attr(d, ATTR_CLOCK_KHZ, dev);
    int mclk = drv_attr(d, ATTR_MEM_CLOCK_KHZ, dev);
    if (sms > 0)
        put_int(TP_ENVK_GPU_SMS, sms, o);
    if (ma > 0) {
        snprintf(s, sizeof s, "%d.%d", ma, mi < 0 ? 0 : mi);
        put(TP_ENVK_GPU_CC, s, o);
    }
    size_t mem = 0;
    if (d->mem && d->mem(&mem, dev) == 0 && mem)
        put_int(TP_ENVK_GPU_MEMORY, (long long)mem, o);
    if (clk > 0)
        put_int(TP_ENVK_GPU_CLOCK, clk / 1000, o);
    if (mclk > 0)
        put_int(TP_ENVK_GPU_MEM_CLOCK, mclk / 1000, o);
    if (d->pci && d->pci(s, sizeof s, dev) == 0)
        put(TP_ENVK_GPU_PCI, s, o);
    put(TP_ENVK_GPU_SOURCE, "driver", o);
}

/* Through the driver API when the program has initialised it (cuDeviceGetCount fails with
 * CUDA_ERROR_NOT_INITIALIZED otherwise, and we never call cuInit ourselves). */
static int write_gpus_drv(const char *libcuda) {
    void *h = libcuda[0] ? dlopen(libcuda, RTLD_LAZY | RTLD_NOLOAD) : NULL;
    if (!h)
        return 0;
    drv_api d;
    *(void **)&d.count = dlsym(h, "cuDeviceGetCount");
    *(void **)&d.get = dlsym(h, "cuDeviceGet");
    *(void **)&d.name = dlsym(h, "cuDeviceGetName");
    *(void **)&d.mem = dlsym(h, "cuDeviceTotalMem_v2");
    *(void **)&d.attr = dlsym(h, "cuDeviceGetAttribute");
    *(void **)&d.pci = dlsym(h, "cuDeviceGetPCIBusId");
    int n = 0;
    if (d.count && d.get && d.count(&n) == 0)
        for (int i = 0; i < n && i < 64; i++)
            write_gpu_drv(&d, i);
    else
        n = 0;
    dlclose(h);
    return n;
}

/* Without the driver API: what the kernel module lists. Its order (by bus id) is CUDA's
 * default PCI_BUS_ID-less order only by chance, so the source says "procfs". */
static void write_gpus_proc(void) {
    tp_sysinfo_gpu g[16];
    int n = tp_sysinfo_gpus(NULL, g, 16);
    for (int i = 0; i < n; i++) {
        put(TP_ENVK_GPU_NAME, g[i].model, (uint32_t)i);
        put(TP_ENVK_GPU_PCI, g[i].bus, (uint32_t)i);
        put(TP_ENVK_GPU_SOURCE, "procfs", (uint32_t)i);
    }
}

/* ------------------------------------------------------------ Python and PyTorch */

static void write_python(void) {
    const char *(*ver)(void);
    *(void **)&ver = dlsym(RTLD_DEFAULT, "Py_GetVersion");
    if (!ver)
        return;
    const char *v = ver(); /* "3.12.3 (main, ...) [GCC ...]": a constant string */
    char b[64];
    size_t n = v ? strcspn(v, " ") : 0;
    snprintf(b, sizeof b, "%.*s", (int)(n < sizeof b ? n : sizeof b - 1), v ? v : "");
    put(TP_ENVK_PYTHON, b, TP_ENV_PROCESS);
}

/* The quoted value of `NAME ... = 'value'` on a line starting with `name`; 0 when not. */
static int quoted_after(const char *line, const char *name, char *out, size_t cap) {
    size_t k = strlen(name);
    if (strncmp(line, name, k) != 0 || (line[k] != ' ' && line[k] != ':' && line[k] != '='))
        return 0;
    const char *eq = strchr(line + k, '=');
    const char *q = eq ? strpbrk(eq, "'\"") : NULL;
    if (!q)
        return 0;
    size_t n = strcspn(q + 1, "'\"");
    snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), q + 1);
    return 1;
}

/* torch/lib/libtorch_python.so -> torch/version.py: `__version__ = '2.11.0+cu130'` and
 * `cuda: Optional[str] = '13.0'`. Read as text: no Python code runs. */
static void write_torch(const char *libtorch_python) {
    char path[1200], line[512], v[128];
    const char *slash = strrchr(libtorch_python, '/');
    if (!slash)
        return;
    snprintf(path, sizeof path, "%.*s/../version.py", (int)(slash - libtorch_python),
             libtorch_python);
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        if (quoted_after(line, "__version__", v, sizeof v))
            put(TP_ENVK_TORCH, v, TP_ENV_PROCESS);
        else if (quoted_after(line, "cuda", v, sizeof v))
            put(TP_ENVK_TORCH_CUDA, v, TP_ENV_PROCESS);
    }
    fclose(f);
}

/* ------------------------------------------------------------ the client */

static void write_loaded(void) {
    loaded_libs *L = calloc(1, sizeof *L); /* 6 KiB: not on an application thread's stack */
    if (!L)
        return;
    dl_iterate_phdr(on_object, L);
    for (size_t i = 0; i < N_PROBES; i++)
        probe_lib(i, L->path[i]);
    write_driver(L->path[0]);
    if (write_gpus_drv(L->path[0]))
        g_gpus_from_driver = 1;
    else if (!g_gpus_from_driver)
        write_gpus_proc();
    write_python();
    if (L->path[N_PROBES][0])
        write_torch(L->path[N_PROBES]);
    free(L);
}

/* Runs under the core's lock, possibly from inside another library's constructor (its first
 * NVTX call): nothing here may take the dynamic loader's lock (no dlopen, dlsym or
 * dl_iterate_phdr), or a thread in dlopen calling NVTX would wait for us while we wait for it.
 * The libraries are looked at before the trace closes. */
static void env_start(void) {
    char ver[64];
    write_host();
    write_vars();
    if (tp_sysinfo_nvidia_driver(NULL, ver, sizeof ver) == 0)
        put(TP_ENVK_DRIVER, ver, TP_ENV_PROCESS);
}

static void env_before_close(void) {
    write_loaded();
}

void tp_env_write_loaded(void) {
    write_loaded();
}

void tp_env_register(void) {
    tp_collector_client c = {0};
    c.name = "env";
    c.on_start = env_start;
    c.before_close = env_before_close;
    (void)tp_collector_add_client(&c);
}
