/* test_kcuda_errors: the CUDA backend's error codes name their library (runs without a GPU:
 * both libraries' error strings are plain look-ups). A cuDNN status is never printed as the
 * CUDA error that happens to share its number. */
#include "tp_kcuda.h"
#include "tp_test.h"

#ifdef TP_HAVE_CUDNN
#include <cudnn.h>
#endif

static void test_names(void) {
    CHECK_STR(tp_kcuda_error_string(2), "CUDA: out of memory"); /* cudaErrorMemoryAllocation */
#ifdef TP_HAVE_CUDNN
    CHECK_STR(tp_kcuda_error_string(TP_KCUDA_CUDNN_ERROR(CUDNN_STATUS_BAD_PARAM)),
              "cuDNN: CUDNN_STATUS_BAD_PARAM");
    CHECK(TP_KCUDA_CUDNN_ERROR(CUDNN_STATUS_SUCCESS) > 10000); /* above every cudaError_t */
#endif
}

int main(void) {
    TP_RUN(test_names);
    return tp_test_summary();
}
