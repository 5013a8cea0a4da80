"""Loops with stores or private-array updates run in blocks of iterations, counts only.

The engine runs a loop whose body only loads and accumulates into private floats in blocks
of iterations along the third axis of its ``(G, L, I)`` arrays
(:func:`simulator.ir.static.is_vectorizable`).
The loops that dominate a register-blocked GEMM are not of that kind: the tile loads
``for e: A_tile[..] = A[..]`` store, and the ``kk`` loop assigns private arrays
(``a[i] = A_tile[..][kk]``) before its private-only update. With ``compute_values=False``
such a loop can run blocked too, with exactly the counts of iteration-by-iteration
execution, when :func:`plan` (static) and :func:`ready` (at the loop's entry) hold:

* the body holds only ``Let``, ``If``, inner ``For`` loops with static bounds that are not
  vectorizable themselves (one iteration axis), private ``Assign``/``Accumulate`` (array
  indices static: constants, parameters and inner loop variables), ``Store``,
  ``VectorLoad`` and ``VectorStore``: no barrier, return, declaration, integer assigned
  again (``DeclareInt``, ``AssignInt``), ``While`` loop, ``break`` or ``continue``; no unsigned
  64-bit ``Wrap`` in it or its bounds (its check needs each statement's own mask);
* no array is both loaded and stored in the body (local memory: the uninitialized-read
  detector's verdict would depend on the order of iterations; the race detector's does
  not: it compares who touched each word in the barrier interval, in whatever order);
* no integer is carried from one iteration to the next: every name the body defines (its
  ``Let``\\ s and inner loop variables) is read only after its definition in the same
  iteration (through both branches of an ``If``), and the loop's bounds and step read
  none of them;
* every private float and private array element that an iteration reads before it
  assigns it is set, when the loop starts, for every executing work-item; then no
  iteration reads an unset private value in either execution (an iteration's statements
  all run under that iteration's mask: inner loops have static bounds and an ``If``
  assigns a value only where both branches do), and what the loop leaves set (the union,
  over iterations, of each assignment's mask) is the same.

Then every figure is a sum over (work-group, sub-group or work-item, iteration) entries of
the same events, which the observers compute row by row (one row per sub-group and
iteration), so the counts are identical: the accesses of each statement reach the
observers once per block (:attr:`AccessEvent.merge_iterations` false: a device model that
merges consecutive local loads into vector loads, ``local_vector_words`` > 1, does not
merge these iterations) instead of once per iteration. Out-of-bounds and misaligned
entries, races and unset local reads are found entry by entry as in full execution, but a
hazard's example and the order of hazards may differ: so a hazard in a launch in which a
loop ran blocked raises :class:`simulator.engine.accelerators.NotApplicable`, which leads to a
fresh iteration-by-iteration run (:func:`simulator.model.observation.observe_launch`); and the
engine leaves a ``Let`` of the body *stale* after the loop (iteration by iteration it would
hold the last iteration's value): a later read raises
:class:`simulator.engine.accelerators.NotApplicable` too.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.observers.counters import as_3d, compact_mask
from tiletraffic.simulator.ir.static import (ExecutionError, NotStatic, eval_static,
                                             flat_index, is_vectorizable, static_int)
from tiletraffic.simulator.ir.visitor import Visitor, walk, walk_statements
from tiletraffic.simulator.engine.accelerators import Pass

MAX_EXECUTIONS = 1 << 14
"""Statement executions of one iteration that :func:`plan` enumerates at most."""


class _Stale:
    """The value of a ``Let`` of a blocked loop's body after the loop."""

    def __repr__(self) -> str:
        return "<stale>"


STALE = _Stale()


class _Refuse(Exception):
    """The loop is not one this module runs blocked."""


@dataclass
class BlockPlan:
    """What :func:`ready` checks at the entry of one loop.

    Attributes:
        scalar_reads: private floats an iteration reads before it assigns them.
        element_reads: per private array, the elements (index tuples) an iteration reads
            before it assigns them.
        elements: per private array, every element the body reads or writes.
        scalars: every private float the body reads or writes.
        lets: integer names the body defines with ``Let`` (stale after the loop).
    """

    scalar_reads: set[str] = field(default_factory=set)
    element_reads: dict[str, set[tuple[int, ...]]] = field(default_factory=dict)
    elements: dict[str, set[tuple[int, ...]]] = field(default_factory=dict)
    scalars: set[str] = field(default_factory=set)
    lets: set[str] = field(default_factory=set)
    resolved: dict[str, tuple] = field(default_factory=dict)
    """Per array name: (declared PrivateArray, whether every element is within it, flat
    indices of ``element_reads``), set by :func:`ready`."""


_INT_NODES = (S.Const, S.Param, S.WorkItemId, S.Var, S.BinOp, S.Min, S.IntSelect, S.Wrap,
              S.Compare,
              S.BoolOp, S.Not, S.FloatCompare, S.FConst, S.FloatParam, S.FNeg)
"""The nodes of integer expressions and conditions (a :class:`FloatCompare` with the
launch's floats it compares)."""


def _int_names(e) -> set[str]:
    """Names (``Var``) an integer expression or condition reads."""
    out: set[str] = set()
    for node in walk(e):
        if isinstance(node, S.Var):
            out.add(node.name)
        elif isinstance(node, S.Wrap) and node.bits == 64 and not node.signed:
            raise _Refuse("an unsigned 64-bit value, checked per work-item")
        elif not isinstance(node, _INT_NODES):
            raise _Refuse(f"unknown integer expression {node!r}")
    return out


def _assigned_names(stmts) -> set[str]:
    """Names a block defines: its ``Let``\\ s, its integers declared or assigned
    (``DeclareInt``, ``AssignInt``) and loop variables, at any depth."""
    out: set[str] = set()
    for s in walk_statements(stmts):
        if isinstance(s, (S.Let, S.DeclareInt, S.AssignInt)):
            out.add(s.name)
        elif isinstance(s, S.For):
            out.add(s.var)
    return out


def plan(loop: S.For, params: dict[str, int]) -> BlockPlan | None:
    """The checks of ``loop`` run blocked, or ``None`` where the module docstring's static
    conditions fail (then the engine runs it iteration by iteration)."""
    body_names = _assigned_names(loop.body)
    planner = _Planner(params, body_names)
    try:
        if loop.var in body_names:
            raise _Refuse("the body redefines the loop variable")
        for x in (loop.start, loop.stop, loop.step):
            if _int_names(x) & body_names:
                raise _Refuse("bounds read a name the body defines")
        planner.defined = {loop.var}
        planner.body(loop.body)
    except _Refuse:
        return None
    if planner.loads & planner.stores or not (planner.loads | planner.stores):
        return None
    return planner.out


class _Planner(Visitor):
    """:func:`plan`'s walk through one iteration of a loop's body (statement by statement,
    inner loops unrolled), raising :class:`_Refuse` where a condition fails.

    The state of the point reached: ``env`` (inner loop variables' values), ``defined``
    (integer names defined so far in the iteration), ``scalars`` and ``elems`` (private
    floats and private array elements, by array, assigned so far in the iteration)."""

    def __init__(self, params: dict[str, int], body_names: set[str]):
        self.params = params
        self.body_names = body_names
        self.out = BlockPlan()
        self.loads: set[str] = set()
        self.stores: set[str] = set()
        self.executions = 0
        self.env: dict[str, int] = {}
        self.defined: set[str] = set()
        self.scalars: set[str] = set()
        self.elems: dict[str, set[tuple[int, ...]]] = {}

    def body(self, stmts) -> None:
        for s in stmts:
            self.executions += 1
            if self.executions > MAX_EXECUTIONS:
                raise _Refuse("too many statement executions")
            self.visit(s)

    def generic_visit(self, s) -> None:
        raise _Refuse(type(s).__name__)

    def names_ok(self, e) -> None:
        carried = (_int_names(e) & self.body_names) - self.defined
        if carried:
            raise _Refuse(f"{sorted(carried)} read before defined in the iteration")

    def static_index(self, index) -> tuple[int, ...]:
        for i in index:
            self.names_ok(i)
        try:
            return tuple(static_int(i, self.env, self.params) for i in index)
        except NotStatic:
            raise _Refuse("private index not static") from None

    def read_elem(self, name: str, at: tuple[int, ...]) -> None:
        self.out.elements.setdefault(name, set()).add(at)
        if at not in self.elems.get(name, ()):
            self.out.element_reads.setdefault(name, set()).add(at)

    def read_float(self, e) -> None:
        if isinstance(e, (S.FConst, S.FloatParam)):
            return
        if isinstance(e, S.Load):
            for i in e.index:
                self.names_ok(i)
            self.loads.add(e.array.name)
        elif isinstance(e, S.Private):
            self.out.scalars.add(e.name)
            if e.name not in self.scalars:
                self.out.scalar_reads.add(e.name)
        elif isinstance(e, S.PrivateElem):
            self.read_elem(e.array.name, self.static_index(e.index))
        elif isinstance(e, S.IntToFloat):        # an integer expression, as an index is
            self.names_ok(e.value)
        elif isinstance(e, (S.FBinOp, S.FCall, S.FNeg)):
            for operand in S.float_operands(e):
                self.read_float(operand)
        else:
            raise _Refuse(f"unknown float expression {e!r}")

    def visit_Let(self, s: S.Let) -> None:
        self.names_ok(s.value)
        self.out.lets.add(s.name)
        self.defined.add(s.name)

    def visit_If(self, s: S.If) -> None:
        self.names_ok(s.cond)
        outer = self.defined, self.scalars, self.elems
        branches = []
        for branch in (s.then, s.orelse):
            self.defined, self.scalars = set(outer[0]), set(outer[1])
            self.elems = {k: set(v) for k, v in outer[2].items()}
            self.body(branch)
            branches.append((self.defined, self.scalars, self.elems))
        self.defined, self.scalars, self.elems = outer
        (d1, s1, e1), (d2, s2, e2) = branches
        self.defined |= d1 & d2
        self.scalars |= s1 & s2
        for name in set(e1) & set(e2):
            self.elems.setdefault(name, set()).update(e1[name] & e2[name])

    def visit_For(self, s: S.For) -> None:
        if is_vectorizable(s):
            raise _Refuse("inner vectorizable loop")
        for x in (s.start, s.stop, s.step):
            self.names_ok(x)
        try:
            start, stop, step = (static_int(x, self.env, self.params)
                                 for x in (s.start, s.stop, s.step))
        except NotStatic:
            raise _Refuse("inner loop bounds not static") from None
        if step <= 0:
            raise _Refuse("step <= 0")
        env, defined = self.env, self.defined
        for v in range(start, stop, step):
            self.env, self.defined = {**env, s.var: v}, defined | {s.var}
            self.body(s.body)
        self.env, self.defined = env, defined
        defined.discard(s.var)   # the engine forgets a loop's variable after it

    def visit_Assign(self, s) -> None:
        self.read_float(s.value)
        if s.index:
            at = self.static_index(s.index)
            if isinstance(s, S.Accumulate):
                self.read_elem(s.name, at)
            self.out.elements.setdefault(s.name, set()).add(at)
            self.elems.setdefault(s.name, set()).add(at)
        else:
            self.out.scalars.add(s.name)
            if isinstance(s, S.Accumulate):
                if s.name not in self.scalars:
                    self.out.scalar_reads.add(s.name)
            else:
                self.scalars.add(s.name)

    visit_Accumulate = visit_Assign

    def visit_Store(self, s: S.Store) -> None:
        self.read_float(s.value)
        for i in s.index:
            self.names_ok(i)
        self.stores.add(s.array.name)

    def visit_VectorLoad(self, s: S.VectorLoad) -> None:
        for i in s.index:
            self.names_ok(i)
        self.loads.add(s.array.name)
        self.out.scalars.update(s.names)
        self.scalars.update(s.names)

    def visit_VectorStore(self, s: S.VectorStore) -> None:
        for v in s.values:
            self.read_float(v)
        for i in s.index:
            self.names_ok(i)
        self.stores.add(s.array.name)


def expansion(loop: S.For, params: dict[str, int]) -> tuple[np.ndarray, set[str]] | None:
    """For an inner loop of a blocked loop's body: its iteration values and the names its
    body defines with ``Let`` (stale after it), where the engine may run it for the whole
    block at once (:func:`run_expanded`): static bounds (constants and
    parameters), two or more iterations, and no loop inside (one expansion of the
    iteration axis); ``None`` otherwise.

    Exact under :func:`plan`'s conditions (which cover inner loops): every entry of the
    expanded axis is one (block iteration, inner iteration) pair, executing each statement
    under that pair's mask with its values; each figure is again a sum over entries, and
    what the body reads before assigning is set at the blocked loop's entry."""
    try:
        start, stop, step = (int(eval_static(x, params))
                             for x in (loop.start, loop.stop, loop.step))
    except (TypeError, KeyError, ExecutionError):   # a division by zero: the engine's
        return None
    if step <= 0 or len(range(start, stop, step)) < 2:
        return None
    if any(isinstance(s, S.For) for s in walk_statements(loop.body)):
        return None
    return np.arange(start, stop, step, dtype=np.int64), _assigned_names(loop.body)


def ready(machine, block: BlockPlan, mask) -> bool:
    """Whether ``machine`` (an engine ``Machine``, values off) may run the loop of
    ``block`` blocked for the work-items of ``mask`` now: not inside another block, every
    private name declared, every element index within its array, and everything an
    iteration reads before assigning it set for every executing work-item."""
    m = np.logical_and(mask, machine.alive)
    if m.shape[2:] != (1,):
        return False
    rows = np.broadcast_to(m, (machine.G, machine.L, 1))
    for name in block.scalars:
        if name not in machine.private_set:
            return False
    for name in block.scalar_reads:
        if not machine.private_full.get(name) and not machine.private_set[name][rows].all():
            return False
    for name, elements in block.elements.items():
        if name not in machine.parrays:
            return False
        array = machine.parrays[name][0]
        cached = block.resolved.get(name)
        if cached is None or cached[0] is not array:
            inside = all(flat_index(array, at) is not None for at in elements)
            reads = np.array(sorted(flat_index(array, at) for at in block.element_reads.get(
                name, ()))) if inside else None
            cached = block.resolved[name] = (array, inside, reads)
        if not cached[1]:
            return False
    for name in block.element_reads:
        is_set = machine.parray_set[name]
        if is_set is None:
            continue
        if not is_set[:, :, block.resolved[name][2]][rows[:, :, 0]].all():
            return False
    return True


class LoopBlocks(Pass):
    """The loop blocks accelerator as an engine pass (:class:`simulator.engine.accelerators.Pass`).

    Outside a blocked loop it applies to a loop that is not vectorizable already, with a
    positive step, where :func:`plan` and :func:`ready` hold: the loop runs in blocks of
    iterations, its ``Let``\\ s left stale after it. Inside a blocked loop it applies to
    an inner loop that :func:`expansion` allows and whose expanded block fits in
    ``machine.block_elems`` entries: the loop runs at once for the block (:func:`expand`).
    """

    name = "loop blocks"

    def applies(self, machine, loop, mask):
        if not isinstance(loop, S.For) or machine.reads_ints:
            return None     # reads_ints: INT_BUFFER_DECLINE
        if machine.blocked:
            found = machine.plan_of("expand", loop, expansion)
            if found is None or machine.G * machine.L * machine.shape_of(mask)[2] * len(
                    found[0]) > machine.block_elems:
                return None
            return found
        if machine.is_vectorizable(loop):
            return None
        step = machine.eval_int(loop.step)
        if np.any(np.asarray(step) <= 0):
            return None
        block = machine.plan_of("block", loop, plan)
        if block is None or not ready(machine, block, mask):
            return None
        return block, step

    def run(self, machine, loop, mask, plan) -> None:
        if machine.blocked:
            expand(machine, loop, mask, *plan)
        else:
            run_blocked(machine, loop, mask, *plan)


def run_blocked(machine, loop: S.For, mask, block: BlockPlan, step) -> None:
    """Run ``loop`` blocked on ``machine`` (an engine ``Machine``, values off), where
    :func:`plan` gave ``block`` and :func:`ready` holds; its ``Let``\\ s are left stale
    after it."""
    machine.blocked = True
    machine.ran_blocked = True
    try:
        ran = machine.exec_for_blocks(loop, mask, step)
    finally:
        machine.blocked = False
    if ran:
        for name in block.lets:
            machine.env[name] = STALE


def expand(machine, loop: S.For, mask, values: np.ndarray, lets: set[str]) -> None:
    """Inside a blocked loop, run the inner ``loop`` (static bounds, T iterations
    ``values``, :func:`expansion`) at once for the block's I iterations: entry i * T + t of
    the iteration axis is iteration t of ``loop`` in iteration i of the block (the block's
    values repeated T times); the names of ``lets`` are stale after it."""
    iterations = machine.shape_of(mask)[2]
    saved = machine.env
    machine.env = {name: np.repeat(v, len(values), axis=2)
                   if np.ndim(v) == 3 and np.shape(v)[2] == iterations > 1 else v
                   for name, v in saved.items()}
    machine.env[loop.var] = np.tile(values, iterations).reshape(1, 1, -1)
    try:
        machine.exec_block(loop.body, np.repeat(
            np.broadcast_to(mask, mask.shape[:2] + (iterations,)), len(values), axis=2))
    finally:
        machine.env = saved
    for name in lets:
        machine.env[name] = STALE
    machine.env.pop(loop.var, None)


def assign_elements(machine, s, mask, flop: int) -> bool:
    """In a blocked loop (values off): the effect of assigning ``s.name[s.index]`` when the
    index depends on the iteration only (one element per entry of the iteration axis,
    within bounds): ``flop`` FLOPs per entry, and each element set where any of its entries
    runs. ``False``, with nothing done, otherwise (then the engine's general path)."""
    if s.name not in machine.parrays:
        return False
    dims = tuple(d.value for d in machine.parrays[s.name][0].dims)
    comps = [np.asarray(machine.eval_int(i), dtype=np.int64) for i in s.index]
    if len(comps) != len(dims) or any(c.ndim == 3 and c.shape[:2] != (1, 1) for c in comps):
        return False
    flat = 0
    for comp, extent in zip(comps, dims):
        if comp.size and (comp.min() < 0 or comp.max() >= extent):
            return False
        flat = flat * extent + comp
    iterations = machine.shape_of(mask)[2]
    flat = np.broadcast_to(np.reshape(flat, -1), (iterations,))
    machine.count_flop(mask, flop)
    is_set = machine.parray_set[s.name]
    if is_set is not None:
        m = np.asarray(mask)
        m = compact_mask(as_3d(m))
        for element in set(flat.tolist()):
            runs = (m[:, :, flat == element] if m.shape[2] > 1 else m).any(axis=2)
            is_set[:, :, element] |= np.broadcast_to(runs, (machine.G, machine.L))
    return True
