/* Compiled by NVRTC for a launch of the kernel alone: <stdint.h> declares only the fixed-width integer types
 * (host code of the file is left out before compiling). */
#pragma once
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
