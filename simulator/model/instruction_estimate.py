"""An estimate of the instructions a compiled kernel issues beyond the ones the simulator
counts, from the IR alone (no build).

:func:`simulator.model.prediction.issued_instructions` counts FMAs, memory requests and
barriers exactly. A compiler adds integer and address arithmetic, loop counters and
branches, and moves. :func:`estimate_extra` walks one work-item's IR (a sub-group issues
what one of its work-items executes) and charges, per execution of each statement:

* a loop whose bounds are compile-time constants: unrolled, no overhead (its body counted
  trip-count times);
* a loop whose bounds are run-time values (the K loop): :data:`LOOP_OVERHEAD` (counter
  increment, compare, branch) per iteration, divided by :data:`UNROLL` where its body has
  no barrier (the compiler unrolls such a loop of unknown trip count);
* a global access (load, store, vector load or store): :data:`GLOBAL_ADDRESS` (the
  64-bit address from the element index);
* a guard: one compare per comparison of its condition, and for a guard with an ``else``
  (values set on both paths) a move per statement of the ``else``;
* an integer value computed inside a loop (``Let``, ``DeclareInt``, ``AssignInt``): one
  per arithmetic operation not folded into constants;
* a private float copied from another private value: one move;
* once per kernel: :data:`KERNEL_PROLOGUE` (work-item ids, arguments) and one
  instruction per arithmetic operation of the integer values outside loops.

Local-memory accesses inside unrolled loops are charged nothing: their offsets are
constants of the address instruction. Each charge is the instruction count of the code a
compiler emits for its construct (an add, a compare and a branch close a loop; a multiply-add
and a 64-bit widening form an address). The families' builds were the reference these
rules were checked against, so the error docs/model-limits.md states for them is measured
on the kernels the rules were written for.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.static import NotStatic, static_int
from tiletraffic.simulator.ir.visitor import walk

LOOP_OVERHEAD = 3
"""Instructions that close one iteration of a loop of run-time trip count."""
UNROLL = 4
"""The unroll factor a compiler applies to a loop of unknown trip count without barriers."""
GLOBAL_ADDRESS = 2
"""Integer instructions forming one global access's address."""
KERNEL_PROLOGUE = 12
"""Instructions of a kernel's prologue: work-item and work-group ids, argument reads."""


@dataclass
class ExtraInstructions:
    """Estimated sub-group instructions per work-item beyond FMAs, requests and barriers,
    by class (``integer``, ``move``, ``branch``), with the assumptions that gave them."""

    by_class: dict[str, float] = field(default_factory=lambda: {"integer": 0.0, "move": 0.0,
                                                                "branch": 0.0})
    notes: list[str] = field(default_factory=list)

    @property
    def total(self) -> float:
        return sum(self.by_class.values())

    def add(self, cls: str, count: float) -> None:
        self.by_class[cls] += count


def _int_ops(e, env: dict | None = None) -> int:
    """Arithmetic operations of an integer expression not folded by the compiler (an
    operation on constants and unrolled loop variables (``env``) only is folded)."""
    env = env or {}
    ops = 0
    for node in walk(e):
        if isinstance(node, (S.BinOp, S.Min, S.IntSelect)):
            ops += any(isinstance(n, (S.Param, S.WorkItemId, S.IntLoad))
                       or (isinstance(n, S.Var) and n.name not in env) for n in walk(node))
    return ops


def _compares(cond) -> int:
    return sum(isinstance(n, S.Compare) for n in walk(cond)) if cond is not None else 0


def _is_global(array) -> bool:
    return isinstance(array, S.GlobalArray)


def _coefficient(e, var: str, params: dict) -> int | None:
    """The coefficient of loop variable ``var`` in integer expression ``e`` where ``e`` is
    affine in it (others' values at 0), else None."""
    def value(x, v: int):
        if isinstance(x, S.Const):
            return int(x.value)
        if isinstance(x, S.Param):
            return int(params[x.name])
        if isinstance(x, S.Var):
            return v if x.name == var else 0
        if isinstance(x, S.WorkItemId):
            return 0
        if isinstance(x, S.BinOp) and x.op in ("+", "-", "*"):
            a, b = value(x.left, v), value(x.right, v)
            return a + b if x.op == "+" else a - b if x.op == "-" else a * b
        raise NotStatic(type(x).__name__)
    try:
        at0, at1, at2 = value(e, 0), value(e, 1), value(e, 2)
    except (NotStatic, KeyError):
        return None
    return at1 - at0 if at2 - at1 == at1 - at0 else None


def _global_accesses(stmt) -> list:
    """(array, index) of the global loads and stores ``stmt`` makes itself (not those of
    statements under it)."""
    out = []
    if isinstance(stmt, (S.VectorLoad, S.VectorStore, S.Store)) and _is_global(stmt.array):
        out.append((stmt.array, stmt.index))
    exprs = [getattr(stmt, name) for name in ("value", "values") if hasattr(stmt, name)]
    for e in exprs:
        for item in (e if isinstance(e, tuple) else (e,)):
            if isinstance(item, (S.FloatExpr, S.IntExpr)):
                out += [(n.array, n.index) for n in walk(item)
                        if isinstance(n, S.Load) and _is_global(n.array)]
    return out


def _address_cost(index: tuple, loop, params: dict) -> float:
    """Integer instructions of one global access's address: :data:`GLOBAL_ADDRESS` outside a
    loop of run-time trip count; inside one, one pointer update per access and iteration,
    shared by :data:`UNROLL` iterations where the access runs along the loop's variable
    with unit stride in its last dimension (constant offsets of one pointer)."""
    if loop is None:
        return GLOBAL_ADDRESS
    var, unrolled = loop
    unit = (unrolled and _coefficient(index[-1], var, params) == 1
            and all(_coefficient(i, var, params) == 0 for i in index[:-1]))
    return 1 / UNROLL if unit else 1.0


def _trip(loop: S.For, env: dict[str, int], params: dict,
          firsts: dict[str, int]) -> tuple[int | None, bool]:
    """(iterations, constant bounds) of ``loop``: the count where its bounds are static,
    else at the first iteration of the run-time loops around it (``firsts``: their
    variables' start values), else None; and whether they are compile-time constants."""
    constant = not any(isinstance(n, (S.Param, S.Var, S.WorkItemId, S.IntLoad))
                       for part in (loop.start, loop.stop, loop.step) for n in walk(part))
    try:
        start, stop, step = (static_int(x, {**firsts, **env}, params)
                             for x in (loop.start, loop.stop, loop.step))
    except (NotStatic, KeyError):
        return None, constant
    if step <= 0:
        return None, constant
    return max(0, -(-(stop - start) // step)), constant


def _walk(stmts, mult: float, loop, env: dict, params: dict,
          out: ExtraInstructions, firsts: dict | None = None) -> None:
    """Charge ``stmts``, each executed ``mult`` times, inside ``loop`` (the innermost loop
    of run-time trip count around them: ``(variable, unrolled)``, or None)."""
    firsts = firsts or {}
    for stmt in stmts:
        out.add("integer", mult * sum(_address_cost(index, loop, params)
                                      for _, index in _global_accesses(stmt)))
        if isinstance(stmt, (S.Let, S.DeclareInt, S.AssignInt)) and stmt.value is not None:
            out.add("integer", mult * _int_ops(stmt.value, env))
            if isinstance(stmt, S.Let) and loop is None:
                try:   # a value of the sizes alone: known to later loop bounds
                    env = {**env, stmt.name: static_int(stmt.value, env, params)}
                except (NotStatic, KeyError):
                    pass
        elif isinstance(stmt, (S.Assign, S.DeclareFloat)) and isinstance(
                getattr(stmt, "value", None), (S.Private, S.PrivateElem)):
            out.add("move", mult)
        elif isinstance(stmt, S.If):
            out.add("integer", mult * _compares(stmt.cond))
            _walk(stmt.then, mult, loop, env, params, out, firsts)
            out.add("move", mult * len(stmt.orelse))
        elif isinstance(stmt, S.For):
            trip, constant = _trip(stmt, env, params, firsts)
            if trip is None:
                out.notes.append(f"loop {stmt.var}: trip count not static, counted once")
                trip = 1
            inner = loop
            if not constant:
                barrier = any(isinstance(n, S.Barrier) for n in walk(stmt))
                inner = (stmt.var, not barrier)
                try:
                    firsts = {**firsts, stmt.var: static_int(stmt.start, {**firsts, **env},
                                                             params)}
                except (NotStatic, KeyError):
                    pass
                out.add("branch", mult * trip / (1 if barrier else UNROLL))
                out.add("integer", mult * trip * (LOOP_OVERHEAD - 1) / (1 if barrier else UNROLL))
                out.add("integer", mult * (_int_ops(stmt.stop) + _int_ops(stmt.start)))
            if constant and trip <= 64:
                for value in range(trip):
                    start = static_int(stmt.start, env, params)
                    step = static_int(stmt.step, env, params)
                    _walk(stmt.body, mult, inner, {**env, stmt.var: start + value * step},
                          params, out, firsts)
            else:
                _walk(stmt.body, mult * trip, inner, env, params, out, firsts)
        elif isinstance(stmt, S.While):
            out.notes.append("while loop: its body counted once")
            _walk(stmt.body, mult, loop, env, params, out, firsts)


def estimate_extra(schedule: S.Schedule) -> ExtraInstructions:
    """Per work-item (= per sub-group) instructions of ``schedule``'s kernel beyond FMAs,
    memory requests and barriers, estimated as the module docstring says."""
    out = ExtraInstructions()
    out.add("integer", KERNEL_PROLOGUE)
    _walk(schedule.body, 1.0, None, {}, dict(schedule.param_values), out)
    return out


def estimated_instructions(schedule: S.Schedule, counted: float, sub_groups: int) -> float:
    """The launch's estimated sub-group instructions: ``counted`` (the simulator's exact
    FMAs, requests and barriers, :func:`simulator.model.prediction.issued_instructions`)
    plus ``sub_groups`` x :func:`estimate_extra`."""
    return counted + sub_groups * estimate_extra(schedule).total
