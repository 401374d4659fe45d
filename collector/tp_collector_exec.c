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
#include <string.h>
#include <unistd.h>

#include "tp_collector.h"

extern char **environ;

typedef int (*execve_fn)(const char *, char *const[], char *const[]);

#define EXPORT __attribute__((visibility("default")))

TP_VFORK_CHILD
static void *real(const char *name) {
    return dlsym(RTLD_NEXT, name);
}

/* The new image learns its exec generation from TRAINPROF_EXEC_GEN (the PROCESS record's
 * exec_gen): `envp` with that variable set to this image's successor, in `out` (on the
 * caller's stack: nothing is allocated, since a vfork() child may be the one exec'ing).
 * Returns out, or envp itself when no variable is needed or the environment is too large
 * to copy (the new image then records generation 0). */
#define MAX_ENV 4096
#define GEN_VAR "TRAINPROF_EXEC_GEN="

TP_VFORK_CHILD
static char *const *with_gen(char *const envp[], char **out, char *var, size_t var_len) {
    if (!envp || tp_collector_exec_gen_env(var, var_len) != 0)
        return envp;
    size_t n = 0;
    for (size_t i = 0; envp[i]; i++) {
        if (n + 2 > MAX_ENV)
            return envp;
        if (strncmp(envp[i], GEN_VAR, sizeof GEN_VAR - 1) != 0)
            out[n++] = envp[i];
    }
    out[n++] = var;
    out[n] = NULL;
    return out;
}

TP_VFORK_CHILD
static int wrap_e(const char *name, const char *path, char *const argv[], char *const envp[]) {
    execve_fn f = (execve_fn)real(name);
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    char *env[MAX_ENV], var[64];
    char *const *e = with_gen(envp, env, var, sizeof var);
    tp_collector_before_exec();
    return f(path, argv, e);
}

TP_VFORK_CHILD
EXPORT int execve(const char *path, char *const argv[], char *const envp[]) {
    return wrap_e("execve", path, argv, envp);
}

TP_VFORK_CHILD
EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]) {
    return wrap_e("execvpe", file, argv, envp);
}

/* execv and execvp are execve and execvpe with the process's environment. */
TP_VFORK_CHILD
EXPORT int execv(const char *path, char *const argv[]) {
    return wrap_e("execve", path, argv, environ);
}

TP_VFORK_CHILD
EXPORT int execvp(const char *file, char *const argv[]) {
    return wrap_e("execvpe", file, argv, environ);
}

/* The list forms: count the arguments, then copy them into an array on the stack, as libc
 * itself does. Returns the count, or -1 when there are absurdly many. */
#define MAX_LIST_ARGS 4096

TP_VFORK_CHILD
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

TP_VFORK_CHILD
EXPORT int execl(const char *path, const char *arg, ...) {
    char *argv[MAX_LIST_ARGS + 1];
    va_list ap;
    va_start(ap, arg);
    int n = collect(arg, ap, argv, NULL);
    va_end(ap);
    return n < 0 ? -1 : execv(path, argv);
}

TP_VFORK_CHILD
EXPORT int execlp(const char *file, const char *arg, ...) {
    char *argv[MAX_LIST_ARGS + 1];
    va_list ap;
    va_start(ap, arg);
    int n = collect(arg, ap, argv, NULL);
    va_end(ap);
    return n < 0 ? -1 : execvp(file, argv);
}

TP_VFORK_CHILD
EXPORT int execle(const char *path, const char *arg, ...) {
    char *argv[MAX_LIST_ARGS + 1];
    char **envp = environ;
    va_list ap;
    va_start(ap, arg);
    int n = collect(arg, ap, argv, &envp);
    va_end(ap);
    return n < 0 ? -1 : execve(path, argv, envp);
}
