// matvec-naive and matvec-local-whole as tiletraffic.gpu.codegen writes them, with the
// pointer qualifiers as macros: QA for A, QX for x, QY for y (each "restrict" or empty;
// the generated kernels have restrict on all three). X_WORDS: local-whole's x in local memory.
#ifndef QA
#define QA
#endif
#ifndef QX
#define QX
#endif
#ifndef QY
#define QY
#endif

__kernel __attribute__((reqd_work_group_size(256, 1, 1)))
void mv_naive(__global const float *QA A, __global const float *QX x,
              __global float *QY y, const int M, const int K)
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

__kernel __attribute__((reqd_work_group_size(256, 1, 1)))
void mv_local_whole(__global const float *QA A, __global const float *QX x,
                    __global float *QY y, const int M, const int K)
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
