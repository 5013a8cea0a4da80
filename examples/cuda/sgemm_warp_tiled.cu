// Warp-tiled SGEMM: a block of (BM / WM) x (BN / WN) warps computes a BM x BN block of C,
// each warp a WM x WN part of it, each of the warp's 32 lanes a TM x TN block held in
// registers ((WM / TM) * (WN / TN) = 32). Per step of BK the block stages BM x BK of A and
// BK x BN of B in shared memory; each lane then reads TM + TN shared values per k for its
// TM * TN multiply-adds.
#include <cuda_runtime.h>

constexpr int WARP = 32;

template <const int BM, const int BN, const int BK, const int WM, const int WN,
          const int TM, const int TN>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * WARP)
    sgemm_warp_tiled(int M, int N, int K, const float *__restrict__ A,
                     const float *__restrict__ B, float *__restrict__ C) {
  static_assert((WM / TM) * (WN / TN) == WARP, "a warp's lanes cover its tile");
  __shared__ float As[BM][BK];
  __shared__ float Bs[BK][BN];
  constexpr int threads = (BM / WM) * (BN / WN) * WARP;
  const int tid = threadIdx.x;
  const int warp = tid / WARP, lane = tid % WARP;
  const int warpRow = warp / (BN / WN), warpCol = warp % (BN / WN);
  const int laneRow = lane / (WN / TN), laneCol = lane % (WN / TN);
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const int tileRow = warpRow * WM + laneRow * TM;
  const int tileCol = warpCol * WN + laneCol * TN;
  float acc[TM][TN] = {0.0f};
  float regM[TM];
  float regN[TN];
  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int i = tid; i < BM * BK; i += threads)
      As[i / BK][i % BK] = A[(row0 + i / BK) * K + k0 + i % BK];
    for (int i = tid; i < BK * BN; i += threads)
      Bs[i / BN][i % BN] = B[(k0 + i / BN) * N + col0 + i % BN];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
#pragma unroll
      for (int m = 0; m < TM; ++m) regM[m] = As[tileRow + m][k];
#pragma unroll
      for (int n = 0; n < TN; ++n) regN[n] = Bs[k][tileCol + n];
#pragma unroll
      for (int m = 0; m < TM; ++m)
#pragma unroll
        for (int n = 0; n < TN; ++n)
          acc[m][n] += regM[m] * regN[n];
    }
    __syncthreads();
  }
  for (int m = 0; m < TM; ++m)
    for (int n = 0; n < TN; ++n)
      C[(row0 + tileRow + m) * N + col0 + tileCol + n] = acc[m][n];
}
