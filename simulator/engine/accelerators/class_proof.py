"""The proof over one box of work-groups behind :mod:`.class_safety`: every integer of a
schedule as an affine form of the work-group id, every condition the same for all
work-groups of the box, and the address step of every access.

A *box* is, per NDRange dimension ``d``, an interval ``first_d <= group_id(d) <= last_d``
of work-group ids (one segment of :func:`.class_safety.class_plan`). :class:`Prover` walks a
schedule's statements with the box given and computes, for every integer expression, the
form ``sum_d c_d * group_id(d) + r`` with constant coefficients ``c_d`` and an interval for
``r`` (which holds the local ids, loop variables and parameters: interval arithmetic, C
semantics of ``/`` and ``%``); where a dimension's interval is one work-group, its id is a
constant folded into ``r`` (coefficient 0). It refuses (:class:`Unproved`) an expression not
of that form (a product of two values that vary with the work-group, a bitwise operator or
shift of one, a division or remainder of one by a divisor that does not divide its
coefficients, a loop whose trip count varies with the work-group), and it requires every
condition (``if``, ``select``, ``?:``, the comparison inside ``min``) to have, for each
work-item and each iteration, one truth value for all work-groups of the box. Where that
does not hold it raises :class:`Split` with the work-group ids at which the box's interval
of that dimension must be cut so that it does (the ids where the truth can change become
segments of their own).

With every condition proved uniform in the box, a condition that holds (or fails) for
every work-item of every work-group of the box is *decided* there: ``c ? a : b`` is then
``a`` (or ``b``) and ``min(a, b)`` the operand that is the smaller, even where ``a`` and
``b`` move differently with the work-group id, and an ``if`` whose condition is decided
executes one branch only. So a clamped halo (``x >= N ? x + 1 - N : 0``, ``clamp(x, 0,
N - 1)``) is the identity in the interior and is proved per box at the borders.

Integers assigned again (``DeclareInt``, ``AssignInt``) are proved as a ``Let`` of each value
assigned, except one a ``For`` loop's body assigns that the body does not declare (its value
changes from one iteration to the next). A ``While`` loop (a C ``for`` loop with ``break``
or ``continue`` is one) is unrolled: each iteration proved with the names as they are at
its start, its condition and every ``break`` condition the same in all work-groups of the
box, until the condition is decided false or a ``break`` is taken by every work-item
(at most :data:`MAX_WHILE_ITERATIONS` iterations, else refused); ``break`` and
``continue`` in a ``For`` loop are refused.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.nodes import describe_int
from tiletraffic.simulator.ir.static import int_op_bounds
from tiletraffic.simulator.ir.visitor import Visitor, walk_statements


class Unproved(Exception):
    """The form of an expression or the constancy of a condition cannot be proved."""


class Split(Exception):
    """A condition, or a loop's trip count, is not the same for all work-groups of the
    box's interval of NDRange dimension ``dim``: cut that interval before each work-group
    id of ``cuts``. ``why`` says what differs (a sentence)."""

    def __init__(self, dim: int, cuts: tuple[int, ...], why: str):
        super().__init__(why)
        self.dim, self.cuts, self.why = dim, cuts, why


@dataclass(frozen=True)
class Form:
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


MAX_WHILE_ITERATIONS = 64
"""The most iterations of a ``while`` loop (or a ``for`` loop with ``break``) the proof
unrolls."""

UNKNOWN = object()
"""A name bound twice with forms that move differently with the work-group id."""


def _text(c: S.Compare) -> str:
    return f"{describe_int(c.left)} {c.op} {describe_int(c.right)}"


class Prover(Visitor):
    """The proof over the box ``box`` (per NDRange dimension, ``(first, last)`` work-group
    ids): the statements are visited with ``env``, the names bound at the point reached
    (their forms, or :data:`UNKNOWN`). ``steps[d]`` collects, for every access of a global
    or local array, the step of its row-major flat element index per step of
    ``group_id(d)`` (dimensions whose interval is one work-group: none)."""

    def __init__(self, schedule: S.Schedule, box: tuple[tuple[int, int], ...]):
        self.env: dict = {}
        self.params = schedule.param_values
        self.local = tuple(schedule.local_size)
        self.groups = tuple(schedule.num_groups)
        self.dims = len(self.groups)
        self.box = box
        self.steps: list[set[int]] = [set() for _ in self.groups]
        self.loops: list[_Exits | None] = []   # the loops around the point reached
        self.undecided = 0                      # undecided conditions around it

    # ------------------------------------------------------------- integer expressions
    def span(self, f: Form) -> tuple:
        """The smallest and largest value of ``f`` over the box."""
        lo, hi = f.lo, f.hi
        for c, (first, last) in zip(f.coeffs, self.box):
            lo += min(c * first, c * last)
            hi += max(c * first, c * last)
        return lo, hi

    def form(self, e: S.IntExpr, env: dict) -> Form:
        zero = (0,) * self.dims
        if isinstance(e, S.Const):
            return Form(zero, e.value, e.value)
        if isinstance(e, S.Param):
            v = self.params[e.name]
            return Form(zero, v, v)
        if isinstance(e, S.Var):
            if env.get(e.name, UNKNOWN) is UNKNOWN:
                raise Unproved(f"{e.name} is used where its value is not known")
            return env[e.name]
        if isinstance(e, S.WorkItemId):
            return self.work_item_id(e)
        if isinstance(e, S.Min):
            return self.minimum(e, self.form(e.left, env), self.form(e.right, env))
        if isinstance(e, S.BinOp):
            return self.binop(e, self.form(e.left, env), self.form(e.right, env))
        if isinstance(e, S.IntSelect):
            truth = self.cond(e.cond, env)
            if truth is not None:     # decided in the box: C evaluates that operand only
                return self.form(e.then if truth else e.orelse, env)
            a, b = self.form(e.then, env), self.form(e.orelse, env)
            if a.coeffs != b.coeffs:
                raise Unproved(f"{describe_int(e)} chooses between values that move "
                               "differently with the work-group id")
            return Form(a.coeffs, min(a.lo, b.lo), max(a.hi, b.hi))
        if isinstance(e, S.Wrap):
            return self.wrap(e, self.form(e.operand, env))
        raise Unproved(f"an integer expression of kind {type(e).__name__}")

    def work_item_id(self, e: S.WorkItemId) -> Form:
        zero = (0,) * self.dims
        size = self.local[e.dim]
        if e.kind == "local":
            return Form(zero, 0, size - 1)
        first, last = self.box[e.dim]
        scale = 1 if e.kind == "group" else size
        top = 0 if e.kind == "group" else size - 1
        if first == last:              # one work-group: its id is a constant here
            return Form(zero, scale * first, scale * first + top)
        return Form(tuple(scale * int(d == e.dim) for d in range(self.dims)), 0, top)

    def minimum(self, e: S.Min, a: Form, b: Form) -> Form:
        if a.coeffs == b.coeffs:
            return Form(a.coeffs, min(a.lo, b.lo), min(a.hi, b.hi))
        # a <= b  <=>  a - b - 1 < 0: the same for all work-groups of the box, and decided
        x = self.binop(S.BinOp("-", e.left, e.right), a, b)
        y = Form(x.coeffs, x.lo - 1, x.hi - 1)
        text = f"{describe_int(e.left)} <= {describe_int(e.right)} (inside {describe_int(e)})"
        self.uniform(y, False, text)
        lo, hi = self.span(y)
        if hi < 0:
            return a
        if lo >= 0:
            return b
        raise Unproved(f"{describe_int(e)} takes operands that move differently with the "
                       "work-group id")

    def binop(self, e: S.BinOp, a: Form, b: Form) -> Form:
        zero = (0,) * self.dims
        ranges = (a.lo, a.hi), (b.lo, b.hi)
        if e.op in ("+", "-"):
            sign = 1 if e.op == "+" else -1
            return Form(tuple(x + sign * y for x, y in zip(a.coeffs, b.coeffs)),
                        *int_op_bounds(e.op, *ranges))
        if e.op in S.BITWISE_OPS:
            if a.varies or b.varies:
                raise Unproved(f"{describe_int(e)} applies the bitwise operator {e.op} to a "
                               "value that varies with the work-group id")
            return Form(zero, *int_op_bounds(e.op, *ranges))
        if e.op == "*":
            if a.varies and b.varies:
                raise Unproved(f"{describe_int(e)} multiplies two values that vary with the "
                               "work-group id")
            if b.varies:
                a, b = b, a
            if a.varies and b.constant is None:
                raise Unproved(f"{describe_int(e)} multiplies the work-group id by a value "
                               "that varies")
            scale = b.constant if b.constant is not None else 0
            return Form(tuple(c * scale for c in a.coeffs), *int_op_bounds("*", *ranges))
        if not a.varies and not b.varies and not b.lo <= 0 <= b.hi:
            return Form(zero, *int_op_bounds(e.op, *ranges))
        divisor = b.constant
        if b.varies or divisor is None or divisor == 0:
            raise Unproved(f"{describe_int(e)} divides by a value that is not one known "
                           "non-zero number")
        if self.span(a)[0] < 0 or any(c % divisor for c in a.coeffs):
            raise Unproved(f"{describe_int(e)}: the work-group id's step is not a multiple of "
                           f"{divisor} (or the value can be negative)")
        size = abs(divisor)
        if e.op == "/":
            # value >= 0 and every coefficient a multiple of the divisor: the division
            # splits into the coefficients' quotient and floor(r / |divisor|)
            sign = 1 if divisor > 0 else -1
            ends = sorted((sign * (a.lo // size), sign * (a.hi // size)))
            return Form(tuple(c // divisor for c in a.coeffs), ends[0], ends[1])
        if 0 <= a.lo and a.hi < size:
            return Form(zero, a.lo, a.hi)
        return Form(zero, 0, size - 1)      # floor(r mod |divisor|): the value is >= 0

    def wrap(self, e: S.Wrap, a: Form) -> Form:
        """C's conversion to a fixed-width type: the operand where every value of every
        work-group of the box fits the type (at 64 bits, where the simulator keeps the
        operand: signed, or unsigned and never negative where it varies with the
        work-group), the type's range where the operand does not vary with the
        work-group."""
        lowest, highest = self.span(a)
        if e.bits >= 64:
            # unsigned: a negative value is refused where a work-item computes it, which
            # the representatives alone may not include
            if not e.signed and a.varies and lowest < 0:
                raise Unproved(f"{describe_int(e)} can be negative for some work-groups")
            return a
        low, high = (-2 ** (e.bits - 1), 2 ** (e.bits - 1) - 1) if e.signed else \
            (0, 2 ** e.bits - 1)
        if low <= lowest and highest <= high:
            return a
        if not a.varies:
            return Form(a.coeffs, low, high)
        raise Unproved(f"{describe_int(e)} wraps around for some work-groups")

    # --------------------------------------------------------------------- conditions
    def cond(self, c: S.Cond, env: dict) -> bool | None:
        """Prove ``c`` the same for all work-groups of the box (per work-item and
        iteration); its truth where it is decided there (the same for every work-item),
        else ``None``.

        Raises:
            Split: where it is not the same in all of them.
        """
        if isinstance(c, S.BoolOp):
            left, right = self.cond(c.left, env), self.cond(c.right, env)
            if c.op == "&&":
                return False if False in (left, right) else \
                    True if left is True and right is True else None
            return True if True in (left, right) else \
                False if left is False and right is False else None
        if isinstance(c, S.Not):
            truth = self.cond(c.operand, env)
            return None if truth is None else not truth
        if isinstance(c, S.FloatCompare) and c.on_launch_floats:     # one truth for all
            return None
        if not isinstance(c, S.Compare):
            raise Unproved(f"a condition of kind {type(c).__name__}")
        a, b = self.form(c.left, env), self.form(c.right, env)
        x = self.binop(S.BinOp("-", c.left, c.right), a, b)
        # every comparison as "y < 0" (or "y == 0") of one form y
        if c.op == "<":
            y, equal = x, False
        elif c.op == "<=":
            y, equal = Form(x.coeffs, x.lo - 1, x.hi - 1), False
        elif c.op == ">":
            y, equal = Form(tuple(-v for v in x.coeffs), -x.hi, -x.lo), False
        elif c.op == ">=":
            y, equal = Form(tuple(-v for v in x.coeffs), -x.hi - 1, -x.lo - 1), False
        else:
            y, equal = x, True
        self.uniform(y, equal, _text(c))
        lo, hi = self.span(y)
        if equal:
            truth = True if lo == hi == 0 else False if not lo <= 0 <= hi else None
            return truth if c.op == "==" or truth is None else not truth
        return True if hi < 0 else False if lo >= 0 else None

    def uniform(self, y: Form, equal: bool, text: str) -> None:
        """Prove ``y < 0`` (``y == 0`` where ``equal``) the same for all work-groups of the
        box, for each value of ``r``.

        Raises:
            Split: a dimension whose interval holds work-groups where it differs, with the
                cuts that make it uniform (:func:`_cuts`).
            Unproved: the bounds of ``y`` are not known.
        """
        for d, coeff in enumerate(y.coeffs):
            if coeff == 0:
                continue
            first, last = self.box[d]
            rest = Form(tuple(0 if e == d else v for e, v in enumerate(y.coeffs)), y.lo, y.hi)
            lo, hi = self.span(rest)
            if math.inf in (abs(lo), abs(hi)):
                raise Unproved(f"the condition {text}: its bounds are not known")
            # y's truth for one r changes between two work-groups of [first, last] iff r
            # lies in this interval
            ends = coeff * first, coeff * last
            bad = (-max(ends), -min(ends) - (0 if equal else 1))
            if lo <= bad[1] and bad[0] <= hi:
                raise Split(d, _cuts(coeff, lo, hi, equal, first, last),
                            f"the condition {text} differs between work-groups")


def _cuts(coeff: int, lo: int, hi: int, equal: bool, first: int, last: int
          ) -> tuple[int, ...]:
    """The work-group ids ``g`` of ``first..last`` before which to cut so that ``coeff * g
    + r < 0`` (``== 0`` where ``equal``) is the same, for each ``r`` in ``lo..hi``, within
    every piece: the pieces where it holds for every ``r``, where it fails for every
    ``r``, and each ``g`` between them (where it depends on ``r``) on its own."""
    def rank(g: int) -> int:    # 0 below, 1 between, 2 above: monotone in g
        low, high = coeff * g + lo, coeff * g + hi
        below = high < 0
        above = low > 0 if equal else low >= 0
        r = 0 if below else 2 if above else 1
        return r if coeff > 0 else 2 - r

    def first_with(level: int) -> int:
        a, b = first, last + 1
        while a < b:
            mid = (a + b) // 2
            if rank(mid) >= level:
                b = mid
            else:
                a = mid + 1
        return a

    one, two = first_with(1), first_with(2)
    cuts = {one, two} | set(range(one + 1, two))
    return tuple(sorted(g for g in cuts if first < g <= last))


# ------------------------------------------------------------------------ statements
class StatementProver(Prover):
    """:class:`Prover` over a schedule's statements."""

    def floats(self, e: S.FloatExpr, env: dict) -> None:
        if isinstance(e, (S.Load, S.PrivateElem)):
            self.access(e.array, e.index, env)
        if isinstance(e, S.IntToFloat):     # an integer expression, as an index is
            self.form(e.value, env)
        if isinstance(e, S.Select):
            self.cond(e.cond, env)
        for operand in S.float_operands(e):
            self.floats(operand, env)

    def extents(self, array) -> list[int] | None:
        """The extents of a global or local array (``None`` for a private one)."""
        if isinstance(array, S.GlobalArray):
            return [self.params[s] for s in array.shape]
        if isinstance(array, S.LocalArray):
            return [d.value for d in array.dims]
        return None

    def index_forms(self, array, index, env: dict) -> tuple[list[Form], list[int] | None, int]:
        """The forms of an access's index, the extents they index (``None`` for a private
        array) and how many leading components of ``index`` the first form stands for:
        where those are the C front end's ``(f / n, f % n)`` reading of one flat index
        ``f`` into the rows they span (:func:`delinearized`), the form of ``f`` over their
        extents' product, whose row-major flat index is ``f`` wherever the access is in
        bounds; else 1 (each component's form)."""
        extents = self.extents(array)
        for m in range(len(index), 1, -1):
            f = delinearized(index[:m], extents[:m], self.params) if extents else None
            if f is not None:
                return ([self.form(f, env), *(self.form(i, env) for i in index[m:])],
                        [math.prod(extents[:m]), *extents[m:]], m)
        return [self.form(i, env) for i in index], extents, 1

    def access(self, array, index, env: dict) -> None:
        """Prove an access's index and note the step of its flat index per step of each
        dimension's work-group id (global and local arrays)."""
        forms, extents, _ = self.index_forms(array, index, env)
        if extents is None:
            return
        for d in range(self.dims):
            if self.box[d][0] == self.box[d][1]:
                continue
            step, stride = 0, 1
            for f, extent in zip(reversed(forms), reversed(extents)):
                step += f.coeffs[d] * stride
                stride *= extent
            self.steps[d].add(step)

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
            if all(f is first for f in forms):      # the same binding in every branch
                env[name] = first
                continue
            if any(f is UNKNOWN for f in forms) or any(f.coeffs != first.coeffs
                                                       for f in forms):
                env[name] = UNKNOWN if any(f is not first for f in forms) else first
            else:
                env[name] = Form(first.coeffs, min(f.lo for f in forms),
                                 max(f.hi for f in forms))

    def block(self, stmts, env: dict) -> None:
        """Prove the statements ``stmts`` with the names of ``env`` (bound there as the
        statements run)."""
        outer, self.env = self.env, env
        self.visit_all(stmts)
        self.env = outer

    def generic_visit(self, s) -> None:
        raise Unproved(f"a statement of kind {type(s).__name__}")

    def visit_Let(self, s: S.Let) -> None:
        self.env[s.name] = self.form(s.value, self.env)

    def visit_DeclareInt(self, s: S.DeclareInt) -> None:
        self.env[s.name] = UNKNOWN if s.value is None else self.form(s.value, self.env)

    visit_AssignInt = visit_Let

    def visit_Assign(self, s) -> None:
        for i in s.index:
            self.form(i, self.env)
        self.floats(s.value, self.env)

    visit_Accumulate = visit_Assign

    def visit_Store(self, s: S.Store) -> None:
        self.access(s.array, s.index, self.env)
        self.floats(s.value, self.env)

    def visit_Shuffle(self, s: S.Shuffle) -> None:
        self.form(s.lane, self.env)
        self.floats(s.value, self.env)

    def visit_VectorLoad(self, s: S.VectorLoad) -> None:
        self.access(s.array, s.index, self.env)

    def visit_VectorStore(self, s: S.VectorStore) -> None:
        self.access(s.array, s.index, self.env)
        for v in s.values:
            self.floats(v, self.env)

    def visit_If(self, s: S.If) -> None:
        truth = self.cond(s.cond, self.env)
        then, orelse = dict(self.env), dict(self.env)
        self.undecided += truth is None
        if truth is not False:      # a branch no work-item of the box takes is not proved
            self.block(s.then, then)
        if truth is not True:
            self.block(s.orelse, orelse)
        self.undecided -= truth is None
        branches = (then, orelse) if truth is None else (then,) if truth else (orelse,)
        self.merge(self.env, *branches)

    def visit_While(self, s: S.While) -> None:
        """Unrolled: each iteration proved with the names as they are at its start, until
        the condition fails, or a ``break`` is taken, in every work-item (at most
        :data:`MAX_WHILE_ITERATIONS`); after it, what the names may hold where work-items
        leave it."""
        env, leaving = self.env, []
        for k in range(MAX_WHILE_ITERATIONS + 1):
            if k or not s.do_while:
                truth = self.cond(s.cond, env)
                if truth is not True:         # some or all work-items leave here
                    leaving.append(dict(env))
                if truth is False:
                    break
            if k == MAX_WHILE_ITERATIONS:
                raise Unproved(f"the while loop at {s.source or 'its place'} runs more than "
                               f"{MAX_WHILE_ITERATIONS} iterations or for a number of "
                               "iterations the proof does not bound")
            exits = _Exits(self.undecided)
            self.loops.append(exits)
            body = dict(env)
            self.block(s.body, body)
            self.loops.pop()
            leaving += exits.breaks
            if exits.ended:                   # every work-item took a break
                break
            self.merge(body, body, *exits.continues)
            self.block(s.update, body)
            env = body
        self.merge(self.env, *leaving)

    def visit_Break(self, s) -> None:
        exits = self.loops[-1] if self.loops else None
        if exits is None:
            raise Unproved("a break out of a for loop (its number of iterations is not known "
                           "statically)")
        exits.breaks.append(dict(self.env))
        exits.ended |= self.undecided == exits.undecided

    def visit_Continue(self, s) -> None:
        exits = self.loops[-1] if self.loops else None
        if exits is None:
            raise Unproved("a continue in a for loop")
        exits.continues.append(dict(self.env))

    def visit_For(self, s: S.For) -> None:
        self.loop(s, self.env)

    def visit_DeclareFloat(self, s) -> None:
        """Declarations, barriers and returns hold no integer expression."""

    visit_DeclarePrivateArray = visit_Barrier = visit_Return = visit_DeclareFloat

    def loop(self, s: S.For, env: dict) -> None:
        carried = assigned_outside(s.body)
        if carried:
            raise Unproved(f"integer {carried[0]} is assigned in the loop over {s.var}: its "
                           "value can change from one iteration to the next")
        start, stop, step = (self.form(s.start, env), self.form(s.stop, env),
                             self.form(s.step, env))
        what = (f"the loop over {s.var} from {describe_int(s.start)} to "
                f"{describe_int(s.stop)} runs a number of times that varies with the "
                "work-group id")
        if step.varies:
            raise Unproved(what)
        for d, (a, b) in enumerate(zip(start.coeffs, stop.coeffs)):
            if a != b:      # each work-group of the interval on its own: its trips fixed
                first, last = self.box[d]
                raise Split(d, tuple(range(first + 1, last + 1)), what)
        body = dict(env)
        body[s.var] = Form(start.coeffs, start.lo, max(start.lo, stop.hi - 1))
        self.loops.append(None)
        self.block(s.body, body)
        self.loops.pop()
        self.merge(env, dict(env), body)   # the loop may run no iteration


@dataclass
class _Exits:
    """Where work-items leave one iteration of a ``While`` loop: the names at each
    ``break`` and ``continue``, and whether every work-item takes a ``break`` (one reached
    under decided conditions only: ``undecided`` is the count of undecided conditions
    around the loop)."""

    undecided: int
    breaks: list = field(default_factory=list)
    continues: list = field(default_factory=list)
    ended: bool = False


def delinearized(index, extents, params) -> S.IntExpr | None:
    """``f`` where ``index`` (two or more components over ``extents``) is the C front
    end's reading of a flat index ``f``: ``(f / n, f % n)`` with ``n`` the last extent, the
    components before the last being the same reading of ``f / n`` (a one-component
    reading is that expression itself), else ``None``. For ``f`` from 0 to below the
    extents' product the components are in bounds and their row-major flat index is
    ``f``; for any other ``f`` one of them is out of bounds."""
    if len(index) < 2 or len(index) != len(extents):
        return None
    last = index[-1]
    if not (isinstance(last, S.BinOp) and last.op == "%"
            and _static(last.right, params) == extents[-1] and extents[-1] > 0):
        return None
    outer = index[0] if len(index) == 2 else delinearized(index[:-1], extents[:-1], params)
    if isinstance(outer, S.BinOp) and outer.op == "/" and outer.left is last.left and \
            _static(outer.right, params) == extents[-1]:
        return last.left
    return None


def _static(e: S.IntExpr, params) -> int | None:
    if isinstance(e, S.Const):
        return e.value
    if isinstance(e, S.Param):
        return params.get(e.name)
    return None


_ASSIGNED: dict[int, tuple[tuple, list[str]]] = {}
""":func:`assigned_outside` by the identity of the statements (each held, so that its id
is not reused while it is here); a loop body is walked once however many boxes prove it."""


def assigned_outside(stmts) -> list[str]:
    """The integers that ``AssignInt`` statements of ``stmts`` assign, at any depth, that
    no ``DeclareInt`` of ``stmts`` declares (values carried from one pass over ``stmts``
    to the next, where ``stmts`` is a loop's body)."""
    found = _ASSIGNED.get(id(stmts))
    if found is not None and found[0] is stmts:
        return found[1]
    declared = {s.name for s in walk_statements(stmts) if isinstance(s, S.DeclareInt)}
    names = sorted({s.name for s in walk_statements(stmts)
                    if isinstance(s, S.AssignInt) and s.name not in declared})
    if len(_ASSIGNED) >= 4096:
        _ASSIGNED.clear()
    _ASSIGNED[id(stmts)] = (stmts, names)
    return names


class TranslationProver(StatementProver):
    """:class:`StatementProver` that also records, per local and private array, the
    work-group coefficients of every access's index (:func:`.class_safety.translation_problem`)."""

    def __init__(self, schedule: S.Schedule, box):
        super().__init__(schedule, box)
        self.moves: dict[tuple[str, str], set] = {}
        self.problem: str | None = None

    def note(self, array, index, env: dict) -> None:
        if isinstance(array, S.GlobalArray):
            return
        space = "local" if isinstance(array, S.LocalArray) else "private"
        forms, _, flat = self.index_forms(array, index, env)
        self.moves.setdefault((space, array.name), set()).add(
            (flat, tuple(f.coeffs for f in forms)))

    def note_named(self, space: str, name: str, index, env: dict) -> None:
        coeffs = tuple(self.form(i, env).coeffs for i in index)
        self.moves.setdefault((space, name), set()).add((1, coeffs))

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
