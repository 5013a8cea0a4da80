// Which L2 partition is each SM's: a 1 MiB probe filled on SM 0, re-read on SM s (driver.py,
// stage smmap; needs stream.cu before it for flush_read).
#define SMMAP_BODY                                                                        \
    unsigned int smid;                                                                    \
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));                                     \
    __shared__ int mine;                                                                  \
    if (threadIdx.x == 0) mine = (smid == (unsigned int)target) && atomicCAS(flag, 0u, 1u) == 0u; \
    __syncthreads();                                                                      \
    if (!mine) return;                                                                    \
    float acc = 0.0f;                                                                     \
    for (long long i = threadIdx.x; i < n_vec; i += blockDim.x) {                         \
        const float4 v = buf[i];                                                          \
        acc += v.x + v.y + v.z + v.w;                                                     \
    }                                                                                     \
    if (acc == 1234.5f) sink[threadIdx.x] = acc;
extern "C" __global__ void __launch_bounds__(1024)
fill_on_sm(const float4 *__restrict__ buf, long long n_vec, int target, unsigned int *flag,
           float *sink) { SMMAP_BODY }
extern "C" __global__ void __launch_bounds__(1024)
reread_on_sm(const float4 *__restrict__ buf, long long n_vec, int target, unsigned int *flag,
             float *sink) { SMMAP_BODY }
