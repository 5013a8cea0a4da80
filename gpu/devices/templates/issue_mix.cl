// Microbenchmark of `tiletraffic calibrate`'s issue_rate (tiletraffic.gpu.devices.microbench
// runs them; built apart from calibrate.cl, so that a device that cannot build these kernels
// still runs every other benchmark).

// Issue rate of FMAs beside local loads at a given number of sub-groups per scheduler (one
// work-group per compute unit, of any size that is a multiple of 32). The lanes of each
// 32 work-items form a 4 x 8 grid (lr = lane / 8, lc = lane % 8), as a warp-tiled GEMM's
// sub-group tile: per depth kk of a step, each work-item reads 8 values of A (row kk of a
// 32-float tile) and 8 of B (row kk of a 64-float tile) and does the 64 FMAs of its 8 x 8
// sums. issue_mix_128 reads them as 2 + 2 float4 (128-bit) loads: A float4s lr + 4 i4, B
// float4s lc + 8 j4 (4 and 8 distinct, consecutive float4s per sub-group); issue_mix_32
// as 8 + 8 scalar loads: A words lr + 4 i, B words lc + 8 j. A barrier per step of 8
// depths (so every step reads the tiles again). A[e] = ((3e + 1) & 3) / 4, B[e] =
// ((5e + 2) & 3) / 4: every sum is a multiple of 1/16, exact in float32; out[gid] = the
// sum of the 64 sums.
// The tiles' values (both kernels; the first barrier of the step loop orders them).
void fill_tiles(__local float *A, __local float *B) {
    for (int e = (int)get_local_id(0); e < 8 * 64; e += (int)get_local_size(0)) {
        if (e < 8 * 32) A[e] = (float)((3 * e + 1) & 3) * 0.25f;
        B[e] = (float)((5 * e + 2) & 3) * 0.25f;
    }
}

// The sum of a work-item's 8 x 8 sums.
float sum_of(float acc[8][8]) {
    float total = 0.0f;
    #pragma unroll
    for (int i = 0; i < 8; ++i)
        #pragma unroll
        for (int j = 0; j < 8; ++j) total += acc[i][j];
    return total;
}

__kernel void issue_mix_128(__global float *out, uint steps) {
    __local float4 A4[8 * 8];
    __local float4 B4[8 * 16];
    __local float *A = (__local float *)A4, *B = (__local float *)B4;
    fill_tiles(A, B);
    const int lane = (int)get_local_id(0) & 31, lr = lane >> 3, lc = lane & 7;
    float acc[8][8];
    #pragma unroll
    for (int i = 0; i < 8; ++i)
        #pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;
    for (uint s = 0; s < steps; ++s) {
        barrier(CLK_LOCAL_MEM_FENCE);
        #pragma unroll
        for (int kk = 0; kk < 8; ++kk) {
            const float4 a0 = A4[kk * 8 + lr], a1 = A4[kk * 8 + lr + 4];
            const float4 b0 = B4[kk * 16 + lc], b1 = B4[kk * 16 + lc + 8];
            const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
            #pragma unroll
            for (int i = 0; i < 8; ++i)
                #pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] += a[i] * b[j];
        }
    }
    out[get_global_id(0)] = sum_of(acc);
}

__kernel void issue_mix_32(__global float *out, uint steps) {
    __local float A[8 * 32];
    __local float B[8 * 64];
    fill_tiles(A, B);
    const int lane = (int)get_local_id(0) & 31, lr = lane >> 3, lc = lane & 7;
    float acc[8][8];
    #pragma unroll
    for (int i = 0; i < 8; ++i)
        #pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;
    float a[8], b[8];
    for (uint s = 0; s < steps; ++s) {
        barrier(CLK_LOCAL_MEM_FENCE);
        #pragma unroll
        for (int kk = 0; kk < 8; ++kk) {
            #pragma unroll
            for (int i = 0; i < 8; ++i) a[i] = A[kk * 32 + lr + 4 * i];
            #pragma unroll
            for (int j = 0; j < 8; ++j) b[j] = B[kk * 64 + lc + 8 * j];
            #pragma unroll
            for (int i = 0; i < 8; ++i)
                #pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] += a[i] * b[j];
        }
    }
    out[get_global_id(0)] = sum_of(acc);
}
