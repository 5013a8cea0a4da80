/* Stub of <float.h> for reading CUDA sources: the limits are in the builtins header. */
#pragma once
