/* Declarations a CUDA kernel uses, for reading it with clang (-x cuda -nocudainc): the
 * execution-space attributes, the built-in variables, the vector types, the device
 * functions the simulator gives a meaning to, and what host code of a .cu file calls.
 * Nothing here is compiled for a device. */
#ifndef TILETRAFFIC_CUDA_BUILTINS_H
#define TILETRAFFIC_CUDA_BUILTINS_H

#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __managed__ __attribute__((managed))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#define __restrict__ __restrict
#define __align__(n) __attribute__((aligned(n)))
#define __builtin_align__(n) __attribute__((aligned(n)))
#define __device_builtin__
#define __CUDACC__ 1
#define CUDART_VERSION 12000

typedef __SIZE_TYPE__ size_t;
typedef __PTRDIFF_TYPE__ ptrdiff_t;
typedef decltype(nullptr) nullptr_t;
typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned long ulong;
typedef unsigned char uchar;

struct __tiletraffic_index3 { unsigned int x, y, z; };
extern const __device__ __tiletraffic_index3 threadIdx;
extern const __device__ __tiletraffic_index3 blockIdx;
extern const __device__ __tiletraffic_index3 blockDim;
extern const __device__ __tiletraffic_index3 gridDim;
extern const __device__ int warpSize;

struct dim3 {
  unsigned int x, y, z;
  __host__ __device__ constexpr dim3(unsigned int vx = 1, unsigned int vy = 1,
                                     unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
};

typedef float float1 __attribute__((ext_vector_type(1)));
typedef float float2 __attribute__((ext_vector_type(2)));
typedef float float3 __attribute__((ext_vector_type(3)));
typedef float float4 __attribute__((ext_vector_type(4)));
typedef int int2 __attribute__((ext_vector_type(2)));
typedef int int3 __attribute__((ext_vector_type(3)));
typedef int int4 __attribute__((ext_vector_type(4)));
typedef unsigned int uint2 __attribute__((ext_vector_type(2)));
typedef unsigned int uint3 __attribute__((ext_vector_type(3)));
typedef unsigned int uint4 __attribute__((ext_vector_type(4)));
typedef double double2 __attribute__((ext_vector_type(2)));
typedef double double4 __attribute__((ext_vector_type(4)));

__host__ __device__ float2 make_float2(float, float);
__host__ __device__ float3 make_float3(float, float, float);
__host__ __device__ float4 make_float4(float, float, float, float);
__host__ __device__ int2 make_int2(int, int);
__host__ __device__ int4 make_int4(int, int, int, int);

__device__ void __syncthreads(void);
__device__ int __syncthreads_count(int);
__device__ int __syncthreads_and(int);
__device__ int __syncthreads_or(int);
__device__ void __syncwarp(unsigned int mask = 0xffffffffu);
__device__ void __threadfence(void);
__device__ void __threadfence_block(void);

__device__ float __shfl_sync(unsigned int mask, float var, int src_lane, int width = 32);
__device__ float __shfl_up_sync(unsigned int mask, float var, unsigned int delta, int width = 32);
__device__ float __shfl_down_sync(unsigned int mask, float var, unsigned int delta, int width = 32);
__device__ float __shfl_xor_sync(unsigned int mask, float var, int lane_mask, int width = 32);
__device__ int __shfl_sync(unsigned int mask, int var, int src_lane, int width = 32);
__device__ int __shfl_up_sync(unsigned int mask, int var, unsigned int delta, int width = 32);
__device__ int __shfl_down_sync(unsigned int mask, int var, unsigned int delta, int width = 32);
__device__ int __shfl_xor_sync(unsigned int mask, int var, int lane_mask, int width = 32);
__device__ unsigned int __activemask(void);
__device__ unsigned int __ballot_sync(unsigned int mask, int predicate);

__device__ float __ldg(const float *);
__device__ float2 __ldg(const float2 *);
__device__ float4 __ldg(const float4 *);
__device__ int __ldg(const int *);

__device__ float atomicAdd(float *, float);
__device__ int atomicAdd(int *, int);
__device__ unsigned int atomicAdd(unsigned int *, unsigned int);
__device__ int atomicMax(int *, int);
__device__ int atomicMin(int *, int);
__device__ int atomicExch(int *, int);
__device__ int atomicCAS(int *, int, int);

__host__ __device__ int min(int, int);
__host__ __device__ unsigned int min(unsigned int, unsigned int);
__host__ __device__ long long min(long long, long long);
__host__ __device__ float min(float, float);
__host__ __device__ int max(int, int);
__host__ __device__ unsigned int max(unsigned int, unsigned int);
__host__ __device__ long long max(long long, long long);
__host__ __device__ float max(float, float);
__host__ __device__ int abs(int);

/* A float function under its C name (expf) and its C++ overload for float (exp). */
#define _TILETRAFFIC_FLOAT_FUNCTION(name, ...) \
  __host__ __device__ float name##f(__VA_ARGS__); \
  __host__ __device__ float name(__VA_ARGS__);
_TILETRAFFIC_FLOAT_FUNCTION(fmax, float, float)
_TILETRAFFIC_FLOAT_FUNCTION(fmin, float, float)
_TILETRAFFIC_FLOAT_FUNCTION(fabs, float)
_TILETRAFFIC_FLOAT_FUNCTION(sqrt, float)
_TILETRAFFIC_FLOAT_FUNCTION(exp, float)
_TILETRAFFIC_FLOAT_FUNCTION(exp2, float)
_TILETRAFFIC_FLOAT_FUNCTION(log, float)
_TILETRAFFIC_FLOAT_FUNCTION(log2, float)
_TILETRAFFIC_FLOAT_FUNCTION(pow, float, float)
_TILETRAFFIC_FLOAT_FUNCTION(sin, float)
_TILETRAFFIC_FLOAT_FUNCTION(cos, float)
_TILETRAFFIC_FLOAT_FUNCTION(tanh, float)
_TILETRAFFIC_FLOAT_FUNCTION(erf, float)
_TILETRAFFIC_FLOAT_FUNCTION(fma, float, float, float)
#undef _TILETRAFFIC_FLOAT_FUNCTION
__host__ __device__ float rsqrtf(float);
__host__ __device__ float __expf(float);
__host__ __device__ float __logf(float);
__host__ __device__ float __powf(float, float);
__host__ __device__ float __fmaf_rn(float, float, float);
__host__ __device__ float __fmul_rn(float, float);
__host__ __device__ float __fadd_rn(float, float);
__host__ __device__ float __fdividef(float, float);
__host__ __device__ float ceilf(float);
__host__ __device__ float floorf(float);
__host__ __device__ double log(int);
__host__ __device__ double tanh(int);
__host__ __device__ double fmax(double, double);
__host__ __device__ double fmin(double, double);
__host__ __device__ double fabs(double);
__host__ __device__ double sqrt(double);
__host__ __device__ double exp(double);
__host__ __device__ double fma(double, double, double);

#define INFINITY (__builtin_inff())
#define NAN (__builtin_nanf(""))
#define HUGE_VALF (__builtin_huge_valf())
#define FLT_MAX 3.402823466e+38F
#define FLT_MIN 1.175494351e-38F
#define FLT_EPSILON 1.192092896e-07F
#define INT_MAX 2147483647
#define INT_MIN (-2147483647 - 1)
#define UINT_MAX 4294967295U
#define CUDART_INF_F (__builtin_inff())

/* Host side of a .cu file: what it calls, declared so that the file parses. */
typedef int cudaError_t;
typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;
enum cudaMemcpyKind { cudaMemcpyHostToHost = 0, cudaMemcpyHostToDevice = 1,
                      cudaMemcpyDeviceToHost = 2, cudaMemcpyDeviceToDevice = 3,
                      cudaMemcpyDefault = 4 };
#define cudaSuccess 0
struct cudaDeviceProp { char name[256]; size_t totalGlobalMem; size_t sharedMemPerBlock;
                        int regsPerBlock; int warpSize; int maxThreadsPerBlock;
                        int multiProcessorCount; int major; int minor; int clockRate;
                        int memoryClockRate; int memoryBusWidth; };
cudaError_t cudaMalloc(void **, size_t);
template <class T> cudaError_t cudaMalloc(T **p, size_t n) { return cudaMalloc((void **)p, n); }
cudaError_t cudaMallocManaged(void **, size_t, unsigned int flags = 1);
template <class T> cudaError_t cudaMallocManaged(T **p, size_t n, unsigned int flags = 1) {
  return cudaMallocManaged((void **)p, n, flags); }
cudaError_t cudaMallocHost(void **, size_t);
cudaError_t cudaFree(void *);
cudaError_t cudaFreeHost(void *);
cudaError_t cudaMemcpy(void *, const void *, size_t, cudaMemcpyKind);
cudaError_t cudaMemcpyAsync(void *, const void *, size_t, cudaMemcpyKind, cudaStream_t s = 0);
cudaError_t cudaMemset(void *, int, size_t);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaDeviceReset(void);
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
const char *cudaGetErrorString(cudaError_t);
cudaError_t cudaSetDevice(int);
cudaError_t cudaGetDevice(int *);
cudaError_t cudaGetDeviceCount(int *);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *, int);
cudaError_t cudaEventCreate(cudaEvent_t *);
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t s = 0);
cudaError_t cudaEventSynchronize(cudaEvent_t);
cudaError_t cudaEventElapsedTime(float *, cudaEvent_t, cudaEvent_t);
cudaError_t cudaEventDestroy(cudaEvent_t);
cudaError_t cudaStreamCreate(cudaStream_t *);
cudaError_t cudaStreamSynchronize(cudaStream_t);
cudaError_t cudaStreamDestroy(cudaStream_t);
cudaError_t cudaFuncSetAttribute(const void *, int, int);
#define cudaFuncAttributeMaxDynamicSharedMemorySize 8
extern "C" int cudaConfigureCall(dim3 grid, dim3 block, size_t shared_bytes = 0,
                                 cudaStream_t stream = 0);
extern "C" unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shared_bytes = 0,
                                                cudaStream_t stream = 0);

#endif
