"""Static facts of the IR (:mod:`simulator.ir.nodes`), known without executing anything.

* integer arithmetic with C's semantics (:data:`INT_OPS`, :data:`CMP_OPS`: ``/`` truncates
  toward zero and ``%`` takes the dividend's sign, C11 §6.5.5; :func:`divide`: 0 where the
  divisor is 0, which C leaves undefined; :func:`wrap_int`: conversion to a fixed-width type,
  C11 §6.3.1.3, two's complement), on Python ints and numpy arrays alike;
* integer expressions of constants and parameters (:func:`eval_static`), and of constants,
  parameters and known loop variables (:func:`static_int`);
* row-major flat indices of private array elements (:func:`flat_index`);
* which loops the engine runs in blocks of iterations (:func:`is_vectorizable`).

The engine (:mod:`simulator.engine.machine`) and its accelerators (:mod:`simulator.engine.accelerators`)
share these.
"""
from __future__ import annotations

import math

import numpy as np

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.visitor import walk, walk_statements


class ExecutionError(ValueError):
    """The schedule cannot be executed as written: an integer division or remainder by zero
    in an expression of constants and parameters that the launch needs before anything runs
    (:func:`eval_static`: an array's size), a loop whose step is not positive (it would never
    end) or one of more iterations than the simulator runs
    (:data:`simulator.engine.control.LOOP_TRIPS_LIMIT`; a while loop
    :func:`simulator.engine.control.while_trips_limit`), or an unsigned 64-bit value the simulator's
    integers cannot hold (:class:`simulator.ir.nodes.Wrap`). The message names the
    operation, the loop or the expression. (A division by zero that a work-item executes is
    the hazard ``integer-division-by-zero`` instead: :func:`divide`.)"""


def wrap_int(value, bits: int, signed: bool):
    """``value`` (a Python int or an int64 array) converted to C's integer type of ``bits``
    < 64 bits: the value congruent modulo ``2**bits`` in the type's range."""
    mask = (1 << bits) - 1
    if signed:
        half = 1 << (bits - 1)
        return ((value + half) & mask) - half
    return value & mask


def c_div(a, b):
    """C integer division (truncates toward zero).

    Raises:
        ExecutionError: ``b`` is a scalar 0 (the engine divides with :func:`divide`, after
            checking which executing work-items divide by zero).
    """
    if np.ndim(b) == 0 and b == 0:
        raise ExecutionError("an integer division or remainder by zero: the divisor is 0 for "
                             "every work-item")
    with np.errstate(divide="ignore"):
        return _c_div(a, b)


def _c_div(a, b):
    q = np.floor_divide(a, b)
    fix = (np.remainder(a, b) != 0) & ((np.asarray(a) < 0) != (np.asarray(b) < 0))
    return q + fix


def c_mod(a, b):
    """C remainder: ``a - c_div(a, b) * b`` (the sign of ``a``)."""
    return a - c_div(a, b) * b


def divide(op: str, a, b):
    """``a / b`` (``op`` ``"/"``) or ``a % b`` (``"%"``) with C's semantics where ``b`` is not
    0, and 0 where it is: the value the engine goes on with after reporting a work-item that
    divides by zero (the hazard ``integer-division-by-zero``; C leaves it undefined), as
    Oclgrind's interpreter gives 0 there too."""
    zero = np.equal(b, 0)
    if not np.any(zero):
        return INT_OPS[op](a, b)
    if np.ndim(b) == 0:
        return np.zeros(np.shape(a), np.int64) if np.ndim(a) else 0
    value = INT_OPS[op](a, np.where(zero, 1, b))
    return np.where(zero, 0, value)


def _shift_count(b):
    """``b``, checked to be a shift count of ``0 .. SHIFT_BITS - 1``.

    Raises:
        ExecutionError: a count outside that range."""
    bad = np.logical_or(np.less(b, 0), np.greater_equal(b, S.SHIFT_BITS))
    if np.any(bad):
        value = b if np.ndim(b) == 0 else np.asarray(b)[np.nonzero(bad)][0]
        raise ExecutionError(f"a shift by {int(value)}: shift counts are 0 to "
                             f"{S.SHIFT_BITS - 1}")
    return b


def c_shl(a, b):
    """``a << b``: ``a * 2**b`` (the count checked by :func:`_shift_count`)."""
    b = _shift_count(b)
    if isinstance(a, int) and isinstance(b, int):
        return a << b
    return np.left_shift(a, b, dtype=np.int64)


def c_shr(a, b):
    """``a >> b``: ``floor(a / 2**b)``, C's arithmetic shift (the count checked)."""
    b = _shift_count(b)
    if isinstance(a, int) and isinstance(b, int):
        return a >> b
    return np.right_shift(a, b, dtype=np.int64)


def _bitwise(python_op, numpy_op):
    def op(a, b):
        if isinstance(a, int) and isinstance(b, int):
            return python_op(a, b)
        return numpy_op(a, b, dtype=np.int64)
    return op


INT_OPS = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": c_div, "%": c_mod,
           "&": _bitwise(lambda a, b: a & b, np.bitwise_and),
           "|": _bitwise(lambda a, b: a | b, np.bitwise_or),
           "^": _bitwise(lambda a, b: a ^ b, np.bitwise_xor), "<<": c_shl, ">>": c_shr}
"""The IR's integer operators (:class:`simulator.ir.nodes.BinOp`): C's semantics on
mathematical integers, the bitwise ones on their two's complement."""


def trunc_div(a, b):
    """C's ``a / b`` of two Python numbers, ``b`` not 0 (truncated toward zero); an
    infinite operand (an unknown bound) gives an infinite quotient, or 0 for a finite one
    over an infinite divisor."""
    if math.isinf(a) or math.isinf(b):
        q = a / b
        return q if math.isinf(q) else 0
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _bound_product(a, b):
    """``a * b`` of two bounds, 0 times an infinite bound 0."""
    return 0 if a == 0 or b == 0 else a * b


def _bitwise_bounds(op: str, left: tuple, right: tuple) -> tuple:
    """Bounds of ``l op r`` for the bitwise operators and shifts (:func:`int_op_bounds`)."""
    (a, b), (c, d) = left, right
    if op in ("<<", ">>"):
        c, d = max(c, 0), min(d, S.SHIFT_BITS - 1)    # counts outside are refused
        if c > d:
            return 0, 0
        if op == "<<":
            ends = [x * 2 ** y for x in (a, b) for y in (c, d)]
        else:
            ends = [x if math.isinf(x) else x // 2 ** y for x in (a, b) for y in (c, d)]
        return min(ends), max(ends)
    if any(math.isinf(x) for x in (a, b, c, d)):
        if op == "&" and (a >= 0 or c >= 0):
            return 0, min(x for x, low in ((b, a), (d, c)) if low >= 0)
        return (0 if a >= 0 and c >= 0 else -math.inf), math.inf
    top = 2 ** max(int(abs(x)).bit_length() for x in (a, b, c, d))
    if op == "&" and (a >= 0 or c >= 0):       # at most the non-negative operand
        return 0, min(x for x, low in ((b, a), (d, c)) if low >= 0)
    if a >= 0 and c >= 0:
        return (max(a, c) if op == "|" else 0), top - 1
    return -top, top - 1


def int_op_bounds(op: str, left: tuple, right: tuple) -> tuple:
    """Bounds ``(lo, hi)`` of ``l op r`` (op in :data:`simulator.ir.nodes.INT_OPS`, C's
    semantics) for ``l`` within ``left = (a, b)`` and ``r`` within ``right = (c, d)``; a
    bound may be ``math.inf`` (unknown). A divisor range holding 0 gives the bounds of the
    nonzero divisors' quotients (``|l / r|`` and ``|l % r|`` are at most ``|l|``); the
    bitwise operators give the range of the bits their operands span."""
    if op in S.BITWISE_OPS:
        return _bitwise_bounds(op, left, right)
    (a, b), (c, d) = left, right
    if op == "+":
        return a + c, b + d
    if op == "-":
        return a - d, b - c
    if op == "*":
        corners = [_bound_product(x, y) for x in (a, b) for y in (c, d)]
        return min(corners), max(corners)
    most = max(abs(a), abs(b))
    if op == "/":
        if c > 0 or d < 0:
            corners = [trunc_div(x, y) for x in (a, b) for y in (c, d)]
            return min(corners), max(corners)
        return -most, most
    bound = min(most, max(abs(c), abs(d)) - 1)      # %: less than |divisor|
    return (0 if a >= 0 else -bound), (0 if b <= 0 else bound)


def apply_int_op(e: S.BinOp, left, right):
    """``left e.op right`` (:data:`INT_OPS`), ``left`` and ``right`` the values of ``e``'s
    operands.

    Raises:
        ExecutionError: a division or remainder by a scalar divisor 0 (static evaluation:
            :func:`eval_static`); the message names the expression and its divisor
            (``i / D``, ``D``).
    """
    try:
        return INT_OPS[e.op](left, right)
    except ExecutionError as err:
        if e.op not in ("/", "%"):
            raise ExecutionError(f"{S.describe_int(e)[1:-1]}: {err}") from None
        what = "division" if e.op == "/" else "remainder"
        text, divisor = S.describe_int(e)[1:-1], S.describe_int(e.right)
        raise ExecutionError(f"an integer {what} by zero: {text}" + (
            "" if isinstance(e.right, S.Const) else
            f", whose divisor {divisor} is 0")) from None

CMP_OPS = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
           "==": np.equal, "!=": np.not_equal}
"""The IR's comparisons (:class:`simulator.ir.nodes.Compare`)."""


def eval_static(e: S.IntExpr, params: dict[str, int],
                variables: dict[str, int] | None = None):
    """Value of an expression of constants and parameters only (and of the integer
    variables named in ``variables``, with their values there).

    Raises:
        TypeError: the expression reads anything else (another variable, a work-item id),
            or is an unsigned 64-bit :class:`Wrap` of a negative value.
        KeyError: a parameter missing from ``params``.
    """
    if isinstance(e, S.Const):
        return e.value
    if isinstance(e, S.Param):
        return params[e.name]
    if isinstance(e, S.Var) and variables is not None and e.name in variables:
        return variables[e.name]
    if isinstance(e, S.BinOp):
        return apply_int_op(e, eval_static(e.left, params, variables),
                            eval_static(e.right, params, variables))
    if isinstance(e, S.Min):
        return min(eval_static(e.left, params, variables),
                   eval_static(e.right, params, variables))
    if isinstance(e, S.IntSelect):
        chosen = _static_cond(e.cond, lambda x: eval_static(x, params, variables))
        return eval_static(e.then if chosen else e.orelse, params, variables)
    if isinstance(e, S.Wrap):
        value = eval_static(e.operand, params, variables)
        if e.bits < 64:
            return wrap_int(value, e.bits, e.signed)
        if e.signed or value >= 0:
            return value
        raise TypeError(f"{e!r} is an unsigned 64-bit value the simulator does not hold")
    raise TypeError(f"{e!r} is not a static expression of constants and parameters")


def _static_cond(c: S.Cond, value) -> bool:
    """Truth of the integer condition ``c`` whose integers ``value`` evaluates (its errors
    pass through; a float comparison is a ``TypeError``)."""
    if isinstance(c, S.Compare):
        return bool(CMP_OPS[c.op](value(c.left), value(c.right)))
    if isinstance(c, S.BoolOp):
        left = _static_cond(c.left, value)
        if c.op == "&&":
            return left and _static_cond(c.right, value)
        return left or _static_cond(c.right, value)
    if isinstance(c, S.Not):
        return not _static_cond(c.operand, value)
    raise TypeError(f"{c!r} is not a static condition of integers")


class NotStatic(Exception):
    """An expression depends on something other than constants, parameters and the loop
    variables given (:func:`static_int`)."""


def static_int(e: S.IntExpr, env: dict[str, int], params: dict[str, int]) -> int:
    """Value of ``e`` from constants, ``params`` and the loop variables of ``env``.

    Raises:
        NotStatic: ``e`` reads a name not in ``env``, a work-item id, is not an integer
            expression of those kinds, is an unsigned 64-bit :class:`Wrap` of a negative
            value (which the engine refuses where a work-item computes it) or divides by 0
            (a hazard where a work-item executes it).
    """
    if isinstance(e, S.Const):
        return int(e.value)
    if isinstance(e, S.Param):
        return int(params[e.name])
    if isinstance(e, S.Var):
        if e.name not in env:
            raise NotStatic(e.name)
        return env[e.name]
    if isinstance(e, S.BinOp):
        right = static_int(e.right, env, params)
        if right == 0 and e.op in ("/", "%"):   # left to the engine, which reads the mask
            raise NotStatic(f"{S.describe_int(e)} divides by 0")
        return int(apply_int_op(e, static_int(e.left, env, params), right))
    if isinstance(e, S.Min):
        return min(static_int(e.left, env, params), static_int(e.right, env, params))
    if isinstance(e, S.IntSelect):
        try:
            chosen = _static_cond(e.cond, lambda x: static_int(x, env, params))
        except TypeError:
            raise NotStatic(S.describe_int(e)) from None
        return static_int(e.then if chosen else e.orelse, env, params)
    if isinstance(e, S.Wrap):
        value = static_int(e.operand, env, params)
        if e.bits < 64:
            return wrap_int(value, e.bits, e.signed)
        if e.signed or value >= 0:
            return value
    raise NotStatic(repr(e))


def flat_index(array: S.PrivateArray, index: tuple[int, ...]) -> int | None:
    """Row-major flat index of ``index`` in ``array``, ``None`` if out of bounds (or of
    another rank)."""
    dims = tuple(d.value for d in array.dims)
    if len(index) != len(dims):
        return None
    flat = 0
    for i, extent in zip(index, dims):
        if not 0 <= i < extent:
            return None
        flat = flat * extent + i
    return flat


def is_vectorizable(loop: S.For) -> bool:
    """Whether the engine runs ``loop`` in blocks of iterations along its third axis: its
    body holds only ``Let``, ``If`` and ``Accumulate`` into private floats that the body
    does not read (loads and accumulations: the iterations are independent)."""
    targets: set[str] = set()
    reads: set[str] = set()
    for s in walk_statements(loop.body):
        if isinstance(s, S.Accumulate) and not s.index:
            targets.add(s.name)
            privates_read(s.value, reads)
        elif not isinstance(s, (S.Let, S.If)):
            return False
    return not (targets & reads)


def privates_read(e: S.FloatExpr, out: set[str]) -> None:
    """Add to ``out`` the private floats and private arrays that ``e`` reads."""
    for node in walk(e):
        if isinstance(node, S.Private):
            out.add(node.name)
        elif isinstance(node, S.PrivateElem):
            out.add(node.array.name)
