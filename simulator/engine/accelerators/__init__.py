"""The engine's accelerators: exact shortcuts of full execution, each one pass.

Each gives exactly the counts (and hazards, or a :class:`NotApplicable`) of executing every
work-group statement by statement, and the tests prove it over drawn schedules:

=====================  =================================================  ==================
pass                   applies where                                      module
=====================  =================================================  ==================
work-group classes     a launch counted without values: one work-group    :mod:`.classes`
                       per class of provably identical traffic
private nests          values off: loop nests and runs of statements on   :mod:`.private_nest`
                       private memory only, applied in one step
loop blocks            with work-group classes: loops that store or       :mod:`.loop_blocks`
                       assign private arrays, run in blocks of iterations
classes by loaded      counts without a device model of a kernel whose    :mod:`.data_classes`
integers               bounds read an integer buffer: one work-group per
                       class of the integers it loads
K extrapolation        with work-group classes, a K loop whose step is    :mod:`.k_extrapolation`
                       known: its counts from three short K
=====================  =================================================  ==================

Which passes run is the caller's choice, given explicitly as :class:`Accelerators` to
:func:`simulator.engine.simulation.simulate` and :func:`simulator.model.launch.model_launch`;
nothing is read from the environment here.

The statement passes (private nests, loop blocks) share one interface, :class:`Pass`: the
engine asks each for the statement runs of a block it may execute at once
(:meth:`Pass.runs`), then, at a loop or a run, whether the pass applies to it now
(:meth:`Pass.applies`: a plan, or ``None`` with nothing changed) and lets it
:meth:`Pass.run`. A pass that finds out only while running that its result would not be
exact raises :class:`NotApplicable`; the caller that enabled it runs again without it.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass


INT_BUFFER_DECLINE = ("its control flow or addresses read an integer buffer (a loaded integer "
                      "in a loop bound, condition or index), which differs from work-group "
                      "to work-group with the data")
"""Why every accelerator declines a schedule that reads an integer buffer
(:func:`simulator.ir.nodes.reads_int_buffer`), except the classes by loaded integers of
:mod:`.data_classes`, which prove themselves."""

FLOAT_BRANCH_DECLINE = ("it branches on floats of the data (a comparison or test of loaded "
                        "or computed floats), so its control flow differs from work-item to "
                        "work-item and work-group to work-group with the values: its counts "
                        "are those of the data executed")
"""Why every accelerator declines a schedule that branches on floats of the data
(:func:`simulator.ir.nodes.branches_on_data`)."""


def data_decline(body) -> str | None:
    """Why every accelerator declines the statements ``body`` because their traffic depends
    on the data (:data:`INT_BUFFER_DECLINE`, :data:`FLOAT_BRANCH_DECLINE`), or None."""
    from tiletraffic.simulator.ir import nodes as S
    if S.reads_int_buffer(body):
        return INT_BUFFER_DECLINE
    if S.branches_on_data(body):
        return FLOAT_BRANCH_DECLINE
    return None


class NotApplicable(Exception):
    """A pass cannot give the exact result of full execution here (the message says why):
    run again without it. The one exception on which callers fall back."""


@dataclass(frozen=True)
class Accelerators:
    """Which accelerators may run (each is exact where it applies).

    Attributes:
        work_group_classes: execute one work-group per class (:mod:`.classes`); counts
            only, and races in global memory, reads of outputs before a store and unwritten
            outputs are then not checked.
        private_nests: with values off, apply private-only loop nests and statement runs in
            one step, and read and assign private array elements of one static index
            without per-work-item index arrays (:mod:`.private_nest`).
        loop_blocks: with ``work_group_classes`` and ``private_nests``, run loops that
            store or assign private arrays in blocks of iterations (:mod:`.loop_blocks`);
            a hazard or a stale ``Let`` then raises :class:`NotApplicable`.
        k_extrapolation: with ``work_group_classes``, count and model a schedule's
            long K loop from three short ones (:mod:`.k_extrapolation`; used by
            :func:`simulator.model.launch.model_launch`,
            :func:`simulator.engine.fast_path.count_launch` and the engine's ``simulate``
            without extra observers).
    """

    work_group_classes: bool = False
    private_nests: bool = True
    loop_blocks: bool = False
    k_extrapolation: bool = False

    def replace(self, **changes) -> "Accelerators":
        """A copy with ``changes`` (field names as keywords)."""
        return dataclasses.replace(self, **changes)


SIMULATE = Accelerators()
""":func:`simulator.engine.simulation.simulate`'s default: every work-group executed, private
nests on."""

ALL = Accelerators(work_group_classes=True, private_nests=True, loop_blocks=True,
                   k_extrapolation=True)
"""Every accelerator: :func:`simulator.model.launch.model_launch`'s default."""

NONE = Accelerators(work_group_classes=False, private_nests=False, loop_blocks=False,
                    k_extrapolation=False)
"""Full execution, statement by statement and work-group by work-group."""


@dataclass(frozen=True)
class Run:
    """Consecutive statements ``stmts[start:stop]`` of one block that a pass may execute at
    once (:meth:`Pass.runs`); ``plan`` is the pass's static plan of them."""

    start: int
    stop: int
    plan: object


class Pass:
    """A statement pass of the engine (values off). ``machine`` is the engine's
    :class:`simulator.engine.machine.Machine`: a batch of G work-groups of L work-items; masks are
    boolean arrays of shape ``(G, L, I)`` (I iterations of a block, 1 elsewhere)."""

    name = ""

    def runs(self, stmts: tuple, params: dict[str, int]) -> dict[int, Run]:
        """Static: the runs of ``stmts`` this pass may execute at once, by start position
        (none by default)."""
        return {}

    def applies(self, machine, node, mask):
        """The plan to :meth:`run` ``node`` (a ``For`` loop or a :class:`Run`) exactly for
        the work-items of ``mask`` in ``machine``'s state now, or ``None`` (nothing changed:
        the engine executes ``node`` itself)."""
        return None

    def run(self, machine, node, mask, plan) -> None:
        """Execute ``node`` with the ``plan`` :meth:`applies` gave, with the effect of
        executing it statement by statement.

        Raises:
            NotApplicable: where that effect cannot be given exactly after all.
        """
        raise NotImplementedError
