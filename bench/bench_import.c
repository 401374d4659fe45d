/* bench_import: Kineto JSON import throughput: yajl alone, simdjson pieces, yajl split.
 *
 * For each file (plain or gzip'ed JSON, read into memory first, so no I/O is timed) it times,
 * alternating, best of N runs (default 3): yajl alone (tp_import_kineto_mem_parser walker 0:
 * zlib streaming + yajl + model building, the import before simdjson), the default import
 * (walker 1: the traceEvents array walked by simdjson On-Demand in 128 KiB pieces) and the
 * opt-in split parse (tp_import_kineto_mem_split: gzip inflated whole by libdeflate, the
 * array parsed by two yajl threads), each by wall clock and by process CPU time, and for gzip
 * input zlib's inflate alone (in memory, 1 MiB at a time) and `gzip -dc FILE >/dev/null` (the
 * command a user compares with: a process, its read and its inflate). `simd` walks on the
 * importing thread (`x cpu`: yajl CPU / its CPU), `simd2` on the importing thread and a
 * helper thread as the import does with two cores (`x wall`: yajl wall / its wall); `vs infl` is
 * simd2's wall speed over inflate alone (1.0: as fast as decompression), `vs gzip` over `gzip
 * -dc`'s wall speed. Then the ms of tp_model_finish. Figures are MB/s of JSON text (10^6 bytes of
 * decompressed JSON per second); on a shared machine give ratios from one run, with the load.
 * `-d`: a gzip file is inflated in memory first and timed as the plain JSON it holds (the
 * plain-text figures without a decompressed copy of the file on disk).
 *
 * `-c`: the machine's two-core ceiling next to the import's, side by side (issue 13: does
 * anything get 2x on this machine's two CPUs?). Per file, alternating, N rounds, on two worker
 * threads that live through the run (a new thread per import ran it ~1.5x slower: its malloc
 * arena's pages faulted in anew): (a) `one`, the one-thread import (walker 1) alone, pinned
 * to each of the two CPUs in turn; (b) `pair`, two one-thread imports of the same text at
 * once, each its own model, pinned to the two CPUs; (c) `two`, the two-thread import (walker
 * 2, free to use both CPUs, as the CLI runs it). A line of medians, then one of the least of
 * each series (`best`): `hw` = 2*t(a)/t(b), the throughput two CPUs give two copies of the
 * same work; `code` = t(a)/t(c), the two-thread import's speedup; `of hw` = code/hw, how much
 * of what the machine gives the import takes. `infl`: CPU time of one import in (b) over (a)'s
 * (above 1: the same instructions slower with both CPUs busy); `pbusy`: (b)'s CPU time over
 * its wall, 2.0 when both its threads had a CPU throughout (below: other processes took one;
 * on the `best` line the most of the rounds); `main`/`help`: CPU ms of the importing thread
 * and of the helper in (c) (process CPU minus the importing thread's), `busy` their sum over
 * (c)'s wall. Controls that are not ours, same rounds, each alone and two at once on the two
 * CPUs, their `hw` factors: `int`, a fixed integer loop (registers only), `mem`, a read of 64
 * MiB per thread (memory bandwidth), and for a gzip file `zlib`, its inflate in memory. First,
 * every file's models of (a), (b)'s two and (c) are compared column by column, strings and
 * stacks (exit 1 when they differ). Run it under `chrt -f 10` on a shared machine: other
 * processes' threads otherwise take the CPUs mid-import (pbusy).
 * usage: bench_import [-n RUNS] [-d] [-c] FILE.json[.gz]... */
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <zlib.h>

#include "tp_import_kineto.h"
#include "tp_model.h"

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double now_s(void) {
    return clock_s(CLOCK_MONOTONIC);
}

static double cpu_s(void) {
    return clock_s(CLOCK_PROCESS_CPUTIME_ID);
}

static double thread_cpu_s(void) {
    return clock_s(CLOCK_THREAD_CPUTIME_ID);
}

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc(len > 0 ? (size_t)len : 1);
    if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *n = (size_t)len;
    return buf;
}

typedef struct {
    double wall, cpu;
} timing;

static void best(timing *b, timing t) {
    b->wall = t.wall < b->wall ? t.wall : b->wall;
    b->cpu = t.cpu < b->cpu ? t.cpu : b->cpu;
}

/* One timed import (mode 0 yajl, 1 simdjson pieces, 2 the same with a walker thread, 3 split);
 * *rows: rows of the rank; *finish_s: the CPU time of tp_model_finish. Returns 0, or -1 on error.
 */
static int run_once(const char *path, const char *data, size_t n, int mode, size_t *rows,
                    double *finish_s, timing *t) {
    tp_model *m = tp_model_new();
    char err[512];
    double w0 = now_s(), t0 = cpu_s();
    tp_status st =
        mode == 3 ? tp_import_kineto_mem_split(m, path, data, n, 0, NULL, err, sizeof err)
                  : tp_import_kineto_mem_parser(m, path, data, n, mode, 0, NULL, err, sizeof err);
    t->cpu = cpu_s() - t0;
    t->wall = now_s() - w0;
    if (st != TP_OK) {
        fprintf(stderr, "bench_import: %s\n", err);
        tp_model_close(m);
        return -1;
    }
    double f0 = cpu_s();
    tp_model_finish(m);
    *finish_s = cpu_s() - f0;
    *rows = m->ranks[0].ev.n;
    tp_model_close(m);
    return 0;
}

/* zlib inflate alone over a gzip image (1 MiB output buffer, as a pipe reader would);
 * returns the decompressed size, *t its time. */
static size_t inflate_into(const char *data, size_t n, timing *t, unsigned char *out,
                           size_t out_len) {
    double w0 = now_s(), t0 = cpu_s();
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
        return 0;
    z.next_in = (unsigned char *)(uintptr_t)data;
    z.avail_in = (unsigned)n;
    size_t total = 0;
    int zr;
    do {
        z.next_out = out;
        z.avail_out = (unsigned)out_len;
        zr = inflate(&z, Z_NO_FLUSH);
        total += out_len - z.avail_out;
    } while (zr == Z_OK);
    inflateEnd(&z);
    t->cpu = cpu_s() - t0;
    t->wall = now_s() - w0;
    return zr == Z_STREAM_END ? total : 0;
}

static size_t inflate_only(const char *data, size_t n, timing *t) {
    static unsigned char out[1 << 20];
    return inflate_into(data, n, t, out, sizeof out);
}

/* The text of a gzip image, malloc'd (*len its length); NULL when it is not one whole stream. */
static char *inflate_all(const char *data, size_t n, size_t *len) {
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
        return NULL;
    size_t cap = 4 * n + (1 << 20), total = 0;
    char *out = malloc(cap);
    z.next_in = (unsigned char *)(uintptr_t)data;
    z.avail_in = (unsigned)n;
    int zr = Z_OK;
    while (out && zr == Z_OK) {
        if (total == cap) {
            char *o = realloc(out, cap *= 2);
            if (!o)
                break;
            out = o;
        }
        z.next_out = (unsigned char *)out + total;
        z.avail_out = (unsigned)(cap - total > (1u << 30) ? 1u << 30 : cap - total);
        unsigned before = z.avail_out;
        zr = inflate(&z, Z_NO_FLUSH);
        total += before - z.avail_out;
    }
    inflateEnd(&z);
    if (zr != Z_STREAM_END) {
        free(out);
        return NULL;
    }
    *len = total;
    return out;
}

/* `gzip -dc PATH >/dev/null` as a child; its wall time, or a negative time when it failed. */
static double gzip_dc(const char *path) {
    extern char **environ;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    char *argv[] = {"gzip", "-dc", (char *)(uintptr_t)path, NULL};
    pid_t pid;
    double w0 = now_s();
    int rc = posix_spawnp(&pid, "gzip", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    int status = 0;
    if (rc || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
        return -1;
    return now_s() - w0;
}

/* ---------------------------------------------------------------- -c: the two-core ceiling */

/* The first two CPUs of this process's affinity (cpu[1] < 0: only one). */
static void two_cpus(int cpu[2]) {
    cpu_set_t set;
    cpu[0] = cpu[1] = -1;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return;
    for (int c = 0, k = 0; c < CPU_SETSIZE && k < 2; c++)
        if (CPU_ISSET(c, &set))
            cpu[k++] = c;
}

/* Rows of rank r equal column by column, and the stacks and strings (the model before
 * tp_model_finish: what the import built, in its order). */
static int same_model(const tp_model *a, const tp_model *b) {
    if (a->n_ranks != b->n_ranks || tp_model_n_strings(a) != tp_model_n_strings(b))
        return 0;
    for (uint32_t id = 0; id < tp_model_n_strings(a); id++)
        if (strcmp(tp_model_str(a, id), tp_model_str(b, id)))
            return 0;
    for (size_t r = 0; r < a->n_ranks; r++) {
        const tp_rank *ra = &a->ranks[r], *rb = &b->ranks[r];
        const tp_events *x = &ra->ev, *y = &rb->ev;
        size_t n = x->n;
        if (n != y->n || ra->mem.n != rb->mem.n || ra->n_json_events != rb->n_json_events ||
            ra->rank != rb->rank || ra->rank_hta != rb->rank_hta || ra->stacks.n != rb->stacks.n ||
            ra->stacks.n_frames != rb->stacks.n_frames ||
            ra->stacks.n_pycodes != rb->stacks.n_pycodes)
            return 0;
        if (n && (memcmp(x->ts, y->ts, n * sizeof *x->ts) ||
                  memcmp(x->name, y->name, n * sizeof *x->name) ||
                  memcmp(x->cat, y->cat, n * sizeof *x->cat) ||
                  memcmp(x->flags, y->flags, n * sizeof *x->flags)))
            return 0;
        for (size_t i = 0; i < n; i++)
            if (tp_ev_dur(x, i) != tp_ev_dur(y, i) || tp_ev_pid(x, i) != tp_ev_pid(y, i) ||
                tp_ev_tid(x, i) != tp_ev_tid(y, i) || tp_ev_stream(x, i) != tp_ev_stream(y, i) ||
                tp_ev_corr(x, i) != tp_ev_corr(y, i) ||
                tp_ev_cat_raw(x, i) != tp_ev_cat_raw(y, i) ||
                tp_ev_external_id(x, i) != tp_ev_external_id(y, i) ||
                tp_ev_shapes(x, i) != tp_ev_shapes(y, i) || tp_ev_seq(x, i) != tp_ev_seq(y, i) ||
                tp_ev_bytes(x, i) != tp_ev_bytes(y, i) || tp_ev_stack(x, i) != tp_ev_stack(y, i))
                return 0;
        const tp_stacks *sa = &ra->stacks, *sb = &rb->stacks;
        for (size_t k = 0; k < sa->n; k++)
            if (sa->v[k].id != sb->v[k].id || sa->v[k].n != sb->v[k].n ||
                sa->v[k].first != sb->v[k].first)
                return 0;
        if (sa->n_frames &&
            memcmp(sa->frame_addr, sb->frame_addr, sa->n_frames * sizeof *sa->frame_addr))
            return 0;
    }
    return 1;
}

typedef enum { JOB_IMPORT, JOB_INT, JOB_MEM, JOB_ZLIB } job_kind;

#define INT_STEPS 12000000u   /* xorshift steps of the integer control, 4 chains (~40 ms) */
#define MEM_BYTES (64u << 20) /* the memory control's buffer per thread, read 4 times */

/* One thread's work in a ceiling run: what, where, and what it measured. */
typedef struct {
    job_kind kind;
    const char *path, *data;
    size_t n;
    int walker;                        /* JOB_IMPORT: 1 one thread, 2 the two-thread import */
    int cpu;                           /* the CPU it runs on; < 0: any of the process's */
    int want_model;                    /* JOB_IMPORT: keep the model (for same_model) */
    tp_model *model;                   /* the model kept */
    uint64_t *mem;                     /* JOB_MEM: MEM_BYTES of its own */
    unsigned char *out;                /* JOB_ZLIB: 1 MiB of its own */
    double w0, w1, cpu_used, proc_cpu; /* its thread's CPU time; the process's */
    int failed;
    uint64_t sink;
} job;

static uint64_t int_loop(void) {
    uint64_t a = 1, b = 2, c = 3, d = 4;
    for (unsigned i = 0; i < INT_STEPS; i++) {
        a ^= a << 13, a ^= a >> 7, a ^= a << 17;
        b ^= b << 13, b ^= b >> 7, b ^= b << 17;
        c ^= c << 13, c ^= c >> 7, c ^= c << 17;
        d ^= d << 13, d ^= d >> 7, d ^= d << 17;
    }
    return a + b + c + d;
}

static uint64_t mem_loop(const uint64_t *v) {
    uint64_t s = 0;
    size_t n = MEM_BYTES / sizeof *v;
    for (int pass = 0; pass < 4; pass++)
        for (size_t i = 0; i < n; i += 4)
            s += v[i] ^ v[i + 1] ^ v[i + 2] ^ v[i + 3];
    return s;
}

/* Two threads that live through the whole run and take a job each round (a thread's first
 * malloc arena use faults in fresh pages: a new thread per job ran its import ~1.5x slower
 * than the main thread did); job i runs on worker i, pinned to its job's CPU. */
typedef struct {
    pthread_t th[2];
    pthread_barrier_t start, end; /* the main thread and both workers */
    job *j[2];                    /* this round's; NULL: none */
    int quit;
    cpu_set_t all; /* the process's CPUs, for jobs on any */
} crew;

typedef struct {
    crew *c;
    int i;
} worker_arg;

static void run_job(job *j, const cpu_set_t *all) {
    cpu_set_t one;
    CPU_ZERO(&one);
    if (j->cpu >= 0)
        CPU_SET(j->cpu, &one);
    pthread_setaffinity_np(pthread_self(), sizeof one, j->cpu >= 0 ? &one : all);
    double c0 = thread_cpu_s(), p0 = cpu_s();
    j->w0 = now_s();
    if (j->kind == JOB_IMPORT) {
        tp_model *m = tp_model_new();
        char err[512];
        j->failed = tp_import_kineto_mem_parser(m, j->path, j->data, j->n, j->walker, 0, NULL, err,
                                                sizeof err) != TP_OK;
        j->w1 = now_s();
        j->cpu_used = thread_cpu_s() - c0, j->proc_cpu = cpu_s() - p0;
        if (j->failed)
            fprintf(stderr, "bench_import: %s\n", err);
        if (j->want_model && !j->failed)
            j->model = m;
        else
            tp_model_close(m);
        return;
    }
    if (j->kind == JOB_INT) {
        j->sink = int_loop();
    } else if (j->kind == JOB_MEM) {
        j->sink = mem_loop(j->mem);
    } else {
        timing t;
        j->failed = inflate_into(j->data, j->n, &t, j->out, 1u << 20) == 0;
    }
    j->w1 = now_s();
    j->cpu_used = thread_cpu_s() - c0, j->proc_cpu = cpu_s() - p0;
}

static void *worker_main(void *arg) {
    worker_arg *a = arg;
    crew *c = a->c;
    for (;;) {
        pthread_barrier_wait(&c->start);
        if (c->quit)
            return NULL;
        if (c->j[a->i])
            run_job(c->j[a->i], &c->all);
        pthread_barrier_wait(&c->end);
    }
}

static worker_arg crew_args[2];

static void crew_start(crew *c) {
    memset(c, 0, sizeof *c);
    if (sched_getaffinity(0, sizeof c->all, &c->all) != 0)
        exit(1);
    pthread_barrier_init(&c->start, NULL, 3);
    pthread_barrier_init(&c->end, NULL, 3);
    for (int i = 0; i < 2; i++) {
        crew_args[i] = (worker_arg){c, i};
        if (pthread_create(&c->th[i], NULL, worker_main, &crew_args[i]) != 0) {
            fprintf(stderr, "bench_import: no thread\n");
            exit(1);
        }
    }
}

static void crew_stop(crew *c) {
    c->quit = 1;
    pthread_barrier_wait(&c->start);
    for (int i = 0; i < 2; i++)
        pthread_join(c->th[i], NULL);
    pthread_barrier_destroy(&c->start);
    pthread_barrier_destroy(&c->end);
}

/* Runs `k` (1 or 2) copies of job `proto` at once on the crew's workers, the i-th on cpu[i]
 * (any CPU when there are not two, or when `anywhere`); returns the wall from the first
 * start to the last end (< 0: a job failed), *cpu_each the mean CPU time of one.
 * js[i].model: the models kept. */
static double run_jobs(crew *cr, job js[2], int k, const job *proto, const int cpu[2], int anywhere,
                       double *cpu_each) {
    for (int i = 0; i < 2; i++) {
        uint64_t *mem = js[i].mem;
        unsigned char *out = js[i].out;
        js[i] = *proto;
        js[i].mem = mem, js[i].out = out;
        js[i].cpu = cpu[1] >= 0 && !anywhere ? cpu[i] : -1;
        cr->j[i] = i < k ? &js[i] : NULL;
    }
    pthread_barrier_wait(&cr->start);
    pthread_barrier_wait(&cr->end);
    double w0 = 1e30, w1 = 0, c = 0;
    int failed = 0;
    for (int i = 0; i < k; i++) {
        w0 = js[i].w0 < w0 ? js[i].w0 : w0;
        w1 = js[i].w1 > w1 ? js[i].w1 : w1;
        c += js[i].cpu_used;
        failed |= js[i].failed;
    }
    *cpu_each = c / k;
    return failed ? -1 : w1 - w0;
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* The median and the least of v[0..n) (sorts v). */
static double median(double *v, int n, double *least) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    *least = v[0];
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* What a -c round measures, by column (each one a series of `runs` figures). */
enum {
    C_ONE,
    C_PAIR,
    C_PAIR_BUSY,
    C_TWO,
    C_ONE_CPU,
    C_PAIR_CPU,
    C_MAIN,
    C_HELP,
    C_INT1,
    C_INT2,
    C_MEM1,
    C_MEM2,
    C_ZLIB1,
    C_ZLIB2,
    C_COLS
};

/* -c for one file: `data` the text (or gzip) imported, `gz`/`gz_n` a gzip image for the zlib
 * control (NULL: none). Returns 0, 1 when the models differ or an import failed. */
static int ceiling(const char *path, const char *data, size_t n, double mb, const char *gz,
                   size_t gz_n, int runs, const int cpu[2], crew *cr, job js[2]) {
    double *col[C_COLS];
    for (int c = 0; c < C_COLS; c++)
        col[c] = calloc((size_t)runs, sizeof **col);
    job imp =
            {.kind = JOB_IMPORT, .path = path, .data = data, .n = n, .walker = 1, .want_model = 1},
        imp2 = imp;
    imp2.walker = 2;
    const int swapped[2] = {cpu[1], cpu[0]};
    double ce;
    /* the models first: (a), (b)'s two, (c); also a warm-up of each */
    if (run_jobs(cr, js, 1, &imp, cpu, 0, &ce) < 0)
        return 1;
    tp_model *one = js[0].model;
    if (run_jobs(cr, js, 1, &imp2, cpu, 1, &ce) < 0)
        return 1;
    tp_model *two = js[0].model;
    if (run_jobs(cr, js, 2, &imp, cpu, 0, &ce) < 0)
        return 1;
    int same = same_model(one, two) && same_model(one, js[0].model) && same_model(one, js[1].model);
    tp_model_close(one), tp_model_close(two), tp_model_close(js[0].model),
        tp_model_close(js[1].model);
    imp.want_model = imp2.want_model = 0;
    if (!same) {
        fprintf(stderr,
                "bench_import: %s: the models of the one-thread, pair and two-thread "
                "imports differ\n",
                path);
        return 1;
    }
    job ij = {.kind = JOB_INT}, mj = {.kind = JOB_MEM},
        zj = {.kind = JOB_ZLIB, .data = gz, .n = gz_n};
    for (int r = 0; r < runs; r++) {
        const int *one_cpu = r % 2 ? swapped : cpu; /* alone: each CPU in turn */
        if ((col[C_ONE][r] = run_jobs(cr, js, 1, &imp, one_cpu, 0, &col[C_ONE_CPU][r])) < 0 ||
            (col[C_PAIR][r] = run_jobs(cr, js, 2, &imp, cpu, 0, &col[C_PAIR_CPU][r])) < 0 ||
            (col[C_TWO][r] = run_jobs(cr, js, 1, &imp2, cpu, 1, &col[C_MAIN][r])) < 0)
            return 1;
        col[C_PAIR_BUSY][r] = 2 * col[C_PAIR_CPU][r] / col[C_PAIR][r];
        col[C_HELP][r] = js[0].proc_cpu - col[C_MAIN][r];
        col[C_INT1][r] = run_jobs(cr, js, 1, &ij, one_cpu, 0, &ce);
        col[C_INT2][r] = run_jobs(cr, js, 2, &ij, cpu, 0, &ce);
        col[C_MEM1][r] = run_jobs(cr, js, 1, &mj, one_cpu, 0, &ce);
        col[C_MEM2][r] = run_jobs(cr, js, 2, &mj, cpu, 0, &ce);
        if (gz) {
            col[C_ZLIB1][r] = run_jobs(cr, js, 1, &zj, one_cpu, 0, &ce);
            col[C_ZLIB2][r] = run_jobs(cr, js, 2, &zj, cpu, 0, &ce);
        }
    }
    double med[C_COLS], lo[C_COLS];
    for (int c = 0; c < C_COLS; c++)
        med[c] = median(col[c], runs, &lo[c]);
    double hi_pair_busy = col[C_PAIR_BUSY][runs - 1]; /* sorted: the most */
    for (int c = 0; c < C_COLS; c++)
        free(col[c]);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    for (int b = 0; b < 2; b++) { /* medians, then the least of each series */
        const double *v = b ? lo : med;
        double hw = 2 * v[C_ONE] / v[C_PAIR], code = v[C_ONE] / v[C_TWO];
        printf("%-18.18s %-4s %5.1f | %5.1f %5.1f %5.1f | %5.2fx %5.2fx %4.0f%% | %5.2f %5.2f | "
               "%5.1f %5.1f %5.2f | %5.2fx %5.2fx ",
               b ? "" : base, b ? "best" : "med", mb, v[C_ONE] * 1e3, v[C_PAIR] * 1e3,
               v[C_TWO] * 1e3, hw, code, 100 * code / hw, v[C_PAIR_CPU] / v[C_ONE_CPU],
               b ? hi_pair_busy : v[C_PAIR_BUSY], v[C_MAIN] * 1e3, v[C_HELP] * 1e3,
               (v[C_MAIN] + v[C_HELP]) / v[C_TWO], 2 * v[C_INT1] / v[C_INT2],
               2 * v[C_MEM1] / v[C_MEM2]);
        if (gz)
            printf("%5.2fx\n", 2 * v[C_ZLIB1] / v[C_ZLIB2]);
        else
            printf("%6s\n", "-");
    }
    fflush(stdout);
    return 0;
}

static int ceiling_main(char **files, int nfiles, int runs, int plain) {
    int cpu[2];
    two_cpus(cpu);
    job js[2];
    memset(js, 0, sizeof js);
    for (int i = 0; i < 2; i++) {
        js[i].mem = malloc(MEM_BYTES);
        js[i].out = malloc(1u << 20);
        if (!js[i].mem || !js[i].out)
            return 1;
        for (size_t k = 0; k < MEM_BYTES / sizeof *js[i].mem; k++)
            js[i].mem[k] = k * 0x9e3779b97f4a7c15ull + (uint64_t)i;
    }
    crew cr;
    crew_start(&cr);
    if (cpu[1] >= 0)
        printf("two CPUs: %d and %d (one and pair pinned, one on each in turn; two not)\n", cpu[0],
               cpu[1]);
    else
        printf("one CPU: nothing pinned\n");
    printf("%-18s %-4s %5s | %5s %5s %5s | %6s %6s %5s | %5s %5s | %5s %5s %5s | %6s %6s %6s\n",
           "file", "", "MB", "one", "pair", "two", "hw", "code", "of hw", "infl", "pbusy", "main",
           "help", "busy", "int hw", "mem hw", "zlibhw");
    for (int i = 0; i < nfiles; i++) {
        size_t n = 0, text_n = 0;
        char *data = slurp(files[i], &n), *text = NULL;
        if (!data) {
            fprintf(stderr, "bench_import: cannot read %s\n", files[i]);
            return 1;
        }
        int gz = n >= 2 && (unsigned char)data[0] == 0x1f && (unsigned char)data[1] == 0x8b;
        if (gz && !(text = inflate_all(data, n, &text_n))) {
            fprintf(stderr, "bench_import: cannot inflate %s\n", files[i]);
            return 1;
        }
        double mb = (double)(gz ? text_n : n) / 1e6;
        const char *d = gz && plain ? text : data;
        size_t dn = gz && plain ? text_n : n;
        if (ceiling(files[i], d, dn, mb, gz ? data : NULL, gz ? n : 0, runs, cpu, &cr, js))
            return 1;
        free(text);
        free(data);
    }
    crew_stop(&cr);
    for (int i = 0; i < 2; i++)
        free(js[i].mem), free(js[i].out);
    return 0;
}

int main(int argc, char **argv) {
    int runs = 3, first = 1, plain = 0, ceil = 0;
    if (argc > 2 && !strcmp(argv[1], "-n"))
        runs = atoi(argv[2]), first = 3;
    if (first < argc && !strcmp(argv[first], "-d"))
        plain = 1, first++;
    if (first < argc && !strcmp(argv[first], "-c"))
        ceil = 1, first++;
    if (first >= argc || runs < 1) {
        fprintf(stderr, "usage: bench_import [-n RUNS] [-d] [-c] FILE.json[.gz]...\n");
        return 2;
    }
    if (ceil)
        return ceiling_main(argv + first, argc - first, runs, plain);
    printf("%-30s %6s %7s | %6s %6s | %6s %6s | %6s %6s | %6s %6s | %7s %7s | %6s %7s | %6s\n",
           "file", "MB", "rows", "yajl", "cpu", "simd", "cpu", "x wall", "x cpu", "split", "cpu",
           "inflate", "vs infl", "gzip", "vs gzip", "fin ms");
    for (int i = first; i < argc; i++) {
        size_t n = 0, rows = 0, text = 0;
        char *data = slurp(argv[i], &n);
        if (!data) {
            fprintf(stderr, "bench_import: cannot read %s\n", argv[i]);
            return 1;
        }
        int gz = n >= 2 && (unsigned char)data[0] == 0x1f && (unsigned char)data[1] == 0x8b;
        if (gz && plain) {
            char *text_data = inflate_all(data, n, &n);
            free(data);
            if (!text_data) {
                fprintf(stderr, "bench_import: cannot inflate %s\n", argv[i]);
                return 1;
            }
            data = text_data, gz = 0;
        }
        timing ser = {1e30, 1e30}, sim = {1e30, 1e30}, sim2 = {1e30, 1e30}, spl = {1e30, 1e30},
               inf = {1e30, 1e30}, t;
        double gzw = 1e30;
        double fin = 1e30, f;
        for (int r = 0; r < runs; r++) {
            if (run_once(argv[i], data, n, 0, &rows, &f, &t))
                return 1;
            best(&ser, t);
            if (run_once(argv[i], data, n, 1, &rows, &f, &t))
                return 1;
            best(&sim, t);
            if (run_once(argv[i], data, n, 2, &rows, &f, &t))
                return 1;
            best(&sim2, t);
            if (run_once(argv[i], data, n, 3, &rows, &f, &t))
                return 1;
            best(&spl, t);
            fin = f < fin ? f : fin;
            if (gz) {
                text = inflate_only(data, n, &t);
                best(&inf, t);
                double g = gzip_dc(argv[i]);
                if (g < 0) {
                    fprintf(stderr, "bench_import: gzip -dc %s failed\n", argv[i]);
                    return 1;
                }
                gzw = g < gzw ? g : gzw;
            }
        }
        const char *base = strrchr(argv[i], '/');
        double mb = (double)(gz ? text : n) / 1e6;
        printf("%-24.24s %5.1f %6zu | %5.0f %5.0f | %5.0f %5.0f %5.2fx | %5.0f %5.0f %5.2fx | "
               "%5.0f %5.0f | ",
               base ? base + 1 : argv[i], mb, rows, mb / ser.wall, mb / ser.cpu, mb / sim.wall,
               mb / sim.cpu, ser.cpu / sim.cpu, mb / sim2.wall, mb / sim2.cpu, ser.wall / sim2.wall,
               mb / spl.wall, mb / spl.cpu);
        if (gz)
            printf("%7.0f %6.2fx | %6.0f %6.2fx | ", mb / inf.wall, inf.wall / sim2.wall, mb / gzw,
                   gzw / sim2.wall);
        else
            printf("%7s %7s | %6s %7s | ", "-", "-", "-", "-");
        printf("%5.1f\n", fin * 1e3);
        free(data);
    }
    return 0;
}
