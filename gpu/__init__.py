"""OpenCL side of tiletraffic: devices, code generation, kernels, microbenchmarks."""
import os

# NVIDIA's driver keeps the machine code it JIT-compiles from a program's PTX in a disk cache
# (~/.nv/ComputeCache, shared by CUDA and OpenCL); a build served from it writes no ptxas
# lines to the build log, so the registers per work-item of `-cl-nv-verbose`
# (gpu/devices/kernel_resources.py) would be missing.
# The variable is read when the driver starts, so it is set here, before any module of this
# package asks pyopencl for a platform; a value the user set is kept (CUDA_CACHE_DISABLE=0
# keeps the cache, and its missing registers).
os.environ.setdefault("CUDA_CACHE_DISABLE", "1")

