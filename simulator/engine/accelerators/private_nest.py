"""Loop nests on private memory only, executed in one step when values are not computed.

A register-blocked GEMM's update ``for i, for j: acc[i][j] += a[i] * b[j]`` (or its
unrolled form, a run of ``acc[0][0] += a_0 * b_0; ...`` statements) touches only private
memory. Its loops have constant bounds, its indices are functions of the loop
variables and constants only (so is every integer converted to float), and no statement
depends on a work-item's id or on global or local memory. With ``compute_values=False`` its whole effect on the engine's state is then
known statically, the same for every executing work-item:

* FLOPs: the sum over the statement executions of each statement's operations (``+``/``*``
  of its value, plus one for ``+=``), charged once to the executing work-items (the engine
  charges them statement by statement: the totals are the same sums);
* bounds of private array indices: checked once, over the whole iteration space;
* uninitialized private reads: none, if every element (or private float) the nest reads
  before writing it is set for every executing work-item when the nest starts;
* what the nest sets: the elements and private floats it writes, for those work-items.

:func:`plan` (a loop) and :func:`statement_runs` (runs of statements of a block)
enumerate the iteration space once (a Python loop over the few
iterations of a register tile, never over work-items); :func:`ready` checks it against the
machine's state and :func:`apply` applies it (the pass :class:`PrivateNests`). Whenever a
condition fails (a bound or index not static, an index out of bounds, a step <= 0, an
undeclared name, a read of something unset, a statement of another kind, or a vectorized
loop around the nest), the pass does not apply, nothing is changed, and the engine
executes the nest statement by statement, reporting hazards and errors as full execution
does.
Inside a loop run in blocks by :mod:`.loop_blocks` the nest is applied once to the
block: its FLOPs charged to every entry, its reads checked and its writes set where any of
the block's iterations executes it (the same as iteration by iteration: the checks of the
blocked loop's entry make every read set).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.static import NotStatic, flat_index, static_int
from tiletraffic.simulator.ir.visitor import Visitor
from tiletraffic.simulator.engine.accelerators import Pass, Run


MAX_EXECUTIONS = 1 << 14
"""Statement executions of the largest nest planned (larger ones run statement by
statement: the plan is a Python loop over the iteration space)."""


@dataclass
class NestPlan:
    """The static effect of one private loop nest (per executing work-item).

    Attributes:
        flop: FLOPs of one pass through the nest.
        array_reads: per private array, the flat elements (row-major) read before the nest
            writes them, with the index tuples (for the bounds check).
        scalar_reads: private floats read before the nest assigns them.
        array_writes: per private array, the elements written.
        scalar_writes: private floats assigned.
        loop_vars: variables of the loops entered (the engine forgets them afterwards).
    """

    flop: int = 0
    array_reads: dict[str, list[tuple[int, ...]]] = field(default_factory=dict)
    scalar_reads: set[str] = field(default_factory=set)
    array_writes: dict[str, list[tuple[int, ...]]] = field(default_factory=dict)
    scalar_writes: set[str] = field(default_factory=set)
    loop_vars: list[str] = field(default_factory=list)
    resolved: dict[str, tuple] = field(default_factory=dict)
    """Per array name: (declared PrivateArray, flat reads, flat writes), set by :func:`run`."""


def plan(loop: S.For, params: dict[str, int]) -> NestPlan | None:
    """The static effect of ``loop`` as a private-only nest, or ``None`` if it is not one."""
    return plan_block((loop,), params)


def statement_runs(stmts, params: dict[str, int]) -> dict[int, Run]:
    """Runs of two or more consecutive private-only statements of a block (an unrolled
    register-tile update: ``acc[0][0] += a_0 * b_0; acc[0][1] += a_0 * b_1; ...``), by the
    position of the first; each run's ``plan`` is its :class:`NestPlan`."""
    runs = {}
    start = 0
    while start < len(stmts):
        end = start
        while end < len(stmts) and isinstance(stmts[end], (S.Assign, S.Accumulate, S.For)):
            end += 1
        if end - start >= 2:
            nest = plan_block(tuple(stmts[start:end]), params)
            if nest is not None:
                runs[start] = Run(start, end, nest)
        start = end + 1
    return runs


def plan_block(stmts, params: dict[str, int]) -> NestPlan | None:
    """The static effect of the statements ``stmts`` (executed in order under one mask) as
    a private-only nest, or ``None`` if they are not one."""
    planner = _NestPlanner(params)
    try:
        planner.visit_all(tuple(stmts))
    except NotStatic:
        return None
    return planner.out


class _NestPlanner(Visitor):
    """:func:`plan_block`'s walk through the statements, inner loops unrolled (``env``: the
    loop variables' values), raising :class:`simulator.ir.static.NotStatic` where the
    statements are not a private-only nest."""

    def __init__(self, params: dict[str, int]):
        self.params = params
        self.out = NestPlan()
        self.written: dict[str, set] = {}
        self.assigned: set[str] = set()
        self.executions = 0
        self.env: dict[str, int] = {}

    def generic_visit(self, s) -> None:
        raise NotStatic(type(s).__name__)

    def read_float(self, e: S.FloatExpr) -> int:
        """FLOPs of ``e``; its reads recorded."""
        if isinstance(e, (S.FConst, S.FloatParam)):
            return 0
        if isinstance(e, S.IntToFloat):            # no FLOP; the same for every work-item
            static_int(e.value, self.env, self.params)
            return 0
        if isinstance(e, S.Private):
            if e.name not in self.assigned:
                self.out.scalar_reads.add(e.name)
            return 0
        if isinstance(e, S.PrivateElem):
            self.read_elem(e.array.name, e.index)
            return 0
        if isinstance(e, (S.FBinOp, S.FCall)):
            return sum(self.read_float(operand) for operand in S.float_operands(e)) + 1
        if isinstance(e, S.FNeg):                  # no FLOP
            return self.read_float(e.operand)
        raise NotStatic(repr(e))

    def read_elem(self, name: str, index) -> None:
        at = tuple(static_int(i, self.env, self.params) for i in index)
        if at not in self.written.get(name, ()):
            self.out.array_reads.setdefault(name, []).append(at)

    def visit_For(self, s: S.For) -> None:
        start, stop, step = (static_int(x, self.env, self.params)
                             for x in (s.start, s.stop, s.step))
        if step <= 0:
            raise NotStatic("step")
        if s.var not in self.out.loop_vars:
            self.out.loop_vars.append(s.var)
        env = self.env
        for v in range(start, stop, step):
            self.env = {**env, s.var: v}
            self.visit_all(s.body)
        self.env = env

    def visit_Assign(self, s) -> None:
        self.executions += 1
        if self.executions > MAX_EXECUTIONS:
            raise NotStatic("too many iterations")
        ops = self.read_float(s.value)
        accumulate = isinstance(s, S.Accumulate)
        if s.index:
            if accumulate:
                self.read_elem(s.name, s.index)
            at = tuple(static_int(i, self.env, self.params) for i in s.index)
            self.written.setdefault(s.name, set()).add(at)
            self.out.array_writes.setdefault(s.name, []).append(at)
        else:
            if accumulate and s.name not in self.assigned:
                self.out.scalar_reads.add(s.name)
            if not accumulate:
                self.assigned.add(s.name)
                self.out.scalar_writes.add(s.name)
        self.out.flop += ops + (1 if accumulate else 0)

    visit_Accumulate = visit_Assign


def _resolve(machine, nest: NestPlan) -> bool:
    """Flat indices of the nest's reads and writes against the declared arrays (cached per
    declaration); ``False`` for an undeclared array or an index out of bounds."""
    for name in set(nest.array_reads) | set(nest.array_writes):
        if name not in machine.parrays:
            return False
        array = machine.parrays[name][0]
        cached = nest.resolved.get(name)
        if cached is not None and cached[0] is array:
            continue
        flats = []
        for indices in (nest.array_reads.get(name, []), nest.array_writes.get(name, [])):
            found = [flat_index(array, at) for at in indices]
            if any(f is None for f in found):
                return False
            flats.append(np.unique(np.array(found, dtype=np.int64)))
        nest.resolved[name] = (array, flats[0], flats[1])
    return True


class PrivateNests(Pass):
    """The private nests accelerator as an engine pass
    (:class:`simulator.engine.accelerators.Pass`): applies to a loop or a statement run whose
    static plan exists (:func:`plan`, :func:`statement_runs`) and whose reads are all set
    now (:func:`ready`)."""

    name = "private nests"

    def runs(self, stmts, params):
        return statement_runs(stmts, params)

    def applies(self, machine, node, mask):
        if machine.reads_ints:      # INT_BUFFER_DECLINE
            return None
        nest = node.plan if isinstance(node, Run) else machine.plan_of("nest", node, plan)
        if nest is None:
            return None
        return ready(machine, nest, mask)

    def run(self, machine, node, mask, plan) -> None:
        apply(machine, *plan)


def ready(machine, nest: NestPlan, mask):
    """``(nest, mask, flop mask)`` where ``nest`` may be applied to the work-items of
    ``mask`` of ``machine`` (an engine ``Machine`` with values off) now, ``None`` where the
    engine must execute it statement by statement (see the module docstring)."""
    m = np.logical_and(mask, machine.alive)
    if (m.shape[2:] != (1,) and not machine.blocked) or not _resolve(machine, nest):
        return None
    flop_mask = m
    if m.shape[2:] != (1,):   # a block of iterations (.loop_blocks): their union
        m = np.broadcast_to(m, (machine.G, machine.L, m.shape[2])).any(axis=2, keepdims=True)
    m = np.broadcast_to(m, (machine.G, machine.L, 1))
    rows = m[:, :, 0]
    for name in nest.scalar_reads | nest.scalar_writes:
        if name not in machine.private_set:
            return None
    for name in nest.scalar_reads:
        if not machine.private_full.get(name) and not machine.private_set[name][m].all():
            return None
    for name, (_, reads, _) in nest.resolved.items():
        is_set = machine.parray_set[name]
        if is_set is not None and reads.size and not is_set[:, :, reads][rows].all():
            return None
    return nest, m, flop_mask


def apply(machine, nest: NestPlan, m, flop_mask) -> None:
    """The effect of ``nest`` on ``machine`` for the work-items of ``m`` (shape (G, L, 1)),
    FLOPs charged to the entries of ``flop_mask`` (what :func:`ready` gave)."""
    machine.count_flop(flop_mask, nest.flop)
    for name, (_, _, writes) in nest.resolved.items():
        is_set = machine.parray_set[name]
        if is_set is not None and writes.size:
            is_set[:, :, writes] |= m
    for name in nest.scalar_writes:
        if not machine.private_full.get(name):
            machine.private_set[name] = np.logical_or(machine.private_set[name], m)
            machine.private_full[name] = bool(machine.private_set[name].all())
    for var in nest.loop_vars:
        machine.env.pop(var, None)
