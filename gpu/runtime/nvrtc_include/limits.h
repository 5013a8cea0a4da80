/* Compiled by NVRTC for a launch of the kernel alone: <limits.h> declares only the limits kernels use
 * (host code of the file is left out before compiling). */
#pragma once
#ifndef FLT_MAX
#define FLT_MAX 3.402823466e+38F
#define FLT_MIN 1.175494351e-38F
#define FLT_EPSILON 1.192092896e-07F
#endif
#ifndef INT_MAX
#define INT_MAX 2147483647
#define INT_MIN (-2147483647 - 1)
#define UINT_MAX 4294967295U
#endif
