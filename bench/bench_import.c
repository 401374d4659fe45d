/* bench_import: Kineto JSON import throughput on one core.
 *
 * For each file (uncompressed JSON, already in the page cache after a warm-up run) it
 * reports MB/s of the importer reading the file (tp_import_kineto_file: zlib's transparent
 * read + yajl + model building), by wall clock and by process CPU time (the machine is
 * shared, so CPU time is the steadier figure), MB/s of the parse from memory
 * (tp_import_kineto_mem, no I/O, CPU time), and the time of tp_model_finish (sort, indexes,
 * nesting). Best of N runs (default 3).
 * Figures are MB/s (10^6 bytes of JSON per second).
 * usage: bench_import [-n RUNS] FILE.json... */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* One timed import; returns CPU seconds (*wall_s: wall seconds), or -1 on error.
 * *finish_s gets the CPU time of tp_model_finish. */
static double run_once(const char *path, const char *data, size_t n, size_t *rows, double *finish_s,
                       double *wall_s) {
    tp_model *m = tp_model_new();
    char err[512];
    double w0 = now_s(), t0 = cpu_s();
    tp_status st = data ? tp_import_kineto_mem(m, path, data, n, err, sizeof err)
                        : tp_import_kineto_file(m, path, err, sizeof err);
    double t1 = cpu_s();
    *wall_s = now_s() - w0;
    if (st != TP_OK) {
        fprintf(stderr, "bench_import: %s\n", err);
        tp_model_close(m);
        return -1;
    }
    tp_model_finish(m);
    *finish_s = cpu_s() - t1;
    *rows = m->ranks[0].ev.n;
    tp_model_close(m);
    return t1 - t0;
}

int main(int argc, char **argv) {
    int runs = 3, first = 1;
    if (argc > 2 && !strcmp(argv[1], "-n"))
        runs = atoi(argv[2]), first = 3;
    if (first >= argc || runs < 1) {
        fprintf(stderr, "usage: bench_import [-n RUNS] FILE.json...\n");
        return 2;
    }
    printf("%-36s %7s %8s %11s %10s %10s %10s\n", "file", "MB", "rows", "file wall", "file cpu",
           "mem cpu", "finish ms");
    for (int i = first; i < argc; i++) {
        size_t n = 0, rows = 0;
        char *data = slurp(argv[i], &n);
        if (!data) {
            fprintf(stderr, "bench_import: cannot read %s\n", argv[i]);
            return 1;
        }
        double best_file = 1e30, best_wall = 1e30, best_mem = 1e30, best_fin = 1e30, fin, wall;
        for (int r = 0; r < runs; r++) {
            double a = run_once(argv[i], NULL, n, &rows, &fin, &wall);
            best_wall = wall < best_wall ? wall : best_wall;
            double b = run_once(argv[i], data, n, &rows, &fin, &wall);
            if (a < 0 || b < 0)
                return 1;
            best_file = a < best_file ? a : best_file;
            best_mem = b < best_mem ? b : best_mem;
            best_fin = fin < best_fin ? fin : best_fin;
        }
        const char *base = strrchr(argv[i], '/');
        double mb = (double)n / 1e6;
        printf("%-36.36s %7.1f %8zu %11.1f %10.1f %10.1f %10.1f\n", base ? base + 1 : argv[i], mb,
               rows, mb / best_wall, mb / best_file, mb / best_mem, best_fin * 1e3);
        free(data);
    }
    return 0;
}
