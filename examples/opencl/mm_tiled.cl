// Tiled matrix multiplication C = A * B of N x N row-major matrices, in the style of the
// course texts: TS x TS tiles of A and B staged in local memory, WPT outputs per work-item
// (work-group TS x TS/WPT). N must be a multiple of TS.
#ifndef TS
#define TS 16
#endif
#ifndef WPT
#define WPT 1
#endif
#define RTS (TS / WPT)

__kernel void mmul_tiled(const int N, __global const float *A, __global const float *B,
                         __global float *C)
{
    const int col = get_local_id(0);
    const int row = get_local_id(1);
    const int globalCol = TS * get_group_id(0) + col;
    const int globalRow = TS * get_group_id(1) + row;
    __local float Asub[TS][TS];
    __local float Bsub[TS][TS];
    float acc[WPT];
    for (int w = 0; w < WPT; w++)
        acc[w] = 0.0f;
    const int numTiles = N / TS;
    for (int t = 0; t < numTiles; t++) {
        for (int w = 0; w < WPT; w++) {
            const int tiledCol = TS * t + col;
            const int tiledRow = TS * t + row + w * RTS;
            Asub[row + w * RTS][col] = A[(globalRow + w * RTS) * N + tiledCol];
            Bsub[row + w * RTS][col] = B[tiledRow * N + globalCol];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TS; k++) {
            for (int w = 0; w < WPT; w++)
                acc[w] += Asub[row + w * RTS][k] * Bsub[k][col];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int w = 0; w < WPT; w++)
        C[(globalRow + w * RTS) * N + globalCol] = acc[w];
}
