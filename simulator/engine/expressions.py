"""Evaluation of the IR's integer expressions, conditions and float expressions for a batch.

Integer values are int64 numpy arrays broadcastable to the batch's ``(G, L, I)`` (or Python
ints where they are one value for every work-item); conditions are boolean arrays; float
values are float32 arrays, or ``None`` when the machine does not compute values. Control
flow depends on integers only, never on float values, so running with
``compute_values=False`` gives exactly the same counts while skipping the float arithmetic.

An integer ``/`` or ``%`` whose divisor is 0 for a work-item that executes it (its mask on
for the statement, and C evaluating the operand: the right one of ``&&`` and ``||`` only
where the left one does not decide) is the hazard ``integer-division-by-zero``, undefined in
C; masked-off work-items dividing by zero (``if (d != 0) x / d``) are none. Each statement
execution reports an expression once; the bounds and step of a loop count once per entry.
A shift refuses a count outside ``0 .. 63`` of such a work-item, and an unsigned 64-bit
:class:`simulator.ir.nodes.Wrap` a negative value of one (:class:`simulator.ir.static.ExecutionError`).
"""
from __future__ import annotations

import numpy as np

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.static import (CMP_OPS, ExecutionError, apply_int_op, divide,
                                             eval_static, wrap_int)
from tiletraffic.simulator.ir.visitor import walk
from tiletraffic.simulator.engine.accelerators import NotApplicable
from tiletraffic.simulator.engine.accelerators.loop_blocks import STALE
from tiletraffic.simulator.engine.batch import BatchState, row_major
from tiletraffic.simulator.observers.hazards import Hazard

_FLOAT_OPS = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}
"""numpy spelling of :data:`simulator.ir.nodes.FLOAT_OPS`."""


_FLOAT_TESTS = {
    "isfinite": np.isfinite, "isnan": np.isnan, "isinf": np.isinf,
    "isnormal": lambda x: np.isfinite(x) & (np.abs(x) >= np.finfo(np.float32).tiny),
    "signbit": np.signbit}
"""OpenCL C's float classification built-ins (:data:`simulator.ir.nodes.FLOAT_TESTS`)."""


def _rsqrt(x):
    """``1 / sqrt(x)`` rounded once to float32 (computed in float64)."""
    return np.float64(1.0) / np.sqrt(np.asarray(x, np.float64))


def _erf(x):
    """The error function of float32 values (computed in float64, element by element)."""
    import math
    x = np.asarray(x, np.float64)
    return (np.vectorize(math.erf, otypes=[np.float64])(x) if x.size else x)[()]


_FLOAT_FUNCTIONS = {"fmax": np.fmax, "fmin": np.fmin, "fabs": np.abs, "sqrt": np.sqrt,
                    "rsqrt": _rsqrt, "exp": np.exp, "exp2": np.exp2, "log": np.log,
                    "log2": np.log2, "pow": np.power, "sin": np.sin, "cos": np.cos,
                    "tanh": np.tanh, "erf": _erf}
"""numpy spelling of :data:`simulator.ir.nodes.FLOAT_FUNCTIONS` (float32 in, float32 out,
within the ulp OpenCL allows each; fmax/fmin ignore a NaN operand as OpenCL's do)."""


def has_live_check(stmts, params: dict[str, int]) -> bool:
    """Whether the statements ``stmts`` hold an expression checked per executing work-item
    (:attr:`Expressions.live`): an unsigned 64-bit :class:`simulator.ir.nodes.Wrap`, a
    ``/`` or ``%`` whose divisor is not a non-zero expression of constants and
    ``params``, or a shift whose count is not known to be ``0 .. 63``."""
    return any(_checked_per_work_item(node, params) for s in stmts for node in walk(s))


def _checked_per_work_item(node, params: dict[str, int]) -> bool:
    if isinstance(node, S.Wrap) and node.bits == 64 and not node.signed:
        return True
    if isinstance(node, S.BinOp) and node.op in ("/", "%"):
        try:
            if eval_static(node.right, params) == 0:
                return True
        except (TypeError, KeyError, ExecutionError):
            return True
    if isinstance(node, S.BinOp) and node.op in ("<<", ">>"):
        return not _count_in_range(node.right, params)
    return False


def _count_in_range(count: S.IntExpr, params: dict[str, int]) -> bool:
    """Whether the shift count ``count`` is ``0 .. 63`` for every work-item: a static value
    there, or ``x & m`` with a constant ``m`` of ``0 .. 63``."""
    if isinstance(count, S.BinOp) and count.op == "&":
        for mask in (count.left, count.right):
            if isinstance(mask, S.Const) and 0 <= mask.value < S.SHIFT_BITS:
                return True
    try:
        return 0 <= eval_static(count, params) < S.SHIFT_BITS
    except (TypeError, KeyError, ExecutionError):
        return False


class Expressions(BatchState):
    """The expression evaluation of :class:`simulator.engine.machine.Machine`.

    Reads, besides :class:`simulator.engine.batch.BatchState`'s: ``env`` (integer names to
    values), ``ints_set`` (integers declared without a value: which work-items set them,
    checked by :meth:`simulator.engine.control.ControlFlow.check_int_set`), ``live`` and ``live_checks`` (below), ``divided`` (the divisions by zero
    reported in the statement executing now, by ``id`` of the ``BinOp``), ``privates``,
    ``depths``, ``last_index`` and ``dpriv`` (sum lengths), and the loads and private reads
    of :class:`simulator.engine.accesses.Accesses` and
    :class:`simulator.engine.private_memory.PrivateMemory`.

    ``live``: the work-items that execute the expressions being evaluated (the statement's
    mask; narrowed for the right operand of ``&&`` and ``||``; ``False`` where an expression
    evaluated again was checked already). ``live_checks``: whether the schedule has an
    expression checked per executing work-item (:func:`has_live_check`): then ``&&`` and
    ``||`` narrow ``live``, and a ``select``'s condition is evaluated without values too.
    """

    def eval_int(self, e: S.IntExpr):
        """Value of ``e`` for the batch: an int or an int64 array broadcastable to
        ``(G, L, I)``.

        Raises:
            NameError: a name read before it is defined.
            simulator.engine.accelerators.NotApplicable: a name left stale by a blocked loop.
            simulator.ir.static.ExecutionError: a negative unsigned 64-bit value.
        """
        if isinstance(e, S.Const):
            return e.value
        if isinstance(e, S.Param):
            return self.params[e.name]
        if isinstance(e, S.Var):
            try:
                value = self.env[e.name]
            except KeyError:
                raise NameError(f"{self.schedule.family}: integer {e.name!r} used before it "
                                "is defined") from None
            if value is STALE:
                raise NotApplicable(
                    f"{self.schedule.family}: {e.name!r} read after the blocked loop that "
                    "defines it")
            if e.name in self.ints_set:     # declared without a value, not set everywhere
                self.check_int_set(e.name)
            return value
        if isinstance(e, S.WorkItemId):
            return self.ids[(e.kind, e.dim)]
        if isinstance(e, S.BinOp):
            left, right = self.eval_int(e.left), self.eval_int(e.right)
            if e.op in ("/", "%"):
                return self.divide(e, left, right)
            if e.op in ("<<", ">>"):
                right = self.shift_count(e, right)
            return apply_int_op(e, left, right)
        if isinstance(e, S.Min):
            return np.minimum(self.eval_int(e.left), self.eval_int(e.right))
        if isinstance(e, S.IntSelect):
            return self.int_select(e)
        if isinstance(e, S.IntLoad):
            return self.int_load(e)
        if isinstance(e, S.Wrap):
            value = self.eval_int(e.operand)
            if e.bits < 64:
                return wrap_int(value, e.bits, e.signed)
            if not e.signed:
                self.check_unsigned(e, value)
            return value
        raise TypeError(f"unknown integer expression {e!r}")

    def int_load(self, e: S.IntLoad):
        """The elements of integer buffer ``e.array`` at ``e.index`` for the work-items of
        :attr:`live` (0 for the others), a global load of each of them announced to the
        observers (bounds-checked: an index outside the buffer is the hazard
        ``out-of-bounds``, its value then 0). Evaluated again with :attr:`live` off (a
        loop's bound checked on entry), nothing is announced."""
        live = True if self.live is None else self.live
        if live is False or not np.any(live):
            comps = [np.asarray(self.eval_int(i), dtype=np.int64) for i in e.index]
            flat = row_major(comps, self.dims_of(e.array))
            table = self.int_buffers[e.array.name]
            return table[np.clip(flat, 0, max(table.size - 1, 0))] if table.size else 0 * flat
        shape_mask = np.broadcast_to(live, (self.G, self.L, 1)) if np.ndim(live) == 0 \
            else live
        flat, mask = self.access("global", "load", e.array, e.index, shape_mask,
                                 source=e.source)
        table = self.int_buffers[e.array.name]
        safe = np.where(mask, flat, 0)
        return np.where(mask, table[safe], 0) if table.size else np.zeros_like(safe)

    def shift_count(self, e: S.BinOp, count):
        """The count of the shift ``e``: refused where a work-item of :attr:`live` has one
        outside ``0 .. 63`` (:class:`ExecutionError` naming the expression, the work-item
        and the count); 0 for the work-items that do not execute it.

        Raises:
            ExecutionError: a count outside the range for an executing work-item."""
        bad = np.logical_or(np.less(count, 0), np.greater_equal(count, S.SHIFT_BITS))
        if not np.any(bad):
            return count
        live = np.logical_and(bad, True if self.live is None else self.live)
        if np.any(live):
            _, _, _, v, gid, lid, group = self.first_work_item(live, count)
            raise ExecutionError(
                f"{self.schedule.family}: {S.describe_int(e)[1:-1]} shifts by {v} for the "
                f"work-item of global id {gid} (local id {lid} of work-group {group}): shift "
                f"counts are 0 to {S.SHIFT_BITS - 1}")
        return np.where(bad, 0, count)

    def int_select(self, e: S.IntSelect):
        """``cond ? then : orelse`` per work-item; where :attr:`live_checks`, each operand
        is evaluated with :attr:`live` narrowed to the work-items that choose it (C
        evaluates the chosen operand only)."""
        cond = self.eval_cond(e.cond)
        if not self.live_checks:
            return np.where(cond, self.eval_int(e.then), self.eval_int(e.orelse))
        live = True if self.live is None else self.live
        values = []
        for operand, chosen in ((e.then, cond), (e.orelse, np.logical_not(cond))):
            self.live = np.logical_and(live, chosen)
            try:
                values.append(self.eval_int(operand))
            finally:
                self.live = None if live is True else live
        return np.where(cond, *values)

    def divide(self, e: S.BinOp, left, right):
        """``left / right`` or ``left % right`` (C's; ``e`` the expression): where the
        divisor is 0 for a work-item of :attr:`live`, the hazard
        ``integer-division-by-zero`` (C leaves the result undefined: a device gives any value
        or traps), with the expression, an example work-item and the count; the value is
        then 0 for those work-items (:func:`simulator.ir.static.divide`), and what the
        kernel computes from it is not what a device computes."""
        if isinstance(right, (int, np.integer)) and right != 0:
            return apply_int_op(e, left, right)
        zero = np.equal(right, 0)
        if np.any(zero) and id(e) not in self.divided:
            bad = np.logical_and(zero, True if self.live is None else self.live)
            if np.any(bad):
                self.divided.add(id(e))
                self.report_division_by_zero(e, left, bad)
        return divide(e.op, left, right)

    def report_division_by_zero(self, e: S.BinOp, left, bad) -> None:
        g, li, shape, dividend, gid, lid, group = self.first_work_item(bad, left)
        bad_b = np.broadcast_to(bad, shape)
        what = "division" if e.op == "/" else "remainder"
        text = e.source or S.describe_int(e)[1:-1]
        groups = self.per_group(bad_b, shape)
        self.log.add(Hazard(
            kind="integer-division-by-zero", schedule=self.schedule.family, array="",
            index=-1, group_id=group, local_ids=(li,), epoch=self.epoch,
            count=int(groups[1].sum()), site=f"{what} {text}",
            detail=(f"{text} is {dividend} {e.op} 0 for the work-item of global id {gid} "
                    f"(local id {lid} of work-group {group}): an integer {what} by zero, "
                    "which C leaves undefined (a device gives any value or traps); the "
                    "simulator goes on with 0")),
            groups, f"{what}s by zero")

    def check_unsigned(self, e: S.Wrap, value) -> None:
        """Refuse a negative ``value`` of the unsigned 64-bit ``e`` for a work-item of
        :attr:`live`: C's value, ``value + 2**64``, is beyond int64.

        Raises:
            ExecutionError: naming the expression, the work-item and the value.
        """
        negative = np.less(value, 0)
        if not np.any(negative):
            return
        live = True if self.live is None else self.live
        bad = np.logical_and(negative, live)
        if not np.any(bad):
            return
        _, _, _, v, gid, lid, group = self.first_work_item(bad, value)
        what = e.source or f"{self.schedule.family}: {S.describe_int(e.operand)}"
        raise ExecutionError(
            f"{what} is {v} for the work-item of global id {gid} (local id {lid} of "
            f"work-group {group}), and C computes it as an unsigned 64-bit "
            f"integer, {v + 2 ** 64}, which the simulator's 64-bit signed integers do not "
            "hold (a limit of the simulator, not a fault of the kernel): compute it in int "
            "or uint (whose wrap-around the simulator models), or only where it is 0 or more")

    def eval_cond(self, c: S.Cond):
        """Truth of ``c`` for the batch: a boolean array broadcastable to ``(G, L, I)``."""
        if isinstance(c, S.Compare):
            return CMP_OPS[c.op](self.eval_int(c.left), self.eval_int(c.right))
        if isinstance(c, S.BoolOp):
            left = self.eval_cond(c.left)
            if not self.live_checks:
                right = self.eval_cond(c.right)
            else:       # C evaluates the right operand where the left one does not decide
                live = True if self.live is None else self.live
                self.live = np.logical_and(live, left if c.op == "&&" else
                                           np.logical_not(left))
                try:
                    right = self.eval_cond(c.right)
                finally:
                    self.live = None if live is True else live
            return np.logical_and(left, right) if c.op == "&&" else np.logical_or(left, right)
        if isinstance(c, S.Not):
            return np.logical_not(self.eval_cond(c.operand))
        if isinstance(c, S.FloatCompare) and c.on_launch_floats:   # one truth for all
            left, _ = self.eval_float(c.left, True)
            right, _ = self.eval_float(c.right, True)
            return np.bool_(CMP_OPS[c.op](np.float32(left), np.float32(right)))
        if isinstance(c, (S.FloatCompare, S.FloatTest)):
            return self.data_condition(c)
        raise TypeError(f"unknown condition {c!r}")

    def data_condition(self, c):
        """Truth per work-item of a condition on floats of the data (a
        :class:`FloatCompare` of other than the launch's floats, a :class:`FloatTest`):
        its operands evaluated for the work-items of :attr:`live` (their loads announced,
        their FLOPs counted); evaluated again in the same statement (:attr:`live` off),
        the truth found then. Needs values (the simulation computes them for a schedule
        that branches on data: :func:`simulator.ir.nodes.branches_on_data`)."""
        if self.live is False and id(c) in self.conditions:
            return self.conditions[id(c)]
        if not self.values:
            raise TypeError(f"{self.schedule.family}: a branch on float values needs the "
                            "values computed")
        mask = self.alive if self.live is None or self.live is False else self.live
        with np.errstate(invalid="ignore"):
            if isinstance(c, S.FloatTest):
                value, flop = self.eval_float(c.operand, mask)
                truth = _FLOAT_TESTS[c.fn](np.asarray(value, dtype=np.float32))
            else:
                left, fl = self.eval_float(c.left, mask)
                right, fr = self.eval_float(c.right, mask)
                flop = fl + fr
                truth = CMP_OPS[c.op](np.float32(left) if np.ndim(left) == 0 else left,
                                      np.float32(right) if np.ndim(right) == 0 else right)
        if flop:
            self.count_flop(mask, flop)
        truth = np.asarray(truth, dtype=bool)
        self.conditions[id(c)] = truth
        return truth

    def eval_float(self, e: S.FloatExpr, mask):
        """Value (or None when values are off) and the FLOPs per executing work-item."""
        if isinstance(e, S.Load):
            return self.load(e, mask), 0
        if isinstance(e, S.FConst):
            return np.float32(e.value), 0
        if isinstance(e, S.FloatParam):
            return np.float32(self.params[e.name]), 0
        if isinstance(e, S.IntToFloat):            # a conversion: no FLOP, no traffic
            if not self.values:
                if self.live_checks:   # its checks do not depend on values
                    self.eval_int(e.value)
                return None, 0
            return np.asarray(self.eval_int(e.value)).astype(np.float32), 0
        if isinstance(e, S.Private):
            self.check_private_set(e.name, mask)
            return self.privates.get(e.name), 0
        if isinstance(e, S.PrivateElem):
            return self.read_private_elem(e, mask), 0
        if isinstance(e, S.FBinOp):
            left, fl = self.eval_float(e.left, mask)
            right, fr = self.eval_float(e.right, mask)
            if not self.values:
                return None, fl + fr + 1
            op = _FLOAT_OPS[e.op]
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                return op(left, right, dtype=np.float32), fl + fr + 1
        if isinstance(e, S.FNeg):                  # a sign flip: no FLOP
            value, flop = self.eval_float(e.operand, mask)
            return (None if value is None else np.negative(value, dtype=np.float32)), flop
        if isinstance(e, S.FCall):
            args, ops = [], 1
            for a in e.args:
                value, flop = self.eval_float(a, mask)
                args.append(value)
                ops += flop
            if not self.values:
                return None, ops
            with np.errstate(invalid="ignore", over="ignore", divide="ignore",
                             under="ignore"):
                return _FLOAT_FUNCTIONS[e.fn](*args).astype(np.float32), ops
        if isinstance(e, S.Select):
            then, ft = self.eval_float(e.then, mask)
            orelse, fo = self.eval_float(e.orelse, mask)
            if not self.values:
                if self.live_checks:   # its checks do not depend on values
                    self.eval_cond(e.cond)
                return None, ft + fo + 1
            cond = self.eval_cond(e.cond)
            return np.where(cond, then, orelse).astype(np.float32), ft + fo + 1
        raise TypeError(f"unknown float expression {e!r}")

    def again(self, e, evaluate):
        """``evaluate(e)`` of an expression evaluated already in this statement: with
        :attr:`live` off, so its checks and its loads of integer buffers are not reported
        twice."""
        live, self.live = self.live, False
        try:
            return evaluate(e)
        finally:
            self.live = live

    def depth_of(self, e: S.FloatExpr):
        """Shadow of ``e``: its sum length (:mod:`simulator.engine.sum_length`), or with
        error bounds its record (:mod:`simulator.engine.error_bound`), evaluated right after
        :meth:`eval_float` of the same expression (whose accesses it reuses)."""
        if isinstance(e, S.Load):
            space, index, mask = self.last_index[id(e)]
            if space == "global" and e.array.role == "in" and \
                    e.array.name not in self.seeded:
                return 0
            return self.read_values(space, e.array, index, mask,
                                    self.dbuf if space == "global" else self.dlocal)
        if isinstance(e, S.FConst):
            return self.shadow.of_constant(e.value)
        if isinstance(e, S.FloatParam):
            return self.shadow.of_constant(self.params[e.name])
        if isinstance(e, S.IntToFloat):
            return self.shadow.of_integer(self.again(e.value, self.eval_int))
        if isinstance(e, S.Private):
            return self.dpriv[e.name]
        if isinstance(e, S.PrivateElem):
            idx = self.last_index[id(e)]
            if isinstance(idx, int):
                return self.dparr[e.array.name][:, :, idx:idx + 1]
            return np.take_along_axis(self.dparr[e.array.name], idx, axis=2)
        if isinstance(e, S.FBinOp):
            return self.shadow.binary(e.op, self.depth_of(e.left), self.depth_of(e.right))
        if isinstance(e, S.FNeg):                  # exact
            return self.shadow.negate(self.depth_of(e.operand))
        if isinstance(e, S.FCall) and e.fn in S.EXACT_FLOAT_FUNCTIONS:
            return self.shadow.exact_function(e.fn, *(self.depth_of(a) for a in e.args))
        if isinstance(e, S.FCall):
            return self.shadow.rounded_function(e.fn, *(self.depth_of(a) for a in e.args))
        if isinstance(e, S.Select):   # the operand selected, per work-item
            return np.where(self.again(e.cond, self.eval_cond), self.depth_of(e.then),
                            self.depth_of(e.orelse)).astype(self.shadow.DTYPE)
        raise TypeError(f"unknown float expression {e!r}")

