/* Stub of <cooperative_groups.h> for reading CUDA sources: the thread block's group and its
 * synchronisation. */
#pragma once
namespace cooperative_groups {
struct thread_block {
  __device__ void sync() const;
  __device__ unsigned int thread_rank() const;
  __device__ unsigned int size() const;
};
__device__ thread_block this_thread_block();
__device__ void sync(const thread_block &);
}
