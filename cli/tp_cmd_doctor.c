/* trainprof doctor: checks this machine's CUDA stack (driver, GPUs, CUDA runtime, CUPTI,
 * cuDNN, NCCL) against itself and against the installed PyTorch, and says what to do about a
 * mismatch. The checks are analyzer/tp_doctor (facts found by file, a table of rules); this
 * file parses options, asks Python about PyTorch in a child process with a timeout, and
 * prints.
 *
 * `trainprof doctor [--root DIR] [--lib-path DIR]... [--no-default-paths] [--python PATH |
 * --no-python] [--timeout SEC]`. TP_DOCTOR_ROOT is the default --root (a folder standing for
 * /: its proc/driver/nvidia and usr/... are read instead of the real ones), for tests and for
 * checking a mounted image. Exit status: 0 nothing wrong (notes only), 3 warnings, 4 errors,
 * 2 usage error, 1 doctor itself failed. */
#include "tp_cmd.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tp_doctor.h"
#include "tp_text.h"

#define EXIT_WARN 3
#define EXIT_ERROR 4

typedef struct {
    tp_doctor_opts o;
    const char *python;
    int no_python;
    int timeout_s;
} doctor_args;

static void usage(FILE *out) {
    fprintf(out,
            "usage: trainprof doctor [options]\n\n"
            "Checks the NVIDIA driver, GPUs, CUDA runtime, CUPTI, cuDNN and NCCL installed here\n"
            "against each other and against PyTorch, and says what to do about a mismatch.\n\n"
            "  --root DIR          read DIR/proc/driver/nvidia and DIR/usr/... instead of /\n"
            "                      (default: $TP_DOCTOR_ROOT)\n"
            "  --lib-path DIR      also look for libraries in DIR (repeatable)\n"
            "  --no-default-paths  look only in --lib-path folders and LD_LIBRARY_PATH\n"
            "  --python PATH       the interpreter whose PyTorch to check (default python3)\n"
            "  --no-python         do not check PyTorch\n"
            "  --timeout SEC       limit for `import torch` (default 60)\n\n"
            "exit status: 0 nothing wrong, 3 warnings, 4 errors, 2 usage error, 1 failure\n");
}

/* The child's script: facts as key=value lines; never raises. */
static const char torch_script[] =
    "import sys\n"
    "try:\n"
    "    import torch\n"
    "except BaseException as e:\n"
    "    m = str(e).splitlines()\n"
    "    print('error=%s: %s' % (type(e).__name__, m[0] if m else ''))\n"
    "    sys.exit(0)\n"
    "print('version=' + str(torch.__version__))\n"
    "print('cuda=' + str(torch.version.cuda or ''))\n"
    "try:\n"
    "    print('cudnn=%d' % (torch.backends.cudnn.version() or 0))\n"
    "except BaseException:\n"
    "    print('cudnn=0')\n"
    "try:\n"
    "    print('available=%d' % int(torch.cuda.is_available()))\n"
    "except BaseException:\n"
    "    print('available=-1')\n";

static void torch_line(tp_doctor_facts *f, char *line) {
    line[strcspn(line, "\n")] = 0;
    char *eq = strchr(line, '=');
    if (!eq)
        return;
    *eq++ = 0;
    if (!strcmp(line, "error"))
        snprintf(f->torch_error, sizeof f->torch_error, "%s", eq);
    else if (!strcmp(line, "version"))
        snprintf(f->torch_version, sizeof f->torch_version, "%s", eq);
    else if (!strcmp(line, "cuda"))
        f->torch_cuda = tp_doctor_parse_cuda(eq);
    else if (!strcmp(line, "cudnn"))
        f->torch_cudnn = atoi(eq);
    else if (!strcmp(line, "available"))
        f->torch_cuda_available = atoi(eq);
}

/* Waits for `pid` at most `timeout_s`, then kills it. Returns 1 when it exited in time. */
static int wait_limited(pid_t pid, int timeout_s) {
    struct timespec t0, now, nap = {0, 20 * 1000 * 1000};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        int st;
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid || (w < 0 && errno != EINTR))
            return 1;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - t0.tv_sec >= timeout_s) {
            kill(-pid, SIGKILL); /* its group: a child of its own may hold our pipe */
            waitpid(pid, &st, 0);
            return 0;
        }
        nanosleep(&nap, NULL);
    }
}

/* Runs `python -c torch_script` with stdout into a pipe; its stderr is discarded (import
 * warnings). The pipe is read after the child ends: the script prints a few short lines. */
static void probe_torch(const doctor_args *a, tp_doctor_facts *f) {
    int p[2];
    f->torch_checked = 1;
    if (pipe(p) != 0)
        return;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        dup2(p[1], 1);
        close(p[0]);
        close(p[1]);
        FILE *null = freopen("/dev/null", "w", stderr);
        (void)null;
        execlp(a->python, a->python, "-c", torch_script, (char *)NULL);
        printf("error=cannot run %s: %s\n", a->python, strerror(errno));
        _exit(127);
    }
    close(p[1]);
    if (pid < 0) {
        close(p[0]);
        return;
    }
    int done = wait_limited(pid, a->timeout_s);
    FILE *in = fdopen(p[0], "r");
    char line[512];
    while (in && fgets(line, sizeof line, in))
        torch_line(f, line);
    if (in)
        fclose(in);
    else
        close(p[0]);
    if (!done)
        snprintf(f->torch_error, sizeof f->torch_error, "`%s -c 'import torch'` took over %d s",
                 a->python, a->timeout_s);
}

static void print_lib(const char *label, const tp_doctor_lib *l) {
    char path[1100];
    if (!l->path[0])
        printf("  %-16s not found\n", label);
    else
        printf("  %-16s %s (%s)%s\n", label, l->version[0] ? l->version : "version unknown",
               tp_text_safe(path, sizeof path, l->path), l->stub ? " [stub]" : "");
}

static void print_facts(const tp_doctor_facts *f) {
    printf("trainprof doctor\n");
    printf("  %-16s %s\n", "NVIDIA driver", f->driver[0] ? f->driver : "none loaded");
    printf("  %-16s %d\n", "GPUs", f->n_gpus);
    for (int i = 0; i < f->n_gpus; i++)
        printf("    %s  %s\n", f->gpus[i].bus, f->gpus[i].model);
    if (f->cpu_cores > 0) {
        printf("  %-16s %d", "CPUs", f->cpu_cores);
        if (f->cpu_allowed > 0 && f->cpu_allowed < f->cpu_cores)
            printf(", %d allowed to this process", f->cpu_allowed);
        if (f->cpu_quota > 0)
            printf(", cgroup quota %g", f->cpu_quota);
        printf("\n");
    }
    static const char *const labels[TP_DLIB_COUNT] = {"libcuda", "CUDA runtime", "CUPTI", "cuDNN",
                                                      "NCCL"};
    for (int i = 0; i < TP_DLIB_COUNT; i++)
        print_lib(labels[i], &f->lib[i]);
    if (f->torch_version[0]) {
        char cv[16] = "CPU only", dn[32] = "none";
        if (f->torch_cuda)
            tp_sysinfo_cuda_version_str(f->torch_cuda, cv, sizeof cv);
        if (f->torch_cudnn)
            tp_doctor_cudnn_str(f->torch_cudnn, dn, sizeof dn);
        printf("  %-16s %s (CUDA %s, cuDNN %s)\n", "PyTorch", f->torch_version, cv, dn);
    } else if (f->torch_checked) {
        printf("  %-16s not importable\n", "PyTorch");
    }
}

static int report(const tp_doctor_facts *f) {
    tp_doctor_finding x[16];
    size_t n = tp_doctor_check(f, x, 16);
    int worst = -1, counts[3] = {0};
    printf("\n");
    for (size_t i = 0; i < n && i < 16; i++) {
        printf("[%s] %s: %s\n  fix: %s\n\n", tp_doctor_level_name(x[i].level), x[i].id, x[i].what,
               x[i].fix);
        counts[x[i].level]++;
        worst = (int)x[i].level > worst ? (int)x[i].level : worst;
    }
    printf("result: %d error(s), %d warning(s), %d note(s)%s\n", counts[TP_DOC_ERROR],
           counts[TP_DOC_WARN], counts[TP_DOC_INFO], n ? "" : ": everything fits together");
    return worst == TP_DOC_ERROR ? EXIT_ERROR : worst == TP_DOC_WARN ? EXIT_WARN : 0;
}

/* Returns -1 after a usage error, 1 after --help, else 0. */
static int parse(int argc, char **argv, doctor_args *a) {
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "--help") || !strcmp(o, "-h"))
            return 1;
        if (!strcmp(o, "--no-default-paths"))
            a->o.no_default_dirs = 1;
        else if (!strcmp(o, "--no-python"))
            a->no_python = 1;
        else if (v && !strcmp(o, "--root"))
            a->o.root = v, i++;
        else if (v && !strcmp(o, "--python"))
            a->python = v, i++;
        else if (v && !strcmp(o, "--timeout") && atoi(v) > 0)
            a->timeout_s = atoi(v), i++;
        else if (v && !strcmp(o, "--lib-path") && a->o.n_lib_dirs < TP_DOCTOR_MAX_DIRS)
            a->o.lib_dirs[a->o.n_lib_dirs++] = v, i++;
        else {
            fprintf(stderr, "trainprof doctor: bad option '%s'%s\n", o,
                    v || !strncmp(o, "--", 2) ? "" : " (missing value?)");
            return -1;
        }
    }
    return 0;
}

int tp_cmd_doctor(int argc, char **argv) {
    doctor_args a;
    memset(&a, 0, sizeof a);
    a.o.root = getenv("TP_DOCTOR_ROOT");
    a.o.ld_library_path = getenv("LD_LIBRARY_PATH");
    a.o.cuda_injection = getenv("CUDA_INJECTION64_PATH");
    a.python = "python3";
    a.timeout_s = 60;
    int r = parse(argc, argv, &a);
    if (r) {
        usage(r > 0 ? stdout : stderr);
        return r > 0 ? 0 : 2;
    }
    tp_doctor_facts f;
    tp_doctor_probe(&a.o, &f);
    if (!a.no_python)
        probe_torch(&a, &f);
    print_facts(&f);
    int st = report(&f);
    return fflush(stdout) == 0 ? st : 1;
}
