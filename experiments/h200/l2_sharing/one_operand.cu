// Diagnostic one-operand copies of gemm-naive (the same work-item mapping and loop, the other
// operand's load removed), to split its DRAM reads by operand (driver.py, stage variants).
extern "C" __global__ void naive_b_only(const float *__restrict__ A, const float *__restrict__ B,
                                        float *__restrict__ C, int M, int K, int N)
{
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += B[k * N + col];
    C[row * N + col] = acc;
}
extern "C" __global__ void naive_a_only(const float *__restrict__ A, const float *__restrict__ B,
                                        float *__restrict__ C, int M, int K, int N)
{
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k];
    C[row * N + col] = acc;
}
