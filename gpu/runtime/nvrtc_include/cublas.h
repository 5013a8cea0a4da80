/* Compiled by NVRTC for a launch of the kernel alone: host code, which uses <cublas.h>, is
 * left out before compiling, so nothing is declared. */
#pragma once
