/* Stub of <math.h> for reading CUDA sources: the float functions are declared by the
 * builtins header. */
#pragma once
__host__ __device__ double log(double);
__host__ __device__ double pow(double, double);
__host__ __device__ double ceil(double);
__host__ __device__ double floor(double);
__host__ __device__ double tanh(double);
#define M_PI 3.14159265358979323846
