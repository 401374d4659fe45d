/* tp_sampler: the sampler thread (see tp_sampler.h). */
#include "tp_sampler.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tp_collector.h"
#include "tp_collector_env.h"
#include "tp_hash.h"
#include "tp_pyframes.h"

/* Stacks already interned, by the walk's hash: direct-mapped, a miss re-encodes. */
#define STACK_SLOTS 4096

typedef struct {
    uint32_t tid;
    uint32_t name_age; /* rounds since its name was read; 0: never (no THREAD record yet) */
    char name[16];     /* its name as its last THREAD record has it */
    uint64_t cpu_ns, ts;
    uint32_t stack; /* its stack at this sample, when stack_ok */
    int stack_ok;
    int running; /* found in state R at this sample */
    int native;  /* not a thread of the interpreter: state and clock only (TP_SAMPLE_NATIVE) */
    int ours;    /* a thread of the collector's ("trainprof-..."): never sampled */
    /* a native thread asleep is written once a second (or when it wakes): the rounds held back
     * since its last record, which ended at from_ts */
    uint32_t held;
    uint64_t from_ts;
} seen_thread;

/* The threads a round may see: the interpreter's, then as many of the process's others. */
#define SEEN_MAX (2 * TP_PYTHREADS_MAX)

/* A thread's state for this round: its name (and whether it is ours) as the previous round
 * knew it. */
static seen_thread seen(uint32_t tid, const seen_thread *was, uint64_t cpu, uint64_t ts,
                        uint32_t stack, int stack_ok, int running, int native) {
    seen_thread t = {tid, 0, {0}, cpu, ts, stack, stack_ok, running, native, 0, 0, ts};
    if (was) {
        t.name_age = was->name_age;
        memcpy(t.name, was->name, sizeof t.name);
        t.ours = was->ours;
    }
    return t;
}

typedef struct {
    uint64_t hash;
    uint32_t id;
} stack_slot;

static struct {
    pthread_t th;
    int running;
    pid_t pid;
    uint32_t self_tid; /* the sampler thread's own */
    int env_done;      /* this process's trace says which threads are sampled */
    uint32_t hz;       /* the rate: tp_g.cfg's, or the deferred start's before tp_g has a config */
    _Atomic int stop;
    /* a thread started in a fork child waits until the core's fork handling is done (it bumps
     * tp_g.gen last): before that tp_g still holds the parent's writer */
    int in_child;
    uint32_t child_gen;
    pthread_mutex_t mu;
    pthread_cond_t cv;
} S = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* The CPU time thread `tid` of this process has used (its per-thread CPU clock: the kernel's
 * MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)); 0 when it is gone. */
static uint64_t thread_cpu_ns(uint32_t tid) {
    struct timespec t;
    clockid_t c = (clockid_t)((~(unsigned)tid << 3) | 6u);
    if (clock_gettime(c, &t) != 0)
        return 0;
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* /proc/self/task/TID/`what` into buf (n bytes, NUL-terminated); its length, 0 when it could
 * not be read. Opened each time, never kept: a program that closes every descriptor
 * (os.closerange) would take the number, and a read of it would be a read of its file. */
static size_t task_file(uint32_t tid, const char *what, char *buf, size_t n) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%u/%s", tid, what);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t got = fd >= 0 ? read(fd, buf, n - 1) : -1;
    if (fd >= 0)
        close(fd);
    buf[got > 0 ? got : 0] = 0;
    return got > 0 ? (size_t)got : 0;
}

/* 1 when thread `tid` is on a CPU now (its state running, R), as py-spy tells idle threads:
 * whether its stack is where it computes or where it waits. */
static int on_cpu(uint32_t tid) {
    char buf[256];
    if (!task_file(tid, "stat", buf, sizeof buf))
        return 0;
    const char *p = strrchr(buf, ')'); /* the name may hold anything, ")" too */
    return p && p[1] == ' ' && p[2] == 'R';
}

/* A THREAD record for a sampled thread that may never have written one (it named itself
 * through prctl, or the process did), and again whenever its name changed: its name from
 * /proc, read here, on our thread, at each of its first NAME_EARLY samples, twice a second
 * after, and (now = 1) when the sampler stops (a DataLoader worker names itself
 * "pt_data_worker" once it starts, a spawned one only after it imported the program, by when
 * it was sampled already; the latest record names the thread). */
#define NAME_EARLY 8 /* a thread's first samples: its name read at each */

static void name_thread(seen_thread *t, int now) {
    uint32_t rounds = S.hz / 2 > NAME_EARLY ? S.hz / 2 : NAME_EARLY + 1; /* twice a second */
    uint32_t age = t->name_age;
    t->name_age = age >= rounds ? NAME_EARLY : age + 1;
    if (!now && age && age < rounds && age >= NAME_EARLY)
        return;
    char name[32];
    if (!task_file(t->tid, "comm", name, sizeof name))
        return;
    name[strcspn(name, "\n")] = 0;
    if (t->native && !strncmp(name, TP_OWN_THREAD_PREFIX, sizeof TP_OWN_THREAD_PREFIX - 1)) {
        t->ours = 1; /* named after we first saw it: its samples stop here */
        return;
    }
    if (t->name[0] && !strncmp(name, t->name, sizeof t->name - 1))
        return;
    snprintf(t->name, sizeof t->name, "%.15s", name);
    uint32_t tid = t->tid;
    tp_rec_thread r;
    TP_REC_CLEAR(&r, TP_REC_THREAD);
    r.tid = tid;
    r.pid = (uint32_t)getpid();
    r.name_sid = name[0] ? tp_collector_intern_n(name, strlen(name)) : 0;
    tp_collector_meta(&r);
}

/* The stack id of a walk: interned once per distinct walk (by its hash); UINT32_MAX when the
 * walk turned out stale. */
static uint32_t stack_of(stack_slot *cache, const tp_pyframe *py, uint32_t n, uint64_t hash) {
    if (!n)
        return 0;
    stack_slot *s = &cache[hash & (STACK_SLOTS - 1)];
    if (s->id && s->hash == hash)
        return s->id;
    uint64_t frames[TP_PYFRAMES_MAX];
    uint32_t id = 0;
    if (!tp_pyframes_encode_other(tp_g.writer, py, n, frames))
        return UINT32_MAX; /* stale: no sample */
    if (tp_writer_intern_stack(tp_g.writer, frames, n, &id) != TP_OK)
        return 0;
    *s = (stack_slot){hash, id};
    return id;
}

static void emit_sample(tp_tstate *me, uint32_t tid, unsigned flags, uint32_t stack, uint64_t ts,
                        uint64_t cpu_ns, uint64_t period_ns) {
    tp_rec_sample r;
    TP_REC_CLEAR(&r, TP_REC_SAMPLE);
    r.h.flags |= flags;
    r.ts = ts;
    r.tid = tid;
    r.stack_id = stack;
    r.cpu_ns = cpu_ns;
    r.period_ns = period_ns;
    tp_collector_emit(me, &r);
}

/* The sleep native thread `t` had held back since its last record (none: nothing written), as
 * one record ending at its last sample. */
static void emit_held(tp_tstate *me, const seen_thread *t) {
    if (t->held && !t->ours && tp_collector_gate(t->ts))
        emit_sample(me, t->tid, TP_SAMPLE_NATIVE, 0, t->ts, 0, t->ts - t->from_ts);
}

/* What a round reads and writes besides its threads: the previous round's threads, the
 * stacks interned, the walk's buffer, who holds the GIL, whether the window is open. */
typedef struct {
    const seen_thread *prev;
    uint32_t n_prev;
    stack_slot *cache;
    tp_pyframe *py;
    tp_tstate *me;
    uintptr_t gil;
    int gate;
} round_ctx;

/* Thread `tid`'s state in the previous round, looked for from its place `at` in this one: the
 * threads are listed in the same order each round (the interpreter's list, then
 * /proc/self/task's), so it is there or near unless many came or went. */
static const seen_thread *seen_before(const round_ctx *c, uint32_t at, uint32_t tid, int native) {
    for (uint32_t i = 0; i < c->n_prev; i++) {
        const seen_thread *p = &c->prev[(at + i) % c->n_prev];
        if (p->tid == tid && p->native == native)
            return p;
    }
    return NULL;
}

/* Samples one thread: Python thread state `ts` (its frames walked), or (ts 0) a native thread,
 * of which only the state and CPU clock are read; `at`: its place in this round's list.
 * Returns 1 with *out filled when the thread is still there (kept for the next round), 0 when
 * it is gone. */
static int sample_thread(const round_ctx *c, uint32_t tid, uintptr_t ts, uint32_t at,
                         seen_thread *out) {
    int native = !ts;
    const seen_thread *was = seen_before(c, at, tid, native);
    uint64_t hash = 0, cpu, now;
    int torn = 0, running = 0;
    uint32_t nf = 0, stack = native ? 0 : UINT32_MAX;
    if (!c->gate) { /* recording nothing now: only the counts the next sample starts from */
        if (!(cpu = thread_cpu_ns(tid)))
            return 0;
        *out = seen(tid, was, cpu, tp_collector_now(), 0, native, 0, native);
        return 1;
    }
    if (was && was->ours) {
        *out = *was;
        return 1;
    }
    /* its CPU clock, state and stack as close together as they can be read */
    cpu = thread_cpu_ns(tid);
    if (was && was->stack_ok && cpu && cpu == was->cpu_ns) {
        /* it has not run since its last sample: the same frames (no walk), and off a CPU (no
         * state read: the common case of a job's many waiting threads) unless its last sample
         * found it in state R: then it may be ready to run and waiting for a CPU all this
         * period (other threads busy on every CPU), which only its state tells */
        stack = was->stack;
        running = was->running && on_cpu(tid);
    } else {
        running = on_cpu(tid);
        if (!native) {
            nf = tp_pyframes_walk_other(ts, c->py, TP_PYFRAMES_MAX, &hash, &torn);
            if (torn) /* the chain moved under the walk: once more */
                nf = tp_pyframes_walk_other(ts, c->py, TP_PYFRAMES_MAX, &hash, &torn);
        }
    }
    now = tp_collector_now();
    if (!cpu) /* gone */
        return 0;
    if (stack == UINT32_MAX && !torn)
        stack = stack_of(c->cache, c->py, nf, hash); /* UINT32_MAX again: stale */
    *out = seen(tid, was, cpu, now, stack, stack != UINT32_MAX, running, native);
    if (!was && native) { /* ours? (named before it runs any code) */
        name_thread(out, 0);
        if (out->ours)
            return 1;
    }
    if (was && stack != UINT32_MAX && tp_collector_gate(now)) {
        name_thread(out, 0);
        if (out->ours)
            return 1;
        uint64_t used = cpu > was->cpu_ns ? cpu - was->cpu_ns : 0;
        if (native && !used && !running) {
            /* asleep: held back up to a second, then one record for the whole stretch (a CUDA
             * job has tens of such threads: a record each a round was ~10 KB/s of trace) */
            if (was->held + 1 < S.hz) {
                out->held = was->held + 1, out->from_ts = was->from_ts;
                return 1;
            }
            emit_sample(c->me, tid, TP_SAMPLE_NATIVE, 0, now, 0, now - was->from_ts);
            return 1;
        }
        emit_held(c->me, was); /* the stretch it slept before this period */
        emit_sample(c->me, tid,
                    (running ? TP_SAMPLE_ON_CPU : 0) |
                        (c->gil && c->gil == ts ? TP_SAMPLE_HOLDS_GIL : 0) |
                        (native ? TP_SAMPLE_NATIVE : 0),
                    stack, now, used, now > was->ts ? now - was->ts : 0);
    }
    return 1;
}

/* The threads of this process that are not the interpreter's (th[0..n)) nor this one: at most
 * max, into out; how many. An OpenMP or intra-op pool, a CUDA or NCCL library's threads: their
 * CPU and their wait for a CPU count in the job's demand (cpu-contention), and nothing else
 * shows them. */
static uint32_t native_tids(const tp_pythread *th, uint32_t n, uint32_t *out, uint32_t max) {
    DIR *d = opendir("/proc/self/task");
    uint32_t k = 0;
    for (struct dirent *e; d && k < max && (e = readdir(d)) != NULL;) {
        char *end;
        unsigned long tid = strtoul(e->d_name, &end, 10);
        if (*end || !tid || tid > UINT32_MAX || tid == S.self_tid)
            continue;
        uint32_t i = 0;
        while (i < n && th[i].tid != tid)
            i++;
        if (i == n)
            out[k++] = (uint32_t)tid;
    }
    if (d)
        closedir(d);
    return k;
}

/* The sleep held back since the last record of each native thread of t[0..n) (threads seen
 * before: the trace is open). */
static void flush_held(const seen_thread *t, uint32_t n) {
    tp_tstate *me = n ? tp_collector_thread() : NULL;
    for (uint32_t j = 0; me && j < n; j++)
        emit_held(me, &t[j]);
}

/* One round: every Python thread's frames and CPU time, then the other threads' states and
 * clocks. `prev` (*n_prev threads) is the previous round's, replaced by this one's. The sampler
 * thread's state (which, in a fork child, opens its trace) is taken only once there is a Python
 * thread to read: the forks of a shell or a pyenv shim have none, and one that leaves through
 * _exit would leave an empty trace. */
static void sample_round(seen_thread *prev, uint32_t *n_prev, stack_slot *cache, tp_pyframe *py) {
    tp_pythread th[TP_PYTHREADS_MAX];
    uint32_t others[TP_PYTHREADS_MAX];
    seen_thread now_seen[SEEN_MAX];
    uint32_t n = tp_pyframes_threads(th, TP_PYTHREADS_MAX), k = 0;
    round_ctx c = {prev, *n_prev, cache, py, n ? tp_collector_thread() : NULL, 0, 0};
    if (!c.me) { /* Python is finalizing (or not yet there): the sleep held back, then none */
        flush_held(prev, *n_prev);
        *n_prev = 0;
        return;
    }
    if (!S.env_done) { /* the analyses tell "none ran" from "not read" by it */
        S.env_done = 1;
        tp_env_put(TP_ENVK_SAMPLED, "python,native");
    }
    /* --capture/--delay/--idle: outside the window a round costs a clock read a thread */
    c.gate = tp_collector_gate(tp_collector_now());
    /* who holds the GIL, once a round (it changes hands every 5 ms at most, by default) */
    c.gil = c.gate ? tp_pyframes_gil_holder() : 0;
    for (uint32_t i = 0; i < n; i++)
        if (th[i].tid)
            k += sample_thread(&c, th[i].tid, th[i].ts, k, &now_seen[k]);
    uint32_t no = native_tids(th, n, others, TP_PYTHREADS_MAX);
    for (uint32_t i = 0; i < no; i++)
        k += sample_thread(&c, others[i], 0, k, &now_seen[k]);
    /* a native thread that ended while its sleep was held back: that sleep, as it ends */
    for (uint32_t j = 0; j < *n_prev; j++) {
        const seen_thread *p = &prev[j];
        uint32_t i = 0; /* looked for from its place, as seen_before does */
        while (p->held && i < k &&
               (now_seen[(j + i) % k].tid != p->tid || now_seen[(j + i) % k].native != p->native))
            i++;
        if (i == k && c.gate)
            emit_held(c.me, p);
    }
    memcpy(prev, now_seen, k * sizeof *prev);
    *n_prev = k;
}

static void *sampler_main(void *arg) {
    (void)arg;
    seen_thread *prev = calloc(SEEN_MAX, sizeof *prev);
    S.self_tid = (uint32_t)syscall(SYS_gettid);
    stack_slot *cache = calloc(STACK_SLOTS, sizeof *cache);
    tp_pyframe *py = calloc(TP_PYFRAMES_MAX, sizeof *py);
    uint32_t n_prev = 0;
    uint64_t period = 1000000000u / S.hz;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    pthread_mutex_lock(&S.mu);
    while (prev && cache && py && !atomic_load(&S.stop)) {
        uint64_t t = (uint64_t)next.tv_nsec + period;
        next.tv_sec += (time_t)(t / 1000000000u);
        next.tv_nsec = (long)(t % 1000000000u);
        while (!atomic_load(&S.stop) && pthread_cond_timedwait(&S.cv, &S.mu, &next) == 0)
            ;
        if (atomic_load(&S.stop))
            break;
        pthread_mutex_unlock(&S.mu);
        if (S.in_child && atomic_load(&tp_g.gen) != S.child_gen)
            S.in_child = 0;
        if (!tp_pyframes_none() && !S.in_child)
            sample_round(prev, &n_prev, cache, py);
        /* Behind by more than a period (a slow round, a stopped process): start again from
         * now instead of catching up with a burst. */
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((now.tv_sec - next.tv_sec) * 1000000000ll + (now.tv_nsec - next.tv_nsec) >
            (long long)period)
            next = now;
        pthread_mutex_lock(&S.mu);
    }
    pthread_mutex_unlock(&S.mu);
    /* the names as they are at the end: a short-lived worker renamed itself after its first
     * samples (the trace still takes records: this runs from before_close) */
    for (uint32_t j = 0; prev && j < n_prev; j++)
        if (prev[j].name_age)
            name_thread(&prev[j], 1);
    if (prev) /* and the sleep held back since a native thread's last record */
        flush_held(prev, n_prev);
    free(prev), free(cache), free(py);
    return NULL;
}

static void start_thread(uint32_t hz) {
    S.hz = hz;
    S.env_done = 0;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&S.cv, &ca);
    pthread_condattr_destroy(&ca);
    atomic_store(&S.stop, 0);
    /* The program's signals are never ours to take: the thread starts with all blocked. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&S.th, NULL, sampler_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        return;
    pthread_setname_np(S.th, "trainprof-samp");
    S.pid = getpid();
    S.running = 1;
}

static void before_close(void) {
    if (!S.running || getpid() != S.pid)
        return;
    pthread_mutex_lock(&S.mu);
    atomic_store(&S.stop, 1);
    pthread_cond_signal(&S.cv);
    pthread_mutex_unlock(&S.mu);
    pthread_join(S.th, NULL);
    S.running = 0;
}

static void on_start(void) {
    if (tp_g.cfg.sample_hz && !S.running) {
        S.in_child = 0;
        start_thread(tp_g.cfg.sample_hz);
    }
}

/* The child has no sampler thread: it starts its own now. A fork child records from its
 * first event, and one that only computes (a DataLoader worker) has no other: its first
 * sample starts its trace. */
static void after_fork_child(void) {
    pthread_mutex_init(&S.mu, NULL);
    S.running = 0;
    if (tp_g.cfg.sample_hz && tp_g.cfg.fork_trace && atomic_load(&tp_g.active)) {
        S.in_child = 1;
        S.child_gen = atomic_load(&tp_g.gen);
        start_thread(tp_g.cfg.sample_hz);
    }
}

/* A process the recording's program started (a launcher's rank, a script's python): it
 * records from its first event, and one that only computes has no other than its samples, as
 * a fork child. The thread opens the trace at its first Python thread (sample_round): a
 * shell or a compiler run meanwhile gets none. */
static void on_deferred(const tp_collector_config *cfg) {
    if (cfg->sample_hz && cfg->fork_trace && !S.running) {
        S.in_child = 0;
        start_thread(cfg->sample_hz);
    }
}

void tp_sampler_register(void) {
    tp_collector_client c = {.name = "sampler",
                             .on_start = on_start,
                             .before_close = before_close,
                             .after_fork_child = after_fork_child,
                             .on_deferred = on_deferred};
    tp_collector_add_client(&c);
}
