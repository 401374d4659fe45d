/* Tests of tp_export_nsys_short_name: nsys's shortName of kernel names as CUPTI records them
 * (mangled C++), as demangled, and plain C; a name it cannot read comes back whole, and a
 * small buffer cuts without overrunning. */
#include "tp_export_sqlite_nsys.h"

#include <string.h>

#include "tp_test.h"

static const char *short_name(const char *name) {
    static char b[256];
    tp_export_nsys_short_name(name, b, sizeof b);
    return b;
}

static void test_mangled(void) {
    CHECK_STR(short_name("_Z6kernelPf"), "kernel");
    CHECK_STR(short_name("_ZN2ns4gemmIfEEvPfi"), "gemm");
    CHECK_STR(short_name("_ZN12_GLOBAL__N_16reduceEv"), "reduce");
    CHECK_STR(short_name("_ZNK3foo3barEv"), "bar");
    CHECK_STR(short_name("_ZNSt6vectorIiE4sizeEv"), "size");
    CHECK_STR(short_name("_Z99tooshort"), "_Z99tooshort"); /* length past the end: whole */
    CHECK_STR(short_name("_Z"), "_Z");
}

static void test_demangled(void) {
    CHECK_STR(short_name("gemm_fwd"), "gemm_fwd");
    CHECK_STR(short_name("void at::native::vectorized_elementwise_kernel<4, "
                         "at::native::FillFunctor<float>>(int, at::native::FillFunctor<float>)"),
              "vectorized_elementwise_kernel");
    CHECK_STR(short_name("void (anonymous namespace)::softmax_warp<float, (bool)1>(float *, int)"),
              "softmax_warp");
    CHECK_STR(short_name("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm *, unsigned long)"),
              "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
    CHECK_STR(short_name("sm90_xmma_gemm_bf16bf16_bf16f32"), "sm90_xmma_gemm_bf16bf16_bf16f32");
    CHECK_STR(short_name(""), "");
    CHECK_STR(short_name(NULL), "");
}

static void test_small_buffer(void) {
    char b[5] = "xxxx";
    CHECK_EQ_U(tp_export_nsys_short_name("_ZN2ns10gemm_largeEv", b, sizeof b), 4);
    CHECK_STR(b, "gemm");
    CHECK_EQ_U(tp_export_nsys_short_name("abc", b, 0), 0);
    CHECK_STR(b, "gemm"); /* untouched */
}

int main(void) {
    TP_RUN(test_mangled);
    TP_RUN(test_demangled);
    TP_RUN(test_small_buffer);
    return tp_test_summary();
}
