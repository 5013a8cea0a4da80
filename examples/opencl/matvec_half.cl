// y = A·x with A, x and y stored as half (2 bytes an element): vload_half4 reads four
// halves of A and of x as a float4, the sums are float, vstore_half rounds y to half.
// Half storage is core OpenCL C: no cl_khr_fp16 needed.
__kernel void matvec_half(__global const half *A, __global const half *x,
                          __global half *y, const int M, const int K)
{
    const int row = get_global_id(0);
    if (row >= M)
        return;
    float acc = 0.0f;
    for (int k = 0; k < K; k += 4) {
        const float4 a = vload_half4(0, A + row * K + k);
        const float4 b = vload_half4(k / 4, x);
        acc += a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
    }
    vstore_half(acc, row, y);
}
