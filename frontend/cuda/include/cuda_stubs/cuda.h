/* Stub of <cuda.h> for reading CUDA sources. */
#pragma once
#include <cuda_runtime.h>
