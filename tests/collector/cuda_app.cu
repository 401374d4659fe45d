/* cuda_app: a small CUDA program for the collector's GPU test (test_collector_gpu.c): inside
 * one NVTX range it allocates, copies from pageable and from pinned memory, launches a kernel
 * from launch_scale(), memsets, synchronizes, fails one huge cudaMalloc and frees.
 * Exits 77 when there is no usable GPU, 0 when every call behaved as expected. */
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>

#define N (1 << 20)

__global__ void scale_kernel(float *x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] *= a;
}

__attribute__((noinline)) static void launch_scale(float *d, cudaStream_t s) {
    scale_kernel<<<(N + 255) / 256, 256, 0, s>>>(d, 2.0f, N);
}

int main(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        printf("no GPU\n");
        return 77;
    }
    nvtxRangePushA("gpu-step");
    float *d = NULL, *pinned = NULL;
    float *pageable = (float *)calloc(N, sizeof(float));
    cudaStream_t s;
    cudaStreamCreate(&s);
    int bad = cudaMalloc(&d, N * sizeof(float)) != cudaSuccess;
    bad |= cudaMallocHost(&pinned, N * sizeof(float)) != cudaSuccess;
    bad |= cudaMemcpy(d, pageable, N * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess;
    bad |= cudaMemcpyAsync(d, pinned, N * sizeof(float), cudaMemcpyHostToDevice, s) != cudaSuccess;
    launch_scale(d, s);
    bad |= cudaMemsetAsync(d, 0, N * sizeof(float), s) != cudaSuccess;
    bad |= cudaDeviceSynchronize() != cudaSuccess;
    void *huge = NULL;
    cudaError_t e = cudaMalloc(&huge, (size_t)1 << 50); /* 1 PiB: fails */
    cudaGetLastError();
    bad |= cudaFree(d) != cudaSuccess;
    cudaFreeHost(pinned);
    cudaStreamDestroy(s);
    nvtxRangePop();
    free(pageable);
    printf("cudaMalloc(1 PiB) -> %d\n", (int)e);
    return bad || e != cudaErrorMemoryAllocation ? 3 : 0;
}
