// Pointer chase (one thread): clock64 cycles and %globaltimer ns per dependent 4-byte load
// over a random cycle of 128-byte lines (driver.py, stage latency).
extern "C" __global__ void chase(const unsigned int *__restrict__ next, int steps,
                                 unsigned long long *out)
{
    unsigned int j = 0;
    for (int i = 0; i < steps; ++i) j = next[j];          // warm: fill caches / TLB
    unsigned long long c0 = clock64(), t0, t1;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    for (int i = 0; i < steps; ++i) j = next[j];
    unsigned long long c1 = clock64();
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
    out[0] = c1 - c0; out[1] = t1 - t0; out[2] = j;
}
