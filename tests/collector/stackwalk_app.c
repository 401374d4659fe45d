/* stackwalk_app: NVTX pushes from call paths that a stack cache keyed by the stack pointer
 * would confuse, for test_collector_stackwalk.py (run under `--stacks all`):
 *   via_f / via_g   two callers with the same frame at the same depth: the pushes share a
 *                   stack pointer, not a stack;
 *   alloca          a frame-pointer function with a frame of varying size;
 *   realigned       a function that realigns its stack (force_align_arg_pointer);
 *   deepK           one function recursing K = 0..3 times: K + 1 of its frames;
 *   thread_f        via_f's path on a second thread;
 *   signal          a push from a signal handler on an alternate signal stack;
 *   pair_XY         outer_X (a or b) calling inner_Y (c or d): four stacks at one stack
 *                   pointer that differ at two frames (each pair of them at one);
 *   jump_a / jump_b a push, then a longjmp out of a deeper frame and a push from another
 *                   path at the same depth;
 *   reuse_f/reuse_g two threads one after the other (glibc reuses the first one's stack
 *                   for the second), each with its own path;
 *   coroutine       a push from a ucontext coroutine's own stack;
 *   far_a / far_b   two callers with the same frame at the same depth under 16 frames of one
 *                   chain: the stacks differ only far from the push (a cache that stopped
 *                   comparing at some depth would mix them up).
 * Each name is pushed N times in an interleaved order. The program's functions are
 * noinline and tail calls are off (see CMakeLists.txt), so every path keeps its frames. */
#include <alloca.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <signal.h>
#include <setjmp.h>
#include <string.h>
#include <ucontext.h>

#define N 300

static volatile int g_sink;

__attribute__((noinline)) static void emit(const char *name) {
    nvtxRangePushA(name);
    g_sink++;
    nvtxRangePop();
}

__attribute__((noinline)) static void path_f(const char *name) {
    emit(name);
    g_sink++;
}

__attribute__((noinline)) static void path_g(const char *name) {
    emit(name);
    g_sink += 2; /* not path_f's code: identical functions are folded into one */
}

__attribute__((noinline, optimize("no-omit-frame-pointer"))) static void path_alloca(int k) {
    volatile char *p = alloca(16 + 48 * (size_t)(k % 5));
    p[0] = 1;
    emit("alloca");
    g_sink += p[0];
}

/* Realigned with arguments on the stack: gcc reaches them through a dynamic realignment
 * pointer (DRAP), and the frame's CFA is read through rbp. */
__attribute__((noinline, force_align_arg_pointer)) static void
path_realigned(int a, int b, int c, int d, int e, int f, int g, int k) {
    _Alignas(64) volatile char buf[64];
    volatile char *extra = alloca(16 + (size_t)(k % 3) * 32); /* a dynamic frame too */
    extra[0] = 0;
    buf[k & 63] = (char)(a + b + c + d + e + f + g + extra[0]);
    emit("realigned");
    g_sink += buf[k & 63];
}

__attribute__((noinline)) static void path_deep(int d, const char *name) {
    if (d)
        path_deep(d - 1, name);
    else
        emit(name);
    g_sink++;
}

__attribute__((noinline)) static void inner_c(const char *name) {
    emit(name);
    g_sink += 3;
}

__attribute__((noinline)) static void inner_d(const char *name) {
    emit(name);
    g_sink += 4;
}

__attribute__((noinline)) static void outer_a(int inner, const char *name) {
    if (inner)
        inner_d(name);
    else
        inner_c(name);
    g_sink += 5;
}

__attribute__((noinline)) static void outer_b(int inner, const char *name) {
    if (inner)
        inner_d(name);
    else
        inner_c(name);
    g_sink += 6;
}

static jmp_buf g_jump;

__attribute__((noinline)) static void jump_deeper(void) {
    emit("jump_a");
    longjmp(g_jump, 1);
}

__attribute__((noinline)) static void jump_a(void) {
    jump_deeper();
    g_sink += 7;
}

__attribute__((noinline)) static void jump_b(void) {
    emit("jump_b");
    g_sink += 8;
}

__attribute__((noinline)) static void chain(int d, const char *name) {
    if (d)
        chain(d - 1, name);
    else
        emit(name);
    g_sink += 11; /* not path_deep's code (identical functions are folded into one) */
}

__attribute__((noinline)) static void far_a(void) {
    chain(15, "far_a");
    g_sink += 9;
}

__attribute__((noinline)) static void far_b(void) {
    chain(15, "far_b");
    g_sink += 10;
}

/* setjmp in a frame of its own (main's loop variables are not clobbered by the longjmp). */
__attribute__((noinline)) static void jump_round(void) {
    if (!setjmp(g_jump))
        jump_a();
    else
        jump_b();
}

static void *reuse_main(void *arg) {
    for (int i = 0; i < N; i++) {
        if (arg)
            path_g("reuse_g");
        else
            path_f("reuse_f");
    }
    return NULL;
}

static ucontext_t g_main_uc, g_coro_uc;

static void coroutine(void) {
    for (;;) {
        path_f("coroutine");
        swapcontext(&g_coro_uc, &g_main_uc);
    }
}

static void on_signal(int sig) {
    (void)sig;
    emit("signal");
}

static void *thread_main(void *arg) {
    (void)arg;
    for (int i = 0; i < N; i++)
        path_f("thread_f");
    return NULL;
}

int main(void) {
    static const char *const deep[] = {"deep0", "deep1", "deep2", "deep3"};
    static char altstack[1 << 16]; /* static: nothing for LeakSanitizer to report */
    stack_t ss = {.ss_sp = altstack, .ss_size = sizeof altstack};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_ONSTACK;
    if (sigaltstack(&ss, NULL) || sigaction(SIGUSR1, &sa, NULL))
        return 1;
    pthread_t th;
    for (int k = 0; k < 2; k++) /* one after the other: the second gets the first one's stack */
        if (pthread_create(&th, NULL, reuse_main, k ? "g" : NULL) || pthread_join(th, NULL))
            return 1;
    static char coro_stack[1 << 16];
    if (getcontext(&g_coro_uc))
        return 1;
    g_coro_uc.uc_stack = (stack_t){.ss_sp = coro_stack, .ss_size = sizeof coro_stack};
    g_coro_uc.uc_link = NULL;
    makecontext(&g_coro_uc, coroutine, 0);
    if (pthread_create(&th, NULL, thread_main, NULL))
        return 1;
    for (int i = 0; i < N; i++) {
        path_f("via_f");
        path_g("via_g");
        path_alloca(i);
        path_realigned(1, 2, 3, 4, 5, 6, 7, i);
        for (int d = 0; d < 4; d++)
            path_deep((d + i) % 4, deep[(d + i) % 4]);
        static const char *const pairs[] = {"pair_ac", "pair_ad", "pair_bc", "pair_bd"};
        for (int q = 0; q < 4; q++) {
            int x = (q + i) % 4;
            if (x < 2)
                outer_a(x & 1, pairs[x]);
            else
                outer_b(x & 1, pairs[x]);
        }
        jump_round();
        far_a();
        far_b();
        if (swapcontext(&g_main_uc, &g_coro_uc))
            return 1;
        if (i % 50 == 0)
            raise(SIGUSR1);
    }
    pthread_join(th, NULL);
    return 0;
}
