// Microbenchmarks of `tiletraffic calibrate` (tiletraffic.gpu.microbench runs them).
// Each kernel writes a result the host checks, so the compiler cannot drop the work and a
// wrong run is never timed. Build option: -DLOCAL_FLOATS=<power of two> (local_read).

// Global reads: every work-item sums float4s in a grid-stride loop, `passes` times over the
// n4 float4s; pass p starts at float4 (p * shift) mod n4, so a work-item reads other lines
// in each pass (a pass never hits in its compute unit's L1 the lines of the previous one).
// Input all ones: out[gid] = 4 * passes * (float4s of the grid-stride loop of gid).
__kernel void read_sum(__global const float4 *src, __global float *out, uint n4, uint passes,
                       uint shift) {
    uint gid = get_global_id(0), gsz = get_global_size(0);
    float4 acc = (float4)(0.0f);
    for (uint p = 0; p < passes; ++p) {
        uint base = (uint)(((ulong)p * shift) % n4);
        for (uint i = gid; i < n4; i += gsz) {
            uint j = i + base;
            if (j >= n4) j -= n4;
            acc += src[j];
        }
    }
    out[gid] = acc.x + acc.y + acc.z + acc.w;
}

// Global writes: every float4 of dst gets `value` (grid-stride loop).
__kernel void write_fill(__global float4 *dst, uint n4, float value) {
    uint gid = get_global_id(0), gsz = get_global_size(0);
    for (uint i = gid; i < n4; i += gsz) dst[i] = (float4)(value);
}

// Local-memory reads: the work-group fills LOCAL_FLOATS (4096) words with (i & 7), seen as
// 128 rows of 32 words; work-item lid (lane lid & 31 of sub-group lid >> 5) reads, per step
// of 8, rows r..r+7 at its lane, r = (16 (lid >> 5) + it) mod 128, a multiple of 8: the 32
// lanes of a sub-group read 32 consecutive words (no bank conflict), with constant offsets
// into four independent sums (two instructions per load, so the loop measures the local
// memory, not the instruction issue). Every word read holds lid & 7, so
// out[gid] = iters * (lid & 7). iters: a multiple of 8.
__kernel void local_read(__global float *out, uint iters) {
    __local float buf[LOCAL_FLOATS];
    uint lid = get_local_id(0), lsz = get_local_size(0);
    for (uint i = lid; i < LOCAL_FLOATS; i += lsz) buf[i] = (float)(i & 7u);
    barrier(CLK_LOCAL_MEM_FENCE);
    uint lane = lid & 31u, start = (lid >> 5) * 16u;
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
    for (uint it = 0; it < iters; it += 8u) {
        __local const float *p = buf + ((start + it) & (LOCAL_FLOATS / 32u - 1u)) * 32u + lane;
        a0 += p[0];   a1 += p[32];  a2 += p[64];  a3 += p[96];
        a0 += p[128]; a1 += p[160]; a2 += p[192]; a3 += p[224];
    }
    out[get_global_id(0)] = (a0 + a1) + (a2 + a3);
}

// FP32 FMA: 8 independent chains x <- fma(x, a, b) of `iters` steps each, started at
// x_k = k / 8; out[gid] = their sum (the host recomputes it in float64).
__kernel void fma_chains(__global float *out, float a, float b, uint iters) {
    float x0 = 0.0f, x1 = 0.125f, x2 = 0.25f, x3 = 0.375f;
    float x4 = 0.5f, x5 = 0.625f, x6 = 0.75f, x7 = 0.875f;
    for (uint it = 0; it < iters; ++it) {
        x0 = fma(x0, a, b); x1 = fma(x1, a, b); x2 = fma(x2, a, b); x3 = fma(x3, a, b);
        x4 = fma(x4, a, b); x5 = fma(x5, a, b); x6 = fma(x6, a, b); x7 = fma(x7, a, b);
    }
    out[get_global_id(0)] = ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7));
}

// Load latency: one work-item follows next[] from 0 for `steps` loads, each address known
// only when the previous load returns; out[0] = where it ends.
__kernel void pointer_chase(__global const uint *next, __global uint *out, uint steps) {
    uint j = 0;
    for (uint s = 0; s < steps; ++s) j = next[j];
    out[0] = j;
}

// Launch overhead: nothing to do.
__kernel void empty(__global float *out) {}

// Barrier cost: `count` work-group barriers; out[gid] = count.
__kernel void barriers(__global float *out, uint count) {
    for (uint i = 0; i < count; ++i) barrier(CLK_LOCAL_MEM_FENCE);
    out[get_global_id(0)] = (float)count;
}

// Staging round trip (the delay of the time model's barrier intervals): `steps` times, every
// work-item loads one float4 of `src` (n4 float4s, n4 a power of two; each step a different
// slice), stores it to local memory, barrier, reads the float4 its neighbour (lid + 1) stored,
// barrier. The next step's index depends on that read (`zero` is 0, unknown to the compiler),
// so no step's load can start before the previous step's barrier: one work-group per compute
// unit then times the round trip global load -> local store -> barrier -> local load that a
// tiled kernel's barrier interval waits for. Input all ones: out[gid] = 4 * steps.
__kernel void staging_round_trip(__global const float4 *src, __global float *out, uint steps,
                                 uint n4, uint zero) {
    __local float4 stage[STAGE_FLOAT4S];
    uint lid = get_local_id(0), lsz = get_local_size(0);
    uint g = get_group_id(0), ng = get_num_groups(0);
    float4 acc = (float4)(0.0f);
    for (uint s = 0; s < steps; ++s) {
        uint i = (((s * ng + g) * lsz + lid) + ((uint)acc.x & zero)) & (n4 - 1u);
        stage[lid] = src[i];
        barrier(CLK_LOCAL_MEM_FENCE);
        acc += stage[(lid + 1u) % lsz];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    out[get_global_id(0)] = acc.x + acc.y + acc.z + acc.w;
}

// Strided requests (the L1 cost of a request whose work-items read many lines): work-item
// lid of every work-group reads row lid of `src` (rows `stride` words apart) from word 0 to
// word len - 1, one word per step, so each step's request of a sub-group touches 32 lines, a
// row stride apart; the rows' first words fall in 32 / gcd(stride mod 32, 32) distinct
// 4-byte banks. Every work-group reads the same rows (an L2-resident footprint), each on its
// own compute unit; with own_rows = 1 work-item gid reads row gid instead (every row read
// once: the lines come from DRAM). src[i] = (i mod 7) + 1, so out[gid] = the sum of its
// row's words.
__kernel void strided_read(__global const float *src, __global float *out, uint stride,
                           uint len, uint own_rows) {
    uint lid = get_local_id(0);
    uint r = own_rows ? (uint)get_global_id(0) : lid;
    __global const float *row = src + (ulong)r * stride;
    float a0 = 0.0f, a1 = 0.0f;
    for (uint k = 0; k < len; k += 2u) {
        a0 += row[k];
        a1 += row[k + 1u];
    }
    out[get_global_id(0)] = a0 + a1;
}

// Strided requests with a broadcast operand (matrix-vector products' x): as strided_read with
// own_rows = 1 (every row read once, from DRAM), one word per step, each step's row word
// times x[k], read by every work-item at the same address: from global memory at every k
// (strided_read_xglobal, as matvec-naive reads x) or from a copy in local memory
// (strided_read_xlocal, as matvec-local-whole; len <= LOCAL_FLOATS). x[k] = (k mod 5) + 1.
__kernel void strided_read_xglobal(__global const float *src, __global const float *x,
                                   __global float *out, uint stride, uint len) {
    __global const float *row = src + (ulong)get_global_id(0) * stride;
    float a = 0.0f;
    for (uint k = 0; k < len; ++k)
        a += row[k] * x[k];
    out[get_global_id(0)] = a;
}

__kernel void strided_read_xlocal(__global const float *src, __global const float *x,
                                  __global float *out, uint stride, uint len) {
    __local float xl[LOCAL_FLOATS];
    for (uint i = get_local_id(0); i < len; i += get_local_size(0))
        xl[i] = x[i];
    barrier(CLK_LOCAL_MEM_FENCE);
    __global const float *row = src + (ulong)get_global_id(0) * stride;
    float a = 0.0f;
    for (uint k = 0; k < len; ++k)
        a += row[k] * xl[k];
    out[get_global_id(0)] = a;
}

// Register-tile issue rate (the inner loop of a register-blocked product, as
// tiletraffic.gpu.codegen writes gemm-register-blocked with 16 x 16 work-items, TM = TN = 8,
// BK = 8): each work-item keeps 8 x 8 sums in private memory; each step, after a barrier, it
// reads for kk = 0..7 a[i] = At[ly + 16 i][kk] and b[j] = Bt[kk][lx + 16 j] from local memory
// (16 local loads) and does the 64 FMAs acc[i][j] += a[i] b[j]. The tiles are filled once
// (no global load in the loop); the barrier at every step makes each step read them again.
// At[r][c] = ((r + c) & 3) / 4, Bt[r][c] = ((r + 2c) & 3) / 4: every sum is a multiple of
// 1/16, exact in float32; out[gid] = the sum of the 64 sums.
__kernel __attribute__((reqd_work_group_size(16, 16, 1)))
void register_tile(__global float *out, uint steps) {
    __local float At[128][8];
    __local float Bt[8][128];
    const int lx = (int)get_local_id(0), ly = (int)get_local_id(1);
    const int tid = ly * 16 + lx;
    for (int e = tid; e < 1024; e += 256) {
        At[e / 8][e % 8] = (float)(((e / 8) + (e % 8)) & 3) * 0.25f;
        Bt[e / 128][e % 128] = (float)(((e / 128) + 2 * (e % 128)) & 3) * 0.25f;
    }
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
            for (int i = 0; i < 8; ++i) a[i] = At[ly + i * 16][kk];
            #pragma unroll
            for (int j = 0; j < 8; ++j) b[j] = Bt[kk][lx + j * 16];
            #pragma unroll
            for (int i = 0; i < 8; ++i)
                #pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] += a[i] * b[j];
        }
    }
    float total = 0.0f;
    #pragma unroll
    for (int i = 0; i < 8; ++i)
        #pragma unroll
        for (int j = 0; j < 8; ++j) total += acc[i][j];
    out[get_global_id(1) * get_global_size(0) + get_global_id(0)] = total;
}
