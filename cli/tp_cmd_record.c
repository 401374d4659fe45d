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
#include <time.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tp_layout.h"
#include "tp_mem.h"
#include "tp_outfile.h"
#include "tp_reader.h"
#include "tp_record.h"
#include "tp_sigforward.h"
#include "tp_stepname.h"
#include "tp_text.h"
#include "tp_visit.h"

#define COLLECTOR_NAME "libtrainprof-collector.so"

typedef struct {
    const char *output, *stacks, *capture, *delay, *duration, *buffer_mb, *step_range;
    const char *sample_hz; /* --sample (100) or --sample-hz N: TRAINPROF_SAMPLE_HZ */
    int no_cuda, force;
    int pytorch;      /* --pytorch: TRAINPROF_PYTORCH, PYTHONPATH gets the start-up file's folder */
    const char *live; /* --live, --idle: TRAINPROF_LIVE (docs/live.md) */
    char **cmd;
    char output_abs[PATH_MAX]; /* -o made absolute (the program may chdir) */
    tp_file_id output_id;      /* the empty file reserved at -o before the start */
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
    fprintf(f,
            "usage: trainprof record [-o FILE [--force]] [--stacks none|api|all]\n"
            "                        [--capture nvtx:RANGE[@DOMAIN] | --delay S --duration S]\n"
            "                        [--buffer-mb N] [--no-cuda] [--sample | --sample-hz N]\n"
            "                        [--live | --idle] [--step-range NAME[@DOMAIN]] [--pytorch]\n"
            "                        -- CMD ARGS...\n"
            "Runs CMD with the trainprof collector injected and writes a .tprof trace\n"
            "(default ./<program>-<pid>.tprof; with RANK etc. set, <program>-rank<R>-<pid>).\n"
            "An existing FILE is kept unless --force; FILE's folder is created when missing.\n"
            "--live also serves a control socket (trainprof top/capture/ps); --idle serves\n"
            "it and records nothing until asked (trainprof capture, trainprof top).\n"
            "--sample reads every Python thread's stack and CPU time 100 times a second\n"
            "(--sample-hz: 1 to %d), for the report's \"CPU time by line\", and the CPU\n"
            "time of the other threads (intra-op and OpenMP pools, libraries' threads).\n"
            "--pytorch marks a PyTorch program's steps (one per update of its optimizer),\n"
            "DataLoader fetches, backward passes and optimizer steps as NVTX ranges, for\n"
            "programs that do not.\n",
            TP_SAMPLE_HZ_MAX);
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
        if (!strcmp(a, "--no-cuda") || !strcmp(a, "--force")) {
            *(a[2] == 'n' ? &o->no_cuda : &o->force) = 1;
            continue;
        }
        if (!strcmp(a, "--pytorch")) {
            o->pytorch = 1;
            continue;
        }
        if (!strcmp(a, "--sample")) {
            o->sample_hz = o->sample_hz ? o->sample_hz : "100";
            continue;
        }
        if (!strcmp(a, "--live") || !strcmp(a, "--idle")) {
            if (o->live && strcmp(o->live, a + 2)) {
                fprintf(stderr, "trainprof record: --live and --idle exclude each other\n");
                return 2;
            }
            o->live = a + 2;
            continue;
        }
        const char **slot = !strcmp(a, "-o") || !strcmp(a, "--output") ? &o->output
                            : !strcmp(a, "--stacks")                   ? &o->stacks
                            : !strcmp(a, "--capture")                  ? &o->capture
                            : !strcmp(a, "--delay")                    ? &o->delay
                            : !strcmp(a, "--duration")                 ? &o->duration
                            : !strcmp(a, "--buffer-mb")                ? &o->buffer_mb
                            : !strcmp(a, "--step-range")               ? &o->step_range
                            : !strcmp(a, "--sample-hz")                ? &o->sample_hz
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
    if (o->live && !strcmp(o->live, "idle") && (o->capture || o->delay || o->duration)) {
        fprintf(stderr, "trainprof record: --idle records only what is asked for; it excludes "
                        "--capture/--delay/--duration\n");
        return 2;
    }
    /* --pytorch writes its steps whole when they end: a capture by their name never opens */
    if (o->pytorch && o->capture && tp_step_name_n(o->capture + 5, strcspn(o->capture + 5, "@"))) {
        fprintf(stderr,
                "trainprof record: --pytorch writes each step when it ends, so --capture "
                "%s would never open: use --delay/--duration, or trainprof capture "
                "under --live\n",
                o->capture);
        return 2;
    }
    if (o->step_range && (!o->step_range[0] || o->step_range[0] == '@')) {
        fprintf(stderr, "trainprof record: --step-range must be NAME[@DOMAIN]\n");
        return 2;
    }
    if ((o->delay && !is_number(o->delay, 1)) || (o->duration && !is_number(o->duration, 1))) {
        fprintf(stderr, "trainprof record: --delay/--duration take seconds\n");
        return 2;
    }
    if (o->sample_hz) {
        char *end;
        long hz = strtol(o->sample_hz, &end, 10);
        if (!*o->sample_hz || *end || hz < 1 || hz > TP_SAMPLE_HZ_MAX) {
            fprintf(stderr,
                    "trainprof record: --sample-hz takes 1 to %d samples a second, not '%s'\n",
                    TP_SAMPLE_HZ_MAX, o->sample_hz);
            return 2;
        }
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

/* One id for every process of this recording (the PROCESS record's job_id), so `report`
 * tells this run's traces from another's in the same folder, even when pids repeat (as
 * they do from one container start to the next). */
static uint64_t new_job_id(void) {
    uint64_t id = 0;
    if (getrandom(&id, sizeof id, 0) != (ssize_t)sizeof id) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        id =
            ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^ ((uint64_t)getpid() << 40);
    }
    return id ? id : 1; /* 0 means "unknown" */
}

#define PYBOOT_DIR "trainprof-python" /* record --pytorch's sitecustomize.py, beside the lib */

/* The folder of `record --pytorch`'s start-up file: PYBOOT_DIR beside the collector `lib`.
 * Returns 0, or -1 when it is not there. */
static int find_pyboot(const char *lib, char *out, size_t len) {
    const char *slash = strrchr(lib, '/');
    int n = snprintf(out, len, "%.*s/%s", slash ? (int)(slash - lib) : 1, slash ? lib : ".",
                     PYBOOT_DIR);
    char file[PATH_MAX + 32];
    snprintf(file, sizeof file, "%s/sitecustomize.py", out);
    return n > 0 && (size_t)n < len && access(file, R_OK) == 0 ? 0 : -1;
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
    snprintf(buf, sizeof buf, "%016llx", (unsigned long long)new_job_id());
    setenv("TRAINPROF_JOB_ID", buf, 1);
    unsetenv("TRAINPROF_MAIN_TRACE"); /* the collector in the started process sets it */
    unsetenv("TRAINPROF_EXEC_GEN");
    snprintf(buf, sizeof buf, "%ld", (long)getpid());
    setenv("TRAINPROF_TARGET_PID", buf, 1);
    if (o->output) {
        setenv("TRAINPROF_OUTPUT", o->output_abs, 1);
        snprintf(buf, sizeof buf, "%llu:%llu", (unsigned long long)o->output_id.dev,
                 (unsigned long long)o->output_id.ino);
        setenv("TRAINPROF_OUTPUT_ID", buf, 1);
    } else {
        unsetenv("TRAINPROF_OUTPUT");
        unsetenv("TRAINPROF_OUTPUT_ID");
    }
    if (o->force)
        setenv("TRAINPROF_FORCE", "1", 1);
    else
        unsetenv("TRAINPROF_FORCE");
    set_env("TRAINPROF_STACKS", o->stacks);
    set_env("TRAINPROF_CAPTURE", o->capture);
    set_env("TRAINPROF_DELAY_S", o->delay);
    set_env("TRAINPROF_DURATION_S", o->duration);
    set_env("TRAINPROF_BUFFER_MB", o->buffer_mb);
    /* Unset when not asked for: a `record` inside a live job must not serve too. */
    if (o->live)
        setenv("TRAINPROF_LIVE", o->live, 1);
    else
        unsetenv("TRAINPROF_LIVE");
    if (o->sample_hz)
        setenv("TRAINPROF_SAMPLE_HZ", o->sample_hz, 1);
    else
        unsetenv("TRAINPROF_SAMPLE_HZ");
    if (o->step_range)
        setenv("TRAINPROF_STEP_RANGE", o->step_range, 1);
    else
        unsetenv("TRAINPROF_STEP_RANGE");
    if (o->no_cuda)
        setenv("TRAINPROF_NO_CUDA", "1", 1);
    char boot[PATH_MAX];
    if (o->pytorch && find_pyboot(lib, boot, sizeof boot) == 0) {
        /* first on the path: Python runs it at start-up, and it runs the one it shadows */
        const char *pp = getenv("PYTHONPATH");
        size_t n = strlen(boot) + (pp ? strlen(pp) : 0) + 2;
        char *path = tp_mem_xalloc(n, 1); /* PYTHONPATH has no length limit */
        snprintf(path, n, "%s%s%s", boot, pp && *pp ? ":" : "", pp && *pp ? pp : "");
        setenv("PYTHONPATH", path, 1);
        free(path);
        setenv("TRAINPROF_PYTORCH", "1", 1);
    } else {
        unsetenv("TRAINPROF_PYTORCH");
    }
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

/* What the summary reads from the records: OVERHEAD durations, and why CUDA tracing was off
 * (a COUNTER's name). */
typedef struct {
    const tp_reader *r;
    uint64_t overhead_ns;
    const char *cuda_off;
} trace_scan;

static tp_status scan_overhead(void *ctx, const tp_rec_hdr *h) {
    ((trace_scan *)ctx)->overhead_ns += tp_record_end(h) - tp_record_ts(h);
    return TP_OK;
}

static tp_status scan_counter(void *ctx, const tp_rec_hdr *h) {
    trace_scan *s = ctx;
    const char *name = tp_reader_string(s->r, ((const tp_rec_counter *)(const void *)h)->name_sid);
    if (name && !strncmp(name, "trainprof.cuda_off: ", 20))
        s->cuda_off = name + 20;
    return TP_OK;
}

static const tp_visitor scanner = {
    .data = {[TP_REC_OVERHEAD] = scan_overhead, [TP_REC_COUNTER] = scan_counter},
};

/* Record types a trace holds whatever the program did: metadata and the collector's own. */
static const uint16_t not_events[] = {
    TP_REC_PROCESS, TP_REC_THREAD,          TP_REC_STRING,     TP_REC_MODULE,   TP_REC_STACK,
    TP_REC_DOMAIN,  TP_REC_CATEGORY,        TP_REC_DEVICE,     TP_REC_STREAM,   TP_REC_DROPPED,
    TP_REC_PAD,     TP_REC_EXT_CORRELATION, TP_REC_CLOCK_SYNC, TP_REC_OVERHEAD, TP_REC_ENV};

/* 1 when the trace holds events of the program or dropped some (the collector's COUNTER
 * saying why CUDA was off is not one). */
static int has_events(const tp_trace_info *in, const char *cuda_off) {
    uint64_t n = cuda_off ? (uint64_t)-1 : 0; /* that one COUNTER */
    for (int t = 0; t < TP_REC_TYPE_LIMIT; t++)
        n += in->records[t];
    for (size_t i = 0; i < sizeof not_events / sizeof not_events[0]; i++)
        n -= in->records[not_events[i]];
    return n > 0 || in->dropped_total > 0;
}

/* Said once when no trace of the run holds a single event: what would have made some. */
static void say_no_events(void) {
    fprintf(stderr,
            "trainprof record: no events were recorded. Events come from NVTX ranges and marks\n"
            "  (the nvtx package, torch.cuda.nvtx.range_push/range_pop, or\n"
            "  torch.autograd.profiler.emit_nvtx() around torch code), from CUDA work (kernels,\n"
            "  copies, allocations; needs CUDA tracing on) and from devices that report through\n"
            "  trainprof/activity.h. torch.profiler.record_function alone produces none.\n"
            "  Without annotations: --pytorch marks a PyTorch loop's steps, batch fetches,\n"
            "  backward passes and optimizer steps; --sample samples which Python lines run.\n");
}

/* What the summary says of one trace. */
typedef struct {
    int ok; /* read */
    uint64_t bytes, records[TP_REC_TYPE_LIMIT], dropped, overhead_ns, span_ns;
    char cuda_off[512], integrity[256];
    int events; /* has_events */
} trace_sum;

/* Reads the summary of `path` into *s; says why in one line when it cannot be read. */
static void read_sum(const char *path, trace_sum *s) {
    memset(s, 0, sizeof *s);
    tp_reader *r;
    tp_status st = tp_reader_open(path, &r);
    if (st != TP_OK) {
        char safe[PATH_MAX * 2];
        fprintf(stderr, "trainprof: %s: %s\n", tp_text_safe(safe, sizeof safe, path),
                tp_status_why(st, errno));
        return;
    }
    const tp_trace_info *in = tp_reader_info(r);
    const tp_integrity *ig = tp_reader_integrity(r);
    trace_scan sc = {r, 0, NULL};
    (void)tp_visit_run(r, &scanner, &sc, NULL); /* a summary: what could be read is shown */
    s->ok = 1;
    s->bytes = ig->file_bytes;
    memcpy(s->records, in->records, sizeof s->records);
    s->records[TP_REC_PAD] = 0;
    s->dropped = in->dropped_total;
    s->overhead_ns = sc.overhead_ns;
    s->span_ns = in->t_max > in->t_min ? in->t_max - in->t_min : 0;
    /* the counter's reason and the integrity message are printed terminal-safe (tp_text),
     * like every name from a trace */
    if (sc.cuda_off)
        tp_text_safe(s->cuda_off, sizeof s->cuda_off, sc.cuda_off);
    snprintf(s->integrity, sizeof s->integrity, "%s", ig->message);
    s->events = has_events(in, sc.cuda_off);
    tp_reader_close(r);
}

static void print_events(const uint64_t *records) {
    fprintf(stderr, "  events:");
    int any = 0;
    for (int t = 0; t < TP_REC_TYPE_LIMIT; t++)
        if (records[t])
            fprintf(stderr, "%s %s %llu", any++ ? "," : "", tp_record_name((uint16_t)t),
                    (unsigned long long)records[t]);
    fprintf(stderr, "%s\n", any ? "" : " none");
}

/* What went wrong in a trace, always said (each of a recording's traces). */
static void print_problems(const trace_sum *s, const char *who) {
    if (s->cuda_off[0])
        fprintf(stderr, "  %sCUDA: not traced (%s)\n", who, s->cuda_off);
    if (s->integrity[0])
        fprintf(stderr, "  %sintegrity: %s\n", who, s->integrity);
}

static void print_one(const char *path, const trace_sum *s) {
    char safe[PATH_MAX * 2];
    fprintf(stderr, "trainprof: trace %s (%.1f KiB)\n", tp_text_safe(safe, sizeof safe, path),
            (double)s->bytes / 1024.0);
    print_events(s->records);
    fprintf(stderr, "  dropped: %llu   collector overhead: %.3f ms", (unsigned long long)s->dropped,
            (double)s->overhead_ns / 1e6);
    if (s->span_ns)
        fprintf(stderr, " (%.3f%% of %.3f s)", 100.0 * (double)s->overhead_ns / (double)s->span_ns,
                (double)s->span_ns / 1e9);
    fprintf(stderr, "\n");
    print_problems(s, "");
}

/* A recording of many processes (a launcher's ranks and their DataLoader workers: dozens) is
 * summarized as its first trace, then the others together, their problems each. */
#define SUMMARY_EACH 4

static void print_rest(char **paths, const trace_sum *sums, size_t n) {
    trace_sum all;
    memset(&all, 0, sizeof all);
    size_t ok = 0;
    for (size_t i = 1; i < n; i++) {
        if (!sums[i].ok)
            continue;
        ok++;
        all.bytes += sums[i].bytes, all.dropped += sums[i].dropped;
        all.overhead_ns += sums[i].overhead_ns;
        for (int t = 0; t < TP_REC_TYPE_LIMIT; t++)
            all.records[t] += sums[i].records[t];
    }
    fprintf(stderr, "trainprof: %zu other process traces (%.1f KiB in all)\n", ok,
            (double)all.bytes / 1024.0);
    print_events(all.records);
    fprintf(stderr, "  dropped: %llu   collector overhead: %.3f ms in all\n",
            (unsigned long long)all.dropped, (double)all.overhead_ns / 1e6);
    char who[PATH_MAX * 2 + 4];
    for (size_t i = 1; i < n; i++) {
        if (!sums[i].ok || (!sums[i].cuda_off[0] && !sums[i].integrity[0]))
            continue;
        const char *base = strrchr(paths[i], '/');
        tp_text_safe(who, sizeof who - 2, base ? base + 1 : paths[i]);
        strcat(who, ": ");
        print_problems(&sums[i], who);
    }
}

/* 1 when `path` is the trace of another process of the recording whose main trace is
 * `main` (tp_layout: beside it, named after it), which `report MAIN` reads with it. */
static int beside_main(const char *main, const char *path) {
    const char *m = strrchr(main, '/'), *p = strrchr(path, '/');
    size_t dm = m ? (size_t)(m - main) : 0, dp = p ? (size_t)(p - path) : 0;
    return dm == dp && strncmp(main, path, dm) == 0 &&
           tp_layout_is_member(m ? m + 1 : main, p ? p + 1 : path);
}

/* What to run next: the report of the recording, which one trace is whichever the processes
 * were: the main trace (the manifest's first, written by the program started) reads the
 * other processes' beside it. Traces that are not one recording that way each get theirs. */
static void say_next(char **paths, size_t n) {
    char safe[PATH_MAX * 2];
    size_t beside = 0;
    for (size_t i = 1; i < n; i++)
        beside += beside_main(paths[0], paths[i]);
    if (n > 1 && beside == n - 1) {
        fprintf(stderr,
                "  next: trainprof report %s (with the %zu other process trace%s beside it)\n",
                tp_text_safe(safe, sizeof safe, paths[0]), n - 1, n == 2 ? "" : "s");
        return;
    }
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, "  next: trainprof report %s\n", tp_text_safe(safe, sizeof safe, paths[i]));
}

/* Each line of the manifest is "<pid> <path>". A path can appear twice (a process that
 * exec'd into a program of the same name, under -o); traces the collector deleted (empty
 * ones of processes that exec'd or were not the started program) are skipped silently. */
static int summarize_manifest(const char *manifest, int *events) {
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
        char **grown = seen ? NULL : tp_mem_realloc(done, n + 1, sizeof *done);
        if (!grown)
            continue;
        done = grown;
        done[n] = strdup(path);
        if (!done[n])
            continue;
        n++;
    }
    trace_sum *sums = tp_mem_calloc(n + 1, sizeof *sums);
    for (size_t i = 0; sums && i < n; i++) {
        read_sum(done[i], &sums[i]);
        *events |= sums[i].events;
        if (sums[i].ok && (n <= SUMMARY_EACH || i == 0))
            print_one(done[i], &sums[i]);
    }
    if (sums && n > SUMMARY_EACH)
        print_rest(done, sums, n);
    say_next(done, n);
    for (size_t i = 0; i < n; i++)
        free(done[i]);
    free(done), free(sums);
    if (f)
        fclose(f);
    return (int)n;
}

/* -o as an absolute path into o->output_abs; 0, or -1 when it does not fit. */
static int absolute_output(record_opts *o) {
    char cwd[PATH_MAX];
    if (o->output[0] == '/')
        cwd[0] = 0;
    else if (!getcwd(cwd, sizeof cwd))
        return -1;
    int n =
        snprintf(o->output_abs, sizeof o->output_abs, "%s%s%s", cwd, cwd[0] ? "/" : "", o->output);
    return n > 0 && (size_t)n < sizeof o->output_abs ? 0 : -1;
}

/* Before the program starts, so that a long run never ends untraced and two recordings never
 * share a file: the traces' folder exists (made when missing) and -o is reserved as a new,
 * empty file (an existing one only replaced with --force; a symbolic link is replaced
 * itself, never followed). The collector in the program claims that reservation. Returns 0,
 * or 1 with one line said. */
static int prepare_output(record_opts *o) {
    char dir[PATH_MAX];
    if (!o->output) { /* default names, in the current folder */
        if (access(".", W_OK | X_OK) == 0)
            return 0;
        fprintf(stderr, "trainprof record: cannot write traces into the current folder: %s\n",
                strerror(errno));
        return 1;
    }
    if (absolute_output(o) != 0 || tp_outfile_dirname(o->output_abs, dir, sizeof dir) != 0) {
        fprintf(stderr, "trainprof record: output path too long: %s\n", o->output);
        return 1;
    }
    if (tp_outfile_mkdirs(dir) != TP_OK) {
        fprintf(stderr, "trainprof record: cannot create folder %s: %s\n", dir, strerror(errno));
        return 1;
    }
    int fd;
    tp_status st = tp_outfile_create(o->output_abs, o->force, &fd, &o->output_id);
    if (st == TP_ERR_EXISTS) {
        fprintf(stderr, "trainprof record: %s already exists; use --force to replace it\n",
                o->output);
        return 1;
    }
    if (st != TP_OK) {
        fprintf(stderr, "trainprof record: cannot create %s: %s\n", o->output, strerror(errno));
        return 1;
    }
    close(fd);
    return 0;
}

/* After the run: a reservation nobody wrote into (the program never started, or never loaded
 * the collector) is not a trace; remove it while it is still that empty file. */
static void drop_unused_reservation(const record_opts *o) {
    struct stat sb;
    if (o->output && lstat(o->output_abs, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size == 0 &&
        (uint64_t)sb.st_dev == o->output_id.dev && (uint64_t)sb.st_ino == o->output_id.ino)
        unlink(o->output_abs);
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
    char boot[PATH_MAX];
    if (o.pytorch && find_pyboot(lib, boot, sizeof boot) != 0) {
        fprintf(stderr, "trainprof record: --pytorch: cannot find %s/sitecustomize.py\n", boot);
        return 1;
    }
    if (prepare_output(&o) != 0)
        return 1;
    if (make_manifest(manifest, sizeof manifest) != 0) {
        fprintf(stderr, "trainprof record: cannot create a temporary file: %s\n", strerror(errno));
        drop_unused_reservation(&o);
        return 1;
    }
    fflush(NULL);
    install_forwarding();
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "trainprof record: fork: %s\n", strerror(errno));
        unlink(manifest);
        drop_unused_reservation(&o);
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
    int events = 0, traces = summarize_manifest(manifest, &events);
    if (traces == 0 && rc != 127)
        fprintf(stderr, "trainprof record: the program wrote no trace\n");
    else if (traces > 0 && !events)
        say_no_events();
    unlink(manifest);
    drop_unused_reservation(&o);
    return rc;
}
