// Register-blocked SGEMM: a block of (BN / TN) x (BM / TM) threads computes a BM x BN block
// of C, each thread a TM x TN block held in registers; per step of BK the block stages
// BM x BK of A and BK x BN of B in shared memory, and each thread reads TM + TN shared
// values per k into registers for its TM * TN multiply-adds.
#include <cuda_runtime.h>

template <const int BM, const int BN, const int BK, const int TM, const int TN>
__global__ void sgemm_register_blocked(int M, int N, int K, const float *__restrict__ A,
                                       const float *__restrict__ B, float *__restrict__ C) {
  __shared__ float As[BM][BK];
  __shared__ float Bs[BK][BN];
  constexpr int threads = (BM / TM) * (BN / TN);
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int tid = ty * blockDim.x + tx;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  float acc[TM][TN] = {0.0f};
  float regM[TM];
  float regN[TN];
  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int i = tid; i < BM * BK; i += threads)
      As[i / BK][i % BK] = A[(row0 + i / BK) * K + k0 + i % BK];
    for (int i = tid; i < BK * BN; i += threads)
      Bs[i / BN][i % BN] = B[(k0 + i / BN) * N + col0 + i % BN];
    __syncthreads();
    for (int k = 0; k < BK; ++k) {
#pragma unroll
      for (int m = 0; m < TM; ++m) regM[m] = As[ty * TM + m][k];
#pragma unroll
      for (int n = 0; n < TN; ++n) regN[n] = Bs[k][tx * TN + n];
      for (int m = 0; m < TM; ++m)
        for (int n = 0; n < TN; ++n)
          acc[m][n] += regM[m] * regN[n];
    }
    __syncthreads();
  }
  for (int m = 0; m < TM; ++m)
    for (int n = 0; n < TN; ++n)
      C[(row0 + ty * TM + m) * N + col0 + tx * TN + n] = acc[m][n];
}
