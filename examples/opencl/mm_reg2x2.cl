// C = A * B with a 2 x 2 register block per work-item and no local memory: each work-item
// keeps four accumulators and reads two elements of A and two of B per step of k.
__kernel void mm_reg2x2(__global const float *A, __global const float *B, __global float *C,
                        const int M, const int K, const int N)
{
    const int c0 = 2 * get_global_id(0);
    const int r0 = 2 * get_global_id(1);
    float c00 = 0.0f, c01 = 0.0f, c10 = 0.0f, c11 = 0.0f;
    for (int k = 0; k < K; k++) {
        const float a0 = A[r0 * K + k];
        const float a1 = A[(r0 + 1) * K + k];
        const float b0 = B[k * N + c0];
        const float b1 = B[k * N + c0 + 1];
        c00 = fma(a0, b0, c00);
        c01 = fma(a0, b1, c01);
        c10 = mad(a1, b0, c10);
        c11 = mad(a1, b1, c11);
    }
    C[r0 * N + c0] = c00;
    C[r0 * N + c0 + 1] = c01;
    C[(r0 + 1) * N + c0] = c10;
    C[(r0 + 1) * N + c0 + 1] = c11;
}
