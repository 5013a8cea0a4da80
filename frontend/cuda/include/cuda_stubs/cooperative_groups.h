/* Stub of <cooperative_groups.h> for reading CUDA sources: the thread block's group and its
 * synchronisation, and a block's tiles of Size threads (Size a power of two up to the warp)
 * with their float shuffles (an int one is refused). */
#pragma once
namespace cooperative_groups {
struct thread_block {
  __device__ void sync() const;
  __device__ unsigned int thread_rank() const;
  __device__ unsigned int size() const;
};
__device__ thread_block this_thread_block();
template <unsigned int Size> struct thread_block_tile {
  __device__ float shfl(float value, int source_rank) const;
  __device__ float shfl_up(float value, unsigned int delta) const;
  __device__ float shfl_down(float value, unsigned int delta) const;
  __device__ float shfl_xor(float value, unsigned int lane_mask) const;
  __device__ int shfl(int value, int source_rank) const;
  __device__ int shfl_up(int value, unsigned int delta) const;
  __device__ int shfl_down(int value, unsigned int delta) const;
  __device__ int shfl_xor(int value, unsigned int lane_mask) const;
  __device__ unsigned int thread_rank() const;
  __device__ unsigned int size() const;
};
template <unsigned int Size>
__device__ thread_block_tile<Size> tiled_partition(const thread_block &);
__device__ void sync(const thread_block &);
}
