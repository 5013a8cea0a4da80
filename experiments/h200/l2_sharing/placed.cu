// Paced readers placed on chosen SMs, no background (driver.py, stage placed; needs
// paced_read.cuh and placed_common.cuh before it).
extern "C" __global__ void __launch_bounds__(1024)
placed_read(const float4 *__restrict__ buf, long long n_vec, const int *__restrict__ role,
            long long delay_ns, long long step_ns, unsigned long long *info, float *sink)
{
    __shared__ unsigned long long t_go;
    __shared__ int r;
    unsigned long long now;
    if (threadIdx.x == 0) {
        unsigned int smid;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
        r = role[smid];
        if (r >= 0 && atomicCAS((unsigned int *)&info[4 * r + 3], 0u, 1u) != 0u) r = -1;
    }
    __syncthreads();
    if (r < 0) return;
    TT_PLACED_START
    float acc = 0.0f;
    TT_PACED_READ
    __syncthreads();
    if (threadIdx.x == 0) {
        TT_PLACED_RECORD
    }
    if (acc == 1234.5f) sink[threadIdx.x] = acc;
}
