"""Work-group classes of a schedule that reads integer buffers: the integers a work-group
loads become extra coordinates of its class, a static proof decides which.

A kernel whose loop bounds or conditions read an integer buffer (a CSR matrix's row
pointers: ``for (k = iptr[row]; k < iptr[row + 1]; k += 32)``) runs differently in every
work-group with the data, so the affine proof of :mod:`.class_safety` refuses it. Its counts
(loads, stores, barriers, FLOPs: :class:`simulator.observers.counters.TrafficCounts`) still
depend on the work-group through a few numbers only. :func:`data_classes` proves which, over
the same boxes of work-group ids as :func:`.class_safety.class_plan` (one segment per NDRange
dimension, cut where a condition changes), with :class:`DataProver`:

- an integer load whose index is one value per work-group (its form ``sum_d c_d *
  group_id(d) + r`` with ``r`` one number: the same for every work-item and iteration) is a
  *symbol*: its value in every work-group of the box is read from the buffer's contents,
  vectorised over the box (an index outside the buffer in any of them: refused; after a
  ``return`` that every work-item of the box takes, as in work-groups past the last row,
  nothing is read);
- with the *shift* (tried first), the first symbol's value ``s`` is one more coordinate of
  the forms, and symbol ``j`` is ``s + d_j``: every condition (``if``, ``select``, ``min``,
  loop conditions) must not move with ``s`` (``end - start``, not ``start``), and a loop's
  bounds move with it alike (``for k = start; k < end``: the trip count is ``d_end -
  d_start``); indices may move with it (addresses do not change counts). Without the shift
  every symbol is its own value;
- the differences ``d_j`` (or the values) are the same in every work-group of a class and
  enter the forms' ``r`` as that, so the base proof's argument holds for each class: every
  statement runs under the same masks, loops the same number of times;
- any other integer load (``ind[k + tid]``: per work-item, or at an index that moves with
  ``s``) is *opaque*: any value of the buffer, different in every work-group. It may only
  be part of a scalar access's index into a global or local array, and only where every
  value of the buffer keeps that index inside the array (so no work-group, executed or
  not, reads or stores outside it through it); in a condition, a loop bound, a divisor, a
  shift, a vector access's index, a private array's index or a shuffle's lane it is
  refused;
- an index of a local or private array may not move with the work-group id or the shift
  (which of its accesses touch one word would differ between the work-groups of a class).

A class is then a box and one value of every symbol's ``d_j`` (of its value, without the
shift) and, for every access whose index moves with the work-group id or the shift, one
room between its elements and its array's ends (capped where every element of the form
fits; an aligned vector access: one remainder modulo its width), so an access is out of
bounds (or misaligned) in a work-group exactly where it is in its class's
representative. Counts are element counts, which do not depend on addresses, so no
period is needed: these classes give :func:`simulator.engine.fast_path.count_launch`'s
counts only (not the requests, sectors and bank conflicts of a device model, which need
addresses a whole line apart). Hazards are those of the representatives: races in local
memory and reads of its words nothing stored through an opaque index (two work-items
scattering to one word), races in global memory, reads of outputs before a store and
unwritten outputs are not checked in the other work-groups.

Refused (one line why, every work-group then executes): a schedule that branches on
floats of the data, a condition or bound that depends on a loaded value beyond the above,
more than :data:`MAX_DATA_CLASSES` classes, or a box of more than
:data:`MAX_BOX_WORK_GROUPS` work-groups.
"""
from __future__ import annotations

import math
import weakref
from dataclasses import dataclass

import numpy as np

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.nodes import describe_int
from tiletraffic.simulator.ir.static import int_op_bounds
from tiletraffic.simulator.engine.accelerators.class_proof import (MAX_WHILE_ITERATIONS,
                                                                   UNKNOWN, Form,
                                                                   StatementProver, Unproved)
from tiletraffic.simulator.engine.accelerators.class_safety import boxes, refine_segments

MAX_DATA_CLASSES = 1 << 16
"""The most classes :func:`data_classes` gives (more: every work-group executes)."""

MAX_BOX_WORK_GROUPS = 1 << 24
"""The most work-groups of one box whose loaded integers are read (memory bound)."""


@dataclass(frozen=True)
class DataClasses:
    """Representatives (linear work-group ids, ascending) and how many work-groups each
    stands for (the same counts); ``shifted``: the loaded integers were compared by their
    differences from the first one (else by their values)."""

    representatives: np.ndarray
    weights: np.ndarray
    shifted: bool
    loop_steps: int = 1
    """The most iterations of a loop nest in any work-group (an upper envelope: a loop's
    largest trip count over its box, a while loop's at most
    :data:`.class_proof.MAX_WHILE_ITERATIONS`, nested loops' multiplied), at least 1."""


@dataclass(frozen=True)
class Opaque(Form):
    """An integer read from a buffer, different in every work-group: any value in
    ``lo .. hi`` (no work-group coefficients)."""


class DataProver(StatementProver):
    """:class:`.class_proof.StatementProver` over one box with the integer loads of the
    module docstring: the forms have one more coordinate (the shift ``s``, last), symbols'
    values over the box's work-groups are in :attr:`symbols`."""

    def __init__(self, schedule: S.Schedule, box, shift: bool):
        super().__init__(schedule, tuple(box) + ((0, 0),))
        self.dims = len(self.groups) + 1
        self.steps = [set() for _ in range(self.dims)]
        self.shift = shift
        self.contents = {a.name: a.values for a in schedule.arrays if a.is_int}
        self.symbols: dict[tuple, np.ndarray] = {}
        """Per symbol (array, index forms), its value - the shift in each work-group of
        the box (linear order)."""
        self.placements: dict[tuple, np.ndarray] = {}
        """Per access whose index moves with the work-group, where it lies against its
        array's ends in each work-group of the box (:meth:`place`): more keys of the classes."""
        self.shift_values: np.ndarray | None = None
        self._ids: list[np.ndarray] | None = None
        self.returned = False
        """Every work-item of the box has returned (a ``return`` outside loops under
        decided conditions only): what follows runs nowhere, its loads read nothing."""
        self.nest_steps, self.loop_steps = 1, 1
        """Iterations of the loops around the statement proved, and the most of any loop
        nest so far (:attr:`DataClasses.loop_steps`)."""

    @property
    def zero(self) -> tuple[int, ...]:
        return (0,) * self.dims

    def box_ids(self) -> list[np.ndarray]:
        """Per real dimension, the work-group id of every work-group of the box, in linear
        order (dimension 0 fastest)."""
        if self._ids is None:
            real = self.box[:-1]
            count = math.prod(last - first + 1 for first, last in real)
            if count > MAX_BOX_WORK_GROUPS:
                raise Unproved(f"a box of {count} work-groups (more than "
                               f"{MAX_BOX_WORK_GROUPS}) reads integers")
            grids = np.meshgrid(*(np.arange(f, l + 1, dtype=np.int64) for f, l in real[::-1]),
                                indexing="ij")
            self._ids = [g.reshape(-1) for g in grids[::-1]]
        return self._ids

    def opaque(self, *forms: Form) -> bool:
        return any(isinstance(f, Opaque) for f in forms)

    # ------------------------------------------------------------- integer expressions
    def form(self, e: S.IntExpr, env: dict) -> Form:
        if isinstance(e, S.IntLoad):
            return self.int_load(e, env)
        if isinstance(e, S.IntSelect) and self.cond(e.cond, env) is None:
            a, b = self.form(e.then, env), self.form(e.orelse, env)
            if self.opaque(a, b):
                (alo, ahi), (blo, bhi) = self.span(a), self.span(b)
                return Opaque(self.zero, min(alo, blo), max(ahi, bhi))
        return super().form(e, env)

    def int_load(self, e: S.IntLoad, env: dict) -> Form:
        """A symbol (module docstring) where the index is one value per work-group, else
        :class:`Opaque` with the range of the buffer's contents."""
        if self.returned:
            return Form(self.zero, 0, 0)
        self.access(e.array, e.index, env)
        forms = [self.form(i, env) for i in e.index]
        table = self.contents[e.array.name]
        if not table.size:
            raise Unproved(f"{S.describe_int(e)} reads an empty integer buffer")
        if self.opaque(*forms) or any(f.lo != f.hi or f.coeffs[-1] for f in forms):
            return Opaque(self.zero, *_value_range(e.array))
        key = (e.array.name, tuple((f.coeffs, f.lo) for f in forms))
        if key not in self.symbols:
            self.symbols[key] = self.values_of(e, forms, table)
        values = self.symbols[key]
        coeffs = self.zero[:-1] + (int(self.shift),)
        return Form(coeffs, int(values.min()), int(values.max()))

    def values_of(self, e: S.IntLoad, forms, table) -> np.ndarray:
        """The load's value minus the shift (the first symbol's value; 0 without the shift)
        in every work-group of the box."""
        ids = self.box_ids()
        dims = [self.params[s] for s in e.array.shape]
        flat = np.zeros(len(ids[0]), dtype=np.int64)
        for f, extent in zip(forms, dims):
            comp = np.full(len(ids[0]), f.lo, dtype=np.int64)
            for c, g in zip(f.coeffs[:-1], ids):
                if c:
                    comp += c * g
            if comp.min() < 0 or comp.max() >= extent:
                raise Unproved(f"{describe_int(e)} reads outside {e.array.name} in a "
                               "work-group of the launch")
            flat = flat * extent + comp
        values = table[flat]
        if self.shift and self.shift_values is None:
            self.shift_values = values
            self.box = self.box[:-1] + ((int(values.min()), int(values.max())),)
        return values - self.shift_values if self.shift else values

    def binop(self, e: S.BinOp, a: Form, b: Form) -> Form:
        if not self.opaque(a, b):
            return super().binop(e, a, b)
        if e.op in ("<<", ">>") or (e.op in ("/", "%") and isinstance(b, Opaque)):
            raise Unproved(f"{describe_int(e)} shifts or divides by an integer read from a "
                           "buffer")
        if e.op in ("/", "%") and b.constant in (None, 0):
            raise Unproved(f"{describe_int(e)} divides by a value that is not one known "
                           "non-zero number")
        return Opaque(self.zero, *int_op_bounds(e.op, self.span(a), self.span(b)))

    def minimum(self, e: S.Min, a: Form, b: Form) -> Form:
        if not self.opaque(a, b):
            return super().minimum(e, a, b)
        (alo, ahi), (blo, bhi) = self.span(a), self.span(b)
        return Opaque(self.zero, min(alo, blo), min(ahi, bhi))

    def wrap(self, e: S.Wrap, a: Form) -> Form:
        if not isinstance(a, Opaque):
            return super().wrap(e, a)
        if e.bits >= 64:
            if not e.signed and a.lo < 0:
                raise Unproved(f"{describe_int(e)} can be negative for a value read from "
                               "the buffer")
            return a
        low, high = (-2 ** (e.bits - 1), 2 ** (e.bits - 1) - 1) if e.signed else \
            (0, 2 ** e.bits - 1)
        return a if low <= a.lo and a.hi <= high else Opaque(self.zero, low, high)

    # --------------------------------------------------------------------- conditions
    def cond(self, c: S.Cond, env: dict) -> bool | None:
        if isinstance(c, S.Compare) and self.opaque(self.form(c.left, env),
                                                    self.form(c.right, env)):
            raise Unproved(f"the condition {describe_int(c.left)} {c.op} "
                           f"{describe_int(c.right)} reads an integer that differs from "
                           "work-item to work-item with the data")
        return super().cond(c, env)

    def uniform(self, y: Form, equal: bool, text: str) -> None:
        if y.coeffs[-1]:
            raise Unproved(f"the condition {text} depends on a loaded integer's value "
                           "(not only on its difference from the first one loaded)"
                           if self.shift else f"the condition {text} is not proved")
        super().uniform(y, equal, text)

    # --------------------------------------------------------------------- statements
    def access(self, array, index, env: dict) -> None:
        forms, extents, _ = self.index_forms(array, index, env)
        for f, extent in zip(forms, extents or [None] * len(forms)):
            if isinstance(f, Opaque) and (extent is None or f.lo < 0 or f.hi >= extent):
                raise Unproved(f"an index of {array.name} reads an integer buffer whose "
                               "values can fall outside it in a work-group not executed")
        if not isinstance(array, S.GlobalArray):
            self.inside(array.name, forms)
        if extents is not None:
            self.place(array, forms, extents, 1, False)
        super().access(array, index, env)

    @staticmethod
    def inside(name: str, forms) -> None:
        """Refuse an index of a local or private array that moves with the work-group id
        or the shift: which of its accesses touch one word (races, reads of words nothing
        stored, its bounds) would differ between the work-groups of a class."""
        for f in forms:
            if any(f.coeffs):
                raise Unproved(f"an index of {name} (local or private) moves with the "
                               "work-group")

    def place(self, array, forms, extents, width: int, aligned: bool) -> None:
        """Key the classes by where an access whose index moves with the work-group lies in
        its array: its elements are ``b + r`` (per component ``b = sum_d c_d *
        group_id(d) + c_s * s``, ``r`` in ``lo .. hi`` the same in every work-group of a
        class; the last component ``width`` elements from there), so a work-group's room
        below and above ``b``, each capped where every ``r`` of the form fits, is the same
        in every work-group of a class, and the representative's access is in bounds
        exactly where theirs is (an aligned vector access: also ``b``'s flat index modulo
        ``width``). Nothing is keyed where every work-group of the box has that room, or
        after a ``return`` every work-item takes."""
        if self.returned or not any(any(f.coeffs) for f in forms):
            return
        misaligned = aligned and width > 1 and any(c % width for f in forms for c in f.coeffs)
        rooms = []
        for n, (f, extent) in enumerate(zip(forms, extents)):
            top = extent - (width if n == len(forms) - 1 else 1)
            lowest, highest = self.span(Form(f.coeffs, 0, 0))
            if lowest < -f.lo or top - highest < f.hi:
                rooms.append(n)
        if not rooms and not misaligned:
            return
        ids = self.box_ids()
        flat = np.zeros(len(ids[0]), dtype=np.int64)
        for n, (f, extent) in enumerate(zip(forms, extents)):
            base = np.zeros(len(ids[0]), dtype=np.int64)
            if f.coeffs[-1]:
                base += f.coeffs[-1] * self.shift_values
            for c, g in zip(f.coeffs[:-1], ids):
                if c:
                    base += c * g
            if n in rooms:
                top = extent - (width if n == len(forms) - 1 else 1)
                key = (array.name, n, f.coeffs, f.lo, f.hi, width)
                self.placements[key + ("below",)] = np.minimum(base, -f.lo)
                self.placements[key + ("above",)] = np.minimum(top - base, f.hi)
            flat = flat * extent + base
        if misaligned:
            self.placements[(array.name, tuple(f.coeffs for f in forms), width,
                             "aligned")] = flat % width

    def visit_Return(self, s) -> None:
        self.returned |= self.undecided == 0 and not self.loops

    def visit_VectorLoad(self, s: S.VectorLoad) -> None:
        self.scalar_index(s)
        super().visit_VectorLoad(s)

    def visit_VectorStore(self, s: S.VectorStore) -> None:
        self.scalar_index(s)
        super().visit_VectorStore(s)

    def scalar_index(self, s) -> None:
        """Refuse a vector access indexed by an integer read from a buffer per work-item
        (its last element's bounds and its alignment would differ between work-groups);
        key the classes by its place where its index moves with the work-group
        (:meth:`place`)."""
        if any(isinstance(self.form(i, self.env), Opaque) for i in s.index):
            raise Unproved(f"a vector access of {s.array.name} is indexed by an integer "
                           "read from a buffer")
        forms, extents, _ = self.index_forms(s.array, s.index, self.env)
        if extents is not None:
            self.place(s.array, forms, extents, s.width, s.aligned)

    def visit_Shuffle(self, s: S.Shuffle) -> None:
        if isinstance(self.form(s.lane, self.env), Opaque):
            raise Unproved(f"a shuffle's lane {describe_int(s.lane)} is read from a buffer")
        super().visit_Shuffle(s)

    def visit_Assign(self, s) -> None:
        forms = [self.form(i, self.env) for i in s.index]
        for i, f in zip(s.index, forms):
            if isinstance(f, Opaque):
                raise Unproved(f"private {s.name}'s index {describe_int(i)} is read from "
                               "a buffer")
        self.inside(s.name, forms)
        super().visit_Assign(s)

    visit_Accumulate = visit_Assign

    def loop(self, s: S.For, env: dict) -> None:
        start, stop, step = (self.form(s.start, env), self.form(s.stop, env),
                             self.form(s.step, env))
        if self.opaque(start, stop, step):
            raise Unproved(f"the loop over {s.var} has a bound read from a buffer per "
                           "work-item")
        if start.coeffs[-1] != stop.coeffs[-1] or step.coeffs[-1]:
            raise Unproved(f"the loop over {s.var} from {describe_int(s.start)} to "
                           f"{describe_int(s.stop)} runs a number of times that depends on "
                           "a loaded integer's value")
        trips = -(-(stop.hi - start.lo) // step.lo) if step.lo == step.hi and step.lo > 0 \
            else MAX_WHILE_ITERATIONS
        self.nested(max(trips, 1), lambda: super(DataProver, self).loop(s, env))

    def visit_While(self, s: S.While) -> None:
        self.nested(MAX_WHILE_ITERATIONS, lambda: super(DataProver, self).visit_While(s))

    def nested(self, trips: int, prove) -> None:
        """``prove()`` a loop of at most ``trips`` iterations, its nest's steps recorded."""
        outer = self.nest_steps
        self.nest_steps = outer * trips
        self.loop_steps = max(self.loop_steps, self.nest_steps)
        try:
            prove()
        finally:
            self.nest_steps = outer

    def merge(self, env: dict, *branches: dict) -> None:
        opaque = {name for b in branches for name, f in b.items() if isinstance(f, Opaque)}
        StatementProver.merge(env, *branches)
        for name in opaque:
            forms = [b[name] for b in branches if name in b]
            if all(f is forms[0] for f in forms):
                continue
            if any(f is UNKNOWN for f in forms):
                env[name] = UNKNOWN
                continue
            spans = [self.span(f) for f in forms]
            env[name] = Opaque(self.zero, min(s[0] for s in spans), max(s[1] for s in spans))


_RANGES: "weakref.WeakKeyDictionary[S.GlobalArray, tuple[int, int]]" = \
    weakref.WeakKeyDictionary()


def _value_range(array: S.GlobalArray) -> tuple[int, int]:
    """The smallest and largest value of an integer buffer's contents (not empty)."""
    found = _RANGES.get(array)
    if found is None:
        found = _RANGES[array] = (int(array.values.min()), int(array.values.max()))
    return found


_FOUND: "weakref.WeakKeyDictionary[S.Schedule, DataClasses | str]" = \
    weakref.WeakKeyDictionary()


def data_classes(schedule: S.Schedule) -> DataClasses | str:
    """The classes of ``schedule``'s work-groups by the integers they load (module
    docstring), or one line why they are not proved (computed once per schedule)."""
    found = _FOUND.get(schedule)
    if found is None:
        found = _FOUND[schedule] = _classes(schedule)
    return found


def _classes(schedule: S.Schedule) -> DataClasses | str:
    if not S.reads_int_buffer(schedule.body):
        return "it reads no integer buffer"
    if S.branches_on_data(schedule.body):
        return "it branches on floats of the data"
    by_shift = _prove(schedule, True)
    if isinstance(by_shift, DataClasses):
        return by_shift
    by_value = _prove(schedule, False)
    if isinstance(by_value, DataClasses):
        return by_value
    if by_shift == by_value:
        return f"its classes by loaded integers are not proved: {by_shift}"
    return (f"its classes by loaded integers are not proved (by their differences from the "
            f"first: {by_shift}; by their values: {by_value})")


def _prove(schedule: S.Schedule, shift: bool) -> DataClasses | str:
    ng = tuple(schedule.num_groups)
    provers: dict[tuple, DataProver] = {}

    def prove_box(box):
        prover = DataProver(schedule, box, shift)
        prover.block(schedule.body, {})
        provers[box] = prover

    starts = refine_segments(ng, prove_box, "the classes")
    if isinstance(starts, str):
        return starts
    provers = [provers[box] for box in boxes(starts, ng)]
    reps, weights = [], []
    for prover in provers:
        r, w = _box_classes(prover, ng)
        reps.append(r)
        weights.append(w)
        if sum(len(x) for x in reps) > MAX_DATA_CLASSES:
            return f"the loaded integers give more than {MAX_DATA_CLASSES} classes"
    reps, weights = np.concatenate(reps), np.concatenate(weights)
    order = np.argsort(reps, kind="stable")
    return DataClasses(reps[order], weights[order], shift,
                       max(p.loop_steps for p in provers))


def _box_classes(prover: DataProver, ng) -> tuple[np.ndarray, np.ndarray]:
    """(representatives, weights) of one proved box: its work-groups grouped by the value
    of every symbol and the place of every access that moves with the work-group
    (:meth:`DataProver.place`), the smallest linear id of each group its representative."""
    strides = [math.prod(ng[:d]) for d in range(len(ng))]
    if not prover.symbols and not prover.placements:
        first = sum(f * s for (f, _), s in zip(prover.box[:-1], strides))
        count = math.prod(last - f + 1 for f, last in prover.box[:-1])
        return np.array([first], dtype=np.int64), np.array([count], dtype=np.int64)
    ids = prover.box_ids()
    linear = sum(g * s for g, s in zip(ids, strides))
    keys = [v for v in (*prover.symbols.values(), *prover.placements.values())
            if v.min() != v.max()]
    if not keys:
        return linear[:1].copy(), np.array([len(linear)], dtype=np.int64)
    order = np.lexsort(keys[::-1])          # stable: ascending linear ids within a class
    changes = np.zeros(len(order), dtype=bool)
    changes[0] = True
    for k in keys:
        ordered = k[order]
        changes[1:] |= ordered[1:] != ordered[:-1]
    firsts = np.flatnonzero(changes)
    weights = np.diff(np.append(firsts, len(order)))
    return linear[order[firsts]], weights.astype(np.int64)
