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
 * usage: bench_import [-n RUNS] [-d] FILE.json[.gz]... */
#include <fcntl.h>
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
static size_t inflate_only(const char *data, size_t n, timing *t) {
    static unsigned char out[1 << 20];
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
        z.avail_out = sizeof out;
        zr = inflate(&z, Z_NO_FLUSH);
        total += sizeof out - z.avail_out;
    } while (zr == Z_OK);
    inflateEnd(&z);
    t->cpu = cpu_s() - t0;
    t->wall = now_s() - w0;
    return zr == Z_STREAM_END ? total : 0;
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

int main(int argc, char **argv) {
    int runs = 3, first = 1, plain = 0;
    if (argc > 2 && !strcmp(argv[1], "-n"))
        runs = atoi(argv[2]), first = 3;
    if (first < argc && !strcmp(argv[first], "-d"))
        plain = 1, first++;
    if (first >= argc || runs < 1) {
        fprintf(stderr, "usage: bench_import [-n RUNS] [-d] FILE.json[.gz]...\n");
        return 2;
    }
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
