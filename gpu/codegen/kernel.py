"""The product of code generation: one OpenCL kernel ready to build and launch.

`GeneratedKernel` is what :mod:`gpu.codegen.generate` makes from a schedule and what
:mod:`gpu.runtime.launch` builds, validates and launches. It carries no device state.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np


BUFFER_KINDS = ("global_in", "global_out", "global_inout")
"""Kinds of the buffer arguments (:class:`KernelArg`)."""
INT_VECTOR_KINDS = {"int2": (2, True), "uint2": (2, False), "int4": (4, True),
                    "uint4": (4, False)}
"""Kinds of the integer vector arguments, passed by value (a tuple of ints): (components,
signed)."""
SCALAR_KINDS = ("int", "long", "char", "short", "float", *INT_VECTOR_KINDS)
INT_SCALAR_TYPES = {"int": np.int32, "long": np.int64, "char": np.int8, "short": np.int16}
"""The numpy type each integer scalar kind is passed to ``clSetKernelArg`` as."""
"""Kinds of the scalar arguments, passed by value (:class:`KernelArg`)."""


def check_int_vector(kernel: str, name: str, kind: str, value) -> None:
    """Refuse a value of an ``int2``/``int4`` argument ``name`` of ``kernel`` that is not a
    tuple (or list) of its components, each in its type's range.

    Raises:
        TypeError: not as many ints as the kind has components.
        ValueError: a component outside the range of the kind's components.
    """
    import numpy as np
    width, signed = INT_VECTOR_KINDS[kind]
    if not isinstance(value, (tuple, list)) or len(value) != width or \
            any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) for v in value):
        raise TypeError(f"{kernel}: argument {name!r} ({kind}) must be {width} ints, got "
                        f"{value!r}")
    lo, hi = (-(2**31), 2**31 - 1) if signed else (0, 2**32 - 1)
    if any(not lo <= int(v) <= hi for v in value):
        raise ValueError(f"{kernel}: argument {name!r} = {list(value)} does not fit a "
                         f"{kind} ({lo} to {hi} per component)")


def int_vector(kind: str, value):
    """The value of an ``int2``/``int4`` argument as ``clSetKernelArg`` takes it (a numpy
    array of its components, int32 or uint32)."""
    import numpy as np
    return np.asarray(value, dtype=np.int32 if INT_VECTOR_KINDS[kind][1] else np.uint32)


def argument_values(schedule) -> dict:
    """The value of each scalar argument of ``schedule``'s kernel by name: its parameters,
    and each ``int2``/``int4`` argument of a parsed OpenCL C kernel as the tuple of its
    components' parameters."""
    values = dict(schedule.params)
    for name, components in schedule.extra.get("opencl", {}).get("int_vectors", {}).items():
        values[name] = tuple(values[c] for c in components)
    return values
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
    ``long``, ``ulong``, ``size_t``), ``"char"``, ``"short"`` (an 8-bit or 16-bit integer,
    signed or not), ``"float"``
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
