// Staggered readers of the same 16 MiB, optional background on the other SMs (driver.py,
// stages stagger and stagger_paced; needs paced_read.cuh before it).
extern "C" __global__ void __launch_bounds__(1024)
stagger_read(const float4 *__restrict__ buf, long long n_vec, int readers, long long delay_ns,
             float4 *bg, long long bg_vec, int bg_mode, unsigned long long *info,
             unsigned int *done, float *sink, long long step_ns)
{
    __shared__ unsigned long long t_go;
    __shared__ int stop;
    unsigned long long now;
    float acc = 0.0f;
    if (blockIdx.x < readers) {
        if (threadIdx.x == 0) {
            unsigned long long t0;
            asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
            const unsigned long long target = t0 + 5000ull + blockIdx.x * delay_ns;
            do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); } while (now < target);
            t_go = now;
        }
        __syncthreads();
        if (step_ns == 0) {                                  // free-running
            for (long long i = threadIdx.x; i < n_vec; i += blockDim.x) {
                const float4 v = buf[i];
                acc += v.x + v.y + v.z + v.w;
            }
        } else {                       // paced: 64 KiB step j not before t_go + j x step_ns
            TT_PACED_READ
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            unsigned int smid;
            asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
            asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
            info[4 * blockIdx.x] = t_go;
            info[4 * blockIdx.x + 1] = now;
            info[4 * blockIdx.x + 2] = smid;
            __threadfence();
            atomicAdd(done, 1u);
        }
    } else {
        const long long blocks = gridDim.x - readers, b = blockIdx.x - readers;
        const long long chunk = 4096;                       // float4 = 64 KiB per chunk
        const long long chunks = bg_vec / chunk;
        unsigned long long t0, reads = 0;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
        if (threadIdx.x == 0) stop = 0;
        __syncthreads();
        for (long long c = b; !stop; c += blocks) {
            float4 *p = bg + (c % chunks) * chunk;
            if (bg_mode == 2) {                              // stores: DRAM writes only
                for (long long i = threadIdx.x; i < chunk; i += blockDim.x)
                    p[i] = make_float4(acc, acc, acc, (float)c);
            } else {
                for (long long i = threadIdx.x; i < chunk; i += blockDim.x) {
                    const float4 v = p[i];
                    acc += v.x + v.y + v.z + v.w;
                }
            }
            reads += chunk;
            __syncthreads();
            if (threadIdx.x == 0) {
                asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
                stop = (readers > 0 ? *(volatile unsigned int *)done >= (unsigned int)readers
                                    : now - t0 > 300000ull) || (now - t0 > 20000000ull);
            }
            __syncthreads();
        }
        if (threadIdx.x == 0) atomicAdd(&info[4 * readers], reads * 16ull);
    }
    if (acc == 1234.5f) sink[threadIdx.x] = acc;
}
