"""The generated OpenCL C, compiled as CUDA: a prelude of ``#define`` lines, nothing else.

Nsight Compute reads hardware counters of CUDA kernels only (it profiles no OpenCL kernel),
so to count what a schedule's kernel does on an NVIDIA GPU, the *same* OpenCL C text that
:func:`gpu.codegen.generate.generate` produced is compiled as CUDA (NVRTC, e.g. CuPy ``RawModule``)
behind :data:`CUDA_PRELUDE`. The generated source follows the prelude byte for byte: no
textual substitution is made, every OpenCL spelling is mapped by the preprocessor:

==================================  =====================================================
OpenCL C (as generated)             CUDA after preprocessing
==================================  =====================================================
``__kernel``                        ``extern "C" __global__`` (unmangled name)
``__global``                        nothing (CUDA pointers are global by default)
``__local``                         ``__shared__`` (static shared memory)
``restrict``                        ``__restrict__``
``barrier(CLK_LOCAL_MEM_FENCE)``    ``__syncthreads()`` (any fence flags)
``get_local_id(d)``                 ``threadIdx.x`` / ``.y`` / ``.z`` for d = 0, 1, 2
``get_group_id(d)``                 ``blockIdx.x`` / ``.y`` / ``.z``
``get_local_size(d)``               ``blockDim.x`` / ``.y`` / ``.z``
``get_num_groups(d)``               ``gridDim.x`` / ``.y`` / ``.z``
``get_global_id(d)``                ``blockIdx * blockDim + threadIdx`` (global offset 0)
``get_global_size(d)``              ``gridDim * blockDim``
``fmax(a, b)``, ``fmin``, ``fabs``,  ``fmaxf(a, b)``, ``fminf``, ``fabsf``, ``sqrtf``,
``sqrt``, ``rsqrt``, ``exp``,       ``rsqrtf``, ``expf``, ``exp2f``, ``logf``, ``log2f``,
``exp2``, ``log``, ``log2``,        ``powf``, ``sinf``, ``cosf``, ``tanhf``, ``erff``:
``pow``, ``sin``, ``cos``,          CUDA's single-precision functions
``tanh``, ``erf`` (float)
``__attribute__((reqd_work_group_   ``__attribute__((launch_bounds(X*Y*Z)))``, which is
size(X, Y, Z)))``                   exactly what CUDA's ``__launch_bounds__(X*Y*Z)``
                                    expands to (``crt/host_defines.h``:
                                    ``__launch_bounds__(...)`` ->
                                    ``__annotate__(launch_bounds(__VA_ARGS__))`` ->
                                    ``__attribute__((launch_bounds(...)))``). With
                                    ``launch_bounds=False`` the attribute becomes
                                    ``__attribute__(())``, i.e. is dropped.
==================================  =====================================================

``min(int, int)``, ``float`` literals with ``f`` and ``const int`` arguments mean the same in
both languages. The ``get_*`` ids are ``unsigned int`` in CUDA (``size_t`` in OpenCL); the
generated code casts each to ``int`` and indexes stay below 2**31 (checked by the schedule
builders), so the value is the same. Launch geometry: CUDA's grid is
``global_size[d] / local_size[d]`` blocks and its block ``local_size[d]`` threads per
dimension, see :func:`launch_geometry`.

Nothing here imports CUDA: this module only writes text.
"""
from __future__ import annotations

from tiletraffic.gpu.codegen.kernel import GeneratedKernel
from tiletraffic.gpu.instructions.prelude import define_lines

PRELUDE_BEGIN = "// ---- tiletraffic CUDA prelude (gpu/cuda.py): OpenCL C spellings -> CUDA ----"
PRELUDE_END = "// ---- end of prelude; the generated OpenCL C follows unchanged ----"

def prelude(launch_bounds: bool = True,
            kernel_qualifier: str = 'extern "C" __global__') -> str:
    """The ``#define`` lines put in front of the OpenCL C source (ends with a newline).

    Args:
        launch_bounds: map ``reqd_work_group_size(X, Y, Z)`` onto CUDA's launch bounds of
            ``X*Y*Z`` threads (default); ``False`` drops the attribute instead.
        kernel_qualifier: what ``__kernel`` becomes (a ``__global__`` entry point by
            default; :func:`timeline_source` makes it a ``__device__`` function).
    """
    lines = [PRELUDE_BEGIN, *define_lines(launch_bounds, kernel_qualifier), PRELUDE_END]
    return "\n".join(lines) + "\n"


CUDA_PRELUDE = prelude()
"""The default prelude (``reqd_work_group_size`` mapped onto launch bounds)."""


def cuda_source(kernel: GeneratedKernel, launch_bounds: bool = True) -> str:
    """CUDA C++ source of ``kernel``: :func:`prelude` followed by ``kernel.source`` unchanged.

    Compile it with NVRTC (CuPy: ``cupy.RawModule(code=cuda_source(k))`` and
    ``get_function(k.name)``) or ``nvcc``; launch with :func:`launch_geometry`.
    """
    return prelude(launch_bounds) + kernel.source


TIMELINE_SUFFIX = "_timeline"
"""Name suffix of the entry point :func:`timeline_source` adds."""

_ARG_TYPES = {"global_in": "const float *__restrict__", "global_out": "float *__restrict__",
              "global_inout": "float *__restrict__", "int": "const int"}


def timeline_source(kernel: GeneratedKernel) -> tuple[str, str]:
    """CUDA source that runs ``kernel`` unchanged and records when each work-group ran.

    The generated OpenCL C still follows the prelude byte for byte, but ``__kernel`` makes it
    a ``__device__ __forceinline__`` function renamed ``<name>_body`` (by a ``#define`` of
    its name). After it comes the entry point ``<name>_timeline``: its arguments are the
    kernel's, then ``unsigned long long *timeline``. Work-item (0, 0, 0) of each work-group
    reads ``%globaltimer`` (ns, shared by all SMs) before the body, and, after a
    ``__syncthreads()`` that follows the body, writes ``timeline[3*g] = start_ns``,
    ``timeline[3*g+1] = end_ns`` and ``timeline[3*g+2] = %smid`` (the compute unit), where
    ``g = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z)`` is the
    work-group's linear id (OpenCL: ``get_group_id(0) + get_num_groups(0) * ...``). The
    entry point keeps the kernel's launch bounds (``X*Y*Z`` threads).

    The instrumentation adds two timer reads, one barrier and three stores per work-group:
    small against the kernels measured with it (thousands of loads per work-item), but the
    kernel is not the one Nsight Compute counted, so its timings are not used as kernel
    times.

    Returns:
        ``(source, entry point name)``.
    """
    body = f"{kernel.name}_body"
    threads = kernel.work_group_items
    params = ", ".join(f"{_ARG_TYPES[a.kind]} {a.name}" for a in kernel.args)
    names = ", ".join(a.name for a in kernel.args)
    entry = f"{kernel.name}{TIMELINE_SUFFIX}"
    wrapper = f"""
// ---- tiletraffic work-group timeline (gpu/cuda.py: timeline_source) ----
extern "C" __global__ void __launch_bounds__({threads})
{entry}({params}, unsigned long long *__restrict__ timeline)
{{
    const bool first = threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0;
    unsigned long long start_ns = 0;
    if (first) {{
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start_ns));
    }}
    {body}({names});
    __syncthreads();
    if (first) {{
        unsigned long long end_ns;
        unsigned int smid;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(end_ns));
        asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
        const unsigned long long g = blockIdx.x + (unsigned long long)gridDim.x
            * (blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z);
        timeline[3 * g] = start_ns;
        timeline[3 * g + 1] = end_ns;
        timeline[3 * g + 2] = smid;
    }}
}}
"""
    head = (prelude(launch_bounds=False,
                    kernel_qualifier="static __device__ __forceinline__")
            + f"#define {kernel.name} {body}\n")
    return head + kernel.source + wrapper, entry


def launch_geometry(kernel: GeneratedKernel) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """CUDA ``(grid, block)`` of ``kernel``'s NDRange, three dimensions each.

    Raises:
        ValueError: a global size that is not a multiple of the local size (the generated
            kernels always round up, so this means a hand-made ``GeneratedKernel``).
    """
    g = tuple(kernel.global_size) + (1,) * (3 - len(kernel.global_size))
    b = tuple(kernel.local_size) + (1,) * (3 - len(kernel.local_size))
    bad = [d for d in range(3) if g[d] % b[d]]
    if bad:
        raise ValueError(f"{kernel.name}: global size {g} is not a multiple of local size {b} "
                         f"in dimension(s) {bad}")
    return tuple(g[d] // b[d] for d in range(3)), b
