/* Stub of <cuda_runtime_api.h> for reading CUDA sources. */
#pragma once
#include <cuda_runtime.h>
