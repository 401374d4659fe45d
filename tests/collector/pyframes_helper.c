/* pyframes_helper: a C library that CPython test programs call through ctypes
 * (tests/collector/pyframes_prog.py), so that NVTX ranges, device API calls and allocation
 * failures reach the collector from native code with Python frames under it; and a pthread
 * of its own, which has no Python thread state at all. */
#define TP_ACTIVITY_IMPLEMENT
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdint.h>

#include "trainprof/activity.h"

int tph_push(const char *name);
int tph_pop(void);
void tph_thread(const char *name, int n);
void tph_call(void (*fn)(void));
void tph_api(void);
void tph_oom(void);

int tph_push(const char *name) {
    return nvtxRangePushA(name);
}

int tph_pop(void) {
    return nvtxRangePop();
}

typedef struct {
    const char *name;
    int n;
} thread_arg;

static void *thread_main(void *p) {
    const thread_arg *a = p;
    for (int i = 0; i < a->n; i++) {
        nvtxRangePushA(a->name);
        nvtxRangePop();
    }
    return NULL;
}

/* Runs `n` push/pop pairs named `name` on a new pthread and waits for it. Called through
 * ctypes.PyDLL, the calling Python thread holds the GIL all along: the new thread must not
 * be given that thread's Python frames. */
void tph_thread(const char *name, int n) {
    thread_arg a = {name, n};
    pthread_t t;
    if (pthread_create(&t, NULL, thread_main, &a) == 0)
        pthread_join(t, NULL);
}

/* Calls back into Python: a stack with Python frames on both sides of this C frame. */
void tph_call(void (*fn)(void)) {
    fn();
}

/* One device-API call (an API record with the launch-site stack). */
void tph_api(void) {
    uint64_t t0 = tp_activity_now();
    tp_activity_api("tph_launch", t0, t0 + 1000, tp_activity_next_correlation(), 0);
}

/* An allocation failure on a device of 1 GiB (ALLOC_FAIL with the calling stack). */
void tph_oom(void) {
    uint32_t dev = tp_activity_device("pyframes-device", 1ull << 30);
    tp_activity_alloc_fail(64ull << 20, 1ull << 30, 256ull << 20, 16ull << 20, dev);
}
