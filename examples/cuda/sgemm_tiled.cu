// Tiled SGEMM: each block stages a TILE x TILE tile of A and of B in shared memory, waits
// for the whole tile (__syncthreads before the compute), multiplies it, and waits again
// before the next tile overwrites it (__syncthreads after the compute).
#include <cassert>
#include <cuda_runtime.h>

template <const int TILE>
__global__ void __launch_bounds__(TILE * TILE)
    sgemm_tiled(int M, int N, int K, const float *__restrict__ A,
                const float *__restrict__ B, float *__restrict__ C) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty;
  const int col = blockIdx.x * TILE + tx;
  assert(K % TILE == 0);
  float acc = 0.0f;
  for (int t = 0; t < K; t += TILE) {
    As[ty][tx] = A[row * K + t + tx];
    Bs[ty][tx] = B[(t + ty) * N + col];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE; ++k)
      acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  C[row * N + col] = acc;
}
