/* tp_collector: singleton lifecycle, clients, fork handling, per-thread state and string
 * interning. */
#include "tp_collector.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "tp_layout.h"
#include "tp_outfile.h"
#include "tp_stepname.h"

#ifndef TP_VERSION
#define TP_VERSION "0.1.0"
#endif
#define TP_PRODUCER "trainprof-collector " TP_VERSION

tp_collector tp_g;
__thread tp_tstate *tp_tls __attribute__((tls_model("initial-exec")));
__thread int tp_busy __attribute__((tls_model("initial-exec")));
__thread int tp_busy_deferred __attribute__((tls_model("initial-exec")));

/* Error-checking: the exit path locks it from a thread that may hold it already (a signal
 * handler calling _exit in the middle of a start), where a plain mutex would hang the exit. */
static pthread_mutex_t g_mu = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;
static pthread_once_t g_fork_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_key;
static int g_clock_ready;
static _Atomic int g_cuda_said;
static pid_t g_writer_pid; /* the process that opened tp_g.writer */
/* The process whose memory this is: the one that loaded the collector, or a fork child (set
 * in its fork handler). A vfork() child runs in its parent's memory and is neither. */
static pid_t g_mem_pid;
/* Set when this process leaves (_exit, exec): no trace may be opened after that, see
 * writes_here. A fork child starts without it. */
static _Atomic int g_leaving;
static tp_writer *g_retired; /* a sealed writer: its rings stay valid for late producers */

/* Clients: appended under g_mu; the tap reads them from the drain thread (count published
 * after the entry). */
static tp_collector_client g_clients[TP_COLLECTOR_MAX_CLIENTS];
static _Atomic int g_nclients;

void tp_collector_busy_raise(void) {
    int sig = tp_busy_deferred;
    tp_busy_deferred = 0;
    raise(sig);
}

/* A capture's slow paths take locks (tp_stacks_init). */
static void stacks_busy_enter(void) {
    tp_collector_busy_enter();
}

static void stacks_busy_leave(void) {
    tp_collector_busy_leave();
}

/* ---------------------------------------------------------------- clients */

static int tap_wanted(const tp_collector_client *c) {
    return c->on_drain && (!c->wants_drain || c->wants_drain());
}

static void tap_dispatch(void *ctx, const tp_rec_hdr *rec) {
    (void)ctx;
    int n = atomic_load_explicit(&g_nclients, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (g_clients[i].on_drain)
            g_clients[i].on_drain(g_clients[i].ctx, rec);
}

static int any_tap(void) {
    for (int i = 0; i < atomic_load(&g_nclients); i++)
        if (tap_wanted(&g_clients[i]))
            return 1;
    return 0;
}

tp_status tp_collector_add_client(const tp_collector_client *c) {
    pthread_mutex_lock(&g_mu);
    int n = atomic_load(&g_nclients);
    tp_status s = n < TP_COLLECTOR_MAX_CLIENTS ? TP_OK : TP_ERR_FULL;
    if (s == TP_OK) {
        g_clients[n] = *c;
        atomic_store_explicit(&g_nclients, n + 1, memory_order_release);
        if (tap_wanted(c) && tp_g.writer)
            tp_writer_set_tap(tp_g.writer, tap_dispatch, NULL);
    }
    pthread_mutex_unlock(&g_mu);
    return s;
}

/* Calls member `fn` of every client that has it. */
#define EACH_CLIENT(fn)                                                                            \
    do {                                                                                           \
        int n_ = atomic_load(&g_nclients);                                                         \
        for (int i_ = 0; i_ < n_; i_++)                                                            \
            if (g_clients[i_].fn)                                                                  \
                g_clients[i_].fn();                                                                \
    } while (0)

/* ---------------------------------------------------------------- per-thread state */

/* Thread exit: hand the ring back so its last events reach the file. */
static void thread_state_destroy(void *p) {
    tp_tstate *t = p;
    tp_collector_busy_enter();
    pthread_mutex_lock(&g_mu);
    if (t->stage && t->gen == atomic_load(&tp_g.gen) && atomic_load(&tp_g.active))
        tp_stage_close(t->stage);
    pthread_mutex_unlock(&g_mu);
    tp_collector_busy_leave();
    if (tp_tls == t)
        tp_tls = NULL;
    tp_stacks_cache_release(&t->stacks);
    free(t);
}

static void make_key(void) {
    pthread_key_create(&g_key, thread_state_destroy);
}

static void write_thread(uint32_t tid) {
    char name[17] = "";
    tp_rec_thread r;
    TP_REC_CLEAR(&r, TP_REC_THREAD);
    r.tid = tid;
    r.pid = (uint32_t)getpid();
    /* prctl, not /proc: no file I/O on the application thread. */
    if (prctl(PR_GET_NAME, name, 0, 0, 0) == 0 && name[0])
        r.name_sid = tp_collector_intern_n(name, strlen(name));
    tp_collector_meta(&r);
}

/* Processes other than the one `trainprof record` started (fork children, the programs a
 * wrapper script runs) open their trace at their first event, not at load: most of them
 * (subshells, `$(...)`, DataLoader helpers that only compute) record nothing, and some leave
 * through _exit, where an eagerly opened empty trace could not even be deleted. */
static atomic_int g_lazy;              /* 1: start at the first event */
static tp_collector_config g_lazy_cfg; /* the config to start with (fork children) */
static int g_lazy_has_cfg;

static void defer_start(const tp_collector_config *cfg) {
    g_lazy_has_cfg = cfg != NULL;
    if (cfg)
        g_lazy_cfg = *cfg;
    atomic_store(&g_lazy, 1);
}

static int start_deferred(void) {
    if (!atomic_exchange(&g_lazy, 0))
        return atomic_load(&tp_g.active);
    return tp_collector_start(g_lazy_has_cfg ? &g_lazy_cfg : NULL) == TP_OK;
}

/* This image's exec generation (TRAINPROF_EXEC_GEN), for the pid that loaded it: a fork
 * child has another pid, and is generation 0. */
static long g_image_pid;
static uint32_t g_image_gen;
static int g_in_job; /* started by `trainprof record` */

void tp_collector_load(void) {
    tp_collector_config cfg;
    tp_collector_config_load(&cfg, NULL);
    g_image_pid = (long)getpid();
    g_mem_pid = getpid();
    g_image_gen = tp_collector_config_exec_gen(&cfg, g_image_pid);
    g_in_job = cfg.target_pid > 0;
    if (cfg.target_pid > 0 && getpid() != cfg.target_pid) {
        defer_start(&cfg);
        int n = atomic_load(&g_nclients);
        for (int i = 0; i < n; i++)
            if (g_clients[i].on_deferred)
                g_clients[i].on_deferred(&cfg);
    } else if (tp_collector_start(&cfg) == TP_OK && cfg.target_pid > 0) {
        /* The recording's other processes name their traces after this one (beside it, see
         * tp_collector_config_path). Set here, in the constructor, while the program has
         * only this thread: setenv races with getenv on others. */
        setenv("TRAINPROF_MAIN_TRACE", tp_g.path, 1);
        snprintf(tp_g.cfg.main_trace, sizeof tp_g.cfg.main_trace, "%s", tp_g.path); /* forks */
    }
}

TP_VFORK_CHILD
int tp_collector_exec_gen_env(char *buf, size_t len) {
    static const char name[] = "TRAINPROF_EXEC_GEN=";
    long pid = (long)getpid();
    uint32_t gen = pid == g_image_pid ? g_image_gen : 0;
    if (!g_in_job || len < sizeof name)
        return -1;
    memcpy(buf, name, sizeof name - 1);
    return tp_collector_config_next_gen(pid, gen, buf + sizeof name - 1, len - (sizeof name - 1));
}

static tp_tstate *thread_slow_locked(void);

tp_tstate *tp_collector_thread_slow(void) {
    if (!atomic_load(&tp_g.active) && !atomic_load(&g_lazy))
        return NULL;
    tp_collector_busy_enter();
    tp_tstate *t = thread_slow_locked();
    tp_collector_busy_leave();
    return t;
}

static tp_tstate *thread_slow_locked(void) {
    if (!atomic_load(&tp_g.active) && !(atomic_load(&g_lazy) && start_deferred()))
        return NULL;
    uint32_t gen = atomic_load(&tp_g.gen);
    tp_tstate *t = tp_tls;
    if (t && t->gen == gen)
        return t;
    /* A stale state (made before a fork) points into the abandoned writer: just free it. */
    if (t) {
        pthread_setspecific(g_key, NULL);
        tp_stacks_cache_release(&t->stacks);
        free(t);
        tp_tls = NULL;
    }
    t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->gen = gen;
    t->tid = (uint32_t)gettid();
    if (tp_writer_stage_open(tp_g.writer, t->tid, &t->stage) != TP_OK)
        t->stage = NULL;
    t->hot = t->stage && atomic_load(&tp_g.hot) == gen ? gen : TP_HOT_NEVER;
    write_thread(t->tid);
    pthread_once(&g_key_once, make_key);
    pthread_setspecific(g_key, t);
    tp_tls = t;
    return t;
}

/* ---------------------------------------------------------------- strings */

/* --idle: does this text name a step range (--step-range, else common/tp_stepname's)? */
static int is_step_text(const char *s, size_t len) {
    const char *want = tp_g.cfg.step_range;
    if (want[0])
        return strlen(want) == len && !memcmp(s, want, len);
    return tp_step_name_n(s, len);
}

uint32_t tp_collector_intern_n(const char *s, size_t len) {
    uint32_t id = 0;
    tp_writer *w = tp_g.writer;
    tp_collector_busy_enter();
    if (!w || tp_writer_intern_string(w, s, len, &id) != TP_OK)
        id = 0;
    tp_collector_busy_leave();
    if (id && id < TP_STEP_SIDS && tp_g.cfg.live == TP_LIVE_IDLE && is_step_text(s, len))
        atomic_fetch_or_explicit(&tp_g.step_sids[id / 8], (uint8_t)(1u << (id % 8)),
                                 memory_order_relaxed);
    return id;
}

uint32_t tp_collector_intern_miss(tp_str_slot *e, const char *s) {
    size_t len = strlen(s);
    uint32_t sid = tp_collector_intern_n(s, len);
    if (sid && len < TP_STR_INLINE) {
        memcpy(e->copy, s, len + 1);
        e->len = (uint32_t)len | (((uintptr_t)s & 4095) + len + 1 > 4096 ? TP_STR_XPAGE : 0);
        e->sid = sid;
        e->ptr = s;
    }
    return sid;
}

/* ---------------------------------------------------------------- metadata */

void tp_collector_meta(const void *rec) {
    tp_writer *w = tp_g.writer;
    tp_collector_busy_enter();
    if (w)
        (void)tp_writer_write_meta(w, rec);
    tp_collector_busy_leave();
}

void tp_collector_counter_note(const char *prefix, const char *text, int n) {
    char name[320];
    int k = snprintf(name, sizeof name, "%s%.*s", prefix, n > 0 ? n : 0, text);
    tp_rec_counter c;
    TP_REC_CLEAR(&c, TP_REC_COUNTER);
    c.ts = tp_collector_now();
    c.name_sid = tp_collector_intern_n(name, k > 0 && (size_t)k < sizeof name ? (size_t)k : 0);
    c.value = 1;
    tp_writer *w = tp_g.writer;
    tp_collector_busy_enter();
    if (w)
        (void)tp_writer_write(w, &c);
    tp_collector_busy_leave();
}

void tp_collector_cuda_off(const char *why) {
    snprintf(tp_g.cupti_status, sizeof tp_g.cupti_status, "%s", why);
    /* Kept in the trace as a counter whose name says why, so reports can tell. */
    if (!atomic_load(&g_cuda_said))
        tp_collector_counter_note("trainprof.cuda_off: ", why, (int)strlen(why));
    if (!atomic_exchange(&g_cuda_said, 1))
        fprintf(stderr, "trainprof: CUDA tracing off (%s); NVTX and CPU events still recorded\n",
                why);
}

static uint64_t clock_cb(void *ctx) {
    (void)ctx;
    return tp_collector_now();
}

static void write_clock_sync(void) {
    tp_clock_sample s;
    tp_clock_sample_now(&tp_g.clock, &s);
    tp_rec_clock_sync r;
    TP_REC_CLEAR(&r, TP_REC_CLOCK_SYNC);
    r.ts = s.trace_ns;
    r.monotonic_ns = s.monotonic_ns;
    r.realtime_ns = s.realtime_ns;
    r.uncertainty_ns = s.uncertainty_ns;
    r.tsc_hz = tp_g.clock.tsc_hz;
    tp_collector_meta(&r);
}

/* /proc/self/cmdline with NULs turned into spaces. */
static uint32_t intern_cmdline(void) {
    char buf[4096];
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return 0;
    for (ssize_t i = 0; i < n; i++)
        buf[i] = buf[i] ? buf[i] : ' ';
    while (n > 0 && buf[n - 1] == ' ')
        n--;
    return tp_collector_intern_n(buf, (size_t)n);
}

static void write_process(void) {
    char host[256] = "", exe[4096] = "";
    struct timespec now;
    tp_rec_process r;
    TP_REC_CLEAR(&r, TP_REC_PROCESS);
    r.pid = (uint32_t)getpid();
    r.ppid = (uint32_t)getppid();
    r.rank = tp_g.cfg.rank;
    r.world_size = tp_g.cfg.world_size;
    r.local_rank = tp_g.cfg.local_rank;
    gethostname(host, sizeof host - 1);
    r.host_sid = tp_collector_intern_n(host, strlen(host));
    r.cmdline_sid = intern_cmdline();
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    r.exe_sid = n > 0 ? tp_collector_intern_n(exe, (size_t)n) : 0;
    clock_gettime(CLOCK_REALTIME, &now);
    r.start_realtime_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
    r.producer_sid = tp_collector_intern_n(TP_PRODUCER, strlen(TP_PRODUCER));
    r.job_id = tp_g.cfg.job_id;
    r.root_pid = tp_g.cfg.target_pid > 0 ? (uint32_t)tp_g.cfg.target_pid : 0;
    r.exec_gen = tp_collector_config_exec_gen(&tp_g.cfg, (long)r.pid);
    tp_collector_meta(&r);
}

/* One line per trace so `trainprof record` finds the traces of every process it started.
 * O_APPEND writes of one short line do not interleave. */
static void append_manifest(void) {
    if (!tp_g.cfg.manifest[0])
        return;
    int fd = open(tp_g.cfg.manifest, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0)
        return;
    char line[4200];
    int n = snprintf(line, sizeof line, "%ld %s\n", (long)getpid(), tp_g.path);
    if (n > 0 && (size_t)n < sizeof line && write(fd, line, (size_t)n) < 0)
        (void)0;
    close(fd);
}

/* The writer's drain time so far as one OVERHEAD record ending now, so reports can show what
 * the collector cost (the final drain at close is not included). */
static void write_overhead(tp_writer *w) {
    tp_writer_stats st;
    (void)tp_writer_flush(w);
    tp_writer_get_stats(w, &st);
    tp_rec_overhead r;
    TP_REC_CLEAR(&r, TP_REC_OVERHEAD);
    r.end = tp_collector_now();
    r.ts = r.end > st.overhead_ns ? r.end - st.overhead_ns : 0;
    r.tid = (uint32_t)gettid();
    r.kind = TP_OVERHEAD_COLLECTOR_FLUSH;
    r.name_sid = tp_collector_intern_n("writer drain", 12);
    (void)tp_writer_write(w, &r);
}

/* Programs chdir: the trace path must not depend on the directory at exit (unlink of an
 * empty trace, the manifest `trainprof record` reads). */
static int make_absolute(char *path, size_t cap) {
    char cwd[PATH_MAX], rel[PATH_MAX];
    if (path[0] == '/')
        return 0;
    if (!getcwd(cwd, sizeof cwd) || strlen(path) >= sizeof rel)
        return -1;
    strcpy(rel, path[0] == '.' && path[1] == '/' ? path + 2 : path);
    int n = snprintf(path, cap, "%s/%s", cwd, rel);
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

/* Where the trace's descriptor goes: high, so the program's own descriptors get the numbers
 * they would get without us, but within the first 1024 (select() limits, and a table sized
 * for a huge RLIMIT_NOFILE would be copied at every fork). */
static int fd_floor(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < 128)
        return 0;
    return (int)(rl.rlim_cur < 1024 ? rl.rlim_cur : 1024) - 24;
}

/* Creates the trace file, never opening an existing one: the -o file is the empty file
 * `record` reserved before the start (claimed while it is still that file; created anew
 * once an exec'd image set it aside), or replaced only under TRAINPROF_FORCE without a
 * reservation; a default name taken by another file becomes NAME.2.tprof, NAME.3.tprof...
 * Sets *id to the file it created (0 when it claimed the reservation). */
static tp_status create_trace_file(int *fd, tp_file_id *id) {
    const tp_collector_config *c = &tp_g.cfg;
    int own = c->output[0] && getpid() == c->target_pid;
    *id = (tp_file_id){0, 0};
    if (own && c->output_ino) {
        tp_status s = tp_outfile_claim(tp_g.path, &(tp_file_id){c->output_dev, c->output_ino}, fd);
        if (s != TP_ERR_NOT_FOUND)
            return s; /* ours, or another file now: not ours to write */
    }
    if (own)
        return tp_outfile_create(tp_g.path, c->force && !c->output_ino, fd, id);
    char base[sizeof tp_g.path];
    memcpy(base, tp_g.path, sizeof base);
    tp_status s = tp_outfile_create(tp_g.path, 0, fd, id);
    for (int k = 2; s == TP_ERR_EXISTS && k < 100; k++)
        if (tp_collector_config_alt_path(base, k, tp_g.path, sizeof tp_g.path) == 0)
            s = tp_outfile_create(tp_g.path, 0, fd, id);
    return s;
}

static void say_untraced(tp_status s, int err) {
    const char *why = tp_status_why(s, err);
    if (s == TP_ERR_EXISTS)
        why = tp_g.cfg.output_ino ? "another program replaced the file `trainprof record` made"
                                  : "the file exists (TRAINPROF_FORCE=1 replaces it)";
    fprintf(stderr, "trainprof: cannot write trace %s: %s; running untraced\n", tp_g.path, why);
}

static tp_status open_writer(void) {
    if (tp_collector_config_path(&tp_g.cfg, (long)getpid(), program_invocation_short_name,
                                 tp_g.path, sizeof tp_g.path) != 0 ||
        make_absolute(tp_g.path, sizeof tp_g.path) != 0)
        return TP_ERR_ARG;
    tp_writer_opts o;
    tp_writer_opts_default(&o);
    o.fd_floor = fd_floor();
    o.buffer_bytes = tp_g.cfg.buffer_bytes; /* rings start at 1/256 of it and grow */
    o.background = !tp_g.cfg.drain_at_exit;
    o.drain_nice = tp_g.cfg.drain_nice;
    o.flush_ms = tp_g.cfg.flush_ms;
    o.codec = tp_g.cfg.codec[0] ? tp_g.cfg.codec : NULL;
    o.producer = TP_PRODUCER;
    int fd;
    tp_file_id made;
    tp_writer *w;
    tp_status s = create_trace_file(&fd, &made);
    if (s == TP_OK)
        s = tp_writer_open_fd(fd, tp_g.path, &o, &w);
    if (s != TP_OK) {
        int err = errno;
        tp_file_id now;
        if (made.ino && tp_outfile_id(tp_g.path, &now) == 0 && now.ino == made.ino &&
            now.dev == made.dev)
            unlink(tp_g.path); /* the file this call created, left without a header */
        say_untraced(s, err);
        return s;
    }
    tp_writer_set_clock(w, clock_cb, NULL);
    if (any_tap())
        tp_writer_set_tap(w, tap_dispatch, NULL);
    g_writer_pid = getpid();
    tp_g.writer = w;
    return TP_OK;
}

static void start_locked(const tp_collector_config *cfg) {
    if (cfg)
        tp_g.cfg = *cfg;
    else
        tp_collector_config_load(&tp_g.cfg, NULL);
    if (tp_g.cfg.error[0])
        fprintf(stderr, "trainprof: %s\n", tp_g.cfg.error);
    for (int ty = 0; ty < TP_REC_TYPE_LIMIT; ty++) {
        const tp_rec_info *ri = tp_record_info((uint16_t)ty);
        tp_rec_hdr h = {.type = (uint16_t)ty, .flags = ri->flags, .size = ri->min_size};
        tp_g.rec_flags[ty] = ri->flags;
        memcpy(&tp_g.rec_hdr[ty], &h, sizeof h);
    }
    if (!g_clock_ready) {
        tp_clock_init(&tp_g.clock, 0, 0);
        g_clock_ready = 1;
    }
    if (atomic_load(&g_leaving) || open_writer() != TP_OK)
        return;
    write_process();
    EACH_CLIENT(on_start);
    tp_stacks_reset();
    tp_stacks_init(tp_g.writer, (const void *)tp_collector_start, stacks_busy_enter,
                   stacks_busy_leave);
    write_clock_sync();
    append_manifest();
    uint64_t now = tp_collector_now();
    tp_g.t_begin = now + tp_g.cfg.delay_ns;
    tp_g.t_end = tp_g.cfg.duration_ns ? tp_g.t_begin + tp_g.cfg.duration_ns : UINT64_MAX;
    atomic_store(&tp_g.capture_open, 0);
    atomic_store(&tp_g.live_open, 0);
    uint32_t gen = atomic_fetch_add(&tp_g.gen, 1) + 1;
    atomic_store(&tp_g.active, 1);
    atomic_store(&tp_g.hot, tp_collector_hot_config() ? gen : 0);
}

static void fork_child(void);

static void arm_fork(void) {
    pthread_atfork(NULL, NULL, fork_child);
}

tp_status tp_collector_start(const tp_collector_config *cfg) {
    pthread_once(&g_fork_once, arm_fork);
    if (!g_mem_pid) /* started without the constructor (a program linked with the collector) */
        g_mem_pid = getpid();
    tp_collector_busy_enter();
    pthread_mutex_lock(&g_mu);
    if (!atomic_load(&tp_g.active) && !tp_g.writer)
        start_locked(cfg);
    tp_status s = tp_g.writer ? TP_OK : TP_ERR_OPEN;
    pthread_mutex_unlock(&g_mu);
    tp_collector_busy_leave();
    return s;
}

void tp_collector_flush(void) {
    tp_collector_busy_enter();
    pthread_mutex_lock(&g_mu);
    if (tp_g.writer && atomic_load(&tp_g.active))
        (void)tp_writer_flush(tp_g.writer);
    pthread_mutex_unlock(&g_mu);
    tp_collector_busy_leave();
}

int tp_collector_fd(void) {
    tp_writer *w = tp_g.writer;
    return w ? tp_writer_fd(w) : -1;
}

int tp_collector_owns_fd(int fd) {
    return fd >= 0 && tp_collector_fd() == fd;
}

void tp_collector_release_fd(int fd) {
    tp_writer *w = tp_g.writer;
    if (fd >= 0 && w)
        tp_writer_release_fd(w, fd);
}

int tp_collector_recording_here(void) {
    return tp_g.writer && atomic_load(&tp_g.active) && getpid() == g_writer_pid;
}

/* 1 when the trace holds events, not just the metadata every process writes. */
static int has_events(const tp_writer_stats *st) {
    static const uint16_t meta_only[] = {
        TP_REC_PROCESS, TP_REC_THREAD,   TP_REC_STRING,     TP_REC_MODULE,   TP_REC_STACK,
        TP_REC_DOMAIN,  TP_REC_CATEGORY, TP_REC_CLOCK_SYNC, TP_REC_OVERHEAD, TP_REC_ENV};
    uint64_t n = st->records_total + st->dropped_total;
    for (size_t i = 0; i < sizeof meta_only / sizeof meta_only[0]; i++)
        n -= st->records[meta_only[i]];
    return n > 0;
}

/* A trace with nothing but metadata is noise when its process is about to exec (the next
 * image writes its own trace) or is not the one `trainprof record` started (wrapper scripts,
 * pyenv shims and `$(...)` subshells fork many such processes). The started process keeps
 * its trace even when empty: "the program ran and recorded nothing" is an answer. */
static int discard_if_empty(const tp_writer_stats *st, int execing) {
    if (has_events(st))
        return 0;
    return execing || getpid() != tp_g.cfg.target_pid;
}

/* Before exec: the next image has the same pid and, when it execs itself, the same program
 * name, so it would reuse (truncate) this trace's name. Keep this one as NAME.execN.tprof. */
static void set_aside(void) {
    char alt[sizeof tp_g.path];
    for (int k = 1; k < 1000; k++) {
        if (tp_layout_exec_path(tp_g.path, k, alt, sizeof alt) != 0)
            return;
        if (access(alt, F_OK) == 0)
            continue;
        if (rename(tp_g.path, alt) == 0) {
            memcpy(tp_g.path, alt, strlen(alt) + 1);
            append_manifest();
        }
        return;
    }
}

/* The sealed writer is kept, not freed: other threads of a process that is exiting may still
 * hold its stages for a moment (they write into memory nobody drains). A previous one can
 * go: its producers are long gone. */
static void retire(tp_writer *w) {
    tp_writer_close(g_retired);
    g_retired = w;
}

static void say_result(tp_status s, int err, const tp_writer_stats *st) {
    if (st->fd_lost)
        fprintf(stderr,
                "trainprof: %s: the program closed the trace's file descriptor and the file "
                "could not be reopened; the trace ends there\n",
                tp_g.path);
    else if (s != TP_OK)
        fprintf(stderr, "trainprof: error writing %s: %s\n", tp_g.path, tp_status_why(s, err));
}

static void finish_locked(int execing) {
    tp_writer *w = tp_g.writer;
    atomic_store(&tp_g.hot, 0); /* before `active`: no fast path sees hot on, active off */
    if (!w || !atomic_exchange(&tp_g.active, 0))
        return;
    /* Threads that passed the `active` check a moment ago may still be writing one record
     * into their ring; give them time to commit it. */
    usleep(2000);
    write_overhead(w);
    write_clock_sync();
    tp_stacks_report();
    tp_writer_stats st;
    tp_status s = tp_writer_seal(w);
    int err = errno; /* the reason for s; the calls below may change errno */
    tp_writer_get_stats(w, &st);
    tp_g.writer = NULL;
    retire(w);
    if (s == TP_OK && discard_if_empty(&st, execing))
        unlink(tp_g.path);
    else if (s == TP_OK && execing)
        set_aside();
    say_result(s, err, &st);
}

static void finish(int execing) {
    tp_collector_busy_enter();
    if (atomic_load(&tp_g.active))
        EACH_CLIENT(before_close); /* CUPTI's buffers reach us through the open writer */
    pthread_mutex_lock(&g_mu);
    finish_locked(execing);
    pthread_mutex_unlock(&g_mu);
    tp_collector_busy_leave();
}

void tp_collector_finish(void) {
    finish(0);
}

/* 1 when this process opened the writer, which it is about to leave. A vfork() child shares
 * the parent's memory: closing "its" trace would close the parent's, so only the process that
 * opened the writer may, and a vfork child touches nothing. Another thread of this process may
 * be opening a trace right now (a fork child's first event, or its sampler's first sample, while
 * its main thread leaves): waiting for that start (g_mu) and forbidding any later one lets the
 * trace be closed, or discarded when empty, instead of left without a header, or empty, by the
 * exit that kills that thread. */
TP_VFORK_CHILD
static int writes_here(void) {
    if (getpid() != g_mem_pid)
        return 0;
    int locked = pthread_mutex_lock(&g_mu) == 0; /* EDEADLK: this thread holds it */
    atomic_store(&g_leaving, 1);
    if (locked)
        pthread_mutex_unlock(&g_mu);
    return getpid() == g_writer_pid;
}

TP_VFORK_CHILD
void tp_collector_before_exec(void) {
    if (writes_here())
        finish(1);
}

void tp_collector_finish_here(void) {
    if (writes_here())
        finish(0);
}

/* Fork child (pthread_atfork): one thread, and every lock another parent thread held is
 * copied held. The parent's writer belongs to the parent. */
static void fork_child(void) {
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(&g_mu, &ma);
    pthread_mutexattr_destroy(&ma);
    g_mem_pid = getpid();
    atomic_store(&g_leaving, 0);
    tp_busy = 0;
    tp_busy_deferred = 0;
    EACH_CLIENT(after_fork_child);
    tp_writer_abandon(g_retired); /* memory only: the parent sealed it */
    g_retired = NULL;
    tp_writer *old = tp_g.writer;
    tp_g.writer = NULL;
    atomic_store(&tp_g.active, 0);
    atomic_store(&tp_g.hot, 0);
    atomic_fetch_add(&tp_g.gen, 1);
    /* Frees the parent's writer memory without touching its file, its thread (absent here)
     * or its locks (copied mid-use); the file is only ever written by the parent. */
    tp_writer_abandon(old);
    if (tp_g.cfg.fork_trace && old)
        defer_start(&tp_g.cfg);
}
