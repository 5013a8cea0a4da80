"""The expression nodes of the IR (:mod:`simulator.ir.nodes`, which re-exports every name
here): integer expressions, conditions and float expressions, and the base classes of the
four kinds of node, :class:`IntExpr`, :class:`Cond`, :class:`FloatExpr` and :class:`Stmt`
(the statements themselves are in :mod:`simulator.ir.nodes`), which
:mod:`simulator.ir.visitor` traverses.

Integer expressions (:class:`IntExpr`) describe indices, bounds and guards. They are built
with Python operators from atoms: :class:`Const` (optionally named, rendered as a
``#define``), :class:`Param` (a runtime ``int`` argument such as ``M``), :func:`local_id`,
:func:`group_id`, :func:`global_id`, :class:`Var` (a loop variable, a ``Let`` or a
``DeclareInt``), combined by :class:`BinOp` (``+ - * / %``, the bitwise ``& | ^`` and the
shifts ``<< >>``), :class:`Min` and :class:`IntSelect` (``c ? a : b``). Comparisons give
:class:`Cond` objects, combined with ``&``, ``|`` and ``~``. Division and remainder follow
C: they truncate toward zero. Values are mathematical integers (no overflow; the bitwise
operators act on their two's complement, as Python's do); :class:`Wrap` converts one to a
C integer type of fixed width (``uint``: modulo 2**32), as OpenCL C's unsigned arithmetic
wraps around.

Float expressions (:class:`FloatExpr`) are loads (:class:`Load` of a global or local array,
:class:`PrivateElem` of a private array), private variables, constants, runtime ``float``
arguments (:class:`FloatParam`), integers converted to float (:class:`IntToFloat`, no
FLOP), ``+``, ``-``, ``*``, ``/``, the built-ins of :data:`FLOAT_FUNCTIONS` (``fmax``,
``fmin``, ``fabs``, ``sqrt``, ``rsqrt``, ``exp``, ``log``, ``tanh``, ...: :class:`FCall`)
and a select on an integer condition
(:class:`Select`); each operation counts one FLOP. A negation ``-x`` (:class:`FNeg`) flips
the sign bit and counts none. A condition may compare floats (:class:`FloatCompare`) or
classify one (:class:`FloatTest`: ``isfinite``, ``isnan``, ...); on floats other than the
launch's, the branch depends on the data (:func:`is_data_condition`).

Every node is an immutable data class compared by identity (``eq=False``: ``==`` on an
integer expression is Python's identity; use :meth:`IntExpr.eq`).

Errors: :class:`ScheduleError` (a ``ValueError``) for a :class:`Wrap` of an unknown width,
an :class:`FCall` of an unknown function or with the wrong number of arguments, a
:class:`FloatCompare` of an unknown operator or a :class:`FloatTest` of an unknown test.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Union


class ScheduleError(ValueError):
    """A schedule was asked for with a parameter outside its valid range, or describes a
    kernel no device could run as written (:mod:`simulator.ir.nodes` lists the cases)."""


# --------------------------------------------------------------------------- integers
class IntExpr:
    """An integer expression (C ``int``). Build with ``+ - * // % & | ^ << >> ~`` and
    comparisons."""

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

    def __and__(self, other: IntLike) -> IntExpr:
        return BinOp("&", self, as_int(other))

    def __or__(self, other: IntLike) -> IntExpr:
        return BinOp("|", self, as_int(other))

    def __xor__(self, other: IntLike) -> IntExpr:
        return BinOp("^", self, as_int(other))

    def __lshift__(self, other: IntLike) -> IntExpr:
        return BinOp("<<", self, as_int(other))

    def __rshift__(self, other: IntLike) -> IntExpr:
        return BinOp(">>", self, as_int(other))

    def __invert__(self) -> IntExpr:
        """``~self``, C's bitwise complement: ``-1 - self`` (two's complement)."""
        return BinOp("-", Const(-1), self)

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
    """A named integer: a loop variable of :class:`For`, the name bound by :class:`Let` or
    an integer declared by :class:`DeclareInt` (assigned by :class:`AssignInt`)."""

    name: str


@dataclass(frozen=True, eq=False)
class WorkItemId(IntExpr):
    """``get_local_id(dim)`` (kind ``"local"``), ``get_group_id`` (``"group"``) or
    ``get_global_id`` (``"global"``; equals group id × local size + local id, no offset)."""

    kind: str
    dim: int


INT_OPS = ("+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>")
"""Operators of :class:`BinOp`."""

BITWISE_OPS = ("&", "|", "^", "<<", ">>")
"""The bitwise operators and shifts of :data:`INT_OPS`: not affine, so the analyses that
prove forms of integer expressions (closed forms, work-group classes, K extrapolation)
decline an expression that applies one to a value that varies."""

SHIFT_BITS = 64
"""Shift counts of ``<<`` and ``>>`` are ``0 .. SHIFT_BITS - 1``."""


@dataclass(frozen=True, eq=False)
class BinOp(IntExpr):
    """``left op right`` for op in :data:`INT_OPS` with C semantics: ``/`` truncates toward
    zero, ``%`` takes the dividend's sign; ``&``, ``|`` and ``^`` act on the two's
    complement of the mathematical values (so a result is congruent to C's modulo
    ``2**bits`` wherever the operands are); ``left << right`` is ``left * 2**right`` and
    ``left >> right`` is ``floor(left / 2**right)`` (C's arithmetic shift of a signed value,
    its logical shift of an unsigned one, whose value is not negative), for a count
    ``right`` of ``0 .. 63`` (:data:`SHIFT_BITS`; a front end masks a count it cannot bound
    as its language does: OpenCL C takes it modulo the left operand's width).

    A ``/`` or ``%`` whose divisor is 0 for a work-item that executes it is undefined in C;
    the simulator reports it as the hazard ``integer-division-by-zero``. A shift count
    outside ``0 .. 63`` is refused where it is computed
    (:class:`simulator.ir.static.ExecutionError`).

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


@dataclass(frozen=True, eq=False)
class IntSelect(IntExpr):
    """``cond ? then : orelse`` of integers, per work-item: C evaluates only the operand
    chosen (a division by zero in the other is no hazard). Build with :func:`int_select`."""

    cond: Cond
    then: IntExpr
    orelse: IntExpr


INT_WIDTHS = (8, 16, 32, 64)
"""Bits of the C integer types a :class:`Wrap` converts to (``char`` ... ``long``)."""


def held_integers(values):
    """``values`` (a sequence of integers, or a numpy array of them) flat as a read-only
    int64 numpy array (itself where it is one already): an integer buffer's contents."""
    import numpy as np
    if isinstance(values, np.ndarray) and values.dtype == np.int64 and values.ndim == 1 \
            and not values.flags.writeable:
        return values
    held = np.array(values, dtype=np.int64).reshape(-1)
    held.setflags(write=False)
    return held


@dataclass(frozen=True, eq=False)
class IntLoad(IntExpr):
    """An element of an integer buffer (a ``GlobalArray`` of element type ``int`` or
    ``uint``, 4 bytes), read by each work-item that evaluates it: a global-memory load
    counted as a float load is (requests and sectors by address), whose value the engine
    reads from the buffer's contents (``GlobalArray.values``). Build with ``ind[k]`` on
    such an array. A schedule whose loop bounds, conditions or indices read one has
    control flow and addresses that depend on the data: the engine's accelerators decline
    it."""

    array: object
    index: tuple[IntExpr, ...]
    source: str | None = None


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


def int_select(cond: Cond, then: IntLike, orelse: IntLike) -> IntSelect:
    """``cond ? then : orelse`` of integers.

    Raises:
        TypeError: ``cond`` is not a :class:`Cond`.
    """
    if not isinstance(cond, Cond):
        raise TypeError(f"int_select needs a condition (Cond), got {cond!r}")
    return IntSelect(cond, as_int(then), as_int(orelse))


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


# ----------------------------------------------------------------------------- floats
class FloatExpr:
    """A float32 expression; ``+``, ``-``, ``*`` and ``/`` each count one FLOP when
    executed, a unary ``-`` (:class:`FNeg`) none."""

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

    def __truediv__(self, other: FloatLike) -> FloatExpr:
        return FBinOp("/", self, as_float(other))

    def __rtruediv__(self, other: FloatLike) -> FloatExpr:
        return FBinOp("/", as_float(other), self)


FloatLike = Union[FloatExpr, float]


@dataclass(frozen=True, eq=False)
class Load(FloatExpr):
    """Read ``array[index]``, one index per dimension (one load per executing work-item).

    Attributes:
        source: for a load written in OpenCL C, the access in the source's own names and
            where it is, ``"tile[lx, ly + r] at k.cl:11:32"`` (followed, for a load of an
            inlined helper function, by the calls it was inlined through); ``None`` for a
            schedule built in Python, whose accesses are named by their IR text. For
            messages: it is no part of the kernel (rendered and executed the same).
    """

    array: Array
    index: tuple[IntExpr, ...]
    source: str | None = None


@dataclass(frozen=True, eq=False)
class FConst(FloatExpr):
    """A float constant."""

    value: float


@dataclass(frozen=True, eq=False)
class FloatParam(FloatExpr):
    """A runtime ``const float`` kernel argument (``alpha`` of ``C = alpha * A @ B``); its
    value is the schedule's parameter of that name (a Python ``float``, rounded to float32
    where the kernel reads it). Reading it counts no FLOP."""

    name: str


@dataclass(frozen=True, eq=False)
class Private(FloatExpr):
    """A private (register) float variable declared with :class:`DeclareFloat`."""

    name: str


@dataclass(frozen=True, eq=False)
class PrivateElem(FloatExpr):
    """Read ``array[index]`` of a :class:`PrivateArray`, one index per dimension."""

    array: PrivateArray
    index: tuple[IntExpr, ...]


@dataclass(frozen=True, eq=False)
class IntToFloat(FloatExpr):
    """``(float)value``: the integer ``value`` of each work-item converted to float32,
    rounded to nearest (ties to even) as C's conversion does; exact for ``|value| <=
    2**24``. Counts no FLOP and no memory traffic."""

    value: IntExpr


FLOAT_OPS = ("+", "-", "*", "/")
"""Operators of :class:`FBinOp`; each counts one FLOP."""


@dataclass(frozen=True, eq=False)
class FBinOp(FloatExpr):
    """``left op right`` for op in :data:`FLOAT_OPS` (``+ - * /``), in float32 as IEEE 754
    rounds it (``x / 0.0`` is an infinity or a NaN, as on the device)."""

    op: str
    left: FloatExpr
    right: FloatExpr


@dataclass(frozen=True, eq=False)
class FNeg(FloatExpr):
    """``-operand``: the sign flipped (``-0.0`` for ``0.0``, a NaN stays a NaN), exactly, as
    C's unary minus on a float. Counts no FLOP (a sign-bit flip, usually folded into the
    instruction that uses it). Build with Python's unary ``-``."""

    operand: FloatExpr


FLOAT_FUNCTIONS = {"fmax": 2, "fmin": 2, "fabs": 1, "sqrt": 1, "rsqrt": 1, "exp": 1,
                   "exp2": 1, "log": 1, "log2": 1, "pow": 2, "sin": 1, "cos": 1, "tanh": 1,
                   "erf": 1}
"""OpenCL C float built-ins of the IR and their number of arguments (:class:`FCall`)."""

EXACT_FLOAT_FUNCTIONS = frozenset({"fmax", "fmin", "fabs"})
"""Functions whose float32 result is exact (no rounding: IEEE 754 maxNum/minNum/abs)."""

FUNCTION_ERROR_ULPS = {"sqrt": 3, "rsqrt": 2, "exp": 3, "exp2": 3, "log": 3, "log2": 3,
                       "pow": 16, "sin": 4, "cos": 4, "tanh": 5, "erf": 16}
"""Largest error of the rounded functions in ulp that OpenCL 1.2 allows a single-precision
built-in (§7.4, Table 7.1, full profile: sqrt <= 3, rsqrt <= 2, exp and exp2 <= 3, log and
log2 <= 3, pow <= 16, sin and cos <= 4, tanh <= 5, erf <= 16 ulp), used by the tolerance
(:mod:`simulator.engine.sum_length`)."""


@dataclass(frozen=True, eq=False)
class FCall(FloatExpr):
    """``fn(args...)``: one of OpenCL C's float built-ins :data:`FLOAT_FUNCTIONS`
    (``fmax(a, b)``, ``fmin(a, b)``, ``fabs(a)``, ``sqrt(a)``, ``rsqrt(a)`` (``1 /
    sqrt(a)``), ``exp(a)``, ``exp2(a)``, ``log(a)``, ``log2(a)``, ``pow(a, b)``, ``sin(a)``,
    ``cos(a)``, ``tanh(a)``, ``erf(a)``), as OpenCL C defines them on float32. Each call
    counts one FLOP when executed, as ``+`` and ``*`` do. Build with :func:`fmax`,
    :func:`fmin`, :func:`fabs`, :func:`sqrt`, :func:`exp` or ``FCall(name, args)``.

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


def is_launch_float(e: FloatExpr) -> bool:
    """Whether ``e`` is a float of the launch, the same for every work-item: a constant, a
    ``float`` argument or a negation of one."""
    while isinstance(e, FNeg):
        e = e.operand
    return isinstance(e, (FConst, FloatParam))


@dataclass(frozen=True, eq=False)
class FloatCompare(Cond):
    """``left op right`` for op in ``< <= > >= == !=`` on two float expressions, compared
    as float32 (a NaN compares unequal to everything), per work-item. Evaluating the
    comparison counts no FLOP (its operands' operations count theirs, their loads are
    loads). Where both operands are floats of the launch (:func:`is_launch_float`:
    ``beta != 0.0f``) its truth is the same for every work-item; otherwise a branch on it
    depends on the data (:func:`branches_on_data`): its counts are those of the data
    executed, and every accelerator declines the schedule.

    Raises:
        ScheduleError: an unknown operator.
    """

    op: str
    left: FloatExpr
    right: FloatExpr

    def __post_init__(self) -> None:
        if self.op not in ("<", "<=", ">", ">=", "==", "!="):
            raise ScheduleError(f"float comparison operator {self.op!r} is not one of "
                                "< <= > >= == !=")

    @property
    def on_launch_floats(self) -> bool:
        """Both operands are floats of the launch: one truth for every work-item."""
        return is_launch_float(self.left) and is_launch_float(self.right)


FLOAT_TESTS = ("isfinite", "isnan", "isinf", "isnormal", "signbit")
"""OpenCL C's float classification built-ins a :class:`FloatTest` applies."""


@dataclass(frozen=True, eq=False)
class FloatTest(Cond):
    """``fn(operand)`` for ``fn`` in :data:`FLOAT_TESTS` (``isfinite(x)``, ``isnan(x)``,
    ``isinf(x)``, ``isnormal(x)``, ``signbit(x)``) on a float32 value, per work-item, true
    where OpenCL C's built-in returns non-zero. Counts no FLOP. A branch on it depends on
    the data (:func:`branches_on_data`).

    Raises:
        ScheduleError: an unknown test.
    """

    fn: str
    operand: FloatExpr

    def __post_init__(self) -> None:
        if self.fn not in FLOAT_TESTS:
            raise ScheduleError(f"float test {self.fn!r} is not one of "
                                f"{', '.join(FLOAT_TESTS)}")


def is_data_condition(c) -> bool:
    """Whether ``c`` is a condition on floats other than the launch's (a
    :class:`FloatTest`, or a :class:`FloatCompare` not :attr:`~FloatCompare.on_launch_floats`):
    its truth differs from work-item to work-item with the data."""
    return isinstance(c, FloatTest) or (isinstance(c, FloatCompare) and
                                        not c.on_launch_floats)


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
    """The float sub-expressions of ``e`` (empty for loads, constants, float parameters,
    privates and integers converted to float)."""
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


# ------------------------------------------------------------------- text for messages
def describe_int(e: IntExpr, names: Mapping[str, str] | None = None) -> str:
    """Short text of an integer expression for messages (``(row * K + col)``); not C.
    ``names``: the name to show for a parameter or variable of the IR (a front end's
    source names, where it renamed them to keep the IR's names unique)."""
    if isinstance(e, Const):
        return e.name or str(e.value)
    if isinstance(e, (Param, Var)):
        return names.get(e.name, e.name) if names else e.name
    if isinstance(e, WorkItemId):
        return f"{e.kind}_id({e.dim})"
    if isinstance(e, BinOp):
        return f"({describe_int(e.left, names)} {e.op} {describe_int(e.right, names)})"
    if isinstance(e, Min):
        return f"min({describe_int(e.left, names)}, {describe_int(e.right, names)})"
    if isinstance(e, Wrap):
        return f"({c_int_type(e.bits, e.signed)})({describe_int(e.operand, names)})"
    if isinstance(e, IntSelect):
        return (f"({describe_cond(e.cond, names)} ? {describe_int(e.then, names)} : "
                f"{describe_int(e.orelse, names)})")
    if isinstance(e, IntLoad):
        name = names.get(e.array.name, e.array.name) if names else e.array.name
        return f"{name}[{', '.join(describe_int(i, names) for i in e.index)}]"
    raise TypeError(f"unknown integer expression {e!r}")


def describe_cond(c: Cond, names: Mapping[str, str] | None = None) -> str:
    """Short text of a condition for messages (``i + 1 < N``, ``isfinite(x[...])``); not
    C. A comparison's operands go without their outer parentheses where C's precedence
    reads them the same (arithmetic and shifts bind tighter than a comparison)."""
    if isinstance(c, Compare):
        return f"{_operand(c.left, names)} {c.op} {_operand(c.right, names)}"
    if isinstance(c, BoolOp):
        return f"({describe_cond(c.left, names)} {c.op} {describe_cond(c.right, names)})"
    if isinstance(c, Not):
        return f"!({describe_cond(c.operand, names)})"
    if isinstance(c, FloatCompare):
        return f"{describe_float(c.left)} {c.op} {describe_float(c.right)}"
    if isinstance(c, FloatTest):
        return f"{c.fn}({describe_float(c.operand)})"
    raise TypeError(f"unknown condition {c!r}")


def _operand(e: IntExpr, names: Mapping[str, str] | None) -> str:
    text = describe_int(e, names)
    bare = isinstance(e, BinOp) and e.op not in ("&", "|", "^")
    return text[1:-1] if bare else text


def describe_float(e: FloatExpr) -> str:
    """Short text of a float of a condition: a launch float (a constant, an argument,
    negated) by its value or name, a private by its name, a load by its array, anything
    else by its kind."""
    if isinstance(e, FNeg):
        return f"-{describe_float(e.operand)}"
    if isinstance(e, (FloatParam, Private)):
        return e.name
    if isinstance(e, FConst):
        return repr(float(e.value))
    if isinstance(e, Load):
        return f"{e.array.name}[...]"
    return f"<{type(e).__name__}>"


def c_int_type(bits: int, signed: bool) -> str:
    """C's name of the integer type of ``bits`` bits (``unsigned int`` for 32, unsigned)."""
    name = {8: "char", 16: "short", 32: "int", 64: "long"}[bits]
    return ("signed " if bits == 8 else "") + name if signed else f"unsigned {name}"


# ---------------------------------------------------------------------- statements' base
class Stmt:
    """Base class of statements (:mod:`simulator.ir.nodes` defines them)."""
