/* stacks_helper: a C library that tests/e2e/stacks_prog.py calls through ctypes, so that
 * "kernels" of known durations are launched (through include/trainprof/activity.h, an API call
 * and its kernel sharing a correlation id) from known Python lines; and a pthread of its own,
 * which has no Python thread state, launching from C only. */
#define TP_ACTIVITY_IMPLEMENT
#include <pthread.h>
#include <stdint.h>

#include "trainprof/activity.h"

void tsh_launch(const char *name, uint64_t ns);
void tsh_thread(const char *name, uint64_t ns, int n);

/* One launch: a 1 us API call on the calling thread (its stack is the launching stack), then
 * the kernel, `ns` long, on stream 7 of the helper's device. */
void tsh_launch(const char *name, uint64_t ns) {
    static const uint32_t grid[3] = {1, 1, 1}, block[3] = {32, 1, 1};
    uint32_t dev = tp_activity_device("stacks-device", 1ull << 30);
    uint64_t t0 = tp_activity_now();
    uint32_t corr = tp_activity_next_correlation();
    tp_activity_api("tshLaunchKernel", t0, t0 + 1000, corr, 0);
    tp_activity_kernel(name, dev, 7, t0 + 2000, t0 + 2000 + ns, corr, grid, block);
}

typedef struct {
    const char *name;
    uint64_t ns;
    int n;
} thread_arg;

static void *thread_main(void *p) {
    const thread_arg *a = p;
    for (int i = 0; i < a->n; i++)
        tsh_launch(a->name, a->ns);
    return NULL;
}

/* `n` launches from a new pthread (no Python state), waited for. */
void tsh_thread(const char *name, uint64_t ns, int n) {
    thread_arg a = {name, ns, n};
    pthread_t t;
    if (pthread_create(&t, NULL, thread_main, &a) == 0)
        pthread_join(t, NULL);
}
