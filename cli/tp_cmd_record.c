/* trainprof record: runs a program under the collector and summarises the trace(s).
 *
 * The collector library is injected three ways at once (LD_PRELOAD for programs that never
 * call NVTX or CUDA, NVTX_INJECTION64_PATH, CUDA_INJECTION64_PATH); all name the same file,
 * so it loads once. Options travel as TRAINPROF_* variables (collector/tp_collector_config.h).
 * Every traced process appends its trace path to a manifest file, which is how this command
 * finds the traces of children the program started. The program's exit status is ours.
 *
 * Signals: the program must see what it would see without us. It inherits our SIGINT and
 * SIGTERM dispositions as we got them (an ignored signal stays ignored: `trap '' TERM`,
 * background jobs). A SIGINT/SIGTERM some process sent to us is passed on to the program,
 * marked (common/tp_sigforward.h) so that the collector in the program drops it when the
 * same sender's signal already reached the program directly (a signal to the whole process
 * group, as a job scheduler or `kill -INT -PGID` sends): the program gets it once. The
 * terminal's Ctrl-C reaches the program directly and is never passed on. */
#include "tp_cmd.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tp_reader.h"
#include "tp_sigforward.h"

#define COLLECTOR_NAME "libtrainprof-collector.so"

typedef struct {
    const char *output, *stacks, *capture, *delay, *duration, *buffer_mb;
    int no_cuda;
    char **cmd;
} record_opts;

static volatile sig_atomic_t g_child = 0;

/* The signals passed on to the program, their dispositions when we started, and per sender
 * how many we passed on (the collector pairs copies with direct deliveries by this count). */
#define FWD_SENDERS 16
static struct {
    int sig;
    struct sigaction start;
    struct {
        pid_t sender;
        uint16_t count;
    } from[FWD_SENDERS];
} g_fwd[] = {{.sig = SIGINT}, {.sig = SIGTERM}};
#define NFWD (sizeof g_fwd / sizeof g_fwd[0])

static void usage(FILE *f) {
    fprintf(f, "usage: trainprof record [-o FILE] [--stacks none|api|all]\n"
               "                        [--capture nvtx:RANGE[@DOMAIN] | --delay S --duration S]\n"
               "                        [--buffer-mb N] [--no-cuda] -- CMD ARGS...\n"
               "Runs CMD with the trainprof collector injected and writes a .tprof trace\n"
               "(default ./<program>-<pid>.tprof; with RANK etc. set, <program>-rank<R>-<pid>).\n");
}

static int is_number(const char *s, int allow_dot) {
    char *end;
    if (!s || !*s)
        return 0;
    double v = allow_dot ? strtod(s, &end) : (double)strtol(s, &end, 10);
    return !*end && v >= 0 && (allow_dot || v >= 1);
}

/* The collector takes 1 MiB to 1 TiB (TRAINPROF_BUFFER_MB); anything else must stop here,
 * before the program runs, rather than be ignored by the collector in every process.
 * Returns 0, or 2 after one line. */
static int check_buffer_mb(const char *v) {
    char *end;
    errno = 0;
    long long n = v ? strtoll(v, &end, 10) : 1;
    if (v && (!*v || *end || errno || n < 1 || n > (1LL << 20))) {
        fprintf(stderr, "trainprof record: --buffer-mb takes MiB from 1 to %lld, not '%s'\n",
                1LL << 20, v);
        return 2;
    }
    return 0;
}

/* Returns 0, or 2 (usage error, message printed). */
static int parse_args(int argc, char **argv, record_opts *o) {
    memset(o, 0, sizeof *o);
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        if (a[0] != '-')
            break;
        if (!strcmp(a, "--no-cuda")) {
            o->no_cuda = 1;
            continue;
        }
        const char **slot = !strcmp(a, "-o") || !strcmp(a, "--output") ? &o->output
                            : !strcmp(a, "--stacks")                   ? &o->stacks
                            : !strcmp(a, "--capture")                  ? &o->capture
                            : !strcmp(a, "--delay")                    ? &o->delay
                            : !strcmp(a, "--duration")                 ? &o->duration
                            : !strcmp(a, "--buffer-mb")                ? &o->buffer_mb
                                                                       : NULL;
        if (!slot) {
            fprintf(stderr, "trainprof record: unknown option '%s'\n", a);
            return 2;
        }
        if (!v) {
            fprintf(stderr, "trainprof record: %s needs a value\n", a);
            return 2;
        }
        *slot = v;
        i++;
    }
    o->cmd = argv + i;
    if (i >= argc) {
        fprintf(stderr, "trainprof record: no command given\n");
        return 2;
    }
    if (o->stacks && strcmp(o->stacks, "none") && strcmp(o->stacks, "api") &&
        strcmp(o->stacks, "all")) {
        fprintf(stderr, "trainprof record: --stacks must be none, api or all\n");
        return 2;
    }
    if (o->capture && (strncmp(o->capture, "nvtx:", 5) || !o->capture[5] || o->capture[5] == '@')) {
        fprintf(stderr, "trainprof record: --capture must be nvtx:RANGE[@DOMAIN]\n");
        return 2;
    }
    if (o->capture && (o->delay || o->duration)) {
        fprintf(stderr, "trainprof record: --capture and --delay/--duration exclude each other\n");
        return 2;
    }
    if ((o->delay && !is_number(o->delay, 1)) || (o->duration && !is_number(o->duration, 1))) {
        fprintf(stderr, "trainprof record: --delay/--duration take seconds\n");
        return 2;
    }
    return check_buffer_mb(o->buffer_mb);
}

/* The collector: $TRAINPROF_COLLECTOR_PATH, else next to this program in a build tree
 * (build/cli/trainprof -> build/lib/) or an install tree (bin/trainprof -> lib/). */
static int find_collector(char *out, size_t len) {
    const char *env = getenv("TRAINPROF_COLLECTOR_PATH");
    if (env && *env)
        return realpath(env, out) ? 0 : -1;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return -1;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (!slash)
        return -1;
    *slash = 0;
    static const char *const rel[] = {"/../lib/", "/lib/", "/../collector/", "/"};
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        char cand[PATH_MAX + 64];
        snprintf(cand, sizeof cand, "%s%s%s", exe, rel[i], COLLECTOR_NAME);
        if (access(cand, R_OK) == 0 && realpath(cand, out) && strlen(out) < len)
            return 0;
    }
    return -1;
}

static void set_env(const char *name, const char *value) {
    if (value)
        setenv(name, value, 1);
}

/* In the child, before exec. */
static void child_env(const record_opts *o, const char *lib, const char *manifest) {
    char buf[PATH_MAX * 2 + 16];
    const char *pre = getenv("LD_PRELOAD");
    snprintf(buf, sizeof buf, "%s%s%s", lib, pre && *pre ? " " : "", pre && *pre ? pre : "");
    setenv("LD_PRELOAD", buf, 1);
    setenv("NVTX_INJECTION64_PATH", lib, 1);
    if (!o->no_cuda)
        setenv("CUDA_INJECTION64_PATH", lib, 1);
    setenv("TRAINPROF_COLLECTOR", lib, 1);
    setenv("TRAINPROF_MANIFEST", manifest, 1);
    snprintf(buf, sizeof buf, "%ld", (long)getpid());
    setenv("TRAINPROF_TARGET_PID", buf, 1);
    if (o->output) {
        char abs[PATH_MAX + 1] = "";
        if (o->output[0] != '/' && getcwd(abs, PATH_MAX - 2))
            strcat(abs, "/");
        snprintf(buf, sizeof buf, "%s%s", o->output[0] == '/' ? "" : abs, o->output);
        setenv("TRAINPROF_OUTPUT", buf, 1);
    } else {
        unsetenv("TRAINPROF_OUTPUT");
    }
    set_env("TRAINPROF_STACKS", o->stacks);
    set_env("TRAINPROF_CAPTURE", o->capture);
    set_env("TRAINPROF_DELAY_S", o->delay);
    set_env("TRAINPROF_DURATION_S", o->duration);
    set_env("TRAINPROF_BUFFER_MB", o->buffer_mb);
    if (o->no_cuda)
        setenv("TRAINPROF_NO_CUDA", "1", 1);
}

/* The how-many-th signal from `sender` this is (1, 2, ...). Runs in a signal handler. */
static uint16_t next_count(size_t k, pid_t sender) {
    size_t i = 0;
    while (i < FWD_SENDERS && g_fwd[k].from[i].sender && g_fwd[k].from[i].sender != sender)
        i++;
    if (i == FWD_SENDERS) /* full: forget one */
        i = (size_t)sender % FWD_SENDERS;
    if (g_fwd[k].from[i].sender != sender)
        g_fwd[k].from[i].sender = sender, g_fwd[k].from[i].count = 0;
    return ++g_fwd[k].from[i].count;
}

/* Passes on a signal a process sent to us (si_code <= 0); the terminal's (SI_KERNEL) went to
 * the program directly. */
static void forward(int sig, siginfo_t *info, void *uc) {
    (void)uc;
    if (g_child <= 0 || !info || info->si_code > 0)
        return;
    for (size_t k = 0; k < NFWD; k++) {
        if (g_fwd[k].sig != sig)
            continue;
        union sigval v;
        v.sival_ptr = (void *)(uintptr_t)tp_sigfwd_encode((uint32_t)info->si_pid,
                                                          next_count(k, info->si_pid));
        sigqueue((pid_t)g_child, sig, v);
    }
}

/* Only signals that are not ignored: an ignored one stays ignored, for us and the program. */
static void install_forwarding(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = forward;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (size_t k = 0; k < NFWD; k++) {
        sigaction(g_fwd[k].sig, NULL, &g_fwd[k].start);
        if (g_fwd[k].start.sa_handler != SIG_IGN || (g_fwd[k].start.sa_flags & SA_SIGINFO))
            sigaction(g_fwd[k].sig, &sa, NULL);
    }
}

/* In the child: the dispositions we were started with (exec keeps an ignored signal). */
static void restore_signals(void) {
    for (size_t k = 0; k < NFWD; k++)
        sigaction(g_fwd[k].sig, &g_fwd[k].start, NULL);
}

static int wait_child(pid_t pid) {
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return 1;
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    if (WIFSIGNALED(st)) {
        fprintf(stderr, "trainprof record: %s was killed by signal %d (%s)\n", "the program",
                WTERMSIG(st), strsignal(WTERMSIG(st)));
        return 128 + WTERMSIG(st);
    }
    return 1;
}

/* Sums OVERHEAD durations and finds why CUDA tracing was off (a COUNTER's name). */
static void scan_trace(tp_reader *r, uint64_t *overhead_ns, const char **cuda_off) {
    tp_query q = {TP_REC_BIT(TP_REC_OVERHEAD) | TP_REC_BIT(TP_REC_COUNTER), 0, 0};
    tp_cursor *c;
    *overhead_ns = 0;
    *cuda_off = NULL;
    if (tp_cursor_open(r, &q, &c) != TP_OK)
        return;
    for (const tp_rec_hdr *h; (h = tp_cursor_next(c));) {
        if (h->type == TP_REC_OVERHEAD) {
            *overhead_ns += tp_record_end(h) - tp_record_ts(h);
        } else {
            tp_rec_counter k;
            tp_record_get(h, &k, sizeof k);
            const char *name = tp_reader_string(r, k.name_sid);
            if (name && !strncmp(name, "trainprof.cuda_off: ", 20))
                *cuda_off = name + 20;
        }
    }
    tp_cursor_close(c);
}

static void summarize(const char *path) {
    tp_reader *r;
    tp_status s = tp_reader_open(path, &r);
    if (s != TP_OK) {
        fprintf(stderr, "trainprof: %s: %s\n", path, tp_status_why(s, errno));
        return;
    }
    const tp_trace_info *in = tp_reader_info(r);
    const tp_integrity *ig = tp_reader_integrity(r);
    fprintf(stderr, "trainprof: trace %s (%.1f KiB)\n", path, ig->file_bytes / 1024.0);
    fprintf(stderr, "  events:");
    int any = 0;
    for (int t = 0; t < TP_REC_TYPE_LIMIT; t++)
        if (in->records[t] && t != TP_REC_PAD)
            fprintf(stderr, "%s %s %llu", any++ ? "," : "", tp_record_name((uint16_t)t),
                    (unsigned long long)in->records[t]);
    fprintf(stderr, "%s\n", any ? "" : " none");
    uint64_t ov;
    const char *cuda_off;
    scan_trace(r, &ov, &cuda_off);
    double span = in->t_max > in->t_min ? (double)(in->t_max - in->t_min) : 0;
    fprintf(stderr, "  dropped: %llu   collector overhead: %.3f ms",
            (unsigned long long)in->dropped_total, ov / 1e6);
    if (span > 0)
        fprintf(stderr, " (%.3f%% of %.3f s)", 100.0 * ov / span, span / 1e9);
    fprintf(stderr, "\n");
    if (cuda_off)
        fprintf(stderr, "  CUDA: not traced (%s)\n", cuda_off);
    if (ig->message[0])
        fprintf(stderr, "  integrity: %s\n", ig->message);
    fprintf(stderr, "  next: trainprof report %s\n", path);
    tp_reader_close(r);
}

/* Each line of the manifest is "<pid> <path>". A path can appear twice (a process that
 * exec'd into a program of the same name, under -o); traces the collector deleted (empty
 * ones of processes that exec'd or were not the started program) are skipped silently. */
static int summarize_manifest(const char *manifest) {
    FILE *f = fopen(manifest, "r");
    char line[PATH_MAX + 64];
    char **done = NULL;
    size_t n = 0;
    while (f && fgets(line, sizeof line, f)) {
        char *path = strchr(line, ' ');
        if (!path)
            continue;
        path++;
        path[strcspn(path, "\n")] = 0;
        int seen = access(path, F_OK) != 0;
        for (size_t i = 0; i < n && !seen; i++)
            seen = strcmp(done[i], path) == 0;
        char **grown = seen ? NULL : realloc(done, (n + 1) * sizeof *done);
        if (!grown)
            continue;
        done = grown;
        done[n] = strdup(path);
        if (!done[n])
            continue;
        summarize(path);
        n++;
    }
    for (size_t i = 0; i < n; i++)
        free(done[i]);
    free(done);
    if (f)
        fclose(f);
    return (int)n;
}

static int make_manifest(char *out, size_t len) {
    const char *tmp = getenv("TMPDIR");
    snprintf(out, len, "%s/trainprof-manifest-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(out);
    if (fd < 0)
        return -1;
    close(fd);
    return 0;
}

int tp_cmd_record(int argc, char **argv) {
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return 0;
    }
    record_opts o;
    if (parse_args(argc, argv, &o) != 0) {
        usage(stderr);
        return 2;
    }
    char lib[PATH_MAX], manifest[PATH_MAX];
    if (find_collector(lib, sizeof lib) != 0) {
        fprintf(stderr,
                "trainprof record: cannot find %s next to this program; set "
                "TRAINPROF_COLLECTOR_PATH\n",
                COLLECTOR_NAME);
        return 1;
    }
    if (make_manifest(manifest, sizeof manifest) != 0) {
        fprintf(stderr, "trainprof record: cannot create a temporary file: %s\n", strerror(errno));
        return 1;
    }
    fflush(NULL);
    install_forwarding();
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "trainprof record: fork: %s\n", strerror(errno));
        unlink(manifest);
        return 1;
    }
    if (pid == 0) {
        restore_signals();
        child_env(&o, lib, manifest);
        execvp(o.cmd[0], o.cmd);
        fprintf(stderr, "trainprof record: cannot run %s: %s\n", o.cmd[0], strerror(errno));
        _exit(127);
    }
    g_child = pid;
    int rc = wait_child(pid);
    if (summarize_manifest(manifest) == 0 && rc != 127)
        fprintf(stderr, "trainprof record: the program wrote no trace\n");
    unlink(manifest);
    return rc;
}
