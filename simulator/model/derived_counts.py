"""Closed forms of a schedule's counts, derived from its IR: piecewise quasi-polynomials in
the launch's sizes, counted with isl and Barvinok (``islpy-barvinok``).

Every statement executes on an *iteration domain*: the work-group ids ``g0..``, the
work-item ids ``l0..`` and the trips of the loops around it (trip ``t >= 0`` of a loop
runs with its counter at ``start + step·t``), restricted by the NDRange
(``0 <= l_d < local_size[d]``, ``local_size[d]·(g_d + 1) <= global_size[d]``), the loop
bounds, the guards of the ``If`` statements around it and the ``return`` statements before
it. Where all of these are affine in the sizes and the ids (C's ``/`` and ``%`` by a
constant included: quasi-affine), the domain is an isl set with the sizes as parameters and
its number of points, Barvinok's ``card()``, is a piecewise quasi-polynomial of the sizes.
The counts are sums of those numbers, each times what one execution counts:

- ``global_load_elems_by_buffer`` / ``global_store_elems_by_buffer``: the loads and stores
  of each global array (a ``float2``/``float4`` access counts 2/4 elements), and their sums
  ``global_load_elems``, ``global_store_elems`` (and the bytes, 4 per element);
- ``local_load_elems``, ``local_store_elems``: accesses of local arrays;
- ``flop``: ``+ - * /``, every float built-in and select, and ``+=``, one each (a negation
  none), as :class:`simulator.observers.counters.TrafficCounts` counts them;
- ``barriers``: one per work-group per barrier it reaches: the points of the domain with
  the work-item ids projected out, i.e. each trip of the loops around it that some
  work-item of the work-group makes (the simulator's count; a trip only some make is
  also its barrier-divergence hazard);
- ``work_groups``: the points of the NDRange's work-group ids.

What cannot be derived is named with its reason (:attr:`DerivedCounts.not_derived`), and
the simulator's counts stand alone for it: a loop on a condition (``while``; its trip count
is no affine bound), an integer assigned more than once, a product of two values that vary
(``i * j``), a division by a value that varies, an unsigned conversion of a value that may
be negative, a ``return`` inside a loop; ``global_load_elems_per_tile`` (a maximum over
work-groups, not a sum); a counter whose form is not done within :data:`DERIVE_SECONDS`
of the derivation's start ("no closed form derived within 4 s: ..."). Requests, sectors
and bank conflicts (which depend on a device
model's sub-group and sector sizes and on each index) are not derived here.

Integers are mathematical integers: a conversion to a signed C type is the identity (the
kernel's integers are taken not to overflow it); an access the simulator skips as an out-of-bounds hazard is counted
here (the forms are those of the kernel as written).

The sizes: a :class:`SizeBinding` says which names are the sizes, how each runtime
integer argument of the kernel (:class:`Param`) and each NDRange dimension follows from
them. Without the NDRange's forms the launch's NDRange is taken as fixed (said in
:attr:`DerivedCounts.notes`).

Errors: :class:`ValueError` from :meth:`DerivedCounts.evaluate` for a size that is not an
integer of at least 1 or a name that is no size.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.sequence import is_sequence
from tiletraffic.simulator.ir.visitor import Visitor, walk, walk_statements

FLOP_NODES = (S.FBinOp, S.FCall, S.Select)
"""Float expressions that count one FLOP each."""

NOT_SUMMED = {"global_load_elems_per_tile": "the busiest work-group's global loads: a "
                                            "maximum over work-groups, not a sum of counts"}
"""Counters no sum of domain sizes gives, with why."""

COUNTERS = ("global_load_elems", "global_store_elems", "global_load_bytes",
            "global_store_bytes", "local_load_elems", "local_store_elems", "barriers", "flop",
            "work_groups")
"""The scalar counters derived (``TrafficCounts.to_dict()``'s keys, without the per-buffer
dictionaries and ``global_load_elems_per_tile``)."""


class NotAffine(Exception):
    """An expression or condition that is not affine in the sizes, ids and loop counters;
    the message says which and why."""


@dataclass(frozen=True)
class SizeBinding:
    """How a launch depends on its sizes.

    Attributes:
        sizes: the sizes, each with the launch's value: the parameters of the closed forms.
        params: each runtime integer argument of the kernel (an IR :class:`Param` name) as
            an integer expression of the sizes (``Param(size name)`` atoms); an argument
            not named here is its value in the schedule, a constant.
        global_size: the NDRange per dimension as expressions of the sizes, or ``None``:
            the launch's NDRange, fixed.
    """

    sizes: tuple[tuple[str, int], ...]
    params: Mapping[str, S.IntExpr] = field(default_factory=dict)
    global_size: tuple[S.IntExpr, ...] | None = None


@dataclass
class DerivedCounts:
    """The derived closed forms of one launch (or kernel sequence).

    Attributes:
        sizes: the size names, the forms' parameters, with the launch's values.
        forms: counter -> its closed form as an isl piecewise quasi-polynomial; per buffer
            ``"global_load_elems_by_buffer[A]"``.
        not_derived: counter (or ``counter[buffer]``) -> why it has no closed form here.
        notes: what the forms assume (one sentence each).
        buffers: the global arrays, in signature order (each kernel's, for a sequence).
    """

    sizes: dict[str, int]
    forms: dict
    not_derived: dict[str, str]
    notes: list[str]
    buffers: tuple[str, ...]

    def text(self, key: str) -> str | None:
        """The closed form of ``key`` as text (``2 * N^2 * floor((N)/16)``; pieces joined by
        ``; `` with their conditions), None where it is not derived."""
        form = self.forms.get(key)
        return None if form is None else form_text(form)

    def texts(self) -> dict[str, str]:
        """Every derived form as text, by counter."""
        return {key: form_text(form) for key, form in self.forms.items()}

    def evaluate(self, sizes: Mapping[str, int] | None = None) -> dict:
        """The derived counts at ``sizes`` (size name -> integer; a size left out keeps the
        launch's value), with the keys of ``TrafficCounts.to_dict()`` that are derived
        (``global_load_elems_by_buffer`` etc. as dictionaries of the derived buffers).

        Raises:
            ValueError: a name that is no size, or a value that is not an integer of at
                least 1 (the forms hold for sizes of at least 1).
        """
        values = dict(self.sizes)
        for name, value in (sizes or {}).items():
            if name not in values:
                raise ValueError(f"{name!r} is not a size of these closed forms; the sizes: "
                                 f"{', '.join(values) or 'none'}")
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"size {name} = {value!r} is not an integer")
            if value < 1:
                raise ValueError(f"size {name} = {value} is not positive: sizes are "
                                 "integers of at least 1")
            values[name] = value
        out: dict = {}
        for key, form in self.forms.items():
            value = _value(form, values)
            if "[" in key:
                counter, buffer = key[:-1].split("[", 1)
                out.setdefault(counter, {})[buffer] = value
            else:
                out[key] = value
        return out


def _value(form, values: Mapping[str, int]) -> int:
    if isinstance(form, int):
        return form
    names = form.get_space().get_var_names(_isl().dim_type.param)
    value = form.eval_with_dict({n: values[n] for n in names})
    return int(value.to_python() if hasattr(value, "to_python") else value)


def form_text(form) -> str:
    """An isl piecewise quasi-polynomial as text without isl's braces: ``16 * floor((15 +
    N)/16)^2``; pieces joined by ``; ``, each with its condition (``... : N >= 16``)."""
    if isinstance(form, int):
        return str(form)
    text = merged_pieces(form).to_str()
    inner = text[text.index("{") + 1:text.rindex("}")].strip()
    return inner or "0"


def merged_pieces(form, max_pieces: int = 32):
    """``form`` (an isl piecewise quasi-polynomial) with every piece whose polynomial another
    piece's equals on its domain (``130 * K : M = 65`` beside ``2 * M * K``) joined into that
    one, the joined domain written as its hull where that is the same set: the same function,
    fewer pieces. A form of more than ``max_pieces`` pieces is returned as it is (the pairwise
    tests grow with the square of the pieces)."""
    isl = _isl()
    pieces = list(form.get_pieces())
    if not 1 < len(pieces) <= max_pieces:
        return form
    joined = True
    while joined:
        joined = False
        for i, (domain, poly) in enumerate(pieces):
            for j, (other, other_poly) in enumerate(pieces):
                if i == j:
                    continue
                difference = isl.PwQPolynomial.alloc(domain, other_poly.sub(poly)).gist(domain)
                if all(q.is_zero() for _, q in difference.get_pieces()):
                    union = other.union(domain).coalesce()
                    hull = isl.Set.from_basic_set(union.polyhedral_hull())
                    pieces[j] = (hull if hull.is_equal(union) else union, other_poly)
                    del pieces[i]
                    joined = True
                    break
            if joined:
                break
    out = None
    for domain, poly in pieces:
        piece = isl.PwQPolynomial.alloc(domain, poly)
        out = piece if out is None else out.add_disjoint(piece)
    return out


def _isl():
    import islpy
    return islpy


# --------------------------------------------------------------------- expressions to isl
class _Space:
    """The one isl set space of a kernel's iteration domains: the sizes as parameters; the
    work-group ids, the work-item ids and one trip number per ``For`` loop as set
    dimensions."""

    def __init__(self, sizes: tuple[str, ...], dims: int, loops: list[S.For]):
        isl = _isl()
        self.isl = isl
        self.sizes, self.dims = sizes, dims
        self.loop_dim = {id(loop): 2 * dims + i for i, loop in enumerate(loops)}
        self.names = ([f"g{d}" for d in range(dims)] + [f"l{d}" for d in range(dims)]
                      + [f"v{i}" for i in range(len(loops))])
        self.header = f"[{', '.join(sizes)}] -> {{ [{', '.join(self.names)}]"
        self.universe = isl.Set(self.header + " }")
        self.context = isl.Set(f"[{', '.join(sizes)}] -> {{ : "
                               + (" and ".join(f"{s} >= 1" for s in sizes) or "true") + " }")
        zero = " and ".join(f"{n} = 0" for n in self.names[2 * dims:]) or "true"
        self.outside_loops = isl.Set(f"{self.header} : {zero} }}")

    def aff(self, text: str):
        return self.isl.PwAff(f"{self.header} -> [({text})] }}")

    def const(self, value: int):
        return self.aff(str(value))

    def free(self, domain, dim: int):
        """``domain`` with set dimension ``dim`` unconstrained (a loop entered)."""
        isl = self.isl
        freed = domain.project_out(isl.dim_type.set, dim, 1)
        freed = freed.insert_dims(isl.dim_type.set, dim, 1)
        return freed.set_dim_name(isl.dim_type.set, dim, self.names[dim])


class _Affine:
    """IR integer expressions and conditions as isl piecewise affine functions and sets of
    a :class:`_Space` (:class:`NotAffine` where they are not)."""

    def __init__(self, space: _Space, params: dict, local_size: tuple[int, ...]):
        self.space, self.params, self.local_size = space, params, local_size

    def int(self, e: S.IntExpr, env: dict, domain=None):
        sp = self.space
        if isinstance(e, S.Const):
            return sp.const(e.value)
        if isinstance(e, S.Param):
            if e.name not in self.params:
                raise NotAffine(f"the argument {e.name} has no value")
            return self.params[e.name]
        if isinstance(e, S.Var):
            value = env.get(e.name)
            if value is None:
                raise NotAffine(f"the integer {e.name} is not bound once to an affine value")
            if isinstance(value, NotAffine):
                raise value
            return value
        if isinstance(e, S.WorkItemId):
            if e.dim >= sp.dims:
                return sp.const(0)
            group, item = sp.aff(f"g{e.dim}"), sp.aff(f"l{e.dim}")
            return {"group": group, "local": item}.get(
                e.kind, group.scale_val(sp.isl.Val(self.local_size[e.dim])) + item)
        if isinstance(e, S.BinOp):
            return self.binop(e, env, domain)
        if isinstance(e, S.Min):
            return self.int(e.left, env, domain).min(self.int(e.right, env, domain))
        if isinstance(e, S.Wrap):
            return self.wrap(e, env, domain)
        if isinstance(e, S.IntSelect):     # piecewise: each operand where it is chosen
            inside = self.cond(e.cond, env, domain)
            then, orelse = self.int(e.then, env, domain), self.int(e.orelse, env, domain)
            outside = self.space.universe.subtract(inside)
            return then.intersect_domain(inside).union_add(orelse.intersect_domain(outside))
        raise NotAffine(f"{type(e).__name__} is no integer expression of the IR")

    def binop(self, e: S.BinOp, env: dict, domain):
        a, b = self.int(e.left, env, domain), self.int(e.right, env, domain)
        if e.op == "+":
            return a + b
        if e.op == "-":
            return a - b
        text = S.describe_int(e)
        if e.op not in ("*", "/", "%"):        # bitwise operators and shifts
            raise NotAffine(f"{text} applies the bitwise operator {e.op}, which is not "
                            "affine")
        if e.op == "*":
            if not (a.is_cst() or b.is_cst()):
                raise NotAffine(f"{text} multiplies two values that vary")
            return a.mul(b)
        if not b.is_cst():
            raise NotAffine(f"{text} divides by a value that varies")
        zero = b.eq_set(self.space.const(0))
        if not zero.is_empty():
            raise NotAffine(f"{text} divides by zero")
        return a.tdiv_q(b) if e.op == "/" else a.tdiv_r(b)

    def wrap(self, e: S.Wrap, env: dict, domain):
        value = self.int(e.operand, env, domain)
        if e.signed:
            return value
        negative = value.lt_set(self.space.const(0))
        if domain is not None:
            negative = negative.intersect(domain)
        if not negative.is_empty():
            raise NotAffine(f"{S.describe_int(e)} converts a value that may be negative to "
                            "an unsigned type")
        return value

    def cond(self, c: S.Cond, env: dict, domain=None):
        if isinstance(c, S.Compare):
            a, b = self.int(c.left, env, domain), self.int(c.right, env, domain)
            method = {"<": a.lt_set, "<=": a.le_set, ">": a.gt_set, ">=": a.ge_set,
                      "==": a.eq_set, "!=": a.ne_set}[c.op]
            return method(b)
        if isinstance(c, S.BoolOp):
            left, right = self.cond(c.left, env, domain), self.cond(c.right, env, domain)
            return left.intersect(right) if c.op == "&&" else left.union(right)
        if isinstance(c, S.Not):
            return self.space.universe.subtract(self.cond(c.operand, env, domain))
        raise NotAffine(f"{type(c).__name__} is no condition of the IR")


# ------------------------------------------------------------------------------ counting
def card(domain, deadline: float | None = None):
    """The number of points of an isl set as a piecewise quasi-polynomial of its parameters
    (Barvinok's ``card``) for sizes of at least 1, each piece's condition simplified under
    that: counted per disjoint piece, with each division of one variable (``floor(l1/4)``:
    a work-item id split into warps and lanes) turned into a variable and each piece split
    into groups of variables no condition joins, whose counts multiply
    (:func:`simulator.model.isl_count.count_points`).

    Raises:
        simulator.model.isl_count.PastDeadline: ``deadline`` (``time.monotonic()``) passed.
    """
    from tiletraffic.simulator.model.isl_count import count_points

    isl = _isl()
    names = domain.get_space().get_var_names(isl.dim_type.param)
    context = isl.Set(f"[{', '.join(names)}] -> {{ : "
                      + (" and ".join(f"{n} >= 1" for n in names) or "true") + " }")
    counted = count_points(domain.intersect_params(context), deadline).coalesce()
    pieces = [(where.gist_params(context), polynomial)
              for where, polynomial in counted.get_pieces()]
    if not pieces or any(not a.intersect(b).is_empty()
                         for i, (a, _) in enumerate(pieces) for b, _ in pieces[i + 1:]):
        return counted                         # the simpler conditions would overlap
    simplified = isl.PwQPolynomial.alloc(*pieces[0])
    for where, polynomial in pieces[1:]:
        simplified = simplified.add(isl.PwQPolynomial.alloc(where, polynomial))
    return simplified


# --------------------------------------------------------------------------- what one counts
def statement_counts(stmt: S.Stmt) -> dict[str, int]:
    """What one execution of the simple statement ``stmt`` by one work-item counts, by
    counter (``global_load_elems_by_buffer[A]``, ``local_store_elems``, ``flop``, ...);
    the bodies of compound statements are not entered (their conditions hold no floats)."""
    out: dict[str, int] = {}

    def add(key: str, amount: int) -> None:
        out[key] = out.get(key, 0) + amount

    def access(array, direction: str, elems: int) -> None:
        if isinstance(array, S.GlobalArray):
            add(f"global_{direction}_elems_by_buffer[{array.name}]", elems)
        else:
            add(f"local_{direction}_elems", elems)

    floats: list = []
    if isinstance(stmt, (S.Assign, S.Accumulate)):
        floats.append(stmt.value)
        if isinstance(stmt, S.Accumulate):
            add("flop", 1)
    elif isinstance(stmt, S.Store):
        floats.append(stmt.value)
        access(stmt.array, "store", 1)
    elif isinstance(stmt, S.VectorStore):
        floats.extend(stmt.values)
        access(stmt.array, "store", stmt.width)
    elif isinstance(stmt, S.VectorLoad):
        access(stmt.array, "load", stmt.width)
    for value in floats:
        for node in walk(value):
            if isinstance(node, FLOP_NODES):
                add("flop", 1)
            elif isinstance(node, S.Load):
                access(node.array, "load", 1)
    return {key: amount for key, amount in out.items() if amount}


def subtree_counters(stmts) -> set[str]:
    """Every counter a statement tuple (its nested bodies included) may count."""
    keys = {key for s in walk_statements(stmts) for key in statement_counts(s)}
    if any(isinstance(s, S.Barrier) for s in walk_statements(stmts)):
        keys.add("barriers")
    return keys


# ------------------------------------------------------------------------------- the walk
class _GiveUp(Exception):
    """No count of the kernel can be derived (the message says why)."""


class _DomainCounter(Visitor):
    """Walks a kernel's statements with the iteration domain of each, adding its size (times
    what the statement counts) to the forms."""

    def __init__(self, space: _Space, affine: _Affine, assigned: set[str]):
        self.space, self.affine, self.assigned = space, affine, assigned
        self.terms: dict[str, list] = {}
        self.forms: dict = {}
        self.not_derived: dict[str, str] = {}
        self.domain = None
        self.env: dict = {}
        self._cards: dict = {}
        import time
        self.deadline = time.monotonic() + DERIVE_SECONDS

    # the counting
    def card(self, domain, per_work_group: bool = False):
        key = (id(domain), per_work_group)
        if key not in self._cards:
            counted = domain
            if per_work_group:
                counted = domain.project_out(self.space.isl.dim_type.set, self.space.dims,
                                             self.space.dims)
            self._cards[key] = (domain, card(counted, self.deadline))
        return self._cards[key][1]

    def add(self, key: str, domain, times: int, per_work_group: bool = False) -> None:
        from tiletraffic.simulator.model.isl_count import PastDeadline

        if key in self.not_derived or domain.is_empty():
            return
        try:
            amount = self.card(domain, per_work_group).scale_val(self.space.isl.Val(times))
        except PastDeadline as err:
            self.not_derived[key] = f"no closed form derived within {DERIVE_SECONDS:g} s: {err}"
            self.terms.pop(key, None)
            return
        self.terms.setdefault(key, []).append(amount)

    def summed(self) -> None:
        """The forms: each counter's terms added, within :data:`DERIVE_SECONDS` of the
        derivation's start in all."""
        for key, terms in self.terms.items():
            if key in self.not_derived:
                continue
            try:
                self.forms[key] = _summed(terms, self.deadline)
            except SumRefused as err:
                self.not_derived[key] = str(err)

    def give_up_on(self, stmts, why: str) -> None:
        for key in subtree_counters(stmts):
            self.not_derived.setdefault(key, why)
            self.terms.pop(key, None)

    # the statements
    def block(self, stmts, domain, env: dict):
        """Walk ``stmts`` on ``domain``; the set of the points that returned."""
        saved = self.domain, self.env
        self.domain, self.env = domain, dict(env)
        returned = None
        try:
            for stmt in stmts:
                if self.domain.is_empty():
                    break
                exited = self.visit(stmt)
                if exited is not None and not exited.is_empty():
                    returned = exited if returned is None else returned.union(exited)
                    self.domain = self.domain.subtract(exited)
        finally:
            self.domain, self.env = saved
        return returned

    def generic_visit(self, stmt) -> None:
        for key, times in statement_counts(stmt).items():
            self.add(key, self.domain, times)

    def visit_Let(self, s: S.Let) -> None:
        self.bind(s.name, s.value)

    def visit_DeclareInt(self, s: S.DeclareInt) -> None:
        if s.name in self.assigned or s.value is None:
            self.env[s.name] = NotAffine(f"the integer {s.name} is assigned in the kernel: "
                                         "its value is no affine function of the ids")
        else:
            self.bind(s.name, s.value)

    def bind(self, name: str, value: S.IntExpr) -> None:
        try:
            self.env[name] = self.affine.int(value, self.env, self.domain)
        except NotAffine as err:
            self.env[name] = err

    def visit_AssignInt(self, s: S.AssignInt) -> None:
        return None

    def visit_Barrier(self, s: S.Barrier) -> None:
        self.add("barriers", self.domain, 1, per_work_group=True)

    def visit_Return(self, s: S.Return):
        return self.domain

    def visit_If(self, s: S.If):
        try:
            inside = self.affine.cond(s.cond, self.env, self.domain)
        except NotAffine as err:
            self.not_affine(s, (*s.then, *s.orelse), f"the condition: {err}")
            return None
        exits = [self.block(s.then, self.domain.intersect(inside), self.env),
                 self.block(s.orelse, self.domain.subtract(inside), self.env)]
        exits = [e for e in exits if e is not None]
        return exits[0].union(exits[1]) if len(exits) == 2 else (exits[0] if exits else None)

    def visit_For(self, s: S.For) -> None:
        """The loop's dimension is its trip, ``t >= 0`` with the counter ``start + step·t``
        below ``stop``: work-items whose counters start apart share their trips, so that a
        barrier's points with the work-item ids projected out are the work-group's trips
        (the simulator advances the work-items of a work-group trip by trip)."""
        sp = self.space
        dim = sp.loop_dim[id(s)]
        trip = sp.aff(sp.names[dim])
        try:
            start = self.affine.int(s.start, self.env, self.domain)
            stop = self.affine.int(s.stop, self.env, self.domain)
            step = self.affine.int(s.step, self.env, self.domain)
            if not step.is_cst():
                raise NotAffine(f"the step {S.describe_int(s.step)} varies")
        except NotAffine as err:
            self.not_affine(s, s.body, f"the bounds of the loop over {s.var}: {err}")
            return None
        counter = start + step.mul(trip)
        inside = trip.ge_set(sp.const(0)).intersect(counter.lt_set(stop))
        domain = sp.free(self.domain, dim).intersect(inside)
        exited = self.block(s.body, domain, {**self.env, s.var: counter})
        if exited is not None:
            raise _GiveUp("a return inside the loop over " + s.var)

    def visit_While(self, s: S.While) -> None:
        self.not_affine(s, (*s.body, *s.update), "a while loop (its trip count is a "
                        "condition's, no affine bound)" + (f" at {s.source}" if s.source else ""))

    def not_affine(self, s, stmts, why: str) -> None:
        if any(isinstance(x, S.Return) for x in walk_statements(stmts)):
            raise _GiveUp(f"a return under {why}")
        self.give_up_on(stmts, why)


# --------------------------------------------------------------------------------- entry
def derive(schedule, binding) -> DerivedCounts:
    """The closed forms of ``schedule``'s counts (a Schedule or a KernelSequence, whose
    kernels' forms are added) in the sizes of ``binding``: a :class:`SizeBinding`, or a
    function giving each kernel's (for kernels whose NDRanges differ)."""
    kernels = schedule.kernels if is_sequence(schedule) else (schedule,)
    bindings = [binding(k) if callable(binding) else binding for k in kernels]
    parts = [_derive_kernel(k, b) for k, b in zip(kernels, bindings)]
    if len(parts) == 1:
        return parts[0]
    sizes: dict[str, int] = {}
    for b in bindings:
        sizes.update(b.sizes)
    total = DerivedCounts(sizes, {}, {}, [], ())
    for part in parts:
        for key, why in part.not_derived.items():
            total.not_derived.setdefault(key, why)
        total.notes += [n for n in part.notes if n not in total.notes]
        total.buffers += tuple(b for b in part.buffers if b not in total.buffers)
    for part in parts:
        for key, form in part.forms.items():
            if key not in total.not_derived:
                try:
                    total.forms[key] = _plus(total.forms.get(key, 0), form)
                except SumRefused as err:
                    total.not_derived[key] = str(err)
                    total.forms.pop(key, None)
    return total


def _derive_kernel(schedule: S.Schedule, binding: SizeBinding) -> DerivedCounts:
    dims = len(schedule.local_size)
    loops = [s for s in walk_statements(schedule.body) if isinstance(s, S.For)]
    size_names = tuple(name for name, _ in binding.sizes)
    space = _Space(size_names, dims, loops)
    at_sizes = _Affine(space, {n: space.aff(n) for n in size_names}, schedule.local_size)
    notes: list[str] = []
    params = {}
    for name, value in schedule.params:
        if isinstance(value, float):
            continue
        expr = binding.params.get(name, S.Const(int(value)))
        try:
            params[name] = at_sizes.int(expr, {})
            if _launch_value(expr, binding) != value:
                raise NotAffine(f"its form {S.describe_int(expr)} gives "
                                f"{_launch_value(expr, binding)} at the launch's sizes")
        except NotAffine as err:
            notes.append(f"the argument {name} is taken at its value {value}: {err}")
            params[name] = space.const(int(value))
    affine = _Affine(space, params, schedule.local_size)
    domain, groups = _launch_domain(space, at_sizes, schedule, binding, notes)
    assigned = {s.name for s in walk_statements(schedule.body) if isinstance(s, S.AssignInt)}
    assigned |= {u.name for s in walk_statements(schedule.body) if isinstance(s, S.While)
                 for u in s.update}
    counter = _DomainCounter(space, affine, assigned)
    buffers = tuple(a.name for a in schedule.arrays)
    out = DerivedCounts(dict(binding.sizes), {}, {}, notes, buffers)
    try:
        if S.reads_int_buffer(schedule.body):
            raise _GiveUp("the kernel reads an integer buffer, whose values may choose "
                          "addresses, conditions and loop bounds")
        if S.branches_on_data(schedule.body):
            raise _GiveUp("the kernel branches on floats of the data, whose values choose "
                          "the branches taken")
        counter.block(schedule.body, domain, {})
        counter.summed()
    except _GiveUp as err:
        out.not_derived = {key: str(err) for key in _all_keys(buffers)}
        return out
    out.forms, out.not_derived = counter.forms, counter.not_derived
    for key, form in list(out.forms.items()):
        try:
            _value(form, out.sizes)
        except ValueError:                     # isl's infinity: an unbounded domain
            out.not_derived[key] = "its iteration domain is unbounded in the sizes"
            del out.forms[key]
    out.forms["work_groups"] = card(groups)
    for direction in ("load", "store"):
        for name in buffers:
            key = f"global_{direction}_elems_by_buffer[{name}]"
            if key not in out.forms and key not in out.not_derived:
                out.forms[key] = 0
    for key in ("local_load_elems", "local_store_elems", "barriers", "flop"):
        if key not in out.forms and key not in out.not_derived:
            out.forms[key] = 0
    _finish(out, {a.name: a.element_bytes for a in schedule.arrays})
    return out


def _all_keys(buffers) -> list[str]:
    return ([f"global_{d}_elems_by_buffer[{b}]" for d in ("load", "store") for b in buffers]
            + list(COUNTERS) + list(NOT_SUMMED))


def _launch_domain(space: _Space, at_sizes: _Affine, schedule: S.Schedule,
                   binding: SizeBinding, notes: list[str]):
    """The NDRange's domain (every loop counter 0) and its work-groups' set."""
    isl = space.isl
    domain = space.outside_loops
    global_size = binding.global_size
    if global_size is None:
        notes.append("the NDRange is the launch's, "
                     f"{' x '.join(map(str, schedule.global_size))}, at every size")
        global_size = tuple(S.Const(g) for g in schedule.global_size)
    for d, (items, total) in enumerate(zip(schedule.local_size, global_size)):
        try:
            extent = at_sizes.int(total, {})
            if _launch_value(total, binding) != schedule.global_size[d]:
                raise NotAffine(f"its form {S.describe_int(total)} gives "
                                f"{_launch_value(total, binding)} at the launch's sizes")
        except NotAffine as err:
            notes.append(f"NDRange dimension {d} is the launch's {schedule.global_size[d]}: "
                         f"{err}")
            extent = space.const(schedule.global_size[d])
        g, l = space.aff(f"g{d}"), space.aff(f"l{d}")
        domain = domain.intersect(l.ge_set(space.const(0))).intersect(
            l.lt_set(space.const(items))).intersect(g.ge_set(space.const(0))).intersect(
            (g + space.const(1)).scale_val(isl.Val(items)).le_set(extent))
    domain = domain.intersect_params(space.context)
    work_items = space.names[space.dims:]
    groups = domain.project_out(isl.dim_type.set, space.dims, len(work_items))
    return domain, groups


def _launch_value(e: S.IntExpr, binding: SizeBinding) -> int | None:
    """The value of a form of the sizes at the launch's sizes (None: not computable)."""
    from tiletraffic.simulator.kernels.ndrange import value_of
    try:
        return value_of(e, dict(binding.sizes))
    except (KeyError, TypeError, ZeroDivisionError):
        return None


def _finish(out: DerivedCounts, element_bytes: dict[str, int] | None = None) -> None:
    """Add the sums over buffers and the bytes (each buffer's elements times its
    ``element_bytes``, 4 where not given), where every part is derived."""
    element_bytes = element_bytes or {}
    for direction in ("load", "store"):
        keys = [f"global_{direction}_elems_by_buffer[{b}]" for b in out.buffers]
        total = f"global_{direction}_elems"
        missing = [k for k in keys if k not in out.forms]
        if missing:
            out.not_derived.setdefault(total, f"{missing[0]} is not derived: "
                                       + out.not_derived.get(missing[0], "unknown"))
            out.not_derived.setdefault(f"global_{direction}_bytes", out.not_derived[total])
            continue
        sizes = [element_bytes.get(b, S.FLOAT_BYTES) for b in out.buffers]
        try:
            out.forms[total] = _summed([out.forms[k] for k in keys])
            out.forms[f"global_{direction}_bytes"] = _summed(
                [out.forms[k] * size if isinstance(out.forms[k], int)
                 else out.forms[k].scale_val(_isl().Val(size)) for k, size in zip(keys, sizes)])
        except SumRefused as err:
            out.not_derived.setdefault(total, str(err))
            out.not_derived.setdefault(f"global_{direction}_bytes", str(err))
    for key, why in NOT_SUMMED.items():
        out.not_derived.setdefault(key, why)


DERIVE_SECONDS = 4.0
"""The time one kernel's derivation may take (checked between two counts or two sums, each
a fraction of it): isl's sum of piecewise forms intersects every piece of one with every
piece of the other, and forms with many pieces (a guard's edge cases for each size) may
take minutes to add. A counter whose form is not done by then is not derived (the
simulated count stands alone for it)."""

SUM_PIECES_MAX = 4096
"""The most pieces two forms may have together (the product of their numbers of pieces)
for :func:`_plus` to add them at all (one such sum may take minutes)."""


class SumRefused(Exception):
    """A sum of forms not attempted (:data:`DERIVE_SECONDS`, :data:`SUM_PIECES_MAX`); the
    message, one line, says why (the simulated count stands alone for that counter)."""


def _summed(parts: list, deadline: float | None = None):
    """The sum of integers and isl forms (an int where all are integers), added pairwise.

    Raises:
        SumRefused: ``deadline`` (``time.monotonic()``) passed before the sum was done, or
            two forms with too many pieces together (:data:`SUM_PIECES_MAX`).
    """
    from tiletraffic.simulator.model.isl_count import pairwise_sum

    forms = [p for p in parts if not isinstance(p, int)]
    constant = sum(p for p in parts if isinstance(p, int))
    if not forms:
        return constant
    summed = pairwise_sum(forms, _plus, deadline, lambda pairs: SumRefused(
        f"no closed form derived within {DERIVE_SECONDS:g} s: the sum of its {len(parts)} "
        f"statements' forms (up to {max(f.n_piece() for f in pairs)} pieces each) takes "
        "longer"))
    return _plus(summed, constant)


def _plus(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    if isinstance(a, int):
        a, b = b, a
    if isinstance(b, int):
        return a if b == 0 else a.add(_constant_like(a, b))
    if a.n_piece() * b.n_piece() > SUM_PIECES_MAX:
        raise SumRefused(f"no closed form derived: a sum of forms of {a.n_piece()} and "
                         f"{b.n_piece()} pieces (more than {SUM_PIECES_MAX} together) "
                         "would take minutes to simplify")
    return a.add(b).coalesce()


def _constant_like(form, value: int):
    isl = _isl()
    space = form.get_domain_space()
    return isl.PwQPolynomial.from_pw_aff(
        isl.PwAff.val_on_domain(isl.Set.universe(space), isl.Val(value)))


def builtin_binding(schedule):
    """The sizes of a built-in family's schedule: its parameters ``M``, ``K``, ``N`` (those
    it has), every other parameter a constant, the NDRange as
    :func:`simulator.kernels.ndrange.global_size_forms` gives it; for a kernel sequence,
    this function itself (each kernel bound on its own by :func:`derive`)."""
    from tiletraffic.simulator.kernels.ndrange import GEMM_SIZES, global_size_forms

    if is_sequence(schedule):
        return builtin_binding
    sizes = {name: value for name, value in schedule.params
             if name in GEMM_SIZES and isinstance(value, int)}
    return SizeBinding(tuple(sizes.items()), {name: S.Param(name) for name in sizes},
                       global_size_forms(schedule))
