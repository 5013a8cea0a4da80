"""The NDRange of each built-in family as expressions of its sizes ``M``, ``K``, ``N``.

A family's builder computes its NDRange as numbers (``round_up(n, tile)``); the closed
forms derived from the IR (:mod:`simulator.model.derived_counts`) need it as a function of
the sizes: :func:`global_size_forms` gives it, one integer expression of :class:`Param`
``M``, ``K``, ``N`` per dimension, with the family's tile and options as constants. The
forms are checked against the schedule's own NDRange at its sizes; a schedule whose family
has none (a variant, a demo, a user's schedule) or whose NDRange differs gets ``None``.
"""
from __future__ import annotations

from tiletraffic.simulator.ir.nodes import BinOp, Const, IntExpr, Min, Param, Schedule, ceil_div

GEMM_SIZES = ("M", "K", "N", "BATCH")
"""The sizes of the built-in families' closed forms (matrix-vector: M and K; a batched
GEMM also its batch count ``BATCH``, :mod:`simulator.kernels.batch`)."""


def _up(size: IntExpr, block: int, items: int) -> IntExpr:
    """⌈size / block⌉ work-groups of ``items`` work-items each."""
    return ceil_div(size, Const(block)) * Const(items)


def _forms(schedule: Schedule) -> tuple[IntExpr, ...] | None:
    """The family's NDRange, with the batch's dimension where it is batched: dimension 2 of
    ``BATCH`` work-groups, or ``S·BATCH`` where the batch is folded into split-K's slices."""
    forms = _single_forms(schedule)
    if forms is None or schedule.extra.get("batch", 1) == 1:
        return forms
    if schedule.extra.get("folded_batch"):
        return forms[:2] + (forms[2] * Param("BATCH"),)
    return forms + (Param("BATCH"),)


def _single_forms(schedule: Schedule) -> tuple[IntExpr, ...] | None:
    family, x, t = schedule.family, schedule.extra, schedule.tile
    M, N = Param("M"), Param("N")
    if family in ("gemm-naive", "gemm-tiled"):
        dims = (_up(N, t, t), _up(M, t, t))
        return dims[::-1] if x.get("mapping") == "transposed" else dims
    if family in ("matvec-naive", "matvec-relu", "matvec-local", "matvec-local-whole"):
        return (_up(M, t, t),)
    if family == "matvec-rows-reduce":
        return (Const(t), _up(M, x["wg_rows"], x["wg_rows"]))
    if family in ("gemm-register-blocked", "gemm-vectorized", "gemm-prefetch",
                  "gemm-warp-tiled", "gemm-split-k-slices"):
        dims = (_up(N, x["bn"], t), _up(M, x["bm"], x["wg_rows"]))
        return dims + ((Const(x["splits"]),) if family == "gemm-split-k-slices" else ())
    if family == "gemm-split-k-reduce":
        items = schedule.local_size[0]
        return (ceil_div(ceil_div(N, Const(4)), Const(items)) * Const(items), M)
    return None


def value_of(e: IntExpr, values: dict[str, int]) -> int:
    """The value of an expression of constants and parameters (``+ - * / %`` with C's
    truncating division, ``min``) with ``values`` (parameter name -> integer).

    Raises:
        KeyError: a parameter without a value; TypeError: another kind of expression.
    """
    if isinstance(e, Const):
        return e.value
    if isinstance(e, Param):
        return values[e.name]
    if isinstance(e, Min):
        return min(value_of(e.left, values), value_of(e.right, values))
    if isinstance(e, BinOp):
        a, b = value_of(e.left, values), value_of(e.right, values)
        if e.op in ("/", "%"):
            q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
            return q if e.op == "/" else a - q * b
        return {"+": a + b, "-": a - b, "*": a * b}[e.op]
    raise TypeError(f"{type(e).__name__} is not an expression of the sizes")


def global_size_forms(schedule: Schedule) -> tuple[IntExpr, ...] | None:
    """The NDRange of a built-in family's ``schedule`` as expressions of ``M``, ``K``, ``N``
    (checked against ``schedule.global_size``), or ``None`` for a schedule of no built-in
    family or whose NDRange is not the family's."""
    forms = _forms(schedule)
    if forms is None or len(forms) != len(schedule.global_size):
        return None
    values = {name: value for name, value in schedule.params if isinstance(value, int)}
    try:
        if tuple(value_of(f, values) for f in forms) != tuple(schedule.global_size):
            return None
    except (KeyError, ZeroDivisionError):
        return None
    return forms
