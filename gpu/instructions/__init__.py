"""Instruction counts of compiled kernels from NVIDIA's offline compilers
(:mod:`.build`), and the CUDA prelude the generated OpenCL C is compiled behind
(:mod:`.prelude`)."""
