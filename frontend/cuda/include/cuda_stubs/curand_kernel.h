/* Stub of <curand_kernel.h> for reading CUDA sources: host code that uses it is parsed and left out
 * (its errors there are not reported), so nothing is declared. */
#pragma once
