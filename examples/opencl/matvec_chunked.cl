// y = A x for an M x K matrix: one row per work-item; x is staged through local memory in
// chunks of CHUNK elements (the last chunk shorter: min), read once per work-group.
#ifndef CHUNK
#define CHUNK 64   /* -DCHUNK=... (a build option, tune --param CHUNK=...) replaces it */
#endif

__kernel void matvec_chunked(__global const float *A, __global const float *x,
                             __global float *y, const int M, const int K)
{
    __local float xs[CHUNK];
    const int row = get_global_id(0);
    const int lid = get_local_id(0);
    const int wg = get_local_size(0);
    float sum = 0.0f;
    for (int start = 0; start < K; start += CHUNK) {
        for (int i = lid; i < min(CHUNK, K - start); i += wg)
            xs[i] = x[start + i];
        barrier(CLK_LOCAL_MEM_FENCE);
        if (row < M) {
            const int len = min(CHUNK, K - start);
            for (int j = 0; j < len; ++j)
                sum += A[row * K + start + j] * xs[j];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (row < M)
        y[row] = sum;
}
