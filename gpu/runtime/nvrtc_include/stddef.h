/* Compiled by NVRTC for a launch of the kernel alone: <stddef.h> declares nothing a kernel needs
 * (host code of the file is left out before compiling). */
#pragma once
