"""Upper bounds of a counted loop's trips where its bounds move with the work-item.

A grid-stride loop ``for (r = get_global_id(0); r < R; r += get_global_size(0))`` starts
at a different row in every work-item; its step, the launch's work-items, is a constant of
the launch. A work-item runs ``ceil((stop - start) / step)`` iterations (0 where that is
negative), so the most any work-item runs is at most ``ceil(max(stop - start) / step)``
with the step's smallest value. :class:`LoopBounds` bounds ``stop - start`` over the launch
from affine forms of the two expressions: a sum of integer coefficients times *atoms*
(work-item ids, loop variables, and any other expression, each with its range of values
over the launch) plus a constant range, so that what the start and the stop share cancels
(``k = row * N .. row * N + N`` runs ``N`` iterations whatever the row). An atom's range
comes from :func:`simulator.ir.static.int_op_bounds` (interval arithmetic in C's
semantics); a value read from an integer buffer has no bound (``math.inf``).

For ``start`` from 0 to 511, ``stop`` 1024 and a step of 512 the bound is 2, the exact
most; where the ranges are not tight it is still an upper bound, never below a work-item's
trips.
"""
from __future__ import annotations

import math

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.static import ExecutionError, eval_static, int_op_bounds

UNBOUNDED = (-math.inf, math.inf)


class Form:
    """``sum(coeffs[atom] * atom) + c`` with ``lo <= c <= hi``; atoms are keys of
    :attr:`LoopBounds.atoms`."""

    __slots__ = ("coeffs", "lo", "hi")

    def __init__(self, coeffs: dict, lo, hi):
        self.coeffs, self.lo, self.hi = coeffs, lo, hi

    def plus(self, other: "Form", sign: int = 1) -> "Form":
        coeffs = dict(self.coeffs)
        for atom, c in other.coeffs.items():
            coeffs[atom] = coeffs.get(atom, 0) + sign * c
            if coeffs[atom] == 0:
                del coeffs[atom]
        lo, hi = (other.lo, other.hi) if sign > 0 else (-other.hi, -other.lo)
        return Form(coeffs, self.lo + lo, self.hi + hi)

    def scaled(self, k: int) -> "Form":
        lo, hi = sorted((_times(self.lo, k), _times(self.hi, k)))
        return Form({a: c * k for a, c in self.coeffs.items() if c * k}, lo, hi)

    def constant(self):
        """The form's value where it is one integer, else None."""
        return self.lo if not self.coeffs and self.lo == self.hi else None


def _times(bound, k: int):
    return 0 if k == 0 or bound == 0 else bound * k


class LoopBounds:
    """Ranges of integer expressions over one launch of a schedule.

    ``names`` maps an integer name to its :class:`Form` (a ``Let`` of a work-item id, a
    loop variable); names not there and not in the caller's static ``variables`` are
    unknown (no bound)."""

    def __init__(self, schedule: S.Schedule):
        self.params = schedule.param_values
        self.atoms: dict = {}
        """Per atom, its range ``(lo, hi)`` over the launch."""
        groups = schedule.num_groups
        for dim, (local, glob) in enumerate(zip(schedule.local_size, schedule.global_size)):
            self.atoms[("local", dim)] = (0, local - 1)
            self.atoms[("group", dim)] = (0, groups[dim] - 1)
            self.atoms[("global", dim)] = (0, glob - 1)
        self.names: dict[str, Form] = {}
        self.epoch = 0
        """Counts the bindings: an expression's atom is one value between two of them."""

    def bind(self, name: str, value: S.IntExpr, variables: dict) -> None:
        """``name`` holds ``value`` from here on (a ``Let``)."""
        self.names[name] = self.form(value, variables)
        self.epoch += 1

    def bind_range(self, name: str, key, lo, hi) -> None:
        """``name`` is an atom ``key`` of range ``lo .. hi`` (a loop variable)."""
        self.atoms[key] = (lo, hi)
        self.names[name] = Form({key: 1}, 0, 0)
        self.epoch += 1

    def forget(self, name: str) -> None:
        """``name`` no longer holds a known form (assigned again, or out of scope)."""
        self.names.pop(name, None)
        self.epoch += 1

    def span(self, f: Form) -> tuple:
        """Smallest and largest value of ``f`` over its atoms' ranges."""
        lo, hi = f.lo, f.hi
        for atom, c in f.coeffs.items():
            a, b = self.atoms.get(atom, UNBOUNDED)
            ends = (_times(a, c), _times(b, c))
            lo, hi = lo + min(ends), hi + max(ends)
        return lo, hi

    def form(self, e: S.IntExpr, variables: dict) -> Form:
        """The affine form of ``e`` (static ``variables`` by value)."""
        if isinstance(e, S.Const):
            return Form({}, int(e.value), int(e.value))
        if isinstance(e, S.Param) and isinstance(self.params.get(e.name), int):
            v = self.params[e.name]
            return Form({}, v, v)
        if isinstance(e, S.Var):
            if e.name in variables:
                return Form({}, variables[e.name], variables[e.name])
            if e.name in self.names:
                return self.names[e.name]
        if isinstance(e, S.WorkItemId) and (e.kind, e.dim) in self.atoms:
            return Form({(e.kind, e.dim): 1}, 0, 0)
        if isinstance(e, S.BinOp) and e.op in ("+", "-", "*"):
            left, right = self.form(e.left, variables), self.form(e.right, variables)
            if e.op != "*":
                return left.plus(right, 1 if e.op == "+" else -1)
            for f, k in ((left, right.constant()), (right, left.constant())):
                if k is not None:
                    return f.scaled(k)
        key = ("expr", repr(e), self.epoch)
        if key not in self.atoms:
            self.atoms[key] = self.interval(e, variables)
        return Form({key: 1}, 0, 0)

    def interval(self, e: S.IntExpr, variables: dict) -> tuple:
        """Range of ``e`` over the launch (interval arithmetic)."""
        try:
            v = eval_static(e, self.params, variables)
            return v, v
        except (TypeError, KeyError, ZeroDivisionError, ExecutionError):
            pass                # not static: its range
        if isinstance(e, S.Var):
            return self.span(self.names[e.name]) if e.name in self.names else UNBOUNDED
        if isinstance(e, S.WorkItemId):
            return self.atoms.get((e.kind, e.dim), UNBOUNDED)
        if isinstance(e, S.BinOp):
            return int_op_bounds(e.op, self.interval(e.left, variables),
                                 self.interval(e.right, variables))
        if isinstance(e, S.Min):
            (a, b), (c, d) = (self.interval(x, variables) for x in (e.left, e.right))
            return min(a, c), min(b, d)
        if isinstance(e, S.IntSelect):
            (a, b), (c, d) = (self.interval(x, variables) for x in (e.then, e.orelse))
            return min(a, c), max(b, d)
        if isinstance(e, S.Wrap) and e.bits < 64:
            lo, hi = self.interval(e.operand, variables)
            top = 2 ** (e.bits - 1) if e.signed else 2 ** e.bits
            low = -top if e.signed else 0
            return (lo, hi) if low <= lo and hi < top else (low, top - 1)
        return UNBOUNDED

    def most_trips(self, loop: S.For, variables: dict):
        """An upper bound of the iterations of ``loop`` in any work-item, or None where
        none is known (an unbounded start, stop or step, or a step that may be below 1)."""
        step_lo, _ = self.interval(loop.step, variables)
        if not step_lo >= 1:
            return None
        diff = self.form(loop.stop, variables).plus(self.form(loop.start, variables), -1)
        _, most = self.span(diff)
        if math.isinf(most) or math.isnan(most):
            return None
        return max(0, -(-int(most) // int(step_lo)))
