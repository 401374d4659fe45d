/* bench_collector_step: a training-like step loop with and without the collector; the goal
 * is a step-time ratio <= 1.03.
 *
 * A step: 12 layers forward then backward, each an NVTX range around a real 96x96x96
 * single-precision matrix product, an activation registered with (forward) or returned to
 * (backward) a sub-allocator through the NVTX memory API (the collector takes a stack for
 * each), plus an outer "step" range and a mark: ~50 NVTX events per ~5 ms step.
 * Runs alternate (plain, collector, plain, collector, ...) so drift hits both equally;
 * reported: the median step time of each setup and their ratio.
 *
 * usage: bench_collector_step [COLLECTOR.so] */
#include <limits.h>
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtMem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define N 96
#define LAYERS 12
#define STEPS 100
#define ROUNDS 5

static float A[LAYERS][N * N], X[N * N], Y[N * N];
static nvtxDomainHandle_t g_dom;
static nvtxMemHeapHandle_t g_heap;
static char g_pool[LAYERS * 4096];

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void matmul(const float *a, const float *b, float *c) {
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            float s = 0;
            for (int k = 0; k < N; k++)
                s += a[i * N + k] * b[k * N + j];
            c[i * N + j] = s * 0.01f;
        }
}

static void region(int layer, int add) {
    nvtxMemVirtualRangeDesc_t r = {4096, g_pool + layer * 4096};
    if (add) {
        nvtxMemRegionsRegisterBatch_t b = {0};
        b.extCompatID = NVTX_EXT_COMPATID_MEM;
        b.structSize = sizeof b;
        b.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
        b.heap = g_heap;
        b.regionCount = 1;
        b.regionDescElementSize = sizeof r;
        b.regionDescElements = &r;
        nvtxMemRegionsRegister(g_dom, &b);
    } else {
        nvtxMemRegionRef_t ref = {.pointer = r.ptr};
        nvtxMemRegionsUnregisterBatch_t b = {0};
        b.extCompatID = NVTX_EXT_COMPATID_MEM;
        b.structSize = sizeof b;
        b.refType = NVTX_MEM_REGION_REF_TYPE_POINTER;
        b.refCount = 1;
        b.refElementSize = sizeof ref;
        b.refElements = &ref;
        nvtxMemRegionsUnregister(g_dom, &b);
    }
}

static void step(void) {
    static const char *fwd[LAYERS] = {"fwd0", "fwd1", "fwd2", "fwd3", "fwd4",  "fwd5",
                                      "fwd6", "fwd7", "fwd8", "fwd9", "fwd10", "fwd11"};
    static const char *bwd[LAYERS] = {"bwd0", "bwd1", "bwd2", "bwd3", "bwd4",  "bwd5",
                                      "bwd6", "bwd7", "bwd8", "bwd9", "bwd10", "bwd11"};
    nvtxRangePushA("step");
    for (int l = 0; l < LAYERS; l++) {
        nvtxRangePushA(fwd[l]);
        region(l, 1);
        matmul(A[l], X, Y);
        memcpy(X, Y, sizeof X);
        nvtxRangePop();
    }
    nvtxMarkA("loss");
    for (int l = LAYERS - 1; l >= 0; l--) {
        nvtxRangePushA(bwd[l]);
        matmul(X, A[l], Y);
        memcpy(X, Y, sizeof X);
        region(l, 0);
        nvtxRangePop();
    }
    nvtxRangePop();
}

static int child(void) {
    for (int l = 0; l < LAYERS; l++)
        for (int i = 0; i < N * N; i++)
            A[l][i] = (float)((i * 7 + l) % 13) * 0.1f;
    for (int i = 0; i < N * N; i++)
        X[i] = 1.0f;
    g_dom = nvtxDomainCreateA("bench");
    nvtxMemVirtualRangeDesc_t range = {sizeof g_pool, g_pool};
    nvtxMemHeapDesc_t d = {0};
    d.extCompatID = NVTX_EXT_COMPATID_MEM;
    d.structSize = sizeof d;
    d.usage = NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR;
    d.type = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
    d.typeSpecificDescSize = sizeof range;
    d.typeSpecificDesc = &range;
    g_heap = nvtxMemHeapRegister(g_dom, &d);
    for (int i = 0; i < 10; i++)
        step();
    static double t[STEPS];
    for (int s = 0; s < STEPS; s++) {
        uint64_t t0 = now_ns();
        step();
        t[s] = (double)(now_ns() - t0);
    }
    double sum = 0;
    for (int s = 0; s < STEPS; s++)
        sum += t[s];
    printf("%.1f\n", sum / STEPS / 1000.0);
    return (int)(X[0] > 1e30f); /* keep the work observable */
}

static double run(const char *self, const char *lib, const char *trace) {
    int p[2];
    if (pipe(p) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(p[1], 1);
        if (lib) {
            char buf[32];
            setenv("NVTX_INJECTION64_PATH", lib, 1);
            setenv("TRAINPROF_OUTPUT", trace, 1);
            setenv("TRAINPROF_FORCE", "1", 1); /* each round replaces the last one's trace */
            snprintf(buf, sizeof buf, "%d", (int)getpid());
            setenv("TRAINPROF_TARGET_PID", buf, 1);
        }
        execl(self, self, "--child", (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    char line[64] = "";
    ssize_t n = read(p[0], line, sizeof line - 1);
    close(p[0]);
    waitpid(pid, NULL, 0);
    line[n > 0 ? n : 0] = 0;
    return atof(line);
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--child"))
        return child();
    char lib[PATH_MAX], self[PATH_MAX], exe[PATH_MAX], trace[64];
    if (argc > 1) {
        if (!realpath(argv[1], lib))
            return 1;
    } else {
        if (!realpath("/proc/self/exe", exe))
            return 1;
        *strrchr(exe, '/') = 0;
        strcat(exe, "/../lib/libtrainprof-collector.so");
        if (!realpath(exe, lib)) {
            fprintf(stderr, "bench_collector_step: collector library not found\n");
            return 1;
        }
    }
    if (!realpath("/proc/self/exe", self))
        return 1;
    snprintf(trace, sizeof trace, "/tmp/bench-collector-step-%d.tprof", (int)getpid());
    double plain[ROUNDS], traced[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        plain[r] = run(self, NULL, trace);
        traced[r] = run(self, lib, trace);
    }
    unlink(trace);
    qsort(plain, ROUNDS, sizeof plain[0], cmp);
    qsort(traced, ROUNDS, sizeof traced[0], cmp);
    double ratio = traced[ROUNDS / 2] / plain[ROUNDS / 2];
    printf("step loop (%d layers fwd+bwd, %d steps x %d rounds, ~50 NVTX events/step)\n", LAYERS,
           STEPS, ROUNDS);
    printf("%-28s %12s\n", "setup", "median step");
    printf("%-28s %9.1f us\n", "no collector", plain[ROUNDS / 2]);
    printf("%-28s %9.1f us\n", "collector (stacks api)", traced[ROUNDS / 2]);
    printf("ratio %.4f (goal <= 1.03)\n", ratio);
    return ratio <= 1.03 ? 0 : 1;
}
