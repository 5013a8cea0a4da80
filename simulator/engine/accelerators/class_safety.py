"""Whether the work-group classes of :mod:`.classes` may stand for every work-group of a
schedule: a static proof over the IR, before anything runs.

The classes assume that masks can differ only in the first and last work-group of each
NDRange dimension and that every index is affine in the work-group ids. The built-in
families are written that way (their tests prove the classes against full execution); any
other schedule (a user's, the OpenCL C front end's, a faulty variant) is proved here or
executed whole. :func:`classes_problem` computes, for every integer expression, the form
``sum_d c_d * group_id(d) + r`` with constant coefficients ``c_d`` and an interval for
``r`` (which holds the local ids, loop variables and parameters: interval arithmetic, C
semantics of ``/`` and ``%``), and refuses

- an expression not of that form (an index, a bound, a condition's operand or an integer
  converted to float; a product of two values that vary with the work-group, a bitwise
  operator or shift of one, a ``?:`` choosing between values that move differently,
  a division or remainder of one by a divisor that does not divide its coefficients, a
  ``min`` whose operands move differently, a loop whose trip count varies with the
  work-group);
- a condition (``if``, ``select``) whose truth can change between two interior
  work-groups of a dimension of :data:`.classes.MIN_GROUPS_FOR_CLASSES` or more work-groups:
  for ``c * g + r < 0`` with ``g`` interior (1 to n - 2), some ``r`` of its interval
  between ``-c * (n - 2)`` and ``-c - 1`` (for ``c > 0``) would make it differ.

Integers assigned again (``DeclareInt``, ``AssignInt``) are proved as a ``Let`` of each value
assigned, except one a ``For`` loop's body assigns that the body does not declare (its value
changes from one iteration to the next); a ``While`` loop, ``break`` and ``continue`` are
not proved (their trip counts are not known statically).

The proof is conservative: a schedule it refuses is executed work-group by work-group,
which gives the same counts and more hazard checks, only slower.
"""
from __future__ import annotations

from dataclasses import dataclass

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.nodes import describe_int
from tiletraffic.simulator.ir.static import int_op_bounds
from tiletraffic.simulator.ir.visitor import Visitor, walk_statements
from tiletraffic.simulator.engine.accelerators import data_decline
from tiletraffic.simulator.engine.accelerators.classes import MIN_GROUPS_FOR_CLASSES


class _Unproved(Exception):
    """The form of an expression or the constancy of a condition cannot be proved."""


@dataclass(frozen=True)
class _Form:
    """``sum_d coeffs[d] * group_id(d) + r`` with ``lo <= r <= hi``."""

    coeffs: tuple[int, ...]
    lo: int
    hi: int

    @property
    def varies(self) -> bool:
        return any(self.coeffs)

    @property
    def constant(self) -> int | None:
        return self.lo if not self.varies and self.lo == self.hi else None


_UNKNOWN = object()
"""A name bound twice with forms that move differently with the work-group id."""


def _trusted_families() -> tuple[str, ...]:
    from tiletraffic.simulator.kernels.families import FAMILIES, SEQUENCE_FAMILIES

    return FAMILIES + SEQUENCE_FAMILIES + ("gemm-split-k-slices", "gemm-split-k-reduce")


def classes_problem(schedule: S.Schedule) -> str | None:
    """Why the work-group classes of ``schedule`` are not proved to give full execution's
    counts (one line naming the expression), or ``None`` where they are (module
    docstring; a built-in family is trusted, except a kernel whose batch is folded into an
    NDRange dimension that already runs over something else, proved as any other)."""
    if data_decline(schedule.body) is not None:
        return data_decline(schedule.body)
    if schedule.family in _trusted_families() and not schedule.extra.get("folded_batch"):
        return None
    try:
        _Prover(schedule).block(schedule.body, {})
    except _Unproved as why:
        return str(why)
    return None


class _Prover(Visitor):
    """The proof of :func:`classes_problem`: the statements are visited with ``env``, the
    names bound at the point reached (their forms, or ``_UNKNOWN``)."""

    def __init__(self, schedule: S.Schedule):
        self.env: dict = {}
        self.params = schedule.param_values
        self.local = tuple(schedule.local_size)
        self.groups = tuple(schedule.num_groups)
        self.dims = len(self.groups)

    # ------------------------------------------------------------- integer expressions
    def form(self, e: S.IntExpr, env: dict) -> _Form:
        zero = (0,) * self.dims
        if isinstance(e, S.Const):
            return _Form(zero, e.value, e.value)
        if isinstance(e, S.Param):
            v = self.params[e.name]
            return _Form(zero, v, v)
        if isinstance(e, S.Var):
            if env.get(e.name, _UNKNOWN) is _UNKNOWN:
                raise _Unproved(f"{e.name} is used where its value is not known")
            return env[e.name]
        if isinstance(e, S.WorkItemId):
            unit = tuple(int(d == e.dim) for d in range(self.dims))
            size = self.local[e.dim]
            if e.kind == "local":
                return _Form(zero, 0, size - 1)
            if e.kind == "group":
                return _Form(unit, 0, 0)
            return _Form(tuple(size * u for u in unit), 0, size - 1)
        if isinstance(e, S.Min):
            a, b = self.form(e.left, env), self.form(e.right, env)
            if a.coeffs != b.coeffs:
                raise _Unproved(f"{describe_int(e)} takes operands that move differently "
                                "with the work-group id")
            return _Form(a.coeffs, min(a.lo, b.lo), min(a.hi, b.hi))
        if isinstance(e, S.BinOp):
            return self.binop(e, self.form(e.left, env), self.form(e.right, env))
        if isinstance(e, S.IntSelect):
            self.cond(e.cond, env)      # the same choice in the interior work-groups
            a, b = self.form(e.then, env), self.form(e.orelse, env)
            if a.coeffs != b.coeffs:
                raise _Unproved(f"{describe_int(e)} chooses between values that move "
                                "differently with the work-group id")
            return _Form(a.coeffs, min(a.lo, b.lo), max(a.hi, b.hi))
        if isinstance(e, S.Wrap):
            return self.wrap(e, self.form(e.operand, env))
        raise _Unproved(f"an integer expression of kind {type(e).__name__}")

    def binop(self, e: S.BinOp, a: _Form, b: _Form) -> _Form:
        zero = (0,) * self.dims
        ranges = (a.lo, a.hi), (b.lo, b.hi)
        if e.op in ("+", "-"):
            sign = 1 if e.op == "+" else -1
            return _Form(tuple(x + sign * y for x, y in zip(a.coeffs, b.coeffs)),
                         *int_op_bounds(e.op, *ranges))
        if e.op in S.BITWISE_OPS:
            if a.varies or b.varies:
                raise _Unproved(f"{describe_int(e)} applies the bitwise operator {e.op} to a "
                                "value that varies with the work-group id")
            return _Form(zero, *int_op_bounds(e.op, *ranges))
        if e.op == "*":
            if a.varies and b.varies:
                raise _Unproved(f"{describe_int(e)} multiplies two values that vary with the "
                                "work-group id")
            if b.varies:
                a, b = b, a
            if a.varies and b.constant is None:
                raise _Unproved(f"{describe_int(e)} multiplies the work-group id by a value "
                                "that varies")
            scale = b.constant if b.constant is not None else 0
            return _Form(tuple(c * scale for c in a.coeffs), *int_op_bounds("*", *ranges))
        if not a.varies and not b.varies and not b.lo <= 0 <= b.hi:
            return _Form(zero, *int_op_bounds(e.op, *ranges))
        divisor = b.constant
        if b.varies or divisor is None or divisor == 0:
            raise _Unproved(f"{describe_int(e)} divides by a value that is not one known "
                            "non-zero number")
        lowest = a.lo + sum(min(0, c * (n - 1)) for c, n in zip(a.coeffs, self.groups))
        if lowest < 0 or any(c % divisor for c in a.coeffs):
            raise _Unproved(f"{describe_int(e)}: the work-group id's step is not a multiple of "
                            f"{divisor} (or the value can be negative)")
        size = abs(divisor)
        if e.op == "/":
            # value >= 0 and every coefficient a multiple of the divisor: the division
            # splits into the coefficients' quotient and floor(r / |divisor|)
            sign = 1 if divisor > 0 else -1
            ends = sorted((sign * (a.lo // size), sign * (a.hi // size)))
            return _Form(tuple(c // divisor for c in a.coeffs), ends[0], ends[1])
        if 0 <= a.lo and a.hi < size:
            return _Form(zero, a.lo, a.hi)
        return _Form(zero, 0, size - 1)      # floor(r mod |divisor|): the value is >= 0

    def wrap(self, e: S.Wrap, a: _Form) -> _Form:
        """C's conversion to a fixed-width type: the operand where every value of every
        work-group fits the type (at 64 bits, where the simulator keeps the operand: signed,
        or unsigned and never negative where it varies with the work-group), the type's
        range where the operand does not vary with the work-group."""
        spans = [sorted((0, c * (n - 1))) for c, n in zip(a.coeffs, self.groups)]
        if e.bits >= 64:
            # unsigned: a negative value is refused where a work-item computes it, which
            # the representatives alone may not include
            if not e.signed and a.varies and a.lo + sum(x for x, _ in spans) < 0:
                raise _Unproved(f"{describe_int(e)} can be negative for some work-groups")
            return a
        low, high = (-2 ** (e.bits - 1), 2 ** (e.bits - 1) - 1) if e.signed else \
            (0, 2 ** e.bits - 1)
        if low <= a.lo + sum(x for x, _ in spans) and a.hi + sum(y for _, y in spans) <= high:
            return a
        if not a.varies:
            return _Form(a.coeffs, low, high)
        raise _Unproved(f"{describe_int(e)} wraps around for some work-groups")

    # --------------------------------------------------------------------- conditions
    def cond(self, c: S.Cond, env: dict) -> None:
        if isinstance(c, S.BoolOp):
            self.cond(c.left, env)
            self.cond(c.right, env)
            return
        if isinstance(c, S.Not):
            self.cond(c.operand, env)
            return
        if isinstance(c, S.FloatCompare) and c.on_launch_floats:     # one truth for all
            return
        if not isinstance(c, S.Compare):
            raise _Unproved(f"a condition of kind {type(c).__name__}")
        a, b = self.form(c.left, env), self.form(c.right, env)
        x = self.binop(S.BinOp("-", c.left, c.right), a, b)
        if not x.varies:
            return
        # every comparison as "y < 0" (or "y == 0") of one form y
        if c.op == "<":
            y, equal = x, False
        elif c.op == "<=":
            y, equal = _Form(x.coeffs, x.lo - 1, x.hi - 1), False
        elif c.op == ">":
            y, equal = _Form(tuple(-v for v in x.coeffs), -x.hi, -x.lo), False
        elif c.op == ">=":
            y, equal = _Form(tuple(-v for v in x.coeffs), -x.hi - 1, -x.lo - 1), False
        else:
            y, equal = x, True
        for d, coeff in enumerate(y.coeffs):
            n = self.groups[d]
            if coeff == 0 or n < MIN_GROUPS_FOR_CLASSES:
                continue
            others = [(cc * (m - 1)) for e, (cc, m) in enumerate(zip(y.coeffs, self.groups))
                      if e != d]
            lo = y.lo + sum(min(0, v) for v in others)
            hi = y.hi + sum(max(0, v) for v in others)
            if coeff > 0:
                bad = (-coeff * (n - 2), -coeff - (0 if equal else 1))
            else:
                bad = (-coeff, -coeff * (n - 2) - (0 if equal else 1))
            if lo <= bad[1] and bad[0] <= hi:
                raise _Unproved(
                    f"the condition {describe_int(c.left)} {c.op} {describe_int(c.right)} can "
                    f"differ between work-groups inside NDRange dimension {d}, not only at "
                    "its first and last work-group")

    # -------------------------------------------------------------------- statements
    def floats(self, e: S.FloatExpr, env: dict) -> None:
        if isinstance(e, (S.Load, S.PrivateElem)):
            for i in e.index:
                self.form(i, env)
        if isinstance(e, S.IntToFloat):     # an integer expression, as an index is
            self.form(e.value, env)
        if isinstance(e, S.Select):
            self.cond(e.cond, env)
        for operand in S.float_operands(e):
            self.floats(operand, env)

    @staticmethod
    def merge(env: dict, *branches: dict) -> None:
        """Set ``env`` to what a name may hold after code that ran one of ``branches`` (an
        ``if`` and its ``else``, a loop that may run no iteration): the engine keeps one
        flat table of names, so a name bound there keeps its value after it (a branch that
        binds no value to it is left out: nothing was bound there). Forms that agree stay;
        intervals of the same coefficients are joined; forms that move differently with the
        work-group id leave the name unknown."""
        for name in set().union(*branches):
            # a branch that does not bind the name leaves nothing a later read could see
            forms = [b[name] for b in branches if name in b]
            first = forms[0]
            if any(f is _UNKNOWN for f in forms) or any(f.coeffs != first.coeffs
                                                        for f in forms):
                env[name] = _UNKNOWN if any(f is not first for f in forms) else first
            else:
                env[name] = _Form(first.coeffs, min(f.lo for f in forms),
                                  max(f.hi for f in forms))

    def block(self, stmts, env: dict) -> None:
        """Prove the statements ``stmts`` with the names of ``env`` (bound there as the
        statements run)."""
        outer, self.env = self.env, env
        self.visit_all(stmts)
        self.env = outer

    def generic_visit(self, s) -> None:
        raise _Unproved(f"a statement of kind {type(s).__name__}")

    def visit_Let(self, s: S.Let) -> None:
        self.env[s.name] = self.form(s.value, self.env)

    def visit_DeclareInt(self, s: S.DeclareInt) -> None:
        self.env[s.name] = _UNKNOWN if s.value is None else self.form(s.value, self.env)

    visit_AssignInt = visit_Let

    def visit_Assign(self, s) -> None:
        for i in s.index:
            self.form(i, self.env)
        self.floats(s.value, self.env)

    visit_Accumulate = visit_Store = visit_Assign

    def visit_Shuffle(self, s: S.Shuffle) -> None:
        self.form(s.lane, self.env)
        self.floats(s.value, self.env)

    def visit_VectorLoad(self, s: S.VectorLoad) -> None:
        for i in s.index:
            self.form(i, self.env)

    def visit_VectorStore(self, s: S.VectorStore) -> None:
        for i in s.index:
            self.form(i, self.env)
        for v in s.values:
            self.floats(v, self.env)

    def visit_If(self, s: S.If) -> None:
        self.cond(s.cond, self.env)
        then, orelse = dict(self.env), dict(self.env)
        self.block(s.then, then)
        self.block(s.orelse, orelse)
        self.merge(self.env, then, orelse)

    def visit_For(self, s: S.For) -> None:
        self.loop(s, self.env)

    def visit_DeclareFloat(self, s) -> None:
        """Declarations, barriers and returns hold no integer expression."""

    visit_DeclarePrivateArray = visit_Barrier = visit_Return = visit_DeclareFloat

    def loop(self, s: S.For, env: dict) -> None:
        carried = _assigned_outside(s.body)
        if carried:
            raise _Unproved(f"integer {carried[0]} is assigned in the loop over {s.var}: its "
                            "value can change from one iteration to the next")
        start, stop, step = (self.form(s.start, env), self.form(s.stop, env),
                             self.form(s.step, env))
        if step.varies or start.coeffs != stop.coeffs:
            raise _Unproved(f"the loop over {s.var} from {describe_int(s.start)} to "
                            f"{describe_int(s.stop)} runs a number of times that varies with "
                            "the work-group id")
        body = dict(env)
        body[s.var] = _Form(start.coeffs, start.lo, max(start.lo, stop.hi - 1))
        self.block(s.body, body)
        self.merge(env, dict(env), body)   # the loop may run no iteration


def _assigned_outside(stmts) -> list[str]:
    """The integers that ``AssignInt`` statements of ``stmts`` assign, at any depth, that
    no ``DeclareInt`` of ``stmts`` declares (values carried from one pass over ``stmts``
    to the next, where ``stmts`` is a loop's body)."""
    declared = {s.name for s in walk_statements(stmts) if isinstance(s, S.DeclareInt)}
    return sorted({s.name for s in walk_statements(stmts)
                   if isinstance(s, S.AssignInt) and s.name not in declared})


def translation_problem(schedule: S.Schedule) -> str | None:
    """Why the hazards inside one work-group (local and private memory: races, reads of
    words nothing stored, out-of-bounds entries) may differ between two work-groups of one
    class beyond a translation, or ``None`` where they cannot.

    Where the classes are proved (:func:`classes_problem`), every statement runs under the
    same masks in every work-group of a class and each index is ``sum_d c_d * group_id(d)
    + r`` with ``r`` the same in all of them. Two accesses of one local or private array
    then touch the same word in one work-group exactly when they do in another if their
    indices move by the same ``c`` (per index dimension): this holds when every access of
    each local and private array has the same coefficients (zero, in nearly every kernel),
    and every sub-group shuffle's lane has none. Refused otherwise, and wherever the forms
    cannot be proved (the proof of :func:`classes_problem`); a built-in family is trusted,
    as there (its local and private arrays are indexed by local ids and loop variables)."""
    if data_decline(schedule.body) is not None:
        return data_decline(schedule.body)
    if schedule.family in _trusted_families():
        return None
    prover = _TranslationProver(schedule)
    try:
        prover.block(schedule.body, {})
    except _Unproved as why:
        return str(why)
    for (space, name), moves in sorted(prover.moves.items()):
        if len(moves) > 1:
            return (f"the accesses of {space} array {name} move differently with the "
                    "work-group id")
    return prover.problem


class _TranslationProver(_Prover):
    """:class:`_Prover` that also records, per local and private array, the work-group
    coefficients of every access's index (:func:`translation_problem`)."""

    def __init__(self, schedule: S.Schedule):
        super().__init__(schedule)
        self.moves: dict[tuple[str, str], set] = {}
        self.problem: str | None = None

    def note(self, array, index, env: dict) -> None:
        if isinstance(array, S.GlobalArray):
            return
        space = "local" if isinstance(array, S.LocalArray) else "private"
        self.note_named(space, array.name, index, env)

    def note_named(self, space: str, name: str, index, env: dict) -> None:
        coeffs = tuple(self.form(i, env).coeffs for i in index)
        self.moves.setdefault((space, name), set()).add(coeffs)

    def floats(self, e: S.FloatExpr, env: dict) -> None:
        if isinstance(e, (S.Load, S.PrivateElem)):
            self.note(e.array, e.index, env)
        super().floats(e, env)

    def visit_Assign(self, s) -> None:
        if s.index:
            self.note_named("private", s.name, s.index, self.env)
        super().visit_Assign(s)

    visit_Accumulate = visit_Assign

    def visit_Store(self, s: S.Store) -> None:
        self.note(s.array, s.index, self.env)
        super().visit_Store(s)

    def visit_VectorLoad(self, s: S.VectorLoad) -> None:
        self.note(s.array, s.index, self.env)
        super().visit_VectorLoad(s)

    def visit_VectorStore(self, s: S.VectorStore) -> None:
        self.note(s.array, s.index, self.env)
        super().visit_VectorStore(s)

    def visit_Shuffle(self, s: S.Shuffle) -> None:
        if self.form(s.lane, self.env).varies and self.problem is None:
            self.problem = f"a shuffle's lane {describe_int(s.lane)} varies with the work-group id"
        super().visit_Shuffle(s)
