/* nvtx_app: the collector's test program. Every NVTX feature the collector hooks, on several
 * threads, with counts the tests know in advance (see test_collector_nvtx.c):
 *
 *   nvtx_app [normal]      STEPS steps on the main thread and WORKERS named worker threads
 *   nvtx_app flood N       N marks as fast as possible (buffer exhaustion)
 *   nvtx_app pairs N       N iterations of: push "outer", push a reused buffer holding "buf-a"
 *                          or "buf-b" in turn, pop, pop, and a mark "tick" every 64th; then
 *                          "page-long" across a page end pushed and popped twice, then "abc"
 *                          at its address, the next page unreadable, twice (the collector's
 *                          fast paths: string cache, records in place, ring limits)
 *   nvtx_app touch FILE    creates FILE (proof that it ran), one range "touched"
 *   nvtx_app wait          a few ranges, prints "ready", then sleeps (SIGTERM/SIGKILL tests)
 *   nvtx_app exit          a few ranges, waits for the periodic drain, then _exit(3)
 *   nvtx_app fork          one range, forks; parent and child each push their own range
 *   nvtx_app capture       ranges inside and outside a range named "capture-me"
 *   nvtx_app plain         never calls NVTX
 *   nvtx_app activity      reports a CPU device's work through trainprof/activity.h
 *   nvtx_app cuda          calls the collector's InitializeInjection as the CUDA driver would,
 *                          then one NVTX range (CUPTI refuses without a GPU)
 *   nvtx_app exec          one range "before-exec", then execv()s itself in mode "plain"
 *   nvtx_app quickexit     10 ranges, then _exit(3) at once (no drain has run yet)
 *   nvtx_app quick_Exit    the same through _Exit(4)
 *   nvtx_app forkexit N    N children, each 5 ranges "child" then _exit(0) at once
 *   nvtx_app blocked       blocks SIGINT on its only thread, prints "ready", waits until a
 *                          SIGINT is pending (the collector's threads must not take it), then
 *                          unblocks it and dies of it
 *   nvtx_app rawclose      closes every descriptor >= 3 by the raw close_range syscall (past
 *                          the collector's wrappers), then writes own.dat and 100 ranges
 *   nvtx_app libcclose     the same through glibc's closefrom(3); prints the number own.dat
 *                          got ("fd 3" without trainprof)
 *   nvtx_app dup2          dup2()s own.dat onto the trace's descriptor and writes through it
 *   nvtx_app lostfd        as rawclose, but first moves the trace file away (to NAME.moved),
 *                          so the collector cannot reopen it
 *   nvtx_app ignterm       expects SIGTERM ignored (started so), raises it, prints "alive"
 *   nvtx_app sigview       sigaction/signal round trips on SIGINT/SIGTERM; prints "ok" */
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtMem.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/mman.h>
#include <unistd.h>
#include <wchar.h>
#include <dlfcn.h>

#define TP_ACTIVITY_IMPLEMENT
#include "trainprof/activity.h"

#define STEPS 5
#define WORKERS 2
#define WORKER_ITERS 3
#define POOL_BYTES (1u << 20)

void nvtx_mod_range(void);

static nvtxDomainHandle_t g_app, g_alloc;
static nvtxRangeId_t g_async;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

/* ---------------------------------------------------------------- toy sub-allocator */

typedef struct {
    char *base;
    size_t used;
    nvtxMemHeapHandle_t heap;
} pool;

__attribute__((noinline)) static void suballoc_create_pool(pool *p) {
    p->base = malloc(POOL_BYTES);
    p->used = 0;
    nvtxMemVirtualRangeDesc_t range = {POOL_BYTES, p->base};
    nvtxMemHeapDesc_t d;
    memset(&d, 0, sizeof d);
    d.extCompatID = NVTX_EXT_COMPATID_MEM;
    d.structSize = sizeof d;
    d.usage = NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR;
    d.type = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
    d.typeSpecificDescSize = sizeof range;
    d.typeSpecificDesc = &range;
    d.messageType = NVTX_MESSAGE_TYPE_ASCII;
    d.message.ascii = "pool";
    p->heap = nvtxMemHeapRegister(g_alloc, &d);
}

__attribute__((noinline)) static void *suballoc_alloc(pool *p, size_t n) {
    void *ptr = p->base + p->used;
    p->used += n;
    nvtxMemVirtualRangeDesc_t r = {n, ptr};
    nvtxMemRegionsRegisterBatch_t b;
    memset(&b, 0, sizeof b);
    b.extCompatID = NVTX_EXT_COMPATID_MEM;
    b.structSize = sizeof b;
    b.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
    b.heap = p->heap;
    b.regionCount = 1;
    b.regionDescElementSize = sizeof r;
    b.regionDescElements = &r;
    nvtxMemRegionsRegister(g_alloc, &b);
    return ptr;
}

__attribute__((noinline)) static void suballoc_resize(void *ptr, size_t n) {
    nvtxMemVirtualRangeDesc_t r = {n, ptr};
    nvtxMemRegionsResizeBatch_t b;
    memset(&b, 0, sizeof b);
    b.extCompatID = NVTX_EXT_COMPATID_MEM;
    b.structSize = sizeof b;
    b.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
    b.regionDescCount = 1;
    b.regionDescElementSize = sizeof r;
    b.regionDescElements = &r;
    nvtxMemRegionsResize(g_alloc, &b);
}

__attribute__((noinline)) static void suballoc_free(void *ptr) {
    nvtxMemRegionRef_t ref;
    ref.pointer = ptr;
    nvtxMemRegionsUnregisterBatch_t b;
    memset(&b, 0, sizeof b);
    b.extCompatID = NVTX_EXT_COMPATID_MEM;
    b.structSize = sizeof b;
    b.refType = NVTX_MEM_REGION_REF_TYPE_POINTER;
    b.refCount = 1;
    b.refElementSize = sizeof ref;
    b.refElements = &ref;
    nvtxMemRegionsUnregister(g_alloc, &b);
}

__attribute__((noinline)) static void suballoc_destroy(pool *p) {
    nvtxMemHeapReset(g_alloc, p->heap);
    nvtxMemHeapUnregister(g_alloc, p->heap);
    free(p->base);
}

/* ---------------------------------------------------------------- ranges */

static void push_ex(nvtxDomainHandle_t d, const char *msg, uint32_t color, uint64_t payload) {
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.category = 1;
    a.colorType = NVTX_COLOR_ARGB;
    a.color = color;
    a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
    a.payload.ullValue = payload;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = msg;
    nvtxDomainRangePushEx(d, &a);
}

static void push_registered(nvtxDomainHandle_t d, nvtxStringHandle_t s) {
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = s;
    nvtxDomainRangePushEx(d, &a);
}

static void *worker(void *arg) {
    int id = (int)(intptr_t)arg;
    char name[32];
    snprintf(name, sizeof name, "worker-%d", id);
    nvtxNameOsThreadA((uint32_t)gettid(), name);
    for (int i = 0; i < WORKER_ITERS; i++) {
        nvtxRangePushA("worker-step");
        nvtxRangePushA("worker-inner");
        nvtxRangePop();
        nvtxRangePop();
    }
    pthread_mutex_lock(&g_mu);
    if (id == 0 && g_async)
        nvtxRangeEnd(g_async); /* a start/end range that ends on another thread */
    pthread_mutex_unlock(&g_mu);
    return NULL;
}

__attribute__((noinline)) static void one_step(int s, nvtxStringHandle_t reg) {
    nvtxRangePushA("step");
    push_ex(g_app, "forward", 0xff00ff00u, (uint64_t)s);
    nvtxMarkA("mark-A");
    nvtxRangePushW(L"wide-\u00fc");
    nvtxRangePop();
    nvtxDomainRangePop(g_app);
    push_registered(g_app, reg);
    nvtxDomainRangePop(g_app);
    nvtxRangePop();
}

__attribute__((noinline)) static int run_normal(void) {
    nvtxNameOsThreadA((uint32_t)gettid(), "main-thread");
    g_app = nvtxDomainCreateA("app");
    g_alloc = nvtxDomainCreateW(L"alloc");
    nvtxDomainNameCategoryA(g_app, 1, "compute");
    nvtxStringHandle_t reg = nvtxDomainRegisterStringA(g_app, "registered-range");
    pthread_mutex_lock(&g_mu);
    g_async = nvtxRangeStartA("async-range");
    pthread_mutex_unlock(&g_mu);
    pool p;
    suballoc_create_pool(&p);
    void *a = suballoc_alloc(&p, 4096), *b = suballoc_alloc(&p, 8192);
    suballoc_alloc(&p, 100);
    suballoc_resize(b, 16384);
    suballoc_free(a);
    for (int s = 0; s < STEPS; s++)
        one_step(s, reg);
    nvtx_mod_range();
    pthread_t th[WORKERS];
    for (int i = 0; i < WORKERS; i++)
        pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
    for (int i = 0; i < WORKERS; i++)
        pthread_join(th[i], NULL);
    suballoc_destroy(&p);
    nvtxDomainDestroy(g_alloc);
    return 0;
}

static int run_capture(void) {
    nvtxRangePushA("before");
    nvtxRangePop();
    nvtxRangePushA("capture-me");
    nvtxRangePushA("inside");
    nvtxMarkA("inside-mark");
    nvtxRangePop();
    nvtxRangePop();
    nvtxRangePushA("after");
    nvtxMarkA("after-mark");
    nvtxRangePop();
    return 0;
}

static int run_pairs(long n) {
    static char buf[16];
    for (long i = 0; i < n; i++) {
        nvtxRangePushA("outer");
        snprintf(buf, sizeof buf, "buf-%c", i % 2 ? 'b' : 'a');
        nvtxRangePushA(buf);
        nvtxRangePop();
        nvtxRangePop();
        if (i % 64 == 63)
            nvtxMarkA("tick");
    }
    long page = sysconf(_SC_PAGESIZE);
    char *base =
        mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED)
        return 1;
    char *p = base + page - 5; /* "page-long" runs into the second page */
    strcpy(p, "page-long");
    for (int i = 0; i < 2; i++)
        nvtxRangePushA(p), nvtxRangePop();
    strcpy(p, "abc"); /* now ends in the first page; the second goes away */
    if (mprotect(base + page, (size_t)page, PROT_NONE) != 0)
        return 1;
    for (int i = 0; i < 2; i++)
        nvtxRangePushA(p), nvtxRangePop();
    munmap(base, (size_t)page * 2);
    for (int i = 0; i < 100; i++) /* deeper than a word's 64 bits of recorded pushes */
        nvtxRangePushA("deep");
    for (int i = 0; i < 100; i++)
        nvtxRangePop();
    return 0;
}

static int run_fork(void) {
    nvtxDomainHandle_t d = nvtxDomainCreateA("forkdom");
    nvtxRangePushA("before-fork");
    nvtxRangePop();
    pid_t pid = fork();
    if (pid == 0) {
        nvtxRangePushA("in-child");
        nvtxRangePop();
        push_ex(d, "in-child-domain", 0xff0000ffu, 1); /* a domain made before the fork */
        nvtxDomainRangePop(d);
        exit(0);
    }
    nvtxRangePushA("in-parent");
    nvtxRangePop();
    int st;
    waitpid(pid, &st, 0);
    printf("child %d\n", (int)pid);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}

static int run_activity(void) {
    if (!tp_activity_enabled())
        return 4;
    uint32_t dev = tp_activity_device("cpu-device", 1u << 30);
    uint32_t corr = tp_activity_next_correlation();
    uint64_t t0 = tp_activity_now();
    uint64_t t1 = tp_activity_now() + 10;
    static const uint32_t grid[3] = {4, 2, 1}, block[3] = {64, 1, 1};
    tp_activity_api("launch_gemm", t0, t1, corr, 0);
    tp_activity_kernel("gemm", dev, 1, t1, t1 + 1000, corr, grid, block);
    tp_activity_memcpy(1, 2, 3, 4096, dev, 1, t1, t1 + 10, tp_activity_next_correlation(), 1);
    tp_activity_memset(3, 512, 7, dev, 1, t1, t1 + 5, tp_activity_next_correlation());
    tp_activity_sync(3, dev, 1, t1, t1 + 2000, tp_activity_next_correlation());
    tp_activity_device_mem(1, 0x10000, 8192, dev);
    tp_activity_device_mem(0, 0x10000, 8192, dev);
    tp_activity_alloc_fail(1u << 20, 1u << 21, 1u << 20, 1u << 19, dev);
    return 0;
}

static int run_cuda(void) {
    const char *lib = getenv("TRAINPROF_COLLECTOR");
    void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : NULL;
    int (*init)(void) = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;
    if (!init || init() != 1 || init() != 1) /* a second call is harmless */
        return 5;
    nvtxRangePushA("after-cuda");
    nvtxRangePop();
    return 0;
}

static void ranges(const char *name, int n) {
    for (int i = 0; i < n; i++) {
        nvtxRangePushA(name);
        nvtxRangePop();
    }
}

static int run_fork_exit(int n) {
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            ranges("child", 5);
            _exit(0);
        }
        int st;
        if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
            return 1;
    }
    ranges("parent", 1);
    return 0;
}

static int run_blocked(void) {
    ranges("early", 10);
    sigset_t s, pending;
    sigemptyset(&s);
    sigaddset(&s, SIGINT);
    sigprocmask(SIG_BLOCK, &s, NULL);
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    do { /* polls a state, not a clock: the test's kill() makes it pending for good */
        usleep(1000);
        sigpending(&pending);
    } while (!sigismember(&pending, SIGINT));
    sigprocmask(SIG_UNBLOCK, &s, NULL);
    return 5; /* not reached: SIGINT's default action */
}

/* Writes own.dat through `fd`: the bytes the test expects. */
static int write_own(int fd) {
    static const char line[] = "the program's own data\n";
    for (int i = 0; i < 50; i++)
        if (write(fd, line, sizeof line - 1) != (ssize_t)(sizeof line - 1))
            return 1;
    return 0;
}

static int run_close_all(int raw) {
    ranges("before", 10);
    if (raw)
        syscall(SYS_close_range, 3u, ~0u, 0);
    else
        closefrom(3);
    int fd = open("own.dat", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    printf("fd %d\n", fd);
    fflush(stdout);
    int bad = fd < 0 || write_own(fd);
    ranges("after", 100);
    return bad || close(fd) != 0;
}

/* The descriptor whose link names a .tprof file (its path into `path`), -1 when none. */
static int trace_fd_path(char *path, size_t len) {
    DIR *d = opendir("/proc/self/fd");
    int found = -1;
    for (struct dirent *e; d && (e = readdir(d));) {
        char link[300], target[4096];
        snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n > 6 && !memcmp(target + n - 6, ".tprof", 6)) {
            found = atoi(e->d_name);
            snprintf(path, len, "%.*s", (int)n, target);
        }
    }
    if (d)
        closedir(d);
    return found;
}

static int trace_fd(void) {
    char path[4096];
    return trace_fd_path(path, sizeof path);
}

static int run_lost_fd(void) {
    char path[4096], moved[4200];
    ranges("before", 10);
    if (trace_fd_path(path, sizeof path) < 0)
        return 9;
    snprintf(moved, sizeof moved, "%s.moved", path);
    if (rename(path, moved) != 0)
        return 9;
    syscall(SYS_close_range, 3u, ~0u, 0);
    int fd = open("own.dat", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int bad = fd < 0 || write_own(fd);
    ranges("after", 100);
    return bad || close(fd) != 0;
}

static int run_dup2(void) {
    ranges("before", 10);
    int t = trace_fd(), fd = open("own.dat", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (t < 0 || fd < 0 || dup2(fd, t) != t)
        return 7;
    close(fd);
    int bad = write_own(t);
    ranges("after", 100);
    return bad || close(t) != 0;
}

static int run_ignterm(void) {
    struct sigaction sa;
    if (sigaction(SIGTERM, NULL, &sa) != 0 || sa.sa_handler != SIG_IGN)
        return 8;
    ranges("early", 1);
    raise(SIGTERM);
    printf("alive\n");
    return 0;
}

static volatile sig_atomic_t g_hits;

static void on_int(int sig) {
    (void)sig;
    g_hits++;
}

/* What the program installs is what it reads back, and the kernel acts on it. */
static int run_sigview(void) {
    ranges("early", 1);
    struct sigaction sa, back;
    if (sigaction(SIGINT, NULL, &back) != 0 || back.sa_handler != SIG_DFL ||
        (back.sa_flags & SA_SIGINFO))
        return 10;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_int;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGUSR1);
    sa.sa_flags = SA_RESETHAND | SA_RESTART;
    if (sigaction(SIGINT, &sa, NULL) != 0 || sigaction(SIGINT, NULL, &back) != 0 ||
        back.sa_handler != on_int || !sigismember(&back.sa_mask, SIGUSR1) ||
        (back.sa_flags & (SA_RESETHAND | SA_RESTART | SA_SIGINFO)) != (SA_RESETHAND | SA_RESTART))
        return 11;
    raise(SIGINT); /* runs on_int once and resets to the default (SA_RESETHAND) */
    if (g_hits != 1 || sigaction(SIGINT, NULL, &back) != 0 || back.sa_handler != SIG_DFL)
        return 12;
    if (signal(SIGTERM, on_int) != SIG_DFL || signal(SIGTERM, SIG_IGN) != on_int ||
        signal(SIGTERM, SIG_DFL) != SIG_IGN)
        return 13;
    printf("ok\n");
    return 0;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "normal";
    if (!strcmp(mode, "quickexit") || !strcmp(mode, "quick_Exit")) {
        ranges("early", 10);
        if (mode[5] == 'e')
            _exit(3);
        _Exit(4);
    }
    if (!strcmp(mode, "forkexit"))
        return run_fork_exit(argc > 2 ? atoi(argv[2]) : 4);
    if (!strcmp(mode, "blocked"))
        return run_blocked();
    if (!strcmp(mode, "rawclose") || !strcmp(mode, "libcclose"))
        return run_close_all(mode[0] == 'r');
    if (!strcmp(mode, "dup2"))
        return run_dup2();
    if (!strcmp(mode, "lostfd"))
        return run_lost_fd();
    if (!strcmp(mode, "ignterm"))
        return run_ignterm();
    if (!strcmp(mode, "sigview"))
        return run_sigview();
    if (!strcmp(mode, "normal"))
        return run_normal();
    if (!strcmp(mode, "capture"))
        return run_capture();
    if (!strcmp(mode, "fork"))
        return run_fork();
    if (!strcmp(mode, "pairs"))
        return run_pairs(argc > 2 ? atol(argv[2]) : 1000);
    if (!strcmp(mode, "flood")) {
        long n = argc > 2 ? atol(argv[2]) : 100000;
        for (long i = 0; i < n; i++)
            nvtxMarkA("flood");
        return 0;
    }
    if (!strcmp(mode, "touch") && argc > 2) {
        FILE *f = fopen(argv[2], "w");
        nvtxRangePushA("touched");
        nvtxRangePop();
        return f && fclose(f) == 0 ? 0 : 1;
    }
    if (!strcmp(mode, "wait") || !strcmp(mode, "exit")) {
        for (int i = 0; i < 10; i++) {
            nvtxRangePushA("early");
            nvtxRangePop();
        }
        usleep(600 * 1000); /* longer than the collector's flush period in the tests */
        if (!strcmp(mode, "exit"))
            _exit(3);
        printf("ready %d\n", (int)getpid());
        fflush(stdout);
        for (;;)
            pause();
    }
    if (!strcmp(mode, "plain"))
        return 0;
    if (!strcmp(mode, "activity"))
        return run_activity();
    if (!strcmp(mode, "cuda"))
        return run_cuda();
    if (!strcmp(mode, "exec")) {
        nvtxRangePushA("before-exec");
        nvtxRangePop();
        char *args[] = {argv[0], "plain", NULL};
        execv("/proc/self/exe", args);
        return 6;
    }
    fprintf(stderr, "nvtx_app: unknown mode %s\n", mode);
    return 2;
}
