// Naive SGEMM, C = A * B (row-major): one thread per element of C, reading a row of A and a
// column of B straight from global memory.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void sgemm_naive(int M, int N, int K, const float *A, const float *B, float *C) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < M && col < N) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
      acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
  }
}
