// TT_PACED_READ: 64 KiB step j not before t_go + j x step_ns (work-item 0 waits on
// %globaltimer, the work-group follows at the barrier); shared by stagger.cu, placed.cu and
// placed_loaded.cu, which driver.py appends to it.
#define TT_PACED_READ                                                                        \
    for (long long j = 0; j * 4096 < n_vec; ++j) {                                           \
        if (threadIdx.x == 0) {                                                              \
            do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); }                   \
            while (now < t_go + j * step_ns);                                                \
        }                                                                                    \
        __syncthreads();                                                                     \
        for (long long i = j * 4096 + threadIdx.x; i < (j + 1) * 4096 && i < n_vec;          \
             i += blockDim.x) {                                                              \
            const float4 v = buf[i];                                                         \
            acc += v.x + v.y + v.z + v.w;                                                    \
        }                                                                                    \
    }
