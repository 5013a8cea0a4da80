// matvec-naive's inner loop in the forms that differ between the generated kernel
// (tiletraffic.gpu.codegen) and calibrate's strided_read_xglobal (tiletraffic/gpu/templates/
// calibrate.cl), which reads the same addresses 12% faster on the H200 at M = K = 4096.
// Every kernel: y[row] = sum_k A[row * K + k] x[k], one work-item per row, 256 per work-group.

// as generated: int index row * K + k, reqd_work_group_size, restrict
__kernel __attribute__((reqd_work_group_size(256, 1, 1)))
void naive_generated(__global const float *restrict A, __global const float *restrict x,
                     __global float *restrict y, const int M, const int K)
{
    const int row = (int)get_global_id(0);
    if (row >= M) {
        return;
    }
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
        acc += A[row * K + k] * x[k];
    }
    y[row] = acc;
}

// the generated kernel with a row pointer (64-bit) and the int index k
__kernel __attribute__((reqd_work_group_size(256, 1, 1)))
void naive_row_pointer(__global const float *restrict A, __global const float *restrict x,
                       __global float *restrict y, const int M, const int K)
{
    const int row = (int)get_global_id(0);
    if (row >= M) {
        return;
    }
    __global const float *restrict a = A + (size_t)row * K;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
        acc += a[k] * x[k];
    }
    y[row] = acc;
}

// the generated kernel without reqd_work_group_size
__kernel void naive_no_reqd(__global const float *restrict A, __global const float *restrict x,
                            __global float *restrict y, const int M, const int K)
{
    const int row = (int)get_global_id(0);
    if (row >= M) {
        return;
    }
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
        acc += A[row * K + k] * x[k];
    }
    y[row] = acc;
}

// the generated kernel with unsigned index and bound
__kernel __attribute__((reqd_work_group_size(256, 1, 1)))
void naive_unsigned(__global const float *restrict A, __global const float *restrict x,
                    __global float *restrict y, const int M, const int K)
{
    const uint row = (uint)get_global_id(0);
    if (row >= (uint)M) {
        return;
    }
    float acc = 0.0f;
    for (uint k = 0; k < (uint)K; ++k) {
        acc += A[row * (uint)K + k] * x[k];
    }
    y[row] = acc;
}

// calibrate's strided_read_xglobal, with M and K for arguments (no bound check: M = rows)
__kernel void naive_microbench(__global const float *A, __global const float *x,
                               __global float *y, const int M, const int K)
{
    __global const float *row = A + (ulong)get_global_id(0) * (uint)K;
    float a = 0.0f;
    for (uint k = 0; k < (uint)K; ++k)
        a += row[k] * x[k];
    y[get_global_id(0)] = a;
}

// matvec-local-whole as generated (X_WORDS: x's words in local memory)
__kernel __attribute__((reqd_work_group_size(256, 1, 1)))
void local_whole_generated(__global const float *restrict A, __global const float *restrict x,
                           __global float *restrict y, const int M, const int K)
{
    __local float x_local[X_WORDS];
    const int row = (int)get_global_id(0);
    const int lid = (int)get_local_id(0);
    float acc = 0.0f;
    for (int i = lid; i < K; i += 256) {
        x_local[i] = x[i];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (row >= M) {
        return;
    }
    for (int j = 0; j < K; ++j) {
        acc += A[row * K + j] * x_local[j];
    }
    y[row] = acc;
}

// calibrate's strided_read_xlocal, with M and K for arguments
__kernel void local_whole_microbench(__global const float *A, __global const float *x,
                                     __global float *y, const int M, const int K)
{
    __local float xl[X_WORDS];
    for (uint i = get_local_id(0); i < (uint)K; i += get_local_size(0))
        xl[i] = x[i];
    barrier(CLK_LOCAL_MEM_FENCE);
    __global const float *row = A + (ulong)get_global_id(0) * (uint)K;
    float a = 0.0f;
    for (uint k = 0; k < (uint)K; ++k)
        a += row[k] * xl[k];
    y[get_global_id(0)] = a;
}

// Sectors of a row in flight: per 16 k-steps, the 16 loads of a row of A (two 32-byte
// sectors) written first, then the FMAs with x (the JIT may still reorder: read its SASS)
__kernel __attribute__((reqd_work_group_size(256, 1, 1)))
void naive_a_first16(__global const float *restrict A, __global const float *restrict x,
                     __global float *restrict y, const int M, const int K)
{
    const int row = (int)get_global_id(0);
    if (row >= M) {
        return;
    }
    __global const float *restrict a = A + (size_t)row * K;
    float acc = 0.0f;
    int k = 0;
    for (; k + 16 <= K; k += 16) {
        float av[16];
        #pragma unroll
        for (int j = 0; j < 16; ++j) av[j] = a[k + j];
        #pragma unroll
        for (int j = 0; j < 16; ++j) acc += av[j] * x[k + j];
    }
    for (; k < K; ++k) {
        acc += a[k] * x[k];
    }
    y[row] = acc;
}

// the same with 8 loads of A (one 32-byte sector of an aligned row) before their FMAs
__kernel __attribute__((reqd_work_group_size(256, 1, 1)))
void naive_a_first8(__global const float *restrict A, __global const float *restrict x,
                    __global float *restrict y, const int M, const int K)
{
    const int row = (int)get_global_id(0);
    if (row >= M) {
        return;
    }
    __global const float *restrict a = A + (size_t)row * K;
    float acc = 0.0f;
    int k = 0;
    for (; k + 8 <= K; k += 8) {
        float av[8];
        #pragma unroll
        for (int j = 0; j < 8; ++j) av[j] = a[k + j];
        #pragma unroll
        for (int j = 0; j < 8; ++j) acc += av[j] * x[k + j];
    }
    for (; k < K; ++k) {
        acc += a[k] * x[k];
    }
    y[row] = acc;
}
