// B = A^T for an N x N matrix through a TS x (TS + 1) local tile: the padding column puts
// the column reads of the tile in distinct banks. N must be a multiple of TS.
#define TS 32

__kernel void transpose_padded(__global const float *A, __global float *B, const int N)
{
    __local float tile[TS][TS + 1];
    const int lx = get_local_id(0);
    const int ly = get_local_id(1);
    const int gx = get_group_id(0) * TS;
    const int gy = get_group_id(1) * TS;
    tile[ly][lx] = A[(gy + ly) * N + gx + lx];
    barrier(CLK_LOCAL_MEM_FENCE);
    B[(gx + ly) * N + gy + lx] = tile[lx][ly];
}
