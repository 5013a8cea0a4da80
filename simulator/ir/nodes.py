"""The schedule description: the one contract read by the simulator and the code generator.

A *schedule* is a small kernel IR in OpenCL's execution model. It is written once (see
:mod:`simulator.kernels.families`); :mod:`simulator.engine.machine` executes it on numpy arrays and
:mod:`gpu.codegen.generate` renders the very same tree into OpenCL C. Nothing here executes or
renders: these are plain, immutable data classes.

This module defines the arrays, the statements and :class:`Schedule`, and re-exports every
name of :mod:`simulator.ir.expressions` (``__all__`` lists the IR's public names), so the
whole IR is importable from here.

Integer expressions (:class:`IntExpr`) describe indices, bounds and guards. They are built
with Python operators from atoms: :class:`Const` (optionally named, rendered as a
``#define``), :class:`Param` (a runtime ``int`` argument such as ``M``), :func:`local_id`,
:func:`group_id`, :func:`global_id`, :class:`Var` (a loop variable, a :class:`Let` or a
:class:`DeclareInt`), combined by :class:`BinOp` (``+ - * / %``, bitwise ``& | ^``, shifts
``<< >>``), :class:`Min` and :class:`IntSelect` (``c ? a : b``). Comparisons give
:class:`Cond` objects, combined with ``&``, ``|`` and ``~``. Division and remainder follow
C: they truncate toward zero. Values are mathematical integers (no overflow);
:class:`Wrap` converts one to a C integer type of fixed width (``uint``: modulo 2**32), as
OpenCL C's unsigned arithmetic wraps around.

Float expressions (:class:`FloatExpr`) are loads, private variables, constants, runtime
``float`` arguments (:class:`FloatParam`), ``+``, ``-``, ``*``, ``/``, the built-ins of
:data:`FLOAT_FUNCTIONS` (``fmax``, ``sqrt``, ``exp``, ``log``, ``tanh``, ...: :class:`FCall`)
and a select on an integer
condition (:class:`Select`); each operation counts one FLOP.
A negation ``-x`` (:class:`FNeg`) flips the sign bit and counts none.
Control flow may depend on the data: a condition is an integer :class:`Cond` (possibly of
integers loaded from an integer buffer, :class:`IntLoad`), a comparison of floats
(:class:`FloatCompare`) or a float test (:class:`FloatTest`). Where a schedule reads an
integer buffer or branches on floats other than the launch's (:func:`depends_on_data`), its
traffic depends on the values in the arrays: its counts are those of the data executed.

Private arrays (:class:`PrivateArray`, declared by :class:`DeclarePrivateArray`) hold
register tiles such as ``acc[TM][TN]``, one per work-item.

Statements: :class:`Let`, :class:`DeclareInt`, :class:`AssignInt`, :class:`DeclareFloat`,
:class:`DeclarePrivateArray`, :class:`Assign`, :class:`Accumulate`,
:class:`Store`, :class:`VectorLoad`, :class:`VectorStore`, :class:`If`, :class:`For`,
:class:`While`, :class:`Break`, :class:`Continue`, :class:`Barrier`, :class:`Return`,
:class:`Shuffle` (a float of another work-item of the sub-group, no memory traffic).

Integers: a :class:`Let` binds its name once; an integer declared with :class:`DeclareInt`
is assigned any number of times with :class:`AssignInt` (``k = k + 1`` for ``k++``), per
work-item: only the work-items that execute an assignment change their value. Loops:
:class:`For` counts a variable up by a positive step; :class:`While` loops while an integer
condition holds (``while``, ``do ... while``, and ``for`` loops of any other kind, with its
``update``), and :class:`Break` and :class:`Continue` leave the innermost :class:`While`
or its iteration.

Vector accesses (:func:`vload`, :func:`vstore`) move ``width`` (2 or 4) consecutive floats
along an array's last dimension as one ``float2``/``float4`` access, rendered as a
``float4`` pointer cast (one 64/128-bit instruction); its first element's flat index must be
a multiple of ``width`` (the address a multiple of 8/16 bytes), which the simulator checks
(hazard ``misaligned-vector-access``).

Layouts: every array is a flat, row-major buffer. A global float array stores ``float``
(4 bytes per element, the default) or ``half`` (``dtype="half"``, 2 bytes per element: the
value is computed in float32, read with ``vload_half`` exactly and rounded to the nearest
float16 when stored with ``vstore_half``); every byte address is the flat index times
the array's :attr:`GlobalArray.element_bytes`. Local and private arrays hold ``float``.

Errors: :class:`ScheduleError` (a ``ValueError``) when a schedule is built that no OpenCL
device could run as described: a global size that is not a positive multiple of the local
size (:func:`check_ndrange`, the one check the simulator and the device path share), a store
into an array declared as input, an array role other than ``in``/``out``/``inout`` (and, from
:mod:`simulator.ir.expressions`, a :class:`Wrap` of an unknown width or an :class:`FCall` of
an unknown function or with the wrong number of arguments).
"""
from __future__ import annotations

import math

from dataclasses import dataclass, field
from typing import Mapping, Union

from tiletraffic.simulator.ir.expressions import (
    BITWISE_OPS, EXACT_FLOAT_FUNCTIONS, FLOAT_FUNCTIONS, FLOAT_OPS, FUNCTION_ERROR_ULPS,
    INT_OPS, INT_WIDTHS, SHIFT_BITS, BinOp, IntSelect, describe_cond, int_select,
    BoolOp, Compare, Cond, Const, FBinOp, FCall, FConst, FloatExpr, FloatLike, FNeg, IntExpr,
    IntLike, IntLoad, Load, Min, Not, Param, Private, PrivateElem, ScheduleError, Select, Stmt, Var,
    WorkItemId, Wrap, as_float, as_int, c_int_type, ceil_div, describe_int, exp, fabs,
    float_operands, fmax, fmin, global_id, group_id, local_id, minimum, select, sqrt, wrap)
from tiletraffic.simulator.ir.expressions import (FLOAT_TESTS, FloatCompare, FloatParam,
                                                  FloatTest, IntToFloat, is_data_condition,
                                                  held_integers, is_launch_float)
from tiletraffic.simulator.ir.visitor import remembered, walk, walk_statements

__all__ = [
    # integer expressions and conditions (simulator.ir.expressions)
    "IntExpr", "IntLike", "Const", "Param", "Var", "WorkItemId", "BinOp", "Min", "Wrap",
    "IntSelect", "int_select", "IntLoad", "INT_ELEMENT_TYPES", "reads_int_buffer", "INT_OPS", "BITWISE_OPS", "SHIFT_BITS", "describe_cond",
    "INT_WIDTHS", "wrap", "as_int", "local_id", "group_id", "global_id", "minimum",
    "ceil_div", "Cond", "Compare", "BoolOp", "Not", "describe_int", "c_int_type",
    # float expressions (simulator.ir.expressions)
    "FloatExpr", "FloatLike", "Load", "FConst", "Private", "PrivateElem", "FBinOp", "FNeg",
    "FCall", "Select", "FLOAT_OPS", "FLOAT_FUNCTIONS", "EXACT_FLOAT_FUNCTIONS",
    "FUNCTION_ERROR_ULPS", "fmax", "fmin", "fabs", "sqrt", "exp", "select",
    "float_operands", "as_float", "FloatParam", "IntToFloat", "FloatCompare",
    "FloatTest", "FLOAT_TESTS", "is_data_condition", "is_launch_float", "branches_on_data",
    "depends_on_data",
    # errors, launch geometry, arrays
    "ScheduleError", "ndrange_problems", "check_ndrange", "FLOAT_BYTES", "ARRAY_ROLES",
    "HALF_BYTES", "STORAGE_TYPES", "element_bytes",
    "GlobalArray", "LocalArray", "PrivateArray", "Array", "describe_access",
    # statements
    "Stmt", "Let", "DeclareInt", "AssignInt", "DeclareFloat", "DeclarePrivateArray", "Assign", "Accumulate", "Store",
    "If", "For", "While", "Break", "Continue", "Barrier", "Return", "VectorLoad", "VectorStore", "VECTOR_WIDTHS",
    "Shuffle", "SHUFFLE_MODES",
    "assign_elem", "accumulate_elem", "vload", "vstore", "store", "block",
    # the kernel
    "Schedule",
]

FLOAT_BYTES = 4
"""Bytes per element of a ``float`` array (local and private arrays, and global ones by
default)."""

HALF_BYTES = 2
"""Bytes per element of a global array of ``half`` storage."""

STORAGE_TYPES = ("float", "half")
"""Storage types of a global float array: ``float`` (float32) and ``half`` (float16
storage, float32 arithmetic)."""

INT_ELEMENT_TYPES = ("int", "uint")
"""Element types of an integer buffer (4 bytes each, as a float's)."""


def element_bytes(array) -> int:
    """Bytes per element of ``array`` (a global, local or private array): 2 for ``half``
    storage, else 4."""
    return HALF_BYTES if getattr(array, "dtype", "float") == "half" else FLOAT_BYTES

ARRAY_ROLES = ("in", "out", "inout")
"""Roles of a global array: read-only input, output, or input the kernel also writes."""


def ndrange_problems(global_size, local_size) -> list[str]:
    """What is wrong with an NDRange, one sentence per problem (empty when it is valid).

    OpenCL 1.2 (``clEnqueueNDRangeKernel``, CL_INVALID_WORK_GROUP_SIZE) requires every
    ``global_size[d]`` to be a positive multiple of ``local_size[d] >= 1``; the simulator
    executes ``global_size[d] // local_size[d]`` work-groups, which would silently floor a
    partial one. Used by :class:`Schedule` and by ``gpu.runtime.launch.check_launch_limits``, so
    both paths refuse the same launches with the same words.
    """
    gsize, lsize = tuple(global_size), tuple(local_size)
    problems = []
    if len(gsize) != len(lsize) or not lsize:
        return [f"global size ({' x '.join(map(str, gsize))}) and local size "
                f"({' x '.join(map(str, lsize))}) must have the same number of dimensions, "
                "at least one"]
    for d, (g, l) in enumerate(zip(gsize, lsize)):
        if l < 1:
            problems.append(f"local_size[{d}] = {l} must be at least 1")
        elif g < 1 or g % l:
            up = max(1, -(-g // l)) * l
            problems.append(
                f"global_size[{d}] = {g} is not a positive multiple of local_size[{d}] = {l} "
                f"(round it up to {up} and guard the extra work-items)")
    return problems


def check_ndrange(global_size, local_size, what: str = "schedule") -> None:
    """Raise :class:`ScheduleError` listing :func:`ndrange_problems` (global size
    ``global_size`` and local size ``local_size`` both named), if any."""
    problems = ndrange_problems(global_size, local_size)
    if problems:
        raise ScheduleError(
            f"{what}: NDRange {' x '.join(map(str, global_size))} with work-group "
            f"{' x '.join(map(str, local_size))}: " + "; ".join(problems))


# ----------------------------------------------------------------------------- arrays
def _index_tuple(array, index) -> tuple[IntExpr, ...]:
    idx = index if isinstance(index, tuple) else (index,)
    if len(idx) != len(array.dims):
        raise TypeError(f"{array.name} has {len(array.dims)} dimension(s); "
                        f"indexed with {len(idx)}")
    return tuple(as_int(i) for i in idx)


@dataclass(frozen=True, eq=False)
class GlobalArray:
    """A ``__global float*`` (or ``half*``, ``int*``, ``uint*``) kernel argument: row-major,
    indexed per dimension.

    ``A[row, col]`` is rendered ``A[row * K + col]``; the simulator checks every index
    against its own dimension, so ``col >= K`` is out of bounds even where the flat index
    would still land inside the buffer.

    Attributes:
        name: argument name (``A``, ``B``, ``C``, ``x``, ``y``).
        role: ``"in"`` (read-only input, ``const``; a :class:`Schedule` storing into it is
            refused), ``"out"`` (written by the kernel; its initial contents are undefined)
            or ``"inout"`` (an input the kernel also writes, e.g. an in-place reduction).
        shape: the logical shape in parameter names, e.g. ``("M", "K")``.
        dtype: ``float`` (default), ``half`` (float16 storage, :data:`STORAGE_TYPES`), or
            ``int``/``uint`` (an input whose contents are ``values``).
        values: an integer buffer's contents, flat (held as a read-only int64 numpy array).

    Raises:
        ScheduleError: a role outside :data:`ARRAY_ROLES`, an unknown ``dtype``.
    """

    name: str
    role: str
    shape: tuple[str, ...]
    dtype: str = "float"
    values: object = None

    def __post_init__(self) -> None:
        if self.values is not None:
            object.__setattr__(self, "values", held_integers(self.values))
        if self.role not in ARRAY_ROLES:
            raise ScheduleError(f"global array {self.name!r}: role {self.role!r} is not one of "
                                f"{', '.join(ARRAY_ROLES)}")
        if self.dtype not in STORAGE_TYPES + INT_ELEMENT_TYPES:
            raise ScheduleError(f"global array {self.name!r}: element type {self.dtype!r} is "
                                f"not one of {', '.join(STORAGE_TYPES + INT_ELEMENT_TYPES)}")
        if self.is_int and (self.role != "in" or self.values is None):
            raise ScheduleError(f"global array {self.name!r} of {self.dtype}: an integer buffer "
                                "is an input (role 'in') with its contents given (values)")

    @property
    def is_int(self) -> bool:
        """The buffer holds ``int`` or ``uint`` (read with :class:`IntLoad`)."""
        return self.dtype in INT_ELEMENT_TYPES

    @property
    def is_half(self) -> bool:
        """The buffer stores ``half`` (float16 values, read and written as float32)."""
        return self.dtype == "half"

    @property
    def element_bytes(self) -> int:
        """Bytes per element: 2 for ``half``, 4 for ``float``, ``int`` and ``uint``."""
        return HALF_BYTES if self.dtype == "half" else FLOAT_BYTES

    @property
    def is_input(self) -> bool:
        """The kernel reads its initial contents (role ``in`` or ``inout``)."""
        return self.role in ("in", "inout")

    @property
    def is_output(self) -> bool:
        """The kernel writes it (role ``out`` or ``inout``)."""
        return self.role in ("out", "inout")

    @property
    def dims(self) -> tuple[IntExpr, ...]:
        """Extent of each dimension, as parameter expressions."""
        return tuple(Param(s) for s in self.shape)

    @property
    def size(self) -> IntExpr:
        """Number of elements, as an expression of the parameters."""
        size: IntExpr = self.dims[0]
        for d in self.dims[1:]:
            size = size * d
        return size

    def __getitem__(self, index) -> Load | IntLoad:
        if self.is_int:
            return IntLoad(self, _index_tuple(self, index))
        return Load(self, _index_tuple(self, index))


@remembered
def reads_int_buffer(node) -> bool:
    """Whether the statements or expression ``node`` read an integer buffer
    (:class:`IntLoad`) anywhere."""
    nodes = node if isinstance(node, (tuple, list)) else (node,)
    return any(isinstance(n, IntLoad) for s in nodes for n in walk(s))


@remembered
def branches_on_data(node) -> bool:
    """Whether the statements or expression ``node`` hold a condition on floats other than
    the launch's (:func:`is_data_condition`) anywhere."""
    nodes = node if isinstance(node, (tuple, list)) else (node,)
    return any(is_data_condition(n) for s in nodes for n in walk(s))


def depends_on_data(node) -> bool:
    """Whether the traffic of the statements or expression ``node`` may depend on the
    values in the arrays: they read an integer buffer (:func:`reads_int_buffer`) or branch
    on floats (:func:`branches_on_data`)."""
    return reads_int_buffer(node) or branches_on_data(node)


@dataclass(frozen=True, eq=False)
class LocalArray:
    """A ``__local float name[d0][d1]...`` array of one work-group; dims are constants."""

    name: str
    dims: tuple[Const, ...]

    @property
    def size(self) -> int:
        """Elements of the array."""
        n = 1
        for d in self.dims:
            n *= d.value
        return n

    @property
    def size_bytes(self) -> int:
        """Bytes of local memory this array takes in one work-group."""
        return self.size * FLOAT_BYTES

    def __getitem__(self, index) -> Load:
        return Load(self, _index_tuple(self, index))


Array = Union[GlobalArray, LocalArray]


@dataclass(frozen=True, eq=False)
class PrivateArray:
    """``float name[d0][d1]...`` in one work-item's private memory (a register tile such
    as ``acc[TM][TN]``); dims are constants. Declare it with :class:`DeclarePrivateArray`;
    ``acc[i, j]`` reads an element (:class:`PrivateElem`); :class:`Assign` and
    :class:`Accumulate` with ``index`` write one. Indices are integer expressions, usually
    constants or loop variables (the simulator checks them against the dims:
    ``out-of-bounds``)."""

    name: str
    dims: tuple[Const, ...]

    @property
    def size(self) -> int:
        """Elements of the array."""
        return math.prod(d.value for d in self.dims)

    def __getitem__(self, index) -> PrivateElem:
        return PrivateElem(self, _index_tuple(self, index))


# ------------------------------------------------------------------------- statements
@dataclass(frozen=True, eq=False)
class Let(Stmt):
    """``const int name = value;`` — binds :class:`Var` ``name`` for the rest of the block."""

    name: str
    value: IntExpr

    @property
    def var(self) -> Var:
        return Var(self.name)


@dataclass(frozen=True, eq=False)
class DeclareInt(Stmt):
    """``int name = value;`` (``value=None``: ``int name;``, no value yet) — an integer of
    every work-item, read as :class:`Var` ``name``, that :class:`AssignInt` may assign any
    number of times. A work-item reading it before it has a value is the hazard
    ``uninitialized-private-read``."""

    name: str
    value: IntExpr | None = None

    @property
    def var(self) -> Var:
        return Var(self.name)


@dataclass(frozen=True, eq=False)
class AssignInt(Stmt):
    """``name = value;`` for an integer declared with :class:`DeclareInt`: each work-item
    that executes it takes its own ``value``; the others keep theirs. C's compound
    assignments and ``++``/``--`` are assignments of the new value (``k = k + 1``)."""

    name: str
    value: IntExpr


@dataclass(frozen=True, eq=False)
class DeclareFloat(Stmt):
    """``float name = init;`` — a private accumulator (``init=None``: ``float name;``,
    uninitialized)."""

    name: str
    init: float | None = 0.0

    @property
    def ref(self) -> Private:
        return Private(self.name)


@dataclass(frozen=True, eq=False)
class DeclarePrivateArray(Stmt):
    """``float name[d0]...= {init, ...};`` — a private array of every work-item (``init=None``:
    uninitialized, its reads before an assignment are reported)."""

    array: PrivateArray
    init: float | None = 0.0

    def __post_init__(self) -> None:
        """Raises ScheduleError: an ``init`` other than 0.0 or None (C's ``= {0.0f}``
        zero-fills every element; other values would fill only the first)."""
        if self.init not in (None, 0.0):
            raise ScheduleError(f"private array {self.array.name}: init must be 0.0 or None, "
                                f"got {self.init!r}")


@dataclass(frozen=True, eq=False)
class Assign(Stmt):
    """``name = value;`` for a private float, or ``name[index] = value;`` for an element
    of a :class:`PrivateArray` called ``name`` (``index``: one expression per dimension)."""

    name: str
    value: FloatExpr
    index: tuple[IntExpr, ...] = ()


@dataclass(frozen=True, eq=False)
class Accumulate(Stmt):
    """``name += value;`` for a private float or ``name[index] += value;`` for a private
    array element (the ``+=`` counts one FLOP)."""

    name: str
    value: FloatExpr
    index: tuple[IntExpr, ...] = ()


def assign_elem(target: PrivateElem, value: FloatLike) -> Assign:
    """``array[index] = value`` for a private array element ``target = array[index]``."""
    return Assign(target.array.name, as_float(value), target.index)


def accumulate_elem(target: PrivateElem, value: FloatLike) -> Accumulate:
    """``array[index] += value`` for a private array element ``target = array[index]``."""
    return Accumulate(target.array.name, as_float(value), target.index)


@dataclass(frozen=True, eq=False)
class Store(Stmt):
    """``array[index] = value;``, one index per dimension (one store per executing work-item).

    Build with :func:`store` to get the index checked against the array's dimensions.
    ``source``: for a store written in OpenCL C, the access in the source's names and where
    it is, as :class:`Load`'s; ``None`` for a schedule built in Python. For messages only.
    """

    array: Array
    index: tuple[IntExpr, ...]
    value: FloatExpr
    source: str | None = None


@dataclass(frozen=True, eq=False)
class If(Stmt):
    """``if (cond) { then } else { orelse }`` — divergent per work-item."""

    cond: Cond
    then: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...] = ()


@dataclass(frozen=True, eq=False)
class For(Stmt):
    """``for (int var = start; var < stop; var += step) { body }`` with ``step > 0``.

    ``start`` and ``stop`` may differ between work-items (e.g. ``start = get_local_id(0)``).
    """

    var: str
    start: IntExpr
    stop: IntExpr
    step: IntExpr
    body: tuple[Stmt, ...]


@dataclass(frozen=True, eq=False)
class While(Stmt):
    """A loop on an integer condition: each iteration runs ``body`` then ``update``, while
    ``cond`` holds; ``cond`` is tested before every iteration, except the first where
    ``do_while`` (C's ``do { body } while (cond);``).

    ``while (c) { body }`` is ``While(c, body)``; ``for (init; c; u) { body }`` is ``init``
    followed by ``While(c, body, u)``. Each work-item iterates on its own: it leaves the
    loop where ``cond`` is false for it, or where it executes :class:`Break`; a
    :class:`Continue` ends its iteration's ``body`` (its ``update`` still runs).

    Attributes:
        cond: the loop condition (integers only, as every condition of the IR).
        body: the statements of one iteration.
        update: :class:`AssignInt` statements run after ``body`` in every iteration
            (a ``for`` loop's update, ``i = i + 1, j = j + 2``), also after a ``continue``.
        do_while: the first iteration runs without testing ``cond``.
        source: where the loop is in the kernel's source text, for messages
            (``file:line:column``); ``None`` for a schedule built in Python. It is no part
            of the kernel.

    Raises:
        ScheduleError: an ``update`` statement that is not an :class:`AssignInt`.
    """

    cond: Cond
    body: tuple[Stmt, ...]
    update: tuple[Stmt, ...] = ()
    do_while: bool = False
    source: str | None = None

    def __post_init__(self) -> None:
        for s in self.update:
            if not isinstance(s, AssignInt):
                raise ScheduleError(f"a While loop's update holds {s!r}: its update holds "
                                    "AssignInt statements only")


@dataclass(frozen=True, eq=False)
class Break(Stmt):
    """``break;`` — the work-item leaves the innermost :class:`While` loop around it (not
    allowed in a :class:`For` loop's body)."""


@dataclass(frozen=True, eq=False)
class Continue(Stmt):
    """``continue;`` — the work-item ends this iteration's body of the innermost
    :class:`While` loop around it; the loop's ``update`` and condition follow."""


@dataclass(frozen=True, eq=False)
class Barrier(Stmt):
    """``barrier(CLK_LOCAL_MEM_FENCE)``: every work-item of the work-group must arrive.

    The fence orders local memory only: global accesses of different work-items of one
    work-group on either side of it stay unordered (OpenCL 1.2 §6.12.8), so a store to
    global memory before it and another work-item's load after it race. With
    ``global_fence`` it is ``barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)`` and also
    orders global memory within the work-group. Nothing orders global memory between
    work-groups.

    ``source`` says where the barrier is in the kernel's source text, for messages: ``file:
    line:column``, followed for a barrier of an inlined helper function by the calls it was
    inlined through (``k.cl:5:5 in sync_tile, called at k.cl:20:9``); ``None`` for a
    schedule built in Python, whose barriers are named by their position among the
    schedule's barriers. It is no part of the kernel: the code generator renders, and the
    engine executes, a barrier the same with or without it.
    """

    global_fence: bool = False
    source: str | None = None


SHUFFLE_MODES = ("index", "up", "down", "xor")
"""How a :class:`Shuffle` picks the lane it reads."""


@dataclass(frozen=True, eq=False)
class Shuffle(Stmt):
    """``name = value`` of another lane of the work-item's sub-group segment (CUDA's warp
    shuffles ``__shfl_sync``, ``__shfl_up_sync``, ``__shfl_down_sync``,
    ``__shfl_xor_sync``): no memory traffic.

    Lanes are the work-group's work-items in the order of their flattened local id
    (dimension 0 fastest), cut into segments of ``width`` consecutive lanes (a power of
    two, at most the device's sub-group size). A work-item at position ``p`` of its segment
    reads ``value`` of the segment's lane ``q``: ``mode`` ``index``: ``q = lane mod width``;
    ``up``: ``q = p - lane``; ``down``: ``q = p + lane``; ``xor``: ``q = p ^ lane``; where
    ``q`` falls outside the segment it keeps its own ``value``. Every lane of the segment
    evaluates ``value`` (the FLOPs of ``value`` count per work-item, the shuffle none).
    ``name`` is a private float (:class:`DeclareFloat`); ``source`` says where the shuffle
    is in the kernel's source text, for messages.
    """

    name: str
    value: FloatExpr
    mode: str
    lane: IntExpr
    width: int = 32
    source: str | None = None

    def __post_init__(self):
        if self.mode not in SHUFFLE_MODES:
            raise ScheduleError(f"shuffle mode {self.mode!r} is not one of "
                                f"{', '.join(SHUFFLE_MODES)}")
        if not isinstance(self.width, int) or self.width < 1 or \
                self.width & (self.width - 1):
            raise ScheduleError(f"shuffle width {self.width!r} is not a power of two")


@dataclass(frozen=True, eq=False)
class Return(Stmt):
    """``return;`` — the work-item leaves the kernel (and reaches no later barrier)."""


VECTOR_WIDTHS = (2, 4, 8)
"""Floats per vector access: ``float2`` (8 bytes) and ``float4`` (16 bytes)."""


@dataclass(frozen=True, eq=False)
class VectorLoad(Stmt):
    """``names[w] = array[index + w]`` for w < width, as one vector load.

    ``index`` gives the first element (one expression per dimension); the ``width =
    len(names)`` elements run along the last dimension. Each name is a private float
    declared earlier with :class:`DeclareFloat`.

    ``aligned=True`` (a pointer cast, a ``float4`` buffer element): rendered
    ``v = *(const __global float4*)&A[flat]; a0 = v.x; ...``, one 128-bit (``float4``) or
    64-bit (``float2``) access, which needs ``flat`` to be a multiple of ``width`` (else the
    hazard ``misaligned-vector-access``). ``aligned=False``: ``vload4(0, &A[flat])``, which
    OpenCL requires to be aligned to the element only (OpenCL 1.2 §6.12.7), so any ``flat``
    is right. Build with :func:`vload`. ``source``: as :class:`Load`'s (for messages only).
    """

    names: tuple[str, ...]
    array: Array
    index: tuple[IntExpr, ...]
    aligned: bool = True
    source: str | None = None

    @property
    def width(self) -> int:
        return len(self.names)


@dataclass(frozen=True, eq=False)
class VectorStore(Stmt):
    """``array[index + w] = values[w]`` for w < width, as one vector store (see
    :class:`VectorLoad` for ``aligned``: ``vstore4`` is ``aligned=False``; build with
    :func:`vstore`). ``source``: as :class:`Load`'s (for messages only)."""

    array: Array
    index: tuple[IntExpr, ...]
    values: tuple[FloatExpr, ...]
    aligned: bool = True
    source: str | None = None

    @property
    def width(self) -> int:
        return len(self.values)


def _check_width(width: int) -> None:
    if width not in VECTOR_WIDTHS:
        raise ScheduleError(f"vector width {width} is not one of {VECTOR_WIDTHS}")


def vload(names, array: Array, index, aligned: bool = True) -> VectorLoad:
    """One vector load of ``len(names)`` (2 or 4) floats from ``array[index]`` on into the
    private floats ``names`` (``aligned``: see :class:`VectorLoad`).

    Raises:
        ScheduleError: a width other than 2 or 4.
    """
    names = tuple(names)
    _check_width(len(names))
    return VectorLoad(names, array, _index_tuple(array, index), aligned)


def vstore(array: Array, index, values, aligned: bool = True) -> VectorStore:
    """One vector store of ``values`` (2 or 4 floats) into ``array[index]`` on
    (``aligned``: see :class:`VectorLoad`).

    Raises:
        ScheduleError: a width other than 2 or 4.
    """
    values = tuple(as_float(v) for v in values)
    _check_width(len(values))
    return VectorStore(array, _index_tuple(array, index), values, aligned)


def store(array: Array, index, value: FloatLike) -> Store:
    """``array[index] = value`` with ``index`` one expression per dimension."""
    return Store(array, _index_tuple(array, index), as_float(value))


def block(*stmts: Stmt | list | tuple) -> tuple[Stmt, ...]:
    """Flatten nested lists/tuples of statements into one tuple."""
    out: list[Stmt] = []
    for s in stmts:
        if isinstance(s, (list, tuple)):
            out.extend(block(*s))
        elif isinstance(s, Stmt):
            out.append(s)
        else:
            raise TypeError(f"statement expected, got {s!r}")
    return tuple(out)


# --------------------------------------------------------------------------- schedule
@dataclass(frozen=True, eq=False)
class Schedule:
    """One kernel in OpenCL's execution model, ready to simulate or to render.

    Attributes:
        family: schedule family, e.g. ``"gemm-tiled"``.
        kernel_name: C identifier of the kernel.
        params: runtime scalar arguments, in signature order, with their values: an ``int``
            for a ``const int`` argument (:class:`Param`, the arrays' extents), a ``float``
            for a ``const float`` one (:class:`FloatParam`).
        arrays: global buffers, in signature order.
        local_arrays: ``__local`` arrays of one work-group.
        local_size: work-group size per NDRange dimension (work-items).
        global_size: NDRange size per dimension (work-items), a positive multiple of
            ``local_size`` (checked: :func:`check_ndrange`).
        body: the kernel body.
        tile: the schedule's tile parameter (tile width B for GEMM, rows per work-group for
            matrix-vector), reported with the results.
        description: one line for users.
        extra: the family's parameters, reported with results.
        max_registers: the register budget of a work-item (at most this many registers
            per work-item in the compiled kernel: :mod:`simulator.model.registers`), or None (the
            compiler's choice).
    """

    family: str
    kernel_name: str
    params: tuple[tuple[str, int | float], ...]
    arrays: tuple[GlobalArray, ...]
    local_arrays: tuple[LocalArray, ...]
    local_size: tuple[int, ...]
    global_size: tuple[int, ...]
    body: tuple[Stmt, ...]
    tile: int
    description: str = ""
    extra: dict = field(default_factory=dict)
    max_registers: int | None = None

    def __post_init__(self) -> None:
        """Refuse what no device could run as described.

        Raises:
            ScheduleError: the global size is not a positive multiple of the local size
                (both named), a statement stores into an array declared as input, or
                ``max_registers`` is not a positive integer.
        """
        check_ndrange(self.global_size, self.local_size, self.family)
        if self.max_registers is not None and (
                isinstance(self.max_registers, bool) or not isinstance(self.max_registers, int)
                or self.max_registers < 1):
            raise ScheduleError(f"{self.family}: max_registers must be a positive integer, "
                                f"got {self.max_registers!r}")
        stored = _stored_arrays(self.body)
        for a in self.arrays:
            if a.role == "in" and a.name in stored:
                raise ScheduleError(
                    f"{self.family}: stores into global array {a.name!r}, which is declared as "
                    "an input (role 'in', rendered const); declare it 'inout' if the kernel "
                    "writes it")

    @property
    def param_values(self) -> dict[str, int]:
        return dict(self.params)

    @property
    def work_group_items(self) -> int:
        """Work-items per work-group (product of ``local_size``)."""
        return math.prod(self.local_size)

    @property
    def num_groups(self) -> tuple[int, ...]:
        """Work-groups per NDRange dimension."""
        return tuple(g // l for g, l in zip(self.global_size, self.local_size))

    @property
    def work_groups(self) -> int:
        """Work-groups launched."""
        n = 1
        for g in self.num_groups:
            n *= g
        return n

    @property
    def local_mem_bytes(self) -> int:
        """Local memory one work-group declares, in bytes."""
        return sum(a.size_bytes for a in self.local_arrays)

    def array(self, name: str) -> GlobalArray:
        """The global array called ``name``; KeyError naming the known ones otherwise."""
        for a in self.arrays:
            if a.name == name:
                return a
        raise KeyError(f"schedule {self.family} has no array {name!r}; "
                       f"it has {[a.name for a in self.arrays]}")


def _stored_arrays(stmts) -> set[str]:
    """Names of the global arrays a block of statements stores into (any depth)."""
    return {s.array.name for s in walk_statements(stmts)
            if isinstance(s, (Store, VectorStore)) and isinstance(s.array, GlobalArray)}


def describe_access(array: Array, index: tuple[IntExpr, ...],
                    names: Mapping[str, str] | None = None) -> str:
    """``name[i, j]`` of one access, for messages and as the identity of its statement;
    ``names``: the name to show for an array, parameter or variable of the IR (as
    :func:`describe_int`'s)."""
    parts = []
    for i in index:
        text = describe_int(i, names)
        parts.append(text[1:-1] if isinstance(i, BinOp) else text)
    name = names.get(array.name, array.name) if names else array.name
    return f"{name}[{', '.join(parts)}]"
