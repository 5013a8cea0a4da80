/* Declarations the OpenCL C front end parses kernels with (included before the kernel).
 * Function builtins (get_global_id, barrier, min, fma, ...) come from clang's own
 * -fdeclare-opencl-builtins; this file adds the types and macros clang keeps in
 * opencl-c-base.h, and the vload/vstore overloads of named address spaces. */
typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;
typedef __SIZE_TYPE__ size_t;
typedef __PTRDIFF_TYPE__ ptrdiff_t;
typedef float float2 __attribute__((ext_vector_type(2)));
typedef float float3 __attribute__((ext_vector_type(3)));
typedef float float4 __attribute__((ext_vector_type(4)));
typedef float float8 __attribute__((ext_vector_type(8)));
typedef float float16 __attribute__((ext_vector_type(16)));
typedef int int2 __attribute__((ext_vector_type(2)));
typedef int int4 __attribute__((ext_vector_type(4)));
typedef uint uint2 __attribute__((ext_vector_type(2)));
typedef uint uint4 __attribute__((ext_vector_type(4)));
typedef uint cl_mem_fence_flags;
#define CLK_LOCAL_MEM_FENCE 0x01
#define CLK_GLOBAL_MEM_FENCE 0x02
#define FLT_MAX 0x1.fffffep127f
#define MAXFLOAT 0x1.fffffep127f
#define _TILETRAFFIC_VECTOR_ACCESS(N) \
  float##N __attribute__((overloadable)) vload##N(size_t, const __global float *); \
  float##N __attribute__((overloadable)) vload##N(size_t, const __local float *); \
  float##N __attribute__((overloadable)) vload##N(size_t, const __private float *); \
  void __attribute__((overloadable)) vstore##N(float##N, size_t, __global float *); \
  void __attribute__((overloadable)) vstore##N(float##N, size_t, __local float *); \
  void __attribute__((overloadable)) vstore##N(float##N, size_t, __private float *);
_TILETRAFFIC_VECTOR_ACCESS(2)
_TILETRAFFIC_VECTOR_ACCESS(4)
#undef _TILETRAFFIC_VECTOR_ACCESS
