"""Running error bound: a sound bound on each float32 value's error, carried beside it.

With error bounds on (:func:`simulator.engine.simulation.simulate` with ``error_bounds=True``),
every float value the engine computes carries a record of :data:`DTYPE`:

- ``n``: its sum length (:mod:`simulator.engine.sum_length`, unchanged);
- ``v``: the float32 value the simulator computed (one evaluation the device may make);
- ``m``: a magnitude bound, ``|exact value| <= m``;
- ``e``: an absolute error bound, ``|device value - exact value| <= e`` for every
  evaluation the device model below allows;

where the *exact value* is the same expression evaluated in real arithmetic on the float32
inputs (what a float64 reference computes, to its own far smaller rounding). The rules are
Higham's (*Accuracy and Stability of Numerical Algorithms*, 2nd ed., §2.2 and §3.1, the
model ``fl(a op b) = (a op b)(1 + d) + h``, ``|d| <= u = 2**-24``, ``|h| <= FLT_MIN`` for an
underflow or a subnormal flushed to zero), written for absolute errors; ``M = m + e`` bounds
the device's value as well:

- an input element, a float argument, a literal: ``m = |x|``, ``e = |float32(x) - x|``
  (0 for the inputs, which are float32 already); an integer ``i`` converted: ``m = |i|``,
  ``e = |float32(i) - i|``;
- ``a + b``, ``a - b``: ``m = m_a + m_b`` (subtraction counts as addition of magnitudes,
  so a cancelling difference keeps the magnitude of its operands),
  ``e = e_a + e_b + u*(m + e_a + e_b) + FLT_MIN``; adding an exact 0 is exact;
- ``a * b``: ``m = m_a*m_b``, ``e = M_a*e_b + m_b*e_a + u*M_a*M_b + FLT_MIN``; a product with
  an exact 0 is an exact 0;
- ``a / b``: with ``L = |v_b| - 2*e_b`` (a lower bound of both ``|b|`` and the device's
  ``|b|``; no bound where ``L <= 0``): ``m = m_a/(|v_b| - e_b)``, propagated
  ``p = e_a/L + m_a*e_b/(L*(|v_b| - e_b))``, ``e = p + 5u*(m + p) + FLT_MIN`` (OpenCL 1.2
  allows a division 2.5 ulp, and 1 ulp of ``x`` is at most ``2u*|x|``);
- a rounded function ``f`` of :data:`LIPSCHITZ_FUNCTIONS` (``sin``, ``cos``): by its
  Lipschitz constant (:func:`rounded_function`); of :data:`MONOTONE_FUNCTIONS` (``sqrt``,
  ``exp``, ...), monotone on its domain: ``m = max |f|`` over ``[v - e, v + e]`` (where the exact argument lies), the
  propagated error ``p`` the width of ``f([v - 2e, v + 2e])`` (where both the exact and
  the device's argument lie; intervals clipped to the domain), ``e = p + 2*ulps*u*(m + p)
  + FLT_MIN`` with ``ulps`` from :data:`simulator.ir.nodes.FUNCTION_ERROR_ULPS`;
- ``fabs``, ``fmax``, ``fmin``, a sign flip, a select: exact; ``fmax``/``fmin`` take the
  largest ``m`` and ``e`` of their operands (``|max(a, b) - max(a', b')| <=
  max(|a - a'|, |b - b'|)``);
- ``acc += t`` over a loop: one addition per iteration in program order (the bound of a
  sum of K terms is then ``sum_j u*M_j`` over its partial sums, at most ``gamma_K`` times
  the sum of ``|t_j|``);
- a value stored and loaded again (global, local or private memory, a shuffle) keeps its
  record, except a store into a ``half`` global array, which rounds it to float16
  (:func:`stored_half`: ``e' = e + 2**-11*(m + e) + 2**-25``).

Device model (what the bound covers): every operation is rounded to nearest in float32
(or, for a division and the functions, within OpenCL 1.2's ulp bounds) in the order of the
source, with no reassociation (OpenCL C and CUDA without fast-math options: a kernel
built with ``-cl-fast-relaxed-math``, ``-cl-unsafe-math-optimizations``, ``-cl-mad-enable``
or ``--use_fast_math`` is outside the model); any
``a*b + c`` may be contracted into one fused multiply-add (``FP_CONTRACT``, on by default in
both), whose one rounding the bound of the separate operations covers (it drops the
``u*M_ab`` of the product's rounding); results may underflow or be flushed to zero. A
condition never depends on a computed float (the IR compares only launch arguments), so
the device takes the simulator's branches.

The bound is computed in float64; :func:`tolerance` multiplies it by
:data:`FLOAT64_SLACK` to cover float64's own roundings of ``m`` and ``e``, and adds
:data:`REFERENCE_SLACK` times ``m`` for the float64 reference's. numpy only.
"""
from __future__ import annotations

import numpy as np

from tiletraffic.simulator.engine import sum_length
from tiletraffic.simulator.ir.nodes import FUNCTION_ERROR_ULPS

DTYPE = np.dtype([("n", sum_length.DTYPE), ("v", np.float32), ("m", np.float64),
                  ("e", np.float64)])
"""One value's record: sum length, simulated value, magnitude bound, error bound."""

U = 2.0 ** -24
"""Unit roundoff of IEEE binary32 (round to nearest)."""

FLT_MIN = float(np.finfo(np.float32).tiny)
"""Smallest normal float32 (2**-126): the absolute error of one underflow or flush."""

FLOAT64_SLACK = 1.0 + 2.0 ** -20
"""Factor on a bound computed in float64 (relative error below 2**-30 for sums of at most
2**23 terms), so float64's roundings never make it smaller than the real bound."""

MONOTONE_FUNCTIONS = {
    # name: (float64 function, lowest argument of its domain)
    "sqrt": (np.sqrt, 0.0),
    "exp": (np.exp, -np.inf),
    "exp2": (np.exp2, -np.inf),
    "log": (np.log, 0.0),
    "log2": (np.log2, 0.0),
    "log10": (np.log10, 0.0),
    "log1p": (np.log1p, -1.0),
    "expm1": (np.expm1, -np.inf),
    "tanh": (np.tanh, -np.inf),
    "rsqrt": (lambda x: 1.0 / np.sqrt(x), 0.0),
    "cbrt": (np.cbrt, -np.inf),
    "atan": (np.arctan, -np.inf),
    "asinh": (np.arcsinh, -np.inf),
    "erf": (None, -np.inf),   # monotone; evaluated with math.erf (numpy has none)
    "sinh": (np.sinh, -np.inf),
}
"""Rounded functions the bound covers by monotonicity (each monotone on its domain), by IR
name."""

LIPSCHITZ_FUNCTIONS = {
    # name: (float64 function, Lipschitz constant, bound of |f|)
    "sin": (np.sin, 1.0, 1.0),
    "cos": (np.cos, 1.0, 1.0),
}
"""Rounded functions the bound covers by a Lipschitz constant and a bound of their
magnitude, by IR name. Every rounded function of
:data:`simulator.ir.nodes.FUNCTION_ERROR_ULPS` is in this table or
:data:`MONOTONE_FUNCTIONS`."""


class NoErrorBound(ValueError):
    """A function of the kernel that the error bound has no rule for (the check then keeps
    the K-scaled tolerance)."""


def _erf(x):
    import math
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def _record(n, v, m, e) -> np.ndarray:
    shape = np.broadcast_shapes(np.shape(n), np.shape(v), np.shape(m), np.shape(e))
    out = np.empty(shape, DTYPE)
    out["n"], out["v"], out["m"], out["e"] = n, v, m, e
    return out


def of_value(values) -> np.ndarray:
    """Records of exact float32 values (inputs): sum length 0, ``m = |v|``, ``e = 0``
    (``e = |v|`` for a subnormal, which a device may flush to zero)."""
    v = np.asarray(values, np.float64)
    a = np.abs(v)
    return _record(0, v, a, np.where(a < FLT_MIN, a, 0.0))


def of_constant(value: float | None) -> np.ndarray:
    """Record of a float literal or argument (``None``: an uninitialized value, NaN)."""
    if value is None:
        return _record(0, np.nan, 0.0, 0.0)
    f = float(np.float32(value))
    return _record(sum_length.of_constant(value), f, abs(float(value)), abs(f - float(value)))


def of_integer(values) -> np.ndarray:
    """Records of integers converted to float32 (exact up to 2**24 in magnitude)."""
    i = np.asarray(values)
    f = i.astype(np.float32).astype(np.float64)
    exact = i.astype(np.float64)
    return _record(sum_length.of_integer(i), f, np.abs(exact), np.abs(f - exact))


def _is_zero(x) -> np.ndarray:
    return (x["m"] == 0) & (x["e"] == 0)


def add(x, y, sign: float = 1.0) -> np.ndarray:
    """Record of ``x + y`` (``sign`` -1: ``x - y``)."""
    x, y = np.asarray(x, DTYPE), np.asarray(y, DTYPE)
    with np.errstate(invalid="ignore", over="ignore"):
        v = np.add(x["v"], y["v"]) if sign > 0 else np.subtract(x["v"], y["v"])
        carried = x["e"] + y["e"]
        exact = np.add(x["v"], y["v"], dtype=np.float64) if sign > 0 else \
            np.subtract(x["v"], y["v"], dtype=np.float64)
        m = np.fmin(x["m"] + y["m"], np.abs(exact) + carried)
        e = carried + U * (m + carried) + FLT_MIN
    out = _record(sum_length.add(x["n"], y["n"]), v, m, e)
    zx, zy = _is_zero(x), _is_zero(y)
    if zx.any() or zy.any():   # adding an exact zero is exact
        neg = negate(y) if sign < 0 else y
        n = out["n"]
        out = np.where(zy, np.broadcast_to(x, out.shape),
                       np.where(zx, np.broadcast_to(neg, out.shape), out))
        out["n"] = n
    return out


def multiply(x, y) -> np.ndarray:
    """Record of ``x * y``."""
    x, y = np.asarray(x, DTYPE), np.asarray(y, DTYPE)
    with np.errstate(invalid="ignore", over="ignore"):
        v = x["v"] * y["v"]
        big_x, big_y = x["m"] + x["e"], y["m"] + y["e"]
        e = big_x * y["e"] + y["m"] * x["e"] + U * big_x * big_y + FLT_MIN
        m = x["m"] * y["m"]
    zero = _is_zero(x) | _is_zero(y)
    if zero.any():   # a product with an exact zero is an exact zero
        m, e = np.where(zero, 0.0, m), np.where(zero, 0.0, e)
    return _record(sum_length.multiply(x["n"], y["n"]), v, m, e)


def divide(x, y) -> np.ndarray:
    """Record of ``x / y`` (no bound, ``m = e = inf``, where ``|y|`` has no positive lower
    bound)."""
    x, y = np.asarray(x, DTYPE), np.asarray(y, DTYPE)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        v = x["v"] / y["v"]
        low_exact = np.abs(y["v"]) - y["e"]
        low = np.abs(y["v"]) - 2.0 * y["e"]
        ok = low > 0
        low_exact, low = np.where(ok, low_exact, 1.0), np.where(ok, low, 1.0)
        m = x["m"] / low_exact
        p = x["e"] / low + x["m"] * y["e"] / (low * low_exact)
        e = p + sum_length.DIVISION_ROUNDINGS * U * (m + p) + FLT_MIN
    zero = _is_zero(x)
    m = np.where(zero, 0.0, np.where(ok, m, np.inf))
    e = np.where(zero, 0.0, np.where(ok, e, np.inf))
    return _record(sum_length.divide(x["n"], y["n"]), v, m, e)


def binary(op: str, x, y) -> np.ndarray:
    """Record of ``x op y`` for ``op`` in ``+ - * /``."""
    if op == "+":
        return add(x, y)
    if op == "-":
        return add(x, y, -1.0)
    return multiply(x, y) if op == "*" else divide(x, y)


def negate(x) -> np.ndarray:
    """Record of ``-x`` (exact)."""
    out = np.array(x, DTYPE, copy=True)
    out["v"] = -out["v"]
    return out


def exact_function(fn: str, *args) -> np.ndarray:
    """Record of ``fabs``, ``fmax`` or ``fmin`` of ``args`` (exact operations)."""
    args = [np.asarray(a, DTYPE) for a in args]
    if fn == "fabs":
        out = np.array(args[0], DTYPE, copy=True)
        out["v"] = np.abs(out["v"])
        return out
    pick = np.fmax if fn == "fmax" else np.fmin
    x, y = args
    return _record(sum_length.exact(x["n"], y["n"]), pick(x["v"], y["v"]),
                   np.maximum(x["m"], y["m"]), np.maximum(x["e"], y["e"]))


def rounded_function(fn: str, x, *more) -> np.ndarray:
    """Record of ``fn(x)`` for a rounded function of one argument of
    :data:`MONOTONE_FUNCTIONS` or :data:`LIPSCHITZ_FUNCTIONS` (with a Lipschitz constant
    ``L``: ``m = min(|f(v)| + L*e, bound of |f|)``, ``p = L*e``).

    Raises:
        NoErrorBound: ``fn`` is in neither table, takes more than one argument (``pow``),
            or has no ulp bound in :data:`simulator.ir.nodes.FUNCTION_ERROR_ULPS`.
    """
    if more or fn not in FUNCTION_ERROR_ULPS or (fn not in MONOTONE_FUNCTIONS and
                                                 fn not in LIPSCHITZ_FUNCTIONS):
        raise NoErrorBound(f"the error bound has no rule for the function {fn} of "
                           f"{1 + len(more)} argument(s)")
    x = np.asarray(x, DTYPE)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        if fn in LIPSCHITZ_FUNCTIONS:
            f, lipschitz, most = LIPSCHITZ_FUNCTIONS[fn]
            v = f(x["v"].astype(np.float64)).astype(np.float32)
            m = np.minimum((np.abs(v) + lipschitz * x["e"]) * (1 + 2 * U), most)
            p = lipschitz * x["e"]   # |f(device arg) - f(exact arg)|: the args within e
        else:
            f, lowest = MONOTONE_FUNCTIONS[fn]
            f = f or _erf
            v = f(x["v"].astype(np.float64)).astype(np.float32)
            ends = [f(np.clip(x["v"] + s * x["e"], lowest, None))
                    for s in (-1.0, 1.0, -2.0, 2.0)]
            m = np.maximum(np.abs(ends[0]), np.abs(ends[1]))
            p = np.abs(ends[3] - ends[2])
        e = p + 2 * FUNCTION_ERROR_ULPS[fn] * U * (m + p) + FLT_MIN
    m, e = np.where(np.isnan(m), np.inf, m), np.where(np.isnan(e), np.inf, e)
    return _record(sum_length.rounded_function(fn, x["n"]), v, m, e)


def accumulate(old, terms, mask) -> np.ndarray:
    """Record of ``acc`` after ``acc += term_i`` for the entries of ``terms`` where ``mask``
    is on, in order along the last axis (shapes as :func:`sum_length.accumulate`'s)."""
    old = np.asarray(old, DTYPE)
    mask = np.asarray(mask, bool)
    shape = np.broadcast_shapes(mask.shape, np.shape(terms), old.shape)
    terms = np.broadcast_to(np.asarray(terms, DTYPE), shape)
    mask = np.broadcast_to(mask, shape)
    acc = np.broadcast_to(old, shape[:-1] + (1,))
    for i in range(shape[-1]):
        on = mask[..., i:i + 1]
        if on.all():
            acc = add(acc, terms[..., i:i + 1])
        elif on.any():
            acc = np.where(on, add(acc, terms[..., i:i + 1]), acc)
    return np.asarray(acc, DTYPE)


def stored_half(x) -> np.ndarray:
    """Record of ``x`` stored into a ``half`` global array: its value rounded to the
    nearest float16, its error bound grown by half's unit roundoff 2**-11 on ``m + e`` (a
    bound of the float32 value stored) and half its subnormal spacing 2**-25."""
    x = np.asarray(x, DTYPE)
    v = np.asarray(x["v"], np.float32).astype(np.float16).astype(np.float32)
    e = x["e"] + 2.0 ** -11 * (x["m"] + x["e"]) + 2.0 ** -25
    return _record(x["n"], v, x["m"], e)


def lengths_of(table: np.ndarray) -> np.ndarray:
    """The sum lengths of a table of records."""
    return table["n"]


REFERENCE_SLACK = 2.0 ** -44
"""Relative allowance, on the magnitude bound ``m``, for the float64 reference's own
rounding (at most ``K * 2**-53 * m`` for sums of K terms: K up to 2**9 for free, longer
sums have an ``e`` of about ``K*u*m/2``, which :data:`FLOAT64_SLACK` covers)."""


def tolerance(table: np.ndarray) -> np.ndarray:
    """The tolerance of each record against a float64 reference:
    ``e * FLOAT64_SLACK + REFERENCE_SLACK * m`` (inf where no bound holds)."""
    e = np.asarray(table["e"], np.float64) * FLOAT64_SLACK + \
        REFERENCE_SLACK * np.asarray(table["m"], np.float64)
    return np.where(np.isnan(e), np.inf, e)
