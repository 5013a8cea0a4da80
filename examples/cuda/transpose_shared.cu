// Matrix transpose through shared memory: a block reads a TILE x TILE tile with coalesced
// loads, and writes it transposed with coalesced stores; the tile's rows are padded by one
// float so that reading a column hits 32 different banks.
#include <cuda_runtime.h>

#define TILE 32

__global__ void transpose_shared(const float *__restrict__ A, float *__restrict__ B, int N) {
  __shared__ float tile[TILE][TILE + 1];
  int x = blockIdx.x * TILE + threadIdx.x;
  int y = blockIdx.y * TILE + threadIdx.y;
  tile[threadIdx.y][threadIdx.x] = A[y * N + x];
  __syncthreads();
  x = blockIdx.y * TILE + threadIdx.x;
  y = blockIdx.x * TILE + threadIdx.y;
  B[y * N + x] = tile[threadIdx.x][threadIdx.y];
}
