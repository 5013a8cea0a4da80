// Tiled GEMM written with helper functions: a tile is loaded by load_tile (zero outside the
// matrix), the products of a tile are summed by an unrolled loop calling madd. Any M, K, N.
#define TILE 8

static inline float madd(float a, float b, float acc) { return a * b + acc; }

static inline int ceil_div(int a, int b) { return (a + b - 1) / b; }

static void load_tile(__local float t[TILE][TILE], __global const float *src, int rows,
                      int cols, int r, int c, int lr, int lc)
{
    if (r < rows && c < cols)
        t[lr][lc] = src[r * cols + c];
    else
        t[lr][lc] = 0.0f;
}

__kernel void mm_helper(__global const float *A, __global const float *B, __global float *C,
                        const int M, const int K, const int N)
{
    __local float As[TILE][TILE];
    __local float Bs[TILE][TILE];
    const int lc = get_local_id(0), lr = get_local_id(1);
    const int col = get_global_id(0), row = get_global_id(1);
    float acc = 0.0f;
    for (int t = 0; t < ceil_div(K, TILE); ++t) {
        load_tile(As, A, M, K, row, t * TILE + lc, lr, lc);
        load_tile(Bs, B, K, N, t * TILE + lr, col, lr, lc);
        barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
        for (int k = 0; k < TILE; ++k)
            acc = madd(As[lr][k], Bs[k][lc], acc);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (row < M && col < N)
        C[row * N + col] = acc;
}
