/* tp_gemm: blocked SGEMM with run-time micro-kernel selection (see tp_gemm.h).
 *
 * Loop order (BLIS): jc over NC-wide column blocks, pc over KC-deep slices, pack B's
 * KC x NC block once, ic over MC-tall row blocks, pack A's MC x KC block, then the
 * micro-kernel sweeps MR x NR tiles. A micro-panel of B (KC x NR floats, 32 KiB for
 * AVX-512) stays in L1, the packed A block (MC x KC, 144 KiB) in L2, the B block in L3. */
#include "tp_gemm.h"

#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MR 6
#define KC 256
#define MC 144 /* multiple of MR */
#define NC 3072
#define NR_MAX 32

typedef void (*ukernel_fn)(int kc, const float *pa, const float *pb, float *c, int ldc, float alpha,
                           int mr, int nr);

typedef struct {
    const char *name;
    int nr;    /* tile width in floats */
    int lanes; /* FMA lanes per instruction */
    ukernel_fn fn;
} isa_desc;

/* Adds alpha * tile (MR x nr_full, row stride nr_full) into the mr x nr corner of C. */
static void add_partial(const float *tile, int nr_full, float *c, int ldc, float alpha, int mr,
                        int nr) {
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j++)
            c[(size_t)i * ldc + j] += alpha * tile[i * nr_full + j];
}

/* Portable micro-kernel, written with GCC/Clang vector extensions (4 floats: SSE2 on
 * x86-64, NEON on arm64). The 6x16 tile is done as two 6x8 halves so that the 12
 * accumulators, two B vectors and the broadcast A value fit in 16 vector registers. */
typedef float v4f __attribute__((vector_size(16)));

static void ukernel_generic(int kc, const float *pa, const float *pb, float *c, int ldc,
                            float alpha, int mr, int nr) {
    float tile[MR * 16] __attribute__((aligned(16)));
    for (int half = 0; half < 16; half += 8) {
        v4f acc[MR][2];
        for (int i = 0; i < MR; i++)
            acc[i][0] = acc[i][1] = (v4f){0, 0, 0, 0};
        const float *a = pa, *b = pb + half;
        for (int p = 0; p < kc; p++, a += MR, b += 16) {
            v4f b0 = *(const v4f *)b, b1 = *(const v4f *)(b + 4);
            for (int i = 0; i < MR; i++) {
                v4f av = {a[i], a[i], a[i], a[i]};
                acc[i][0] += av * b0;
                acc[i][1] += av * b1;
            }
        }
        for (int i = 0; i < MR; i++) {
            *(v4f *)(tile + i * 16 + half) = acc[i][0];
            *(v4f *)(tile + i * 16 + half + 4) = acc[i][1];
        }
    }
    add_partial(tile, 16, c, ldc, alpha, mr, nr);
}

/* The SIMD micro-kernels name their 12 accumulators one by one: with an array of vectors
 * GCC 12 keeps a copy in memory and stores every accumulator on every iteration. */
#define TP_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)

/* AVX2+FMA: 6 rows x 16 columns = 12 ymm accumulators, enough independent FMAs to cover
 * the FMA latency on both pipes. */
__attribute__((target("avx2,fma"))) static void ukernel_avx2(int kc, const float *pa,
                                                             const float *pb, float *c, int ldc,
                                                             float alpha, int mr, int nr) {
#define DECL(i) __m256 c##i##0 = _mm256_setzero_ps(), c##i##1 = _mm256_setzero_ps();
#define FMA(i)                                                                                     \
    {                                                                                              \
        __m256 av = _mm256_broadcast_ss(pa + i);                                                   \
        c##i##0 = _mm256_fmadd_ps(av, b0, c##i##0);                                                \
        c##i##1 = _mm256_fmadd_ps(av, b1, c##i##1);                                                \
    }
#define OUT(i)                                                                                     \
    if (full) {                                                                                    \
        float *cr = c + (size_t)(i)*ldc;                                                           \
        _mm256_storeu_ps(cr, _mm256_fmadd_ps(va, c##i##0, _mm256_loadu_ps(cr)));                   \
        _mm256_storeu_ps(cr + 8, _mm256_fmadd_ps(va, c##i##1, _mm256_loadu_ps(cr + 8)));           \
    } else {                                                                                       \
        _mm256_store_ps(tile + (i)*16, c##i##0);                                                   \
        _mm256_store_ps(tile + (i)*16 + 8, c##i##1);                                               \
    }
    TP_ROWS(DECL)
    for (int p = 0; p < kc; p++) {
        __m256 b0 = _mm256_load_ps(pb), b1 = _mm256_load_ps(pb + 8);
        TP_ROWS(FMA)
        pa += MR;
        pb += 16;
    }
    const int full = mr == MR && nr == 16;
    const __m256 va = _mm256_set1_ps(alpha);
    float tile[MR * 16] __attribute__((aligned(32)));
    TP_ROWS(OUT)
    if (!full)
        add_partial(tile, 16, c, ldc, alpha, mr, nr);
#undef DECL
#undef FMA
#undef OUT
}

/* AVX-512F: 6 rows x 32 columns = 12 zmm accumulators. */
__attribute__((target("avx512f"))) static void ukernel_avx512(int kc, const float *pa,
                                                              const float *pb, float *c, int ldc,
                                                              float alpha, int mr, int nr) {
#define DECL(i) __m512 c##i##0 = _mm512_setzero_ps(), c##i##1 = _mm512_setzero_ps();
#define FMA(i)                                                                                     \
    {                                                                                              \
        __m512 av = _mm512_set1_ps(pa[i]);                                                         \
        c##i##0 = _mm512_fmadd_ps(av, b0, c##i##0);                                                \
        c##i##1 = _mm512_fmadd_ps(av, b1, c##i##1);                                                \
    }
#define OUT(i)                                                                                     \
    if (full) {                                                                                    \
        float *cr = c + (size_t)(i)*ldc;                                                           \
        _mm512_storeu_ps(cr, _mm512_fmadd_ps(va, c##i##0, _mm512_loadu_ps(cr)));                   \
        _mm512_storeu_ps(cr + 16, _mm512_fmadd_ps(va, c##i##1, _mm512_loadu_ps(cr + 16)));         \
    } else {                                                                                       \
        _mm512_store_ps(tile + (i)*32, c##i##0);                                                   \
        _mm512_store_ps(tile + (i)*32 + 16, c##i##1);                                              \
    }
    TP_ROWS(DECL)
    for (int p = 0; p < kc; p++) {
        __m512 b0 = _mm512_load_ps(pb), b1 = _mm512_load_ps(pb + 16);
        TP_ROWS(FMA)
        pa += MR;
        pb += 32;
    }
    const int full = mr == MR && nr == 32;
    const __m512 va = _mm512_set1_ps(alpha);
    float tile[MR * 32] __attribute__((aligned(64)));
    TP_ROWS(OUT)
    if (!full)
        add_partial(tile, 32, c, ldc, alpha, mr, nr);
#undef DECL
#undef FMA
#undef OUT
}

static const isa_desc isa_table[] = {
    {"avx512", 32, 16, ukernel_avx512},
    {"avx2", 16, 8, ukernel_avx2},
    {"generic", 16, 4, ukernel_generic},
};

static int isa_usable(int i) {
    __builtin_cpu_init();
    if (i == 0)
        return __builtin_cpu_supports("avx512f");
    if (i == 1)
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return 1;
}

/* The micro-kernel choice is process-wide by nature (it describes the CPU); -1 = not yet
 * chosen. Racing first callers compute the same answer. */
static int isa_selected = -1;

static const isa_desc *isa_current(void) {
    int s = __atomic_load_n(&isa_selected, __ATOMIC_RELAXED);
    if (s < 0) {
        s = 2;
        for (int i = 0; i < 2; i++)
            if (isa_usable(i)) {
                s = i;
                break;
            }
        __atomic_store_n(&isa_selected, s, __ATOMIC_RELAXED);
    }
    return &isa_table[s];
}

const char *tp_gemm_isa(int *lanes) {
    const isa_desc *d = isa_current();
    if (lanes)
        *lanes = d->lanes;
    return d->name;
}

int tp_gemm_force_isa(const char *name) {
    if (!name) {
        __atomic_store_n(&isa_selected, -1, __ATOMIC_RELAXED);
        return 0;
    }
    for (int i = 0; i < 3; i++)
        if (strcmp(name, isa_table[i].name) == 0) {
            if (!isa_usable(i))
                return -1;
            __atomic_store_n(&isa_selected, i, __ATOMIC_RELAXED);
            return 0;
        }
    return -1;
}

typedef struct {
    int ta, tb, m, n, k;
    float alpha, beta;
    const float *a, *b;
    int lda, ldb, ldc;
    float *c;
    const isa_desc *isa;
} gemm_args;

static inline float elem_a(const gemm_args *g, int i, int p) {
    return g->ta ? g->a[(size_t)p * g->lda + i] : g->a[(size_t)i * g->lda + p];
}

static inline float elem_b(const gemm_args *g, int p, int j) {
    return g->tb ? g->b[(size_t)j * g->ldb + p] : g->b[(size_t)p * g->ldb + j];
}

/* Packs rows [i0, i0+mc) x depth [p0, p0+kc) of op(A) into MR-row micro-panels, zero-padded. */
static void pack_a(const gemm_args *g, int i0, int p0, int mc, int kc, float *pa) {
    for (int ir = 0; ir < mc; ir += MR) {
        int mr = mc - ir < MR ? mc - ir : MR;
        for (int p = 0; p < kc; p++) {
            for (int i = 0; i < mr; i++)
                pa[i] = elem_a(g, i0 + ir + i, p0 + p);
            for (int i = mr; i < MR; i++)
                pa[i] = 0.0f;
            pa += MR;
        }
    }
}

/* Packs depth [p0, p0+kc) x columns [j0, j0+nc) of op(B) into nr-wide micro-panels. */
static void pack_b(const gemm_args *g, int p0, int j0, int kc, int nc, int nr, float *pb) {
    for (int jr = 0; jr < nc; jr += nr) {
        int w = nc - jr < nr ? nc - jr : nr;
        for (int p = 0; p < kc; p++) {
            if (!g->tb) {
                memcpy(pb, g->b + (size_t)(p0 + p) * g->ldb + j0 + jr, (size_t)w * sizeof(float));
            } else {
                for (int j = 0; j < w; j++)
                    pb[j] = elem_b(g, p0 + p, j0 + jr + j);
            }
            for (int j = w; j < nr; j++)
                pb[j] = 0.0f;
            pb += nr;
        }
    }
}

static void scale_c(const gemm_args *g, int m0, int m1, int n0, int n1) {
    for (int i = m0; i < m1; i++) {
        float *row = g->c + (size_t)i * g->ldc;
        if (g->beta == 0.0f)
            memset(row + n0, 0, (size_t)(n1 - n0) * sizeof(float));
        else if (g->beta != 1.0f)
            for (int j = n0; j < n1; j++)
                row[j] *= g->beta;
    }
}

/* Unblocked fallback when packing memory cannot be had. */
static void gemm_naive(const gemm_args *g, int m0, int m1, int n0, int n1) {
    for (int i = m0; i < m1; i++)
        for (int j = n0; j < n1; j++) {
            float s = 0.0f;
            for (int p = 0; p < g->k; p++)
                s += elem_a(g, i, p) * elem_b(g, p, j);
            g->c[(size_t)i * g->ldc + j] += g->alpha * s;
        }
}

/* Packing buffers are cached per thread: a convolution calls tp_gemm once per image, and
 * allocating ~100 KiB each time would go through mmap, munmap and page faults that cost as
 * much as the multiply itself. The cache is freed when its thread exits. */
typedef struct {
    float *pa, *pb;
    size_t cap_a, cap_b; /* floats */
} pack_cache;

static pthread_key_t cache_key;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;
static int cache_key_ok;

static void cache_free(void *p) {
    pack_cache *c = p;
    free(c->pa);
    free(c->pb);
    free(c);
}

static void cache_init(void) {
    cache_key_ok = pthread_key_create(&cache_key, cache_free) == 0;
}

/* Its own allocation, not common/tp_mem: kernels depend on nothing of ours (the trainer's
 * kernels stand in for a user's, docs/ARCHITECTURE.md), and this buffer needs 64-byte
 * alignment and no copy of the old contents. The size is checked the same way. */
static float *grow(float **buf, size_t *cap, size_t count) {
    if (*cap >= count)
        return *buf;
    free(*buf);
    *buf = NULL;
    *cap = 0;
    if (count > (SIZE_MAX - 63) / sizeof(float))
        return NULL; /* count * sizeof(float), rounded up to 64, would wrap */
    size_t bytes = (count * sizeof(float) + 63) & ~(size_t)63;
    *buf = aligned_alloc(64, bytes);
    *cap = *buf ? count : 0;
    return *buf;
}

/* Packing buffers of at least na and nb floats for this thread, or 0 on failure. */
static int pack_buffers(size_t na, size_t nb, float **pa, float **pb) {
    pthread_once(&cache_once, cache_init);
    if (!cache_key_ok)
        return 0;
    pack_cache *c = pthread_getspecific(cache_key);
    if (!c) {
        c = calloc(1, sizeof *c);
        if (!c || pthread_setspecific(cache_key, c) != 0) {
            free(c);
            return 0;
        }
    }
    *pa = grow(&c->pa, &c->cap_a, na);
    *pb = grow(&c->pb, &c->cap_b, nb);
    return *pa && *pb;
}

/* C[m0:m1, n0:n1] += alpha * op(A) op(B), the blocked way. */
static void gemm_region(const gemm_args *g, int m0, int m1, int n0, int n1) {
    scale_c(g, m0, m1, n0, n1);
    if (g->k == 0 || g->alpha == 0.0f || m0 >= m1 || n0 >= n1)
        return;
    const int nr = g->isa->nr;
    int ncmax = n1 - n0 < NC ? n1 - n0 : NC;
    ncmax = (ncmax + nr - 1) / nr * nr;
    int kcmax = g->k < KC ? g->k : KC;
    float *pa, *pb;
    if (!pack_buffers((size_t)MC * kcmax, (size_t)kcmax * ncmax, &pa, &pb)) {
        gemm_naive(g, m0, m1, n0, n1);
        return;
    }
    for (int jc = n0; jc < n1; jc += NC) {
        int nc = n1 - jc < NC ? n1 - jc : NC;
        for (int pc = 0; pc < g->k; pc += KC) {
            int kc = g->k - pc < KC ? g->k - pc : KC;
            pack_b(g, pc, jc, kc, nc, nr, pb);
            for (int ic = m0; ic < m1; ic += MC) {
                int mc = m1 - ic < MC ? m1 - ic : MC;
                pack_a(g, ic, pc, mc, kc, pa);
                for (int jr = 0; jr < nc; jr += nr) {
                    int w = nc - jr < nr ? nc - jr : nr;
                    for (int ir = 0; ir < mc; ir += MR) {
                        int h = mc - ir < MR ? mc - ir : MR;
                        float *ct = g->c + (size_t)(ic + ir) * g->ldc + jc + jr;
                        g->isa->fn(kc, pa + (size_t)ir * kc, pb + (size_t)jr * kc, ct, g->ldc,
                                   g->alpha, h, w);
                    }
                }
            }
        }
    }
}

typedef struct {
    const gemm_args *g;
    int m0, m1, n0, n1;
} gemm_job;

static void *gemm_job_run(void *p) {
    const gemm_job *j = p;
    gemm_region(j->g, j->m0, j->m1, j->n0, j->n1);
    return NULL;
}

/* Splits C into `threads` strips along its longer side (multiples of the tile size). */
static void gemm_parallel(const gemm_args *g, int threads) {
    gemm_job jobs[16];
    pthread_t tids[16];
    int split_n = g->n >= g->m, unit = split_n ? g->isa->nr : MR;
    int extent = split_n ? g->n : g->m;
    int chunk = ((extent + threads - 1) / threads + unit - 1) / unit * unit;
    int started = 0, count = 0;
    for (int t = 0; t < threads && t * chunk < extent; t++, count++) {
        int lo = t * chunk, hi = lo + chunk < extent ? lo + chunk : extent;
        jobs[t] = (gemm_job){g, 0, g->m, 0, g->n};
        if (split_n) {
            jobs[t].n0 = lo;
            jobs[t].n1 = hi;
        } else {
            jobs[t].m0 = lo;
            jobs[t].m1 = hi;
        }
    }
    for (int t = 1; t < count; t++) {
        if (pthread_create(&tids[t], NULL, gemm_job_run, &jobs[t]) != 0)
            break;
        started = t;
    }
    gemm_job_run(&jobs[0]);
    for (int t = started + 1; t < count; t++) /* threads that failed to start: run here */
        gemm_job_run(&jobs[t]);
    for (int t = 1; t <= started; t++)
        pthread_join(tids[t], NULL);
}

void tp_gemm(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, int lda,
             const float *b, int ldb, float beta, float *c, int ldc, int threads) {
    if (m <= 0 || n <= 0)
        return;
    gemm_args g = {trans_a, trans_b, m, n, k, alpha, beta, a, b, lda, ldb, ldc, c, isa_current()};
    double flops = 2.0 * m * n * (double)k;
    if (threads > 16)
        threads = 16;
    /* Starting a thread costs tens of microseconds; below ~4 MFLOP per thread it loses. */
    while (threads > 1 && flops / threads < 4e6)
        threads--;
    if (threads > 1)
        gemm_parallel(&g, threads);
    else
        gemm_region(&g, 0, m, 0, n);
}
