"""Half-precision storage: a family's schedule with its matrices and vectors stored as
``half`` (float16, 2 bytes per element) instead of ``float`` (float32, 4 bytes).

Only the storage changes: every global float array the kernel takes as an argument (A, B,
C, x, y) becomes a :class:`~simulator.ir.nodes.GlobalArray` of ``dtype="half"``; its loads
convert the stored float16 to float32 exactly (OpenCL's ``vload_half``), every product and
sum is computed in float32 as before, and its stores round the float32 value to the
nearest float16 (``vstore_half``, round to nearest even). Local memory and private values
stay float32; a kernel sequence's scratch buffers (split-K's partial products) stay
float32 too, so only the final store rounds.

Every address is the flat index times the element's bytes: a sub-group reading 32
consecutive halves touches 64 bytes, one request of 2 sectors where 32 floats make one
request of 4. Load and store counts in elements are those of the float32 schedule.

Storage types on the command line and in the Python API are named by :data:`DTYPES`:
``float32`` (the default) and ``float16``.

Errors: :class:`~simulator.ir.nodes.ScheduleError` for a dtype outside :data:`DTYPES`,
naming it and the choices; :class:`VectorAlignmentError` for a size of a family of vector
accesses that is not a multiple of the vector's elements, whose message names the element
type and the bytes of the alignment.
"""
from __future__ import annotations

import dataclasses

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.nodes import ScheduleError
from tiletraffic.simulator.ir.sequence import is_sequence
from tiletraffic.simulator.ir.visitor import Rebuilder

DTYPES = {"float32": "float", "float16": "half"}
"""Storage type names of the command line and the API -> the IR's element type."""

_NAMES = {v: k for k, v in DTYPES.items()}


class VectorAlignmentError(ScheduleError):
    """A family of vector accesses (``gemm-vectorized``, ``gemm-warp-tiled``) refusing
    ``what`` = ``value``, a size that is not a multiple of ``vector`` elements: each vector
    access of global memory needs an address aligned to its own bytes, ``vector`` elements
    of the storage type ``element`` (``float``: 4 bytes each, ``half``: 2); ``local``: the
    size governs vector reads of local memory instead, which holds floats whatever the
    storage. :meth:`stored_as` gives the same refusal for another storage type (unchanged
    for a ``local`` one), :meth:`within` led by the family that asked for the kernel."""

    def __init__(self, family: str, what: str, value: int, vector: int,
                 element: str = "float", context: str = "", local: bool = False):
        self.family, self.what, self.value = family, what, value
        self.vector, self.element, self.context = vector, element, context
        self.local = local
        bytes_each = S.HALF_BYTES if element == "half" and not local else S.FLOAT_BYTES
        where = (f"vector reads of {vector} floats from local memory" if local else
                 f"vector accesses of {vector} {element} elements")
        super().__init__(
            f"{context}{family} needs {what} to be a multiple of {vector} ({where} need "
            f"{vector * bytes_each}-byte aligned addresses), got {what} = {value}; use "
            "gemm-register-blocked for other sizes")

    def stored_as(self, dtype: str) -> "VectorAlignmentError":
        """The same refusal for storage ``dtype`` (a name of :data:`DTYPES`; a ``local``
        refusal does not depend on it)."""
        return VectorAlignmentError(self.family, self.what, self.value, self.vector,
                                    "float" if self.local else DTYPES[check_dtype(dtype)],
                                    self.context, self.local)

    def within(self, context: str) -> "VectorAlignmentError":
        """The same refusal, its message led by ``context`` (the family that built this
        one's kernel)."""
        return VectorAlignmentError(self.family, self.what, self.value, self.vector,
                                    self.element, context + self.context, self.local)


def check_dtype(dtype) -> str:
    """``dtype`` (``float32`` or ``float16``) checked; returns it.

    Raises:
        ScheduleError: any other value, named with the choices.
    """
    if dtype not in DTYPES:
        raise ScheduleError(f"dtype {dtype!r} is not one of {', '.join(DTYPES)}")
    return dtype


def dtype_of(schedule) -> str:
    """``float16`` where any global array of ``schedule`` (a schedule or a kernel
    sequence) stores ``half``, else ``float32``."""
    return "float16" if any(a.dtype == "half" for a in schedule.arrays) else "float32"


def dtype_fields(schedule) -> dict:
    """``{"dtype": "float16"}`` for a schedule of half storage, for results; ``{}`` for
    float32."""
    return {"dtype": "float16"} if dtype_of(schedule) == "float16" else {}


def storage_text(schedule) -> str:
    """``"  dtype=float16"`` for a schedule of half storage (for a header line), ``""``
    for float32."""
    return "  dtype=float16" if dtype_of(schedule) == "float16" else ""


def with_storage(schedule, dtype: str):
    """``schedule`` (a :class:`~simulator.ir.nodes.Schedule` or a
    :class:`~simulator.ir.sequence.KernelSequence`) with its float arguments stored as
    ``dtype`` (module docstring); ``schedule`` itself for ``float32``.

    Raises:
        ScheduleError: an unknown ``dtype``.
    """
    element = DTYPES[check_dtype(dtype)]
    if element == "float":
        return schedule
    names = {a.name for a in schedule.arrays if a.dtype == "float"}
    if not is_sequence(schedule):
        return _kernel(schedule, names, element)
    kernels = tuple(_kernel(k, names, element) for k in schedule.kernels)
    return dataclasses.replace(
        schedule, kernels=kernels,
        arrays=tuple(_array(a, names, element) for a in schedule.arrays),
        description=_description(schedule.description, dtype),
        extra={**schedule.extra, "dtype": dtype})


def _description(text: str, dtype: str) -> str:
    return f"{text}; {dtype} storage"


def _array(array: S.GlobalArray, names: set, element: str) -> S.GlobalArray:
    if array.name in names and array.dtype == "float":
        return dataclasses.replace(array, dtype=element)
    return array


def _kernel(schedule: S.Schedule, names: set, element: str) -> S.Schedule:
    arrays = {a.name: _array(a, names, element) for a in schedule.arrays}
    rebuild = _Rebuild(arrays)
    return dataclasses.replace(
        schedule, arrays=tuple(arrays[a.name] for a in schedule.arrays),
        body=tuple(rebuild(s) for s in schedule.body),
        description=_description(schedule.description, _NAMES[element]),
        extra={**schedule.extra, "dtype": _NAMES[element]})


class _Rebuild(Rebuilder):
    """The IR rebuilt with every global array replaced by the one of ``arrays`` of its
    name (statements and expressions that name none are kept as they are)."""

    def __init__(self, arrays: dict):
        super().__init__()
        self.arrays = arrays

    def leaf(self, node):
        if isinstance(node, S.GlobalArray):
            return self.arrays.get(node.name, node)
        if isinstance(node, (S.LocalArray, S.PrivateArray)):
            return node
        return None
