"""The schedule description: the one contract read by the simulator and the code generator.

A *schedule* is a small kernel IR in OpenCL's execution model. It is written once (see
:mod:`simulator.kernels.families`); :mod:`simulator.engine.machine` executes it on numpy arrays and
:mod:`gpu.codegen.generate` renders the very same tree into OpenCL C. Nothing here executes or
renders: these are plain, immutable data classes.

Integer expressions (:class:`IntExpr`) describe indices, bounds and guards. They are built
with Python operators from atoms: :class:`Const` (optionally named, rendered as a
``#define``), :class:`Param` (a runtime ``int`` argument such as ``M``), :func:`local_id`,
:func:`group_id`, :func:`global_id`, :class:`Var` (a loop variable or a :class:`Let`).
Comparisons give :class:`Cond` objects, combined with ``&``, ``|`` and ``~``.
Division and remainder follow C: they truncate toward zero. Values are mathematical
integers (no overflow); :class:`Wrap` converts one to a C integer type of fixed width
(``uint``: modulo 2**32), as OpenCL C's unsigned arithmetic wraps around.

Float expressions (:class:`FloatExpr`) are loads, private variables, constants, ``+``,
``-``, ``*``, the built-ins ``fmax``, ``fmin``, ``fabs``, ``sqrt``, ``exp`` (:class:`FCall`)
and a select on an integer condition (:class:`Select`); each operation counts one FLOP.
A negation ``-x`` (:class:`FNeg`) flips the sign bit and counts none.
Control flow is never data dependent: every condition is an integer :class:`Cond`,
so the traffic of a schedule does not depend on the values in the arrays.

Private arrays (:class:`PrivateArray`, declared by :class:`DeclarePrivateArray`) hold
register tiles such as ``acc[TM][TN]``, one per work-item.

Statements: :class:`Let`, :class:`DeclareFloat`, :class:`DeclarePrivateArray`,
:class:`Assign`, :class:`Accumulate`,
:class:`Store`, :class:`VectorLoad`, :class:`VectorStore`, :class:`If`, :class:`For`,
:class:`Barrier`, :class:`Return`.

Vector accesses (:func:`vload`, :func:`vstore`) move ``width`` (2 or 4) consecutive floats
along an array's last dimension as one ``float2``/``float4`` access, rendered as a
``float4`` pointer cast (one 64/128-bit instruction); its first element's flat index must be
a multiple of ``width`` (the address a multiple of 8/16 bytes), which the simulator checks
(hazard ``misaligned-vector-access``).

Layouts: every array is a flat, row-major buffer of float32 (4 bytes per element).

Errors: :class:`ScheduleError` (a ``ValueError``) when a schedule is built that no OpenCL
device could run as described: a global size that is not a positive multiple of the local
size (:func:`check_ndrange`, the one check the simulator and the device path share), a store
into an array declared as input, an array role other than ``in``/``out``/``inout``.
"""
from __future__ import annotations

import math

from dataclasses import dataclass, field
from typing import Union

FLOAT_BYTES = 4
"""Bytes per element: every array of a schedule holds float32."""

ARRAY_ROLES = ("in", "out", "inout")
"""Roles of a global array: read-only input, output, or input the kernel also writes."""


class ScheduleError(ValueError):
    """A schedule was asked for with a parameter outside its valid range, or describes a
    kernel no device could run as written (see the module docstring)."""


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


# --------------------------------------------------------------------------- integers
class IntExpr:
    """An integer expression (C ``int``). Build with ``+ - * // %`` and comparisons."""

    def __add__(self, other: IntLike) -> IntExpr:
        return BinOp("+", self, as_int(other))

    def __radd__(self, other: IntLike) -> IntExpr:
        return BinOp("+", as_int(other), self)

    def __sub__(self, other: IntLike) -> IntExpr:
        return BinOp("-", self, as_int(other))

    def __rsub__(self, other: IntLike) -> IntExpr:
        return BinOp("-", as_int(other), self)

    def __mul__(self, other: IntLike) -> IntExpr:
        return BinOp("*", self, as_int(other))

    def __rmul__(self, other: IntLike) -> IntExpr:
        return BinOp("*", as_int(other), self)

    def __floordiv__(self, other: IntLike) -> IntExpr:
        return BinOp("/", self, as_int(other))

    def __mod__(self, other: IntLike) -> IntExpr:
        return BinOp("%", self, as_int(other))

    def __lt__(self, other: IntLike) -> Cond:  # type: ignore[override]
        return Compare("<", self, as_int(other))

    def __le__(self, other: IntLike) -> Cond:  # type: ignore[override]
        return Compare("<=", self, as_int(other))

    def __gt__(self, other: IntLike) -> Cond:  # type: ignore[override]
        return Compare(">", self, as_int(other))

    def __ge__(self, other: IntLike) -> Cond:  # type: ignore[override]
        return Compare(">=", self, as_int(other))

    def eq(self, other: IntLike) -> Cond:
        """``self == other`` (``==`` itself keeps Python's identity semantics)."""
        return Compare("==", self, as_int(other))

    def ne(self, other: IntLike) -> Cond:
        """``self != other``."""
        return Compare("!=", self, as_int(other))


IntLike = Union[IntExpr, int]


@dataclass(frozen=True, eq=False)
class Const(IntExpr):
    """An integer constant; with a ``name`` it is rendered as a ``#define`` (e.g. ``TILE``)."""

    value: int
    name: str | None = None


@dataclass(frozen=True, eq=False)
class Param(IntExpr):
    """A runtime ``const int`` kernel argument, e.g. the matrix sizes ``M``, ``K``, ``N``."""

    name: str


@dataclass(frozen=True, eq=False)
class Var(IntExpr):
    """A named integer: a loop variable of :class:`For` or the name bound by :class:`Let`."""

    name: str


@dataclass(frozen=True, eq=False)
class WorkItemId(IntExpr):
    """``get_local_id(dim)`` (kind ``"local"``), ``get_group_id`` (``"group"``) or
    ``get_global_id`` (``"global"``; equals group id × local size + local id, no offset)."""

    kind: str
    dim: int


@dataclass(frozen=True, eq=False)
class BinOp(IntExpr):
    """``left op right`` for op in ``+ - * / %`` (C semantics: ``/`` truncates toward zero).

    A ``/`` or ``%`` whose divisor is 0 for a work-item that executes it is undefined in C;
    the simulator reports it as the hazard ``integer-division-by-zero``.

    Attributes:
        source: for a ``/`` or ``%`` written in OpenCL C, where it is, ``"file:line:column:
            text"`` (``None`` for a schedule built in Python, named by its text), for
            messages. It is no part of the kernel.
    """

    op: str
    left: IntExpr
    right: IntExpr
    source: str | None = None


@dataclass(frozen=True, eq=False)
class Min(IntExpr):
    """``min(left, right)``."""

    left: IntExpr
    right: IntExpr


INT_WIDTHS = (8, 16, 32, 64)
"""Bits of the C integer types a :class:`Wrap` converts to (``char`` ... ``long``)."""


@dataclass(frozen=True, eq=False)
class Wrap(IntExpr):
    """``operand`` converted to C's integer type of ``bits`` bits, ``signed`` or not: the
    value congruent to ``operand`` modulo ``2**bits`` in that type's range (``0`` ..
    ``2**bits - 1`` unsigned, ``-2**(bits - 1)`` .. ``2**(bits - 1) - 1`` signed), as
    OpenCL C's fixed-width integers wrap around (``uint i = 0; i - 1`` is 4294967295).

    For ``bits = 64`` the simulator's 64-bit signed integers hold the operand itself: signed,
    the value is the operand; unsigned (``size_t``, ``ulong``), a negative operand, whose
    wrapped value ``operand + 2**64`` they cannot hold, is refused where a work-item that
    executes the expression computes it (:class:`simulator.ir.static.ExecutionError`
    naming ``source``, the work-item and the value).

    Attributes:
        operand: the expression converted.
        bits: one of :data:`INT_WIDTHS`.
        signed: a signed type (``int``) rather than an unsigned one (``uint``).
        source: where the C expression is, ``"file:line:column: text"`` (``None`` for a
            schedule built in Python), for messages.

    Raises:
        ScheduleError: ``bits`` outside :data:`INT_WIDTHS`.
    """

    operand: IntExpr
    bits: int = 32
    signed: bool = False
    source: str | None = None

    def __post_init__(self) -> None:
        if self.bits not in INT_WIDTHS:
            raise ScheduleError(f"Wrap: bits = {self.bits!r} is not one of "
                                f"{', '.join(map(str, INT_WIDTHS))}")


def wrap(e: IntLike, bits: int = 32, signed: bool = False) -> Wrap:
    """``e`` converted to the C integer type of ``bits`` bits (default ``uint``)."""
    return Wrap(as_int(e), bits, signed)


def as_int(x: IntLike) -> IntExpr:
    """Wrap a Python ``int`` as :class:`Const`; pass an :class:`IntExpr` through.

    Raises:
        TypeError: for anything else (floats are never indices).
    """
    if isinstance(x, IntExpr):
        return x
    if isinstance(x, bool) or not isinstance(x, int):
        raise TypeError(f"integer expression expected, got {x!r} ({type(x).__name__})")
    return Const(x)


def local_id(dim: int) -> WorkItemId:
    """``get_local_id(dim)``."""
    return WorkItemId("local", dim)


def group_id(dim: int) -> WorkItemId:
    """``get_group_id(dim)``."""
    return WorkItemId("group", dim)


def global_id(dim: int) -> WorkItemId:
    """``get_global_id(dim)``."""
    return WorkItemId("global", dim)


def minimum(a: IntLike, b: IntLike) -> Min:
    """``min(a, b)``."""
    return Min(as_int(a), as_int(b))


def ceil_div(a: IntLike, b: IntLike) -> IntExpr:
    """``(a + b - 1) / b`` for non-negative ``a`` and positive ``b``."""
    a, b = as_int(a), as_int(b)
    return (a + b - 1) // b


# ------------------------------------------------------------------------- conditions
class Cond:
    """A boolean condition over integers; combine with ``&``, ``|`` and ``~``."""

    def __and__(self, other: Cond) -> Cond:
        return BoolOp("&&", self, other)

    def __or__(self, other: Cond) -> Cond:
        return BoolOp("||", self, other)

    def __invert__(self) -> Cond:
        return Not(self)


@dataclass(frozen=True, eq=False)
class Compare(Cond):
    """``left op right`` for op in ``< <= > >= == !=``."""

    op: str
    left: IntExpr
    right: IntExpr


@dataclass(frozen=True, eq=False)
class BoolOp(Cond):
    """``left && right`` or ``left || right``."""

    op: str
    left: Cond
    right: Cond


@dataclass(frozen=True, eq=False)
class Not(Cond):
    """``!operand``."""

    operand: Cond


# ----------------------------------------------------------------------------- arrays
def _index_tuple(array, index) -> tuple[IntExpr, ...]:
    idx = index if isinstance(index, tuple) else (index,)
    if len(idx) != len(array.dims):
        raise TypeError(f"{array.name} has {len(array.dims)} dimension(s); "
                        f"indexed with {len(idx)}")
    return tuple(as_int(i) for i in idx)


@dataclass(frozen=True, eq=False)
class GlobalArray:
    """A ``__global float*`` kernel argument: row-major float32, indexed per dimension.

    ``A[row, col]`` is rendered ``A[row * K + col]``; the simulator checks every index
    against its own dimension, so ``col >= K`` is out of bounds even where the flat index
    would still land inside the buffer.

    Attributes:
        name: argument name (``A``, ``B``, ``C``, ``x``, ``y``).
        role: ``"in"`` (read-only input, ``const``; a :class:`Schedule` storing into it is
            refused), ``"out"`` (written by the kernel; its initial contents are undefined)
            or ``"inout"`` (an input the kernel also writes, e.g. an in-place reduction).
        shape: the logical shape in parameter names, e.g. ``("M", "K")``.

    Raises:
        ScheduleError: a role outside :data:`ARRAY_ROLES`.
    """

    name: str
    role: str
    shape: tuple[str, ...]

    def __post_init__(self) -> None:
        if self.role not in ARRAY_ROLES:
            raise ScheduleError(f"global array {self.name!r}: role {self.role!r} is not one of "
                                f"{', '.join(ARRAY_ROLES)}")

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

    def __getitem__(self, index) -> Load:
        return Load(self, _index_tuple(self, index))


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


# ----------------------------------------------------------------------------- floats
class FloatExpr:
    """A float32 expression; ``+``, ``-`` and ``*`` each count one FLOP when executed, a
    unary ``-`` (:class:`FNeg`) none."""

    def __neg__(self) -> FloatExpr:
        return FNeg(self)

    def __add__(self, other: FloatLike) -> FloatExpr:
        return FBinOp("+", self, as_float(other))

    def __radd__(self, other: FloatLike) -> FloatExpr:
        return FBinOp("+", as_float(other), self)

    def __sub__(self, other: FloatLike) -> FloatExpr:
        return FBinOp("-", self, as_float(other))

    def __rsub__(self, other: FloatLike) -> FloatExpr:
        return FBinOp("-", as_float(other), self)

    def __mul__(self, other: FloatLike) -> FloatExpr:
        return FBinOp("*", self, as_float(other))

    def __rmul__(self, other: FloatLike) -> FloatExpr:
        return FBinOp("*", as_float(other), self)


FloatLike = Union[FloatExpr, float]


@dataclass(frozen=True, eq=False)
class Load(FloatExpr):
    """Read ``array[index]``, one index per dimension (one load per executing work-item)."""

    array: Array
    index: tuple[IntExpr, ...]


@dataclass(frozen=True, eq=False)
class FConst(FloatExpr):
    """A float constant."""

    value: float


@dataclass(frozen=True, eq=False)
class Private(FloatExpr):
    """A private (register) float variable declared with :class:`DeclareFloat`."""

    name: str


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


@dataclass(frozen=True, eq=False)
class PrivateElem(FloatExpr):
    """Read ``array[index]`` of a :class:`PrivateArray`, one index per dimension."""

    array: PrivateArray
    index: tuple[IntExpr, ...]


FLOAT_OPS = ("+", "-", "*")
"""Operators of :class:`FBinOp`; each counts one FLOP."""


@dataclass(frozen=True, eq=False)
class FBinOp(FloatExpr):
    """``left op right`` for op in :data:`FLOAT_OPS` (``+ - *``)."""

    op: str
    left: FloatExpr
    right: FloatExpr


@dataclass(frozen=True, eq=False)
class FNeg(FloatExpr):
    """``-operand``: the sign flipped (``-0.0`` for ``0.0``, a NaN stays a NaN), exactly, as
    C's unary minus on a float. Counts no FLOP (a sign-bit flip, usually folded into the
    instruction that uses it). Build with Python's unary ``-``."""

    operand: FloatExpr


FLOAT_FUNCTIONS = {"fmax": 2, "fmin": 2, "fabs": 1, "sqrt": 1, "exp": 1}
"""OpenCL C float built-ins of the IR and their number of arguments (:class:`FCall`)."""

EXACT_FLOAT_FUNCTIONS = frozenset({"fmax", "fmin", "fabs"})
"""Functions whose float32 result is exact (no rounding: IEEE 754 maxNum/minNum/abs)."""

FUNCTION_ERROR_ULPS = {"sqrt": 3, "exp": 3}
"""Largest error of the rounded functions in ulp that OpenCL 1.2 allows (§7.4, Table 7.1,
full profile), used by the tolerance (:mod:`simulator.engine.sum_length`)."""


@dataclass(frozen=True, eq=False)
class FCall(FloatExpr):
    """``fn(args...)``: one of OpenCL C's float built-ins :data:`FLOAT_FUNCTIONS`
    (``fmax(a, b)``, ``fmin(a, b)``, ``fabs(a)``, ``sqrt(a)``, ``exp(a)``). Each call counts
    one FLOP when executed, as ``+`` and ``*`` do. Build with :func:`fmax`, :func:`fmin`,
    :func:`fabs`, :func:`sqrt`, :func:`exp`.

    Raises:
        ScheduleError: an unknown function or the wrong number of arguments.
    """

    fn: str
    args: tuple[FloatExpr, ...]

    def __post_init__(self) -> None:
        arity = FLOAT_FUNCTIONS.get(self.fn)
        if arity is None:
            raise ScheduleError(f"float function {self.fn!r} is not one of "
                                f"{', '.join(FLOAT_FUNCTIONS)}")
        if len(self.args) != arity:
            raise ScheduleError(f"{self.fn} takes {arity} argument(s), got {len(self.args)}")


@dataclass(frozen=True, eq=False)
class Select(FloatExpr):
    """``cond ? then : orelse`` on an integer condition (:class:`Cond`), per work-item; both
    operands are evaluated (their loads counted), as OpenCL's ``select`` does. Counts one
    FLOP. Build with :func:`select`."""

    cond: Cond
    then: FloatExpr
    orelse: FloatExpr


def fmax(a: FloatLike, b: FloatLike) -> FCall:
    """``fmax(a, b)`` (the larger; a NaN operand gives the other)."""
    return FCall("fmax", (as_float(a), as_float(b)))


def fmin(a: FloatLike, b: FloatLike) -> FCall:
    """``fmin(a, b)`` (the smaller; a NaN operand gives the other)."""
    return FCall("fmin", (as_float(a), as_float(b)))


def fabs(a: FloatLike) -> FCall:
    """``fabs(a)``."""
    return FCall("fabs", (as_float(a),))


def sqrt(a: FloatLike) -> FCall:
    """``sqrt(a)`` (NaN for a < 0)."""
    return FCall("sqrt", (as_float(a),))


def exp(a: FloatLike) -> FCall:
    """``exp(a)``."""
    return FCall("exp", (as_float(a),))


def select(cond: Cond, then: FloatLike, orelse: FloatLike) -> Select:
    """``cond ? then : orelse`` with ``cond`` an integer condition.

    Raises:
        TypeError: ``cond`` is not a :class:`Cond`.
    """
    if not isinstance(cond, Cond):
        raise TypeError(f"select needs an integer condition (Cond), got {cond!r}")
    return Select(cond, as_float(then), as_float(orelse))


def float_operands(e: FloatExpr) -> tuple[FloatExpr, ...]:
    """The float sub-expressions of ``e`` (empty for loads, constants and privates)."""
    if isinstance(e, FBinOp):
        return (e.left, e.right)
    if isinstance(e, FNeg):
        return (e.operand,)
    if isinstance(e, FCall):
        return e.args
    if isinstance(e, Select):
        return (e.then, e.orelse)
    return ()


def as_float(x: FloatLike) -> FloatExpr:
    """Wrap a Python number as :class:`FConst`; pass a :class:`FloatExpr` through."""
    if isinstance(x, FloatExpr):
        return x
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return FConst(float(x))
    raise TypeError(f"float expression expected, got {x!r}")


# ------------------------------------------------------------------------- statements
class Stmt:
    """Base class of statements."""


@dataclass(frozen=True, eq=False)
class Let(Stmt):
    """``const int name = value;`` — binds :class:`Var` ``name`` for the rest of the block."""

    name: str
    value: IntExpr

    @property
    def var(self) -> Var:
        return Var(self.name)


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
    """

    array: Array
    index: tuple[IntExpr, ...]
    value: FloatExpr


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


@dataclass(frozen=True, eq=False)
class Return(Stmt):
    """``return;`` — the work-item leaves the kernel (and reaches no later barrier)."""


VECTOR_WIDTHS = (2, 4)
"""Floats per vector access: ``float2`` (8 bytes) and ``float4`` (16 bytes)."""


@dataclass(frozen=True, eq=False)
class VectorLoad(Stmt):
    """``names[w] = array[index + w]`` for w < width, as one vector load.

    ``index`` gives the first element (one expression per dimension); the ``width =
    len(names)`` elements run along the last dimension. Each name is a private float
    declared earlier with :class:`DeclareFloat`. Rendered
    ``v = *(const __global float4*)&A[flat]; a0 = v.x; ...``: one 128-bit (``float4``) or
    64-bit (``float2``) instruction, which needs ``flat`` to be a multiple of ``width``.
    Build with :func:`vload`.
    """

    names: tuple[str, ...]
    array: Array
    index: tuple[IntExpr, ...]

    @property
    def width(self) -> int:
        return len(self.names)


@dataclass(frozen=True, eq=False)
class VectorStore(Stmt):
    """``array[index + w] = values[w]`` for w < width, as one vector store (see
    :class:`VectorLoad`; build with :func:`vstore`)."""

    array: Array
    index: tuple[IntExpr, ...]
    values: tuple[FloatExpr, ...]

    @property
    def width(self) -> int:
        return len(self.values)


def _check_width(width: int) -> None:
    if width not in VECTOR_WIDTHS:
        raise ScheduleError(f"vector width {width} is not one of {VECTOR_WIDTHS}")


def vload(names, array: Array, index) -> VectorLoad:
    """One vector load of ``len(names)`` (2 or 4) floats from ``array[index]`` on into the
    private floats ``names``.

    Raises:
        ScheduleError: a width other than 2 or 4.
    """
    names = tuple(names)
    _check_width(len(names))
    return VectorLoad(names, array, _index_tuple(array, index))


def vstore(array: Array, index, values) -> VectorStore:
    """One vector store of ``values`` (2 or 4 floats) into ``array[index]`` on.

    Raises:
        ScheduleError: a width other than 2 or 4.
    """
    values = tuple(as_float(v) for v in values)
    _check_width(len(values))
    return VectorStore(array, _index_tuple(array, index), values)


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
        params: runtime ``int`` arguments, in signature order, with their values.
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
    params: tuple[tuple[str, int], ...]
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
    found: set[str] = set()
    for s in stmts:
        if isinstance(s, (Store, VectorStore)) and isinstance(s.array, GlobalArray):
            found.add(s.array.name)
        elif isinstance(s, If):
            found |= _stored_arrays(s.then) | _stored_arrays(s.orelse)
        elif isinstance(s, For):
            found |= _stored_arrays(s.body)
    return found


def describe_int(e: IntExpr) -> str:
    """Short text of an integer expression for messages (``(row * K + col)``); not C."""
    if isinstance(e, Const):
        return e.name or str(e.value)
    if isinstance(e, (Param, Var)):
        return e.name
    if isinstance(e, WorkItemId):
        return f"{e.kind}_id({e.dim})"
    if isinstance(e, BinOp):
        return f"({describe_int(e.left)} {e.op} {describe_int(e.right)})"
    if isinstance(e, Min):
        return f"min({describe_int(e.left)}, {describe_int(e.right)})"
    if isinstance(e, Wrap):
        return f"({c_int_type(e.bits, e.signed)})({describe_int(e.operand)})"
    raise TypeError(f"unknown integer expression {e!r}")


def c_int_type(bits: int, signed: bool) -> str:
    """C's name of the integer type of ``bits`` bits (``unsigned int`` for 32, unsigned)."""
    name = {8: "char", 16: "short", 32: "int", 64: "long"}[bits]
    return ("signed " if bits == 8 else "") + name if signed else f"unsigned {name}"


def describe_access(array: Array, index: tuple[IntExpr, ...]) -> str:
    """``name[i, j]`` of one access, for messages and as the identity of its statement."""
    parts = []
    for i in index:
        text = describe_int(i)
        parts.append(text[1:-1] if isinstance(i, BinOp) else text)
    return f"{array.name}[{', '.join(parts)}]"
