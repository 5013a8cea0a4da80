// Naive SGEMV: one thread per row of A reads the whole row and x, y = A x. The rows a warp
// reads at one k are K floats apart, so each load instruction of A touches 32 sectors:
// the uncoalesced baseline the warp-shuffle GEMV improves on.
#include <cuda_runtime.h>

__global__ void sgemv_naive(int M, int K, const float *__restrict__ A,
                            const float *__restrict__ x, float *__restrict__ y) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M) return;
  float sum = 0.0f;
  for (int k = 0; k < K; ++k)
    sum += A[row * K + k] * x[k];
  y[row] = sum;
}
