/* tp_collector_guard: exit, fork and signal handling (see tp_collector_guard.h). */
#include "tp_collector_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tp_collector.h"

void tp_collector_after_fork_child(void);

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_wake[2] = {-1, -1}; /* handler -> helper: the signal number */
static int g_done[2] = {-1, -1}; /* helper -> handler: the trace is closed */
static struct sigaction g_prev_int, g_prev_term;

static struct sigaction *prev_of(int sig) {
    return sig == SIGINT ? &g_prev_int : &g_prev_term;
}

static int prev_is_default(int sig) {
    const struct sigaction *p = prev_of(sig);
    return !(p->sa_flags & SA_SIGINFO) && p->sa_handler == SIG_DFL;
}

/* The helper does the I/O the handler may not do. */
static void *helper_main(void *arg) {
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    for (;;) {
        unsigned char sig;
        ssize_t n = read(g_wake[0], &sig, 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return NULL;
        if (prev_is_default(sig)) {
            tp_collector_finish();
            (void)!write(g_done[1], &sig, 1);
        } else {
            tp_collector_flush();
        }
    }
}

static void chain(int sig, siginfo_t *info, void *uc) {
    const struct sigaction *p = prev_of(sig);
    if (p->sa_flags & SA_SIGINFO) {
        if (p->sa_sigaction)
            p->sa_sigaction(sig, info, uc);
    } else if (p->sa_handler != SIG_IGN && p->sa_handler != SIG_DFL) {
        p->sa_handler(sig);
    }
}

/* Async-signal-safe: write, poll, read, sigaction and raise only. */
static void on_signal(int sig, siginfo_t *info, void *uc) {
    int saved = errno;
    unsigned char b = (unsigned char)sig;
    if (g_wake[1] >= 0 && write(g_wake[1], &b, 1) == 1 && prev_is_default(sig)) {
        struct pollfd pfd = {.fd = g_done[0], .events = POLLIN};
        if (poll(&pfd, 1, 3000) == 1)
            (void)!read(g_done[0], &b, 1);
    }
    if (prev_is_default(sig)) {
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigaction(sig, &dfl, NULL);
        raise(sig); /* delivered when this handler returns */
    } else {
        chain(sig, info, uc);
    }
    errno = saved;
}

static void start_helper(void) {
    if (pipe2(g_wake, O_CLOEXEC) != 0 || pipe2(g_done, O_CLOEXEC) != 0)
        return;
    pthread_t th;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&a, 64 * 1024);
    if (pthread_create(&th, &a, helper_main, NULL) != 0) {
        close(g_wake[1]);
        g_wake[1] = -1;
    }
    pthread_attr_destroy(&a);
}

/* Only take over a signal the program has not set to ignore (e.g. nohup). */
static void hook_signal(int sig) {
    struct sigaction sa, *prev = prev_of(sig);
    if (sigaction(sig, NULL, prev) != 0)
        return;
    if (!(prev->sa_flags & SA_SIGINFO) && prev->sa_handler == SIG_IGN)
        return;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
}

static void at_exit(void) {
    tp_collector_finish();
}

static void fork_child(void) {
    /* The helper thread did not survive the fork; its pipes did. */
    for (int i = 0; i < 2; i++) {
        close(g_wake[i]);
        close(g_done[i]);
        g_wake[i] = g_done[i] = -1;
    }
    start_helper();
    tp_collector_after_fork_child();
}

static void install_once(void) {
    atexit(at_exit);
    pthread_atfork(NULL, NULL, fork_child);
    start_helper();
    hook_signal(SIGINT);
    hook_signal(SIGTERM);
}

void tp_guard_install(void) {
    pthread_once(&g_once, install_once);
}
