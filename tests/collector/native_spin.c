/* native_spin: threads that are not the interpreter's, for test_collector_sampler.py (through
 * ctypes in sampler_prog.py's `native` mode): as an OpenMP or intra-op pool's, they compute in
 * C and run no Python code, so only `record --sample`'s native-thread sampling sees them.
 *
 * tp_spin_start(n) starts n threads named "native-spin" that compute until tp_spin_stop(),
 * which joins them; it returns how many started. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#define SPIN_MAX 64

int tp_spin_start(int n);
void tp_spin_stop(void);

static pthread_t g_th[SPIN_MAX];
static int g_n;
static atomic_int g_stop;

static void *spin(void *arg) {
    (void)arg;
    volatile uint64_t x = 0;
    while (!atomic_load_explicit(&g_stop, memory_order_relaxed))
        for (int i = 0; i < 100000; i++)
            x += (uint64_t)i * (uint64_t)i;
    return NULL;
}

int tp_spin_start(int n) {
    atomic_store(&g_stop, 0);
    g_n = 0;
    for (int i = 0; i < n && i < SPIN_MAX; i++) {
        if (pthread_create(&g_th[g_n], NULL, spin, NULL) != 0)
            break;
        pthread_setname_np(g_th[g_n], "native-spin");
        g_n++;
    }
    return g_n;
}

void tp_spin_stop(void) {
    atomic_store(&g_stop, 1);
    for (int i = 0; i < g_n; i++)
        pthread_join(g_th[i], NULL);
    g_n = 0;
}
