/* bench_kernels: CPU GEMM and convolution throughput against this machine's FMA peak.
 *
 * Peak, two ways: nominal = cores x FMA pipes x lanes x 2 flops x clock (the clock given on
 * the command line, default 2.6 GHz), and measured = a loop of independent FMAs on every
 * core (shows the clock the cores really run at, turbo included). GEMM: square sizes, 1 and
 * `cores` threads, best of several runs. Conv: SimpleCNN's two layers at batch 64, forward,
 * backward-data and backward-filter, direct-convolution flop counts.
 *
 * usage: bench_kernels [--clock-ghz G] [--cores N] [--isa avx512|avx2|generic] [--quick] */
#include "tp_gemm.h"
#include "tp_kcpu.h"

#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- FMA peak: 12 independent accumulators per thread ---- */

#define FMA_ITERS 2000000L

__attribute__((target("avx512f"))) static double fma_loop_512(void) {
    __m512 acc[12], m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-7f);
    for (int i = 0; i < 12; i++)
        acc[i] = _mm512_set1_ps((float)i);
    for (long it = 0; it < FMA_ITERS; it++)
#pragma GCC unroll 12
        for (int i = 0; i < 12; i++)
            acc[i] = _mm512_fmadd_ps(acc[i], m, a);
    float sink = 0;
    for (int i = 0; i < 12; i++)
        sink += _mm512_reduce_add_ps(acc[i]);
    return 2.0 * 16 * 12 * FMA_ITERS + (sink == 12345.0f);
}

__attribute__((target("avx2,fma"))) static double fma_loop_256(void) {
    __m256 acc[12], m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(1e-7f);
    for (int i = 0; i < 12; i++)
        acc[i] = _mm256_set1_ps((float)i);
    for (long it = 0; it < FMA_ITERS; it++)
#pragma GCC unroll 12
        for (int i = 0; i < 12; i++)
            acc[i] = _mm256_fmadd_ps(acc[i], m, a);
    float out[8], sink = 0;
    for (int i = 0; i < 12; i++) {
        _mm256_storeu_ps(out, acc[i]);
        sink += out[0];
    }
    return 2.0 * 8 * 12 * FMA_ITERS + (sink == 12345.0f);
}

static int use512;

static void *fma_thread(void *p) {
    *(double *)p = use512 ? fma_loop_512() : fma_loop_256();
    return NULL;
}

static double measured_peak_once(int threads) {
    pthread_t t[16];
    double flops[16] = {0}, t0 = now_s();
    for (int i = 1; i < threads; i++)
        pthread_create(&t[i], NULL, fma_thread, &flops[i]);
    fma_thread(&flops[0]);
    for (int i = 1; i < threads; i++)
        pthread_join(t[i], NULL);
    double dt = now_s() - t0, total = 0;
    for (int i = 0; i < threads; i++)
        total += flops[i];
    return total / dt / 1e9;
}

/* Best of several short runs: the machine is shared, the best run is the one that got the
 * cores to itself. */
static double measured_peak(int threads) {
    double best = 0;
    for (int r = 0; r < 9; r++) {
        double g = measured_peak_once(threads);
        best = g > best ? g : best;
    }
    return best;
}

/* ---- GEMM ---- */

static double gemm_gflops(int n, int threads, int reps) {
    float *a = malloc((size_t)n * n * 4), *b = malloc((size_t)n * n * 4);
    float *c = malloc((size_t)n * n * 4);
    for (size_t i = 0; i < (size_t)n * n; i++) {
        a[i] = (float)(i % 13) * 0.01f;
        b[i] = (float)(i % 7) * 0.02f;
    }
    tp_gemm(0, 0, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n, threads); /* warm-up */
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        tp_gemm(0, 0, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n, threads);
        double dt = now_s() - t0;
        best = dt < best ? dt : best;
    }
    free(a);
    free(b);
    free(c);
    return 2.0 * n * n * (double)n / best / 1e9;
}

/* ---- convolution ---- */

typedef struct {
    const char *name;
    tp_conv_shape s;
} conv_case;

static void bench_conv(const conv_case *cc, int threads, int reps) {
    tp_conv_shape s = cc->s;
    s.threads = threads;
    int oh = tp_conv_out_h(&s), ow = tp_conv_out_w(&s);
    size_t nx = (size_t)s.n * s.c * s.h * s.w, ny = (size_t)s.n * s.k * oh * ow;
    size_t nw = (size_t)s.k * s.c * 9;
    float *x = calloc(nx, 4), *y = calloc(ny, 4), *w = calloc(nw, 4), *b = calloc(s.k, 4);
    float *ws = calloc(tp_conv3x3_workspace(&s), 4), *dw = calloc(nw, 4), *dx = calloc(nx, 4);
    double flops = 2.0 * ny * s.c * 9, best[3] = {1e30, 1e30, 1e30};
    for (int r = 0; r <= reps; r++) { /* r == 0 warms up */
        double t[4];
        t[0] = now_s();
        tp_conv3x3_fwd(&s, x, w, b, y, ws);
        t[1] = now_s();
        tp_conv3x3_bwd_data(&s, y, w, dx, ws);
        t[2] = now_s();
        tp_conv3x3_bwd_filter(&s, x, y, dw, b, ws);
        t[3] = now_s();
        for (int i = 0; r > 0 && i < 3; i++)
            best[i] = t[i + 1] - t[i] < best[i] ? t[i + 1] - t[i] : best[i];
    }
    printf("conv %-28s threads %d: fwd %6.1f GFLOP/s (%.2f ms)  bwd_data %6.1f  bwd_filter "
           "%6.1f GFLOP/s\n",
           cc->name, threads, flops / best[0] / 1e9, best[0] * 1e3, flops / best[1] / 1e9,
           flops / best[2] / 1e9);
    free(x), free(y), free(w), free(b), free(ws), free(dw), free(dx);
}

int main(int argc, char **argv) {
    double ghz = 2.6;
    int cores = 2, quick = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--clock-ghz") && i + 1 < argc)
            ghz = atof(argv[++i]);
        else if (!strcmp(argv[i], "--cores") && i + 1 < argc)
            cores = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--isa") && i + 1 < argc) {
            if (tp_gemm_force_isa(argv[++i])) {
                fprintf(stderr, "this CPU cannot run %s\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else {
            fprintf(stderr,
                    "usage: bench_kernels [--clock-ghz G] [--cores N] [--isa I] [--quick]\n");
            return 2;
        }
    }
    if (cores < 1 || cores > 16 || ghz <= 0) {
        fprintf(stderr, "bad --cores or --clock-ghz\n");
        return 2;
    }
    int lanes = 0;
    const char *isa = tp_gemm_isa(&lanes);
    use512 = lanes == 16;
    /* Zen 4/5 and recent Intel server cores have 2 FMA pipes per core. */
    double nominal = cores * 2.0 * lanes * 2.0 * ghz;
    double meas1 = measured_peak(1), measn = measured_peak(cores);
    printf("micro-kernel: %s (%d fp32 lanes per FMA)\n", isa, lanes);
    printf("peak nominal: %d cores x 2 FMA pipes x %d lanes x 2 flops x %.2f GHz = %.1f GFLOP/s\n",
           cores, lanes, ghz, nominal);
    printf("peak measured (FMA loop): 1 thread %.1f GFLOP/s (= %.2f GHz effective), "
           "%d threads %.1f GFLOP/s\n",
           meas1, meas1 / (2.0 * lanes * 2.0), cores, measn);
    static const int sizes[] = {256, 512, 1024, 2048};
    int nsizes = quick ? 3 : 4;
    for (int i = 0; i < nsizes; i++)
        for (int t = 1; t <= cores; t = t == cores ? cores + 1 : cores) {
            double g = gemm_gflops(sizes[i], t, sizes[i] >= 2048 ? 5 : 9);
            printf("gemm %4d^3 threads %d: %6.1f GFLOP/s = %5.1f%% of nominal peak, %5.1f%% of "
                   "measured %d-thread peak\n",
                   sizes[i], t, g, 100.0 * g / nominal * (double)cores / t,
                   100.0 * g / (t == 1 ? meas1 : measn), t);
        }
    static const conv_case convs[] = {{"conv1 1->16 28x28 batch 64", {64, 1, 28, 28, 16, 1, 1}},
                                      {"conv2 16->32 14x14 batch 64", {64, 16, 14, 14, 32, 1, 1}}};
    for (int i = 0; i < 2; i++)
        for (int t = 1; t <= cores; t = t == cores ? cores + 1 : cores)
            bench_conv(&convs[i], t, quick ? 3 : 10);
    return 0;
}
