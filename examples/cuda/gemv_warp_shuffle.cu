// SGEMV, y = A x: one warp per row of A. The warp's 32 lanes stride along the row, each
// summing its share, then a shuffle-down reduction adds the 32 partial sums in 5 steps
// without shared memory; lane 0 writes the row's result.
#include <cuda_runtime.h>

__global__ void sgemv_warp(int M, int K, const float *__restrict__ A,
                           const float *__restrict__ x, float *__restrict__ y) {
  const int lane = threadIdx.x % 32;
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  float sum = 0.0f;
  if (row < M) {
    for (int k = lane; k < K; k += 32)
      sum += A[row * K + k] * x[k];
  }
  for (int offset = 16; offset > 0; offset /= 2)
    sum += __shfl_down_sync(0xffffffff, sum, offset);
  if (lane == 0 && row < M)
    y[row] = sum;
}
