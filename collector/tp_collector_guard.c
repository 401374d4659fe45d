/* tp_collector_guard: exit paths and the virtual SIGINT/SIGTERM dispositions (see
 * tp_collector_guard.h; why this design: docs/collector.md, "Signals"). */
#include "tp_collector_guard.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tp_collector.h"
#include "tp_sigforward.h"

#define CLOSE_WAIT_NS 3000000000ll /* a handler waits this long at most for the trace */
#define PEERS 16
#define REQ_FLUSH 1u
#define REQ_FINISH 2u

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef tp_sighandler (*signal_fn)(int, tp_sighandler);

/* Per sender: direct copies received, and how many of them a passed-on copy matched. */
typedef struct {
    uint32_t sender, direct, matched, last_seq;
} peer;

/* One signal the guard holds. `act` is what the program believes is installed; `seq` is its
 * seqlock (odd while written) so a handler on another thread reads it whole. */
typedef struct {
    int sig;
    _Atomic uint32_t seq;
    struct sigaction act;
    _Atomic pid_t peers_owner; /* thread updating peers (a spin lock), 0 when none */
    peer peers[PEERS];
    uint32_t npeers;
} hooked;

static hooked g_hooked[] = {{.sig = SIGINT}, {.sig = SIGTERM}};
#define NHOOKED ((int)(sizeof g_hooked / sizeof g_hooked[0]))

static atomic_flag g_view_lock = ATOMIC_FLAG_INIT; /* writers of every view */
static _Atomic int g_interposed;                   /* our wrappers are the program's */
static _Atomic int g_virtual;                      /* views are authoritative */
static sigaction_fn g_real_sigaction;
static signal_fn g_real_signal, g_real_sysv_signal;
static pthread_once_t g_atexit_once = PTHREAD_ONCE_INIT;

static _Atomic uint32_t g_req;       /* futex word: REQ_* for the helper */
static _Atomic uint32_t g_closed;    /* futex word: 1 once the helper finished the trace */
static _Atomic uint32_t g_helper_up; /* futex word: 1 once the helper thread runs */
static _Atomic pid_t g_helper_pid;   /* the process whose helper thread runs, 0 for none */
static pid_t g_forwarder;            /* `trainprof record`: the target process's parent */

/* ---------------------------------------------------------------- small tools */

static hooked *hooked_of(int sig) {
    for (int i = 0; i < NHOOKED; i++)
        if (g_hooked[i].sig == sig)
            return &g_hooked[i];
    return NULL;
}

static void resolve_real(void) {
    if (!g_real_sigaction)
        g_real_sigaction = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
    if (!g_real_signal)
        g_real_signal = (signal_fn)dlsym(RTLD_NEXT, "signal");
    if (!g_real_sysv_signal)
        g_real_sysv_signal = (signal_fn)dlsym(RTLD_NEXT, "sysv_signal");
}

static void futex_wait(_Atomic uint32_t *word, uint32_t val, const struct timespec *rel) {
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, val, rel, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *word) {
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static int64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

TP_VFORK_CHILD
static int is_default(const struct sigaction *a) {
    return !(a->sa_flags & SA_SIGINFO) && a->sa_handler == SIG_DFL;
}

TP_VFORK_CHILD
static int is_ignored(const struct sigaction *a) {
    return !(a->sa_flags & SA_SIGINFO) && a->sa_handler == SIG_IGN;
}

/* ---------------------------------------------------------------- the helper thread */

/* Does the I/O a signal handler may not do: flushes, and finishes the trace for a process
 * that is about to die (death by signal, _exit). */
static void *helper_main(void *arg) {
    (void)arg;
    /* named before start_helper returns: a thread of ours, hidden from the program's count
     * of its threads (tp_collector_interpose.c) */
    prctl(PR_SET_NAME, "trainprof-guard", 0, 0, 0);
    atomic_store(&g_helper_up, 1);
    futex_wake(&g_helper_up);
    for (;;) {
        uint32_t r = atomic_exchange(&g_req, 0);
        if (r & REQ_FINISH) {
            tp_collector_finish_here();
            atomic_store(&g_closed, 1);
            futex_wake(&g_closed);
        } else if (r & REQ_FLUSH) {
            tp_collector_flush();
        } else {
            futex_wait(&g_req, 0, NULL);
        }
    }
    return NULL;
}

static int helper_here(void) {
    return atomic_load(&g_helper_pid) == getpid();
}

/* Born with every signal blocked, so no handler ever runs (and waits) on it. Returns once it
 * runs: a program that forks right after must not copy it half-way through its start. */
static void start_helper(void) {
    if (helper_here())
        return;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t th;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&a, 256 * 1024);
    atomic_store(&g_helper_up, 0);
    if (pthread_create(&th, &a, helper_main, NULL) == 0) {
        atomic_store(&g_helper_pid, getpid());
        while (!atomic_load(&g_helper_up))
            futex_wait(&g_helper_up, 0, NULL);
    }
    pthread_attr_destroy(&a);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void ask_helper(uint32_t what) {
    atomic_fetch_or(&g_req, what);
    futex_wake(&g_req);
}

/* Has the helper finish the trace and waits for it, at most CLOSE_WAIT_NS (a lock held by a
 * thread that will never run again must not hang the exit). Async-signal-safe. Returns 1
 * when the trace is closed. */
static int finish_on_helper(void) {
    if (!helper_here())
        return 0;
    ask_helper(REQ_FINISH);
    int64_t deadline = mono_ns() + CLOSE_WAIT_NS;
    while (!atomic_load(&g_closed)) {
        int64_t left = deadline - mono_ns();
        if (left <= 0)
            return 0;
        struct timespec rel = {(time_t)(left / 1000000000ll), (long)(left % 1000000000ll)};
        futex_wait(&g_closed, 0, &rel);
    }
    return 1;
}

/* ---------------------------------------------------------------- the program's view */

TP_VFORK_CHILD
static void view_lock(void) {
    while (atomic_flag_test_and_set_explicit(&g_view_lock, memory_order_acquire))
        sched_yield();
}

TP_VFORK_CHILD
static void view_unlock(void) {
    atomic_flag_clear_explicit(&g_view_lock, memory_order_release);
}

static void on_signal(int sig, siginfo_t *info, void *uc);

/* Puts into the kernel what the view asks for: the view itself when it ignores the signal,
 * else our handler with the program's mask and flags (SA_RESETHAND is emulated). The view
 * then gets the bits libc adds on its own (SA_RESTORER), as a real sigaction reports them. */
TP_VFORK_CHILD
static void apply_kernel(hooked *h) {
    struct sigaction k, cur;
    if (is_ignored(&h->act)) {
        g_real_sigaction(h->sig, &h->act, NULL);
        return;
    }
    memset(&k, 0, sizeof k);
    k.sa_sigaction = on_signal;
    k.sa_mask = h->act.sa_mask;
    k.sa_flags = SA_SIGINFO | (h->act.sa_flags & (SA_ONSTACK | SA_RESTART | SA_NODEFER));
    if (is_default(&h->act)) {
        sigemptyset(&k.sa_mask);
        k.sa_flags = SA_SIGINFO | SA_RESTART;
    }
    g_real_sigaction(h->sig, &k, NULL);
    if (g_real_sigaction(h->sig, NULL, &cur) == 0) {
        const int ours = SA_SIGINFO | SA_ONSTACK | SA_RESTART | SA_NODEFER | SA_RESETHAND |
                         SA_NOCLDSTOP | SA_NOCLDWAIT;
        h->act.sa_flags |= cur.sa_flags & ~ours;
        h->act.sa_restorer = cur.sa_restorer;
    }
}

/* Caller holds the view lock with every signal blocked. */
TP_VFORK_CHILD
static void view_write(hooked *h, const struct sigaction *a) {
    atomic_fetch_add(&h->seq, 1);
    h->act = *a;
    apply_kernel(h);
    atomic_fetch_add(&h->seq, 1);
}

/* A whole copy of the view, from a signal handler on any thread. */
static void view_read(hooked *h, struct sigaction *out) {
    for (;;) {
        uint32_t s = atomic_load_explicit(&h->seq, memory_order_acquire);
        if (s & 1) {
            sched_yield(); /* a writer on another thread (writers block our signals) */
            continue;
        }
        memcpy(out, &h->act, sizeof *out);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&h->seq, memory_order_relaxed) == s)
            return;
    }
}

/* Runs `fn` on the view of `h` with every signal blocked on this thread, so no handler of
 * ours can interrupt a writer on its own thread. */
static void view_set(hooked *h, const struct sigaction *a) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    view_lock();
    view_write(h, a);
    view_unlock();
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Takes SIGINT/SIGTERM over: the view starts as what the kernel holds now. */
static void take_over_signals(void) {
    if (!atomic_load(&g_interposed) || atomic_load(&g_virtual) || !g_real_sigaction)
        return;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    view_lock();
    for (int i = 0; i < NHOOKED && !atomic_load(&g_virtual); i++) {
        hooked *h = &g_hooked[i];
        if (g_real_sigaction(h->sig, NULL, &h->act) == 0)
            view_write(h, &h->act);
    }
    atomic_store(&g_virtual, 1);
    view_unlock();
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

TP_VFORK_CHILD
int tp_guard_sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
    resolve_real();
    hooked *h = hooked_of(sig);
    if (!g_real_sigaction) {
        errno = ENOSYS;
        return -1;
    }
    if (!h)
        return g_real_sigaction(sig, act, old);
    struct sigaction a;
    if (act)
        a = *act; /* act and old may be the same struct */
    sigset_t all, mask;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &mask);
    view_lock();
    int rc = 0;
    if (!atomic_load(&g_virtual)) {
        rc = g_real_sigaction(sig, act ? &a : NULL, old);
    } else {
        if (old)
            *old = h->act;
        if (act)
            view_write(h, &a);
    }
    view_unlock();
    pthread_sigmask(SIG_SETMASK, &mask, NULL);
    return rc;
}

TP_VFORK_CHILD
tp_sighandler tp_guard_signal(int sig, tp_sighandler handler, int sysv) {
    resolve_real();
    if (!hooked_of(sig)) {
        signal_fn f = sysv ? g_real_sysv_signal : g_real_signal;
        if (!f) {
            errno = ENOSYS;
            return SIG_ERR;
        }
        return f(sig, handler);
    }
    if (handler == SIG_ERR) {
        errno = EINVAL;
        return SIG_ERR;
    }
    /* What glibc's signal()/sysv_signal() pass to sigaction. */
    struct sigaction a, o;
    memset(&a, 0, sizeof a);
    a.sa_handler = handler;
    sigemptyset(&a.sa_mask);
    if (sysv) {
        a.sa_flags = SA_RESETHAND | SA_NODEFER;
    } else {
        sigaddset(&a.sa_mask, sig);
        a.sa_flags = SA_RESTART;
    }
    if (tp_guard_sigaction(sig, &a, &o) < 0)
        return SIG_ERR;
    return o.sa_handler;
}

/* ---------------------------------------------------------------- delivery */

static peer *peer_of(hooked *h, uint32_t sender) {
    for (uint32_t i = 0; i < h->npeers; i++)
        if (h->peers[i].sender == sender)
            return &h->peers[i];
    uint32_t i = h->npeers < PEERS ? h->npeers++ : sender % PEERS; /* full: reuse one */
    h->peers[i] = (peer){sender, 0, 0, 0};
    return &h->peers[i];
}

/* Counts a direct copy, or decides whether a copy `trainprof record` passed on duplicates
 * one that already came directly from the same sender (a process-group signal reaches the
 * program before record: the kernel signals a group's newest member first). Passed-on copies
 * that never arrived merged into a pending direct one; they match it. Returns 1 to drop the
 * copy; a kept passed-on copy is made to look like the original (SI_USER from the sender). */
static int drop_copy(hooked *h, siginfo_t *info) {
    uint32_t sender;
    uint16_t seq;
    int fwd = info && info->si_code == SI_QUEUE && g_forwarder && info->si_pid == g_forwarder &&
              tp_sigfwd_decode((uint64_t)(uintptr_t)info->si_value.sival_ptr, &sender, &seq);
    if (!fwd && !(info && info->si_code == SI_USER))
        return 0;
    pid_t me = gettid(), none = 0;
    while (!atomic_compare_exchange_weak(&h->peers_owner, &none, me)) {
        if (none == me)
            return 0; /* re-entered on this thread (SA_NODEFER): deliver */
        none = 0;
        sched_yield(); /* the same signal on another thread this instant: it is quick */
    }
    int drop = 0;
    if (!fwd) {
        peer_of(h, (uint32_t)info->si_pid)->direct++;
    } else {
        peer *p = peer_of(h, sender);
        uint32_t lost = seq > p->last_seq + 1 ? seq - p->last_seq - 1 : 0;
        p->matched = p->matched + lost < p->direct ? p->matched + lost : p->direct;
        p->last_seq = seq;
        drop = p->direct > p->matched;
        p->matched += (uint32_t)drop;
        info->si_code = SI_USER;
        info->si_pid = (pid_t)sender;
        info->si_value.sival_ptr = NULL;
    }
    atomic_store(&h->peers_owner, 0);
    return drop;
}

/* The program's disposition is the default: close the trace (on the helper; the default
 * action kills the whole process, so nothing here may be left to atexit), then die of the
 * signal exactly as without us. A thread inside a locked collector section defers it: the
 * helper would need that lock. */
static void die(int sig) {
    if (tp_busy) {
        tp_busy_deferred = sig;
        return;
    }
    finish_on_helper(); /* also waits for a close already under way (an _exit on another thread) */
    struct sigaction d;
    memset(&d, 0, sizeof d);
    d.sa_handler = SIG_DFL;
    sigemptyset(&d.sa_mask);
    g_real_sigaction(sig, &d, NULL);
    raise(sig); /* blocked in this handler: delivered, with the default action, on return */
}

/* What the kernel would have done on delivery with the program's disposition `a`. */
static void run_program_handler(hooked *h, const struct sigaction *a, siginfo_t *info, void *uc) {
    if (a->sa_flags & SA_RESETHAND) {
        struct sigaction d;
        memset(&d, 0, sizeof d);
        d.sa_handler = SIG_DFL;
        sigemptyset(&d.sa_mask);
        view_set(h, &d);
    }
    if (a->sa_flags & SA_SIGINFO)
        a->sa_sigaction(h->sig, info, uc);
    else
        a->sa_handler(h->sig);
}

static void on_signal(int sig, siginfo_t *info, void *uc) {
    int saved = errno;
    hooked *h = hooked_of(sig);
    struct sigaction a;
    if (!h || drop_copy(h, info)) {
        errno = saved;
        return;
    }
    view_read(h, &a);
    if (is_default(&a)) {
        die(sig);
        errno = saved;
        return;
    }
    if (is_ignored(&a)) { /* a view change raced with delivery */
        errno = saved;
        return;
    }
    if (tp_collector_recording_here() && helper_here())
        ask_helper(REQ_FLUSH); /* the program may end in a way nothing else sees */
    errno = saved;
    run_program_handler(h, &a, info, uc);
}

/* ---------------------------------------------------------------- exits */

void tp_guard_before_exit(void) {
    /* A thread interrupted inside a locked section of ours (by a handler calling _exit)
     * keeps what the drain wrote: closing needs that lock. */
    if (tp_busy)
        return;
    if (helper_here()) /* the helper also waits for a close under way on another thread */
        finish_on_helper();
    else if (tp_collector_recording_here())
        tp_collector_finish_here();
}

static void at_exit(void) {
    tp_collector_finish();
}

static void arm_atexit(void) {
    atexit(at_exit);
}

/* ---------------------------------------------------------------- client */

static void guard_on_start(void) {
    pthread_once(&g_atexit_once, arm_atexit);
    start_helper();
    if (getpid() == tp_g.cfg.target_pid)
        g_forwarder = getppid();
    take_over_signals();
}

/* The helper did not survive the fork; the views did (as the kernel's dispositions did). A
 * view another thread was writing is left as it was: make its seqlock readable again. */
static void guard_after_fork_child(void) {
    atomic_store(&g_helper_pid, 0);
    atomic_store(&g_req, 0);
    atomic_store(&g_closed, 0);
    g_forwarder = 0;
    atomic_flag_clear(&g_view_lock);
    for (int i = 0; i < NHOOKED; i++) {
        if (atomic_load(&g_hooked[i].seq) & 1)
            atomic_fetch_add(&g_hooked[i].seq, 1);
        atomic_store(&g_hooked[i].peers_owner, 0);
    }
}

void tp_guard_set_interposed(void) {
    atomic_store(&g_interposed, 1);
}

void tp_guard_register(void) {
    resolve_real();
    tp_collector_client c = {
        .name = "guard", .on_start = guard_on_start, .after_fork_child = guard_after_fork_child};
    tp_collector_add_client(&c);
}
