/* test_doctor: `trainprof doctor`'s checks on fake machines: a temporary tree standing for /
 * (proc/driver/nvidia, library folders holding empty files named as real libraries are) and
 * hand-set framework facts. Each case names the finding that must appear (or that none may),
 * with the versions and the error names it must say. Never looks at this machine's state. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tp_doctor.h"
#include "tp_test.h"

static char root[64];

static void mkdirs(const char *path) {
    char dir[512];
    for (const char *p = strchr(path + 1, '/'); p; p = strchr(p + 1, '/')) {
        snprintf(dir, sizeof dir, "%.*s", (int)(p - path), path);
        mkdir(dir, 0755);
    }
}

/* Writes ROOT/rel (folders made). */
static void put(const char *rel, const char *text) {
    char path[512];
    snprintf(path, sizeof path, "%s%s", root, rel);
    mkdirs(path);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f)
        fputs(text, f), fclose(f);
}

static void fresh(const char *driver) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s/proc %s/usr %s/ld", root, root, root);
    CHECK_EQ_I(system(cmd), 0);
    if (driver) {
        char v[256];
        snprintf(v, sizeof v, "NVRM version: NVIDIA UNIX x86_64 Kernel Module  %s  Tue Sep 23\n",
                 driver);
        put("/proc/driver/nvidia/version", v);
        put("/proc/driver/nvidia/gpus/0000:19:00.0/information",
            "Model: \t\t NVIDIA H200\nBus Location: \t 0000:19:00.0\nDevice Minor: \t 0\n");
    }
}

static void probe(tp_doctor_facts *f, const char *ld) {
    char ldp[256];
    tp_doctor_opts o = {0};
    o.root = root;
    if (ld)
        snprintf(ldp, sizeof ldp, "%s%s", root, ld);
    o.ld_library_path = ld ? ldp : NULL;
    tp_doctor_probe(&o, f);
}

static const tp_doctor_finding *find(const tp_doctor_finding *x, size_t n, const char *id) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(x[i].id, id))
            return &x[i];
    return NULL;
}

static tp_doctor_finding xs[16];

static size_t check(const tp_doctor_facts *f) {
    return tp_doctor_check(f, xs, 16);
}

/* CUDA 13 on a 575 driver: cudaErrorInsufficientDriver, needs >= 580, 12.x would run. */
static void test_driver_too_old(void) {
    fresh("575.57.08");
    put("/usr/lib/x86_64-linux-gnu/libcuda.so.575.57.08", "");
    put("/usr/local/cuda-13.0/lib64/libcudart.so.13.0.48", "");
    put("/usr/local/cuda-13.0/lib64/libcupti.so.13", "");
    tp_doctor_facts f;
    probe(&f, NULL);
    CHECK_STR(f.driver, "575.57.08");
    CHECK_EQ_I(f.n_gpus, 1);
    CHECK_STR(f.lib[TP_DLIB_CUDA].version, "575.57.08");
    CHECK_EQ_I(f.runtime_cuda, 13000);
    size_t n = check(&f);
    const tp_doctor_finding *x = find(xs, n, "driver-too-old");
    CHECK(x != NULL);
    if (x) {
        CHECK_EQ_I(x->level, TP_DOC_ERROR);
        CHECK(strstr(x->what, "CUDA 13.0, which needs NVIDIA driver >= 580.65.06") != NULL);
        CHECK(strstr(x->what, "has 575.57.08") != NULL);
        CHECK(strstr(x->what, "cudaErrorInsufficientDriver (35") != NULL);
        CHECK(strstr(x->fix, "CUDA 12.x or older") != NULL);
    }
    CHECK(find(xs, n, "no-gpu") == NULL);
    CHECK(find(xs, n, "cupti") == NULL);
    /* the framework's runtime is judged on its own */
    f.torch_checked = 1;
    snprintf(f.torch_version, sizeof f.torch_version, "2.11.0+cu130");
    f.torch_cuda = 13000;
    n = check(&f);
    x = find(xs, n, "driver-too-old-for-torch");
    CHECK(x != NULL && x->level == TP_DOC_ERROR && strstr(x->what, "torch.version.cuda") &&
          strstr(x->fix, "download.pytorch.org"));
    f.torch_cuda = 12080; /* a cu128 wheel runs on 575 */
    n = check(&f);
    CHECK(find(xs, n, "driver-too-old-for-torch") == NULL);
}

/* 12.9's toolkit shipped 575.51.03: a 570 driver runs it (minor-version compatibility) with
 * a warning about PTX. */
static void test_driver_older_than_toolkit(void) {
    fresh("570.26");
    put("/usr/local/cuda-12.9/lib64/libcudart.so.12.9.37", "");
    put("/usr/local/cuda-12.9/lib64/libcupti.so.12", "");
    tp_doctor_facts f;
    probe(&f, NULL);
    size_t n = check(&f);
    const tp_doctor_finding *x = find(xs, n, "driver-too-old");
    CHECK(x != NULL && x->level == TP_DOC_WARN && strstr(x->what, "575.51.03") &&
          strstr(x->what, "cudaErrorUnsupportedPtxVersion"));
}

/* No driver at all and only the toolkit's stub: notes, no error (exit 0). */
static void test_no_gpu_stub(void) {
    fresh(NULL);
    put("/usr/local/cuda/lib64/stubs/libcuda.so", "");
    put("/usr/local/cuda/lib64/libcudart.so.13", "");
    put("/usr/local/cuda/include/cuda_runtime_api.h", "#define CUDART_VERSION 13000\n");
    tp_doctor_facts f;
    probe(&f, NULL);
    CHECK_EQ_I(f.lib[TP_DLIB_CUDA].stub, 1);
    CHECK_STR(f.lib[TP_DLIB_CUDART].version, "13.0"); /* from the toolkit's header */
    size_t n = check(&f);
    CHECK(find(xs, n, "no-gpu") != NULL);
    const tp_doctor_finding *x = find(xs, n, "stub-libcuda");
    CHECK(x != NULL && x->level == TP_DOC_INFO && strstr(x->what, "cudaErrorStubLibrary (34"));
    for (size_t i = 0; i < n; i++)
        CHECK(xs[i].level == TP_DOC_INFO);
}

/* A real driver, but LD_LIBRARY_PATH puts the stubs first: an error naming both. */
static void test_stub_shadows_driver(void) {
    fresh("580.95.05");
    put("/usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05", "");
    put("/ld/stubs/libcuda.so", "");
    put("/usr/local/cuda-13.0/lib64/libcudart.so.13.0.48", "");
    put("/usr/local/cuda-13.0/lib64/libcupti.so.13", "");
    tp_doctor_facts f;
    probe(&f, "/ld/stubs");
    CHECK_EQ_I(f.lib[TP_DLIB_CUDA].stub, 0);
    size_t n = check(&f);
    const tp_doctor_finding *x = find(xs, n, "stub-libcuda");
    CHECK(x != NULL && x->level == TP_DOC_ERROR && strstr(x->what, "LD_LIBRARY_PATH") &&
          strstr(x->what, "libcuda.so.580.95.05"));
    CHECK(find(xs, n, "driver-too-old") == NULL);
}

/* PyTorch built with cuDNN 9.10.2; the cuDNN first on LD_LIBRARY_PATH decides. */
static void test_cudnn_abi(void) {
    static const struct {
        const char *file;
        int bad;
    } c[] = {{"libcudnn.so.8.9.7", 1}, {"libcudnn.so.9.1.0", 1}, {"libcudnn.so.9.12.0", 0}};
    for (size_t i = 0; i < 3; i++) {
        fresh("580.95.05");
        char rel[128];
        snprintf(rel, sizeof rel, "/ld/cudnn/%s", c[i].file);
        put(rel, "");
        tp_doctor_facts f;
        probe(&f, "/ld/cudnn");
        f.torch_checked = 1;
        snprintf(f.torch_version, sizeof f.torch_version, "2.11.0+cu130");
        f.torch_cuda = 13000, f.torch_cudnn = 91002, f.torch_cuda_available = 1;
        size_t n = check(&f);
        const tp_doctor_finding *x = find(xs, n, "cudnn-abi");
        CHECK_EQ_I(x != NULL, c[i].bad);
        if (x && i == 0)
            CHECK(strstr(x->what, "built with cuDNN 9.10.2") && strstr(x->what, "ABI"));
    }
}

static void test_cupti(void) {
    fresh("580.95.05");
    put("/usr/local/cuda-13.0/lib64/libcudart.so.13.0.48", "");
    tp_doctor_facts f;
    probe(&f, NULL);
    size_t n = check(&f);
    const tp_doctor_finding *x = find(xs, n, "cupti");
    CHECK(x != NULL && x->level == TP_DOC_WARN && strstr(x->what, "no libcupti.so"));
    put("/usr/local/cuda-13.0/lib64/libcupti.so.12", ""); /* another major */
    probe(&f, NULL);
    n = check(&f);
    x = find(xs, n, "cupti");
    CHECK(x != NULL && strstr(x->what, "another CUDA major"));
    /* another profiler's injection library holds CUPTI; ours does not count */
    tp_doctor_opts o = {0};
    o.root = root;
    o.cuda_injection = "/opt/nsight-systems/target-linux-x64/libToolsInjection64.so";
    tp_doctor_probe(&o, &f);
    n = check(&f);
    x = find(xs, n, "cupti-held");
    CHECK(x != NULL && x->level == TP_DOC_WARN && strstr(x->what, "MULTIPLE_SUBSCRIBERS") != NULL);
    o.cuda_injection = "/usr/lib/libtrainprof-collector.so";
    tp_doctor_probe(&o, &f);
    n = check(&f);
    CHECK(find(xs, n, "cupti-held") == NULL);
}

/* CPUs: 4 cores, no limit: nothing; a cgroup quota of 1.5 CPUs (v2): cpu-limit names it and
 * the quota; an affinity mask of 2 (set by hand: the probe reads this process's own only
 * without a root): the mask. */
static void test_cpu_limit(void) {
    fresh(NULL);
    put("/proc/cpuinfo", "processor\t: 0\nprocessor\t: 1\nprocessor\t: 2\nprocessor\t: 3\n");
    tp_doctor_facts f;
    probe(&f, NULL);
    CHECK_EQ_I(f.cpu_cores, 4);
    CHECK_EQ_I(f.cpu_allowed, 0);
    size_t n = check(&f);
    CHECK(find(xs, n, "cpu-limit") == NULL);
    put("/proc/self/cgroup", "0::/job\n");
    put("/sys/fs/cgroup/job/cpu.max", "150000 100000\n");
    probe(&f, NULL);
    CHECK_NEAR(f.cpu_quota, 1.5, 1e-12);
    n = check(&f);
    const tp_doctor_finding *x = find(xs, n, "cpu-limit");
    CHECK(x && x->level == TP_DOC_INFO);
    CHECK(x && strstr(x->what, "may use 1.5 of the machine's 4 CPUs (its cgroup's CPU quota)"));
    CHECK(x && strstr(x->fix, "the quota (cpu.max"));
    f.cpu_quota = 0, f.cpu_allowed = 2;
    n = check(&f);
    x = find(xs, n, "cpu-limit");
    CHECK(x && strstr(x->what, "may use 2 of the machine's 4 CPUs (its affinity mask"));
    CHECK(x && strstr(x->fix, "len(os.sched_getaffinity(0))"));
    f.cpu_allowed = 4; /* all of them */
    n = check(&f);
    CHECK(find(xs, n, "cpu-limit") == NULL);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s/sys", root);
    CHECK_EQ_I(system(cmd), 0);
}

/* Everything of one CUDA 13 install on a 580 driver: nothing to say. */
static void test_all_fit(void) {
    fresh("580.95.05");
    put("/usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05", "");
    put("/usr/local/cuda-13.0/lib64/libcudart.so.13.0.48", "");
    put("/usr/local/cuda-13.0/lib64/libcupti.so.13", "");
    put("/usr/lib/x86_64-linux-gnu/libnccl.so.2.27.3", "");
    tp_doctor_facts f;
    probe(&f, NULL);
    CHECK_STR(f.lib[TP_DLIB_NCCL].version, "2.27.3");
    f.torch_checked = 1;
    snprintf(f.torch_version, sizeof f.torch_version, "2.11.0+cu130");
    f.torch_cuda = 13000, f.torch_cudnn = 91002, f.torch_cuda_available = 1;
    size_t n = check(&f);
    for (size_t i = 0; i < n; i++)
        printf("unexpected: %s: %s\n", xs[i].id, xs[i].what);
    CHECK_EQ_U(n, 0);
    f.torch_cuda_available = 0; /* the driver fits, yet torch sees no GPU */
    n = check(&f);
    CHECK(find(xs, n, "torch") != NULL);
}

int main(void) {
    snprintf(root, sizeof root, "/tmp/tp-doctor-XXXXXX");
    if (!mkdtemp(root))
        return 1;
    TP_RUN(test_driver_too_old);
    TP_RUN(test_driver_older_than_toolkit);
    TP_RUN(test_no_gpu_stub);
    TP_RUN(test_stub_shadows_driver);
    TP_RUN(test_cudnn_abi);
    TP_RUN(test_cupti);
    TP_RUN(test_cpu_limit);
    TP_RUN(test_all_fit);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    if (system(cmd) != 0)
        return 1;
    return tp_test_summary();
}
