/* Stub of <cuda_runtime.h> for reading CUDA sources: the runtime's declarations are in
 * the builtins header every CUDA source is read with. */
#pragma once
