"""Memory and time a simulation will need, estimated before it starts.

A launch of 40000³ with tile 1 has 1.6e9 work-groups; the simulator keeps a few int64 words
per work-group (loads per work-group, the work-group classes' keys and their sort), so it
would need about 150 GB and be killed by the out-of-memory killer. :func:`estimate_simulation`
gives the memory and time from the schedule's sizes alone, so that a front end can refuse
such a launch with the estimate (``tiletraffic simulate ... --force`` overrides).

The constants are upper bounds of peak resident memory and wall time per unit of work:

- per work-group: 96 bytes (a full run's loads per work-group; counting by work-group
  classes, ``np.arange`` of every work-group id, its class key and ``np.unique``'s sort);
- per work-item of one batch (at most ``BATCH_WORK_ITEMS``): 96 bytes when counting, 160
  bytes when also computing values (index, mask and value arrays of the statement running);
- buffers: 4 bytes per element when values are computed; the float64 reference the command
  line checks against adds 8 bytes per input element and 16 per output element;
- the checks that need the full launch (not run when counting by work-group classes): 17
  bytes per output element (``simulator.observers.global_races``: two int32 work-item keys
  per word and direction the kernel accesses its outputs in; the unwritten-output flags);
- the interpreter with numpy, plus the blocks of a vectorized K loop (up to
  ``engine.BLOCK_ELEMS`` elements of several arrays): 160 MiB.
Time: 1 µs per work-group and 25 ns per work-item and step of the inner (K) loop (or of its
deepest loop nest, :func:`loop_nest_steps`, where that is longer) when every
work-group runs; 1 µs per work-group for the classes' bookkeeping when counting by classes,
with 25 ns per work-item and step of the representatives (counting
by classes of loaded integers, :mod:`.accelerators.data_classes`: every representative,
the steps of its deepest loop nest as the proof bounded them, the whole nest's,
:attr:`.accelerators.data_classes.DataClasses.loop_steps`); counting
from three short K (K extrapolation), the three short launches' times; and 250 µs per statement the engine executes one loop iteration at a
time in each batch of work-groups (:func:`interpreted_statements`: the statements of loops
it cannot run in blocks of iterations), the interpreter's cost of a statement, which
dominates a long loop of small work-groups (``gemm-tiled`` with M = N = 1 and a large K).
Time is an order of magnitude, not a prediction.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.engine.accelerators import INT_BUFFER_DECLINE
from tiletraffic.simulator.engine.accelerators.class_safety import classes_problem
from tiletraffic.simulator.engine.accelerators.data_classes import DataClasses, data_classes
from tiletraffic.simulator.engine.accelerators import k_extrapolation as kx
from tiletraffic.simulator.engine.loop_bounds import LoopBounds
from tiletraffic.simulator.ir.nodes import FLOAT_BYTES, Schedule
from tiletraffic.simulator.ir.static import eval_static, is_vectorizable
from tiletraffic.simulator.ir.sequence import buffers_of, is_sequence
from tiletraffic.simulator.ir.visitor import Visitor, bodies, walk_statements

BASE_BYTES = 160 * 2**20
PER_WORK_GROUP_BYTES = 96
PER_BATCH_WORK_ITEM_BYTES = {False: 96, True: 160}
REFERENCE_BYTES_PER_INPUT_ELEM = 8
REFERENCE_BYTES_PER_OUTPUT_ELEM = 16
FULL_LAUNCH_CHECK_BYTES_PER_OUTPUT_ELEM = 17
PER_WORK_GROUP_S = 1e-6
PER_WORK_GROUP_CLASSES_S = 1e-6
PER_WORK_ITEM_STEP_S = 25e-9
PER_INTERPRETED_STATEMENT_S = 250e-6
MEMORY_HEADROOM = 0.8
"""Refuse what needs more than this fraction of the memory available now."""


class BudgetError(MemoryError):
    """A launch would need more memory than the machine has available; the message gives the
    estimate and the memory available, and how to override."""


@dataclass(frozen=True)
class Estimate:
    """What one simulation is expected to take.

    Attributes:
        memory_bytes: peak resident memory of the process, bytes (upper envelope).
        time_s: wall time, seconds (order of magnitude; 2-core machine).
        work_groups: work-groups of the launch.
    """

    memory_bytes: int
    time_s: float
    work_groups: int
    time_known: bool = True
    """False where a loop's trips depend on an integer buffer's contents and no proof
    bounds them: ``time_s`` then charges such a loop the largest size parameter's trips, an
    envelope too loose to state (:meth:`time_text` and :meth:`describe` say so)."""

    def time_text(self) -> str:
        """The time, for a note: ``"40 s"``, ``"3 min"``, ``"2.5 h"``; where not
        :attr:`time_known`, ``"its time not estimated (loop trips read from the data)"``."""
        if not self.time_known:
            return "its time not estimated (loop trips read from the data)"
        return _human_seconds(self.time_s)

    def describe(self) -> str:
        time = f" and {_human_seconds(self.time_s)}" if self.time_s > 0 and self.time_known \
            else ""
        return (f"about {_human_bytes(self.memory_bytes)} of memory{time} for "
                f"{self.work_groups:,} work-group{'' if self.work_groups == 1 else 's'}")


def _human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} TiB"  # pragma: no cover


def _human_seconds(s: float) -> str:
    if s < 120:
        return f"{s:.2g} s"
    if s < 7200:
        return f"{s / 60:.3g} min"
    return f"{s / 3600:.3g} h"


def _elements(schedule: Schedule) -> tuple[int, int]:
    """Elements of all input and of all output arrays (logical shapes; a kernel sequence's
    scratch buffers count as outputs)."""
    p = schedule.param_values
    ins = outs = 0
    for a in buffers_of(schedule):
        n = 1
        for s in a.shape:
            n *= p[s]
        if a.role == "in":
            ins += n
        else:
            outs += n
    return ins, outs


def estimate_simulation(schedule: Schedule, *, compute_values: bool,
                        work_group_classes: bool = False, k_extrapolation: bool = False,
                        reference: bool | None = None, batch_work_items: int = 1 << 20,
                        classes_problems: tuple[str | None, ...] | None = None) -> Estimate:
    """Memory and time :func:`simulator.engine.simulation.simulate` is expected to need.

    Args:
        compute_values: the outputs are computed (buffers allocated).
        work_group_classes: counts by work-group classes (one work-group per class runs,
            where they are proved for the schedule, as :func:`simulator.engine.simulation.simulate`
            decides; else every work-group).
        k_extrapolation: with ``work_group_classes``, counts from three short K where
            :func:`simulator.engine.accelerators.k_extrapolation.applies` (as
            :func:`simulator.engine.fast_path.count_launch` takes them): the three short
            launches' estimates added.
        reference: a float64 reference of the output is also computed (default: whenever
            values are computed).
        batch_work_items: work-items per batch, as given to ``simulate``.
        classes_problems: per kernel, why its work-group classes are not proved (None where
            they are), when the caller has proved them already (default: proved here).

    A kernel sequence (:mod:`simulator.ir.sequence`): its kernels' estimates added.
    """
    if is_sequence(schedule):
        problems = classes_problems or (None,) * len(schedule.kernels)
        parts = [estimate_simulation(k, compute_values=compute_values,
                                     work_group_classes=work_group_classes,
                                     k_extrapolation=k_extrapolation, reference=reference,
                                     batch_work_items=batch_work_items,
                                     classes_problems=None if classes_problems is None
                                     else (why,))
                 for k, why in zip(schedule.kernels, problems)]
        return Estimate(sum(e.memory_bytes for e in parts), sum(e.time_s for e in parts),
                        sum(e.work_groups for e in parts), all(e.time_known for e in parts))
    by_data = None          # the classes by loaded integers, where counted by them
    if work_group_classes:   # as simulate decides
        why = classes_problem(schedule) if classes_problems is None else classes_problems[0]
        if why in (None, INT_BUFFER_DECLINE) and S.reads_int_buffer(schedule.body):
            found = data_classes(schedule)          # proved once per schedule
            by_data = found if isinstance(found, DataClasses) else None
            why = None if by_data is not None else found
        work_group_classes = why is None
    if work_group_classes and k_extrapolation and kx.applies(schedule):
        return _estimate_short_k(schedule, batch_work_items)
    groups = schedule.work_groups
    items_per_group = schedule.work_group_items
    batch_items = min(max(batch_work_items // items_per_group, 1) * items_per_group,
                      groups * items_per_group)
    ins, outs = _elements(schedule)
    memory = BASE_BYTES + PER_WORK_GROUP_BYTES * groups
    memory += PER_BATCH_WORK_ITEM_BYTES[compute_values] * batch_items
    if not work_group_classes:
        memory += FULL_LAUNCH_CHECK_BYTES_PER_OUTPUT_ELEM * outs
    if compute_values:
        memory += FLOAT_BYTES * (ins + outs)
        if reference is None or reference:
            memory += (REFERENCE_BYTES_PER_INPUT_ELEM * ins
                       + REFERENCE_BYTES_PER_OUTPUT_ELEM * outs)
    walker = _loop_walk(schedule, None if by_data is None else by_data.loop_steps,
                        S.reads_int_buffer(schedule.body))
    interpreted, nest_steps = walker.total, walker.deepest
    steps = max(1, schedule.param_values.get("K", 1), nest_steps)
    if by_data is not None:       # the representatives' loops as long as the proof saw:
        run_groups = len(by_data.representatives)   # its loop_steps counts the whole nest
        time_s = PER_WORK_GROUP_CLASSES_S * groups + \
            PER_WORK_ITEM_STEP_S * run_groups * items_per_group * max(1, by_data.loop_steps)
    elif work_group_classes:
        run_groups = min(groups, 3 ** len(schedule.local_size))   # one per class
        time_s = PER_WORK_GROUP_CLASSES_S * groups + \
            PER_WORK_ITEM_STEP_S * run_groups * items_per_group * steps
    else:
        time_s = PER_WORK_GROUP_S * groups + PER_WORK_ITEM_STEP_S * groups * items_per_group * steps
        run_groups = groups
    batches = -(-run_groups * items_per_group // batch_items)
    time_s += PER_INTERPRETED_STATEMENT_S * interpreted * batches
    return Estimate(int(memory), float(time_s), groups, not walker.unbounded)


def _estimate_short_k(schedule: Schedule, batch_work_items: int) -> Estimate:
    """The estimate of counting ``schedule`` from three short K by work-group classes: the
    three launches' times added, the largest memory, the real launch's work-groups."""
    values, _, _ = kx.schedule_short_k_values(schedule)
    parts = [estimate_simulation(kx.with_k(schedule, k), compute_values=False,
                                 work_group_classes=True, batch_work_items=batch_work_items,
                                 classes_problems=(None,))
             for k in values]
    return Estimate(max(e.memory_bytes for e in parts), sum(e.time_s for e in parts),
                    schedule.work_groups, all(e.time_known for e in parts))


def interpreted_statements(schedule: Schedule) -> int:
    """Statements the engine executes one loop iteration at a time, in one batch of
    work-groups: for every loop it does not run in blocks of iterations
    (:func:`simulator.ir.static.is_vectorizable` false: a barrier, a store or a private
    array element carried between iterations in its body), its iterations (times those of
    the loops around it) times the statements of its body, a loop run in blocks counted as
    its statements once. A loop's trips come from its bounds where they are expressions of
    constants, parameters and the integer variables set from them before the loop; where
    they move with the work-item (work-item ids, loop variables, the names set from them:
    a grid-stride loop, a row's range), the most any work-item runs
    (:meth:`.loop_bounds.LoopBounds.most_trips`, an upper bound, exact for a grid-stride
    loop); else the largest size parameter (an envelope, as :func:`loop_steps` takes)."""
    return _loop_walk(schedule).total


def loop_nest_steps(schedule: Schedule) -> int:
    """The most iterations of a work-item's deepest loop nest: the product of the trips of
    nested loops (as :func:`interpreted_statements` counts them), at least 1."""
    return _loop_walk(schedule).deepest


def _loop_walk(schedule: Schedule, envelope: int | None = None,
               reads_data: bool = False) -> "_LoopWalk":
    """The walk of ``schedule``'s body done: its ``total`` is :func:`interpreted_statements`,
    its ``deepest`` :func:`loop_nest_steps`; a loop whose trips are not known statically
    runs ``envelope`` times (default: the largest size parameter), and marks the walk
    ``unbounded`` where ``reads_data`` (the kernel reads an integer buffer) and no
    ``envelope`` is given. A given ``envelope`` is the most iterations of any loop nest (a
    proof's :attr:`.accelerators.data_classes.DataClasses.loop_steps`): no nest, and no
    statement's runs, count more."""
    walker = _LoopWalk(schedule.param_values, envelope, reads_data, LoopBounds(schedule))
    walker.body(schedule.body)
    return walker


class _LoopWalk(Visitor):
    """The walk of :func:`_loop_walk`: ``total`` counts the statements executed one loop
    iteration at a time, ``deepest`` the most iterations of a loop nest. At the point
    reached, the statements run ``runs`` times (counted when ``counting``: inside a loop
    run one iteration at a time) within ``nest`` iterations of the loops around them;
    ``variables`` holds the integer ``Let``\\ s of constants and parameters, ``bounds`` the
    forms of the other ``Let``\\ s and of the loop variables (:mod:`.loop_bounds`)."""

    def __init__(self, params: dict[str, int], envelope: int | None = None,
                 reads_data: bool = False, bounds: LoopBounds | None = None):
        self.params = params
        self.bounds = bounds
        self.envelope = max([1, *params.values()]) if envelope is None else max(1, envelope)
        self.cap = None if envelope is None else self.envelope
        """The most iterations of a loop nest where a proof bounded them (its whole nest's)."""
        self.guessed = envelope is None and reads_data
        self.unbounded = False
        """A loop whose trips are not static was charged the largest size parameter's in
        a kernel that reads an integer buffer (its trips may come from the data)."""
        self.variables: dict[str, int] = {}
        self.total = 0
        self.deepest = 1
        self.runs, self.nest, self.counting = 1, 1, False

    def body(self, stmts) -> None:
        for stmt in stmts:
            self.total += self.runs if self.counting else 0
            self.visit(stmt)

    def generic_visit(self, stmt) -> None:
        """A statement other than ``Let`` and ``For``: the statements of its bodies."""
        for body in bodies(stmt).values():
            self.body(body)

    def visit_Let(self, stmt: S.Let) -> None:
        try:
            self.variables[stmt.name] = eval_static(stmt.value, self.params, self.variables)
            self._forget(stmt.name, keep_value=True)
        except (TypeError, KeyError, ValueError, ZeroDivisionError):
            self.variables.pop(stmt.name, None)
            if self.bounds is not None:
                self.bounds.bind(stmt.name, stmt.value, self.variables)

    def visit_DeclareInt(self, stmt) -> None:
        """An integer assigned again: not a static value of the walk."""
        self._forget(stmt.name)

    def _forget(self, name: str, keep_value: bool = False) -> None:
        """``name`` holds no known form (nor static value unless ``keep_value``)."""
        if not keep_value:
            self.variables.pop(name, None)
        if self.bounds is not None:
            self.bounds.forget(name)

    visit_AssignInt = visit_DeclareInt

    def visit_While(self, stmt: S.While) -> None:
        """Iterations not known statically: the envelope, one at a time."""
        for s in walk_statements(stmt.body + stmt.update):
            if isinstance(s, (S.DeclareInt, S.AssignInt, S.Let)):
                self._forget(s.name)
        n = self.envelope
        self.unbounded |= self.guessed
        self.deepest = max(self.deepest, self._capped(self.nest * n))
        outer = self.runs, self.nest, self.counting
        self.runs, self.nest, self.counting = (self._capped(self.runs * n),
                                               self._capped(self.nest * n), True)
        self.body(stmt.body)
        self.body(stmt.update)
        self.runs, self.nest, self.counting = outer

    def visit_For(self, stmt: S.For) -> None:
        n = self.trips(stmt)
        self.deepest = max(self.deepest, self._capped(self.nest * n))
        outer = self.runs, self.nest, self.counting
        if is_vectorizable(stmt):
            self.nest = self._capped(self.nest * n)
        else:
            self.runs, self.nest, self.counting = (self._capped(self.runs * n),
                                                   self._capped(self.nest * n), True)
        self._bind_loop_variable(stmt, n)
        self.body(stmt.body)
        self._forget(stmt.var)
        self.runs, self.nest, self.counting = outer

    def _bind_loop_variable(self, loop: S.For, trips: int) -> None:
        """``loop.var`` within the loop's body: from the start's least value to the stop's
        largest (less one), or the start's least plus ``trips`` steps."""
        if self.bounds is None:
            return
        b = self.bounds
        lo, _ = b.span(b.form(loop.start, self.variables))
        _, stop = b.span(b.form(loop.stop, self.variables))
        _, step = b.interval(loop.step, self.variables)
        hi = stop - 1
        if trips <= 1:
            hi = min(hi, lo)
        elif not math.isinf(step):
            hi = min(hi, lo + (trips - 1) * step)
        b.bind_range(loop.var, ("var", loop.var, id(loop)), lo, hi)

    def _capped(self, iterations: int) -> int:
        """``iterations`` of a nest, at most :attr:`cap` where a proof gave it."""
        return iterations if self.cap is None else min(iterations, self.cap)

    def trips(self, loop: S.For) -> int:
        try:
            start, stop, step = (eval_static(e, self.params, self.variables)
                                 for e in (loop.start, loop.stop, loop.step))
        except (TypeError, KeyError, ValueError, ZeroDivisionError):
            most = None if self.bounds is None else \
                self.bounds.most_trips(loop, self.variables)
            if most is not None:        # bounds moving with the work-item: their most
                return most
            self.unbounded |= self.guessed
            return self.envelope
        return max(0, -((start - stop) // step)) if step > 0 else self.envelope


def work_items(schedule: Schedule) -> int:
    """Work-items of a launch (of a kernel sequence, its kernels' added)."""
    kernels = schedule.kernels if is_sequence(schedule) else (schedule,)
    return sum(k.work_groups * k.work_group_items for k in kernels)


def work_item_steps(schedule: Schedule) -> int:
    """Work-item loop steps of a launch: per kernel its work-items × the iterations of its
    deepest loop nest (:func:`loop_nest_steps`), kernels added; a GEMM's M·K·N."""
    kernels = schedule.kernels if is_sequence(schedule) else (schedule,)
    return sum(k.work_groups * k.work_group_items * loop_nest_steps(k) for k in kernels)


def loop_steps(schedule: Schedule) -> int:
    """Work-item loop steps of a launch, as charged by the check before launch
    (``simulator.engine.launch_check``): work-items x the largest integer parameter (an upper envelope
    of the loop trips of a kernel whose loops run over its sizes); of a kernel sequence,
    its kernels' added."""
    if is_sequence(schedule):
        return sum(loop_steps(k) for k in schedule.kernels)
    steps = max([1, *(v for v in schedule.param_values.values() if isinstance(v, int))])
    return schedule.work_groups * schedule.work_group_items * steps


def available_memory_bytes() -> int | None:
    """Memory available to a new allocation now (``MemAvailable`` of ``/proc/meminfo``, else
    physical memory from ``sysconf``), bytes; ``None`` when neither can be read."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_budget(estimate: Estimate, what: str, available: int | None = None) -> None:
    """Refuse a launch whose estimate exceeds :data:`MEMORY_HEADROOM` of the available memory.

    Raises:
        BudgetError: naming the estimate, the memory available and ``--force``.
    """
    available = available_memory_bytes() if available is None else available
    if available is None:
        return
    limit = MEMORY_HEADROOM * available
    if estimate.memory_bytes > limit:
        raise BudgetError(
            f"{what} would need {estimate.describe()}; {_human_bytes(available)} of memory is "
            f"available (limit {MEMORY_HEADROOM:.0%} of it, {_human_bytes(limit)}). Use smaller "
            "sizes or a larger tile, or --force to try anyway")


def estimate_device_run(schedule: Schedule) -> Estimate:
    """Host memory a checked device run needs: float32 inputs and read-back outputs, the
    float64 reference (``gpu.runtime.checked_run.run_on_device``). Time is not estimated (0)."""
    ins, outs = _elements(schedule)
    memory = (BASE_BYTES + FLOAT_BYTES * (ins + 2 * outs)
              + REFERENCE_BYTES_PER_INPUT_ELEM * ins + REFERENCE_BYTES_PER_OUTPUT_ELEM * outs)
    return Estimate(int(memory), 0.0, schedule.work_groups)


VALUES_WORK = 2**24
"""Most work (multiply-adds of a built-in family, work-item loop steps of another schedule)
of a launch that ``simulate`` and ``check`` execute with values by default; a larger one is
executed without them (the same counts and hazards, several times faster)."""

VALUES_WORK_ITEMS = 2**20
"""And most work-items: a launch of many short work-items (a transpose of 4096²) costs more
per work-item with values than its loop steps say."""


def values_problem(work: int, work_text: str, items: int) -> str | None:
    """Why a launch of ``work`` (named ``work_text`` in the message) and ``items`` work-items
    is executed without values: above :data:`VALUES_WORK` or :data:`VALUES_WORK_ITEMS`; None
    for a launch small enough to compute them."""
    if work > VALUES_WORK:
        return f"{work_text} = {work} (above {VALUES_WORK})"
    if items > VALUES_WORK_ITEMS:
        return f"{items} work-items (above {VALUES_WORK_ITEMS})"
    return None
