// Paced readers placed on chosen SMs while every other work-group streams stores (driver.py,
// stage placed_loaded; needs paced_read.cuh and placed_common.cuh before it).
extern "C" __global__ void __launch_bounds__(1024)
placed_loaded_read(const float4 *__restrict__ buf, long long n_vec, const int *__restrict__ role,
                   long long delay_ns, long long step_ns, float4 *bg, long long bg_vec,
                   int readers, unsigned long long *info, unsigned int *done, float *sink)
{
    __shared__ unsigned long long t_go;
    __shared__ int r, stop;
    unsigned long long now;
    if (threadIdx.x == 0) {
        unsigned int smid;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
        r = role[smid];
        // the second work-group on a reader's SM idles (r = -2): the reader keeps its pace
        if (r >= 0 && atomicCAS((unsigned int *)&info[4 * r + 3], 0u, 1u) != 0u) r = -2;
        stop = 0;
    }
    __syncthreads();
    float acc = 0.0f;
    if (r == -2) return;
    if (r < 0) {                                   // background: streaming stores
        const long long chunk = 4096, chunks = bg_vec / chunk;
        unsigned long long t0, stores = 0;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
        for (long long c = blockIdx.x; !stop; c += gridDim.x) {
            float4 *p = bg + (c % chunks) * chunk;
            for (long long i = threadIdx.x; i < chunk; i += blockDim.x)
                p[i] = make_float4(acc, acc, acc, (float)c);
            stores += chunk;
            __syncthreads();
            if (threadIdx.x == 0) {
                asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
                stop = (*(volatile unsigned int *)done >= (unsigned int)readers) ||
                       (now - t0 > 20000000ull);
            }
            __syncthreads();
        }
        if (threadIdx.x == 0) atomicAdd(&info[4 * readers], stores * 16ull);
        return;
    }
    TT_PLACED_START
    TT_PACED_READ
    __syncthreads();
    if (threadIdx.x == 0) {
        TT_PLACED_RECORD
        __threadfence();
        atomicAdd(done, 1u);
    }
    if (acc == 1234.5f) sink[threadIdx.x] = acc;
}
