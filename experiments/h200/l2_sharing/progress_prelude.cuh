
// Per-warp progress probe (driver.py, stage progress): inserted before the generated CUDA
// prelude's end; TT_EVERY and TT_SLOTS are #defined in front of it.
__device__ unsigned long long *tt_progress;
extern "C" __global__ void tt_set_progress(unsigned long long *p) { tt_progress = p; }
#define TT_PROBE(kk) do { \
    const unsigned int tt_lin = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); \
    if (((kk) % TT_EVERY) == 0 && (tt_lin & 31) == 0) { \
        unsigned long long tt_now; \
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(tt_now)); \
        const unsigned long long tt_g = blockIdx.x + (unsigned long long)gridDim.x * blockIdx.y; \
        const unsigned int tt_w = (blockDim.x * blockDim.y * blockDim.z + 31) / 32; \
        tt_progress[(tt_g * tt_w + tt_lin / 32) * TT_SLOTS + (kk) / TT_EVERY] = tt_now; \
    } } while (0)
