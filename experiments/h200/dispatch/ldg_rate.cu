// Global load instructions per cycle when every load hits L1: four access patterns
// (driver.py, stage lsu_rate).
extern "C" __global__ void __launch_bounds__(1024)
ldg_rate(const float *__restrict__ src, float *__restrict__ out, int iters, int mode)
{
    const int lane = threadIdx.x & 31;
    int off;
    if (mode == 0) off = lane;                               // 1 line, 4 sectors
    else if (mode == 1) off = 0;                             // 1 sector, broadcast
    else if (mode == 2) off = (lane & 15) + (lane >> 4) * 64;  // 2 lines, 2 sectors each
    else off = (lane & 7) + (lane >> 3) * 64;                // 4 lines, 1 sector each
    const float *p = src + off;
    float acc = 0.0f;
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int u = 0; u < 16; ++u) {
            acc += p[((i * 16 + u) * 128) & 4095];
        }
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
