/* tp_collector_exec: closes the trace before the process image is replaced.
 *
 * execve() runs no atexit handlers and no destructors, so without this an exec'ing image
 * (a shell wrapper, a pyenv shim, `torchrun` re-exec'ing itself) would leave a trace without
 * its index and its final chunk. The collector is LD_PRELOADed by `trainprof record`, so
 * these definitions come before libc's; each closes the trace and calls the real function.
 * If exec fails the process goes on untraced (it is almost always about to exit: starting a
 * new trace would overwrite the one just closed under the same name).
 * Every libc exec variant is wrapped, because libc's own variants call its internal execve
 * and do not pass through an interposed one. */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <unistd.h>

#include "tp_collector.h"

extern char **environ;

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);

#define EXPORT __attribute__((visibility("default")))

static void *real(const char *name) {
    return dlsym(RTLD_NEXT, name);
}

EXPORT int execve(const char *path, char *const argv[], char *const envp[]) {
    execve_fn f = (execve_fn)real("execve");
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    tp_collector_before_exec();
    return f(path, argv, envp);
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]) {
    execve_fn f = (execve_fn)real("execvpe");
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    tp_collector_before_exec();
    return f(file, argv, envp);
}

static int wrap_v(const char *name, const char *path, char *const argv[]) {
    execv_fn f = (execv_fn)real(name);
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    tp_collector_before_exec();
    return f(path, argv);
}

EXPORT int execv(const char *path, char *const argv[]) {
    return wrap_v("execv", path, argv);
}

EXPORT int execvp(const char *file, char *const argv[]) {
    return wrap_v("execvp", file, argv);
}

/* The list forms: count the arguments, then copy them into an array on the stack, as libc
 * itself does. Returns the count, or -1 when there are absurdly many. */
#define MAX_LIST_ARGS 4096

static int collect(const char *arg0, va_list ap, char **out, char ***envp) {
    int n = 0;
    out[n++] = (char *)arg0;
    for (char *a = (char *)arg0; a;) {
        if (n >= MAX_LIST_ARGS) {
            errno = E2BIG;
            return -1;
        }
        a = va_arg(ap, char *);
        out[n++] = a;
    }
    if (envp)
        *envp = va_arg(ap, char **);
    return n;
}

EXPORT int execl(const char *path, const char *arg, ...) {
    char *argv[MAX_LIST_ARGS + 1];
    va_list ap;
    va_start(ap, arg);
    int n = collect(arg, ap, argv, NULL);
    va_end(ap);
    return n < 0 ? -1 : execv(path, argv);
}

EXPORT int execlp(const char *file, const char *arg, ...) {
    char *argv[MAX_LIST_ARGS + 1];
    va_list ap;
    va_start(ap, arg);
    int n = collect(arg, ap, argv, NULL);
    va_end(ap);
    return n < 0 ? -1 : execvp(file, argv);
}

EXPORT int execle(const char *path, const char *arg, ...) {
    char *argv[MAX_LIST_ARGS + 1];
    char **envp = environ;
    va_list ap;
    va_start(ap, arg);
    int n = collect(arg, ap, argv, &envp);
    va_end(ap);
    return n < 0 ? -1 : execve(path, argv, envp);
}
