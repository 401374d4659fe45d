/* native_spin: threads that are not the interpreter's, for test_collector_sampler.py (through
 * ctypes in sampler_prog.py's `native` mode): as an OpenMP or intra-op pool's, they run C code
 * and no Python, so only `record --sample`'s native-thread sampling sees them.
 *
 * tp_spin_start(n, sleepers) starts n threads named "native-spin" that compute and `sleepers`
 * named "native-sleep" that wait (as a CUDA job's driver and NCCL threads mostly do), all until
 * tp_spin_stop(), which joins them; it returns how many started. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#define SPIN_MAX 64

int tp_spin_start(int n, int sleepers);
void tp_spin_stop(void);

static pthread_t g_th[SPIN_MAX];
static int g_n;
static atomic_int g_stop;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;

static void *spin(void *arg) {
    (void)arg;
    volatile uint64_t x = 0;
    while (!atomic_load_explicit(&g_stop, memory_order_relaxed))
        for (int i = 0; i < 100000; i++)
            x += (uint64_t)i * (uint64_t)i;
    return NULL;
}

static void *sleep_until_stop(void *arg) {
    (void)arg;
    pthread_mutex_lock(&g_mu);
    while (!atomic_load(&g_stop))
        pthread_cond_wait(&g_cv, &g_mu);
    pthread_mutex_unlock(&g_mu);
    return NULL;
}

int tp_spin_start(int n, int sleepers) {
    atomic_store(&g_stop, 0);
    g_n = 0;
    for (int i = 0; i < n + sleepers && i < SPIN_MAX; i++) {
        int busy = i < n;
        if (pthread_create(&g_th[g_n], NULL, busy ? spin : sleep_until_stop, NULL) != 0)
            break;
        pthread_setname_np(g_th[g_n], busy ? "native-spin" : "native-sleep");
        g_n++;
    }
    return g_n;
}

void tp_spin_stop(void) {
    pthread_mutex_lock(&g_mu);
    atomic_store(&g_stop, 1);
    pthread_cond_broadcast(&g_cv);
    pthread_mutex_unlock(&g_mu);
    for (int i = 0; i < g_n; i++)
        pthread_join(g_th[i], NULL);
    g_n = 0;
}
