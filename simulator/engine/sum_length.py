"""Sum length: how many float32 roundings an output element's value went through.

The K-scaled tolerance of a result (:func:`simulator.engine.tolerance.check_result`) is Higham's bound
``gamma_k * (|A|·|B|)`` for a float32 dot product of length k: every term of a sum of k
products summed one after the other is rounded at most k times (once by its product, once
by each addition after it). The simulator counts k per output element from what the kernel
computes, never from a parameter's name: every float value carries its *sum length*, the
most roundings on any path from the exact inputs to it, with these rules (``n(x)`` is the
sum length of ``x``; ``ZERO`` marks a value known to be exactly 0):

- a load of an input, a float constant, a float argument: 0 (exact); the constant 0.0 (or
  a float argument of 0.0), a private float or
  private array declared ``= 0.0``: ``ZERO``;
- an integer converted to float (``(float)i``): 0 where ``|i| <= 2**24`` (exact), 1 beyond
  (one rounding to nearest), ``ZERO`` where ``i`` is 0;
- ``x * y``: ``n(x) + n(y) + 1`` (one rounding, the relative errors add); ``ZERO`` if
  either is ``ZERO``;
- ``x / y``: ``n(x) + n(y) + 5``: the relative errors of the quotient add as a product's
  do, and OpenCL 1.2 allows a float32 division an error of 2.5 ulp (§7.4, Table 7.1;
  1 ulp <= 2u), i.e. :data:`DIVISION_ROUNDINGS`; ``ZERO`` if ``x`` is ``ZERO``; a divisor
  known to be ``ZERO`` counts as 0 (the quotient is an infinity or a NaN, which the check
  refuses anyway);
- ``x + y``, ``acc += y``: ``max(n(x), n(y)) + 1``; adding ``ZERO`` is exact, so
  ``ZERO + y`` is ``n(y)``. A dot product of length K accumulated in order (``acc = 0;
  acc += a*b`` K times) is K; a tree of partial sums is less;
- ``fmax``, ``fmin``, ``fabs``: the largest of their operands (exact operations that do
  not enlarge an operand's error); a select: the operand it selects;
- the rounded built-ins (``sqrt``, ``rsqrt``, ``exp``, ``exp2``, ``log``, ``log2``,
  ``pow``, ``sin``, ``cos``, ``tanh``, ``erf``): the operand's (``pow``: both operands'
  added) plus twice their OpenCL error bound in ulp
  (:data:`simulator.ir.nodes.FUNCTION_ERROR_ULPS`, 1 ulp <= 2u: ``sqrt`` and ``exp`` 3 ulp,
  i.e. + 6; ``tanh`` 5 ulp, + 10; ``pow`` 16 ulp, + 32); valid where the operand's error is
  small against the function's slope (the bound carries no derivative);
- a value stored and loaded again (local or global memory, private arrays) keeps its
  sum length.

A copy, a transpose or a max of inputs is 0: checked exactly. ``fl(a*b + c)`` computed as
one fused multiply-add (which OpenCL compilers may contract) rounds once, within the bound.
The largest sum length over a launch's output is the K of the bound
(:class:`simulator.engine.reference.Reference`). A check against a reference function uses
each element's running error bound (:mod:`simulator.engine.error_bound`, which also carries
the sum length) instead where the launch is small enough. numpy only.
"""
from __future__ import annotations

import numpy as np

from tiletraffic.simulator.ir.nodes import FUNCTION_ERROR_ULPS

ZERO = -1
"""Sum length of a value known to be exactly 0.0 (neutral in sums, absorbing in products)."""

DTYPE = np.int32

DIVISION_ROUNDINGS = 5
"""Roundings a float32 division adds: OpenCL 1.2 allows it 2.5 ulp, at most 5 unit
roundoffs."""


def of_constant(value: float | None) -> int:
    """Sum length of a float constant (``None``: an uninitialized value, counted as 0)."""
    return ZERO if value == 0.0 else 0


FLOAT_EXACT_INTEGERS = 2 ** 24
"""The largest magnitude up to which every integer converts to float32 exactly."""


def of_integer(values):
    """Sum length of integers converted to float32 (``values``: an int or an int array):
    ``ZERO`` for 0, 0 (exact) up to :data:`FLOAT_EXACT_INTEGERS` in magnitude, 1 (one
    rounding) beyond."""
    values = np.asarray(values)
    return np.where(values == 0, ZERO,
                    np.where(np.abs(values) > FLOAT_EXACT_INTEGERS, 1, 0)).astype(DTYPE)


def add(x, y):
    """Sum length of ``x + y`` (arrays or ints; every sum length is ``ZERO`` or at least 0,
    so the larger one, plus 1 unless the smaller is ``ZERO``)."""
    x, y = np.asarray(x, DTYPE), np.asarray(y, DTYPE)
    return (np.maximum(x, y) + (np.minimum(x, y) != ZERO)).astype(DTYPE, copy=False)


def multiply(x, y):
    """Sum length of ``x * y`` (``ZERO`` where either is: the smaller one; else both are at
    least 0 and their sum plus 1)."""
    x, y = np.asarray(x, DTYPE), np.asarray(y, DTYPE)
    low = np.minimum(x, y)
    return np.where(low == ZERO, ZERO, x + y + 1).astype(DTYPE, copy=False)


def divide(x, y):
    """Sum length of ``x / y``."""
    x, y = np.asarray(x, DTYPE), np.asarray(y, DTYPE)
    return np.where(x == ZERO, ZERO, x + np.maximum(y, 0) + DIVISION_ROUNDINGS).astype(DTYPE)


def exact(*args):
    """Sum length of an exact function of ``args`` (fmax, fmin, fabs)."""
    out = np.asarray(args[0], DTYPE)
    for a in args[1:]:
        a = np.asarray(a, DTYPE)
        out = np.where(out == ZERO, a, np.where(a == ZERO, out, np.maximum(out, a)))
    return out.astype(DTYPE)


ZERO_AT_ZERO = frozenset({"sqrt", "sin", "tanh", "erf"})
"""Rounded functions whose value at 0 is exactly 0 (their sum length ``ZERO`` there)."""


def rounded_function(fn: str, *args):
    """Sum length of ``fn(*args)`` for ``fn`` in :data:`FUNCTION_ERROR_ULPS`: the
    operands' (added, as a product's) plus twice the function's bound in ulp; at an operand
    known to be 0, ``ZERO`` for the functions of :data:`ZERO_AT_ZERO` and 0 for the others
    (``exp(0) = cos(0) = 1`` is exact; ``log(0)`` and ``rsqrt(0)`` are infinite, which the
    check refuses anyway). ``pow`` of two operands: both lengths added."""
    lengths = [np.asarray(a, DTYPE) for a in args]
    total = np.maximum(lengths[0], 0)
    for a in lengths[1:]:
        total = total + np.maximum(a, 0)
    value = total + 2 * FUNCTION_ERROR_ULPS[fn]
    if len(lengths) == 1:
        at_zero = ZERO if fn in ZERO_AT_ZERO else 0
        value = np.where(lengths[0] == ZERO, at_zero, value)
    return np.asarray(value).astype(DTYPE)


def accumulate(old, terms, mask):
    """Sum length of ``acc`` after ``acc += term_i`` for the entries of ``terms`` where
    ``mask`` is on, in order along the last axis (a block of loop iterations).

    Args:
        old: sum length of ``acc`` before, shape ``(G, L, 1)``.
        terms: sum length of each term, broadcastable to ``mask``'s shape ``(G, L, I)``.
        mask: which iterations execute the statement.

    Returns the sum length after the block, shape ``(G, L, 1)``: with n executed terms that
    are not ``ZERO``, term j (1-based) is rounded by its own addition and the n - j after
    it: ``max(old + n, max_j(n_j + n - j + 1))``; when ``old`` is ``ZERO`` the first addition
    is exact (``max_j`` with ``n_1 + n - 1``, and no ``old + n``).
    """
    old = np.asarray(old, DTYPE)
    mask = np.asarray(mask, bool)
    shape = np.broadcast_shapes(mask.shape, np.shape(terms), old.shape)
    terms = np.broadcast_to(np.asarray(terms, DTYPE), shape)
    live = np.broadcast_to(mask, shape) & (terms != ZERO)
    if shape[-1] == 1:  # the common case: one addition
        return np.where(live, add(old, terms), np.broadcast_to(old, shape)).astype(DTYPE)
    rank = np.cumsum(live, axis=-1, dtype=DTYPE)            # j of each live term
    n = rank[..., -1:]
    from_zero = np.broadcast_to(old == ZERO, n.shape)
    offset = n - rank + 1 - ((rank == 1) & from_zero)
    best = np.where(live, terms + offset, np.iinfo(DTYPE).min).max(axis=-1, keepdims=True)
    after = np.where(from_zero, best, np.maximum(np.broadcast_to(old, n.shape) + n, best))
    return np.where(n > 0, after, np.broadcast_to(old, n.shape)).astype(DTYPE)


def binary(op: str, x, y):
    """Sum length of ``x op y`` for ``op`` in ``+ - * /``."""
    return {"*": multiply, "/": divide}.get(op, add)(x, y)


def negate(x):
    """Sum length of ``-x`` (exact: ``x``'s)."""
    return x


def exact_function(fn: str, *args):
    """Sum length of ``fn(*args)`` for an exact function (fmax, fmin, fabs)."""
    return exact(*args)


def lengths_of(table: np.ndarray) -> np.ndarray:
    """The sum lengths of a shadow table (itself)."""
    return table


def largest(lengths: np.ndarray) -> int:
    """The K of the bound: the largest sum length (``ZERO`` and an empty array give 0)."""
    return max(0, int(lengths.max())) if np.size(lengths) else 0
