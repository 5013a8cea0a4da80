"""The fastest exact path to a launch's counts (values off), for any schedule.

:func:`count_launch` takes every accelerator that is proved for the schedule, and falls back
to full execution where one is not, so its counts are always those of executing every
work-group statement by statement:

1. *work-group classes* (:mod:`.accelerators.classes`) where
   :func:`.accelerators.class_safety.classes_problem` proves them; for a kernel whose
   bounds, conditions or indices read an integer buffer, the *classes by loaded integers*
   (:mod:`.accelerators.data_classes`: one work-group per class, counts weighted) where
   they are proved; else every work-group runs (:attr:`CountedLaunch.why_every_work_group`
   says why: :func:`counting_classes_problem`);
2. with the classes, *K extrapolation* (:mod:`.accelerators.k_extrapolation`) where
   :func:`.accelerators.k_extrapolation.applies`: three short K by classes, every count
   extrapolated when all of them have equal differences; a short run with a hazard, or a
   count that does not, runs the whole K loop (:attr:`CountedLaunch.why_whole_k_loop`);
3. with the classes, *loop blocks* (:mod:`.accelerators.loop_blocks`), run again without
   them where they raise :class:`.accelerators.NotApplicable`;
4. *private nests* always (values off).

A kernel sequence (:mod:`simulator.ir.sequence`) is counted kernel by kernel (without
values no kernel's counts depend on another's), its counts added.

Hazards are those of the work-groups executed (with the classes: the representatives'; races
in global memory, reads of outputs before a store and unwritten outputs need every
work-group and are checked only where every work-group runs). numpy only.
"""
from __future__ import annotations

from dataclasses import dataclass

from tiletraffic.simulator.engine.accelerators import (INT_BUFFER_DECLINE, Accelerators,
                                                       NotApplicable)
from tiletraffic.simulator.engine.accelerators.data_classes import DataClasses, data_classes
from tiletraffic.simulator.engine.accelerators import k_extrapolation
from tiletraffic.simulator.engine.accelerators.class_safety import classes_problem
from tiletraffic.simulator.engine.limits import GENERIC_GPU, DeviceLimits, check_schedule_limits
from tiletraffic.simulator.engine.simulation import count_work_groups, simulate
from tiletraffic.simulator.ir.sequence import is_sequence, kernels_of
from tiletraffic.simulator.observers.counters import TrafficCounts, add_counts
from tiletraffic.simulator.observers.hazards import Hazard

FASTEST = Accelerators(work_group_classes=True, private_nests=True, loop_blocks=True,
                       k_extrapolation=True)
"""Every accelerator: what :func:`count_launch` takes by default."""


@dataclass(frozen=True)
class CountedLaunch:
    """The counts of one launch (or kernel sequence) and how they were taken.

    Attributes:
        counts: exact traffic counts (those of full execution).
        hazards: the hazards found in the work-groups executed (``"report"`` mode; in
            ``"raise"`` mode the first one raised instead).
        work_groups_executed: work-groups executed at the real sizes (representatives with
            the classes; every work-group without; with K extrapolation the
            representatives of each short K), all kernels' added.
        why_every_work_group: per kernel, in launch order, why its work-group classes are
            not proved (every work-group executed), ``None`` where they were used.
        why_whole_k_loop: per kernel, why K extrapolation did not run (the whole K loop
            executed), ``None`` where the counts are extrapolated from three short K.
    """

    counts: TrafficCounts
    hazards: list[Hazard]
    work_groups_executed: int
    why_every_work_group: tuple[str | None, ...]
    why_whole_k_loop: tuple[str | None, ...]

    @property
    def by_classes(self) -> bool:
        """Every kernel was counted by work-group classes."""
        return all(why is None for why in self.why_every_work_group)

    @property
    def k_extrapolated(self) -> bool:
        """Every kernel's counts were extrapolated from three short K."""
        return all(why is None for why in self.why_whole_k_loop)


def count_launch(schedule, *, hazards: str = "raise",
                 limits: DeviceLimits | None = GENERIC_GPU, race_checks: bool = True,
                 accelerators: Accelerators = FASTEST) -> CountedLaunch:
    """The exact counts of ``schedule`` (a Schedule or KernelSequence) without values, by
    the fastest path proved for it (module docstring). ``accelerators``: those that may run
    (default :data:`FASTEST`; ``private_nests`` and ``loop_blocks`` may be switched off to
    time the paths: the counts are the same).

    Raises:
        simulator.engine.limits.LimitError: a kernel exceeds ``limits`` (checked before
            anything runs).
        simulator.observers.hazards.HazardError: a hazard, in ``"raise"`` mode.
    """
    kernels = kernels_of(schedule)
    if limits is not None:
        for kernel in kernels:
            check_schedule_limits(kernel, limits)
    parts = [_count_kernel(kernel, hazards, limits, race_checks, accelerators)
             for kernel in kernels]
    counts = parts[0][0] if not is_sequence(schedule) else add_counts([p[0] for p in parts])
    return CountedLaunch(counts, [h for p in parts for h in p[1]], sum(p[2] for p in parts),
                         tuple(p[3] for p in parts), tuple(p[4] for p in parts))


def counting_classes_problem(kernel) -> str | None:
    """Why :func:`count_launch` executes every work-group of ``kernel`` (one line: the note
    a command prints), or ``None`` where it counts by classes: the affine work-group classes
    (:func:`.accelerators.class_safety.classes_problem`) or, for a kernel whose bounds read
    an integer buffer, the classes by loaded integers
    (:func:`.accelerators.data_classes.data_classes`)."""
    why = classes_problem(kernel)
    if why != INT_BUFFER_DECLINE:
        return why
    found = data_classes(kernel)
    return None if isinstance(found, DataClasses) else f"{why}; {found}"


def _count_kernel(kernel, hazards: str, limits, race_checks: bool,
                  accelerators: Accelerators):
    """(counts, hazards, work-groups executed, why not by classes, why not extrapolated)
    of one kernel."""
    why_classes = counting_classes_problem(kernel) if accelerators.work_group_classes \
        else "work-group classes switched off"
    if why_classes is None and classes_problem(kernel) is not None:
        found = data_classes(kernel)        # proved: classes by loaded integers
        res = count_work_groups(kernel, found.representatives, found.weights,
                                hazards=hazards, limits=limits, race_checks=race_checks)
        return res.counts, res.hazards, len(found.representatives), None, \
            "K extrapolation needs the affine work-group classes (these are classes by " \
            "loaded integers)"
    if why_classes is not None:
        full = accelerators.replace(work_group_classes=False, loop_blocks=False,
                                    k_extrapolation=False)
        res = simulate(kernel, compute_values=False, hazards=hazards, limits=limits,
                       race_checks=race_checks, accelerators=full)
        return res.counts, res.hazards, kernel.work_groups, why_classes, \
            "K extrapolation needs the work-group classes"
    why_k = k_extrapolation.k_extrapolation_problem(kernel) if \
        accelerators.k_extrapolation else "K extrapolation switched off"
    if why_k is None:
        executed = []

        def short(s):
            res = _by_classes(s, "report", limits, race_checks, accelerators)
            if res.hazards:
                raise NotApplicable(f"{s.family}: a short K has a hazard")
            executed.append(len(res.representatives))
            return res.counts

        try:
            counts = k_extrapolation.extrapolated_counts(kernel, short)
            return counts, [], sum(executed), None, None
        except NotApplicable as why:
            why_k = (f"the counts of three short K are not affine ({why})"
                     if isinstance(why, k_extrapolation.NotAffine) else str(why))
    res = _by_classes(kernel, hazards, limits, race_checks, accelerators)
    return res.counts, res.hazards, len(res.representatives), None, why_k


def _by_classes(kernel, hazards: str, limits, race_checks: bool, accelerators: Accelerators):
    """``simulate`` of ``kernel`` by work-group classes, values off, with loop blocks where
    they give full execution's result (else again without them)."""
    options = dict(compute_values=False, hazards=hazards, limits=limits,
                   race_checks=race_checks)
    accelerators = accelerators.replace(k_extrapolation=False)
    if accelerators.loop_blocks and accelerators.private_nests:
        try:
            return simulate(kernel, accelerators=accelerators, **options)
        except NotApplicable:
            pass
    return simulate(kernel, accelerators=accelerators.replace(loop_blocks=False), **options)
