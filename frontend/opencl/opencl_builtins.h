/* Declarations the OpenCL C front end parses kernels with (included before the kernel).
 * Function builtins (get_global_id, barrier, min, fma, ...) come from clang's own
 * -fdeclare-opencl-builtins; this file adds the types and macros clang keeps in
 * opencl-c-base.h (fence flags, integer and float limits, INFINITY, NAN, the M_*_F
 * constants), OpenCL C 2.0's work_group_barrier and memory_scope, and the vload/vstore
 * overloads of named address spaces. */
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
typedef char char2 __attribute__((ext_vector_type(2)));
typedef char char3 __attribute__((ext_vector_type(3)));
typedef char char4 __attribute__((ext_vector_type(4)));
typedef char char8 __attribute__((ext_vector_type(8)));
typedef char char16 __attribute__((ext_vector_type(16)));
typedef uchar uchar2 __attribute__((ext_vector_type(2)));
typedef uchar uchar3 __attribute__((ext_vector_type(3)));
typedef uchar uchar4 __attribute__((ext_vector_type(4)));
typedef uchar uchar8 __attribute__((ext_vector_type(8)));
typedef uchar uchar16 __attribute__((ext_vector_type(16)));
typedef short short2 __attribute__((ext_vector_type(2)));
typedef short short3 __attribute__((ext_vector_type(3)));
typedef short short4 __attribute__((ext_vector_type(4)));
typedef short short8 __attribute__((ext_vector_type(8)));
typedef short short16 __attribute__((ext_vector_type(16)));
typedef ushort ushort2 __attribute__((ext_vector_type(2)));
typedef ushort ushort3 __attribute__((ext_vector_type(3)));
typedef ushort ushort4 __attribute__((ext_vector_type(4)));
typedef ushort ushort8 __attribute__((ext_vector_type(8)));
typedef ushort ushort16 __attribute__((ext_vector_type(16)));
typedef int int3 __attribute__((ext_vector_type(3)));
typedef int int8 __attribute__((ext_vector_type(8)));
typedef int int16 __attribute__((ext_vector_type(16)));
typedef uint uint3 __attribute__((ext_vector_type(3)));
typedef uint uint8 __attribute__((ext_vector_type(8)));
typedef uint uint16 __attribute__((ext_vector_type(16)));
typedef long long2 __attribute__((ext_vector_type(2)));
typedef long long3 __attribute__((ext_vector_type(3)));
typedef long long4 __attribute__((ext_vector_type(4)));
typedef long long8 __attribute__((ext_vector_type(8)));
typedef long long16 __attribute__((ext_vector_type(16)));
typedef ulong ulong2 __attribute__((ext_vector_type(2)));
typedef ulong ulong3 __attribute__((ext_vector_type(3)));
typedef ulong ulong4 __attribute__((ext_vector_type(4)));
typedef ulong ulong8 __attribute__((ext_vector_type(8)));
typedef ulong ulong16 __attribute__((ext_vector_type(16)));
typedef uint cl_mem_fence_flags;
#define CLK_LOCAL_MEM_FENCE 0x01
#define CLK_GLOBAL_MEM_FENCE 0x02
/* OpenCL C 2.0's barrier (the front end accepts it under -cl-std=CL2.0 or CL3.0) */
typedef enum memory_scope {
  memory_scope_work_item = 0,
  memory_scope_work_group = 1,
  memory_scope_device = 2,
  memory_scope_all_svm_devices = 3,
  memory_scope_all_devices = 3,
  memory_scope_sub_group = 4
} memory_scope;
void __attribute__((overloadable)) work_group_barrier(cl_mem_fence_flags);
void __attribute__((overloadable)) work_group_barrier(cl_mem_fence_flags, memory_scope);
/* The sub-group built-ins of cl_khr_subgroups and cl_khr_subgroup_shuffle(_relative),
 * with Intel's spellings of the shuffles (cl_intel_subgroups) */
uint get_sub_group_size(void);
uint get_max_sub_group_size(void);
uint get_num_sub_groups(void);
uint get_enqueued_num_sub_groups(void);
uint get_sub_group_id(void);
uint get_sub_group_local_id(void);
void __attribute__((overloadable)) sub_group_barrier(cl_mem_fence_flags);
void __attribute__((overloadable)) sub_group_barrier(cl_mem_fence_flags, memory_scope);
#define TT_SUB_GROUP_REDUCTIONS(T) \
  T __attribute__((overloadable)) sub_group_reduce_add(T); \
  T __attribute__((overloadable)) sub_group_reduce_min(T); \
  T __attribute__((overloadable)) sub_group_reduce_max(T); \
  T __attribute__((overloadable)) sub_group_broadcast(T, uint); \
  T __attribute__((overloadable)) sub_group_shuffle(T, uint); \
  T __attribute__((overloadable)) sub_group_shuffle_xor(T, uint); \
  T __attribute__((overloadable)) sub_group_shuffle_up(T, uint); \
  T __attribute__((overloadable)) sub_group_shuffle_down(T, uint); \
  T __attribute__((overloadable)) intel_sub_group_shuffle(T, uint); \
  T __attribute__((overloadable)) intel_sub_group_shuffle_xor(T, uint);
TT_SUB_GROUP_REDUCTIONS(float)
TT_SUB_GROUP_REDUCTIONS(int)
TT_SUB_GROUP_REDUCTIONS(uint)
#undef TT_SUB_GROUP_REDUCTIONS
/* The constants of OpenCL C 1.2 section 6.12.2 and 6.12.2.1, as clang's opencl-c-base.h
 * spells them (NAN here a quiet NaN clang evaluates, not as_float(INT_MAX)). */
#define CHAR_BIT 8
#define SCHAR_MAX 127
#define SCHAR_MIN (-128)
#define UCHAR_MAX 255
#define CHAR_MAX SCHAR_MAX
#define CHAR_MIN SCHAR_MIN
#define SHRT_MAX 32767
#define SHRT_MIN (-32768)
#define USHRT_MAX 65535
#define INT_MAX 2147483647
#define INT_MIN (-2147483647 - 1)
#define UINT_MAX 0xffffffffU
#define LONG_MAX 0x7fffffffffffffffL
#define LONG_MIN (-0x7fffffffffffffffL - 1)
#define ULONG_MAX 0xffffffffffffffffUL
#define NULL ((void *)0)
#define FLT_DIG 6
#define FLT_MANT_DIG 24
#define FLT_MAX_10_EXP +38
#define FLT_MAX_EXP +128
#define FLT_MIN_10_EXP -37
#define FLT_MIN_EXP -125
#define FLT_RADIX 2
#define FLT_MAX 0x1.fffffep127f
#define FLT_MIN 0x1.0p-126f
#define FLT_EPSILON 0x1.0p-23f
#define MAXFLOAT 0x1.fffffep127f
#define HUGE_VALF (__builtin_huge_valf())
#define INFINITY (__builtin_inff())
#define NAN (__builtin_nanf(""))
#define M_E_F 2.71828182845904523536028747135266250f
#define M_LOG2E_F 1.44269504088896340735992468100189214f
#define M_LOG10E_F 0.434294481903251827651128918916605082f
#define M_LN2_F 0.693147180559945309417232121458176568f
#define M_LN10_F 2.30258509299404568401799145468436421f
#define M_PI_F 3.14159265358979323846264338327950288f
#define M_PI_2_F 1.57079632679489661923132169163975144f
#define M_PI_4_F 0.785398163397448309615660845819875721f
#define M_1_PI_F 0.318309886183790671537767526745028724f
#define M_2_PI_F 0.636619772367581343075535053490057448f
#define M_2_SQRTPI_F 1.12837916709551257389615890312154517f
#define M_SQRT2_F 1.41421356237309504880168872420969808f
#define M_SQRT1_2_F 0.707106781186547524400844362104849039f
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
/* half storage: read as float exactly, stored rounded (to nearest even by default; the
 * other rounding modes are declared so that the front end can refuse them by name) */
float __attribute__((overloadable)) vload_half(size_t, const __global half *);
float __attribute__((overloadable)) vload_half(size_t, const __constant half *);
void __attribute__((overloadable)) vstore_half(float, size_t, __global half *);
void __attribute__((overloadable)) vstore_half_rte(float, size_t, __global half *);
void __attribute__((overloadable)) vstore_half_rtz(float, size_t, __global half *);
void __attribute__((overloadable)) vstore_half_rtp(float, size_t, __global half *);
void __attribute__((overloadable)) vstore_half_rtn(float, size_t, __global half *);
#define _TILETRAFFIC_HALF_ACCESS(N) \
  float##N __attribute__((overloadable)) vload_half##N(size_t, const __global half *); \
  float##N __attribute__((overloadable)) vload_half##N(size_t, const __constant half *); \
  void __attribute__((overloadable)) vstore_half##N(float##N, size_t, __global half *); \
  void __attribute__((overloadable)) vstore_half##N##_rte(float##N, size_t, __global half *);
_TILETRAFFIC_HALF_ACCESS(2)
_TILETRAFFIC_HALF_ACCESS(4)
#undef _TILETRAFFIC_HALF_ACCESS
