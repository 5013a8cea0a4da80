/* Stub of <device_launch_parameters.h> for reading CUDA sources. */
#pragma once
#include <cuda_runtime.h>
