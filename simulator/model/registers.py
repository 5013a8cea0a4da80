"""Registers per work-item: an estimate from the schedule where none was measured.

The compiled kernel's own count (NVIDIA: ``gpu.devices.kernel_resources``, from the
``-cl-nv-verbose`` build log) is what the time model should be given
(``model_launch(..., registers_per_work_item=N)``, ``tiletraffic model --registers N``).
Without it, a schedule that declares private arrays (register tiles) gets an estimate:

    registers ≈ :data:`BASE_REGISTERS` + one per private float (every element of every
    :class:`~simulator.ir.nodes.PrivateArray` and every :class:`~simulator.ir.nodes.DeclareFloat`),
    at most the device's ``max_registers_per_work_item`` (beyond it the compiler spills).

:data:`BASE_REGISTERS` is a guess: the registers a kernel with one private float uses for
ids, sizes, addresses and loop counters. The estimate may be off by a few registers either
way from the compiled count, which can move the occupancy across a resident-work-group
boundary: give the compiled count where there is one. Schedules without private arrays
get no estimate (``None``: registers are left out of the occupancy).

A schedule's register budget (``Schedule.max_registers``, :func:`with_register_budget`) caps
the compiled kernel's registers (on NVIDIA through the PTX ``.maxnreg`` directive; the
compiler spills what does not fit) and so the estimate.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.sequence import is_sequence, kernels_of
from tiletraffic.simulator.ir.visitor import walk_statements

BASE_REGISTERS = 30
"""Registers of a kernel beyond its private floats (guessed; module docstring)."""


@dataclass(frozen=True)
class RegisterEstimate:
    """An estimated register count and how it was made (for ``methods`` and warnings).

    ``capped_by``: "" where the estimate is below every limit, else what limited it: the
    schedule's register budget (``"budget"``), the device's maximum (``"device"``) or the most
    with which one work-group fits a compute unit (``"work-group"``)."""

    registers_per_work_item: int
    private_floats: int
    capped_by: str = ""

    @property
    def capped(self) -> bool:
        """The count is a limit's, below the estimate."""
        return bool(self.capped_by)

    def describe(self) -> str:
        why = {"budget": "the schedule's register budget (max_registers)",
               "device": "the device's maximum (the compiler would spill)",
               "work-group": "the most with which one work-group fits a compute unit (the "
                             "compiler would spill)"}
        capped = (f", capped at {self.registers_per_work_item}: "
                  f"{why[self.capped_by]}") if self.capped else ""
        return (f"registers per work-item estimated from the schedule (guessed): "
                f"{BASE_REGISTERS} + {self.private_floats} private floats = "
                f"{BASE_REGISTERS + self.private_floats}{capped}")


def private_floats(stmts) -> tuple[int, bool]:
    """(private floats declared in ``stmts`` at any depth, whether any private array is
    among them): every element of a :class:`~simulator.ir.nodes.DeclarePrivateArray` and
    one per :class:`~simulator.ir.nodes.DeclareFloat`, each declaration counted once."""
    total, arrays = 0, False
    for s in walk_statements(stmts):
        if isinstance(s, S.DeclarePrivateArray):
            total, arrays = total + s.array.size, True
        elif isinstance(s, S.DeclareFloat):
            total += 1
    return total, arrays


def estimate_registers(schedule: S.Schedule, max_registers: int = 255,
                       work_group_registers: int | None = None) -> RegisterEstimate | None:
    """The estimate of this module's docstring for a schedule with private arrays, at most
    ``max_registers`` (the device's maximum), ``work_group_registers`` (the most with which
    one work-group of the schedule's size fits a compute unit: a kernel compiled for that
    work-group size, as generated kernels are with ``reqd_work_group_size``, gets no more;
    None: no such limit) and the schedule's own budget (``schedule.max_registers``), else
    None (a schedule of scalar private floats only: registers are not modelled)."""
    floats, arrays = private_floats(schedule.body)
    if not arrays:
        return None
    registers = BASE_REGISTERS + floats
    budget = schedule.max_registers
    limits = [(max_registers, "device")]
    if work_group_registers is not None:
        limits.append((work_group_registers, "work-group"))
    if budget is not None:
        limits.append((budget, "budget"))
    limit, by = min(limits, key=lambda entry: entry[0])
    return RegisterEstimate(min(registers, limit), floats, by if registers > limit else "")


def with_register_budget(schedule, max_registers: int | None):
    """``schedule`` (or every kernel of a :class:`~simulator.ir.sequence.KernelSequence`) with
    the register budget ``max_registers``: the compiled kernel may use at most that many
    registers per work-item (NVIDIA: the PTX ``.maxnreg`` directive, ``gpu.runtime.ptx``; the
    compiler spills what does not fit). None leaves ``schedule`` as it is.

    Raises:
        ScheduleError: ``max_registers`` is not a positive integer.
    """
    if max_registers is None:
        return schedule
    if is_sequence(schedule):
        return dataclasses.replace(schedule, kernels=tuple(
            dataclasses.replace(k, max_registers=max_registers) for k in schedule.kernels))
    return dataclasses.replace(schedule, max_registers=max_registers)


def register_budget_of(schedule) -> int | None:
    """The register budget of ``schedule`` (of a sequence: the first kernel's that has
    one), or None."""
    return next((k.max_registers for k in kernels_of(schedule) if k.max_registers is not None),
                None)
