// TT_PLACED_START / TT_PLACED_RECORD: the placed readers' start (reader r waits r x delay
// after its own start, plus 20 us) and end record; shared by placed.cu and placed_loaded.cu.
#define TT_PLACED_START                                                                      \
    if (threadIdx.x == 0) {                                                                  \
        unsigned long long t0;                                                               \
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));                               \
        const unsigned long long target = t0 + 20000ull + r * delay_ns;                      \
        do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); } while (now < target); \
        t_go = now;                                                                          \
    }                                                                                        \
    __syncthreads();
#define TT_PLACED_RECORD                                                                     \
        unsigned int smid;                                                                   \
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));                              \
        asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));                                    \
        info[4 * r] = t_go;                                                                  \
        info[4 * r + 1] = now;                                                               \
        info[4 * r + 2] = smid;
