// Vectorized SGEMM: the register-blocked kernel with its global loads and stores as float4
// (128-bit) accesses through reinterpret_cast; K and N are multiples of 4.
#include <cuda_runtime.h>

#define FETCH_FLOAT4(x) (reinterpret_cast<const float4 *>(&(x))[0])

template <const int BM, const int BN, const int BK, const int TM>
__global__ void sgemm_float4(int M, int N, int K, const float *__restrict__ A,
                             const float *__restrict__ B, float *__restrict__ C) {
  constexpr int TN = 4;
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
    for (int i = tid * 4; i < BM * BK; i += threads * 4) {
      float4 a = FETCH_FLOAT4(A[(row0 + i / BK) * K + k0 + i % BK]);
      As[i / BK][i % BK] = a.x;
      As[i / BK][i % BK + 1] = a.y;
      As[i / BK][i % BK + 2] = a.z;
      As[i / BK][i % BK + 3] = a.w;
    }
    for (int i = tid * 4; i < BK * BN; i += threads * 4) {
      float4 b = FETCH_FLOAT4(B[(k0 + i / BN) * N + col0 + i % BN]);
      Bs[i / BN][i % BN] = b.x;
      Bs[i / BN][i % BN + 1] = b.y;
      Bs[i / BN][i % BN + 2] = b.z;
      Bs[i / BN][i % BN + 3] = b.w;
    }
    __syncthreads();
    for (int k = 0; k < BK; ++k) {
      for (int m = 0; m < TM; ++m) regM[m] = As[ty * TM + m][k];
      for (int n = 0; n < TN; ++n) regN[n] = Bs[k][tx * TN + n];
      for (int m = 0; m < TM; ++m)
        for (int n = 0; n < TN; ++n)
          acc[m][n] += regM[m] * regN[n];
    }
    __syncthreads();
  }
  for (int m = 0; m < TM; ++m)
    reinterpret_cast<float4 *>(&C[(row0 + ty * TM + m) * N + col0 + tx * TN])[0] =
        make_float4(acc[m][0], acc[m][1], acc[m][2], acc[m][3]);
}
