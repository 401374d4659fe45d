/* test_sysinfo: machine facts from a fake /proc tree (cpuinfo, the NVIDIA driver's version and
 * GPU files, both kernel-module flavours), versions from library file names, numeric version
 * order, and the CUDA runtime -> driver table. Never reads this machine's real /proc. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tp_sysinfo.h"
#include "tp_test.h"

static char root[64];

static void put(const char *rel, const char *text) {
    char path[512], dir[512];
    snprintf(path, sizeof path, "%s%s", root, rel);
    for (char *p = strchr(path + strlen(root) + 1, '/'); p; p = strchr(p + 1, '/')) {
        snprintf(dir, sizeof dir, "%.*s", (int)(p - path), path);
        mkdir(dir, 0755);
    }
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f)
        fputs(text, f), fclose(f);
}

static void test_cpu(void) {
    put("/proc/cpuinfo", "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) "
                         "Xeon(R) Platinum 8480+  \nprocessor\t: 1\nmodel name\t: other\n"
                         "processor\t: 2\n");
    char model[128];
    int cores = 0;
    CHECK_EQ_I(tp_sysinfo_cpu(root, model, sizeof model, &cores), 0);
    CHECK_STR(model, "Intel(R) Xeon(R) Platinum 8480+");
    CHECK_EQ_I(cores, 3);
    CHECK_EQ_I(tp_sysinfo_cpu("/nonexistent-root", model, sizeof model, &cores), -1);
}

/* CPU quotas: none (no cgroup file, "max"), cgroup v2 (the smallest up the tree), v1 (quota
 * over period; cpu and cpuacct mounted together), a container's view of its host's path. */
static void test_cpu_quota(void) {
    double q = 0;
    int n = tp_sysinfo_cpu_allowed();
    CHECK(n >= 1);
    CHECK_EQ_I(tp_sysinfo_cpu_quota("/nonexistent-root", &q), -1);
    put("/proc/self/cgroup", "0::/job/step\n");
    CHECK_EQ_I(tp_sysinfo_cpu_quota(root, &q), -1); /* no cpu.max anywhere */
    put("/sys/fs/cgroup/job/step/cpu.max", "max 100000\n");
    CHECK_EQ_I(tp_sysinfo_cpu_quota(root, &q), -1);
    put("/sys/fs/cgroup/job/cpu.max", "400000 100000\n");
    CHECK_EQ_I(tp_sysinfo_cpu_quota(root, &q), 0);
    CHECK_NEAR(q, 4.0, 1e-12);
    put("/sys/fs/cgroup/job/step/cpu.max", "150000 100000\n"); /* the smaller, below */
    CHECK_EQ_I(tp_sysinfo_cpu_quota(root, &q), 0);
    CHECK_NEAR(q, 1.5, 1e-12);
    put("/proc/self/cgroup", "0::/\n"); /* the root group: no quota there */
    CHECK_EQ_I(tp_sysinfo_cpu_quota(root, &q), -1);
    /* v1: the hierarchy holding "cpu" (not "cpuset"), cpu and cpuacct together */
    put("/proc/self/cgroup", "9:cpuset:/a\n4:memory:/a\n2:cpu,cpuacct:/docker/abc\n");
    put("/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "250000\n");
    put("/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
    CHECK_EQ_I(tp_sysinfo_cpu_quota(root, &q), 0);
    CHECK_NEAR(q, 2.5, 1e-12);
    /* a container without its own cgroup namespace: the host's path, its group at the mount's
     * root; -1 is no quota */
    put("/proc/self/cgroup", "1:cpu:/kubepods/pod1/c1\n");
    put("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "-1\n");
    CHECK_EQ_I(tp_sysinfo_cpu_quota(root, &q), -1);
    put("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "50000\n");
    put("/sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n");
    CHECK_EQ_I(tp_sysinfo_cpu_quota(root, &q), 0);
    CHECK_NEAR(q, 0.5, 1e-12);
}

static void test_driver(void) {
    char v[64];
    CHECK_EQ_I(tp_sysinfo_nvidia_driver(root, v, sizeof v), -1); /* no driver yet */
    put("/proc/driver/nvidia/version",
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  "
        "(dvs-builder@U16-I3-B03-4-3)  Tue Sep 23 09:41:43 UTC 2025\nGCC version:  gcc 13.3\n");
    CHECK_EQ_I(tp_sysinfo_nvidia_driver(root, v, sizeof v), 0);
    CHECK_STR(v, "580.95.05");
    put("/proc/driver/nvidia/version",
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 19:39:15 UTC "
        "2024\n");
    CHECK_EQ_I(tp_sysinfo_nvidia_driver(root, v, sizeof v), 0);
    CHECK_STR(v, "535.183.01");
}

static void test_gpus(void) {
    tp_sysinfo_gpu g[4];
    CHECK_EQ_I(tp_sysinfo_gpus(root, g, 4), 0);
    put("/proc/driver/nvidia/gpus/0000:9a:00.0/information",
        "Model: \t\t NVIDIA H200\nIRQ:   \t\t 512\nGPU UUID: \t GPU-1\nBus Location: \t "
        "0000:9a:00.0\nDevice Minor: \t 1\n");
    put("/proc/driver/nvidia/gpus/0000:19:00.0/information",
        "Model: \t\t NVIDIA H200\nBus Location: \t 0000:19:00.0\nDevice Minor: \t 0\n");
    CHECK_EQ_I(tp_sysinfo_gpus(root, g, 4), 2);
    CHECK_STR(g[0].bus, "0000:19:00.0"); /* sorted by bus */
    CHECK_EQ_I(g[0].minor, 0);
    CHECK_STR(g[1].model, "NVIDIA H200");
    CHECK_EQ_I(g[1].minor, 1);
    CHECK_EQ_I(tp_sysinfo_gpus(root, g, 1), 1); /* cap */
}

static void test_versions(void) {
    char v[64];
    tp_sysinfo_so_version("/usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05", v, sizeof v);
    CHECK_STR(v, "580.95.05");
    tp_sysinfo_so_version("libcudnn.so.9", v, sizeof v);
    CHECK_STR(v, "9");
    tp_sysinfo_so_version("/x.so.1/libcuda.so", v, sizeof v); /* the folder does not count */
    CHECK_STR(v, "");
    tp_sysinfo_cuda_version_str(13000, v, sizeof v);
    CHECK_STR(v, "13.0");
    tp_sysinfo_cuda_version_str(12080, v, sizeof v);
    CHECK_STR(v, "12.8");
    CHECK(tp_sysinfo_version_cmp("580.95.05", "575.57.08") > 0);
    CHECK(tp_sysinfo_version_cmp("580.9", "580.10") < 0); /* numeric, not text */
    CHECK(tp_sysinfo_version_cmp("580", "580.0.1") < 0);
    CHECK_EQ_I(tp_sysinfo_version_cmp("13.0", "13.0"), 0);
}

static void test_driver_table(void) {
    const tp_cuda_driver_req *r = tp_sysinfo_driver_req(13000);
    CHECK(r && !strcmp(r->minimum, "580.65.06"));
    r = tp_sysinfo_driver_req(13020); /* a later 13.x: the 13.0 row */
    CHECK(r && r->cuda == 13000);
    r = tp_sysinfo_driver_req(12080);
    CHECK(r && !strcmp(r->minimum, "525.60.13") && !strcmp(r->toolkit, "570.26"));
    r = tp_sysinfo_driver_req(12070); /* between rows: the older one */
    CHECK(r && r->cuda == 12060);
    r = tp_sysinfo_driver_req(14000); /* newer than the table: at least its newest */
    CHECK(r && r->cuda == 13000);
    CHECK(tp_sysinfo_driver_req(9020) == NULL);
}

int main(void) {
    snprintf(root, sizeof root, "/tmp/tp-sysinfo-XXXXXX");
    if (!mkdtemp(root))
        return 1;
    TP_RUN(test_cpu);
    TP_RUN(test_cpu_quota);
    TP_RUN(test_driver);
    TP_RUN(test_gpus);
    TP_RUN(test_versions);
    TP_RUN(test_driver_table);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    if (system(cmd) != 0)
        return 1;
    return tp_test_summary();
}
