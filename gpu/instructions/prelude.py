"""The generated OpenCL C compiled as CUDA C++: a prelude of ``#define`` lines, then the
source unchanged.

The code generator emits OpenCL C only; NVIDIA's offline compilers read CUDA C++. The
prelude maps every OpenCL C spelling the generator uses onto CUDA by the preprocessor
(``__kernel`` -> ``extern "C" __global__``, ``__local`` -> ``__shared__``,
``barrier(...)`` -> ``__syncthreads()``, ``get_local_id(d)`` -> ``threadIdx.x/.y/.z``, the
float built-ins onto CUDA's single-precision functions, ``reqd_work_group_size(X, Y, Z)``
onto launch bounds of ``X*Y*Z`` threads); no text of the kernel is rewritten.
"""
from __future__ import annotations

_IDS = {"get_local_id": "threadIdx", "get_group_id": "blockIdx",
        "get_local_size": "blockDim", "get_num_groups": "gridDim"}

_FLOAT_BUILTINS = (("fmax", "a, b"), ("fmin", "a, b"), ("fabs", "a"), ("sqrt", "a"),
                   ("rsqrt", "a"), ("exp", "a"), ("exp2", "a"), ("log", "a"), ("log2", "a"),
                   ("pow", "a, b"), ("sin", "a"), ("cos", "a"), ("tanh", "a"), ("erf", "a"))


def _by_dim(name: str, builtin: str) -> str:
    return (f"#define {name}(d) ((d) == 0 ? {builtin}.x : (d) == 1 ? {builtin}.y : "
            f"{builtin}.z)")


def define_lines(launch_bounds: bool = True,
                 kernel_qualifier: str = 'extern "C" __global__') -> list[str]:
    """The prelude's ``#define`` lines, one string each (no newlines).

    Args:
        launch_bounds: map ``reqd_work_group_size(X, Y, Z)`` onto CUDA's launch bounds of
            ``X*Y*Z`` threads (default); ``False`` drops the attribute instead.
        kernel_qualifier: what ``__kernel`` becomes (a ``__global__`` entry point with an
            unmangled name by default).
    """
    return [
        f"#define __kernel {kernel_qualifier}",
        "#define __global",
        "#define __local __shared__",
        "#define LOCAL_VECTOR_SPACE",
        "#define restrict __restrict__",
        "#define CLK_LOCAL_MEM_FENCE 1",
        "#define CLK_GLOBAL_MEM_FENCE 2",
        "#define barrier(flags) __syncthreads()",
        *(_by_dim(name, builtin) for name, builtin in _IDS.items()),
        "#define get_global_id(d) (get_group_id(d) * get_local_size(d) + get_local_id(d))",
        "#define get_global_size(d) (get_num_groups(d) * get_local_size(d))",
        *(f"#define {name}({args}) {name}f({args})" for name, args in _FLOAT_BUILTINS),
        "#define reqd_work_group_size(x, y, z) launch_bounds((x) * (y) * (z))"
        if launch_bounds else "#define reqd_work_group_size(x, y, z)",
    ]


CUDA_PRELUDE = "\n".join([
    "// tiletraffic: OpenCL C spellings -> CUDA (the generated OpenCL C follows unchanged)",
    *define_lines(),
]) + "\n"
"""The ``#define`` lines put in front of the generated OpenCL C (ends with a newline)."""


def cuda_source(opencl_source: str) -> str:
    """CUDA C++ source of generated OpenCL C: :data:`CUDA_PRELUDE` + the source unchanged."""
    return CUDA_PRELUDE + opencl_source
