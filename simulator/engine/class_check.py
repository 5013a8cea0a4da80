"""The hazard check of a large launch without running every statement of every work-group,
with the verdict of full execution: :func:`proved_clean` says a launch has no hazard at all,
or that the full check must run.

Two runs, each exact for the hazards it answers for:

- *inside a work-group* (out-of-bounds and misaligned accesses, barrier divergence, races in
  local memory, reads of local and private memory nothing stored, integer divisions by
  zero): the work-groups of :mod:`.accelerators.classes`, one per class, and the extreme
  members of each class (:func:`extreme_members`), every statement executed. Where the
  classes are proved (:func:`.accelerators.class_safety.classes_problem`) every statement
  runs under the same masks in all members of a class, and every index is ``sum_d c_d *
  group_id(d) + r`` with the same ``r``: so barrier divergence is the same in all of them;
  where every access of each local and private array moves with the work-group id by the
  same coefficients (:func:`.accelerators.class_safety.translation_problem`), two entries
  touch one local or private word in one member exactly when they do in every other, so
  races and reads of unstored words are the same; a vector access's misalignment is the
  same (a class's members are whole periods apart, after which every address moves by
  whole 128-byte lines); and an index, affine in the work-group id, takes its smallest and
  largest value over a class's members at the corners of the box they span, which the
  extreme members are, so an out-of-bounds entry of any member is one of theirs. A divisor
  that may be 0 is never proved, so such a launch is not taken here.
- *between work-groups* (races in global memory, reads of outputs before a store, outputs
  never written): every work-group, executing only what those need
  (:func:`output_slice`): the accesses of the arrays the kernel writes, and the control
  flow and integers they depend on. A kernel taken here has no control flow or index that
  depends on the data (one that branches on floats of the data or reads an integer buffer
  is declined by the classes' proof), so these accesses happen exactly as in the whole
  kernel.

A launch with a hazard, or one these proofs do not cover, is checked by full execution (the
caller's), which then gives the hazards' counts and examples; a clean verdict here is the
full check's.
"""
from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.sequence import is_sequence
from tiletraffic.simulator.ir.static import eval_static
from tiletraffic.simulator.ir.visitor import bodies, walk, with_bodies
from tiletraffic.simulator.engine.accelerators import Accelerators, NotApplicable
from tiletraffic.simulator.engine.accelerators.class_safety import (classes_problem,
                                                                    translation_problem)
from tiletraffic.simulator.engine.accelerators.classes import GroupClasses, group_classes
from tiletraffic.simulator.engine.limits import DeviceLimits, check_schedule_limits
from tiletraffic.simulator.engine.machine import Machine
from tiletraffic.simulator.engine.simulation import (BATCH_WORK_ITEMS, hazard_observers,
                                                     probe_runner, simulate)
from tiletraffic.simulator.observers.hazards import Hazard, HazardLog

INSIDE = Accelerators(work_group_classes=True, private_nests=True, loop_blocks=True)
"""The accelerators of the run inside work-groups (loops in blocks where exact)."""

SLICE_FREE_KINDS = ("uninitialized-private-read", "uninitialized-local-read")
"""Hazard kinds the run of :func:`output_slice` may report only because the statements it
leaves out are missing (they are answered by the run inside work-groups); a race in local
memory is left out the same way."""

_INT_STATEMENTS = (S.Let, S.DeclareInt, S.AssignInt)
_CONTROL = (S.Break, S.Continue, S.Return)


MIN_WORK_GROUPS = 32
"""Fewest work-groups of a kernel for which :func:`worth_classes` takes the classes: below,
the representatives and extreme members (up to 4 per class of a two-dimensional NDRange)
are nearly all of them."""


def worth_classes(schedule) -> bool:
    """Whether a kernel of ``schedule`` (a schedule or a kernel sequence) has at least
    :data:`MIN_WORK_GROUPS` work-groups, so that :func:`launch_proved_clean` runs far fewer
    of them than the full check."""
    kernels = schedule.kernels if is_sequence(schedule) else (schedule,)
    return any(k.work_groups >= MIN_WORK_GROUPS for k in kernels)


def launch_proved_clean(schedule, limits: DeviceLimits | None = None) -> bool:
    """:func:`proved_clean` of a schedule, or of every kernel of a
    :class:`simulator.ir.sequence.KernelSequence` (each kernel's hazards are its own: a
    buffer an earlier kernel wrote is an input of the later ones).

    Raises:
        simulator.engine.limits.LimitError: a kernel exceeds ``limits`` (checked first).
    """
    kernels = schedule.kernels if is_sequence(schedule) else (schedule,)
    if limits is not None:
        for kernel in kernels:
            check_schedule_limits(kernel, limits)
    return all(proved_clean(kernel) for kernel in kernels)


def proved_clean(schedule: S.Schedule) -> bool:
    """Whether every hazard check of ``schedule``'s full launch finds nothing (module
    docstring); ``False`` where that is not proved (a hazard found, or the classes or their
    translations not proved): run the full check."""
    if classes_problem(schedule) is not None or translation_problem(schedule) is not None:
        return False
    try:
        inside, _, _ = inside_work_groups(schedule)
    except NotApplicable:
        inside, _, _ = inside_work_groups(schedule, INSIDE.replace(loop_blocks=False))
    if inside:
        return False
    sliced = output_slice(schedule)
    res = simulate(sliced, compute_values=False, hazards="report", limits=None)
    return not [h for h in res.hazards if h.kind not in SLICE_FREE_KINDS
                and not (h.kind == "data-race" and not h.site.startswith("global "))]


def inside_work_groups(schedule: S.Schedule, accelerators: Accelerators = INSIDE
                       ) -> tuple[list[Hazard], np.ndarray, np.ndarray]:
    """The hazards inside work-groups of the representatives and the extreme members of
    every class (:func:`extreme_members`), every statement executed with the hazard
    observers of a launch by classes; with the linear ids of the work-groups executed and
    of the representatives. The classes must be proved
    (:func:`.accelerators.class_safety.classes_problem`).

    Raises:
        NotApplicable: a hazard where a loop ran in blocks (its example could differ), or a
            loop that cannot run in blocks: run again without ``loop_blocks``.
    """
    params = schedule.param_values
    sizes = {a.name: int(eval_static(a.size, params)) for a in schedule.arrays}
    classes = group_classes(schedule, probe_runner(schedule, accelerators))
    groups = np.unique(np.concatenate([classes.representatives,
                                       extreme_members(schedule, classes)]))
    log = HazardLog("report", num_groups=schedule.num_groups)
    observers = hazard_observers(schedule, log, sizes, params, full_launch=False)
    machine = Machine(schedule, params, sizes, {}, observers, log, False, accelerators)
    per_batch = max(1, BATCH_WORK_ITEMS // schedule.work_group_items)
    for first in range(0, len(groups), per_batch):
        machine.run_batch(groups[first:first + per_batch])
    for obs in observers:
        obs.on_finish()
    if machine.ran_blocked and log.hazards:
        raise NotApplicable(f"{schedule.family}: hazards in a launch with loops run in blocks "
                            "of iterations (their examples could differ)")
    return log.hazards, groups, np.asarray(classes.representatives)


def extreme_members(schedule: S.Schedule, classes: GroupClasses) -> np.ndarray:
    """Linear ids of the corners of every class: per NDRange dimension its representative's
    id or the largest id of the class there (the same where the class holds one id of that
    dimension: a segment of one work-group, or one no longer than the period). The members
    of a class are ``rep_d + k * period_d`` up to the last work-group of the segment of
    ``rep_d``."""
    ng = schedule.num_groups
    strides = [math.prod(ng[:d]) for d in range(len(ng))]
    found = set()
    for rep in np.asarray(classes.representatives, dtype=np.int64):
        ids, rest = [], int(rep)
        for n in ng:
            ids.append(rest % n)
            rest //= n
        choices = []
        for g, n, p, starts in zip(ids, ng, classes.periods, classes.starts):
            last = min([s for s in starts if s > g], default=n) - 1
            choices.append(tuple({g, g + (last - g) // p * p}))
        for corner in itertools.product(*choices):
            found.add(sum(c * s for c, s in zip(corner, strides)))
    return np.array(sorted(found), dtype=np.int64)


def output_slice(schedule: S.Schedule) -> S.Schedule:
    """``schedule`` executing only the accesses of the global arrays it writes (roles
    ``out`` and ``inout``: every statement that stores into one or reads one), the barriers
    that fence global memory, and the control flow and integers these depend on; the
    declarations of the private floats they read stay (without the statements that assign
    them: reads of them may be reported as unassigned, which :data:`SLICE_FREE_KINDS`
    ignores). Its accesses of those arrays, their masks and their order are the whole
    schedule's."""
    tracked = {a.name for a in schedule.arrays if a.is_output}
    names: set[str] = set()
    while True:
        body = _slice(schedule.body, tracked, names)
        read = _names_read(body)
        if read <= names:
            break
        names |= read
    return dataclasses.replace(schedule, body=body)


def _touches(stmt, tracked: set[str]) -> bool:
    """Whether a simple statement accesses a tracked global array."""
    for node in walk(stmt, arrays=True):
        if isinstance(node, S.GlobalArray) and node.name in tracked:
            return True
    return False


def _slice(stmts, tracked: set[str], names: set[str]) -> tuple:
    out = []
    for s in stmts:
        nested = bodies(s)
        if nested:
            new = {k: _slice(v, tracked, names) for k, v in nested.items()}
            if isinstance(s, S.While) or any(new.values()):
                out.append(with_bodies(s, **new))
        elif isinstance(s, (*_INT_STATEMENTS, S.DeclareFloat)):
            if s.name in names:
                out.append(s)
        elif isinstance(s, S.DeclarePrivateArray):
            if s.array.name in names:
                out.append(s)
        elif isinstance(s, _CONTROL):
            out.append(s)
        elif isinstance(s, S.Barrier):
            if s.global_fence:
                out.append(s)
        elif _touches(s, tracked):
            out.append(s)
    return tuple(out)


def _names_read(stmts) -> set[str]:
    """Integer, private float and private array names the statements read or assign (the
    private ones they assign must stay declared)."""
    found: set[str] = set()
    for stmt in stmts:
        for node in walk(stmt, arrays=True):
            if isinstance(node, (S.Var, S.Private, S.PrivateArray)):
                found.add(node.name)
            elif isinstance(node, (S.Assign, S.Accumulate, S.Shuffle)):
                found.add(node.name)
            elif isinstance(node, S.VectorLoad):
                found.update(node.names)
    return found
