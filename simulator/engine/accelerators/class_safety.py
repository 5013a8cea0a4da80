"""Whether the work-group classes of :mod:`.classes` may stand for every work-group of a
schedule, and which classes: a static proof over the IR, before anything runs.

Two work-groups have identical counts (loads, stores, barriers, FLOPs, requests, sectors,
lines, bank conflicts) when every statement runs under the same masks in both and every
address differs by the same multiple of 128 bytes. :func:`class_plan` proves that for a
partition of the work-groups: per NDRange dimension, the work-group ids are cut into
*segments* (intervals), and a class is one combination of segments (a *box*) and, in each
dimension whose segment holds several work-groups, one residue of the work-group id modulo
that dimension's period. Over every box, :class:`.class_proof.StatementProver` proves

- every integer expression (index, bound, condition's operand, integer converted to float)
  of the form ``sum_d c_d * group_id(d) + r``, ``r`` the same in every work-group of the
  box (module :mod:`.class_proof` lists what it refuses);
- every condition (``if``, ``select``, ``?:``, the comparison ``min`` makes) the same, per
  work-item and iteration, in every work-group of the box; a condition decided there
  (the same for every work-item) chooses its branch, so a clamped index is the identity in
  the interior boxes and proved on its own at the borders.

The segments start as the first work-group, the interior and the last one of each
dimension of :data:`MIN_GROUPS_FOR_CLASSES` or more work-groups (every work-group its own
segment in a smaller dimension); where a condition's truth can change inside a segment
(``i < n`` where the NDRange overhangs ``n`` by several work-groups, a halo wider than one
work-group), the segment is cut where it changes, the work-groups where it depends on the
work-item each on its own; where a loop's trip count moves with the work-group id (a halo
wider than the data), each work-group of the segment on its own (at most
:data:`MAX_SEGMENTS` segments per dimension: more is refused). The period of a dimension is the fewest steps of its work-group id after which
every access's row-major flat index, whose step the forms give, has moved by whole 128-byte
lines, in every box.

The proof is conservative: a schedule it refuses is executed work-group by work-group,
which gives the same counts and more hazard checks, only slower. A built-in family is
proved as any other schedule: segments and periods taken from two neighbouring work-groups
would miss what only other work-groups do (with ``group_rows`` > 1 a warp-tiled GEMM's
work-group-to-block map is not affine: where its blocks are all full and whole lines apart
:func:`_grouped_full_blocks` gives its classes; where partial edge blocks fall on
work-groups inside the grid its classes are refused and every work-group runs).
"""
from __future__ import annotations

import itertools
import math
import weakref
from dataclasses import dataclass

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.engine.accelerators import data_decline
from tiletraffic.simulator.engine.accelerators.class_proof import (Split, StatementProver,
                                                                   TranslationProver, Unproved)

MIN_GROUPS_FOR_CLASSES = 5
"""Below this many work-groups in a dimension, each is its own class there."""

LINE_BYTES = 128
"""The address step (a cache line, hence a whole number of 32-byte sectors and of a
32-bank local memory's rows) after which two work-groups' traffic is the same."""

MAX_SEGMENTS = 24
"""The most segments of one NDRange dimension :func:`class_plan` cuts."""

MAX_BOXES = 4096
"""The most boxes (combinations of segments) :func:`class_plan` proves."""


@dataclass(frozen=True)
class ClassPlan:
    """The partition of a launch's work-groups into classes.

    Attributes:
        starts: per NDRange dimension, the first work-group id of each segment, ascending
            (the first is 0; a segment runs to the next start, the last to the dimension's
            end).
        periods: per dimension, the steps of work-group id after which every address has
            moved by whole lines (segments of several work-groups hold one class per
            residue of the id modulo it).
    """

    starts: tuple[tuple[int, ...], ...]
    periods: tuple[int, ...]


def default_starts(num_groups) -> tuple[tuple[int, ...], ...]:
    """Per dimension, the first work-group, the interior and the last one as segments (a
    dimension of fewer than :data:`MIN_GROUPS_FOR_CLASSES`: every work-group its own)."""
    return tuple((0, 1, n - 1) if n >= MIN_GROUPS_FOR_CLASSES else tuple(range(n))
                 for n in num_groups)


def boxes(starts, num_groups):
    """Every box of ``starts`` (per dimension ``(first, last)`` work-group ids)."""
    per_dim = [[(s, e - 1) for s, e in zip(st, (*st[1:], n))]
               for st, n in zip(starts, num_groups)]
    return itertools.product(*per_dim)


def _trusted_families() -> tuple[str, ...]:
    from tiletraffic.simulator.kernels.families import FAMILIES, SEQUENCE_FAMILIES

    return FAMILIES + SEQUENCE_FAMILIES + ("gemm-split-k-slices", "gemm-split-k-reduce")


_PLANS: "weakref.WeakKeyDictionary[S.Schedule, ClassPlan | str]" = weakref.WeakKeyDictionary()
_TRANSLATIONS: "weakref.WeakKeyDictionary[S.Schedule, str | None]" = \
    weakref.WeakKeyDictionary()


def classes_problem(schedule: S.Schedule) -> str | None:
    """Why the work-group classes of ``schedule`` are not proved to give full execution's
    counts (one line naming the expression), or ``None`` where they are (module
    docstring; built-in families included)."""
    plan = _plan(schedule)
    return plan if isinstance(plan, str) else None


def class_plan(schedule: S.Schedule) -> ClassPlan | None:
    """The proved partition of ``schedule``'s work-groups into classes (module docstring),
    or ``None`` where :func:`classes_problem` gives a problem."""
    plan = _plan(schedule)
    return None if isinstance(plan, str) else plan


def _plan(schedule: S.Schedule) -> ClassPlan | str:
    if (why := data_decline(schedule.body)) is not None:
        return why
    found = _PLANS.get(schedule)
    if found is None:
        found = _PLANS[schedule] = _grouped_full_blocks(schedule) or _prove(schedule)
    return found


def _grouped_full_blocks(schedule: S.Schedule) -> ClassPlan | None:
    """The classes of a warp-tiled GEMM whose work-groups walk the blocks of C in groups of
    ``group_rows`` block rows (its block is a division of its linear id, which the proof
    refuses), where every block is full (M a multiple of the block's rows BM, N of its
    columns BN) and the blocks' addresses are whole 128-byte lines apart (BM·K, BM·N and BN
    multiples of a line's elements of the narrowest array: 32 floats, 64 halves): the family uses the work-group id only to choose its block
    and computes every block exactly once, so every work-group then runs the same statements
    under the same masks at addresses that differ by whole lines, and any partition (here
    the first / interior / last work-group of each dimension, period 1) stands for all.
    ``None`` otherwise (a partial block falls on a work-group inside the grid: the proof
    decides, and refuses)."""
    extra = schedule.extra
    if schedule.family != "gemm-warp-tiled" or extra.get("group_rows", 1) == 1 or \
            len(schedule.num_groups) != 2:
        return None
    p, bm, bn = schedule.param_values, extra["bm"], extra["bn"]
    words = LINE_BYTES // min((a.element_bytes for a in schedule.arrays), default=S.FLOAT_BYTES)
    if p["M"] % bm or p["N"] % bn or any(v % words for v in (bm * p["K"], bm * p["N"], bn)):
        return None
    return ClassPlan(default_starts(schedule.num_groups), (1, 1))


def refine_segments(num_groups, prove_box, what: str) -> list[list[int]] | str:
    """The segments' first work-group ids per NDRange dimension after ``prove_box`` (called
    with each box of :func:`boxes`) proved every box: starting from :func:`default_starts`,
    a dimension is cut where ``prove_box`` raises :class:`Split`, and all boxes are proved
    again. Returns why not (a string) where a box raises :class:`Unproved`, ``what`` would
    need more than :data:`MAX_BOXES` boxes, or a dimension more than :data:`MAX_SEGMENTS`
    segments."""
    starts = [list(s) for s in default_starts(num_groups)]
    while True:
        if math.prod(len(s) for s in starts) > MAX_BOXES:
            return f"{what} would need more than {MAX_BOXES} boxes"
        try:
            for box in boxes(starts, num_groups):
                prove_box(box)
            return starts
        except Unproved as why:
            return str(why)
        except Split as split:
            cut = sorted(set(starts[split.dim]) | set(split.cuts))
            if len(cut) > MAX_SEGMENTS:
                return (f"{split.why} (at more than {MAX_SEGMENTS} runs of work-groups of "
                        f"NDRange dimension {split.dim})")
            starts[split.dim] = cut


def _prove(schedule: S.Schedule) -> ClassPlan | str:
    """:func:`class_plan` of a schedule, or why not (computed once per schedule)."""
    ng = tuple(schedule.num_groups)
    proved: dict[tuple, list[set[int]]] = {}

    def prove_box(box):
        if box not in proved:
            prover = StatementProver(schedule, box)
            prover.block(schedule.body, {})
            proved[box] = prover.steps

    starts = refine_segments(ng, prove_box, "the work-group classes")
    if isinstance(starts, str):
        return starts
    periods = []
    size = min([S.FLOAT_BYTES, *(a.element_bytes for a in schedule.arrays)])  # half: 2
    for d in range(len(ng)):
        period = 1
        for steps in proved.values():
            for step in steps[d]:
                offset = step * size % LINE_BYTES
                period = math.lcm(period, LINE_BYTES // math.gcd(offset, LINE_BYTES))
        periods.append(period)
    return ClassPlan(tuple(tuple(s) for s in starts), tuple(periods))


def translation_problem(schedule: S.Schedule) -> str | None:
    """Why the hazards inside one work-group (local and private memory: races, reads of
    words nothing stored, out-of-bounds entries) may differ between two work-groups of one
    class beyond a translation, or ``None`` where they cannot.

    Where the classes are proved (:func:`classes_problem`), every statement runs under the
    same masks in every work-group of a class and each index is ``sum_d c_d * group_id(d)
    + r`` with ``r`` the same in all of them (the members of a class share one box). Two
    accesses of one local or private array then touch the same word in one work-group
    exactly when they do in another if their indices move by the same ``c`` (per index
    dimension): this holds when, in every box, every access of each local and private array
    has the same coefficients (zero, in nearly every kernel), and every sub-group shuffle's
    lane has none. Refused otherwise, and wherever the classes are not proved; a built-in
    family whose classes are proved is trusted here (its local and private arrays are
    indexed by local ids and loop variables)."""
    if (why := data_decline(schedule.body)) is not None:
        return why
    if schedule.family in _trusted_families():
        plan = _plan(schedule)
        return plan if isinstance(plan, str) else None
    if schedule not in _TRANSLATIONS:
        _TRANSLATIONS[schedule] = _translation(schedule)
    return _TRANSLATIONS[schedule]


def _translation(schedule: S.Schedule) -> str | None:
    plan = _plan(schedule)
    if isinstance(plan, str):
        return plan
    for box in boxes(plan.starts, schedule.num_groups):
        prover = TranslationProver(schedule, box)
        try:
            prover.block(schedule.body, {})
        except (Unproved, Split) as why:
            return str(why)
        for (space, name), moves in sorted(prover.moves.items()):
            if len(moves) > 1:
                return (f"the accesses of {space} array {name} move differently with the "
                        "work-group id")
        if prover.problem is not None:
            return prover.problem
    return None
