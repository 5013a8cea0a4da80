// Sum of n floats: each work-group of WG work-items adds its WG elements by a tree in local
// memory (halving the active work-items each step) and writes one partial sum.
#define WG 128

__kernel void reduce_local(__global const float *in, __global float *partial, const uint n)
{
    __local float scratch[WG];
    const uint lid = get_local_id(0);
    const uint gid = get_global_id(0);
    scratch[lid] = 0.0f;
    if (gid < n)
        scratch[lid] = in[gid];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint s = WG / 2; s > 0; s >>= 1) {
        if (lid < s)
            scratch[lid] += scratch[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        partial[get_group_id(0)] = scratch[0];
}
