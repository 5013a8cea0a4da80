"""CUDA C++ into the schedule IR: one ``__global__`` kernel of a user's ``.cu`` source becomes
a :class:`~tiletraffic.simulator.ir.nodes.Schedule` that every command counts, checks,
models and runs.

``parse_kernel(source, kernel, grid, block, args)`` parses the source with libclang as CUDA
device code (:mod:`frontend.cuda.clang_cuda`: no CUDA toolkit needed), instantiates a
kernel template with the launch's ``template`` values, and walks clang's tree of the kernel
with :class:`~tiletraffic.frontend.cuda.builder.CudaKernelBuilder`, the OpenCL C front end's
translator with CUDA's constructs mapped onto the same IR. What it reads beyond the OpenCL C
subset (:mod:`frontend.opencl.translate`): ``threadIdx``/``blockIdx``/``blockDim``/
``gridDim``, ``__shared__`` arrays (static, declared anywhere, and ``extern __shared__``
sized by ``shared_bytes``), ``__syncthreads()`` and cooperative groups' ``sync``,
``__device__``/``__forceinline__`` helpers (inlined), templates, ``constexpr``,
``__launch_bounds__``, ``__restrict__``, ``__ldg``, ``float2``/``float4`` with
``make_float4`` and ``reinterpret_cast<float4 *>(&A[i])[0]``, ``#pragma unroll``,
``assert`` (ignored), warp shuffles of floats.

The launch is CUDA's: ``grid`` (blocks per dimension) and ``block`` (threads per block), x
first; the schedule's local size is ``block`` and its global size ``grid * block``.

Errors: :class:`~tiletraffic.frontend.opencl.clang_ast.FrontendError`, one line with
``file:line:column`` of the source as written (a template's instance too).
"""
from __future__ import annotations

import warnings
from pathlib import Path

from tiletraffic.simulator.ir import nodes as S

from tiletraffic.frontend.cuda import clang_cuda as CC
from tiletraffic.frontend.cuda import device_text as DT
from tiletraffic.frontend.cuda.builder import CudaKernelBuilder
from tiletraffic.frontend.opencl import clang_ast as C
from tiletraffic.frontend.opencl.clang_ast import FrontendError
from tiletraffic.frontend.opencl.translate import (MacroRedefinedWarning, SourceNames,
                                                   unit_source_names)
from tiletraffic.frontend.opencl.rewrite import simplify

__all__ = ["parse_kernel", "kernel_names", "launch_geometry", "source_names", "FrontendError"]

kernel_names = CC.kernel_names


def source_names(source: str, path: str = "<source>", build_options="",
                 kernel: str | None = None) -> SourceNames:
    """The :class:`~tiletraffic.frontend.opencl.translate.SourceNames` of the CUDA text
    ``source`` (the text of ``path``) and the files it includes, not the headers shipped
    here, from one parse (``kernel``: as :func:`clang_cuda.parse` takes it).

    Raises:
        FrontendError: clang reports an error.
    """
    return unit_source_names(CC.parse(source, path, build_options, kernel), path,
                             CC._shipped_file)


def _c_names(body: tuple) -> tuple:
    """``body`` with each private float named after a vector's component (``a.x``, as the
    translator names them) renamed to a C identifier (``a_x``) not used otherwise, so that
    the generated OpenCL C declares it."""
    import dataclasses
    from tiletraffic.simulator.ir.visitor import walk
    declared = {n.name for s in body for n in walk(s) if isinstance(n, S.DeclareFloat)}
    used = set(declared)
    renamed = {}
    for name in sorted(n for n in declared if "." in n):
        base = new = name.replace(".", "_")
        k = 1
        while new in used:
            k += 1
            new = f"{base}_{k}"
        used.add(new)
        renamed[name] = new
    if not renamed:
        return body

    def rewrite(value):
        if isinstance(value, str):
            return renamed.get(value, value)
        if isinstance(value, tuple):
            return tuple(rewrite(v) for v in value)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            changes = {f.name: rewrite(getattr(value, f.name))
                       for f in dataclasses.fields(value) if f.init}
            return dataclasses.replace(value, **changes)
        return value
    return rewrite(body)


def launch_geometry(grid, block, where: str = "<launch>") -> tuple[tuple, tuple]:
    """(global size, local size) of a CUDA launch of ``grid`` blocks of ``block`` threads
    (each 1 to 3 positive integers, x first; the shorter padded with 1).

    Raises:
        FrontendError: a list of more than 3 sizes or a size that is not a positive integer.
    """
    grid, block = list(grid), list(block)
    for name, sizes in (("grid", grid), ("block", block)):
        if not 1 <= len(sizes) <= 3:
            raise FrontendError(f"{where}: {name} has {len(sizes)} sizes; give 1 to 3 (x "
                                "first)")
        for d, v in enumerate(sizes):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise FrontendError(f"{where}: {name}[{d}] = {v!r} is not a positive "
                                    "integer")
    ndim = max(len(grid), len(block))
    grid += [1] * (ndim - len(grid))
    block += [1] * (ndim - len(block))
    return tuple(g * b for g, b in zip(grid, block)), tuple(block)


def parse_kernel(source: str, kernel: str, grid, block, args: dict, *,
                 sizes: dict | None = None, template: dict | None = None,
                 shared_bytes: int | None = None, build_options="",
                 path: str | None = None) -> S.Schedule:
    """The schedule of the ``__global__`` kernel ``kernel`` of the CUDA text ``source``.

    Args:
        source: the CUDA C++ text (the file's contents when ``path`` names it).
        kernel: name of a ``__global__`` function or function template in it.
        grid, block: the blocks of the grid and the threads of a block per dimension (x
            first, 1 to 3 dimensions each).
        args: every kernel argument by name, as
            :func:`tiletraffic.frontend.opencl.translate.parse_kernel` takes them (pointer
            arguments are global buffers: their shape and access).
        sizes: values of the names the buffer shapes use that are not scalar arguments.
        template: the kernel template's arguments by parameter name: an ``int``, a
            ``bool``, or a type name (``"float"``); a parameter with a default may be left
            out.
        shared_bytes: the dynamic shared memory of the launch in bytes (a multiple of 4),
            for ``extern __shared__`` arrays.
        build_options: ``-D``/``-U``/``-I`` options (a string or a list).
        path: the file name used in messages and for ``#include`` (default ``<source>``).

    Returns:
        A :class:`Schedule` of family ``cuda:<kernel>`` whose ``extra["cuda"]`` keeps the
        source, kernel, template values, launch and argument kinds, so that ``run`` on an
        NVIDIA GPU can launch this text; elsewhere its generated OpenCL C runs.

    Raises:
        FrontendError: a parse error or a construct outside the subset (one line with
            file:line:column), an argument or template argument left out, unknown or of the
            wrong kind, a bad grid, block or shared_bytes.
        tiletraffic.simulator.ir.nodes.ScheduleError: the launch is invalid.

    Warns:
        MacroRedefinedWarning: the source ``#define``s again a macro of the build options
            (or of a tuned parameter); its definition is used, as NVRTC uses it.
    """
    path = path or "<source>"
    gsize, lsize = launch_geometry(grid, block, f"{path}: {kernel}")
    if shared_bytes is not None and (isinstance(shared_bytes, bool) or
                                     not isinstance(shared_bytes, int) or shared_bytes < 4 or
                                     shared_bytes % S.FLOAT_BYTES):
        raise FrontendError(f"{path}: {kernel}: shared_bytes = {shared_bytes!r} is not a "
                            f"positive multiple of {S.FLOAT_BYTES} (bytes of a float)", None,
                            "shared_bytes")
    tu = CC.parse(source, path, build_options, kernel, args)
    for line in C.redefined_macros(tu):
        warnings.warn(line, MacroRedefinedWarning, stacklevel=2)
    found = CC.kernels(tu)
    if kernel not in found:
        raise FrontendError(f"{path}: no __global__ kernel named {kernel!r}; it defines "
                            f"{', '.join(found) or 'none'}")
    cursor = CC.chosen_definition(tu, kernel, args)
    device_text = DT.device_source(tu, source, path, cursor)
    headers = DT.device_headers(tu, path)
    values: dict = {}
    arguments: dict = {}
    if cursor.kind.name == "FUNCTION_TEMPLATE":
        values = CC.template_values(cursor, dict(template or {}), path)
        tu = CC.parse(CC.instantiate(source, cursor, values), path, build_options, kernel,
                      args)
        cursor = CC.instance(tu, kernel)
        arguments = CC.instance_values(tu, values)
        if cursor is None:
            raise FrontendError(f"{path}: the instance of kernel template {kernel} was not "
                                "found after instantiating it")
    elif template:
        raise FrontendError(f"{C.where(cursor, path)}: kernel {kernel} is not a template, but "
                            f"the launch gives template arguments "
                            f"{', '.join(sorted(template))}", None, "template")
    S.check_ndrange(gsize, lsize, f"{path}: {kernel}")
    builder = CudaKernelBuilder(cursor, path, gsize, lsize, dict(args), dict(sizes or {}),
                                shared_bytes)
    body = _c_names(simplify(builder.build()))
    options = tuple(C.split_build_options(build_options))
    cuda = {"source": source, "device_source": device_text, "device_headers": headers,
            "kernel": kernel, "path": path,
            "build_options": options,
            "template": arguments,
            "grid": tuple(g // b for g, b in zip(gsize, lsize)), "block": lsize,
            "shared_bytes": shared_bytes, "args": tuple(builder.arg_kinds)}
    return S.Schedule(
        family=f"cuda:{kernel}", kernel_name=kernel, params=tuple(builder.params.items()),
        arrays=tuple(b.array for b in builder.buffers.values()),
        local_arrays=tuple(builder.local_arrays), local_size=lsize, global_size=gsize,
        body=body, tile=lsize[0], description=f"{Path(path).name}: {kernel}",
        extra={"cuda": cuda})
