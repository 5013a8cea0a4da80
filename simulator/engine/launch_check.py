"""The check of a schedule before it is launched on a device: hazards and the sum length.

A kernel with an out-of-bounds access, a barrier that only some work-items reach, a
misaligned vector access or an integer division by zero can corrupt the host process's
memory or hang the device (a segfault inside the OpenCL driver, a corrupted heap after the
run); a kernel with a race
gives a time that is not a measurement of the kernel. So before any launch
(``gpu.runtime.checked_run.run_on_device``) the simulator checks the launch:

- *full launch*, when it is small enough (:data:`FULL_CHECK_WORK` work-item loop steps at
  most): every work-group executed with values, every hazard kind checked, and the sum
  length of every output element counted (:mod:`simulator.engine.sum_length`);
- *representative work-groups* otherwise, where the classes are proved for the schedule
  (:func:`simulator.engine.accelerators.class_safety.classes_problem` and
  :func:`~simulator.engine.accelerators.class_safety.translation_problem`; an unproved one is
  checked as a full launch whatever its size): one work-group per class of
  :mod:`simulator.engine.accelerators.classes` (the first and last work-group of every
  NDRange dimension, the edges, among them) and the extreme members of each class (where an
  index affine in the work-group id takes its smallest and largest values:
  :func:`simulator.engine.class_check.inside_work_groups`), counts only, so races within a
  work-group, out-of-bounds accesses, barrier divergence, misaligned vector accesses and
  uninitialized local and private reads are checked there (integer divisions by zero cannot
  occur: the classes of a divisor that may be 0 are not proved, so such a launch is checked
  whole);
  races between work-groups, reads of outputs before a store and unwritten outputs need
  every work-group and are not
  (:attr:`LaunchCheck.not_checked` says so). The sum length is counted on the
  representatives with values: for a schedule with a K loop of step D
  (:func:`simulator.engine.accelerators.k_extrapolation.k_step_elems`), at K mod D + n·D for n in
  :data:`SHORT_K_STEPS`, extrapolated linearly to the real K when the three have equal
  differences (every K step adds the same roundings; the three launches share the real
  one's partial last step), else at the real K.

:data:`MEMORY_UNSAFE_KINDS` are the hazards that make a launch unsafe to run at all.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from tiletraffic.simulator.engine import sum_length
from tiletraffic.simulator.engine.accelerators import Accelerators, NotApplicable
from tiletraffic.simulator.engine.accelerators.class_safety import (classes_problem,
                                                                    translation_problem)
from tiletraffic.simulator.engine.class_check import inside_work_groups
from tiletraffic.simulator.engine.budget import loop_steps as check_work
from tiletraffic.simulator.engine.simulation import (group_id_of, largest_sum_length_of_groups,
                                                     simulate)
from tiletraffic.simulator.observers.hazards import Hazard
from tiletraffic.simulator.engine.data_inputs import random_inputs
from tiletraffic.simulator.ir.nodes import Schedule
from tiletraffic.simulator.ir.sequence import is_sequence

REPRESENTATIVES = Accelerators(work_group_classes=True, private_nests=True, loop_blocks=True)
"""How a large launch is checked: one work-group per class, loops in blocks where exact (a
hazard there is checked again without the blocks, so its example is full execution's)."""

MEMORY_UNSAFE_KINDS = ("out-of-bounds", "barrier-divergence", "misaligned-vector-access",
                       "integer-division-by-zero")
"""Hazards whose launch can corrupt memory or hang: never launched unless asked for.

An integer division by zero is among them: C leaves its value undefined, a device gives
any number (PoCL on an x86 CPU computed ``64 / d`` at ``d = 0`` as 64), and where that
number reaches an index the access can be anywhere, which the simulator, going on with 0,
cannot see; on a CPU device the division instruction itself may trap (x86's ``idiv`` raises
a divide error, a ``SIGFPE`` that ends the host process)."""

FULL_CHECK_WORK = 2**24
"""Most work-item loop steps (work-items x the largest size parameter) checked as a full
launch with values (about a few seconds on one core); larger launches are checked on
representative work-groups."""

SHORT_K_STEPS = (3, 4, 5)
"""K steps of the three short launches whose sum lengths are extrapolated (each has a
first, an interior and a last step, the cases of a K loop)."""

NOT_CHECKED_BY_REPRESENTATIVES = ("races between work-groups", "reads of outputs before a store",
                                  "unwritten outputs")
"""What needs every work-group of the launch, so a check of representatives leaves out."""


@dataclass(frozen=True)
class LaunchCheck:
    """What the simulator found in a launch before it ran.

    Attributes:
        schedule: the schedule checked.
        hazards: every hazard found (merged per statement, as ``check`` prints them).
        work_groups_checked: work-group ids (per NDRange dimension) executed, ``None`` when
            every work-group of the launch was.
        not_checked: hazard checks left out (empty for a full launch).
        sum_length: the K of the result's tolerance: the largest sum length of any output
            element (:mod:`simulator.engine.sum_length`).
        sum_length_method: how it was counted (``"counted in every work-group"``, ``"counted
            in the N representative work-groups"``, ``"... at K = a, b, c, extrapolated"``).
        time_s: wall time of the check, seconds.
    """

    schedule: Schedule
    hazards: list[Hazard]
    work_groups_checked: tuple[tuple[int, ...], ...] | None
    not_checked: tuple[str, ...]
    sum_length: int
    sum_length_method: str
    time_s: float
    parts: tuple["LaunchCheck", ...] = ()
    """For a kernel sequence (:mod:`simulator.ir.sequence`): the check of each kernel, in launch
    order (``hazards`` and ``time_s`` are theirs together); empty for one schedule."""
    why_every_work_group: str | None = None
    """Why a launch larger than the representatives' threshold was checked whole: its
    work-group classes are not proved
    (:func:`simulator.engine.accelerators.class_safety.classes_problem`); ``None`` otherwise."""

    @property
    def memory_unsafe(self) -> list[Hazard]:
        """The hazards of :data:`MEMORY_UNSAFE_KINDS`."""
        return [h for h in self.hazards if h.kind in MEMORY_UNSAFE_KINDS]

    @property
    def scope(self) -> str:
        """``"full launch"`` or ``"N representative work-groups of M"``, for messages."""
        if self.parts:
            return "; ".join(f"kernel {part.schedule.kernel_name}: {part.scope}"
                             for part in self.parts)
        if self.work_groups_checked is None:
            groups = self.schedule.work_groups
            why = (f"; no representatives: {self.why_every_work_group}"
                   if self.why_every_work_group else "")
            return f"full launch ({groups} work-group{'' if groups == 1 else 's'}{why})"
        shown = ", ".join(map(str, self.work_groups_checked[:12]))
        more = (f", ... ({len(self.work_groups_checked) - 12} more)"
                if len(self.work_groups_checked) > 12 else "")
        return (f"{len(self.work_groups_checked)} representative work-groups of "
                f"{self.schedule.work_groups} (one per class of identical traffic and the "
                f"extreme members of each, edges included: {shown}{more}); not checked: "
                f"{', '.join(self.not_checked)}")

    def describe(self) -> str:
        """One line: time, scope, verdict."""
        verdict = (f"{len(self.hazards)} hazard(s): "
                   + "; ".join(f"[{h.kind}] {h.detail}" for h in self.hazards)
                   if self.hazards else "clean")
        return f"check {self.time_s:.2f} s on the {self.scope}: {verdict}"

    def to_dict(self) -> dict:
        """JSON-ready."""
        return {"time_s": self.time_s, "clean": not self.hazards,
                "work_groups_checked": None if self.work_groups_checked is None
                else [list(g) for g in self.work_groups_checked],
                "not_checked": list(self.not_checked),
                "hazards": [h.to_dict() for h in self.hazards],
                "sum_length": self.sum_length, "sum_length_method": self.sum_length_method,
                "why_every_work_group": self.why_every_work_group}


def check_launch(schedule, *, rng: np.random.Generator | None = None,
                 full_check_work: int = FULL_CHECK_WORK,
                 input_sum_lengths: dict[str, int] | None = None) -> LaunchCheck:
    """Check ``schedule``'s launch for hazards and count its sum length (module docstring).

    Args:
        schedule: a schedule, or a :class:`simulator.ir.sequence.KernelSequence`: each kernel
            checked in launch order, a buffer an earlier kernel wrote read with that
            kernel's largest sum length (an upper bound: the sum-length rules never
            decrease with an operand's), the sequence's sum length that of its outputs.
        rng: for the random inputs of a full check (values do not change hazards).
        full_check_work: above this many work-item loop steps
            (:func:`simulator.engine.budget.loop_steps`), check representatives.
        input_sum_lengths: the sum length the named inputs' elements start with
            (:func:`simulator.engine.simulation.simulate`); others start exact.

    Raises:
        simulator.engine.simulation.InputError: the schedule cannot be executed (e.g. a name used
            before it is defined).
    """
    if is_sequence(schedule):
        return _check_sequence(schedule, rng, full_check_work)
    start = time.perf_counter()
    small = check_work(schedule) <= full_check_work
    unproved = None if small else (classes_problem(schedule)
                                   or translation_problem(schedule))
    if small or unproved is not None:
        inputs = random_inputs(schedule, rng or np.random.default_rng())
        res = simulate(schedule, inputs, hazards="report", limits=None, sum_lengths=True,
                       input_sum_lengths=input_sum_lengths)
        longest = max([0, *(sum_length.largest(v) for v in res.sum_lengths.values())])
        return LaunchCheck(schedule, res.hazards, None, (), longest, "counted in every work-group",
                           time.perf_counter() - start, why_every_work_group=unproved)
    try:
        hazards, checked, reps = inside_work_groups(schedule, REPRESENTATIVES)
    except NotApplicable:
        hazards, checked, reps = inside_work_groups(
            schedule, REPRESENTATIVES.replace(loop_blocks=False))
    longest, method = _representative_sum_length(schedule, reps, input_sum_lengths)
    return LaunchCheck(schedule, hazards,
                       tuple(group_id_of(schedule, int(g)) for g in checked),
                       NOT_CHECKED_BY_REPRESENTATIVES, longest, method,
                       time.perf_counter() - start)


def _check_sequence(sequence, rng, full_check_work: int) -> LaunchCheck:
    """:func:`check_launch` of each kernel of ``sequence`` in order (its docstring)."""
    parts, longest = [], {}
    for kernel in sequence.kernels:
        seeds = {a.name: longest[a.name] for a in kernel.arrays
                 if a.is_input and a.name in longest}
        part = check_launch(kernel, rng=rng, full_check_work=full_check_work,
                            input_sum_lengths=seeds or None)
        parts.append(part)
        for a in kernel.arrays:
            if a.is_output:
                longest[a.name] = part.sum_length
    outputs = [a.name for a in sequence.arrays if a.is_output]
    last = max(longest[name] for name in outputs)
    method = "; ".join(f"{p.schedule.kernel_name}: {p.sum_length} ({p.sum_length_method})"
                       for p in parts)
    return LaunchCheck(sequence, [h for p in parts for h in p.hazards],
                       None if all(p.work_groups_checked is None for p in parts) else (),
                       tuple(dict.fromkeys(x for p in parts for x in p.not_checked)),
                       last, "per kernel, a buffer read with the sum length of the kernel "
                       f"that wrote it: {method}",
                       sum(p.time_s for p in parts), tuple(parts))


def _largest_of(schedule: Schedule, reps, input_sum_lengths=None) -> int:
    return largest_sum_length_of_groups(schedule, reps, input_sum_lengths)


def _representative_sum_length(schedule: Schedule, reps,
                               input_sum_lengths=None) -> tuple[int, str]:
    from tiletraffic.simulator.engine.accelerators.classes import group_classes
    from tiletraffic.simulator.engine.accelerators.k_extrapolation import k_step_elems, with_k
    from tiletraffic.simulator.engine.simulation import probe_runner

    depth = k_step_elems(schedule)
    k = schedule.param_values.get("K", 0)
    ks = [k % depth + n * depth for n in SHORT_K_STEPS] if depth else []
    if ks and ks[-1] + depth <= k:
        steps = (k - ks[0]) // depth
        found = []
        for k in ks:
            short = with_k(schedule, k)
            short_reps = group_classes(short, probe_runner(
                short, REPRESENTATIVES)).representatives
            found.append(_largest_of(short, short_reps, input_sum_lengths))
        if found[1] - found[0] == found[2] - found[1]:
            return (found[0] + steps * (found[1] - found[0]),
                    "counted in the representative work-groups at K = "
                    f"{', '.join(map(str, ks))}, extrapolated (equal differences)")
    return (_largest_of(schedule, reps, input_sum_lengths),
            f"counted in the {len(reps)} representative work-groups")
