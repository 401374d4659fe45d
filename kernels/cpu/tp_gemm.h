/* tp_gemm: single-precision matrix multiply for the CPU kernels.
 *
 * C = alpha * op(A) * op(B) + beta * C, all row-major, op(X) = X or X^T. Cache-blocked in
 * the BLIS way (KC x MC panels of A and KC x NC panels of B packed into contiguous buffers,
 * a register-blocked micro-kernel over MR x NR tiles). The micro-kernel is chosen once at
 * run time from what the CPU supports: AVX-512F (6x32), AVX2+FMA (6x16) or portable C
 * (6x16, which the compiler vectorizes with the baseline SSE2). Building with
 * -march=native is not needed and not allowed: each variant carries its own target
 * attribute. Results do not depend on the thread count (each thread owns disjoint C tiles
 * and sums over K in the same order). */
#ifndef TP_GEMM_H
#define TP_GEMM_H

#include <stddef.h>

/* Computes C = alpha*op(A)*op(B) + beta*C. op(A) is M x K, op(B) is K x N, C is M x N.
 * trans_a: A is stored K x M (lda >= M) instead of M x K (lda >= K); likewise trans_b.
 * beta == 0 ignores C's old contents (NaNs included). threads <= 1 runs on the caller;
 * more threads split C into column (or row) strips when the product is large enough to pay
 * for starting them. Never fails: packing buffers are allocated once per thread and kept
 * (freed at thread exit); if that allocation fails, an unblocked loop runs instead. */
void tp_gemm(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, int lda,
             const float *b, int ldb, float beta, float *c, int ldc, int threads);

/* Name of the micro-kernel in use ("avx512", "avx2", "generic") and the number of
 * single-precision FMA lanes it retires per instruction (16, 8, 4). */
const char *tp_gemm_isa(int *lanes);

/* Forces the micro-kernel ("avx512", "avx2", "generic"; NULL = best). Returns 0, or -1 when
 * the CPU cannot run the one named. For benchmarks and tests that compare variants. */
int tp_gemm_force_isa(const char *name);

#endif
