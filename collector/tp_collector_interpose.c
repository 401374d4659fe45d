/* tp_collector_interpose: the libc functions the collector replaces in the program (besides
 * exec, tp_collector_exec.c), so that the program behaves exactly as without it and the
 * trace loses nothing however the program ends.
 *
 * - sigaction, signal, bsd_signal, sysv_signal, siginterrupt, sigignore: SIGINT/SIGTERM go
 *   through the guard's virtual view (tp_collector_guard.h); every other signal to libc.
 *   (sigset() and raw rt_sigaction syscalls bypass the view: see docs/collector.md.)
 * - _exit, _Exit: the trace is finished first (atexit handlers do not run there).
 * - close, close_range, closefrom: the trace's descriptor is not the program's; to the
 *   program that number is not open, so close() of it fails with EBADF and ranges skip it.
 * - dup2, dup3 onto the trace's descriptor: the program may make that number its own; the
 *   writer lets go of it first (and reopens its file elsewhere).
 * - fopen, fopen64 of /proc/self/stat: the count of the process's threads in it leaves ours
 *   out. CPython 3.12+ reads it there at os.fork() and warns "This process is multi-threaded,
 *   use of fork() may lead to deadlocks" when it is above 1: our threads (the writer's drain,
 *   the sampler, the guard's helper) made every recorded program that forks warn, and fail
 *   under -W error or pytest's filterwarnings = error (multiprocessing and DataLoader workers
 *   fork). Our threads share no lock with the program's code in a fork child.
 * These are in the shared library only (not in tp_collector_core), so in-process tests keep
 * their libc. A wrapper called before the library's constructor resolves what it needs. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tp_collector.h"
#include "tp_collector_guard.h"
#include "tp_collector_interpose.h"

#define EXPORT __attribute__((visibility("default")))

typedef void (*exit_fn)(int);
typedef int (*close_fn)(int);
typedef int (*close_range_fn)(unsigned, unsigned, int);
typedef void (*closefrom_fn)(int);
typedef int (*dup2_fn)(int, int);
typedef int (*dup3_fn)(int, int, int);
typedef FILE *(*fopen_fn)(const char *, const char *);

static struct {
    exit_fn exit_, exit_upper;
    close_fn close;
    close_range_fn close_range;
    closefrom_fn closefrom;
    dup2_fn dup2;
    dup3_fn dup3;
    fopen_fn fopen, fopen64;
} R;

static void *next(const char *name) {
    return dlsym(RTLD_NEXT, name);
}

static void resolve(void) {
    R.exit_ = (exit_fn)next("_exit");
    R.exit_upper = (exit_fn)next("_Exit");
    R.close = (close_fn)next("close");
    R.close_range = (close_range_fn)next("close_range");
    R.closefrom = (closefrom_fn)next("closefrom");
    R.dup2 = (dup2_fn)next("dup2");
    R.dup3 = (dup3_fn)next("dup3");
    R.fopen = (fopen_fn)next("fopen");
    R.fopen64 = (fopen_fn)next("fopen64");
}

#define REAL(fn) (R.fn ? R.fn : (resolve(), R.fn))

/* ---------------------------------------------------------------- signals */

TP_VFORK_CHILD
static int my_sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
    return tp_guard_sigaction(sig, act, old);
}

EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
    __attribute__((alias("my_sigaction")));

TP_VFORK_CHILD
EXPORT tp_sighandler signal(int sig, tp_sighandler handler) {
    return tp_guard_signal(sig, handler, 0);
}

/* Exported by glibc, declared only for old X/Open programs. */
tp_sighandler bsd_signal(int sig, tp_sighandler handler);

TP_VFORK_CHILD
EXPORT tp_sighandler bsd_signal(int sig, tp_sighandler handler) {
    return tp_guard_signal(sig, handler, 0);
}

TP_VFORK_CHILD
EXPORT tp_sighandler sysv_signal(int sig, tp_sighandler handler) {
    return tp_guard_signal(sig, handler, 1);
}

EXPORT int siginterrupt(int sig, int flag) {
    struct sigaction a;
    if (tp_guard_sigaction(sig, NULL, &a) < 0)
        return -1;
    a.sa_flags = flag ? a.sa_flags & ~SA_RESTART : a.sa_flags | SA_RESTART;
    return tp_guard_sigaction(sig, &a, NULL);
}

EXPORT int sigignore(int sig) {
    struct sigaction a;
    memset(&a, 0, sizeof a);
    a.sa_handler = SIG_IGN;
    sigemptyset(&a.sa_mask);
    return tp_guard_sigaction(sig, &a, NULL);
}

/* ---------------------------------------------------------------- exits */

static _Noreturn void exit_with(exit_fn f, int status) {
    tp_guard_before_exit();
    if (f)
        f(status);
    for (;;)
        syscall(SYS_exit_group, status);
}

EXPORT _Noreturn void _exit(int status) {
    exit_with(REAL(exit_), status);
}

EXPORT _Noreturn void _Exit(int status) {
    exit_with(REAL(exit_upper), status);
}

/* ---------------------------------------------------------------- descriptors */

EXPORT int close(int fd) {
    if (tp_collector_owns_fd(fd)) {
        errno = EBADF;
        return -1;
    }
    close_fn f = REAL(close);
    return f ? f(fd) : (int)syscall(SYS_close, fd);
}

/* close_range(first, last) of the program's descriptors only. */
static int close_span(unsigned first, unsigned last, int flags) {
    if (first > last)
        return 0;
    close_range_fn f = REAL(close_range);
    return f ? f(first, last, flags) : (int)syscall(SYS_close_range, first, last, flags);
}

EXPORT int close_range(unsigned first, unsigned last, int flags) {
    int ours = tp_collector_fd();
    if (ours < 0 || (unsigned)ours < first || (unsigned)ours > last ||
        (flags & CLOSE_RANGE_CLOEXEC))
        return close_span(first, last, flags);
    int a = close_span(first, (unsigned)ours - 1, flags);
    int b = (unsigned)ours < last ? close_span((unsigned)ours + 1, last, flags) : 0;
    return a < 0 ? a : b;
}

EXPORT void closefrom(int lowfd) {
    int ours = tp_collector_fd();
    closefrom_fn f = REAL(closefrom);
    if (ours >= lowfd && lowfd >= 0) {
        close_span((unsigned)lowfd, (unsigned)ours - 1, 0);
        lowfd = ours + 1;
    }
    if (f)
        f(lowfd);
    else
        close_span(lowfd < 0 ? 0 : (unsigned)lowfd, ~0u, 0);
}

/* dup2/dup3 onto our number: the writer lets go of it first (only when the call can succeed:
 * a bad `oldfd` leaves `newfd` alone). */
static void make_room(int oldfd, int newfd) {
    if (oldfd != newfd && tp_collector_owns_fd(newfd) && fcntl(oldfd, F_GETFD) != -1)
        tp_collector_release_fd(newfd);
}

EXPORT int dup2(int oldfd, int newfd) {
    make_room(oldfd, newfd);
    dup2_fn f = REAL(dup2);
    return f ? f(oldfd, newfd) : (int)syscall(SYS_dup2, oldfd, newfd);
}

EXPORT int dup3(int oldfd, int newfd, int flags) {
    make_room(oldfd, newfd);
    dup3_fn f = REAL(dup3);
    return f ? f(oldfd, newfd, flags) : (int)syscall(SYS_dup3, oldfd, newfd, flags);
}

/* ---------------------------------------------------------------- set-up */

void tp_interpose_init(void) {
    resolve();
    /* Our wrappers only see the program's calls when we come first in its symbol lookup
     * (LD_PRELOAD); reached by dlopen alone, the guard must leave signals alone. */
    if (dlsym(RTLD_DEFAULT, "sigaction") == (void *)my_sigaction)
        tp_guard_set_interposed();
}

/* ---------------------------------------------------------------- the program's thread count */

/* The threads of this process that are ours: named "trainprof-..." (each is named before it
 * runs any of the program's code, or as it starts). */
static long our_threads(void) {
    DIR *d = opendir("/proc/self/task");
    long n = 0;
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], comm[32];
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t k = fd >= 0 ? read(fd, comm, sizeof comm - 1) : -1;
        if (fd >= 0)
            close(fd);
        n += k >= (ssize_t)sizeof TP_OWN_THREAD_PREFIX - 1 &&
             !memcmp(comm, TP_OWN_THREAD_PREFIX, sizeof TP_OWN_THREAD_PREFIX - 1);
    }
    if (d)
        closedir(d);
    return n;
}

/* The stat line with its 20th field (num_threads) less `ours` (at least 1), into out (n
 * bytes); its length, or -1 when the line is not as proc(5) writes it. The fields after the
 * command's closing parenthesis are numbers: num_threads is the 18th of them. */
static int adjust_stat(const char *line, size_t len, long ours, char *out, size_t n) {
    const char *p = NULL;
    for (size_t i = 0; i < len; i++)
        if (line[i] == ')')
            p = line + i;
    if (!p)
        return -1;
    const char *end = line + len;
    for (int field = 2; field < 20 && p; field++) /* to the space before field 20 */
        p = memchr(p + 1, ' ', (size_t)(end - p - 1));
    if (!p || p + 1 >= end)
        return -1;
    char *after;
    long threads = strtol(p + 1, &after, 10);
    if (after == p + 1 || after > end)
        return -1;
    threads = threads - ours < 1 ? 1 : threads - ours;
    int k = snprintf(out, n, "%.*s%ld%.*s", (int)(p + 1 - line), line, threads, (int)(end - after),
                     after);
    return k > 0 && (size_t)k < n ? k : -1;
}

/* `f`, the program's fresh stream of /proc/self/stat, or one of the same line with our
 * threads left out of its count: a memfd (a real descriptor, as fileno() and fstat() expect,
 * at the number the file had), or `f` itself when that cannot be made. */
static FILE *stat_without_ours(FILE *f, const char *mode) {
    long ours = our_threads();
    char line[1024], out[1100];
    size_t len = ours ? fread(line, 1, sizeof line, f) : 0;
    int k = len && len < sizeof line ? adjust_stat(line, len, ours, out, sizeof out) : -1;
    if (k < 0) {
        rewind(f);
        return f;
    }
    int fd = fileno(f), flags = fcntl(fd, F_GETFD);
    int cloexec = flags >= 0 && (flags & FD_CLOEXEC);
    fclose(f); /* frees its number for the memfd */
    int m = memfd_create("stat", cloexec ? MFD_CLOEXEC : 0);
    FILE *g = NULL;
    if (m >= 0 && write(m, out, (size_t)k) == k && lseek(m, 0, SEEK_SET) == 0)
        g = fdopen(m, mode);
    if (!g && m >= 0) {
        close(m);
        errno = EMFILE;
    }
    return g;
}

static int is_own_stat(const char *path, const char *mode) {
    return path && mode && mode[0] == 'r' && !strchr(mode, '+') && !strcmp(path, "/proc/self/stat");
}

EXPORT FILE *fopen(const char *path, const char *mode) {
    fopen_fn f = REAL(fopen);
    FILE *s = f ? f(path, mode) : NULL;
    return s && is_own_stat(path, mode) ? stat_without_ours(s, mode) : s;
}

EXPORT FILE *fopen64(const char *path, const char *mode) {
    fopen_fn f = REAL(fopen64);
    FILE *s = f ? f(path, mode) : NULL;
    return s && is_own_stat(path, mode) ? stat_without_ours(s, mode) : s;
}
