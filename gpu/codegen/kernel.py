"""The product of code generation: one OpenCL kernel ready to build and launch.

`GeneratedKernel` is what :mod:`gpu.codegen.generate` makes from a schedule and what
:mod:`gpu.runtime.launch` builds, validates and launches. It carries no device state.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field


BUFFER_KINDS = ("global_in", "global_out", "global_inout")
"""Kinds of the buffer arguments (:class:`KernelArg`)."""
SCALAR_KINDS = ("int", "long", "float")
"""Kinds of the scalar arguments, passed by value (:class:`KernelArg`)."""
LOCAL_KIND = "local"
"""Kind of a ``__local float *`` argument: local memory the host sizes (:class:`KernelArg`)."""
NULL_KIND = "null"
"""Kind of a ``__global`` pointer argument passed as ``NULL`` (:class:`KernelArg`)."""
ALL_KINDS = BUFFER_KINDS + SCALAR_KINDS + (LOCAL_KIND, NULL_KIND)
"""Every kind of :class:`KernelArg`."""


@dataclass(frozen=True)
class KernelArg:
    """One kernel argument, in signature order.

    kind: ``"global_in"`` (``__global const float*``), ``"global_inout"`` (``__global
    float*`` holding an input the kernel also writes), ``"global_out"``
    (``__global float*``, written by the kernel), ``"int"`` (``const int``), ``"long"`` (a 64-bit integer:
    ``long``, ``ulong``, ``size_t``), ``"float"``
    (``const float``), ``"local"`` (``__local float*``: ``local_bytes`` of local memory per
    work-group, set at launch as ``clSetKernelArg(kernel, i, local_bytes, NULL)`` does) or
    ``"null"`` (a ``__global`` pointer passed as ``NULL``).
    """

    name: str
    kind: str
    local_bytes: int = 0


@dataclass(frozen=True)
class GeneratedKernel:
    """OpenCL C source of one schedule instance plus its launch geometry.

    Attributes:
        name: kernel function name in ``source``.
        source: complete OpenCL C source (one ``__kernel``).
        args: kernel arguments in signature order.
        global_size: NDRange global size per dimension (work-items), already a
            multiple of ``local_size`` in every dimension. Dimension 0 runs over
            columns of C (or rows of y for matrix-vector).
        local_size: work-group size per dimension (work-items).
        local_mem_bytes: bytes of ``__local`` memory one work-group declares.
        build_options: options passed to ``clBuildProgram``.
        schedule_name: the schedule family, e.g. ``"gemm-tiled"``.
        max_registers: the register budget of a work-item (``Schedule.max_registers``),
            applied at build time by :func:`gpu.runtime.launch.build_program`; None: the
            compiler's choice.
    """

    name: str
    source: str
    args: tuple[KernelArg, ...]
    global_size: tuple[int, ...]
    local_size: tuple[int, ...]
    local_mem_bytes: int
    build_options: tuple[str, ...] = field(default_factory=tuple)
    schedule_name: str = ""
    max_registers: int | None = None

    @property
    def work_group_items(self) -> int:
        """Work-items per work-group (product of ``local_size``)."""
        return math.prod(self.local_size)
