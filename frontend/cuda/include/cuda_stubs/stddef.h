/* Stub of <stddef.h> for reading CUDA sources: size_t is in the builtins header. */
#pragma once
