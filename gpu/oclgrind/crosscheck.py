"""Cross-check the simulator against Oclgrind, an independent execution of the same kernel.

Counts: the simulator's counters next to Oclgrind's instruction counter for the generated
OpenCL kernel (built with ``-cl-opt-disable``, one memory operation per source access).
Both are compared twice: in elements (Oclgrind's bytes / 4) and in instructions per
work-item (Oclgrind's count of load/store instructions; the simulator's accesses, a float4
or float2 access being one instruction of 16 or 8 bytes, as Oclgrind counts it).
Hazards: the simulator's hazard kinds next to Oclgrind's race detector and memory checker,
mapped through :data:`gpu.oclgrind.oclgrind.SIMULATOR_HAZARD_KINDS`, with the difference stated.
:func:`crosscheck` picks one of the two for any schedule by the simulator's own check. Oclgrind cannot see an output
element that nobody writes, nor an integer division by zero (its interpreter gives 0 and
reports nothing), so ``unwritten-output`` and ``integer-division-by-zero`` are the
simulator's alone.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from tiletraffic.gpu.oclgrind.oclgrind import (SIMULATOR_HAZARD_KINDS, oclgrind_check,
                                               oclgrind_counts)
from tiletraffic.simulator.observers.counters import AccessEvent, Observer, count_per_group
from tiletraffic.simulator.engine.limits import UNLIMITED, DeviceLimits, check_schedule_limits
from tiletraffic.simulator.engine.simulation import simulate
from tiletraffic.simulator.engine.data_inputs import launch_inputs
from tiletraffic.simulator.engine.data_inputs import random_inputs
from tiletraffic.simulator.ir.nodes import Schedule, ScheduleError, branches_on_data
from tiletraffic.simulator.observers.hazards import HazardError

INSTRUCTION_KEYS = ("global_load_instructions", "global_store_instructions",
                    "local_load_instructions", "local_store_instructions")
"""Load/store instructions executed, summed over work-items (a vector access is one)."""
SHUFFLE_NOTE = ("both sides count each shuffle as the generated OpenCL C moves it: a local "
                "store, a barrier, a local load and a barrier; simulate and model count "
                "shuffles as the GPU runs them, with no memory traffic")
"""The note of a counts comparison of a schedule that shuffles."""
COUNT_KEYS = ("global_load_elems", "global_store_elems", "local_load_elems",
              "local_store_elems", "barriers") + INSTRUCTION_KEYS


class InstructionCounter(Observer):
    """Counts the load and store instructions work-items execute: one per executing
    work-item and access statement, a vector access included (its event lists
    ``vector_width`` entries per instruction)."""

    def __init__(self):
        self.counts = dict.fromkeys(INSTRUCTION_KEYS, 0)

    def on_access(self, ev: AccessEvent) -> None:
        if ev.component:   # one vloadn/vstoren announced per component: counted once
            return
        entries = int(count_per_group(ev.mask, ev.shape).sum())
        self.counts[f"{ev.space}_{ev.direction}_instructions"] += entries // ev.vector_width


@dataclass
class CountsComparison:
    """Simulator and Oclgrind counts of one schedule, key by key."""

    schedule: str
    simulator: dict[str, int]
    oclgrind: dict[str, int]
    note: str = ""
    """Why the simulator's side differs from ``simulate``'s counts of the schedule, where
    it does ("": it does not): a schedule that shuffles is counted as its generated code
    moves the values, through local memory."""

    @property
    def equal(self) -> bool:
        """Every counter of :data:`COUNT_KEYS` is the same for both."""
        return all(self.simulator[k] == self.oclgrind[k] for k in COUNT_KEYS)

    @property
    def ok(self) -> bool:
        """The two agree (here: :attr:`equal`), as :attr:`HazardComparison.ok`."""
        return self.equal

    def to_dict(self) -> dict:
        out = {"schedule": self.schedule, "equal": self.equal,
               "counts": {k: {"simulator": self.simulator[k], "oclgrind": self.oclgrind[k]}
                          for k in COUNT_KEYS}}
        return {**out, "note": self.note} if self.note else out


@dataclass
class HazardComparison:
    """Hazard kinds the simulator found, and what Oclgrind found for the same kernel."""

    schedule: str
    simulator_kinds: list[str]
    oclgrind_kinds: list[str]
    details: list[str] = field(default_factory=list)
    simulator_details: list[str] = field(default_factory=list)
    """One line per simulator hazard (``[kind] detail``)."""

    @property
    def expected_oclgrind(self) -> set[str]:
        """Oclgrind kinds that correspond to the simulator's findings."""
        out: set[str] = set()
        for kind in self.simulator_kinds:
            out |= SIMULATOR_HAZARD_KINDS.get(kind, frozenset())
        return out

    @property
    def agree(self) -> bool:
        """Both clean, or both faulty with every Oclgrind-visible simulator kind matched
        by at least one Oclgrind diagnostic of a corresponding kind."""
        visible = [k for k in self.simulator_kinds if SIMULATOR_HAZARD_KINDS.get(k)]
        if not self.simulator_kinds:
            return not self.oclgrind_kinds
        if not visible:  # e.g. only unwritten-output: Oclgrind cannot see it
            return True
        return all(SIMULATOR_HAZARD_KINDS[k] & set(self.oclgrind_kinds) for k in visible)

    @property
    def ok(self) -> bool:
        """The two agree (here: :attr:`agree`), as :attr:`CountsComparison.ok`."""
        return self.agree

    @property
    def difference(self) -> str:
        """What differs, in a sentence ("" when every kind on each side is matched)."""
        parts = []
        missed = [k for k in self.simulator_kinds if SIMULATOR_HAZARD_KINDS.get(k)
                  and not SIMULATOR_HAZARD_KINDS[k] & set(self.oclgrind_kinds)]
        unseen = [k for k in self.simulator_kinds if not SIMULATOR_HAZARD_KINDS.get(k)]
        matched = set()
        for k in self.simulator_kinds:
            matched |= SIMULATOR_HAZARD_KINDS.get(k, frozenset())
        extra = [k for k in self.oclgrind_kinds if k not in matched]
        if missed:
            parts.append(f"Oclgrind reports nothing for the simulator's {', '.join(missed)}")
        if extra:
            parts.append(f"the simulator has no counterpart of Oclgrind's {', '.join(extra)}")
        if unseen:
            parts.append(f"Oclgrind cannot see {', '.join(unseen)} (no memory error)")
        return "; ".join(parts)

    def to_dict(self) -> dict:
        return {"schedule": self.schedule, "agree": self.agree,
                "simulator": self.simulator_kinds, "oclgrind": self.oclgrind_kinds,
                "difference": self.difference, "simulator_details": self.simulator_details,
                "oclgrind_details": self.details}


def oclgrind_limits() -> DeviceLimits | None:
    """The launch limits of the Oclgrind device, as OpenCL reports them (None: no Oclgrind)."""
    from tiletraffic.gpu.devices.device import list_devices

    for d in list_devices():
        if "oclgrind" in d.platform_name.lower():
            return replace(d.limits, name=f"Oclgrind ({d.device_name})")
    return None


def _refuse_beyond_oclgrind(schedule: Schedule) -> None:
    limits = oclgrind_limits()
    if limits is not None:
        check_schedule_limits(schedule, limits)


def compare_counts(schedule: Schedule, timeout_s: float = 300) -> CountsComparison:
    """Simulator counts vs Oclgrind's instruction counts for ``schedule`` (a schedule that
    shuffles: counted as its generated code moves the values, through local memory).

    Raises:
        simulator.ir.nodes.ScheduleError: part of a work-group skips a shuffle, so the
            generated code diverges at its barriers (nothing run).
        simulator.engine.limits.LimitError: the launch exceeds Oclgrind's limits (nothing run).
        gpu.oclgrind.oclgrind.OclgrindError: Oclgrind missing, failed or timed out.
    """
    from tiletraffic.gpu.codegen.generate import shuffles_as_generated
    _refuse_beyond_oclgrind(schedule)
    instructions = InstructionCounter()
    generated = shuffles_as_generated(schedule)
    try:
        sim = simulate(generated, compute_values=False, limits=None,
                       observers=[instructions]).counts.to_dict()
    except HazardError as err:
        if generated is schedule:
            raise
        raise ScheduleError(_divergent_shuffle_text(schedule, err.hazard.site)) from None
    sim.update(instructions.counts)
    measured = oclgrind_counts(schedule, timeout_s=timeout_s)
    ocl = measured.to_dict()
    for key in INSTRUCTION_KEYS:
        space, direction = key.split("_")[:2]
        ocl[key] = int(measured.instructions.get(f"{direction} {space}", 0))
    note = "" if generated is schedule else SHUFFLE_NOTE
    return CountsComparison(schedule.family, {k: sim[k] for k in COUNT_KEYS},
                            {k: ocl[k] for k in COUNT_KEYS}, note)


def _divergent_shuffle_text(schedule: Schedule, site: str) -> str:
    """Why a schedule whose shuffles part of a work-group skips is not compared."""
    if "opencl" in schedule.extra:
        moved, skipped = "sub-group values", "sub-group operation"
        advice = "call sub-group built-ins in code every work-item of the work-group reaches"
    else:
        moved, skipped = "shuffled values", "shuffle"
        advice = "shuffle in code every thread of the block reaches"
    return (f"{schedule.family}: not compared: its generated OpenCL C, which Oclgrind runs, "
            f"moves {moved} through local memory with barriers, and part of a work-group "
            f"skips a {skipped} ({site}), so that code diverges at a barrier where the GPU "
            f"does not; {advice}")


def _inputs(schedule: Schedule) -> dict:
    """The inputs the simulator checks ``schedule`` with: fresh random values, or for a
    schedule that branches on floats of the data the values Oclgrind is launched on
    (:func:`simulator.engine.data_inputs.launch_inputs`)."""
    if branches_on_data(schedule.body):
        return launch_inputs(schedule)
    return random_inputs(schedule, np.random.default_rng())


def compare_hazards(schedule: Schedule, timeout_s: float = 300) -> HazardComparison:
    """Simulator hazard kinds vs Oclgrind's diagnostics for ``schedule``.

    Raises:
        simulator.engine.limits.LimitError: the launch exceeds Oclgrind's limits (nothing run).
        gpu.oclgrind.oclgrind.OclgrindError: Oclgrind missing, failed or timed out.
    """
    _refuse_beyond_oclgrind(schedule)
    sim = simulate(schedule, _inputs(schedule),
                   hazards="report", limits=UNLIMITED)
    diags = oclgrind_check(schedule, timeout_s=timeout_s)
    kinds = sorted(diags.kinds())
    return HazardComparison(schedule.family, sorted({h.kind for h in sim.hazards}), kinds,
                            diags.describe().splitlines()[:8] if kinds else [],
                            [f"[{h.kind}] {h.detail}" for h in sim.hazards])


def crosscheck(schedule: Schedule, timeout_s: float = 300) -> CountsComparison | HazardComparison:
    """Counts of a hazard-free schedule (:func:`compare_counts`), or the hazards of a faulty
    one side by side (:func:`compare_hazards`): any schedule, a user's own included. Which
    one is decided by the simulator's own check of the launch (every work-group).

    Raises:
        simulator.engine.limits.LimitError: the launch exceeds Oclgrind's limits (nothing run).
        gpu.oclgrind.oclgrind.OclgrindError: Oclgrind missing, failed or timed out.
    """
    _refuse_beyond_oclgrind(schedule)
    found = simulate(schedule, _inputs(schedule),
                     hazards="report", limits=UNLIMITED).hazards
    if found:
        return compare_hazards(schedule, timeout_s)
    return compare_counts(schedule, timeout_s)


def compare_kernels(schedule, timeout_s: float = 300) -> list[CountsComparison | HazardComparison]:
    """What ``tiletraffic crosscheck`` compares for ``schedule`` (a ``Schedule`` or a
    ``KernelSequence``, each of whose kernels is compared on its own, with random inputs):
    for a known-faulty variant (its family one of ``simulator.kernels.variants.VARIANTS``) the
    hazards (:func:`compare_hazards`, so that a fault neither tool sees in one launch reads
    as agreement on none), for any other schedule :func:`crosscheck`. One comparison per
    kernel, in launch order; each has ``ok``.

    Raises:
        simulator.engine.limits.LimitError: a launch exceeds Oclgrind's limits (nothing run).
        gpu.oclgrind.oclgrind.OclgrindUnavailable: no Oclgrind platform installed.
        gpu.oclgrind.oclgrind.OclgrindError: Oclgrind failed or timed out.
    """
    from tiletraffic.simulator.ir.sequence import kernels_of
    from tiletraffic.simulator.kernels.variants import VARIANTS

    return [compare_hazards(kernel, timeout_s) if kernel.family in VARIANTS
            else crosscheck(kernel, timeout_s) for kernel in kernels_of(schedule)]
